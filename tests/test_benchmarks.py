"""The benchmark suite runs end to end (--quick). This checks that it ran, not its timings."""

from __future__ import annotations

import json

from tests.conftest import run_python, subprocess_env

FIGURES = ("overhead", "multi-worker scaling", "inspect --fast", "decision quality", "steps_per_execution")


def test_quick_benchmarks_run_and_write_results(tmp_path):
    proc = run_python(["-m", "benchmarks", "--quick", "--out", str(tmp_path)], env=subprocess_env(), timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record = json.loads((tmp_path / "results.json").read_text())
    names = [figure["name"] for figure in record["figures"]]
    for prefix in FIGURES:
        assert any(prefix in name for name in names), (prefix, names)
    for figure in record["figures"]:
        assert figure["ratios"] and all(r >= 0 for r in figure["ratios"])
        assert figure["median"] == figure["median"]  # not NaN
    assert record["machine"]["cpus"] >= 1 and record["machine"]["tensorflow"]
    assert "| figure" in proc.stdout and "| result |" in proc.stdout
    assert (tmp_path / "results.png").stat().st_size > 1000
