"""Act: turn a :class:`~autodist.planning.plans.Plan` into a ``tf.distribute.Strategy``.

This is the one module that configures the TensorFlow runtime and creates strategies. Logical CPU
devices (``AUTODIST_CPU_DEVICES``) must be configured before the runtime starts, and
MultiWorkerMirroredStrategy must be created before any op runs, so both happen here, first.
Strategies are cached per configuration: a process gets one strategy object per plan, so a second
``autodist.fit`` reuses it (creating MultiWorkerMirroredStrategy twice is an error in TF).

Example:
    >>> import autodist
    >>> from autodist.tensorflow.strategies import build_strategy
    >>> p = autodist.plan(autodist.HardwareSnapshot.cpu_only(), batch_size=32)
    >>> type(build_strategy(p)).__name__
    '_DefaultDistributionStrategy'
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any

from autodist.errors import PeerError, RuntimeAlreadyStartedError, StrategyUnavailableError
from autodist.planning.plans import Plan, ScriptStrategy, StrategyKind
from autodist.tensorflow.keras_patches import apply_workarounds, trains_under
from autodist.tensorflow.activation_record import current as current_activation
from autodist.tensorflow.activation_record import runtime_started_message
from autodist.upstream.tf_runtime import (
    configure_coordination_service,
    default_strategy,
    runtime_started,
    strategy_class_names,
    strategy_parameter_device,
    strategy_workers,
)
from autodist.upstream.versions import check_versions, installed
from autodist.process import STATE
from autodist.planning.strategy_types import (
    TYPES,
    CentralStorage,
    Default,
    Mirrored,
    MultiWorkerMirrored,
    OneDevice,
    ParameterServer,
    Tpu,
    adopted_kind,
    strategy_type,
)

__all__ = [
    "build_strategy",
    "building",
    "start",
    "configure_cpu_devices",
    "describe_strategy",
    "is_autodists",
    "runtime_started",
    "strategy_key",
]


def _refuse_if_started(what: str) -> None:
    """Raises a :class:`RuntimeAlreadyStartedError` where TensorFlow's runtime runs already: ``what``
    must happen before it starts."""
    if runtime_started():
        raise RuntimeAlreadyStartedError(runtime_started_message(what))


def building() -> bool:
    """Whether autodist is creating a strategy in this thread right now."""
    # How many :func:`build_strategy` calls this thread is in. A strategy's constructor starts the
    # runtime, which fires the activation's triggers: they must not build a second one.
    return STATE.per_thread("building_strategy") > 0


def is_autodists(strategy: Any) -> bool:
    """Whether ``strategy`` is one autodist created (and not one the script created itself)."""
    return any(strategy is ours for ours in STATE.strategies.values())


def configure_cpu_devices(num_devices: int) -> None:
    """Split the first physical CPU into ``num_devices`` logical devices (before the runtime starts).

    Raises:
        RuntimeAlreadyStartedError: when the runtime already runs with a different split.
    """
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu)
    wanted = num_devices if num_devices > 1 else 0
    if len(current or []) == wanted:
        return
    _refuse_if_started(
        f"AUTODIST_CPU_DEVICES={num_devices} asks for {num_devices} logical CPU devices "
        f"(the runtime has {max(1, len(current or []))}); they can only be set"
    )
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)]
    )


def _cross_device_ops(name: str | None) -> Any:
    import tensorflow as tf

    if name in (None, "collective"):
        return None  # TensorFlow's default for local devices: CollectiveAllReduce
    return {
        "nccl": tf.distribute.NcclAllReduce,
        "hierarchical_copy": tf.distribute.HierarchicalCopyAllReduce,
        "reduction_to_one_device": tf.distribute.ReductionToOneDevice,
    }[name]()


def strategy_key(plan: Plan) -> tuple[Any, ...]:
    return (plan.strategy, plan.devices, plan.parameter_device, plan.cross_device_ops, plan.num_cpu_devices)


def build_strategy(plan: Plan) -> Any:
    """Create (or reuse) the strategy that ``plan`` describes, and nothing else: the plan's Keras
    workarounds go in with :func:`start`, which every entry point calls.

    Raises:
        StrategyUnavailableError: for strategies this version of autodist cannot build yet.
        RuntimeAlreadyStartedError: when the runtime started before logical devices were set.
        Exception: the error of building this same strategy at import (:mod:`autodist.tensorflow.current_strategy`).
    """
    import tensorflow  # noqa: F401  (first import: the activation at import runs before the lookup below)

    key = strategy_key(plan)
    if key in STATE.strategies:
        return STATE.strategies[key]
    done = current_activation()
    if done is not None and done.error is not None and done.failed_key == key:
        raise done.error  # building it at import failed; trying again would wait (or fail) again
    if plan.num_cpu_devices > 1:
        configure_cpu_devices(plan.num_cpu_devices)
    STATE.thread.building_strategy = STATE.per_thread("building_strategy") + 1
    try:
        strategy = _create(plan)
    finally:
        STATE.thread.building_strategy -= 1
    STATE.strategies[key] = strategy
    trains_under(strategy)
    return strategy


def start(plan: Plan, *, workarounds: bool = True) -> Any:
    """Build the plan's strategy and apply the plan's Keras workarounds: the one act step that
    the activation at import, ``init``, ``@distributed``, ``fit`` and tuning all take on
    TensorFlow (both are cached and idempotent, so a second call costs nothing). ``fit`` applies
    the workarounds itself, once its model's are known (``workarounds=False``).

    Raises:
        UnsupportedVersionError: TensorFlow, Keras or tf_keras is older than autodist supports.

    Example:
        >>> import autodist
        >>> type(start(autodist.plan(autodist.HardwareSnapshot.cpu_only()))).__name__
        '_DefaultDistributionStrategy'
    """
    check_versions(installed())  # an older TensorFlow or Keras than supported: refused, with the fix
    strategy = build_strategy(plan)
    if workarounds:
        apply_workarounds(plan.keras_workarounds)
    return strategy


def _create(plan: Plan) -> Any:
    kind = strategy_type(plan.strategy)
    # collectives are configured once per process: one MultiWorkerMirrored
    existing = [s for k, s in STATE.strategies.items() if strategy_type(k[0]).collective_workers]
    if kind.collective_workers and existing:
        return existing[0]
    if kind.backend != "tensorflow":
        raise StrategyUnavailableError(
            f"This version of autodist cannot build {plan.strategy.value!r}. "
            "Expected one of the seven StrategyKind values. Use one of those, "
            "or create the strategy yourself and call model.fit inside strategy.scope()."
        )
    return kind.build(plan)


@Default.builds
def _default(plan: Plan) -> Any:
    return default_strategy()


@OneDevice.builds
def _one_device(plan: Plan) -> Any:
    import tensorflow as tf

    return tf.distribute.OneDeviceStrategy(plan.devices[0])


@Mirrored.builds
def _mirrored(plan: Plan) -> Any:
    import tensorflow as tf

    return tf.distribute.MirroredStrategy(
        devices=list(plan.devices), cross_device_ops=_cross_device_ops(plan.cross_device_ops)
    )


@CentralStorage.builds
def _central_storage(plan: Plan) -> Any:
    import tensorflow as tf

    return tf.distribute.experimental.CentralStorageStrategy(
        compute_devices=list(plan.devices), parameter_device=plan.parameter_device
    )


@MultiWorkerMirrored.builds
def _multi_worker_mirrored(plan: Plan) -> Any:
    """MultiWorkerMirroredStrategy from the validated cluster, created before any op runs."""
    import tensorflow as tf

    cluster = plan.cluster
    assert cluster is not None
    _refuse_if_started(
        "MultiWorkerMirroredStrategy must be created (TensorFlow would otherwise fail with "
        "'Collective ops must be configured at program startup')"
    )
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster.cluster_spec),
        task_type=cluster.task_type,
        task_id=cluster.task_index,
        num_accelerators={"GPU": len(plan.devices)} if plan.devices and plan.devices[0].startswith("/gpu") else None,
        rpc_layer=cluster.rpc_layer or "grpc",
    )
    implementation = {
        "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
        "ring": tf.distribute.experimental.CommunicationImplementation.RING,
    }.get(plan.cross_device_ops or "", tf.distribute.experimental.CommunicationImplementation.AUTO)
    # No collective timeout: TensorFlow arms one per collective op, a cost on every step (about a
    # fifth of two loopback workers' samples/s, in paired runs by hand), and it would abort healthy
    # peers that wait on a long chief-only step. Dead peers are caught by the coordination
    # service's heartbeats instead (PeerError about 10 s after the loss).
    options = tf.distribute.experimental.CommunicationOptions(implementation=implementation)
    configure_coordination_service(cluster.cluster_spec, plan.peer_timeout_seconds)
    try:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver, communication_options=options)
    except tf.errors.DeadlineExceededError as err:
        raise PeerError(
            f"{cluster.task_type} {cluster.task_index} waited {plan.peer_timeout_seconds:g} s for "
            f"the other {cluster.num_workers - 1} worker(s) of {cluster.cluster_spec} to connect, "
            "and they did not. Expected every task of the cluster to start. Check that each "
            "worker runs the same script with its own task index and that the addresses are "
            "reachable; allow a longer wait with AUTODIST_PEER_TIMEOUT=<seconds> or "
            f"peer_timeout_seconds=. (TensorFlow: {str(err).strip().splitlines()[0][:200]})"
        ) from err
    return strategy


@ParameterServer.builds
def _parameter_server(plan: Plan) -> Any:
    """ParameterServerStrategy, on the chief (worker and ps tasks serve instead: see
    :func:`autodist.tensorflow.parameter_server.serve_if_this_task_serves`)."""
    import tensorflow as tf

    cluster = plan.cluster
    assert cluster is not None
    if cluster.task_type in ("worker", "ps"):
        raise StrategyUnavailableError(
            f"This process is {cluster.task_type} {cluster.task_index} of a parameter-server cluster "
            f"({cluster.source}): it serves variables or steps, and only the chief creates the "
            "strategy. Expected autodist.fit, autodist.init or @autodist.distributed here, which "
            "serve until the chief is done; or call "
            "autodist.tensorflow.parameter_server.serve_if_this_task_serves(plan)."
        )
    _refuse_if_started("ParameterServerStrategy must connect to the cluster on the chief")
    if plan.inter_op_threads:
        tf.config.threading.set_inter_op_parallelism_threads(plan.inter_op_threads)
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster.cluster_spec),
        task_type=cluster.task_type,
        task_id=cluster.task_index,
        rpc_layer=cluster.rpc_layer or "grpc",
    )
    partitioner = None
    if cluster.num_ps > 1 and plan.keras_flavor == "tf_keras":  # Keras 3 cannot train ShardedVariables
        partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
            min_shard_bytes=256 << 10, max_shards=cluster.num_ps
        )
    return tf.distribute.ParameterServerStrategy(resolver, variable_partitioner=partitioner)


#: How long the TPU resolver may take. With TPU_NAME set it makes an HTTP lookup with no timeout
#: of its own; against an endpoint that never answered it hung until killed.
TPU_RESOLVE_TIMEOUT_SECONDS = 30.0


def tpu_cluster_resolver(tpu: str | None, timeout: float = TPU_RESOLVE_TIMEOUT_SECONDS) -> Any:
    """The one place a ``TPUClusterResolver`` is created: in a thread, given ``timeout`` seconds.

    Raises:
        StrategyUnavailableError: when the resolver fails or does not answer in time.
    """
    import tensorflow as tf

    try:
        return _bounded(
            f"Looking up the TPU {tpu!r} (TPUClusterResolver makes a network lookup with no timeout of its own)",
            lambda: tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu),
            timeout,
        )
    except StrategyUnavailableError:
        raise
    except Exception as err:  # reported with the fix
        raise StrategyUnavailableError(
            f"The TPU {tpu!r} could not be resolved: {type(err).__name__}: {err}. Expected a "
            "reachable TPU (a TPU VM, Colab or Kaggle TPU runtime, or TPU_NAME of a TPU node). "
            "Fix the TPU settings, or pass strategy='auto' with them unset."
        ) from err


@Tpu.builds
def _tpu(plan: Plan) -> Any:
    """Resolve, connect, initialise the TPU system, then create TPUStrategy: once, first."""
    import tensorflow as tf

    _refuse_if_started("The TPU must be connected")
    name = plan.tpu.name if plan.tpu else None
    if plan.tpu is not None and plan.tpu.source == "COLAB_TPU_ADDR" and name and "://" not in name:
        name = f"grpc://{name}"
    resolver = tpu_cluster_resolver(name or None)
    _check_reachable(resolver, TPU_CONNECT_TIMEOUT_SECONDS)
    _bounded(
        f"Connecting to the TPU {name!r}",
        lambda: tf.config.experimental_connect_to_cluster(resolver),
        TPU_CONNECT_TIMEOUT_SECONDS,
    )
    tf.tpu.experimental.initialize_tpu_system(resolver)  # in this thread: it runs a program on the TPU, reached above
    return tf.distribute.TPUStrategy(resolver)


#: How long connecting to a TPU's gRPC address may take: TensorFlow's connect waits forever on a
#: port nothing listens on.
TPU_CONNECT_TIMEOUT_SECONDS = 60.0


def _check_reachable(resolver: Any, timeout: float) -> None:
    """For a TPU reached over gRPC (``grpc://host:port``: a TPU node, Colab), open a TCP
    connection to it first, within ``timeout``: TensorFlow's own connect would wait forever.
    A TPU VM's local TPU (no address) has nothing to check.

    Raises:
        StrategyUnavailableError: naming the address, what happened and the limit.
    """
    try:
        master = str(resolver.master() or "")
    except Exception:  # a resolver that cannot say: TensorFlow's connect reports it, bounded below
        return
    if not master.startswith("grpc://"):
        return
    host, _, port = master[len("grpc://") :].rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return
    except (OSError, ValueError) as err:
        why = "no answer" if isinstance(err, TimeoutError) else (getattr(err, "strerror", None) or str(err))
        raise StrategyUnavailableError(
            f"The TPU at {master} could not be reached ({why}; the limit is {timeout:g} s) (Received: the TPU address "
            f"{master}). Expected a TPU listening there. Check TPU_NAME / COLAB_TPU_ADDR and that this VM can "
            "reach the TPU; unset them to train without a TPU."
        ) from None


def _bounded(what: str, step: Callable[[], Any], timeout: float) -> Any:
    """Run ``step`` in a thread and wait at most ``timeout`` seconds for it (TensorFlow's TPU
    calls have no timeout of their own); its exception is raised here.

    Raises:
        StrategyUnavailableError: when it has not finished in time.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = step()
        except BaseException as err:  # raised again in the caller's thread
            outcome["error"] = err

    worker = threading.Thread(target=run, name="autodist-tpu", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise StrategyUnavailableError(
            f"{what} did not finish in {timeout:g} s. Expected the TPU to answer. Check that this VM can reach "
            "the TPU and that no other process holds it; unset TPU_NAME / COLAB_TPU_ADDR to train without a TPU."
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def kind_of_class(cls: type) -> StrategyKind | None:
    """The kind of a ``tf.distribute`` strategy class (by its class and bases), ``None`` for
    TensorFlow's default strategy and classes autodist does not know."""
    return adopted_kind(strategy_class_names(cls))


def check_same_cluster(plan: Plan, args: tuple[Any, ...], kwargs: dict[str, Any] | Any) -> None:
    """The script's ``MultiWorkerMirroredStrategy(...)`` arguments name no other cluster than
    the plan's (autodist's strategy is shared with it).

    Raises:
        StrategyUnavailableError: a cluster resolver for another cluster or task.
    """
    import tensorflow as tf

    given = [
        a for a in (*args, *dict(kwargs).values()) if isinstance(a, tf.distribute.cluster_resolver.ClusterResolver)
    ]
    cluster = plan.cluster
    if not given or cluster is None:
        return
    resolver = given[0]
    spec = {job: list(tasks) for job, tasks in resolver.cluster_spec().as_dict().items()}
    ours = {job: list(tasks) for job, tasks in cluster.cluster_spec.items()}
    if spec != ours or (resolver.task_type, resolver.task_id) != (cluster.task_type, cluster.task_index):
        raise StrategyUnavailableError(
            f"The script creates MultiWorkerMirroredStrategy for the cluster {spec} as "
            f"{resolver.task_type} {resolver.task_id}, and autodist already joined {ours} as "
            f"{cluster.task_type} {cluster.task_index} ({cluster.source}); collectives are "
            "configured once per process, so there can be one MultiWorkerMirroredStrategy. "
            "Expected no cluster_resolver (TF_CONFIG is read), or one for the same cluster. Drop "
            "the cluster_resolver argument, or set TF_CONFIG to the cluster you mean."
        )


def describe_strategy(strategy: Any) -> ScriptStrategy:
    """What a strategy the script created itself is: its kind, devices and replicas, read from
    the live object, after checking that its devices exist here.

    Raises:
        StrategyUnavailableError: for a strategy class autodist does not know, or one that
            names devices this machine does not have.
    """
    import tensorflow as tf

    kind = kind_of_class(type(strategy))
    if kind is None:
        known = ", ".join(dict(_SHOWN).get(name, name) for t in TYPES.values() for name in t.adopts[:1])
        raise StrategyUnavailableError(
            f"The model was created in the scope of the script's own {type(strategy).__name__}, which autodist "
            f"cannot train under (Expected one of: {known}). Call model.fit yourself inside that strategy's scope, "
            "or build the model outside it and let autodist.fit choose."
        )
    shown = "MultiWorkerMirroredStrategy" if strategy_type(kind).collective_workers else type(strategy).__name__
    devices = tuple(strategy.extended.worker_devices) if not strategy_type(kind).asynchronous else ()
    present = {_kind_and_index(device.name) for device in tf.config.list_logical_devices()}
    missing = [d for d in devices if _kind_and_index(d) not in present]
    if missing:
        have = ", ".join(f"{kind}:{index}" for kind, index in sorted(present))
        raise StrategyUnavailableError(
            f"The script's own {shown} names {', '.join(missing)}, which this machine does not "
            f"have (it has {have}). Expected devices that exist. Create "
            f"it without a device list ({shown}() picks the local GPUs, else the CPU), or "
            "remove the script's strategy and its `with strategy.scope():` so autodist chooses."
        )
    parameter = strategy_parameter_device(strategy) if strategy_type(kind).variables_home == "host" else None
    return ScriptStrategy(
        shown, kind, devices, int(strategy.num_replicas_in_sync), strategy_workers(strategy), parameter
    )


def _kind_and_index(device: str) -> tuple[str, int]:
    """``/job:localhost/replica:0/task:0/device:CPU:1`` (or ``/cpu:1``) → ``("CPU", 1)``."""
    import tensorflow as tf

    spec = tf.DeviceSpec.from_string(device)
    return (spec.device_type or "CPU").upper(), spec.device_index or 0


#: How a script names the classes whose TensorFlow name is another (their public name).
_SHOWN = (
    ("CollectiveAllReduceStrategy", "MultiWorkerMirroredStrategy"),
    ("ParameterServerStrategyV2", "ParameterServerStrategy"),
    ("TPUStrategyV2", "TPUStrategy"),
)
