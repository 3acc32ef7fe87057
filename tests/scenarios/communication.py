"""The communication check on 2 loopback workers: the MLP of issue 13 (512-1024-1024-10, 1.6M
parameters, batch_size=256: autodist's global batch, 128 per worker) and a small CNN, one short
fit each. The chief prints
``RESULT <json>``: each model's AutodistWarnings about the projection, and the plan's reason."""

import json
import os
import warnings

import autodist
import keras
import numpy as np

rng = np.random.default_rng(0)
PER_WORKER = 128


def mlp():
    model = keras.Sequential([keras.Input((512,)), keras.layers.Dense(1024, activation="relu"),
                              keras.layers.Dense(1024, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, rng.random((4 * PER_WORKER, 512), dtype=np.float32)


def cnn():
    model = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(32, 3, activation="relu"), keras.layers.MaxPooling2D(),
                              keras.layers.Conv2D(32, 3, activation="relu"), keras.layers.MaxPooling2D(),
                              keras.layers.Flatten(), keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, rng.random((4 * PER_WORKER, 32, 32, 3), dtype=np.float32)


result = {}
for name, make in (("mlp", mlp), ("cnn", cnn)):
    model, x = make()
    y = rng.integers(0, 10, len(x)).astype("int32")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = autodist.fit(model, x, y, batch_size=2 * PER_WORKER, epochs=1, verbose=0, backup_dir=False)
    result[name] = {
        "warnings": [str(w.message) for w in caught if "projected to train at" in str(w.message)],
        "reason": [r for r in history.plan.reasons if r.startswith("communication check")],
    }
if json.loads(os.environ["TF_CONFIG"])["task"]["index"] == 0:
    print("RESULT " + json.dumps(result), flush=True)
