"""Random-draws worker: what a Dropout model draws and learns on 2 replicas, before (Keras's one
seed state for every replica) and after (autodist's ``replica_random_streams``), against one
device. Prints ``RESULT <json>``.

Usage: python benchmarks/_draws.py SEEDS EPOCHS

For each seed, in one process on 2 logical CPUs, ``AUTODIST_ACTIVATE=0`` (the strategies are
built by hand, as the guide builds them):

- the share of Dropout(0.5) mask entries that agree between the two halves of one batch: on one
  device about one half (independent draws), under MirroredStrategy as Keras draws them every
  entry, with the patch about one half again;
- the validation loss of a Dropout MLP trained ``EPOCHS`` epochs on a noisy regression task
  from the same initial weights, on one device and under MirroredStrategy before and after.
The patch is applied after every "before" run (it is global).
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["AUTODIST_ACTIVATE"] = "0"

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
SEEDS, EPOCHS = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
X = rng.normal(size=(512, 32)).astype("float32")
Y = (X[:, :4].sum(axis=1, keepdims=True) + rng.normal(scale=0.5, size=(512, 1))).astype("float32")
X_VAL, Y_VAL = X[384:], Y[384:]


def mlp():
    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(256, activation="relu"), keras.layers.Dropout(0.5),
                              keras.layers.Dense(256, activation="relu"), keras.layers.Dropout(0.5), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    return model


def mask_agreement(strategy, seed: int) -> float:
    """The share of Dropout mask entries equal between the two halves of one 16-sample batch."""
    keras.utils.set_random_seed(seed)
    with strategy.scope():
        layer = keras.Sequential([keras.Input((64,)), keras.layers.Dropout(0.5)])
    ones = np.ones((16, 64), "float32")
    if strategy is tf.distribute.get_strategy():  # one device: the two halves of its own batch
        kept = layer(ones, training=True).numpy() > 0
        return float((kept[:8] == kept[8:]).mean())
    data = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(ones).batch(16))
    step = tf.function(lambda batch: strategy.run(lambda b: layer(b, training=True), args=(batch,)))
    first, second = (t.numpy() > 0 for t in strategy.experimental_local_results(step(next(iter(data)))))
    return float((first == second).mean())


def val_loss(strategy, seed: int, weights) -> float:
    keras.utils.set_random_seed(seed)
    with strategy.scope():
        model = mlp()
    model.set_weights(weights)
    model.fit(X[:384], Y[:384], batch_size=32, epochs=EPOCHS, shuffle=False, verbose=0)
    return float(model.evaluate(X_VAL, Y_VAL, verbose=0))


def arms(seed: int, weights, mirrored) -> dict:
    return {"agreement": mask_agreement(mirrored, seed), "val_loss": val_loss(mirrored, seed, weights)}


def main() -> None:
    default = tf.distribute.get_strategy()
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    keras.utils.set_random_seed(0)
    weights = mlp().get_weights()
    found = {"one_device": [], "before": [], "after": []}
    for seed in range(SEEDS):
        found["one_device"].append({"agreement": mask_agreement(default, seed), "val_loss": val_loss(default, seed, weights)})
        found["before"].append(arms(seed, weights, mirrored))
    from autodist.upstream.keras_variables import patch_replica_random_streams

    from autodist.tensorflow.keras_patches import autodist_trains_under, trains_under

    assert patch_replica_random_streams(autodist_trains_under)
    trains_under(mirrored)  # as autodist.fit marks a strategy it trains under
    for seed in range(SEEDS):
        found["after"].append(arms(seed, weights, mirrored))
    found["after_again"] = arms(0, weights, mirrored)  # the same seed draws the same numbers
    print("RESULT " + json.dumps(found))


if __name__ == "__main__":
    main()
