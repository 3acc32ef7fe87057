"""6. The communication check: autodist's projected speedup of 2 workers over 1 (measured on the
workers before training, :mod:`autodist.tensorflow.comm_check`) against the measured one, for issue 13's
MLP (512-1024-1024-10, 1.6M parameters) and the scaling benchmark's CNN, 256 samples per worker.
Workers are pinned one per core (``benchmarks/_scaling.py``), 1 worker and 2 alternating.
Figure: projected ÷ measured speedup (1.0: the projection was exact)."""

from __future__ import annotations

from benchmarks.common import Figure, run_json


def run(quick: bool) -> list[Figure]:
    steps, batch, rounds = 12, 256, 2
    worker = ["benchmarks/_scaling.py", str(steps), str(batch), "autodist"]
    launch = ["-m", "autodist", "launch", "--workers", "2", "--timeout", "280", *worker]
    figures = []
    if quick:  # 2 launches; tests/test_tuning.py runs the check itself on 2 loopback workers
        return []
    for model in ("mlp", "cnn"):
        one, two, projected = [], [], []
        for index in range(rounds):
            arms = [("one", worker), ("two", launch)]
            for arm, args in arms if index % 2 == 0 else arms[::-1]:
                result = run_json(args, timeout=300, BENCH_MODEL=model)
                (one if arm == "one" else two).append(result["samples_per_second"])
                if arm == "two":
                    projected.append(result["projected_speedup"])
        measured = [b / a for a, b in zip(one, two)]
        figure = Figure(f"communication check, {model.upper()}: projected / measured speedup", "report", [p / m for p, m in zip(projected, measured)], True)
        figure.note = (
            f"{model.upper()}: projected {sorted(projected)[len(projected) // 2]:.2f}x, measured "
            f"{sorted(measured)[len(measured) // 2]:.2f}x (2 pinned workers / 1, {batch} samples per worker); "
            f"autodist warns below 1.2x"
        )
        figure.extra = {"projected": projected, "measured": measured, "one": one, "two": two}
        figures.append(figure)
    return figures


if __name__ == "__main__":  # python -m benchmarks.communication [--quick]
    from benchmarks.run import main_for

    main_for("communication")
