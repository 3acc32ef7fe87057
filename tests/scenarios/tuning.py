"""strategy="tune" over 2 logical CPUs (AUTODIST_CPU_DEVICES=2): time every candidate (the share
is lifted so a short run times them all), train with the fastest, and check that the caller's
model trained exactly as under that plan forced; then a second run takes the cached decision, and
a short run with the share as shipped is not timed.
Prints ``RESULT <json>``."""

import json
import os

import autodist
import autodist.planning.tune_rules
import keras
import numpy as np
import tensorflow as tf

autodist.planning.tune_rules.TUNE_SHARE = 1e9  # time every candidate, whatever the planned training
rng = np.random.default_rng(0)
X = rng.random((1024, 32), dtype=np.float32)
Y = rng.integers(0, 10, 1024).astype("int32")


def build():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


tuned_model = build()
start = [w.copy() for w in tuned_model.get_weights()]
tuned = autodist.fit(tuned_model, X, Y, batch_size=64, epochs=2, verbose=0, shuffle=False, strategy="tune")
reason = tuned.plan.reasons[0]
names = [c.name for c in autodist.planning.tune_rules.candidates(autodist.detect(), default_steps=8)]
forced_model = build()
forced_model.set_weights(start)
forced = autodist.fit(
    forced_model, X, Y, batch_size=64, epochs=2, verbose=0, shuffle=False, strategy=tuned.plan.strategy.value
)
again = autodist.fit(build(), X, Y, batch_size=64, epochs=1, verbose=0, shuffle=False, strategy="tune")
# a tf.data input, at another batch (another cache key): timed from the dataset's first batches
dataset = autodist.fit(build(), tf.data.Dataset.from_tensor_slices((X, Y)).batch(32), epochs=1, verbose=0, strategy="tune")
autodist.planning.tune_rules.TUNE_SHARE = 0.1  # as shipped: 2 epochs of 8 steps are too short to time anything
short = autodist.fit(build(), X, Y, batch_size=128, epochs=2, verbose=0, strategy="tune")
cache = os.path.join(os.environ["TMPDIR"], f"autodist-{os.getuid()}", "tune")
files = os.listdir(cache)
print("RESULT " + json.dumps({
    "reason": reason,
    "candidates": names,
    "strategy": tuned.plan.strategy.value,
    "steps_per_execution": tuned.plan.steps_per_execution,
    "weight_difference": max(float(np.max(np.abs(a - b))) for a, b in zip(tuned_model.get_weights(), forced_model.get_weights(), strict=True)),
    "moved_from_start": max(float(np.max(np.abs(a - b))) for a, b in zip(tuned_model.get_weights(), start, strict=True)),
    "loss": [tuned.history["loss"], forced.history["loss"]],
    "second_reason": again.plan.reasons[0],
    "dataset_reason": dataset.plan.reasons[0],
    "cache_files": files,
    "short": {"strategy": short.plan.strategy.value, "reason": short.plan.reasons[0], "loss": short.history["loss"][-1]},
    "cache_mode": oct(os.stat(os.path.join(cache, files[0])).st_mode & 0o777),
}))
