"""The README's main job: python -m autodist demo, on the bundled digits."""

from __future__ import annotations

import json
from functools import partial

import pytest

from autodist.demo import load_digits
from tests.conftest import Ahead, run_python, subprocess_env


def demo(*args: str, **env: str | None):
    return run_python(["-m", "autodist", "demo", "--json", *args], env=subprocess_env(**env), timeout=300)


@pytest.fixture(scope="module")
def runs(processes, request):
    """Both demo runs, side by side (``conftest.Ahead``)."""
    ahead = Ahead(request)
    ahead.submit("test_demo_trains_to_high_accuracy", demo)
    ahead.submit("test_demo_on_two_logical_cpus", partial(demo, "--epochs", "10", AUTODIST_CPU_DEVICES="2"))
    yield ahead
    ahead.close()


def test_bundled_data_is_real_digits():
    x, y = load_digits()
    assert x.shape == (1797, 64) and y.shape == (1797,)
    assert sorted(set(y.tolist())) == list(range(10))
    assert 0.0 <= x.min() and x.max() == 1.0


def test_demo_trains_to_high_accuracy(runs):
    proc = runs["test_demo_trains_to_high_accuracy"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["strategy"] == "default"
    assert result["test_accuracy"] > 0.9
    assert "autodist plan: default" in proc.stderr


def test_demo_on_two_logical_cpus(runs):
    proc = runs["test_demo_on_two_logical_cpus"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert (result["strategy"], result["num_replicas"]) == ("mirrored", 2)
    assert result["test_accuracy"] > 0.9
