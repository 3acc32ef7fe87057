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

Example:
    >>> from autodist.activation import runtime_started_message
    >>> "import autodist" in runtime_started_message("MultiWorkerMirroredStrategy must exist")
    True
"""

from __future__ import annotations

import dataclasses
import importlib.abc
import importlib.util
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from autodist.errors import AutodistError, RuntimeAlreadyStartedError
from autodist.log import get_logger
from autodist.settings import ACTIVATE_ENV, CPU_DEVICES_ENV, activation_enabled, peer_timeout_setting, strategy_setting

__all__ = ["ASSUMED_FITS", "Activation", "activate", "complete", "current", "install", "record", "step_aside", "plan_here", "runtime_started_message", "start", "uninstall"]

#: Packages whose import may import TensorFlow; activation waits until the outermost one is done.
_WATCHED = ("tensorflow", "keras", "tf_keras")

#: The reason added to a plan made at import, before any model exists.
ASSUMED_FITS = (
    "made when TensorFlow was imported, before the model existed: it assumes the model fits "
    "one device. autodist.fit checks the real size; when the model does not fit, fit plans "
    "central_storage and moves the model there with a warning (if building it on each GPU did "
    "not already run out of memory). For a model known to be too large, set "
    "AUTODIST_STRATEGY=central_storage before the script starts, so it is created there"
)


@dataclasses.dataclass(frozen=True)
class Activation:
    """What happened at import.

    Attributes:
        plan: the plan made at import (``None`` if none was made).
        strategy: the strategy created for it, or ``None`` (not yet, default plan, serving).
        error: the error activation hit.
        failed_key: the strategy (``strategies.strategy_key``) that failed to build; ``fit``
            raises ``error`` when it plans that same strategy, instead of trying again.
        ops_before_import: TensorFlow's runtime had started before ``import autodist``.
        pending: the strategy is still to be made current (see :func:`complete`).
        script_strategy: the script's own strategy class autodist stepped aside for, or shared with.
        shared: the script's ``MultiWorkerMirroredStrategy()`` is autodist's own object.
    """

    plan: Any = None
    strategy: Any = None
    error: BaseException | None = None
    failed_key: tuple[Any, ...] | None = None
    ops_before_import: bool = False
    pending: bool = False
    script_strategy: str | None = None
    shared: bool = False


_STATE: dict[str, Activation] = {}
_MAIN: list[int | None] = [None]
_BUSY = threading.Lock()


def current() -> Activation | None:
    """What activation did in this process, or ``None`` when it has not run."""
    return _STATE.get("done")


def runtime_started_message(what: str) -> str:
    """The one message for "the runtime started too early", with the cause as it happened."""
    done = current()
    if done is not None and done.ops_before_import:
        cause = (
            "TensorFlow ran ops before `import autodist` (the runtime had already started when "
            "autodist was imported). Fix: move `import autodist` to the top of the script, above "
            "any TensorFlow, Keras or tf.data code; ops after it are fine."
        )
    elif done is not None and done.plan is not None:
        cause = (
            "the runtime started before autodist could create the strategy. Fix: leave the "
            "strategy to autodist (AUTODIST_STRATEGY=<kind> picks it) rather than creating "
            "another one first."
        )
    else:
        cause = (
            f"the runtime started before autodist could act ({ACTIVATE_ENV}=0 turns off the "
            "activation at import). Fix: unset it and put `import autodist` at the top of the "
            "script, or call autodist.init() before any TensorFlow code."
        )
    return f"{what} before TensorFlow runs anything, but {cause}"


def _makes_current(the_plan: Any) -> bool:
    """Whether this process trains under a strategy to make current (not default, not serving)."""
    from autodist.planning import StrategyKind

    cluster = the_plan.cluster
    serving = cluster is not None and (
        cluster.task_type == "evaluator"
        or (the_plan.strategy == StrategyKind.PARAMETER_SERVER and cluster.task_type in ("worker", "ps"))
    )
    return the_plan.strategy != StrategyKind.DEFAULT and not serving


def activate(environ: Mapping[str, str]) -> Activation:
    """At TensorFlow import (once): split the CPU and plan; the strategy waits for a trigger.
    Records and returns what happened; never raises."""
    if "done" in _STATE:
        return _STATE["done"]
    from autodist.strategies import configure_cpu_devices, runtime_started

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
    _STATE["done"] = outcome
    if outcome.pending:
        _MAIN[0] = threading.get_ident()
        _TRIGGERS.install()
        __import__("autodist.coexistence").coexistence.watch_script_strategies()
    return outcome


def complete() -> None:
    """Create the pending strategy and make it current. Idempotent; the triggers call it. In
    another thread than the one that imported TensorFlow, or inside a ``with scope`` the script
    opened, it only creates it (MultiWorkerMirrored must exist before the first op).

    Raises:
        Exception: the strategy's own error (``PeerError`` for a peer that never connects),
            once; ``fit`` raises it again rather than trying a second time.
    """
    from autodist.strategies import building

    done = current()
    if done is None or not done.pending or building() or not _BUSY.acquire(blocking=False):
        return  # building(): autodist is creating a strategy, whose constructor fired a trigger
    try:
        from tensorflow.python.distribute import distribute_lib

        from autodist import coexistence
        from autodist.strategies import strategy_key

        if done.strategy is None:
            try:
                strategy = start(done.plan)
            except Exception as err:
                record(pending=False, error=err, failed_key=strategy_key(done.plan))
                _TRIGGERS.remove()
                raise
            done = record(strategy=strategy)
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


def record(**changes: Any) -> Activation:
    """Record what happened since (fields of :class:`Activation`); returns the record."""
    _STATE["done"] = dataclasses.replace(_STATE["done"], **changes)
    return _STATE["done"]


def step_aside() -> bool:
    """The script created a strategy of its own (:mod:`autodist.coexistence`): stop making
    autodist's current, and unset it, unless it holds variables or its scope was entered."""
    from tensorflow.python.distribute import distribute_lib

    from autodist.coexistence import stepping_aside

    with _BUSY:
        done = current()
        if done is None or done.script_strategy is not None:
            return False
        if done.pending:
            _TRIGGERS.remove()
        elif done.strategy is None or _UNUSED.used or threading.get_ident() != _MAIN[0]:
            return False
        elif stepping_aside() is done.strategy:  # current through activation alone, no scope entered
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


