"""3. Detection latency against importing TensorFlow and listing its devices."""

from __future__ import annotations

import subprocess
import sys

from benchmarks.common import ROOT, Figure, env, wall

BASELINE = ["-c", "import tensorflow as tf; tf.config.list_physical_devices()"]


def run(quick: bool) -> list[Figure]:
    rounds = 1 if quick else 4
    for args in () if quick else (BASELINE, ["-m", "autodist", "inspect", "--fast"], ["-m", "autodist", "inspect"]):
        wall(args)  # warm the file cache (a quick run is a smoke run: it checks the paths only)
    fast, full = [], []
    for index in range(rounds):
        order = [0, 1, 2] if index % 2 == 0 else [2, 1, 0]
        times = {}
        for which in order:
            args = [BASELINE, ["-m", "autodist", "inspect", "--fast"], ["-m", "autodist", "inspect"]][which]
            times[which] = wall(args)
        fast.append(times[1] / times[0])
        full.append(times[2] / times[0])
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, autodist; print('tensorflow' in sys.modules)"],
        env=env(), capture_output=True, text=True, timeout=60, cwd=ROOT,
    ).stdout.strip()
    figures = [
        Figure("inspect --fast / import TF + list devices", "<= 0.05", fast, False),
        Figure("inspect / import TF + list devices", "<= 1.2", full, False),
        Figure("import autodist imports TensorFlow", "no", [0.0 if probe == "False" else 1.0], probe == "False", "1 = it does"),
    ]
    figures[0].passed = figures[0].median <= 0.05
    figures[1].passed = figures[1].median <= 1.2
    return figures


if __name__ == "__main__":  # python -m benchmarks.detection [--quick]
    from benchmarks.run import main_for

    main_for("detection")
