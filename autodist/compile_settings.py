"""Act: the model's compile settings for one ``fit``: the plan's, applied, and given back after.

Three settings, each decided in the plan and applied here, once: the compile overrides the
strategy needs (``jit_compile``, ``steps_per_execution``: see :mod:`autodist.keras_compat`),
autodist's ``steps_per_execution`` default on one device, which this ``fit`` may have to keep at
1 (:func:`apply_steps_per_execution` says why in the plan it returns), and the ``mixed_bfloat16``
policy while autodist builds a model from a function.

Example:
    >>> import keras
    >>> from autodist.plans import Plan, StrategyKind
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> the_plan, restore = apply_steps_per_execution(model, Plan(StrategyKind.DEFAULT, 1, steps_per_execution=8), None, {})
    >>> model.steps_per_execution, restore(), model.steps_per_execution
    (8, None, 1)
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from autodist.callbacks import uses_batch_hooks
from autodist.inputs import length_unknown
from autodist.keras_compat import apply_compile_overrides
from autodist.model_info import keras_flavor_of
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


def _why_compiled_value_stays(model: Any, x: Any, fit_kwargs: Mapping[str, Any]) -> str | None:
    if keras_flavor_of(model) != "keras3" or getattr(model, "steps_per_execution", None) != 1:
        return "the model was not compiled with 1"
    if getattr(model, "run_eagerly", False):
        return "the model runs eagerly"
    if any(uses_batch_hooks(callback) for callback in (fit_kwargs.get("callbacks") or [])):
        return "a callback uses batch-level hooks"
    if fit_kwargs.get("steps_per_epoch") is not None or fit_kwargs.get("validation_steps") is not None:
        return "steps_per_epoch or validation_steps is given"
    if length_unknown(x):
        return "the input's length is unknown, and Keras 3 then counts optimizer steps differently"
    return None


def apply_steps_per_execution(model: Any, the_plan: Plan, x: Any, fit_kwargs: Mapping[str, Any]) -> tuple[Plan, Callable[[], None]]:
    """Set the plan's ``steps_per_execution`` on a Keras 3 model compiled with 1, for this ``fit``.

    Skipped (and the returned plan says why) when a callback uses batch-level hooks, which would
    fire once per call rather than per step; when ``steps_per_epoch`` or ``validation_steps`` is
    given, because Keras 3 runs whole calls (an epoch of 4 steps on an endless input ran 8); when
    the input's length is unknown (a generator, ``from_generator``), because Keras 3 with 1 counts
    one extra optimizer iteration per epoch there, which moves Adam's bias correction (measured:
    5 iterations for 4 batches, and weights 1e-4 apart after 2 epochs); and under ``run_eagerly``.
    Returns the plan as applied and the function that gives the model back its own value and
    compiled functions, so the caller's later ``fit``, ``evaluate`` and ``predict`` behave, and
    cost, as before.
    """
    value = the_plan.steps_per_execution
    if not value:
        return the_plan, lambda: None
    why = _why_compiled_value_stays(model, x, fit_kwargs)
    if why is not None:  # the planner's "steps_per_execution=8 ..." reason is replaced, not contradicted
        kept = tuple(reason for reason in the_plan.reasons if not reason.startswith("steps_per_execution="))
        reasons = kept + (f"steps_per_execution stays as compiled: {why}",)
        return dataclasses.replace(the_plan, steps_per_execution=None, reasons=reasons), lambda: None
    compiled = (model.train_function, model.test_function, model.predict_function)
    apply_compile_overrides(model, {"steps_per_execution": value})

    def restore() -> None:
        model.steps_per_execution = 1
        model.train_function, model.test_function, model.predict_function = compiled

    return the_plan, restore
