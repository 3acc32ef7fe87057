"""Plain Keras 3 reproductions of the upstream bugs autodist works around (no autodist here,
except where a case applies autodist's patches to show that they fix the bug).

Every case runs on every Keras release of the support matrix: each records its value, or the
error it raised, and ``tests/test_keras_compat.py`` compares them with the releases the table of
:mod:`autodist.planning.keras_compat` says have each bug. The patched cases run after the
workarounds this release needs are applied (``patched_with``).

Run with 2 logical CPUs in a fresh process; prints ``RESULT <json>``.
"""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from reference import sample_counter  # noqa: E402

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


def generator_steps_trained(strategy=None) -> dict:
    """Steps a 4-step fit trains from a Python generator of exactly 4 batches, under ``strategy``
    or none: one device trains all 4 (Keras restores the batches it peeks at); under a strategy the
    symbolic build reads batches of its own, which are lost, and the fit runs out of data. Counted
    in trained steps, not in batches pulled, which tf.data's prefetching varies by load (issue 44)."""
    with strategy.scope() if strategy else contextlib.nullcontext():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse")
    trained = []

    def batches():
        for _ in range(4):
            yield np.ones((8, 4), "float32"), np.ones((8, 2), "float32")

    counter = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: trained.append(batch))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(batches(), steps_per_epoch=4, epochs=1, verbose=0, callbacks=[counter])
    return {"trained": len(trained), "ran_out": any("ran out of data" in str(w.message) for w in caught)}


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


def dropout_masks_equal_across_replicas(adopted: bool = False) -> dict:
    """Keras 3 Dropout under Mirrored: the share of mask entries both replicas draw alike for
    their shares (1.0: the same mask; about 0.5: independent), and the masks drawn. ``adopted``:
    the strategy is one autodist.fit trains under (replica_random_streams acts there only)."""
    strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    if adopted:
        from autodist.tensorflow.keras_patches import trains_under

        trains_under(strategy)
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = keras.Sequential([keras.Input((16,)), keras.layers.Dropout(0.5)])

    @tf.function
    def step(batch):
        return strategy.run(lambda b: model(b, training=True), args=(batch,))

    data = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(np.ones((8, 16), "float32")).batch(8))
    first, second = (t.numpy() > 0 for t in strategy.experimental_local_results(step(next(iter(data)))))
    return {"agreement": float((first == second).mean()), "masks": [first.astype(int).tolist(), second.astype(int).tolist()]}


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
        return said(err)
    return None


def central_storage_mixed_float16_error() -> str | None:
    """A mixed_float16 model trained under CentralStorageStrategy on 2 replicas: the error, or None."""
    strategy = tf.distribute.experimental.CentralStorageStrategy(compute_devices=DEVICES, parameter_device="/cpu:0")
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        with strategy.scope():
            model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
            model.compile(optimizer="sgd", loss="mse")
    finally:
        keras.mixed_precision.set_global_policy("float32")
    try:
        model.fit(np.ones((32, 4), "float32"), np.ones((32, 1), "float32"), batch_size=16, epochs=1, verbose=0)
    except Exception as err:  # the upstream bug
        return said(err)
    return None


def said(err: Exception) -> str:
    """An error's type and message (its start and its end: TensorFlow puts the cause last)."""
    text = str(err)
    return f"{type(err).__name__}: {text if len(text) <= 1200 else text[:400] + ' ... ' + text[-700:]}"


def transient_names_after_fit(strategy=None) -> dict:
    """How far one fit of a built model moves Keras's counts of the names a symbolic call makes and
    drops (``keras_tensor_N``, its scratch graphs): one device's first step makes none; Keras's
    symbolic build under a strategy makes some, and a script reads them (the TensorFlow image
    classification tutorial calls its TFLite signature with ``keras_tensor_15=``)."""
    import collections

    from keras.src.backend.common import global_state

    with strategy.scope() if strategy else contextlib.nullcontext():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    counts = global_state.get_global_attribute(
        "object_name_uids", default=collections.defaultdict(int), set_to_default=True
    )
    before = {name: counts.get(name, 0) for name in ("keras_tensor", "scratch_graph")}
    model.fit(np.ones((8, 4), "float32"), np.ones((8, 2), "float32"), batch_size=4, verbose=0)
    return {name: counts.get(name, 0) - count for name, count in before.items()}


def case(function, *args, **kwargs):
    try:
        return function(*args, **kwargs)
    except Exception as err:
        return {"raised": said(err)}


def short_epoch_steps_per_execution() -> dict:
    """One device, steps_per_execution=8, epochs of 5 steps: the epoch losses History keeps (2)."""
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=8)
    history = model.fit(np.ones((40, 4), "float32"), np.ones((40, 2), "float32"), batch_size=8, epochs=2, verbose=0)
    return {"losses": len(history.history.get("loss", []))}


