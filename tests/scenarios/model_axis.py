"""The differential harness's model axis: plain ``model.fit`` against ``autodist.fit`` with its
defaults, for models other than a Dense MLP (issue 24).

Usage: python model_axis.py [OUTDIR]   (the parent sets AUTODIST_CPU_DEVICES /
AUTODIST_STRATEGY, or TF_CONFIG through ``python -m autodist launch``, so autodist makes the
strategy under test current at import, as for a user). In a cluster every worker writes
OUTDIR/<task>.json instead of printing.

For every model, the reference arm builds and trains it with plain single-device ``model.fit``
(no strategy current), and the autodist arm builds it as a user does (no scope) and calls
``autodist.fit(model, x, y, batch_size=16, epochs=2, verbose=0)`` with no callbacks, so autodist's
defaults apply (``steps_per_execution=8`` under the default strategy with Keras 3, which the
input-kind harness never runs: its hook-counting callback keeps 1). Both arms start from the same
seed, train unshuffled with SGD on the same 112 samples (7 batches) and then evaluate and predict
a fixed held-out batch of 32, as a user would after fit. ``MODEL_AXIS_MODELS="a|b"`` runs only the
models named. Each arm reports:

- the History, the final weights (all of them: moving statistics and seed states too), the
  optimizer's iterations, ``evaluate`` (a dict) and ``predict`` (flattened);
- the ``steps_per_execution`` the model's train function was made with during ``fit`` (seen by a
  spy on ``make_train_function``, no callback), the plan's, and the model's own after ``fit``;
- the AutodistWarnings raised; an AutodistError or a crash is the arm's result.

Prints ``RESULT <json>``. Assertions live in tests/test_model_axis.py.
"""

from __future__ import annotations

import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

with warnings.catch_warnings(record=True) as IMPORT_WARNINGS:  # autodist plans when Keras loads
    warnings.simplefilter("always")
    import autodist  # noqa: E402  (first: the strategy under test becomes current)
    import keras  # noqa: E402
    import tensorflow as tf  # noqa: E402
import numpy as np  # noqa: E402
from reference import guide_train_step, plain, write_result  # noqa: E402

NUM, HELD, FEATURES, CLASSES, EPOCHS, BATCH = 112, 32, 6, 3, 2, 16  # 112 = 7 x 16
WORDS = ["red", "green", "blue", "gold", "grey"]  # "grey" is out of the vocabulary
VOCABULARY = WORDS[:4]
rng = np.random.default_rng(5)
DENSE = rng.normal(size=(NUM + HELD, FEATURES)).astype("float32")
LABELS = np.argmax(DENSE[:, :CLASSES] + 0.5 * DENSE[:, CLASSES:], axis=1).astype("int32")
IMAGES = rng.normal(size=(NUM + HELD, 8, 8, 1)).astype("float32")
IMAGE_LABELS = np.argmax([IMAGES[:, :3].mean((1, 2, 3)), IMAGES[:, 3:6].mean((1, 2, 3)), IMAGES[:, 6:].mean((1, 2, 3))], axis=0).astype("int32")
SEQUENCES = rng.normal(size=(NUM + HELD, 5, 3)).astype("float32")
SEQUENCE_LABELS = np.argmax(SEQUENCES.sum(axis=1), axis=1).astype("int32")
WORD_INDEX = rng.integers(0, len(WORDS), NUM + HELD)
WORD_INPUT = tf.constant([[WORDS[i]] for i in WORD_INDEX])  # a string tensor: Keras 3 rejects numpy string arrays
WORD_LABELS = ((WORD_INDEX + (DENSE[:, 0] > 0)) % CLASSES).astype("int32")
REGRESSION = (DENSE[:, :2].sum(axis=1, keepdims=True) * 0.5).astype("float32")

MAKE_TRAIN_SPE: list[int] = []  # steps_per_execution of each train function made
_make_train_function = keras.Model.make_train_function


def _spying_make_train_function(self, *args, **kwargs):
    if self.train_function is None or kwargs.get("force") or (args and args[0]):
        MAKE_TRAIN_SPE.append(int(self.steps_per_execution))
    return _make_train_function(self, *args, **kwargs)


keras.Model.make_train_function = _spying_make_train_function


def compiled(model, loss=None, **kwargs):
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=loss or keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=kwargs.pop("metrics", ["accuracy"]),
        **kwargs,
    )
    return model


def dense():
    return compiled(keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(CLASSES)]))


def cnn_batchnorm():
    return compiled(keras.Sequential([
        keras.Input((8, 8, 1)), keras.layers.Conv2D(4, 3, padding="same"), keras.layers.BatchNormalization(),
        keras.layers.Activation("relu"), keras.layers.MaxPooling2D(), keras.layers.Flatten(), keras.layers.Dense(CLASSES),
    ]))  # fmt: skip


