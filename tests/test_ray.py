"""autodist inside Ray Train, on a real local Ray cluster in a private network with only loopback
(tests/scenarios/ray_train.py; started at collection, beside the rest of the suite: conftest).

TensorflowTrainer with 2 workers whose loop calls ``autodist.fit``, with Keras 3 and with tf_keras:
the workers end with identical weights, equal to plain ``model.fit`` in one process with the same
global batch; every epoch's metrics reach Ray, with worker 0's model as the checkpoint. Ray's documented
example runs adopted as a user adopts it (its own MultiWorkerMirroredStrategy() kept), and so
does examples/ray_train.py. No worker prints a traceback at exit; nothing listens beyond loopback.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import ray_scenario_output, start_ray_scenario

#: The differential harness's bound for "equal" (tests/test_model_axis.py).
EQUAL = 1e-4


@pytest.fixture(scope="module")
def ray_run():
    running = start_ray_scenario()
    assert running["network"] is not None, f"no private network for Ray: {running['why']}"
    try:
        code, out = ray_scenario_output(timeout=900)
    finally:
        running["network"].close()
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert code == 0 and lines, f"the Ray scenario failed (exit {code}):\n{out[-8000:]}"
    return {"result": json.loads(lines[-1][len("RESULT "):]), "output": out}


def _gap(a: list, b: list) -> float:
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("flavor", ["keras3", "tf_keras"])
def test_tensorflow_trainer_workers_end_identical_and_equal_to_one_process(ray_run, flavor, report):
    case = ray_run["result"][flavor]
    first, second = case["workers"]
    assert ray_run["result"]["error"] is None
    assert (first["strategy"], first["flavor"]) == ("multi_worker_mirrored", flavor)
    assert any("TF_CONFIG from Ray Train" in reason for reason in first["reasons"]), first["reasons"]
    assert _gap(first["weights"], second["weights"]) == 0.0
    one = case["reference"]
    gap = _gap(first["weights"], one["weights"])
    history = max(abs(a - b) for a, b in zip(first["history"]["loss"], one["history"]["loss"], strict=True))
    assert gap <= EQUAL and history <= EQUAL, (gap, history)
    report(f"Ray Train {flavor}, 2 workers vs model.fit in one process: weights {gap:.1e}, History {history:.1e}; the workers 0 apart")


@pytest.mark.parametrize("flavor", ["keras3", "tf_keras"])
def test_each_epoch_reaches_ray_with_worker_0s_model_as_the_checkpoint(ray_run, flavor):
    case = ray_run["result"][flavor]
    losses = case["workers"][0]["history"]["loss"]
    assert [report["metrics"]["epoch"] for report in case["reports"]] == list(range(len(losses)))
    assert max(abs(report["metrics"]["loss"] - loss) for report, loss in zip(case["reports"], losses, strict=True)) <= 1e-6
    assert all(report["checkpoint_files"] == ["autodist.json", "model.keras"] for report in case["reports"])


def test_rays_documented_example_runs_adopted(ray_run):
    case = ray_run["result"]["doc"]
    assert case["error"] is None and case["checkpoint"]
    assert case["fit_calls_changed"] == 2  # the loop's model.fit and the driver's trainer.fit
    assert np.isfinite(case["metrics"]["loss"])


def test_the_ray_example_runs_and_reads_the_result(ray_run):
    case = ray_run["result"]["example"]
    assert case["error"] is None and case["checkpoint_files"] == ["autodist.json", "model.keras"]
    assert case["metrics"]["epoch"] == 2 and case["metrics"]["loss"] < 0.5


def test_no_worker_prints_a_traceback_at_exit(ray_run):
    output = ray_run["output"]
    assert "Exception ignored in" not in output and "_variable_creator_stack" not in output
    assert "Error in training function" not in output


def test_nothing_listens_beyond_loopback(ray_run, report):
    """Sampled in each worker while its TensorFlow server runs, and by the driver at the end: the
    namespace has loopback only, so even a socket bound to every interface (TensorFlow's gRPC
    server binds 0.0.0.0) is reachable from this machine's loopback namespace and nowhere else."""
    samples = [ray_run["result"]["network"]] + [worker["network"] for flavor in ("keras3", "tf_keras") for worker in ray_run["result"][flavor]["workers"]]
    assert all(sample["interfaces"] == ["lo"] for sample in samples), samples
    listening = sorted({address for sample in samples for address in sample["listening"]})
    assert listening and set(listening) <= {"127.0.0.1", "::ffff:127.0.0.1", "::1", "0.0.0.0", "::"}, listening
    report(f"Ray Train scenario (3 trainer runs on one local cluster, beside the suite): {ray_run['result']['seconds']:.0f} s from ray.init to ray.shutdown; listening inside its private network: {', '.join(listening)}")
