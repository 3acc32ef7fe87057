"""Act at import: make the chosen strategy current the moment TensorFlow is imported.

``import autodist`` imports no TensorFlow. It installs an import hook instead: when TensorFlow
is imported (by ``import tensorflow``, ``import keras`` or ``import tf_keras``; at once if it
already is), autodist detects the hardware, plans without a model, creates the strategy and makes
it the current one with ``tf.distribute.experimental_set_strategy``. From then on every model,
optimizer and metric the script builds is created under that strategy, with no ``with scope``,
so ``autodist.fit(model, ...)`` trains the user's own object, and MultiWorkerMirrored exists
before the script's first op (a ``tf.data`` pipeline built before ``fit`` is fine).

Nothing is made current when the plan is ``default`` (one device), on parameter-server
``worker``/``ps`` tasks (they serve in ``fit``) and on an ``evaluator``. A failure (a peer that
never connects, an unusable forced strategy) is recorded, logged, and raised by ``fit``.
``AUTODIST_ACTIVATE=0`` turns the hook off; ``AUTODIST_STRATEGY=<kind>`` picks the strategy
made current (otherwise ``auto``).

Example:
    >>> from autodist.activation import activation_enabled
    >>> activation_enabled({"AUTODIST_ACTIVATE": "0"}), activation_enabled({})
    (False, True)
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.abc
import importlib.util
import sys
from collections.abc import Callable, Mapping
from typing import Any

from autodist.errors import AutodistError, RuntimeAlreadyStartedError
from autodist.hardware import CPU_DEVICES_ENV
from autodist.log import get_logger

__all__ = [
    "ACTIVATE_ENV",
    "STRATEGY_ENV",
    "Activation",
    "activation_enabled",
    "current",
    "install",
    "runtime_started_message",
]

ACTIVATE_ENV = "AUTODIST_ACTIVATE"
STRATEGY_ENV = "AUTODIST_STRATEGY"
_OFF = ("0", "off", "false", "no")
#: Packages whose import may import TensorFlow; activation waits until the outermost one is done.
_WATCHED = ("tensorflow", "keras", "tf_keras")

#: The reason added to a plan made at import, before any model exists.
ASSUMED_FITS = (
    "made when TensorFlow was imported, before the model existed: it assumes the model fits "
    "one device. If it turns out not to (autodist.fit checks the real size), fit switches to "
    "central_storage and moves the model with a warning; set AUTODIST_STRATEGY=central_storage "
    "to create it there directly"
)


@dataclasses.dataclass(frozen=True)
class Activation:
    """What happened at import.

    Attributes:
        plan: the plan made at import (``None`` if none was made).
        strategy: the strategy made current, or ``None`` (default plan, serving tasks, failure).
        error: the error activation hit.
        failed_key: the strategy (``strategies.strategy_key``) that failed to build; ``fit``
            raises ``error`` when it plans that same strategy, instead of trying again.
        ops_before_import: TensorFlow's runtime had started before ``import autodist``.
    """

    plan: Any = None
    strategy: Any = None
    error: BaseException | None = None
    failed_key: tuple[Any, ...] | None = None
    ops_before_import: bool = False


_STATE: dict[str, Activation] = {}


def activation_enabled(environ: Mapping[str, str]) -> bool:
    """Whether ``AUTODIST_ACTIVATE`` leaves the import-time activation on (the default)."""
    return environ.get(ACTIVATE_ENV, "1").strip().lower() not in _OFF


def current() -> Activation | None:
    """What activation did in this process, or ``None`` when it has not run."""
    return _STATE.get("done")


def runtime_started_message(what: str) -> str:
    """The one message for "the runtime started too early", with the cause as it happened.

    Example:
        >>> "import autodist" in runtime_started_message("MultiWorkerMirroredStrategy must exist")
        True
    """
    done = current()
    if done is not None and done.ops_before_import:
        cause = (
            "TensorFlow ran ops before `import autodist` (the runtime had already started when "
            "autodist was imported). Fix: move `import autodist` to the top of the script, above "
            "any TensorFlow, Keras or tf.data code; ops after it are fine."
        )
    elif done is not None:
        cause = (
            "the runtime started before autodist could create the strategy. Fix: let autodist "
            "create it first (autodist.init() at the top of the script), or pass a function that "
            "builds the model to autodist.fit."
        )
    else:
        cause = (
            f"the runtime started before autodist could act ({ACTIVATE_ENV}=0 turns off the "
            "activation at import). Fix: unset it and put `import autodist` at the top of the "
            "script, or call autodist.init() before any TensorFlow code."
        )
    return f"{what} before TensorFlow runs anything, but {cause}"


def _make_current(environ: Mapping[str, str]) -> Activation:
    """Detect, plan without a model, build the strategy and set it as the current one."""
    import tensorflow as tf

    from autodist.hardware import detect
    from autodist.planning import StrategyKind, plan
    from autodist.strategies import build_strategy, strategy_key

    the_plan = plan(detect(environ), strategy=environ.get(STRATEGY_ENV, "auto") or "auto", environ=environ)
    the_plan = dataclasses.replace(the_plan, reasons=the_plan.reasons + (ASSUMED_FITS,))
    cluster = the_plan.cluster
    serving = cluster is not None and (
        cluster.task_type == "evaluator"
        or (the_plan.strategy == StrategyKind.PARAMETER_SERVER and cluster.task_type in ("worker", "ps"))
    )
    if the_plan.strategy == StrategyKind.DEFAULT or serving:
        return Activation(plan=the_plan)
    try:
        strategy = build_strategy(the_plan)
    except Exception as err:  # fit raises it when it plans the same strategy
        get_logger().warning("autodist: could not create %s at import: %s", the_plan.strategy.value, err)
        return Activation(plan=the_plan, error=err, failed_key=strategy_key(the_plan))
    _let_other_scopes_in()
    tf.distribute.experimental_set_strategy(strategy)
    get_logger().info("autodist: %s is the current strategy (set when TensorFlow was imported)", the_plan.strategy.value)
    return Activation(plan=the_plan, strategy=strategy)


def stepping_aside(strategy: Any = None) -> Any:
    """autodist's current strategy, if it should step aside for ``strategy``'s scope (or, with
    ``None``, for a load "without a strategy"); ``None`` otherwise.

    It steps aside only when it is current through activation alone: not when the script
    re-entered its scope, nor inside any other scope, where TensorFlow's own rules apply.
    """
    done = current()
    if done is None or done.strategy is None or "tensorflow" not in sys.modules:
        return None
    import tensorflow as tf
    from tensorflow.python.framework import ops

    global_scope = ops.get_default_graph()._global_distribute_strategy_scope
    if global_scope is None or global_scope._context.strategy is not done.strategy:
        return None  # the script set another strategy itself
    if tf.distribute.get_strategy() is not done.strategy or _REENTERED[0]:
        return None
    return None if strategy is done.strategy else done.strategy


#: How deep the script has re-entered the scope of autodist's current strategy (``with scope``).
_REENTERED = [0]


@contextlib.contextmanager
def _counted(inner: Any) -> Any:
    _REENTERED[0] += 1
    try:
        with inner as entered_strategy:
            yield entered_strategy
    finally:
        _REENTERED[0] -= 1


class _Aside:
    """Wraps a context manager: autodist's strategy is not current inside it, and is after."""

    def __init__(self, inner: Any, aside: Any) -> None:
        self.inner, self.aside = inner, aside

    def __enter__(self) -> Any:
        import tensorflow as tf

        tf.distribute.experimental_set_strategy(None)
        try:
            return self.inner.__enter__()
        except BaseException:
            tf.distribute.experimental_set_strategy(self.aside)
            raise

    def __exit__(self, *exc: Any) -> Any:
        import tensorflow as tf

        try:
            return self.inner.__exit__(*exc)
        finally:
            tf.distribute.experimental_set_strategy(self.aside)