def mirrored_sample_count() -> float:
    """A metric that counts the samples it sees (990), under Mirrored model.fit."""
    class Count(keras.metrics.Sum):
        def update_state(self, y_true, y_pred, sample_weight=None):
            return super().update_state(keras.ops.ones_like(y_true[:, 0]))

    strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse", metrics=[Count(name="count")])
    history = model.fit(np.ones((990, 4), "float32"), np.ones((990, 2), "float32"), batch_size=66, verbose=0)
    return float(history.history["count"][-1])


def metric_result_in_history(patched: bool = False) -> dict:
    """Under Mirrored model.fit, History's values of a metric whose result() is its own variable:
    their types (one device gives floats), and the count each holds (990 samples an epoch). Run in
    a process of its own (``patched``: its process applied the workarounds first), where no earlier
    case's failed collective aborts its all-reduce."""
    strategy = tf.distribute.MirroredStrategy(DEVICES)
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse", metrics=[sample_counter()])
    history = model.fit(np.ones((990, 4), "float32"), np.ones((990, 1), "float32"), batch_size=66, epochs=2, verbose=0)
    seen = history.history["seen"]
    with strategy.scope():
        counts = [float(np.asarray(keras.ops.convert_to_numpy(value))) for value in seen]
    return {"types": sorted({type(value).__name__ for value in seen}), "counts": counts}


def mirrored_gradient_gaps() -> dict:
    """A small MLP, SGD, 2 epochs under Mirrored and on one device from the same weights: how far
    the replicas end apart, and how far the first replica ends from one device."""
    strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 4)).astype("float32"), rng.normal(size=(64, 1)).astype("float32")

    def build():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        return model

    with strategy.scope():
        model = build()
    one = build()
    one.set_weights(model.get_weights())
    model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    one.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    replicas = max(
        float(np.max(np.abs(local[0] - local[1])))
        for local in ([t.numpy() for t in strategy.experimental_local_results(v.value)] for v in model.trainable_variables)
    )
    return {"replicas": replicas, "one_device": max(float(np.max(np.abs(a - b))) for a, b in zip(model.get_weights(), one.get_weights(), strict=True))}


class OwnStep(keras.Model):
    """keras.io's VAE pattern without its randomness: a train_step of the model's own that calls
    two sub-models, takes the gradient of a loss it computes itself plus a ``keras.losses`` one,
    and records both. ``NoCall`` is the same model without ``call()``, as the VAE has none."""

    def __init__(self):
        super().__init__()
        self.encoder = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        self.decoder = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4)])
        self.own_loss, self.keras_loss = keras.metrics.Mean(name="own_loss"), keras.metrics.Mean(name="keras_loss")
        self.mse = keras.losses.MeanSquaredError()

    @property
    def metrics(self):
        return [self.own_loss, self.keras_loss]

    def call(self, x):
        return self.decoder(self.encoder(x))

    def train_step(self, x):
        with tf.GradientTape() as tape:
            rebuilt = keras.ops.cast(self.decoder(self.encoder(x)), "float32")  # float16 under mixed_float16
            own = keras.ops.mean(keras.ops.square(x - rebuilt))
            loss = self.mse(x, rebuilt)
            total = self.optimizer.scale_loss(own + loss)  # as Keras's guide: the loss scale, under mixed_float16
        gradients = tape.gradient(total, self.trainable_weights)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_weights))
        self.own_loss.update_state(own)
        self.keras_loss.update_state(loss)
        return {"own_loss": self.own_loss.result(), "keras_loss": self.keras_loss.result()}


class NoCall(OwnStep):
    call = keras.Model.call


class OwnSumStep(OwnStep):
    """keras.io's masked language model's step: the gradient of a loss with ``reduction=None``
    (one number per sample: the gradient of their sum), or of ``ops.sum`` of them (``"scalar sum"``);
    one device's gradient is every sample's summed, not their mean. ``"sum of a mean"``: ``ops.sum``
    of their mean, a number (as Keras sums an ``add_loss``): a mean still."""

    def __init__(self, how: str = "sum"):
        super().__init__()
        self.how = how
        self.per_sample = keras.losses.MeanSquaredError(reduction=None)

    def train_step(self, x):
        with tf.GradientTape() as tape:
            losses = self.per_sample(x, self(x))
            summed = {"sum": losses, "scalar sum": keras.ops.sum(losses)}
            loss = summed.get(self.how, keras.ops.sum(keras.ops.mean(losses)))
        gradients = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_weights))
        self.own_loss.update_state(keras.ops.mean(losses))
        return {"own_loss": self.own_loss.result()}


