"""Ray Train: whether this process is a worker of a Ray Train run, and its place in the group.

Ray Train (``TensorflowTrainer``, ``JaxTrainer``, ...) starts one process per worker and runs the
user's ``train_loop_per_worker`` in a thread of it. ``TensorflowTrainer`` sets ``TF_CONFIG``
(workers only: no ``chief`` entry, so worker 0 does the chief's duties) and
``TF_USE_LEGACY_KERAS=1`` before the loop runs; ``JaxTrainer`` joins JAX's processes itself only
on TPUs and GPUs. Ray sets no variable that names the worker, so the one probe,
:func:`ray_train_worker`, asks Ray's own context, and only when Ray is imported already: autodist
never imports Ray.

Example:
    >>> ray_train_worker() is None  # Ray is not imported here: not a Ray Train worker
    True
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["RayTrainWorker", "ray_train_worker"]


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
    return RayTrainWorker(rank, size, local, jax_joined=_jax_joined())


def _jax_joined() -> bool:
    jax = sys.modules.get("jax")
    if jax is None:
        return False
    try:
        from jax._src import distributed

        return distributed.global_state.client is not None
    except Exception:  # another JAX: it says nothing
        return False
