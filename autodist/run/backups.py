"""Which ``fit`` calls save their state for a resume, and where: :func:`guard_for` arms the
preemption guard (:mod:`autodist.jobs.preemption`) for one ``fit``, or says why not;
:mod:`autodist.run.resume` trains the resumed ``fit``.

- A single-host run saves when given a folder (``backup_dir=``, ``AUTODIST_BACKUP_DIR``); every
  multi-worker run saves, one folder per worker.
- In a Ray Train worker the saves go into the run's folder in Ray's storage
  (:data:`RAY_BACKUPS`), where a worker group that Ray restarts finds them, and SIGTERM is noticed
  where it arrives there: TensorFlow's own handler (multi-worker) or the interpreter's exit
  (docs/ray.md). On cloud storage there is no such folder: Ray's checkpoints alone serve.
- None with ``backup_dir=False``, the caller's own ``BackupAndRestore``, or parameter servers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from autodist.detection import ray_train  # ray_train.ray_train_worker: the one probe, looked up when called
from autodist.jobs.agreement import ClusterAgreement, LocalAgreement, ack_timeout, next_fit_id
from autodist.jobs.preemption import Guard, guard
from autodist.jobs.private import backup_folder, command_line, default_backup_root, digest
from autodist.planning.plans import StrategyKind
from autodist.settings import backup_dir_setting

__all__ = ["RAY_BACKUPS", "Armed", "guard_for", "ray_owns_backups"]


def _single(backup_dir: Any) -> str:
    """A single process's folder: under ``AUTODIST_BACKUP_DIR``, which other scripts may share,
    named after the command line too."""
    return "single" if isinstance(backup_dir, str) else f"single-{digest(command_line())}"


@dataclass(frozen=True)
class Armed:
    """A guard ready for one ``fit``: its state and its two callbacks (see :func:`guard`)."""

    state: Guard
    first: Any
    last: Any


#: In a Ray Train worker, autodist's backups go here, inside the run's folder in Ray's storage.
RAY_BACKUPS = "autodist-backups"


def ray_owns_backups(backup_dir: Any) -> bool:
    """In a Ray Train worker not given a folder, Ray's run folder holds autodist's backups (or, on
    cloud storage, Ray's checkpoints alone serve), and no Keras ``BackupAndRestore`` is added:
    Ray's ports change at each restart (docs/ray.md)."""
    return ray_train.ray_train_worker() is not None and not isinstance(backup_dir, str)


def guard_for(backup_dir: Any, the_plan: Any, callbacks: Any, keras_module: Any, strategy: Any) -> Armed | None:
    """The preemption guard for this ``fit``, or ``None``: without a backup folder (a single-host
    run given neither ``backup_dir`` nor ``AUTODIST_BACKUP_DIR``; ``backup_dir=False``), with the
    caller's own ``BackupAndRestore``, or under parameter-server training (asynchronous: no step
    that every worker shares). In a Ray Train worker not given a folder, the backups go into the
    run's folder in Ray's storage (:data:`RAY_BACKUPS`), where a restarted worker group finds
    them, and SIGTERM is noticed at the interpreter's exit (Ray's own handler ends the process
    from the main thread); on cloud storage there is no such folder, and Ray's checkpoints alone
    serve."""

    fit_id = next_fit_id()  # every fit counts, guarded or not: workers must agree on the ids
    cluster = the_plan.cluster
    multi_worker = the_plan.strategy == StrategyKind.MULTI_WORKER_MIRRORED and cluster is not None and cluster.num_workers >= 2
    own_backup = any(type(cb).__name__ == "BackupAndRestore" for cb in callbacks or [])
    if backup_dir is False or own_backup or the_plan.strategy == StrategyKind.PARAMETER_SERVER:
        return None
    ray_worker = ray_train.ray_train_worker()
    if isinstance(backup_dir, str):
        root = backup_dir
    elif ray_worker is not None:
        if ray_worker.run_folder is None:
            return None
        root = os.path.join(ray_worker.run_folder, RAY_BACKUPS)
    elif multi_worker or backup_dir_setting(os.environ):
        root = default_backup_root(cluster, os.environ) if cluster is not None else str(backup_dir_setting(os.environ))
    else:
        return None
    task = backup_folder(root, cluster.task_type, cluster.task_index) if cluster is not None else os.path.join(root, _single(backup_dir))
    folder = os.path.join(task, f"fit-{fit_id}")  # one folder per fit: a second fit must not resume the first
    if multi_worker:
        assert cluster is not None
        worker = 0 if cluster.task_type == "chief" else cluster.task_index + (1 if "chief" in cluster.cluster_spec else 0)
        chief = ["chief 0"] if "chief" in cluster.cluster_spec else []
        names = tuple(chief + [f"worker {index}" for index in range(cluster.num_workers - len(chief))])
        agreement: Any = ClusterAgreement(worker, cluster.num_workers, fit_id, names, ack_timeout(os.environ)).start()
    else:
        agreement = LocalAgreement()
    tf_task = f"/job:{cluster.task_type}/task:{cluster.task_index}" if multi_worker and cluster is not None else None
    state = Guard(folder, agreement, strategy, root=root, own_root=not isinstance(backup_dir, str) and not backup_dir_setting(os.environ),
                  notice_at_exit=ray_worker is not None, tf_task=tf_task)  # fmt: skip
    return Armed(state, *guard(keras_module, state))