def training_in_step() -> dict:
    """keras.io's Perceiver pattern: a model whose call() takes no training, calling an augmentation
    Sequential defined outside it and a Sequential made in its build() (both built lazily, in the
    model's first call), trained on one device and under Mirrored. What ``training`` its layers get
    inside the train step (in a replica's context), per layer: RandomFlip sets it True where the
    call passes none."""

    def run(strategy) -> list[str]:
        seen: set[str] = set()

        class Spy(keras.layers.Layer):
            def call(self, x, training=None):
                if not tf.distribute.in_cross_replica_context():
                    seen.add(f"{self.name.split('_')[0]}={training}")
                return x

        augment = keras.Sequential([keras.layers.RandomFlip("horizontal"), Spy(name="after")])

        class Perceiver(keras.Model):
            def build(self, input_shape):
                self.head = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(2), Spy(name="head")])
                super().build(input_shape)

            def call(self, inputs):
                return self.head(augment(inputs))

        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            model = Perceiver()
            model.compile(optimizer="sgd", loss="mse")
        model.fit(np.ones((8, 4, 4, 1), "float32"), np.ones((8, 2), "float32"), batch_size=4, epochs=1, verbose=0)
        return sorted(seen)

    mirrored = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    return {"one_device": run(None), "mirrored": run(mirrored)}


def own_step_against_one_device(kind, patched: bool = False, policy: str = "float32") -> dict:
    """``kind`` (OwnStep or NoCall) trained 2 epochs under Mirrored and on one device from the
    same weights: the largest weight gap, and each recorded loss's ratio to one device's. With
    ``patched``, the model's steps run as autodist.fit runs them (own_step_replica_mean). With
    ``policy="mixed_float16"``, Keras wraps the optimizer in a LossScaleOptimizer."""
    strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    x = np.random.default_rng(1).normal(size=(64, 4)).astype("float32")
    keras.utils.set_random_seed(0)
    keras.mixed_precision.set_global_policy(policy)
    try:
        with strategy.scope():
            model = kind()
            model.compile(optimizer=keras.optimizers.SGD(0.05))
        one = kind()
        one.compile(optimizer=keras.optimizers.SGD(0.05))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return _against_one_device(model, one, x, patched, ("own_loss", "keras_loss"))


def _against_one_device(model, one, x, patched: bool, losses: tuple[str, ...]) -> dict:
    """``model`` (built in a strategy's scope) and ``one`` (on one device) trained 2 epochs from the
    same weights (``patched``: ``model``'s steps run as autodist.fit runs them): the largest weight
    gap, and each named loss's ratio to one device's."""
    one.set_weights(model.get_weights())
    if patched:
        from autodist.upstream.keras_own_steps import own_steps

        own_steps(model)
    mirrored = model.fit(x, batch_size=16, epochs=2, shuffle=False, verbose=0).history
    single = one.fit(x, batch_size=16, epochs=2, shuffle=False, verbose=0).history
    return {
        "weights_gap": max(float(np.max(np.abs(a - b))) for a, b in zip(model.get_weights(), one.get_weights(), strict=True)),
        **{f"{key}_ratio": mirrored[key][-1] / single[key][-1] for key in losses},
    }


