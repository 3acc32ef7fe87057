"""``python -m autodist launch``: run one training script as a whole local cluster.

It starts ``--workers N`` (and ``--ps M``) processes on 127.0.0.1, on free ports, each with its
own TF_CONFIG, and runs ``sys.executable SCRIPT ARGS`` in each. It prefixes every output line with
its task, stops everything when one task fails (SIGTERM, then SIGKILL after a short grace:
TensorFlow ignores SIGTERM while it waits for peers), and reports which task failed, with what
exit code, and its last lines. ``--max-restarts K`` restarts the whole job after a failure; the
backup directory it shares between attempts (``AUTODIST_BACKUP_DIR``) lets training resume.

Every task's TF_CONFIG names 127.0.0.1, so the tasks talk over loopback. TensorFlow's gRPC server
itself listens on every interface whatever TF_CONFIG names (``grpc_server_lib.cc`` binds
``0.0.0.0``; tests/test_multi_worker.py reads the listening sockets): run jobs on a trusted
host. With ``--hosts``, autodist only prints the per-host plan: it never starts processes on
other machines.

Example:
    >>> from autodist.launch import local_cluster
    >>> spec = local_cluster(num_workers=2, num_ps=0, ports=[2222, 2223])
    >>> spec
    {'worker': ['127.0.0.1:2222', '127.0.0.1:2223']}
"""

from __future__ import annotations

import collections
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import IO, Any

from autodist.settings import BACKUP_DIR_ENV as BACKUP_ENV
from autodist.settings import LAUNCH_ATTEMPT_ENV
from autodist.errors import AutodistError

__all__ = [
    "JobSpec", "JobState", "LaunchResult", "Launcher", "TaskState", "TIMEOUT_EXIT_CODE",
    "cluster_layout", "host_plan", "local_cluster", "task_configs", "task_table",
]  # fmt: skip

LOOPBACK = "127.0.0.1"
ATTEMPT_ENV = LAUNCH_ATTEMPT_ENV
TAIL_LINES = 20


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (held open together, then released)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _check_counts(num_workers: int, num_ps: int) -> None:
    if num_workers < 1 or num_ps < 0:
        raise AutodistError(
            f"launch needs at least one worker and no negative ps count (Received: --workers "
            f"{num_workers} --ps {num_ps}). Pass for example --workers 2."
        )


def num_tasks(num_workers: int, num_ps: int) -> int:
    """Processes in a job: the workers, the ps tasks, and a chief when there are ps tasks."""
    _check_counts(num_workers, num_ps)
    return num_workers + num_ps + (1 if num_ps else 0)


def cluster_layout(addresses: list[str], num_workers: int, num_ps: int) -> dict[str, list[str]]:
    """The one cluster layout: ``addresses`` in task order become N workers, or a chief + N
    workers + M ps when there are ps tasks.

    Example:
        >>> cluster_layout(["h0:1", "h1:1", "h2:1", "h3:1"], 2, 1)
        {'chief': ['h0:1'], 'worker': ['h1:1', 'h2:1'], 'ps': ['h3:1']}
    """
    assert len(addresses) == num_tasks(num_workers, num_ps)
    if not num_ps:
        return {"worker": list(addresses)}
    return {"chief": addresses[:1], "worker": addresses[1 : 1 + num_workers], "ps": addresses[1 + num_workers :]}


def local_cluster(num_workers: int, num_ps: int, ports: list[int] | None = None, host: str = LOOPBACK) -> dict[str, list[str]]:
    """The cluster spec of a local job, on free ports of ``host`` (see :func:`cluster_layout`)."""
    ports = ports if ports is not None else free_ports(num_tasks(num_workers, num_ps))
    return cluster_layout([f"{host}:{port}" for port in ports], num_workers, num_ps)


def task_configs(cluster: dict[str, list[str]]) -> list[dict[str, Any]]:
    """One TF_CONFIG per task, chief first, then workers, then ps."""
    configs = []
    for task_type in ("chief", "worker", "ps"):
        for index in range(len(cluster.get(task_type, []))):
            configs.append({"cluster": cluster, "task": {"type": task_type, "index": index}})
    return configs


def _task_name(config: dict[str, Any]) -> str:
    return f"{config['task']['type']} {config['task']['index']}"


def task_table(cluster: dict[str, list[str]], hosts: list[str], command: str) -> list[dict[str, Any]]:
    """Each task's name, host, TF_CONFIG and command: what ``--dry-run`` and ``--hosts`` print."""
    return [
        {"task": _task_name(config), "host": host, "tf_config": config, "command": command}
        for host, config in zip(hosts, task_configs(cluster))
    ]


