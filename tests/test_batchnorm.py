"""BatchNormalization under a replicated strategy: one set of moving statistics on every replica
(mirrored, 2 logical CPUs) and on every worker (multi_worker_mirrored, 2 workers) after
``autodist.fit``, the trained model evaluates and predicts as the same weights do on one device,
saved and reloaded there, and one warning per fit says the batch it normalises over.

The Keras bug itself, and the test that fails the day it is fixed upstream, are in
tests/test_keras_compat.py (``batchnorm_moving_statistics``).
"""

from __future__ import annotations

import pytest

import json

import numpy as np

from tests.conftest import SCENARIOS, run_python, run_scenario, subprocess_env

pytestmark = [pytest.mark.differential, pytest.mark.usefixtures("processes")]  # the differential tier: python -m pytest -m differential


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("batchnorm"))
    trained = run_scenario("batchnorm.py", "train", folder, timeout=240, AUTODIST_CPU_DEVICES="2")
    return trained, run_scenario("batchnorm.py", "one_device", folder, timeout=240)


def test_replicas_end_with_one_set_of_moving_statistics(runs):
    trained, _ = runs
    assert trained["plan"] == "mirrored" and trained["replicas"] == 2
    assert trained["num_statistics"] == 2 and trained["replica_gaps"] == [0.0, 0.0]


def test_one_warning_per_fit_gives_the_per_replica_batch_and_the_opt_in(runs):
    trained, _ = runs
    said = [w for w in trained["warnings"] if w.startswith("BatchNormalization")]
    assert len(said) == 1, trained["warnings"]
    assert "16 samples, not the global 32" in said[0] and "BatchNormalization(synchronized=True)" in said[0]


def test_evaluate_and_predict_match_the_saved_model_on_one_device(runs, report):
    trained, one_device = runs
    evaluate_gap = max(abs(a - b) for a, b in zip(trained["evaluate"], one_device["evaluate"], strict=True))
    predict_gap = max(abs(a[0] - b[0]) for a, b in zip(trained["predict"], one_device["predict"], strict=True))
    assert evaluate_gap <= 1e-5 and predict_gap <= 1e-5, (evaluate_gap, predict_gap)
    report(f"batchnorm under mirrored (2 logical CPUs): replicas' moving statistics equal; evaluate {evaluate_gap:.1e} and predict {predict_gap:.1e} from the saved model on one device")


@pytest.fixture(scope="module")
def workers(tmp_path_factory):
    out = tmp_path_factory.mktemp("batchnorm_workers")
    proc = run_python(
        ["-m", "autodist", "launch", "--workers", "2", "--timeout", "200", "--grace", "3", str(SCENARIOS / "batchnorm.py"), "train", str(out)],
        env=subprocess_env(),
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-5000:]
    trained = [json.loads((out / f"worker-{i}.json").read_text()) for i in (0, 1)]
    return trained, run_scenario("batchnorm.py", "one_device", str(out), "worker-0", timeout=240)


def test_multi_worker_workers_end_with_one_set_of_moving_statistics_and_evaluate_as_one_device(workers, report):
    (first, second), one_device = workers
    assert first["plan"] == second["plan"] == "multi_worker_mirrored" and first["num_statistics"] == 2
    gap = max(float(np.max(np.abs(np.array(a) - np.array(b)))) for a, b in zip(first["statistics"], second["statistics"], strict=True))
    assert gap == 0.0, f"the workers' moving statistics differ by {gap:g}"
    assert sum(w.startswith("BatchNormalization") for w in first["warnings"]) == 1, first["warnings"]
    evaluate_gap = max(abs(a - b) for a, b in zip(first["evaluate"], one_device["evaluate"], strict=True))
    predict_gap = max(abs(a[0] - b[0]) for a, b in zip(first["predict"], one_device["predict"], strict=True))
    assert evaluate_gap <= 1e-5 and predict_gap <= 1e-5, (evaluate_gap, predict_gap)
    report(
        f"batchnorm under multi_worker_mirrored (2 workers): the workers' moving statistics equal (gap {gap:g}); "
        f"evaluate {evaluate_gap:.1e} and predict {predict_gap:.1e} from worker 0's saved model on one device"
    )
