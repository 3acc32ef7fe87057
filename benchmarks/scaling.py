"""2. Multi-worker scaling: 2 pinned workers against 1, same per-worker batch, compute-bound CNN.

Arms, interleaved: one worker alone (its fastest input); two workers under MultiWorkerMirrored
(``autodist launch``, arrays in, as users write it); as the control that says what this machine
allows, two *independent* single workers at once, one per core, that never talk; and (full run
only) two workers with Keras 3's per-epoch iterators instead of autodist's one-iterator input. The control's combined throughput over one
worker is the ceiling of any 2-worker figure here; the all-reduce time per step says how much
of the rest is communication.
"""

from __future__ import annotations

import json
import subprocess
import sys

from benchmarks.common import ROOT, Figure, env, run_json

GOAL = 1.8


def _uncoupled_pair(args: list[str], timeout: float) -> float:
    """Combined samples/s of two single workers run at once on cores 0 and 1."""
    processes = [
        subprocess.Popen(
            [sys.executable, *args], env=env(BENCH_CORE=str(core)), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        for core in (0, 1)
    ]
    total = 0.0
    try:
        for process in processes:
            out, _ = process.communicate(timeout=timeout)
            lines = [line.split("RESULT ", 1)[1] for line in out.splitlines() if line.startswith("RESULT ")]
            if process.returncode != 0 or not lines:
                raise RuntimeError(f"{args} (uncoupled pair) failed ({process.returncode}):\n{out[-2000:]}")
            total += json.loads(lines[-1])["samples_per_second"]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
    return total


def run(quick: bool) -> list[Figure]:
    steps, batch = (8, 64) if quick else (96, 64)
    worker = ["benchmarks/_scaling.py", str(steps), str(batch), "autodist"]
    one, one_steps, two, pair, per_epoch_two, extras = [], [], [], [], [], []
    for _ in range(1 if quick else 3):  # interleaved: 1 worker, 2 workers, uncoupled pair, 1, 2, ...
        alone = run_json(worker, timeout=300)
        one.append(alone["samples_per_second"])
        one_steps.append(alone["step_ms"])
        result = run_json(["-m", "autodist", "launch", "--workers", "2", "--timeout", "280", *worker], timeout=300)
        two.append(result["samples_per_second"])
        extras.append(result)
        pair.append(_uncoupled_pair(worker, timeout=300))
        if not quick:
            per_epoch = run_json(["-m", "autodist", "launch", "--workers", "2", "--timeout", "280", *worker[:-1], "per_epoch"], timeout=300)
            per_epoch_two.append(per_epoch["samples_per_second"])
    ratios = [b / a for a, b in zip(one, two)]
    ceilings = [p / a for a, p in zip(one, pair)]
    figure = Figure("multi-worker scaling, 2 workers / 1", f">= {GOAL}", ratios, False)
    figure.passed = figure.median >= GOAL
    step = sorted(e["step_ms"] for e in extras)[len(extras) // 2]
    reduce = sorted(e["all_reduce_ms"] for e in extras)[len(extras) // 2]
    scalar = sorted(e["scalar_all_reduce_ms"] for e in extras)[len(extras) // 2]
    ceiling = sorted(ceilings)[len(ceilings) // 2]
    alone = sorted(one_steps)[len(one_steps) // 2]
    figure.note = (
        f"CNN {extras[0]['params']:,} params, {batch}/worker. Two independent workers at once reach "
        f"{ceiling:.2f}x one (this machine's ceiling). A step takes {alone:.1f} ms alone and "
        f"{step:.1f} ms on 2 workers; one all-reduce of the gradients takes {reduce:.1f} ms and one of "
        f"a scalar {scalar:.1f} ms (the latency each per-step collective pays)"
    )
    if per_epoch_two:
        kept = [a / b for a, b in zip(two, per_epoch_two)]
        figure.note += (
            f". autodist's one-iterator input gives {sorted(kept)[len(kept) // 2]:.2f}x the 2-worker "
            "samples/s of Keras 3's per-epoch iterators"
        )
        figure.extra["per_epoch_iterators_two_worker_samples_per_second"] = per_epoch_two
    figure.extra = {
        "one_worker_samples_per_second": one,
        "two_worker_samples_per_second": two,
        "uncoupled_pair_samples_per_second": pair,
        "uncoupled_pair_ratio": ceilings,
        "step_ms": step,
        "all_reduce_ms": reduce,
        "scalar_all_reduce_ms": scalar,
        "one_worker_step_ms": one_steps,
    }
    return [figure]


if __name__ == "__main__":  # python -m benchmarks.scaling [--quick]
    from benchmarks.run import main_for

    main_for("scaling")
