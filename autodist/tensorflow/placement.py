"""Act: which model object trains, and under which strategy.

With ``import autodist`` first (see :mod:`autodist.tensorflow.current_strategy`), a model is created under the
strategy autodist made current, and ``fit`` trains the caller's own object: nothing here runs.
This module handles the other cases:

- a zero-argument function: autodist calls it inside the strategy's scope (:func:`build_in_scope`);
- a model built before autodist could act, or under another strategy than the one ``fit`` chose:
  the fallback. The model is built from the first batch if it is not built yet, saved to
  ``.keras`` and loaded inside the scope (optimizer state kept), and after training its state is
  copied back. It warns once per cause, naming the cause and the fix.

Example:
    >>> import keras
    >>> from autodist.tensorflow.placement import is_built
    >>> is_built(keras.Sequential([keras.layers.Dense(2)]))
    False
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from autodist.core.fit_template import Placed
from autodist.core.input_kinds import Input
from autodist.detection.model_info import is_compiled, is_model, keras_flavor_of, keras_module
from autodist.errors import AutodistError, ModelPlacementError
from autodist.resume.train_state import build_optimizer
from autodist.log import warn_all
from autodist.planning.plans import Plan
from autodist.tensorflow.activation_record import current
from autodist.tensorflow.strategies import is_autodists
from autodist.settings import ACTIVATE_ENV, STRATEGY_ENV
from autodist.upstream.keras_models import all_layers, relocate
from autodist.upstream.surface import available
from autodist.upstream.keras_models import model_strategy as strategy_of_model  # model_strategy here reads the flavor
from autodist.process import once

__all__ = [
    "build_from_first_batch",
    "build_in_scope",
    "copy_training_state",
    "is_built",
    "move_into_scope",
    "needs_move",
    "stuck",
    "unmovable",
    "place_model",
    "script_strategy",
    "warn_moved",
]


def is_built(model: Any) -> bool:
    """Whether the model's weights exist (a model with no input shape is built by its first batch)."""
    try:
        return bool(model.built) and len(model.weights) > 0
    except (ValueError, AttributeError):  # tf_keras: "Weights for model ... have not yet been created"
        return False


def model_strategy(model: Any) -> Any:
    """The strategy a model's variables were created under (``None``: no scope)."""
    return strategy_of_model(model, keras_flavor_of(model))


def script_strategy(model: Any) -> Any:
    """The strategy the script created itself and built ``model`` in (not autodist's, not
    TensorFlow's default); ``None`` otherwise."""
    strategy = model_strategy(model)
    if strategy is None or is_autodists(strategy) or type(strategy).__name__.startswith("_DefaultDistributionStrategy"):
        return None
    return strategy


def needs_move(model: Any, the_plan: Plan, distribution: Any) -> bool:
    """Whether the model's variables live under another strategy than ``distribution``."""
    strategy = model_strategy(model)
    return strategy is not distribution and (the_plan.type.distributes or strategy is not None)


def unmovable(model: Any) -> str | None:
    """Why ``model``, built under a MirroredStrategy, could not be moved to another
    (:func:`move_into_scope` saves it to ``.keras`` and loads it): its config cannot be written (a
    custom layer without ``get_config`` whose ``__init__`` takes other values) or loaded in Keras's
    safe mode (a ``Lambda`` layer). ``None`` where it can, or where it lives under no such strategy.
    Nothing is built: reading the config back would create a copy of the model here."""
    import tensorflow as tf

    strategy = model_strategy(model)
    if not isinstance(strategy, tf.distribute.MirroredStrategy) or int(strategy.num_replicas_in_sync) < 2:
        return None
    lambdas = [layer.name for layer in all_layers(model) if type(layer).__name__ == "Lambda"]
    if lambdas:  # load_model's safe mode refuses a Lambda's Python code
        return f"Keras's safe mode does not load its Lambda layer {lambdas[0]!r}"
    try:  # the config written, as the move's save writes it (reading it back would build a copy)
        keras_module(keras_flavor_of(model)).saving.serialize_keras_object(model)
    except Exception as err:
        first = str(err).strip().splitlines()
        return f"Keras cannot save it: {type(err).__name__}: {first[0] if first else ''}".strip()
    return None


def stuck(model: Any) -> str | None:
    """Why ``model`` cannot leave the strategy made current at import for one device: Keras cannot
    save it (:func:`unmovable`) and its variables cannot be moved in place either (the touch
    ``keras.variable_relocation`` is off, or it is a tf_keras model). ``None`` where it can move."""
    if available("keras.variable_relocation") and keras_flavor_of(model) == "keras3":
        return None
    return unmovable(model)


def _custom_objects(model: Any) -> dict[str, Any]:
    """Classes and functions of the live model, so ``load_model`` finds unregistered ones."""
    objects: dict[str, Any] = {type(model).__name__: type(model)}
    for layer in all_layers(model):
        objects.setdefault(type(layer).__name__, type(layer))
    loss = getattr(model, "loss", None)
    for item in loss.values() if isinstance(loss, Mapping) else (loss if isinstance(loss, (list, tuple)) else [loss]):
        if callable(item):
            name = getattr(item, "__name__", type(item).__name__)
            objects.setdefault(name, item if hasattr(item, "__name__") else type(item))
    return objects


