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
    "name_distributed_reads_outside_replicas",
    "name_handle_reads",
    "name_tf_keras_losses_outside_replicas",
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
    - ``"script"``: none of those: a ``tf.Variable`` the script makes itself, a ``tf.Module``'s;
    - ``"another strategy's model"``: Keras's code, for a model made under a strategy that is not
      the current one (the script's own, made in its scope): a variable Keras makes for it lazily
      outside that scope (its metrics', as its ``save`` or ``fit`` builds them).
    """
    frame = caller
    while frame is not None and _file(frame).find("/tensorflow/python/util/") >= 0:
        frame = frame.f_back  # TensorFlow's decorators around tf.Variable
    if frame is not None and "/tensorflow/python/distribute/" in _file(frame):
        return "tf.distribute"
    keras_types = _keras_object_types()
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if module.partition(".")[0] in _KERAS_PACKAGES or (keras_types and isinstance(_self_of(frame), keras_types)):
            return "another strategy's model" if _for_another_strategys_model(frame) else "keras"
        frame = frame.f_back
    return "script"


def _for_another_strategys_model(frame: Any) -> bool:
    """Whether a method of a Keras model made under a strategy other than the current one runs in
    ``frame`` or outward (tf_keras's ``_distribution_strategy``, Keras 3's ``_distribute_strategy``)."""
    import tensorflow as tf

    current = tf.distribute.get_strategy()
    while frame is not None:
        owner = _self_of(frame)
        if owner is not None and callable(getattr(type(owner), "fit", None)):  # a model: its own dict only
            own = getattr(owner, "__dict__", {})
            made_under = own.get("_distribution_strategy") or own.get("_distribute_strategy")
            if made_under is not None and made_under is not current:
                return True
        frame = frame.f_back
    return False


def _self_of(frame: Any) -> Any:
    """The ``self`` of the method that runs in ``frame`` (``None``: no method)."""
    return frame.f_locals.get("self") if frame.f_code.co_argcount and frame.f_code.co_varnames[0] == "self" else None


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
    which TensorFlow's creator for the strategy's scope calls at each creation, and its
    ``extended._update``, through which TensorFlow's own code updates a variable (a
    ``tf.random.Generator``'s state): a plain one is updated as the default strategy does. Idempotent; ``False``
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
        variable._autodist_plain = True  # read by _update below
        return variable

    original_update = extended._update

    def _update(var: Any, fn: Any, args: Any, kwargs: Any, group: Any) -> Any:
        # TensorFlow's own code updates some variables through the current strategy
        # (tf.random.Generator's skip, in a tf.data map of the script's): a plain one, as the default
        # strategy updates it, where the strategy's own update takes distributed variables only
        if not getattr(var, "_autodist_plain", False):
            return original_update(var, fn, args, kwargs, group)
        from tensorflow.python.distribute import distribute_lib

        with distribute_lib.UpdateContext(var):
            return fn(var, *args, **kwargs)

    _create_variable.autodist_plain = True  # type: ignore[attr-defined]
    replace(extended, "_create_variable", _create_variable)
    replace(extended, "_update", _update)
    return True


def name_distributed_reads_outside_replicas(
    strategy: Any, error_for: Callable[[Any, BaseException], BaseException]
) -> bool:
    """Where a variable of ``strategy`` is read by its handle outside the replica context, raise
    ``error_for(variable, error)`` from TensorFlow's ``ValueError`` instead of that error alone
    (touch ``tf.distributed_variable_handle``, which wraps ``DistributedVariable.handle``). A
    tf_keras model's variables are TensorFlow's own, so a custom step written for one device under
    tf_keras (the TensorFlow guide's training loops: ``tape.gradient`` outside ``strategy.run``)
    reads one there. A Keras 3 variable's own touch (``keras.variable_handle``) names it again, by
    its Keras path. Other strategies' variables, and every other error, are TensorFlow's own.
    Idempotent; ``False`` where the touch is off."""
    if not available("tf.distributed_variable_handle"):
        return False
    from tensorflow.python.distribute import values

    return name_handle_reads(values.DistributedVariable, lambda variable: variable, strategy, error_for)


def name_handle_reads(
    variable_class: type,
    distributed: Callable[[Any], Any],
    strategy: Any,
    error_for: Callable[[Any, BaseException], BaseException],
) -> bool:
    """``variable_class.handle`` raising ``error_for(variable, error)`` from TensorFlow's
    ``ValueError`` where it refuses the handle outside the replica context and the distributed
    variable (``distributed(variable)``) is ``strategy``'s; every other read and error as they
    were. The one wrapper of both touches that name such reads. Idempotent."""
    original = vars(variable_class).get("handle")
    if getattr(getattr(original, "fget", None), "autodist_named", False):
        return True

    def handle(self: Any) -> Any:
        try:
            return original.fget(self)
        except ValueError as err:
            if (
                "outside the replica context" in str(err)
                and getattr(distributed(self), "_distribute_strategy", None) is strategy
            ):
                raise error_for(self, err) from err
            raise

    handle.autodist_named = True  # type: ignore[attr-defined]
    replace(variable_class, "handle", property(handle))
    return True


def name_tf_keras_losses_outside_replicas(
    strategy: Any, error_for: Callable[[Any, BaseException], BaseException]
) -> bool:
    """Where a tf_keras loss object averaged over the batch (reduction ``AUTO``, as made) is called
    in the cross-replica context of ``strategy``, outside ``Model.fit`` (a custom step written
    for one device: the TensorFlow guides' ``loss = loss_object(y, predictions)`` in a
    ``tf.function`` of their own), raise ``error_for(loss, error)`` from tf_keras's ``ValueError``
    instead of that error alone (touch ``tf_keras.loss_reduction``, which wraps
    ``Loss._get_reduction``). tf_keras's message asks for another reduction, which is half the fix:
    the step must run in each replica, too. A call inside ``strategy.run`` (a step written for
    replicas, with the wrong reduction) and other strategies keep tf_keras's error. Idempotent;
    ``False`` where the touch is off or tf_keras is not imported."""
    if "tf_keras" not in sys.modules or not available("tf_keras.loss_reduction"):
        return False
    import tensorflow as tf
    from tf_keras.src import losses

    original = vars(losses.Loss).get("_get_reduction")
    if getattr(original, "autodist_named", False):
        return True

    def _get_reduction(self: Any) -> Any:
        try:
            return original(self)
        except ValueError as err:
            if tf.distribute.in_cross_replica_context() and tf.distribute.get_strategy() is strategy:
                raise error_for(self, err) from err
            raise

    _get_reduction.autodist_named = True  # type: ignore[attr-defined]
    replace(losses.Loss, "_get_reduction", _get_reduction)
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
