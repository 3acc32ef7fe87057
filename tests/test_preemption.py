"""Preemption without lost steps: SIGTERM mid-epoch, a new start, and the uninterrupted run's
numbers (weights within 1e-6, the resumed epochs' History, every step trained exactly once).

Real TensorFlow in fresh processes (tests/scenarios/preemption.py): single-host runs under the
default and mirrored strategies, and 2-worker MultiWorkerMirrored jobs under the launcher, with
Keras 3 and tf_keras. The pieces (the phases of a resumed fit, the saves) are checked in-process.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from autodist.core.input_kinds import classify
from autodist.resume.preemption import PREEMPTED_EXIT_CODE
from autodist.resume.resumed_fit import phases
from autodist.resume.train_state import Position, clear, discard_after, load, save, saves
from tests.conftest import ROOT, SCENARIOS, Ahead, finished, run_python, start_python, subprocess_env

SCRIPT = str(SCENARIOS / "preemption.py")
STEPS = 30  # 3 epochs of 10 batches
LEGACY = {"keras3": None, "tf_keras": "1"}


def single(out: Path, mode: str, flavor: str, cpus: str, data: str, warmup: bool = False, optimizer: str = "sgd") -> subprocess.CompletedProcess:
    env = subprocess_env(TF_USE_LEGACY_KERAS=LEGACY[flavor], AUTODIST_CPU_DEVICES=cpus, WARMUP="1" if warmup else None, OPTIMIZER=optimizer)
    return run_python([SCRIPT, str(out), mode, data], env=env, timeout=180)


def uninterrupted(out: Path, flavor: str, cpus: str, data: str, optimizer: str = "sgd") -> subprocess.Popen:
    """The uninterrupted reference run, started now: it runs beside the interrupted starts, which
    leave the other core free; :func:`finished` collects it."""
    env = subprocess_env(TF_USE_LEGACY_KERAS=LEGACY[flavor], AUTODIST_CPU_DEVICES=cpus, OPTIMIZER=optimizer)
    return start_python([SCRIPT, str(out), "reference", data], env=env)


def interrupted_and_restarted(out: Path, reference: Path, mode: str, flavor: str, cpus: str, data: str, warmup: bool = False, optimizer: str = "sgd") -> dict:
    """The uninterrupted reference beside two starts of the run that receives SIGTERM (it sends it
    itself, at a step ``mode`` names: the same step however busy the machine is), and the saves'
    folder as the first start left it."""
    done = uninterrupted(reference, flavor, cpus, data, optimizer)
    first = single(out, mode, flavor, cpus, data, warmup, optimizer)
    folder = out / "backup" / "single" / f"fit-{int(warmup)}"
    left = {
        "modes": [stat.S_IMODE(path.stat().st_mode) for path in (out / "backup", out / "backup" / "single", folder) if path.exists()],
        "file_modes": {stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} if folder.exists() else None,
        "saves": [(found.kind, found.position) for found in saves(str(folder))] if folder.exists() else None,
    }
    second = single(out, mode, flavor, cpus, data, warmup, optimizer)
    code, _, stderr = finished(done, 180)
    return {"first": first, "left": left, "second": second, "reference": (code, stderr)}


SINGLE_HOST = [("keras3", "1", "arrays", "sgd"), ("keras3", "2", "dataset", "momentum"), ("tf_keras", "2", "arrays", "legacy")]


@pytest.fixture(scope="module")
def single_host(processes, request, tmp_path_factory):
    """The single-host runs, three at a time (``conftest.Ahead``): the step each is stopped at
    does not depend on time. Keyed by case, with the folders they wrote."""
    ahead, folders = Ahead(request), {}
    for flavor, cpus, data, optimizer in SINGLE_HOST:
        key = f"{flavor}-{cpus}-{data}-{optimizer}"
        root = folders[key] = tmp_path_factory.mktemp("preempted")
        warmup = data == "arrays" and cpus == "1"
        call = partial(interrupted_and_restarted, root / "run", root / "reference", "self", flavor, cpus, data, warmup, optimizer)
        ahead.submit("test_single_host_sigterm_mid_epoch_resumes_at_that_step", call, key=key)
    root = folders["late"] = tmp_path_factory.mktemp("late")
    call = partial(interrupted_and_restarted, root / "run", root / "reference", "late", "keras3", "1", "arrays")
    ahead.submit("test_a_sigterm_after_the_last_step_saves_the_finished_fit", call, key="late")
    yield ahead, folders
    ahead.close()


def result(out: Path, task: str) -> tuple[list[np.ndarray], dict]:
    with np.load(out / f"{task}.npz") as data:
        weights = [data[key] for key in sorted(data.files, key=lambda k: int(k.split("_")[1]))]
    return weights, json.loads((out / f"{task}.json").read_text())


def steps_trained(out: Path, task: str) -> list[int]:
    """The optimizer's step count after each step trained, over every start of the task."""
    return [int(line.split()[3]) for line in (out / f"{task}-steps.txt").read_text().splitlines()]


