"""The strategies autodist plans, as types: one class per strategy, each owning what only it
decides (pure: no TensorFlow, no JAX).

A plan names its strategy by :class:`StrategyKind` (a string, as users
write it and JSON keeps it); :func:`strategy_type` (and ``Plan.type``) gives the strategy's type,
which answers what the rest of autodist asks of a strategy, instead of comparing kinds:

- ``distributes``: it trains under a strategy of its own (not TensorFlow's default);
- ``shares_batches``: its replicas take a share of every batch, in sync (one gradient from all);
- ``collective_workers``: its workers run collectives together, so every worker must issue the
  same ones in the same order (MultiWorkerMirrored: one per process);
- ``asynchronous``: each step runs on one worker against parameter servers;
- ``drops_remainder``: static shapes, the last partial batch of an epoch dropped (TPU);
- ``single_device``: one device trains (TensorFlow's default strategy, OneDevice);
- :meth:`StrategyType.layout`: its devices, parameter device, all-reduce and workers on this hardware;
- :meth:`StrategyType.batch_rule`: what it asks of the global batch beyond a multiple of the replicas.

The act layer builds each (:data:`autodist.tensorflow.strategies.BUILDERS`, by kind); JAX's
``keras.distribution`` plans are types of their own (``backend = "jax"``).

Example:
    >>> from autodist.detection.snapshot import HardwareSnapshot
    >>> strategy_type("mirrored").shares_batches, strategy_type("parameter_server").asynchronous
    (True, True)
    >>> strategy_type("mirrored").layout(HardwareSnapshot.cpu_only(num_cpu_devices=2)).value.devices
    ('/cpu:0', '/cpu:1')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

from autodist.detection.snapshot import HardwareSnapshot
from autodist.planning.global_batch import validate_batch_size

__all__ = [
    "TYPES",
    "CentralStorage",
    "Choice",
    "DataParallel",
    "Default",
    "Layout",
    "Mesh",
    "Mirrored",
    "ModelParallel",
    "MultiWorkerMirrored",
    "OneDevice",
    "ParameterServer",
    "StrategyKind",
    "StrategyType",
    "Tpu",
    "strategy_type",
]

T = TypeVar("T")


class StrategyKind(str, Enum):
    """The seven TensorFlow strategies, then the two Keras-on-JAX distributions
    (``keras.distribution.DataParallel`` and ``ModelParallel``; ``default`` is no distribution on
    both backends). Values are plain strings, so a user may pass ``"mirrored"``."""

    DEFAULT = "default"
    ONE_DEVICE = "one_device"
    MIRRORED = "mirrored"
    CENTRAL_STORAGE = "central_storage"
    MULTI_WORKER_MIRRORED = "multi_worker_mirrored"
    PARAMETER_SERVER = "parameter_server"
    TPU = "tpu"
    DATA_PARALLEL = "data_parallel"
    MODEL_PARALLEL = "model_parallel"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Choice(Generic[T]):
    """A chooser's answer: the value, one reason per step that decided it, and warnings."""

    value: T
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class Layout:
    """Where the chosen strategy computes: local devices, parameter device, all-reduce, workers."""

    devices: tuple[str, ...] = ()
    parameter_device: str | None = None
    cross_device_ops: str | None = None
    num_workers: int = 1
    num_replicas: int = 1


#: The names of a JAX mesh's axes: every plan's batch axis, and ``model_parallel``'s model axis.
BATCH_AXIS, MODEL_AXIS = "batch", "model"


@dataclass(frozen=True)
class Mesh:
    """Keras on JAX: the device mesh a ``keras.distribution`` plan trains on: its ``shape`` and
    axis names (``axes``: the batch axis first), and, for ``model_parallel``, the ``layout_map``:
    ``(variable path, sharding spec)`` pairs, for example ``("net/dense/kernel", (None, "model"))``
    (other variables are replicated).

    Example:
        >>> mesh = Mesh((2, 2), ("batch", "model"), (("net/d/kernel", (None, "model")),))
        >>> mesh.describe(), mesh.model_axis
        ('batch 2 x model 2', 2)
    """

    shape: tuple[int, ...]
    axes: tuple[str, ...]
    layout_map: tuple[tuple[str, tuple[str | None, ...]], ...] = ()

    @property
    def model_axis(self) -> int:
        """The devices each replica's weights are split over (1: none)."""
        return self.shape[1] if len(self.shape) > 1 else 1

    def describe(self) -> str:
        return " x ".join(f"{name} {size}" for name, size in zip(self.axes, self.shape))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Mesh:
        layout = tuple((path, tuple(spec)) for path, spec in data.get("layout_map") or ())
        return cls(tuple(data["shape"]), tuple(data["axes"]), layout)


