"""Ray Train's conventions, kept by ``autodist.fit`` in a Ray Train worker: each epoch's metrics
go to ``ray.train.report`` (every worker calls it once an epoch: it is a barrier, and Ray keeps
worker 0's), and worker 0's model goes with them as the epoch's ``ray.train.Checkpoint``, as Ray's
own ``ReportCheckpointCallback`` does. ``autodist.fit(..., ray_report=False)`` and
``ray_checkpoint=False`` opt out (docs/ray.md). Ray is imported here only inside a Ray Train
worker, where it is imported already.

Example:
    >>> import keras
    >>> ray_reporter(keras) is None  # not a Ray Train worker
    True
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any

from autodist.detection import ray_train  # ray_train.ray_train_worker: the one probe, looked up when called
from autodist.jobs.private import private_root, release_private_root

__all__ = ["RAY_MODEL_FILE", "RAY_STATE_FILE", "ray_reporter"]


#: What a checkpoint autodist reports to Ray holds: the model as Keras saves it, and the epoch.
RAY_MODEL_FILE, RAY_STATE_FILE = "model.keras", "autodist.json"


def ray_reporter(keras_module: Any, *, checkpoint: bool = True) -> Any:
    """A callback that reports each epoch's metrics to Ray Train, or ``None`` outside a Ray Train
    worker (:func:`autodist.detection.ray_train.ray_train_worker`). Every worker calls
    ``ray.train.report`` once an epoch (it is a barrier; Ray keeps worker 0's metrics). With
    ``checkpoint``, every worker saves the model (saving may run collectives, as with
    ``ModelCheckpoint``) in a private folder, and worker 0's save is the epoch's
    ``ray.train.Checkpoint`` (``model.keras``, and ``autodist.json`` with the epoch): what Ray's
    own ``ReportCheckpointCallback`` reports."""
    worker = ray_train.ray_train_worker()
    if worker is None:
        return None

    class RayReport(keras_module.callbacks.Callback):  # type: ignore[misc, name-defined]
        autodist_coarse_hooks = True  # not a reason to run batch hooks at every step

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            import ray.train  # imported already: this process is a Ray Train worker

            metrics = {"epoch": epoch}
            for name, value in (logs or {}).items():
                try:
                    metrics[name] = float(value)
                except (TypeError, ValueError):
                    pass  # not a number: Ray's metrics are numbers
            if not checkpoint:
                ray.train.report(metrics)
                return
            folder = tempfile.mkdtemp(prefix="ray-checkpoint-", dir=private_root())
            try:
                self.model.save(os.path.join(folder, RAY_MODEL_FILE))
                with open(os.path.join(folder, RAY_STATE_FILE), "w", encoding="utf-8") as handle:
                    json.dump({"epoch": epoch}, handle)
                chief = worker.world_rank == 0
                ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(folder) if chief else None)
            finally:
                shutil.rmtree(folder, ignore_errors=True)  # Ray copied worker 0's into its storage
                release_private_root()

    return RayReport()
