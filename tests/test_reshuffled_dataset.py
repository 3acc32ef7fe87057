"""A tf.data pipeline that reshuffles each epoch (``shuffle()``'s default), under ``autodist.fit``
on 2 replicas against plain ``model.fit`` on one device, each in its own process (issue 45).

Keras's symbolic build under a strategy started an iterator of the pipeline to read its first
batch: that spent one epoch of the shuffle's orders, so every epoch trained in the order one
device uses one epoch later (History 0.02 apart in the third decimal, no warning; keras.io's
FeatureSpace example in the corpus). autodist builds from the pipeline's element spec instead.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import finished, start_python, subprocess_env

pytestmark = pytest.mark.tensorflow

PROGRAM = """
import json, sys
if sys.argv[1] == "autodist":
    import autodist
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 8)).astype("float32")
y = (x @ rng.normal(size=(8, 1))).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(256).batch(32)
ds = ds.map(lambda a, b: (a * 1.0, b), num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
inputs = keras.Input((8,))
model = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.Dense(16, activation="relu")(inputs)))
model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
history = autodist.fit(model, ds, epochs=3, verbose=0) if sys.argv[1] == "autodist" else model.fit(ds, epochs=3, verbose=0)
print("RESULT " + json.dumps({"loss": history.history["loss"], "weights": [w.ravel().tolist() for w in model.get_weights()]}))
"""


def test_a_reshuffled_pipeline_trains_every_epoch_in_one_devices_order_on_2_replicas():
    started = {
        arm: start_python(["-c", PROGRAM, arm], env=subprocess_env(AUTODIST_CPU_DEVICES="2"))
        for arm in ("plain", "autodist")
    }
    found = {}
    for arm, proc in started.items():
        code, stdout, stderr = finished(proc, timeout=300)
        lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
        assert code == 0 and lines, (arm, stderr[-3000:])
        found[arm] = json.loads(lines[-1][len("RESULT ") :])
    plain, got = found["plain"], found["autodist"]
    assert got["loss"] == pytest.approx(plain["loss"], rel=1e-5, abs=1e-6), (plain["loss"], got["loss"])
    for one, two in zip(plain["weights"], got["weights"], strict=True):
        assert two == pytest.approx(one, abs=1e-5)
