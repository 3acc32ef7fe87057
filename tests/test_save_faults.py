"""Saves that survive the machine (issue 46): a full disk, damaged saves, a process killed at any
point, and two processes on one folder. Real TensorFlow in fresh processes
(tests/scenarios/save_faults.py), a real small file system for the full disk (a tmpfs mounted in
a private mount namespace, ``unshare -rm``), real signals. Every run ends with the uninterrupted
run's weights and its whole History, or a named error; nothing a user made is lost, nothing is
silent. The table in docs/resume.md ("Faults") shows what these tests measure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from autodist.resume.preemption import PREEMPTED_EXIT_CODE
from tests.conftest import SCENARIOS, Ahead, finished, start_python, subprocess_env

pytestmark = pytest.mark.usefixtures("processes")  # every test here runs TensorFlow or starts processes: the tensorflow tier

SCRIPT = str(SCENARIOS / "save_faults.py")
EPOCHS, BATCHES = 5, 10
TOLERANCE = 1e-6
FOLDER = Path("backup") / "single" / "fit-0"


def start(out: Path, mode: str, **env: str) -> subprocess.Popen:
    return start_python([SCRIPT, str(out), mode], env=subprocess_env(AUTODIST_CPU_DEVICES="1", **env))


def run(out: Path, mode: str, timeout: float = 240, **env: str) -> dict:
    """One start: its exit code, stderr, and what it wrote when fit returned."""
    code, _, err = finished(start(out, mode, **env), timeout)
    result = out / f"{mode}.json"
    return {"code": code, "stderr": err, **(json.loads(result.read_text()) if result.exists() and code == 0 else {})}


def wait_for(path: Path, proc: subprocess.Popen, bound_s: float = 180) -> None:
    deadline = time.monotonic() + bound_s
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), f"{path.name} was never written (exit {proc.poll()})"


def steps(out: Path) -> dict:
    """Each trained step's optimizer count, over every start: steps lost and steps trained twice."""
    counts = [int(line.split()[3]) for line in (out / "steps.txt").read_text().splitlines()]
    return {"lost": sorted(set(range(1, EPOCHS * BATCHES + 1)) - set(counts)), "redone": len(counts) - EPOCHS * BATCHES}


def full_disk(out: Path) -> dict:
    """The backup folder on a tmpfs of its own, filled after the first save (see the scenario)."""
    mount = out / "mnt"
    mount.mkdir(parents=True)
    command = [
        "unshare",
        "-rm",
        "sh",
        "-c",
        'mount -t tmpfs -o size=32m tmpfs "$1" && shift && exec "$@"',
        "sh",
        str(mount),
        sys.executable,
        SCRIPT,
        str(out),
        "full",
    ]
    proc = subprocess.run(
        command,
        env=subprocess_env(AUTODIST_CPU_DEVICES="1", SAVE_FAULTS_BACKUP=str(mount)),
        capture_output=True,
        text=True,
        timeout=240,
    )
    result = out / "full.json"
    listed = out / "after_failed_save.json"
    return {
        "code": proc.returncode,
        "stderr": proc.stderr,
        **(json.loads(result.read_text()) if result.exists() else {}),
        "after_failed_save": json.loads(listed.read_text()) if listed.exists() else None,
    }


def killed_then_again(out: Path, mode: str, damage=None) -> dict:
    first = run(out, mode)
    if damage is not None:
        damage(out / FOLDER)
    return {
        "first": first,
        "again": run(out, "again"),
        "steps": steps(out),
        "left": sorted(p.name for p in (out / FOLDER).rglob("*")) if (out / FOLDER).exists() else [],
    }


def every_save_damaged(folder: Path) -> None:
    for path in folder.glob("*.npz"):
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # cut short (a bad copy)
    newest = sorted(folder.glob("*.json"))[-1]
    newest.write_text(newest.read_text()[:-20])  # and a record that no longer parses


def newest_save_bit_rot(folder: Path) -> None:
    newest = sorted(folder.glob("*.npz"))[-1]
    data = bytearray(newest.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])  # the zip's directory still reads
    newest.write_bytes(bytes(data))


def two_processes(out: Path) -> dict:
    """A process holding the folder in its second epoch; a second on the same folder (grace 2 s);
    then the first SIGKILLed (a holder that died) and a third start."""
    holder = start(out, "hold")
    wait_for(out / "held", holder)
    second = run(out, "again", AUTODIST_GRACE="2")
    holder.send_signal(signal.SIGKILL)
    code, _, _ = finished(holder, 60)
    third = run(out, "again")
    return {"holder_pid": holder.pid, "holder_code": code, "second": second, "third": third}


