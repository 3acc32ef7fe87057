"""Which ``fit`` calls save their state for a resume, and where: :func:`guard_for` arms the
preemption guard (:mod:`autodist.resume.preemption`) for one ``fit``, or says why not;
:mod:`autodist.resume.resumed_fit` trains the resumed ``fit``.

- A single-host run saves when given a folder (``backup_dir=``, ``AUTODIST_BACKUP_DIR``); every
  multi-worker run saves, one folder per worker.
- In a Ray Train worker the saves travel in the checkpoints autodist reports to Ray
  (:mod:`autodist.ray.reports`), where a worker group that Ray restarts finds them, and
  SIGTERM is noticed where it arrives there: TensorFlow's own handler (multi-worker) or the
  interpreter's exit (docs/ray.md).
- None with ``backup_dir=False``, the caller's own ``BackupAndRestore``, or parameter servers.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any

from autodist.detection import ray_train  # ray_train.ray_train_worker: the one probe, looked up when called
from autodist.resume.agreement import ClusterAgreement, LocalAgreement, ack_timeout, next_fit_id
from autodist.log import get_logger
from autodist.resume.holder import Holding, hold, wait_for_holder_s
from autodist.resume.preemption import Guard, guard
from autodist.resume.train_state import needed_for_resume
from autodist.jobs.private import backup_folder, command_line, default_backup_root, digest, private_root
from autodist.ray.reports import RAY_SAVES_FOLDER, RaySaves, report_saves, saves_from_checkpoint
from autodist.settings import backup_dir_setting
from autodist.upstream.surface import available

__all__ = ["Armed", "guard_for", "ray_owns_backups"]


def _single(backup_dir: Any) -> str:
    """A single process's folder: under ``AUTODIST_BACKUP_DIR``, which other scripts may share,
    named after the command line too."""
    return "single" if isinstance(backup_dir, str) else f"single-{digest(command_line())}"


@dataclass(frozen=True)
class Armed:
    """A guard ready for one ``fit``: its state and its two callbacks (see :func:`guard`), and,
    in a Ray Train worker, its saves as they travel in Ray's checkpoints."""

    state: Guard
    first: Any
    last: Any
    ray_saves: RaySaves | None = None


def _hold(folder: str, the_plan: Any) -> Holding | None:
    """This process's hold on its task folder (one writer per folder), or ``None`` when the folder
    cannot be made or locked at all (read-only, gone): the saves then fail, each said, and the
    training goes on."""
    try:
        return hold(folder, wait_for_holder_s(os.environ, getattr(the_plan, "peer_timeout_seconds", None)))
    except OSError as err:
        get_logger().warning(
            f"autodist: cannot hold the backup folder {folder} ({type(err).__name__}: {err}); its saves will be tried "
            "at each epoch's end"
        )
        return None


def ray_owns_backups(backup_dir: Any) -> bool:
    """In a Ray Train worker not given a folder, autodist's saves travel in Ray's checkpoints (or
    Ray's checkpoints alone serve), and no Keras ``BackupAndRestore`` is added: Ray's ports
    change at each restart (docs/ray.md)."""
    return ray_train.ray_train_worker() is not None and not isinstance(backup_dir, str)


def guard_for(
    backup_dir: Any, the_plan: Any, callbacks: Any, keras_module: Any, strategy: Any, *, ray_checkpoints: bool = True
) -> Armed | None:
    """The preemption guard for this ``fit``, or ``None``: without a backup folder (a single-host
    run given neither ``backup_dir`` nor ``AUTODIST_BACKUP_DIR``; ``backup_dir=False``), with the
    caller's own ``BackupAndRestore``, or under parameter-server training (asynchronous: no step
    that every worker shares). In a Ray Train worker not given a folder, the saves are made in a
    private folder of this process and travel in the checkpoints autodist reports to Ray
    (``ray_checkpoints``: not when the caller opted out of them or reports with Ray's own
    callback, and then there is no guard); a worker group that Ray restarts takes them from
    ``ray.train.get_checkpoint()``. SIGTERM is noticed where it arrives in a Ray worker
    (:class:`autodist.resume.preemption.Guard`)."""
    fit_id = next_fit_id()  # every fit counts, guarded or not: workers must agree on the ids
    cluster = the_plan.cluster
    multi_worker = the_plan.type.collective_workers and cluster is not None and cluster.num_workers >= 2
    own_backup = any(type(cb).__name__ == "BackupAndRestore" for cb in callbacks or [])
    if backup_dir is False or own_backup or the_plan.type.asynchronous:
        return None
    if multi_worker and not available("tf.coordination_key_value"):
        return None  # the workers could not agree on a save: none is made (warned once)
    ray_worker = ray_train.ray_train_worker()
    in_ray = ray_worker is not None and not isinstance(backup_dir, str)
    if isinstance(backup_dir, str):
        root = backup_dir
    elif in_ray:
        if not ray_checkpoints:
            return None
        root = tempfile.mkdtemp(prefix="ray-saves-", dir=private_root())
    elif multi_worker or backup_dir_setting(os.environ):
        root = default_backup_root(cluster, os.environ) if cluster is not None else str(backup_dir_setting(os.environ))
    else:
        return None
    task = (
        backup_folder(root, cluster.task_type, cluster.task_index)
        if cluster is not None
        else os.path.join(root, _single(backup_dir))
    )
    folder = os.path.join(task, f"fit-{fit_id}")  # one folder per fit: a second fit must not resume the first
    holding = _hold(folder, the_plan)
    # worker 0's, the same on every worker
    ray_saves = RaySaves(folder, f"{RAY_SAVES_FOLDER}/fit-{fit_id}", needed_for_resume) if in_ray else None
    if ray_saves is not None:
        saves_from_checkpoint(ray_saves)  # a restarted worker group: the saves its predecessor reported
    if multi_worker:
        assert cluster is not None
        worker = (
            0 if cluster.task_type == "chief" else cluster.task_index + (1 if "chief" in cluster.cluster_spec else 0)
        )
        chief = ["chief 0"] if "chief" in cluster.cluster_spec else []
        names = tuple(chief + [f"worker {index}" for index in range(cluster.num_workers - len(chief))])
        agreement: Any = ClusterAgreement(worker, cluster.num_workers, fit_id, names, ack_timeout(os.environ)).start()
    else:
        agreement = LocalAgreement()
    tf_task = f"/job:{cluster.task_type}/task:{cluster.task_index}" if multi_worker and cluster is not None else None
    own_root = not isinstance(backup_dir, str) and not backup_dir_setting(os.environ)
    state = Guard(
        folder,
        agreement,
        strategy,
        root=root,
        own_root=own_root,
        notice_at_exit=ray_worker is not None,
        tf_task=tf_task,
        holding=holding,
    )
    if ray_saves is not None:
        saves = ray_saves  # bound for the closure
        state.before_exit = lambda model, position, logs: report_saves(
            model, saves, position.epoch, position.step, logs
        )
        state.destination, state.staging = "Ray Train, as the run's newest checkpoint", True
    return Armed(state, *guard(keras_module, state), ray_saves=ray_saves)