def move_into_scope(model: Any, strategy: Any) -> Any:
    """A copy of ``model`` whose variables (and optimizer state) live in ``strategy``'s scope.

    It saves to a temporary ``.keras`` file and loads inside the scope: unlike ``clone_model``
    plus ``compile``, this keeps the optimizer's state (Adam's moments, ``iterations``).

    Raises:
        ModelPlacementError: when the model cannot be saved and loaded (custom objects that
            cannot be serialised); the message names the fix.
    """
    fix = (
        "Put `import autodist` first in the script (before TensorFlow and Keras) so the model "
        "is created under the strategy, or pass a zero-argument function that builds and "
        "compiles the model (autodist.fit(build_model, x, y, ...)). Or make custom layers "
        "serialisable (get_config and @keras.saving.register_keras_serializable())."
    )
    name = type(strategy).__name__
    where = f"built outside the {name} scope"
    if name == "_DefaultDistributionStrategy":  # one device: the plan moves the model there
        where = (
            "built under the strategy made current at import, and the plan trains it on one device "
            "(its reasons say why)"
        )
        fix = (
            "The model was made under the strategy autodist made current at import. Fix: set "
            "AUTODIST_STRATEGY=default before the script starts (the model is then made on one device, as "
            "model.fit trains it), or make custom layers serialisable (get_config and "
            "@keras.saving.register_keras_serializable())."
        )
    with tempfile.TemporaryDirectory(prefix="autodist-move-") as folder:
        path = os.path.join(folder, "model.keras")
        try:
            model.save(path)
        except Exception as err:
            raise ModelPlacementError(
                f"The model was {where}, and autodist could not save it to "
                f"move it there: {type(err).__name__}: {err}. Expected a model that Keras can "
                f"save to .keras. {fix}"
            ) from err
        try:
            with strategy.scope(), warnings.catch_warnings():
                # An optimizer that never ran has no slots yet; Keras warns that it skips them.
                warnings.filterwarnings("ignore", message="Skipping variable loading for optimizer")
                loader = keras_module(keras_flavor_of(model)).models.load_model
                return loader(path, custom_objects=_custom_objects(model))
        except Exception as err:
            raise ModelPlacementError(
                f"The model was {where}, and autodist could not rebuild "
                f"it there: {type(err).__name__}: {err}. Expected a model that "
                f"keras.models.load_model can rebuild from its config. {fix}"
            ) from err


def build_from_first_batch(model: Any, data: Input) -> None:
    """Build an unbuilt model from its first batch, as ``model.fit`` would (side effect).

    Raises:
        ModelPlacementError: when the input cannot be peeked (a Python generator).
    """
    if is_built(model):
        return
    inputs = data.first_inputs()
    if inputs is None:
        raise ModelPlacementError(
            f"The model is not built yet (no input shape) and was created outside the strategy's "
            f"scope, and its input is a {data.name}, which autodist cannot peek at to build "
            "it. Expected a built model or input that can be read twice. Give the model an input "
            "shape (keras.Input(...)), or put `import autodist` first in the script."
        )
    model(inputs)


def build_in_scope(builder: Callable[[], Any], strategy: Any) -> Any:
    """Call a model-building function inside the strategy's scope and check what it returns.

    Raises:
        ModelPlacementError: when it returns no model, or an uncompiled one.
    """
    with strategy.scope():
        model = builder()
    if not is_model(model):
        raise ModelPlacementError(
            f"The function passed to autodist.fit returned {type(model).__name__}, not a Keras "
            "model. Expected a zero-argument function that builds, compiles and returns the "
            "model, for example: def build(): m = keras.Sequential([...]); m.compile(...); "
            "return m."
        )
    if not is_compiled(model):
        raise ModelPlacementError(
            "The function passed to autodist.fit returned a model that is not compiled. Call "
            "model.compile(optimizer=..., loss=...) inside the function before returning it."
        )
    return model


def place_model(
    model: Any,
    builder: Callable[[], Any] | None,
    data: Input,
    the_plan: Plan,
    distribution: Any,
    *,
    move: Callable[[Any, Any], Any] | None = None,
) -> Placed:
    """The model object that trains: built by ``builder`` inside the scope, the caller's own, or,
    the fallback, a copy moved into the scope (built from the input's first batch if need be) by
    ``move`` (default :func:`move_into_scope`; callers may pass an instrumented one).

    Raises:
        ModelPlacementError: when the builder returns no compiled model, or an unbuilt model
            cannot be built from its input.
    """
    if builder is not None:
        return Placed(build_in_scope(builder, distribution), False)
    if not needs_move(model, the_plan, distribution):
        return Placed(model, False)
    own = script_strategy(model)
    build_from_first_batch(model, data)
    owner = type(own).__name__ if own is not None else None
    if _move_cause(the_plan, owner)[0].startswith("batch:") and relocate(model, distribution):
        # a batch smaller than the replicas of the strategy made current at import: the caller's
        # model moves onto one device in place, whatever Keras can save
        warn_moved(the_plan, own=owner, in_place=True)
        return Placed(model, False)
    copy = (move or move_into_scope)(model, distribution)
    warn_moved(the_plan, own=owner)
    return Placed(copy, True)


