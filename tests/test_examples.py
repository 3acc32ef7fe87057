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
