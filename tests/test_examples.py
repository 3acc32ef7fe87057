"""Every script in examples/ runs as a user would run it, and reaches a sensible result. The
scripts start together, three at a time (``conftest.Ahead``): each is its own bounded process."""

from __future__ import annotations

import re
from functools import partial

import pytest

from tests.conftest import ROOT, Ahead, run_python, subprocess_env

pytestmark = [pytest.mark.differential, pytest.mark.usefixtures("processes")]  # the differential tier: python -m pytest -m differential

EXAMPLES = ROOT / "examples"
SINGLE_HOST_DEVICES = [None, "2"]
FORCED = [("central_storage", "2", 2), ("one_device", None, 1)]


def example(args: list[str], timeout: float = 300, **env: str | None):
    return run_python(args, env=subprocess_env(**env), timeout=timeout)


def launched(cluster: list[str], script: str, *args: str):
    return example(["-m", "autodist", "launch", *cluster, "--timeout", "150", str(EXAMPLES / script), *args], timeout=180)


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    ahead = Ahead(request)
    out = tmp_path_factory.mktemp("multi_worker_example")
    ahead.submit("test_parameter_server_example_through_the_launcher", partial(launched, ["--workers", "2", "--ps", "1"], "parameter_server.py"))
    ahead.submit("test_multi_worker_example_through_the_launcher", partial(launched, ["--workers", "2"], "multi_worker.py", "--out", str(out)))
    for devices in SINGLE_HOST_DEVICES:
        ahead.submit("test_single_host_example", partial(example, [str(EXAMPLES / "single_host.py")], AUTODIST_CPU_DEVICES=devices), key=f"single_host {devices}")
    ahead.submit("test_custom_loop_example", partial(example, [str(EXAMPLES / "custom_loop.py")], AUTODIST_CPU_DEVICES="2"))
    for strategy, devices, _ in FORCED:
        ahead.submit("test_forced_strategy_example", partial(example, [str(EXAMPLES / "forced_strategy.py"), "--strategy", strategy], AUTODIST_CPU_DEVICES=devices), key=strategy)
    ahead.submit("test_dry_run_plans_example", partial(example, [str(EXAMPLES / "dry_run_plans.py")], timeout=60))
    yield ahead, out
    ahead.close()


@pytest.mark.parametrize("cpu_devices", SINGLE_HOST_DEVICES)
def test_single_host_example(runs, cpu_devices):
    proc = runs[0][f"single_host {cpu_devices}"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = "plan: mirrored, 2 replica(s)" if cpu_devices else "plan: default, 1 replica(s)"
    assert expected in proc.stdout
    accuracy = float(re.search(r"validation accuracy: ([0-9.]+)", proc.stdout).group(1))
    assert accuracy > 0.8


def test_custom_loop_example(runs):
    proc = runs[0]["test_custom_loop_example"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = re.search(r"mirrored x 2: train accuracy ([0-9.]+)", proc.stdout)
    assert match and float(match.group(1)) > 0.9, proc.stdout


def test_multi_worker_example_through_the_launcher(runs):
    proc, out = runs[0]["test_multi_worker_example_through_the_launcher"], runs[1]
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "[worker 0] multi_worker_mirrored: 2 workers, global batch 128" in proc.stdout
    assert "[worker 1] multi_worker_mirrored" not in proc.stdout  # only the chief reports
    accuracy = float(re.search(r"\[worker 0\] validation accuracy: ([0-9.]+)", proc.stdout).group(1))
    assert accuracy > 0.8
    assert sorted(p.name for p in out.iterdir()) == ["digits.keras"]


@pytest.mark.parametrize("strategy, cpu_devices, replicas", FORCED)
def test_forced_strategy_example(runs, strategy, cpu_devices, replicas):
    proc = runs[0][strategy]
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = re.search(rf"{strategy} x {replicas}: val_accuracy ([0-9.]+), evaluate ([0-9.]+)", proc.stdout)
    assert match and float(match.group(1)) > 0.8, proc.stdout
    assert "trained a copy" not in proc.stderr  # AUTODIST_STRATEGY: the model was created under it


def test_parameter_server_example_through_the_launcher(runs):
    proc = runs[0]["test_parameter_server_example_through_the_launcher"]
    assert proc.returncode == 0, proc.stdout[-3000:]
    match = re.search(r"\[chief 0\] parameter_server: loss ([0-9.]+) -> ([0-9.]+)", proc.stdout)
    assert match and float(match.group(2)) < float(match.group(1)), proc.stdout[-3000:]


def test_dry_run_plans_example(runs):
    proc = runs[0]["test_dry_run_plans_example"]
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "autodist plan: tpu with 8 replica(s)" in out
    assert "autodist plan: mirrored with 8 replica(s)" in out
    assert "autodist plan: central_storage with 8 replica(s)" in out  # 2B parameters do not fit 40 GB
    assert "autodist plan: one_device with 1 replica(s) on /gpu:0" in out
