"""The corpus's speed mode: what autodist costs a real program, side by side with what it replaces.

``python -m tests.corpus --speed [--write docs/performance.md] [NAME ...]`` (the programs of
:data:`SPEED_SET` by default; ``CORPUS_KEEP=DIR`` keeps every run's record and reads it again).

Each program runs as the correctness runs run it (``tests/corpus/run.py``: its own text, stand-ins
for its data), with ``CORPUS_SPEED=1``: every ``fit`` trains exactly :data:`EPOCHS` epochs, timed
epoch by epoch. One run at a time, nothing beside it:

1. a warm-up, plain ``model.fit``, which also sizes the program: a program with fewer than
   :data:`MIN_STEPS` steps in an epoch gets as many more samples as make that many (an entry's
   ``"speed": {"samples": N}`` in ``sources.json`` says otherwise);
2. :data:`PAIRS` pairs of each of :data:`COMPARISONS`, each run a fresh process, the two ways of a
   pair in turns (A B, then B A, ...), so that a drift of the machine weighs on both alike.

Per run: the wall and CPU seconds of the epochs after each fit's first (the steady state), the
seconds from the process's start to the end of its first trained step (the end of the train
function's first call, less the steady time of the steps it ran after the first: autodist's
default runs 8 a call), and its peak resident memory. Per program and comparison, each figure's ratio (autodist ÷ the other way) pair by pair:
its median and its spread. Across programs: the median of those medians, and the programs past
:data:`LIMIT`. ``--write`` puts the table into a document and draws one dot per program per ratio
beside it (``performance.png``); the figures go to ``benchmarks/results-corpus.json``.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests.corpus import __main__ as corpus

#: The programs measured, each with its kind: the kinds of program autodist's users run, each
#: training with ``fit``, the quicker first (a run cut short has measured the most programs it could).
SPEED_SET = {
    "mnist_convnet": "convnet",
    "autoencoder": "convnet",
    "tf_cnn": "convnet",
    "bidirectional_lstm_imdb": "RNN",
    "structured_data_from_scratch": "structured data through tf.data",
    "collaborative_filtering": "structured data through tf.data",
    "timeseries_transformer": "transformer",
    "vae": "GAN or VAE with its own step",
    "wgan_gp": "GAN or VAE with its own step",
    "guide_custom_train_step": "GAN or VAE with its own step",
    "knowledge_distillation": "GAN or VAE with its own step",
    "tf_imbalanced_data": "structured data through tf.data",
    "feature_space": "structured data through tf.data",
    "text_classification_from_scratch": "text through tf.data",
    "weather_forecasting": "RNN",
    "lstm_seq2seq": "RNN",
    "tf_data_augmentation": "convnet with augmentation",
    "tf_image_classification": "convnet with augmentation",
    "cct": "convnet with augmentation",
    "vision_transformer": "transformer",
    "eanet": "transformer",
    "end_to_end_mlm_with_bert": "transformer",
    "convmixer": "convnet with augmentation",
    "cutmix": "convnet with augmentation",
}
#: Epochs each fit trains: the first (tracing, warming) and the steady ones after it.
EPOCHS = 3
#: Steps an epoch must have at least, for its time to be training's, not the epoch's edges.
MIN_STEPS = 50
#: Pairs of runs per comparison.
PAIRS = 3
#: How long one timed run may take before it is killed: a program sized to 50 steps an epoch on 2
#: replicas takes longer than the correctness runs' limit allows.
WAY_LIMIT_SECONDS = 1800
#: What each comparison puts side by side: the way autodist replaces, then autodist's.
COMPARISONS = {
    "one device": (("plain", None), ("autodist", "1")),
    "2 replicas": (("hand-built", None), ("autodist", "2")),
}
#: The figures of a run, each compared as autodist's ÷ the other way's.
FIGURES = ("wall", "cpu", "first_step", "peak_rss")
#: The issue's goals, each a ratio's median and its largest program's bound (None: no bound).
GOALS = {
    ("one device", "wall"): (0.95, 1.05),
    ("2 replicas", "wall"): (1.00, 1.05),
    ("one device", "first_step"): (1.05, None),
    ("one device", "peak_rss"): (None, 1.05),
    ("2 replicas", "peak_rss"): (None, 1.05),
}
#: The Keras workarounds that act inside the step, each on every replica (docs/keras-workarounds.md),
#: and the programs each is timed on: where autodist applies it, their numbers with and without it
#: differ (it acts there); where they do not, the table says it does not act.
IN_STEP = {
    "replica_random_streams": ("mnist_convnet", "cct", "vision_transformer"),
    "replica_slices_summed": ("vision_transformer", "eanet"),
    "batchnorm_moving_statistics": ("convmixer", "autoencoder"),
    "uneven_shares_weighted": ("structured_data_from_scratch", "feature_space", "timeseries_transformer"),
    "own_step_replica_mean": ("vae", "wgan_gp", "guide_custom_train_step"),
}
#: A program's ratio past this is named in the table, with its cause.
LIMIT = 1.05
RESULTS = corpus.ROOT / "benchmarks" / "results-corpus.json"
TABLE_START, TABLE_END = (
    "<!-- speed table: python -m tests.corpus --speed --write docs/performance.md -->",
    "<!-- end of speed table -->",
)


def figures(record: dict) -> dict | None:
    """A run's figures (:data:`FIGURES`, and the steps of its steady epochs and of its longest
    epoch), or ``None`` where it did not train to the end, or trained no epoch after a first."""
    speed = record.get("speed")
    if record.get("outcome") != "ran" or not speed:
        return None
    steady = [epoch for fit in speed["fits"] for epoch in fit["epochs"][1:]]
    if not steady or speed["first_step"] is None:
        return None
    wall, steps = sum(epoch["wall"] for epoch in steady), sum(epoch["steps"] or 0 for epoch in steady)
    first = speed["fits"][0]
    in_first_call = min(first.get("steps_per_execution") or 1, first["epochs"][0]["steps"] or 1)
    return {
        "wall": wall,
        "cpu": sum(epoch["cpu"] for epoch in steady),
        # the first call of the train function ran steps_per_execution steps: the first of them ended
        # the others' steady time before it (autodist runs 8 per call where plain model.fit runs 1)
        "first_step": speed["first_step"] - (in_first_call - 1) * wall / max(steps, 1),
        "peak_rss": record["peak_rss_bytes"],
        "steady_steps": steps,
        "epoch_steps": max(epoch["steps"] or 0 for fit in speed["fits"] for epoch in fit["epochs"]),
    }


def order(pair: int) -> tuple[int, int]:
    """Which of a comparison's two ways runs first in pair ``pair``: A B, then B A, in turns."""
    return (0, 1) if pair % 2 == 0 else (1, 0)


