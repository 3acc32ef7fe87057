"""The wrappers the activation at import puts around TensorFlow (touch ``tf.activation_hooks``).

:mod:`autodist.tensorflow.current_strategy` decides what happens; this module only knows where in TensorFlow
to listen:

- :func:`hook_triggers`: a call first, at each of TensorFlow's *triggers*: the runtime starting
  (``Context.ensure_initialized``), a variable being created (``VariableMetaclass.__call__``), and
  the current strategy being asked for (``tf.distribute.get_strategy`` / ``has_strategy``, which
  Keras models' constructors call);
- :func:`hook_variable_creation`: a call first at each variable's creation;
- :func:`watch_strategy_construction`: the script's own strategies, as they are constructed, and
  ``MultiWorkerMirroredStrategy()`` answered with an existing object;
- :func:`translate_creation_errors`: an error raised while a strategy creates a variable (under
  MultiWorkerMirrored, a collective broadcast of its initial value) given to a translator;
- :func:`hook_graph_reset`: TensorFlow's default graph being reset
  (``tf.compat.v1.reset_default_graph``, which Keras's ``clear_session()`` calls, KerasTuner before
  every trial): the graph holds the strategy made current, and the reset drops it.

Each installs nothing and returns ``False`` where the touch is off (the activation then leaves
the strategy to ``fit`` and ``init``). A wrapper whose own work fails on something it did not
expect (an attribute TensorFlow renamed) falls through to TensorFlow's own function.

Example:
    >>> hooks = Hooks()
    >>> bool(hooks), hooks.remove()
    (False, None)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from autodist.log import get_logger
from autodist.upstream.surface import available
from autodist.process import STATE, once, put_back, replace

__all__ = [
    "Hooks",
    "hook_graph_reset",
    "hook_triggers",
    "hook_variable_creation",
    "keep_script_variables_plain",
    "origin_of_new_variable",
    "translate_creation_errors",
    "variable_origin",
    "watch_strategy_construction",
]

#: What a wrapper lets through when its own work fails unexpectedly (autodist's errors and
#: TensorFlow's pass: they are the user's to see).
_UNEXPECTED = (AttributeError, LookupError, TypeError, ImportError)


class Hooks:
    """Functions of TensorFlow replaced by ones that call ``before`` first, until :meth:`remove`."""

    def __init__(self) -> None:
        self.saved: list[tuple[Any, str]] = []

    def __bool__(self) -> bool:
        return bool(self.saved)

    def wrap(self, owner: Any, name: str, before: Callable[[], None]) -> None:
        original = getattr(owner, name)

        def first_before(*args: Any, **kwargs: Any) -> Any:
            try:
                before()
            except _UNEXPECTED as err:
                _fell_through(name, err)
            return original(*args, **kwargs)

        self.saved.append((owner, name))
        replace(owner, name, first_before)

    def remove(self) -> None:
        while self.saved:
            owner, name = self.saved.pop()
            put_back(owner, name)


def _fell_through(where: str, err: BaseException) -> None:
    if once(f"hook fell through: {where}"):
        get_logger().warning(
            "autodist: its hook on TensorFlow's %s failed (%s: %s); TensorFlow's own behaviour is kept",
            where,
            type(err).__name__,
            err,
        )


def hook_triggers(hooks: Hooks, before: Callable[[], None], before_variable: Callable[[], None]) -> bool:
    """``before`` at the runtime's start and where the current strategy is asked for,
    ``before_variable`` at each variable's creation. Idempotent."""
    if hooks:
        return True
    if not available("tf.activation_hooks"):
        return False
    from tensorflow.python.distribute import distribute_lib
    from tensorflow.python.eager import context
    from tensorflow.python.ops import variables

    hooks.wrap(context.Context, "ensure_initialized", before)
    hooks.wrap(variables.VariableMetaclass, "__call__", before_variable)
    for name, module in list(sys.modules.items()):
        if name.startswith("tensorflow._api.") and name.endswith(".distribute"):
            for function in ("get_strategy", "has_strategy"):
                if getattr(module, function, None) is getattr(distribute_lib, function):
                    hooks.wrap(module, function, before)
    return True


