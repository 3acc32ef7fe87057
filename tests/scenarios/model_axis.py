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
input-kind harness never runs: its hook-counting callback keeps 1; these fits are short, so the
default-strategy run sets ``AUTODIST_STEPS_PER_EXECUTION=8``). Both arms start from the same
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

import contextlib
import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

with warnings.catch_warnings(record=True) as IMPORT_WARNINGS:  # autodist plans when Keras loads
    warnings.simplefilter("always")
    import autodist  # noqa: E402  (first: the strategy under test becomes current)
    import keras  # noqa: E402
    import tensorflow as tf  # noqa: E402
import numpy as np  # noqa: E402
from reference import guide_train_step, hand_built_strategy, plain, write_result  # noqa: E402

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


class Sampling(keras.layers.Layer):
    """keras.io's VAE sampling layer, with its noise a fixed function of ``z_mean`` (not of a
    SeedGenerator), so that the cell compares numbers: random draws are the cause the dropout
    and augmentation cells measure."""

    def call(self, inputs):
        z_mean, z_log_var = inputs
        return z_mean + keras.ops.exp(0.5 * z_log_var) * 0.1 * keras.ops.sin(z_mean)


class VAE(keras.Model):
    """keras.io's VAE: no ``call()``; its ``train_step`` calls the encoder and decoder itself and
    takes the gradient of a loss it computes (reconstruction plus KL), recording its parts."""

    def __init__(self):
        super().__init__()
        inputs = keras.Input((FEATURES,))
        hidden = keras.layers.Dense(8, activation="relu")(inputs)
        z_mean, z_log_var = keras.layers.Dense(2)(hidden), keras.layers.Dense(2)(hidden)
        self.encoder = keras.Model(inputs, [z_mean, z_log_var, Sampling()([z_mean, z_log_var])])
        latent = keras.Input((2,))
        self.decoder = keras.Model(latent, keras.layers.Dense(FEATURES)(keras.layers.Dense(8, activation="relu")(latent)))
        self.trackers = [keras.metrics.Mean(name=name) for name in ("loss", "reconstruction_loss", "kl_loss")]

    @property
    def metrics(self):
        return self.trackers

    def train_step(self, data):
        with tf.GradientTape() as tape:
            z_mean, z_log_var, z = self.encoder(data)
            reconstruction_loss = keras.ops.mean(keras.ops.sum(keras.ops.square(data - self.decoder(z)), axis=1))
            kl_loss = keras.ops.mean(keras.ops.sum(-0.5 * (1 + z_log_var - keras.ops.square(z_mean) - keras.ops.exp(z_log_var)), axis=1))
            total_loss = reconstruction_loss + kl_loss
        gradients = tape.gradient(total_loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_weights))
        for tracker, value in zip(self.trackers, (total_loss, reconstruction_loss, kl_loss)):
            tracker.update_state(value)
        return {tracker.name: tracker.result() for tracker in self.trackers}


def vae():
    model = VAE()
    model.compile(optimizer=keras.optimizers.SGD(0.02))
    return model


class GAN(keras.Model):
    """The GAN of Keras's "customizing fit" guide: its own ``compile`` signature, two optimizers,
    a ``keras.losses`` loss, no ``call()``. Its latent points are a fixed function of the real
    samples, for the reason ``Sampling`` gives."""

    def __init__(self):
        super().__init__()
        self.discriminator = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
        self.generator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(FEATURES)])
        self.d_loss_tracker, self.g_loss_tracker = keras.metrics.Mean(name="d_loss"), keras.metrics.Mean(name="g_loss")

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer, self.g_optimizer, self.loss_fn = d_optimizer, g_optimizer, loss_fn

    def train_step(self, real):
        if isinstance(real, tuple):
            real = real[0]
        batch = keras.ops.shape(real)[0]
        generated = self.generator(keras.ops.sin(3.0 * real[:, :2]))
        labels = keras.ops.concatenate([keras.ops.ones((batch, 1)), keras.ops.zeros((batch, 1))], axis=0)
        with tf.GradientTape() as tape:
            d_loss = self.loss_fn(labels, self.discriminator(keras.ops.concatenate([generated, real], axis=0)))
        gradients = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(gradients, self.discriminator.trainable_weights))
        with tf.GradientTape() as tape:
            g_loss = self.loss_fn(keras.ops.zeros((batch, 1)), self.discriminator(self.generator(keras.ops.cos(3.0 * real[:, :2]))))
        gradients = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(gradients, self.generator.trainable_weights))
        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {"d_loss": self.d_loss_tracker.result(), "g_loss": self.g_loss_tracker.result()}


def gan():
    model = GAN()
    model.compile(keras.optimizers.SGD(0.05), keras.optimizers.SGD(0.05), keras.losses.BinaryCrossentropy(from_logits=True))
    return model


