"""Plan layer, data: the seven ``tf.distribute`` strategies and the two ``keras.distribution``
ones (JAX), and the :class:`Plan`, which round-trips through JSON.

:mod:`autodist.planning.planner` makes plans; everything after it reads them. A plan holds the choice,
its configuration, and one reason per choice, with the numbers that drove it.

Example:
    >>> from autodist.planning.plans import Plan, StrategyKind
    >>> made = Plan(StrategyKind.MIRRORED, 2, devices=("/cpu:0", "/cpu:1"), reasons=("forced",))
    >>> Plan.from_dict(made.to_dict()) == made
    True
    >>> print(made.summary())
    autodist plan: mirrored with 2 replica(s) on /cpu:0, /cpu:1
      why: forced
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from autodist.detection.cluster import ClusterInfo
from autodist.detection.snapshot import TpuInfo
from autodist.planning.memory_model import MemoryEstimate, format_gib
from autodist.planning.strategy_types import Mesh, StrategyKind, StrategyType, strategy_type

__all__ = ["Mesh", "Plan", "ScriptStrategy", "StrategyKind", "format_gib"]


@dataclass(frozen=True)
class ScriptStrategy:
    """A strategy the user's script created itself, and a model was built in its scope: what the
    planner needs to keep it (read from the live object by
    :func:`autodist.tensorflow.strategies.describe_strategy`).

    Attributes:
        class_name: the strategy's class, as the script named it (``MirroredStrategy``, ...).
        kind: the :class:`StrategyKind` it is.
        devices: its local compute devices.
        num_replicas: its replicas in sync across the job.
        num_workers: the workers it spans (1 on one machine).
        parameter_device: where CentralStorageStrategy keeps variables.
    """

    class_name: str
    kind: StrategyKind
    devices: tuple[str, ...] = ()
    num_replicas: int = 1
    num_workers: int = 1
    parameter_device: str | None = None

    def describe(self) -> str:
        """``MirroredStrategy (1 replica on /job:localhost/replica:0/task:0/device:CPU:0)``."""
        where = f" on {', '.join(self.devices)}" if self.devices else ""
        workers = f" over {self.num_workers} workers" if self.num_workers > 1 else ""
        return f"{self.class_name} ({self.num_replicas} replica(s){where}{workers})"


DEFAULT_GPU_MEMORY_FRACTION = 0.9
DEFAULT_ACTIVATION_FRACTION = 0.5
DEFAULT_PEER_TIMEOUT_SECONDS = 300.0


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
        footprint_bytes: the estimated training memory per device of the chosen strategy, when
            the model size is known (:mod:`autodist.planning.memory_model`).
        memory: the per-device estimates behind it: the chosen strategy first, then (with GPUs)
            the other single-host candidate.
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
        keras_version: the version of that Keras.
        keras_workarounds: the Keras workarounds (:data:`autodist.planning.keras_compat.WORKAROUNDS`
            names) this plan needs; the act layer applies them, once, with the strategy.
        reasons: one sentence per choice, with the numbers that drove it.
        warnings: things autodist changed or could not check.
        keras_backend: the Keras 3 backend the plan is for (``tensorflow`` or ``jax``).
        mesh: Keras on JAX: the device mesh (:class:`~autodist.planning.strategy_types.Mesh`: its
            shape, axis names and ``model_parallel``'s layout map); ``None`` without one.
        model_said: the reasons and warnings among ``reasons`` and ``warnings`` that follow the
            model, which :func:`autodist.planning.planner.refine` replaces.
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
    keras_workarounds: tuple[str, ...] = ()
    memory: tuple[MemoryEstimate, ...] = ()
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    keras_backend: str = "tensorflow"
    mesh: Mesh | None = None
    model_said: tuple[tuple[str, ...], tuple[str, ...]] = field(default=((), ()), compare=False, repr=False)

    @property
    def type(self) -> StrategyType:
        """The planned strategy's type (:mod:`autodist.planning.strategy_types`): what it is, its
        devices and batch rule, asked instead of comparing kinds."""
        return strategy_type(self.strategy)

    @property
    def mesh_shape(self) -> tuple[int, ...]:
        """``mesh.shape``, ``()`` without a mesh (the name plans had before the mesh was its own)."""
        return self.mesh.shape if self.mesh is not None else ()

    @property
    def mesh_axes(self) -> tuple[str, ...]:
        """``mesh.axes``, ``()`` without a mesh."""
        return self.mesh.axes if self.mesh is not None else ()

    @property
    def layout_map(self) -> tuple[tuple[str, tuple[str | None, ...]], ...]:
        """``mesh.layout_map``, ``()`` without a mesh."""
        return self.mesh.layout_map if self.mesh is not None else ()

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__ if name not in ("mesh", "model_said")}
        return data | {
            "strategy": self.strategy.value,
            "devices": list(self.devices),
            "compile_overrides": dict(self.compile_overrides),
            "cluster": self.cluster.to_dict() if self.cluster else None,
            "tpu": asdict(self.tpu) if self.tpu else None,
            "keras_workarounds": list(self.keras_workarounds),
            "memory": [estimate.to_dict() for estimate in self.memory],
            "reasons": list(self.reasons),
            "warnings": list(self.warnings),
            "mesh_shape": list(self.mesh_shape),
            "mesh_axes": list(self.mesh_axes),
            "layout_map": [[path, list(spec)] for path, spec in self.layout_map],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        """The plan that :meth:`to_dict` wrote: plans round-trip through JSON like snapshots (the module's example)."""
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
                "keras_workarounds": tuple(data.get("keras_workarounds") or ()),
                "memory": tuple(MemoryEstimate.from_dict(item) for item in data.get("memory") or ()),
                "reasons": tuple(data.get("reasons") or ()),
                "warnings": tuple(data.get("warnings") or ()),
                "mesh": _mesh_from(data),
            }
        )

    def headline(self, prefix: str = "autodist plan") -> str:
        """The plan in one line, as a ``fit`` logs it by default: the strategy, its replicas, the
        global batch (:meth:`summary` has the reasons).

        Example:
            >>> print(Plan(StrategyKind.MIRRORED, 2, global_batch_size=64, per_replica_batch_size=32).headline())
            autodist plan: mirrored with 2 replica(s), global batch 64 (32 per replica)
        """
        line = self.summary(include_warnings=False, prefix=prefix).split("\n", 1)[0]
        if self.global_batch_size is not None:
            line += f", global batch {self.global_batch_size} ({self.per_replica_batch_size} per replica)"
        return line

    def summary(self, *, include_warnings: bool = True, prefix: str = "autodist plan") -> str:
        """The one rendering of a plan: for the log, ``inspect``/``plan`` and bug reports
        (warnings too, unless told otherwise)."""
        lines = [f"{prefix}: {self.strategy.value} with {self.num_replicas} replica(s)"]
        if self.devices:
            lines[0] += f" on {', '.join(self.devices)}"
        if self.type.asynchronous:
            lines[0] += f" of each of {self.num_workers} workers, one step per worker at a time, asynchronously"
        elif self.num_workers > 1:
            lines[0] += f" of each of {self.num_workers} workers, in sync"
        if self.cross_device_ops:
            lines.append(f"  all-reduce: {self.cross_device_ops}")
        if self.mesh is not None:
            lines.append(f"  mesh: {self.mesh.describe()}")
        if self.global_batch_size is not None:
            lines.append(
                f"  batch: global {self.global_batch_size} = {self.per_replica_batch_size} per "
                f"replica x {self.num_replicas}"
            )
        if self.memory:
            lines += [f"  memory: {estimate.row()}" for estimate in self.memory]
        elif self.footprint_bytes is not None:
            lines.append(f"  training footprint: {format_gib(self.footprint_bytes)}")
        lines += [f"  why: {reason}" for reason in self.reasons]
        if include_warnings:
            lines += [f"  warning: {warning}" for warning in self.warnings]
        return "\n".join(lines)


def _mesh_from(data: Mapping[str, Any]) -> Mesh | None:
    """The mesh of a plan's JSON form, whose keys are those plans always had (``mesh_shape``,
    ``mesh_axes`` and ``layout_map`` side by side), so other readers of the JSON read it as before.

    Example:
        >>> _mesh_from({"mesh_shape": [2], "mesh_axes": ["batch"]}) == Mesh((2,), ("batch",))
        True
    """
    if not data.get("mesh_shape"):
        return None
    return Mesh.from_dict({"shape": data["mesh_shape"], "axes": data.get("mesh_axes") or (), **data})
