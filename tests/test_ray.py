"""autodist inside Ray Train, on a real local Ray cluster in a private network with only loopback
(tests/scenarios/ray_train.py; started at collection, beside the rest of the suite: conftest).

TensorflowTrainer with 2 workers whose loop calls ``autodist.fit``, with Keras 3 and with tf_keras:
the workers end with identical weights, equal to plain ``model.fit`` in one process with the same
global batch; every epoch's metrics reach Ray, with worker 0's model as the checkpoint. Ray's documented
example adopted as a user adopts it (its own MultiWorkerMirroredStrategy() kept) trains as it does
without autodist (both seeded, Ray Data's order kept), and examples/ray_train.py runs. A Ray Data shard trains with batch_size as the global batch; a worker
SIGTERMed mid-epoch under FailureConfig(max_failures=1) restarts with no step redone; JaxTrainer's
2 processes train as one JAX runtime, equal to one process. No worker prints a traceback at exit;
nothing listens beyond loopback.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import ray_scenario_output, start_ray_scenario

pytestmark = pytest.mark.usefixtures("processes")  # every test here runs TensorFlow or starts processes: the tensorflow tier

#: The words of Ray Train's own port race, as tests/scenarios/ray_train.py's PORT_RACE (that module
#: makes a folder when imported): the one training error a case is run once more for.
RAY_PORT_RACE = ("Could not start gRPC server", "CoordinationService/RegisterTask")

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


def _equal_workers_equal_to_one_process(first: dict, second: dict, one: dict) -> tuple[float, float]:
    """The two workers' weights identical, and both within EQUAL of one process's weights and
    History: ``(weight gap, History gap)``."""
    assert _gap(first["weights"], second["weights"]) == 0.0
    gap = _gap(first["weights"], one["weights"])
    history = max(abs(a - b) for a, b in zip(first["history"]["loss"], one["history"]["loss"], strict=True))
    assert gap <= EQUAL and history <= EQUAL, (gap, history)
    return gap, history


@pytest.mark.parametrize("flavor", ["keras3", "tf_keras"])
def test_tensorflow_trainer_workers_end_identical_and_equal_to_one_process(ray_run, flavor, report):
    case = ray_run["result"][flavor]
    first, second = case["workers"]
    assert ray_run["result"]["error"] is None
    assert (first["strategy"], first["flavor"]) == ("multi_worker_mirrored", flavor)
    assert any("TF_CONFIG from Ray Train" in reason for reason in first["reasons"]), first["reasons"]
    gap, history = _equal_workers_equal_to_one_process(first, second, case["reference"])
    report(f"Ray Train {flavor}, 2 workers vs model.fit in one process: weights {gap:.1e}, History {history:.1e}; the workers 0 apart")


@pytest.mark.parametrize("flavor", ["keras3", "tf_keras"])
def test_each_epoch_reaches_ray_with_worker_0s_model_as_the_checkpoint(ray_run, flavor):
    case = ray_run["result"][flavor]
    losses = case["workers"][0]["history"]["loss"]
    assert [report["metrics"]["epoch"] for report in case["reports"]] == list(range(len(losses)))
    assert max(abs(report["metrics"]["loss"] - loss) for report, loss in zip(case["reports"], losses, strict=True)) <= 1e-6
    fit = ("keras3", "tf_keras").index(flavor)  # one worker group trains both, keras3 first
    for epoch, report in enumerate(case["reports"]):
        saves = [f"autodist/fit-{fit}/epoch-{epoch + 1:06d}-00000000.{ext}" for ext in ("json", "npz")] if epoch + 1 < len(losses) else []
        assert sorted(report["checkpoint_files"]) == sorted(["autodist.json", "model.keras", *saves])  # the fit's last epoch: no save to resume


def test_rays_documented_example_adopted_trains_as_it_does_without_autodist(ray_run, report):
    """Ray's documented example (its own MultiWorkerMirroredStrategy() kept) run as written and
    adopted, from the same seed on the same shards: the adopted workers end identical, with the
    weights, every fit's History and the metrics Ray received of the program without autodist."""
    case = ray_run["result"]["doc"]
    written = case["as_written"]
    assert case["error"] is None and written["error"] is None and case["checkpoint"] and written["checkpoint"], (case["error"], written["error"])
    assert case["fit_calls_changed"] == 2  # the loop's model.fit and the driver's trainer.fit
    adopted, plain = case["workers"], written["workers"]
    assert _gap(adopted[0]["weights"], adopted[1]["weights"]) == 0.0 and _gap(plain[0]["weights"], plain[1]["weights"]) == 0.0
    fits = [r["loss"] for r in plain[0]["results"]]
    assert len(fits) == 4 and fits[-1][-1] < fits[0][0], fits  # 4 fits of an epoch each, and the baseline trained
    gap = _gap(adopted[0]["weights"], plain[0]["weights"])
    histories = [(r, w) for r, w in zip(adopted[0]["results"], plain[0]["results"], strict=True)]
    assert all(sorted(r) == sorted(w) for r, w in histories), histories
    history = max(abs(a - b) for r, w in histories for key in w for a, b in zip(r[key], w[key], strict=True))
    metric = abs(case["metrics"]["loss"] - written["metrics"]["loss"])
    assert gap <= EQUAL and history <= EQUAL and metric <= EQUAL, (gap, history, metric)
    report(f"Ray's documented example adopted vs as written (2 workers, same seed and shards): weights {gap:.1e}, History {history:.1e}, Ray's last loss {metric:.1e}")


