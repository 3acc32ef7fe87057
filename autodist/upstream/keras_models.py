"""What autodist reads of a Keras model, its callbacks and its optimizer that Keras does not
publish (touches ``keras.model_internals``, ``keras.callback_internals`` and
``tf_keras.internals``). Each read has a default for a model that lacks the attribute. And one
move Keras has no public way for (touch ``keras.variable_relocation``): a model's variables
re-created, in place, under another strategy (:func:`relocate`).

Example:
    >>> class Bare:  # no Keras internals at all
    ...     layers = ["a"]
    >>> all_layers(Bare()), jit_compile_as_compiled(Bare()), model_strategy(Bare(), "keras3")
    (['a'], None, None)
"""

from __future__ import annotations

import os
from typing import Any

from autodist.upstream.surface import available
from autodist.process import STATE

__all__ = [
    "SupportsTensorLogs",
    "all_layers",
    "compiled_flag",
    "flattens_layers",
    "owns_seed_generators",
    "backup_paths_under",
    "jit_compile_as_compiled",
    "model_strategy",
    "optimizer_slots_ready",
    "profiles_batches",
    "relocate",
    "remote_value_finished",
    "set_jit_compile",
    "symbolic_build",
    "takes_tensor_logs",
]


def flattens_layers(model: Any) -> bool:
    """Whether the model lists its nested layers itself (Keras's ``_flatten_layers``)."""
    return callable(getattr(model, "_flatten_layers", None))


def compiled_flag(model: Any) -> bool:
    """Whether ``compile`` was called: Keras 3's public ``compiled``, tf_keras's ``_is_compiled``."""
    compiled = getattr(model, "compiled", None)
    return bool(getattr(model, "_is_compiled", None) if compiled is None else compiled)


def all_layers(model: Any) -> list[Any]:
    """Every layer of a model, nested ones included (``model.layers`` lists the top ones)."""
    flatten = getattr(model, "_flatten_layers", None)
    return list(flatten()) if callable(flatten) else list(getattr(model, "layers", []) or [])


def owns_seed_generators(layer: Any) -> bool:
    """Whether a Keras 3 layer (or model) owns a ``SeedGenerator``: it draws random numbers
    (``False`` where that cannot be read, and for tf_keras)."""
    return available("keras.seed_generators") and bool(getattr(layer, "_seed_generators", None))


def jit_compile_as_compiled(model: Any) -> Any:
    """``jit_compile`` as the model was compiled with (``"auto"``/``None`` unresolved; Keras's
    public property resolves it, which changes the model)."""
    return getattr(model, "_jit_compile", None)


def set_jit_compile(model: Any, value: bool) -> None:
    """Turn XLA on or off for a compiled model, through Keras's public setter where it has one."""
    if isinstance(getattr(type(model), "jit_compile", None), property) and type(model).jit_compile.fset is not None:
        model.jit_compile = value
    else:
        model._jit_compile = value


def model_strategy(model: Any, flavor: str) -> Any:
    """The strategy a model's variables were created under (``None``: no scope); ``flavor`` is
    ``"keras3"`` or ``"tf_keras"``."""
    return getattr(model, "_distribution_strategy" if flavor == "tf_keras" else "_distribute_strategy", None)


def relocate(model: Any, strategy: Any) -> bool:
    """Move a Keras 3 model's variables into ``strategy``'s scope, in place: each of its weights',
    its compiled metrics' and its optimizer's variables gets a new TensorFlow variable holding its
    value, created in that scope, and the model and its optimizer then belong to that strategy (as
    if made there). The caller's object trains: nothing is saved, copied or rebuilt, so a layer
    Keras cannot save (no ``get_config``) moves too. Its traced functions are dropped (they hold the
    old variables). ``False`` where the touch is off (or for tf_keras): nothing changed."""
    if not available("keras.variable_relocation") or not hasattr(model, "metrics_variables"):
        return False
    import tensorflow as tf

    optimizer = getattr(model, "optimizer", None)
    optimizer_variables = list(optimizer.variables) if optimizer is not None else []
    everything = {id(v): v for v in [*model.variables, *model.metrics_variables, *optimizer_variables]}
    with strategy.scope():
        for variable in everything.values():
            variable._initialize(variable.numpy())  # a tf.Variable made here, from the value read across replicas
        owner = tf.distribute.get_strategy() if tf.distribute.has_strategy() else None
    model._distribute_strategy = owner
    if optimizer is not None and hasattr(optimizer, "_distribution_strategy"):
        optimizer._distribution_strategy = strategy  # as an optimizer made in that scope holds it
    model.train_function = model.test_function = model.predict_function = None
    return True


