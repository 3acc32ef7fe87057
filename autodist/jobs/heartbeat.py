"""The launcher's heartbeat: a task tells its launcher it makes progress by touching the file the
launcher named for it (``AUTODIST_HEARTBEAT_FILE``), so ``--stall-timeout`` can end a task that
stopped. Only the launcher's own file, in its private job folder, and only from the task itself.

Example:
    >>> from autodist.jobs.heartbeat import heartbeat_path
    >>> heartbeat_path("/tmp/autodist-0/job-x", 0, "worker 1", launcher_pid=42)
    '/tmp/autodist-0/job-x/attempt-0-worker-1.42.beat'
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Mapping
from typing import Any

from autodist import fields
from autodist.jobs.private import is_private_folder, private_root, private_root_path
from autodist.log import warn_all
from autodist.settings import HEARTBEAT_FILE_ENV
from autodist.upstream.keras_models import SupportsTensorLogs
from autodist.process import once

__all__ = ["beat", "heartbeat", "heartbeat_path", "launcher_heartbeat"]


#: The heartbeat files the launcher names: ``attempt-<N>-<task>.<launcher pid>.beat``.
_HEARTBEAT_NAME = re.compile(r"attempt-\d+-(?:chief|worker|ps)-\d+\.(\d+)\.beat")


def heartbeat_path(folder: str, attempt: int, task: str, launcher_pid: int | None = None) -> str:
    """The heartbeat file the launcher (this process) names for ``task`` (``"worker 1"``) of
    ``attempt`` in its job ``folder``: the name carries the launcher's pid, so that only the
    launcher's own children beat there (:func:`launcher_heartbeat`).

    Example:
        >>> heartbeat_path("/tmp/autodist-0/job-x", 0, "worker 1", launcher_pid=42)
        '/tmp/autodist-0/job-x/attempt-0-worker-1.42.beat'
    """
    pid = os.getpid() if launcher_pid is None else launcher_pid
    return os.path.join(folder, f"attempt-{attempt}-{task.replace(' ', '-')}.{pid}.beat")


def launcher_heartbeat(environ: Mapping[str, str]) -> str | None:
    """``AUTODIST_HEARTBEAT_FILE`` when this process is the task the launcher started, else ``None``.

    The path must be one the launcher names (:func:`heartbeat_path`) in a job folder directly
    inside :func:`private_root` (both folders private: no symlinks, mode 700); any other path is
    never touched nor removed, with one warning. Its children inherit the variable, so the name
    carries the launcher's pid, and only a process whose parent is the launcher (the task itself;
    no child, grandchild, or fork of it) beats: a child's ``fit`` cannot remove its task's file.
    """
    path = environ.get(HEARTBEAT_FILE_ENV)
    if not path:
        return None
    folder = os.path.dirname(path)
    match = _HEARTBEAT_NAME.fullmatch(os.path.basename(path))
    if match is not None and os.path.normpath(path) == path and os.path.basename(folder).startswith("job-"):
        if not os.path.lexists(folder):
            return None  # the launcher ended and removed its folder: nothing to tell
        if _private_folders(folder) and os.path.dirname(folder) == private_root():
            return path if int(match.group(1)) == os.getppid() else None  # a child of the task: not its to touch
    if once(f"heartbeat refused: {path}"):
        warn_all(
            [
                f"autodist ignores {HEARTBEAT_FILE_ENV}={path!r}: it is not a heartbeat file the launcher named "
                "in its private folder (Received: that path; expected "
                f"{private_root_path()}/job-*/attempt-<N>-<task>.<pid>.beat). "
                f"autodist never touches nor removes it. Unset {HEARTBEAT_FILE_ENV}: `python -m autodist launch` sets "
                "it for its tasks."
            ],
        )
    return None


def _private_folders(folder: str) -> bool:
    """Whether ``folder`` and the one above it are private folders (a missing one is not)."""
    try:
        return is_private_folder(os.lstat(folder)) and is_private_folder(os.lstat(os.path.dirname(folder)))
    except OSError:
        return False


def beat(environ: Mapping[str, str] | None = None, *, done: bool = False) -> None:
    """Tell the launcher this task made progress: touch ``AUTODIST_HEARTBEAT_FILE`` (only the
    launcher's own heartbeat file, only in the task it started: :func:`launcher_heartbeat`).
    ``autodist.fit`` beats by itself; a custom training loop calls ``autodist.beat()`` after each
    step to be watched by ``--stall-timeout``, and ``autodist.beat(done=True)`` when it ends
    (work after training is not watched). Outside a launched job it does nothing.

    Example:
        >>> import autodist
        >>> autodist.beat({})  # not in a launched job: nothing to do
    """
    fields.check_environ("autodist.beat", environ, done=done)
    path = launcher_heartbeat(os.environ if environ is None else environ)
    if path is None:
        return
    with contextlib.suppress(OSError):  # the launcher is gone, or its folder: nothing to tell
        if done:
            os.remove(path)
            return
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.utime(descriptor)
        finally:
            os.close(descriptor)


def heartbeat(keras_module: Any, *, per_batch: bool = True, environ: Mapping[str, str] | None = None) -> Any:
    """A callback that beats while ``fit`` runs: at its start, at each epoch's start and end,
    and, with ``per_batch``, after each training and validation batch (at most once a second).
    At the end of ``fit`` it removes the file: the launcher watches only tasks that are training.
    ``None`` outside a launched job, and in any process but the task the launcher started
    (:func:`launcher_heartbeat`)."""
    if launcher_heartbeat(os.environ if environ is None else environ) is None:
        return None

    class Heartbeat(SupportsTensorLogs, keras_module.callbacks.Callback):  # type: ignore[misc, name-defined]
        autodist_coarse_hooks = True  # not a reason to run batch hooks at every step
        last = 0.0

        def _beat(self, *args: Any, **kwargs: Any) -> None:
            if time.monotonic() - self.last >= 1.0:
                self.last = time.monotonic()
                beat(environ)

        def on_train_end(self, logs: Any = None) -> None:
            beat(environ, done=True)

        on_train_begin = on_epoch_begin = on_epoch_end = on_test_begin = _beat

    if not per_batch:
        return Heartbeat()

    class BatchHeartbeat(Heartbeat):  # type: ignore[misc, valid-type]
        on_train_batch_end = on_test_batch_end = Heartbeat._beat

    return BatchHeartbeat()
