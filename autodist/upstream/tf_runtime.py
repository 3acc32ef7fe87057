"""TensorFlow's eager context and strategies, read where TensorFlow has no public accessor.

Each function here is one touch of :mod:`autodist.upstream.surface` (its name says which) and
checks it with :func:`~autodist.upstream.surface.available` first; where the touch is off, it
answers what TensorFlow's public API can tell, and says so in its docstring.

Example:
    >>> import tensorflow as tf
    >>> default_strategy() is tf.distribute.get_strategy()
    True
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from autodist.upstream.surface import available

__all__ = [
    "configure_coordination_service",
    "default_strategy",
    "get_key_value",
    "global_seed",
    "runtime_started",
    "set_key_value",
    "slurm_hostlist",
    "strategy_class_names",
    "strategy_parameter_device",
    "strategy_workers",
]


def runtime_started() -> bool:
    """Whether TensorFlow's runtime (its device context) is initialised (touch
    ``tf.runtime_started``; off: ``False``, and TensorFlow's own error comes later)."""
    if "tensorflow" not in sys.modules or not available("tf.runtime_started"):
        return False
    from tensorflow.python.eager import context

    return context.context()._context_handle is not None


def default_strategy() -> Any:
    """TensorFlow's default strategy object, whatever strategy is current (touch
    ``tf.default_strategy``; off: the current one where none is set)."""
    import tensorflow as tf

    if available("tf.default_strategy"):
        from tensorflow.python.distribute import distribute_lib

        return distribute_lib._get_default_strategy()
    return tf.distribute.get_strategy()


def configure_coordination_service(cluster_spec: Mapping[str, Sequence[str]], timeout_seconds: float) -> bool:
    """Configure the coordination service of a multi-worker job with a registration deadline,
    before MultiWorkerMirroredStrategy does (it keeps a service that is configured already), so
    a peer that never connects raises instead of hanging (touch ``tf.coordination_service``).

    Returns whether the deadline is in place (``False``: the touch is off, or a service exists).
    """
    if not available("tf.coordination_service"):
        return False
    from tensorflow.python.eager import context

    ctx = context.context()
    if ctx.coordination_service is not None:
        return False
    leader = "chief" if "chief" in cluster_spec else "worker"
    jobs = [
        context.coordination_config_pb2.CoordinatedJob(name=name, num_tasks=len(cluster_spec[name]))
        for name in ("chief", "worker")
        if name in cluster_spec
    ]
    ctx.configure_coordination_service(
        service_type="standalone",
        service_leader=f"/job:{leader}/replica:0/task:0",
        cluster_register_timeout_in_ms=int(timeout_seconds * 1000),
        coordinated_jobs=jobs,
    )
    # TensorFlow's Python API has no parameter for the barrier that makes the leader raise too
    # (from 2.19): that one field is set on the config proto where it exists.
    config = getattr(ctx, "_coordination_service_config", None)
    if config is not None and hasattr(config, "cluster_register_with_barrier"):
        config.cluster_register_with_barrier = True
    return True


def get_key_value(key: str, timeout_ms: int | None = None) -> str:
    """A value of the coordination service's key-value store (touch ``tf.coordination_key_value``:
    callers check :func:`~autodist.upstream.surface.available` first and save at epoch ends
    only where it is off). Blocks until the key is set, or ``timeout_ms`` passes."""
    from tensorflow.python.eager import context

    return context.context().get_config_key_value(key, **({} if timeout_ms is None else {"timeout_in_ms": timeout_ms}))


def set_key_value(key: str, value: str) -> None:
    """Set ``key`` in the coordination service's key-value store (see :func:`get_key_value`)."""
    from tensorflow.python.eager import context

    context.context().set_config_key_value(key, value)


def global_seed() -> int | None:
    """The global seed the script set (``tf.random.set_seed``, ``keras.utils.set_random_seed``),
    read without advancing TensorFlow's op-seed counter (touch ``tf.global_seed``; off: ``None``)."""
    if not available("tf.global_seed"):
        return None
    from tensorflow.python.eager import context

    return context.global_seed()


def strategy_class_names(cls: type) -> list[str]:
    """The names of a strategy class and its bases that are TensorFlow's own (defined under
    ``tensorflow.python.``, not DTensor's experimental classes of the same names): touch
    ``tf.strategy_internals``."""
    return [
        k.__name__
        for k in cls.__mro__
        if k.__module__.startswith("tensorflow.python.") and ".experimental." not in k.__module__
    ]


def strategy_workers(strategy: Any) -> int:
    """How many workers a strategy spans (touch ``tf.strategy_internals``; 1 where unknown)."""
    return int(getattr(strategy.extended, "_num_workers", 1) or 1)


def strategy_parameter_device(strategy: Any) -> str | None:
    """Where a CentralStorageStrategy keeps its variables (touch ``tf.strategy_internals``)."""
    device = getattr(strategy.extended, "_variable_device", None)
    return None if device is None else str(device)


def slurm_hostlist(nodelist: str, tasks_per_node: str) -> tuple[list[str], list[int]] | None:
    """SLURM's host list and tasks per node, expanded as TensorFlow's ``SlurmClusterResolver``
    expands them (touch ``tf.slurm_hostlist``; ``None`` where it is off).

    Raises:
        ValueError: the lists are malformed.
    """
    if not available("tf.slurm_hostlist"):
        return None
    from tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver import (
        expand_hostlist,
        expand_tasks_per_node,
    )

    return expand_hostlist(nodelist), expand_tasks_per_node(tasks_per_node)