def symbolic_build(model: Any, data_batch: Any) -> bool:
    """Build a Keras 3 model, its loss, metrics and optimizer from one batch ``(x, y,
    sample_weight)`` (or a batch Keras unpacks), as ``fit`` would. ``False`` where the touch is off."""
    if not available("keras.model_internals"):
        return False
    from keras.src.trainers.data_adapters import data_adapter_utils

    if not (isinstance(data_batch, tuple) and len(data_batch) == 3):
        data_batch = data_adapter_utils.unpack_x_y_sample_weight(data_batch)
    before = STATE.per_thread("building_for_fit", False)
    # built for fit: as its first training step builds it (symbolic_build_training)
    STATE.thread.building_for_fit = True
    try:
        model._symbolic_build(data_batch=data_batch)
    finally:
        STATE.thread.building_for_fit = before
    return True


#: A Keras 3 BackupAndRestore's file paths, by attribute, and their names under its folder
#: (the ``_prev_`` ones from Keras 3.7).
_BACKUP_PATHS = (
    ("_weights_path", "latest.weights.h5"),
    ("_training_metadata_path", "training_metadata.json"),
    ("_prev_weights_path", "latest.weights.h5.bkp"),
    ("_prev_training_metadata_path", "training_metadata.json.bkp"),
)


def backup_paths_under(callback: Any, root: str) -> None:
    """Point a Keras 3 ``BackupAndRestore``'s files (set when it is constructed) into ``root``;
    tf_keras derives its paths at train time, and has none of these."""
    for attribute, name in _BACKUP_PATHS:
        if hasattr(callback, attribute):
            setattr(callback, attribute, os.path.join(root, name))


def profiles_batches(tensorboard: Any) -> bool:
    """Whether a TensorBoard callback profiles a range of batches."""
    return getattr(tensorboard, "_start_batch", 0) > 0


class SupportsTensorLogs:
    """A callback that reads no logs: tf_keras then need not copy them to the host each step
    (and accepts it under parameter-server training)."""

    _supports_tf_logs = True


def takes_tensor_logs(callback: Any) -> bool:
    """Whether tf_keras may pass this callback tensor logs (it refuses the others under
    parameter-server training)."""
    return bool(getattr(callback, "_supports_tf_logs", False))


def optimizer_slots_ready(optimizer: Any, variables: list[Any]) -> None:
    """Create an optimizer's slots for ``variables`` now, if it has none yet: ``build`` for Keras 3
    and tf_keras optimizers, ``_create_all_weights`` for tf_keras's legacy ``OptimizerV2``."""
    if optimizer is None:
        return
    built = getattr(optimizer, "built", None)
    built = getattr(optimizer, "_built", False) if built is None else built
    create = getattr(optimizer, "build", None) or getattr(optimizer, "_create_all_weights", None)
    if not built and create is not None:
        create(variables)


def remote_value_finished(results: list[Any]) -> int | None:
    """How many of a ``ClusterCoordinator``'s scheduled results have finished (``None`` where the
    ``RemoteValue`` does not tell)."""
    statuses = [getattr(result, "_status", None) for result in results]
    if any(status is None for status in statuses):
        return None
    return sum(getattr(status, "name", "") in ("READY", "ABORTED") for status in statuses)
