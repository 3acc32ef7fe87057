"""Decide: a pure function from a hardware snapshot (and optional model facts) to a :class:`Plan`.

:func:`plan` starts no TensorFlow runtime and reads no environment: the same inputs give the same
plan, with the reasons for each choice as data. The rules, in order:

1. A TPU means ``tpu``.
2. A cluster whose task is an ``evaluator`` trains nothing: ``default``.
3. A cluster with ``ps`` tasks means ``parameter_server``.
4. A cluster with 2 or more workers (chief counted) means ``multi_worker_mirrored``.
5. 2 or more GPUs mean ``mirrored``, or ``central_storage`` when the model's training footprint
   does not fit the smallest GPU.
6. One GPU means ``one_device`` on ``/gpu:0``, or ``central_storage`` when the model does not fit.
7. CPU only means ``default``; with ``AUTODIST_CPU_DEVICES=N`` (N >= 2), ``mirrored`` over the N
   logical CPU devices. Measured on 2 cores, that split is slower than ``default``, whatever the
   cross-device op (``python -m benchmarks``, "decision quality"; figures in the README's
   Benchmarks): it exists to run distributed code on one machine, so it is kept, and the plan's
   reason says so.

Performance default: on ``default`` and ``one_device``, a Keras 3 model compiled with
``steps_per_execution=1`` runs 8 steps per call (faster: ``python -m benchmarks``), unless a callback uses
batch-level hooks or ``steps_per_epoch``/``validation_steps`` is given;
``AUTODIST_STEPS_PER_EXECUTION=1`` turns it off.

Training footprint (documented in the README)::

    footprint_bytes = num_params * bytes_per_param * (2 + optimizer_slots) * (1 + activation_fraction)

weights and gradients (the 2), one copy per optimizer slot (Adam keeps 2, momentum SGD 1), and an
activation allowance as a fraction of those (default 0.5). The model fits a GPU when the footprint
is at most ``gpu_memory_fraction`` (default 0.9) of that GPU's memory.

Example:
    >>> from autodist import HardwareSnapshot, GpuInfo, plan
    >>> gpus = tuple(GpuInfo("NVIDIA A100", 40 * 2**30, "8.0") for _ in range(4))
    >>> p = plan(HardwareSnapshot.cpu_only(gpus=gpus), num_params=10_000_000, batch_size=250)
    >>> (p.strategy.value, p.num_replicas, p.global_batch_size, p.per_replica_batch_size)
    ('mirrored', 4, 252, 63)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from autodist.cluster import ClusterInfo
from autodist.batching import KERAS_DEFAULT_BATCH_SIZE, adjust_global_batch, validate_batch_size
from autodist.errors import AutodistError, StrategyUnavailableError
from autodist.hardware import HardwareSnapshot, TpuInfo
from autodist.model_info import DEFAULT_OPTIMIZER_SLOTS, ModelInfo, describe_model
from autodist.settings import STEPS_PER_EXECUTION_ENV, positive_int_setting
from autodist.keras_compat import compile_overrides

__all__ = ["ModelInfo", "Plan", "StrategyKind", "describe_model", "plan", "training_footprint_bytes"]


class StrategyKind(str, Enum):
    """The seven strategies. Values are plain strings, so a user may pass ``"mirrored"``."""

    DEFAULT = "default"
    ONE_DEVICE = "one_device"
    MIRRORED = "mirrored"
    CENTRAL_STORAGE = "central_storage"
    MULTI_WORKER_MIRRORED = "multi_worker_mirrored"
    PARAMETER_SERVER = "parameter_server"
    TPU = "tpu"

    def __str__(self) -> str:
        return self.value


DEFAULT_GPU_MEMORY_FRACTION = 0.9
DEFAULT_ACTIVATION_FRACTION = 0.5
DEFAULT_PEER_TIMEOUT_SECONDS = 300.0


def training_footprint_bytes(
    num_params: int,
    *,
    bytes_per_param: int = 4,
    optimizer_slots: int = DEFAULT_OPTIMIZER_SLOTS,
    activation_fraction: float = DEFAULT_ACTIVATION_FRACTION,
) -> int:
    """Estimated device memory to train a model (see the module docstring for the formula).

    Example:
        >>> training_footprint_bytes(1_000_000)  # fp32, Adam: 4 MB x (2 + 2) x 1.5
        24000000
    """
    return int(num_params * bytes_per_param * (2 + optimizer_slots) * (1 + activation_fraction))


#: Steps per compiled call that autodist sets on the default and one-device strategies, for a
#: Keras 3 model compiled with 1. ``python -m benchmarks`` measures 8 against 1 (MLP 784-256-256-10,
#: default strategy; figures in the README's Benchmarks), with the same steps and weights.
DEFAULT_STEPS_PER_EXECUTION = 8


@dataclass(frozen=True)
class Plan:
    """The strategy autodist will build, with its configuration and the reasons for each choice.

    Attributes:
        strategy: which strategy.
        num_replicas: replicas in sync across the whole job (``num_workers`` x local replicas).
        devices: the local compute devices (``/gpu:0``, ``/cpu:1``, ...).
        parameter_device: where CentralStorage keeps variables; ``None`` otherwise.
        cross_device_ops: ``nccl``, ``collective`` (TensorFlow's CollectiveAllReduce),
            ``ring``, ``hierarchical_copy``, ``reduction_to_one_device``, or ``None``.
        num_workers: training workers in the job (1 on a single host).
        global_batch_size: samples per step across all replicas, divisible by ``num_replicas``.
        per_replica_batch_size: ``global_batch_size // num_replicas``.
        requested_batch_size: what the caller asked for.
        num_cpu_devices: logical CPU devices to create before the runtime starts.
        compile_overrides: compile settings changed for this strategy (``jit_compile``, ...).
        footprint_bytes: estimated training footprint, when the model size is known.
        cluster: the cluster this process belongs to, if any.
        peer_timeout_seconds: how long a worker waits for its peers to connect (multi-worker)
            or for the chief (parameter-server tasks) before the job fails instead of hanging.
        inter_op_threads: inter-op threads to set before the runtime starts (``None``: leave).
        tpu: the TPU to connect to, for ``tpu`` plans.
        drop_remainder: drop the last partial batch of each epoch (static shapes, TPU).
        steps_per_execution: steps per compiled call that ``fit`` sets on a Keras 3 model
            compiled with 1 (``None``: leave it). ``fit`` keeps 1, and says so in
            ``history.plan``, when a callback uses batch-level hooks, when ``steps_per_epoch``
            or ``validation_steps`` is given, or when the model runs eagerly.
        keras_flavor: ``keras3`` or ``tf_keras``.
        reasons: one sentence per choice, with the numbers that drove it.
        warnings: things autodist changed or could not check.
    """

    strategy: StrategyKind
    num_replicas: int
    devices: tuple[str, ...] = ()
    parameter_device: str | None = None
    cross_device_ops: str | None = None
    num_workers: int = 1
    global_batch_size: int | None = None
    per_replica_batch_size: int | None = None
    requested_batch_size: int | None = None
    num_cpu_devices: int = 1
    compile_overrides: dict[str, Any] = field(default_factory=dict, hash=False)
    footprint_bytes: int | None = None
    keras_flavor: str = "keras3"
    keras_version: str | None = None
    cluster: ClusterInfo | None = None
    peer_timeout_seconds: float = DEFAULT_PEER_TIMEOUT_SECONDS
    inter_op_threads: int | None = None
    tpu: TpuInfo | None = None
    drop_remainder: bool = False
    steps_per_execution: int | None = None
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy.value,
            "num_replicas": self.num_replicas,
            "devices": list(self.devices),
            "parameter_device": self.parameter_device,
            "cross_device_ops": self.cross_device_ops,
            "num_workers": self.num_workers,
            "global_batch_size": self.global_batch_size,
            "per_replica_batch_size": self.per_replica_batch_size,
            "requested_batch_size": self.requested_batch_size,
            "num_cpu_devices": self.num_cpu_devices,
            "compile_overrides": dict(self.compile_overrides),
            "footprint_bytes": self.footprint_bytes,
            "keras_flavor": self.keras_flavor,
            "keras_version": self.keras_version,
            "cluster": self.cluster.to_dict() if self.cluster else None,
            "peer_timeout_seconds": self.peer_timeout_seconds,
            "inter_op_threads": self.inter_op_threads,
            "tpu": {"source": self.tpu.source, "name": self.tpu.name, "num_cores": self.tpu.num_cores} if self.tpu else None,
            "drop_remainder": self.drop_remainder,
            "steps_per_execution": self.steps_per_execution,
            "reasons": list(self.reasons),
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        """The plan that :meth:`to_dict` wrote, so plans round-trip through JSON like snapshots.

        Example:
            >>> from autodist.hardware import HardwareSnapshot
            >>> made = plan(HardwareSnapshot.cpu_only(), batch_size=64)
            >>> Plan.from_dict(made.to_dict()) == made
            True
        """
        fields_ = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        tpu = data.get("tpu")
        return cls(
            **{
                **fields_,
                "strategy": StrategyKind(data["strategy"]),
                "devices": tuple(data.get("devices") or ()),
                "compile_overrides": dict(data.get("compile_overrides") or {}),
                "cluster": ClusterInfo.from_dict(data["cluster"]) if data.get("cluster") else None,
                "tpu": TpuInfo(tpu["source"], tpu.get("name"), tpu.get("num_cores")) if tpu else None,
                "reasons": tuple(data.get("reasons") or ()),
                "warnings": tuple(data.get("warnings") or ()),
            }
        )

    def summary(self, *, include_warnings: bool = True, prefix: str = "autodist plan") -> str:
        """The one rendering of a plan: for the log, ``inspect``/``plan`` and bug reports
        (warnings too, unless told otherwise)."""
        lines = [f"{prefix}: {self.strategy.value} with {self.num_replicas} replica(s)"]
        if self.devices:
            lines[0] += f" on {', '.join(self.devices)}"
        if self.num_workers > 1:
            lines[0] += f" per worker x {self.num_workers} workers"
        if self.cross_device_ops:
            lines.append(f"  all-reduce: {self.cross_device_ops}")
        if self.global_batch_size is not None:
            lines.append(
                f"  batch: global {self.global_batch_size} = {self.per_replica_batch_size} per "
                f"replica x {self.num_replicas}"
            )
        if self.footprint_bytes is not None:
            lines.append(f"  training footprint: {format_gib(self.footprint_bytes)}")
        lines += [f"  why: {reason}" for reason in self.reasons]
        if include_warnings:
            lines += [f"  warning: {warning}" for warning in self.warnings]
        return "\n".join(lines)


def format_gib(num_bytes: int | None, unknown: str = "unknown") -> str:
    """``17179869184`` → ``"16.0 GiB"``; ``unknown`` when ``None``."""
    return unknown if num_bytes is None else f"{num_bytes / 2**30:.1f} GiB"



def _coerce_kind(strategy: Any) -> StrategyKind | None:
    if strategy is None or (isinstance(strategy, str) and strategy.lower() == "auto"):
        return None
    try:
        return StrategyKind(str(strategy.value if isinstance(strategy, Enum) else strategy).lower())
    except ValueError:
        valid = ", ".join(["auto"] + [k.value for k in StrategyKind])
        raise AutodistError(
            f"Unknown strategy {strategy!r}. Expected one of: {valid}. Pass strategy='auto' to let "
            "autodist choose."
        ) from None


def plan(
    snapshot: HardwareSnapshot,
    *,
    model: Any = None,
    model_info: ModelInfo | None = None,
    num_params: int | None = None,
    batch_size: int | None = None,
    strategy: str | StrategyKind = "auto",
    gpu_memory_fraction: float = DEFAULT_GPU_MEMORY_FRACTION,
    activation_fraction: float = DEFAULT_ACTIVATION_FRACTION,
    optimizer_slots: int | None = None,
    peer_timeout_seconds: float = DEFAULT_PEER_TIMEOUT_SECONDS,
    environ: Mapping[str, str] | None = None,
) -> Plan:
    """Choose and configure a strategy. Pure: it reads no machine and no environment but
    ``environ``, and starts nothing (``autodist.plan`` is the edge that detects this machine).

    Args:
        snapshot: the hardware (:func:`autodist.detect`, or ``HardwareSnapshot.from_dict``).
        model: a Keras model to read the size, optimizer and compile settings from.
        model_info: the same facts given directly (tests, dry runs).
        num_params: the model's parameter count, when no model is given.
        batch_size: the requested **global** batch; Keras's default 32 when ``None``.
        strategy: ``"auto"`` or a :class:`StrategyKind` value to force.
        gpu_memory_fraction: the fraction of each GPU's memory the model may use.
        activation_fraction: the activation allowance in the footprint formula.
        optimizer_slots: slots per variable, overriding what the optimizer implies.
        peer_timeout_seconds: multi-worker only: the longest wait for peers before failing.
        environ: only for two switches: ``AUTODIST_KERAS_COMPAT`` and
            ``AUTODIST_STEPS_PER_EXECUTION``.

    Returns:
        The :class:`Plan`.

    Raises:
        StrategyUnavailableError: when a forced strategy cannot run here.
        BatchSizeError: when ``batch_size`` is not a positive integer.
        AutodistError: for an unknown strategy name.

    Example:
        >>> p = plan(HardwareSnapshot.cpu_only(num_cpu_devices=2), batch_size=33)
        >>> (p.strategy.value, p.global_batch_size)
        ('mirrored', 34)
    """
    if not isinstance(snapshot, HardwareSnapshot):
        raise AutodistError(
            f"autodist.planning.plan got {type(snapshot).__name__} as the snapshot. Expected a "
            "HardwareSnapshot: the planner reads no machine itself. Pass autodist.detect(), or call "
            "autodist.plan(), which detects this machine when no snapshot is given."
        )
    if not peer_timeout_seconds > 0:
        raise AutodistError(
            f"peer_timeout_seconds must be positive (Received: {peer_timeout_seconds!r}). It bounds "
            "how long a worker waits for its peers, for example 300."
        )
    if not 0 < gpu_memory_fraction <= 1:
        raise AutodistError(
            f"gpu_memory_fraction must be in (0, 1] (Received: {gpu_memory_fraction!r}). It is "
            "the share of each GPU's memory the model may use, for example 0.9."
        )
    forced = _coerce_kind(strategy)
    if model_info is None:
        model_info = describe_model(model) if model is not None else ModelInfo()
    params = num_params if num_params is not None else model_info.num_params
    slots = optimizer_slots if optimizer_slots is not None else model_info.optimizer_slots
    footprint = (
        training_footprint_bytes(
            params,
            bytes_per_param=model_info.bytes_per_param,
            optimizer_slots=slots,
            activation_fraction=activation_fraction,
        )
        if params is not None
        else None
    )
    flavor = model_info.keras_flavor or snapshot.keras_flavor
    reasons: list[str] = []
    if model is not None and params is None:
        reasons.append(
            "the model is not built yet (no input shape): its size is unknown until its first "
            "batch builds it, so the plan assumes it fits one device"
        )
    warnings: list[str] = list(snapshot.diagnostics)

    choice = _choose(snapshot, forced, footprint, gpu_memory_fraction, reasons, warnings)
    kind, devices, parameter_device, cross_ops, num_workers = choice
    num_replicas = max(1, len(devices)) * num_workers
    if kind == StrategyKind.PARAMETER_SERVER:
        # Each step runs on one worker, asynchronously: one replica in sync, as in TensorFlow.
        num_replicas = 1
    elif kind == StrategyKind.TPU:
        num_replicas = (snapshot.tpu.num_cores if snapshot.tpu and snapshot.tpu.num_cores else 8)

    requested = batch_size if batch_size is not None else KERAS_DEFAULT_BATCH_SIZE
    per_replica_multiple = 1
    if kind == StrategyKind.TPU:
        if snapshot.tpu is None or snapshot.tpu.num_cores is None:
            reasons.append(
                f"{num_replicas} TPU cores assumed until autodist connects (a v2-8/v3-8); the batch "
                "is planned again with the real count once connected"
            )
        else:
            reasons.append(f"one replica per TPU core: {num_replicas}")
        if validate_batch_size(requested) >= num_replicas * 8:
            per_replica_multiple = 8
            reasons.append("each core's batch is a multiple of 8, the TPU's efficient shape (8x128 tiles)")
        reasons.append(
            "TPUs need static shapes: the last partial batch of an epoch is dropped "
            "(drop_remainder), and fit warns with the number of samples dropped"
        )
        reasons.append(
            "bf16 mixed precision is recommended on TPU: pass mixed_precision=True to "
            "autodist.fit (applied to models it builds) or set keras.mixed_precision's "
            "'mixed_bfloat16' policy before building the model"
        )
    decision = adjust_global_batch(
        requested,
        num_replicas,
        per_replica_multiple=per_replica_multiple,
        drop_remainder=kind == StrategyKind.TPU,
    )
    if batch_size is None:
        reasons.append(f"no batch_size given: Keras's default global batch {requested} applies")
    if decision.warning:
        warnings.append(decision.warning)

    overrides, override_warnings = compile_overrides(
        kind.value,
        flavor,
        model_info.keras_version
        or (snapshot.keras_version if flavor == snapshot.keras_flavor else None),
        jit_compile=model_info.jit_compile,
        steps_per_execution=model_info.steps_per_execution,
        environ=environ if environ is not None else {},
    )
    warnings += override_warnings
    inter_op = None
    if kind == StrategyKind.PARAMETER_SERVER and snapshot.cluster is not None:
        # Measured: with inter-op threads <= workers the coordinator's fit hung (> 240 s); with
        # workers + 1 it completed. Never fewer than the cores.
        inter_op = max(snapshot.num_cpus, num_workers + 1)
        reasons.append(
            f"the coordinator gets {inter_op} inter-op threads (at least workers + 1 = "
            f"{num_workers + 1}): with fewer, scheduling steps on {num_workers} workers can hang"
        )
        if snapshot.cluster.num_ps > 1 and flavor == "tf_keras":
            reasons.append(
                f"large variables are split into up to {snapshot.cluster.num_ps} shards (one per ps "
                "task) by a MinSizePartitioner of 256 KiB"
            )
        elif snapshot.cluster.num_ps > 1:
            reasons.append(
                "variables are not split across ps tasks: Keras 3 cannot train a ShardedVariable "
                "('ShardedVariable' object has no attribute 'handle'); each variable lives whole "
                "on one ps task, placed round-robin. tf_keras (TF_USE_LEGACY_KERAS=1) partitions"
            )
    evaluator = snapshot.cluster is not None and snapshot.cluster.task_type == "evaluator"
    steps_per_execution = None if evaluator else _steps_per_execution(kind, flavor, model_info, environ or {}, reasons)
    return Plan(
        strategy=kind,
        num_replicas=num_replicas,
        devices=tuple(devices),
        parameter_device=parameter_device,
        cross_device_ops=cross_ops,
        num_workers=num_workers,
        global_batch_size=decision.global_batch_size,
        per_replica_batch_size=decision.per_replica_batch_size,
        requested_batch_size=decision.requested_batch_size,
        num_cpu_devices=snapshot.num_cpu_devices,
        compile_overrides=overrides,
        footprint_bytes=footprint,
        keras_flavor=flavor,
        keras_version=model_info.keras_version or snapshot.keras_version,
        cluster=snapshot.cluster,
        peer_timeout_seconds=float(peer_timeout_seconds),
        inter_op_threads=inter_op,
        tpu=snapshot.tpu if kind == StrategyKind.TPU else None,
        drop_remainder=kind == StrategyKind.TPU,
        steps_per_execution=steps_per_execution,
        reasons=tuple(reasons),
        warnings=tuple(warnings),
    )


def _steps_per_execution(
    kind: StrategyKind, flavor: str, model_info: ModelInfo, environ: Mapping[str, str], reasons: list[str]
) -> int | None:
    """autodist's ``steps_per_execution`` default, or ``None``; appends the reason."""
    if kind not in (StrategyKind.DEFAULT, StrategyKind.ONE_DEVICE) or flavor != "keras3":
        return None  # measured on these two; Keras 3 Mirrored fails with it (keras#19246)
    if model_info.steps_per_execution not in (None, 1):
        return None  # the caller chose a value
    value = positive_int_setting(
        environ,
        STEPS_PER_EXECUTION_ENV,
        DEFAULT_STEPS_PER_EXECUTION,
        "It sets how many training steps each compiled call runs; 1 turns autodist's default off.",
    )
    if value == 1:
        reasons.append(f"steps_per_execution stays 1 ({STEPS_PER_EXECUTION_ENV}=1)")
        return None
    reasons.append(
        f"steps_per_execution={value} for a model compiled with 1: the same steps and weights, "
        f"{value} steps per call (faster on a small MLP: python -m benchmarks, figures in the "
        "README's Benchmarks). fit keeps 1 when a callback uses batch-level hooks, which would then fire "
        f"every {value} steps, when steps_per_epoch or validation_steps is given, or when the input's "
        f"length is unknown. Opt out: "
        f"{STEPS_PER_EXECUTION_ENV}=1"
    )
    return value


def _gpu_cross_ops(snapshot: HardwareSnapshot, warnings: list[str]) -> str:
    names = sorted({gpu.name for gpu in snapshot.gpus})
    if len(names) > 1:
        warnings.append(
            f"mixed GPU models ({', '.join(names)}): the slowest GPU sets the pace of every step; "
            "using ReductionToOneDevice, which tolerates mixed devices"
        )
        return "reduction_to_one_device"
    if snapshot.platform.startswith("linux"):
        return "nccl"
    return "hierarchical_copy"


def _fits(snapshot: HardwareSnapshot, footprint: int | None, fraction: float, reasons: list[str]) -> bool:
    if footprint is None:
        reasons.append(
            "model size unknown (pass a built model or num_params=) so GPU memory was not checked"
        )
        return True
    memories = [gpu.memory_bytes for gpu in snapshot.gpus if gpu.memory_bytes]
    if not memories:
        reasons.append("GPU memory unknown (no NVML), so the model is assumed to fit")
        return True
    smallest = min(memories)
    budget = int(smallest * fraction)
    fits = footprint <= budget
    reasons.append(
        f"training footprint {format_gib(footprint)} {'fits' if fits else 'does not fit'} "
        f"{fraction:.0%} of the smallest GPU's {format_gib(smallest)} ({format_gib(budget)})"
    )
    return fits


def _choose(
    snapshot: HardwareSnapshot,
    forced: StrategyKind | None,
    footprint: int | None,
    fraction: float,
    reasons: list[str],
    warnings: list[str],
) -> tuple[StrategyKind, list[str], str | None, str | None, int]:
    """Returns (kind, local devices, parameter device, cross-device ops, number of workers)."""
    K = StrategyKind
    cluster = snapshot.cluster
    gpus = [f"/gpu:{i}" for i in range(len(snapshot.gpus))]
    cpus = [f"/cpu:{i}" for i in range(snapshot.num_cpu_devices)]
    local_devices = gpus or cpus
    multi_worker = cluster is not None and cluster.num_workers >= 2
    single_host = (K.DEFAULT, K.ONE_DEVICE, K.MIRRORED, K.CENTRAL_STORAGE)

    if forced is not None:
        reasons.append(f"strategy={forced.value!r} was forced by the caller")
        if forced == K.TPU and snapshot.tpu is None:
            raise StrategyUnavailableError(
                "strategy='tpu' was forced, but no TPU was found: none of TPU_NAME, "
                "COLAB_TPU_ADDR, TPU_WORKER_ID, PJRT_DEVICE=TPU is set and there is no "
                "/dev/accel* device. Expected a TPU VM, Colab/Kaggle TPU runtime or TPU_NAME. "
                "Run on a TPU host, or use strategy='auto'."
            )
        if forced == K.PARAMETER_SERVER and (cluster is None or cluster.num_ps == 0):
            raise StrategyUnavailableError(
                "strategy='parameter_server' was forced, but the cluster has no 'ps' tasks "
                f"(Received: cluster={cluster.cluster_spec if cluster else None}). Expected "
                "TF_CONFIG with 'ps' addresses. Add ps tasks (python -m autodist launch --workers "
                "2 --ps 1 train.py), or use strategy='auto'."
            )
        if forced == K.MULTI_WORKER_MIRRORED and cluster is None:
            raise StrategyUnavailableError(
                "strategy='multi_worker_mirrored' was forced, but no cluster is defined (no "
                "TF_CONFIG or cluster manager variables). Expected every worker to know the "
                "cluster. Start the job with python -m autodist launch --workers 2 train.py, set "
                "TF_CONFIG on each worker, or use strategy='mirrored' on one machine."
            )
        if forced in single_host and multi_worker:
            raise StrategyUnavailableError(
                f"strategy={forced.value!r} trains on one machine, but this process is "
                f"{cluster.task_type} {cluster.task_index} of a {cluster.num_workers}-worker "
                "cluster: every worker would train its own unsynchronised copy. Use "
                "strategy='auto' or 'multi_worker_mirrored', or unset TF_CONFIG."
            )

    kind = forced
    if kind is None:
        if snapshot.tpu is not None:
            reasons.append(f"a TPU was found ({snapshot.tpu.source}={snapshot.tpu.name})")
            kind = K.TPU
        elif cluster is not None and cluster.task_type == "evaluator":
            reasons.append("this task is the cluster's evaluator: it evaluates, it does not train")
            kind = K.DEFAULT
        elif cluster is not None and cluster.num_ps > 0:
            reasons.append(
                f"the cluster has {cluster.num_ps} ps task(s) and {cluster.num_workers} worker(s) "
                f"({cluster.source}): asynchronous parameter-server training"
            )
            kind = K.PARAMETER_SERVER
        elif multi_worker:
            reasons.append(
                f"the cluster has {cluster.num_workers} workers ({cluster.source}): synchronous "
                "multi-worker training"
            )
            kind = K.MULTI_WORKER_MIRRORED
        else:
            if cluster is not None:
                reasons.append(f"{cluster.source} defines a single worker: planning for one machine")
            if len(gpus) >= 2:
                reasons.append(f"{len(gpus)} GPUs found")
                kind = K.MIRRORED if _fits(snapshot, footprint, fraction, reasons) else K.CENTRAL_STORAGE
            elif len(gpus) == 1:
                reasons.append(f"1 GPU found ({snapshot.gpus[0].name}, {format_gib(snapshot.gpus[0].memory_bytes)})")
                kind = K.ONE_DEVICE if _fits(snapshot, footprint, fraction, reasons) else K.CENTRAL_STORAGE
            elif len(cpus) >= 2:
                reasons.append(
                    f"no GPU; AUTODIST_CPU_DEVICES={len(cpus)} splits the CPU into {len(cpus)} "
                    "logical devices, to exercise distributed code: it is not faster than the "
                    "default strategy, whatever the cross-device op (measured on 2 cores: python -m "
                    "benchmarks, figures in the README's Benchmarks)"
                )
                kind = K.MIRRORED
            else:
                reasons.append("no GPU or TPU: TensorFlow's default strategy uses the CPU")
                kind = K.DEFAULT
        if kind == K.CENTRAL_STORAGE:
            reasons.append("variables are kept on /cpu:0 and the GPUs compute (central_storage)")

    if kind == K.DEFAULT:
        return kind, [], None, None, 1
    if kind == K.ONE_DEVICE:
        return kind, [local_devices[0] if gpus else "/cpu:0"], None, None, 1
    if kind == K.MIRRORED:
        if gpus:
            return kind, gpus, None, _gpu_cross_ops(snapshot, warnings), 1
        if len(cpus) == 1:
            warnings.append("mirrored over one CPU device gives no parallelism")
        reasons.append("CPU devices all-reduce with TensorFlow's CollectiveAllReduce; NCCL needs GPUs")
        return kind, cpus, None, "collective", 1
    if kind == K.CENTRAL_STORAGE:
        return kind, local_devices, "/cpu:0", None, 1
    if kind == K.MULTI_WORKER_MIRRORED:
        assert cluster is not None
        ops = "nccl" if gpus and snapshot.platform.startswith("linux") else "ring"
        reasons.append(
            "workers all-reduce with NCCL (GPUs on every worker)" if ops == "nccl"
            else "workers all-reduce with RING collectives on CPU"
        )
        return kind, local_devices, None, ops, cluster.num_workers
    if kind == K.PARAMETER_SERVER:
        assert cluster is not None
        reasons.append("each step runs on one worker against the ps variables: one replica in sync")
        return kind, local_devices, None, None, len(cluster.cluster_spec.get("worker", []))
    # TPU
    return kind, [], None, None, 1