def assert_same_run(out: Path, reference: Path, task: str) -> tuple[float, int]:
    """The resumed run matches the uninterrupted one; returns (weight difference, steps redone)."""
    weights, summary = result(out, task)
    ref_weights, ref_summary = result(reference, task)
    diff = max(float(np.abs(a - b).max()) for a, b in zip(weights, ref_weights, strict=True))
    assert diff <= 1e-6, f"{task}: final weights differ from the uninterrupted run's by {diff:g}"
    resumed = summary["epochs"]
    assert resumed and resumed[-1] == 2, summary
    assert sorted(summary["history"]) == sorted(ref_summary["history"]), (summary["history"], ref_summary["history"])
    for key, values in summary["history"].items():
        expected = [ref_summary["history"][key][epoch] for epoch in resumed]
        assert len(values) == len(expected) and np.allclose(values, expected, rtol=0, atol=1e-6), (key, values, expected)
    trained = steps_trained(out, task)
    assert sorted(set(trained)) == list(range(1, STEPS + 1)), f"{task}: steps lost: {sorted(set(range(1, STEPS + 1)) - set(trained))}"
    return diff, len(trained) - STEPS


@pytest.mark.parametrize(
    "flavor,cpus,data,optimizer", SINGLE_HOST,
    ids=["keras3-default-arrays-sgd", "keras3-mirrored-dataset-momentum", "tf_keras-mirrored-arrays-legacy_momentum"],
)
def test_single_host_sigterm_mid_epoch_resumes_at_that_step(single_host, flavor, cpus, data, optimizer, report):
    """The first case runs a smaller fit first: the second fit of a script resumes, the first
    trains again (its own folder). Momentum: slot variables, which tf_keras creates at its first
    step, restored before it (legacy: tf_keras's OptimizerV2)."""
    key = f"{flavor}-{cpus}-{data}-{optimizer}"
    runs = single_host[0][key]
    out, reference = single_host[1][key] / "run", single_host[1][key] / "reference"
    first, left, second = runs["first"], runs["left"], runs["second"]
    assert first.returncode == PREEMPTED_EXIT_CODE, first.stderr[-3000:]
    assert "autodist: preempted (SIGTERM): saved epoch 2 after 5 of its 10 batches" in first.stderr
    assert left["modes"] == [0o700] * 3, left  # backup/, backup/single/, and the fit's folder
    assert left["file_modes"] == {0o600}, "saves are private to the user"
    assert left["saves"] == [("epoch", Position(1, 0, 10)), ("step", Position(1, 5, 10))]
    assert second.returncode == 0, second.stderr[-3000:]
    assert "autodist: resuming at epoch 2, after 5 of its batches, from the preemption save" in second.stderr
    assert list((out / "backup").iterdir()) == [], "a finished run removes its saves (and leaves your folder)"
    code, stderr = runs["reference"]
    assert code == 0, stderr[-3000:]
    diff, redone = assert_same_run(out, reference, "single")
    assert redone == 0
    report(f"preemption, {flavor} {result(out, 'single')[1]['strategy']} ({data}, {optimizer}): SIGTERM in epoch 2 batch 5; steps redone {redone}, weights within {diff:g} of the uninterrupted run")