def augmented():
    return compiled(keras.Sequential([
        keras.Input((8, 8, 1)), keras.layers.RandomFlip("horizontal"), keras.layers.RandomRotation(0.1),
        keras.layers.Conv2D(4, 3, padding="same", activation="relu"), keras.layers.Flatten(), keras.layers.Dense(CLASSES),
    ]))  # fmt: skip


class OwnTestStep(keras.Model):
    """A ``test_step`` of the model's own, as Keras's "customizing fit" guide writes it, with the
    sample weights passed on to ``compute_loss`` and the metrics."""

    def test_step(self, data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred, sample_weight=sample_weight)
        return {metric.name: metric.result() for metric in self.metrics}


def own_test_step():
    inputs = keras.Input((FEATURES,))
    return compiled(OwnTestStep(inputs, keras.layers.Dense(CLASSES)(keras.layers.Dense(16, activation="relu")(inputs))))


def mixed_float16():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        return dense()
    finally:
        keras.mixed_precision.set_global_policy("float32")


def frozen_base(fine_tune: bool):
    """keras.io's transfer learning: a base model with BatchNormalization, frozen and called with
    ``training=False``; with ``fine_tune``, unfrozen and compiled again, as the guide's second
    phase does."""
    base = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(16, activation="relu"), keras.layers.BatchNormalization()])
    base.trainable = False
    inputs = keras.Input((FEATURES,))
    model = compiled(keras.Model(inputs, keras.layers.Dense(CLASSES)(base(inputs, training=False))))
    if fine_tune:
        base.trainable = True
        model = compiled(model)
    return model


def feature_space_inputs():
    """Keras preprocessing in the input pipeline (keras.io's structured data with FeatureSpace):
    raw numeric and string features, encoded by an adapted FeatureSpace in ``Dataset.map``."""
    raw = {"number": DENSE[:, :2], "word": np.array([WORDS[i] for i in WORD_INDEX])}
    space = keras.utils.FeatureSpace(
        features={"number": keras.utils.FeatureSpace.float_normalized(), "word": keras.utils.FeatureSpace.string_categorical(num_oov_indices=1)},
        output_mode="concat",
    )
    space.adapt(tf.data.Dataset.from_tensor_slices({key: value[:NUM] for key, value in raw.items()}).batch(BATCH))
    encoded = tf.data.Dataset.from_tensor_slices((raw, WORD_LABELS)).batch(BATCH).map(lambda x, y: (space(x), y))
    return encoded.take(NUM // BATCH), encoded.skip(NUM // BATCH).unbatch().batch(BATCH)


def residual_cnn():
    """The residual block of keras.io's "image classification from scratch" (a residual ``add``
    after separable convolutions, which fails on a replica's empty share)."""
    inputs = keras.Input((8, 8, 1))
    x = keras.layers.Activation("relu")(keras.layers.BatchNormalization()(keras.layers.Conv2D(8, 3, strides=2, padding="same")(inputs)))
    previous = x
    x = keras.layers.BatchNormalization()(keras.layers.SeparableConv2D(16, 3, padding="same")(x))
    x = keras.layers.MaxPooling2D(3, strides=2, padding="same")(x)
    x = keras.layers.add([x, keras.layers.Conv2D(16, 1, strides=2, padding="same")(previous)])
    x = keras.layers.GlobalAveragePooling2D()(keras.layers.SeparableConv2D(16, 3, padding="same")(x))
    return compiled(keras.Model(inputs, keras.layers.Dense(CLASSES)(x)))


def one_image():
    """One image to fit and one to evaluate and predict: fewer samples than replicas."""
    return IMAGES[:1], IMAGE_LABELS[:1], IMAGES[NUM:NUM + 1], IMAGE_LABELS[NUM:NUM + 1]


def feature_space_model():
    return compiled(keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(CLASSES)]))


def split(x, y):
    """``(x, y)`` for training and for the held-out batch (nested dicts split alike; ``None`` stays)."""
    if callable(x):  # its own inputs: (training, held-out) datasets, or arrays with their labels
        made = x()
        return ((made[0], None), (made[1], None)) if len(made) == 2 else ((made[0], made[1]), (made[2], made[3]))
    first = tf.nest.map_structure(lambda a: None if a is None else a[:NUM], (x, y))
    return first, tf.nest.map_structure(lambda a: None if a is None else a[NUM:], (x, y))


