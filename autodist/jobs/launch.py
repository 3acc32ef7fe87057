"""``python -m autodist launch``: run one training script as a whole local cluster.

It starts ``--workers N`` (and ``--ps M``) processes on 127.0.0.1, on free ports, each with its
own TF_CONFIG, and runs ``sys.executable SCRIPT ARGS`` in each. It prefixes every output line with
its task, stops everything when one task fails (SIGTERM, then SIGKILL after at most 5 s: the
others wait on it) or when it is told to stop (SIGTERM forwarded; ``--grace``, 30 s, to save the
step: :mod:`autodist.resume.preemption`), and reports which task failed, with what exit code, and its
last lines. ``--max-restarts K`` restarts the whole job after a failure, after a wait of 1 s, then
2 s, 4 s, ... at most 30 s (:func:`restart_delay`); the backup directory shared between attempts
(``AUTODIST_BACKUP_DIR``) lets training resume. Every flag is checked before anything starts
(:mod:`autodist.jobs.launch_flags`: the counts against what this machine can run, the limits, the
script, the backup folder, the hosts).

Every task's TF_CONFIG names 127.0.0.1, but TensorFlow's gRPC server listens on every interface
whatever TF_CONFIG names (``grpc_server_lib.cc`` binds ``0.0.0.0``), and it runs graphs for
anyone who connects. So on Linux the tasks run in one private network namespace
(:mod:`autodist.jobs.netns`): their ports exist nowhere else, and they reach nothing outside the job
(``--no-isolate`` turns it off; where namespaces are unavailable the launcher says so once).

Every wait is bounded: ``--timeout`` for the whole job; ``--stall-timeout`` (default 30 minutes)
for a task that has started training and then stops making progress: while ``autodist.fit``
runs, each task beats (``AUTODIST_HEARTBEAT_FILE``, a file the launcher names in its private
folder; the task beats there, never its children: :func:`autodist.jobs.heartbeat.launcher_heartbeat`)
after each batch and epoch; a parameter-server chief as its steps finish, its workers and ps
while they serve, a custom loop when it calls ``autodist.beat()``; ``--grace`` for stopping.
Each local worker gets its own GPUs (``CUDA_VISIBLE_DEVICES``,
:func:`autodist.jobs.job_layout.split_gpus`). The launcher's files (heartbeats, default backups) are
in a private folder (mode 700). With ``--hosts``, autodist only prints the per-host plan: it
never starts processes on other machines.

Example:
    >>> from autodist.jobs.job_layout import local_cluster
    >>> spec = local_cluster(num_workers=2, num_ps=0, ports=[2222, 2223])
    >>> spec
    {'worker': ['127.0.0.1:2222', '127.0.0.1:2223']}
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import IO, Any

from autodist.jobs.exit_codes import (
    PREEMPTED_EXIT_CODE,
    STALL_EXIT_CODE,
    TIMEOUT_EXIT_CODE,
)
from autodist.jobs.heartbeat import heartbeat_path
from autodist.jobs.job_layout import (
    JobFiles,
    local_cluster,
    local_gpu_env,
    task_configs,
    task_name,
    visible_gpus,
)
from autodist.jobs.launch_flags import (
    DEFAULT_GRACE,
    DEFAULT_STALL_TIMEOUT,
    JobSpec,
    MachineLimits,
    check_start,
)
from autodist.settings import BACKUP_DIR_ENV, GRACE_ENV, HEARTBEAT_FILE_ENV, LAUNCH_ATTEMPT_ENV

__all__ = [
    "DEFAULT_GRACE",
    "DEFAULT_STALL_TIMEOUT",
    "RESTART_DELAY_FIRST",
    "RESTART_DELAY_MAX",
    "STALL_EXIT_CODE",
    "TIMEOUT_EXIT_CODE",
    "JobSpec",
    "JobState",
    "LaunchResult",
    "Launcher",
    "TaskState",
    "Terminated",
    "restart_delay",
]

TAIL_LINES = 20


class TaskState(str, Enum):
    """Where one task's process is."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class JobState(str, Enum):
    """How one attempt of the job ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STALLED = "stalled"
    TIMED_OUT = "timed_out"


#: The most a task gets after a peer failed: it waits on that peer and has nothing to save.
FAILURE_GRACE = 5.0


#: The wait before the first restart; each next one doubles, up to :data:`RESTART_DELAY_MAX`: a
#: failure that repeats at once (a port taken, a peer still going) is not retried in a tight loop.
RESTART_DELAY_FIRST = 1.0
#: The longest wait between two attempts.
RESTART_DELAY_MAX = 30.0


def restart_delay(failed: int, remaining: float | None = None) -> float:
    """Seconds to wait before the next attempt, after ``failed`` attempts failed: 1 s, 2 s, 4 s,
    ... at most :data:`RESTART_DELAY_MAX`, and never past the deadline (``remaining`` seconds of
    ``--timeout``; ``None``: no deadline).

    Example:
        >>> [restart_delay(failed) for failed in range(1, 8)]
        [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
        >>> restart_delay(3, remaining=2.5), restart_delay(1, remaining=-1.0)
        (2.5, 0.0)
    """
    delay = min(RESTART_DELAY_MAX, RESTART_DELAY_FIRST * 2 ** min(max(failed - 1, 0), 32))
    return delay if remaining is None else max(0.0, min(delay, remaining))


@dataclass
class _Task:
    name: str
    config: dict[str, Any]
    process: subprocess.Popen
    heartbeat: str = ""
    tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=TAIL_LINES))
    reader: threading.Thread | None = None

    beat_mtime: float | None = None
    beat_seen: float | None = None

    def silent_for(self) -> float | None:
        """Seconds (monotonic, so clock steps do not count) since the launcher last saw the task's
        heartbeat change; ``None`` before its first beat, or after training ended (the heartbeat
        callback removes the file): then the task is not training, and not watched."""
        try:
            mtime = os.stat(self.heartbeat).st_mtime
        except OSError:
            self.beat_mtime = self.beat_seen = None
            return None
        if mtime != self.beat_mtime:
            self.beat_mtime, self.beat_seen = mtime, time.monotonic()
        assert self.beat_seen is not None
        return time.monotonic() - self.beat_seen

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
    bounded: ``--timeout`` for the whole job, ``--stall-timeout`` for a task that stops making
    progress, ``--grace`` for stopping. The keywords are the spec's fields; ``out`` is where
    prefixed output goes (``sys.stdout``); ``sleep`` waits between attempts (``time.sleep``; tests
    pass their own); ``limits`` is what this machine can run (:func:`~autodist.jobs.launch_flags.machine_limits`
    when ``None``)."""

    def __init__(
        self,
        num_workers: int,
        num_ps: int = 0,
        *,
        out: IO[str] | None = None,
        sleep: Callable[[float], Any] | None = None,
        limits: MachineLimits | None = None,
        **policies: Any,
    ) -> None:
        self.spec = JobSpec(num_workers, num_ps, **policies)
        self.out = out or sys.stdout
        self.limits = limits
        self._sleep = sleep or time.sleep
        self._lock = threading.Lock()
        self._signals: dict[str, Any] = {"deferred": False, "received": None}

    def check(self, script: str) -> None:
        """Refuse, before anything starts, what the spec's own checks cannot see: a script that is
        no readable file, a backup folder that cannot be one, more tasks than this machine runs
        (:func:`~autodist.jobs.launch_flags.check_start`). :meth:`run` calls it first; so does
        ``launch --dry-run``, which then starts nothing."""
        check_start(self.spec, script, self.limits)

    def _print(self, line: str) -> None:
        # `launch ... | head` closed it: keep draining the tasks' output
        with self._lock, contextlib.suppress(BrokenPipeError, ValueError, OSError):
            self.out.write(line + "\n")
            self.out.flush()

    @contextlib.contextmanager
    def _signals_deferred(self) -> Iterator[None]:
        """Within it, a SIGTERM, SIGHUP or SIGINT that reaches the launcher is only noted; it is
        raised on leaving (:func:`_raise_on_termination`), so it cannot cut in between starting
        a task and recording it, nor cut stopping the tasks short."""
        self._signals["deferred"] = True
        try:
            yield
        finally:
            self._signals["deferred"] = False
        received, self._signals["received"] = self._signals["received"], None
        if received == signal.SIGINT:
            raise KeyboardInterrupt
        if received is not None:
            raise Terminated(received)

    def _start(self, script: str, args: list[str], attempt: int, job: JobFiles, tasks: list[_Task]) -> None:
        """Start every task, each appended to ``tasks`` as it starts (so a failure or a signal
        half-way still leaves the started ones to :meth:`_stop`). In a private network, each
        starts as the exec helper that joins it (:meth:`PrivateNetwork.command`)."""
        cluster = local_cluster(self.spec.num_workers, self.spec.num_ps)
        for config in task_configs(cluster):
            name = task_name(config)
            beat = heartbeat_path(job.folder, attempt, name)  # only this launcher's child beats there
            env = {
                **os.environ,
                **job.gpu_env.get(name, {}),
                "TF_CONFIG": json.dumps(config),
                "PYTHONUNBUFFERED": "1",
                BACKUP_DIR_ENV: job.backup_dir,
                LAUNCH_ATTEMPT_ENV: str(attempt),
                HEARTBEAT_FILE_ENV: beat,
                GRACE_ENV: f"{self.spec.grace:g}",  # the preemption agreement fits in it
            }
            command, fds = [sys.executable, script, *args], ()
            if job.network is not None:
                command, fds = job.network.command(command)
            with self._signals_deferred():
                process = subprocess.Popen(
                    command,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    text=True,
                    errors="replace",
                    start_new_session=True,  # its own process group: we can stop everything it starts
                    pass_fds=fds,
                )
                task = _Task(name, config, process, beat)
                tasks.append(task)
                task.reader = threading.Thread(target=self._pump, args=(task,), daemon=True)
                task.reader.start()

    def _pump(self, task: _Task) -> None:
        assert task.process.stdout is not None
        for line in task.process.stdout:
            line = line.rstrip("\n")
            task.tail.append(line)
            self._print(f"[{task.name}] {line}")

    def _stop(self, tasks: list[_Task], grace: float) -> None:
        """SIGTERM every live task's process group, then SIGKILL whatever outlives ``grace``.
        Tasks in ``autodist.fit`` finish their step, save it and exit with
        :data:`~autodist.jobs.exit_codes.PREEMPTED_EXIT_CODE`. Never raises; a SIGTERM or SIGHUP
        that reaches the launcher meanwhile waits until every task is gone."""
        with self._signals_deferred():
            live = [t for t in tasks if t.state == TaskState.RUNNING]
            for task in live:
                _signal_group(task.process, signal.SIGTERM)
            deadline = time.monotonic() + grace
            for task in live:
                _wait(task.process, max(0.0, deadline - time.monotonic()))
            for task in tasks:
                if task.state == TaskState.RUNNING:
                    _signal_group(task.process, signal.SIGKILL)
                    _wait(task.process, 10)
                    if task in live:
                        self._print(
                            f"[launcher] {task.name} did not exit within --grace {grace:g} s of SIGTERM: killed"
                        )
            for task in tasks:
                if task.reader is not None:
                    task.reader.join(timeout=5)
            preempted = [task.name for task in live if task.process.returncode == PREEMPTED_EXIT_CODE]
            if preempted:
                self._print(
                    f"[launcher] {', '.join(preempted)} exited {PREEMPTED_EXIT_CODE} (preempted: each says whether it "
                    "saved a step); the next start resumes from the newest save every worker has"
                )

    def _watch(self, tasks: list[_Task], deadline: float | None) -> _Outcome:
        """Wait until every task succeeds, one fails or stalls, or the deadline passes."""
        while True:
            for task in tasks:
                if task.state == TaskState.FAILED:
                    return _Outcome(JobState.FAILED, task, f"{task.name} exited with code {task.process.returncode}")
            if all(task.state == TaskState.SUCCEEDED for task in tasks):
                return _Outcome(JobState.SUCCEEDED)
            stalled = self._stalled(tasks)
            if stalled is not None:
                seconds, task = stalled  # read once: the file may be gone by now
                reason = (
                    f"{task.name} made no progress for {seconds:.0f} s (--stall-timeout "
                    f"{self.spec.stall_timeout:g}): it is stuck, or waits on a peer that is"
                )
                return _Outcome(JobState.STALLED, task, reason)
            if deadline is not None and time.monotonic() > deadline:
                return _Outcome(JobState.TIMED_OUT, None, f"the job ran past --timeout {self.spec.timeout:g} s")
            time.sleep(0.1)

    def _stalled(self, tasks: list[_Task]) -> tuple[float, _Task] | None:
        """``(seconds, task)`` for the running task silent the longest, past ``stall_timeout``;
        tasks that have not beaten yet are starting (their waits for peers are bounded by the
        peer timeout)."""
        if self.spec.stall_timeout is None:
            return None
        silent = [(task.silent_for(), task) for task in tasks if task.state == TaskState.RUNNING]
        late = [
            (seconds, task) for seconds, task in silent if seconds is not None and seconds > self.spec.stall_timeout
        ]
        return max(late, key=lambda pair: pair[0]) if late else None

    def run(self, script: str, args: list[str]) -> LaunchResult:
        """Run the job to the end; never raises for a task failure, returns it. Between attempts
        it waits :func:`restart_delay` (a signal ends the wait, and the job, as anywhere else)."""
        self.check(script)
        gpus = local_gpu_env(self.spec.num_workers, self.spec.num_ps, visible_gpus(os.environ))
        deadline = None if self.spec.timeout is None else time.monotonic() + self.spec.timeout
        previous = _raise_on_termination(self._signals)
        job: JobFiles | None = None
        attempts = self.spec.max_restarts + 1
        try:
            job = JobFiles.create(self.spec, gpus, self._print, [script, *args])
            for attempt in range(attempts):
                started = time.monotonic()
                tasks: list[_Task] = []
                try:
                    self._start(script, args, attempt, job, tasks)
                    outcome = self._watch(tasks, deadline)
                except BaseException:  # SIGTERM/SIGHUP/SIGINT reached the launcher: tasks save their step
                    self._stop(tasks, self.spec.grace)
                    raise
                # all of it after a preempted task (the others save the same step meanwhile); at most
                # FAILURE_GRACE after another failure (the others wait on it, with nothing to save)
                preempted = outcome.failed is not None and outcome.failed.process.returncode == PREEMPTED_EXIT_CODE
                self._stop(tasks, self.spec.grace if preempted else min(self.spec.grace, FAILURE_GRACE))
                if outcome.state == JobState.SUCCEEDED:
                    return LaunchResult(0, attempt + 1)
                summary = self._summary(outcome, time.monotonic() - started, tasks)
                self._print(summary)
                if outcome.state == JobState.TIMED_OUT or attempt == self.spec.max_restarts:
                    return _failed(outcome, attempt + 1, summary)
                delay = restart_delay(attempt + 1, None if deadline is None else deadline - time.monotonic())
                self._print(f"[launcher] restarting the job in {delay:.3g} s: attempt {attempt + 2} of {attempts}")
                self._sleep(delay)
                if deadline is not None and time.monotonic() >= deadline:
                    reason = (
                        f"the job ran past --timeout {self.spec.timeout:g} s before attempt {attempt + 2} of "
                        f"{attempts} could start"
                    )
                    self._print(f"[launcher] {reason}")
                    return LaunchResult(TIMEOUT_EXIT_CODE, attempt + 1, message=reason, state=JobState.TIMED_OUT)
            raise AssertionError("unreachable: the last attempt returns")
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if job is not None:
                job.close()

    def _summary(self, outcome: _Outcome, elapsed: float, tasks: list[_Task]) -> str:
        lines = [f"[launcher] job failed after {elapsed:.1f} s: {outcome.reason}; stopped the other tasks."]
        shown = [outcome.failed] if outcome.failed is not None else tasks
        for task in shown:
            lines.append(f"[launcher] last lines of {task.name}:")
            lines += [f"[launcher]   {line}" for line in task.tail] or ["[launcher]   (no output)"]
        return "\n".join(lines)


def _wait(process: subprocess.Popen, timeout: float) -> None:
    # past the timeout, SIGKILL follows, or the process is unkillable (D state): nothing more to do
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=timeout)