def test_a_sigterm_after_the_last_step_saves_the_finished_fit(single_host):
    """SIGTERM in the last epoch's end: fit finishes, saves the finished state with its History
    and exits 75; the next start trains nothing and returns the uninterrupted run's History."""
    runs = single_host[0]["late"]
    out, reference = single_host[1]["late"] / "run", single_host[1]["late"] / "reference"
    first, second = runs["first"], runs["second"]
    assert first.returncode == PREEMPTED_EXIT_CODE and "saved the finished fit" in first.stderr, first.stderr[-3000:]
    assert second.returncode == 0 and "all 3 epochs were trained before the restart: nothing to train" in second.stderr, second.stderr[-3000:]
    code, stderr = runs["reference"]
    assert code == 0, stderr[-3000:]
    weights, summary = result(out, "single")
    ref_weights, ref_summary = result(reference, "single")
    assert max(float(np.abs(a - b).max()) for a, b in zip(weights, ref_weights, strict=True)) <= 1e-6
    assert summary["history"] == ref_summary["history"] and summary["epochs"] == [0, 1, 2]
    assert steps_trained(out, "single") == list(range(1, STEPS + 1)), "the restart trains no step"
    assert list((out / "backup").iterdir()) == []


def launch(out: Path, mode: str, flavor: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "autodist", "launch", "--workers", "2", "--timeout", "150", *extra, SCRIPT, str(out), mode]


def test_multi_worker_keras3_launcher_sigterm_then_a_new_start_resumes_at_the_step(processes, tmp_path, report):
    """SIGTERM reaches the launcher; it forwards it to both workers, which agree on a step, save
    it and exit 75; a second start of the same command resumes there."""
    from autodist.jobs.job_layout import default_launch_backup
    from autodist.jobs.launch import JobSpec

    out, reference = tmp_path / "run", tmp_path / "reference"
    env = subprocess_env()
    command = launch(out, "wait", "keras3")  # the default backup folder: the same command resumes
    backup = default_launch_backup([SCRIPT, str(out), "wait"], JobSpec(2))
    out.mkdir()
    launcher = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("*-reached")) and time.monotonic() < deadline and launcher.poll() is None:
            time.sleep(0.05)
        sent = time.monotonic()
        launcher.send_signal(signal.SIGTERM)
        output = launcher.communicate(timeout=60)[0]
        stopped = time.monotonic() - sent
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert launcher.returncode == 128 + signal.SIGTERM, output[-4000:]
    assert "[launcher] worker 0, worker 1 exited 75 (preempted" in output, output[-4000:]
    assert output.count("autodist: preempted (SIGTERM): saved epoch") == 2, output[-4000:]
    positions = {saves(os.path.join(backup, f"worker-{i}", "fit-0"))[-1].position for i in (0, 1)}
    assert len(positions) == 1, f"workers must save the same step: {positions}"
    second = run_python(command[1:], env=env, timeout=170)
    assert second.returncode == 0 and "resuming at epoch" in second.stdout, second.stdout[-4000:]
    assert not os.path.exists(backup), "a finished job removes its saves"
    done = run_python(launch(reference, "reference", "keras3")[1:], env=env, timeout=170)
    assert done.returncode == 0, done.stdout[-4000:]
    (position,) = positions
    for task in ("worker-0", "worker-1"):
        diff, redone = assert_same_run(out, reference, task)
        assert redone == 0
    report(
        f"preemption, 2 workers keras3: launcher SIGTERMed, workers saved epoch {position.epoch + 1} after "
        f"{position.step} batches, launcher exited {stopped:.1f} s later; steps redone {redone}, weights within {diff:g}"
    )


