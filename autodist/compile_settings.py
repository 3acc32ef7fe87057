"""Act: the model's compile settings for one ``fit``: the plan's, applied, and given back after.

Three settings, each decided in the plan and applied here, once: the compile overrides the
strategy needs (``jit_compile``, ``steps_per_execution``: see :mod:`autodist.keras_compat`),
autodist's ``steps_per_execution`` default on one device (for this ``fit`` only), and the
``mixed_bfloat16`` policy while autodist builds a model from a function.

Example:
    >>> import keras
    >>> from autodist.plans import Plan, StrategyKind
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> restore = apply_steps_per_execution(model, Plan(StrategyKind.DEFAULT, 1, steps_per_execution=8))
    >>> model.steps_per_execution, restore(), model.steps_per_execution
    (8, None, 1)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from autodist.keras_compat import apply_compile_overrides
from autodist.placement import keras_module
from autodist.plans import Plan

__all__ = ["apply_steps_per_execution", "mixed_precision_while_building"]


@contextlib.contextmanager
def mixed_precision_while_building(enabled: bool, builder: Any, the_plan: Plan) -> Iterator[list[str]]:
    """Set ``mixed_bfloat16`` while autodist builds the model, then restore the user's policy.
    Yields the warnings (a model that was built already cannot take the policy)."""
    if not enabled:
        yield []
        return
    if builder is None:
        yield [
            "mixed_precision=True applies to models autodist builds from a function; your model "
            "was built already. Call keras.mixed_precision.set_global_policy('mixed_bfloat16') "
            "before building it."
        ]
        return
    precision = keras_module(the_plan.keras_flavor).mixed_precision
    previous = precision.global_policy()
    precision.set_global_policy("mixed_bfloat16")
    try:
        yield []
    finally:
        precision.set_global_policy(previous)


def apply_steps_per_execution(model: Any, the_plan: Plan) -> Callable[[], None]:
    """Set the plan's ``steps_per_execution`` on the model for this ``fit`` (the planner decided
    it, and when it must stay as compiled: :func:`autodist.choosers.choose_steps_per_execution`).

    Returns the function that gives the model back its own value and compiled functions, so the
    caller's later ``fit``, ``evaluate`` and ``predict`` behave, and cost, as before.
    """
    value = the_plan.steps_per_execution
    if not value:
        return lambda: None
    own = model.steps_per_execution
    compiled = (model.train_function, model.test_function, model.predict_function)
    apply_compile_overrides(model, {"steps_per_execution": value})

    def restore() -> None:
        model.steps_per_execution = own
        model.train_function, model.test_function, model.predict_function = compiled

    return restore
