"""Plain Keras 3 reproductions of the upstream bugs autodist works around (no autodist here,
except where a case applies autodist's patch to show that it fixes the bug).

Run with 2 logical CPUs in a fresh process; prints ``RESULT <json>``.
"""

from __future__ import annotations

import contextlib
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
DEVICES = ["/cpu:0", "/cpu:1"]


def central_storage_mean() -> float:
    """Mean of 0..7 fed in two global batches over 2 replicas; the right answer is 3.5."""
    strategy = tf.distribute.experimental.CentralStorageStrategy(compute_devices=DEVICES, parameter_device="/cpu:0")
    with strategy.scope():
        metric = keras.metrics.Mean()
    dataset = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices(np.arange(8, dtype="float32")).batch(4)
    )

    @tf.function
    def step(batch):
        strategy.run(metric.update_state, args=(batch,))

    for batch in dataset:
        step(batch)
    return float(metric.result())


def mirrored_sum_counter() -> list[float]:
    """A variable with aggregation="sum" (a counter in a custom layer) under MirroredStrategy:
    each of 2 steps adds 1 on each of 2 replicas, so the right answer is 4."""
    strategy = tf.distribute.MirroredStrategy(DEVICES)
    with strategy.scope():
        counter = keras.Variable(np.zeros(2, "float32"), trainable=False, aggregation="sum")

    @tf.function
    def step():
        strategy.run(lambda: counter.assign_add(tf.ones(2)))

    step()
    step()
    return counter.numpy().tolist()


def mirrored_fit_error(**compile_kwargs) -> str | None:
    strategy = tf.distribute.MirroredStrategy(DEVICES)
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse", **compile_kwargs)
    try:
        model.fit(np.ones((64, 4), "float32"), np.ones((64, 2), "float32"), batch_size=16, verbose=0)
    except Exception as err:  # the upstream failure is what we record
        return f"{type(err).__name__}: {err}"
    return None


def mirrored_uneven_validation_error() -> str | None:
    strategy = tf.distribute.MirroredStrategy(DEVICES)
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((64, 4), "float32"), np.ones((64, 2), "float32")
    validation = tf.data.Dataset.from_tensor_slices((x[:33], y[:33])).batch(33)
    try:
        model.fit(x, y, batch_size=16, validation_data=validation, verbose=0)
    except Exception as err:  # the upstream failure is what we record
        return f"{type(err).__name__}: {err}"
    return None


def generator_batches_read(strategy=None) -> int:
    """Batches a 4-step fit reads from a Python generator, under ``strategy`` or none (the
    surplus under a strategy is read by the symbolic build and lost when the input starts over)."""
    with strategy.scope() if strategy else contextlib.nullcontext():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse")
    pulled = []

    def batches():
        while True:
            pulled.append(1)
            yield np.ones((8, 4), "float32"), np.ones((8, 2), "float32")

    model.fit(batches(), steps_per_epoch=4, epochs=1, verbose=0)
    return len(pulled)


def batchnorm_moving_gap() -> dict:
    """BatchNormalization under Mirrored, one step on a batch whose halves differ (zeros on one
    replica, fives on the other): how far apart the replicas' moving means end, and the model's
    evaluate against the same weights evaluated on one device."""
    # not collectives: the instances of this process's earlier Mirrored strategies would clash
    strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.BatchNormalization(), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    x = np.concatenate([np.zeros((8, 4)), np.full((8, 4), 5.0)]).astype("float32")
    y = np.arange(16, dtype="float32").reshape(16, 1)
    model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    local = [v.numpy() for v in strategy.experimental_local_results(model.layers[0].moving_mean._value)]
    one_device = keras.Sequential([keras.Input((4,)), keras.layers.BatchNormalization(), keras.layers.Dense(1)])
    one_device.compile(optimizer="sgd", loss="mse")
    one_device.set_weights(model.get_weights())
    return {
        "replica_gap": float(np.max(np.abs(local[0] - local[1]))),
        "evaluate_gap": abs(model.evaluate(x, y, batch_size=16, verbose=0) - one_device.evaluate(x, y, batch_size=16, verbose=0)),
    }


def dropout_masks_equal_across_replicas() -> bool:
    """Keras 3 Dropout under Mirrored: whether both replicas draw the same mask for their shares."""
    strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = keras.Sequential([keras.Input((16,)), keras.layers.Dropout(0.5)])

    @tf.function
    def step(batch):
        return strategy.run(lambda b: model(b, training=True), args=(batch,))

    data = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(np.ones((8, 16), "float32")).batch(8))
    first, second = (t.numpy() > 0 for t in strategy.experimental_local_results(step(next(iter(data)))))
    return bool((first == second).all())


def central_storage_dropout_error() -> str | None:
    """Keras 3 Dropout trained under CentralStorageStrategy on 2 replicas: the error, or None."""
    strategy = tf.distribute.experimental.CentralStorageStrategy(compute_devices=DEVICES, parameter_device="/cpu:0")
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dropout(0.5), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    try:
        model.fit(np.ones((32, 4), "float32"), np.ones((32, 1), "float32"), batch_size=16, epochs=1, verbose=0)
    except Exception as err:  # the upstream bug
        return f"{type(err).__name__}: {str(err)[:300]}"
    return None


def main() -> None:
    results = {
        "mirrored_uneven_first_batch_error": mirrored_uneven_validation_error(),
        "keras_version": keras.__version__,
        "central_storage_mean_unpatched": central_storage_mean(),
        "mirrored_sum_counter_unpatched": mirrored_sum_counter(),
        "mirrored_steps_per_execution_error": mirrored_fit_error(steps_per_execution=4),
        "mirrored_jit_compile_error": mirrored_fit_error(jit_compile=True),
        "generator_batches_read_plain": generator_batches_read(),
        "generator_batches_read_mirrored": generator_batches_read(tf.distribute.MirroredStrategy(DEVICES)),
    }
    results["batchnorm_unpatched"] = batchnorm_moving_gap()
    results["dropout_masks_equal_across_replicas"] = dropout_masks_equal_across_replicas()
    results["central_storage_dropout_unpatched"] = central_storage_dropout_error()
    from autodist.run.keras_patches import patch_aggregating_variable_updates, patch_batchnorm_moving_statistics, patch_seed_state_aggregation

    patch_aggregating_variable_updates()
    patch_batchnorm_moving_statistics()
    patch_seed_state_aggregation()
    results["central_storage_dropout_patched"] = central_storage_dropout_error()
    results["batchnorm_patched"] = batchnorm_moving_gap()
    results["central_storage_mean_patched"] = central_storage_mean()
    results["mirrored_sum_counter_patched"] = mirrored_sum_counter()
    print("RESULT " + json.dumps(results))


if __name__ == "__main__":
    main()
