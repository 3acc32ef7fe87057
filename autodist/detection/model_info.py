"""What autodist reads from a live Keras model: its size, optimizer and compile settings.

Detection, like :mod:`autodist.detection.hardware`: it reads attributes of the model it is given and
starts nothing. The planner takes the result, a frozen :class:`ModelInfo`.

Example:
    >>> ModelInfo(num_params=10, optimizer="adam").optimizer_slots
    2
"""

from __future__ import annotations

import importlib
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autodist import fields
from autodist.errors import ArgumentError
from autodist.upstream.keras_models import (
    all_layers,
    compiled_flag,
    flattens_layers,
    jit_compile_as_compiled,
    owns_seed_generators,
)

__all__ = [
    "DEFAULT_OPTIMIZER_SLOTS",
    "OPTIMIZER_SLOTS",
    "ModelInfo",
    "activation_elements",
    "describe_model",
    "is_compiled",
    "is_model",
    "keras_flavor_of",
    "keras_module",
    "multiply_adds",
]

#: Per-variable slots each optimizer keeps (Keras names, lower case). Unknown ones count 2.
OPTIMIZER_SLOTS = {
    "sgd": 0,
    "rmsprop": 1,
    "adagrad": 1,
    "adadelta": 2,
    "adam": 2,
    "adamw": 2,
    "adamax": 2,
    "nadam": 2,
    "ftrl": 2,
    "lion": 1,
    "lamb": 2,
    "adafactor": 1,
    "loss_scale_optimizer": 2,
}
DEFAULT_OPTIMIZER_SLOTS = 2


@dataclass(frozen=True)
class ModelInfo:
    """What the planner needs to know about a model. Read from attributes only."""

    num_params: int | None = None
    optimizer: str | None = None
    optimizer_slots: int = DEFAULT_OPTIMIZER_SLOTS
    bytes_per_param: int = 4
    keras_flavor: str | None = None
    keras_version: str | None = None
    jit_compile: Any = None
    steps_per_execution: Any = 1
    run_eagerly: bool = False
    activation_elements: int | None = None
    variables: tuple[tuple[str, tuple[int, ...]], ...] = ()  # trainable (path, shape), Keras 3
    batch_statistics_layers: tuple[str, ...] = ()  # BatchNormalization not synchronized: per-replica batch
    random_layers: tuple[str, ...] = ()  # layers that draw random numbers in training (Dropout, noise)
    own_draw_layers: tuple[str, ...] = ()  # the user's layers (or model) that draw in call or steps themselves
    own_train_step: bool = False  # the model's class overrides train_step
    own_steps: tuple[str, ...] = ()  # which of train_step, test_step, compute_loss the model's class defines
    own_steps_read_replicas: bool = False  # one of them reads num_replicas_in_sync (scales by the replicas itself)
    mixed_precision: str | None = None  # the model's dtype policy when it computes in float16/bfloat16
    function_initializers: tuple[str, ...] = ()  # unbuilt layers initialised by a plain function (tf.random.normal)


def keras_flavor_of(model: Any) -> str:
    """``"tf_keras"`` for a tf_keras model, else ``"keras3"``."""
    return "tf_keras" if any(cls.__module__.startswith("tf_keras") for cls in type(model).__mro__) else "keras3"


