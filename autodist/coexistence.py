"""Act: what a script does with strategies keeps working with autodist imported.

One strategy per process. When the script constructs a ``tf.distribute`` strategy of its own
(the guide's and the tutorials' ``strategy = tf.distribute.MirroredStrategy()``), autodist's
gives way (:func:`on_script_strategy`): the script's strategies then work exactly as without
autodist, and ``autodist.fit`` trains a model built in the script's scope under that strategy.
``MultiWorkerMirroredStrategy()`` in a job autodist planned as multi-worker is autodist's own
object instead, since collectives can be configured only once per process.

Once :mod:`autodist.activation` has made its strategy current and it holds variables, two
things a script without autodist does would fail in TensorFlow:

- ``with another_strategy.scope():`` for a strategy the script builds itself ("Mixing different
  tf.distribute.Strategy objects"); the save-and-load tutorial loads a model under a
  ``OneDeviceStrategy`` it makes;
- ``tf.saved_model.load(path)`` outside any scope, "without a strategy", whose signatures are
  then called directly ("Trying to access a placeholder that is not supposed to be executed").

For those, autodist's strategy steps aside for the block and is current again after it. It
steps aside only when it is current through activation alone: not when the script re-entered
its scope, nor inside any other scope, where TensorFlow's own rules apply.

Example:
    >>> from autodist.coexistence import stepping_aside
    >>> stepping_aside() is None  # nothing was made current in this process
    True
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from collections.abc import Mapping
from typing import Any

from autodist import activation
from autodist.log import get_logger

__all__ = ["install", "on_script_strategy", "shared_multi_worker", "stepping_aside", "watch_script_strategies"]

_LOCAL = threading.local()
#: The strategy autodist made current (``install`` sets it); ``None`` before.
_OURS: list[Any] = [None]


def _reentered() -> int:
    return getattr(_LOCAL, "depth", 0)


@contextlib.contextmanager
def _counted(inner: Any) -> Iterator[Any]:
    """The script's own ``with scope()`` of autodist's strategy: counted, per thread."""
    _LOCAL.depth = _reentered() + 1
    try:
        with inner as entered:
            yield entered
    finally:
        _LOCAL.depth -= 1


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
    ours = _OURS[0]
    if ours is None or "tensorflow" not in sys.modules:
        return None
    import tensorflow as tf

    if getattr(getattr(_global_scope(), "_context", None), "strategy", None) is not ours:
        return None  # not current in this thread, or the script set another strategy itself
    if tf.distribute.get_strategy() is not ours or _reentered() or strategy is ours:
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
            graph._distribution_strategy_stack = [m for m in self.stack if getattr(m, "strategy", None) is not self.aside]
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


def _wrapped_scope(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def scope(self: Any) -> Any:
        inner = original(self)
        if _global_scope() is None:
            return inner  # nothing is current globally (or experimental_set_strategy sets it)
        if self is _OURS[0]:
            return _counted(inner)
        aside = stepping_aside(self)
        return inner if aside is None else _Aside(inner, aside)

    scope.autodist_wrapped = True  # type: ignore[attr-defined]
    return scope


def _wrapped_enter_or_assert(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``enter_or_assert_strategy``, which a distributed iterator's ``next`` and every distributed
    variable's update call for their own strategy: aside for another strategy's, like ``scope``
    (``model.fit`` on a model of the script's own strategy reads its data this way)."""

    @contextlib.contextmanager
    def enter_or_assert_strategy(strategy: Any) -> Iterator[None]:
        aside = stepping_aside(strategy)
        if aside is None:
            with original(strategy):
                yield
        else:
            with _Aside(contextlib.nullcontext(), aside), original(strategy):
                yield

    return enter_or_assert_strategy


def _wrapped_load(original: Callable[..., Any]) -> Callable[..., Any]:
    def load(*args: Any, **kwargs: Any) -> Any:
        aside = stepping_aside()
        if aside is None:
            return original(*args, **kwargs)
        with _Aside(contextlib.nullcontext(), aside):
            return original(*args, **kwargs)

    return load


def install(strategy: Any) -> None:
    """Let other scopes and plain SavedModel loads in while ``strategy`` is current. Idempotent."""
    from tensorflow.python.distribute import distribute_lib
    from tensorflow.python.saved_model import load as saved_model_load

    _OURS[0] = strategy
    if getattr(distribute_lib.StrategyBase.scope, "autodist_wrapped", False):
        return
    distribute_lib.StrategyBase.scope = _wrapped_scope(distribute_lib.StrategyBase.scope)
    distribute_lib.enter_or_assert_strategy = _wrapped_enter_or_assert(distribute_lib.enter_or_assert_strategy)
    original_load = saved_model_load.load
    load = _wrapped_load(original_load)
    for name, module in list(sys.modules.items()):
        if (name == saved_model_load.__name__ or name.startswith("tensorflow._api.")) and getattr(module, "load", None) is original_load:
            module.load = load


def on_script_strategy(strategy_class: type) -> None:
    """The script has constructed a ``tf.distribute`` strategy of its own (``MirroredStrategy()``,
    ...): one strategy per process. While autodist's is still pending, or current (and not
    entered with ``scope()``) but holding no variable yet, it steps aside for good, as if
    autodist had not been imported: the script's strategies work as they do without autodist
    (``model.fit``, ``evaluate`` and ``save`` outside the ``with`` block), and ``autodist.fit``
    trains a model built in the script's scope under that strategy. Later, it steps aside only
    inside the script's scopes (:func:`stepping_aside`)."""
    done = activation.current()
    if done is None or done.plan is None or done.shared or _reentered():
        return
    if activation.step_aside():
        activation.record(script_strategy=strategy_class.__name__)
        get_logger().info("autodist: the script created its own %s; autodist's %s steps aside", strategy_class.__name__, done.plan.strategy.value)


def shared_multi_worker(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """autodist's own MultiWorkerMirroredStrategy, for the script's ``MultiWorkerMirroredStrategy()``
    in a job autodist planned as multi-worker (collectives are configured once per process);
    ``None`` elsewhere. Created now if it was still pending.

    Raises:
        StrategyUnavailableError: the script's arguments name another cluster.
        Exception: the strategy's own error (``PeerError``: a peer never connected).
    """
    from autodist.planning import StrategyKind
    from autodist.strategies import check_same_cluster

    done = activation.current()
    if done is None or done.plan is None or done.plan.strategy != StrategyKind.MULTI_WORKER_MIRRORED:
        return None
    check_same_cluster(done.plan, args, kwargs)
    activation.complete()  # creates it (once; an error is recorded for fit) when pending
    done = activation.current()
    assert done is not None
    if done.strategy is None:
        if done.error is not None:
            raise done.error
        return None
    done.strategy._autodist_shared_init = True  # its constructor must not run a second time
    activation.record(script_strategy="MultiWorkerMirroredStrategy", shared=True)
    return done.strategy


_COPYING = threading.local()


def watch_script_strategies() -> None:
    """Make the strategies the script constructs known to autodist: a wrapped ``__init__`` on
    TensorFlow's strategy base class calls :func:`on_script_strategy` once a strategy is built,
    and ``MultiWorkerMirroredStrategy()`` gets autodist's own object
    (:func:`shared_multi_worker`, a ``__new__``; not while TensorFlow deep-copies a strategy).
    Autodist's own strategies and TensorFlow's default one are not the script's. Idempotent."""
    from tensorflow.python.distribute import collective_all_reduce_strategy, distribute_lib

    from autodist.strategies import building, kind_of_class

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
