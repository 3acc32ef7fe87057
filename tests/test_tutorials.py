"""The official TensorFlow and Keras distributed-training tutorials, adapted as a new autodist
user would adapt them (tests/tutorials/, one program per tutorial), run for real.

Each program's docstring names its source and lists every change. Single-host tutorials run
with ``AUTODIST_CPU_DEVICES=2`` (autodist picks Mirrored over 2 logical CPUs); the multi-worker
ones as 2 workers through ``python -m autodist launch``; the parameter-server one as a chief,
2 workers and 1 ps. Each program runs once per module (every subprocess bounded; the module's
programs start together, three at a time, see ``conftest.Ahead``), and the tests check what the tutorial itself shows: losses fall, the
learning-rate schedule applies, only the chief writes checkpoints and summaries, a saved and
loaded model evaluates the same, and custom loops compute what a one-device loop computes.

The TensorBoard callback of the tutorials needs the ``tensorboard`` package.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import subprocess
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Ahead, run_python, subprocess_env

pytestmark = [pytest.mark.differential, pytest.mark.usefixtures("processes")]  # the differential tier: python -m pytest -m differential

TUTORIALS = Path(__file__).resolve().parent / "tutorials"
SINGLE_HOST_TIMEOUT = 180
JOB_TIMEOUT = 240


@dataclass
class Run:
    """One finished tutorial program (or launched job) and where it wrote."""

    name: str
    proc: subprocess.CompletedProcess
    outdir: Path
    seconds: float

    def failure(self) -> str:
        return (
            f"{self.name} exited {self.proc.returncode} after {self.seconds:.1f} s:\n"
            f"stdout:\n{self.proc.stdout[-5000:]}\nstderr:\n{self.proc.stderr[-5000:]}"
        )

    def assert_ok(self) -> None:
        assert self.proc.returncode == 0, self.failure()

    def result(self, task: str = "single") -> dict[str, Any]:
        """What the program reported last (OUTDIR/<task>.json)."""
        path = self.outdir / f"{task}.json"
        assert path.exists(), f"{self.name} wrote no {path.name}\n{self.failure()}"
        return json.loads(path.read_text())


def run_single_host(name: str, outdir: Path, *args: str, **env: str | None) -> Run:
    """``python tests/tutorials/NAME.py OUTDIR ARGS``, with AUTODIST_CPU_DEVICES=2 unless overridden."""
    env = {"AUTODIST_CPU_DEVICES": "2", **env}
    start = time.monotonic()
    proc = run_python([str(TUTORIALS / f"{name}.py"), str(outdir), *args], env=subprocess_env(**env), timeout=SINGLE_HOST_TIMEOUT)
    return Run(name, proc, outdir, time.monotonic() - start)


def launch(name: str, outdir: Path, *cluster: str, **env: str | None) -> Run:
    """The program as a local cluster, bounded by the launcher's --timeout and ours above it."""
    start = time.monotonic()
    proc = run_python(
        ["-m", "autodist", "launch", *cluster, "--timeout", str(JOB_TIMEOUT - 20), "--grace", "3",
         str(TUTORIALS / f"{name}.py"), str(outdir)],
        env=subprocess_env(**env),
        timeout=JOB_TIMEOUT,
    )
    return Run(name, proc, outdir, time.monotonic() - start)


def require_tensorboard() -> None:
    """The tutorials' TensorBoard callback writes summaries through the tensorboard package."""
    if importlib.util.find_spec("tensorboard") is None:
        pytest.fail(
            "this tutorial uses the TensorBoard callback, which needs the tensorboard package "
            "(tensorflow 2.21 no longer installs it). Install it: pip install tensorboard"
        )


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def falls(losses: list[float]) -> bool:
    return len(losses) >= 2 and all(math.isfinite(v) for v in losses) and losses[-1] < losses[0]