class _AfterTensorFlowImport(importlib.abc.MetaPathFinder):
    """Calls ``callback`` once, when the outermost import of TensorFlow (or of Keras importing
    it) has finished, so a half-imported Keras is never touched."""

    watched = _WATCHED
    target = "tensorflow"

    def __init__(self, callback: Callable[[], Any]) -> None:
        self.callback = callback
        self.depth = 0
        self.searching = False

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in self.watched or self.searching:
            return None
        self.searching = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.searching = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        original = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            self.depth += 1
            try:
                original(module)
            finally:
                self.depth -= 1
            if self.depth == 0 and self.target in sys.modules and self in sys.meta_path:
                sys.meta_path.remove(self)
                self.callback()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


class _AfterJaxImport(_AfterTensorFlowImport):
    """Calls ``callback`` once, when the outermost import of JAX (or of Keras importing it) has finished."""

    watched = ("jax", "keras")
    target = "jax"


def install(environ: Mapping[str, str]) -> None:
    """Activate now if TensorFlow is imported already, else when it is. Called by ``import autodist``.

    With Keras on JAX in a cluster, it joins the processes instead (``keras.distribution.initialize``,
    :func:`autodist.jax_runtime.join_at_import`) when JAX is imported, before it computes anything.
    """
    from autodist.cluster import detect_cluster
    from autodist.jax_devices import keras_backend

    if keras_backend(environ) == "jax":
        try:
            in_cluster = activation_enabled(environ) and detect_cluster(environ) is not None
        except AutodistError:
            in_cluster = False  # fit and init raise the malformed definition, with its fix
        if in_cluster:
            _join_when_jax_is_imported(environ)
        return
    if "tensorflow" in sys.modules:
        activate(environ)
    elif not any(type(f) is _AfterTensorFlowImport for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterTensorFlowImport(lambda: activate(environ)))


def _join_when_jax_is_imported(environ: Mapping[str, str]) -> None:
    from autodist.jax_runtime import join_at_import

    if "jax" in sys.modules:
        join_at_import(environ)
    elif not any(type(f) is _AfterJaxImport for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterJaxImport(lambda: join_at_import(environ)))


def uninstall() -> None:
    """Drop the import hook (commands that only report, such as ``inspect``, create no strategy)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AfterTensorFlowImport)]


def plan_here(environ: Mapping[str, str], *, strategy: str | object = "auto", peer_timeout_seconds: float | None = None, snapshot: object = None, **plan_kwargs: object) -> object:
    """Detect this machine (unless ``snapshot`` is given) and plan with the ``AUTODIST_*``
    settings (:mod:`autodist.settings`): the one way the activation at import, ``init``,
    ``@distributed`` and ``fit`` make their plans. The planner itself stays pure; this is the
    edge that reads the machine.

    Example:
        >>> from autodist.hardware import HardwareSnapshot
        >>> plan_here({"AUTODIST_STRATEGY": "one_device"}, snapshot=HardwareSnapshot.cpu_only()).strategy.value
        'one_device'
    """
    from autodist.hardware import detect
    from autodist.planning import plan

    timeout = peer_timeout_setting(environ, peer_timeout_seconds)
    if timeout is not None:
        plan_kwargs["peer_timeout_seconds"] = timeout
    return plan(
        snapshot if snapshot is not None else detect(environ),
        strategy=strategy_setting(environ, strategy),
        environ=environ,
        **plan_kwargs,
    )


def start(the_plan: Any) -> Any:
    """Build the plan's strategy and apply the plan's Keras workarounds: the one act step that
    the activation at import, ``init``, ``@distributed`` and ``fit`` all take (both are cached
    and idempotent, so a second call costs nothing).

    Example:
        >>> from autodist.hardware import HardwareSnapshot
        >>> the_plan = plan_here({}, snapshot=HardwareSnapshot.cpu_only())
        >>> type(start(the_plan)).__name__
        '_DefaultDistributionStrategy'
    """
    from autodist.keras_patches import apply_workarounds
    from autodist.strategies import build_strategy

    strategy = build_strategy(the_plan)
    apply_workarounds(the_plan.keras_workarounds)
    return strategy
