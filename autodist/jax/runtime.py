"""Act, Keras 3 on JAX: the plan's ``keras.distribution``, the processes joined, the model trained.

- :func:`join_ray_workers`: a Ray Train worker group, joined by Ray (TPUs, GPUs) or here, from
  Ray's rank and world size and a coordinator address worker 0 publishes.
- :func:`join_processes`: in a cluster, ``keras.distribution.initialize`` with the coordinator
  (the chief, else worker 0: the first address the cluster manager gives), the process count and
  this process's id, once, before JAX's runtime starts (``import autodist`` arranges it for the
  moment JAX is imported; see :meth:`autodist.jax.backend.JaxBackend.at_import`).
- :func:`build_distribution`: ``DataParallel`` or ``ModelParallel`` (a ``DeviceMesh`` and the
  plan's ``LayoutMap``) over all processes' devices; ``None`` for ``default``.
- :func:`place`: the variables of the model, its optimizer and metrics take the distribution's
  layouts where they are, so the caller's own model object trains (a model built under the
  distribution, by ``init``, ``@distributed`` or a builder function, already has them).
- :func:`train`: ``model.fit`` inside the distribution's scope, which gives back the caller's own
  distribution setting afterwards.
- :class:`JaxFit`: ``autodist.fit``'s stages on JAX (:mod:`autodist.core.fit_template`):
  join and detect, plan, build (a builder function is called under the distribution), place, train.

Example:
    >>> from autodist.planning.plans import Plan, StrategyKind
    >>> build_distribution(Plan(StrategyKind.DEFAULT, 1, keras_backend="jax")) is None
    True
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Iterator, Mapping
from typing import Any

from autodist.detection import ray_train  # ray_train.ray_train_worker: the one probe, looked up when called
from autodist.detection.cluster import detect_cluster
from autodist.detection.hardware import detect
from autodist.errors import AutodistError, RuntimeAlreadyStartedError
from autodist.core.input_kinds import Input
from autodist.jax.inputs import Part, local_inputs
from autodist.log import warn_all
from autodist.core.detect_and_plan import plan_here
from autodist.planning.plans import Plan, StrategyKind
from autodist.core.fit_call import FitCall
from autodist.core.fit_template import Placed, Prepared, Started
from autodist.core.callbacks import ChiefDuties, final_callbacks
from autodist.core.compile_settings import mixed_precision_while_building
from autodist.upstream.jax_runtime import backends_started, set_layout, takes_layouts
from autodist.process import STATE
from autodist.planning.strategy_types import DataParallel, ModelParallel

__all__ = [
    "build_distribution",
    "coordinates",
    "distribution_scope",
    "JaxFit",
    "init_on_jax",
    "join_at_import",
    "join_processes",
    "join_ray_workers",
    "place",
    "train",
]


def coordinates(cluster: Any) -> tuple[str, int, int]:
    """``(coordinator address, process count, this process's id)`` for a cluster: the chief (or
    worker 0) coordinates and is process 0; workers follow in index order.

    Example:
        >>> from autodist.detection.cluster import detect_cluster
        >>> import json
        >>> cluster = {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}
        >>> tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1}})
        >>> c = detect_cluster({"TF_CONFIG": tf_config})
        >>> coordinates(c)
        ('127.0.0.1:2222', 2, 1)
    """
    ordered = list(cluster.cluster_spec.get("chief", [])) + list(cluster.cluster_spec.get("worker", []))
    chiefs = len(cluster.cluster_spec.get("chief", []))
    process = cluster.task_index + (chiefs if cluster.task_type == "worker" else 0)
    return ordered[0], len(ordered), process


def join_processes(cluster: Any) -> bool:
    """Initialize JAX's multi-process runtime for ``cluster`` once; ``False`` when there is
    nothing to join (no cluster, one process) or it is joined already.

    Raises:
        RuntimeAlreadyStartedError: JAX's runtime started before it could be joined.
    """
    if STATE.join_error is not None:
        raise STATE.join_error
    if cluster is None or cluster.num_workers < 2:
        return False
    if cluster.task_type not in ("chief", "worker"):
        raise AutodistError(
            f"This process is the cluster's {cluster.task_type} ({cluster.source}), and Keras on JAX "
            "trains every process in sync, data parallel: there are no ps or evaluator tasks. "
            "Expected chief and worker tasks only. Start the job without them (python -m autodist "
            "launch --workers N), or train with KERAS_BACKEND=tensorflow for parameter servers."
        )
    import jax

    if backends_started() and jax.process_count() > 1:
        return False  # joined already
    if backends_started():
        raise RuntimeAlreadyStartedError(
            f"This process is {cluster.task_type} {cluster.task_index} of a {cluster.num_workers}-process "
            "job, and JAX's runtime started before autodist could join the processes "
            "(keras.distribution.initialize must come before any JAX computation). Fix: put "
            "`import autodist` at the top of the script, above jax and keras, or call "
            "autodist.init() before building anything."
        )
    import keras

    address, count, process = coordinates(cluster)
    keras.distribution.initialize(job_addresses=address, num_processes=count, process_id=process)
    return True


def join_at_import(environ: Mapping[str, str]) -> None:
    """The activation at import, on JAX (:meth:`autodist.jax.backend.JaxBackend.at_import` calls it when JAX
    has been imported): join the cluster's processes before JAX computes anything. Never raises:
    an error is kept, and ``fit`` / ``init`` raise it."""
    try:
        join_processes(detect_cluster(environ))
    except Exception as err:  # kept for fit and init, which raise it with its fix
        STATE.join_error = err


def init_on_jax(environ: Mapping[str, str], *, make_global: bool = True, **plan_kwargs: Any) -> tuple[Plan, Any]:
    """``autodist.init`` on JAX: join, plan, and make the plan's distribution the global one
    (``keras.distribution.set_distribution``), so every model built afterwards is on the mesh
    (``@distributed`` sets it only while its function runs: ``make_global=False``)."""
    snapshot, ray_cluster = _here(environ)
    if ray_cluster is not None and plan_kwargs.get("snapshot") is None:
        plan_kwargs = {**plan_kwargs, "snapshot": snapshot}
    the_plan = plan_here(environ, **plan_kwargs)
    distribution = build_distribution(the_plan)
    if distribution is not None and make_global:
        from keras import distribution as kd

        kd.set_distribution(distribution)
    return the_plan, distribution


def build_distribution(the_plan: Plan) -> Any:
    """The plan's ``keras.distribution`` object, or ``None`` (``default``: no distribution)."""
    if not the_plan.type.distributes:
        return None
    from keras import distribution as kd

    devices = kd.list_devices()
    mesh = the_plan.mesh
    expected = the_plan.num_replicas * (mesh.model_axis if mesh is not None else 1)
    if len(devices) != expected:
        raise AutodistError(
            f"The plan's mesh {the_plan.mesh_shape} needs {expected} JAX devices, and JAX lists "
            f"{len(devices)} ({', '.join(devices[:8])}). Expected the devices the plan was made "
            "for. Plan on this machine (autodist.fit, or autodist.plan() without a snapshot)."
        )
    if the_plan.type.backend != "jax":
        _no_mesh(the_plan)
    return the_plan.type.build(the_plan)