def close(a: float, b: float, rel: float = 1e-6, abs_: float = 1e-7) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    """Every program the selected tests need, in the order the tests come."""
    out = tmp_path_factory.mktemp
    ahead = Ahead(request)
    ahead.submit("keras_tutorial", partial(run_single_host, "keras_mirrored", out("keras_mirrored")))
    ahead.submit("custom_training", partial(run_single_host, "custom_training", out("custom_training")))
    # The same program with autodist's default strategy: a plain one-device loop, at the same
    # global batch (128 per replica on 1 replica = 64 per replica on 2).
    ahead.submit("custom_training", partial(run_single_host, "custom_training", out("custom_training_one_device"), "128", AUTODIST_CPU_DEVICES=None), key="custom_training_reference")
    ahead.submit("guide", partial(run_single_host, "distributed_training_guide", out("guide")))
    ahead.submit("save_and_load", partial(run_single_host, "save_and_load", out("save_and_load")))
    ahead.submit("keras_io", partial(run_single_host, "keras_io_distributed_training", out("keras_io")))
    for keras in (None, "1"):  # main.py with Keras 3, and with tf_keras (tf.keras is then tf_keras)
        ahead.submit("seed_main", partial(launch, "seed_multi_worker_main", out("seed_main"), "--workers", "2", TF_USE_LEGACY_KERAS=keras), key=f"seed_main {keras}")
    scratch = out("scratch")
    ahead.submit("multi_worker_keras", partial(launch, "multi_worker_with_keras", out("multi_worker_keras"), "--workers", "2", TMPDIR=str(scratch)))
    ahead.submit("multi_worker_ctl", partial(launch, "multi_worker_with_ctl", out("multi_worker_ctl"), "--workers", "2"))
    # The tutorial's Keras is tf_keras (tf.keras.optimizers.legacy).
    ahead.submit("parameter_server", partial(launch, "parameter_server_training", out("parameter_server"), "--workers", "2", "--ps", "1", TF_USE_LEGACY_KERAS="1"))
    # The tutorial's 2 ps (its partitioner splits the embedding in 2), its scopes kept; tf_keras.
    ahead.submit("parameter_server_custom_loop", partial(
        launch, "parameter_server_custom_loop", out("parameter_server_custom_loop"), "--workers", "2", "--ps", "2", TF_USE_LEGACY_KERAS="1"
    ))
    yield ahead, scratch
    ahead.close()


# --- keras.ipynb: Distributed training with Keras ----------------------------------------------


@pytest.fixture(scope="module")
def keras_tutorial(runs) -> Run:
    require_tensorboard()
    return runs[0]["keras_tutorial"]


def test_keras_tutorial_trains_the_users_model_under_mirrored(keras_tutorial, report):
    keras_tutorial.assert_ok()
    result = keras_tutorial.result()
    assert (result["strategy"], result["num_replicas"], result["plan"]) == ("MirroredStrategy", 2, "mirrored")
    assert result["model_variable"] == "MirroredVariable", "the model built at module level must be built under autodist's strategy"
    loss = result["history"]["loss"]
    assert len(loss) == 8 and falls(loss), loss
    report(f"tutorial keras_mirrored: pass, {keras_tutorial.seconds:.1f} s, loss {loss[0]:.3f} -> {loss[-1]:.3f}")


def test_keras_tutorial_print_lr_shows_the_decay_schedule(keras_tutorial):
    keras_tutorial.assert_ok()
    printed = re.findall(r"Learning rate for epoch (\d+) is (\S+)", keras_tutorial.proc.stdout)
    assert [int(epoch) for epoch, _ in printed] == list(range(1, 9)), keras_tutorial.proc.stdout[-3000:]
    expected = [1e-3] * 3 + [1e-4] * 4 + [1e-5]
    # PrintLR reads `model.optimizer`, the user's own object: it shows the schedule only if
    # autodist trained that very model.
    assert all(close(float(rate), want) for (_, rate), want in zip(printed, expected, strict=True)), printed


def test_keras_tutorial_writes_every_checkpoint_and_tensorboard_log(keras_tutorial):
    keras_tutorial.assert_ok()
    result = keras_tutorial.result()
    assert result["checkpoints"] == [f"ckpt_{epoch:04d}.weights.h5" for epoch in range(1, 9)]
    assert any(name.startswith("train/events.out.tfevents.") for name in result["logs"]), result["logs"]


def test_keras_tutorial_checkpoint_and_saved_model_evaluate_the_same(keras_tutorial):
    keras_tutorial.assert_ok()
    result = keras_tutorial.result()
    evaluations = result["evaluations"]
    reference = evaluations["after_load_weights"]
    for name in ("unreplicated_model", "replicated_model"):
        assert all(close(a, b) for a, b in zip(evaluations[name], reference, strict=True)), evaluations
    assert result["loaded_variable"] == "MirroredVariable"


# --- custom_training.ipynb: custom training loop ------------------------------------------------


