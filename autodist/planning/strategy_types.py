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
- ``single_host``: it trains on one machine (refused on a cluster of 2 or more workers);
- ``on_tpu``: it trains on a TPU, whose cores are counted once it is connected;
- ``mirrors_variables``: Keras 3's compiled step runs under TensorFlow's mirrored variables
  (the compile settings Keras breaks there: :mod:`autodist.planning.keras_compat`);
- ``one_device_when_unsplit``: a batch smaller than its replicas trains on one device instead;
- ``splits_weights``: Keras on JAX: each replica's weights are split over a ``model`` axis;
- ``variables_home``: where its variables live, when not on every compute device (the memory model);
- ``adopts``: the ``tf.distribute`` classes a script's own strategy is kept as;
- ``jax_equivalent``: what does its job with ``keras.distribution``, for a TensorFlow strategy forced on JAX;
- and :class:`StrategyType`'s methods, each saying what it answers: ``layout``, ``batch_rule``,
  ``check_forced``, ``keras_refusal``, ``tune_candidates`` and ``build`` (the live strategy).

A type registers itself by being defined (a subclass with a ``kind``): a kind of a test's own is a
:class:`StrategyKind` too once its type exists.

Example:
    >>> from autodist.detection.snapshot import HardwareSnapshot
    >>> strategy_type("mirrored").shares_batches, strategy_type("parameter_server").asynchronous
    (True, True)
    >>> strategy_type("mirrored").layout(HardwareSnapshot.cpu_only(num_cpu_devices=2)).value.devices
    ('/cpu:0', '/cpu:1')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Generic, TypeVar

from autodist.detection.snapshot import HardwareSnapshot
from autodist.errors import StrategyUnavailableError
from autodist.process import LiveMapping
from autodist.planning.global_batch import validate_batch_size
from autodist.upstream.keras_variables import VARIABLE_AGGREGATION

