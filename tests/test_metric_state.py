"""One list of metric objects compiled into every model a script makes (the TensorFlow tutorial
"Classification on imbalanced data"), on 2 replicas against plain ``model.fit`` on one device and a
hand-built ``MirroredStrategy``, each in its own process.

Keras resets compiled metrics before an epoch only once they are built: on one device they build
in the first step, so a second model's first epoch adds what its metric objects counted before;
under a strategy Keras builds them first and the reset clears it. autodist trains the strategy's
numbers (this fit's samples only) and says by how much they differ from model.fit's
(``autodist/tensorflow/metric_state.py``; Keras's side: ``test_upstream.py::test_still_needed_compile_metrics_reset``).
"""

from __future__ import annotations

import pytest

from tests.conftest import arm_results

pytestmark = pytest.mark.usefixtures("processes")  # starts processes: the tensorflow tier

PROGRAM = """
import json, os, sys, warnings
if sys.argv[1] == "autodist-moved":  # nothing current at import: fit moves the model into its strategy
    os.environ["AUTODIST_ACTIVATE"] = "0"
if sys.argv[1].startswith("autodist"):
    import autodist
import keras
import numpy as np
import tensorflow as tf

if sys.argv[1] == "hand-built":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    scope = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope
else:
    scope = tf.distribute.get_strategy().scope
rng = np.random.default_rng(0)
x = rng.normal(size=(96, 4)).astype("float32")
y = (x[:, :1] > 0).astype("float32")
METRICS = [keras.metrics.TruePositives(name="tp"), keras.metrics.FalseNegatives(name="fn"), keras.metrics.AUC(name="auc")]

def make_model():
    keras.utils.set_random_seed(1)
    with scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation="sigmoid")])
        model.compile(keras.optimizers.SGD(0.05), "binary_crossentropy", metrics=METRICS)
    return model

looked = make_model().evaluate(x, y, batch_size=32, verbose=0)  # the tutorial's first look at its model
model = make_model()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fit = autodist.fit if sys.argv[1].startswith("autodist") else lambda m, *a, **k: m.fit(*a, **k)
    history = fit(model, x, y, batch_size=32, epochs=2, verbose=0)
said = [(str(w.message), w.filename) for w in caught if type(w.message).__name__ == "AutodistWarning"]
weights = [w.ravel().tolist() for w in model.get_weights()]
result = {"history": history.history, "weights": weights, "warnings": said, "looked": looked, "positives": float(y.sum())}
print("RESULT " + json.dumps(result))
"""


def test_metrics_that_held_an_earlier_use_are_the_strategys_and_the_difference_is_warned_on_2_replicas():
    """Made under the strategy (autodist's at import), or moved into it by fit (a copy compiled
    anew, whose metrics hold nothing): the same numbers and the same note."""
    found = arm_results(PROGRAM, ("plain", "hand-built", "autodist", "autodist-moved"))
    plain, hand = found["plain"], found["hand-built"]
    positives = plain["positives"]
    for arm in ("autodist", "autodist-moved"):
        got = found[arm]
        for one, two in zip(plain["weights"], got["weights"], strict=True):
            assert two == pytest.approx(one, abs=1e-5), arm  # training is one device's
        assert got["history"]["loss"] == pytest.approx(plain["history"]["loss"], rel=1e-5), arm
        for key in ("tp", "fn", "auc"):  # the strategy's numbers, as a hand-built one gives them
            assert got["history"][key] == pytest.approx(hand["history"][key], rel=1e-5), (arm, key)
        notes = [(text, where) for text, where in got["warnings"] if "hold the state of an earlier use" in text]
        assert len(notes) == 1, (arm, got["warnings"])
        text, where = notes[0]
        assert where == "<string>"  # the script's fit line, not autodist's
        _, tp, fn, _ = got["looked"]  # what the metrics held: the evaluate's counts, and its AUC
        assert f"tp ({tp:.4g}), fn ({fn:.4g}), auc (" in text and "reset_state()" in text, text
    counted = {arm: [tp + fn for tp, fn in zip(r["history"]["tp"], r["history"]["fn"])] for arm, r in found.items()}
    assert counted["hand-built"] == counted["autodist"] == [positives, positives], counted
    assert counted["plain"] == [2 * positives, positives], "model.fit's first epoch no longer counts the evaluate"
