"""Other strategies' scopes and plain SavedModel loads while autodist's strategy is current
(touches ``tf.strategy_scopes`` and ``tf.saved_model_load``).

One strategy per process. When the script constructs a strategy of its own, autodist's gives way
(:func:`autodist.tensorflow.current_strategy.on_script_strategy`). Once :mod:`autodist.tensorflow.current_strategy` has
made its strategy current and it holds variables, two
things a script without autodist does would fail in TensorFlow:

- ``with another_strategy.scope():`` for a strategy the script builds itself ("Mixing different
  tf.distribute.Strategy objects"); the save-and-load tutorial loads a model under a
  ``OneDeviceStrategy`` it makes;
- ``tf.saved_model.load(path)`` outside any scope, "without a strategy", whose signatures are
  then called directly ("Trying to access a placeholder that is not supposed to be executed").

For those, autodist's strategy steps aside for the block and is current again after it. It
steps aside only when it is current through activation alone: not when the script re-entered
its scope, nor inside any other scope, where TensorFlow's own rules apply. :func:`aside` is the
same step for a block the script names itself (``autodist.local()``: work on the chief only).

The wrappers go in when autodist makes its strategy current (:func:`install`), and only where
the probes find what they read; on anything they did not expect, they fall through to
TensorFlow's own ``scope``, ``enter_or_assert_strategy`` and ``load``.

Example:
    >>> from autodist.upstream.tf_scopes import stepping_aside
    >>> stepping_aside() is None  # nothing was made current in this process
    True
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from autodist.upstream.surface import available
from autodist.process import STATE, replace

__all__ = ["aside", "install", "reentered", "stepping_aside"]

#: What a wrapper falls through on: its own reads of TensorFlow's private state failing.
_UNEXPECTED = (AttributeError, LookupError, TypeError)


def reentered() -> int:
    return STATE.per_thread("scope_depth")


@contextlib.contextmanager
def _counted(inner: Any) -> Iterator[Any]:
    """The script's own ``with scope()`` of autodist's strategy: counted, per thread."""
    STATE.thread.scope_depth = reentered() + 1
    try:
        with inner as entered:
            yield entered
    finally:
        STATE.thread.scope_depth -= 1


def _global_scope() -> Any:
    """The scope ``experimental_set_strategy`` entered, seen from the graph being built (in a
    ``tf.function`` being traced: from the graph the trace began in)."""
    from tensorflow.python.framework import ops

    graph = ops.get_default_graph()
    while getattr(graph, "outer_graph", None) is not None:
        graph = graph.outer_graph
    return graph._global_distribute_strategy_scope


def stepping_aside(strategy: Any = None) -> Any:
    """autodist's current strategy, if it should step aside for ``strategy``'s scope (or, with
    ``None``, for a load "without a strategy"); ``None`` otherwise."""
    ours = STATE.ours  # the strategy autodist made current (``install`` sets it)
    if ours is None or "tensorflow" not in sys.modules:
        return None
    import tensorflow as tf

    if getattr(getattr(_global_scope(), "_context", None), "strategy", None) is not ours:
        return None  # not current in this thread, or the script set another strategy itself
    if tf.distribute.get_strategy() is not ours or reentered() or strategy is ours:
        return None
    return ours


class _Aside:
    """Wraps a context manager: autodist's strategy is not current inside it, and is after. In a
    ``tf.function`` being traced (its graph holds a copy of the strategy stack from when the
    trace began), autodist's entries leave that copy for the block instead."""

    def __init__(self, inner: Any, aside: Any) -> None:
        self.inner, self.aside = inner, aside
        self.stack: list[Any] | None = None

    def _set(self, strategy: Any) -> None:
        import tensorflow as tf
        from tensorflow.python.framework import ops

        graph = ops.get_default_graph()
        if getattr(graph, "outer_graph", None) is None:
            tf.distribute.experimental_set_strategy(strategy)
        elif strategy is None:
            self.stack = graph._distribution_strategy_stack
            graph._distribution_strategy_stack = [
                m for m in self.stack if getattr(m, "strategy", None) is not self.aside
            ]
        elif self.stack is not None:
            graph._distribution_strategy_stack = self.stack

    def __enter__(self) -> Any:
        self._set(None)
        try:
            return self.inner.__enter__()
        except BaseException:
            self._set(self.aside)
            raise

    def __exit__(self, *exc: Any) -> Any:
        try:
            return self.inner.__exit__(*exc)
        finally:
            self._set(self.aside)


def aside(strategy: Any = None) -> Any:
    """A context manager under which autodist's strategy is not current, where it is current
    through activation alone (:func:`stepping_aside`, for ``strategy``'s scope), and is again after
    it; a no-op one otherwise (nothing made current, inside a ``with scope()`` the script opened,
    or already aside)."""
    try:
        ours = stepping_aside(strategy)
    except _UNEXPECTED:
        ours = None  # TensorFlow's own behaviour: nothing set aside
    return contextlib.nullcontext() if ours is None else _Aside(contextlib.nullcontext(), ours)


def _wrapped_scope(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def scope(self: Any) -> Any:
        inner = original(self)
        try:
            if _global_scope() is None:
                return inner  # nothing is current globally (or experimental_set_strategy sets it)
            if self is STATE.ours:
                return _counted(inner)
            aside = stepping_aside(self)
        except _UNEXPECTED:
            return inner  # TensorFlow's own scope
        return inner if aside is None else _Aside(inner, aside)

    scope.autodist_wrapped = True  # type: ignore[attr-defined]
    return scope


def _wrapped_enter_or_assert(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``enter_or_assert_strategy``, which a distributed iterator's ``next`` and every distributed
    variable's update call for their own strategy: aside for another strategy's, like ``scope``
    (``model.fit`` on a model of the script's own strategy reads its data this way)."""

    @contextlib.contextmanager
    def enter_or_assert_strategy(strategy: Any) -> Iterator[None]:
        with aside(strategy), original(strategy):
            yield

    return enter_or_assert_strategy


def install(strategy: Any) -> None:
    """Let other scopes and plain SavedModel loads in while ``strategy`` is current (each where
    its touch is on). Idempotent."""
    STATE.ours = strategy
    if available("tf.strategy_scopes"):
        from tensorflow.python.distribute import distribute_lib

        if not getattr(distribute_lib.StrategyBase.scope, "autodist_wrapped", False):
            replace(distribute_lib.StrategyBase, "scope", _wrapped_scope(distribute_lib.StrategyBase.scope))
            replace(
                distribute_lib,
                "enter_or_assert_strategy",
                _wrapped_enter_or_assert(distribute_lib.enter_or_assert_strategy),
            )
    if available("tf.saved_model_load"):
        _wrap_loads()


def _wrap_loads() -> None:
    from tensorflow.python.saved_model import load as saved_model_load

    if getattr(saved_model_load.load, "autodist_wrapped", False):
        return
    original_load = saved_model_load.load

    def load(*args: Any, **kwargs: Any) -> Any:
        with aside():
            return original_load(*args, **kwargs)

    load.autodist_wrapped = True  # type: ignore[attr-defined]
    for name, module in list(sys.modules.items()):
        if (name == saved_model_load.__name__ or name.startswith("tensorflow._api.")) and getattr(
            module, "load", None
        ) is original_load:
            replace(module, "load", load)
