"""Callbacks: chief duties and automatic backups for multi-worker training, and which
callbacks need their batch hooks run at every step.

- File-writing callbacks (``ModelCheckpoint``, ``TensorBoard``, ``CSVLogger``, and any callback
  with a ``filepath``, ``log_dir`` or ``filename`` string) write to the user's paths on the chief
  only. Every other worker writes to a private temporary directory, removed afterwards. Non-chief
  workers must still *run* the save: saving under MultiWorkerMirroredStrategy runs collective ops,
  and a worker that skips it leaves the others waiting.
- ``BackupAndRestore`` is added in multi-worker runs (first in the list, so a backup of an epoch
  exists before any later callback of that epoch runs). With Keras 3 each worker gets its own
  folder: Keras 3 fails with one folder shared by all workers (``FileExistsError``, then
  ``BlockingIOError``). tf_keras is the opposite: its chief writes ``chief/`` in one shared folder
  and every worker restores from there, so per-worker folders make the workers resume at
  different epochs. tf_keras gets the shared folder (on several hosts it must be on a shared
  file system, as tf_keras requires).

Example:
    >>> from autodist.callbacks import backup_folder
    >>> backup_folder("/tmp/job", "worker", 1)
    '/tmp/job/worker-1'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autodist.cluster import ClusterInfo
from autodist.log import get_logger, warn_all
from autodist.settings import BACKUP_DIR_ENV, HEARTBEAT_FILE_ENV, backup_dir_setting

__all__ = [
    "BATCH_HOOKS", "ChiefDuties", "backup_folder", "beat", "command_line", "default_backup_root", "digest", "heartbeat", "heartbeat_path", "launcher_heartbeat", "needs_each_step",
    "is_private_folder", "private_root", "private_root_path", "release_private_root", "uses_batch_hooks",
]  # fmt: skip

FILE_ATTRIBUTES = ("filepath", "log_dir", "filename")
BACKUP_ENV = BACKUP_DIR_ENV


def backup_folder(root: str, task_type: str, task_index: int) -> str:
    """This worker's own backup folder under ``root``."""
    return os.path.join(root, f"{task_type}-{task_index}")


def private_root_path() -> str:
    """:func:`private_root`'s path, not created (nor chosen) here: ``<temp>/autodist-<uid>``, or
    the fallback once this process's :func:`private_root` found that path blocked. A reader
    (the tune cache) checks the folder is private before trusting it."""
    return _FALLBACK.get("root") or os.path.join(tempfile.gettempdir(), f"autodist-{os.getuid()}")


def is_private_folder(info: os.stat_result) -> bool:
    """Whether ``os.lstat`` found a folder this user owns and nobody else may read."""
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


_FALLBACK: dict[str, str] = {}  # the folder used when <temp>/autodist-<uid> is not ours


def private_root() -> str:
    """This user's own folder for what autodist writes (backups, other workers' files, launcher
    state): ``<temp>/autodist-<uid>``, created with mode 0700. When that path exists and is not
    a folder private to this user (another user made it first, or a link), autodist uses
    ``$XDG_RUNTIME_DIR/autodist`` or ``~/.cache/autodist`` (private to the user, stable across
    restarts) or, failing both, a fresh temporary folder, and says so once. It never fails."""
    if "root" in _FALLBACK:
        return _usable(_FALLBACK["root"]) or _fresh_fallback()
    root = os.path.join(tempfile.gettempdir(), f"autodist-{os.getuid()}")
    found = _usable(root)
    if found:
        return found
    info = os.lstat(root)
    for candidate in _fallbacks():
        if _usable(candidate):
            _FALLBACK["root"] = candidate
            break
    else:
        _fresh_fallback()
    get_logger().warning(
        f"autodist: {root} is not a folder private to you (owner uid {info.st_uid}, mode "
        f"{stat.S_IMODE(info.st_mode):o}); autodist keeps its files in {_FALLBACK['root']} instead. "
        "Remove that path, or point TMPDIR elsewhere, to use the usual folder."
    )
    return _FALLBACK["root"]