def uneven_shares_against_one_device(patched: bool = False, own: bool | str = False, regularized: bool = False) -> dict:
    """99 samples in batches of 16 (each epoch's last batch, 3 samples, splits 2/1) trained 2
    epochs with SGD under Mirrored and on one device from the same weights: the largest weight
    gap and the last loss's ratio to one device's. With ``patched``, under a strategy autodist
    trains under, each replica's gradients weighted by its share (``uneven_shares_weighted``);
    with ``own``, a model whose train_step is its own (run as autodist.fit runs it): its mean loss's
    gradient (``True``), or its per-sample losses' (``"sum"``, :class:`OwnSumStep`), their
    ``ops.sum``'s (``"scalar sum"``), or the ``ops.sum`` of their mean (``"sum of a mean"``). With ``regularized``, Keras's train_step sums the loss and an L2
    penalty (``ops.sum`` of the two numbers: still each share's mean, weighted)."""
    from autodist.tensorflow.keras_patches import autodist_trains_under, trains_under
    from autodist.upstream.keras_own_steps import own_steps, share_weights

    strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    rng = np.random.default_rng(4)
    x = rng.normal(size=(99, 4)).astype("float32")
    y = x if own else rng.normal(size=(99, 1)).astype("float32")
    keras.utils.set_random_seed(0)

    def build():
        if own:
            model = OwnStep() if own is True else OwnSumStep(own)
            model.compile(optimizer=keras.optimizers.SGD(0.005 if own in ("sum", "scalar sum") else 0.05))
            return model
        penalty = keras.regularizers.L2(0.01) if regularized else None
        hidden = keras.layers.Dense(3, activation="relu", kernel_regularizer=penalty)
        model = keras.Sequential([keras.Input((4,)), hidden, keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
        return model

    with strategy.scope():
        model = build()
    one = build()
    if own:
        model.build((None, 4))
        one.build((None, 4))
    one.set_weights(model.get_weights())
    if patched:
        trains_under(strategy)
        if own:
            own_steps(model)
        assert share_weights(model, autodist_trains_under), "uneven_shares_weighted is not applied"
    data = (x,) if own else (x, y)
    mirrored = model.fit(*data, batch_size=16, epochs=2, shuffle=False, verbose=0).history
    single = one.fit(*data, batch_size=16, epochs=2, shuffle=False, verbose=0).history
    key = "own_loss" if own else "loss"
    pairs = zip(model.get_weights(), one.get_weights(), strict=True)
    return {
        "weights_gap": max(float(np.max(np.abs(a - b))) for a, b in pairs),
        "loss_ratio": mirrored[key][-1] / single[key][-1],
    }


class PatchEncoder(keras.layers.Layer):
    """keras.io's Vision Transformer ``PatchEncoder``: a position embedding looked up in ``call``
    with ``ops.arange`` (the same rows every step, whatever the batch), added to the patches."""

    def __init__(self, patches: int, width: int, **kwargs):
        super().__init__(**kwargs)
        self.patches = patches
        self.position_embedding = keras.layers.Embedding(patches, width)

    def call(self, encoded):
        positions = keras.ops.expand_dims(keras.ops.arange(0, self.patches, 1), axis=0)
        return encoded + self.position_embedding(positions)


class TiledPositions(PatchEncoder):
    """Positions looked up once per sample (``arange`` tiled over the batch): one slice per sample
    on one device as on the replicas, though every replica's rows are alike."""

    def call(self, encoded):
        positions = keras.ops.expand_dims(keras.ops.arange(0, self.patches, 1), axis=0)
        return encoded + self.position_embedding(keras.ops.tile(positions, [keras.ops.shape(encoded)[0], 1]))


def position_embedding_against_one_device(patched: bool = False) -> dict:
    """A model with a :class:`PatchEncoder`, :class:`TiledPositions` and an embedding of each
    sample's own tokens, trained 3 epochs with Adam under Mirrored and on one device from the same
    weights: the largest gap of the position embedding, of the tiled one, of the token embedding,
    and of History. With ``patched``, under a strategy autodist trains under
    (``replica_slices_summed``)."""
    from autodist.tensorflow.keras_patches import trains_under

    strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    rng = np.random.default_rng(5)
    patches = rng.normal(size=(64, 6, 3)).astype("float32")
    tokens = rng.integers(0, 20, size=(64, 6)).astype("int32")
    y = rng.normal(size=(64, 1)).astype("float32")
    keras.utils.set_random_seed(1)

    def build():
        inputs = keras.Input((6, 3)), keras.Input((6,), dtype="int32")
        encoded = PatchEncoder(6, 4, name="patch_encoder")(keras.layers.Dense(4)(inputs[0]))
        encoded = TiledPositions(6, 4, name="tiled")(encoded)
        encoded = encoded + keras.layers.Embedding(20, 4, name="tokens")(inputs[1])
        model = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.Flatten()(encoded)))
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
        return model

    with strategy.scope():
        model = build()
    one = build()
    one.set_weights(model.get_weights())
    if patched:
        trains_under(strategy)
    mirrored = model.fit([patches, tokens], y, batch_size=16, epochs=3, shuffle=False, verbose=0).history
    single = one.fit([patches, tokens], y, batch_size=16, epochs=3, shuffle=False, verbose=0).history

    def gap(layer: str) -> float:
        pairs = zip(model.get_layer(layer).get_weights(), one.get_layer(layer).get_weights(), strict=True)
        return max(float(np.max(np.abs(a - b))) for a, b in pairs)

    return {
        "position_gap": gap("patch_encoder"),
        "tiled_gap": gap("tiled"),
        "token_gap": gap("tokens"),
        "history_gap": float(np.max(np.abs(np.subtract(mirrored["loss"], single["loss"])))),
    }


class UnseededSampling(keras.layers.Layer):
    """The Keras guide's VAE ``Sampling`` layer: ``keras.random.normal`` without a seed (Keras's
    global SeedGenerator, made at its first use)."""

    def call(self, inputs):
        return inputs + keras.random.normal(keras.ops.shape(inputs))


def unseeded_draws_fit(adopted: bool = False) -> dict:
    """A model with that layer trained one epoch under Mirrored (``adopted``: a strategy autodist
    trains under): its loss and how alike the two replicas' noise was (1.0: the same draws)."""
    strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    if adopted:
        from autodist.tensorflow.keras_patches import trains_under

        trains_under(strategy)
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4), UnseededSampling(), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    history = model.fit(np.ones((32, 4), "float32"), np.ones((32, 1), "float32"), batch_size=16, epochs=1, verbose=0)
    noise = model.layers[1]

    @tf.function
    def draws():
        return strategy.run(lambda: noise(tf.zeros((4, 4))))

    first, second = (t.numpy() for t in strategy.experimental_local_results(draws()))
    return {"loss": history.history["loss"][-1], "same_draws": bool(np.allclose(first, second))}


