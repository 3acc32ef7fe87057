"""Ray Train's conventions, kept by ``autodist.fit`` in a Ray Train worker: each epoch's metrics
go to ``ray.train.report`` (every worker calls it once an epoch: it is a barrier, and Ray keeps
worker 0's), and worker 0's model goes with them as the epoch's ``ray.train.Checkpoint``, as Ray's
own ``ReportCheckpointCallback`` does. ``autodist.fit(..., ray_report=False)`` and
``ray_checkpoint=False`` opt out (docs/ray.md). Ray is imported here only inside a Ray Train
worker, where it is imported already.

autodist's own saves (:mod:`autodist.resume.guard`) travel in the same checkpoints: worker 0
adds its newest save under ``autodist/fit-<n>/`` (the same on every worker), at each epoch's end
but the fit's last and, on preemption, at the step every worker saved after
(:func:`report_saves`). A worker group that Ray restarts finds them in
``ray.train.get_checkpoint()`` (:func:`saves_from_checkpoint`).

Example:
    >>> import keras
    >>> ray_reporter(keras) is None  # not a Ray Train worker
    True
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from autodist.detection import ray_train  # ray_train.ray_train_worker: the one probe, looked up when called
from autodist.jobs.private import private_folder, private_root, release_private_root
from autodist.process import STATE

__all__ = [
    "RAY_MODEL_FILE",
    "RAY_SAVES_FOLDER",
    "RAY_STATE_FILE",
    "RaySaves",
    "ray_reporter",
    "report_saves",
    "saves_from_checkpoint",
]


#: What a checkpoint autodist reports to Ray holds: the model as Keras saves it, and the epoch.
RAY_MODEL_FILE, RAY_STATE_FILE = "model.keras", "autodist.json"
#: ... and, under this folder, worker 0's saves (the whole training state, the same on every
#: worker under MultiWorkerMirroredStrategy: one copy serves them all).
RAY_SAVES_FOLDER = "autodist"


class RaySaves:
    """Where this worker's saves of one ``fit`` are (``folder``, on this machine), where they go
    in a Ray checkpoint (``inside``: ``autodist/fit-<n>``), and which of them travel (``travelling``:
    the save names a resume needs, :func:`autodist.resume.train_state.needed_for_resume`)."""

    def __init__(self, folder: str, inside: str, travelling: Callable[[str], set[str]]):
        self.folder, self.inside, self.travelling = folder, inside, travelling

    def copy_into(self, checkpoint_folder: str) -> None:
        """The files of the saves a resume needs, into the checkpoint's ``inside`` folder."""
        names = self.travelling(self.folder) if os.path.isdir(self.folder) else set()
        if not names:
            return
        target = os.path.join(checkpoint_folder, self.inside)
        os.makedirs(target, exist_ok=True)
        for name in os.listdir(self.folder):
            if os.path.splitext(name)[0] in names:
                shutil.copy2(os.path.join(self.folder, name), target)


def saves_from_checkpoint(saves: RaySaves) -> bool:
    """Copy this ``fit``'s saves out of the checkpoint this process started with (what a restarted
    worker group gets from ``ray.train.get_checkpoint()``) into its save folder; ``False`` when
    it holds none of them."""
    import ray.train  # imported already: this process is a Ray Train worker

    # The checkpoint this process started with, read at its first ``fit``: each ``fit`` of a
    # restarted loop takes its saves from it, not from what an earlier one has reported since.
    if STATE.ray_started_with is None:
        STATE.ray_started_with = (ray.train.get_checkpoint(),)
    checkpoint = STATE.ray_started_with[0]
    if checkpoint is None:
        return False
    with checkpoint.as_directory() as found:
        source = os.path.join(found, saves.inside)
        if not os.path.isdir(source):
            return False
        private_folder(saves.folder)
        shutil.copytree(source, saves.folder, dirs_exist_ok=True)
    return True


def _metrics(epoch: int, logs: Mapping[str, Any] | None, **more: Any) -> dict[str, Any]:
    metrics: dict[str, Any] = {"epoch": epoch, **more}
    for name, value in (logs or {}).items():
        with contextlib.suppress(TypeError, ValueError):  # not a number: Ray's metrics are numbers
            metrics[name] = float(value)
    return metrics


@contextlib.contextmanager
def _checkpoint_folder() -> Iterator[str]:
    folder = tempfile.mkdtemp(prefix="ray-checkpoint-", dir=private_root())
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # Ray copied it into its storage
        release_private_root()


def _report(model: Any, metrics: dict[str, Any], state: dict[str, Any], saves: RaySaves | None, *, chief: bool) -> None:
    """Every worker reports (a barrier); worker 0 with its model and its saves."""
    import ray.train  # imported already: this process is a Ray Train worker

    with _checkpoint_folder() as folder:
        model.save(os.path.join(folder, RAY_MODEL_FILE))  # saving may run collectives: every worker saves
        if chief:
            with open(os.path.join(folder, RAY_STATE_FILE), "w", encoding="utf-8") as handle:
                json.dump(state, handle)
            if saves is not None:
                saves.copy_into(folder)
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(folder))
    if not chief:  # once its folder is gone
        ray.train.report(metrics)


def report_saves(model: Any, saves: RaySaves, epoch: int, step: int, logs: Mapping[str, Any] | None = None) -> None:
    """On preemption, in every worker after the save at the agreed step: that save to Ray, as the
    run's newest checkpoint (worker 0's model with it)."""
    worker = ray_train.ray_train_worker()
    chief = worker is None or worker.world_rank == 0
    _report(model, _metrics(epoch, logs, step=step), {"epoch": epoch, "step": step}, saves, chief=chief)


def ray_reporter(keras_module: Any, *, checkpoint: bool = True, saves: RaySaves | None = None) -> Any:
    """A callback that reports each epoch's metrics to Ray Train, or ``None`` outside a Ray Train
    worker (:func:`autodist.detection.ray_train.ray_train_worker`). Every worker calls
    ``ray.train.report`` once an epoch (it is a barrier; Ray keeps worker 0's metrics). With
    ``checkpoint``, every worker saves the model (saving may run collectives, as with
    ``ModelCheckpoint``) in a private folder, and worker 0's save is the epoch's
    ``ray.train.Checkpoint`` (``model.keras``, and ``autodist.json`` with the epoch): what Ray's
    own ``ReportCheckpointCallback`` reports; with ``saves``, each worker's saves go with it."""
    worker = ray_train.ray_train_worker()
    if worker is None:
        return None

    class RayReport(keras_module.callbacks.Callback):  # type: ignore[misc, name-defined]
        autodist_coarse_hooks = True  # not a reason to run batch hooks at every step
        autodist_after_guard = True  # after the preemption guard's last save of the epoch

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            import ray.train  # imported already: this process is a Ray Train worker

            if not checkpoint:
                ray.train.report(_metrics(epoch, logs))
                return
            # The fit's last epoch carries no save: a restart after the fit ended trains it again,
            # as after the launcher's restart (its saves are removed when it ends).
            last = epoch + 1 >= int(self.params.get("epochs") or 0) or bool(self.model.stop_training)
            _report(
                self.model,
                _metrics(epoch, logs),
                {"epoch": epoch},
                None if last else saves,
                chief=worker.world_rank == 0,
            )

    return RayReport()