def hook_graph_reset(around: Callable[[Callable[[], Any]], Any]) -> bool:
    """Run every ``tf.compat.v1.reset_default_graph()`` as ``around(reset)``: ``around`` calls
    ``reset`` itself, and may look at what the graph held before and restore it after. Wraps the
    public name in each of TensorFlow's API modules that has it (Keras looks it up at each call).
    Idempotent; ``False`` where the touch is off."""
    if not available("tf.activation_hooks"):
        return False
    from tensorflow.python.framework import ops

    original = ops.reset_default_graph
    wrapped = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith("tensorflow._api.") or getattr(module, "reset_default_graph", None) is None:
            continue
        current = module.reset_default_graph
        if getattr(current, "autodist_wrapped", False):
            wrapped += 1
        elif current is original:

            def reset_default_graph() -> Any:
                done: list[Any] = []

                def reset() -> Any:
                    done.append(original())
                    return done[0]

                try:
                    return around(reset)
                except _UNEXPECTED as err:
                    _fell_through("reset_default_graph", err)
                    return done[0] if done else original()

            reset_default_graph.autodist_wrapped = True  # type: ignore[attr-defined]
            replace(module, "reset_default_graph", reset_default_graph)
            wrapped += 1
    return wrapped > 0


def hook_variable_creation(hooks: Hooks, before: Callable[[], None]) -> bool:
    """``before`` at each variable's creation. Idempotent."""
    if hooks:
        return True
    if not available("tf.activation_hooks"):
        return False
    from tensorflow.python.ops import variables

    hooks.wrap(variables.VariableMetaclass, "__call__", before)
    return True


def translate_creation_errors(strategy: Any, translate: Callable[[BaseException], BaseException | None]) -> bool:
    """Each error raised while ``strategy`` creates a variable (in its scope, or while it is
    current) goes to ``translate``: the error it returns is raised instead, with TensorFlow's as
    its ``__cause__``; ``None`` lets TensorFlow's through. Wraps this one strategy object's
    ``extended._create_variable``, which TensorFlow looks up at each creation. Idempotent;
    ``False`` where the touch is off or the method is missing."""
    extended = getattr(strategy, "extended", None)
    original = getattr(extended, "_create_variable", None)
    if getattr(original, "autodist_wrapped", False):
        return True
    if original is None or not available("tf.activation_hooks"):
        return False

    def _create_variable(next_creator: Any, **kwargs: Any) -> Any:
        try:
            return original(next_creator, **kwargs)
        except Exception as err:
            try:
                translated = translate(err)
            except _UNEXPECTED as failed:
                _fell_through("_create_variable", failed)
                translated = None
            if translated is None:
                raise
            raise translated from err

    _create_variable.autodist_wrapped = True  # type: ignore[attr-defined]
    replace(extended, "_create_variable", _create_variable)
    return True


