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
    tf.distribute.experimental_set_strategy(strategy)
    get_logger().info("autodist: %s is the current strategy (set when TensorFlow was imported)", the_plan.strategy.value)
    return Activation(plan=the_plan, strategy=strategy)


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
