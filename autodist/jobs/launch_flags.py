"""The launcher's flags, checked before anything starts: ``python -m autodist launch`` refuses a
wrong flag with one :class:`~autodist.errors.ArgumentError` (``launch: --flag must be ...
(Received: --flag value). Why. The fix.``) before any process, port or folder exists.

* :class:`JobSpec`, the job as data, checks its own values (:func:`whole`, :func:`seconds`),
  whether they come from the command line (text) or from Python (numbers);
* what the machine can run: :func:`machine_limits` reads it, :func:`max_local_tasks` decides
  over it (pure: tests pass made-up limits);
* the files a local job needs (:func:`check_script`, :func:`check_backup_dir`), which only look.

:func:`check_start` runs the last two; a launch and ``--dry-run`` both call it (through
:meth:`autodist.jobs.launch.Launcher.check`), so a dry run refuses what a launch would. The hosts
of ``--hosts`` are checked with its plan (:func:`autodist.jobs.job_layout.check_hosts`).

Example:
    >>> GIB = 2**30
    >>> max_local_tasks(MachineLimits(open_files=1024, processes=None, memory_bytes=16 * GIB, ports=28232))[0]
    51
    >>> JobSpec("0")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    autodist.errors.ArgumentError: launch: --workers must be an integer of at least 1 (Received: --workers 0). It is how
    many worker processes run, each with its own TF_CONFIG. Pass for example --workers 2.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import shlex
import stat
from dataclasses import dataclass
from typing import Any

from autodist.detection import (
    hardware,  # hardware.host_memory_bytes: the one memory probe
)
from autodist.errors import ArgumentError
from autodist.fields import MAX_WAIT_SECONDS, shown
from autodist.files import folder_problem

__all__ = [
    "DEFAULT_GRACE",
    "DEFAULT_STALL_TIMEOUT",
    "LAUNCHER_FDS",
    "LAUNCHER_THREADS",
    "MAX_RESTARTS",
    "MIN_STALL_TIMEOUT",
    "PS_MEANING",
    "TASK_FDS",
    "TASK_MEMORY_BYTES",
    "TASK_THREADS",
    "WORKERS_MEANING",
    "JobSpec",
    "MachineLimits",
    "check_backup_dir",
    "check_local_tasks",
    "check_script",
    "check_start",
    "machine_limits",
    "max_local_tasks",
    "received",
    "seconds",
    "whole",
]

MIB = 2**20

#: File descriptors the launcher holds per task while the job runs: the read end of the task's
#: output pipe (each ``Popen`` also opens 4 for a moment, one task at a time; the ports are picked
#: with one socket per task, all closed before the first task starts). Measured: a launcher of 100
#: sleeping tasks held 105 to 108 more descriptors than before it started (1.05 to 1.08 per task).
TASK_FDS = 1
#: Descriptors kept for the launcher itself: stdio, the private network's 4 (its holder's pipes and
#: namespace files), the backup folder's lock, a ``Popen``'s passing 4; measured 14 at most.
LAUNCHER_FDS = 64
#: Threads (what ``RLIMIT_NPROC`` counts: every thread of the user) per task: the launcher's reader
#: of its output, and the task's own. Measured: a task of a 2-worker ``autodist.fit`` (TensorFlow
#: 2.21, 2 cores) runs 108 to 114 threads (gRPC's and the op pools, more with more cores); 100 counted.
TASK_THREADS = 1 + 100
#: Threads kept for the rest of the user's processes (the shell, the launcher, its private network).
LAUNCHER_THREADS = 64
#: Host memory a TensorFlow task needs of its own. Measured: a task of a tiny 2-worker
#: ``autodist.fit`` (a Dense layer, TensorFlow 2.21 on CPU) holds 322 to 366 MiB of private memory
#: (``RssAnon``), plus 460 to 475 MiB of libraries shared by every task (counted for none of them):
#: a bound no real job stays under, so it never refuses a job that could run.
TASK_MEMORY_BYTES = 320 * MIB


# ----------------------------------------------------------------------------- the flags' values


def received(value: Any, cut: int | None = 80) -> str:
    """A received value as the user wrote it: a string as a shell would quote it (``nan``,
    ``'a b'``), escaped when it holds a line break or another control character; anything else as
    its ``repr``; cut to ``cut`` characters, so an error stays one short line. A path is shown whole
    (``cut=None``): it is what the user needs to find the file, however deep it is.

    Example:
        >>> received("100000"), received("a b"), received("x\\ny"), received(2.5)
        ('100000', "'a b'", "'x\\\\ny'", '2.5')
    """
    if not isinstance(value, str):
        return shown(value)
    text = shlex.quote(value) if value.isprintable() else repr(value)
    return text if cut is None or len(text) <= cut else text[: cut - 3] + "..."


def _refuse(flag: str, expected: str, value: Any, why: str) -> ArgumentError:
    return ArgumentError(f"launch: {flag} must be {expected} (Received: {flag} {received(value)}). {why}")


def whole(flag: str, value: Any, minimum: int, meaning: str, *, maximum: int | None = None) -> int:
    """An integer count from ``minimum`` to ``maximum``: a whole number as text (``"2"``) or an
    integer (not a bool, not ``2.0``).

    Example:
        >>> whole("--ps", "1", 0, ""), whole("--ps", 3, 0, "")
        (1, 3)
    """
    number: int | None = None
    if isinstance(value, str):
        with contextlib.suppress(ValueError):  # not a whole number, or one of more than 4300 digits
            number = int(value.strip())
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        number = int(value)
    if number is None or number < minimum or (maximum is not None and number > maximum):
        raise _refuse(
            flag,
            f"an integer of at least {minimum}" if maximum is None else f"an integer from {minimum} to {maximum}",
            value,
            meaning,
        )
    return number


def seconds(flag: str, value: Any, minimum: float, meaning: str, *, zero_is_off: bool = False) -> float | None:
    """A finite number of seconds above 0 (or at least ``minimum`` when it is not 0) and at most
    :data:`~autodist.fields.MAX_WAIT_SECONDS`: ``nan`` would turn every comparison off, and the
    limit with it; ``inf`` or ``1e400`` never ends, and a wait over a week overflows the timers it
    bounds. ``zero_is_off``: 0 is accepted, and returned as ``None`` (no limit).

    Example:
        >>> seconds("--grace", "30", 0.0, ""), seconds("--stall-timeout", "0", 2.0, "", zero_is_off=True)
        (30.0, None)
        >>> seconds("--timeout", "1e400", 0.0, "Pass for example 3600.")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        autodist.errors.ArgumentError: launch: --timeout must be a finite number of seconds, above 0 and at most 604800
        (a week: longer waits overflow the timers they bound) (Received: --timeout 1e400). Pass for example 3600.
    """
    number: float | None = None
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value.strip())
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an integer past any float: as long as infinity
            number = math.inf
    if zero_is_off and number == 0:
        return None
    low = f"at least {minimum:g}" if minimum else "above 0"
    expected = (
        f"a finite number of seconds, {low} and at most {MAX_WAIT_SECONDS:g} (a week: longer waits overflow the timers "
        "they bound)"
    )
    if (
        number is None
        or not math.isfinite(number)
        or not (number >= minimum if minimum else number > 0)
        or number > MAX_WAIT_SECONDS
    ):
        raise _refuse(flag, expected, value, meaning)
    return number


# ----------------------------------------------------------------------------- the job's spec

WORKERS_MEANING = "It is how many worker processes run, each with its own TF_CONFIG. Pass for example --workers 2."
PS_MEANING = (
    "It is how many parameter-server processes run (with a chief when there are any): pass 0 (the default) for a job "
    "without them, or for example --ps 1."
)

#: ``--stall-timeout``'s default: longer than any one step, epoch end or checkpoint of a real job.
DEFAULT_STALL_TIMEOUT = 1800.0
#: ``--grace``'s default: time for a task to finish its step and save it after SIGTERM
#: (Kubernetes' default termination grace period is 30 s).
DEFAULT_GRACE = 30.0
MIN_STALL_TIMEOUT = 2.0
#: The most restarts of a job: with the backoff capped at 30 s, a thousand take over 8 hours.
MAX_RESTARTS = 1000


@dataclass(frozen=True)
class JobSpec:
    """One local job, as data: its shape and its policies (torchrun's ``WorkerSpec``).

    Attributes:
        num_workers: worker processes.
        num_ps: parameter-server processes (a chief is added when there are any).
        max_restarts: restarts of the whole job after a failure.
        timeout: seconds the whole job may run, all attempts together; ``None`` for no limit.
        grace: seconds between SIGTERM and SIGKILL when the launcher is told to stop (tasks
            save their step meanwhile); after a task failed, at most :data:`autodist.jobs.launch.FAILURE_GRACE`.
        backup_dir: the directory shared by attempts and by later launches of the same command
            (:func:`autodist.jobs.job_layout.default_launch_backup` if None).
        isolate: run the tasks in a private network namespace (:mod:`autodist.jobs.netns`).
        stall_timeout: stop the job when a task that has started training makes no progress
            (no heartbeat) for this many seconds; ``None`` (or 0) for no watchdog.

    Each field is checked as it is made, from text (the command line) or a number (Python), and
    kept as a number; a wrong one raises :class:`~autodist.errors.ArgumentError`.
    """

    num_workers: int
    num_ps: int = 0
    max_restarts: int = 0
    timeout: float | None = None
    grace: float = DEFAULT_GRACE
    backup_dir: str | None = None
    isolate: bool = True
    stall_timeout: float | None = DEFAULT_STALL_TIMEOUT

    def __post_init__(self) -> None:
        """Check every field, as the command line passes it (text) or Python does (numbers), and
        keep it as a number (:mod:`autodist.jobs.launch_flags`): one path for both."""
        set_field = object.__setattr__.__get__(self)
        set_field("num_workers", whole("--workers", self.num_workers, 1, WORKERS_MEANING))
        set_field("num_ps", whole("--ps", self.num_ps, 0, PS_MEANING))
        why = "It is how many times the whole job restarts after a failure: pass 0 (no restart, the default) or more."
        set_field("max_restarts", whole("--max-restarts", self.max_restarts, 0, why, maximum=MAX_RESTARTS))
        if self.timeout is not None:
            why = "It bounds the whole job, all attempts together: pass for example 3600, or leave it out for no limit."
            set_field("timeout", seconds("--timeout", self.timeout, 0.0, why))
        why = (
            "It is the time a task gets after SIGTERM to save its step, before SIGKILL: pass for example "
            f"{DEFAULT_GRACE:g} (the default)."
        )
        set_field("grace", seconds("--grace", self.grace, 0.0, why))
        if self.stall_timeout is not None:
            why = (
                "Tasks beat at most once a second: pass a longer limit, such as 1800 (the default), or 0 to turn the "
                "watchdog off."
            )
            set_field(
                "stall_timeout",
                seconds("--stall-timeout", self.stall_timeout, MIN_STALL_TIMEOUT, why, zero_is_off=True),
            )
        if self.backup_dir is not None and (
            not isinstance(self.backup_dir, (str, os.PathLike)) or not os.fspath(self.backup_dir)
        ):
            raise ArgumentError(
                f"launch: --backup-dir must be a folder path (Received: --backup-dir {received(self.backup_dir)}). "
                "It is where every attempt saves and resumes from: pass a folder, or leave it out for one of "
                "autodist's own."
            )


# ----------------------------------------------------------------------------- what this machine can run


@dataclass(frozen=True)
class MachineLimits:
    """What bounds the tasks of a local job on a machine, as data (``None``: no limit, or unknown).

    Attributes:
        open_files: the launcher's open-file limit (``RLIMIT_NOFILE``, soft).
        processes: the user's process and thread limit (``RLIMIT_NPROC``, soft; ``None`` for root,
            whom Linux does not hold to it).
        memory_bytes: host memory (:func:`autodist.detection.hardware.host_memory_bytes`).
        ports: ports of the ephemeral range the launcher picks the tasks' ports from.
    """

    open_files: int | None
    processes: int | None
    memory_bytes: int | None
    ports: int | None


def machine_limits() -> MachineLimits:
    """This machine's :class:`MachineLimits` (reads it; changes nothing)."""
    try:
        import resource
    except ImportError:  # not POSIX
        return MachineLimits(None, None, hardware.host_memory_bytes(), _ephemeral_ports())

    def soft(kind: int) -> int | None:
        limit = resource.getrlimit(kind)[0]
        return None if limit == resource.RLIM_INFINITY or limit < 0 else int(limit)

    processes = soft(resource.RLIMIT_NPROC) if hasattr(resource, "RLIMIT_NPROC") and os.geteuid() != 0 else None
    return MachineLimits(soft(resource.RLIMIT_NOFILE), processes, hardware.host_memory_bytes(), _ephemeral_ports())