def said(proc: subprocess.Popen, words: str, bound_s: float = 120) -> bool:
    """Whether a started process's stderr says ``words`` within ``bound_s`` (read where it is, not
    moving the offset the process writes at)."""
    deadline = time.monotonic() + bound_s
    while proc.poll() is None and time.monotonic() < deadline:
        if words.encode() in os.pread(proc.outputs[1].fileno(), 1 << 22, 0):  # type: ignore[attr-defined]
            return True
        time.sleep(0.1)
    return False


def replaced_while_saving(out: Path) -> dict:
    """A pod terminating (SIGTERM; it holds its step until the test sees its replacement waiting)
    while its replacement already starts on the same folder."""
    old = start(out, "slow_term")
    wait_for(out / "reached", old)
    new = start(out, "again", AUTODIST_GRACE="60")
    waited = said(new, "is held by")
    (out / "release").touch()
    old_code, _, old_err = finished(old, 120)
    new_code, _, new_err = finished(new, 240)
    result = out / "again.json"
    return {
        "old": {"code": old_code, "stderr": old_err, "pid": old.pid},
        "new": {"code": new_code, "stderr": new_err, **(json.loads(result.read_text()) if result.exists() else {})},
        "waited": waited,
        "steps": steps(out),
    }


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    ahead = Ahead(request, lanes=2)
    base = tmp_path_factory.mktemp("faults")
    ahead.submit("runs", partial(run, base / "reference", "reference"), key="reference")
    ahead.submit("runs", partial(full_disk, base / "full"), key="full")
    ahead.submit("runs", partial(killed_then_again, base / "mid", "kill_mid"), key="kill_mid")
    ahead.submit("runs", partial(killed_then_again, base / "end", "kill_end"), key="kill_end")
    ahead.submit(
        "runs", partial(killed_then_again, base / "all", "kill_epoch", every_save_damaged), key="every_save_damaged"
    )
    ahead.submit(
        "runs", partial(killed_then_again, base / "newest", "kill_epoch", newest_save_bit_rot), key="newest_damaged"
    )
    ahead.submit("runs", partial(two_processes, base / "two"), key="two_processes")
    ahead.submit("runs", partial(replaced_while_saving, base / "replaced"), key="replaced")
    yield ahead
    ahead.close()


def assert_the_uninterrupted_run(result: dict, reference: dict, what: str) -> float:
    """The run ends with the uninterrupted run's weights and its whole History (every epoch)."""
    assert result.get("code") == 0, f"{what}: exit {result.get('code')}\n{result.get('stderr', '')[-4000:]}"
    assert result["epochs"] == list(range(EPOCHS)), f"{what}: History epochs {result['epochs']}"
    assert sorted(result["history"]) == sorted(reference["history"]), (what, result["history"])
    for key, values in result["history"].items():
        assert np.allclose(values, reference["history"][key], rtol=0, atol=TOLERANCE), (
            what,
            key,
            values,
            reference["history"][key],
        )
    gap = max(
        float(np.max(np.abs(np.array(a) - np.array(b))))
        for a, b in zip(result["weights"], reference["weights"], strict=True)
    )
    assert gap <= TOLERANCE, f"{what}: weights {gap:g} from the uninterrupted run's"
    return gap


def test_a_full_disk_costs_no_training_and_says_once_what_a_preemption_would_cost(runs, report):
    reference, full = runs["reference"], runs["full"]
    assert_the_uninterrupted_run(full, reference, "full disk")
    said = [message for message in full["warnings"] if "could not write" in message]
    assert len(said) == 1, full["warnings"]
    assert "No space left on device" in said[0], said[0]
    assert (
        "mnt/single/fit-0" in said[0]
        and "would cost the 10 steps since the newest save (epoch 3, after 0 of its batches)" in said[0]
    ), said[0]
    assert "was written again" in full["stderr"], full["stderr"][-3000:]
    listed = full["after_failed_save"]
    assert listed is not None and not [name for name in listed if name.endswith(".partial")], listed
    assert sorted(name for name in listed if name.endswith(".npz")) == [
        "epoch-000001-00000000.npz",
        "epoch-000002-00000000.npz",
    ], listed
    report(
        "save faults: a full disk at the third of 5 epoch saves: trained on to the uninterrupted run's weights, 1 warning; saves 1-2 kept, no partial file"
    )


def test_a_sigkill_mid_epoch_resumes_at_the_epochs_start_with_one_history(runs, report):
    reference, found = runs["reference"], runs["kill_mid"]
    assert found["first"]["code"] == -signal.SIGKILL
    assert_the_uninterrupted_run(found["again"], reference, "SIGKILL mid-epoch")
    assert found["steps"] == {"lost": [], "redone": 5}, found[
        "steps"
    ]  # epoch 3's first 5 steps, trained after the epoch 2 save
    report(
        "save faults: SIGKILL in epoch 3, batch 6: resumed at the epoch-2 save, 5 steps redone, the History of all 5 epochs"
    )


