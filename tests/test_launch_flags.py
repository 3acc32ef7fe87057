"""``python -m autodist launch`` checks every flag before anything starts (issue 34): one
ArgumentError, one line on stderr, exit code 2, and no process, folder or file made. Pure Python:
the code under test imports no TensorFlow (the suite's conftest imports it for every test)."""

from __future__ import annotations

import collections
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodist.cli import main
from autodist.errors import ArgumentError
from autodist.fields import MAX_WAIT_SECONDS
from autodist.jobs.job_layout import check_hosts
from autodist.jobs.launch import (
    RESTART_DELAY_FIRST,
    RESTART_DELAY_MAX,
    JobSpec,
    Launcher,
    restart_delay,
)
from autodist.jobs.launch_flags import (
    LAUNCHER_FDS,
    TASK_FDS,
    TASK_MEMORY_BYTES,
    TASK_THREADS,
    MachineLimits,
    check_backup_dir,
    max_local_tasks,
    received,
)

GIB = 2**30
#: A script that, if any task ever ran, would leave a marker file beside itself.
MARKER_SCRIPT = "import pathlib, sys\npathlib.Path(sys.argv[1]).write_text('a task ran')\n"


def launch(*argv: str) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of ``python -m autodist launch ARGV``, run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["launch", *argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def paths(tmp_path):
    """A script, a folder, a plain file and a missing path, in a fresh folder."""
    script = tmp_path / "train.py"
    script.write_text(MARKER_SCRIPT)
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.txt").write_text("not a folder")
    return {"script": str(script), "folder": str(tmp_path / "folder"), "file": str(tmp_path / "file.txt"), "missing": str(tmp_path / "missing" / "x.py")}


# ----------------------------------------------------------------------------- (a) each bad flag kind

BAD_FLAGS = [
    ("--workers", "0"), ("--workers", "-2"), ("--workers", "two"), ("--workers", "2.5"), ("--workers", ""), ("--workers", "1e3"),
    ("--ps", "-1"), ("--ps", "x"), ("--ps", "0.5"),
    ("--max-restarts", "-1"), ("--max-restarts", "once"),
    ("--timeout", "nan"), ("--timeout", "inf"), ("--timeout", "-inf"), ("--timeout", "1e400"), ("--timeout", "0"), ("--timeout", "-1"),
    ("--timeout", "604801"), ("--timeout", "soon"),
    ("--grace", "0"), ("--grace", "nan"), ("--grace", "1e400"), ("--grace", "-3"),
    ("--stall-timeout", "1"), ("--stall-timeout", "nan"), ("--stall-timeout", "inf"), ("--stall-timeout", "1e400"),
    ("--hosts", "a,,b"), ("--hosts", "h0:22,h1:22"), ("--hosts", "[::1]:22,h1"), ("--hosts", "a_b,c"), ("--hosts", "-a,b"),
    ("--hosts", "256.1.1.1,h1"), ("--hosts", ""), ("--hosts", "h0,h1,h2"), ("--hosts", "h0,H0"), ("--hosts", "a..b,c"),
    ("--hosts", "x\ny,z"),
]  # fmt: skip


@pytest.mark.parametrize("flag, value", BAD_FLAGS)
def test_each_bad_flag_is_refused_in_one_line_naming_it_and_its_value(flag, value, paths):
    code, out, err = launch("--workers=2", f"{flag}={value}", paths["script"])
    assert code == 2 and out == "", (out, err)
    assert len(err.splitlines()) == 1 and err.endswith("\n") and "Traceback" not in err, err
    assert err.startswith(f"autodist: error: launch: {flag} must ") and f"(Received: {flag} {received(value)}" in err, err


@pytest.mark.parametrize("which, why", [("missing", "which does not exist"), ("folder", "which is a folder"), ("devnull", "which is not a regular file")])
def test_a_script_that_is_no_readable_file_is_refused_naming_the_path(which, why, paths):
    path = os.devnull if which == "devnull" else paths[which]
    for dry_run in ([], ["--dry-run"]):  # a dry run checks what a launch checks
        code, out, err = launch("--workers=2", *dry_run, path)
        assert code == 2 and out == "" and len(err.splitlines()) == 1, err
        assert f"launch: the script must be a readable file (Received: {path}, {why})" in err, err


def test_a_deep_path_is_named_whole(tmp_path):
    """A path is what the user needs to find the file: an error names it whole, however deep it is
    (other values are cut to one short line)."""
    deep = str(tmp_path / ("a-folder-nested-deep/" * 8) / "train.py")
    code, out, err = launch("--workers=2", "--dry-run", deep)
    assert len(deep) > 160 and code == 2 and f"(Received: {deep}, which does not exist)" in err, err
    assert len(received("x" * 200)) == 80


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes whatever the modes say")
def test_an_unreadable_script_and_an_unwritable_backup_folder_are_refused(paths, tmp_path):
    os.chmod(paths["script"], 0)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    code, _, err = launch("--workers=2", paths["script"])
    assert code == 2 and "which this user cannot read" in err, err
    os.chmod(paths["script"], 0o600)
    code, _, err = launch("--workers=2", f"--backup-dir={locked / 'new'}", paths["script"])
    assert code == 2 and "a folder this user cannot write in" in err, err


def test_what_this_user_may_not_read_or_write_is_refused(paths, tmp_path, monkeypatch):
    """As the test above, as any user (root included): the modes, as os.access reports them."""
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    code, _, err = launch("--workers=2", "--dry-run", paths["script"])
    assert code == 2 and f"(Received: {paths['script']}, which this user cannot read)" in err, err
    monkeypatch.setattr(os, "access", lambda path, mode: not mode & os.W_OK)
    code, _, err = launch("--workers=2", "--dry-run", f"--backup-dir={tmp_path / 'new' / 'b'}", paths["script"])
    assert code == 2 and f"to be created in {tmp_path}, a folder this user cannot write in" in err, err
    code, _, err = launch("--workers=2", "--dry-run", f"--backup-dir={paths['folder']}", paths["script"])
    assert code == 2 and "a folder this user cannot write in" in err, err


def test_a_backup_dir_that_cannot_be_a_folder_is_refused_and_nothing_is_created(paths, tmp_path):
    cases = {
        paths["file"]: "which is a file, not a folder",
        os.path.join(paths["file"], "under", "it"): f"which is under {paths['file']}, not a folder",
        "": "(Received: --backup-dir '')",
    }
    for backup, why in cases.items():
        code, _, err = launch("--workers=2", "--dry-run", f"--backup-dir={backup}", paths["script"])
        assert code == 2 and len(err.splitlines()) == 1 and why in err, err
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(ArgumentError, match="is a broken link"):
        check_backup_dir(str(link / "x"))
    new = tmp_path / "new" / "deeper"
    assert check_backup_dir(str(new)) == str(new) and check_backup_dir(paths["folder"]) == paths["folder"]
    assert not (tmp_path / "new").exists(), "the check only looks"


def test_the_hosts_are_checked_and_ipv6_addresses_bracketed(capsys):
    assert check_hosts(["node-1", " 10.0.0.2 ", "fe80::1", "[::1]", "a.example.com."]) == ["node-1", "10.0.0.2", "[fe80::1]", "[::1]", "a.example.com."]
    code, out, err = launch("--workers=2", "--hosts=h0.example.com,2001:db8::2", "/remote/train.py")  # the script is the hosts'
    assert code == 0, err
    assert "2001:db8::2]:2222" in out and '"h0.example.com:2222"' in out
    code, _, err = launch("--workers=2", "--hosts=h0:22,h1:22", "train.py")
    assert "Every task listens on port 2222 of its host" in err and "Pass --hosts h0,h1." in err, err


# ----------------------------------------------------------------------------- (b), (c) nothing starts


def _children() -> set[int]:
    """This process's child processes, from /proc."""
    children = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                    if int(handle.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                        children.add(int(entry))
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
    return children


def _tree(root) -> set[str]:
    return {os.path.join(folder, name) for folder, dirs, files in os.walk(root) for name in dirs + files}


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts processes and threads in /proc")
@pytest.mark.parametrize(
    "flags",
    [
        ["--workers=100000"],
        ["--workers=2", "--timeout=nan"],
        ["--workers=2", "--ps=-1"],
        ["--workers=2", "--max-restarts=-1"],
        ["--workers=2", "--grace=1e400"],
        ["--workers=2", "--backup-dir={file}/backups"],
        ["--workers=2", "--backup-dir={tmp}/new-backups", "--stall-timeout=1"],
    ],
)  # fmt: skip
def test_a_bad_flag_starts_nothing(flags, paths, tmp_path, monkeypatch):
    """A real launch (no --dry-run) with one bad flag: no task ran (no marker), no process or
    thread was started, no folder made (the temp folder is this test's, and os.mkdir is watched)."""
    marker = tmp_path / "marker"
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # where the launcher's private folder would go
    made: list[str] = []
    real_mkdir, real_popen = os.mkdir, subprocess.Popen
    monkeypatch.setattr(os, "mkdir", lambda path, *args, **kwargs: (made.append(os.fspath(path)), real_mkdir(path, *args, **kwargs))[1])

    def popen(*args, **kwargs):  # a bad flag let through fails here, before a 100000-task job
        raise AssertionError(f"a process started: {args}")

    monkeypatch.setattr(subprocess, "Popen", popen)
    flags = [flag.format(file=paths["file"], tmp=tmp_path) for flag in flags]
    before = (_children(), len(os.listdir("/proc/self/task")), _tree(tmp_path))
    code, out, err = launch(*flags, paths["script"], str(marker))
    monkeypatch.setattr(subprocess, "Popen", real_popen)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert not marker.exists() and made == [] and not os.listdir(temp), made
    assert (_children(), len(os.listdir("/proc/self/task")), _tree(tmp_path)) == before


def test_100000_workers_are_refused_before_anything_starts_naming_the_bound(paths, monkeypatch):
    """They ran for 20 s, then ended in a raw OSError (too many open files)."""
    monkeypatch.setattr(subprocess, "Popen", lambda *args, **kwargs: pytest.fail("a process started"))
    for dry_run in ([], ["--dry-run"]):
        code, out, err = launch("--workers=100000", *dry_run, paths["script"])
        assert code == 2 and out == "" and len(err.splitlines()) == 1, err
        assert "launch: --workers must be at most " in err and "(Received: --workers 100000)" in err, err
        assert "The bound is " in err and "Run fewer tasks" in err, err
    code, _, err = launch("--workers=2", "--ps=100000", paths["script"])
    assert "--workers plus --ps plus the chief must be at most" in err and "100003 tasks" in err, err


# ----------------------------------------------------------------------------- the bound, as data


@pytest.mark.parametrize(
    "limits, expected, named",
    [
        (MachineLimits(open_files=1024, processes=None, memory_bytes=None, ports=None), (1024 - LAUNCHER_FDS) // TASK_FDS, "open-file limit (ulimit -n 1024)"),
        (MachineLimits(open_files=None, processes=4096, memory_bytes=None, ports=None), (4096 - 64) // TASK_THREADS, "process limit (ulimit -u 4096)"),
        (MachineLimits(open_files=1 << 20, processes=None, memory_bytes=4 * GIB, ports=None), 4 * GIB // TASK_MEMORY_BYTES, "host memory: 4.0 GiB"),
        (MachineLimits(open_files=1 << 20, processes=None, memory_bytes=1 << 50, ports=100), 100, "100 ephemeral ports"),
        (MachineLimits(open_files=10, processes=10, memory_bytes=1, ports=0), 0, "open-file limit"),
    ],
)  # fmt: skip
def test_the_most_local_tasks_is_the_tightest_bound_and_names_it(limits, expected, named):
    count, reason = max_local_tasks(limits)
    assert count == expected and named in reason and reason.startswith("The bound is "), reason


def test_with_no_known_limit_any_count_fits():
    count, reason = max_local_tasks(MachineLimits(None, None, None, None))
    assert count == sys.maxsize and "No limit" in reason


def test_the_per_task_costs_are_what_was_measured():
    """The constants the bound uses (measured: see their comments in autodist/jobs/launch_flags.py)."""
    assert TASK_FDS == 1 and LAUNCHER_FDS >= 14 and TASK_THREADS == 101 and TASK_MEMORY_BYTES == 320 * 2**20


def test_a_launcher_refuses_what_the_machine_cannot_run_with_made_up_limits(paths):
    tight = MachineLimits(open_files=LAUNCHER_FDS + 3, processes=None, memory_bytes=None, ports=None)
    Launcher(3, limits=tight).check(paths["script"])
    with pytest.raises(ArgumentError, match=r"--workers plus --ps plus the chief must be at most 3 tasks .*\(ulimit -n 67\)"):
        Launcher(2, 1, limits=tight).check(paths["script"])


# ----------------------------------------------------------------------------- one path for Python and the command line


def test_jobspec_takes_the_flags_as_text_or_numbers_and_checks_them_once():
    spec = JobSpec("2", " 1 ", max_restarts="3", timeout="60", grace="2.5", stall_timeout="0")
    assert (spec.num_workers, spec.num_ps, spec.max_restarts, spec.timeout, spec.grace, spec.stall_timeout) == (2, 1, 3, 60.0, 2.5, None)
    assert JobSpec(2, stall_timeout=0).stall_timeout is None, "0 turns the watchdog off, from Python too"
    for fields, received_text in [
        ({"num_workers": True}, "--workers True"), ({"num_workers": 2.0}, "--workers 2.0"), ({"num_workers": 2, "num_ps": -1}, "--ps -1"),
        ({"num_workers": 2, "timeout": MAX_WAIT_SECONDS * 2}, "--timeout 1209600.0"), ({"num_workers": 2, "grace": float("nan")}, "--grace nan"), ({"num_workers": 2, "grace": 10**400}, "--grace " + received(10**400)),
        ({"num_workers": 2, "backup_dir": ""}, "--backup-dir ''"), ({"num_workers": 2, "max_restarts": -1}, "--max-restarts -1"),
    ]:  # fmt: skip
        with pytest.raises(ArgumentError, match=f"\\(Received: {received_text}\\)"):
            JobSpec(**fields)


def test_restarts_wait_1_2_4_seconds_up_to_30_never_past_the_deadline():
    assert [restart_delay(failed) for failed in range(1, 9)] == [1, 2, 4, 8, 16, 30, 30, 30]
    assert RESTART_DELAY_FIRST == 1 and RESTART_DELAY_MAX == 30
    assert restart_delay(10**6) == RESTART_DELAY_MAX, "no overflow after many restarts"
    assert restart_delay(4, remaining=3.5) == 3.5 and restart_delay(1, remaining=0.25) == 0.25
    assert restart_delay(2, remaining=-5.0) == 0.0


def test_the_flag_checks_import_no_tensorflow(processes):
    """What ``launch`` runs before the tasks start stays light: no TensorFlow in the launcher."""
    code = (
        "import sys, autodist.cli as cli; rc = cli.main(['launch', '--workers=2', '--dry-run', '--json', sys.argv[1]]); "
        "rc2 = cli.main(['launch', '--workers=2', '--timeout=nan', sys.argv[1]]); "
        "print(rc, rc2, sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras', 'jax')))"
    )
    from tests.conftest import ROOT, subprocess_env

    done = subprocess.run([sys.executable, "-c", code, __file__], capture_output=True, text=True, timeout=60, check=False, env=subprocess_env(), cwd=ROOT)
    assert done.stdout.strip().splitlines()[-1] == "0 2 []", done.stdout + done.stderr


# ----------------------------------------------------------------------------- (d) the property

OUTCOMES: collections.Counter = collections.Counter()

def mostly(valid, anything):
    """``valid`` 7 times in 10, else ``anything``: both outcomes common, edges still reached."""
    return st.integers(0, 9).flatmap(lambda draw: valid if draw < 7 else anything)


WHOLE = st.one_of(
    st.integers(-3, 6).map(str),
    st.sampled_from(["0", "1", "2", "100000", "10" * 20, "-" + "9" * 30, "9" * 5000, "", " 2 ", "2.0", "1e3", "0x10", "two", "nan", "1_0"]),
    st.text(max_size=6),
)
SECONDS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "-0", "0", "2", "604800", "604801", "30", "soon", "", "1e-300"]),
    st.text(max_size=6),
)
HOST = st.sampled_from(["h0", "h1", "node-2", "a.example.com", "10.0.0.1", "10.0.0.2", "::1", "[fe80::1]", "h:22", "[::1]:22", "a_b", "", "256.1.1.1", "-x", "H0", "x\ny"])
HOSTS = st.lists(HOST, min_size=0, max_size=6).map(",".join)
SCRIPT = mostly(st.just("script"), st.sampled_from(["folder", "file", "missing", "devnull"]))
BACKUP = mostly(st.sampled_from(["folder", "new"]), st.sampled_from(["file", "under-file", "empty"]))

COUNT = mostly(st.integers(0, 3).map(str), WHOLE)
LIMIT = mostly(st.floats(2, MAX_WAIT_SECONDS).map(repr), SECONDS)
FLAG_VALUES = {"--ps": COUNT, "--max-restarts": COUNT, "--timeout": LIMIT, "--grace": LIMIT, "--stall-timeout": LIMIT, "--hosts": HOSTS}


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    root = tmp_path_factory.mktemp("places")
    (root / "train.py").write_text(MARKER_SCRIPT)
    (root / "folder").mkdir()
    (root / "file.txt").write_text("x")
    return {
        "script": str(root / "train.py"), "folder": str(root / "folder"), "file": str(root / "file.txt"), "missing": str(root / "nope.py"),
        "devnull": os.devnull, "new": str(root / "new" / "backups"), "under-file": str(root / "file.txt" / "backups"), "empty": "",
    }  # fmt: skip


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    workers=mostly(st.integers(1, 4).map(str), WHOLE),
    flags=st.fixed_dictionaries({}, optional=FLAG_VALUES),
    script=SCRIPT,
    backup=st.none() | BACKUP,
)
def test_a_dry_run_prints_a_sound_task_table_or_refuses_in_one_line(workers, flags, script, backup, places, monkeypatch):
    """Any flag values: ``launch --dry-run`` (which starts nothing, and checks what a launch
    checks) prints a table whose tasks are the job's, or exits 2 with one line naming a value."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the GPU split is another test's
    argv = ["--dry-run", "--json", f"--workers={workers}", *(f"{flag}={value}" for flag, value in flags.items())]
    if backup is not None:
        argv.append(f"--backup-dir={places[backup]}")
    try:
        code, out, err = launch(*argv, places[script])
    except BaseException:
        OUTCOMES["other"] += 1
        raise
    if code == 0:
        OUTCOMES["accepted"] += 1
        tasks = json.loads(out)["tasks"]
        num_workers, num_ps = int(workers), int(flags.get("--ps", "0"))
        assert len(tasks) == num_workers + num_ps + (1 if num_ps else 0)
        cluster = tasks[0]["tf_config"]["cluster"]
        addresses = [address for group in cluster.values() for address in group]
        assert len(set(addresses)) == len(addresses) == len(tasks), "one address, one port, per task"
        for task in tasks:
            kind, index = task["tf_config"]["task"]["type"], task["tf_config"]["task"]["index"]
            assert task["tf_config"]["cluster"] == cluster and 0 <= index < len(cluster[kind])
            assert task["task"] == f"{kind} {index}"
        kinds = collections.Counter(task["tf_config"]["task"]["type"] for task in tasks)
        assert kinds == collections.Counter(worker=num_workers, ps=num_ps, chief=1 if num_ps else 0)
    else:
        OUTCOMES["refused"] += 1
        assert code == 2 and out == "", (code, out, err)
        lines = err.splitlines()
        assert len(lines) == 1 and err == lines[0] + "\n" and lines[0].startswith("autodist: error: launch: "), err
        values = [workers, *flags.values(), places[script], *([] if backup is None else [places[backup]])]
        assert "(Received: " in err and any(received(value) in err for value in values), err


def test_the_property_reached_both_outcomes_and_nothing_else():
    if not OUTCOMES:
        pytest.skip("the property test did not run")
    assert OUTCOMES["accepted"] > 0 and OUTCOMES["refused"] > 0 and OUTCOMES["other"] == 0, dict(OUTCOMES)
