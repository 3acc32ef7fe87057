"""What makes replicas train apart from one device, as autodist reads it from a real Keras model
and says it in a plan: random layers (augmentation, a layer or model owning a SeedGenerator),
BatchNormalization that trains (not a frozen one), Dropout of a rate above 0, 16-bit mixed
precision, steps of the model's own; and how ``evaluate``/``predict`` re-batch so that every
replica gets a share (:func:`autodist.planning.global_batch.every_replica_fed`).

The numbers these causes give are measured by tests/test_model_axis.py; here, what is read and
said, in-process.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodist.errors import StrategyUnavailableError
from autodist.planning.global_batch import every_replica_fed
from autodist.planning.planner import plan
from tests.conftest import make_snapshot


def test_random_layers_are_read_by_kind_and_by_their_seed_generators(tensorflow_imported):
    import keras

    from autodist.detection.model_info import describe_model
    from tests.replica_models import NoisyStep, Sampling, compiled

    inputs = keras.Input((4, 4, 1))
    x = keras.layers.RandomFlip(name="flip")(inputs)
    x = keras.layers.RandomRotation(0.1, name="rotate")(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dropout(0.0, name="no_drop")(x)
    x = keras.layers.Dropout(0.3, name="drop")(x)
    x = Sampling(name="sampling")(x)
    info = describe_model(compiled(keras.Model(inputs, keras.layers.Dense(1)(x))))
    assert info.random_layers == ("flip", "rotate", "drop", "sampling"), info.random_layers
    noisy = NoisyStep()
    noisy(keras.ops.ones((1, 3)))
    info = describe_model(compiled(noisy))
    assert info.random_layers == (noisy.name,) and info.own_steps == ("test_step",)
    # issue 59: every RNN cell owns a SeedGenerator, but one with both dropouts 0 draws nothing (nor a noise of 0)
    sequences = keras.Input((5, 3))
    x = keras.layers.LSTM(4, return_sequences=True, name="lstm")(sequences)
    x = keras.layers.GRU(4, return_sequences=True, recurrent_dropout=0.1, name="gru")(x)
    x = keras.layers.SimpleRNN(2, dropout=0.2, name="rnn")(x)
    x = keras.layers.GaussianNoise(0.0, name="no_noise")(x)
    info = describe_model(compiled(keras.Model(sequences, keras.layers.GaussianNoise(0.1, name="noise")(x))))
    assert [name.split("_cell")[0] for name in info.random_layers] == ["gru", "simple_rnn", "noise"], info.random_layers


def test_reading_which_layers_draw_leaves_keras_names_as_one_device_does(tensorflow_imported):
    """The symbolic call that reads which layers draw (``traced_draws``, on several replicas only)
    makes tensors and a scratch graph: the names a script makes next are the ones it makes on one
    device (the TF image classification tutorial's TFLite call reads ``keras_tensor_15``)."""
    import keras
    import numpy as np
    from keras.src.backend.common import global_state

    from autodist.upstream.keras_trainer import TRANSIENT_NAMES, traced_draws

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dropout(0.5, name="drop"), keras.layers.Dense(1)])
    counts = global_state.get_global_attribute("object_name_uids")
    before = {name: counts.get(name) for name in TRANSIENT_NAMES}
    assert traced_draws(model, (np.ones((2, 4), "float32"), np.ones((2, 1), "float32"))) == (("drop",), ())
    assert {name: counts.get(name) for name in TRANSIENT_NAMES} == before
    made = keras.Input((3,)).name
    assert made == ("keras_tensor" if before["keras_tensor"] is None else f"keras_tensor_{before['keras_tensor']}")


def test_tensorflow_draws_in_a_users_layer_or_step_are_read_and_warned(tensorflow_imported):
    """TensorFlow's stateful draws (``tf.random.normal``) in a layer's ``call`` or the model's own
    step: under a strategy each replica's op has a seed of its own, so the replicas draw
    independently, not one device's numbers: read from the source, and warned with the sizes.
    A stateless draw (same numbers on every replica, as on one device's same call) is not."""
    import keras

    from autodist.detection.model_info import describe_model
    from autodist.planning.global_batch import split_notes
    from tests.replica_models import (
        StatelessDraws,
        TensorFlowNoiseStep,
        TensorFlowSampling,
        compiled,
    )

    inputs = keras.Input((4,))
    z = TensorFlowSampling(name="sampling")([keras.layers.Dense(2)(inputs), keras.layers.Dense(2)(inputs)])
    z = StatelessDraws(name="stateless")(z)
    info = describe_model(compiled(keras.Model(inputs, z)))
    assert info.own_draw_layers == ("sampling",) and info.random_layers == (), info
    step = TensorFlowNoiseStep()
    assert describe_model(step).own_draw_layers == (step.name,)
    dropout = keras.Sequential([keras.Input((3,)), keras.layers.Dropout(0.5)])
    assert describe_model(compiled(dropout)).own_draw_layers == ()
    _, warned = split_notes(4, 8, (), (), "keras3", own_draw_layers=info.own_draw_layers)
    assert len(warned) == 1 and "sampling draw random numbers in their own code" in warned[0], warned
    assert "4 replicas (8 samples each), each replica from its own stream" in warned[0], warned
    assert split_notes(1, 8, (), (), "keras3", own_draw_layers=info.own_draw_layers) == ((), ())


