"""2. Multi-worker scaling: 2 pinned workers against 1, same per-worker batch, compute-bound CNN
(512 samples per worker and step).

Arms, interleaved: one worker alone (its fastest input); two workers under MultiWorkerMirrored
(``autodist launch``, arrays in, as users write it); as the control that says what this machine
allows, two *independent* single workers at once, one per core, that never talk; and (full run,
first round only) two workers with Keras 3's per-epoch iterators instead of autodist's one-iterator input. The control's combined throughput over one
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
    # 512 samples per worker and step: a compute-bound step (about 85 ms alone here) against an
    # all-reduce of about 2 ms
    steps, batch = (4, 128) if quick else (16, 512)
    worker = ["benchmarks/_scaling.py", str(steps), str(batch), "autodist"]
    launch = ["-m", "autodist", "launch", "--workers", "2", "--timeout", "280"]
    one, one_results, two, pair, per_epoch_two, extras = [], [], [], [], [], []

    def alone():
        result = run_json(worker, timeout=300)
        one.append(result["samples_per_second"])
        one_results.append(result)

    def coupled():
        result = run_json([*launch, *worker], timeout=300)
        two.append(result["samples_per_second"])
        extras.append(result)

    def uncoupled():
        pair.append(_uncoupled_pair(worker, timeout=300))

    def per_epoch():  # full run only: the A/B of autodist's one-iterator input
        per_epoch_two.append(run_json([*launch, *worker[:-1], "per_epoch"], timeout=300)["samples_per_second"])

    for index in range(1 if quick else 3):  # every arm once per round, the order rotating
        arms = [alone, coupled] + ([] if quick else [uncoupled]) + ([per_epoch] if index == 0 and not quick else [])
        for arm in arms[index % len(arms) :] + arms[: index % len(arms)]:
            arm()
    ratios = [b / a for a, b in zip(one, two)]
    ceilings = [p / a for a, p in zip(one, pair)]
    figure = Figure("multi-worker scaling, 2 workers / 1", f">= {GOAL}", ratios, False)
    figure.passed = figure.median >= GOAL
    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    step, reduce = median([e["step_ms"] for e in extras]), median([e["all_reduce_ms"] for e in extras])
    scalar, input_two = median([e["scalar_all_reduce_ms"] for e in extras]), median([e["input_ms"] for e in extras])
    step_one, input_one = median([r["step_ms"] for r in one_results]), median([r["input_ms"] for r in one_results])
    figure.note = (
        f"CNN {extras[0]['params']:,} params, {batch}/worker. "
        + (f"Two independent workers at once reach {median(ceilings):.2f}x one (this machine's ceiling). " if ceilings else "")
        + f"A step takes {step_one:.1f} ms alone and "
        f"{step:.1f} ms on 2 workers. Measured apart: one all-reduce of the gradients {reduce:.1f} ms, one "
        f"of a scalar {scalar:.1f} ms (the latency each per-step collective pays), the worker's input "
        f"{input_two:.1f} ms per step against {input_one:.1f} ms alone"
    )
    figure.extra = {
        "one_worker_samples_per_second": one,
        "two_worker_samples_per_second": two,
        "uncoupled_pair_samples_per_second": pair,
        "uncoupled_pair_ratio": ceilings,
        "step_ms": step,
        "all_reduce_ms": reduce,
        "scalar_all_reduce_ms": scalar,
        "one_worker_step_ms": [r["step_ms"] for r in one_results],
        "input_ms": input_two,
        "one_worker_input_ms": input_one,
    }
    if per_epoch_two:
        kept = [a / b for a, b in zip(two, per_epoch_two)]  # the first round's pair (the arm runs once)
        figure.note += (
            f". autodist's one-iterator input gives {median(kept):.2f}x the 2-worker "
            "samples/s of Keras 3's per-epoch iterators"
        )
        figure.extra["per_epoch_iterators_two_worker_samples_per_second"] = per_epoch_two
    return [figure]


if __name__ == "__main__":  # python -m benchmarks.scaling [--quick]
    from benchmarks.run import main_for

    main_for("scaling")