def _usable(path: str) -> str | None:
    """``path`` as a folder private to this user (created, mode 0700, if missing), or ``None``."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path if is_private_folder(os.lstat(path)) else None
    except OSError:
        return None


def _fallbacks() -> list[str]:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [os.path.join(folder, "autodist") for folder in (runtime, cache) if folder]


def _fresh_fallback() -> str:
    _FALLBACK["root"] = tempfile.mkdtemp(prefix=f"autodist-{os.getuid()}-")  # mode 0700
    return _FALLBACK["root"]


def release_private_root() -> None:
    """Remove :func:`private_root` when nothing is left in it (autodist leaves no empty folder)."""
    try:
        os.rmdir(private_root_path())
    except OSError:
        pass  # in use by another job or run, or already gone


def default_backup_root(cluster: ClusterInfo, environ: Mapping[str, str]) -> str:
    """``AUTODIST_BACKUP_DIR`` (the launcher sets it), else a folder named after the cluster,
    inside :func:`private_root`."""
    if backup_dir_setting(environ):
        return environ[BACKUP_ENV]
    # The cluster and the command line: another script, or the same one with other arguments,
    # on the same hosts and ports must not resume this run's backup.
    return os.path.join(private_root(), f"backup-{digest({'cluster': cluster.cluster_spec, 'argv': command_line()})}")


def command_line() -> list[str]:
    """This process's command line, its script as an absolute path (what names its backups)."""
    return [os.path.abspath(sys.argv[0]), *sys.argv[1:]]


