"""1. Overhead: autodist.fit against strategy.scope() + model.fit with the same strategy.

Like for like: the autodist arm opts out of its steps_per_execution default (spe1), so both arms
run the same compiled step; that default has its own figure in ``defaults.py``."""

from __future__ import annotations

import json

from benchmarks.common import Figure, run_json

GOAL = 1.02


def run(quick: bool) -> list[Figure]:
    figures = []
    sizes = {"mlp": (2048 if quick else 16384, 256, 2), "cnn": (512 if quick else 2048, 64, 1)}
    for strategy, devices in (("default", None), ("mirrored", "2")):
        for model, (samples, batch, epochs) in sizes.items():
            spec = {"model": model, "samples": samples, "batch": batch, "epochs": epochs, "rounds": 1 if quick else 6,
                    "arms": [f"manual:{strategy}", f"autodist:{strategy}:spe1"], "fixed_cost": strategy}
            out = run_json(["benchmarks/_train.py", json.dumps(spec)], timeout=600, AUTODIST_CPU_DEVICES=devices)
            manual, auto = out["times"][f"manual:{strategy}"], out["times"][f"autodist:{strategy}:spe1"]
            ratios = [a / m for a, m in zip(auto, manual)]
            figure = Figure(f"overhead {strategy}{' (2 logical CPUs)' if devices else ''}, {model}", f"<= {GOAL}", ratios, False)
            figure.passed = figure.median <= GOAL
            fixed = out["fixed_seconds"]
            typical = sorted(manual)[len(manual) // 2]
            figure.note = (
                f"time ratio autodist.fit / hand-written; {len(ratios)} interleaved pairs. autodist's own "
                f"work per fit (detect + plan + cached strategy) takes {fixed * 1000:.1f} ms, "
                f"{fixed / typical:.2%} of one hand-written fit ({typical:.2f} s)"
            )
            figure.extra = {"fixed_seconds": fixed, "hand_written_median_seconds": typical}
            figures.append(figure)
    return figures


if __name__ == "__main__":  # python -m benchmarks.overhead [--quick]
    from benchmarks.run import main_for

    main_for("overhead")
