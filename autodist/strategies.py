"""Act: turn a :class:`~autodist.planning.Plan` into a ``tf.distribute.Strategy``.

This is the one module that configures the TensorFlow runtime and creates strategies. Logical CPU
devices (``AUTODIST_CPU_DEVICES``) must be configured before the runtime starts, and
MultiWorkerMirroredStrategy must be created before any op runs, so both happen here, first.
Strategies are cached per configuration: a process gets one strategy object per plan, so a second
``autodist.fit`` reuses it (creating MultiWorkerMirroredStrategy twice is an error in TF).

Example:
    >>> import autodist
    >>> from autodist.strategies import build_strategy
    >>> p = autodist.plan(autodist.HardwareSnapshot.cpu_only(), batch_size=32)
    >>> type(build_strategy(p)).__name__
    '_DefaultDistributionStrategy'
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from autodist.activation import current as current_activation
from autodist.activation import runtime_started_message
from autodist.errors import PeerError, RuntimeAlreadyStartedError, StrategyUnavailableError
from autodist.planning import Plan, StrategyKind

__all__ = ["build_strategy", "configure_cpu_devices", "runtime_started", "strategy_key"]

_STRATEGIES: dict[tuple[Any, ...], Any] = {}


def runtime_started() -> bool:
    """Whether the TensorFlow runtime (its device context) is already initialised."""
    if "tensorflow" not in sys.modules:
        return False
    from tensorflow.python.eager import context

    return context.context()._context_handle is not None


def configure_cpu_devices(num_devices: int) -> None:
    """Split the first physical CPU into ``num_devices`` logical devices (before the runtime starts).

    Raises:
        RuntimeAlreadyStartedError: when the runtime already runs with a different split.
    """
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu)
    wanted = num_devices if num_devices > 1 else 0
    if (len(current or []) or 0) == wanted or (wanted == 0 and not current):
        return
    if runtime_started():
        raise RuntimeAlreadyStartedError(
            runtime_started_message(
                f"AUTODIST_CPU_DEVICES={num_devices} asks for {num_devices} logical CPU devices "
                f"(the runtime has {max(1, len(current or []))}); they can only be set"
            )
        )
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)]
    )


def _bound_peer_waits(cluster: Any, timeout: float) -> None:
    """Make the strategy constructor raise, not hang, when a peer never connects.

    MultiWorkerMirroredStrategy keeps a coordination service that is already configured. We
    configure it first with a registration deadline. TensorFlow's Python API has no parameter for
    the barrier that turns the deadline into an error on the leader (without it the leader waits
    for ever, and ignores SIGTERM), so that one field is set on the config proto (TF 2.16-2.21).
    """
    from tensorflow.python.eager import context

    ctx = context.context()
    if ctx.coordination_service is not None:
        return
    from tensorflow.compiler.xla.tsl.protobuf import coordination_config_pb2

    leader = "chief" if "chief" in cluster.cluster_spec else "worker"
    jobs = [
        coordination_config_pb2.CoordinatedJob(name=name, num_tasks=len(cluster.cluster_spec[name]))
        for name in ("chief", "worker")
        if name in cluster.cluster_spec
    ]
    ctx.configure_coordination_service(
        service_type="standalone",
        service_leader=f"/job:{leader}/replica:0/task:0",
        cluster_register_timeout_in_ms=int(timeout * 1000),
        coordinated_jobs=jobs,
    )
    config = getattr(ctx, "_coordination_service_config", None)
    if config is not None and hasattr(config, "cluster_register_with_barrier"):
        config.cluster_register_with_barrier = True


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
    workarounds go in with :func:`autodist.activation.start`, which every entry point calls.

    Raises:
        StrategyUnavailableError: for strategies this version of autodist cannot build yet.
        RuntimeAlreadyStartedError: when the runtime started before logical devices were set.
        Exception: the error of building this same strategy at import (:mod:`autodist.activation`).
    """
    import tensorflow as tf

    key = strategy_key(plan)
    if key in _STRATEGIES:
        return _STRATEGIES[key]
    done = current_activation()
    if done is not None and done.error is not None and done.failed_key == key:
        raise done.error  # building it at import failed; trying again would wait (or fail) again
    if plan.num_cpu_devices > 1:
        configure_cpu_devices(plan.num_cpu_devices)
    kind = plan.strategy
    if kind == StrategyKind.DEFAULT:
        from tensorflow.python.distribute import distribute_lib

        strategy = distribute_lib._get_default_strategy()  # get_strategy() is the current one
    elif kind == StrategyKind.ONE_DEVICE:
        strategy = tf.distribute.OneDeviceStrategy(plan.devices[0])
    elif kind == StrategyKind.MIRRORED:
        strategy = tf.distribute.MirroredStrategy(
            devices=list(plan.devices), cross_device_ops=_cross_device_ops(plan.cross_device_ops)
        )
    elif kind == StrategyKind.CENTRAL_STORAGE:
        strategy = tf.distribute.experimental.CentralStorageStrategy(
            compute_devices=list(plan.devices), parameter_device=plan.parameter_device
        )
    elif kind == StrategyKind.MULTI_WORKER_MIRRORED:
        strategy = _multi_worker_mirrored(plan)
    elif kind == StrategyKind.PARAMETER_SERVER:
        strategy = _parameter_server(plan)
    elif kind == StrategyKind.TPU:
        strategy = _tpu(plan)
    else:
        raise StrategyUnavailableError(
            f"This version of autodist cannot build {kind.value!r}. "
            "Expected one of the seven StrategyKind values. Use one of those, "
            "or create the strategy yourself and call model.fit inside strategy.scope()."
        )
    _STRATEGIES[key] = strategy
    return strategy


