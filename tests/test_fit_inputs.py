"""autodist.fit with inputs and options users pass, on one device (in this process)."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import autodist

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
    assert steps(autodist.fit(build, dataset, epochs=1, verbose=0)) == expected  # not re-batched to 32


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
