"""A script's own strategy with autodist imported, in one process (2 logical CPUs): a tf_keras
model with a legacy ``OptimizerV2`` moved in and copied back, and a model built under a
strategy that names devices this machine lacks.

Run: TF_USE_LEGACY_KERAS=1 AUTODIST_ACTIVATE=0 AUTODIST_CPU_DEVICES=2 python tests/scenarios/own_strategy.py
Prints one ``RESULT <json>`` line; the assertions live in tests/test_own_strategy.py.
"""

from __future__ import annotations

import json

import autodist

import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).rand(64, 4).astype("float32")
y = x @ np.arange(1, 5, dtype="float32").reshape(4, 1)


def build():
    tf.keras.utils.set_random_seed(3)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.legacy.SGD(0.01, momentum=0.9), loss="mse")
    return model


def legacy_optimizer_copied_back() -> dict:
    """The fallback with a legacy OptimizerV2: the model was built with no strategy (activation
    off), autodist trains a copy under mirrored and copies weights and momentum back."""
    model = build()
    history = autodist.fit(model, x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    reference_strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])  # activation is off: nothing is current
    with reference_strategy.scope():
        reference = build()
    reference.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    slots = [v for v in model.optimizer.variables() if "momentum" in v.name]
    reference_slots = [v for v in reference.optimizer.variables() if "momentum" in v.name]
    return {
        "optimizer": type(model.optimizer).__module__ + "." + type(model.optimizer).__name__,
        "plan": history.plan.strategy.value,
        "iterations": int(model.optimizer.iterations.numpy()),
        "weights_gap": max(float(np.max(np.abs(a - b))) for a, b in zip(model.get_weights(), reference.get_weights())),
        "momentum_gap": max(float(np.max(np.abs(a.numpy() - b.numpy()))) for a, b in zip(slots, reference_slots)),
        "num_momentum_slots": len(slots),
    }


def missing_devices() -> dict:
    """A model built in the scope of a strategy that names GPUs this machine does not have."""
    strategy = tf.distribute.MirroredStrategy(devices=["/gpu:0", "/gpu:1"])
    with strategy.scope():
        model = build()
    try:
        autodist.fit(model, x, y, batch_size=16, epochs=1, verbose=0)
    except autodist.AutodistError as err:
        return {"error": type(err).__name__, "message": str(err)}
    return {"error": None}


print("RESULT " + json.dumps({"legacy": legacy_optimizer_copied_back(), "missing": missing_devices()}), flush=True)
