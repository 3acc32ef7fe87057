"""One task's side of a parameter-server job, started by ``python -m autodist launch --ps 1``.

Usage: parameter_server.py OUTDIR MODE   (MODE: train | long | dataset)

Every task runs this same script. On worker and ps tasks autodist.fit serves and ends the
process; on the chief it trains and writes OUTDIR/chief.json. ``long`` trains for many epochs,
writing the count of finished epochs to OUTDIR/chief-started (for the tests that kill a task).
``dataset`` trains the user's own model on tf.data pipelines built before ``autodist.fit``, with
batch-level callbacks, and writes what each fit showed.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import autodist  # noqa: E402
import numpy as np  # noqa: E402

OUTDIR, MODE = sys.argv[1], sys.argv[2]
if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras as keras  # noqa: E402
else:
    import keras  # noqa: E402

rng = np.random.default_rng(7)
X = rng.normal(size=(512, 12)).astype("float32")
Y = np.argmax(X[:, :3] + 0.3 * rng.normal(size=(512, 3)), axis=1).astype("int32")


def build():
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [keras.Input((12,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.05),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


class Started(keras.callbacks.Callback):
    """Writes the number of finished epochs to OUTDIR/chief-started."""

    def on_epoch_end(self, epoch, logs=None):
        with open(os.path.join(OUTDIR, "chief-started.tmp"), "w") as handle:
            handle.write(str(epoch + 1))
        os.replace(os.path.join(OUTDIR, "chief-started.tmp"), os.path.join(OUTDIR, "chief-started"))


def dataset_loss(model) -> float:
    """Mean loss of ``model`` on the whole data set, computed eagerly on this process. Per sample
    (reduction "none"): tf_keras refuses a mean reduction outside fit while a strategy is current."""
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    return float(np.mean(loss(Y, model(X, training=False))))


def device_of(variable) -> str:
    """Where a variable lives (Keras 3 wraps the TensorFlow variable as ``.value``)."""
    inner = getattr(variable, "value", variable)
    return str(getattr(variable if callable(inner) else inner, "device", ""))


class Order(keras.callbacks.Callback):
    """Records every batch hook as ("begin"|"end", step); stops training at ``stop_at``."""

    def __init__(self, stop_at=None):
        super().__init__()
        self.calls, self.stop_at = [], stop_at

    def on_train_batch_begin(self, batch, logs=None):
        self.calls.append(("begin", batch))

    def on_train_batch_end(self, batch, logs=None):
        self.calls.append(("end", batch))
        if batch == self.stop_at:
            self.model.stop_training = True


def dataset_mode() -> None:
    """The user's own model and tf.data pipelines, built before autodist.fit (as in the tutorial)."""
    import tensorflow as tf

    batched = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(512, seed=1).batch(32)
    unbatched_endless = tf.data.Dataset.from_tensor_slices((X, Y)).repeat()
    model = build()
    results = {"variable_device": device_of(model.trainable_variables[0])}
    legacy = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
    checkpoint = keras.callbacks.ModelCheckpoint(
        os.path.join(OUTDIR, "ckpt-{epoch}-{batch}" + ("" if legacy else ".weights.h5")), save_weights_only=True, save_freq=4
    )
    order = Order()
    results["batched"] = autodist.fit(model, batched, epochs=2, verbose=0, callbacks=[checkpoint] + ([] if legacy else [order])).history
    results["order"] = order.calls
    results["unbatched_endless"] = autodist.fit(model, unbatched_endless, batch_size=32, epochs=2, steps_per_epoch=5, verbose=0).history
    if legacy:
        try:
            autodist.fit(model, batched, epochs=1, verbose=0, callbacks=[Order()])
            results["batch_hooks_error"] = None
        except autodist.AutodistError as err:
            results["batch_hooks_error"] = str(err)
    else:
        stopper = Order(stop_at=2)
        results["stopped"] = {"history": autodist.fit(model, batched, epochs=3, verbose=0, callbacks=[stopper]).history, "calls": stopper.calls}
        nan_model = build()  # its loss is NaN from the first step
        nan_model.compile(optimizer="sgd", loss=lambda y_true, y_pred: tf.reduce_mean(y_pred) * float("nan"))
        nan_count = Order()
        nan_history = autodist.fit(nan_model, batched, epochs=3, verbose=0, callbacks=[keras.callbacks.TerminateOnNaN(), nan_count])
        results["terminate_on_nan"] = {"epochs": len(nan_history.history["loss"]), "steps": len(nan_count.calls) // 2}
    results["files"] = sorted(name for name in os.listdir(OUTDIR) if name.startswith("ckpt-"))
    with open(os.path.join(OUTDIR, "chief.json"), "w") as handle:
        json.dump(results, handle)


if MODE == "dataset":
    dataset_mode()
    sys.exit(0)
epochs = 3 if MODE == "train" else 10_000
history = autodist.fit(build, X, Y, batch_size=32, epochs=epochs, verbose=0, callbacks=[Started()])
# The same seed gives the same starting weights that training began from.
initial_loss = dataset_loss(build())
variable = history.model.trainable_variables[0]
with open(os.path.join(OUTDIR, "chief.json"), "w") as handle:
    json.dump(
        {
            "history": history.history,
            "initial_loss": initial_loss,
            "final_loss": dataset_loss(history.model),
            "strategy": history.plan.strategy.value,
            "global_batch_size": history.plan.global_batch_size,
            "variable_device": device_of(variable),
        },
        handle,
    )
print("chief done", history.history["loss"])