def _local(snapshot: HardwareSnapshot) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """This machine's GPUs and CPU devices, as TensorFlow names them."""
    gpus = tuple(f"/gpu:{i}" for i in range(len(snapshot.gpus)))
    cpus = tuple(f"/cpu:{i}" for i in range(snapshot.num_cpu_devices))
    return gpus, cpus


class StrategyType:
    """One strategy autodist plans: what only it decides. Subclasses set the class attributes and
    override what differs; an instance holds nothing (:data:`TYPES` has one of each)."""

    kind: ClassVar[StrategyKind]
    backend: ClassVar[str] = "tensorflow"
    distributes: ClassVar[bool] = True
    shares_batches: ClassVar[bool] = False
    collective_workers: ClassVar[bool] = False
    asynchronous: ClassVar[bool] = False
    drops_remainder: ClassVar[bool] = False
    single_device: ClassVar[bool] = False

    def layout(self, snapshot: HardwareSnapshot) -> Choice[Layout]:
        """Its devices, parameter device, all-reduce and workers on this hardware."""
        return Choice(Layout())

    def batch_rule(self, snapshot: HardwareSnapshot, num_replicas: int, requested: int) -> tuple[int, list[str]]:
        """The multiple each replica's batch is rounded to, and why (1: any size)."""
        return 1, []

    def mesh(self, replicas: int, model_axis: int, layout_map: tuple[Any, ...] = ()) -> Mesh | None:
        """Keras on JAX: the device mesh it trains on (``None``: no mesh, TensorFlow's strategies
        and JAX's ``default``)."""
        return None

    def __repr__(self) -> str:
        return f"<strategy type {self.kind.value}>"


class Default(StrategyType):
    """TensorFlow's default strategy: no strategy of autodist's, one device."""

    kind = StrategyKind.DEFAULT
    distributes = False
    single_device = True


class OneDevice(StrategyType):
    kind = StrategyKind.ONE_DEVICE
    single_device = True

    def layout(self, snapshot: HardwareSnapshot) -> Choice[Layout]:
        gpus, _ = _local(snapshot)
        return Choice(Layout((gpus[0] if gpus else "/cpu:0",)))


class Mirrored(StrategyType):
    kind = StrategyKind.MIRRORED
    shares_batches = True

    def layout(self, snapshot: HardwareSnapshot) -> Choice[Layout]:
        gpus, cpus = _local(snapshot)
        if gpus:
            ops = _gpu_cross_ops(snapshot)
            return Choice(Layout(gpus, cross_device_ops=ops.value, num_replicas=len(gpus)), warnings=ops.warnings)
        single = ("mirrored over one CPU device gives no parallelism",) if len(cpus) == 1 else ()
        why = ("CPU devices all-reduce with TensorFlow's CollectiveAllReduce; NCCL needs GPUs",)
        return Choice(Layout(cpus, cross_device_ops="collective", num_replicas=len(cpus)), why, single)


class CentralStorage(StrategyType):
    kind = StrategyKind.CENTRAL_STORAGE
    shares_batches = True

    def layout(self, snapshot: HardwareSnapshot) -> Choice[Layout]:
        gpus, cpus = _local(snapshot)
        local = gpus or cpus
        return Choice(Layout(local, parameter_device="/cpu:0", num_replicas=len(local)))


class MultiWorkerMirrored(StrategyType):
    kind = StrategyKind.MULTI_WORKER_MIRRORED
    shares_batches = True
    collective_workers = True

    def layout(self, snapshot: HardwareSnapshot) -> Choice[Layout]:
        gpus, cpus = _local(snapshot)
        cluster = snapshot.cluster
        assert cluster is not None
        ops = "nccl" if gpus and snapshot.platform.startswith("linux") else "ring"
        why = (
            "workers all-reduce with NCCL (GPUs on every worker)"
            if ops == "nccl"
            else "workers all-reduce with RING collectives on CPU"
        )
        replicas = len(gpus or cpus) * cluster.num_workers
        return Choice(
            Layout(gpus or cpus, cross_device_ops=ops, num_workers=cluster.num_workers, num_replicas=replicas), (why,)
        )


