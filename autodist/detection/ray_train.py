"""Ray Train: whether this process is a worker of a Ray Train run, and its place in the group.

Ray Train (``TensorflowTrainer``, ``JaxTrainer``, ...) starts one process per worker and runs the
user's ``train_loop_per_worker`` in a thread of it. ``TensorflowTrainer`` sets ``TF_CONFIG``
(workers only: no ``chief`` entry, so worker 0 does the chief's duties) and
``TF_USE_LEGACY_KERAS=1`` before the loop runs; ``JaxTrainer`` joins JAX's processes itself only
on TPUs and GPUs. Ray sets no variable that names the worker, so the one probe,
:func:`ray_train_worker`, asks Ray's own context, and only when Ray is imported already: autodist
never imports Ray.

A Ray Data shard (``ray.train.get_dataset_shard(...)``, a ``DataIterator``) is recognised by its
class alone (:func:`is_data_iterator`), again without importing Ray.

Example:
    >>> ray_train_worker() is None  # Ray is not imported here: not a Ray Train worker
    True
    >>> is_data_iterator([1, 2, 3])
    False
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any

from autodist.detection.cluster_spec import ClusterInfo
from autodist.upstream.jax_runtime import joined_jax_cluster

__all__ = ["RAY_JAX_SOURCE", "RayTrainWorker", "is_data_iterator", "jax_cluster", "ray_train_worker"]

#: The cluster source of a Ray Train worker group joined into one JAX runtime (the plan's reasons say it).
RAY_JAX_SOURCE = "Ray Train"


@dataclass(frozen=True)
class RayTrainWorker:
    """This process's place in its Ray Train worker group.

    Attributes:
        world_rank: the worker's rank in the group (0 does the chief's duties).
        world_size: the number of workers.
        local_rank: the worker's rank on its node.
        jax_joined: JAX's processes are joined already (``JaxTrainer`` on TPUs and GPUs does it).
    """

    world_rank: int
    world_size: int
    local_rank: int
    jax_joined: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ray_train_worker() -> RayTrainWorker | None:
    """This process's Ray Train worker, or ``None`` (Ray not imported, or not inside a Ray Train
    worker: ``ray.train.get_context()`` works only there)."""
    ray_train = sys.modules.get("ray.train")
    if ray_train is None:
        return None
    try:
        context = ray_train.get_context()
        rank, size, local = int(context.get_world_rank()), int(context.get_world_size()), int(context.get_local_rank())
    except Exception:  # outside a worker, Ray says so with its own errors
        return None
    return RayTrainWorker(rank, size, local, jax_joined=joined_jax_cluster())


def is_data_iterator(x: Any) -> bool:
    """Whether ``x`` is a Ray Data iterator: the shard ``ray.train.get_dataset_shard(...)`` gives
    each worker (``ray.data.DataIterator`` and its subclasses)."""
    return any(cls.__name__ == "DataIterator" and cls.__module__.startswith("ray.data") for cls in type(x).__mro__)


def jax_cluster(worker: RayTrainWorker, coordinator: str) -> ClusterInfo:
    """The cluster a Ray Train worker group forms as one JAX runtime: ``world_size`` workers,
    this one at ``world_rank``, worker 0 the coordinator (at ``coordinator``) and the chief.
    Ray does not tell a worker its peers' addresses, nor does JAX need them: the other entries
    name the workers by rank.

    Example:
        >>> c = jax_cluster(RayTrainWorker(1, 2, 0), "127.0.0.1:1234")
        >>> c.cluster_spec["worker"], c.task_index, c.is_chief
        (['127.0.0.1:1234', 'ray-train-worker-1'], 1, False)
    """
    names = [coordinator] + [f"ray-train-worker-{rank}" for rank in range(1, worker.world_size)]
    return ClusterInfo(
        source=RAY_JAX_SOURCE, task_type="worker", task_index=worker.world_rank, cluster_spec={"worker": names}
    )
