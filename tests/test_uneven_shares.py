"""Batches that split unevenly over 2 replicas, under ``autodist.fit`` and plain ``model.fit`` on
one device, each arm in its own process (the workaround ``uneven_shares_weighted``).

Each replica takes its share's mean loss and Keras counts the replicas' means equally, so where a
batch splits unevenly the smaller share's samples weigh more than on one device. autodist weights
each replica's loss by its share of the step's samples (a step of the model's own: its gradients):
every input kind whose batches may split unevenly, and a model whose replicas share their batch
statistics, then train to one device's numbers, unwarned, and with the workaround left out
(``AUTODIST_KERAS_COMPAT=auto,-uneven_shares_weighted``) Keras's weighting comes back, warned.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import finished, start_python, subprocess_env

pytestmark = pytest.mark.usefixtures("processes")  # every test here starts processes: the tensorflow tier

PROGRAM = """
import json, sys, warnings
if sys.argv[1] != "plain":
    import autodist
import keras
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
X = rng.normal(size=(99, 6)).astype("float32")
Y = (X @ rng.normal(size=(6, 1)) + rng.normal(size=(99, 1))).astype("float32")


class Batches(keras.utils.PyDataset):  # batches of 15: every step splits 8/7
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return X[i * 15 : (i + 1) * 15], Y[i * 15 : (i + 1) * 15]


def batches_forever():
    while True:
        for i in range(6):
            yield X[i * 15 : (i + 1) * 15], Y[i * 15 : (i + 1) * 15]


class OwnStep(keras.Model):  # a train_step of its own, with a loss it computes itself
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.tracker = keras.metrics.Mean(name="loss")

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = keras.ops.mean(keras.ops.square(y - self(x, training=True)))
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.tracker.update_state(loss)
        return {"loss": self.tracker.result()}


def model(own=False):
    keras.utils.set_random_seed(0)
    middle = [keras.layers.BatchNormalization(synchronized=True)] if own == "synchronized" else []
    layers = [keras.Input((6,)), keras.layers.Dense(4, activation="relu"), *middle, keras.layers.Dense(1)]
    made = OwnStep() if own is True else keras.Sequential(layers)
    made.compile(optimizer=keras.optimizers.SGD(0.05), loss=None if own is True else "mse")
    return made


def shard_policy_off(dataset):  # TensorFlow then re-batches by filling the replicas in turn
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return dataset.with_options(options)


KINDS = {
    "arrays, last batch 3 of 99": (lambda: (X, Y), dict(batch_size=16), False),
    "tf.data, last batch 3 of 99": (lambda: (tf.data.Dataset.from_tensor_slices((X, Y)).batch(16),), {}, False),
    "tf.data, shard policy OFF, last batch 34 of 98": (
        lambda: (shard_policy_off(tf.data.Dataset.from_tensor_slices((X[:98], Y[:98])).batch(64)),), {}, False
    ),
    "PyDataset of 15-sample batches": (lambda: (Batches(),), {}, False),
    "generator of 15-sample batches + steps_per_epoch": (lambda: (batches_forever(),), dict(steps_per_epoch=6), False),
    "train_step of its own, last batch 3 of 99": (lambda: (X, Y), dict(batch_size=16), True),
    # its statistics all-reduced: one replica's loss reaches the other's gradients through them
    "synchronized BatchNormalization, last batch 3 of 99": (lambda: (X, Y), dict(batch_size=16), "synchronized"),
}
found = {}
for kind, (data, kwargs, own) in KINDS.items():
    trained = model(own)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = trained.fit if sys.argv[1] == "plain" else lambda *a, **k: autodist.fit(trained, *a, **k)
        history = fit(*data(), epochs=2, shuffle=False, verbose=0, **kwargs)
    plan = getattr(history, "plan", None)
    found[kind] = {
        "loss": history.history["loss"],
        "weights": np.concatenate([w.ravel() for w in trained.get_weights()]).tolist(),
        "replicas": None if plan is None else plan.num_replicas,
        "warnings": [str(w.message) for w in caught if type(w.message).__name__ == "AutodistWarning"],
    }
print("RESULT " + json.dumps(found))
"""

ARMS = {
    "plain": {},
    "autodist": {"AUTODIST_CPU_DEVICES": "2"},
    "keras's weighting": {"AUTODIST_CPU_DEVICES": "2", "AUTODIST_KERAS_COMPAT": "auto,-uneven_shares_weighted"},
}


@pytest.fixture(scope="module")
def runs():
    started = {arm: start_python(["-c", PROGRAM, arm], env=subprocess_env(**env)) for arm, env in ARMS.items()}
    found = {}
    for arm, proc in started.items():
        code, stdout, stderr = finished(proc, timeout=400)
        lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
        assert code == 0 and lines, (arm, stderr[-3000:])
        found[arm] = (json.loads(lines[-1][len("RESULT ") :]), stderr)
    return found


def _gap(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def test_every_input_kind_that_splits_unevenly_trains_as_one_device_unwarned(runs):
    (plain, _), (got, log) = runs["plain"], runs["autodist"]
    for kind, one in plain.items():
        two = got[kind]
        assert two["replicas"] == 2, (kind, two["replicas"])
        assert _gap(one["weights"], two["weights"]) <= 1e-5, (kind, _gap(one["weights"], two["weights"]))
        if kind.startswith("train_step of its own"):
            continue  # its own Mean, below
        assert _gap(one["loss"], two["loss"]) <= 1e-5, (kind, one["loss"], two["loss"])
        assert not [w for w in two["warnings"] if "split" in w or "weigh more" in w], (kind, two["warnings"])
    assert "the last batch of each epoch, 3 of 99 samples, splits 2/1; each replica's gradients are weighted" in log


def test_a_mean_a_train_step_records_itself_is_warned_where_a_batch_splits_unevenly(runs):
    """The weights are one device's, but the step's own ``Mean`` is updated once per replica, so on
    the uneven step it averages the replicas' means: that History differs, and autodist says so."""
    kind = "train_step of its own, last batch 3 of 99"
    one, two = runs["plain"][0][kind], runs["autodist"][0][kind]
    said = [w for w in two["warnings"] if "train_step records itself" in w]
    assert len(said) == 1 and "3 of 99 samples, splits 2/1" in said[0], two["warnings"]
    assert 0 < _gap(one["loss"], two["loss"]) <= 0.05 * max(one["loss"]), (one["loss"], two["loss"])


def test_with_the_workaround_left_out_keras_weighting_comes_back_warned(runs):
    """What the weighting changes, measured: the replicas' means counted equally move the weights."""
    (plain, _), (keras_way, _) = runs["plain"], runs["keras's weighting"]
    for kind in ("arrays, last batch 3 of 99", "tf.data, last batch 3 of 99"):
        assert _gap(plain[kind]["weights"], keras_way[kind]["weights"]) > 1e-3, kind
        assert any("3 of 99 samples (global batch 16), splits 2/1" in w for w in keras_way[kind]["warnings"]), kind
    pydataset = keras_way["PyDataset of 15-sample batches"]
    assert _gap(plain["PyDataset of 15-sample batches"]["weights"], pydataset["weights"]) > 1e-3
    assert any("batches of 15 samples, which do not split evenly" in w for w in pydataset["warnings"]), pydataset["warnings"]