def unseeded_dataset_draws(strategy_kind: str = "mirrored") -> dict:
    """keras.io's CutMix pattern: a tf.data map drawing ``keras.random.uniform`` without a seed,
    the pipeline made in the scope of Mirrored (``adopted``: a strategy autodist trains under) or of
    none (``one_device``), and a model trained one epoch on it: its loss."""
    from keras.src.backend.common import global_state
    from keras.src.random import seed_generator

    keras.utils.set_random_seed(0)
    # Keras's global SeedGenerator made again below, as in a fresh process (3.3-3.8's set_random_seed keeps it)
    global_state.set_global_attribute(getattr(seed_generator, "GLOBAL_SEED_GENERATOR", "global_seed_generator"), None)
    strategy = tf.distribute.get_strategy()
    if strategy_kind != "one_device":
        strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    if strategy_kind == "adopted":
        from autodist.tensorflow.keras_patches import trains_under

        trains_under(strategy)
    x, y = np.linspace(0, 1, 128, dtype="float32").reshape(32, 4), np.linspace(1, 0, 32, dtype="float32").reshape(32, 1)
    with strategy.scope():
        jittered = tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a + keras.random.uniform((4,)), b))
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, kernel_initializer="ones")])
        model.compile(optimizer="sgd", loss="mse")
        history = model.fit(jittered.batch(16), epochs=1, verbose=0)
    return {"loss": history.history["loss"][-1]}


class LogisticEndpoint(keras.layers.Layer):
    """keras.io's "Endpoint layer pattern": a layer that computes a ``keras.losses`` loss in its
    ``call`` and passes it to ``add_loss``."""

    def __init__(self):
        super().__init__()
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    def call(self, logits, targets):
        self.add_loss(self.loss_fn(targets, logits))
        return keras.ops.sigmoid(logits)


def _endpoint_model():
    inputs, targets = keras.Input((4,), name="inputs"), keras.Input((1,), name="targets")
    model = keras.Model([inputs, targets], LogisticEndpoint()(keras.layers.Dense(1)(inputs), targets))
    model.compile(optimizer=keras.optimizers.SGD(0.5))
    return model


def endpoint_against_one_device(adopted: bool = False) -> dict:
    """The endpoint-layer model trained 2 epochs with SGD under Mirrored and on one device from
    the same weights: the largest weight gap and the last loss's ratio to one device's. With
    ``adopted``, the strategy is one autodist trains under (autodist.fit adopted it)."""
    strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    if adopted:
        from autodist.tensorflow.keras_patches import trains_under

        trains_under(strategy)
    rng = np.random.default_rng(3)
    data = {
        "inputs": rng.normal(size=(64, 4)).astype("float32"),
        "targets": rng.integers(0, 2, (64, 1)).astype("float32"),
    }
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = _endpoint_model()
    one = _endpoint_model()
    one.set_weights(model.get_weights())
    mirrored = model.fit(data, batch_size=16, epochs=2, shuffle=False, verbose=0).history
    single = one.fit(data, batch_size=16, epochs=2, shuffle=False, verbose=0).history
    pairs = zip(model.get_weights(), one.get_weights(), strict=True)
    return {
        "weights_gap": max(float(np.max(np.abs(a - b))) for a, b in pairs),
        "loss_ratio": mirrored["loss"][-1] / single["loss"][-1],
    }


class TwoOptimizers(OwnStep):
    """The 'customizing fit' guide's GAN pattern without its randomness: the step updates its
    halves with optimizers of its own (Adam, whose slots its first ``apply`` builds), not the
    compiled one."""

    def compile(self, **kwargs):
        super().compile(**kwargs)
        self.encoder_optimizer, self.decoder_optimizer = keras.optimizers.Adam(0.01), keras.optimizers.Adam(0.01)

    def train_step(self, x):
        with tf.GradientTape(persistent=True) as tape:
            own = keras.ops.mean(keras.ops.square(x - self.decoder(self.encoder(x))))
        for part, optimizer in ((self.encoder, self.encoder_optimizer), (self.decoder, self.decoder_optimizer)):
            optimizer.apply(tape.gradient(own, part.trainable_weights), part.trainable_weights)
        self.own_loss.update_state(own)
        return {"own_loss": self.own_loss.result()}


def two_optimizers_against_one_device(patched: bool = False) -> dict:
    """:class:`TwoOptimizers` 2 epochs under Mirrored and on one device from the same weights:
    the largest weight gap and the loss's ratio (or the error). With ``patched``, its steps run as
    autodist.fit runs them. TensorFlow's default all-reduce, as the guide's ``MirroredStrategy()``
    (through one device, it trains)."""
    strategy = tf.distribute.MirroredStrategy(DEVICES)
    x = np.random.default_rng(1).normal(size=(64, 4)).astype("float32")
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = TwoOptimizers()
        model.compile(optimizer="sgd")
    one = TwoOptimizers()
    one.compile(optimizer="sgd")
    return _against_one_device(model, one, x, patched, ("own_loss",))