def _move_cause(the_plan: Plan, own: str | None = None) -> tuple[str, str]:
    """Why a model had to be moved, and the fix, from what activation did (``own``: the class
    of the script's strategy the model was built under)."""
    done = current()
    chosen = the_plan.strategy.value
    if own is not None:
        return f"forced:{own}:{chosen}", (
            f"the model was built in the scope of the script's own {own}, and this fit was given "
            f"strategy={chosen!r}, which moves it. Fix: leave strategy='auto' to train under the "
            f"script's {own}, or build the model outside its scope"
        )
    if done is None or (done.plan is None and done.error is None and not done.ops_before_import):
        return "off", (
            f"{ACTIVATE_ENV}=0 (or TensorFlow was never imported after autodist) left no strategy "
            "current when the model was built. Fix: unset it and put `import autodist` first"
        )
    if done.ops_before_import:
        return "before", (
            "TensorFlow ran before `import autodist`, so autodist could not make the strategy "
            "current before the model was built. Fix: move `import autodist` to the top of the "
            "script, above TensorFlow and Keras"
        )
    made = done.plan.strategy.value if done.plan is not None else "no strategy"
    if done.script_strategy is not None:
        # shared too: autodist's steps aside for the script's MultiWorkerMirroredStrategy()
        return "script", (
            f"the script created its own {done.script_strategy}, so autodist's {made} stepped "
            "aside (one strategy per process), and this model was built outside that "
            f"strategy's scope. Fix: build the model inside `with strategy.scope():` of the "
            "script's strategy (autodist.fit then trains it there), or remove the script's "
            "strategy so autodist's is current"
        )
    if made == chosen:
        return "aside", (
            f"{made} was current from import on, but the model was created while it was not "
            "(inside another strategy's scope, or with the strategy set aside). Fix: build the "
            "model at the script's top level, after `import autodist`"
        )
    batch, replicas = the_plan.requested_batch_size, done.plan.num_replicas if done.plan is not None else 1
    if the_plan.num_replicas == 1 and batch is not None and batch < replicas:
        return f"batch:{made}", (
            f"batch_size={batch} is smaller than the {replicas} replicas of the {made} strategy made "
            "current at import, so this fit trains on one device, as the program does (rounding the "
            f"batch up to {replicas} would train fewer, larger steps). Fix: pass a batch_size of at least "
            f"{replicas} to train on {replicas} replicas, or set {STRATEGY_ENV}=default before the script starts"
        )
    return f"other:{made}:{chosen}", (
        f"the strategy made current at import was {made}, and this fit chose {chosen} (a forced "
        f"strategy=, strategy='tune', or the model's real size). Fix: set {STRATEGY_ENV}={chosen} before the "
        "script starts, so the model is created there, or pass a function that builds it"
    )


def warn_moved(the_plan: Plan, own: str | None = None, in_place: bool = False) -> None:
    """Warn, once per cause in a process, that the model was moved: a copy saved and loaded into
    the scope (the fallback), or, for a batch smaller than the replicas, its variables moved in place."""
    key, cause = _move_cause(the_plan, own)
    if not once(f"model moved: {key}{':in place' if in_place else ''}"):
        return
    how = (
        "autodist moved its variables into that scope, in place: your `model` trains there and stays there after fit"
        if in_place
        else "autodist trained a copy (saved and loaded into the scope) and copied its state back after fit; "
        "callbacks that read your `model` variable during fit see the old state"
    )
    warn_all(
        [f"Your model was built outside the {the_plan.strategy.value} strategy's scope, so {how}. Cause: {cause}."]
    )


def _variables(optimizer: Any) -> list[Any]:
    found = optimizer.variables
    return list(found() if callable(found) else found)


def copy_training_state(source: Any, target: Any) -> None:
    """Copy weights and optimizer state from ``source`` into ``target`` (same architecture)."""
    target.set_weights(source.get_weights())
    src_opt, dst_opt = getattr(source, "optimizer", None), getattr(target, "optimizer", None)
    if src_opt is None or dst_opt is None:
        return
    src_vars, dst_vars = _variables(src_opt), _variables(dst_opt)
    if len(dst_vars) < len(src_vars):
        strategy = model_strategy(target)
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            build_optimizer(dst_opt, target.trainable_variables)
        dst_vars = _variables(dst_opt)
    if [tuple(v.shape) for v in src_vars] != [tuple(v.shape) for v in dst_vars]:
        raise AutodistError(
            "The trained weights were copied back into your model, but its optimizer's variables "
            f"do not match the trained copy's ({len(dst_vars)} against {len(src_vars)}). "
            "Expected the same optimizer on both. Use history.model, which holds the full state."
        )
    for dst, src in zip(dst_vars, src_vars):
        dst.assign(src.numpy())
