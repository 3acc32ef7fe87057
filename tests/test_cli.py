"""The command line: inspect, plan (dry run on simulated hardware), and its error path."""

from __future__ import annotations

import argparse
import json

from autodist.detection import hardware
from autodist.cli import inspect_command, main, render_inspect
from autodist.detection.hardware import GpuInfo
from tests.conftest import GIB, make_snapshot, run_python, subprocess_env


def test_inspect_json_from_a_new_process(processes):
    proc = run_python(["-m", "autodist", "inspect", "--json"], env=subprocess_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    snapshot = data["snapshot"]
    for key in ("tensorflow_version", "keras_version", "keras_flavor", "num_cpus", "host_memory_bytes", "gpus", "tpu", "cluster"):
        assert key in snapshot
    assert snapshot["keras_flavor"] == "keras3"
    assert snapshot["num_tensorflow_gpus"] == 0
    assert data["plan"]["strategy"] == "default"
    assert data["plan"]["reasons"]


def test_inspect_text_is_a_bug_report(processes):
    proc = run_python(["-m", "autodist", "inspect", "--fast"], env=subprocess_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for phrase in ("tensorflow:", "keras:", "host memory:", "TPU: no TPU", "cluster: none", "plan: default", "why:"):
        assert phrase in text, text
    assert "not checked (--fast skips TensorFlow)" in text


def test_inspect_lists_the_workarounds_the_plan_installs_and_what_is_replaced_in_this_process(fresh_state):
    from autodist import process

    class Owner:
        def method(self):
            return "own"

    text = render_inspect(inspect_command(argparse.Namespace(fast=True)))
    assert "replaced in this process: nothing" in text
    assert "Keras workarounds this plan installs (docs/keras-workarounds.md):" in text
    process.replace(Owner, "method", lambda self: "replaced")
    data = inspect_command(argparse.Namespace(fast=True))
    assert data["replaced"] == [f"{__name__}.Owner.method"]
    text = render_inspect(data)
    assert f"replaced in this process: 1 attributes of TensorFlow and Keras:\n  {__name__}.Owner.method" in text
    process.reset()
    assert Owner().method() == "own"


def test_inspect_diagnoses_gpus_tensorflow_cannot_see(tensorflow_imported, monkeypatch):
    monkeypatch.setattr(hardware, "nvml_gpus", lambda: [GpuInfo("NVIDIA A100", 40 * GIB, "8.0")])
    monkeypatch.setattr(hardware, "tensorflow_gpus", lambda: [])
    monkeypatch.setattr(hardware, "tensorflow_cuda_build", lambda: False)
    text = render_inspect(inspect_command(argparse.Namespace(fast=False)))
    assert "diagnosis: The NVIDIA driver sees 1 GPU(s) but TensorFlow sees none" in text
    assert "pip uninstall tensorflow-cpu" in text


def test_plan_dry_run_on_a_simulated_machine(tmp_path, capsys):
    snap_file = tmp_path / "snap.json"
    snap_file.write_text(json.dumps({"snapshot": make_snapshot(num_gpus=8, gpu_memory_gib=16).to_dict()}))
    assert main(["plan", "--snapshot", str(snap_file), "--num-params", "1000000", "--batch-size", "100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["strategy"], data["num_replicas"], data["global_batch_size"]) == ("mirrored", 8, 104)
    assert main(["plan", "--snapshot", str(snap_file), "--num-params", "1000000000"]) == 0
    out = capsys.readouterr().out
    assert "plan: central_storage with 8 replica(s)" in out
    assert "memory: central_storage (batch 4 per device): 11.2 GiB per device" in out and "on the host" in out
    assert main(["plan", "--snapshot", str(snap_file), "--num-params", "5000000000"]) == 0  # a dry run warns
    assert "warning: No strategy fits this model on these GPUs" in capsys.readouterr().out


def test_plan_with_forced_strategy_that_cannot_run(tmp_path, capsys):
    snap_file = tmp_path / "snap.json"
    snap_file.write_text(json.dumps(make_snapshot().to_dict()))
    assert main(["plan", "--snapshot", str(snap_file), "--strategy", "tpu"]) == 2
    assert "autodist: error: strategy='tpu' was forced, but no TPU was found" in capsys.readouterr().err


def test_plan_with_unreadable_snapshot(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    assert main(["plan", "--snapshot", str(bad)]) == 2
    assert "inspect --json" in capsys.readouterr().err


def test_inspect_names_a_nightly_keras_and_on_an_untested_pair_each_piece_and_its_test(monkeypatch, fresh_state):
    """Issue 57: a keras-nightly has no ``keras`` distribution metadata; inspect names the version
    Keras's code gives. On a pair newer than the matrix's, every touch and workaround is listed
    with its state and the still-needed test that decides it; a measured pre-release is said so."""
    from autodist import cli
    from autodist.upstream.keras_workarounds import WORKAROUNDS

    nightly = {"tensorflow": "2.22.0rc0", "keras": "3.16.0.dev2026102704", "tf_keras": None}
    monkeypatch.setattr(cli, "installed", lambda: dict(nightly))
    measured = cli._versions()
    assert measured["notes"] == [] and measured["workarounds"] is None and measured["measured"]
    text = cli._versions_text(measured)[0]
    assert "keras 3.16.0.dev2026102704" in text and "pre-releases the support matrix measured" in text, text

    monkeypatch.setenv("AUTODIST_KERAS_COMPAT", "auto,-batches_copied")
    monkeypatch.setattr(cli, "installed", lambda: {"tensorflow": "2.23.0", "keras": "3.17.0", "tf_keras": None})
    newer = cli._versions()
    assert "newer than tested" in cli._versions_text(newer)[0]
    rows = [{"touch": "keras.trainer_loops", "state": "on", "still_needed": "tests/x.py::test_still_needed_y"}]
    lines = cli._untested_text(newer, rows)
    assert lines[1] == "  touch keras.trainer_loops: on; tests/x.py::test_still_needed_y"
    said = {line.split()[1]: line for line in lines[2:]}
    assert set(said) == set(WORKAROUNDS)
    for name, w in WORKAROUNDS.items():
        assert said[name].endswith(w.still_needed), said[name]
    assert "not applied" in said["batches_copied"] and "not applied" in said["optimizer_built_in_step"]  # left out; fixed
    assert "applied where a plan needs it" in said["every_replica_fed"]
    assert cli._untested_text(measured, rows) == []
