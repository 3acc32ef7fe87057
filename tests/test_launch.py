"""The launcher, with small scripts and no TensorFlow: prefixes, failures, restarts, timeouts."""

from __future__ import annotations

import io
import json
import time

import pytest

from autodist.cli import main
from autodist.errors import AutodistError
from autodist.launch import Launcher, host_plan, local_cluster, task_configs

TASK_SCRIPT = """
import json, os, signal, sys, time
config = json.loads(os.environ["TF_CONFIG"])
task = f"{config['task']['type']}-{config['task']['index']}"
attempt = int(os.environ["AUTODIST_LAUNCH_ATTEMPT"])
mode = sys.argv[1]
if mode == "gpus":
    print("gpus", repr(os.environ.get("CUDA_VISIBLE_DEVICES")), flush=True)
    sys.exit(0)
if mode == "files":
    print("files", os.environ["AUTODIST_HEARTBEAT_FILE"], os.environ["AUTODIST_BACKUP_DIR"], flush=True)
    sys.exit(0)
if mode == "stall":  # worker 1 beats three times, then hangs; worker 0 keeps beating
    beat = os.environ["AUTODIST_HEARTBEAT_FILE"]
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for step in range(1200):
        if task != "worker-1" or step < 3:
            open(beat, "a").close()
            os.utime(beat)
        time.sleep(0.1)
    sys.exit(0)
print("hello", task, "attempt", attempt, "backup", os.environ["AUTODIST_BACKUP_DIR"], flush=True)
if mode == "ok":
    sys.exit(0)
if mode == "save":  # as autodist.fit does: on SIGTERM, finish the step and save (1.5 s), exit 75
    signal.signal(signal.SIGTERM, lambda *_: (time.sleep(1.5), print("saved", flush=True), sys.exit(75)))
    time.sleep(120)
if mode == "fail-once" and task == "worker-1" and attempt == 0:
    sys.exit(3)
if mode == "fail" and task == "worker-1":
    print("worker 1 is about to fail", flush=True)
    sys.exit(3)
if mode in ("fail", "hang"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as TensorFlow does while it waits for peers
    time.sleep(120)
sys.exit(0)
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "task.py"
    path.write_text(TASK_SCRIPT)
    return str(path)


def run(script, mode, **kwargs):
    out = io.StringIO()
    launcher = Launcher(kwargs.pop("workers", 2), kwargs.pop("ps", 0), out=out, grace=kwargs.pop("grace", 1.0), **kwargs)
    start = time.monotonic()
    result = launcher.run(script, [mode])
    return result, out.getvalue(), time.monotonic() - start


def test_every_task_runs_with_its_own_tf_config_and_prefix(script):
    result, output, _ = run(script, "ok", workers=2, ps=1)
    assert result.exit_code == 0 and result.attempts == 1
    for task in ("chief 0", "worker 0", "worker 1", "ps 0"):
        name = task.replace(" ", "-")
        assert f"[{task}] hello {name} attempt 0" in output


def test_failure_stops_the_others_and_names_the_task(script):
    """worker 0 ignores SIGTERM: it must be SIGKILLed after the grace, not waited on for 120 s."""
    result, output, elapsed = run(script, "fail", grace=1.0)
    assert result.exit_code == 3
    assert result.failed_task == "worker 1" and result.failed_code == 3
    assert "worker 1 exited with code 3; stopped the other tasks" in output
    assert "[launcher]   worker 1 is about to fail" in output  # its last lines
    assert elapsed < 20


def test_restart_after_failure(script):
    result, output, _ = run(script, "fail-once", max_restarts=1)
    assert result.exit_code == 0 and result.attempts == 2
    assert "restarting the job: attempt 2 of 2" in output
    assert "[worker 1] hello worker-1 attempt 1" in output
    backups = {line.split("backup ")[1] for line in output.splitlines() if "backup " in line}
    assert len(backups) == 1, "every attempt must share one backup directory"


def test_timeout_bounds_a_hung_job(script):
    result, output, elapsed = run(script, "hang", timeout=2.0, grace=1.0)
    assert result.exit_code == 124
    assert "ran past --timeout 2 s" in output
    assert elapsed < 15


def test_distinct_ports_and_a_chief_first_when_there_are_ps_tasks():
    # What the tasks then listen on is read from the sockets in tests/test_multi_worker.py.
    spec = local_cluster(num_workers=3, num_ps=2)
    addresses = [a for group in spec.values() for a in group]
    assert len({a.rsplit(":", 1)[1] for a in addresses}) == len(addresses) == 6  # chief added for ps
    assert [c["task"] for c in task_configs(spec)][0] == {"type": "chief", "index": 0}


def test_dry_run_prints_copyable_tf_configs(capsys):
    assert main(["launch", "--workers", "2", "--dry-run", "--json", "train.py", "--epochs", "3"]) == 0
    tasks = json.loads(capsys.readouterr().out)["tasks"]
    assert [t["task"] for t in tasks] == ["worker 0", "worker 1"]
    assert tasks[1]["tf_config"]["task"] == {"type": "worker", "index": 1}
    assert tasks[0]["command"].endswith("train.py --epochs 3")


def test_hosts_plan(capsys):
    assert main(["launch", "--workers", "2", "--ps", "1", "--hosts", "h0,h1,h2,h3", "train.py"]) == 0
    text = capsys.readouterr().out
    assert "# chief 0 on h0" in text and "# ps 0 on h3" in text
    assert '"ps": ["h3:2222"]' in text


def test_hosts_count_must_match():
    with pytest.raises(AutodistError, match="names 2 host"):
        host_plan(["a", "b"], 3, 0, "train.py", [])


def test_missing_script():
    with pytest.raises(AutodistError, match="does not exist"):
        Launcher(2).run("/nonexistent/train.py", [])


def test_terminating_the_launcher_stops_its_tasks(script, tmp_path):
    assert not tasks_outlive_the_launcher(script, grace=1, signals=1), "tasks outlived a terminated launcher"


def test_a_task_that_stops_making_progress_ends_the_job(script):
    result, output, elapsed = run(script, "stall", stall_timeout=2.0, grace=1.0)
    assert result.exit_code == 125 and result.failed_task == "worker 1", output[-2000:]
    assert "worker 1 made no progress for" in output and "--stall-timeout 2" in output
    assert "[launcher] last lines of worker 1:" in output
    assert elapsed < 15


def test_each_local_worker_gets_its_own_gpus(script, monkeypatch, capsys):
    """Two GPUs through the one probe (NVML): two workers get one each, three get an error."""
    from autodist import hardware
    from autodist.hardware import GpuInfo

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(hardware, "nvml_gpus", lambda: [GpuInfo("NVIDIA A100", 40 * 2**30, "8.0")] * 2)
    assert main(["launch", "--workers", "2", "--dry-run", "--json", "train.py"]) == 0
    tasks = json.loads(capsys.readouterr().out)["tasks"]
    assert [t["env"] for t in tasks] == [{"CUDA_VISIBLE_DEVICES": "0"}, {"CUDA_VISIBLE_DEVICES": "1"}]
    assert main(["launch", "--workers", "2", "--dry-run", "train.py"]) == 0
    assert "CUDA_VISIBLE_DEVICES=1 TF_CONFIG=" in capsys.readouterr().out
    assert main(["launch", "--workers", "3", "--dry-run", "train.py"]) == 2
    err = capsys.readouterr().err
    assert "3 workers cannot share 2 GPUs" in err and "--workers 1 or 2" in err
    result, output, _ = run(script, "gpus", workers=2, ps=1)
    assert result.exit_code == 0, output
    for line in ("[worker 0] gpus '0'", "[worker 1] gpus '1'", "[chief 0] gpus ''", "[ps 0] gpus ''"):
        assert line in output


def test_the_launchers_files_are_private_to_the_user(script):
    import os
    import stat

    from autodist.callbacks import default_backup_root, private_root, release_private_root
    from autodist.cluster import ClusterInfo

    result, output, _ = run(script, "files")
    assert result.exit_code == 0, output
    beat, backup = next(line for line in output.splitlines() if "] files " in line).split()[-2:]
    job = os.path.dirname(beat)
    assert os.path.dirname(job) == private_root() and os.path.dirname(backup) == private_root()
    assert os.path.basename(backup).startswith("launch-"), "one backup folder per command, so a new start resumes"
    root = os.stat(private_root())
    assert stat.S_IMODE(root.st_mode) == 0o700 and root.st_uid == os.getuid()
    assert not os.path.exists(job), "the job's folder is removed at the end"
    assert not os.path.exists(backup), "an empty backup folder is removed at the end"
    again, output, _ = run(script, "files")
    assert next(line for line in output.splitlines() if "] files " in line).split()[-1] == backup, "the same command, the same backups"
    assert not os.path.exists(backup + ".lock")
    cluster = ClusterInfo("TF_CONFIG", "worker", 0, {"worker": ["h:1", "h:2"]})
    assert os.path.dirname(default_backup_root(cluster, {})) == private_root()
    release_private_root()  # removed when empty: autodist leaves no empty folder behind


def test_the_same_command_launched_twice_at_once_is_refused(script):
    """Two launches of one command would share the default backup folder."""
    from autodist.job_layout import JobFiles
    from autodist.launch import JobSpec

    spec = JobSpec(2, isolate=False)
    first = JobFiles.create(spec, {}, print, [script, "ok"])
    try:
        with pytest.raises(AutodistError, match="is already running.*Pass --backup-dir"):
            JobFiles.create(spec, {}, print, [script, "ok"])
        other = JobFiles.create(JobSpec(2, isolate=False, backup_dir=first.folder + "-mine"), {}, print, [script, "ok"])
        other.close()
    finally:
        first.close()
    again = JobFiles.create(spec, {}, print, [script, "ok"])  # free once the first has ended
    again.close()


def test_a_second_signal_during_shutdown_still_ends_every_task(script):
    """Two SIGTERMs 0.3 s apart: the second arrives while the launcher waits out the grace for
    tasks that ignore SIGTERM, and every task must still be killed."""
    assert not tasks_outlive_the_launcher(script, grace=2, signals=2), "a second signal during shutdown left tasks running"


def tasks_outlive_the_launcher(script: str, *, grace: float, signals: int) -> bool:
    """Run ``launch --workers 2`` on tasks that ignore SIGTERM, send the launcher ``signals``
    SIGTERMs (0.3 s apart) once both tasks run, and tell whether any task is alive 10 s after
    the launcher ended."""
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT, subprocess_env

    launcher = subprocess.Popen(
        [sys.executable, "-m", "autodist", "launch", "--workers", "2", "--grace", str(grace), script, "hang"],
        env=subprocess_env(), stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        hellos = 0
        while hellos < 2:
            line = launcher.stdout.readline()
            assert line, "the launcher ended early"
            hellos += "hello" in line
        time.sleep(0.5)
        for index in range(signals):
            time.sleep(0.3 if index else 0)
            launcher.send_signal(signal.SIGTERM)
        launcher.wait(timeout=20)
        deadline = time.monotonic() + 10
        alive = True
        while alive and time.monotonic() < deadline:
            alive = subprocess.run(["pgrep", "-f", f"{script} hang"], capture_output=True).returncode == 0
            time.sleep(0.2)
        return alive
    finally:
        if launcher.poll() is None:
            launcher.kill()
        subprocess.run(["pkill", "-9", "-f", f"{script} hang"])


def test_a_terminated_launcher_waits_for_its_tasks_to_save_their_step(script):
    """SIGTERM to the launcher reaches every task; tasks that take 1.5 s to save are waited for
    (the grace, 30 s by default), not killed, and the launcher says who saved."""
    import signal
    import subprocess
    import sys

    from autodist.launch import DEFAULT_GRACE
    from tests.conftest import ROOT, subprocess_env

    assert DEFAULT_GRACE >= 30, "a task must get time to finish its step and save it"
    launcher = subprocess.Popen(
        [sys.executable, "-m", "autodist", "launch", "--workers", "2", "--timeout", "60", script, "save"],
        env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )
    try:
        lines = []
        while sum("hello" in line for line in lines) < 2:
            lines.append(launcher.stdout.readline())
            assert lines[-1], "the launcher ended early: " + "".join(lines)
        time.sleep(0.3)
        sent = time.monotonic()
        launcher.send_signal(signal.SIGTERM)
        output = "".join(lines) + launcher.communicate(timeout=30)[0]
        elapsed = time.monotonic() - sent
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert launcher.returncode == 128 + signal.SIGTERM, output
    assert "[worker 0] saved" in output and "[worker 1] saved" in output, output
    assert "[launcher] worker 0, worker 1 saved their step (exit 75); the next start resumes there" in output
    assert 1.5 <= elapsed < 10, f"the launcher ended {elapsed:.1f} s after SIGTERM"


def test_after_a_task_failed_a_stuck_peer_gets_the_short_grace(script):
    """A failed task leaves its peers waiting on it, with nothing to save: they are killed
    after at most FAILURE_GRACE, whatever --grace says."""
    from autodist.launch import FAILURE_GRACE

    result, output, elapsed = run(script, "fail", grace=60.0)
    assert result.exit_code == 3 and result.failed_task == "worker 1", output[-2000:]
    assert elapsed < FAILURE_GRACE + 5, f"the job took {elapsed:.1f} s to stop after a task failed"


def test_without_namespaces_the_launcher_says_so_once_and_carries_on(script, monkeypatch):
    from autodist.netns import PrivateNetwork

    monkeypatch.setattr(PrivateNetwork, "create", classmethod(lambda cls, timeout=30.0: (None, "no namespaces here")))
    result, output, _ = run(script, "fail-once", max_restarts=1)
    assert result.exit_code == 0 and result.attempts == 2, output
    assert output.count("no private network for this job (no namespaces here)") == 1
    assert "listen on every interface" in output and "--no-isolate silences this" in output


def test_a_custom_loop_beats_with_autodist_beat_and_stops_being_watched(tmp_path):
    import os

    import autodist

    path = str(tmp_path / "task.beat")
    autodist.beat({"AUTODIST_HEARTBEAT_FILE": path})
    first = os.stat(path).st_mtime_ns
    time.sleep(0.02)
    autodist.beat({"AUTODIST_HEARTBEAT_FILE": path})
    assert os.stat(path).st_mtime_ns > first, "each beat moves the heartbeat on"
    autodist.beat({"AUTODIST_HEARTBEAT_FILE": path}, done=True)
    assert not os.path.exists(path), "after training the task is not watched"


def test_a_stall_limit_shorter_than_a_heartbeat_is_refused():
    with pytest.raises(AutodistError, match="--stall-timeout must be at least 2 s.*Received: 0.5"):
        Launcher(2, stall_timeout=0.5)