def dropout():
    return compiled(keras.Sequential([
        keras.Input((FEATURES,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dropout(0.5), keras.layers.Dense(CLASSES),
    ]))  # fmt: skip


def lstm():
    return compiled(keras.Sequential([keras.Input((5, 3)), keras.layers.LSTM(8), keras.layers.Dense(CLASSES)]))


def embedding_dict():
    word = keras.Input((1,), dtype="string", name="word")
    number = keras.Input((FEATURES,), name="number")
    ids = keras.layers.StringLookup(vocabulary=VOCABULARY)(word)
    embedded = keras.layers.Flatten()(keras.layers.Embedding(len(VOCABULARY) + 1, 4)(ids))
    hidden = keras.layers.Dense(8, activation="relu")(keras.layers.Concatenate()([embedded, number]))
    return compiled(keras.Model({"word": word, "number": number}, keras.layers.Dense(CLASSES)(hidden)))


class CustomStep(keras.Model):
    """A subclassed model with its own ``train_step``, as Keras 3's guide for TensorFlow writes it."""

    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(16, activation="relu")
        self.out = keras.layers.Dense(CLASSES)

    def call(self, inputs):
        return self.out(self.hidden(inputs))

    def train_step(self, data):
        guide_train_step(self, data)
        return self.get_metrics_result()


def subclassed():
    model = CustomStep()
    model(DENSE[:1])  # built before compile, as the guide's models are after their first call
    return compiled(model)


def two_outputs():
    inputs = keras.Input((FEATURES,))
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    outputs = {"cls": keras.layers.Dense(CLASSES, name="cls")(hidden), "reg": keras.layers.Dense(1, name="reg")(hidden)}
    return compiled(
        keras.Model(inputs, outputs),
        loss={"cls": keras.losses.SparseCategoricalCrossentropy(from_logits=True), "reg": "mse"},
        loss_weights={"cls": 1.0, "reg": 0.5},
        metrics={"cls": ["accuracy"]},
    )


def split(x, y):
    """``(x, y)`` for training and for the held-out batch (nested dicts split alike)."""
    first = tf.nest.map_structure(lambda a: a[:NUM], (x, y))
    return first, tf.nest.map_structure(lambda a: a[NUM:], (x, y))


MODELS = {
    "dense (control)": (dense, DENSE, LABELS),
    "cnn + batchnorm": (cnn_batchnorm, IMAGES, IMAGE_LABELS),
    "dropout": (dropout, DENSE, LABELS),
    "lstm": (lstm, SEQUENCES, SEQUENCE_LABELS),
    "embedding, dict inputs, StringLookup": (embedding_dict, {"word": WORD_INPUT, "number": DENSE}, WORD_LABELS),
    "subclassed train_step": (subclassed, DENSE, LABELS),
    "two outputs, loss_weights": (two_outputs, DENSE, {"cls": LABELS, "reg": REGRESSION}),
}


def run(fit, build, x, y) -> dict:
    """Build from the seed, fit, then evaluate and predict the held-out batch."""
    (train_x, train_y), (held_x, held_y) = split(x, y)
    keras.utils.set_random_seed(1)
    model = build()
    MAKE_TRAIN_SPE.clear()
    history = fit(model, train_x, train_y, batch_size=BATCH, epochs=EPOCHS, verbose=0)
    made_with = list(MAKE_TRAIN_SPE)
    plan = getattr(history, "plan", None)
    return {
        "history": {key: [float(v) for v in values] for key, values in history.history.items()},
        "weights": [np.asarray(w).astype("float64").tolist() for w in model.get_weights()],
        "weight_names": [w.path for w in model.weights],
        "iterations": int(model.optimizer.iterations.numpy()),
        "evaluate": {k: float(v) for k, v in model.evaluate(held_x, held_y, batch_size=BATCH, verbose=0, return_dict=True).items()},
        "predict": [np.asarray(p).astype("float64").tolist() for p in tf.nest.flatten(model.predict(held_x, batch_size=BATCH, verbose=0))],
        "spe_in_fit": made_with,
        "spe_plan": None if plan is None else plan.steps_per_execution,
        "spe_after": int(model.steps_per_execution),
        "plan": None if plan is None else plan.strategy.value,
    }


def arms(name: str) -> dict:
    """Both arms of one model; an AutodistError (or any error) is the autodist arm's result."""
    build, x, y = MODELS[name]
    with plain():
        try:
            reference = run(lambda m, *a, **k: m.fit(*a, shuffle=False, **k), build, x, y)
        except Exception as err:  # the harness reports it: the cell cannot be judged
            reference = {"crash": f"{type(err).__name__}: {str(err)[:300]}"}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", autodist.AutodistWarning)
            got = run(lambda m, *a, **k: autodist.fit(m, *a, shuffle=False, **k), build, x, y)
        got["warnings"] = [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)]
    except autodist.AutodistError as err:
        got = {"error": f"{type(err).__name__}: {err}"}
    except Exception as err:  # a crash is a finding: the harness reports it
        got = {"crash": f"{type(err).__name__}: {str(err)[:300]}"}
    return {"reference": reference, "autodist": got}


def main() -> None:
    results = {}
    only = os.environ.get("MODEL_AXIS_MODELS")
    with warnings.catch_warnings(record=True) as outside_arms:  # e.g. at the strategy's creation
        warnings.simplefilter("always", autodist.AutodistWarning)
        for name in MODELS:
            if not only or name in only.split("|"):
                results[name] = arms(name)
    write_result(results, IMPORT_WARNINGS + outside_arms)


if __name__ == "__main__":
    main()
