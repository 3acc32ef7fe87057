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
from typing import IO, Any

from autodist.settings import BACKUP_DIR_ENV as BACKUP_ENV
from autodist.settings import LAUNCH_ATTEMPT_ENV
from autodist.errors import AutodistError

__all__ = ["Launcher", "host_plan", "local_cluster", "task_configs"]

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


def local_cluster(num_workers: int, num_ps: int, ports: list[int] | None = None, host: str = LOOPBACK) -> dict[str, list[str]]:
    """The cluster spec: N workers, or a chief + N workers + M ps when there are ps tasks."""
    _check_counts(num_workers, num_ps)
    total = num_workers + num_ps + (1 if num_ps else 0)
    ports = ports if ports is not None else free_ports(total)
    addresses = [f"{host}:{port}" for port in ports]
    if not num_ps:
        return {"worker": addresses[:num_workers]}
    return {
        "chief": addresses[:1],
        "worker": addresses[1 : 1 + num_workers],
        "ps": addresses[1 + num_workers : total],
    }


def task_configs(cluster: dict[str, list[str]]) -> list[dict[str, Any]]:
    """One TF_CONFIG per task, chief first, then workers, then ps."""
    configs = []
    for task_type in ("chief", "worker", "ps"):
        for index in range(len(cluster.get(task_type, []))):
            configs.append({"cluster": cluster, "task": {"type": task_type, "index": index}})
    return configs


def _task_name(config: dict[str, Any]) -> str:
    return f"{config['task']['type']} {config['task']['index']}"


def host_plan(hosts: list[str], num_workers: int, num_ps: int, script: str, args: list[str], port: int = 2222) -> list[dict[str, Any]]:
    """Per-host TF_CONFIG and command for a real cluster: one task per host, in order."""
    _check_counts(num_workers, num_ps)
    total = num_workers + num_ps + (1 if num_ps else 0)
    if len(hosts) != total:
        raise AutodistError(
            f"--hosts names {len(hosts)} host(s) but the job has {total} task(s) (Received: "
            f"--hosts {','.join(hosts)} --workers {num_workers} --ps {num_ps}). Expected one host "
            f"per task{' (a chief, the workers, then the ps)' if num_ps else ''}. Name {total} hosts."
        )
    addresses = [f"{h}:{port}" for h in hosts]
    if num_ps:
        cluster = {"chief": addresses[:1], "worker": addresses[1 : 1 + num_workers], "ps": addresses[1 + num_workers :]}
    else:
        cluster = {"worker": addresses}
    command = " ".join(shlex.quote(part) for part in ["python", script, *args])
    return [
        {"task": _task_name(config), "host": host, "tf_config": config, "command": command}
        for host, config in zip(hosts, task_configs(cluster))
    ]


@dataclass
class _Task:
    name: str
    config: dict[str, Any]
    process: subprocess.Popen
    tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=TAIL_LINES))
    reader: threading.Thread | None = None


@dataclass
class LaunchResult:
    """How the job ended: exit code 0 on success."""

    exit_code: int
    attempts: int
    failed_task: str | None = None
    failed_code: int | None = None
    message: str = ""


class Launcher:
    """Start, watch and stop the processes of one local job. Every wait is bounded.

    Args:
        num_workers: worker processes.
        num_ps: parameter-server processes (a chief is added when there are any).
        max_restarts: restarts of the whole job after a failure.
        timeout: seconds the whole job may run, all attempts together; ``None`` for no limit.
        grace: seconds between SIGTERM and SIGKILL when stopping tasks.
        backup_dir: the directory shared by attempts (a temporary one, removed at the end, if None).
        out: where prefixed output goes (``sys.stdout``).
    """

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
        _check_counts(num_workers, num_ps)
        if max_restarts < 0:
            raise AutodistError(
                f"--max-restarts must be 0 or more (Received: {max_restarts}). It is how many times "
                "the whole job restarts after a failure; pass 0 (no restart) or more."
            )
        self.num_workers, self.num_ps = num_workers, num_ps
        self.max_restarts, self.timeout, self.grace = max_restarts, timeout, grace
        self.backup_dir = backup_dir
        self.out = out or sys.stdout
        self._lock = threading.Lock()

    def _print(self, line: str) -> None:
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()

    def _start(self, script: str, args: list[str], attempt: int, backup_dir: str) -> list[_Task]:
        cluster = local_cluster(self.num_workers, self.num_ps)
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
        live = [t for t in tasks if t.process.poll() is None]
        for task in live:
            _signal_group(task.process, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for task in live:
            try:
                task.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for task in tasks:
            if task.process.poll() is None:
                _signal_group(task.process, signal.SIGKILL)
                task.process.wait(timeout=10)
        for task in tasks:
            if task.reader is not None:
                task.reader.join(timeout=5)

    def _watch(self, tasks: list[_Task], deadline: float | None) -> tuple[_Task | None, str]:
        """Wait until all tasks exit 0 (None, ""), one fails, or the deadline passes."""
        while True:
            for task in tasks:
                code = task.process.poll()
                if code is not None and code != 0:
                    return task, f"{task.name} exited with code {code}"
            if all(task.process.poll() == 0 for task in tasks):
                return None, ""
            if deadline is not None and time.monotonic() > deadline:
                return None, f"the job ran past --timeout {self.timeout:g} s"
            time.sleep(0.1)

    def run(self, script: str, args: list[str]) -> LaunchResult:
        """Run the job to the end; never raises for a task failure, returns it."""
        if not os.path.exists(script):
            raise AutodistError(f"launch: the script {script!r} does not exist. Pass the path of a Python script.")
        own_backup = self.backup_dir is None
        backup_dir = self.backup_dir or tempfile.mkdtemp(prefix="autodist-job-")
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        attempt = 0
        previous = _raise_on_termination()
        try:
            while True:
                started = time.monotonic()
                tasks = self._start(script, args, attempt, backup_dir)
                try:
                    failed, reason = self._watch(tasks, deadline)
                finally:
                    self._stop(tasks)
                if not reason:
                    return LaunchResult(0, attempt + 1)
                elapsed = time.monotonic() - started
                summary = self._summary(failed, reason, elapsed, tasks)
                timed_out = failed is None
                if timed_out or attempt >= self.max_restarts:
                    self._print(summary)
                    code = failed.process.returncode if failed is not None else 124
                    return LaunchResult(
                        code if code and code > 0 else 1,
                        attempt + 1,
                        failed.name if failed else None,
                        failed.process.returncode if failed else None,
                        summary,
                    )
                attempt += 1
                self._print(summary)
                self._print(f"[launcher] restarting the job: attempt {attempt + 1} of {self.max_restarts + 1}")
        finally:
            _restore_handlers(previous)
            if own_backup:
                shutil.rmtree(backup_dir, ignore_errors=True)

    def _summary(self, failed: _Task | None, reason: str, elapsed: float, tasks: list[_Task]) -> str:
        lines = [f"[launcher] job failed after {elapsed:.1f} s: {reason}; stopped the other tasks."]
        shown = [failed] if failed is not None else tasks
        for task in shown:
            lines.append(f"[launcher] last lines of {task.name}:")
            lines += [f"[launcher]   {line}" for line in task.tail] or ["[launcher]   (no output)"]
        return "\n".join(lines)


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
