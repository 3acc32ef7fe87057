"""Callbacks: chief duties and automatic backups for multi-worker training, and which
callbacks need their batch hooks run at every step.

- File-writing callbacks (``ModelCheckpoint``, ``TensorBoard``, ``CSVLogger``, and any callback
  with a ``filepath``, ``log_dir`` or ``filename`` string or ``os.PathLike``) write to the user's paths on the chief
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
    >>> from autodist.core.callbacks import needs_each_step
    >>> needs_each_step(object())  # not a Keras callback: its hooks are its own, run at every step
    True
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from autodist.detection.cluster import ClusterInfo
from autodist.jobs.heartbeat import heartbeat
from autodist.jobs.private import backup_folder, default_backup_root, private_root, release_private_root
from autodist.ray.reports import ray_reporter
from autodist.upstream.keras_models import backup_paths_under, profiles_batches

__all__ = [
    "BATCH_HOOKS",
    "ChiefDuties",
    "FILE_ATTRIBUTES",
    "final_callbacks",
    "needs_each_step",
    "ray_reports_itself",
    "uses_batch_hooks",
]

FILE_ATTRIBUTES = ("filepath", "log_dir", "filename")


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
            backup_paths_under(cb, cb.backup_dir)  # Keras derives file names from backup_dir in __init__
        if not self.cluster.is_chief:
            for cb in callbacks:
                if isinstance(cb, backup_cls):
                    continue
                for attribute in FILE_ATTRIBUTES:
                    value = getattr(cb, attribute, None)
                    # a pathlib.Path in a callback of the user's own
                    value = os.fspath(value) if isinstance(value, os.PathLike) else value
                    if isinstance(value, str) and value:
                        self._set(
                            cb,
                            attribute,
                            os.path.join(self._private(), os.path.basename(value.rstrip("/")) or attribute),
                        )
        if not user_backups and self.backup_dir is not False:
            root = (
                self.backup_dir if isinstance(self.backup_dir, str) else default_backup_root(self.cluster, self.environ)
            )
            self._backup_root = root
            folder = backup_folder(root, self.cluster.task_type, self.cluster.task_index) if per_worker else root
            callbacks.insert(0, backup_cls(backup_dir=folder))
        return callbacks

    def _private(self) -> str:
        if self._private_dir is None:
            assert self.cluster is not None
            self._private_dir = tempfile.mkdtemp(
                prefix=f"autodist-{self.cluster.task_type}-{self.cluster.task_index}-", dir=private_root()
            )
        return self._private_dir

    def _set(self, obj: Any, attribute: str, value: Any) -> None:
        self._changed.append((obj, attribute, getattr(obj, attribute)))
        setattr(obj, attribute, value)

    @contextlib.contextmanager
    def held(self, callbacks: list[Any] | None) -> Iterator[list[Any]]:
        """:meth:`prepare`'s callbacks for the ``fit`` inside; :meth:`restore` after, however it ends."""
        succeeded = False
        try:
            yield self.prepare(callbacks)
            succeeded = True
        finally:
            self.restore(succeeded=succeeded)

    def restore(self, *, succeeded: bool) -> None:
        """Put the user's callbacks back as they were and remove private files."""
        for obj, attribute, value in reversed(self._changed):
            setattr(obj, attribute, value)
            if attribute == "backup_dir":
                backup_paths_under(obj, obj.backup_dir)
        self._changed.clear()
        if self._private_dir is not None:
            shutil.rmtree(self._private_dir, ignore_errors=True)
            self._private_dir = None
            release_private_root()
        if succeeded and self._backup_root and self.cluster is not None:
            # Keras deletes the checkpoint at the end of a finished fit; drop the empty folders.
            for folder in (
                backup_folder(self._backup_root, self.cluster.task_type, self.cluster.task_index),
                self._backup_root,
            ):
                with contextlib.suppress(OSError):
                    os.rmdir(folder)
            release_private_root()


#: Batch hooks that run during ``fit`` (validation runs the test ones).
BATCH_HOOKS = (
    "on_batch_begin",
    "on_batch_end",
    "on_train_batch_begin",
    "on_train_batch_end",
    "on_test_batch_begin",
    "on_test_batch_end",
)


def uses_batch_hooks(callback: Any) -> bool:
    """Whether a callback overrides a batch hook (a method or, as LambdaCallback does, an
    attribute). A callback that derives from no Keras ``Callback`` counts as using them.

    Example:
        >>> import keras
        >>> uses_batch_hooks(keras.callbacks.History()), uses_batch_hooks(keras.callbacks.TerminateOnNaN())
        (False, True)
    """
    bases = type(callback).__mro__
    base = next((c for c in bases if c.__name__ == "Callback" and c.__module__.startswith(("keras", "tf_keras"))), None)
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
        >>> checkpoint, terminate = keras.callbacks.ModelCheckpoint("m.keras"), keras.callbacks.TerminateOnNaN()
        >>> needs_each_step(checkpoint), needs_each_step(terminate)
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
        return getattr(callback, "update_freq", None) != "epoch" or profiles_batches(callback)
    return True


def ray_reports_itself(callbacks: Any) -> bool:
    """Whether a callback of Ray's own (``ReportCheckpointCallback``) reports to Ray Train."""
    return any(type(cb).__module__.startswith(("ray.train.", "ray.air.")) for cb in callbacks or [])


def final_callbacks(
    keras_module: Any,
    callbacks: Any,
    *,
    per_batch: bool = True,
    environ: Mapping[str, str] | None = None,
    ray_report: bool = True,
    ray_checkpoint: bool = True,
    ray_saves: Any = None,
) -> list[Any]:
    """The final callback list of every ``fit`` (TensorFlow, parameter servers, JAX): the caller's
    callbacks (as :class:`ChiefDuties` prepared them for this worker's role), then the launcher's
    heartbeat, in a launched job only (``per_batch=False``: at epochs only, for the
    parameter-server loop, whose steps run on the workers), then, in a Ray Train worker and with
    ``ray_report``, each epoch's metrics to ``ray.train.report``, with worker 0's model as the
    epoch's ``ray.train.Checkpoint`` (``ray_checkpoint``). Not when a callback of Ray's own
    (``ReportCheckpointCallback``) reports already: two reports an epoch would be two checkpoints.
    ``ray_saves``: the preemption guard's saves, which travel in those checkpoints."""
    beat = heartbeat(keras_module, per_batch=per_batch, environ=environ)
    report = (
        ray_reporter(keras_module, checkpoint=ray_checkpoint, saves=ray_saves)
        if ray_report and not ray_reports_itself(callbacks)
        else None
    )
    return list(callbacks or []) + [cb for cb in (beat, report) if cb is not None]