def _multi_worker_mirrored(plan: Plan) -> Any:
    """MultiWorkerMirroredStrategy from the validated cluster, created before any op runs."""
    import tensorflow as tf

    cluster = plan.cluster
    assert cluster is not None
    if runtime_started():
        raise RuntimeAlreadyStartedError(
            runtime_started_message(
                "MultiWorkerMirroredStrategy must be created (TensorFlow would otherwise fail with "
                "'Collective ops must be configured at program startup')"
            )
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
    _bound_peer_waits(cluster, plan.peer_timeout_seconds)
    try:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            cluster_resolver=resolver, communication_options=options
        )
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


def _parameter_server(plan: Plan) -> Any:
    """ParameterServerStrategy, on the chief (worker and ps tasks serve instead: see
    :func:`autodist.parameter_server.serve_if_this_task_serves`)."""
    import tensorflow as tf

    cluster = plan.cluster
    assert cluster is not None
    if cluster.task_type in ("worker", "ps"):
        raise StrategyUnavailableError(
            f"This process is {cluster.task_type} {cluster.task_index} of a parameter-server cluster "
            f"({cluster.source}): it serves variables or steps, and only the chief creates the "
            "strategy. Expected autodist.fit, autodist.init or @autodist.distributed here, which "
            "serve until the chief is done; or call autodist.parameter_server.serve_if_this_task_serves(plan)."
        )
    if runtime_started():
        raise RuntimeAlreadyStartedError(
            runtime_started_message("ParameterServerStrategy must connect to the cluster on the chief")
        )
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

    outcome: dict[str, Any] = {}

    def resolve() -> None:
        try:
            outcome["resolver"] = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        except Exception as err:  # reported below with the fix
            outcome["error"] = err

    worker = threading.Thread(target=resolve, name="autodist-tpu-resolver", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise StrategyUnavailableError(
            f"Looking up the TPU {tpu!r} did not finish in {timeout:g} s (TPUClusterResolver makes "
            "a network lookup with no timeout of its own). Expected the TPU to answer at once. "
            "Check TPU_NAME / COLAB_TPU_ADDR and that this VM can reach the TPU; unset them to "
            "train without a TPU."
        )
    if "error" in outcome:
        err = outcome["error"]
        raise StrategyUnavailableError(
            f"The TPU {tpu!r} could not be resolved: {type(err).__name__}: {err}. Expected a "
            "reachable TPU (a TPU VM, Colab or Kaggle TPU runtime, or TPU_NAME of a TPU node). "
            "Fix the TPU settings, or pass strategy='auto' with them unset."
        ) from err
    return outcome["resolver"]


def _tpu(plan: Plan) -> Any:
    """Resolve, connect, initialise the TPU system, then create TPUStrategy: once, first."""
    import tensorflow as tf

    if runtime_started():
        raise RuntimeAlreadyStartedError(runtime_started_message("The TPU must be connected"))
    name = plan.tpu.name if plan.tpu else None
    if plan.tpu is not None and plan.tpu.source == "COLAB_TPU_ADDR" and name and "://" not in name:
        name = f"grpc://{name}"
    resolver = tpu_cluster_resolver(name or None)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
