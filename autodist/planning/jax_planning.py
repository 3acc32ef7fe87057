"""Plan, Keras 3 on JAX: no distribution, ``data_parallel`` or ``model_parallel``. Pure.

:func:`autodist.planning.planner.plan` hands a snapshot whose backend is ``jax`` here. The devices are
JAX's (all processes' in a cluster: each process has the same local devices):

- one device: ``default`` (no distribution);
- the model fits one device (the per-device memory model of :mod:`autodist.planning.memory_model`, within
  ``gpu_memory_fraction`` of the smallest device; CPU devices report no memory, so it fits):
  ``data_parallel`` over every device, a ``("batch",)`` mesh;
- it does not fit: ``model_parallel`` over a ``(batch, model)`` mesh with the smallest ``model``
  axis that makes it fit. The generated layout map shards the largest kernels and embeddings
  first, each along its largest dimension that the ``model`` axis divides, until the estimate
  fits; the other variables are replicated. The reasons list the sharded variables and the
  memory per device before and after.

The global batch is a multiple of the ``batch`` axis (the replicas), as on TensorFlow. The
TensorFlow-only strategies are refused with the JAX one that does their job.

Example:
    >>> from autodist.detection.hardware import HardwareSnapshot
    >>> from autodist.detection.jax_devices import JaxDevice
    >>> snap = HardwareSnapshot.cpu_only(keras_backend="jax", jax_devices=(JaxDevice("cpu", "cpu"),) * 4)
    >>> p = plan_jax(snap, ModelInfo(num_params=10), batch_size=30)
    >>> (p.strategy.value, p.mesh.shape, p.global_batch_size)
    ('data_parallel', (4,), 32)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from autodist.detection.hardware import HardwareSnapshot
from autodist.detection.model_info import ModelInfo
from autodist.errors import AutodistError, StrategyUnavailableError
from autodist.planning import memory_model
from autodist.planning.choosers import choose_batch
from autodist.planning.global_batch import KERAS_DEFAULT_BATCH_SIZE
from autodist.planning.plans import DEFAULT_GPU_MEMORY_FRACTION, Plan
from autodist.planning.plans import StrategyKind as K
from autodist.planning.strategy_types import MODEL_AXIS, strategy_type

__all__ = ["plan_jax", "shard_layout"]


def plan_jax(
    snapshot: HardwareSnapshot,
    info: ModelInfo,
    *,
    batch_size: int | None = None,
    forced: K | None = None,
    gpu_memory_fraction: float = DEFAULT_GPU_MEMORY_FRACTION,
    refuse_when_nothing_fits: bool = True,
) -> Plan:
    """The JAX plan for ``snapshot`` and the model ``info`` describes (``num_params`` set when known).

    Raises:
        AutodistError: a TensorFlow-only strategy was forced (the message names the JAX one).
        StrategyUnavailableError: the model fits no mesh of these devices.
    """
    if forced is not None:
        strategy_type(forced).check_forced(snapshot, "jax")
    if not snapshot.jax_devices:
        raise AutodistError(
            "Keras is set to the jax backend (KERAS_BACKEND or keras.json), but JAX lists no "
            "device: JAX is not installed here. Expected jax and jaxlib. Install them with "
            'pip install "autodist[jax]", or set KERAS_BACKEND=tensorflow.'
        )
    processes = snapshot.cluster.num_workers if snapshot.cluster is not None else 1
    local = max(1, len(snapshot.jax_devices))
    total = local * processes
    model_axis, layout, reasons, warnings = _choose_mesh(
        snapshot, info, forced, (local, total), batch_size, gpu_memory_fraction, refuse_when_nothing_fits
    )
    kind = forced or (K.DEFAULT if total == 1 else K.MODEL_PARALLEL if model_axis > 1 else K.DATA_PARALLEL)
    replicas = total // model_axis if strategy_type(kind).distributes else 1
    batch = choose_batch(snapshot, kind, replicas, batch_size, KERAS_DEFAULT_BATCH_SIZE)
    platform = snapshot.jax_devices[0].platform if snapshot.jax_devices else "cpu"
    estimate = _estimate(info, layout, model_axis, batch.value.per_replica_batch_size)
    return Plan(
        strategy=kind,
        num_replicas=replicas,
        devices=tuple(f"{platform}:{i}" for i in range(local)),
        num_workers=processes,
        cluster=snapshot.cluster,
        keras_flavor="keras3",
        keras_version=info.keras_version or snapshot.keras_version,
        keras_backend="jax",
        global_batch_size=batch.value.global_batch_size,
        per_replica_batch_size=batch.value.per_replica_batch_size,
        requested_batch_size=batch.value.requested_batch_size,
        mesh=strategy_type(kind).mesh(replicas, model_axis, layout),
        memory=(estimate,) if estimate else (),
        footprint_bytes=estimate.device_bytes if estimate else None,
        reasons=(_why_devices(snapshot, processes, total, kind),) + reasons + batch.reasons,
        warnings=snapshot.diagnostics + warnings + batch.warnings,
    )


def _choose_mesh(
    snapshot: HardwareSnapshot,
    info: ModelInfo,
    forced: K | None,
    devices: tuple[int, int],
    batch_size: int | None,
    fraction: float,
    refuse: bool,
) -> tuple[int, tuple[tuple[str, tuple[str | None, ...]], ...], tuple[str, ...], tuple[str, ...]]:
    """The ``model`` axis size (it divides each process's ``local`` devices, so a shard never
    spans processes), the layout map, reasons and warnings."""
    local, total = devices
    axes = [d for d in range(2, local + 1) if local % d == 0]
    kind = strategy_type(forced) if forced is not None else None
    if kind is not None and kind.splits_weights and not info.variables:
        return axes[0] if axes else 1, (), (_VARIABLES_UNKNOWN,), ()
    if (kind is not None and not kind.distributes) or total == 1 or info.num_params is None:
        return 1, (), (() if info.num_params is not None or total == 1 else (_SIZE_UNKNOWN,)), ()
    memories = [d.memory_bytes for d in snapshot.jax_devices if d.memory_bytes]
    budget = int(fraction * min(memories)) if memories else None
    batch = batch_size or KERAS_DEFAULT_BATCH_SIZE
    replicated = _estimate(info, (), 1, math.ceil(batch / total))
    fits = budget is None or replicated is None or replicated.device_bytes <= budget
    if (kind is not None and not kind.splits_weights) or (kind is None and fits):
        why = (
            "device memory unknown (CPU devices)"
            if budget is None
            else f"needs {_size(replicated.device_bytes if replicated else None)} per device of {_size(budget)} "
            f"({fraction:g} of the smallest device)"
        )
        if fits:
            return 1, (), (f"the model fits one device: {why}",), ()
        return 1, (), (), (f"strategy='data_parallel' was forced and the model does not fit one device: it {why}",)
    if not info.variables and forced is None:
        return _refused(
            f"The model needs {_size(replicated.device_bytes)} per device replicated, more than {_size(budget)} "
            f"({fraction:g} of the smallest device), and its variables are unknown here (num_params only), so "
            "autodist cannot shard it. Expected the model itself. Pass the model (or a function that builds it) to "
            "autodist.fit, which shards its largest kernels.",
            refuse,
        )
    for model_axis in axes:
        per_replica = math.ceil(batch / (total // model_axis))
        layout = shard_layout(info, model_axis, None if forced else budget, per_replica)
        after = _estimate(info, layout, model_axis, per_replica)
        if forced or (after is not None and budget is not None and after.device_bytes <= budget):
            return model_axis, layout, (_why_sharded(replicated, after, layout, model_axis, budget),), ()
    return _refused(
        f"The model needs {_size(replicated.device_bytes if replicated else None)} per device replicated, and "
        f"more than {_size(budget)} per device ({fraction:g} of the smallest of {total} devices) even "
        f"with its kernels sharded over all {local}{' of a process' if local < total else ''}. Expected a model whose "
        "sharded state fits. Use more "
        "devices, a smaller batch, mixed precision (keras.mixed_precision.set_global_policy('mixed_bfloat16')), "
        "or fewer parameters.",
        refuse,
    )


def _refused(message: str, refuse: bool) -> tuple[int, tuple[Any, ...], tuple[str, ...], tuple[str, ...]]:
    if refuse:
        raise StrategyUnavailableError(message)
    return 1, (), (), (message,)


def shard_layout(
    info: ModelInfo, model_axis: int, budget: int | None, per_replica_batch: int
) -> tuple[tuple[str, tuple[str | None, ...]], ...]:
    """Shard the largest 2-D-or-more variables first, each along its largest dimension that
    ``model_axis`` divides, until the estimate fits ``budget`` (all of them when ``None``).

    Example:
        >>> info = ModelInfo(num_params=4160, variables=(("m/d/kernel", (64, 64)), ("m/d/bias", (64,)),
        ...     ("m/o/kernel", (64, 1))))
        >>> shard_layout(info, 2, None, 8)
        (('m/d/kernel', (None, 'model')), ('m/o/kernel', ('model', None)))
    """
    candidates = sorted((v for v in info.variables if len(v[1]) >= 2), key=lambda v: -math.prod(v[1]))
    layout: list[tuple[str, tuple[str | None, ...]]] = []
    for path, shape in candidates:
        spec = _spec(shape, model_axis)
        if spec is None:
            continue
        layout.append((path, spec))
        after = _estimate(info, tuple(layout), model_axis, per_replica_batch)
        if budget is not None and after is not None and after.device_bytes <= budget:
            break
    return tuple(layout)


def _spec(shape: tuple[int, ...], model_axis: int) -> tuple[str | None, ...] | None:
    """The sharding spec along the largest dimension ``model_axis`` divides (the last on ties)."""
    divisible = [i for i, d in enumerate(shape) if d % model_axis == 0 and d >= model_axis]
    if not divisible:
        return None
    axis = max(divisible, key=lambda i: (shape[i], i))
    return tuple(MODEL_AXIS if i == axis else None for i in range(len(shape)))


def _estimate(
    info: ModelInfo, layout: tuple[tuple[str, Any], ...], model_axis: int, per_replica: int
) -> memory_model.MemoryEstimate | None:
    """Per device: the replicated variables whole, the sharded ones divided by the ``model``
    axis; activations for the replica's batch (not divided: a conservative estimate)."""
    if info.num_params is None:
        return None
    sharded = {path for path, _ in layout}
    cut = sum(math.prod(shape) for path, shape in info.variables if path in sharded)
    held = info.num_params - cut + math.ceil(cut / model_axis)
    name = "model_parallel" if layout else "data_parallel"
    base = memory_model.estimate(name, dataclasses.replace(info, num_params=held), max(1, per_replica))
    if info.activation_elements is None:  # the allowance scales with the whole model, not the shard
        allowance = memory_model.estimate(name, info, max(1, per_replica)).device["activations"]
        base = dataclasses.replace(base, device={**base.device, "activations": allowance})
    return base