def _no_mesh(the_plan: Plan) -> None:
    raise AutodistError(
        f"The plan is {the_plan.strategy.value} with no device mesh. Expected a model_parallel plan with its mesh "
        "(its shape, axis names and layout map). Plan it with autodist.plan(), or give Plan(mesh=Mesh(...))."
    )


@DataParallel.builds
def _data_parallel(the_plan: Plan) -> Any:
    from keras import distribution as kd

    return kd.DataParallel(devices=kd.list_devices(), auto_shard_dataset=False)


@ModelParallel.builds
def _model_parallel(the_plan: Plan) -> Any:
    from keras import distribution as kd

    mesh = the_plan.mesh
    if mesh is None:
        _no_mesh(the_plan)
    device_mesh = kd.DeviceMesh(shape=mesh.shape, axis_names=list(mesh.axes), devices=kd.list_devices())
    layout_map = kd.LayoutMap(device_mesh)
    for path, spec in mesh.layout_map:  # keys are regular expressions: each matches its path only
        layout_map[re.escape(path)] = spec
    return kd.ModelParallel(layout_map=layout_map, batch_dim_name=mesh.axes[0], auto_shard_dataset=False)


def place(model: Any, distribution: Any) -> int:
    """Give every variable of ``model`` (weights, built optimizer, metrics) the layout
    ``distribution`` wants, in place; returns how many moved.

    Raises:
        AutodistError: when this Keras's variables cannot take a layout (``_layout``).
    """
    if distribution is None:
        return 0
    optimizer = getattr(model, "optimizer", None)
    variables = (
        list(model.variables)
        + list(getattr(optimizer, "variables", None) or [])
        + list(getattr(model, "metrics_variables", []))
    )
    missing = takes_layouts(variables)
    if missing:
        raise AutodistError(
            f"The variable {missing[0].path} has no layout attribute, so autodist cannot move the "
            f"model onto the JAX mesh (Keras {getattr(__import__('keras'), '__version__', '?')}). "
            "Expected Keras 3.x on JAX. Build the model after autodist.init(), or inside "
            "@autodist.distributed, so its variables are created on the mesh."
        )
    for variable in variables:  # a layout set before (another distribution's) would win: dropped
        set_layout(variable, None)
    weights = {
        id(v): distribution.get_variable_layout(v) for v in model.trainable_variables + model.non_trainable_variables
    }
    for variable in variables:
        set_layout(variable, weights.get(id(variable)) or _slot_layout(variable, model, weights, distribution))
    return len(variables)


