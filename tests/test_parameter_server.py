"""Parameter-server jobs on 127.0.0.1: chief + 2 workers + 1 ps, each a real process.

Every process has a bound: the launcher's --timeout, or an explicit wait with SIGKILL after it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from functools import partial

import pytest

from autodist.errors import AutodistError
from autodist.jobs.job_layout import local_cluster, task_configs
from tests.conftest import ROOT, SCENARIOS, Ahead, run_python, subprocess_env

SCRIPT = str(SCENARIOS / "parameter_server.py")
LEGACY = [None, "1"]  # Keras 3, and tf_keras


def launched(cluster: list[str], script: str, *args: str, legacy: str | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """A job through the launcher, bounded by its --timeout and ours above it, and its seconds."""
    start = time.monotonic()
    proc = run_python(
        ["-m", "autodist", "launch", *cluster, "--timeout", "150", "--grace", "3", script, *args],
        env=subprocess_env(TF_USE_LEGACY_KERAS=legacy),
        timeout=180,
    )
    return proc, time.monotonic() - start


@pytest.fixture(scope="module")
def runs(processes, request, tmp_path_factory):
    """The module's jobs that bound no time, started together (``conftest.Ahead``), and where each
    writes. The tests that kill a task, or time a chief, start after them (:func:`settled`)."""
    ahead, outs = Ahead(request), {}
    for legacy in LEGACY:
        for mode, test in (("train", "test_launcher_runs_chief_workers_and_ps"), ("dataset", "test_datasets_built_before_fit_and_batch_hooks")):
            out = outs[f"{mode} {legacy}"] = tmp_path_factory.mktemp(mode)
            ahead.submit(test, partial(launched, ["--workers", "2", "--ps", "1"], SCRIPT, str(out), mode, legacy=legacy), key=f"{mode} {legacy}")
        embedding = partial(launched, ["--workers", "1", "--ps", "2"], str(SCENARIOS / "ps_embedding.py"), legacy=legacy)
        ahead.submit("test_two_ps_tasks_and_a_large_embedding", embedding, key=f"embedding {legacy}")
    yield ahead, outs
    ahead.close()


@pytest.fixture
def settled(runs):
    """A test that bounds a time starts once the module's other jobs have ended."""
    runs[0].settle()


@pytest.mark.parametrize("legacy", LEGACY, ids=["keras3", "tf_keras"])
def test_launcher_runs_chief_workers_and_ps(runs, legacy, report):
    proc, elapsed = runs[0][f"train {legacy}"]
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "[launcher] job finished: every task exited 0" in proc.stdout
    for task in ("worker 0", "worker 1", "ps 0"):
        assert f"[{task}] autodist: {task}: the chief is gone; exiting" in proc.stdout
    result = json.loads((runs[1][f"train {legacy}"] / "chief.json").read_text())
    loss = result["history"]["loss"]
    assert result["strategy"] == "parameter_server" and len(loss) == 3
    # The loss decreases over the 3 epochs (History), and the trained variables, read back from
    # the ps task, beat the identical initial model on the whole data set.
    assert loss[0] > loss[1] > loss[2], loss
    assert result["final_loss"] < 0.8 * result["initial_loss"], result
    if not legacy:
        assert result["variable_device"].startswith("/job:ps/")
    report(
        f"parameter-server job ({'tf_keras' if legacy else 'keras3'}): {elapsed:.1f} s, data-set loss "
        f"{result['initial_loss']:.3f} -> {result['final_loss']:.3f}, epoch losses {[round(v, 3) for v in loss]}"
    )


@pytest.mark.parametrize("keyword", ["validation_split", "validation_data", "class_weight"])
def test_keras3_loop_refuses_what_it_cannot_do(tensorflow_imported, keyword):
    from autodist.tensorflow.parameter_server import fit_keras3

    value = {"validation_split": 0.2, "validation_data": ([1], [1]), "class_weight": {0: 1.0}}[keyword]
    with pytest.raises(AutodistError, match=f"fit\\({keyword}=...\\) is not supported.*Fix: "):
        fit_keras3(None, None, None, None, global_batch_size=8, epochs=1, fit_kwargs={keyword: value})


