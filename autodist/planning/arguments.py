"""The public API's arguments, checked in one place: every keyword of ``autodist.fit``,
``autodist.plan`` (and the pure planner), ``autodist.init`` and ``@autodist.distributed``, with
its type, its range and what it means.

Each entry point calls its ``check_*`` first, before it detects, plans, imports TensorFlow or
touches a file. A bad value is an :class:`~autodist.errors.ArgumentError` (a ``TypeError`` and a
``ValueError`` too), in the words the environment parsers use: ``"autodist.fit: epochs must be
an integer of at least 0 (Received: epochs=2.5, a float). ..."``. What ``model.fit`` accepts
goes on with the same meaning: a single callback or a nested list of them (Keras flattens
them), a ``CallbackList``, numpy integers, any ``os.PathLike`` path. What autodist adds is
checked fully: memory fractions, optimizer slots, timeouts (at most a week), strategy names
(with the nearest valid one).

Deliberately stricter than ``model.fit``: ``batch_size=0`` and ``True`` (Keras reads them as 32
and 1) and a negative ``epochs`` (Keras trains nothing) are refused.

Example:
    >>> check_plan_arguments("autodist.plan", {"num_params": 1000, "strategy": "Mirrored"})
    {'num_params': 1000, 'strategy': 'mirrored'}
    >>> check_plan_arguments("autodist.plan", {"gpu_memory_fraction": "0.5"})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    autodist.errors.ArgumentError: autodist.plan: gpu_memory_fraction must be a number in (0, 1] (Received:
    gpu_memory_fraction='0.5', a str). It is the share of each GPU's memory the model may use: pass a float such as 0.9.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from autodist.detection.model_info import ModelInfo, is_compiled, is_model
from autodist.detection.snapshot import HardwareSnapshot
from autodist.errors import ArgumentError, BatchSizeError, ModelPlacementError
from autodist.fields import (
    MAX_WAIT_SECONDS,
    Kind,
    Parameter,
    a_type,
    boolean,
    check_arguments,
    either,
    environ_mapping,
    folder,
    integer,
    name_of,
    none_or,
    number,
    shown,
    unknown_names,
    wrong,
)
from autodist.process import LiveSequence
from autodist.planning.global_batch import MAX_BATCH_SIZE, validate_batch_size
from autodist.planning.plans import ScriptStrategy, StrategyKind
from autodist.planning.strategy_types import TYPES
from autodist.planning.tune_rules import TUNE

__all__ = [
    "FIT_PARAMETERS",
    "INIT_PARAMETERS",
    "MAX_BATCH_SIZE",
    "MAX_NUM_PARAMS",
    "MAX_OPTIMIZER_SLOTS",
    "PLAN_PARAMETERS",
    "STRATEGY_NAMES",
    "check_distributed_arguments",
    "check_fit_arguments",
    "check_init_arguments",
    "check_plan_arguments",
]


#: Every name ``strategy=`` takes: ``auto``, ``tune`` (``fit`` times the candidates) and each
#: strategy type's kind, read on each use (a type defined later, a test's own, too).
STRATEGY_NAMES: Sequence[str] = LiveSequence(lambda: ("auto", TUNE, *TYPES))
#: A quadrillion parameters: far above any model, low enough that byte counts stay exact.
MAX_NUM_PARAMS = 10**15
#: Optimizer slots per variable: Adam has 2, Adafactor 3; more is a typo.
MAX_OPTIMIZER_SLOTS = 64
#: Activations may be estimated as at most this many times the weights and gradients.
MAX_ACTIVATION_FRACTION = 100.0


def _refuse() -> Any:
    raise TypeError


def _model_info(value: Any) -> ModelInfo:
    """A :class:`ModelInfo` whose sizes are in range (what ``describe_model`` gives always is)."""
    if not isinstance(value, ModelInfo):
        _refuse()
    sizes = (
        ("num_params", value.num_params, 0, MAX_NUM_PARAMS),
        ("optimizer_slots", value.optimizer_slots, 0, MAX_OPTIMIZER_SLOTS),
        ("bytes_per_param", value.bytes_per_param, 1, 16),
        ("activation_elements", value.activation_elements, 0, MAX_NUM_PARAMS),
    )
    for name, size, low, high in sizes:
        if size is not None and (
            isinstance(size, bool) or not isinstance(size, numbers.Integral) or not low <= size <= high
        ):
            wrong(f"Its {name} is {shown(size)}, not an integer from {low} to {high}.")
    return value


_STRATEGY = Parameter(
    "strategy",
    name_of(STRATEGY_NAMES, enum=StrategyKind),
    "Pass strategy='auto' to let autodist choose, or name the strategy to force.",
)
_FIT_STRATEGY = Parameter(
    "strategy",
    Kind(
        f"None or {_STRATEGY.kind.expected}", lambda value: "auto" if value is None else _STRATEGY.kind.convert(value)
    ),
    _STRATEGY.meaning,
)
#: The most epochs, and steps of an epoch, a fit may ask for: Keras counts them in 64-bit
#: integers, and a larger count is a typo.
MAX_STEPS = 2**53
_BATCH = Parameter(
    "batch_size",
    Kind(
        f"None or an integer from 1 to {MAX_BATCH_SIZE}",
        lambda value: None if value is None else validate_batch_size(value),
    ),
    "It is the global batch: the samples in one training step across all replicas. Pass an int such as batch_size=64.",
    BatchSizeError,
)
_NUM_PARAMS = Parameter(
    "num_params",
    none_or(integer(1, MAX_NUM_PARAMS, integral_floats=True)),
    "It is the model's parameter count (model.count_params()): pass it, or the model itself.",
)
_GPU_FRACTION = Parameter(
    "gpu_memory_fraction",
    number(0.0, 1.0, low_open=True),
    "It is the share of each GPU's memory the model may use: pass a float such as 0.9.",
)
_PEER_TIMEOUT = Parameter(
    "peer_timeout_seconds",
    number(0.0, MAX_WAIT_SECONDS, low_open=True),
    "It bounds how long a worker waits for its peers: pass a number of seconds such as 300 (at most a week).",
)

#: The planner's keywords (``autodist.plan`` and :func:`autodist.planning.planner.plan`).
PLAN_PARAMETERS: dict[str, Parameter] = {
    row.name: row
    for row in (
        Parameter(
            "model",
            Kind("a Keras model", lambda value: value if is_model(value) else _refuse()),
            "Pass a built Keras model, or num_params= without a model.",
        ),
        Parameter(
            "model_info",
            Kind("a ModelInfo with sizes in range", _model_info),
            "Pass autodist.describe_model(model), or the model itself.",
        ),
        _NUM_PARAMS,
        _BATCH,
        _STRATEGY,
        _GPU_FRACTION,
        Parameter(
            "activation_fraction",
            number(0.0, MAX_ACTIVATION_FRACTION),
            "It is the activations' share of the weights and gradients when the layer sizes are unknown: pass for "
            "example 0.5.",
        ),
        Parameter(
            "optimizer_slots",
            none_or(integer(0, MAX_OPTIMIZER_SLOTS)),
            "It is how many values the optimizer keeps per weight (SGD 0, momentum 1, Adam 2): pass that count, or "
            "leave it out to read it from the model.",
        ),
        _PEER_TIMEOUT,
        Parameter("environ", environ_mapping(), "Pass os.environ, or a dict of the AUTODIST_* settings."),
        Parameter(
            "fit_facts",
            Kind("a FitFacts", lambda value: value if type(value).__name__ == "FitFacts" else _refuse()),
            "It is made by autodist.fit; leave it out.",
        ),
        Parameter(
            "refuse_when_nothing_fits",
            boolean(),
            "True raises when the model fits no GPU; False (dry runs) warns instead.",
        ),
        Parameter(
            "kept",
            Kind("a ScriptStrategy", lambda value: value if isinstance(value, ScriptStrategy) else _refuse()),
            "It is made by autodist.fit for a script's own strategy; leave it out.",
        ),
    )
}

#: ``autodist.init``'s keywords: the planner's that describe the model and the job.
INIT_PARAMETERS: dict[str, Parameter] = {
    name: PLAN_PARAMETERS[name]
    for name in (
        "strategy batch_size model num_params gpu_memory_fraction activation_fraction optimizer_slots "
        "peer_timeout_seconds"
    ).split()
}

#: ``autodist.fit``'s own keywords (``model``, ``x``, ``y`` and ``model.fit``'s are checked apart).
FIT_PARAMETERS: dict[str, Parameter] = {
    row.name: row
    for row in (
        _BATCH,
        Parameter(
            "epochs",
            integer(0, MAX_STEPS),
            "It is how many passes over the data to train, as for model.fit: pass for example epochs=10.",
        ),
        _FIT_STRATEGY,
        _NUM_PARAMS,
        Parameter("gpu_memory_fraction", none_or(_GPU_FRACTION.kind), _GPU_FRACTION.meaning),
        Parameter(
            "backup_dir",
            none_or(either(boolean(), folder())),
            "It is the folder of the epoch-end and preemption saves (a str or pathlib.Path), False to turn them off, "
            "or None for the default.",
        ),
        Parameter("peer_timeout_seconds", none_or(_PEER_TIMEOUT.kind), _PEER_TIMEOUT.meaning),
        Parameter("mixed_precision", boolean(), "True builds the model under Keras's mixed_bfloat16 policy (TPU)."),
        Parameter("ray_report", boolean(), "False leaves reporting to Ray Train to your own callbacks."),
        Parameter("ray_checkpoint", boolean(), "False reports the metrics to Ray Train without a checkpoint."),
    )
}


def check_plan_arguments(where: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The planner's keywords, checked and converted (``strategy`` in lower case, numpy numbers
    as Python ones); one given as ``None`` is left out, so its default applies. The ``snapshot``
    is checked apart, by :func:`check_snapshot`.

    Raises:
        ArgumentError: for an unknown keyword (with the nearest one) or a bad value.
    """
    return check_arguments(where, PLAN_PARAMETERS, {name: value for name, value in values.items() if value is not None})