def _slot_layout(variable: Any, model: Any, layouts: Mapping[int, Any], distribution: Any) -> Any:
    """An optimizer slot takes its weight's layout, as ``add_variable_from_reference`` gives it
    (the slot is named after the weight's path: ``net_dense_kernel_momentum``)."""
    for weight in model.trainable_variables:
        prefix = weight.path.replace("/", "_") + "_"
        if str(variable.name).startswith(prefix) and tuple(variable.shape) == tuple(weight.shape):
            return layouts[id(weight)]
    return distribution.get_variable_layout(variable)


def distribution_scope(distribution: Any) -> contextlib.AbstractContextManager[Any]:
    """``distribution`` current inside, the caller's own setting (or none) back after."""
    return distribution.scope() if distribution is not None else contextlib.nullcontext()


def train(
    model: Any, data: Input, the_plan: Plan, distribution: Any, epochs: int, fit_kwargs: Mapping[str, Any]
) -> Any:
    """``model.fit`` under ``distribution`` with this process's part of the arrays."""
    process = coordinates(the_plan.cluster)[2] if the_plan.cluster is not None and the_plan.num_workers > 1 else 0
    part = Part(process, the_plan.num_workers, the_plan.num_replicas)
    batch = int(the_plan.global_batch_size or 32)
    x, y, kwargs, warnings = local_inputs(data, fit_kwargs, batch=batch, part=part)
    warn_all(warnings)
    if distribution is not None:  # Keras shards a tf.data.Dataset over the processes; arrays are split above
        distribution.auto_shard_dataset = data.sharded_by_keras
    place(model, distribution)
    with distribution_scope(distribution):
        return model.fit(x, y, epochs=epochs, **kwargs)


class JaxFit:
    """The stages of one ``fit`` on JAX (:class:`autodist.core.fit_template.FitStages`): the
    processes joined and the machine detected when planning. A model given is planned with its
    variables; a model the caller's function builds is built on the host first (its mesh follows
    its variables), then planned once and laid out when it trains, as a model given is."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.snapshot: Any = None
        self.said: tuple[str, ...] = ()

    def read(self, call: FitCall) -> FitCall:
        """The call as it is.

        Raises:
            AutodistError: for ``backup_dir=`` (backups and resuming are not built on JAX yet), and
                for a Ray Data shard as input (read it with ``shard.iter_jax_batches`` or train on
                TensorFlow).
        """
        _refuse_backups(call.backup_dir)
        call.data.refuse_on_jax()
        return call

    def _plan_for(self, call: FitCall, model: Any) -> Plan:
        return plan_here(self.environ, snapshot=self.snapshot, model=model, **call.plan_keywords())

    def plan(self, call: FitCall) -> Plan:
        """The plan of a model given; for a function's model, none yet: no distribution while it builds."""
        self.snapshot, _ = _here(self.environ)
        return (
            self._plan_for(call, call.model)
            if call.builder is None
            else Plan(StrategyKind.DEFAULT, 1, keras_backend="jax")
        )

    def start(self, call: FitCall, the_plan: Plan) -> Started:
        return Started(the_plan, build_distribution(the_plan) if call.builder is None else None)

    def place(self, call: FitCall, started: Started) -> Placed:
        """The caller's model, or the one its function builds on the host (its variables take the
        layouts when it trains)."""
        where = contextlib.nullcontext() if call.builder is None else _on_the_host()
        with where, mixed_precision_while_building(call.mixed_precision, call.builder, started.plan) as notes:
            model = call.builder() if call.builder is not None else call.model
        self.said = tuple(notes)  # a model given: only the warning, with mixed_precision=True (it was built already)
        return Placed(model)

    def refine(self, call: FitCall, started: Started, placed: Placed) -> Started:
        """A function's model planned, once, with its variables, and its distribution started."""
        if call.builder is None:
            return started
        the_plan = self._plan_for(call, placed.trained)
        return Started(the_plan, build_distribution(the_plan))

    def prepare(self, call: FitCall, started: Started, placed: Placed) -> Prepared:
        return Prepared(call, tuple(started.plan.warnings) + self.said)

    def train(self, call: FitCall, started: Started, placed: Placed) -> Any:
        """:func:`train` with the launcher's heartbeat and, in a cluster, files written by the chief only."""
        import keras

        the_plan = started.plan
        cluster = the_plan.cluster if the_plan.num_workers > 1 else None
        with ChiefDuties(cluster, keras, False, dict(self.environ)).held(call.fit_kwargs.get("callbacks")) as prepared:
            callbacks = final_callbacks(
                keras, prepared, environ=self.environ, ray_report=call.ray_report, ray_checkpoint=call.ray_checkpoint
            )
            kwargs = {**call.fit_kwargs, "callbacks": callbacks}
            return train(placed.trained, call.data, the_plan, started.distribution, call.epochs, kwargs)

    def copy_back(self, trained: Any, model: Any) -> None:
        """Nothing: on JAX the model trains where it is, never moved."""