def _short_chief(open_after: float, open_for: float) -> tuple[str, threading.Thread, list[str]]:
    """A loopback port that accepts connections only from ``open_after`` to ``open_after + open_for``
    seconds from now, like a chief that connects, trains briefly and ends; and the list of what
    it did so far (``listening``, then ``closed``: each noted before it happens)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # bound but not listening: connections are refused
    events: list[str] = []

    def lifetime():
        time.sleep(open_after)
        events.append("listening")
        sock.listen()
        time.sleep(open_for)
        events.append("closed")
        sock.close()

    thread = threading.Thread(target=lifetime, daemon=True)
    thread.start()
    return f"127.0.0.1:{sock.getsockname()[1]}", thread, events


def test_a_chief_that_lives_under_a_second_is_seen_and_its_end_ends_the_task(settled, capsys):
    """Regression: with one probe per second, a chief whose port was open for 0.6 s went unseen,
    and the workers waited out the peer timeout and failed with "never came"."""
    from autodist.tensorflow.parameter_server import watch_chief

    address, chief, events = _short_chief(open_after=0.3, open_for=0.3)
    code = watch_chief(address, "worker 0", peer_timeout=20, poll_seconds=0.1)
    seen = list(events)  # what the chief had done when the task returned
    chief.join(timeout=5)
    err = capsys.readouterr().err
    assert code == 0 and "autodist: worker 0: the chief is gone; exiting" in err, err
    assert "never came" not in err  # seen while it lived (not the peer timeout's failure)
    assert seen == ["listening", "closed"], f"returned when the chief had done {seen}, before it had come and gone"


def test_a_chief_that_never_comes_fails_the_task_after_the_peer_timeout(capsys, monkeypatch):
    """On a clock of the test's own (each wait moves it on): the task keeps trying the chief's
    port, every ``search_seconds``, until the peer timeout has passed, and gives up at the first
    try past it."""
    import types

    from autodist.tensorflow import parameter_server

    address, _, _ = _short_chief(open_after=60, open_for=0)  # never opens within the test
    clock, tries = [0.0], []
    monkeypatch.setattr(parameter_server, "time", types.SimpleNamespace(monotonic=lambda: clock[0], sleep=lambda s: clock.__setitem__(0, clock[0] + s)))
    probe = parameter_server.chief_alive
    monkeypatch.setattr(parameter_server, "chief_alive", lambda where: tries.append(clock[0]) or probe(where))
    code = parameter_server.watch_chief(address, "ps 0", peer_timeout=0.5, search_seconds=0.05)
    assert code == 1
    err = capsys.readouterr().err
    assert f"ps 0 waited 0.5 s for the chief at {address}, and it never came" in err
    assert "AUTODIST_PEER_TIMEOUT" in err
    assert tries[0] == 0.0 and tries[-2] <= 0.5 < tries[-1] == clock[0], tries  # tried through the wait, gave up just past it
    assert all(round(b - a, 9) == 0.05 for a, b in zip(tries, tries[1:])), tries  # one try every search_seconds


def test_steps_per_epoch_rule():
    from autodist.tensorflow.parameter_server import steps_per_epoch

    assert (steps_per_epoch(512, 32), steps_per_epoch(513, 32), steps_per_epoch(5, 32)) == (16, 17, 1)


@pytest.mark.parametrize("legacy, variable", [(None, "CachingVariable"), ("1", "ShardedVariable")], ids=["keras3", "tf_keras"])
def test_two_ps_tasks_and_a_large_embedding(runs, legacy, variable):
    """tf_keras shards the embedding over both ps tasks; Keras 3 cannot train a ShardedVariable,
    so its variables stay whole, and the plan says why."""
    proc, _ = runs[0][f"embedding {legacy}"]
    assert proc.returncode == 0, proc.stdout[-3000:]
    result = json.loads(next(line for line in proc.stdout.splitlines() if "RESULT " in line).split("RESULT ", 1)[1])
    assert result["variable"] == variable
    assert len(result["loss"]) == 2
    phrase = "split into up to 2 shards" if legacy else "Keras 3 cannot train a ShardedVariable"
    assert any(phrase in reason for reason in result["reasons"])


def test_per_worker_input_from_batched_and_unbatched_datasets(tensorflow_imported):
    """Both kinds of dataset give each worker one-sample elements, re-batched to the step's batch."""
    import numpy as np
    import tensorflow as tf

    from autodist.tensorflow.parameter_server import dataset_fn_for
    from autodist.tensorflow.ps_input import pass_samples

    x = np.arange(40, dtype="float32").reshape(20, 2)
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)
    for dataset in (tf.data.Dataset.from_tensor_slices(x), tf.data.Dataset.from_tensor_slices(x).batch(7)):
        assert pass_samples(dataset) == 20
        batch = next(iter(dataset_fn_for(dataset, None, None, global_batch_size=4, shuffle=False)(context)))
        assert batch.shape == (4, 2)
        assert batch.numpy()[:, 0].tolist() == [2.0, 6.0, 10.0, 14.0]  # shard 1 of 2: samples 1, 3, 5, 7


