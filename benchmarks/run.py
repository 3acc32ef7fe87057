"""Run every benchmark and print one table: figure, goal, median, min-max, pass/short.

    python -m benchmarks            # the full suite (under 10 minutes on 2 cores)
    python -m benchmarks --quick    # a smoke run (under 2 minutes, two benchmarks at a time): checks it runs, not the goals
    python benchmarks/run.py        # the same, run as a file
    python -m benchmarks.overhead   # one benchmark (also scaling, detection, decision, defaults, memory, communication)

Writes benchmarks/results.json and benchmarks/results.png (the ratios as a bar chart), and
records the machine. A quick or partial run writes results-quick.json, results-scaling.json, ...
instead, so the full run's figures (benchmarks/README.md's table) stay. Run it on an otherwise idle machine: figures are ratios measured side by
side, but two cores shared with something else still skew them.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

if not __package__:  # run as a file (python benchmarks/run.py): make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import communication, decision, defaults, detection, memory, overhead, random_draws, scaling
from benchmarks.common import Figure, machine

HERE = Path(__file__).resolve().parent
SUITES = {"overhead": overhead, "scaling": scaling, "detection": detection, "decision": decision, "defaults": defaults, "memory": memory, "communication": communication, "random_draws": random_draws}


def table(figures: list[Figure]) -> str:
    rows = [("figure", "goal", "median", "min-max", "result")]
    for f in figures:
        spread = f"{min(f.ratios):.3f}-{max(f.ratios):.3f}" if f.ratios else "-"
        rows.append((f.name, f.goal, f"{f.median:.3f}", spread, f.result))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def chart(figures: list[Figure], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(figures) + 1.2))
    names = [f.name for f in figures][::-1]
    medians = [f.median for f in figures][::-1]
    errors = [[f.median - min(f.ratios) for f in figures][::-1], [max(f.ratios) - f.median for f in figures][::-1]]
    colors = [{"pass": "#3a7", "short": "#d64"}.get(f.result, "#889") for f in figures][::-1]
    ax.barh(names, medians, xerr=errors, color=colors)
    ax.axvline(1.0, color="#555", linewidth=0.8)
    ax.set_xlabel("ratio (median, min-max); green: goal met, red: short, grey: reported only")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def results_stem(only: list[str] | None, quick: bool) -> str:
    """The results' file name: ``results`` for a full run of every benchmark, so that a quick or
    partial run never replaces the figures benchmarks/README.md shows.

    Example:
        >>> results_stem(None, False), results_stem(None, True), results_stem(["scaling"], False)
        ('results', 'results-quick', 'results-scaling')
    """
    parts = ["results", *sorted(only or ())] + (["quick"] if quick else [])
    return "-".join(parts)


def main_for(suite: str) -> NoReturn:
    """Entry point of ``python -m benchmarks.<suite> [--quick] [--out DIR]``: one benchmark."""
    sys.exit(main(["--only", suite, *sys.argv[1:]]))


def _timed(name: str, module: Any, quick: bool) -> list[Figure]:
    began = time.monotonic()
    figures = module.run(quick)
    print(f"[benchmarks] {name}: {time.monotonic() - began:.0f} s", flush=True)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small sizes, one round")
    parser.add_argument("--only", nargs="*", choices=sorted(SUITES), help="run only these")
    parser.add_argument("--out", default=str(HERE), help="folder for the results file and chart")
    args = parser.parse_args(argv)
    started = time.monotonic()
    chosen = [(name, module) for name, module in SUITES.items() if not args.only or name in args.only]
    # A quick run is a smoke run (it checks that every benchmark runs, not its figures): two at a
    # time. A full run measures one benchmark at a time, on an otherwise idle machine.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2 if args.quick else 1) as pool:
        runs = [pool.submit(_timed, name, module, args.quick) for name, module in chosen]
        figures: list[Figure] = [figure for run in runs for figure in run.result()]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "machine": machine(),
        "quick": args.quick,
        "seconds": round(time.monotonic() - started, 1),
        "figures": [f.to_dict() for f in figures],
    }
    stem = results_stem(args.only, args.quick)
    (out / f"{stem}.json").write_text(json.dumps(record, indent=2))
    drew = chart(figures, out / f"{stem}.png")
    m = record["machine"]
    print(f"\nautodist benchmarks, {m['date']}: {m['cpus']} cores, {m['memory_gib']} GiB, TF {m['tensorflow']}, Keras {m['keras']}, GPUs: {m['gpus'] or 'none'}{' (quick)' if args.quick else ''}")
    print(table(figures))
    for f in figures:
        if f.note:
            print(f"- {f.name}: {f.note}")
    print(f"\n{len(figures)} figures in {record['seconds']} s; wrote {out / f'{stem}.json'}" + (f" and {out / f'{stem}.png'}" if drew else " (no matplotlib: no chart)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