def _let_other_scopes_in() -> None:
    """What a script without autodist can do keeps working with autodist's strategy current:
    ``with another_strategy.scope():`` (the save-and-load tutorial loads a model under a
    ``OneDeviceStrategy`` it builds itself) and ``tf.saved_model.load(path)`` "without a
    strategy", whose signatures are then called directly. For those, autodist's strategy steps
    aside (:func:`stepping_aside`). Idempotent."""
    from tensorflow.python.distribute import distribute_lib
    from tensorflow.python.framework import ops
    from tensorflow.python.saved_model import load as saved_model_load

    original_scope = distribute_lib.StrategyBase.scope
    if getattr(original_scope, "autodist_wrapped", False):
        return

    def scope(self: Any) -> Any:
        inner = original_scope(self)
        if ops.get_default_graph()._global_distribute_strategy_scope is None:
            return inner  # no strategy is current globally (or experimental_set_strategy sets one)
        done = current()
        if done is not None and self is done.strategy:
            return _counted(inner)
        aside = stepping_aside(self)
        return inner if aside is None else _Aside(inner, aside)

    original_load = saved_model_load.load

    def load(*args: Any, **kwargs: Any) -> Any:
        aside = stepping_aside()
        if aside is None:
            return original_load(*args, **kwargs)
        with _Aside(contextlib.nullcontext(), aside):
            return original_load(*args, **kwargs)

    scope.autodist_wrapped = True  # type: ignore[attr-defined]
    distribute_lib.StrategyBase.scope = scope
    for name, module in list(sys.modules.items()):
        if (name == saved_model_load.__name__ or name.startswith("tensorflow._api.")) and getattr(module, "load", None) is original_load:
            module.load = load


def activate(environ: Mapping[str, str]) -> Activation:
    """Run activation once (the hook calls it); record and return what happened. Never raises."""
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
            outcome = _make_current(environ)
    except Exception as err:  # recorded; fit raises it with its own fix when it gets there
        if not isinstance(err, AutodistError):
            get_logger().warning("autodist: activation failed: %s: %s", type(err).__name__, err)
        outcome = Activation(error=err, ops_before_import=started)
    _STATE["done"] = outcome
    return outcome


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

    def __init__(self, callback: Callable[[], Any]) -> None:
        self.callback = callback
        self.depth = 0
        self.searching = False

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in _WATCHED or self.searching:
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
            if self.depth == 0 and "tensorflow" in sys.modules and self in sys.meta_path:
                sys.meta_path.remove(self)
                self.callback()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install(environ: Mapping[str, str]) -> None:
    """Activate now if TensorFlow is imported already, else when it is. Called by ``import autodist``."""
    if "tensorflow" in sys.modules:
        activate(environ)
    elif not any(isinstance(f, _AfterTensorFlowImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterTensorFlowImport(lambda: activate(environ)))
