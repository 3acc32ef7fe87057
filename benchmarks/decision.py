"""4. Decision quality: every applicable strategy by hand, and autodist's pick, on each
configuration this machine can form. Figure: autodist's throughput / the best hand-run one."""

from __future__ import annotations

import json

from benchmarks.common import Figure, run_json

GOAL = 0.98
CONFIGS = {
    "1 CPU device": (None, ["default", "one_device"]),
    "2 logical CPUs": ("2", ["default", "one_device", "mirrored", "central_storage"]),
    "4 logical CPUs": ("4", ["default", "one_device", "mirrored", "central_storage"]),
}


def run(quick: bool) -> list[Figure]:
    figures = []
    for name, (devices, strategies) in CONFIGS.items():
        spec = {"model": "mlp", "samples": 4096 if quick else 8192, "batch": 256, "epochs": 2, "rounds": 1 if quick else 3,
                "arms": [f"manual:{s}" for s in strategies] + ["autodist:auto"]}
        out = run_json(["benchmarks/_train.py", json.dumps(spec)], timeout=900, AUTODIST_CPU_DEVICES=devices)
        times = out["times"]
        ratios = []
        for index in range(spec["rounds"]):
            best = min(times[f"manual:{s}"][index] for s in strategies)
            ratios.append(best / times["autodist:auto"][index])  # throughput ratio
        medians = {s: sorted(times[f"manual:{s}"])[len(times[f"manual:{s}"]) // 2] for s in strategies}
        fastest = min(medians, key=medians.get)
        figure = Figure(f"decision quality, {name}", f">= {GOAL}", ratios, False)
        figure.passed = figure.median >= GOAL
        speeds = ", ".join(f"{s} {out['samples_per_call'] / t / 1000:.0f}k/s" for s, t in medians.items())
        figure.note = f"fastest by hand: {fastest}; {speeds}"
        figure.extra = {"median_seconds": medians}
        figures.append(figure)
    return figures
