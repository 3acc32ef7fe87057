"""5. Performance defaults through autodist.fit on a small MLP: steps_per_execution, jit_compile,
tf.data prefetch, and Mirrored on 2 logical CPUs against the default strategy."""

from __future__ import annotations

import json

from benchmarks.common import Figure, run_json


def run(quick: bool) -> list[Figure]:
    rounds = 1 if quick else 4
    spec = {"model": "mlp", "samples": 8192 if quick else 16384, "batch": 256, "epochs": 2, "rounds": rounds,
            "arms": ["autodist:default", "autodist:default:spe8", "autodist:default:jit",
                     "autodist:default:noprefetch", "autodist:default:prefetch"]}
    times = run_json(["benchmarks/_train.py", json.dumps(spec)], timeout=900)["times"]
    base = times["autodist:default"]

    def speedup(arm: str, against: list[float]) -> list[float]:
        return [b / a for a, b in zip(times[arm], against)]

    figures = [
        Figure("default: steps_per_execution=8 / 1", "report", speedup("autodist:default:spe8", base), True),
        Figure("default: jit_compile / off", "report", speedup("autodist:default:jit", base), True),
        Figure("default: dataset + prefetch / without", "report", speedup("autodist:default:prefetch", times["autodist:default:noprefetch"]), True),
    ]
    mirrored = run_json(
        ["benchmarks/_train.py", json.dumps({**spec, "arms": ["autodist:default", "autodist:mirrored"]})],
        timeout=900, AUTODIST_CPU_DEVICES="2",
    )["times"]
    figures.append(Figure("mirrored on 2 logical CPUs / default", "report", [d / m for d, m in zip(mirrored["autodist:default"], mirrored["autodist:mirrored"])], True))
    for figure in figures:
        figure.note = "throughput ratio (>1: faster)"
    return figures
