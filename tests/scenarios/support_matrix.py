"""What the support matrix checks on each TensorFlow/Keras pair with real TensorFlow: the failures
older pairs had, and a touch of private code turned off.

Usage: python support_matrix.py CASE, with CASE one of:

- ``replicated``: ``autodist.fit`` under Mirrored on 2 logical CPUs (``AUTODIST_CPU_DEVICES=2``,
  set by the parent) against plain single-device ``model.fit`` from the same weights: a metric
  that counts the samples it sees, History, weights, evaluate;
- ``short_epochs``: ``autodist.fit`` on one device with ``AUTODIST_STEPS_PER_EXECUTION=8`` (a fit
  this short keeps 1 by default), epochs of 5 steps (fewer than the 8 steps of one call);
- ``hooks_off``: ``StrategyBase.__deepcopy__`` removed before ``import autodist`` (as a TensorFlow
  release that renamed it would be): the activation's touch is off, and a model built before
  ``fit`` still trains under Mirrored;
- ``slurm_off``: SLURM's variables set and TensorFlow's ``expand_hostlist`` removed: the touch is
  off, and the process trains alone;
- ``import_warning``: ``AUTODIST_STRATEGY=mirored`` (set by the parent) and plain ``model.fit``;
- ``models``: a model with BatchNormalization, one with Dropout and one with a ``train_step`` of
  its own (as Keras's "customizing fit" guide writes it), each under ``autodist.fit`` on 2 replicas
  against single-device ``model.fit`` from the same weights: the gaps, and the warnings given;
- ``uneven_batches``: on 4 logical CPUs (``AUTODIST_CPU_DEVICES=4``), a model built by its first
  batch, with validation data of 50 samples (a first batch that splits 13/13/12/12), then
  ``evaluate`` on 30 samples, against one device: what Keras 3.16 broke where autodist's trainer
  patches could not find the renamed trainer ("AddN must have the same size and shape");
- ``metric_variable``: issue 58's case, ``autodist.fit`` on 2 logical CPUs (``AUTODIST_CPU_DEVICES=2``)
  with a metric whose ``result()`` returns its own variable, 990 samples in batches of 33 and 99
  to validate on: every History value's type, and the samples it counted;
- ``central_storage``: ``autodist.fit`` under CentralStorage (``AUTODIST_STRATEGY``) on 2 logical
  CPUs, the sample-counting metric and History against one device (or the named refusal where
  this Keras cannot train there).

Prints ``RESULT <json>``; the warnings autodist gave are in it.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
CASE = sys.argv[1]
warnings.simplefilter("always")
caught: list[str] = []
_show = warnings.showwarning
warnings.showwarning = lambda message, category, *rest, **kw: caught.append(f"{category.__name__}: {message}")
log_stream = io.StringIO()
logging.getLogger("autodist").addHandler(logging.StreamHandler(log_stream))
logging.getLogger("autodist").setLevel(logging.INFO)

if CASE == "hooks_off":
    from tensorflow.python.distribute import distribute_lib

    del distribute_lib.StrategyBase.__deepcopy__  # the attribute a renamed TensorFlow would lack
if CASE == "slurm_off":
    from tensorflow.python.distribute.cluster_resolver import slurm_cluster_resolver

    del slurm_cluster_resolver.expand_hostlist

import autodist  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from reference import guide_train_step, sample_counter  # noqa: E402

rng = np.random.default_rng(0)
X = rng.normal(size=(990, 4)).astype("float32")
Y = rng.normal(size=(990, 1)).astype("float32")


class Count(keras.metrics.Sum):
    """Counts the samples it sees."""

    def update_state(self, y_true, y_pred, sample_weight=None):
        return super().update_state(keras.ops.ones_like(y_true[:, 0]))


def build(metrics=True):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse", metrics=[Count(name="count")] if metrics else [])
    return model


def compare(trained, reference, history, plain):
    return {
        "history_gap": max(abs(a - b) for key in plain.history for a, b in zip(history.history[key], plain.history[key], strict=True)),
        "weights_gap": max(float(np.max(np.abs(a - b))) for a, b in zip(trained.get_weights(), reference.get_weights(), strict=True)),
        "evaluate_gap": max(abs(a - b) for a, b in zip(trained.evaluate(X, Y, verbose=0), reference.evaluate(X, Y, verbose=0), strict=True)),
        "counted": history.history["count"],
        "epochs": len(history.history["loss"]),
    }


class OwnStep(keras.Model):
    """A train_step of the model's own, as Keras's "customizing fit" guide writes it."""

    def train_step(self, data):
        guide_train_step(self, data)
        return {metric.name: metric.result() for metric in self.metrics}


def kind_of_model(kind: str):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(8, activation="relu")(inputs)
    if kind == "batchnorm":
        hidden = keras.layers.BatchNormalization()(hidden)
    elif kind == "dropout":
        hidden = keras.layers.Dropout(0.3)(hidden)
    outputs = keras.layers.Dense(1)(hidden)
    model = (OwnStep if kind == "own_train_step" else keras.Model)(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return model


def models() -> dict:
    found = {}
    for kind in ("batchnorm", "dropout", "own_train_step"):
        before = len(caught)
        model = kind_of_model(kind)
        history = autodist.fit(model, X[:256], Y[:256], batch_size=32, epochs=2, shuffle=False, verbose=0)
        with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
            reference = kind_of_model(kind)
            plain = reference.fit(X[:256], Y[:256], batch_size=32, epochs=2, shuffle=False, verbose=0)
        found[kind] = {
            "weights_gap": max(float(np.max(np.abs(a - b))) for a, b in zip(model.get_weights(), reference.get_weights(), strict=True)),
            "loss": history.history["loss"],
            "reference_loss": plain.history["loss"],
            "warnings": caught[before:],
            "replicas": history.plan.num_replicas,
        }
    return found


def main() -> dict:
    result: dict = {"tensorflow": tf.__version__, "keras": keras.__version__}
    if CASE == "replicated":
        model = build()
        history = autodist.fit(model, X, Y, batch_size=66, epochs=2, shuffle=False, verbose=0)
        with tf.distribute.OneDeviceStrategy("/cpu:0").scope():  # fit in it too: Keras 3.3-3.4 build the optimizer in fit
            reference = build()
            plain = reference.fit(X, Y, batch_size=66, epochs=2, shuffle=False, verbose=0)
        result.update(compare(model, reference, history, plain), plan=history.plan.strategy.value, replicas=history.plan.num_replicas)
    elif CASE == "short_epochs":
        model = build()
        os.environ["AUTODIST_STEPS_PER_EXECUTION"] = "8"
        history = autodist.fit(model, X[:40], Y[:40], batch_size=8, epochs=2, verbose=0)
        result.update(epochs=len(history.history["loss"]), steps_per_execution=history.plan.steps_per_execution,
                      reasons=[r for r in history.plan.reasons if r.startswith("steps_per_execution")])  # fmt: skip
    elif CASE in ("hooks_off", "slurm_off"):
        model = build(metrics=False)  # built before fit: with no activation, fit moves it into the scope
        history = autodist.fit(model, X, Y, batch_size=66, epochs=1, verbose=0)
        from autodist.upstream.surface import status

        result.update(plan=history.plan.strategy.value, replicas=history.plan.num_replicas, epochs=len(history.history["loss"]),
                      states={row["touch"]: row["state"] for row in status()})  # fmt: skip
    elif CASE == "models":
        result["models"] = models()
    elif CASE == "uneven_batches":
        # built by its first batch, where the symbolic build reads it (Keras 3.5 on); Keras 3.3 and 3.4 have no
        # symbolic build, and a model built inside its first step fails there under Mirrored, with or without
        # autodist ("You must feed a value for placeholder tensor"): built by its Input there
        symbolic_build = tuple(int(part) for part in keras.__version__.split(".")[:2]) >= (3, 5)

        def lazy():
            keras.utils.set_random_seed(0)
            layers = [keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
            model = keras.Sequential(layers if symbolic_build else [keras.Input((4,)), *layers])
            model.compile(optimizer="adam", loss="mse")
            return model

        model = lazy()
        history = autodist.fit(model, X, Y, batch_size=64, epochs=2, shuffle=False, verbose=0, validation_data=(X[:50], Y[:50]))
        with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
            reference = lazy()
            plain = reference.fit(X, Y, batch_size=64, epochs=2, shuffle=False, verbose=0, validation_data=(X[:50], Y[:50]))
        result.update(
            replicas=history.plan.num_replicas,
            history_gap=max(abs(a - b) for key in plain.history for a, b in zip(history.history[key], plain.history[key], strict=True)),
            evaluate_gap=abs(model.evaluate(X[:30], Y[:30], verbose=0) - reference.evaluate(X[:30], Y[:30], verbose=0)),
        )
    elif CASE == "metric_variable":
        model = build(metrics=False)
        model.compile(optimizer="adam", loss="mse", metrics=[sample_counter()])
        history = autodist.fit(model, X, Y, batch_size=33, epochs=2, verbose=0, validation_data=(X[:99], Y[:99]))
        with tf.distribute.OneDeviceStrategy("/cpu:0").scope():  # what one device's History holds (by release)
            reference = build(metrics=False)
            reference.compile(optimizer="adam", loss="mse", metrics=[sample_counter()])
            plain = reference.fit(X, Y, batch_size=33, epochs=2, verbose=0, validation_data=(X[:99], Y[:99]))
        result.update(reference={key: plain.history[key] for key in ("seen", "val_seen")})
        result.update(replicas=history.plan.num_replicas,
                      types=sorted({type(value).__name__ for values in history.history.values() for value in values}),
                      seen=[value if isinstance(value, float) else None for value in history.history["seen"]],
                      val_seen=[value if isinstance(value, float) else None for value in history.history["val_seen"]])  # fmt: skip
    elif CASE == "central_storage":
        model = build()
        try:
            history = autodist.fit(model, X, Y, batch_size=66, epochs=2, shuffle=False, verbose=0)
        except autodist.StrategyUnavailableError as err:
            result.update(refused=str(err))
        else:
            with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
                reference = build()
                plain = reference.fit(X, Y, batch_size=66, epochs=2, shuffle=False, verbose=0)
            result.update(compare(model, reference, history, plain), plan=history.plan.strategy.value, replicas=history.plan.num_replicas)
    elif CASE == "import_warning":
        model = build(metrics=False)
        history = model.fit(X, Y, batch_size=66, epochs=1, verbose=0)
        result.update(epochs=len(history.history["loss"]), strategy=type(tf.distribute.get_strategy()).__name__)
    result["warnings"] = caught
    result["log"] = log_stream.getvalue()
    return result


if __name__ == "__main__":
    print("RESULT " + json.dumps(main()), flush=True)
