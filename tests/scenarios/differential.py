"""The differential harness: the same small program as plain ``model.fit`` and as ``autodist.fit``.

Usage: python differential.py [OUTDIR]   (the parent sets AUTODIST_CPU_DEVICES /
AUTODIST_STRATEGY, or TF_CONFIG through ``python -m autodist launch``, so autodist makes the
strategy under test current at import, as for a user). In a cluster every worker writes
OUTDIR/<task>.json instead of printing.

For every input kind, the reference arm runs plain single-device ``model.fit`` (no strategy
current) and the autodist arm runs ``autodist.fit`` under the process's strategy, both from the
same seed with plain SGD and ``shuffle=False``. Each arm reports:

- the samples seen in each epoch, counted by the model itself: column 0 of the first input is the
  sample's id, and the first layer adds ``bincount(ids)`` to a SUM-aggregated counter while it
  trains (so every replica's and worker's samples count);
- the History, the final weights, and how many times each callback hook fired.

Prints ``RESULT <json>``: for each kind, both arms' figures. Assertions live in
tests/test_differential.py.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import autodist  # noqa: E402  (first: the strategy under test becomes current)
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from reference import plain  # noqa: E402

NUM, FEATURES, CLASSES, EPOCHS, BATCH = 100, 6, 3, 2, 16  # 100 = 6 x 16 + 4: a short last batch
rng = np.random.default_rng(3)
FEATURES_A = rng.normal(size=(NUM, FEATURES)).astype("float32")
FEATURES_B = rng.normal(size=(NUM, 2)).astype("float32")
IDS = np.arange(NUM, dtype="float32")[:, None]
XA = np.concatenate([IDS, FEATURES_A], axis=1)  # column 0: the sample's id
Y = np.argmax(FEATURES_A[:, :CLASSES] + FEATURES_B[:, :1], axis=1).astype("int32")


class CountIds(keras.layers.Layer):
    """Counts the ids (column 0) of the samples it trains on; passes the features on."""

    def build(self, input_shape):
        self.seen = self.add_weight(shape=(NUM,), initializer="zeros", trainable=False, aggregation="sum", name="seen")

    def call(self, inputs, training=False):
        if training:
            ids = tf.cast(inputs[:, 0], "int32")
            self.seen.assign_add(tf.math.bincount(ids, minlength=NUM, maxlength=NUM, dtype="float32"))
        return inputs[:, 1:]


def build(two_inputs: bool):
    keras.utils.set_random_seed(1)
    a = keras.Input((FEATURES + 1,), name="a")
    hidden = keras.layers.Dense(8, activation="relu")(CountIds(name="count_ids")(a))
    inputs = [a]
    if two_inputs:
        b = keras.Input((2,), name="b")
        hidden = keras.layers.Concatenate()([hidden, keras.layers.Dense(4)(b)])
        inputs.append(b)
    model = keras.Model(inputs, keras.layers.Dense(CLASSES)(hidden))
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


class Observe(keras.callbacks.Callback):
    """Hook counts, and the ids the model trained on in each epoch (the counter is reset)."""

    def __init__(self):
        super().__init__()
        self.hooks: dict[str, int] = {}
        self.seen: list[list[int]] = []

    def _count(self, name):
        self.hooks[name] = self.hooks.get(name, 0) + 1

    def on_epoch_begin(self, epoch, logs=None):
        self._count("epoch_begin")
        self.model.get_layer("count_ids").seen.assign(np.zeros(NUM, "float32"))

    def on_epoch_end(self, epoch, logs=None):
        self._count("epoch_end")
        self.seen.append(np.asarray(self.model.get_layer("count_ids").seen.numpy()).round().astype(int).tolist())

    def on_train_batch_begin(self, batch, logs=None):
        self._count("train_batch_begin")

    def on_train_batch_end(self, batch, logs=None):
        self._count("train_batch_end")

    def on_test_batch_end(self, batch, logs=None):
        self._count("test_batch_end")


def kinds():
    """Each input kind: (name, two_inputs, x, y, fit keywords)."""
    import pandas as pd

    labelled = tf.data.Dataset.from_tensor_slices((XA, Y))
    return [
        ("pandas DataFrame + Series", False, pd.DataFrame(XA), pd.Series(Y), {"batch_size": BATCH}),
        ("numpy arrays", False, XA, Y, {"batch_size": BATCH}),
        ("list of arrays, 2 inputs", True, [XA, FEATURES_B], Y, {"batch_size": BATCH}),
        ("dict of named inputs", True, {"a": XA, "b": FEATURES_B}, Y, {"batch_size": BATCH}),
        ("batched tf.data", False, labelled.batch(BATCH), None, {}),
        ("tf.data map + prefetch", False, labelled.batch(BATCH).map(lambda x, y: (x, y)).prefetch(2), None, {}),
        ("validation_split", False, XA, Y, {"batch_size": BATCH, "validation_split": 0.2}),
        ("validation_data tuple", False, XA, Y, {"batch_size": BATCH, "validation_data": (XA[:20], Y[:20])}),
        ("sample_weight", False, XA, Y, {"batch_size": BATCH, "sample_weight": np.linspace(0.5, 1.5, NUM).astype("float32")}),
        ("class_weight", False, XA, Y, {"batch_size": BATCH, "class_weight": {0: 1.0, 1: 2.0, 2: 0.5}}),
    ]


def run(fit, two_inputs, x, y, kwargs) -> dict:
    model = build(two_inputs)
    observe = Observe()
    history = fit(model, x, y, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=[observe], **kwargs)
    return {
        "history": history.history,
        "weights": [w.tolist() for w in model.get_weights() if w.shape != (NUM,)],
        "hooks": observe.hooks,
        "seen": observe.seen,
    }


def main() -> None:
    results = {}
    for name, two_inputs, x, y, kwargs in kinds():
        with plain():
            reference = run(lambda m, *a, **k: m.fit(*a, **k), two_inputs, x, y, kwargs)
        try:
            got = run(autodist.fit, two_inputs, x, y, kwargs)
        except autodist.AutodistError as err:
            got = {"error": f"{type(err).__name__}: {err}"}
        results[name] = {"reference": reference, "autodist": got}
    results["strategy"] = type(tf.distribute.get_strategy()).__name__
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    if not config:
        print("RESULT " + json.dumps(results))
        return
    task = f"{config['task']['type']}-{config['task']['index']}"
    with open(os.path.join(sys.argv[1], f"{task}.json"), "w") as handle:
        json.dump(results, handle)


if __name__ == "__main__":
    main()