def residual_cnn():
    """The residual block of keras.io's "image classification from scratch", small."""
    inputs = keras.Input((16, 16, 3))
    x = keras.layers.Conv2D(8, 3, strides=2, padding="same")(inputs)
    x = keras.layers.BatchNormalization()(x)
    previous = x = keras.layers.Activation("relu")(x)
    x = keras.layers.SeparableConv2D(16, 3, padding="same")(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.MaxPooling2D(3, strides=2, padding="same")(x)
    x = keras.layers.add([x, keras.layers.Conv2D(16, 1, strides=2, padding="same")(previous)])
    x = keras.layers.GlobalAveragePooling2D()(keras.layers.SeparableConv2D(32, 3, padding="same")(x))
    model = keras.Model(inputs, keras.layers.Dense(1)(x))
    model.compile(optimizer="sgd", loss=keras.losses.BinaryCrossentropy(from_logits=True))
    return model


#: The words the probe layer below fails with on a replica's empty share.
EMPTY_SHARE = "a replica was fed an empty share"


class ShareProbe(keras.layers.Layer):
    """Passes its input through, and fails with :data:`EMPTY_SHARE` on a share of no samples."""

    def call(self, x):
        with tf.control_dependencies([tf.debugging.assert_positive(tf.shape(x)[0], message=EMPTY_SHARE)]):
            return tf.identity(x)

    def compute_output_shape(self, input_shape):
        return input_shape


def empty_shares() -> dict:
    """Whether Keras hands a replica an empty share: ``predict`` on 1 sample and ``evaluate`` on 3
    in batches of 2, under Mirrored over 2 replicas, through a layer that fails on one. This is the
    bug itself, whatever a model's kernels then make of the empty share: the residual model below
    crashes, gives NaN, or gives one device's numbers, by machine and run (issue 44)."""
    strategy = tf.distribute.MirroredStrategy(DEVICES)
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), ShareProbe(), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((3, 4), "float32"), np.ones((3, 1), "float32")
    found = {}
    for name, run in {
        "predict": lambda: model.predict(x[:1], verbose=0),
        "evaluate": lambda: model.evaluate(x, y, batch_size=2, verbose=0),
    }.items():
        try:
            run()
            found[name] = "every replica fed"
        except Exception as err:  # the probe's failure is what we record (whole: said() cuts long texts)
            found[name] = EMPTY_SHARE if EMPTY_SHARE in str(err) else said(err)
    return found


def structured_model():
    """keras.io's FeatureSpace inference model in small: a dict of a string, an integer and a
    float feature, looked up and concatenated."""
    inputs = {"thal": keras.Input((1,), dtype="string"), "sex": keras.Input((1,), dtype="int64"), "age": keras.Input((1,))}
    thal = keras.layers.StringLookup(vocabulary=["fixed", "normal", "reversible"], output_mode="one_hot")(inputs["thal"])
    sex = keras.layers.IntegerLookup(vocabulary=[0, 1], output_mode="one_hot")(inputs["sex"])
    features = keras.layers.Concatenate()([thal, sex, inputs["age"]])
    model = keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(features))
    model.compile(optimizer="sgd", loss="binary_crossentropy")
    return model


def structured_against_one_device() -> dict:
    """predict on one row given as tensors (the end-to-end inference of keras.io's "structured
    data classification with FeatureSpace": ``{name: tf.convert_to_tensor([value])}``) and evaluate
    on 3 rows in batches of 2, under Mirrored over 2 replicas, against one device."""
    strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    rows = {"thal": tf.constant([["fixed"], ["normal"], ["reversible"]]), "sex": tf.constant([[1], [0], [1]], tf.int64),
            "age": np.array([[0.6], [0.4], [0.5]], "float32")}
    one_row = {name: value[:1] for name, value in rows.items()}
    labels = np.array([[0.0], [1.0], [1.0]], "float32")
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = structured_model()
    one = structured_model()
    one.set_weights(model.get_weights())
    return {
        "predict_gap": float(np.max(np.abs(model.predict(one_row, verbose=0) - one.predict(one_row, verbose=0)))),
        "evaluate_gap": abs(model.evaluate(rows, labels, batch_size=2, verbose=0) - one.evaluate(rows, labels, batch_size=2, verbose=0)),
    }


def one_image_against_one_device() -> dict:
    """predict on 1 image and evaluate on 3 in batches of 2, under Mirrored over 2 replicas (one
    replica gets an empty share), against one device with the same weights."""
    strategy = tf.distribute.MirroredStrategy(DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice())
    images = np.random.default_rng(2).random((3, 16, 16, 3)).astype("float32")
    labels = np.array([0.0, 1.0, 1.0], "float32")
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = residual_cnn()
    one = residual_cnn()
    one.set_weights(model.get_weights())
    found = {}
    for name, run in {
        "predict_gap": lambda m: m.predict(images[:1], verbose=0),
        "evaluate_gap": lambda m: m.evaluate(images, labels, batch_size=2, verbose=0),
    }.items():
        try:
            found[name] = float(np.max(np.abs(np.asarray(run(model)) - np.asarray(run(one)))))
        except Exception as err:  # the upstream failure is what we record
            found[name] = said(err)
    return found