def test_multi_worker_tf_keras_one_worker_sigterm_and_a_launcher_restart(processes, tmp_path, report):
    """Only worker 1 gets SIGTERM (an evicted pod): both save the step it proposes, the launcher
    restarts the job, and it resumes there."""
    out, reference = tmp_path / "run", tmp_path / "reference"
    env = subprocess_env(TF_USE_LEGACY_KERAS="1", OPTIMIZER="momentum")
    out.mkdir()
    proc = run_python(launch(out, "self", "tf_keras", "--max-restarts", "1")[1:], env=env, timeout=170)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "worker 1 exited with code 75" in proc.stdout or "worker 0 exited with code 75" in proc.stdout
    assert proc.stdout.count("autodist: resuming at epoch 2, after 7 of its batches") == 2, proc.stdout[-4000:]
    done = run_python(launch(reference, "reference", "tf_keras")[1:], env=env, timeout=170)
    assert done.returncode == 0, done.stdout[-4000:]
    for task in ("worker-0", "worker-1"):
        diff, redone = assert_same_run(out, reference, task)
        assert redone == 0
    report(f"preemption, 2 workers tf_keras (momentum): worker 1 SIGTERMed in epoch 2 batch 5; both saved after batch 7; steps redone {redone}, weights within {diff:g}")


def test_multi_worker_sigterm_on_one_worker_after_the_last_step_saves_the_finished_fit_on_all(processes, tmp_path):
    """Only worker 1 gets SIGTERM, after the last step: no step can be proposed, so the workers
    compare notes at the end of fit; both save the finished fit and exit 75, and the restart
    trains nothing and returns the History."""
    out = tmp_path / "run"
    proc = run_python(launch(out, "late", "keras3", "--max-restarts", "1")[1:], env=subprocess_env(), timeout=170)
    assert proc.returncode == 0, proc.stdout[-4000:]
    said = [line for line in proc.stdout.splitlines() if line.startswith("[worker ")]
    assert sum("saved the finished fit" in line for line in said) == 2, proc.stdout[-4000:]
    assert sum("all 3 epochs were trained before the restart: nothing to train" in line for line in said) == 2, proc.stdout[-4000:]
    for task in ("worker-0", "worker-1"):
        assert steps_trained(out, task) == list(range(1, STEPS + 1)), f"{task} trained steps again"
        assert result(out, task)[1]["epochs"] == [0, 1, 2]


def test_a_worker_that_cannot_answer_the_agreement_leaves_no_worker_blocked(processes, tmp_path, report):
    """Worker 0 is SIGTERMed while worker 1 hangs (SIGSTOP): worker 0 proposes a step, worker 1
    never acknowledges it. No step is saved, worker 0 exits 75 naming worker 1, the launcher kills
    worker 1 when --grace ends and says so, and each worker's epoch save stays."""
    out, backup = tmp_path / "run", tmp_path / "backup"
    out.mkdir()
    command = launch(out, "freeze", "keras3", "--grace", "6", "--backup-dir", str(backup))
    proc = run_python(command[1:], env=subprocess_env(), timeout=170)
    assert proc.returncode == PREEMPTED_EXIT_CODE, proc.stdout[-4000:]
    said = "worker 1 did not answer the agreement on the step to save within 2 s: no worker saves a step"
    assert said in proc.stdout, proc.stdout[-4000:]
    assert "[launcher] worker 1 did not exit within --grace 6 s of SIGTERM: killed" in proc.stdout, proc.stdout[-4000:]
    for task in ("worker-0", "worker-1"):
        kept = [(found.kind, found.position) for found in saves(str(backup / task / "fit-0"))]
        assert kept == [("epoch", Position(1, 0, 10))], (task, kept)
    report("preemption agreement, worker 1 hung (SIGSTOP): no step saved, worker 0 exited 75 naming worker 1, the launcher killed worker 1 at --grace 6 s; epoch 1's saves kept on both")


# ----------------------------------------------------------------------------- the pieces