class ParameterServer(StrategyType):
    kind = StrategyKind.PARAMETER_SERVER
    asynchronous = True

    def layout(self, snapshot: HardwareSnapshot) -> Choice[Layout]:
        gpus, cpus = _local(snapshot)
        cluster = snapshot.cluster
        assert cluster is not None
        # Each step runs on one worker, asynchronously: one replica in sync, as in TensorFlow.
        why = "each step runs on one worker against the ps variables: one replica in sync"
        return Choice(Layout(gpus or cpus, num_workers=len(cluster.cluster_spec.get("worker", []))), (why,))


class Tpu(StrategyType):
    kind = StrategyKind.TPU
    shares_batches = True
    drops_remainder = True

    def layout(self, snapshot: HardwareSnapshot) -> Choice[Layout]:
        cores = snapshot.tpu.num_cores if snapshot.tpu and snapshot.tpu.num_cores else 8
        return Choice(Layout(num_replicas=cores))

    def batch_rule(self, snapshot: HardwareSnapshot, num_replicas: int, requested: int) -> tuple[int, list[str]]:
        """Each core's batch a multiple of 8 when the batch is large enough; the last batch dropped."""
        reasons = _tpu_batch_reasons(snapshot, num_replicas)
        if validate_batch_size(requested) >= num_replicas * 8:
            reasons.insert(1, "each core's batch is a multiple of 8, the TPU's efficient shape (8x128 tiles)")
            return 8, reasons
        return 1, reasons


class DataParallel(StrategyType):
    """Keras on JAX: ``keras.distribution.DataParallel`` over the mesh's devices."""

    kind = StrategyKind.DATA_PARALLEL
    backend = "jax"
    shares_batches = True

    def mesh(self, replicas: int, model_axis: int, layout_map: tuple[Any, ...] = ()) -> Mesh | None:
        return Mesh((replicas,), (BATCH_AXIS,))


class ModelParallel(StrategyType):
    """Keras on JAX: ``keras.distribution.ModelParallel``, the weights split over a model axis."""

    kind = StrategyKind.MODEL_PARALLEL
    backend = "jax"
    shares_batches = True

    def mesh(self, replicas: int, model_axis: int, layout_map: tuple[Any, ...] = ()) -> Mesh | None:
        return Mesh((replicas, model_axis), (BATCH_AXIS, MODEL_AXIS), layout_map)


def _gpu_cross_ops(snapshot: HardwareSnapshot) -> Choice[str]:
    names = sorted({gpu.name for gpu in snapshot.gpus})
    if len(names) > 1:
        return Choice(
            "reduction_to_one_device",
            warnings=(
                f"mixed GPU models ({', '.join(names)}): the slowest GPU sets the pace of every step; "
                "using ReductionToOneDevice, which tolerates mixed devices",
            ),
        )
    return Choice("nccl" if snapshot.platform.startswith("linux") else "hierarchical_copy")


def _tpu_batch_reasons(snapshot: HardwareSnapshot, num_replicas: int) -> list[str]:
    if snapshot.tpu is None or snapshot.tpu.num_cores is None:
        cores = (
            f"{num_replicas} TPU cores assumed until autodist connects (a v2-8/v3-8); the batch "
            "is planned again with the real count once connected"
        )
    else:
        cores = f"one replica per TPU core: {num_replicas}"
    return [
        cores,
        "TPUs need static shapes: the last partial batch of an epoch is dropped "
        "(drop_remainder), and fit warns with the number of samples dropped",
        "bf16 mixed precision is recommended on TPU: pass mixed_precision=True to "
        "autodist.fit (applied to models it builds) or set keras.mixed_precision's "
        "'mixed_bfloat16' policy before building the model",
    ]


#: One type per strategy, by kind.
TYPES: MappingProxyType[StrategyKind, StrategyType] = MappingProxyType(
    {t.kind: t for t in (cls() for cls in StrategyType.__subclasses__())}
)


def strategy_type(kind: StrategyKind | str) -> StrategyType:
    """The type of the strategy ``kind`` names (a :class:`StrategyKind` or its string)."""
    return TYPES[StrategyKind(kind)]
