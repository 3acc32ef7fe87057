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
configured only once per process. What happened is kept in :mod:`autodist.run.record`.

Example:
    >>> from autodist.run.activation import step_aside
    >>> step_aside()  # nothing was activated in this process: nothing to step aside from
    False
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from autodist.errors import AutodistError, RuntimeAlreadyStartedError
from autodist.log import get_logger
from autodist.planning.here import plan_here
from autodist.planning.plans import StrategyKind
from autodist.run import coexistence
from autodist.run.record import Activation, current, record, set_record
from autodist.run.strategies import (
    building,
    check_same_cluster,
    configure_cpu_devices,
    kind_of_class,
    runtime_started,
    start,
    strategy_key,
)
from autodist.settings import CPU_DEVICES_ENV, activation_enabled

__all__ = ["ASSUMED_FITS", "activate", "complete", "on_script_strategy", "shared_multi_worker", "step_aside", "watch_script_strategies"]

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

_MAIN: list[int | None] = [None]
_BUSY = threading.Lock()


def _makes_current(the_plan: Any) -> bool:
    """Whether this process trains under a strategy to make current (not default, not serving)."""
    cluster = the_plan.cluster
    serving = cluster is not None and (
        cluster.task_type == "evaluator"
        or (the_plan.strategy == StrategyKind.PARAMETER_SERVER and cluster.task_type in ("worker", "ps"))
    )
    return the_plan.strategy != StrategyKind.DEFAULT and not serving


def activate(environ: Mapping[str, str]) -> Activation:
    """At TensorFlow import (once): split the CPU and plan; the strategy waits for a trigger.
    Records and returns what happened; never raises."""
    done = current()
    if done is not None:
        return done
    started = runtime_started()
    try:
        _split_cpu(environ, configure_cpu_devices)
        if started:
            outcome = Activation(ops_before_import=True)
        elif not activation_enabled(environ):
            outcome = Activation()
        else:
            the_plan = plan_here(environ)
            the_plan = dataclasses.replace(the_plan, reasons=the_plan.reasons + (ASSUMED_FITS,))
            outcome = Activation(plan=the_plan, pending=_makes_current(the_plan))
    except Exception as err:  # recorded; fit raises it with its own fix when it gets there
        if not isinstance(err, AutodistError):
            get_logger().warning("autodist: activation failed: %s: %s", type(err).__name__, err)
        outcome = Activation(error=err, ops_before_import=started)
    set_record(outcome)
    if outcome.pending:
        # Current only where the process's main thread activated: a strategy set current in another
        # thread (Ray Train runs the loop in one) leaves its scope open, to be closed at exit in the
        # main thread, where TensorFlow's thread-local creator stack does not exist.
        _MAIN[0] = threading.get_ident() if threading.current_thread() is threading.main_thread() else None
        _TRIGGERS.install()
        watch_script_strategies()
    return outcome


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
    if done is None or not done.pending or building() or not _BUSY.acquire(blocking=False):
        return  # building(): autodist is creating a strategy, whose constructor fired a trigger
    try:
        from tensorflow.python.distribute import distribute_lib

        if done.strategy is None:
            try:
                strategy = start(done.plan)
            except Exception as err:
                record(pending=False, error=err, failed_key=strategy_key(done.plan))
                _TRIGGERS.remove()
                raise
            done = record(strategy=strategy)
        if _MAIN[0] is None:  # activated outside the main thread: created, never made current
            record(pending=False)
            _TRIGGERS.remove()
            get_logger().info(OUTSIDE_MAIN_THREAD, done.plan.strategy.value)
            return
        if threading.get_ident() != _MAIN[0] or distribute_lib.has_strategy() or not current().pending:  # type: ignore[union-attr]
            return
        coexistence.install(done.strategy)
        distribute_lib.experimental_set_strategy(done.strategy)
        record(pending=False)
        _TRIGGERS.remove()
        _UNUSED.install()
        get_logger().info("autodist: %s is the current strategy", done.plan.strategy.value)
    finally:
        _BUSY.release()


def step_aside() -> bool:
    """The script created a strategy of its own (:mod:`autodist.run.coexistence`): stop making
    autodist's current, and unset it, unless it holds variables or its scope was entered."""
    from tensorflow.python.distribute import distribute_lib

    with _BUSY:
        done = current()
        if done is None or done.script_strategy is not None:
            return False
        if done.pending:
            _TRIGGERS.remove()
        elif done.strategy is None or _UNUSED.used or threading.get_ident() != _MAIN[0]:
            return False
        elif coexistence.stepping_aside() is done.strategy:  # current through activation alone, no scope entered
            distribute_lib.experimental_set_strategy(None)
        else:
            return False
        _UNUSED.remove()
        record(pending=False)
        return True


class _Wrappers:
    """Wrappers around TensorFlow functions that call ``before`` first, until :meth:`remove`."""

    def __init__(self) -> None:
        self.saved: list[tuple[Any, str, Any]] = []

    def before(self) -> None:
        raise NotImplementedError

    def _wrap(self, owner: Any, name: str, before: Callable[[], None] | None = None) -> None:
        original = getattr(owner, name)
        call_first = before or self.before

        def first_complete(*args: Any, **kwargs: Any) -> Any:
            call_first()
            return original(*args, **kwargs)

        self.saved.append((owner, name, original))
        setattr(owner, name, first_complete)

    def remove(self) -> None:
        while self.saved:
            owner, name, original = self.saved.pop()
            setattr(owner, name, original)


