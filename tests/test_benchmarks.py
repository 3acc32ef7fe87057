"""The benchmark suite runs end to end (--quick), and every results file (the quick run's, and
the committed full runs' the README quotes) holds figures whose verdict follows from their own
numbers and stated goal. Timings themselves are not bounded here: they are the benchmarks' job."""

from __future__ import annotations

import json
import re
import statistics

import pytest

from tests.conftest import run_python, subprocess_env

pytestmark = pytest.mark.differential  # the differential tier: python -m pytest -m differential

FIGURES = ("overhead", "fit: autodist's defaults", "start-up: a fresh process", "multi-worker scaling", "decision quality", "steps_per_execution", "memory estimate")  # communication: full runs only
# Every benchmark runs once: detection as a module (the second test), the others together.
TOGETHER = ["decision", "defaults", "memory", "overhead", "scaling"]


def test_quick_benchmarks_run_and_write_results(processes, tmp_path):
    proc = run_python(["-m", "benchmarks", "--quick", "--only", *TOGETHER, "--out", str(tmp_path)], env=subprocess_env(), timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record = json.loads((tmp_path / f"results-{'-'.join(TOGETHER)}-quick.json").read_text())
    names = [figure["name"] for figure in record["figures"]]
    for prefix in FIGURES:
        assert any(prefix in name for name in names), (prefix, names)
    check_figures(record)
    assert record["machine"]["cpus"] >= 1 and record["machine"]["tensorflow"]
    assert "| figure" in proc.stdout and "| result |" in proc.stdout
    assert (tmp_path / f"results-{'-'.join(TOGETHER)}-quick.png").stat().st_size > 1000
    assert not (tmp_path / "results.json").exists()  # a quick run leaves the full run's figures alone


def test_run_py_works_as_a_file_and_each_benchmark_as_a_module(processes, tmp_path):
    """``python benchmarks/run.py`` (from any folder) and ``python -m benchmarks.<name>``."""
    from tests.conftest import ROOT

    # Neither the repository on PYTHONPATH nor as the working folder: run.py finds its package.
    as_file = run_python([str(ROOT / "benchmarks" / "run.py"), "--help"], env=subprocess_env(PYTHONPATH=None), timeout=60, cwd=tmp_path)
    assert as_file.returncode == 0, as_file.stderr[-2000:]
    assert "--quick" in as_file.stdout
    one = run_python(["-m", "benchmarks.detection", "--quick", "--out", str(tmp_path)], env=subprocess_env(), timeout=120)
    assert one.returncode == 0, one.stdout[-2000:] + one.stderr[-2000:]
    record = json.loads((tmp_path / "results-detection-quick.json").read_text())
    names = [figure["name"] for figure in record["figures"]]
    assert any(name.startswith("inspect --fast") for name in names), names
    assert not any(other in name for name in names for other in ("overhead", "scaling", "decision", "steps_per_execution")), names
    check_figures(record)


def check_figures(record: dict) -> None:
    """Each figure: ratios, their median/min/max, and a verdict that follows from its goal
    (``<= x`` / ``>= x`` on the median: pass or short; ``report``: reported only)."""
    assert record["figures"], record
    for figure in record["figures"]:
        ratios = figure["ratios"]
        assert ratios and all(r >= 0 for r in ratios), figure
        assert figure["median"] == pytest.approx(statistics.median(ratios)), figure["name"]
        assert (figure["min"], figure["max"]) == (min(ratios), max(ratios)), figure["name"]
        goal = re.fullmatch(r"(<=|>=) ([0-9.]+)", figure["goal"])
        if goal is not None:
            bound = float(goal.group(2))
            meets = figure["median"] <= bound if goal.group(1) == "<=" else figure["median"] >= bound
            assert figure["passed"] == meets and figure["result"] == ("pass" if meets else "short"), figure
        elif figure["goal"] == "report":
            assert figure["result"] == "report", figure
        else:
            assert figure["result"] == ("pass" if figure["passed"] else "short"), figure


@pytest.mark.parametrize("name", ["results.json", "results-decision.json", "results-communication-decision.json", "results-memory.json"])
def test_committed_results_hold_consistent_figures(name):
    from tests.conftest import ROOT

    check_figures(json.loads((ROOT / "benchmarks" / name).read_text()))