def describe_model(model: Any) -> ModelInfo:
    """Read the planner's facts from a Keras model (Keras 3 or tf_keras). Starts nothing.

    Example:
        >>> import keras
        >>> m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        >>> m.compile(optimizer="adam", loss="mse")
        >>> info = describe_model(m)
        >>> (info.num_params, info.optimizer, info.optimizer_slots)
        (10, 'adam', 2)
    """
    if not is_model(model):
        raise ArgumentError(
            f"autodist.describe_model: model must be a Keras model (Received: model={fields.shown(model)}, "
            f"{fields.a_type(model)}). "
            "Pass a Keras 3 or tf_keras model; without one, give the planner num_params= instead."
        )
    try:
        num_params: int | None = int(model.count_params())
    except Exception:  # not built yet
        num_params = None
    optimizer = getattr(model, "optimizer", None)
    name = getattr(optimizer, "name", None) if optimizer is not None else None
    slots, base = DEFAULT_OPTIMIZER_SLOTS, None
    if name:  # "adam", or "adam_2" for the second Adam of the process
        base = name.lower().split("/")[0].rstrip("0123456789_")
        slots = OPTIMIZER_SLOTS.get(base, DEFAULT_OPTIMIZER_SLOTS)
        if base == "sgd" and float(getattr(optimizer, "momentum", 0.0) or 0.0) > 0:
            slots = 1
    bytes_per_param = 4
    try:
        weights = list(getattr(model, "weights", None) or [])
    except ValueError:  # tf_keras, not built: "Weights for model ... have not yet been created"
        weights = []
    if weights:
        size = getattr(getattr(weights[0], "dtype", None), "size", None)
        if isinstance(size, int) and size > 0:
            bytes_per_param = size
        elif str(getattr(weights[0], "dtype", "")).endswith(("float16", "bfloat16")):
            bytes_per_param = 2
    flavor = keras_flavor_of(model)
    package = sys.modules.get("tf_keras" if flavor == "tf_keras" else "keras")
    steps = ("train_step", "test_step", "compute_loss")
    return ModelInfo(
        num_params=num_params,
        optimizer=base,
        optimizer_slots=slots,
        bytes_per_param=bytes_per_param,
        keras_flavor=flavor,
        keras_version=getattr(package, "__version__", None),
        jit_compile=jit_compile_as_compiled(model),
        steps_per_execution=getattr(model, "steps_per_execution", 1),
        run_eagerly=bool(getattr(model, "run_eagerly", False)),
        activation_elements=activation_elements(model),
        variables=_trainable_paths(model),
        own_train_step=overrides(model, "train_step"),
        own_steps=tuple(name for name in steps if overrides(model, name)),
        # a step that names num_replicas_in_sync scales its loss or metrics by the replicas itself
        own_steps_read_replicas=_own_source_says(model, steps, lambda source: "num_replicas_in_sync" in source),
        mixed_precision=_mixed_policy(model),
        function_initializers=_function_initializers(model),
        **_layer_kinds(model),
    )


#: The packages whose initializer objects draw from a seed of their own.
_KERAS_PACKAGES = ("keras", "tf_keras")


def _function_initializers(model: Any) -> tuple[str, ...]:
    """The layers not built yet whose initializer is a plain function, not a Keras initializer
    (the TensorFlow guide's ``Dense(kernel_initializer=tf.random.normal)``), as ``layer.attribute``.
    Unseeded, such a function draws from TensorFlow's op seeds, which depend on where the draw
    happens: one device builds the model inside its first step, a strategy before it.

    Example:
        >>> import keras, math
        >>> _function_initializers(keras.Sequential([keras.layers.Dense(2, kernel_initializer=math.sin, name="d")]))
        ('d.kernel_initializer',)
    """
    found = []
    for layer in all_layers(model):
        if getattr(layer, "built", True):
            continue
        for attribute, value in sorted(vars(layer).items()):
            if not attribute.endswith("initializer") or value is None or isinstance(value, (str, type)):
                continue
            kerass = any(cls.__module__.partition(".")[0] in _KERAS_PACKAGES for cls in type(value).__mro__[:-1])
            if callable(value) and not kerass:  # a Keras initializer, or a subclass of one, has a seed of its own
                found.append(f"{layer.name}.{attribute}")
    return tuple(found)


def overrides(model: Any, method: str) -> bool:
    """Whether a class of the caller's own, between the model's class and Keras's, defines
    ``method``.

    Example:
        >>> import keras
        >>> class Scored(keras.Model):
        ...     def test_step(self, data):
        ...         return {}
        >>> overrides(Scored(), "test_step"), overrides(Scored(), "train_step")
        (True, False)
    """
    for cls in type(model).__mro__:
        if cls.__module__.split(".")[0] in ("keras", "tf_keras", "tensorflow", "builtins"):
            return False
        if method in vars(cls):
            return True
    return False


def _own_source_says(obj: Any, methods: tuple[str, ...], says: Callable[[str], Any]) -> bool:
    """Whether the source of one of ``methods`` that a class of the caller's own defines (between
    ``obj``'s class and Keras's) ``says`` what is asked. ``False`` when the source cannot be read."""
    import inspect

    for cls in type(obj).__mro__:
        if cls.__module__.split(".")[0] in ("keras", "tf_keras", "tensorflow", "builtins"):
            return False
        for name in methods:
            if name in vars(cls):
                try:
                    if says(inspect.getsource(vars(cls)[name])):
                        return True
                except (OSError, TypeError):
                    continue
    return False


