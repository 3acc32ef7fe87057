"""One writer per task folder: a process holds its backup folder for the whole ``fit``, with an
OS lock (``flock``) on a file in it, which the kernel lets go when the process ends however it
ends, so a holder that died leaves no lock behind.

A second process of the same task (on Kubernetes, the pod that replaces one which has only
started terminating; the same script started twice) finds the folder held. It waits for the
holder, at most the preemption grace (``AUTODIST_GRACE``, else Kubernetes's default 30 s) and never
longer than ``AUTODIST_PEER_TIMEOUT``: a predecessor writing its preemption save lets go when it
exits, and the new process resumes from that save. A holder still there after the wait is refused
with :class:`~autodist.errors.BackupFolderInUseError`, which names it.

Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> held = hold(folder, wait_s=0)
    >>> try:
    ...     hold(folder, wait_s=0)  # a second holder of the same folder (another process, in life)
    ... except BackupFolderInUseError as err:
    ...     print("refused:", "held by pid" in str(err))
    refused: True
    >>> held.release(remove=True)
    >>> hold(folder, wait_s=0).release(remove=True)  # free again
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from autodist.errors import BackupFolderInUseError
from autodist.jobs.private import private_folder
from autodist.log import get_logger
from autodist.settings import grace_setting, peer_timeout_setting

__all__ = ["HOLDER_FILE", "KUBERNETES_GRACE_S", "Holding", "hold", "wait_for_holder_s"]

#: The file in a task folder whose lock marks the folder held (its text names the holder).
HOLDER_FILE = ".autodist-holder"
#: Kubernetes's default ``terminationGracePeriodSeconds``: the longest a predecessor pod runs after SIGTERM.
KUBERNETES_GRACE_S = 30.0
_POLL_S = 0.2


@dataclass
class Holding:
    """This process's hold on a folder, until :meth:`release` (or the process's end)."""

    path: str
    fd: int | None

    def release(self, *, remove: bool = False) -> None:
        """Let go; with ``remove``, delete the holder file first (while still held: a process that
        waits for it then holds a new file, never this one)."""
        if self.fd is None:
            return
        if remove:
            with contextlib.suppress(OSError):
                os.remove(self.path)
        os.close(self.fd)  # the lock goes with the last descriptor
        self.fd = None


def wait_for_holder_s(environ: Mapping[str, str], peer_timeout_s: float | None = None) -> float:
    """How long a process waits for another holder of its folder: the preemption grace
    (``AUTODIST_GRACE``, which the launcher sets, else Kubernetes's default 30 s), at most the
    peer timeout (``peer_timeout_s``, the plan's; else ``AUTODIST_PEER_TIMEOUT``).

    Example:
        >>> wait_for_holder_s({}), wait_for_holder_s({"AUTODIST_GRACE": "90", "AUTODIST_PEER_TIMEOUT": "60"})
        (30.0, 60.0)
    """
    grace = grace_setting(environ) or KUBERNETES_GRACE_S
    bound = peer_timeout_s if peer_timeout_s is not None else peer_timeout_setting(environ, None)
    return min(grace, bound) if bound is not None else grace


def hold(
    folder: str,
    wait_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Holding:
    """Hold ``folder`` (created, private, if missing) for this process: at once when no live
    process holds it, else after its holder lets go, waiting at most ``wait_s`` seconds.

    Raises:
        BackupFolderInUseError: another process still holds it after ``wait_s``; the message names
            that process (pid, host, since when, its command line).
    """
    private_folder(folder)
    path = os.path.join(folder, HOLDER_FILE)
    deadline, said = clock() + wait_s, False
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            if clock() >= deadline:
                raise BackupFolderInUseError(
                    f"autodist's backup folder {folder} is held by {holder}, and it did not let go within {wait_s:g} "
                    "s. "
                    "Expected one process per task folder: two writers would overwrite each other's saves. Stop that "
                    "process (on Kubernetes, set the Job's podReplacementPolicy: Failed, as `python -m autodist "
                    "manifest` writes it, so a replacement pod starts after its predecessor ends), or pass "
                    "backup_dir= another folder."
                ) from None
            if not said:
                get_logger().warning(
                    f"autodist: {folder} is held by {holder}; waiting up to {wait_s:g} s for it to let go (a process "
                    "being replaced writes its last save first)"
                )
                said = True
            sleep(_POLL_S)
            continue
        with contextlib.suppress(OSError):  # the path names no file now
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                break
        os.close(fd)  # its holder removed the file as it let go: hold the new one
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps(_me()).encode())
    return Holding(path, fd)


def _me() -> dict[str, object]:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "command": " ".join(sys.argv),
    }


def _holder(fd: int) -> str:
    """The holder as its file names it (written once it held the lock)."""
    try:
        found = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
        return f"pid {found['pid']} on host {found['host']} (since {found['since']}: {found['command']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (it has not named itself yet)"
