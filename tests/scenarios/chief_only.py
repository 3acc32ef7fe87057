"""Chief-only work after multi-worker training (issue 35), as a user writes it.

Usage: python -m autodist launch --workers 2 tests/scenarios/chief_only.py OUTDIR MODE

MODE:
- ``scope``: the script as written for ``MultiWorkerMirroredStrategy`` (its own strategy, the
  model built in ``with strategy.scope():``, trained on every worker, saved to a path of each
  task's own, then, on the chief only, the saved model loaded and evaluated outside any scope),
  adopted as ``tools/adopt.py`` adopts it: ``import autodist`` first, ``model.fit(`` became
  ``autodist.fit(model, ``.
- ``plain``: the same script without autodist (``model.fit``; ``import autodist`` left out). Its
  chief's ``evaluate`` is the reference.
- ``local``: no strategy of the script's own: autodist's is the only one, and the chief-only
  work is inside ``with autodist.local():``.
- ``alone``: as ``local``, but the chief loads the model with no local scope, under autodist's
  strategy: its variables' creation is a collective the other worker never joins. Then it calls
  ``autodist.fit`` alone, whose first collective finds them aborted.

``TF_USE_LEGACY_KERAS=1`` runs it with tf_keras. Each worker writes ``OUTDIR/<task>.json``: its
weights after training (lists), the chief's ``evaluate`` (``None`` on the other worker), and in
``alone`` the errors the chief got. The assertions live in tests/test_chief_only.py.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
OUTDIR, MODE = sys.argv[1], sys.argv[2]

if MODE != "plain":
    import autodist  # adopted: the one import a user adds

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras as keras  # noqa: E402
else:
    import keras  # noqa: E402

rng = np.random.default_rng(11)
X = rng.normal(size=(256, 12)).astype("float32")
Y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(256, 3)), axis=1).astype("int32")
#: The same starting weights under Keras 3 and tf_keras (their seeded initializers differ).
START = [rng.normal(scale=0.3, size=shape).astype("float32") for shape in ((12, 16), (16,), (16, 3), (3,))]
TASK = json.loads(os.environ["TF_CONFIG"])["task"]


def build_and_compile_model():
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)])
    model.set_weights(START)
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def dataset():
    return tf.data.Dataset.from_tensor_slices((X, Y)).batch(32)  # the global batch: 16 per worker


def write_path(is_chief: bool) -> str:
    """The chief saves to OUTDIR; the other worker to a folder of its own (the tutorial's rule)."""
    folder = OUTDIR if is_chief else os.path.join(OUTDIR, f"workertemp_{TASK['index']}")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, "model.keras")


def said(err):
    return {"type": type(err).__name__, "message": str(err), "cause": type(err.__cause__).__name__}


result = {"mode": MODE, "evaluate": None, "error": None, "fit_error": None}
if MODE in ("scope", "plain"):
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = build_and_compile_model()
    if MODE == "plain":
        model.fit(dataset(), epochs=3, verbose=0)
    else:
        autodist.fit(model, dataset(), epochs=3, verbose=0)
    is_chief = strategy.cluster_resolver.task_id == 0
    path = write_path(is_chief)
    model.save(path)
    if is_chief:
        loaded = keras.models.load_model(path)
        result["evaluate"] = loaded.evaluate(X, Y, batch_size=32, verbose=0)
else:
    model = build_and_compile_model()  # under autodist's strategy, current since the import
    autodist.fit(model, dataset(), epochs=3, verbose=0)
    is_chief = autodist.is_chief()
    path = write_path(is_chief)
    model.save(path)
    if is_chief and MODE == "local":
        with autodist.local():
            loaded = keras.models.load_model(path)
            result["evaluate"] = loaded.evaluate(X, Y, batch_size=32, verbose=0)
    elif is_chief:  # each error is read by the test: which class, what it says, and its cause
        try:
            keras.models.load_model(path)
        except Exception as err:
            result["error"] = said(err)
        try:  # the collectives are aborted now: fit's first one fails at once
            autodist.fit(model, dataset(), epochs=1, verbose=0)
        except Exception as err:
            result["fit_error"] = said(err)

result["weights"] = [w.tolist() for w in model.get_weights()]
with open(os.path.join(OUTDIR, f"{TASK['type']}-{TASK['index']}.json"), "w") as handle:
    json.dump(result, handle)
print(f"{TASK['type']} {TASK['index']} done ({MODE})")
