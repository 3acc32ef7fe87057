"""autodist.fit with inputs and options users pass, on one device (in this process)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import autodist

keras = tf = None  # imported by frameworks() when a test here runs: collecting this file imports no TensorFlow


@pytest.fixture(autouse=True, scope="module")
def frameworks(tensorflow_imported):
    """Every test here runs TensorFlow in this process: the tensorflow tier."""
    global keras, tf
    import keras
    import tensorflow as tf

X = np.random.default_rng(0).random((64, 4), dtype=np.float32)
Y = np.zeros((64, 1), "float32")


def build():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def steps(history) -> int:
    return int(history.model.optimizer.iterations.numpy())


def test_dataset_of_unknown_batch_size_is_left_alone():
    def batches():
        for start in range(0, 64, 16):
            yield X[start : start + 16], Y[start : start + 16]

    signature = (tf.TensorSpec((None, 4), tf.float32), tf.TensorSpec((None, 1), tf.float32))
    dataset = tf.data.Dataset.from_generator(batches, output_signature=signature)
    reference = build()
    reference.fit(dataset, epochs=1, verbose=0)
    expected = int(reference.optimizer.iterations.numpy())
    assert expected in (4, 5)  # Keras counts one extra attempt on data of unknown length
    # Not re-batched to 32 (that would be 2 steps), and the same count as plain Keras: on data of
    # unknown length autodist keeps steps_per_execution=1, which would otherwise count differently.
    history = autodist.fit(build, dataset, epochs=1, verbose=0)
    assert steps(history) == expected
    assert "steps_per_execution stays as compiled: the input's length is unknown" in " ".join(history.plan.reasons)


def test_steps_per_execution_default_keeps_adam_exact_on_a_generator():
    """Keras 3 counts optimizer iterations differently with 8 steps per call on data of unknown
    length (measured: 10 against 8 over 2 epochs of 4 batches), which moves Adam. autodist keeps 1."""

    def batches():
        for start in range(0, 64, 16):
            yield X[start : start + 16], Y[start : start + 16]

    def build_adam():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        return model

    signature = (tf.TensorSpec((None, 4), tf.float32), tf.TensorSpec((None, 1), tf.float32))
    reference = build_adam()
    expected = reference.fit(tf.data.Dataset.from_generator(batches, output_signature=signature), epochs=2, verbose=0)
    history = autodist.fit(build_adam, tf.data.Dataset.from_generator(batches, output_signature=signature), epochs=2, verbose=0)
    assert steps(history) == int(reference.optimizer.iterations.numpy())
    assert history.history["loss"] == expected.history["loss"]
    np.testing.assert_array_equal(history.model.get_weights()[0], reference.get_weights()[0])


def test_unbatched_dataset_with_batch_size_is_batched():
    dataset = tf.data.Dataset.from_tensor_slices((X, Y))
    assert steps(autodist.fit(build, dataset, batch_size=16, epochs=1, verbose=0)) == 4


def test_generator_input_is_passed_without_batch_size():
    def batches():
        while True:
            for start in range(0, 64, 16):
                yield X[start : start + 16], Y[start : start + 16]

    history = autodist.fit(build, batches(), epochs=1, steps_per_epoch=4, verbose=0)
    assert steps(history) == 4


def test_mixed_precision_applies_to_the_build_only():
    history = autodist.fit(build, X, Y, batch_size=16, epochs=1, verbose=0, mixed_precision=True)
    assert history.model.dtype_policy.name == "mixed_bfloat16"
    assert keras.mixed_precision.global_policy().name == "float32"


def test_evaluator_task_refuses_to_train(monkeypatch):
    monkeypatch.setenv(
        "TF_CONFIG",
        json.dumps({"cluster": {"worker": ["a:1"], "evaluator": ["b:1"]}, "task": {"type": "evaluator", "index": 0}}),
    )
    with pytest.raises(autodist.StrategyUnavailableError, match="evaluator.*SidecarEvaluator"):
        autodist.fit(build, X, Y, batch_size=16, verbose=0)


def _weights(history) -> list[np.ndarray]:
    return [w.copy() for w in history.model.get_weights()]


def test_steps_per_execution_default_changes_speed_not_results(monkeypatch):
    """autodist runs 8 steps per call (set: a fit of 26 steps keeps 1 by default, as the opt-out
    does); the History and weights equal those of 1 step per call exactly."""
    seen = []

    class EpochSpy(keras.callbacks.Callback):  # epoch hooks only: the default applies
        def on_epoch_end(self, epoch, logs=None):
            seen.append(self.model.steps_per_execution)

    data = np.random.default_rng(1).random((100, 4), dtype=np.float32)
    labels = data.sum(axis=1, keepdims=True)
    monkeypatch.setenv("AUTODIST_STEPS_PER_EXECUTION", "8")
    fast = autodist.fit(build_seeded, data, labels, batch_size=8, epochs=2, verbose=0, shuffle=False, callbacks=[EpochSpy()])
    monkeypatch.delenv("AUTODIST_STEPS_PER_EXECUTION")
    slow = autodist.fit(build_seeded, data, labels, batch_size=8, epochs=2, verbose=0, shuffle=False)
    assert fast.plan.steps_per_execution == 8 and slow.plan.steps_per_execution is None
    assert any("this fit trains 26 steps, fewer than 128" in reason for reason in slow.plan.reasons), slow.plan.reasons
    assert seen == [8, 8]
    assert fast.model.steps_per_execution == 1  # the caller's model is given back as compiled
    assert steps(fast) == steps(slow) == 26  # 13 batches (the last one 4 samples) x 2 epochs
    assert fast.history["loss"] == slow.history["loss"]
    for a, b in zip(_weights(fast), _weights(slow), strict=True):
        np.testing.assert_array_equal(a, b)


def test_steps_per_execution_stays_1_for_batch_callbacks_and_steps_per_epoch():
    calls = []
    batch_logger = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: calls.append(batch))
    history = autodist.fit(build, X, Y, batch_size=16, epochs=1, verbose=0, callbacks=[batch_logger])
    assert calls == [0, 1, 2, 3]  # once per step, as the caller wrote it
    assert history.plan.steps_per_execution is None  # the plan says what ran, and why
    assert "steps_per_execution stays as compiled: a callback uses batch-level hooks" in history.plan.reasons
    assert not any(reason.startswith("steps_per_execution=") for reason in history.plan.reasons)  # no contradiction

    # A CallbackList, which model.fit also takes, is looked into the same way
    calls.clear()
    wrapped = keras.callbacks.CallbackList([batch_logger])
    history = autodist.fit(build, X, Y, batch_size=16, epochs=1, verbose=0, callbacks=wrapped)
    assert calls == [0, 1, 2, 3] and history.plan.steps_per_execution is None

    class ValidationBatches(keras.callbacks.Callback):  # validation inside fit runs the test hooks
        def on_test_batch_end(self, batch, logs=None):
            calls.append(("validation", batch))

    calls.clear()
    autodist.fit(build, X, Y, batch_size=16, epochs=1, verbose=0, validation_data=(X, Y), callbacks=[ValidationBatches()])
    assert calls == [("validation", b) for b in range(4)]

    def endless():
        while True:
            for start in range(0, 64, 16):
                yield X[start : start + 16], Y[start : start + 16]

    # With 8 steps per call Keras 3 would run 8 here, not 4 (measured)
    assert steps(autodist.fit(build, endless(), epochs=1, steps_per_epoch=4, verbose=0)) == 4


def build_seeded():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_multi_worker_input_is_one_endless_pass_per_epoch():
    """Under MultiWorkerMirrored, finite input repeats with steps_per_epoch = one pass."""
    from autodist.core.input_kinds import classify
    from autodist.core.inputs import prepare_input
    from tests.conftest import make_snapshot

    workers = {"cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}, "task": {"type": "worker", "index": 0}}
    the_plan = autodist.plan(make_snapshot(tf_config=workers), batch_size=16)
    assert the_plan.strategy.value == "multi_worker_mirrored"
    data = np.arange(100, dtype=np.float32).reshape(50, 2)
    fit_kwargs = {"shuffle": False}
    ready = prepare_input(classify(data, data[:, :1]), the_plan, fit_kwargs)
    x = ready.data.raw
    assert ready.fit_kwargs["steps_per_epoch"] == 4  # 50 samples in global batches of 16
    assert int(x.cardinality()) == int(tf.data.INFINITE_CARDINALITY)
    firsts = [float(batch[0][0, 0]) for batch in x.take(8)]
    assert firsts == [0.0, 32.0, 64.0, 96.0] * 2  # the same pass again, in order

    dataset = tf.data.Dataset.from_tensor_slices((data, data[:, :1])).batch(16)
    given = {"steps_per_epoch": 2}
    ready = prepare_input(classify(dataset), the_plan, given)
    assert dict(ready.fit_kwargs) == {"steps_per_epoch": 2} and int(ready.data.raw.cardinality()) == 4  # the caller's steps: left alone


def test_steps_per_execution_is_given_back_even_when_fit_fails():
    """The caller's model keeps its compiled value and compiled functions, also after an error."""
    model = build()
    model.fit(X, Y, batch_size=16, epochs=1, verbose=0)
    compiled = model.train_function
    autodist.fit(model, X, Y, batch_size=16, epochs=1, verbose=0)
    assert model.steps_per_execution == 1
    assert model.train_function is compiled  # no recompilation for the caller's next fit

    class Boom(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        autodist.fit(model, X, Y, batch_size=16, epochs=1, verbose=0, callbacks=[Boom()])
    assert model.steps_per_execution == 1
    assert model.train_function is compiled
