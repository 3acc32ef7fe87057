"""Every script in examples/ runs as a user would run it, and reaches a sensible result."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT, run_python, subprocess_env


@pytest.mark.parametrize("cpu_devices", [None, "2"])
def test_single_host_example(cpu_devices):
    proc = run_python([str(ROOT / "examples" / "single_host.py")], env=subprocess_env(AUTODIST_CPU_DEVICES=cpu_devices), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = "plan: mirrored, 2 replica(s)" if cpu_devices else "plan: default, 1 replica(s)"
    assert expected in proc.stdout
    accuracy = float(re.search(r"validation accuracy: ([0-9.]+)", proc.stdout).group(1))
    assert accuracy > 0.8


def test_custom_loop_example():
    proc = run_python([str(ROOT / "examples" / "custom_loop.py")], env=subprocess_env(AUTODIST_CPU_DEVICES="2"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = re.search(r"mirrored x 2: train accuracy ([0-9.]+)", proc.stdout)
    assert match and float(match.group(1)) > 0.9, proc.stdout


def test_multi_worker_example_through_the_launcher(tmp_path):
    proc = run_python(
        ["-m", "autodist", "launch", "--workers", "2", "--timeout", "150", str(ROOT / "examples" / "multi_worker.py"), "--out", str(tmp_path)],
        env=subprocess_env(),
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "[worker 0] multi_worker_mirrored: 2 workers, global batch 128" in proc.stdout
    assert "[worker 1] multi_worker_mirrored" not in proc.stdout  # only the chief reports
    accuracy = float(re.search(r"\[worker 0\] validation accuracy: ([0-9.]+)", proc.stdout).group(1))
    assert accuracy > 0.8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["digits.keras"]


@pytest.mark.parametrize("strategy, cpu_devices, replicas", [("central_storage", "2", 2), ("one_device", None, 1)])
def test_forced_strategy_example(strategy, cpu_devices, replicas):
    proc = run_python(
        [str(ROOT / "examples" / "forced_strategy.py"), "--strategy", strategy],
        env=subprocess_env(AUTODIST_CPU_DEVICES=cpu_devices),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = re.search(rf"{strategy} x {replicas}: val_accuracy ([0-9.]+), evaluate ([0-9.]+)", proc.stdout)
    assert match and float(match.group(1)) > 0.8, proc.stdout
    assert "trained a copy" not in proc.stderr  # AUTODIST_STRATEGY: the model was created under it


def test_parameter_server_example_through_the_launcher():
    proc = run_python(
        ["-m", "autodist", "launch", "--workers", "2", "--ps", "1", "--timeout", "150", str(ROOT / "examples" / "parameter_server.py")],
        env=subprocess_env(),
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    match = re.search(r"\[chief 0\] parameter_server: loss ([0-9.]+) -> ([0-9.]+)", proc.stdout)
    assert match and float(match.group(2)) < float(match.group(1)), proc.stdout[-3000:]


def test_dry_run_plans_example():
    proc = run_python([str(ROOT / "examples" / "dry_run_plans.py")], env=subprocess_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "autodist plan: tpu with 8 replica(s)" in out
    assert "autodist plan: mirrored with 8 replica(s)" in out
    assert "autodist plan: central_storage with 8 replica(s)" in out  # 2B parameters do not fit 40 GB
    assert "autodist plan: one_device with 1 replica(s) on /gpu:0" in out