def _ephemeral_ports(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> int | None:
    try:
        with open(path, encoding="ascii") as handle:
            low, high = (int(part) for part in handle.read().split())
    except (OSError, ValueError):
        return None
    return max(0, high - low + 1)


def max_local_tasks(limits: MachineLimits) -> tuple[int, str]:
    """``(count, reason)``: the most tasks one local job can run on a machine with ``limits``,
    and the bound that sets it, as the sentences of an error (why, then the fix). Each bound
    counts what a task really costs (:data:`TASK_FDS`, :data:`TASK_THREADS`,
    :data:`TASK_MEMORY_BYTES`, a port); no known limit gives ``(sys.maxsize, ...)``.

    Example:
        >>> count, reason = max_local_tasks(MachineLimits(open_files=256, processes=100_000, memory_bytes=None,
        ...     ports=None))
        >>> count, reason.split(":")[0]
        (192, 'The bound is the open-file limit (ulimit -n 256)')
    """
    bounds: list[tuple[int, str]] = []
    if limits.open_files is not None:
        reason = (
            f"The bound is the open-file limit (ulimit -n {limits.open_files}): the launcher holds "
            f"{TASK_FDS} file descriptor per task (its output pipe) and keeps {LAUNCHER_FDS} for itself. "
            "Run fewer tasks, or raise the limit (ulimit -n) before launching."
        )
        bounds.append(((limits.open_files - LAUNCHER_FDS) // TASK_FDS, reason))
    if limits.processes is not None:
        reason = (
            f"The bound is the process limit (ulimit -u {limits.processes}), which counts threads: a "
            f"TensorFlow task runs about {TASK_THREADS - 1} and the launcher reads each task's output "
            f"in one more, and {LAUNCHER_THREADS} are kept for the rest. Run fewer tasks, or raise the limit "
            "(ulimit -u)."
        )
        bounds.append(((limits.processes - LAUNCHER_THREADS) // TASK_THREADS, reason))
    if limits.memory_bytes is not None:
        reason = (
            f"The bound is host memory: {limits.memory_bytes / 2**30:.1f} GiB holds "
            f"{limits.memory_bytes // TASK_MEMORY_BYTES} TensorFlow tasks of {TASK_MEMORY_BYTES // MIB} MiB "
            "each (the least a task takes, measured). Run fewer tasks, or spread the job over machines "
            "(--hosts prints a plan)."
        )
        bounds.append((limits.memory_bytes // TASK_MEMORY_BYTES, reason))
    if limits.ports is not None:
        reason = (
            f"The bound is this machine's {limits.ports} ephemeral ports (net.ipv4.ip_local_port_range), "
            "one per task. Run fewer tasks, or spread the job over machines (--hosts prints a plan)."
        )
        bounds.append((limits.ports, reason))
    if not bounds:
        import sys

        return sys.maxsize, "No limit of this machine is known."
    count, reason = min(bounds, key=lambda bound: bound[0])
    return max(0, count), reason


def check_local_tasks(num_workers: int, num_ps: int, limits: MachineLimits) -> None:
    """Refuse a local job of more tasks than :func:`max_local_tasks` allows, naming the bound.

    Example:
        >>> check_local_tasks(100000, 0, MachineLimits(open_files=20000, processes=None, memory_bytes=None,
        ...     ports=None))  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        autodist.errors.ArgumentError: launch: --workers must be at most 19936 on this machine (Received: --workers
        100000). The bound is the open-file limit (ulimit -n 20000): the launcher holds 1 file descriptor per task (its
        output pipe) and keeps 64 for itself. Run fewer tasks, or raise the limit (ulimit -n) before launching.
    """
    total = num_workers + num_ps + (1 if num_ps else 0)
    count, reason = max_local_tasks(limits)
    if total <= count:
        return
    if not num_ps:
        raise ArgumentError(
            f"launch: --workers must be at most {count} on this machine (Received: --workers {received(num_workers)}). "
            f"{reason}"
        )
    raise ArgumentError(
        f"launch: --workers plus --ps plus the chief must be at most {count} tasks on this machine "
        f"(Received: --workers {received(num_workers)} --ps {received(num_ps)}, {received(total)} tasks). {reason}"
    )


# ----------------------------------------------------------------------------- the files


def check_script(script: Any) -> str:
    """The script every task runs: an existing regular file this user can read (it only looks).

    Example:
        >>> check_script("/nonexistent/train.py")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        autodist.errors.ArgumentError: launch: the script must be a readable file (Received: /nonexistent/train.py,
        which does not exist). Pass the path of the Python script every task runs, for example train.py.
    """
    fix = "Pass the path of the Python script every task runs, for example train.py."
    path = os.fspath(script) if isinstance(script, os.PathLike) else script
    if not isinstance(path, str) or not path:
        why = "which is not a path"
    else:
        try:
            mode = os.stat(path).st_mode
            why = (
                ""
                if stat.S_ISREG(mode) and os.access(path, os.R_OK)
                else "which is a folder"
                if stat.S_ISDIR(mode)
                else "which this user cannot read"
                if stat.S_ISREG(mode)
                else "which is not a regular file"
            )
        except FileNotFoundError:
            why = "which does not exist"
        except (OSError, ValueError) as err:  # a loop of links, a name too long, a NUL byte
            why = f"which cannot be read: {getattr(err, 'strerror', None) or err}"
    if why:
        raise ArgumentError(
            f"launch: the script must be a readable file (Received: {received(path, cut=None)}, {why}). {fix}"
        )
    return path


def check_backup_dir(folder: Any) -> str:
    """``--backup-dir``: a folder this user can write in, or a path whose nearest existing parent
    is one (the tasks create it). An existing file, or a path under a file, is refused. It only
    looks: nothing is created.

    Example:
        >>> check_backup_dir("/dev/null/backups")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        autodist.errors.ArgumentError: launch: --backup-dir must be a folder, or a path a folder can be created at
        (Received: --backup-dir /dev/null/backups, which is under /dev/null, not a folder). It is where every attempt
        saves and resumes from. Pass a folder, or a new path in a folder you can write in.
    """
    fix = "It is where every attempt saves and resumes from. Pass a folder, or a new path in a folder you can write in."
    expected = "a folder, or a path a folder can be created at"
    path = os.fspath(folder) if isinstance(folder, os.PathLike) else folder
    if not isinstance(path, str) or not path or "\0" in path:
        raise _refuse("--backup-dir", expected, path, fix)
    problem = folder_problem(path)
    if problem:
        raise ArgumentError(
            f"launch: --backup-dir must be {expected} "
            f"(Received: --backup-dir {received(path, cut=None)}, {problem}). {fix}"
        )
    return path


def check_start(spec: Any, script: Any, limits: MachineLimits | None = None) -> None:
    """Everything about a local job that is checked before it starts, beyond its spec's own
    values (:class:`JobSpec`): that the tasks fit this machine (``limits``, read when not given),
    the script, the backup folder. Creates nothing."""
    check_local_tasks(spec.num_workers, spec.num_ps, machine_limits() if limits is None else limits)
    check_script(script)
    if spec.backup_dir is not None:
        check_backup_dir(spec.backup_dir)
