"""5. The memory model: autodist's per-device estimate against TensorFlow's allocator, for an
MLP, a CNN and an embedding-heavy model at two batch sizes (``benchmarks/_memory.py`` says how
it measures). Figure: estimated ÷ measured bytes (1.0 is exact; above 1 over-estimates)."""

from __future__ import annotations

from benchmarks.common import Figure, run_json


def run(quick: bool) -> list[Figure]:
    batches = ["64"] if quick else ["64", "256"]
    out = run_json(["benchmarks/_memory.py", *batches], timeout=600)["results"]
    ratios = [r["estimated"] / r["measured"] for r in out]
    figure = Figure("memory estimate / measured", "report", ratios, True)
    figure.note = "; ".join(
        f"{r['model']}, batch {r['batch']}: estimated {r['estimated'] / 2**20:.0f} MiB, measured {r['measured'] / 2**20:.0f} MiB"
        for r in out
    )
    figure.extra = {"results": out}
    return [figure]


if __name__ == "__main__":  # python -m benchmarks.memory [--quick]
    from benchmarks.run import main_for

    main_for("memory")