MODELS = {
    "dense (control)": (dense, DENSE, LABELS),
    "cnn + batchnorm": (cnn_batchnorm, IMAGES, IMAGE_LABELS),
    "dropout": (dropout, DENSE, LABELS),
    "lstm": (lstm, SEQUENCES, SEQUENCE_LABELS),
    "embedding, dict inputs, StringLookup": (embedding_dict, {"word": WORD_INPUT, "number": DENSE}, WORD_LABELS),
    "subclassed train_step": (subclassed, DENSE, LABELS),
    "two outputs, loss_weights": (two_outputs, DENSE, {"cls": LABELS, "reg": REGRESSION}),
    "VAE: own train_step, no call()": (vae, DENSE, None),
    "GAN: own compile, two optimizers": (gan, DENSE, None),
    "augmentation (RandomFlip, RandomRotation)": (augmented, IMAGES, IMAGE_LABELS),
    "own test_step, sample_weight": (own_test_step, DENSE, LABELS),
    "mixed_float16": (mixed_float16, DENSE, LABELS),
    "frozen base, training=False": (lambda: frozen_base(False), DENSE, LABELS),
    "frozen base fine-tuned after re-compile": (lambda: frozen_base(True), DENSE, LABELS),
    "FeatureSpace in the input pipeline": (feature_space_model, feature_space_inputs, None),
    "residual CNN, 1 sample (fewer than replicas)": (residual_cnn, one_image, None),
}
#: Models whose training the harness weights per sample (fit and evaluate get these).
SAMPLE_WEIGHTS = {"own test_step, sample_weight": np.linspace(0.5, 1.5, NUM + HELD).astype("float32")}
#: Models without call(): fit only (keras.io's VAE and the guide's GAN neither evaluate nor predict).
FIT_ONLY = ("VAE: own train_step, no call()", "GAN: own compile, two optimizers")


def run(fit, name, scope=None) -> dict:
    """Build from the seed (in ``scope``, when the arm is a hand-built strategy's), fit, then
    evaluate and predict the held-out batch."""
    build, x, y = MODELS[name]
    (train_x, train_y), (held_x, held_y) = split(x, y)
    weights = SAMPLE_WEIGHTS.get(name)
    batched = {} if isinstance(train_x, tf.data.Dataset) else {"batch_size": BATCH}
    train_weights = {} if weights is None else {"sample_weight": weights[:NUM]}
    keras.utils.set_random_seed(1)
    with scope or contextlib.nullcontext():
        model = build()
    MAKE_TRAIN_SPE.clear()
    history = fit(model, train_x, train_y, epochs=EPOCHS, verbose=0, **batched, **train_weights)
    made_with = list(MAKE_TRAIN_SPE)
    plan = getattr(history, "plan", None)
    if name in FIT_ONLY:
        evaluated, predicted = {}, []
    else:
        held_weights = {} if weights is None else {"sample_weight": weights[NUM:]}
        evaluated = {k: float(v) for k, v in model.evaluate(held_x, held_y, verbose=0, return_dict=True, **batched, **held_weights).items()}
        predicted = [np.asarray(p).astype("float64").tolist() for p in tf.nest.flatten(model.predict(held_x, verbose=0, **batched))]
    return {
        "history": {key: [float(v) for v in values] for key, values in history.history.items()},
        "weights": [np.asarray(w).astype("float64").tolist() for w in model.get_weights()],
        "weight_names": [w.path for w in model.weights],
        "iterations": int(model.optimizer.iterations.numpy()),
        "evaluate": evaluated,
        "predict": predicted,
        "spe_in_fit": made_with,
        "spe_plan": None if plan is None else plan.steps_per_execution,
        "spe_after": int(model.steps_per_execution),
        "plan": None if plan is None else plan.strategy.value,
    }


def _arm(fit, name, scope=None) -> dict:
    """One arm; an AutodistError (or any error) is its result, and the AutodistWarnings it raised are kept."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", autodist.AutodistWarning)
            got = run(fit, name, scope)
        got["warnings"] = [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)]
    except autodist.AutodistError as err:
        got = {"error": f"{type(err).__name__}: {err}"}
    except Exception as err:  # a crash is a finding: the harness reports it
        got = {"crash": f"{type(err).__name__}: {str(err)[:300]}"}
    return got


def arms(name: str) -> dict:
    """The three arms of one model: one device (plain ``model.fit``, no strategy), autodist, and
    the hand-built strategy of the same kind with plain ``model.fit`` (where there is one)."""
    with plain():
        reference = _arm(lambda m, *a, **k: m.fit(*a, shuffle=False, **k), name)
    got = _arm(lambda m, *a, **k: autodist.fit(m, *a, shuffle=False, **k), name)
    strategy = hand_built_strategy()
    found = {"reference": reference, "autodist": got}
    if strategy is not None:
        with plain():
            found["hand_built"] = _arm(lambda m, *a, **k: m.fit(*a, shuffle=False, **k), name, strategy.scope())
    return found


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
