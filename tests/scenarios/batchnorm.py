"""BatchNormalization trained by autodist.fit under mirrored (AUTODIST_CPU_DEVICES=2, activation
on, the model built after ``import autodist`` as a user writes it): the replicas' moving
statistics after fit, and evaluate / predict / a saved-and-reloaded model against the same
weights evaluated on one device.

Run: AUTODIST_CPU_DEVICES=2 python tests/scenarios/batchnorm.py train OUTDIR, then (no autodist,
one device) python tests/scenarios/batchnorm.py one_device OUTDIR, which loads the saved model.
Each prints one ``RESULT <json>`` line; the assertions live in tests/test_batchnorm.py. Under
``python -m autodist launch --workers 2`` (multi_worker_mirrored) each worker saves
OUTDIR/bn-<task>.keras and writes its result, with its moving statistics, to OUTDIR/<task>.json;
``one_device OUTDIR worker-0`` loads worker 0's model.
"""

from __future__ import annotations

import json
import os
import sys

MODE, OUTDIR = sys.argv[1], sys.argv[2]
CONFIG = json.loads(os.environ.get("TF_CONFIG") or "{}")
TASK = f"{CONFIG['task']['type']}-{CONFIG['task']['index']}" if CONFIG else (sys.argv[3] if len(sys.argv) > 3 else "")
SAVED = os.path.join(OUTDIR, f"bn-{TASK}.keras" if TASK else "bn.keras")
if MODE == "train":
    import autodist

import keras
import numpy as np

rng = np.random.default_rng(0)
x = np.concatenate([rng.normal(0, 1, (64, 6)), rng.normal(3, 2, (64, 6))]).astype("float32")  # the halves differ
y = (x.sum(axis=1, keepdims=True) > 9).astype("float32")


def build():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([
        keras.Input((6,)), keras.layers.Dense(8), keras.layers.BatchNormalization(), keras.layers.Activation("relu"),
        keras.layers.Dense(1, activation="sigmoid"),
    ])  # fmt: skip
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
    return model


if MODE == "one_device":
    loaded = keras.models.load_model(SAVED)
    print("RESULT " + json.dumps({"evaluate": loaded.evaluate(x, y, batch_size=32, verbose=0), "predict": loaded.predict(x, batch_size=32, verbose=0).tolist()}), flush=True)
    sys.exit(0)

import warnings  # noqa: E402

model = build()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    history = autodist.fit(model, x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
strategy = model.distribute_strategy
statistics = [v for v in model.non_trainable_variables if "moving" in v.path]
gaps = []
for variable in statistics:
    local = [t.numpy() for t in strategy.experimental_local_results(variable._value)]
    gaps.append(max(float(np.max(np.abs(local[0] - other))) for other in local[1:]) if len(local) > 1 else None)  # this process's replicas (None: it has one)
model.save(SAVED)
result = {
    "plan": history.plan.strategy.value,
    "replicas": strategy.num_replicas_in_sync,
    "num_statistics": len(statistics),
    "warnings": [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)],
    "replica_gaps": gaps,
    "evaluate": model.evaluate(x, y, batch_size=32, verbose=0),
    "predict": model.predict(x, batch_size=32, verbose=0).tolist(),
    "statistics": [np.asarray(v.numpy()).tolist() for v in statistics],
}
if CONFIG:
    with open(os.path.join(OUTDIR, f"{TASK}.json"), "w") as handle:
        json.dump(result, handle)
print("RESULT " + json.dumps(result), flush=True)