def _failed(outcome: _Outcome, attempts: int, summary: str) -> LaunchResult:
    """The result of a job that failed, stalled or timed out: the failed task's exit code (1
    for a signal), :data:`STALL_EXIT_CODE` or :data:`TIMEOUT_EXIT_CODE`."""
    if outcome.state == JobState.TIMED_OUT or outcome.failed is None:
        return LaunchResult(TIMEOUT_EXIT_CODE, attempts, message=summary, state=outcome.state)
    if outcome.state == JobState.STALLED:
        return LaunchResult(STALL_EXIT_CODE, attempts, outcome.failed.name, None, summary, outcome.state)
    code = outcome.failed.process.returncode
    return LaunchResult(code if code > 0 else 1, attempts, outcome.failed.name, code, summary, outcome.state)


class Terminated(BaseException):
    """SIGTERM or SIGHUP reached the launcher: stop every task, then exit with 128 + the signal."""

    @property
    def signum(self) -> int:
        return int(self.args[0])


def _raise_on_termination(signals: dict[str, Any]) -> dict[int, Any]:
    """Turn SIGTERM/SIGHUP (and SIGINT, as ``KeyboardInterrupt``) into an exception, so the
    ``finally`` that stops the tasks runs; while a task is being started and recorded, or the
    tasks stopped, only note it (:meth:`Launcher._signals_deferred` raises it after).

    The tasks run in their own sessions (so they can be stopped as groups); without this, a
    terminated launcher would leave them running.
    """
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum: int, frame: Any) -> None:
        if signals["deferred"]:  # starting a task, or stopping them: raised once that is done
            signals["received"] = signum
            return
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)