def aligned(values: np.ndarray) -> np.ndarray:
    """A copy of ``values`` whose memory starts on a 64-byte boundary (where TensorFlow's
    re-batching hands a replica a view of it rather than a copy)."""
    raw = np.empty(values.nbytes + 64, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64
    out = raw[start:start + values.nbytes].view(values.dtype).reshape(values.shape)
    out[:] = values
    return out


def py_dataset_targets(patched: bool = False) -> dict:
    """A PyDataset of 32 batches of 16 that returns slices of arrays it keeps, its targets on a
    64-byte boundary, 3 epochs under Mirrored over 2 replicas and on one device: whether fit
    wrote into its targets, and the largest History gap to one device. (``patched``: the process
    applied the workarounds first; run in a fresh process either way, as a collective aborted by an
    earlier case aborts this one's.)"""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 8)).astype("float32")
    targets = aligned((x @ rng.normal(size=(8, 1))).astype("float32"))
    kept = targets.copy()

    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return 32

        def __getitem__(self, i):
            return x[i * 16:(i + 1) * 16], targets[i * 16:(i + 1) * 16]

    def history(strategy):
        keras.utils.set_random_seed(1)
        with strategy.scope():
            model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
            model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
        return model.fit(Batches(), epochs=3, shuffle=False, verbose=0).history["loss"]

    replicated = history(tf.distribute.MirroredStrategy(DEVICES))
    written = int((targets != kept).sum())
    targets[:] = kept
    one = history(tf.distribute.get_strategy())
    return {"targets_written": written, "history_gap": float(np.max(np.abs(np.subtract(replicated, one)))), "history": replicated}


def in_fresh_process(name: str, patched: bool = False, without: str | None = None) -> Any:
    """``case(<name>)`` in a process of its own, started now (``patched``: after this release's
    workarounds are applied, and run as autodist.fit runs it; ``without``: every one of them but
    that one, so what it alone changes is measured), where TensorFlow's default all-reduce is
    fresh: a case that fails inside a collective ("restart your program to reset") aborts every
    collective after it in its process. :func:`fresh_result` collects it; the processes run
    beside this one's cases."""
    import subprocess
    import sys
    import tempfile

    args = ["--case", name, *(["--patched"] if patched or without else []), *(["--without", without] if without else [])]
    out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=out, stderr=err, text=True)
    proc.outputs = (out, err)  # type: ignore[attr-defined]
    return proc


