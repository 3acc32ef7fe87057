"""2. Multi-worker scaling: 2 pinned workers against 1, same per-worker batch, compute-bound CNN."""

from __future__ import annotations

from benchmarks.common import Figure, run_json

GOAL = 1.8


def run(quick: bool) -> list[Figure]:
    steps, batch = (8, 64) if quick else (24, 64)
    one, two, extras = [], [], []
    for _ in range(1 if quick else 3):  # interleaved: 1 worker, 2 workers, 1, 2, ...
        one.append(run_json(["benchmarks/_scaling.py", str(steps), str(batch), "autodist"], timeout=300)["samples_per_second"])
        result = run_json(
            ["-m", "autodist", "launch", "--workers", "2", "--timeout", "280", "benchmarks/_scaling.py", str(steps), str(batch), "autodist"],
            timeout=300,
        )
        two.append(result["samples_per_second"])
        extras.append(result)
    ratios = [b / a for a, b in zip(one, two)]
    figure = Figure("multi-worker scaling, 2 workers / 1", f">= {GOAL}", ratios, False)
    figure.passed = figure.median >= GOAL
    step = sorted(e["step_ms"] for e in extras)[len(extras) // 2]
    reduce = sorted(e["all_reduce_ms"] for e in extras)[len(extras) // 2]
    figure.note = (
        f"CNN {extras[0]['params']:,} params, {batch}/worker; per step {step:.1f} ms of which one "
        f"all-reduce of the gradients takes {reduce:.1f} ms ({reduce / step:.0%})"
    )
    figure.extra = {"one_worker_samples_per_second": one, "two_worker_samples_per_second": two, "step_ms": step, "all_reduce_ms": reduce}
    return [figure]
