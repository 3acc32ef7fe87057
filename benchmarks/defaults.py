"""5. Performance defaults through autodist.fit on a small MLP: steps_per_execution, jit_compile,
tf.data prefetch, and Mirrored on 2 logical CPUs against the default strategy."""

from __future__ import annotations

import json

from benchmarks.common import Figure, run_json


def run(quick: bool) -> list[Figure]:
    rounds = 1 if quick else 4
    # 6 epochs per call, so tracing and building (paid once per fit) do not hide the step time
    spec = {"model": "mlp", "samples": 2048 if quick else 16384, "batch": 256, "epochs": 2 if quick else 6, "rounds": rounds,
            "arms": ["autodist:default:spe1", "autodist:default", "autodist:default:jit",
                     "autodist:default:noprefetch", "autodist:default:prefetch"]}
    times = run_json(["benchmarks/_train.py", json.dumps(spec)], timeout=900)["times"]
    base = times["autodist:default"]  # autodist's defaults: steps_per_execution=8

    def speedup(arm: str, against: list[float]) -> list[float]:
        return [b / a for a, b in zip(times[arm], against)]

    figures = [
        Figure("default: steps_per_execution 8 (autodist) / 1 (opt-out)", "report", speedup("autodist:default", times["autodist:default:spe1"]), True),
        Figure("default: jit_compile / off", "report", speedup("autodist:default:jit", base), True),
        Figure("default: dataset + prefetch / without", "report", speedup("autodist:default:prefetch", times["autodist:default:noprefetch"]), True),
    ]
    mirrored = run_json(
        ["benchmarks/_train.py", json.dumps({**spec, "arms": ["autodist:default:spe1", "autodist:mirrored"]})],
        timeout=900, AUTODIST_CPU_DEVICES="2",
    )["times"]
    figures.append(Figure("mirrored on 2 logical CPUs / default", "report", [d / m for d, m in zip(mirrored["autodist:default:spe1"], mirrored["autodist:mirrored"])], True))
    for figure in figures:
        figure.note = "throughput ratio (>1: faster)"
    return figures


if __name__ == "__main__":  # python -m benchmarks.defaults [--quick]
    from benchmarks.run import main_for

    main_for("defaults")