def ratios(pairs: list[tuple[dict | None, dict | None]]) -> dict[str, dict] | None:
    """Each figure's ratio (autodist's ÷ the other way's) over the pairs where both trained: its
    median, its least and its largest, and each pair's. ``None`` where no pair trained both ways."""
    both = [(a, b) for a, b in pairs if a is not None and b is not None]
    if not both:
        return None
    found = {}
    for figure in FIGURES:
        each = [b[figure] / a[figure] for a, b in both if a[figure] > 0]
        if each:
            found[figure] = {"median": statistics.median(each), "min": min(each), "max": max(each), "pairs": each}
    return found


def sized_samples(entry: dict, sizing: dict | None, samples: str) -> str:
    """The samples a program is timed with, from the last warm-up's (``samples``, which measured
    ``sizing``): its entry's ``"speed"`` samples where given; the program's own data (``"full"``)
    as it is; else enough that its longest epoch has :data:`MIN_STEPS` steps, were steps
    proportional to samples, in whole batches of 32 (:func:`warm_up` measures again)."""
    given = entry.get("speed", {}).get("samples")
    if given is not None:
        return str(given)
    if samples == "full" or sizing is None or sizing["epoch_steps"] >= MIN_STEPS:
        return str(samples)
    scaled = int(samples) * MIN_STEPS / max(sizing["epoch_steps"], 1)
    return str(32 * math.ceil(scaled / 32))


def _load() -> float:
    """The machine's load, averaged over the last minute, before a run: how quiet it was."""
    return os.getloadavg()[0]


def _base(name: str) -> dict:
    """The speed mode's settings for a program: its runs timed, its fits :data:`EPOCHS` epochs."""
    return {"CORPUS_SPEED": "1", "CORPUS_EPOCHS": str(corpus.entry(name).get("speed", {}).get("epochs", EPOCHS))}


