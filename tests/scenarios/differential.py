"""The differential harness: the same small program as plain ``model.fit`` and as ``autodist.fit``.

Usage: python differential.py [OUTDIR]   (the parent sets AUTODIST_CPU_DEVICES /
AUTODIST_STRATEGY, or TF_CONFIG through ``python -m autodist launch``, so autodist makes the
strategy under test current at import, as for a user). In a cluster every worker writes
OUTDIR/<task>.json instead of printing.

For every input kind, the reference arm runs plain single-device ``model.fit`` (no strategy
current), the autodist arm runs ``autodist.fit`` under the process's strategy, and the hand-built
arm runs plain ``model.fit`` on the reference's input with the model built in the scope of the
strategy a script without autodist builds (:func:`reference.hand_built_strategy`; none under the
default strategy and parameter servers), both from the
same seed with plain SGD, unshuffled unless the kind says ``shuffle=True`` (then each worker
also seeds its own randomness differently, as a script seeded with its task index does). Where
autodist accepts an input that ``model.fit`` does not take as it is (an unbatched dataset with
``batch_size``), the reference arm runs what the user writes for ``model.fit``: the same
pipeline with ``.batch(16)`` (or ``.padded_batch(16)``) at the end.
``DIFFERENTIAL_KINDS="a|b"`` runs only the kinds named; ``DIFFERENTIAL_FAKE_KERAS=3.17.0``
makes autodist see that Keras version (the untested-newer-Keras path). Each arm reports:

- the samples seen in each epoch, counted by the model itself: column 0 of the first input is the
  sample's id, and the first layer adds ``bincount(ids)`` to a SUM-aggregated counter while it
  trains (so every replica's and worker's samples count);
- the History, the final weights, and how many times each callback hook fired.

Prints ``RESULT <json>``: for each kind, both arms' figures. Assertions live in
tests/test_differential.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
FAKE_KERAS = os.environ.get("DIFFERENTIAL_FAKE_KERAS")  # a Keras version to pretend is installed
if FAKE_KERAS:  # autodist reads Keras's version from Keras's code: that reader answers the fake
    import autodist.upstream.versions as _versions  # loads only the import hook, nothing that reads it yet

    _version = _versions.module_version
    _versions.module_version = lambda name: FAKE_KERAS if name == "keras" else _version(name)

with warnings.catch_warnings(record=True) as IMPORT_WARNINGS:  # autodist plans when Keras loads
    warnings.simplefilter("always")
    import autodist  # noqa: E402  (first: the strategy under test becomes current)
    import keras  # noqa: E402

    if FAKE_KERAS:
        keras.__version__ = FAKE_KERAS
    import tensorflow as tf  # noqa: E402
import numpy as np  # noqa: E402
from reference import hand_built_strategy, plain, write_result  # noqa: E402

NUM, FEATURES, CLASSES, EPOCHS, BATCH, VOCAB = 100, 6, 3, 2, 16, 150  # 100 = 6 x 16 + 4: a short last batch
TASK_INDEX = int(json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {}).get("index", 0))
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


def build(shape: str):
    """``"one"``: one input (features with the id in column 0); ``"two"``: two named inputs
    (``a`` and ``b``); ``"sequence"``: token sequences of any length (the id is token 0)."""
    keras.utils.set_random_seed(1)
    if shape == "sequence":
        tokens = keras.Input((None,), dtype="int32", name="a")
        embedded = keras.layers.Embedding(VOCAB, 4)(CountIds(name="count_ids")(tokens))
        hidden, inputs = keras.layers.GlobalAveragePooling1D()(embedded), [tokens]
    else:
        a = keras.Input((FEATURES + 1,), name="a")
        hidden, inputs = keras.layers.Dense(8, activation="relu")(CountIds(name="count_ids")(a)), [a]
    if shape == "two":
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
        if os.environ.get("DIFFERENTIAL_DEBUG"):
            print("BATCH", batch, {k: round(float(v), 4) for k, v in (logs or {}).items()}, file=sys.stderr)

    def on_test_batch_end(self, batch, logs=None):
        self._count("test_batch_end")


def sequences():
    """Variable-length token sequences, token 0 the sample's id, as (tokens, label) samples."""
    lengths = 2 + np.arange(NUM) % 5
    for i in range(NUM):
        yield np.concatenate([[i], 1 + (i * 7 + np.arange(lengths[i] - 1)) % (VOCAB - 1)]).astype("int32"), Y[i]


