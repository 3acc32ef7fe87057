"""The README's main job: python -m autodist demo, on the bundled digits."""

from __future__ import annotations

import json

from autodist.demo import load_digits
from tests.conftest import run_python, subprocess_env


def test_bundled_data_is_real_digits():
    x, y = load_digits()
    assert x.shape == (1797, 64) and y.shape == (1797,)
    assert sorted(set(y.tolist())) == list(range(10))
    assert 0.0 <= x.min() and x.max() == 1.0


def test_demo_trains_to_high_accuracy():
    proc = run_python(["-m", "autodist", "demo", "--json"], env=subprocess_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["strategy"] == "default"
    assert result["test_accuracy"] > 0.9
    assert "autodist plan: default" in proc.stderr


def test_demo_on_two_logical_cpus():
    proc = run_python(["-m", "autodist", "demo", "--json", "--epochs", "10"], env=subprocess_env(AUTODIST_CPU_DEVICES="2"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert (result["strategy"], result["num_replicas"]) == ("mirrored", 2)
    assert result["test_accuracy"] > 0.9