@pytest.fixture(scope="module")
def custom_training(runs) -> tuple[Run, Run]:
    """The tutorial under Mirrored, and under autodist's default strategy at the same global batch."""
    return runs[0]["custom_training"], runs[0]["custom_training_reference"]


def test_custom_training_loop_trains_on_two_replicas(custom_training, report):
    mirrored, _ = custom_training
    mirrored.assert_ok()
    result = mirrored.result()
    assert (result["strategy"], result["num_replicas"], result["model_variable"]) == ("MirroredStrategy", 2, "MirroredVariable")
    losses = [epoch["loss"] for epoch in result["epochs"]]
    assert len(losses) == 3 and falls(losses), losses
    for loop in ("iterator_epochs", "tf_function_epochs"):  # the tutorial's other two loops
        assert len(result[loop]) == 3 and all(v < losses[0] for v in result[loop]), result[loop]
    report(f"tutorial custom_training: pass, {mirrored.seconds:.1f} s (one-device reference "
           f"{custom_training[1].seconds:.1f} s), loss {losses[0]:.3f} -> {losses[-1]:.3f}")


def test_custom_training_loop_matches_a_one_device_loop(custom_training):
    mirrored, reference = custom_training
    mirrored.assert_ok()
    reference.assert_ok()
    two, one = mirrored.result(), reference.result()
    assert one["num_replicas"] == 1
    for got, want in zip(two["epochs"], one["epochs"], strict=True):
        assert close(got["loss"], want["loss"], rel=1e-4), (two["epochs"], one["epochs"])
        assert close(got["test_loss"], want["test_loss"], rel=1e-4), (two["epochs"], one["epochs"])
        assert abs(got["test_accuracy"] - want["test_accuracy"]) <= 1 / 256, (two["epochs"], one["epochs"])
    for loop in ("iterator_epochs", "tf_function_epochs"):
        assert all(close(a, b, rel=1e-3) for a, b in zip(two[loop], one[loop], strict=True)), (two[loop], one[loop])


def test_custom_training_checkpoint_restores_the_trained_model(custom_training):
    mirrored, _ = custom_training
    mirrored.assert_ok()
    result = mirrored.result()
    assert result["checkpoints"] == [
        "checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index", "ckpt-2.data-00000-of-00001", "ckpt-2.index"
    ]
    # ckpt-2 was saved after epoch 3's test loop: restored, it scores that epoch's test accuracy.
    assert close(result["restored_accuracy"], result["epochs"][-1]["test_accuracy"]), result


# --- guide/distributed_training.ipynb -----------------------------------------------------------


@pytest.fixture(scope="module")
def guide(runs) -> Run:
    return runs[0]["guide"]


def test_guide_fit_and_evaluate_under_autodists_strategy(guide, report):
    guide.assert_ok()
    result = guide.result()
    assert (result["fit_plan"], result["fit_model_variable"]) == ("mirrored", "MirroredVariable")
    assert falls(result["dataset_history"]["loss"]) and falls(result["arrays_history"]["loss"]), result
    assert result["dataset_evaluate"] < result["dataset_history"]["loss"][0]
    report(f"tutorial distributed_training_guide: pass, {guide.seconds:.1f} s")


def test_guide_custom_loop_matches_the_loop_computed_by_hand(guide):
    guide.assert_ok()
    result = guide.result()
    assert (result["num_replicas"], result["global_batch_size"]) == (2, 10)
    assert result["global_strategy_is_autodists"] and result["ctl_model_variable"] == "MirroredVariable"
    # Dense(1) on x = 1, label 1: loss = softplus(-(w + b)) + 1e-4 w^2, plain SGD (lr 0.01) on
    # the global mean. 100 steps over the data set, then 10 more from a new iterator.
    w, b, lr = result["initial_kernel"], result["initial_bias"], result["sgd_learning_rate"]
    expected = []
    for _ in range(110):
        z = w + b
        expected.append(math.log1p(math.exp(-z)) + 1e-4 * w * w)
        grad = 1 / (1 + math.exp(-z)) - 1
        w, b = w - lr * (grad + 2e-4 * w), b - lr * grad
    got = result["step_losses"]
    assert len(got) == 110
    assert max(abs(a - e) for a, e in zip(got, expected, strict=True)) < 1e-5, (got[:3], expected[:3])