def batches(size: int):
    """A Python generator of (x, y) batches that never ends (as Keras expects with steps_per_epoch)."""
    while True:
        for start in range(0, NUM, size):
            yield XA[start : start + size], Y[start : start + size]


class Batches(keras.utils.PyDataset):
    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def __len__(self):
        return -(-NUM // self.size)

    def __getitem__(self, index):
        return XA[index * self.size : (index + 1) * self.size], Y[index * self.size : (index + 1) * self.size]


def kind(name, x, y=None, shape="one", reference=None, shuffled=False, **kwargs):
    """One input kind: the autodist program's input, and the plain program's where it differs
    (``reference``: ``(x, y, kwargs)``, for an input only autodist accepts as it is)."""
    return {"name": name, "shape": shape, "x": x, "y": y, "kwargs": kwargs, "reference": reference, "shuffled": shuffled}


def kinds():
    import pandas as pd

    labelled = tf.data.Dataset.from_tensor_slices((XA, Y))
    fixed = tf.data.Dataset.from_generator(
        lambda: ((XA[i : i + 20], Y[i : i + 20]) for i in range(0, NUM, 20)),
        output_signature=(tf.TensorSpec((20, FEATURES + 1), tf.float32), tf.TensorSpec((20,), tf.int32)),
    )
    ragged = tf.data.Dataset.from_generator(
        sequences, output_signature=(tf.TensorSpec((None,), tf.int32), tf.TensorSpec((), tf.int32))
    )
    unbatch_chain = labelled.batch(64).map(lambda x, y: (x, y)).unbatch()
    flat_map_chain = labelled.batch(10).flat_map(lambda x, y: tf.data.Dataset.from_tensor_slices((x, y)))
    return [
        kind("numpy arrays", XA, Y, batch_size=BATCH),
        kind("list of arrays, 2 inputs", [XA, FEATURES_B], Y, shape="two", batch_size=BATCH),
        kind("dict of named inputs", {"a": XA, "b": FEATURES_B}, Y, shape="two", batch_size=BATCH),
        kind("pandas DataFrame + Series", pd.DataFrame(XA), pd.Series(Y), batch_size=BATCH),
        kind("batched tf.data", labelled.batch(BATCH)),
        kind("tf.data map + prefetch", labelled.batch(BATCH).map(lambda x, y: (x, y)).prefetch(2)),
        kind("unbatched tf.data + batch_size", labelled, reference=(labelled.batch(BATCH), None, {}), batch_size=BATCH),
        kind("batch(64).map.unbatch() + batch_size", unbatch_chain, reference=(unbatch_chain.batch(BATCH), None, {}), batch_size=BATCH),
        kind("batch(10).flat_map(slices) + batch_size", flat_map_chain, reference=(flat_map_chain.batch(BATCH), None, {}), batch_size=BATCH),
        kind("from_generator, fixed batch dim 20", fixed),
        kind("Python generator + steps_per_epoch", batches(BATCH), reference=(batches(BATCH), None, {"steps_per_epoch": 7}), steps_per_epoch=7),
        kind("keras.utils.PyDataset", Batches(BATCH)),
        kind("variable-length sequences, padded_batch", ragged.padded_batch(BATCH), shape="sequence"),
        kind("variable-length samples + batch_size", ragged, shape="sequence", reference=(ragged.padded_batch(BATCH), None, {}), batch_size=BATCH),
        kind("uneven last batch (99 samples: 16 x 6 + 3)", XA[:99], Y[:99], batch_size=BATCH),
        kind("steps_per_epoch + batch_size", XA, Y, batch_size=BATCH, steps_per_epoch=3),
        kind("steps_per_epoch, no batch_size", XA, Y, steps_per_epoch=5),
        kind("validation_split", XA, Y, batch_size=BATCH, validation_split=0.2),
        kind("validation_data tuple", XA, Y, batch_size=BATCH, validation_data=(XA[:20], Y[:20])),
        kind("validation_data dataset", XA, Y, batch_size=BATCH, validation_data=labelled.take(20).batch(8)),
        kind("sample_weight", XA, Y, batch_size=BATCH, sample_weight=np.linspace(0.5, 1.5, NUM).astype("float32")),
        kind("class_weight", XA, Y, batch_size=BATCH, class_weight={0: 1.0, 1: 2.0, 2: 0.5}),
        kind("initial_epoch=1", XA, Y, batch_size=BATCH, initial_epoch=1),
        kind("shuffle=True, numpy", XA, Y, shuffled=True, batch_size=BATCH),
        kind("shuffle=True, pandas", pd.DataFrame(XA), pd.Series(Y), shuffled=True, batch_size=BATCH),
    ]


def run(fit, case, x, y, kwargs, scope=None) -> dict:
    with scope or contextlib.nullcontext():  # a hand-built strategy's arm builds in its scope
        model = build(case["shape"])
    if case["shuffled"]:  # each worker seeds its own randomness (dropout, augmentation, ...)
        keras.utils.set_random_seed(7 + TASK_INDEX)
    observe = Observe()
    kwargs = {"shuffle": case["shuffled"], **kwargs}
    before = evaluate(model, case["shape"])
    history = fit(model, x, y, epochs=EPOCHS, verbose=0, callbacks=[observe], **kwargs)
    return {
        "loss_before": before,
        "loss_after": evaluate(model, case["shape"]),
        "history": history.history,
        "weights": [w.tolist() for w in model.get_weights() if w.shape != (NUM,)],
        "hooks": observe.hooks,
        "seen": observe.seen,
    }


def evaluate(model, shape) -> float:
    """The loss on all the data, in order, outside any strategy (sequences: none needed)."""
    if shape != "one":
        return 0.0
    with plain():
        logits = model(XA, training=False)
        return float(keras.losses.SparseCategoricalCrossentropy(from_logits=True)(Y, logits))


def arms(case) -> dict:
    """Both arms of one kind; an AutodistError (or any error) is the arm's result."""
    ref_x, ref_y, ref_kwargs = case["reference"] or (case["x"], case["y"], case["kwargs"])
    with plain():
        reference = run(lambda m, *a, **k: m.fit(*a, **k), case, ref_x, ref_y, ref_kwargs)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", autodist.AutodistWarning)
            got = run(autodist.fit, case, case["x"], case["y"], case["kwargs"])
        got["warnings"] = [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)]
    except autodist.AutodistError as err:
        got = {"error": f"{type(err).__name__}: {err}"}
    except Exception as err:  # a crash is a finding: the harness reports it
        got = {"crash": f"{type(err).__name__}: {str(err)[:300]}"}
    found = {"reference": reference, "autodist": got, "shuffled": case["shuffled"]}
    strategy = hand_built_strategy()  # after autodist's arm: its strategy holds variables by then
    # Under CentralStorage the input kinds give the mirrored column's verdicts, and the model axis
    # (tests/test_model_axis.py) runs its hand-built arm: none here, which keeps the suite short.
    if strategy is not None and type(strategy).__name__ != "CentralStorageStrategy":
        with plain():  # plain model.fit on the reference's input, the model built in the strategy's scope
            try:
                found["hand_built"] = run(lambda m, *a, **k: m.fit(*a, **k), case, ref_x, ref_y, ref_kwargs, strategy.scope())
            except Exception as err:  # Keras's own failure under the strategy is a finding too
                found["hand_built"] = {"crash": f"{type(err).__name__}: {str(err)[:300]}"}
    return found


def main() -> None:
    results = {}
    only = os.environ.get("DIFFERENTIAL_KINDS")
    with warnings.catch_warnings(record=True) as outside_arms:  # e.g. at the strategy's creation
        warnings.simplefilter("always", autodist.AutodistWarning)
        for case in kinds():
            if not only or case["name"] in only.split("|"):
                results[case["name"]] = arms(case)
    write_result(results, IMPORT_WARNINGS + outside_arms)


if __name__ == "__main__":
    main()
