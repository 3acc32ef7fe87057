"""Act: the model's compile settings for one ``fit``, as the plan decided them, applied here once.

Two settings come from the plan (:func:`apply_compile_settings`): the compile overrides the
strategy needs (``jit_compile``, ``steps_per_execution``; the rules are in
:mod:`autodist.planning.keras_compat`), and autodist's ``steps_per_execution`` default on one device, for
this ``fit`` only. The third is ``fit``'s own ``mixed_precision=`` argument: the ``mixed_bfloat16``
policy while autodist builds a model from a function.

Example:
    >>> import keras
    >>> from autodist.planning.plans import Plan, StrategyKind
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> restore = apply_steps_per_execution(model, Plan(StrategyKind.DEFAULT, 1, steps_per_execution=8))
    >>> model.steps_per_execution, restore(), model.steps_per_execution
    (8, None, 1)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from autodist.detection.model_info import keras_module
from autodist.planning.plans import Plan
from autodist.upstream.keras_models import set_jit_compile

__all__ = [
    "apply_compile_overrides",
    "apply_compile_settings",
    "compiled_for",
    "apply_steps_per_execution",
    "mixed_precision_while_building",
]


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


def apply_compile_overrides(model: Any, overrides: Mapping[str, Any]) -> None:
    """Set the overridden compile settings on a compiled Keras 3 model (side effect)."""
    if not overrides:
        return
    if "jit_compile" in overrides:
        set_jit_compile(model, overrides["jit_compile"])
    if "steps_per_execution" in overrides:
        model.steps_per_execution = overrides["steps_per_execution"]
    model.train_function = model.test_function = model.predict_function = None


def apply_compile_settings(model: Any, the_plan: Plan) -> Callable[[], None]:
    """Apply the plan's compile settings to the model that trains: the overrides its strategy
    needs (kept, as the model can only run that way under it) and ``steps_per_execution`` (for
    this ``fit``). Returns the function that gives the model its own ``steps_per_execution`` back.
    """
    apply_compile_overrides(model, the_plan.compile_overrides)
    return apply_steps_per_execution(model, the_plan)


@contextlib.contextmanager
def compiled_for(model: Any, the_plan: Plan) -> Iterator[None]:
    """The plan's compile settings on the model for one ``fit`` inside
    (:func:`apply_compile_settings`), its own ``steps_per_execution`` back after, however it ends."""
    restore = apply_compile_settings(model, the_plan)
    try:
        yield
    finally:
        restore()


def apply_steps_per_execution(model: Any, the_plan: Plan) -> Callable[[], None]:
    """Set the plan's ``steps_per_execution`` on the model for this ``fit`` (the planner decided
    it, and when it must stay as compiled: :func:`autodist.planning.steps_per_execution.choose_steps_per_execution`).

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