def _mixed_policy(model: Any) -> str | None:
    """The model's dtype policy's name when it computes in a 16-bit float (``mixed_float16``,
    ``mixed_bfloat16``); ``None`` for float32 or an unknown policy."""
    policy = getattr(model, "dtype_policy", None)
    name = getattr(policy, "name", None)
    compute = str(getattr(policy, "compute_dtype", "") or "")
    return name if isinstance(name, str) and compute in ("float16", "bfloat16") else None


#: Layers that draw random numbers while training (their masks or noise).
_RANDOM = (
    "Dropout",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "GaussianDropout",
    "GaussianNoise",
    "AlphaDropout",
)
#: Keras's augmentation layers without the ``Random`` prefix (``RandomFlip``, ``RandomRotation``
#: and the other ``Random*`` layers are recognised by it).
_AUGMENTATION = ("RandAugment", "AugMix", "MixUp", "CutMix", "Solarization")


#: The parameters that size a layer's draws: a layer whose every one of them is 0 draws nothing
#: (``Dropout(0.0)``, ``GaussianNoise(0.0)``, an LSTM, GRU or SimpleRNN cell with ``dropout`` and
#: ``recurrent_dropout`` both 0, which owns a SeedGenerator all the same).
_DRAW_SIZES = ("rate", "stddev", "dropout", "recurrent_dropout")


def _draws_nothing(layer: Any) -> bool:
    sizes = [getattr(layer, name, None) for name in _DRAW_SIZES]
    sizes = [size for size in sizes if isinstance(size, (int, float)) and not isinstance(size, bool)]
    return bool(sizes) and all(size == 0 for size in sizes)


def _draws_random_numbers(kind: str, layer: Any) -> bool:
    """A layer (or model) that draws random numbers in training, by its kind or by the
    ``SeedGenerator`` it owns (a VAE's sampling layer, a GAN's noise); not one whose draws are
    all sized 0 (:data:`_DRAW_SIZES`)."""
    known = (
        kind in _RANDOM or kind in _AUGMENTATION or (kind.startswith("Random") and len(kind) > 6 and kind[6].isupper())
    )
    return (known or owns_seed_generators(layer)) and not _draws_nothing(layer)


#: A draw named in a method's source: one of TensorFlow's stateful random ops (each replica's op
#: gets a seed of its own under a strategy) or a ``keras.random`` draw (a layer's own
#: SeedGenerator is read from the layer; without one, Keras's global one): independent draws on
#: each replica, not one device's.
_OWN_DRAW = re.compile(
    r"\btf\.(random\.(normal|uniform|truncated_normal|categorical|shuffle|gamma|poisson)|nn\.dropout)\s*\("
    r"|(?<![\w.])(keras\.)?random\."
    r"(normal|uniform|truncated_normal|categorical|randint|shuffle|dropout|gamma|binomial|beta)\s*\("
)


def _draws_in_own_code(layer: Any) -> bool:
    """Whether a class of the caller's own that ``layer`` (or a model) is, between its class and
    Keras's, draws random numbers in its ``call`` or its own steps, as read from their source:
    TensorFlow's stateful random ops (``tf.random.normal``: keras.io's VAE sampling layer, a GAN's
    ``train_step``) or ``keras.random`` (the Keras guide's VAE, without a seed). ``False`` when the
    source cannot be read."""
    return _own_source_says(layer, ("call", "train_step", "test_step"), _OWN_DRAW.search)


def _layer_kinds(model: Any) -> dict[str, tuple[str, ...]]:
    """The names of the layers whose training numbers depend on the per-replica batch
    (BatchNormalization without ``synchronized``, not frozen) or on randomness (Dropout of a
    rate above 0, noise, augmentation). Keras runs a frozen BatchNormalization (``trainable=False``,
    set on it or on a model that holds it) in inference mode: no batch statistics. A base model
    called with ``training=False`` inside a functional model is not left out: Keras 3 passes the
    enclosing call's ``training=True`` on to it (measured on 3.15.1: its moving mean moves in
    ``fit``). A frozen Dropout still drops."""
    try:
        layers = all_layers(model) if flattens_layers(model) else [layer for layer, _ in _leaf_layers(model)]
    except Exception:  # an unusual model: no layer facts
        return {}
    names = [(type(layer).__name__, getattr(layer, "name", "?"), layer) for layer in layers]
    random_layers = tuple(name for kind, name, layer in names if _draws_random_numbers(kind, layer))
    own = [model, *(layer for layer in layers if layer is not model)]  # the model's own steps too
    with_tensorflow = [(getattr(layer, "name", "?"), layer) for layer in own]
    return {
        "batch_statistics_layers": tuple(
            name
            for kind, name, layer in names
            if "BatchNormalization" in kind
            and not getattr(layer, "synchronized", False)
            and getattr(layer, "trainable", True)
        ),
        "random_layers": random_layers,
        "own_draw_layers": tuple(
            name for name, layer in with_tensorflow if name not in random_layers and _draws_in_own_code(layer)
        ),
    }


