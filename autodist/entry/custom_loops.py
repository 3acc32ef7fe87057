"""Custom training code under the chosen strategy: ``@distributed``, ``init`` and loss averaging.

Example:
    >>> import autodist
    >>> @autodist.distributed(batch_size=64)
    ... def train(plan, strategy):
    ...     return plan.global_batch_size, strategy.num_replicas_in_sync
    >>> train()
    (64, 1)
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any, TypeVar

from autodist.entry.backends import backend_for
from autodist.errors import AutodistError
from autodist.log import log_plan, warn_all
from autodist.planning.arguments import check_distributed_arguments, check_init_arguments
from autodist.planning.global_batch import validate_batch_size
from autodist.planning.plans import Plan, StrategyKind
from autodist.process import STATE
from autodist.settings import verbose_setting

__all__ = ["compute_average_loss", "current_plan", "distributed", "init"]

F = TypeVar("F", bound=Callable[..., Any])


def init(
    *, strategy: str | StrategyKind = "auto", batch_size: int | None = None, **plan_kwargs: Any
) -> tuple[Plan, Any]:
    """Detect, plan and create the strategy now, before any other TensorFlow work. On JAX, the
    ``keras.distribution`` instead (``None`` for one device), set as the global distribution so
    models built afterwards are on its mesh; in a cluster, the processes are joined first.

    For custom training loops that want the strategy object (``strategy="auto"`` means
    ``AUTODIST_STRATEGY`` when that is set). It is the strategy ``import autodist`` made current,
    when the plans agree.

    Returns:
        ``(plan, strategy)``.

    Example:
        >>> import autodist
        >>> the_plan, strategy = autodist.init()
        >>> the_plan.strategy in list(autodist.StrategyKind)
        True
    """
    checked = check_init_arguments("autodist.init", {"strategy": strategy, "batch_size": batch_size, **plan_kwargs})
    return backend_for(os.environ).init(os.environ, **checked)


def current_plan() -> Plan | None:
    """The plan of the enclosing ``@distributed`` function, or ``None`` outside one."""
    # A process-wide stack, not a ContextVar: MirroredStrategy runs each replica's function in a
    # thread of its own, and context variables do not reach new threads.
    return STATE.custom_loops[-1][0] if STATE.custom_loops else None


def distributed(fn: F | None = None, **options: Any) -> Any:
    """Run a training function inside the chosen strategy's scope (on JAX: with the chosen
    ``keras.distribution`` set while it runs, ``None`` for one device).

    Use it bare (``@autodist.distributed``) or with options. The function may declare parameters
    named ``plan`` (the :class:`~autodist.planning.plans.Plan`) and ``strategy`` (the
    ``tf.distribute.Strategy``); autodist fills them. Models, optimizers and metrics created in the
    function are created in the scope.

    In a custom loop with Keras 3, call ``optimizer.build(model.trainable_variables)`` before the
    first step: an optimizer with slots (Adam, ...) that builds itself inside ``strategy.run``
    fails under MirroredStrategy with "You must feed a value for placeholder tensor".

    Args:
        fn: the function (when used bare).
        **options: ``init``'s keywords, checked as it decorates: ``strategy`` (``"auto"`` or a
            strategy to force), ``batch_size`` (the global batch; ``plan.global_batch_size``
            holds it, divisible by the replica count), ``num_params`` (the model size, to check
            GPU memory), ``gpu_memory_fraction``, ``optimizer_slots``, ...

    Example:
        >>> import autodist
        >>> @autodist.distributed
        ... def replicas(strategy):
        ...     return strategy.num_replicas_in_sync
        >>> replicas()
        1
    """

    options = check_distributed_arguments(fn, options)

    def decorate(function: F) -> F:
        check_distributed_arguments(function, {})
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):  # a builtin or a class without one: it is given neither plan nor strategy
            parameters = {}

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            backend = backend_for(os.environ)  # on JAX, the distribution is set while the function runs only
            the_plan, distribution = backend.init(os.environ, make_global=False, **options)
            log_plan(the_plan, verbose_setting(os.environ))
            warn_all(the_plan.warnings)
            if "plan" in parameters and "plan" not in kwargs:
                kwargs["plan"] = the_plan
            if "strategy" in parameters and "strategy" not in kwargs:
                kwargs["strategy"] = distribution
            scope = backend.scope(distribution)
            STATE.custom_loops.append((the_plan, distribution))
            try:
                with scope:
                    return function(*args, **kwargs)
            finally:
                STATE.custom_loops.pop()

        return wrapper  # type: ignore[return-value]

    return decorate(fn) if fn is not None else decorate


def compute_average_loss(
    per_example_loss: Any, *, global_batch_size: int | None = None, sample_weight: Any = None
) -> Any:
    """Average a per-example loss over the **global** batch, for custom training loops.

    The semantics of ``tf.nn.compute_average_loss``, everywhere (inside ``@distributed`` or
    not, on every strategy): the loss sum divided by ``global_batch_size`` when given, else by
    *this step's* global batch, the replica's batch times the replicas in sync, so the short
    last batch of an epoch is averaged right too. Dividing by the global batch, not the
    replica's, makes the all-reduced gradient the gradient of the global mean. Call it in
    replica context (inside ``strategy.run``), as TensorFlow requires.

    Args:
        per_example_loss: the loss of each example in this replica's batch.
        global_batch_size: divide by this instead of the step's global batch.
        sample_weight: optional weights per example.

    Raises:
        BatchSizeError: when ``global_batch_size`` is not a positive integer.
        AutodistError: without ``global_batch_size``, outside ``strategy.run`` while a strategy
            is current (TensorFlow cannot know the replica's batch there).

    Example:
        >>> import tensorflow as tf
        >>> float(compute_average_loss(tf.constant([1.0, 3.0]), global_batch_size=4))
        1.0
        >>> strategy = tf.distribute.get_strategy()
        >>> float(strategy.run(lambda: compute_average_loss(tf.constant([1.0, 3.0]))))  # default strategy: batch 2
        2.0
    """
    import tensorflow as tf

    if global_batch_size is not None:
        global_batch_size = validate_batch_size(global_batch_size, name="global_batch_size")
    elif tf.distribute.has_strategy() and tf.distribute.in_cross_replica_context():
        strategy = tf.distribute.get_strategy()
        raise AutodistError(
            f"compute_average_loss was called outside strategy.run, where the replica's batch is "
            f"unknown ({type(strategy).__name__} with {strategy.num_replicas_in_sync} replicas is "
            "current: autodist made it current at import). Expected a call inside the replica "
            "function passed to strategy.run. Call it there, or pass global_batch_size=."
        )
    return tf.nn.compute_average_loss(
        per_example_loss, sample_weight=sample_weight, global_batch_size=global_batch_size
    )
