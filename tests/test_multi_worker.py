"""Real multi-worker jobs: 2 worker processes on 127.0.0.1, started by the launcher.

Every job has a wall-clock bound (the launcher's --timeout, and the subprocess timeout above it).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest

from autodist.jobs.job_layout import local_cluster, task_configs
from tests.conftest import ROOT, SCENARIOS, listening, run_python, subprocess_env

SCRIPT = str(SCENARIOS / "multi_worker.py")
JOB_TIMEOUT = 180


def launch(*args: str, timeout: float = JOB_TIMEOUT, **env: str | None):
    return run_python(
        ["-m", "autodist", "launch", "--timeout", str(timeout - 20), "--grace", "3", *args],
        env=subprocess_env(**env),
        timeout=timeout,
    )


def weights(path: Path) -> list[np.ndarray]:
    with np.load(path) as data:
        return [data[key] for key in sorted(data.files, key=lambda k: int(k.split("_")[1]))]


def max_diff(a, b) -> float:
    """The largest difference between two lists of arrays (of one model: the same count)."""
    assert a and len(a) == len(b), (len(a), len(b))
    return float(max(np.abs(x - y).max() for x, y in zip(a, b, strict=True)))


def epochs_run(out: Path, task: str) -> list[tuple[int, int]]:
    """The ``(attempt, epoch)`` of every epoch the task began (tests/scenarios/multi_worker.py)."""
    lines = (out / f"{task}-epochs.txt").read_text().split()
    return [(int(a), int(e)) for a, e in zip(lines[::2], lines[1::2], strict=True)]


@pytest.fixture(scope="module")
def reference(processes, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    proc = run_python([SCRIPT, str(out), "reference"], env=subprocess_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return weights(out / "single.npz")


@pytest.mark.parametrize("legacy", [None, "1"], ids=["keras3", "tf_keras"])
def test_two_workers_match_each_other_and_a_single_process(tmp_path, reference, legacy):
    from autodist.planning.strategy_types import strategy_type
    from autodist.upstream.versions import module_version

    proc = launch("--workers", "2", SCRIPT, str(tmp_path), "train", TF_USE_LEGACY_KERAS=legacy)
    if not legacy and strategy_type("multi_worker_mirrored").keras_refusal("keras3", module_version("keras")):
        # Keras 3.3-3.6 (support matrix): refused with the fix, on every worker
        assert proc.returncode != 0 and proc.stdout.count("StrategyUnavailableError: Keras") >= 2, proc.stdout[-4000:]
        assert "pip install 'keras>=3.8'" in proc.stdout
        return
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "[launcher] job finished: every task exited 0" in proc.stdout
    assert re.search(r"\[worker 1\] .*autodist plan: multi_worker_mirrored with 2 replica", proc.stdout)
    w0, w1 = weights(tmp_path / "worker-0.npz"), weights(tmp_path / "worker-1.npz")
    assert max_diff(w0, w1) == 0.0, "workers must end with identical weights"
    assert max_diff(w0, reference) <= 1e-4, "3 epochs of SGD must match one process at the same global batch"
    for task in ("worker-0", "worker-1"):
        result = json.loads((tmp_path / f"{task}.json").read_text())
        assert (result["strategy"], result["num_replicas"]) == ("multi_worker_mirrored", 2)
        assert result["is_chief"] == (task == "worker-0")


@pytest.mark.parametrize("legacy", [None, "1"], ids=["keras3", "tf_keras"])
def test_worker_failure_with_restart_resumes_at_epoch_3(processes, tmp_path, legacy):
    proc = launch("--workers", "2", "--max-restarts", "1", SCRIPT, str(tmp_path), "fault", TF_USE_LEGACY_KERAS=legacy)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "worker 1 exited with code 17" in proc.stdout
    assert "restarting the job in 1 s: attempt 2 of 2" in proc.stdout
    # epochs 1 and 2 on attempt 0; then epochs 3, 4, 5, each exactly once, on attempt 1. Worker 0
    # may begin epoch 3 before worker 1's exit reaches it (no collective lies between worker 1's
    # epoch end and worker 0's next epoch begin): how far it gets depends on timing, not on the code
    assert epochs_run(tmp_path, "worker-1") == [(0, 0), (0, 1), (1, 2), (1, 3), (1, 4)]
    assert epochs_run(tmp_path, "worker-0") in (
        [(0, 0), (0, 1), (1, 2), (1, 3), (1, 4)],
        [(0, 0), (0, 1), (0, 2), (1, 2), (1, 3), (1, 4)],
    ), epochs_run(tmp_path, "worker-0")
    assert max_diff(weights(tmp_path / "worker-0.npz"), weights(tmp_path / "worker-1.npz")) == 0.0


def test_worker_failure_without_restart_fails_fast_and_names_the_task(mostly_waits, tmp_path, report):
    """Fast: the job ends on worker 1's failure, not on --timeout (which exits 124), and worker 0
    is stopped where it waited on it, within an epoch of the failure: never finishing its 5."""
    start = time.monotonic()
    proc = launch("--workers", "2", SCRIPT, str(tmp_path), "fault")
    elapsed = time.monotonic() - start
    assert proc.returncode == 17, proc.stdout[-4000:]
    assert "[launcher] job failed after" in proc.stdout and "worker 1 exited with code 17" in proc.stdout
    assert "last lines of worker 1" in proc.stdout
    assert "ran past --timeout" not in proc.stdout and "restarting the job" not in proc.stdout
    assert epochs_run(tmp_path, "worker-1") == [(0, 0), (0, 1)]  # it exits after epoch 2
    assert epochs_run(tmp_path, "worker-0") in ([(0, 0), (0, 1)], [(0, 0), (0, 1), (0, 2)]), epochs_run(tmp_path, "worker-0")
    assert not (tmp_path / "worker-0.npz").exists() and not (tmp_path / "worker-0.json").exists(), "worker 0 was stopped, not left to finish"
    report(f"failed job ended {elapsed:.1f} s after launch")


def test_never_started_peer_fails_in_bounded_time(mostly_waits, tmp_path, report):
    config = task_configs(local_cluster(2, 0))[0]  # worker 0 only; worker 1 never starts
    start = time.monotonic()
    proc = run_python(
        [SCRIPT, str(tmp_path), "train"],
        env=subprocess_env(TF_CONFIG=json.dumps(config), AUTODIST_PEER_TIMEOUT="5"),
        timeout=90,
    )
    elapsed = time.monotonic() - start
    # bounded: it gave up on its own 5 s deadline (run_python's 90 s would raise TimeoutExpired),
    # exiting with the PeerError's traceback before any epoch began
    assert proc.returncode > 0, (proc.returncode, proc.stderr[-3000:])  # it exited with its error, not killed
    assert "PeerError: worker 0 waited 5 s for the other 1 worker(s)" in proc.stderr
    assert "AUTODIST_PEER_TIMEOUT" in proc.stderr
    assert not (tmp_path / "worker-0-epochs.txt").exists(), "no epoch began without the peer"
    report(f"never-started peer: failed after {elapsed:.1f} s (peer timeout 5 s)")


def test_peer_dying_mid_training_fails_the_survivor_in_bounded_time(mostly_waits, tmp_path, report):
    """No launcher here: the survivor itself must notice and stop with a clear error."""
    import subprocess
    import sys

    processes = []
    start = time.monotonic()
    try:
        for config in task_configs(local_cluster(2, 0)):
            processes.append(
                subprocess.Popen(
                    [sys.executable, SCRIPT, str(tmp_path), "die"],
                    env=subprocess_env(TF_CONFIG=json.dumps(config), AUTODIST_PEER_TIMEOUT="60"),  # registration only: a loaded machine may start one peer late
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    cwd=ROOT,
                    start_new_session=True,
                )
            )
        _, survivor_err = processes[0].communicate(timeout=120)
        elapsed = time.monotonic() - start
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, 9)
                process.wait(timeout=10)
    assert processes[1].returncode == 17
    # bounded: the survivor stopped itself (communicate's 120 s would raise TimeoutExpired), with
    # the PeerError, within an epoch of the peer's death: not one of its 50 epochs more
    assert processes[0].returncode > 0, (processes[0].returncode, survivor_err[-3000:])  # its error, not a signal
    assert "autodist.errors.PeerError: worker 0 lost contact with a peer" in survivor_err
    assert "--max-restarts" in survivor_err
    assert epochs_run(tmp_path, "worker-1") == [(0, 0)]  # it dies after epoch 1
    assert epochs_run(tmp_path, "worker-0") in ([(0, 0)], [(0, 0), (0, 1)]), epochs_run(tmp_path, "worker-0")
    assert not (tmp_path / "worker-0.npz").exists()
    report(f"peer died mid-training: survivor stopped {elapsed:.1f} s after launch")


def test_chief_only_checkpoint_and_no_stray_directories(processes, tmp_path):
    out, scratch = tmp_path / "out", tmp_path / "scratch"
    out.mkdir()
    scratch.mkdir()
    proc = launch("--workers", "2", SCRIPT, str(out), "checkpoint", TMPDIR=str(scratch))
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert sorted(p.name for p in (out / "ckpt").iterdir()) == ["model.keras"]
    chief = json.loads((out / "worker-0.json").read_text())
    other = json.loads((out / "worker-1.json").read_text())
    user_path = str(out / "ckpt" / "model.keras")
    assert chief["checkpoint_paths"] == [user_path, user_path]
    assert all(path != user_path and "autodist-worker-1-" in path for path in other["checkpoint_paths"])
    assert other["checkpoint_path_after"] == user_path, "the user's callback is restored after fit"
    assert list(scratch.iterdir()) == [], "private directories and backups must be removed"


def test_ops_before_import_autodist_get_a_clear_error(processes, tmp_path):
    """Only ops that ran before `import autodist` make MultiWorkerMirrored impossible; the error
    says exactly that (ops after the import are fine: see the tutorials' dataset-first scripts)."""
    config = task_configs(local_cluster(2, 0))[0]
    code = (
        "import tensorflow as tf, numpy as np\n"
        "tf.constant(1.0) + 1\n"
        "import autodist, keras\n"
        "m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)]); m.compile('sgd', 'mse')\n"
        "autodist.fit(m, np.ones((8, 4)), np.ones((8, 1)), batch_size=4, verbose=0)\n"
    )
    proc = run_python(["-c", code], env=subprocess_env(TF_CONFIG=json.dumps(config)), timeout=60)
    assert proc.returncode != 0
    assert "RuntimeAlreadyStartedError: MultiWorkerMirroredStrategy must be created" in proc.stderr
    assert "TensorFlow ran ops before `import autodist`" in proc.stderr
    assert "move `import autodist` to the top of the script" in proc.stderr


@pytest.fixture(scope="module")
def upstream_mwms(processes):
    results = {}
    for mode in ("none", "symbolic_build"):
        proc = launch("--workers", "2", str(SCENARIOS / "keras_mwms_bug.py"), mode, timeout=120)
        lines = [line for line in proc.stdout.splitlines() if "RESULT " in line]
        assert len(lines) == 2, proc.stdout[-3000:]
        found = [json.loads(line.split("RESULT ", 1)[1]) for line in lines]
        results[mode] = [item["error"] for item in found]
        results["keras_version"] = found[0]["keras_version"]
    return results


def test_still_needed_first_batch_symbolic_build_multi_worker(upstream_mwms):
    from autodist.planning.keras_compat import WORKAROUNDS

    if WORKAROUNDS["first_batch_symbolic_build"].affects(upstream_mwms["keras_version"]):
        assert all(e and "unsupported type" in e and "PerReplica" in e for e in upstream_mwms["none"]), (
            "Keras 3 fits under MultiWorkerMirrored without autodist's symbolic-build fix: remove "
            "'first_batch_symbolic_build' from autodist/planning/keras_compat.py"
        )
    else:  # Keras 3.3-3.4 build while tracing the first step: the first failure is the scalar reduce
        assert all(e and "Invalid reduction dimension 0" in e for e in upstream_mwms["none"]), upstream_mwms


def test_still_needed_multi_worker_scalar_reduce(upstream_mwms):
    assert all(e and "Invalid reduction dimension 0" in e for e in upstream_mwms["symbolic_build"]), (
        "Keras 3 reduces scalar logs under MultiWorkerMirrored now: remove "
        "'multi_worker_scalar_reduce' from autodist/planning/keras_compat.py"
    )


def test_default_backup_folder_depends_on_the_command_line(monkeypatch):
    from autodist.jobs.private import default_backup_root
    from autodist.detection.cluster import parse_tf_config

    cluster = parse_tf_config(json.dumps(task_configs({"worker": ["h:1", "h:2"]})[0]))
    monkeypatch.setattr("sys.argv", ["train.py", "--lr", "0.1"])
    first = default_backup_root(cluster, {})
    monkeypatch.setattr("sys.argv", ["train.py", "--lr", "0.2"])
    assert default_backup_root(cluster, {}) != first
    assert default_backup_root(cluster, {"AUTODIST_BACKUP_DIR": "/shared/job"}) == "/shared/job"


LISTENING_SCRIPT = '''
import json, os, sys
import autodist
import tensorflow as tf
from tests.conftest import listening

tf.distribute.get_strategy()  # MultiWorkerMirrored is created: every worker's server is up
config = json.loads(os.environ["TF_CONFIG"])
ports = {int(address.rsplit(":", 1)[1]) for address in config["cluster"]["worker"]}
found = listening(sorted(ports))  # read inside the job's own network
with open(os.path.join(sys.argv[1], f"worker-{config['task']['index']}.json"), "w") as handle:
    json.dump({"ports": sorted(ports), "listening": {str(p): sorted(a) for p, a in found.items()}}, handle)
'''


def test_each_worker_listens_on_the_port_its_tf_config_names(processes, tmp_path, report):
    """Read the listening sockets while a launched 2-worker job runs (no traffic leaves the host)."""
    script = tmp_path / "listen.py"
    script.write_text(LISTENING_SCRIPT)
    proc = launch("--workers", "2", str(script), str(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
    seen = json.loads((tmp_path / "worker-0.json").read_text())
    assert len(set(seen["ports"])) == 2
    assert sorted(int(port) for port in seen["listening"]) == seen["ports"], seen
    addresses = sorted({address for names in seen["listening"].values() for address in names})
    report(
        f"launch --workers 2: ports {seen['ports']} listen on {addresses} (TensorFlow's gRPC binds "
        "every interface whatever TF_CONFIG says; TF_CONFIG names 127.0.0.1)"
    )


HOLDING_SCRIPT = '''
import json, os, sys, time
import autodist
import tensorflow as tf

tf.distribute.get_strategy()  # MultiWorkerMirrored is created: every worker's server listens
config = json.loads(os.environ["TF_CONFIG"])
out = sys.argv[1]
if config["task"]["index"] == 0:
    ports = sorted(int(address.rsplit(":", 1)[1]) for address in config["cluster"]["worker"])
    with open(os.path.join(out, "ports.tmp"), "w") as handle:
        json.dump(ports, handle)
    os.rename(os.path.join(out, "ports.tmp"), os.path.join(out, "ports.json"))
deadline = time.monotonic() + 90
while not os.path.exists(os.path.join(out, "done")) and time.monotonic() < deadline:
    time.sleep(0.1)
'''


@pytest.mark.parametrize("isolate", [True, False], ids=["private-network", "no-isolate"])
def test_a_launched_jobs_ports_listen_only_inside_its_private_network(processes, tmp_path, report, isolate):
    """Read this process's listening sockets while a 2-worker job holds its servers up: none of
    the job's ports may listen here, unless --no-isolate. No traffic leaves the host."""
    import subprocess
    import sys

    from autodist.jobs.netns import PrivateNetwork

    network, why = PrivateNetwork.create()
    if network is None:
        pytest.skip(f"no network namespaces on this machine: {why}")
    network.close()
    script = tmp_path / "hold.py"
    script.write_text(HOLDING_SCRIPT)
    command = [sys.executable, "-m", "autodist", "launch", "--workers", "2", "--timeout", "120", "--grace", "3"]
    command += ([] if isolate else ["--no-isolate"]) + [str(script), str(tmp_path)]
    proc = subprocess.Popen(command, env=subprocess_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 100
        while not (tmp_path / "ports.json").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        ports = json.loads((tmp_path / "ports.json").read_text())
        time.sleep(1.0)  # worker 1's server is up too: it created the strategy with worker 0
        seen = listening(ports)
        (tmp_path / "done").write_text("")
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output[-3000:]
    if isolate:
        assert seen == {}, f"the job's ports {ports} listen in the launcher's network: {seen}"
    else:
        assert sorted(seen) == ports, seen
    where = "inside the job's private network only" if isolate else f"here, on {sorted({a for v in seen.values() for a in v})}"
    report(f"launch --workers 2{'' if isolate else ' --no-isolate'}: ports {ports} listen {where}")


BLOCKING_SCRIPT = '''
import json, os, sys, time
import autodist
import keras
import numpy as np

class Block(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 3 and json.loads(os.environ["TF_CONFIG"])["task"]["index"] == 1:
            print("blocking inside batch 3", flush=True)
            time.sleep(600)

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
x = np.random.default_rng(0).normal(size=(640, 4)).astype("float32")
autodist.fit(model, x, x[:, :1], batch_size=32, epochs=3, verbose=0, callbacks=[Block()], backup_dir=False)
'''


def test_a_worker_blocked_inside_a_batch_ends_the_job_within_the_stall_timeout(mostly_waits, tmp_path, report):
    import subprocess
    import sys

    script = tmp_path / "block.py"
    script.write_text(BLOCKING_SCRIPT)
    # above the first step's tracing and collective set-up on a loaded machine (the watchdog counts
    # from the fit's start), so the stall it catches is the block, not a slow start
    limit = 40
    command = [sys.executable, "-m", "autodist", "launch", "--workers", "2", "--timeout", "150", "--grace", "3"]
    command += ["--stall-timeout", str(limit), str(script)]
    proc = subprocess.Popen(command, env=subprocess_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    blocked_at, lines = None, []
    try:
        for line in proc.stdout:
            lines.append(line)
            if blocked_at is None and "blocking inside batch 3" in line:
                blocked_at = time.monotonic()
        proc.wait(timeout=60)
        ended = time.monotonic()
    finally:
        if proc.poll() is None:
            proc.kill()
    output = "".join(lines)
    assert blocked_at is not None, output[-3000:]
    assert proc.returncode == 125, output[-3000:]  # the stall watchdog's exit: not --timeout's 124
    assert "made no progress for" in output and f"--stall-timeout {limit}" in output
    # what ended the job: the watchdog, on a worker (the blocked one, or worker 0 waiting on it),
    # after the block, and nothing timed out
    assert re.search(r"\[launcher\] job failed after .*: worker [01] made no progress for \d+ s", output), output[-3000:]
    assert output.index("blocking inside batch 3") < output.index("made no progress for"), output[-3000:]
    assert "ran past --timeout" not in output
    report(f"stall watchdog: a worker blocked inside a batch; the launcher exited {ended - blocked_at:.1f} s later (--stall-timeout {limit}, --grace 3)")
