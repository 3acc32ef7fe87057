"""Plan layer, rules: one small chooser per decision, each returning its value and its reasons.

:func:`autodist.planning.planner.plan` calls them in order; every chooser is pure (no machine, no
environment but the ``environ`` it is given) and says why, with the numbers, in the
:class:`Choice` it returns. The rules for the strategy, in order:

1. A TPU means ``tpu``.
2. A cluster whose task is an ``evaluator`` trains nothing: ``default``.
3. A cluster with ``ps`` tasks means ``parameter_server``.
4. A cluster with 2 or more workers (chief counted) means ``multi_worker_mirrored``.
5. 2 or more GPUs mean ``mirrored``, or ``central_storage`` when the model's memory estimate
   (:mod:`autodist.planning.memory_model`) does not fit the smallest GPU but each GPU's share under
   central_storage does; neither fitting is a ``StrategyUnavailableError``.
6. One GPU means ``one_device`` on ``/gpu:0``, or ``central_storage`` as in 5.
7. CPU only means ``default``; with ``AUTODIST_CPU_DEVICES=N`` (N >= 2), ``mirrored`` over the N
   logical CPU devices. Measured on 2 cores, that split is slower than ``default``, whatever the
   cross-device op (``python -m benchmarks``, "decision quality"; figures in
   benchmarks/README.md): it exists to run distributed code on one machine, so it is kept, and the reason
   says so.

Example:
    >>> from autodist.detection.hardware import HardwareSnapshot
    >>> choice = choose_kind(HardwareSnapshot.cpu_only(num_cpu_devices=2), forced=None)
    >>> choice.value.value, "AUTODIST_CPU_DEVICES=2" in choice.reasons[0]
    ('mirrored', True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autodist.detection.model_info import ModelInfo
from autodist.detection.snapshot import HardwareSnapshot
from autodist.errors import StrategyUnavailableError
from autodist.planning.global_batch import (
    OWN_STEPS_READ_REPLICAS,
    BatchDecision,
    adjust_global_batch,
    split_notes,
)
from autodist.planning.keras_compat import PATCHES, WORKAROUNDS
from autodist.upstream.keras_optimizer import DISTRIBUTED_GRADIENTS
from autodist.upstream.keras_own_steps import OWN_STEP_REPLICA_MEAN
from autodist.upstream.keras_variables import BATCHNORM_MOVING_STATISTICS, REPLICA_RANDOM_STREAMS
from autodist.planning.memory_model import MemoryEstimate, estimate, fit_on_gpus
from autodist.planning.plans import StrategyKind, format_gib
from autodist.planning.strategy_types import Choice, Layout, strategy_type

__all__ = [
    "Choice",
    "Layout",
    "choose_batch",
    "choose_unsplit",
    "choose_coordinator_threads",
    "choose_kind",
    "choose_memory",
    "MemoryFacts",
    "choose_workarounds",
    "choose_data_parallel_notes",
]

K = StrategyKind


def choose_kind(
    snapshot: HardwareSnapshot,
    *,
    forced: StrategyKind | None,
    memory: MemoryFacts | None = None,
    fraction: float = 0.9,
    forced_by: str = "the caller",
) -> Choice[StrategyKind]:
    """The strategy: the forced one (by ``forced_by``: an argument, or a named setting) when it can
    run here, else the rules of the module docstring.

    Raises:
        StrategyUnavailableError: when a forced strategy cannot run here, or when no strategy's
            memory estimate fits the GPUs (``memory.refuse``; else the plan warns).
    """
    if forced is not None:
        if strategy_type(forced).backend == "tensorflow":  # a JAX plan is checked by its own planner
            strategy_type(forced).check_forced(snapshot)
        return Choice(forced, (f"strategy={forced.value!r} was forced by {forced_by}",))
    cluster = snapshot.cluster
    if snapshot.tpu is not None:
        return Choice(K.TPU, (f"a TPU was found ({snapshot.tpu.source}={snapshot.tpu.name})",))
    if cluster is not None and cluster.task_type == "evaluator":
        return Choice(K.DEFAULT, ("this task is the cluster's evaluator: it evaluates, it does not train",))
    if cluster is not None and cluster.num_ps > 0:
        return Choice(
            K.PARAMETER_SERVER,
            (
                f"the cluster has {cluster.num_ps} ps task(s) and {cluster.num_workers} worker(s) "
                f"({cluster.source}): asynchronous parameter-server training",
            ),
        )
    if cluster is not None and cluster.num_workers >= 2:
        return Choice(
            K.MULTI_WORKER_MIRRORED,
            (f"the cluster has {cluster.num_workers} workers ({cluster.source}): synchronous multi-worker training",),
        )
    single = (f"{cluster.source} defines a single worker: planning for one machine",) if cluster else ()
    choice = _choose_single_host(snapshot, memory, fraction)
    central = (
        (f"variables are kept on /cpu:0 and the GPUs compute ({choice.value.value})",)
        if strategy_type(choice.value).variables_home == "host"
        else ()
    )
    return Choice(choice.value, single + choice.reasons + central, choice.warnings)


def _choose_single_host(
    snapshot: HardwareSnapshot, memory: MemoryFacts | None, fraction: float
) -> Choice[StrategyKind]:
    gpus, num_cpus = snapshot.gpus, snapshot.num_cpu_devices
    if gpus:
        found = (
            f"{len(gpus)} GPUs found"
            if len(gpus) >= 2
            else f"1 GPU found ({gpus[0].name}, {format_gib(gpus[0].memory_bytes)})"
        )
        fits = _fits(snapshot, memory, fraction)
        return Choice(fits.value, (found,) + fits.reasons, fits.warnings)
    if num_cpus >= 2:
        return Choice(
            K.MIRRORED,
            (
                f"no GPU; AUTODIST_CPU_DEVICES={num_cpus} splits the CPU into {num_cpus} "
                "logical devices, to exercise distributed code: it is not faster than the "
                "default strategy, whatever the cross-device op (measured on 2 cores, python -m "
                "benchmarks: 0.35-0.5x default over 2 logical CPUs, 0.2-0.3x over 4); for speed, "
                "strategy='tune' measures and picks",
            ),
        )
    return Choice(K.DEFAULT, ("no GPU or TPU: TensorFlow's default strategy uses the CPU",))


@dataclass(frozen=True)
class MemoryFacts:
    """What the GPU memory check needs: the model (``num_params`` set), the requested global
    batch, the activation allowance for models whose layer sizes are unknown, and whether a
    model that fits nowhere is refused (``fit``) or only warned about (dry runs)."""

    model: ModelInfo
    batch_size: int
    activation_fraction: float = 0.5
    refuse: bool = True


def _fits(snapshot: HardwareSnapshot, memory: MemoryFacts | None, fraction: float) -> Choice[StrategyKind]:
    replicated = K.MIRRORED if len(snapshot.gpus) >= 2 else K.ONE_DEVICE
    if memory is None:
        return Choice(
            replicated, ("model size unknown (pass a built model or num_params=) so GPU memory was not checked",)
        )
    memories = [gpu.memory_bytes for gpu in snapshot.gpus if gpu.memory_bytes]
    if not memories:
        return Choice(replicated, ("GPU memory unknown (no NVML), so the model is assumed to fit",))
    fit = fit_on_gpus(
        memory.model,
        len(snapshot.gpus),
        min(memories),
        snapshot.host_memory_bytes,
        memory.batch_size,
        fraction=fraction,
        activation_fraction=memory.activation_fraction,
    )
    if fit.strategy is not None:
        return Choice(K(fit.strategy), (fit.reason,))
    if memory.refuse:
        raise StrategyUnavailableError(fit.problem)
    return Choice(K.CENTRAL_STORAGE, (fit.reason,), (fit.problem,))


def choose_memory(
    snapshot: HardwareSnapshot,
    kind: StrategyKind,
    memory: MemoryFacts | None,
    per_replica_batch: int,
    fraction: float,
    *,
    forced: bool = False,
) -> Choice[tuple[MemoryEstimate, ...]]:
    """The per-device memory estimate of ``kind`` (and, with GPUs, of the other single-host
    candidate), for the plan's table; a warning when a ``forced`` strategy does not fit the GPUs.

    Example:
        >>> facts = MemoryFacts(ModelInfo(num_params=1000, optimizer_slots=0, activation_elements=10), 64)
        >>> [e.strategy for e in choose_memory(HardwareSnapshot.cpu_only(), K.DEFAULT, facts, 64, 0.9).value]
        ['default']
    """
    if memory is None:
        return Choice(())
    chosen = strategy_type(kind)
    other = K.MIRRORED if chosen.variables_home else K.CENTRAL_STORAGE  # the other way to fit the GPUs
    kinds = [kind] + ([other] if snapshot.gpus and chosen.single_host else [])
    table = tuple(
        estimate(k.value, memory.model, per_replica_batch, activation_fraction=memory.activation_fraction)
        for k in kinds
    )
    memories = [gpu.memory_bytes for gpu in snapshot.gpus if gpu.memory_bytes]
    budget = int(min(memories) * fraction) if memories else None
    if forced and budget is not None and table[0].device_bytes > budget:
        return Choice(
            table,
            warnings=(
                f"{kind.value} needs an estimated {format_gib(table[0].device_bytes)} per GPU, more than "
                f"{fraction:.0%} of the smallest GPU ({format_gib(budget)}): training may run out of memory",
            ),
        )
    return Choice(table)


def choose_unsplit(
    snapshot: HardwareSnapshot,
    kind: Choice[StrategyKind],
    layout: Choice[Layout],
    batch_size: int | None,
    unmovable: str | None = None,
    unsplittable: str | None = None,
) -> tuple[Choice[StrategyKind], Choice[Layout]]:
    """One device where a batch is smaller than the replicas that would share it: a single-host
    ``mirrored`` plan for ``batch_size=1`` (keras.io's attention MIL classifier) on 2 replicas would
    round the batch up to 2, which halves the steps and trains another program. One device trains
    the author's. The same where the input cannot be split at all (``unsplittable``: why; the
    TensorFlow guide's ``MaskedTensor``, which fails under a hand-built strategy too). Any other
    plan as it is: a forced or kept strategy, ``central_storage`` (chosen because the model fits no
    GPU), a multi-worker job, whose every worker must take a share, and a model already built under
    the strategy that cannot be moved (``unmovable``: why Keras cannot save it); their batch is
    rounded up, with a warning, and the last says why (an input that cannot be split is then
    refused when it is prepared, with the fix).

    Example:
        >>> snap = HardwareSnapshot.cpu_only(num_cpu_devices=2)
        >>> kind, layout = choose_unsplit(snap, Choice(K.MIRRORED), strategy_type(K.MIRRORED).layout(snap), 1)
        >>> kind.value.value, layout.value.num_replicas
        ('default', 1)
    """
    replicas = layout.value.num_replicas
    small = batch_size is not None and 1 <= batch_size < replicas
    if not strategy_type(kind.value).one_device_when_unsplit or not (small or unsplittable):
        return kind, layout
    if unmovable is not None and small:
        kept = (
            f"batch_size={batch_size} is smaller than the {replicas} replicas, and one device would train the "
            f"program as written, but the model, built under {kind.value.value}, cannot be moved there "
            f"({unmovable}): the batch is rounded up to {replicas}. Fix: pass batch_size={replicas} or more, "
            "set AUTODIST_STRATEGY=default before the script starts, or make the model's layers serialisable "
            "(get_config)"
        )
        return Choice(kind.value, kind.reasons, kind.warnings + (kept,)), layout
    if unmovable is not None:
        return kind, layout  # the input, prepared for the replicas, is refused with the fix
    reason = (
        f"batch_size={batch_size} is smaller than the {replicas} replicas {kind.value.value} would split "
        f"it over: rounding it up to {replicas} would train fewer, larger steps than the program's, so it "
        "trains on one device, with one device's numbers (pass a batch of at least "
        f"{replicas} to train on {replicas} replicas)"
        if small
        else f"{unsplittable}: it trains on one device, with one device's numbers (give it as tensors or "
        f"numpy arrays to train on {replicas} replicas)"
    )
    return Choice(K.DEFAULT, kind.reasons + (reason,), kind.warnings), strategy_type(K.DEFAULT).layout(snapshot)


def choose_batch(
    snapshot: HardwareSnapshot, kind: StrategyKind, num_replicas: int, batch_size: int | None, default: int
) -> Choice[BatchDecision]:
    """The global batch: ``batch_size`` (or Keras's ``default``) moved to a multiple of the
    replicas; on a TPU, of 8 per core when it is large enough, with the last batch dropped.

    Example:
        >>> choose_batch(HardwareSnapshot.cpu_only(), K.MIRRORED, 4, 250, 32).value.global_batch_size
        252
    """
    requested = batch_size if batch_size is not None else default
    chosen = strategy_type(kind)
    multiple, reasons = chosen.batch_rule(snapshot, num_replicas, requested)
    decision = adjust_global_batch(
        requested, num_replicas, per_replica_multiple=multiple, drop_remainder=chosen.drops_remainder
    )
    if batch_size is None:
        reasons.append(f"no batch_size given: Keras's default global batch {requested} applies")
    return Choice(decision, tuple(reasons), (decision.warning,) if decision.warning else ())


def choose_coordinator_threads(
    snapshot: HardwareSnapshot, kind: StrategyKind, num_workers: int, flavor: str
) -> Choice[int | None]:
    """Inter-op threads for a parameter-server coordinator (``None`` elsewhere), and how
    variables spread over the ps tasks."""
    if not strategy_type(kind).asynchronous or snapshot.cluster is None:
        return Choice(None)
    # Measured: with inter-op threads <= workers the coordinator's fit hung (> 240 s); with
    # workers + 1 it completed. Never fewer than the cores.
    threads = max(snapshot.num_cpus, num_workers + 1)
    reasons = [
        f"the coordinator gets {threads} inter-op threads (at least workers + 1 = "
        f"{num_workers + 1}): with fewer, scheduling steps on {num_workers} workers can hang"
    ]
    num_ps = snapshot.cluster.num_ps
    if num_ps > 1 and flavor == "tf_keras":
        reasons.append(
            f"large variables are split into up to {num_ps} shards (one per ps task) by a MinSizePartitioner of 256 KiB"
        )
    elif num_ps > 1:
        reasons.append(
            "variables are not split across ps tasks: Keras 3 cannot train a ShardedVariable "
            "('ShardedVariable' object has no attribute 'handle'); each variable lives whole "
            "on one ps task, placed round-robin. tf_keras (TF_USE_LEGACY_KERAS=1) partitions"
        )
    return Choice(threads, tuple(reasons))


def choose_workarounds(
    kind: StrategyKind, flavor: str, version: str | None, environ: Mapping[str, str]
) -> Choice[tuple[str, ...]]:
    """The Keras 3 workarounds this plan needs (none for ``default`` or tf_keras).

    Example:
        >>> choose_workarounds(K.MIRRORED, "keras3", "3.15.1", {}).value[0]
        'aggregating_variable_updates'
    """
    if flavor != "keras3" or not strategy_type(kind).distributes:
        return Choice(())
    return Choice(tuple(name for name in PATCHES if WORKAROUNDS[name].is_active(version, environ)))


def choose_data_parallel_notes(
    kind: StrategyKind,
    num_replicas: int,
    per_replica: int | None,
    info: ModelInfo,
    keras_version: str | None = None,
    workarounds: tuple[str, ...] = (),
) -> Choice[None]:
    """What splitting each batch over replicas changes for this model, once per plan (so once
    per ``fit``): :func:`autodist.planning.global_batch.split_notes`.

    Example:
        >>> info = ModelInfo(batch_statistics_layers=("bn",))
        >>> "16 samples" in choose_data_parallel_notes(K.MIRRORED, 2, 16, info).warnings[0]
        True
    """
    if strategy_type(kind).asynchronous:
        return Choice(None)  # one replica in sync: each step runs on one worker's whole batch
    summed = info.keras_flavor == "keras3" and DISTRIBUTED_GRADIENTS.affects(keras_version or info.keras_version)
    corrected = OWN_STEP_REPLICA_MEAN.name in workarounds
    own = () if corrected else (info.own_steps or (("train_step",) if info.own_train_step else ()))
    reasons, warnings = split_notes(
        num_replicas,
        per_replica,
        info.batch_statistics_layers,
        info.random_layers,
        info.keras_flavor,
        own,
        summed_steps=(keras_version or info.keras_version) if summed else None,
        mixed_precision=info.mixed_precision,
        independent_draws=REPLICA_RANDOM_STREAMS.name in workarounds,
        own_draw_layers=info.own_draw_layers,
        averaged_statistics=BATCHNORM_MOVING_STATISTICS.name in workarounds,
        function_initializers=info.function_initializers,
    )
    if corrected and info.own_steps_read_replicas and num_replicas > 1:
        warnings += (OWN_STEPS_READ_REPLICAS.format(methods="/".join(info.own_steps), num_replicas=num_replicas),)
    return Choice(None, reasons, warnings)