def test_the_ray_example_runs_and_reads_the_result(ray_run):
    case = ray_run["result"]["example"]
    assert case["error"] is None and {"autodist.json", "model.keras"} <= set(case["checkpoint_files"])
    assert case["metrics"]["epoch"] == 2 and case["metrics"]["loss"] < 0.5


def test_a_ray_data_shard_is_read_with_batch_size_as_the_global_batch(ray_run, report):
    """256 rows split over 2 workers, batch_size=64 global: each worker reads its 128 rows 32 at
    a time, so every epoch has 4 steps (each worker reading 64 at a time would give 2). The model,
    Keras 3 built by a function under Ray's TF_USE_LEGACY_KERAS=1, has BatchNormalization: its
    moving statistics end the same on both workers, and the warning gives each replica's share."""
    case = ray_run["result"]["data"]
    first, second = case["workers"]
    assert case["error"] is None
    assert (first["strategy"], first["global_batch"], first["flavor"], first["batch_norm"]) == ("multi_worker_mirrored", 64, "keras3", ["batch_normalization"])
    assert first["steps"] == second["steps"] == [case["rows"] // 64] * 2
    assert _gap(first["weights"], second["weights"]) == 0.0 and first["loss"] == second["loss"]
    assert any("normalises each replica's share of the batch: 32 samples, not the global 64" in w for w in first["warnings"]), first["warnings"]
    assert not any("size is unknown" in w for w in first["warnings"])
    assert first["loss"][1] < first["loss"][0]
    report(f"Ray Data shard, 2 workers, {case['rows']} rows, batch_size=64: {first['steps']} steps an epoch on each, loss {first['loss'][0]:.2f} -> {first['loss'][1]:.2f}")


def test_jax_trainer_joins_2_processes_into_one_runtime_equal_to_one_process(ray_run, report):
    case = ray_run["result"]["jax"]
    first, second = case["workers"]
    assert case["error"] is None and case["reference"]["backend"] == first["backend"] == "jax"
    assert (first["strategy"], first["mesh"], first["workers"]) == ("data_parallel", [2], 2)
    assert any("in each of 2 processes (Ray Train)" in reason for reason in first["reasons"]), first["reasons"]
    gap, history = _equal_workers_equal_to_one_process(first, second, case["reference"])
    report(f"JaxTrainer, 2 CPU processes joined by autodist vs model.fit on JAX in one process: weights {gap:.1e}, History {history:.1e}")


def test_no_worker_prints_a_traceback_at_exit(ray_run):
    """No traceback at any exit; the only training errors are the restart case's preemption
    (autodist's SystemExit 75, which makes Ray restart the group), after that case's mark."""
    output = ray_run["output"]
    assert "Exception ignored in" not in output and "_variable_creator_stack" not in output
    before, _, restart = output.partition("CASE restart")
    assert restart, output[-3000:]
    # the one other training error allowed: the first attempt of a case run once more on Ray
    # Train's own port race; Ray's log of each error carries its cause (its log monitor may print
    # it after the scenario's RETRY line: judged by its words, not by its place)
    for logged in before.split("Error in training function")[1:]:
        assert any(marker in logged for marker in RAY_PORT_RACE), logged[:3000]
    assert before.count("Error in training function") == 0 or "\nRETRY " in before, before[-3000:]
    assert "autodist: preempted (SIGTERM): saved epoch" in restart and "Traceback" not in restart.split("autodist: resuming at epoch")[-1]


def test_a_worker_sigtermed_mid_epoch_restarts_with_no_step_redone(ray_run, report):
    """FailureConfig(max_failures=1); worker 1 gets SIGTERM in epoch 2: both workers save after the
    step they agree on and report it to Ray as the newest checkpoint; Ray restarts the group, and
    the new workers take it from ray.train.get_checkpoint() and resume at that step."""
    case = ray_run["result"]["restart"]
    first, second = case["workers"]
    steps = case["steps"]
    assert case["error"] is None
    assert steps["0-first"] == steps["1-first"] and steps["0-again"] == steps["1-again"]
    saved, total = steps["0-first"], case["reference"]["steps"]
    assert 10 < saved < total  # after the step of the SIGTERM (the 10th), before the end
    step_reports = [r for r in case["reports"] if "step" in r["metrics"]]
    assert [(r["metrics"]["epoch"], r["metrics"]["step"]) for r in step_reports] == [divmod(saved, 8)]  # the save went to Ray (8 steps an epoch)
    epoch, batch = (saved - 1) // 8, (saved - 1) % 8 + 1  # the save's own name: the epoch it ended, its batches
    name = f"step-{epoch:06d}-{batch:08d}.json"
    assert name in first["given"] and name in second["given"]  # ray.train.get_checkpoint() handed it to the new group
    redone = steps["0-first"] + steps["0-again"] - total
    assert redone == 0 and first["iterations"] == second["iterations"] == total
    assert _gap(first["weights"], second["weights"]) == 0.0
    gap = _gap(first["weights"], case["reference"]["weights"])
    assert gap <= EQUAL, gap
    assert case["staging_left"] == []  # each worker's local copy is gone, preempted or finished
    report(f"Ray Train restart (max_failures=1): worker 1 SIGTERMed in epoch 2 after step 10, both saved after step {saved} of {total} "
           f"(epoch {epoch + 1}, batch {batch}) and reported it to Ray; steps redone {redone}; weights {gap:.1e} from one uninterrupted process")


def test_nothing_listens_beyond_loopback(ray_run, report):
    """Sampled in each worker while its TensorFlow server runs, and by the driver at the end: the
    namespace has loopback only, so even a socket bound to every interface (TensorFlow's gRPC
    server binds 0.0.0.0) is reachable from this machine's loopback namespace and nowhere else."""
    samples = [ray_run["result"]["network"]] + [worker["network"] for flavor in ("keras3", "tf_keras") for worker in ray_run["result"][flavor]["workers"]]
    assert all(sample["interfaces"] == ["lo"] for sample in samples), samples
    listening = sorted({address for sample in samples for address in sample["listening"]})
    assert listening and set(listening) <= {"127.0.0.1", "::ffff:127.0.0.1", "::1", "0.0.0.0", "::"}, listening
    retried = ray_run["result"].get("retried") or []
    again = f"; run once more after Ray Train's own port race: {', '.join(retried)}" if retried else ""
    report(f"Ray Train scenario (5 trainer runs on one local cluster, one of them restarted, beside the suite): {ray_run['result']['seconds']:.0f} s from ray.init to ray.shutdown; listening inside its private network: {', '.join(listening)}{again}")
