"""Act at import: make the chosen strategy current before the script builds anything.

``import autodist`` imports no TensorFlow. It installs an import hook instead. When TensorFlow
is imported (by ``import tensorflow``, ``import keras`` or ``import tf_keras``; at once if it
already is), autodist splits the CPU (``AUTODIST_CPU_DEVICES``), detects the hardware and plans
without a model. It does not start TensorFlow's runtime then, so ``tf.config`` calls right after
the import (memory growth, threads, visible devices) still work. The strategy is created and made
current (``tf.distribute.experimental_set_strategy``) at the first *trigger*: the runtime
starting (the first op, a ``tf.data`` pipeline), a variable being created, anything asking for
the current strategy (``tf.distribute.get_strategy()``, a Keras model's constructor), or
``autodist.fit`` / ``init``. So MultiWorkerMirrored exists before the script's first op, and
every model, optimizer and metric is created under the strategy with no ``with scope``:
``autodist.fit(model, ...)`` trains the user's own object.

Nothing is made current when the plan is ``default`` (one device), on parameter-server
``worker``/``ps`` tasks (they serve in ``fit``) and on an ``evaluator``. ``AUTODIST_ACTIVATE=0``
turns the hook off; ``AUTODIST_STRATEGY=<kind>`` picks the strategy (otherwise ``auto``). As
``experimental_set_strategy`` does, the strategy is current in the thread that imported
TensorFlow.

One strategy per process: when the script constructs a ``tf.distribute`` strategy of its own (the
guide's and the tutorials' ``strategy = tf.distribute.MirroredStrategy()``), autodist's gives way
(:func:`on_script_strategy`), and ``autodist.fit`` trains a model built in the script's scope
under that strategy. ``MultiWorkerMirroredStrategy()`` in a job autodist planned as multi-worker
is autodist's own object instead (:func:`shared_multi_worker`), since collectives can be
configured only once per process; it then steps aside as for any strategy of the script's, so
what the script creates outside its ``with strategy.scope():`` (the chief's evaluation of a
saved model) is created as without autodist, with no collective. Where autodist's strategy is
the only one, :func:`local` is a block in which it is not current, for such work. What happened
is kept in :mod:`autodist.tensorflow.activation_record`.

Example:
    >>> from autodist.tensorflow.current_strategy import local, step_aside
    >>> step_aside()  # nothing was activated in this process: nothing to step aside from
    False
    >>> with local():  # nor anything to set aside
    ...     pass
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from autodist.detection.hardware import num_cpus
from autodist.errors import AutodistError, ReplicaContextError, RuntimeAlreadyStartedError
from autodist.log import get_logger, warn_all
from autodist.core.detect_and_plan import plan_here
from autodist.tensorflow.collectives import collective_mismatch
from autodist.tensorflow.activation_record import Activation, current, record, set_record
from autodist.tensorflow.strategies import (
    building,
    check_same_cluster,
    configure_cpu_devices,
    kind_of_class,
    runtime_started,
    start,
    strategy_key,
)
from autodist.settings import activation_enabled, cpu_devices_setting
from autodist.upstream import tf_scopes
from autodist.upstream.keras_variables import name_reads_outside_replicas
from autodist.upstream.surface import available
from autodist.upstream.tf_hooks import (
    hook_graph_reset,
    Hooks,
    hook_triggers,
    hook_variable_creation,
    keep_script_variables_plain,
    name_distributed_reads_outside_replicas,
    name_tf_keras_losses_outside_replicas,
    origin_of_new_variable,
    translate_creation_errors,
    watch_strategy_construction,
)
from autodist.upstream.versions import check_versions, installed
from autodist.core.framework_import import when_imported
from autodist.process import STATE, draws_kept, once

__all__ = [
    "ASSUMED_FITS",
    "activate",
    "complete",
    "keep_current",
    "local",
    "on_script_strategy",
    "shared_multi_worker",
    "step_aside",
]

#: The reason added to a plan made at import, before any model exists.
ASSUMED_FITS = (
    "made when TensorFlow was imported, before the model existed: it assumes the model fits "
    "one device. autodist.fit checks the real size; when the model does not fit, fit plans "
    "central_storage and moves the model there with a warning (if building it on each GPU did "
    "not already run out of memory). For a model known to be too large, set "
    "AUTODIST_STRATEGY=central_storage before the script starts, so it is created there"
)


#: Said when the activation ran outside the main thread (Ray Train runs the loop in a thread).
OUTSIDE_MAIN_THREAD = (
    "autodist: TensorFlow was activated outside the main thread (Ray Train runs the training loop "
    "in a thread): %s is created but not made current. autodist.fit trains under it; build models "
    "in autodist.fit (a function), in its scope (autodist.init()), or in your own strategy's scope"
)


def _makes_current(the_plan: Any) -> bool:
    """Whether this process trains under a strategy to make current (not default, not serving)."""
    cluster = the_plan.cluster
    serving = cluster is not None and (
        cluster.task_type == "evaluator" or (the_plan.type.asynchronous and cluster.task_type in ("worker", "ps"))
    )
    return the_plan.type.distributes and not serving


def activate(environ: Mapping[str, str]) -> Activation:
    """At TensorFlow import (once): split the CPU and plan; the strategy waits for a trigger.
    Records and returns what happened; never raises."""
    done = current()
    if done is not None:
        return done
    started = runtime_started()
    try:
        # a newer Keras: said with its workarounds
        for note in check_versions(installed(), notes_for=("tensorflow", "tf_keras")):
            get_logger().warning("autodist: %s", note)
        count = cpu_devices_setting(environ, num_cpus())  # a bad or unbounded value: recorded, and raised again by fit
        if count >= 2:
            # already started: build_strategy raises it again, with the fix, when a plan needs the devices
            with contextlib.suppress(RuntimeAlreadyStartedError):
                configure_cpu_devices(count)
        if started:
            outcome = Activation(ops_before_import=True)
        elif not activation_enabled(environ):
            outcome = Activation()
        else:
            the_plan = plan_here(environ)
            the_plan = dataclasses.replace(the_plan, reasons=the_plan.reasons + (ASSUMED_FITS,))
            outcome = Activation(plan=the_plan, pending=_makes_current(the_plan) and _hooks_available())
    except Exception as err:  # recorded; fit raises it again; said now, as model.fit may be all that follows
        _say_at_import(err)
        outcome = Activation(error=err, ops_before_import=started)
    set_record(outcome)
    if outcome.pending:
        # Current only where the process's main thread activated: a strategy set current in another
        # thread (Ray Train runs the loop in one) leaves its scope open, to be closed at exit in the
        # main thread, where TensorFlow's thread-local creator stack does not exist.
        STATE.main_thread = threading.get_ident() if threading.current_thread() is threading.main_thread() else None
        hook_triggers(_triggers(), complete, _complete_then_count)
        watch_strategy_construction(_on_constructed, shared_multi_worker, building)
    return outcome


def _hooks_available() -> bool:
    """Whether the activation's touches of TensorFlow are all there (each missing one is warned
    about once; without them the strategy waits for fit or init, as with AUTODIST_ACTIVATE=0)."""
    return all([available("tf.activation_hooks"), available("tf.strategy_scopes")])


def _say_at_import(err: BaseException) -> None:
    """A setting or plan error found at TensorFlow's import, logged once as a warning: the script
    may never call autodist.fit (model.fit trains under TensorFlow's default strategy then)."""
    if isinstance(err, AutodistError):
        get_logger().warning(
            "autodist: nothing was made current when TensorFlow was imported, and model.fit trains "
            "under TensorFlow's default strategy: %s (autodist.fit and autodist.init raise this error.)",
            err,
        )
    else:
        get_logger().warning("autodist: activation failed: %s: %s", type(err).__name__, err)


def complete() -> None:
    """Create the pending strategy and make it current. Idempotent; the triggers call it. In
    another thread than the one that imported TensorFlow, inside a ``with scope`` the script
    opened, or when the activation ran outside the process's main thread (Ray Train's training
    thread), it only creates it (MultiWorkerMirrored must exist before the first op).

    Raises:
        Exception: the strategy's own error (``PeerError`` for a peer that never connects),
            once; ``fit`` raises it again rather than trying a second time.
    """
    done = current()
    if done is None or not done.pending or building() or not STATE.activating.acquire(blocking=False):
        return  # building(): autodist is creating a strategy, whose constructor fired a trigger
    try:
        with draws_kept():  # what it imports draws nothing the script would not (Keras 3's rich, under tf_keras)
            _complete(done)
    finally:
        STATE.activating.release()


def _complete(done: Any) -> None:
    """:func:`complete`'s work, holding the activation's lock."""
    import tensorflow as tf

    if done.strategy is None:
        try:
            strategy = start(done.plan)
        except Exception as err:
            record(pending=False, error=err, failed_key=strategy_key(done.plan))
            _triggers().remove()
            raise
        done = record(strategy=strategy)
        if done.plan.type.collective_workers:
            translate_creation_errors(strategy, _mismatch_at_creation)
    if STATE.main_thread is None:  # activated outside the main thread: created, never made current
        record(pending=False)
        _triggers().remove()
        get_logger().info(OUTSIDE_MAIN_THREAD, done.plan.strategy.value)
        return
    if (
        threading.get_ident() != STATE.main_thread
        or tf.inside_function()
        or tf.distribute.has_strategy()
        or not current().pending
    ):  # type: ignore[union-attr]
        return  # made current at a later trigger: not inside a scope, nor while a function is traced
    tf_scopes.install(done.strategy)
    keep_script_variables_plain(done.strategy, scripts_own, on_write=_written_in_replicas)
    name_distributed_reads_outside_replicas(done.strategy, _read_outside_replicas)
    name_reads_outside_replicas(done.strategy, _read_outside_replicas)
    when_imported(
        ("tf_keras",), "tf_keras", lambda: name_tf_keras_losses_outside_replicas(done.strategy, _loss_outside_replicas)
    )
    tf.distribute.experimental_set_strategy(done.strategy)
    record(pending=False)
    _triggers().remove()
    if not STATE.first_variable_ours:
        hook_variable_creation(_variable_watch(), _count_variable)
    hook_graph_reset(_kept_through_reset)
    get_logger().info("autodist: %s is the current strategy", done.plan.strategy.value)


def _kept_through_reset(reset: Callable[[], Any]) -> Any:
    """``reset`` (TensorFlow's default graph, which holds the current strategy: Keras's
    ``clear_session()``, which KerasTuner calls before every trial), with autodist's strategy made
    current again after it where it was current before. Without this, the log says one strategy
    is current while every model built after the reset trains on one device."""
    import tensorflow as tf

    done = current()
    ours = (
        done is not None
        and done.strategy is not None
        and not done.pending
        and threading.get_ident() == STATE.main_thread
        and tf.distribute.get_strategy() is done.strategy
    )
    result = reset()
    if ours and not tf.distribute.has_strategy():
        tf.distribute.experimental_set_strategy(done.strategy)  # type: ignore[union-attr]
        if once("strategy kept through a graph reset"):
            get_logger().info(
                "autodist: clear_session() reset TensorFlow's graph; %s is the current strategy again",
                done.plan.strategy.value,  # type: ignore[union-attr]
            )
    return result


def _mismatch_at_creation(err: BaseException) -> BaseException | None:
    """What a variable's creation under autodist's multi-worker strategy raises instead of ``err``."""
    return collective_mismatch(err, "while creating a variable under autodist's multi_worker_mirrored strategy")


def step_aside() -> bool:
    """The script created a strategy of its own (:mod:`autodist.upstream.tf_scopes`): stop making
    autodist's current, and unset it, unless it holds variables or its scope was entered."""
    import tensorflow as tf

    with STATE.activating:
        done = current()
        if done is None or done.script_strategy is not None:
            return False
        if done.pending:
            _triggers().remove()
        elif done.strategy is None or STATE.first_variable_ours or threading.get_ident() != STATE.main_thread:
            return False
        elif tf_scopes.stepping_aside() is done.strategy:  # current through activation alone, no scope entered
            tf.distribute.experimental_set_strategy(None)
        else:
            return False
        _variable_watch().remove()
        record(pending=False)
        return True


def _triggers() -> Hooks:
    """The TensorFlow functions wrapped to complete the activation (the process state's)."""
    if STATE.triggers is None:
        STATE.triggers = Hooks()
    return STATE.triggers


def _variable_watch() -> Hooks:
    """The watch on variable creation until a first variable is created under autodist's
    strategy (until then, a strategy the script creates replaces it: :func:`step_aside`)."""
    if STATE.variable_watch is None:
        STATE.variable_watch = Hooks()
    return STATE.variable_watch


def _count_variable() -> None:
    """Before a variable is created: whether it is created under autodist's strategy (then the
    watch ends)."""
    import tensorflow as tf

    done = current()
    if done is None or done.strategy is None or tf.distribute.get_strategy() is not done.strategy:
        return
    origin = origin_of_new_variable()
    if origin != "tf.distribute" and not scripts_own(origin):
        STATE.first_variable_ours = True
        _variable_watch().remove()


def scripts_own(origin: str) -> bool:
    """Whether a variable of ``origin`` (``"script"``, ``"keras"``, ``"tf.distribute"``: who runs
    the code that creates it) is created as without autodist: a ``tf.Variable`` the script makes
    itself, outside any Keras object, where autodist's strategy is current through the activation
    alone (not in a ``with strategy.scope():`` the script or Keras entered, not in a replica's
    step). It is then a plain variable, so ``tape.gradient``, ``assign`` and reads behave as on
    one device (the TensorFlow guide's basics); a Keras object's variables are the strategy's,
    but for those Keras makes outside the scope of the script's own strategy for a model made
    under it (its metrics', as ``save`` builds them): as without autodist, where no strategy is
    current there, so that the model's ``fit`` under its own strategy can update them."""
    import tensorflow as tf

    return (
        origin in ("script", "another strategy's model")
        and available("tf.script_variables")
        and tf.distribute.in_cross_replica_context()
        and tf_scopes.stepping_aside() is not None
    )


#: Said once per variable: a plain variable of the script's written in a step on several replicas.
WRITTEN_IN_REPLICAS = (
    "tf.Variable {name!r}, which your script made outside any Keras object, is a plain variable, as "
    "without autodist (so that raw TensorFlow beside Keras runs as on one device); a training step "
    "writes it on each of the {replicas} replicas, so each step writes it {replicas} times where model.fit "
    "on one device writes it once. Fix: make it inside the model (in __init__ or build), or inside "
    "`with tf.distribute.get_strategy().scope():`, where it is the strategy's variable with the "
    "aggregation you give it; or train on one replica (strategy='default')"
)


def _written_in_replicas(variable: Any) -> None:
    """Before a plain variable of the script's is written: warn (once for it) where the write is
    in a replica's step of a strategy with several replicas."""
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    replicas = int(context.num_replicas_in_sync) if context is not None else 1
    if replicas > 1 and once(f"script variable written in replicas: {id(variable)}"):
        warn_all([WRITTEN_IN_REPLICAS.format(name=variable.name.split(":")[0], replicas=replicas)])


READ_OUTSIDE_REPLICAS = (
    "{name} is a variable of a Keras object (a model's, an optimizer's or a metric's) made under the "
    "{strategy} strategy with {replicas} replicas that autodist made current at import, and this code "
    "reads it outside the replica context: a custom training step written for one device "
    "(tape.gradient, or an optimizer's apply, outside strategy.run), which cannot run on {replicas} "
    "replicas as it is written (the traceback, or TensorFlow's 'in user code' frames, name the line). "
    "Fix: run the step in each replica, strategy = tf.distribute.get_strategy(); "
    "strategy.run(train_step, args=(batch,)) over strategy.experimental_distribute_dataset(dataset), "
    "with the loss divided by the global batch (the TensorFlow guide 'Custom training with "
    "tf.distribute.Strategy'); or train this script on one device: AUTODIST_STRATEGY=default before it "
    "starts (AUTODIST_ACTIVATE=0 leaves TensorFlow as it is)"
)


LOSS_OUTSIDE_REPLICAS = (
    "the tf_keras loss {name} averages over the batch (reduction AUTO) and this code calls it outside "
    "Model.fit and outside strategy.run, while the {strategy} strategy with {replicas} replicas that "
    "autodist made current at import is current: a custom training step written for one device, which "
    "cannot run on {replicas} replicas as it is written (the traceback, or TensorFlow's 'in user code' "
    "frames, name the line). Fix: run the step in each replica, strategy = tf.distribute.get_strategy(); "
    "strategy.run(train_step, args=(batch,)) over strategy.experimental_distribute_dataset(dataset), with "
    "the loss made with reduction=tf.keras.losses.Reduction.NONE and averaged by "
    "tf.nn.compute_average_loss(per_example_loss, global_batch_size=...) (the TensorFlow guide 'Custom "
    "training with tf.distribute.Strategy'); or train this script on one device: AUTODIST_STRATEGY=default "
    "before it starts (AUTODIST_ACTIVATE=0 leaves TensorFlow as it is)"
)


def _outside_replicas(message: str, name: str) -> ReplicaContextError:
    """The named error ``message`` for ``name``, with the plan's strategy and replicas."""
    the_plan = getattr(current(), "plan", None)
    replicas, strategy = (the_plan.num_replicas, the_plan.strategy.value) if the_plan else ("several", "current")
    return ReplicaContextError(message.format(name=name, strategy=strategy, replicas=replicas))


def _loss_outside_replicas(loss: Any, error: BaseException) -> ReplicaContextError:
    """The named error for a tf_keras loss averaged over the batch in autodist's cross-replica context."""
    return _outside_replicas(LOSS_OUTSIDE_REPLICAS, f"{type(loss).__name__} {getattr(loss, 'name', '')!r}".strip())


def _read_outside_replicas(variable: Any, error: BaseException) -> ReplicaContextError:
    """The named error for a Keras variable of autodist's strategy read outside the replica context."""
    name = getattr(variable, "path", None) or getattr(variable, "name", "a variable")
    return _outside_replicas(READ_OUTSIDE_REPLICAS, name)


def _complete_then_count() -> None:
    """Before a variable is created: complete the activation, then count the variable (the watch
    that ``complete`` installs comes too late for it)."""
    complete()
    _count_variable()


def on_script_strategy(strategy_class: type) -> None:
    """The script has constructed a ``tf.distribute`` strategy of its own (``MirroredStrategy()``,
    ...): one strategy per process. While autodist's is still pending, or current (and not
    entered with ``scope()``) but holding no variable yet, it steps aside for good, as if
    autodist had not been imported: the script's strategies work as they do without autodist
    (``model.fit``, ``evaluate`` and ``save`` outside the ``with`` block), and ``autodist.fit``
    trains a model built in the script's scope under that strategy. Later, it steps aside only
    inside the script's scopes (:func:`stepping_aside`)."""
    done = current()
    if done is None or done.plan is None or done.shared or tf_scopes.reentered():
        return
    if step_aside():
        record(script_strategy=strategy_class.__name__)
        get_logger().info(
            "autodist: the script created its own %s; autodist's %s steps aside",
            strategy_class.__name__,
            done.plan.strategy.value,
        )


def shared_multi_worker(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """autodist's own MultiWorkerMirroredStrategy, for the script's ``MultiWorkerMirroredStrategy()``
    in a job autodist planned as multi-worker (collectives are configured once per process);
    ``None`` elsewhere. Created now if it was still pending.

    Raises:
        StrategyUnavailableError: the script's arguments name another cluster.
        Exception: the strategy's own error (``PeerError``: a peer never connected).
    """
    done = current()
    if done is None or done.plan is None or not done.plan.type.collective_workers:
        return None
    check_same_cluster(done.plan, args, kwargs)
    complete()  # creates it (once; an error is recorded for fit) when pending
    done = current()
    assert done is not None
    if done.strategy is None:
        if done.error is not None:
            raise done.error
        return None
    done.strategy._autodist_shared_init = True  # its constructor must not run a second time
    if not STATE.init_called:
        step_aside()  # the script's strategy now: current no more, unless it holds variables already
    record(script_strategy="MultiWorkerMirroredStrategy", shared=True)
    return done.strategy


def keep_current() -> None:
    """``autodist.init()`` was called: the script holds autodist's strategy and asked for it, so
    it stays current when the script's ``MultiWorkerMirroredStrategy()`` turns out to be it."""
    STATE.init_called = True


@contextlib.contextmanager
def local() -> Iterator[None]:
    """A block in which autodist's strategy is not current: what it creates and runs is as
    without autodist, under TensorFlow's default strategy, with no collective op. For work on one
    worker only (``if autodist.is_chief():`` loading, evaluating or exporting a model), which
    under the multi-worker strategy would wait for workers that never join it. A strategy still
    pending is created first, so it cannot be made current inside the block.

    A no-op where autodist made nothing current (one device, ``AUTODIST_ACTIVATE=0``, outside the
    main thread), after it stepped aside for the script's own strategy (outside the script's
    ``with strategy.scope():`` nothing is autodist's already), and inside a scope the script
    opened (that scope wins). A model created inside is used inside: its ``evaluate`` and
    ``predict`` run under the default strategy.

    Example:
        >>> import autodist
        >>> with autodist.local():
        ...     pass
    """
    complete()
    with tf_scopes.aside():
        yield


def _on_constructed(strategy: Any) -> None:
    """A ``tf.distribute`` strategy was constructed (not by autodist): the script's own, unless it
    is TensorFlow's default one or a class autodist does not know."""
    if kind_of_class(type(strategy)) is not None:
        on_script_strategy(type(strategy))
