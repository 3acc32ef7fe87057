"""Memory worker: train a few steps of three models and compare autodist's per-device estimate
(:mod:`autodist.planning.memory_model`) with TensorFlow's allocator. Prints ``RESULT <json>``.

Usage: python benchmarks/_memory.py BATCH [BATCH ...]

Measured: TensorFlow's CPU allocator statistics, ``tf.config.experimental.get_memory_info("CPU:0")``
(with ``TF_CPU_ALLOCATOR_USE_BFC=true``, set here: TensorFlow's default CPU allocator keeps no
statistics on some machines and reads zeros on others). For each model and batch, after the input dataset exists:
``reset_memory_stats``, then build, compile and ``fit`` 3 steps; the figure is the peak minus
what was allocated before the model existed, so it holds weights, gradients, optimizer state,
activations and the input batches in flight. One process, models one after another.
"""

from __future__ import annotations

import gc
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["AUTODIST_ACTIVATE"] = "0"  # the default strategy, on the plain CPU device
# The BFC allocator keeps statistics on every machine: without it, TF 2.21's CPU allocator has none on some
# processors ("Allocator stats not available for device 'CPU:0'", measured 2026-12-06) and zeros on others.
os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from autodist.planning.memory_model import estimate  # noqa: E402
from autodist.detection.model_info import describe_model  # noqa: E402

rng = np.random.default_rng(0)
MODELS = {
    # name: (layers, one sample's input)
    "MLP 784-1024-1024-10": (lambda: [keras.Input((784,)), keras.layers.Dense(1024, activation="relu"),
                                      keras.layers.Dense(1024, activation="relu"), keras.layers.Dense(10)],
                             lambda n: rng.random((n, 784), dtype=np.float32)),
    "CNN 64x64x3, 2 conv": (lambda: [keras.Input((64, 64, 3)), keras.layers.Conv2D(64, 3, activation="relu"),
                                     keras.layers.MaxPooling2D(), keras.layers.Conv2D(128, 3, activation="relu"),
                                     keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(10)],
                            lambda n: rng.random((n, 64, 64, 3), dtype=np.float32)),
    "embedding 200k x 64": (lambda: [keras.Input((50,), dtype="int32"), keras.layers.Embedding(200_000, 64),
                                     keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(10)],
                            lambda n: rng.integers(0, 200_000, (n, 50)).astype("int32")),
}  # fmt: skip


def measure(name: str, batch: int) -> dict:
    layers, inputs = MODELS[name]
    x, y = inputs(3 * batch), rng.integers(0, 10, 3 * batch).astype("int32")
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
    gc.collect()
    before = tf.config.experimental.get_memory_info("CPU:0")["current"]
    tf.config.experimental.reset_memory_stats("CPU:0")
    model = keras.Sequential(layers())
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(data, epochs=1, verbose=0)
    peak = tf.config.experimental.get_memory_info("CPU:0")["peak"]
    guess = estimate("default", describe_model(model), batch)
    del model, data
    gc.collect()
    return {"model": name, "batch": batch, "measured": peak - before, "estimated": guess.device_bytes, "parts": dict(guess.device)}


results = [measure(name, int(batch)) for batch in sys.argv[1:] for name in MODELS]
print("RESULT " + json.dumps({"results": results}))
