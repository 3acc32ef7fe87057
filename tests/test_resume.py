"""The resume table: for every input kind and stateful callback, a fit SIGTERMed in the middle of
an 8-step compiled call (autodist's default steps_per_execution) and started again trains
exactly the steps that remain and ends with the uninterrupted run's weights, History, epochs,
learning rate and checkpoints.

tests/scenarios/resume.py runs every cell in three processes: the uninterrupted runs and the
SIGTERMed first attempts side by side, then the restarts. The table goes to the run's figures
and to docs/resume.md.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import ROOT, finished, start_scenario

pytestmark = [pytest.mark.differential, pytest.mark.usefixtures("processes")]  # the differential tier: python -m pytest -m differential

#: Weights and History: the resumed run's against the uninterrupted run's.
TOLERANCE = 1e-6
KILL_AT = 14  # the training step during which the model sends SIGTERM (tests/scenarios/resume.py), or later


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("resume")
    started = [start_scenario("resume.py", str(base / "reference"), "reference"), start_scenario("resume.py", str(base / "run"), "first")]
    for proc in started:
        code, out, err = finished(proc, 600)
        assert code == 0, f"{proc.args}: exit {code}\n{out[-2000:]}\n{err[-4000:]}"
    code, out, err = finished(start_scenario("resume.py", str(base / "run"), "again"), 600)
    assert code == 0, f"restart: exit {code}\n{out[-2000:]}\n{err[-4000:]}"
    cells = {}
    for path in sorted((base / "reference").glob("reference-*.json"), key=lambda p: int(p.stem.split("-")[1])):
        index = path.stem.split("-")[1]
        reference = json.loads(path.read_text())
        first, again = (json.loads((base / "run" / f"{mode}-{index}.json").read_text()) for mode in ("first", "again"))
        cells[reference["cell"]] = (reference, first, again)
    return cells, err


def measure(reference: dict, first: dict, again: dict) -> dict:
    """What the table shows for one cell: the steps redone (trained twice, or past the end), the
    largest weight and History differences, and whether epochs, learning rate and checkpoints
    are the uninterrupted run's."""
    redone = first["end"] + (again["end"] - again["start"]) - reference["end"]
    weights = max(float(np.max(np.abs(np.array(a) - np.array(b)))) for a, b in zip(again["weights"], reference["weights"], strict=True))
    resumed = again.get("epochs", [])
    history = max(
        (abs(value - reference["history"][key][epoch]) for key, values in again.get("history", {}).items() for epoch, value in zip(resumed, values, strict=True)),
        default=float("inf"),
    )
    return {
        "redone": redone,
        "weights": weights,
        "history": history,
        "same_epochs": bool(resumed) and reference["epochs"][-len(resumed):] == resumed,
        "same_lr": again["learning_rate"] == reference["learning_rate"],
        "same_checkpoints": again["checkpoints"] == reference["checkpoints"],
    }


def page_rows() -> dict[str, list[str]]:
    """docs/resume.md's resume table: each row's cells, by its first."""
    text = (ROOT / "docs" / "resume.md").read_text(encoding="utf-8").split("## The resume table", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split(" | ") for line in text.splitlines() if line.startswith("| ") and not line.startswith("| input")]
    return {row[0].strip(): [cell.strip() for cell in row[1:]] for row in rows}


def check_the_page(cells: dict) -> None:
    """The page shows what this test measures: one row per cell, the step saved at, the steps
    redone, differences within the tolerance, the same epochs, learning rate and checkpoints;
    and what its rows say of a cell (EarlyStopping's last epoch, the learning rate it ends at,
    the batches an epoch)."""
    rows = page_rows()
    assert sorted(rows) == sorted(cells), f"docs/resume.md rows {sorted(rows)} are not the measured cells {sorted(cells)}"
    for name, (reference, first, again) in cells.items():
        figures = measure(reference, first, again)
        saved, redone, weights, history, same = rows[name]
        assert (int(saved), int(redone)) == (first["end"], figures["redone"]), (name, rows[name], first["end"], figures["redone"])
        assert float(weights) <= TOLERANCE and float(history) <= TOLERANCE and same == "the same", (name, rows[name])
    stopped = cells["`EarlyStopping(patience=3)` (stops after epoch 4)"][0]
    assert stopped["epochs"][-1] == 3, stopped["epochs"]  # the 4th epoch, counted from 1
    reduced = cells["`ReduceLROnPlateau(patience=2)` (0.05 → 0.0125)"][0]
    assert reduced["learning_rate"] == pytest.approx(0.0125), reduced["learning_rate"]


def test_a_restart_after_sigterm_inside_an_8_step_call_ends_as_the_uninterrupted_run(runs, report):
    cells, log = runs
    assert len(cells) == 9, sorted(cells)
    wrong = {}
    report("resume after SIGTERM inside an 8-step call (steps redone | weight diff | History diff | epochs, lr, checkpoints as uninterrupted):")
    for name, (reference, first, again) in cells.items():
        figures = measure(reference, first, again)
        same = all(figures[key] for key in ("same_epochs", "same_lr", "same_checkpoints"))
        report(
            f"  {name:<36} | {first['steps_per_execution']} steps a call, saved at step {first['end']} | redone "
            f"{figures['redone']} | {figures['weights']:.2g} | {figures['history']:.2g} | {'yes' if same else 'NO'}"
        )
        problems = []
        if first.get("exit") != 75 or first["steps_per_execution"] != 8 or not first["end"] > KILL_AT:
            problems.append(f"first attempt: exit {first.get('exit')}, steps_per_execution {first['steps_per_execution']}, saved at {first['end']}")
        if figures["redone"] != 0 or figures["weights"] > TOLERANCE or figures["history"] > TOLERANCE or not same:
            problems.append(f"{figures}, epochs {again.get('epochs')} vs {reference['epochs']}, checkpoints {again['checkpoints']} vs {reference['checkpoints']}")
        if again["warnings"]:
            problems.append(f"warned: {again['warnings']}")
        if problems:
            wrong[name] = problems
    assert not wrong, wrong
    check_the_page(cells)
    assert "resuming at epoch 2, after 8 of its batches" in log, log[-3000:]
    assert "resuming at epoch 3, after 0 of its batches, from the epoch-end save" in log, log[-3000:]
