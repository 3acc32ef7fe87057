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
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autodist.cluster import ClusterInfo
from autodist.errors import AutodistError
from autodist.settings import BACKUP_DIR_ENV, HEARTBEAT_FILE_ENV, backup_dir_setting

__all__ = [
    "BATCH_HOOKS", "ChiefDuties", "backup_folder", "beat", "command_line", "default_backup_root", "digest", "heartbeat", "needs_each_step",
    "is_private_folder", "private_root", "private_root_path", "release_private_root", "uses_batch_hooks",
]  # fmt: skip

FILE_ATTRIBUTES = ("filepath", "log_dir", "filename")
BACKUP_ENV = BACKUP_DIR_ENV


def backup_folder(root: str, task_type: str, task_index: int) -> str:
    """This worker's own backup folder under ``root``."""
    return os.path.join(root, f"{task_type}-{task_index}")


def private_root_path() -> str:
    """``<temp>/autodist-<uid>``: :func:`private_root`'s path, not created here."""
    return os.path.join(tempfile.gettempdir(), f"autodist-{os.getuid()}")


def is_private_folder(info: os.stat_result) -> bool:
    """Whether ``os.lstat`` found a folder this user owns and nobody else may read."""
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def private_root() -> str:
    """This user's own folder for what autodist writes (backups, other workers' files, launcher
    state): ``<temp>/autodist-<uid>``, created with mode 0700.

    Raises:
        AutodistError: when the folder exists but another user owns it, or others can read it.
    """
    root = private_root_path()
    os.makedirs(root, mode=0o700, exist_ok=True)
    info = os.lstat(root)
    if not is_private_folder(info):
        raise AutodistError(
            f"autodist keeps its files in {root}, and that path is not a folder private to you "
            f"(owner uid {info.st_uid}, mode {stat.S_IMODE(info.st_mode):o}). Expected a folder "
            f"owned by uid {os.getuid()} with mode 700. Remove it, or point TMPDIR elsewhere."
        )
    return root


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


def beat(environ: Mapping[str, str] | None = None, *, done: bool = False) -> None:
    """Tell the launcher this task made progress: touch ``AUTODIST_HEARTBEAT_FILE``, when set.
    ``autodist.fit`` beats by itself; a custom training loop calls ``autodist.beat()`` after each
    step to be watched by ``--stall-timeout``, and ``autodist.beat(done=True)`` when it ends
    (work after training is not watched). Outside a launched job it does nothing.

    Example:
        >>> import autodist
        >>> autodist.beat({})  # not in a launched job: nothing to do
    """
    path = (os.environ if environ is None else environ).get(HEARTBEAT_FILE_ENV)
    if path:
        try:
            if done:
                os.remove(path)
                return
            with open(path, "a"):
                os.utime(path)
        except OSError:
            pass  # the launcher is gone, or its folder: nothing to tell


def heartbeat(keras_module: Any, *, per_batch: bool = True, environ: Mapping[str, str] | None = None) -> Any:
    """A callback that beats while ``fit`` runs: at its start, at each epoch's start and end,
    and, with ``per_batch``, after each training and validation batch (at most once a second).
    At the end of ``fit`` it removes the file: the launcher watches only tasks that are training.
    ``None`` outside a launched job."""
    path = (os.environ if environ is None else environ).get(HEARTBEAT_FILE_ENV)
    if not path:
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
            try:
                os.remove(path)
            except OSError:
                pass

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