def _trainable_paths(model: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Each trainable variable's path and shape (Keras 3; tf_keras variables have no path)."""
    try:
        weights = list(getattr(model, "trainable_weights", None) or [])
    except ValueError:  # tf_keras, not built
        return ()
    return tuple((w.path, tuple(int(d) for d in w.shape)) for w in weights if isinstance(getattr(w, "path", None), str))


def activation_elements(model: Any) -> int | None:
    """Values per sample in the outputs of the model's layers (nested models' layers included),
    from their symbolic output shapes; ``None`` when a layer has no known output shape (a
    subclassed model, a variable-length dimension).

    Example:
        >>> import keras
        >>> m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(2)])
        >>> activation_elements(m)
        10
    """
    sizes = [elements for _, elements in _leaf_layers(model)]
    return None if None in sizes else (sum(sizes) or None)  # type: ignore[arg-type]


def multiply_adds(model: Any) -> int | None:
    """Multiply-adds of one sample's forward pass, estimated from each layer's weights and output
    size: a weight of shape ``(..., n)`` is applied at every output position (the layer's output
    values / n), so a Dense kernel counts once and a convolution kernel once per output pixel;
    lookups (``Embedding``) count nothing. ``None`` when that is not known: a model without
    layers, a layer with weights but no known output size (a subclassed model's), or a recurrent
    layer (its time steps are not in its output's size).

    Example:
        >>> import keras
        >>> m = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3), keras.layers.Flatten(),
        ...     keras.layers.Dense(2)])
        >>> multiply_adds(m) == 3 * 3 * 3 * 4 * 36 + 4 * 36 + 144 * 2 + 2
        True
    """
    total, seen = 0, False
    for layer, elements in _leaf_layers(model):
        seen = True
        weights = getattr(layer, "trainable_weights", [])
        if "Embedding" in type(layer).__name__ or not weights:
            continue
        if elements is None or hasattr(layer, "cell"):
            return None
        for weight in weights:
            shape = [int(d) for d in getattr(weight, "shape", ())]
            size = math.prod(shape)
            positions = elements // shape[-1] if shape and shape[-1] and elements % shape[-1] == 0 else 1
            total += size * max(1, positions)
    return total if seen else None


def _leaf_layers(model: Any) -> Any:
    """Each layer that is not a model (nested models walked into), with its output values per
    sample (``None`` when unknown)."""
    for layer in getattr(model, "layers", None) or []:
        if hasattr(layer, "layers") and getattr(layer, "layers", None):
            yield from _leaf_layers(layer)
        elif type(layer).__name__ != "InputLayer":
            yield layer, _output_elements(layer)


def _output_elements(layer: Any) -> int | None:
    try:
        outputs = layer.output
    except (AttributeError, ValueError):  # never called on symbolic inputs
        return None
    total = 0
    for output in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
        dims = list(getattr(output, "shape", None) or [])[1:]
        if any(d is None for d in dims):
            return None
        total += math.prod(int(d) for d in dims)
    return total


def is_model(obj: Any) -> bool:
    """Whether ``obj`` looks like a Keras model (Keras 3 or tf_keras)."""
    return hasattr(obj, "fit") and hasattr(obj, "compile") and hasattr(obj, "get_weights")


def is_compiled(model: Any) -> bool:
    """Whether the model was compiled with an optimizer."""
    return compiled_flag(model) and getattr(model, "optimizer", None) is not None


def keras_module(flavor: str) -> Any:
    """``tf_keras`` or ``keras``, as the flavor says."""
    return importlib.import_module("tf_keras" if flavor == "tf_keras" else "keras")