#: Warm-ups a program may take to reach :data:`MIN_STEPS` (an epoch's steps do not grow exactly
#: with its samples: a validation split, a window, whole batches).
SIZINGS = 3


def warm_up(name: str, out: Path) -> tuple[dict, str]:
    """The program's warm-up (plain model.fit, not timed; read again where kept) at the samples it is
    timed with: from its corpus size, sized again (:func:`sized_samples`) and run again until an
    epoch has :data:`MIN_STEPS` steps, at most :data:`SIZINGS` times. The last warm-up, and those samples."""
    samples = str(corpus.entry(name).get("samples", os.environ.get("CORPUS_SAMPLES", 256)))
    for sizing in range(SIZINGS):
        suffix = "-speed-warm-up" + (f"-{sizing}" if sizing else "")
        with corpus.with_settings((suffix, {**_base(name), "CORPUS_SAMPLES": samples})):
            warm = corpus.run(name, out, {"warm-up": corpus.WAYS["plain"]})["warm-up"]
        sized = sized_samples(corpus.entry(name), figures(warm), samples)
        if sized == samples:
            break
        samples = sized
    return warm, samples


def paired(name: str, out: Path, arms: tuple, settings: dict) -> tuple[list, tuple[list, list], list]:
    """:data:`PAIRS` pairs of a program's two ``arms`` (each its record's suffix, its own settings
    and its way), one run at a time, taking turns at going first: each pair's figures (``None`` for
    a run that did not train), each arm's records, and the machine's load before each run."""
    pairs, records, loads = [], ([], []), []
    for pair in range(PAIRS):
        runs = [None, None]
        for index in order(pair):
            suffix, own, how = arms[index]
            loads.append(_load())
            with corpus.with_settings((f"-speed{pair}{suffix}", {**settings, **own})):
                record = corpus.run(name, out, {"timed": how})["timed"]
            runs[index] = figures(record)
            records[index].append(record)
        pairs.append(tuple(runs))
    return pairs, records, loads


def measure(name: str, out: Path) -> dict:
    """One program's warm-up, sizing and pairs of each comparison (records kept in ``out``), and
    its figures."""
    warm, samples = warm_up(name, out)
    settings = {**_base(name), "CORPUS_SAMPLES": samples}
    result = {"kind": SPEED_SET.get(name, "other"), "samples": samples, "loads": [], "comparisons": {}}
    if figures(warm) is None:
        result["outcome"] = f"the warm-up did not train: {warm.get('outcome', '')[:200]}"
        return result
    for comparison, ways in COMPARISONS.items():
        pairs, records, loads = paired(name, out, tuple(("", {}, how) for how in ways), settings)
        result["loads"] += loads
        steps = [run["epoch_steps"] for pair in pairs for run in pair if run is not None]
        result["comparisons"][comparison] = {
            "ratios": ratios(pairs),
            "epoch_steps": min(steps, default=0),
            "runs": [list(pair) for pair in pairs],
            "not trained": sorted(
                {f"{how[0]}: {r.get('outcome', '')[:200]}" for how, arm in zip(ways, records) for r in arm if figures(r) is None}
            ),
        }
    return result


def cost(name: str, workaround: str, out: Path) -> dict:
    """One workaround's cost on one program: autodist on 2 replicas without it (its ``-name``
    opt-out) and with it, :data:`PAIRS` pairs in turns, sized as the program's other runs; each
    figure's ratio is with ÷ without. It acted where the two train further apart than either
    from itself (its runs of one arm against each other): what it changes is the numbers."""
    _warm, samples = warm_up(name, out)
    arms = (
        (f"-without-{workaround}", {"AUTODIST_KERAS_COMPAT": f"auto,-{workaround}"}, ("autodist", "2")),
        (f"-with-{workaround}", {}, ("autodist", "2")),
    )
    pairs, records, loads = paired(name, out, arms, {**_base(name), "CORPUS_SAMPLES": samples})
    without, with_it = records
    itself = max((corpus.gap(a, b) for arm in records for a in arm for b in arm if a is not b), default=0.0)
    acted = min((corpus.gap(a, b) for a in without for b in with_it), default=0.0) > itself
    return {"ratios": ratios(pairs), "acted": acted, "loads": loads}