def test_unshuffled_arrays_resume_on_the_samples_left_with_the_same_validation_split():
    x, y, w = np.arange(20), np.arange(20) * 10, np.ones(20)
    kwargs = {"batch_size": 4, "shuffle": False, "validation_split": 0.2, "sample_weight": w, "callbacks": []}
    plan = phases(classify(x, y), kwargs, epoch=1, step=2, epochs=3)
    first, rest = plan.phases
    assert first.x.tolist() == list(range(8, 16)) and first.y.tolist() == [v * 10 for v in range(8, 16)]
    assert first.kwargs["validation_split"] == 0.0 and first.kwargs["validation_data"][0].tolist() == [16, 17, 18, 19]
    assert first.kwargs["sample_weight"].shape == (8,) and "callbacks" not in first.kwargs
    assert (first.kwargs["initial_epoch"], first.kwargs["epochs"], first.batch_offset) == (1, 2, 2)
    assert rest.x is x and rest.kwargs["validation_split"] == 0.2 and (rest.kwargs["initial_epoch"], rest.kwargs["epochs"]) == (2, 3)
    assert plan.exact and plan.batches == 4 and not plan.warnings
    import pandas as pd

    frame = phases(classify(pd.DataFrame({"a": x}), pd.Series(y)), kwargs, epoch=1, step=2, epochs=3).phases[0]
    assert frame.x.ravel().tolist() == list(range(8, 16)) and frame.y.tolist() == first.y.tolist(), "pandas as Keras reads it"


def test_shuffled_arrays_resume_in_autodists_epoch_order_after_the_trained_batches():
    """Arrays Keras would shuffle: one fit an epoch, in the order drawn from (seed, epoch), the
    interrupted epoch after its trained samples; the validation split kept; without a seed
    (a save from before), the epoch starts over."""
    from autodist.resume.resumed_fit import epoch_order

    x, weights = np.arange(50), np.linspace(1, 2, 50)
    kwargs = {"batch_size": 8, "validation_split": 0.2, "sample_weight": weights}
    plan = phases(classify(x, x * 10), kwargs, epoch=0, step=3, epochs=2, order_seed=5)
    first, rest = plan.phases
    order = epoch_order(5, 0, 40)
    assert first.x.tolist() == order[24:].tolist() and first.y.tolist() == (order[24:] * 10).tolist()
    assert first.kwargs["sample_weight"].tolist() == weights[order[24:]].tolist() and first.batch_offset == 3
    assert first.kwargs["shuffle"] is False and first.kwargs["validation_split"] == 0.0
    assert first.kwargs["validation_data"][0].tolist() == list(range(40, 50))
    assert rest.x.tolist() == epoch_order(5, 1, 40).tolist() and (rest.kwargs["initial_epoch"], rest.kwargs["epochs"]) == (1, 2)
    assert plan.exact and plan.batches == 5 and not plan.warnings
    assert phases(classify(x, x), {"batch_size": 8}, epoch=0, step=3, epochs=2) is None


def test_datasets_skip_the_batches_trained_and_streams_every_batch_read(tensorflow_imported):
    import tensorflow as tf

    batches = tf.data.Dataset.range(20).batch(4)
    plan = phases(classify(batches), {}, epoch=1, step=3, epochs=2)
    assert [b.numpy().tolist() for b in plan.phases[0].x] == [[12, 13, 14, 15], [16, 17, 18, 19]]
    stream = tf.data.Dataset.range(20).batch(4).repeat()
    first, rest = phases(classify(stream), {"steps_per_epoch": 5, "initial_epoch": 1}, epoch=2, step=1, epochs=4).phases
    assert next(iter(first.x)).numpy().tolist() == [4, 5, 6, 7] and first.kwargs["steps_per_epoch"] == 4
    assert next(iter(rest.x)).numpy().tolist() == [0, 1, 2, 3] and rest.kwargs["initial_epoch"] == 3
    shuffled = phases(classify(tf.data.Dataset.range(20).shuffle(20).batch(4)), {}, epoch=0, step=1, epochs=1)
    assert not shuffled.exact and "the dataset shuffles" in shuffled.warnings[0]