def test_guide_variables_are_created_under_autodists_strategy(guide):
    guide.assert_ok()
    result = guide.result()
    assert result["variable"] == "MirroredVariable"  # print(tf.Variable(1.)) in the scope of get_strategy()
    assert result["default_strategy"] == "MirroredStrategy"  # get_strategy() outside any scope: autodist's


def test_guide_default_strategy_cells_see_autodists_strategy(guide):
    """The guide's "Default Strategy" cells show TensorFlow with no strategy set. With autodist
    imported one is set, so ``get_strategy()`` returns it, and the cell's
    ``reduce("SUM", 1., axis=None)`` of a plain number fails as it does inside any
    ``with strategy.scope()``: the one documented difference (docs/using.md; the cells
    behave as in the guide with ``AUTODIST_ACTIVATE=0``)."""
    guide.assert_ok()
    result = guide.result()
    assert result["default_strategy"] == "MirroredStrategy"
    assert result["reduce_sum_1"].startswith("ValueError: A non-DistributedValues value 1.0 cannot be reduced")


# --- save_and_load.ipynb ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def save_and_load(runs) -> Run:
    return runs[0]["save_and_load"]


def test_save_and_load_keras_model_evaluates_and_trains_on(save_and_load, report):
    save_and_load.assert_ok()
    result = save_and_load.result()
    assert (result["plan"], result["num_replicas"], result["model_variable"]) == ("mirrored", 2, "MirroredVariable")
    assert falls(result["history"]["loss"]), result["history"]
    assert all(close(a, b) for a, b in zip(result["evaluate_after_load"], result["evaluate_before_save"], strict=True)), result
    assert result["iterations_after_load"] == result["iterations_before_save"] > 0
    assert result["restored_variable"] == "MirroredVariable"
    # Training goes on from the loaded optimizer state and weights.
    assert result["iterations_after_restored_fit"] == 2 * result["iterations_before_save"]
    assert result["restored_history"]["loss"][0] < result["history"]["loss"][0]
    report(f"tutorial save_and_load: pass, {save_and_load.seconds:.1f} s")


def test_save_and_load_saved_model_runs_distributed_inference(save_and_load):
    save_and_load.assert_ok()
    result = save_and_load.result()
    assert result["distributed_inference_replicas"] == 2
    assert result["distributed_vs_model_max_diff"] < 1e-5


def test_save_and_load_subclassed_model_trains(save_and_load):
    save_and_load.assert_ok()
    result = save_and_load.result()
    assert result["subclassed_variable"] == "MirroredVariable"
    assert falls(result["subclassed_history"]["loss"]), result["subclassed_history"]
    assert (save_and_load.outdir / "subclassed.keras").is_file()


def test_save_and_load_saved_model_signature_called_directly(save_and_load):
    """The tutorial loads a SavedModel "without a strategy" and calls its serving signature."""
    save_and_load.assert_ok()
    outcome = save_and_load.result()["signature_vs_model_max_diff"]
    assert isinstance(outcome, float) and outcome < 1e-5, f"calling the loaded signature failed under autodist: {outcome}"


def test_save_and_load_under_a_hand_picked_one_device_strategy(save_and_load):
    """The tutorial loads the .keras model, and fits it, in a ``OneDeviceStrategy`` scope."""
    save_and_load.assert_ok()
    outcome = save_and_load.result()["one_device_strategy"]
    assert outcome == "ok", f"loading under OneDeviceStrategy failed under autodist: {outcome}"


# --- keras-io guides/distributed_training_with_tensorflow.py ------------------------------------


@pytest.fixture(scope="module")
def keras_io(runs) -> Run:
    return runs[0]["keras_io"]


def test_keras_io_guide_fits_and_evaluates(keras_io, report):
    keras_io.assert_ok()
    result = keras_io.result()
    assert (result["plan"], result["num_replicas"], result["model_variable"]) == ("mirrored", 2, "MirroredVariable")
    assert falls(result["history"]["loss"]), result["history"]
    loss, accuracy = result["evaluate"]
    assert math.isfinite(loss) and accuracy > 0.5, result["evaluate"]
    report(f"tutorial keras_io_distributed_training: pass, {keras_io.seconds:.1f} s, test accuracy {accuracy:.3f}")