def summary(programs: dict[str, dict]) -> dict[str, dict]:
    """Across programs, each (comparison, figure)'s median of the programs' medians, its spread,
    the programs past :data:`LIMIT`, and the goal it is held to."""
    found = {}
    for comparison in COMPARISONS:
        for figure in FIGURES:
            each = {
                name: ratio[figure]["median"]
                for name, program in programs.items()
                for ratio in [program["comparisons"].get(comparison, {}).get("ratios")]
                if ratio and figure in ratio
            }
            if not each:
                continue
            median_goal, bound = GOALS.get((comparison, figure), (None, None))
            median = statistics.median(each.values())
            past = sorted(name for name, value in each.items() if value > LIMIT)
            met = (median_goal is None or median <= median_goal) and (bound is None or max(each.values()) <= bound)
            found[f"{comparison}, {figure}"] = {
                "median": median,
                "min": min(each.values()),
                "max": max(each.values()),
                "programs": len(each),
                "past": past,
                "goal": _goal_text(median_goal, bound),
                "result": "report" if median_goal is None and bound is None else ("pass" if met else "short"),
            }
    return found


def _goal_text(median: float | None, bound: float | None) -> str:
    parts = ([f"median <= {median:.2f}"] if median is not None else []) + (
        [f"none above {bound:.2f}"] if bound is not None else []
    )
    return ", ".join(parts) or "report"


FIGURE_NAMES = {
    "wall": "steady epochs, wall",
    "cpu": "steady epochs, CPU",
    "first_step": "start to first step",
    "peak_rss": "peak memory",
}