def _why_devices(snapshot: HardwareSnapshot, processes: int, total: int, kind: K) -> str:
    kinds = sorted({d.kind for d in snapshot.jax_devices}) or ["cpu"]
    source = f" ({snapshot.cluster.source})" if snapshot.cluster is not None else ""
    where = f"{total} JAX device(s) ({', '.join(kinds)})" + (
        f", {total // processes} in each of {processes} processes{source}" if processes > 1 else ""
    )
    if not strategy_type(kind).distributes:
        return (
            f"{where}: no keras.distribution needed"
            if total == 1
            else f"{where}: no distribution (strategy='default' was forced)"
        )
    return f"{where}: keras.distribution.{type(strategy_type(kind)).__name__} over them"  # the type is named as Keras's


def _why_sharded(
    before: Any, after: Any, layout: tuple[tuple[str, Any], ...], model_axis: int, budget: int | None
) -> str:
    names = ", ".join(f"{path} on dim {spec.index(MODEL_AXIS)}" for path, spec in layout) or "none (no kernel divides)"
    limit = f" (limit {_size(budget)})" if budget is not None else ""
    return (
        f"model_parallel: {len(layout)} variable(s) sharded over a '{MODEL_AXIS}' axis of {model_axis}: {names}; "
        f"memory per device {_size(before.device_bytes if before else None, 'unknown')} replicated, "
        f"{_size(after.device_bytes if after else None, 'unknown')} sharded{limit}"
    )


def _size(num_bytes: int | None, unknown: str = "unknown") -> str:
    """``3 * 2**20`` → ``"3.0 MiB"``: GiB, MiB or KiB, whichever reads best."""
    if num_bytes is None:
        return unknown
    unit, scale = next(
        (u, s) for u, s in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1)) if num_bytes >= s or s == 1
    )
    return f"{num_bytes / scale:.1f} {unit}"


_VARIABLES_UNKNOWN = (
    "model_parallel: the model's variables are unknown here (no model given), so none is "
    "sharded yet; autodist.fit makes the layout map from the model it trains"
)
_SIZE_UNKNOWN = (
    "the model's size is unknown (not built, no num_params), so it is assumed to fit one device: data_parallel"
)