def host_plan(hosts: list[str], num_workers: int, num_ps: int, script: str, args: list[str], port: int = 2222) -> list[dict[str, Any]]:
    """Per-host TF_CONFIG and command for a real cluster: one task per host, in order."""
    total = num_tasks(num_workers, num_ps)
    if len(hosts) != total:
        raise AutodistError(
            f"--hosts names {len(hosts)} host(s) but the job has {total} task(s) (Received: "
            f"--hosts {','.join(hosts)} --workers {num_workers} --ps {num_ps}). Expected one host "
            f"per task{' (a chief, the workers, then the ps)' if num_ps else ''}. Name {total} hosts."
        )
    cluster = cluster_layout([f"{h}:{port}" for h in hosts], num_workers, num_ps)
    return task_table(cluster, hosts, " ".join(shlex.quote(part) for part in ["python", script, *args]))


#: The exit code of a job stopped by ``--timeout``, as coreutils' ``timeout`` uses.
TIMEOUT_EXIT_CODE = 124


class TaskState(str, Enum):
    """Where one task's process is."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class JobState(str, Enum):
    """How one attempt of the job ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"


@dataclass(frozen=True)
class JobSpec:
    """One local job, as data: its shape and its policies (torchrun's ``WorkerSpec``).

    Attributes:
        num_workers: worker processes.
        num_ps: parameter-server processes (a chief is added when there are any).
        max_restarts: restarts of the whole job after a failure.
        timeout: seconds the whole job may run, all attempts together; ``None`` for no limit.
        grace: seconds between SIGTERM and SIGKILL when stopping tasks.
        backup_dir: the directory shared by attempts (a temporary one, removed at the end, if None).
    """

    num_workers: int
    num_ps: int = 0
    max_restarts: int = 0
    timeout: float | None = None
    grace: float = 5.0
    backup_dir: str | None = None

    def __post_init__(self) -> None:
        _check_counts(self.num_workers, self.num_ps)
        if self.max_restarts < 0:
            raise AutodistError(
                f"--max-restarts must be 0 or more (Received: {self.max_restarts}). It is how many times "
                "the whole job restarts after a failure; pass 0 (no restart) or more."
            )


@dataclass
class _Task:
    name: str
    config: dict[str, Any]
    process: subprocess.Popen
    tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=TAIL_LINES))
    reader: threading.Thread | None = None

    @property
    def state(self) -> TaskState:
        code = self.process.poll()
        return TaskState.RUNNING if code is None else TaskState.SUCCEEDED if code == 0 else TaskState.FAILED


@dataclass(frozen=True)
class _Outcome:
    """How one attempt ended: its state, the task that failed (if one did), and why."""

    state: JobState
    failed: _Task | None = None
    reason: str = ""


@dataclass(frozen=True)
class LaunchResult:
    """How the job ended (torchrun's ``RunResult``): exit code 0 on success."""

    exit_code: int
    attempts: int
    failed_task: str | None = None
    failed_code: int | None = None
    message: str = ""
    state: JobState = JobState.SUCCEEDED


