"""1. Overhead: autodist.fit against strategy.scope() + model.fit with the same strategy."""

from __future__ import annotations

import json

from benchmarks.common import Figure, run_json

GOAL = 1.02


def run(quick: bool) -> list[Figure]:
    figures = []
    sizes = {"mlp": (4096 if quick else 16384, 256, 2), "cnn": (1024 if quick else 2048, 64, 1)}
    for strategy, devices in (("default", None), ("mirrored", "2")):
        for model, (samples, batch, epochs) in sizes.items():
            spec = {"model": model, "samples": samples, "batch": batch, "epochs": epochs, "rounds": 2 if quick else 6,
                    "arms": [f"manual:{strategy}", f"autodist:{strategy}"]}
            out = run_json(["benchmarks/_train.py", json.dumps(spec)], timeout=600, AUTODIST_CPU_DEVICES=devices)
            manual, auto = out["times"][f"manual:{strategy}"], out["times"][f"autodist:{strategy}"]
            ratios = [a / m for a, m in zip(auto, manual)]
            figure = Figure(f"overhead {strategy}{' (2 logical CPUs)' if devices else ''}, {model}", f"<= {GOAL}", ratios, False)
            figure.passed = figure.median <= GOAL
            figure.note = f"time ratio autodist.fit / hand-written; {len(ratios)} interleaved pairs"
            figures.append(figure)
    return figures