@pytest.mark.parametrize("legacy", LEGACY, ids=["keras3", "tf_keras"])
def test_datasets_built_before_fit_and_batch_hooks(runs, legacy, report):
    """tf.data input (batched; unbatched and endless) trains the user's own model; batch hooks run
    once per step, in order (Keras 3), or are refused with the alternative (tf_keras). Before,
    every dataset failed on the workers ("Failed copying input tensor from /job:chief") and the
    Keras 3 loop skipped batch hooks silently."""
    proc, elapsed = runs[0][f"dataset {legacy}"]
    assert proc.returncode == 0, proc.stdout[-4000:]
    result = json.loads((runs[1][f"dataset {legacy}"] / "chief.json").read_text())
    assert result["variable_device"].startswith("/job:ps/"), "the user's model was created on the ps"
    batched, endless = result["batched"]["loss"], result["unbatched_endless"]["loss"]
    assert len(batched) == 2 and batched[1] < batched[0], batched
    # the second fit goes on from the first: 2 epochs of 5 steps, below where the first began
    assert len(endless) == 2 and max(endless) < batched[0], (batched, endless)
    if legacy:
        assert "refuses batch-level callbacks" in result["batch_hooks_error"]
        assert "Keras 3" in result["batch_hooks_error"]
        assert {"ckpt-1-4.index", "ckpt-2-8.index"} <= set(result["files"])  # tf_keras saves per batch
    else:
        expected = [[hook, step] for _ in range(2) for step in range(16) for hook in ("begin", "end")]
        assert result["order"] == expected, "once per step, in order, every epoch"
        assert {"ckpt-1-4.weights.h5", "ckpt-1-8.weights.h5", "ckpt-2-4.weights.h5"} <= set(result["files"])
        stopped = result["stopped"]
        assert len(stopped["history"]["loss"]) == 1 and stopped["calls"][-1] == ["end", 2]
        assert result["terminate_on_nan"] == {"epochs": 1, "steps": 1}
    report(f"parameter-server datasets + batch hooks ({'tf_keras' if legacy else 'keras3'}): {elapsed:.1f} s")


class Job:
    """The four tasks started by hand (no launcher), so a test can kill one of them."""

    def __init__(self, out):
        self.out = out
        self.processes = {}
        for config in task_configs(local_cluster(2, 1)):
            name = f"{config['task']['type']}-{config['task']['index']}"
            self.processes[name] = subprocess.Popen(
                [sys.executable, SCRIPT, str(out), "long"],
                env=subprocess_env(TF_CONFIG=json.dumps(config), AUTODIST_PEER_TIMEOUT="60"),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
                start_new_session=True,
            )

    def epochs(self) -> int:
        try:
            return int((self.out / "chief-started").read_text() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def wait_for_epochs(self, count: int, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while self.epochs() < count:
            assert time.monotonic() < deadline, f"the chief did not finish {count} epoch(s) in {timeout} s"
            time.sleep(0.2)

    def kill(self, name: str) -> None:
        os.killpg(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait(timeout=10)

    def wait(self, name: str, timeout: float) -> tuple[int, str]:
        _, err = self.processes[name].communicate(timeout=timeout)
        return self.processes[name].returncode, err

    def close(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


@pytest.fixture
def job(settled, tmp_path):
    running = Job(tmp_path)
    yield running
    running.close()


def test_killing_the_chief_ends_workers_and_ps(job, report):
    job.wait_for_epochs(1)
    job.kill("chief-0")
    killed = time.monotonic()
    for name in ("worker-0", "worker-1", "ps-0"):
        code, err = job.wait(name, timeout=30)
        assert code == 0, err[-2000:]
        assert "the chief is gone; exiting" in err
    report(f"chief killed: workers and ps exited {time.monotonic() - killed:.1f} s later (each within its 30 s wait)")


def test_losing_a_worker_keeps_training(job):
    """The coordinator re-runs a lost worker's steps on the other one: epochs keep finishing."""
    job.wait_for_epochs(1)
    job.kill("worker-1")
    before = job.epochs()
    job.wait_for_epochs(before + 3, timeout=60)
    assert job.processes["chief-0"].poll() is None


def test_losing_the_ps_fails_the_chief_with_a_clear_error(job, report):
    job.wait_for_epochs(1)
    job.kill("ps-0")
    killed = time.monotonic()
    code, err = job.wait("chief-0", timeout=60)
    elapsed = time.monotonic() - killed
    assert code != 0
    assert "autodist.errors.PeerError: Parameter-server training lost a task" in err
    assert "--max-restarts" in err
    for name in ("worker-0", "worker-1"):
        assert job.wait(name, timeout=30)[0] == 0
    report(f"ps killed: the chief failed {elapsed:.1f} s later")