def test_a_run_killed_after_its_last_save_stays_finished(runs):
    reference, found = runs["reference"], runs["kill_end"]
    assert found["first"]["code"] == -signal.SIGKILL
    assert_the_uninterrupted_run(found["again"], reference, "killed after the last save")
    assert found["steps"] == {"lost": [], "redone": 0}, found["steps"]
    assert "all 5 epochs were trained before the restart" in found["again"]["stderr"], found["again"]["stderr"][-3000:]


def test_every_save_damaged_starts_over_with_a_warning_and_keeps_the_files(runs, report):
    reference, found = runs["reference"], runs["every_save_damaged"]
    assert_the_uninterrupted_run(found["again"], reference, "every save damaged")
    said = [message for message in found["again"]["warnings"] if "is damaged" in message]
    assert len(said) == 1 and said[0].startswith("Every save in "), found["again"]["warnings"]
    assert (
        "epoch-000002-00000000" in said[0]
        and "epoch-000003-00000000" in said[0]
        and "up to epoch 4, after 0 of its batches" in said[0]
    ), said[0]
    assert found["steps"]["redone"] == 30 and not found["steps"]["lost"], found["steps"]
    kept = [name for name in found["left"] if name.startswith("epoch-")]
    assert sorted(kept) == [
        "epoch-000002-00000000.json",
        "epoch-000002-00000000.npz",
        "epoch-000003-00000000.json",
        "epoch-000003-00000000.npz",
    ], found["left"]
    report(
        "save faults: every save damaged: started over (30 steps redone), warned naming both saves, their 4 files kept in damaged/"
    )


def test_a_damaged_newest_save_resumes_from_the_older_one_named(runs):
    reference, found = runs["reference"], runs["newest_damaged"]
    assert_the_uninterrupted_run(found["again"], reference, "newest save damaged")
    said = [message for message in found["again"]["warnings"] if "is damaged" in message]
    assert (
        len(said) == 1
        and "epoch-000003-00000000" in said[0]
        and "resumes from the older save epoch-000002-00000000" in said[0]
    ), found["again"]["warnings"]
    assert found["steps"] == {"lost": [], "redone": 10}, found["steps"]
    assert "damaged" in found["left"] and "epoch-000003-00000000.npz" in found["left"], found["left"]


def test_a_second_process_on_a_held_folder_waits_then_is_refused_naming_the_holder(runs):
    found = runs["two_processes"]
    second = found["second"]
    assert second["code"] not in (0, None) and "BackupFolderInUseError" in second["stderr"], second["stderr"][-3000:]
    assert f"held by pid {found['holder_pid']}" in second["stderr"], second["stderr"][-3000:]
    assert found["holder_code"] == -signal.SIGKILL
    third = found["third"]  # the holder died: its lock went with it
    assert third["code"] == 0 and "is held by" not in third["stderr"], third["stderr"][-3000:]


def test_a_replacement_that_starts_while_its_predecessor_saves_resumes_at_that_save(runs, report):
    reference, found = runs["reference"], runs["replaced"]
    assert found["old"]["code"] == PREEMPTED_EXIT_CODE, found["old"]["stderr"][-3000:]
    assert_the_uninterrupted_run(found["new"], reference, "replacement pod")
    assert found["waited"] and f"is held by pid {found['old']['pid']}" in found["new"]["stderr"], found["new"][
        "stderr"
    ][-3000:]
    assert found["steps"] == {"lost": [], "redone": 0}, found["steps"]
    report(
        "save faults: a replacement started while its predecessor held its preemption save: waited, resumed at its step, 0 steps redone"
    )


def test_the_faults_table_shows_the_steps_these_runs_redo(runs):
    """docs/resume.md's "Faults" table: each row this module measures gives its steps redone."""
    from tests.conftest import ROOT

    text = (ROOT / "docs" / "resume.md").read_text(encoding="utf-8").split("## Faults", 1)[1].split("\n## ", 1)[0]
    rows = {
        line.split(" | ")[0].strip("| "): line.split(" | ")[2].strip()
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith("| fault")
    }
    measured = {
        "SIGKILL mid-epoch (epoch 3, batch 6)": runs["kill_mid"]["steps"]["redone"],
        "the newest save damaged (bit rot in its values)": runs["newest_damaged"]["steps"]["redone"],
        "every save damaged (values cut short, a record that does not parse)": runs["every_save_damaged"]["steps"][
            "redone"
        ],
        "killed after the last epoch's save, before `fit` returned": runs["kill_end"]["steps"]["redone"],
        "a replacement pod while its predecessor writes its preemption save": runs["replaced"]["steps"]["redone"],
        "SIGTERM mid-epoch (a preemption with notice)": runs["replaced"]["steps"]["redone"],
    }
    for row, redone in measured.items():
        assert rows.get(row) == str(redone), (row, rows.get(row), redone)