def fresh_result(proc: Any) -> dict:
    """What a case started by :func:`in_fresh_process` returned, or why it gave nothing."""
    import subprocess

    try:
        proc.wait(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    texts = []
    for output in proc.outputs:
        output.seek(0)
        texts.append(output.read())
    lines = [line for line in texts[0].splitlines() if line.startswith("CASE ")]
    return json.loads(lines[-1][5:]) if lines else {"raised": f"no result (exit {proc.returncode}): {texts[1][-2000:]}"}


def main() -> None:
    import sys

    if sys.argv[1:2] == ["--case"]:
        patched = "--patched" in sys.argv
        left_out = sys.argv[sys.argv.index("--without") + 1] if "--without" in sys.argv else None
        if patched:
            from autodist.planning.keras_compat import PATCHES, WORKAROUNDS
            from autodist.tensorflow.keras_patches import apply_workarounds

            apply_workarounds([name for name in PATCHES if name != left_out and WORKAROUNDS[name].is_active(keras.__version__, {})])
        print("CASE " + json.dumps(case(globals()[sys.argv[2]], **({"patched": True} if patched else {}))))
        return
    fresh = {  # in processes of their own, beside this one's cases
        "two_optimizers_unpatched": in_fresh_process("two_optimizers_against_one_device"),
        "py_dataset_targets_without_copies": in_fresh_process("py_dataset_targets", without="batches_copied"),
        "two_optimizers_patched": in_fresh_process("two_optimizers_against_one_device", patched=True),
        "py_dataset_targets_patched": in_fresh_process("py_dataset_targets", patched=True),
        "metric_result_unpatched": in_fresh_process("metric_result_in_history"),
        "metric_result_patched": in_fresh_process("metric_result_in_history", patched=True),
    }
    results = {
        "mirrored_uneven_first_batch_error": case(mirrored_uneven_validation_error),
        "keras_version": keras.__version__,
        "tensorflow_version": tf.__version__,
        "central_storage_mean_unpatched": case(central_storage_mean),
        "mirrored_sum_counter_unpatched": case(mirrored_sum_counter),
        "mirrored_steps_per_execution_error": case(mirrored_fit_error, steps_per_execution=4),
        "mirrored_jit_compile_error": case(mirrored_fit_error, jit_compile=True),
        "generator_steps_plain": case(generator_steps_trained),
        "generator_steps_mirrored": case(generator_steps_trained, tf.distribute.MirroredStrategy(DEVICES)),
        "short_epoch_steps_per_execution": case(short_epoch_steps_per_execution),
        "mirrored_sample_count_unpatched": case(mirrored_sample_count),
        "batchnorm_unpatched": case(batchnorm_moving_gap),
        "dropout_masks_equal_across_replicas": case(dropout_masks_equal_across_replicas),
        "central_storage_dropout_unpatched": case(central_storage_dropout_error),
        "gradient_gaps_unpatched": case(mirrored_gradient_gaps),
        "no_call_unpatched": case(own_step_against_one_device, NoCall),
        "own_step_unpatched": case(own_step_against_one_device, OwnStep),
        "endpoint_unpatched": case(endpoint_against_one_device),
        "uneven_shares_unpatched": case(uneven_shares_against_one_device),
        "position_embedding_unpatched": case(position_embedding_against_one_device),
        "unseeded_draws_unpatched": case(unseeded_draws_fit),
        "unseeded_dataset_draws_one_device": case(unseeded_dataset_draws, "one_device"),
        "unseeded_dataset_draws_unpatched": case(unseeded_dataset_draws),
        "empty_share_words": EMPTY_SHARE,
        "empty_shares_unpatched": case(empty_shares),
        "one_image_unpatched": case(one_image_against_one_device),
        "central_storage_mixed_float16_error": case(central_storage_mixed_float16_error),
        "training_in_step_unpatched": case(training_in_step),
        "transient_names_one_device": case(transient_names_after_fit),
        "transient_names_unpatched": case(transient_names_after_fit, tf.distribute.MirroredStrategy(DEVICES)),
    }
    from autodist.planning.keras_compat import PATCHES, WORKAROUNDS
    from autodist.tensorflow.keras_patches import apply_workarounds

    results["patched_with"] = apply_workarounds([name for name in PATCHES if WORKAROUNDS[name].is_active(keras.__version__, {})])
    results["central_storage_dropout_patched"] = case(central_storage_dropout_error)
    results["batchnorm_patched"] = case(batchnorm_moving_gap)
    results["central_storage_mean_patched"] = case(central_storage_mean)
    results["mirrored_sum_counter_patched"] = case(mirrored_sum_counter)
    results["mirrored_sample_count_patched"] = case(mirrored_sample_count)
    results["dropout_masks_plain_strategy_patched"] = case(dropout_masks_equal_across_replicas)
    results["dropout_masks_patched"] = case(dropout_masks_equal_across_replicas, adopted=True)
    results["dropout_masks_patched_again"] = case(dropout_masks_equal_across_replicas, adopted=True)
    results["gradient_gaps_patched"] = case(mirrored_gradient_gaps)
    results["no_call_patched"] = case(own_step_against_one_device, NoCall, patched=True)
    results["transient_names_patched"] = case(transient_names_after_fit, tf.distribute.MirroredStrategy(DEVICES))
    results["own_step_patched"] = case(own_step_against_one_device, OwnStep, patched=True)
    results["own_step_mixed_patched"] = case(own_step_against_one_device, OwnStep, patched=True, policy="mixed_float16")
    results["endpoint_plain_strategy_patched"] = case(endpoint_against_one_device)
    results["endpoint_patched"] = case(endpoint_against_one_device, adopted=True)
    results["uneven_shares_patched"] = case(uneven_shares_against_one_device, patched=True)
    results["uneven_shares_own_step_patched"] = case(uneven_shares_against_one_device, patched=True, own=True)
    results["uneven_shares_regularized_patched"] = case(uneven_shares_against_one_device, patched=True, regularized=True)
    for summed in ("sum", "scalar sum", "sum of a mean"):
        results[f"uneven_shares_own_{summed.replace(' ', '_')}_patched"] = case(
            uneven_shares_against_one_device, patched=True, own=summed
        )
    results["position_embedding_plain_strategy_patched"] = case(position_embedding_against_one_device)
    results["position_embedding_patched"] = case(position_embedding_against_one_device, patched=True)
    results["unseeded_draws_plain_strategy_patched"] = case(unseeded_draws_fit)
    results["unseeded_draws_patched"] = case(unseeded_draws_fit, adopted=True)
    results["unseeded_dataset_draws_plain_strategy_patched"] = case(unseeded_dataset_draws)
    results["unseeded_dataset_draws_patched"] = case(unseeded_dataset_draws, "adopted")
    results["empty_shares_patched"] = case(empty_shares)
    results["one_image_patched"] = case(one_image_against_one_device)
    results["structured_patched"] = case(structured_against_one_device)
    results["training_in_step_patched"] = case(training_in_step)
    results.update({key: fresh_result(proc) for key, proc in fresh.items()})
    print("RESULT " + json.dumps(results))


if __name__ == "__main__":
    main()
