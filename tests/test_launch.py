"""The launcher, with small scripts and no TensorFlow: prefixes, failures, restarts, timeouts."""

from __future__ import annotations

import io
import json
import os
import threading
import time

import pytest

from autodist.cli import main
from autodist.errors import AutodistError
from autodist.jobs.job_layout import host_plan, local_cluster, task_configs
from autodist.jobs.launch import Launcher

TASK_SCRIPT = """
import json, os, signal, sys, time
config = json.loads(os.environ["TF_CONFIG"])
task = f"{config['task']['type']}-{config['task']['index']}"
attempt = int(os.environ["AUTODIST_LAUNCH_ATTEMPT"])
mode = sys.argv[1]
if mode == "hang":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # first thing: the launcher's SIGTERM finds it ignored
if mode == "gpus":
    print("gpus", repr(os.environ.get("CUDA_VISIBLE_DEVICES")), flush=True)
    sys.exit(0)
if mode == "files":
    print("files", os.environ["AUTODIST_HEARTBEAT_FILE"], os.environ["AUTODIST_BACKUP_DIR"], flush=True)
    sys.exit(0)
if mode == "child":  # the task's fit beats; a child of it beats, then ends its fit, as autodist.fit does
    import subprocess, types
    from autodist.jobs.heartbeat import heartbeat
    beat = os.environ["AUTODIST_HEARTBEAT_FILE"]
    keras = types.SimpleNamespace(callbacks=types.SimpleNamespace(Callback=object))
    fit = heartbeat(keras)  # the callback autodist.fit adds
    fit.on_train_begin()
    print("after its first beat", os.path.exists(beat), flush=True)
    child = "import types, autodist; from autodist.jobs.heartbeat import heartbeat; "
    child += "keras = types.SimpleNamespace(callbacks=types.SimpleNamespace(Callback=object)); "
    child += "print('child callback', heartbeat(keras)); autodist.beat(); autodist.beat(done=True)"
    subprocess.run([sys.executable, "-c", child], check=True)
    print("after the child's fit", os.path.exists(beat), flush=True)
    fit.on_train_end()
    print("after its own fit", os.path.exists(beat), flush=True)
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
    print("ready to save", flush=True)
    time.sleep(120)
if mode == "fail-once" and task == "worker-1" and attempt == 0:
    sys.exit(3)
if mode == "fail-always":
    sys.exit(3)
ignoring = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker-0-ignores-sigterm")
if mode == "fail" and task == "worker-1":
    for _ in range(1200):  # until worker 0 ignores SIGTERM: the launcher's SIGTERM must meet that, however loaded the machine
        if os.path.exists(ignoring):
            break
        time.sleep(0.05)
    print("worker 1 is about to fail", flush=True)
    sys.exit(3)
if mode in ("fail", "hang"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as TensorFlow does while it waits for peers
    if task == "worker-0":
        open(ignoring, "w").close()
    time.sleep(120)
sys.exit(0)
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "task.py"
    path.write_text(TASK_SCRIPT)
    return str(path)


#: How long any launcher test may take to end: a bound on "the launcher exits", not a duration to check.
ENDS_WITHIN = 120


def run(script, mode, **kwargs):
    """``(result, output)`` of a launch of ``script mode``; the launcher must end within
    :data:`ENDS_WITHIN` s (it runs in a thread, so a hang fails the test instead of hanging it)."""
    out = io.StringIO()
    launcher = Launcher(kwargs.pop("workers", 2), kwargs.pop("ps", 0), out=out, grace=kwargs.pop("grace", 1.0), **kwargs)
    ended: list = []
    thread = threading.Thread(target=lambda: ended.append(_outcome(launcher.run, script, [mode])), daemon=True)
    thread.start()
    thread.join(ENDS_WITHIN)
    assert ended, f"the launcher did not end within {ENDS_WITHIN} s: {out.getvalue()[-2000:]}"
    if isinstance(ended[0], BaseException):
        raise ended[0]
    return ended[0], out.getvalue()


def _outcome(function, *args):
    try:
        return function(*args)
    except BaseException as err:  # re-raised in the test's thread
        return err


def test_every_task_runs_with_its_own_tf_config_and_prefix(processes, script):
    result, output = run(script, "ok", workers=2, ps=1)
    assert result.exit_code == 0 and result.attempts == 1
    for task in ("chief 0", "worker 0", "worker 1", "ps 0"):
        name = task.replace(" ", "-")
        assert f"[{task}] hello {name} attempt 0" in output


def test_failure_stops_the_others_and_names_the_task(processes, script):
    """worker 0 ignores SIGTERM: it must be SIGKILLed after the grace, not waited on for 120 s."""
    result, output = run(script, "fail", grace=1.0)
    assert result.exit_code == 3
    assert result.failed_task == "worker 1" and result.failed_code == 3
    assert "worker 1 exited with code 3; stopped the other tasks" in output
    assert "[launcher]   worker 1 is about to fail" in output  # its last lines
    assert "[launcher] worker 0 did not exit within --grace 1 s of SIGTERM: killed" in output


def test_restart_after_failure(processes, script):
    result, output = run(script, "fail-once", max_restarts=1)
    assert result.exit_code == 0 and result.attempts == 2
    assert "restarting the job in 1 s: attempt 2 of 2" in output
    assert "[worker 1] hello worker-1 attempt 1" in output
    backups = {line.split("backup ")[1] for line in output.splitlines() if "backup " in line}
    assert len(backups) == 1, "every attempt must share one backup directory"


def test_restarts_back_off_1_2_4_seconds_up_to_30(processes, script):
    """A job that fails at once is not restarted in a tight loop: the launcher waits 1 s, 2 s,
    4 s, ... at most 30 s between attempts (a recording sleep: the test takes no real seconds)."""
    from autodist.jobs.launch import RESTART_DELAY_MAX

    waits: list[float] = []
    result, output = run(script, "fail-always", workers=1, max_restarts=6, sleep=waits.append)
    assert result.exit_code == 3 and result.attempts == 7, output[-2000:]
    assert waits == [1, 2, 4, 8, 16, RESTART_DELAY_MAX], waits
    for attempt, wait in enumerate(waits, start=2):
        assert f"[launcher] restarting the job in {wait:g} s: attempt {attempt} of 7" in output


def test_the_wait_before_a_restart_ends_at_the_timeout(processes, script):
    """--timeout bounds the waits too: a wait is cut to what is left of the 4 s, and the job then
    ends as timed out, with no attempt started past the deadline."""
    waits: list[float] = []

    def sleep(seconds):
        waits.append(seconds)
        time.sleep(seconds)

    # 4 s: room for an attempt's start on a loaded machine before the first wait (each attempt
    # is a Python process in its own network namespace)
    result, output = run(script, "fail-always", workers=1, max_restarts=10, timeout=4.0, sleep=sleep)
    assert result.exit_code == 124 and result.state.value == "timed_out", output[-2000:]
    assert waits and waits[0] <= 1 and sum(waits) <= 4.0, waits  # each wait at most what is left
    assert "ran past --timeout 4 s" in output
    assert "attempt 11" not in output and len(waits) < 10, "the timeout ended the restarts"


def test_a_signal_during_the_wait_before_a_restart_ends_the_launcher(processes, script):
    """SIGTERM while the launcher waits to restart: it ends at once (Terminated), as anywhere
    else, and starts no further attempt."""
    import signal

    from autodist.jobs import launch

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are installed from the main thread only")

    def sleep(seconds):
        os.kill(os.getpid(), signal.SIGTERM)  # handled within the real sleep, which it ends
        time.sleep(60)

    out = io.StringIO()
    with pytest.raises(launch.Terminated):
        Launcher(1, out=out, grace=1.0, max_restarts=3, sleep=sleep).run(script, ["fail-always"])
    assert "restarting the job in 1 s: attempt 2 of 4" in out.getvalue()
    assert "hello worker-0 attempt 0" in out.getvalue() and "hello worker-0 attempt 1" not in out.getvalue(), "no second attempt"


def test_timeout_bounds_a_hung_job(processes, script):
    """The tasks ignore SIGTERM and sleep 120 s: the job ends at --timeout, the tasks killed."""
    result, output = run(script, "hang", timeout=5.0, grace=1.0)  # 5 s: both tasks ignore SIGTERM by then, even loaded
    assert result.exit_code == 124 and result.state.value == "timed_out"
    assert "ran past --timeout 5 s" in output
    assert "worker 0 did not exit within --grace 1 s of SIGTERM: killed" in output
    assert "worker 1 did not exit within --grace 1 s of SIGTERM: killed" in output


def test_distinct_ports_and_a_chief_first_when_there_are_ps_tasks():
    # What the tasks then listen on is read from the sockets in tests/test_multi_worker.py.
    spec = local_cluster(num_workers=3, num_ps=2)
    addresses = [a for group in spec.values() for a in group]
    assert len({a.rsplit(":", 1)[1] for a in addresses}) == len(addresses) == 6  # chief added for ps
    assert [c["task"] for c in task_configs(spec)][0] == {"type": "chief", "index": 0}


def test_dry_run_prints_copyable_tf_configs(script, capsys):
    assert main(["launch", "--workers", "2", "--dry-run", "--json", script, "--epochs", "3"]) == 0
    tasks = json.loads(capsys.readouterr().out)["tasks"]
    assert [t["task"] for t in tasks] == ["worker 0", "worker 1"]
    assert tasks[1]["tf_config"]["task"] == {"type": "worker", "index": 1}
    assert tasks[0]["command"].endswith(f"{script} --epochs 3")


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


def test_terminating_the_launcher_stops_its_tasks(processes, script, tmp_path):
    assert not tasks_outlive_the_launcher(script, grace=1, signals=1), "tasks outlived a terminated launcher"


def test_a_task_that_stops_making_progress_ends_the_job(processes, script):
    result, output = run(script, "stall", stall_timeout=2.0, grace=1.0)
    assert result.exit_code == 125 and result.failed_task == "worker 1", output[-2000:]
    assert "worker 1 made no progress for" in output and "--stall-timeout 2" in output
    assert "[launcher] last lines of worker 1:" in output


def test_each_local_worker_gets_its_own_gpus(processes, script, monkeypatch, capsys):
    """Two GPUs through the one probe (NVML): two workers get one each, three get an error."""
    from autodist.detection import hardware
    from autodist.detection.hardware import GpuInfo

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(hardware, "nvml_gpus", lambda: [GpuInfo("NVIDIA A100", 40 * 2**30, "8.0")] * 2)
    assert main(["launch", "--workers", "2", "--dry-run", "--json", script]) == 0
    tasks = json.loads(capsys.readouterr().out)["tasks"]
    assert [t["env"] for t in tasks] == [{"CUDA_VISIBLE_DEVICES": "0"}, {"CUDA_VISIBLE_DEVICES": "1"}]
    assert main(["launch", "--workers", "2", "--dry-run", script]) == 0
    assert "CUDA_VISIBLE_DEVICES=1 TF_CONFIG=" in capsys.readouterr().out
    assert main(["launch", "--workers", "3", "--dry-run", script]) == 2
    err = capsys.readouterr().err
    assert "3 workers cannot share 2 GPUs" in err and "--workers 1 or 2" in err
    result, output = run(script, "gpus", workers=2, ps=1)
    assert result.exit_code == 0, output
    for line in ("[worker 0] gpus '0'", "[worker 1] gpus '1'", "[chief 0] gpus ''", "[ps 0] gpus ''"):
        assert line in output


def test_the_launchers_files_live_in_the_users_private_folder_and_go_at_the_end(processes, script):
    """Where the job's files go (tests/test_validation.py checks that the private folder is one
    nobody else can make or read)."""
    from autodist.jobs.private import default_backup_root, private_root, release_private_root
    from autodist.detection.cluster import ClusterInfo

    result, output = run(script, "files")
    assert result.exit_code == 0, output
    beat, backup = next(line for line in output.splitlines() if "] files " in line).split()[-2:]
    job = os.path.dirname(beat)
    assert os.path.dirname(job) == private_root() and os.path.dirname(backup) == private_root()
    assert os.path.basename(backup).startswith("launch-"), "one backup folder per command, so a new start resumes"
    assert not os.path.exists(job), "the job's folder is removed at the end"
    assert not os.path.exists(backup), "an empty backup folder is removed at the end"
    again, output = run(script, "files")
    assert next(line for line in output.splitlines() if "] files " in line).split()[-1] == backup, "the same command, the same backups"
    assert not os.path.exists(backup + ".lock")
    cluster = ClusterInfo("TF_CONFIG", "worker", 0, {"worker": ["h:1", "h:2"]})
    assert os.path.dirname(default_backup_root(cluster, {})) == private_root()
    release_private_root()  # removed when empty: autodist leaves no empty folder behind


def test_the_same_command_launched_twice_at_once_is_refused(script):
    """Two launches of one command would share the default backup folder."""
    from autodist.jobs.job_layout import JobFiles
    from autodist.jobs.launch import JobSpec

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


def test_a_second_signal_during_shutdown_still_ends_every_task(processes, script):
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


def test_a_terminated_launcher_waits_for_its_tasks_to_save_their_step(processes, script):
    """SIGTERM to the launcher reaches every task; tasks that take 1.5 s to save are waited for
    (the grace, 30 s by default), not killed, and the launcher says who saved."""
    import signal
    import subprocess
    import sys

    from autodist.jobs.launch import DEFAULT_GRACE
    from tests.conftest import ROOT, subprocess_env

    assert DEFAULT_GRACE >= 30, "a task must get time to finish its step and save it"
    launcher = subprocess.Popen(
        [sys.executable, "-m", "autodist", "launch", "--workers", "2", "--timeout", "60", script, "save"],
        env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )
    try:
        lines = []
        while sum("ready to save" in line for line in lines) < 2:  # both handle SIGTERM now
            lines.append(launcher.stdout.readline())
            assert lines[-1], "the launcher ended early: " + "".join(lines)
        launcher.send_signal(signal.SIGTERM)
        output = "".join(lines) + launcher.communicate(timeout=ENDS_WITHIN)[0]
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert launcher.returncode == 128 + signal.SIGTERM, output
    assert "[worker 0] saved" in output and "[worker 1] saved" in output, output
    assert "[launcher] worker 0, worker 1 exited 75 (preempted: each says whether it saved a step)" in output
    assert "did not exit within --grace" not in output, "a task saving its step was killed: " + output


def test_after_a_task_failed_a_stuck_peer_gets_the_short_grace(processes, script):
    """A failed task leaves its peers waiting on it, with nothing to save: they are killed
    after at most FAILURE_GRACE, whatever --grace says."""
    from autodist.jobs.launch import FAILURE_GRACE

    result, output = run(script, "fail", grace=60.0)
    assert result.exit_code == 3 and result.failed_task == "worker 1", output[-2000:]
    assert f"worker 0 did not exit within --grace {FAILURE_GRACE:g} s of SIGTERM: killed" in output, output[-2000:]


def test_without_namespaces_the_launcher_says_so_once_and_carries_on(processes, script, monkeypatch):
    from autodist.jobs.netns import PrivateNetwork

    monkeypatch.setattr(PrivateNetwork, "create", classmethod(lambda cls, timeout=30.0: (None, "no namespaces here")))
    result, output = run(script, "fail-once", max_restarts=1)
    assert result.exit_code == 0 and result.attempts == 2, output
    assert output.count("no private network for this job (no namespaces here)") == 1
    assert "listen on every interface" in output and "--no-isolate silences this" in output


def test_a_custom_loop_beats_with_autodist_beat_and_stops_being_watched():
    """As the task a launcher started: the launcher names a file for its child (here, for this
    process: the name carries this process's parent)."""
    import shutil
    import tempfile

    import autodist
    from autodist.jobs.private import private_root, release_private_root
    from autodist.jobs.heartbeat import heartbeat_path

    folder = tempfile.mkdtemp(prefix="job-", dir=private_root())
    try:
        env = {"AUTODIST_HEARTBEAT_FILE": heartbeat_path(folder, 0, "worker 0", launcher_pid=os.getppid())}
        path = env["AUTODIST_HEARTBEAT_FILE"]
        autodist.beat(env)
        first = os.stat(path).st_mtime_ns
        time.sleep(0.02)
        autodist.beat(env)
        assert os.stat(path).st_mtime_ns > first, "each beat moves the heartbeat on"
        autodist.beat(env, done=True)
        assert not os.path.exists(path), "after training the task is not watched"
    finally:
        shutil.rmtree(folder)
        release_private_root()


@pytest.mark.parametrize(
    "flag, value, expected",
    [
        ("--timeout", "nan", ["launch: --timeout must be a finite number of seconds, above 0 and at most 604800", "(Received: --timeout nan)"]),
        ("--timeout", "inf", ["(Received: --timeout inf)", "leave it out for no limit"]),
        ("--timeout", "1e400", ["(Received: --timeout 1e400)"]),
        ("--timeout", "604801", ["at most 604800 (a week", "(Received: --timeout 604801)"]),
        ("--timeout", "0", ["(Received: --timeout 0)"]),
        ("--stall-timeout", "nan", ["--stall-timeout must be a finite number of seconds, at least 2 and at most 604800", "(Received: --stall-timeout nan)"]),
        ("--stall-timeout", "inf", ["(Received: --stall-timeout inf)", "or 0 to turn the watchdog off"]),
        ("--stall-timeout", "-5", ["(Received: --stall-timeout -5)"]),
        ("--stall-timeout", "0.5", ["at least 2 and at most", "(Received: --stall-timeout 0.5)", "Tasks beat at most once a second"]),
        ("--grace", "-3", ["--grace must be a finite number of seconds, above 0", "(Received: --grace -3)", "before SIGKILL"]),
        ("--grace", "0", ["(Received: --grace 0)"]),
        ("--grace", "nan", ["(Received: --grace nan)"]),
        ("--grace", "inf", ["(Received: --grace inf)"]),
        ("--grace", "1e400", ["(Received: --grace 1e400)"]),
    ],
)  # fmt: skip
def test_a_limit_that_is_not_a_finite_positive_number_of_seconds_is_refused(flag, value, expected, capsys):
    """nan made every comparison false, so --timeout nan and --stall-timeout nan turned the limits
    off, and --grace -3 SIGKILLed at once; they are refused before anything starts."""
    assert main(["launch", "--workers", "2", flag, value, "/nonexistent/train.py"]) == 2
    err = capsys.readouterr().err
    assert all(part in err for part in expected), err
    with pytest.raises(AutodistError, match=flag):
        Launcher(2, **{flag.lstrip("-").replace("-", "_"): float(value)})


def test_a_heartbeat_path_outside_the_launchers_folder_is_never_touched(tmp_path):
    """AUTODIST_HEARTBEAT_FILE naming a precious file (or any file the launcher did not name
    in its private folder): fit and beat neither touch nor remove it, and say so once."""
    import types
    import warnings

    import autodist
    from autodist.jobs.private import private_root, release_private_root
    from autodist.jobs.heartbeat import heartbeat
    from autodist.errors import AutodistWarning

    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    os.utime(precious, (1_000_000, 1_000_000))
    inside = os.path.join(private_root(), f"attempt-0-worker-0.{os.getppid()}.beat")  # not in a job folder
    (tmp_path / "job-x").mkdir(mode=0o700)
    outside = tmp_path / "job-x" / f"attempt-0-worker-0.{os.getppid()}.beat"  # a launcher's name, elsewhere
    outside.write_text("")
    stub = types.SimpleNamespace(callbacks=types.SimpleNamespace(Callback=object))
    for path in (str(precious), inside, str(outside)):
        env = {"AUTODIST_HEARTBEAT_FILE": path}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert heartbeat(stub, environ=env) is None, "no heartbeat callback for fit"
            autodist.beat(env)
            autodist.beat(env, done=True)
        assert [str(w.message).split(":")[0] for w in caught if w.category is AutodistWarning] == [
            f"autodist ignores AUTODIST_HEARTBEAT_FILE={path!r}"
        ], "one warning"
    assert precious.read_text() == "keep me" and os.stat(precious).st_mtime == 1_000_000, "never touched"
    assert not os.path.exists(inside) and outside.exists()
    release_private_root()


def test_a_childs_fit_does_not_remove_its_tasks_heartbeat(processes, script, monkeypatch):
    """Children inherit AUTODIST_HEARTBEAT_FILE: a child's fit (its heartbeat callback, and
    beat(done=True) as fit's end does) must leave the task's heartbeat alone."""
    from tests.conftest import ROOT

    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the tasks import this checkout's autodist
    result, output = run(script, "child", workers=1)
    assert result.exit_code == 0, output
    assert "[worker 0] after its first beat True" in output, output
    assert "[worker 0] child callback None" in output, output
    assert "[worker 0] after the child's fit True" in output, output
    assert "[worker 0] after its own fit False" in output, output


def test_a_heartbeat_that_goes_away_during_the_stall_check_is_read_once(tmp_path):
    """The stall check read the heartbeat's age twice; removed in between (the task ended its
    fit), the second read was None and formatting it crashed the launcher."""
    import types

    from autodist.jobs.launch import JobState, _Task

    class Vanishing(_Task):
        reads = 0

        def silent_for(self):
            self.reads += 1
            return 100.0 if self.reads == 1 else None  # removed right after the first read

    process = types.SimpleNamespace(poll=lambda: None, returncode=None)
    task = Vanishing("worker 1", {}, process, str(tmp_path / "gone.beat"))
    outcome = Launcher(2, stall_timeout=2.0, out=io.StringIO())._watch([task], None)
    assert outcome.state == JobState.STALLED and outcome.failed is task
    assert outcome.reason.startswith("worker 1 made no progress for 100 s (--stall-timeout 2)")


def test_a_signal_while_a_task_starts_still_stops_that_task(processes, script, monkeypatch):
    """SIGTERM reaches the launcher inside Popen, after the task started but before the launcher
    recorded it: the task (in its own session, out of reach of the terminal) is stopped too."""
    import signal
    import subprocess

    from autodist.jobs import launch

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are installed from the main thread only")
    started = []

    def popen_then_signal(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        if len(started) == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # handled before this returns
        return started[-1]

    real_popen = subprocess.Popen
    monkeypatch.setattr(launch.subprocess, "Popen", popen_then_signal)
    try:
        with pytest.raises(launch.Terminated):
            Launcher(2, out=io.StringIO(), grace=1.0, isolate=False).run(script, ["hang"])
        assert len(started) == 1 and started[0].poll() is not None, "the task outlived the launcher"
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()


def test_a_commands_lock_holds_after_the_first_launch_ends(script, monkeypatch):
    """The first launch removes its lock file as it ends. A second launch that opened that file
    just before then locked the removed file, and a third a new one: both ran. Now the second
    sees that the path no longer names the file it locked, and locks the one there."""
    import fcntl

    from autodist.jobs.job_layout import JobFiles
    from autodist.jobs.launch import JobSpec

    spec = JobSpec(2, isolate=False)
    first = JobFiles.create(spec, {}, print, [script, "ok"])
    real_flock, ended = fcntl.flock, []

    def flock_once_the_first_has_ended(descriptor, operation):  # the second opened the file; now the first ends
        if not ended:
            ended.append(first.close())
        return real_flock(descriptor, operation)

    monkeypatch.setattr(fcntl, "flock", flock_once_the_first_has_ended)
    second = JobFiles.create(spec, {}, print, [script, "ok"])
    monkeypatch.setattr(fcntl, "flock", real_flock)
    try:
        assert ended, "the first launch ended between the second's open and its lock"
        with pytest.raises(AutodistError, match="is already running"):
            JobFiles.create(spec, {}, print, [script, "ok"]).close()  # a third, while the second runs
    finally:
        second.close()
    JobFiles.create(spec, {}, print, [script, "ok"]).close()  # free once the second has ended
    assert not os.path.exists(second.backup_dir + ".lock"), "nothing left behind"


def test_ports_are_picked_free_on_every_interface():
    """TensorFlow's gRPC server binds 0.0.0.0/:: whatever TF_CONFIG names: a port held on another
    address (127.0.0.2, or IPv6) fails it. The picker checked 127.0.0.1 only, and picked a few of
    200 such ports in each of 200 picks."""
    import socket

    from autodist.jobs.job_layout import free_ports

    held = []
    try:
        for _ in range(200):
            held.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            held[-1].bind(("127.0.0.2", 0))
        if socket.has_ipv6:
            try:
                for _ in range(200):
                    held.append(socket.socket(socket.AF_INET6, socket.SOCK_STREAM))
                    held[-1].setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                    held[-1].bind(("::1", 0))
            except OSError:
                held.pop().close()  # no IPv6 loopback here
        taken = {sock.getsockname()[1] for sock in held}
        for _ in range(3):
            picked = free_ports(200)
            assert len(set(picked)) == 200 and not taken & set(picked), sorted(taken & set(picked))
    finally:
        for sock in held:
            sock.close()