def digest(value: Any) -> str:
    """A short, stable name for a JSON-able value (a folder name for a job's backups).

    Example:
        >>> digest({"b": 1, "a": [2]}) == digest({"a": [2], "b": 1})
        True
    """
    return hashlib.sha1(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


#: The heartbeat files the launcher names: ``attempt-<N>-<task>.<launcher pid>.beat``.
_HEARTBEAT_NAME = re.compile(r"attempt-\d+-(?:chief|worker|ps)-\d+\.(\d+)\.beat")
_REFUSED_HEARTBEATS: set[str] = set()  # warned about once per process


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
    if path not in _REFUSED_HEARTBEATS:
        _REFUSED_HEARTBEATS.add(path)
        warn_all([
            f"autodist ignores {HEARTBEAT_FILE_ENV}={path!r}: it is not a heartbeat file the launcher named "
            f"in its private folder (Received: that path; expected {private_root_path()}/job-*/attempt-<N>-<task>.<pid>.beat). "
            f"autodist never touches nor removes it. Unset {HEARTBEAT_FILE_ENV}: `python -m autodist launch` sets it for its tasks."
        ], stacklevel=4)
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
    path = launcher_heartbeat(os.environ if environ is None else environ)
    if path is None:
        return
    try:
        if done:
            os.remove(path)
            return
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.utime(descriptor)
        finally:
            os.close(descriptor)
    except OSError:
        pass  # the launcher is gone, or its folder: nothing to tell


def heartbeat(keras_module: Any, *, per_batch: bool = True, environ: Mapping[str, str] | None = None) -> Any:
    """A callback that beats while ``fit`` runs: at its start, at each epoch's start and end,
    and, with ``per_batch``, after each training and validation batch (at most once a second).
    At the end of ``fit`` it removes the file: the launcher watches only tasks that are training.
    ``None`` outside a launched job, and in any process but the task the launcher started
    (:func:`launcher_heartbeat`)."""
    if launcher_heartbeat(os.environ if environ is None else environ) is None:
        return None

    class Heartbeat(keras_module.callbacks.Callback):  # type: ignore[misc, name-defined]
        autodist_coarse_hooks = True  # not a reason to run batch hooks at every step
        _supports_tf_logs = True  # it reads no logs: tf_keras need not copy them to the host
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


@dataclass
class ChiefDuties:
    """Rewrites callbacks for this worker's role; :meth:`restore` undoes it and cleans up.

    Args:
        cluster: the cluster, or ``None`` on a single machine (then nothing changes).
        keras_module: ``keras`` or ``tf_keras``, whichever the model uses.
        backup_dir: the backup root; ``False`` turns the automatic backup off.
    """

    cluster: ClusterInfo | None
    keras_module: Any
    backup_dir: str | bool | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    _changed: list[tuple[Any, str, Any]] = field(default_factory=list)
    _private_dir: str | None = None
    _backup_root: str | None = None

    @property
    def active(self) -> bool:
        return self.cluster is not None and self.cluster.num_workers >= 2

    def prepare(self, callbacks: list[Any] | None) -> list[Any]:
        """The callbacks to pass to ``fit`` on this worker."""
        callbacks = list(callbacks or [])
        if not self.active:
            return callbacks
        assert self.cluster is not None
        backup_cls = self.keras_module.callbacks.BackupAndRestore
        per_worker = self.keras_module.__name__.split(".")[0] != "tf_keras"
        user_backups = [cb for cb in callbacks if isinstance(cb, backup_cls)]
        for cb in user_backups if per_worker else ():  # Keras 3 shared-folder bug: one per worker
            self._set(cb, "backup_dir", backup_folder(cb.backup_dir, self.cluster.task_type, self.cluster.task_index))
            _refresh_backup_paths(cb)
        if not self.cluster.is_chief:
            for cb in callbacks:
                if isinstance(cb, backup_cls):
                    continue
                for attribute in FILE_ATTRIBUTES:
                    value = getattr(cb, attribute, None)
                    if isinstance(value, str) and value:
                        self._set(cb, attribute, os.path.join(self._private(), os.path.basename(value.rstrip("/")) or attribute))
        if not user_backups and self.backup_dir is not False:
            root = self.backup_dir if isinstance(self.backup_dir, str) else default_backup_root(self.cluster, self.environ)
            self._backup_root = root
            folder = backup_folder(root, self.cluster.task_type, self.cluster.task_index) if per_worker else root
            callbacks.insert(0, backup_cls(backup_dir=folder))
        return callbacks

    def _private(self) -> str:
        if self._private_dir is None:
            assert self.cluster is not None
            self._private_dir = tempfile.mkdtemp(prefix=f"autodist-{self.cluster.task_type}-{self.cluster.task_index}-", dir=private_root())
        return self._private_dir

    def _set(self, obj: Any, attribute: str, value: Any) -> None:
        self._changed.append((obj, attribute, getattr(obj, attribute)))
        setattr(obj, attribute, value)

    def restore(self, *, succeeded: bool) -> None:
        """Put the user's callbacks back as they were and remove private files."""
        for obj, attribute, value in reversed(self._changed):
            setattr(obj, attribute, value)
            if attribute == "backup_dir":
                _refresh_backup_paths(obj)
        self._changed.clear()
        if self._private_dir is not None:
            shutil.rmtree(self._private_dir, ignore_errors=True)
            self._private_dir = None
            release_private_root()
        if succeeded and self._backup_root and self.cluster is not None:
            # Keras deletes the checkpoint at the end of a finished fit; drop the empty folders.
            for folder in (backup_folder(self._backup_root, self.cluster.task_type, self.cluster.task_index), self._backup_root):
                try:
                    os.rmdir(folder)
                except OSError:
                    pass
            release_private_root()


def _refresh_backup_paths(callback: Any) -> None:
    """Keras derives file names from ``backup_dir`` in ``__init__``; keep them in step."""
    root = callback.backup_dir
    names = (
        ("_weights_path", "latest.weights.h5"),
        ("_training_metadata_path", "training_metadata.json"),
        ("_prev_weights_path", "latest.weights.h5.bkp"),
        ("_prev_training_metadata_path", "training_metadata.json.bkp"),
    )
    for attribute, name in names:
        if hasattr(callback, attribute):  # Keras 3; tf_keras derives its paths at train time
            setattr(callback, attribute, os.path.join(root, name))


#: Batch hooks that run during ``fit`` (validation runs the test ones).
BATCH_HOOKS = (
    "on_batch_begin",
    "on_batch_end",
    "on_train_batch_begin",
    "on_train_batch_end",
    "on_test_batch_begin",
    "on_test_batch_end",
)


def _callback_base(callback: Any) -> Any:
    """The Keras ``Callback`` class (Keras 3 or tf_keras) that ``callback`` derives from."""
    for cls in type(callback).__mro__:
        if cls.__name__ == "Callback" and cls.__module__.startswith(("keras", "tf_keras")):
            return cls
    return None


def uses_batch_hooks(callback: Any) -> bool:
    """Whether a callback overrides a batch hook (a method or, as LambdaCallback does, an
    attribute). A callback that derives from no Keras ``Callback`` counts as using them.

    Example:
        >>> import keras
        >>> uses_batch_hooks(keras.callbacks.History()), uses_batch_hooks(keras.callbacks.TerminateOnNaN())
        (False, True)
    """
    base = _callback_base(callback)
    if base is None:
        return True
    for name in BATCH_HOOKS:
        method = getattr(callback, name, None)
        if getattr(method, "__func__", method) is not getattr(base, name):
            return True
    return False


def needs_each_step(callback: Any) -> bool:
    """Whether a callback's batch hooks must run at every step: it overrides them
    (:func:`uses_batch_hooks`), and it is not one of Keras's own callbacks set to work once per
    epoch, whose batch hooks then only count batches: ``ModelCheckpoint`` and ``BackupAndRestore``
    with ``save_freq="epoch"``, ``TensorBoard`` with ``update_freq="epoch"`` and no profiling.

    Example:
        >>> import keras
        >>> needs_each_step(keras.callbacks.ModelCheckpoint("m.keras")), needs_each_step(keras.callbacks.TerminateOnNaN())
        (False, True)
    """
    if not uses_batch_hooks(callback) or getattr(callback, "autodist_coarse_hooks", False):
        return False
    cls = type(callback)
    if not cls.__module__.startswith(("keras.", "tf_keras.")):
        return True
    if cls.__name__ in ("ModelCheckpoint", "BackupAndRestore"):
        return getattr(callback, "save_freq", None) != "epoch"
    if cls.__name__ == "TensorBoard":
        return getattr(callback, "update_freq", None) != "epoch" or getattr(callback, "_start_batch", 0) > 0
    return True
