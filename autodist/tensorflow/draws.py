"""Which layers of a model draw random numbers in training, read from a traced training call.

The layer list misses what a model runs without holding it: layers made in ``build()`` before the
model is built, and a ``Sequential`` defined outside the model (keras.io's Perceiver augments its
images with one defined at module level). And it cannot tell a layer that draws nothing (a
``Dropout`` left in inference because the model's ``call`` takes no ``training``) from one that
draws. :func:`traced_model_info` calls the model symbolically as its training step calls it, on
the shapes of the input's first batch, and reads the random ops each layer's call made
(:func:`autodist.upstream.keras_trainer.traced_draws`). A model not built yet is built by that
call where autodist builds it that way for ``fit`` anyway (the workaround
``symbolic_build_training``), under the strategy that trains it, after the plan's Keras
workarounds that act when a layer is built; elsewhere only a built model is traced.

Example:
    >>> from autodist.core.input_kinds import classify
    >>> classify(iter([])).first_batch_spec()  # a generator: nothing is read ahead
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from autodist.core.input_kinds import Input
from autodist.detection.model_info import ModelInfo, describe_model
from autodist.planning.plans import Plan
from autodist.tensorflow.keras_patches import apply_workarounds
from autodist.tensorflow.placement import is_built, model_strategy
from autodist.upstream.keras_trainer import SYMBOLIC_BUILD_TRAINING, traced_draws
from autodist.upstream.surface import available

__all__ = ["traced_model_info"]


def traced_model_info(model: Any, data: Input, the_plan: Plan, info: ModelInfo) -> ModelInfo | None:
    """The model's facts (``info`` read again after the call, which may have built it) with its
    random layers read from a traced training call (``random_layers``: Keras's own;
    ``own_draw_layers``: the caller's, plus the model's own steps where ``info`` found them
    drawing), for a plan that splits batches over replicas; ``None`` where nothing was traced (one
    replica, tf_keras, an input that cannot be read twice, or a call that failed). A model not built
    yet is built by the call only where autodist builds it so for ``fit`` anyway (the plan has the
    workaround ``symbolic_build_training``) and under the strategy that trains it; elsewhere only a
    built model is traced."""
    if the_plan.num_replicas < 2 or the_plan.keras_flavor != "keras3" or the_plan.type.asynchronous:
        return None
    if not available("keras.symbolic_build"):  # Keras 3.3 and 3.4 (no symbolic build), or off: the list decides
        return None
    strategy = model_strategy(model)
    if not is_built(model) and not _builds_here(strategy, the_plan):
        return None
    batch = data.first_batch_spec()
    if batch is None:
        return None
    if not is_built(model):  # the plan's creation-time workarounds (BatchNormalization's statistics) first
        apply_workarounds(the_plan.keras_workarounds)
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        found = traced_draws(model, (batch,))
    if found is None:
        return None
    keras_layers, own_layers = found
    steps = tuple(name for name in info.own_draw_layers if name == getattr(model, "name", None))
    return dataclasses.replace(
        describe_model(model), random_layers=keras_layers, own_draw_layers=tuple(dict.fromkeys(own_layers + steps))
    )


def _builds_here(strategy: Any, the_plan: Plan) -> bool:
    """Whether a model not built yet may be built now, as ``fit`` will build it: the plan builds so
    (``symbolic_build_training``, whose touch is on), and the model's strategy is the one it trains
    under (the current one, with the plan's replicas), not one it will be moved from."""
    import tensorflow as tf

    return (
        SYMBOLIC_BUILD_TRAINING.in_plan(the_plan)
        and strategy is not None
        and strategy is tf.distribute.get_strategy()
        and int(strategy.num_replicas_in_sync) == the_plan.num_replicas
    )