__all__ = [
    "MIXED_FLOAT16_CENTRAL_STORAGE",
    "TYPES",
    "Candidate",
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
    "adopted_kind",
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

    @classmethod
    def _missing_(cls, value: object) -> StrategyKind | None:
        """The kind of a strategy type defined elsewhere (a test's own): a member made for it."""
        if not isinstance(value, str) or value not in _defined():
            return None
        member = str.__new__(cls, value)  # not kept: the name is a kind only while its type exists
        member._name_, member._value_ = value.upper(), value
        return member


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
    the: ClassVar[StrategyType]
    backend: ClassVar[str] = "tensorflow"
    distributes: ClassVar[bool] = True
    shares_batches: ClassVar[bool] = False
    collective_workers: ClassVar[bool] = False
    asynchronous: ClassVar[bool] = False
    drops_remainder: ClassVar[bool] = False
    single_device: ClassVar[bool] = False
    single_host: ClassVar[bool] = False
    on_tpu: ClassVar[bool] = False
    mirrors_variables: ClassVar[bool] = False
    one_device_when_unsplit: ClassVar[bool] = False
    splits_weights: ClassVar[bool] = False
    variables_home: ClassVar[str | None] = None
    adopts: ClassVar[tuple[str, ...]] = ()
    jax_equivalent: ClassVar[str | None] = None
    #: Where its candidates come among ``strategy="tune"``'s, with GPUs and without (lowest first).
    tune_order: ClassVar[tuple[int, int]] = (0, 0)
    _builder: ClassVar[Callable[[Any], Any] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in vars(cls):  # a strategy of its own, not a shared base: its one instance
            cls.the = cls()
            cls.kind = StrategyKind(cls.kind.value if isinstance(cls.kind, Enum) else cls.kind)

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

    def check_forced(self, snapshot: HardwareSnapshot, backend: str = "tensorflow") -> None:
        """Nothing, where the strategy can run here when a caller forces it on ``backend``.

        Raises:
            StrategyUnavailableError: it cannot, with what to do instead.
        """
        self.check_backend(backend)
        cluster = snapshot.cluster
        if self.single_host and cluster is not None and cluster.num_workers >= 2:
            raise StrategyUnavailableError(
                f"strategy={self.kind.value!r} trains on one machine, but this process is "
                f"{cluster.task_type} {cluster.task_index} of a {cluster.num_workers}-worker "
                "cluster: every worker would train its own unsynchronised copy. Use "
                "strategy='auto' or 'multi_worker_mirrored', or unset TF_CONFIG."
            )

    def check_backend(self, backend: str) -> None:
        """Nothing, where Keras on ``backend`` can train under it.

        Raises:
            StrategyUnavailableError: it cannot, naming the strategy that does its job there.
        """
        if backend == "jax" and self.jax_equivalent is not None:
            raise StrategyUnavailableError(
                f"strategy={self.kind.value!r} is a TensorFlow strategy, and Keras runs on JAX here "
                f"(KERAS_BACKEND=jax). Expected one of {', '.join(k for k, t in _defined().items() if t.on_jax)}. "
                f"Use strategy={self.jax_equivalent!r}, which does its job with keras.distribution, "
                "or 'auto'; or set KERAS_BACKEND=tensorflow to train with tf.distribute."
            )

    @property
    def on_jax(self) -> bool:
        """Whether Keras on JAX plans it (its own backend's, or no distribution at all)."""
        return self.backend == "jax" or not self.distributes

    def keras_refusal(self, flavor: str, version: str | None, mixed_precision: str | None = None) -> str | None:
        """Why this Keras cannot train under it at all (``None``: it can)."""
        return None

    def tune_candidates(self, snapshot: HardwareSnapshot, default_steps: int | None) -> tuple[Candidate, ...]:
        """Its plans worth timing on this single machine (``default_steps``: the
        ``steps_per_execution`` autodist would set on a single device, ``None``: none)."""
        return ()

    @classmethod
    def builds(cls, builder: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """A decorator for the act layer: ``builder(plan)`` makes this strategy's live object."""
        cls._builder = staticmethod(builder)
        return builder

    def build(self, plan: Any) -> Any:
        """The live strategy for ``plan``, by its act layer's builder.

        Raises:
            StrategyUnavailableError: no builder (its backend's act layer is not imported).
        """
        if self._builder is None:
            raise StrategyUnavailableError(
                f"This version of autodist cannot build {self.kind.value!r}: nothing builds it on the {self.backend} "
                "backend. Use a strategy autodist builds, or create the strategy yourself and call model.fit inside "
                "strategy.scope()."
            )
        return self._builder(plan)

    def __repr__(self) -> str:
        return f"<strategy type {self.kind.value}>"


@dataclass(frozen=True)
class Candidate:
    """One plan ``strategy="tune"`` may time: a strategy, its all-reduce, its steps per call."""

    strategy: str
    cross_device_ops: str | None = None
    steps_per_execution: int | None = None

    @property
    def name(self) -> str:
        name = self.strategy + (f" ({self.cross_device_ops})" if self.cross_device_ops else "")
        return name + (f", steps_per_execution={self.steps_per_execution}" if self.steps_per_execution else "")


def _single(kind: str, default_steps: int | None) -> tuple[Candidate, ...]:
    """One device's candidates: with autodist's steps per call where it sets them, then without."""
    return ((Candidate(kind, None, default_steps),) if default_steps else ()) + (Candidate(kind),)


class Default(StrategyType):
    """TensorFlow's default strategy: no strategy of autodist's, one device (on JAX: no distribution)."""

    kind = StrategyKind.DEFAULT
    distributes = False
    single_device = True
    single_host = True
    tune_order = (1, 0)

    def check_forced(self, snapshot: HardwareSnapshot, backend: str = "tensorflow") -> None:
        cluster = snapshot.cluster
        if backend == "jax" and cluster is not None and cluster.num_workers >= 2:
            raise StrategyUnavailableError(
                f"strategy='default' trains in one process, but this is {cluster.task_type} "
                f"{cluster.task_index} of a {cluster.num_workers}-process job: each "
                "would train its own copy. Use strategy='auto' or 'data_parallel', or unset TF_CONFIG."
            )
        super().check_forced(snapshot, backend)

    def tune_candidates(self, snapshot: HardwareSnapshot, default_steps: int | None) -> tuple[Candidate, ...]:
        return () if snapshot.gpus else _single("default", default_steps)


class OneDevice(StrategyType):
    kind = StrategyKind.ONE_DEVICE
    single_device = True
    single_host = True
    adopts = ("OneDeviceStrategy",)
    jax_equivalent = "default"
    tune_order = (1, 1)

    def layout(self, snapshot: HardwareSnapshot) -> Choice[Layout]:
        gpus, _ = _local(snapshot)
        return Choice(Layout((gpus[0] if gpus else "/cpu:0",)))

    def tune_candidates(self, snapshot: HardwareSnapshot, default_steps: int | None) -> tuple[Candidate, ...]:
        return _single("one_device", default_steps) if snapshot.gpus else (Candidate("one_device"),)


class Mirrored(StrategyType):
    kind = StrategyKind.MIRRORED
    shares_batches = True
    single_host = True
    mirrors_variables = True
    one_device_when_unsplit = True
    adopts = ("MirroredStrategy",)
    jax_equivalent = "data_parallel"
    tune_order = (0, 2)

    def layout(self, snapshot: HardwareSnapshot) -> Choice[Layout]:
        gpus, cpus = _local(snapshot)
        if gpus:
            ops = _gpu_cross_ops(snapshot)
            return Choice(Layout(gpus, cross_device_ops=ops.value, num_replicas=len(gpus)), warnings=ops.warnings)
        single = ("mirrored over one CPU device gives no parallelism",) if len(cpus) == 1 else ()
        why = ("CPU devices all-reduce with TensorFlow's CollectiveAllReduce; NCCL needs GPUs",)
        return Choice(Layout(cpus, cross_device_ops="collective", num_replicas=len(cpus)), why, single)

    def tune_candidates(self, snapshot: HardwareSnapshot, default_steps: int | None) -> tuple[Candidate, ...]:
        gpus, cpus = _local(snapshot)
        if len(gpus or cpus) < 2:
            return ()
        first = "nccl" if gpus and snapshot.platform.startswith("linux") else "collective"
        return tuple(Candidate("mirrored", op) for op in (first, "reduction_to_one_device", "hierarchical_copy"))


def _aggregation_refusal(version: str | None, strategy: str) -> str | None:
    """Keras 3.3-3.6 pass no aggregation to TensorFlow's variables (the workaround
    variable_aggregation): what cannot train under ``strategy`` there, and the fix."""
    if not VARIABLE_AGGREGATION.affects(version):
        return None  # the release's behaviour, whatever AUTODIST_KERAS_COMPAT says
    return (
        f"Keras {version} cannot train under {strategy}. Keras 3.7 and later "
        "can, and so does tf_keras. Upgrade Keras (pip install 'keras>=3.8'), train with tf_keras "
        "(pip install tf-keras, TF_USE_LEGACY_KERAS=1), or use strategy='mirrored' on one machine"
    )


#: Keras 3's LossScaleOptimizer under CentralStorage (measured on 3.15.1, plain model.fit too).
MIXED_FLOAT16_CENTRAL_STORAGE = (
    "A mixed_float16 model cannot train under CentralStorageStrategy: Keras's LossScaleOptimizer "
    "updates its loss scale in each replica and applies its step inside a cond, which "
    'CentralStorageStrategy refuses ("merge_call called while defining a new graph"; plain '
    "model.fit fails the same way). Use strategy='mirrored', or train in float32"
)


class CentralStorage(StrategyType):
    kind = StrategyKind.CENTRAL_STORAGE
    shares_batches = True
    single_host = True
    variables_home = "host"
    adopts = ("CentralStorageStrategy",)
    jax_equivalent = "model_parallel"
    tune_order = (2, 3)

    def layout(self, snapshot: HardwareSnapshot) -> Choice[Layout]:
        gpus, cpus = _local(snapshot)
        local = gpus or cpus
        return Choice(Layout(local, parameter_device="/cpu:0", num_replicas=len(local)))

    def keras_refusal(self, flavor: str, version: str | None, mixed_precision: str | None = None) -> str | None:
        if flavor != "keras3":
            return None
        if mixed_precision == "mixed_float16":
            return MIXED_FLOAT16_CENTRAL_STORAGE
        return _aggregation_refusal(
            version,
            "CentralStorageStrategy: its metrics update their state with assign(total + value), which "
            "that strategy turns into N*total + value on N replicas (History and evaluate would be wrong)",
        )

    def tune_candidates(self, snapshot: HardwareSnapshot, default_steps: int | None) -> tuple[Candidate, ...]:
        gpus, cpus = _local(snapshot)
        return (Candidate("central_storage"),) if len(gpus or cpus) >= 2 else ()


class MultiWorkerMirrored(StrategyType):
    kind = StrategyKind.MULTI_WORKER_MIRRORED
    shares_batches = True
    collective_workers = True
    mirrors_variables = True
    adopts = ("CollectiveAllReduceStrategy",)
    jax_equivalent = "data_parallel"

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

    def check_forced(self, snapshot: HardwareSnapshot, backend: str = "tensorflow") -> None:
        super().check_forced(snapshot, backend)
        if snapshot.cluster is None:
            raise StrategyUnavailableError(
                "strategy='multi_worker_mirrored' was forced, but no cluster is defined (no "
                "TF_CONFIG or cluster manager variables). Expected every worker to know the "
                "cluster. Start the job with python -m autodist launch --workers 2 train.py, set "
                "TF_CONFIG on each worker, or use strategy='mirrored' on one machine."
            )

    def keras_refusal(self, flavor: str, version: str | None, mixed_precision: str | None = None) -> str | None:
        if flavor != "keras3":
            return None
        return _aggregation_refusal(
            version,
            "MultiWorkerMirroredStrategy: measured on 2 workers, Keras 3.3-3.4 end with the workers' "
            "weights apart (0.09), and 3.5-3.6 with steps off one process (0.02)",
        )


class ParameterServer(StrategyType):
    kind = StrategyKind.PARAMETER_SERVER
    asynchronous = True
    variables_home = "ps tasks"
    adopts = ("ParameterServerStrategyV2",)
    jax_equivalent = "data_parallel"

    def layout(self, snapshot: HardwareSnapshot) -> Choice[Layout]:
        gpus, cpus = _local(snapshot)
        cluster = snapshot.cluster
        assert cluster is not None
        # Each step runs on one worker, asynchronously: one replica in sync, as in TensorFlow.
        why = "each step runs on one worker against the ps variables: one replica in sync"
        return Choice(Layout(gpus or cpus, num_workers=len(cluster.cluster_spec.get("worker", []))), (why,))

    def check_forced(self, snapshot: HardwareSnapshot, backend: str = "tensorflow") -> None:
        super().check_forced(snapshot, backend)
        cluster = snapshot.cluster
        if cluster is None or cluster.num_ps == 0:
            raise StrategyUnavailableError(
                "strategy='parameter_server' was forced, but the cluster has no 'ps' tasks "
                f"(Received: cluster={cluster.cluster_spec if cluster else None}). Expected "
                "TF_CONFIG with 'ps' addresses. Add ps tasks (python -m autodist launch --workers "
                "2 --ps 1 train.py), or use strategy='auto'."
            )


class Tpu(StrategyType):
    kind = StrategyKind.TPU
    shares_batches = True
    drops_remainder = True
    on_tpu = True
    adopts = ("TPUStrategyV2", "TPUStrategy")
    jax_equivalent = "data_parallel"

    def layout(self, snapshot: HardwareSnapshot) -> Choice[Layout]:
        cores = snapshot.tpu.num_cores if snapshot.tpu and snapshot.tpu.num_cores else 8
        return Choice(Layout(num_replicas=cores))

    def batch_rule(self, snapshot: HardwareSnapshot, num_replicas: int, requested: int) -> tuple[int, list[str]]:
        """Each core's batch a multiple of 8 when the batch is large enough; the last batch dropped."""
        if snapshot.tpu is None or snapshot.tpu.num_cores is None:
            cores = (
                f"{num_replicas} TPU cores assumed until autodist connects (a v2-8/v3-8); the batch "
                "is planned again with the real count once connected"
            )
        else:
            cores = f"one replica per TPU core: {num_replicas}"
        multiple = 8 if validate_batch_size(requested) >= num_replicas * 8 else 1
        eight = (
            ["each core's batch is a multiple of 8, the TPU's efficient shape (8x128 tiles)"] if multiple > 1 else []
        )
        return multiple, [
            cores,
            *eight,
            "TPUs need static shapes: the last partial batch of an epoch is dropped "
            "(drop_remainder), and fit warns with the number of samples dropped",
            "bf16 mixed precision is recommended on TPU: pass mixed_precision=True to "
            "autodist.fit (applied to models it builds) or set keras.mixed_precision's "
            "'mixed_bfloat16' policy before building the model",
        ]

    def check_forced(self, snapshot: HardwareSnapshot, backend: str = "tensorflow") -> None:
        super().check_forced(snapshot, backend)
        if snapshot.tpu is None:
            raise StrategyUnavailableError(
                "strategy='tpu' was forced, but no TPU was found: none of TPU_NAME, "
                "COLAB_TPU_ADDR, TPU_WORKER_ID, PJRT_DEVICE=TPU is set and there is no "
                "/dev/accel* device. Expected a TPU VM, Colab/Kaggle TPU runtime or TPU_NAME. "
                "Run on a TPU host, or use strategy='auto'."
            )


class _KerasDistribution(StrategyType):
    """Keras on JAX: a ``keras.distribution`` plan. Forced on TensorFlow, it names the
    ``tf.distribute`` strategy that does its job."""

    backend = "jax"
    shares_batches = True
    tensorflow_equivalent: ClassVar[str] = ""

    def check_backend(self, backend: str) -> None:
        if backend != "jax":
            raise StrategyUnavailableError(
                f"strategy={self.kind.value!r} is a keras.distribution (JAX) plan, and Keras runs on "
                f"TensorFlow here. Expected a tf.distribute strategy: use {self.tensorflow_equivalent}, or 'auto'; "
                "or set KERAS_BACKEND=jax before Keras is imported to train on JAX."
            )


class DataParallel(_KerasDistribution):
    """Keras on JAX: ``keras.distribution.DataParallel`` over the mesh's devices."""

    kind = StrategyKind.DATA_PARALLEL
    tensorflow_equivalent = "mirrored (one machine) or multi_worker_mirrored (a cluster)"

    def mesh(self, replicas: int, model_axis: int, layout_map: tuple[Any, ...] = ()) -> Mesh | None:
        return Mesh((replicas,), (BATCH_AXIS,))


class ModelParallel(_KerasDistribution):
    """Keras on JAX: ``keras.distribution.ModelParallel``, the weights split over a model axis."""

    kind = StrategyKind.MODEL_PARALLEL
    splits_weights = True
    tensorflow_equivalent = "central_storage"

    def mesh(self, replicas: int, model_axis: int, layout_map: tuple[Any, ...] = ()) -> Mesh | None:
        return Mesh((replicas, model_axis), (BATCH_AXIS, MODEL_AXIS), layout_map)

    def check_forced(self, snapshot: HardwareSnapshot, backend: str = "tensorflow") -> None:
        super().check_forced(snapshot, backend)
        if len(snapshot.jax_devices) < 2:
            raise StrategyUnavailableError(
                "strategy='model_parallel' was forced, but JAX sees one device in this process: there is "
                "no 'model' axis to shard over (a shard never spans processes). Expected 2 or more devices "
                "per process. On CPU, split it before JAX starts "
                "(XLA_FLAGS=--xla_force_host_platform_device_count=4), or use strategy='auto'."
            )


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


def subclasses(base: type) -> list[type]:
    """Every subclass of ``base`` defined so far (a test's own too): Python's own record of them, the
    direct subclasses first, each level in the order its classes were defined."""
    found, pending = [], list(base.__subclasses__())
    while pending:
        found.append(pending.pop(0))
        pending += found[-1].__subclasses__()
    return found


def _defined() -> dict[str, StrategyType]:
    """Every strategy type defined so far, by its kind's name (a plain name while its class is made)."""
    return {getattr(cls.kind, "value", cls.kind): cls.the for cls in subclasses(StrategyType) if "kind" in vars(cls)}


#: One type per strategy, by kind (a :class:`StrategyKind` hashes as its string): each counted as soon as it is
#: defined (a test's own too), read from their classes on each use.
TYPES: Mapping[str, StrategyType] = LiveMapping(_defined)


def strategy_type(kind: StrategyKind | str) -> StrategyType:
    """The type of the strategy ``kind`` names (a :class:`StrategyKind` or its string)."""
    return TYPES[StrategyKind(kind)]


def adopted_kind(class_names: Sequence[str]) -> StrategyKind | None:
    """The kind a script's own ``tf.distribute`` strategy is kept as, from its class and bases'
    names (most derived first); ``None`` for TensorFlow's default strategy and classes no type adopts."""
    return next((t.kind for name in class_names for t in TYPES.values() if name in t.adopts), None)