def test_an_input_that_cannot_skip_batches_resumes_from_the_epochs_start():
    assert phases(classify(iter([])), {}, epoch=1, step=3, epochs=2) is None
    assert phases(classify(np.zeros((8, 1)), np.zeros(8)), {"batch_size": 2, "steps_per_epoch": 3}, epoch=1, step=1, epochs=2) is None


def test_one_callback_list_sees_a_resumed_fit_as_one_fit(tensorflow_imported):
    """The rest of epoch 2, then epoch 3: one train begin and end, the epoch's batch numbers,
    one History; the same hooks as an uninterrupted fit from epoch 2 on."""
    import keras

    from autodist.resume.resumed_fit import phased_callbacks, run_phases

    class Record(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.events = []

        def on_train_begin(self, logs=None):
            self.events.append("begin")

        def on_train_end(self, logs=None):
            self.events.append("end")

        def on_epoch_begin(self, epoch, logs=None):
            self.events.append(f"epoch {epoch}")

        def on_train_batch_end(self, batch, logs=None):
            self.events.append(batch)

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((20, 2), "float32"), np.ones((20, 1), "float32")
    plan = phases(classify(x, y), {"batch_size": 4, "shuffle": False, "verbose": 0}, epoch=1, step=3, epochs=3)
    record = Record()
    history = run_phases(model, plan, phased_callbacks(keras, [record], model, verbose=0, epochs=3, steps=5))
    assert record.events == ["begin", "epoch 1", 3, 4, "epoch 2", 0, 1, 2, 3, 4, "end"]
    assert history.epoch == [1, 2] and len(history.history["loss"]) == 2 and model.history is history


class FakeStore:
    """The coordination service's key-value store as the agreement uses it: a key is set once
    (a second set fails), and a read waits for it, up to its timeout."""

    def __init__(self):
        self.values: dict[str, str] = {}
        self.changed = threading.Condition()

    def set_config_key_value(self, key, value):
        with self.changed:
            if key in self.values:
                raise RuntimeError(f"AlreadyExists: {key}")
            self.values[key] = value
            self.changed.notify_all()

    def get_config_key_value(self, key, timeout_in_ms=None):
        with self.changed:
            if not self.changed.wait_for(lambda: key in self.values, None if timeout_in_ms is None else timeout_in_ms / 1000):
                raise RuntimeError(f"DeadlineExceeded: {key}")
            return self.values[key]


@pytest.fixture
def store(tensorflow_imported, monkeypatch):
    from tensorflow.python.eager import context

    from autodist.resume import agreement

    fake = FakeStore()
    monkeypatch.setattr(context, "context", lambda: fake)
    monkeypatch.setattr(agreement, "ABANDON_DELAY_S", 0.05)
    return fake


def workers(count, *, started, ended):
    from autodist.resume.agreement import ClusterAgreement

    names = tuple(f"worker {i}" for i in range(count))
    made = [ClusterAgreement(i, count, 0, names, ack_timeout=0.3, end_process=lambda code, i=i: ended.append((i, code))) for i in range(count)]
    for index in started:
        made[index].start()
    return made


def test_the_agreement_commits_when_every_worker_answers_even_with_two_proposers(store):
    ended: list = []
    agreements = workers(3, started=(0, 1, 2), ended=ended)
    proposers = [threading.Thread(target=agreements[i].propose, args=(5 + i,)) for i in (0, 1)]
    for thread in proposers:
        thread.start()
    for thread in proposers:
        thread.join(10)
    agreed = {a.agreed() for a in agreements}
    assert len(agreed) == 1 and agreed <= {7, 8}, agreed  # one proposal, two past its proposer's step
    assert all(a.confirmed() and a.missing() is None for a in agreements) and store.values["autodist/preemption/0/decision"] == "commit"
    assert not ended


def test_a_worker_that_does_not_answer_makes_every_other_worker_exit_naming_it(store, capfd):
    """Worker 2 never answers (its watcher is not running: a frozen process). The proposer
    abandons; worker 1, which acknowledged, ends its process even if its main thread is blocked."""
    ended: list = []
    agreements = workers(3, started=(0, 1), ended=ended)
    agreements[0].propose(5)
    assert agreements[0].missing() == [2] and not agreements[0].confirmed()
    deadline = time.monotonic() + 10
    while len(ended) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sorted(ended) == [(0, PREEMPTED_EXIT_CODE), (1, PREEMPTED_EXIT_CODE)], ended
    said = capfd.readouterr().err
    assert said.count("worker 2 did not answer the agreement on the step to save within 0.3 s") == 2, said


def test_a_proposer_gone_before_deciding_ends_the_others(store, capfd):
    ended: list = []
    (_, second) = workers(2, started=(1,), ended=ended)
    store.set_config_key_value("autodist/preemption/0", "9")  # proposed, then the proposer died
    deadline = time.monotonic() + 10
    while not ended and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ended == [(1, PREEMPTED_EXIT_CODE)] and second.missing() == []
    assert "the worker that proposed the step did not answer" in capfd.readouterr().err


def test_callback_state_round_trips_arrays_and_a_callbacks_own_names(tensorflow_imported):
    """EarlyStopping's best weights travel as arrays; a callback of the user's own carries what it
    names in ``autodist_state``; a list of other callbacks is left alone."""
    import keras

    from autodist.resume.callback_state import capture, give_back

    class Mine(keras.callbacks.Callback):
        autodist_state = ("seen",)

        def __init__(self):
            super().__init__()
            self.seen, self.other = 0, "kept"

    stop, mine = keras.callbacks.EarlyStopping(restore_best_weights=True), Mine()
    stop.on_train_begin()
    stop.best_weights, stop.wait, mine.seen, mine.other = [np.ones(2), np.zeros((2, 2))], 1, 7, "changed"
    scalars, arrays = capture([stop, mine])
    assert scalars[0]["best_weights"] == {"arrays": [0, 2]} and scalars[1] == {"class": "Mine", "seen": 7} and len(arrays) == 2
    fresh_stop, fresh_mine = keras.callbacks.EarlyStopping(restore_best_weights=True), Mine()
    fresh_stop.on_train_begin()
    give_back([fresh_stop, fresh_mine], json.loads(json.dumps(scalars)), arrays)
    assert fresh_stop.wait == 1 and [w.tolist() for w in fresh_stop.best_weights] == [[1.0, 1.0], [[0.0, 0.0], [0.0, 0.0]]]
    assert fresh_mine.seen == 7 and fresh_mine.other == "kept"
    give_back([Mine()], scalars, arrays)  # another list of callbacks: nothing is set, nothing raises
    swapped = [Mine(), keras.callbacks.EarlyStopping()]
    swapped[1].on_train_begin()
    give_back(swapped, scalars, arrays)  # the same length, other classes at each place
    assert swapped[0].seen == 0 and swapped[1].wait == 0


def test_a_save_is_private_and_read_only_once_complete(tmp_path):
    folder = str(tmp_path / "a" / "b")
    for epoch in (1, 2):
        save(folder, "epoch", Position(epoch, 0, 10), {"weights": [np.arange(3.0) + epoch], "optimizer": [np.int64(7)]})
    step = save(folder, "step", Position(2, 5, 10), {"weights": [np.arange(3.0)], "optimizer": [np.int64(7)]})
    for path in (tmp_path / "a", tmp_path / "a" / "b"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in Path(folder).iterdir()} == {0o600}
    assert [found.position for found in saves(folder)] == [Position(2, 0, 10), Position(2, 5, 10)], "the two newest stay"
    assert load(folder, step.name)["weights"][0].tolist() == [0.0, 1.0, 2.0]
    os.remove(os.path.join(folder, f"{step.name}.json"))  # a save cut short before its position was written
    assert [found.position for found in saves(folder)] == [Position(2, 0, 10)] and load(folder, step.name) is None
    newer = save(folder, "step", Position(2, 7, 10), {"weights": [np.zeros(3)]})
    discard_after(folder, saves(folder)[0])
    assert newer not in saves(folder), "a resumed run drops the saves newer than the one it resumed from"
    clear(folder)
    assert not os.path.exists(folder)