def table(results: dict) -> list[str]:
    """The document's table: the summary, then each program's medians and spreads."""
    lines = [
        f"Measured {results['date']} on {results['machine']}; the machine's load before a run, "
        f"averaged over a minute: at most {max(results['loads'], default=0):.2f}.",
        "",
        "| ratio: autodist ÷ | goal | median | least-largest | programs | past 1.05 | result |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, row in results["summary"].items():
        comparison, figure = key.split(", ")
        other = "plain model.fit, one device" if comparison == "one device" else "hand-built, 2 replicas"
        lines.append(
            f"| {FIGURE_NAMES[figure]}: {other} | {row['goal']} | {row['median']:.3f} | "
            f"{row['min']:.3f}-{row['max']:.3f} | {row['programs']} | {', '.join(row['past']) or '-'} | {row['result']} |"
        )
    lines += [
        "",
        "| program | kind | samples | steps an epoch | "
        + " | ".join(f"{c}: {FIGURE_NAMES[f]}" for c in COMPARISONS for f in FIGURES)
        + " |",
        "|---|---|---|---|" + "---|" * (len(COMPARISONS) * len(FIGURES)),
    ]
    for name, program in sorted(results["programs"].items()):
        cells = []
        for comparison in COMPARISONS:
            found = program["comparisons"].get(comparison, {})
            ratio = found.get("ratios") or {}
            for figure in FIGURES:
                cell = ratio.get(figure)
                cells.append(f"{cell['median']:.2f} ({cell['min']:.2f}-{cell['max']:.2f})" if cell else "-")
        steps = min((c["epoch_steps"] for c in program["comparisons"].values() if c.get("epoch_steps")), default=0)
        lines.append(f"| `{name}` | {program['kind']} | {program['samples']} | {steps} | {' | '.join(cells)} |")
    costs = results.get("workaround costs") or {}
    if costs:
        lines += [
            "",
            "| workaround (autodist, 2 replicas) | steady epochs, with ÷ without: median | acted on | did not act on |",
            "|---|---|---|---|",
        ]
    for workaround, found in costs.items():
        median = "-" if found["median"] is None else f"{found['median']:.3f}"
        acted = ", ".join(f"`{n}` {r:.3f}" for n, r in found["acted on"].items()) or "-"
        lines.append(f"| `{workaround}` | {median} | {acted} | {', '.join(found['did not act on']) or '-'} |")
    return lines


def plot(results: dict, path: Path) -> None:
    """One dot per program per ratio, the goals' bounds drawn: the spread at a glance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(results["summary"])
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(keys) + 1.5))
    for row, key in enumerate(keys):
        comparison, figure = key.split(", ")
        values = [
            program["comparisons"][comparison]["ratios"][figure]["median"]
            for program in results["programs"].values()
            if (program["comparisons"].get(comparison, {}).get("ratios") or {}).get(figure)
        ]
        ax.scatter(values, [row] * len(values), s=14, alpha=0.7)
        ax.plot([results["summary"][key]["median"]] * 2, [row - 0.3, row + 0.3], color="black")
    ax.axvline(1.0, color="grey", linewidth=0.8)
    ax.axvline(LIMIT, color="red", linewidth=0.8, linestyle="--")
    ax.set_yticks(range(len(keys)), [f"{k.split(', ')[0]}: {FIGURE_NAMES[k.split(', ')[1]]}" for k in keys])
    ax.set_xlabel("autodist ÷ what it replaces (a dot per program; a bar: the median)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def written(text: str, lines: list[str]) -> str:
    """``text`` with its speed table made of ``lines``."""
    head, rest = text.split(TABLE_START, 1)
    _old, tail = rest.split(TABLE_END, 1)
    return f"{head}{TABLE_START}\n{chr(10).join(lines)}\n{TABLE_END}{tail}"


def workaround_costs(costs: dict[str, dict[str, dict]]) -> dict[str, dict]:
    """Each workaround's step cost: the median, over the programs where it acted, of its steady
    epochs' wall-time ratio (with ÷ without); the programs it acted on and those it did not."""
    found = {}
    for workaround, programs in costs.items():
        acted = {name: c["ratios"]["wall"]["median"] for name, c in programs.items() if c["acted"] and c["ratios"]}
        found[workaround] = {
            "median": statistics.median(acted.values()) if acted else None,
            "acted on": acted,
            "did not act on": sorted(name for name, c in programs.items() if not c["acted"]),
        }
    return found


def main(argv: list[str]) -> int:
    """``[--write DOC] [--workarounds] [NAME ...]``: measure the programs (with ``--workarounds``,
    the step costs of :data:`IN_STEP` instead), print the table, write the results."""
    import argparse

    from autodist.upstream.pages import stale
    from benchmarks.common import machine

    parser = argparse.ArgumentParser(prog="python -m tests.corpus --speed")
    parser.add_argument("--write", type=Path, metavar="DOC")
    parser.add_argument("--workarounds", action="store_true")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    wanted = args.names or (sorted({n for ns in IN_STEP.values() for n in ns}) if args.workarounds else list(SPEED_SET))
    unknown = [name for name in wanted if name not in corpus.SOURCES]
    if unknown:
        raise SystemExit(f"tests.corpus --speed: no program {', '.join(unknown)} in sources.json")
    keep = os.environ.get("CORPUS_KEEP")
    out = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="corpus-speed-"))
    corpus.WAY_LIMIT_SECONDS = WAY_LIMIT_SECONDS  # the runner's limit, for this process's timed runs
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"programs": {}, "workarounds": {}}
    about = machine()
    results.update(
        date=about["date"],
        machine=f"{about['cpus']} cores, {about['memory_gib']} GiB, TF {about['tensorflow']}, Keras {about['keras']}",
    )
    for name in wanted:
        began = time.monotonic()
        if args.workarounds:
            for workaround in (w for w, names in IN_STEP.items() if name in names):
                results.setdefault("workarounds", {}).setdefault(workaround, {})[name] = cost(name, workaround, out)
        else:
            results["programs"][name] = measure(name, out)
        print(f"time: {name} {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
    # the table is the set's: a program measured by name only, or one the set no longer holds, is not in it
    results["programs"] = {name: found for name, found in results["programs"].items() if name in SPEED_SET}
    results["loads"] = [
        load
        for found in [*results["programs"].values(), *(c for w in results.get("workarounds", {}).values() for c in w.values())]
        for load in found["loads"]
    ]
    results["summary"] = summary(results["programs"])
    results["workaround costs"] = workaround_costs(results.get("workarounds", {}))
    lines = table(results)
    print(*lines, sep="\n")
    if args.write is not None:
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
        args.write.write_text(written(args.write.read_text(), lines))
        plot(results, args.write.with_suffix(".png"))
        stale(corpus.ROOT, write=True)  # docs/keras-workarounds.md's cost column, from the results just written
    return 0 if all(row["result"] != "short" for row in results["summary"].values()) else 1
