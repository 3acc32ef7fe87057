"""What autodist leaves changed in TensorFlow and Keras, and what a plain ``model.fit`` in the same
process trains.

``python undo.py MODE``, with 2 logical CPUs, prints ``RESULT <json>``:

- ``plain``: never imports autodist. A CNN with BatchNormalization and Dropout, trained by plain
  ``model.fit`` on one device: its History and weights.
- ``after``: imports TensorFlow and Keras, reads every function, method and class they hold, then
  imports autodist (the environment decides whether it activates at import), trains a small model
  with ``autodist.fit`` on 2 replicas, and reads them again: what is replaced after ``fit``
  returns. Then the same CNN by plain ``model.fit`` on one device, ``autodist.process.reset()``,
  what is replaced after the reset, and the CNN again.

The comparison is made against what TensorFlow and Keras held before autodist was imported, not
against autodist's own record, so a replacement made without :func:`autodist.process.replace`
is counted too.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import types
import warnings
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

FRAMEWORKS = ("tensorflow", "keras", "tf_keras")


def _code(value: Any) -> Any:
    """The function, class or descriptor ``value`` is, or ``None`` for data (TensorFlow and
    Keras change their own data as they run: caches, counters)."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type, property, types.MethodType)):
        return value
    return None


def _owners() -> list[Any]:
    """Every module of the frameworks imported now, and every class they define."""
    owners: dict[int, Any] = {}
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in FRAMEWORKS:
            continue
        owners[id(module)] = module
        for value in list(vars(module).values()):
            if isinstance(value, type) and getattr(value, "__module__", "") == name:
                owners[id(value)] = value
    return list(owners.values())


def read() -> dict[tuple[int, str], tuple[Any, Any]]:
    """``(id(owner), name) -> (owner, function)`` for every function an owner holds itself, and
    ``(id(owner), "") -> (owner, None)`` for each owner."""
    held: dict[tuple[int, str], tuple[Any, Any]] = {}
    for owner in _owners():
        held[(id(owner), "")] = (owner, None)
        for name, value in list(vars(owner).items()):
            code = _code(value)
            if code is not None:
                held[(id(owner), name)] = (owner, code)
    return held


def _label(owner: Any, name: str) -> str:
    where = owner.__name__ if isinstance(owner, types.ModuleType) else f"{owner.__module__}.{owner.__name__}"
    return f"{where}.{name}"


def changed(before: dict[tuple[int, str], tuple[Any, Any]]) -> list[str]:
    """The attributes of ``before``'s owners that differ now: a function replaced or removed, or
    one added that autodist defined."""
    now = read()
    found = [
        _label(owner, key[1])
        for key, (owner, code) in before.items()
        if key[1] and now.get(key, (None, None))[1] is not code
    ]
    for key, (owner, code) in now.items():
        ours = str(getattr(code, "__module__", None)).startswith("autodist")
        if key not in before and (key[0], "") in before and ours:
            found.append(_label(owner, key[1]))
    return sorted(found)


def _digest(weights: list[np.ndarray]) -> str:
    digest = hashlib.sha256()
    for weight in weights:
        digest.update(np.ascontiguousarray(weight).tobytes())
    return digest.hexdigest()


def cnn() -> dict[str, Any]:
    """A small CNN with BatchNormalization and Dropout, trained by plain ``model.fit``."""
    keras.utils.set_random_seed(7)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(96, 8, 8, 1)).astype("float32")
    y = rng.integers(0, 3, size=(96,))
    model = keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(4, 3, activation="relu"),
        keras.layers.BatchNormalization(),
        keras.layers.Flatten(),
        keras.layers.Dropout(0.3),
        keras.layers.Dense(3, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    return {
        "history": {key: [float(v) for v in values] for key, values in history.history.items()},
        "weights": _digest(model.get_weights()),
        "replicas": tf.distribute.get_strategy().num_replicas_in_sync,
    }


def autodist_fit() -> int:
    import autodist

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 4)).astype("float32"), rng.normal(size=(64, 1)).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.BatchNormalization(), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    with warnings.catch_warnings():
        # said and expected: a copy trained (AUTODIST_ACTIVATE=0), BatchNormalization's shares
        warnings.simplefilter("ignore", autodist.AutodistWarning)
        history = autodist.fit(model, x, y, batch_size=16, epochs=1, verbose=0)
    return history.plan.num_replicas


def main(mode: str) -> dict[str, Any]:
    cpu = tf.config.list_physical_devices("CPU")[0]
    if mode == "plain":
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        return {"cnn": cnn()}
    before = read()
    import autodist  # noqa: F401  (the activation at import, where the environment turns it on)
    from autodist import process

    replicas = autodist_fit()
    result = {"replicas": replicas, "after_fit": changed(before), "recorded_after_fit": process.replaced()}
    result["cnn_after_fit"] = cnn() if not process.STATE.activation or not process.STATE.activation.strategy else None
    process.reset()
    result["after_reset"] = changed(before)
    result["cnn_after_reset"] = cnn() if result["cnn_after_fit"] is not None else None
    return result


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(sys.argv[1])), flush=True)