def origin_of_new_variable() -> str:
    """:func:`variable_origin` of the variable about to be created, called from a hook on
    ``tf.Variable`` (:func:`hook_variable_creation`): its caller is the first frame outside autodist."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    return variable_origin(frame)


def variable_origin(caller: Any) -> str:
    """Who creates a variable, read from the frames from ``caller`` (the frame that called
    ``tf.Variable``) outward:

    - ``"tf.distribute"``: a strategy's own (the ordering token its constructor makes);
    - ``"keras"``: Keras's code is running (a layer, model, optimizer, metric or ``keras.Variable``
      of Keras or of a library built on it), or a method of a Keras layer, optimizer or metric
      (the script's subclasses: a ``tf.Variable`` made in a model's ``__init__`` or ``build``);
    - ``"script"``: none of those: a ``tf.Variable`` the script makes itself, a ``tf.Module``'s.
    """
    frame = caller
    while frame is not None and _file(frame).find("/tensorflow/python/util/") >= 0:
        frame = frame.f_back  # TensorFlow's decorators around tf.Variable
    if frame is not None and "/tensorflow/python/distribute/" in _file(frame):
        return "tf.distribute"
    keras_types = _keras_object_types()
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if module.partition(".")[0] in _KERAS_PACKAGES:
            return "keras"
        if keras_types and frame.f_code.co_argcount and frame.f_code.co_varnames[0] == "self":
            if isinstance(frame.f_locals.get("self"), keras_types):
                return "keras"
        frame = frame.f_back
    return "script"


def _file(frame: Any) -> str:
    return frame.f_code.co_filename.replace("\\", "/")


def _variable_call_site(frame: Any) -> Any:
    """The frame that called ``tf.Variable``, seen from inside the creator chain it started: the
    caller of the nearest ``VariableMetaclass.__call__``; ``None`` when there is none."""
    while frame is not None:
        if frame.f_code.co_name == "__call__" and _file(frame).endswith("/tensorflow/python/ops/variables.py"):
            caller = frame.f_back  # past autodist's own wrapper of tf.Variable, where one is in place
            while caller is not None and caller.f_code.co_filename.startswith(_PACKAGE):
                caller = caller.f_back
            return caller
        frame = frame.f_back
    return None


def _write_watched(variable: Any, name: str, on_write: Callable[[Any], None]) -> None:
    """``variable.<name>`` (one object's method) calling ``on_write(variable)`` first."""
    write = getattr(variable, name)

    def watched(*args: Any, **kwargs: Any) -> Any:
        try:
            on_write(variable)
        except _UNEXPECTED as err:
            _fell_through(name, err)
        return write(*args, **kwargs)

    setattr(variable, name, watched)


#: The packages whose code makes Keras's objects: variables made while their code runs are Keras's.
_KERAS_PACKAGES = frozenset({"keras", "tf_keras", "keras_hub", "keras_nlp", "keras_cv", "tensorflow_hub"})


def _keras_object_types() -> tuple[type, ...]:
    """Keras's layer, optimizer and metric base classes, of each Keras imported."""
    found: list[type] = []
    for package in ("keras", "tf_keras"):
        module = sys.modules.get(package)
        if module is None:
            continue
        for path in ("layers.Layer", "optimizers.Optimizer", "optimizers.legacy.Optimizer", "metrics.Metric"):
            owner: Any = module
            for part in path.split("."):
                owner = getattr(owner, part, None)
            if isinstance(owner, type):
                found.append(owner)
    return tuple(found)


def keep_script_variables_plain(
    strategy: Any, plain: Callable[[str], bool], on_write: Callable[[Any], None] = lambda variable: None
) -> bool:
    """Each variable created while ``strategy`` is current for which ``plain(origin)`` (origin as
    :func:`variable_origin` reads it) is true is created by the next creator, as without the
    strategy: a plain ``tf.Variable``, whose ``assign``, ``assign_add`` and ``assign_sub`` call
    ``on_write(variable)`` first. Wraps this one strategy object's ``extended._create_variable``,
    which TensorFlow's creator for the strategy's scope calls at each creation. Idempotent; ``False``
    where the touch is off or the method is missing."""
    extended = getattr(strategy, "extended", None)
    original = getattr(extended, "_create_variable", None)
    if getattr(original, "autodist_plain", False):
        return True
    if original is None or not available("tf.script_variables"):
        return False

    def _create_variable(next_creator: Any, **kwargs: Any) -> Any:
        try:
            site = _variable_call_site(sys._getframe(1))
            own = site is not None and plain(variable_origin(site))
        except _UNEXPECTED as err:
            _fell_through("_create_variable", err)
            own = False
        if not own:
            return original(next_creator, **kwargs)
        kwargs.pop("distribute_strategy", None)
        variable = next_creator(**kwargs)
        for name in ("assign", "assign_add", "assign_sub"):
            _write_watched(variable, name, on_write)
        return variable

    _create_variable.autodist_plain = True  # type: ignore[attr-defined]
    replace(extended, "_create_variable", _create_variable)
    return True


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # autodist's own frames


def watch_strategy_construction(
    on_built: Callable[[Any], None],
    shared_for: Callable[[tuple[Any, ...], dict[str, Any]], Any],
    quiet: Callable[[], bool],
) -> bool:
    """Call ``on_built(strategy)`` once each ``tf.distribute`` strategy is constructed, and let
    ``shared_for(args, kwargs)`` answer ``MultiWorkerMirroredStrategy(...)`` with an existing
    object (``None``: a new one), except while ``quiet()`` (autodist is building its own) or while
    TensorFlow deep-copies a strategy. Idempotent; ``False`` where the touch is off.
    """
    if not available("tf.activation_hooks"):
        return False
    from tensorflow.python.distribute import collective_all_reduce_strategy, distribute_lib

    base = distribute_lib.StrategyBase
    if getattr(base, "_autodist_watched", False):
        return True
    collective = collective_all_reduce_strategy.CollectiveAllReduceStrategy
    base_init, base_copy, collective_init = base.__init__, base.__deepcopy__, collective.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        base_init(self, *args, **kwargs)
        if not quiet() and not STATE.per_thread("copying_strategy", False):
            try:
                on_built(self)
            except _UNEXPECTED as err:
                _fell_through("StrategyBase.__init__", err)

    def __deepcopy__(self: Any, memo: Any) -> Any:
        STATE.thread.copying_strategy = True
        try:
            return base_copy(self, memo)
        finally:
            STATE.thread.copying_strategy = False

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        shared = None
        if not quiet() and not STATE.per_thread("copying_strategy", False):
            try:
                shared = shared_for(args, kwargs)
            except _UNEXPECTED as err:
                _fell_through("CollectiveAllReduceStrategy.__new__", err)
        return shared if shared is not None else object.__new__(cls)

    def collective_once(self: Any, *args: Any, **kwargs: Any) -> None:
        if getattr(self, "_autodist_shared_init", False):
            return  # an existing strategy given to the script's constructor: built already
        collective_init(self, *args, **kwargs)

    replace(base, "__init__", __init__)
    replace(base, "__deepcopy__", __deepcopy__)
    replace(collective, "__new__", staticmethod(__new__))
    replace(collective, "__init__", collective_once)
    replace(base, "_autodist_watched", True)
    return True