class _Triggers(_Wrappers):
    """:func:`complete` first, until the strategy is current: at the runtime's start, variable
    creation, ``tf.distribute.get_strategy`` / ``has_strategy`` (Keras models' constructors)."""

    def before(self) -> None:
        complete()

    def install(self) -> None:
        from tensorflow.python.distribute import distribute_lib
        from tensorflow.python.eager import context
        from tensorflow.python.ops import variables

        if self.saved:
            return
        self._wrap(context.Context, "ensure_initialized")
        self._wrap(variables.VariableMetaclass, "__call__", _complete_then_count)
        for name, module in list(sys.modules.items()):
            if name.startswith("tensorflow._api.") and name.endswith(".distribute"):
                for function in ("get_strategy", "has_strategy"):
                    if getattr(module, function, None) is getattr(distribute_lib, function):
                        self._wrap(module, function)


class _Unused(_Wrappers):
    """Watches variable creation until a first variable is created under autodist's strategy
    (until then, a strategy the script creates replaces it: :func:`step_aside`)."""

    used = False

    def before(self) -> None:
        from tensorflow.python.distribute.distribute_lib import get_strategy

        done = current()
        if done is not None and done.strategy is not None and get_strategy() is done.strategy and not _made_by_tf_distribute():
            type(self).used = True
            self.remove()

    def install(self) -> None:
        from tensorflow.python.ops import variables

        if not self.saved and not self.used:
            self._wrap(variables.VariableMetaclass, "__call__")


def _made_by_tf_distribute() -> bool:
    """Whether tf.distribute creates the variable (a strategy's constructor: an ordering token)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame is not None and "tensorflow/python/distribute/" in frame.f_code.co_filename.replace("\\", "/")


def _complete_then_count() -> None:
    """Before a variable is created: complete the activation, then count the variable (the watch
    that ``complete`` installs comes too late for it)."""
    complete()
    _UNUSED.before()


_TRIGGERS = _Triggers()
_UNUSED = _Unused()


def _split_cpu(environ: Mapping[str, str], configure: Callable[[int], None]) -> None:
    raw = environ.get(CPU_DEVICES_ENV, "").strip()
    if raw.isdigit() and int(raw) >= 2:
        try:
            configure(int(raw))
        except RuntimeAlreadyStartedError:
            pass  # build_strategy raises it again, with the fix, when a plan needs the devices


def on_script_strategy(strategy_class: type) -> None:
    """The script has constructed a ``tf.distribute`` strategy of its own (``MirroredStrategy()``,
    ...): one strategy per process. While autodist's is still pending, or current (and not
    entered with ``scope()``) but holding no variable yet, it steps aside for good, as if
    autodist had not been imported: the script's strategies work as they do without autodist
    (``model.fit``, ``evaluate`` and ``save`` outside the ``with`` block), and ``autodist.fit``
    trains a model built in the script's scope under that strategy. Later, it steps aside only
    inside the script's scopes (:func:`stepping_aside`)."""
    done = current()
    if done is None or done.plan is None or done.shared or coexistence.reentered():
        return
    if step_aside():
        record(script_strategy=strategy_class.__name__)
        get_logger().info("autodist: the script created its own %s; autodist's %s steps aside", strategy_class.__name__, done.plan.strategy.value)


def shared_multi_worker(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """autodist's own MultiWorkerMirroredStrategy, for the script's ``MultiWorkerMirroredStrategy()``
    in a job autodist planned as multi-worker (collectives are configured once per process);
    ``None`` elsewhere. Created now if it was still pending.

    Raises:
        StrategyUnavailableError: the script's arguments name another cluster.
        Exception: the strategy's own error (``PeerError``: a peer never connected).
    """
    done = current()
    if done is None or done.plan is None or done.plan.strategy != StrategyKind.MULTI_WORKER_MIRRORED:
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
    record(script_strategy="MultiWorkerMirroredStrategy", shared=True)
    return done.strategy


_COPYING = threading.local()


def watch_script_strategies() -> None:
    """Make the strategies the script constructs known to autodist: a wrapped ``__init__`` on
    TensorFlow's strategy base class calls :func:`on_script_strategy` once a strategy is built,
    and ``MultiWorkerMirroredStrategy()`` gets autodist's own object
    (:func:`shared_multi_worker`, a ``__new__``; not while TensorFlow deep-copies a strategy).
    Autodist's own strategies and TensorFlow's default one are not the script's. Idempotent."""
    from tensorflow.python.distribute import (
        collective_all_reduce_strategy,
        distribute_lib,
    )

    base = distribute_lib.StrategyBase
    if getattr(base, "_autodist_watched", False):
        return
    collective = collective_all_reduce_strategy.CollectiveAllReduceStrategy
    base_init, base_copy, collective_init = base.__init__, base.__deepcopy__, collective.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        base_init(self, *args, **kwargs)
        if not building() and not getattr(_COPYING, "on", False) and kind_of_class(type(self)) is not None:
            on_script_strategy(type(self))

    def __deepcopy__(self: Any, memo: Any) -> Any:
        _COPYING.on = True
        try:
            return base_copy(self, memo)
        finally:
            _COPYING.on = False

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        shared = None if building() or getattr(_COPYING, "on", False) else shared_multi_worker(args, kwargs)
        return shared if shared is not None else object.__new__(cls)

    def collective_once(self: Any, *args: Any, **kwargs: Any) -> None:
        if getattr(self, "_autodist_shared_init", False):
            return  # autodist's own, given to the script's constructor: built already
        collective_init(self, *args, **kwargs)

    base.__init__, base.__deepcopy__ = __init__, __deepcopy__  # type: ignore[method-assign]
    collective.__new__ = staticmethod(__new__)  # type: ignore[method-assign]
    collective.__init__ = collective_once  # type: ignore[method-assign]
    base._autodist_watched = True
