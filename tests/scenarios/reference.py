"""Helpers shared by the scenarios that compare autodist with plain Keras in one process."""

from __future__ import annotations

import contextlib
import json
import os
import sys

import tensorflow as tf


@contextlib.contextmanager
def plain():
    """No strategy current: what the same script does without autodist (autodist made one
    current at import). Reference models are built and trained in here."""
    if not tf.distribute.has_strategy():  # nothing current (a plain block inside a plain block)
        yield
        return
    current = tf.distribute.get_strategy()
    tf.distribute.experimental_set_strategy(None)
    try:
        yield
    finally:
        tf.distribute.experimental_set_strategy(current)


_HAND_BUILT: list = []


def hand_built_strategy():
    """The strategy a script without autodist builds, as the TensorFlow guide builds it, for the
    strategy autodist made current: ``MirroredStrategy`` or ``CentralStorageStrategy`` over the
    same logical devices, or ``MultiWorkerMirroredStrategy()`` in a cluster (there it is
    autodist's own object: collectives are configured once per process). The single-host ones
    reduce through one device: two strategies' collective ops in one process clash (the numbers
    are the same sums). ``None`` under the
    default strategy and parameter servers (no arm). Made once, at its first use: call it after
    autodist's strategy holds variables, so that autodist does not step aside for it for good."""
    if _HAND_BUILT:
        return _HAND_BUILT[0]
    current = tf.distribute.get_strategy()
    name = type(current).__name__
    devices = list(current.extended.worker_devices) if name in ("MirroredStrategy", "CentralStorageStrategy") else []
    made = {
        "MirroredStrategy": lambda: tf.distribute.MirroredStrategy(devices, cross_device_ops=tf.distribute.ReductionToOneDevice()),
        "CentralStorageStrategy": lambda: tf.distribute.experimental.CentralStorageStrategy(devices),
        "MultiWorkerMirroredStrategy": lambda: tf.distribute.MultiWorkerMirroredStrategy(),
        "CollectiveAllReduceStrategy": lambda: tf.distribute.MultiWorkerMirroredStrategy(),  # its class's own name
    }.get(name, lambda: None)()
    _HAND_BUILT.append(made)
    return made


def write_result(results: dict, caught: list) -> None:
    """Add the strategy that was current and the AutodistWarnings of ``caught`` (raised outside
    the arms: at import, at the strategy's creation) to ``results``; print ``RESULT <json>`` on a
    single host, or in a cluster (``TF_CONFIG``) write it to ``<argv[1]>/<task>.json``."""
    from autodist import AutodistWarning

    results["strategy"] = type(tf.distribute.get_strategy()).__name__
    results["process_warnings"] = [str(w.message) for w in caught if issubclass(w.category, AutodistWarning)]
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    if not config:
        print("RESULT " + json.dumps(results))
        return
    task = f"{config['task']['type']}-{config['task']['index']}"
    with open(os.path.join(sys.argv[1], f"{task}.json"), "w") as handle:
        json.dump(results, handle)


def guide_train_step(model, data) -> None:
    """One step of a ``train_step`` as Keras 3's "customizing fit" guide writes it: the loss from
    ``compute_loss``, its gradients applied by the optimizer, the loss and compiled metrics updated."""
    x, y = data
    with tf.GradientTape() as tape:
        y_pred = model(x, training=True)
        loss = model.compute_loss(x=x, y=y, y_pred=y_pred)
    gradients = tape.gradient(loss, model.trainable_variables)
    model.optimizer.apply(gradients, model.trainable_variables)
    for metric in model.metrics:
        if metric.name == "loss":
            metric.update_state(loss)
        else:
            metric.update_state(y, y_pred)


def sample_counter(name: str = "seen"):
    """Issue 58's metric: it counts the samples it saw, and its ``result()`` returns its own
    variable (Keras is imported here, after the caller's own imports)."""
    import keras

    class Seen(keras.metrics.Metric):
        def __init__(self, **kwargs):
            super().__init__(name=name, **kwargs)
            self.n = self.add_variable(shape=(), initializer="zeros", name="n", aggregation="sum")

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.n.assign_add(keras.ops.cast(keras.ops.shape(y_true)[0], "float32"))

        def result(self):
            return self.n

    return Seen()