@contextlib.contextmanager
def _on_the_host() -> Iterator[None]:
    """No distribution, and new arrays on the host's CPU (a model too large for one device)."""
    import jax
    from keras import distribution as kd

    previous = kd.distribution()
    kd.set_distribution(None)
    try:
        with jax.default_device(jax.local_devices(backend="cpu")[0]):
            yield
    finally:
        kd.set_distribution(previous)


def join_ray_workers(worker: Any) -> Any:
    """A Ray Train worker group as one JAX runtime: the cluster to plan for, or ``None`` (not a
    Ray Train worker, or a group of one). Ray's ``JaxTrainer`` joins the processes itself on TPUs
    and GPUs (``use_tpu``, ``use_gpu``); then they are not joined twice. Otherwise (CPUs) worker 0
    picks a free port on its node and publishes ``host:port`` to the others
    (``ray.train.collective.broadcast_from_rank_zero``, a barrier every worker reaches in the same
    ``fit`` or ``init``), and every worker calls ``keras.distribution.initialize`` with it, Ray's
    world size and its rank.

    Raises:
        RuntimeAlreadyStartedError: JAX computed something before the processes could be joined
            (a model built before ``autodist.fit``): the fix says what to move.
    """
    if worker is None or worker.world_size < 2:
        return None
    import jax

    if worker.jax_joined or (backends_started() and jax.process_count() == worker.world_size):
        return ray_train.jax_cluster(worker, "joined by Ray Train")
    if backends_started():
        raise RuntimeAlreadyStartedError(
            f"This process is worker {worker.world_rank} of {worker.world_size} in a Ray Train run, "
            "and JAX's runtime started before autodist could join the workers into one "
            "(keras.distribution.initialize must come before any JAX computation: building a model "
            "is one). Fix: pass autodist.fit a function that builds and compiles the model, or call "
            "autodist.init() at the top of train_loop_per_worker, before building anything."
        )
    import keras
    from ray.train.collective import broadcast_from_rank_zero  # Ray is imported already: a Ray Train worker

    address = broadcast_from_rank_zero(_free_address() if worker.world_rank == 0 else None)
    keras.distribution.initialize(job_addresses=address, num_processes=worker.world_size, process_id=worker.world_rank)
    return ray_train.jax_cluster(worker, address)


def _free_address() -> str:
    """``host:port`` for JAX's coordinator on worker 0: this node's address as Ray knows it
    (loopback when Ray runs on it), and a port free now."""
    import socket

    import ray.util

    host = ray.util.get_node_ip_address()
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _here(environ: Mapping[str, str]) -> tuple[Any, Any]:
    """Join this process's job (a Ray Train worker group, else the cluster the environment
    describes) and detect: ``(snapshot, cluster)``, the snapshot with the cluster it trains in."""
    ray_cluster = join_ray_workers(ray_train.ray_train_worker())
    if ray_cluster is None:
        join_processes(detect_cluster(environ))
        return detect(environ), None
    return dataclasses.replace(detect(environ), cluster=ray_cluster), ray_cluster


def _refuse_backups(backup_dir: Any) -> None:
    if backup_dir not in (None, False):
        raise AutodistError(
            f"autodist.fit got backup_dir={backup_dir!r}, and Keras runs on JAX here: backups at "
            "each epoch's end and resuming after preemption are built for tf.distribute only. "
            "Expected backup_dir=None on JAX. Pass keras.callbacks.BackupAndRestore(...) in "
            "callbacks= yourself, or train with KERAS_BACKEND=tensorflow."
        )