class Launcher:
    """Start, watch and stop the processes of one local job (a :class:`JobSpec`). Every wait is
    bounded. The keywords are the spec's fields; ``out`` is where prefixed output goes
    (``sys.stdout``)."""

    def __init__(
        self,
        num_workers: int,
        num_ps: int = 0,
        *,
        max_restarts: int = 0,
        timeout: float | None = None,
        grace: float = 5.0,
        backup_dir: str | None = None,
        out: IO[str] | None = None,
    ) -> None:
        self.spec = JobSpec(num_workers, num_ps, max_restarts, timeout, grace, backup_dir)
        self.out = out or sys.stdout
        self._lock = threading.Lock()

    def _print(self, line: str) -> None:
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()

    def _start(self, script: str, args: list[str], attempt: int, backup_dir: str) -> list[_Task]:
        cluster = local_cluster(self.spec.num_workers, self.spec.num_ps)
        tasks = []
        for config in task_configs(cluster):
            env = dict(os.environ)
            env.update(
                TF_CONFIG=json.dumps(config),
                PYTHONUNBUFFERED="1",
                **{BACKUP_ENV: backup_dir, ATTEMPT_ENV: str(attempt)},
            )
            process = subprocess.Popen(
                [sys.executable, script, *args],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                errors="replace",
                start_new_session=True,  # its own process group: we can stop everything it starts
            )
            task = _Task(_task_name(config), config, process)
            task.reader = threading.Thread(target=self._pump, args=(task,), daemon=True)
            task.reader.start()
            tasks.append(task)
        return tasks

    def _pump(self, task: _Task) -> None:
        assert task.process.stdout is not None
        for line in task.process.stdout:
            line = line.rstrip("\n")
            task.tail.append(line)
            self._print(f"[{task.name}] {line}")

    def _stop(self, tasks: list[_Task]) -> None:
        """SIGTERM every live task's process group, then SIGKILL whatever outlives the grace."""
        live = [t for t in tasks if t.state == TaskState.RUNNING]
        for task in live:
            _signal_group(task.process, signal.SIGTERM)
        deadline = time.monotonic() + self.spec.grace
        for task in live:
            try:
                task.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for task in tasks:
            if task.state == TaskState.RUNNING:
                _signal_group(task.process, signal.SIGKILL)
                task.process.wait(timeout=10)
        for task in tasks:
            if task.reader is not None:
                task.reader.join(timeout=5)

    def _watch(self, tasks: list[_Task], deadline: float | None) -> _Outcome:
        """Wait until every task succeeds, one fails, or the deadline passes."""
        while True:
            for task in tasks:
                if task.state == TaskState.FAILED:
                    return _Outcome(JobState.FAILED, task, f"{task.name} exited with code {task.process.returncode}")
            if all(task.state == TaskState.SUCCEEDED for task in tasks):
                return _Outcome(JobState.SUCCEEDED)
            if deadline is not None and time.monotonic() > deadline:
                return _Outcome(JobState.TIMED_OUT, None, f"the job ran past --timeout {self.spec.timeout:g} s")
            time.sleep(0.1)

    def run(self, script: str, args: list[str]) -> LaunchResult:
        """Run the job to the end; never raises for a task failure, returns it."""
        if not os.path.exists(script):
            raise AutodistError(f"launch: the script {script!r} does not exist. Pass the path of a Python script.")
        own_backup = self.spec.backup_dir is None
        backup_dir = self.spec.backup_dir or tempfile.mkdtemp(prefix="autodist-job-")
        deadline = None if self.spec.timeout is None else time.monotonic() + self.spec.timeout
        previous = _raise_on_termination()
        try:
            for attempt in range(self.spec.max_restarts + 1):
                started = time.monotonic()
                tasks = self._start(script, args, attempt, backup_dir)
                try:
                    outcome = self._watch(tasks, deadline)
                finally:
                    self._stop(tasks)
                if outcome.state == JobState.SUCCEEDED:
                    return LaunchResult(0, attempt + 1)
                summary = self._summary(outcome, time.monotonic() - started, tasks)
                self._print(summary)
                if outcome.state == JobState.TIMED_OUT or attempt == self.spec.max_restarts:
                    return _failed(outcome, attempt + 1, summary)
                self._print(f"[launcher] restarting the job: attempt {attempt + 2} of {self.spec.max_restarts + 1}")
            raise AssertionError("unreachable: the last attempt returns")
        finally:
            _restore_handlers(previous)
            if own_backup:
                shutil.rmtree(backup_dir, ignore_errors=True)

    def _summary(self, outcome: _Outcome, elapsed: float, tasks: list[_Task]) -> str:
        lines = [f"[launcher] job failed after {elapsed:.1f} s: {outcome.reason}; stopped the other tasks."]
        shown = [outcome.failed] if outcome.failed is not None else tasks
        for task in shown:
            lines.append(f"[launcher] last lines of {task.name}:")
            lines += [f"[launcher]   {line}" for line in task.tail] or ["[launcher]   (no output)"]
        return "\n".join(lines)


def _failed(outcome: _Outcome, attempts: int, summary: str) -> LaunchResult:
    """The result of a job that failed or timed out: the failed task's exit code (1 for a
    signal), or :data:`TIMEOUT_EXIT_CODE`."""
    if outcome.failed is None:
        return LaunchResult(TIMEOUT_EXIT_CODE, attempts, message=summary, state=outcome.state)
    code = outcome.failed.process.returncode
    return LaunchResult(code if code > 0 else 1, attempts, outcome.failed.name, code, summary, outcome.state)


class _Terminated(BaseException):
    """SIGTERM or SIGHUP reached the launcher: stop every task, then exit."""


def _raise_on_termination() -> dict[int, Any]:
    """Turn SIGTERM/SIGHUP into an exception, so the ``finally`` that stops the tasks runs.

    The tasks run in their own sessions (so they can be stopped as groups); without this, a
    terminated launcher would leave them running.
    """
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum: int, frame: Any) -> None:
        raise _Terminated(signum)

    return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}


def _restore_handlers(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