def check_snapshot(where: str, snapshot: Any, *, optional: bool) -> Any:
    """``snapshot`` when it is a :class:`HardwareSnapshot` (or ``None`` when ``optional``)."""
    if optional and snapshot is None:
        return snapshot
    if isinstance(snapshot, HardwareSnapshot):
        return snapshot.check()  # one built in Python, field by field, as one read from a file
    raise ArgumentError(
        f"{where}: snapshot must be a HardwareSnapshot{' or None' if optional else ''} (Received: "
        f"snapshot={shown(snapshot)}, {a_type(snapshot)}). The planner reads no machine itself: pass "
        "autodist.detect(), HardwareSnapshot.from_dict(...), or call autodist.plan() with no snapshot to plan for this "
        "machine."
    )


def check_init_arguments(where: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """``autodist.init``'s keywords, checked and converted (``None``: the default, left out)."""
    return check_arguments(where, INIT_PARAMETERS, {name: value for name, value in values.items() if value is not None})


def check_distributed_arguments(fn: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """``@autodist.distributed``'s function (``None`` when used with options) and options (the
    same as ``init``'s), checked when it decorates, not when the function first runs."""
    if fn is not None and not callable(fn):
        raise ArgumentError(
            f"@autodist.distributed: fn must be a function (Received: fn={shown(fn)}, {a_type(fn)}). "
            "Use it bare (@autodist.distributed) or with keywords (@autodist.distributed(batch_size=64))."
        )
    return check_init_arguments("@autodist.distributed", values)


def check_fit_arguments(
    model: Any, values: Mapping[str, Any], fit_kwargs: Mapping[str, Any]
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """``autodist.fit``'s arguments: ``(builder or None, its keywords, model.fit's keywords)``.

    ``model`` is a compiled Keras model or a function of no arguments that builds one. Keywords
    for ``model.fit`` are checked against the model's own ``fit`` (a misspelling is refused with
    the nearest name, as ``model.fit`` would refuse it with a ``TypeError``); ``callbacks`` may be
    one callback, a list, a nested list or a ``CallbackList``, as ``model.fit`` takes them, and
    goes on as one flat list.

    Raises:
        ModelPlacementError: for a model that is not a compiled Keras model or a builder.
        ArgumentError: for any other bad argument.
    """
    builder = _builder_of(model)
    checked = check_arguments("autodist.fit", FIT_PARAMETERS, values)
    kwargs = dict(fit_kwargs)
    if builder is None:
        _known_to_fit(model, kwargs)
    if "callbacks" in kwargs:
        kwargs["callbacks"] = _flat_callbacks(kwargs["callbacks"])
    # validation_freq: tf_keras also takes a list; verbose: bools too
    for name in ("steps_per_epoch", "validation_steps", "initial_epoch"):
        if kwargs.get(name) is not None:
            kwargs[name] = _count(name, kwargs[name])
    if kwargs.get("validation_split"):
        kwargs["validation_split"] = check_arguments(
            "autodist.fit", {"validation_split": _VALIDATION_SPLIT}, {"validation_split": kwargs["validation_split"]}
        )["validation_split"]
    return builder, checked, kwargs


_VALIDATION_SPLIT = Parameter(
    "validation_split",
    number(0.0, 1.0, high_open=True),
    "It is the share of the arrays Keras holds out for validation, as for model.fit: pass for example "
    "validation_split=0.1.",
)


def _builder_of(model: Any) -> Any:
    """``None`` for a compiled model, the function for a model-building function; else the error."""
    if is_model(model):
        if not is_compiled(model):
            raise ModelPlacementError(
                "autodist.fit got a model that is not compiled. Expected a compiled model, as for "
                "model.fit. Call model.compile(optimizer=..., loss=...) first, or pass a function "
                "that builds and compiles it."
            )
        return None
    if not callable(model):
        raise ModelPlacementError(
            f"autodist.fit: model must be a compiled Keras model or a function of no arguments that builds and "
            f"compiles one (Received: model={shown(model)}, {a_type(model)}). Pass the model you "
            "would call .fit on."
        )
    try:
        required = [
            p.name
            for p in inspect.signature(model).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
    except (TypeError, ValueError):  # a builtin without a signature: called as it is
        required = []
    if required:
        raise ModelPlacementError(
            f"autodist.fit: a model-building function must take no arguments (Received: {shown(model)}, which "
            f"needs {', '.join(required)}). autodist calls it inside the strategy's scope with none: give the "
            "arguments defaults, or pass functools.partial(build, ...)."
        )
    return model


def _known_to_fit(model: Any, kwargs: Mapping[str, Any]) -> None:
    """Refuse a keyword the model's ``fit`` does not take (unless it takes ``**kwargs``)."""
    try:
        parameters = inspect.signature(model.fit).parameters
    except (TypeError, ValueError, AttributeError):
        return
    if any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
        return
    known = [name for name in parameters if name not in ("x", "y", "batch_size", "epochs")]
    unknown_names(f"autodist.fit (for {type(model).__name__}.fit)", known + list(FIT_PARAMETERS), kwargs)


def _flat_callbacks(callbacks: Any) -> list[Any]:
    """``callbacks`` as ``model.fit`` reads it: ``None``, one callback, a (nested) list or tuple
    of them, or a ``CallbackList``; each must be a Keras callback (it has ``set_model``)."""
    if callbacks is None:
        return []
    if type(callbacks).__name__ == "CallbackList" and isinstance(getattr(callbacks, "callbacks", None), list):
        callbacks = callbacks.callbacks
    flat: list[Any] = []
    pending, opened = [callbacks], set()
    while pending:
        item = pending.pop(0)
        if isinstance(item, (list, tuple)):
            if id(item) in opened:  # a list that holds itself: Keras recurses until it fails
                raise ArgumentError(
                    f"autodist.fit: callbacks must be a list of callbacks (Received: callbacks={shown(callbacks)}, a "
                    "list that holds itself). Pass a flat list."
                )
            opened.add(id(item))
            pending[:0] = list(item)
        else:
            flat.append(item)
    for item in flat:
        if not callable(getattr(item, "set_model", None)):
            raise ArgumentError(
                f"autodist.fit: callbacks must be Keras callbacks, one or a list of them (Received: an item "
                f"{shown(item)}, {a_type(item)}, in callbacks={shown(callbacks)}). Pass keras.callbacks.Callback "
                "instances, as for model.fit."
            )
    return flat


def _count(name: str, value: Any) -> Any:
    """``model.fit``'s counts (``steps_per_epoch``, ...): a numpy integer as a Python ``int``,
    and a bool, a float with a fraction or a negative number refused (Keras fails later on them)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value <= MAX_STEPS:
        integral = isinstance(value, float) and math.isfinite(value) and value.is_integer() and 0 <= value <= MAX_STEPS
        if not integral:
            raise ArgumentError(
                f"autodist.fit: {name} must be None or an integer from 0 to {MAX_STEPS} (Received: "
                f"{name}={shown(value)}, "
                f"{a_type(value)}). It goes to model.fit as it is: pass an int."
            )
    return int(value)