def test_keras_io_guide_resumes_from_its_checkpoint(keras_io):
    keras_io.assert_ok()
    first, second = keras_io.result()["runs"]
    stdout = keras_io.proc.stdout
    created = stdout.find("Creating a new model")
    restored = stdout.find(f"Restoring from {keras_io.outdir / 'ckpt' / 'ckpt-1.keras'}")
    assert 0 <= created < restored, stdout[-3000:]
    assert first["checkpoints"] == second["checkpoints"] == ["ckpt-1.keras"]
    # The second run goes on with the restored optimizer: its step count continues.
    assert second["iterations"] == 2 * first["iterations"] > 0, (first, second)
    assert second["history"]["loss"][0] < first["history"]["loss"][0]


# --- the multi-worker main.py (multi_worker_with_keras.ipynb) -----------------------------------


def worker_results(run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
    run.assert_ok()
    assert "[launcher] job finished: every task exited 0" in run.proc.stdout
    return run.result("worker-0"), run.result("worker-1")


@pytest.fixture(scope="module", params=[None, "1"], ids=["keras3", "tf_keras"])
def seed_main(request, runs) -> Run:
    """The same main.py with Keras 3, and with tf_keras (``tf.keras`` is then tf_keras)."""
    return runs[0][f"seed_main {request.param}"]


def test_seed_main_trains_both_workers_in_step(seed_main, report, request):
    chief, other = worker_results(seed_main)
    for result in (chief, other):
        assert (result["plan"], result["num_replicas"], result["model_variable"]) == ("multi_worker_mirrored", 2, "MirroredVariable")
    assert (chief["is_chief"], other["is_chief"]) == (True, False)
    assert chief["history"] == other["history"]
    assert chief["weights_sum"] == other["weights_sum"], "synchronous training ends with identical weights"
    assert falls(chief["history"]["loss"]), chief["history"]
    flavor = request.node.callspec.id
    report(f"tutorial seed_multi_worker_main (2 workers, {flavor}): pass, {seed_main.seconds:.1f} s")


# --- multi_worker_with_keras.ipynb --------------------------------------------------------------


@pytest.fixture(scope="module")
def multi_worker_keras(runs) -> tuple[Run, Path]:
    return runs[0]["multi_worker_keras"], runs[1]


def test_multi_worker_keras_tutorial_trains(multi_worker_keras, report):
    run, _ = multi_worker_keras
    chief, other = worker_results(run)
    for result in (chief, other):
        assert (result["plan"], result["num_replicas"], result["model_variable"]) == ("multi_worker_mirrored", 2, "MirroredVariable")
    assert (chief["is_chief"], other["is_chief"]) == (True, False)
    fits = ("main_history", "restored_history", "loaded_history", "backup_history")
    for fit in fits:
        assert chief[fit] == other[fit], fit  # the logs are all-reduced: the same on both workers
    assert [len(chief[fit]["loss"]) for fit in fits] == [3, 2, 2, 3]
    # SGD(0.001) moves slowly: the main model, trained on after the checkpoint restore, ends
    # below where it started, and the fresh BackupAndRestore model's loss falls.
    assert chief["restored_history"]["loss"][-1] < chief["main_history"]["loss"][0], chief
    assert falls(chief["backup_history"]["loss"]), chief["backup_history"]
    report(f"tutorial multi_worker_with_keras (2 workers, 4 fits): pass, {run.seconds:.1f} s")


def test_multi_worker_keras_tutorial_files_come_from_the_chief_only(multi_worker_keras):
    run, scratch = multi_worker_keras
    worker_results(run)
    assert files_under(run.outdir) == [
        "ckpt/checkpoint", "ckpt/ckpt-1.data-00000-of-00001", "ckpt/ckpt-1.index",
        "keras-model.keras", "worker-0.json", "worker-1.json",
    ]
    assert files_under(scratch) == [], "autodist's private folders (other workers' saves, backups) are removed"


# --- multi_worker_with_ctl.ipynb ----------------------------------------------------------------


@pytest.fixture(scope="module")
def multi_worker_ctl(runs) -> Run:
    return runs[0]["multi_worker_ctl"]


def test_multi_worker_ctl_tutorial(multi_worker_ctl, report):
    chief, other = worker_results(multi_worker_ctl)
    for result in (chief, other):
        assert (result["plan"], result["num_replicas"], result["model_variable"]) == ("multi_worker_mirrored", 2, "MirroredVariable")
        assert result["global_strategy_is_autodists"]
    assert (chief["is_chief"], other["is_chief"]) == (True, False)
    assert chief["losses"] == other["losses"] and len(chief["losses"]) == 3
    assert chief["weights_sum"] == other["weights_sum"], "synchronous training ends with identical weights"
    assert falls(chief["losses"]), chief["losses"]
    # CheckpointManager(max_to_keep=1) on the chief; the other worker's copies were removed.
    files = files_under(multi_worker_ctl.outdir)
    assert files == ["ckpt/checkpoint", "ckpt/ckpt-3.data-00000-of-00001", "ckpt/ckpt-3.index", "worker-0.json", "worker-1.json"]
    report(f"tutorial multi_worker_with_ctl (2 workers): pass, {multi_worker_ctl.seconds:.1f} s, "
           f"loss {chief['losses'][0]:.3f} -> {chief['losses'][-1]:.3f}")


# --- parameter_server_training.ipynb ------------------------------------------------------------


@pytest.fixture(scope="module")
def parameter_server(runs) -> Run:
    require_tensorboard()
    return runs[0]["parameter_server"]


def test_parameter_server_tutorial_fit(parameter_server, report):
    parameter_server.assert_ok()
    stdout = parameter_server.proc.stdout
    assert "[launcher] job finished: every task exited 0" in stdout
    for task in ("worker 0", "worker 1", "ps 0"):
        assert f"[{task}] autodist: {task}: the chief is gone; exiting" in stdout
    result = parameter_server.result("chief-0")
    assert (result["plan"], result["strategy"]) == ("parameter_server", "ParameterServerStrategyV2")
    assert result["global_strategy_is_autodists"]
    assert result["fit_variable_device"].startswith("/job:ps/"), result["fit_variable_device"]
    loss = result["history"]["loss"]
    assert len(loss) == 5 and falls(loss), loss
    files = files_under(parameter_server.outdir)
    assert any(f.startswith("my_working_dir/log/train/events.out.tfevents.") for f in files), files
    assert "my_working_dir/ckpt/saved_model.pb" in files, files
    # Only the chief runs the script past autodist: nothing else wrote here.
    assert {f.split("/")[0] for f in files} == {"chief-0.json", "my_working_dir"}, files
    report(f"tutorial parameter_server_training (chief + 2 workers + 1 ps, tf_keras): pass, "
           f"{parameter_server.seconds:.1f} s, loss {loss[0]:.3f} -> {loss[-1]:.3f}")


def test_parameter_server_tutorial_custom_loop_and_evaluation(parameter_server):
    parameter_server.assert_ok()
    result = parameter_server.result("chief-0")
    assert all(device.startswith("/job:ps/") for _, device in result["embedding_shards"]), result["embedding_shards"]
    accuracy = result["ctl_accuracy"]
    assert len(accuracy) == 4 and accuracy[-1] > accuracy[0], accuracy
    assert math.isfinite(result["final_loss"])
    # "avenger in the features" is learnt: both evaluations (inline and distributed) agree on it.
    assert result["inline_eval_accuracy"] >= 0.75 and result["distributed_eval_accuracy"] >= 0.75, result


# --- parameter_server_training.ipynb, the custom loop as the tutorial writes it ----------------------


@pytest.fixture(scope="module")
def parameter_server_custom_loop(runs) -> Run:
    return runs[0]["parameter_server_custom_loop"]


def test_parameter_server_custom_loop_trains_with_the_tutorials_scopes(parameter_server_custom_loop, report):
    run = parameter_server_custom_loop
    run.assert_ok()
    result = run.result("chief-0")
    assert (result["plan"], result["strategy"]) == ("parameter_server", "ParameterServerStrategyV2")
    shards = result["embedding_shards"]
    assert [shape for shape, _ in shards] == [[4, 16384], [4, 16384]], shards  # the tutorial's assertion
    assert sorted(device.split("/device")[0] for _, device in shards) == ["/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"]
    accuracy = result["accuracy"]
    assert len(accuracy) == 4 and accuracy[-1] >= 0.9 and accuracy[-1] >= accuracy[0], accuracy
    assert result["inline_eval_accuracy"] >= 0.75 and result["distributed_eval_accuracy"] >= 0.75, result
    report(f"tutorial parameter_server_training, custom loop (chief + 2 workers + 2 ps, tf_keras, scopes kept): pass, "
           f"{run.seconds:.1f} s, accuracy {accuracy[0]:.2f} -> {accuracy[-1]:.2f}")