def test_frozen_batchnorm_is_not_a_difference_and_a_fine_tuned_one_is(tensorflow_imported):
    import keras

    from autodist.detection.model_info import describe_model
    from tests.replica_models import compiled

    base = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4), keras.layers.BatchNormalization(name="base_bn"), keras.layers.Dropout(0.2, name="base_drop")])
    base.trainable = False
    inputs = keras.Input((4,))
    model = compiled(keras.Model(inputs, keras.layers.Dense(1)(base(inputs, training=False))))
    frozen = describe_model(model)
    assert frozen.batch_statistics_layers == () and frozen.random_layers == ("base_drop",)  # a frozen Dropout still drops
    base.trainable = True  # keras.io's second phase: unfrozen, compiled again
    tuned = describe_model(compiled(model))
    assert tuned.batch_statistics_layers == ("base_bn",)


def test_own_steps_and_mixed_precision_are_read(tensorflow_imported):
    import keras

    from autodist.detection.model_info import describe_model
    from tests.replica_models import OwnLoss, ScalesItself, compiled

    inputs = keras.Input((3,))
    own_loss = describe_model(compiled(OwnLoss(inputs, keras.layers.Dense(1)(inputs))))
    assert own_loss.own_steps == ("compute_loss",) and own_loss.mixed_precision is None and not own_loss.own_steps_read_replicas
    scales = describe_model(compiled(ScalesItself(inputs, keras.layers.Dense(1)(inputs))))
    assert scales.own_steps == ("train_step",) and scales.own_steps_read_replicas
    said = [w for w in plan(make_snapshot(num_cpu_devices=2), model_info=scales, batch_size=64).warnings if "reads num_replicas_in_sync" in w]
    assert len(said) == 1 and "scaled twice" in said[0] and "AUTODIST_KERAS_COMPAT=off" in said[0], said
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        mixed = describe_model(compiled(keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert mixed.mixed_precision == "mixed_float16"


def _info(**facts):
    from autodist.detection.model_info import ModelInfo

    return ModelInfo(num_params=100, keras_flavor="keras3", keras_version="3.15.1", **facts)


def test_each_cause_is_warned_once_with_its_size_and_only_on_several_replicas():
    mixed = plan(make_snapshot(num_cpu_devices=2), model_info=_info(mixed_precision="mixed_float16"), batch_size=64)
    said = [w for w in mixed.warnings if "mixed_float16" in w]
    assert len(said) == 1 and "2 replicas reduce their 32-sample shares" in said[0] and "loss 2e-2" in said[0]
    assert not [w for w in plan(make_snapshot(), model_info=_info(mixed_precision="mixed_float16"), batch_size=64).warnings if "mixed_float16" in w]
    # a step of the model's own: autodist runs it as one device (own_step_replica_mean), so nothing to say
    own = _info(own_steps=("test_step",), own_train_step=False)
    assert not [w for w in plan(make_snapshot(num_cpu_devices=2), model_info=own, batch_size=64).warnings if "own test_step" in w]
    off = plan(make_snapshot(num_cpu_devices=2), model_info=own, batch_size=64, environ={"AUTODIST_KERAS_COMPAT": "off"})
    said = [w for w in off.warnings if "own test_step runs on 2 replicas" in w]
    assert len(said) == 1 and "val_loss and evaluate" in said[0] and "1/2" in said[0]


def test_mixed_float16_under_central_storage_is_refused_with_the_cause():
    snapshot = make_snapshot(num_cpu_devices=2)
    with pytest.raises(StrategyUnavailableError, match=r"LossScaleOptimizer .*strategy='mirrored'.*central_storage"):
        plan(snapshot, model_info=_info(mixed_precision="mixed_float16"), batch_size=64, strategy="central_storage")
    assert plan(snapshot, model_info=_info(mixed_precision="mixed_float16"), batch_size=64, strategy="mirrored").num_replicas == 2
    kept = plan(snapshot, model_info=_info(), batch_size=64, strategy="central_storage")
    assert kept.strategy.value == "central_storage"


def _shares(batch: int, replicas: int) -> list[int]:
    """How TensorFlow splits a batch whose size it cannot see (Keras's array inputs): every
    replica but the last takes ceil(batch / replicas), the last what remains (measured: 4 samples
    over 3 replicas give 2, 2, 0)."""
    share = -(-batch // replicas)
    return [max(0, min(share, batch - index * share)) for index in range(replicas)]


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])  # no wall-clock check: a loaded machine is slow, not wrong
@given(samples=st.integers(1, 5000), batch_size=st.integers(1, 512), replicas=st.integers(1, 64))
def test_evaluate_and_predict_batches_feed_every_replica(samples, batch_size, replicas):
    """Whatever the sizes: every batch of the batching used gives every replica a share, each
    sample is repeated as often as every other (means unchanged), copies only in one batch of
    them all, and Keras's own batching is kept where it already feeds every replica."""
    fed = every_replica_fed(samples, batch_size, replicas)
    size, copies = fed if fed is not None else (batch_size, 1)
    total = samples * copies
    batches = [min(size, total - start) for start in range(0, total, size)]
    if replicas > 1:
        assert all(min(_shares(batch, replicas)) >= 1 for batch in batches), (samples, batch_size, replicas, fed, batches)
    assert copies == 1 or size == total  # one batch of every sample, each as often
    if fed is None:
        keras_batches = [min(batch_size, samples - start) for start in range(0, samples, batch_size)]
        assert replicas == 1 or all(min(_shares(batch, replicas)) >= 1 for batch in keras_batches)
    elif copies == 1:
        assert size != batch_size and replicas <= size <= samples


def test_a_model_whose_output_mixes_its_batch_is_measured_and_warned_and_one_that_does_not_is_not(tensorflow_imported):
    """The probe runs the model in inference on 4 of the caller's samples and on their halves: a
    batch-wide sum differs, per-sample layers (LayerNormalization, BatchNormalization in
    inference) do not; a model it cannot run without moving a seed or a state is not run."""
    import keras
    import numpy as np

    from autodist.tensorflow.batch_probe import (
        MIXES_BATCH,
        TOLERANCE,
        batch_mixing_check,
        mixing_gap,
    )
    from tests.replica_models import BatchDot

    ids = np.random.default_rng(0).integers(0, 10, (16, 2))
    mixing = BatchDot()
    mixing(ids[:4])
    assert mixing_gap(mixing, ids[:4]) > 1e-3
    features = np.random.default_rng(1).normal(size=(16, 3)).astype("float32")
    normalised = [keras.layers.LayerNormalization(), keras.layers.BatchNormalization()]
    per_sample = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), *normalised, keras.layers.Dense(1)])
    # rounding only, a few float32 ulps: TensorFlow 2.22's kernels round a batch of 2 and one of 4 apart (4e-8 with
    # Keras 3.15.1, 1.9e-7 to 2.3e-7 with keras-nightly 3.16, about 2 ulps); 8 ulps is still 10 times below the gap
    # the probe warns at
    rounding = 8 * float(np.finfo(np.float32).eps)
    assert rounding <= TOLERANCE / 10
    assert mixing_gap(per_sample, features[:4]) <= rounding
    dropped = keras.Sequential([keras.Input((3,)), keras.layers.Dropout(0.5), keras.layers.Dense(1)])
    assert mixing_gap(dropped, features[:4]) is None and mixing_gap(BatchDot(), ids[:4]) is None  # random; not built
    assert batch_mixing_check(keras, ids, 1, 8) is None and batch_mixing_check(keras, ids[:3], 2, 8) is None
    check = batch_mixing_check(keras, ids, 2, 8)
    check.set_model(mixing)
    with pytest.warns(Warning) as caught:
        check.on_train_begin()
        check.on_train_begin()  # a resumed fit begins again: measured and said once
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and said[0].startswith(MIXES_BATCH.split("{")[0]), said
    assert "each computes on its share (8 samples), where one device computes on the global batch of 16" in said[0]
    quiet = batch_mixing_check(keras, features, 2, 8)
    quiet.set_model(per_sample)
    quiet.on_train_begin()  # nothing said (pytest turns an AutodistWarning into an error here)
