"""The multi-worker ``main.py`` a new user starts from, adapted to autodist.

Source: the ``main.py`` (with its ``mnist_setup.py``) of tensorflow/docs
site/en/tutorials/distribute/multi_worker_with_keras.ipynb (commit 7c36502, Apache 2.0); the
same shape as this repository's examples/multi_worker.py: ``import autodist`` first, the data
set built at the top of the script, then ``fit``.

Run:  python -m autodist launch --workers 2 tests/tutorials/seed_multi_worker_main.py OUTDIR

Changed from the tutorial, as a user adopting autodist would:
- ``import autodist`` is the first import.
- ``strategy = tf.distribute.MultiWorkerMirroredStrategy()`` and ``with strategy.scope():``
  removed: the data set and the model are still built at module level, before ``fit``.
- ``multi_worker_model.fit(multi_worker_dataset, epochs=3, steps_per_epoch=70)`` became
  ``autodist.fit(multi_worker_model, multi_worker_dataset, epochs=3, steps_per_epoch=70)``.
Changed to run here, small and offline:
- ``tf.keras.datasets.mnist.load_data()`` became a synthetic MNIST of the same shapes and
  dtypes (512 images); ``steps_per_epoch=70`` became 8.
- Added for the test: each worker writes its History, plan and a checksum of its final weights
  to ``OUTDIR/<task>.json``.
"""

import autodist

import os
import json
import sys

import tensorflow as tf
import numpy as np

from synthetic_data import mnist_load_data, report, variable_kind

OUTDIR = sys.argv[1]


# mnist_setup.py
def mnist_dataset(batch_size):
  (x_train, y_train), _ = mnist_load_data()
  # The `x` arrays are in uint8 and have values in the [0, 255] range.
  # You need to convert them to float32 with values in the [0, 1] range.
  x_train = x_train / np.float32(255)
  y_train = y_train.astype(np.int64)
  train_dataset = tf.data.Dataset.from_tensor_slices(
      (x_train, y_train)).shuffle(60000).repeat().batch(batch_size)
  return train_dataset

def build_and_compile_cnn_model():
  model = tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=(28, 28)),
      tf.keras.layers.Reshape(target_shape=(28, 28, 1)),
      tf.keras.layers.Conv2D(32, 3, activation='relu'),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(128, activation='relu'),
      tf.keras.layers.Dense(10)
  ])
  model.compile(
      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      optimizer=tf.keras.optimizers.SGD(learning_rate=0.001),
      metrics=['accuracy'])
  return model


# main.py
per_worker_batch_size = 64
tf_config = json.loads(os.environ['TF_CONFIG'])
num_workers = len(tf_config['cluster']['worker'])

global_batch_size = per_worker_batch_size * num_workers
multi_worker_dataset = mnist_dataset(global_batch_size)

# Model building/compiling need to be within `strategy.scope()`: autodist's, set globally.
multi_worker_model = build_and_compile_cnn_model()


history = autodist.fit(multi_worker_model, multi_worker_dataset, epochs=3, steps_per_epoch=8)

report(OUTDIR, {
    "plan": history.plan.strategy.value,
    "num_replicas": history.plan.num_replicas,
    "is_chief": autodist.is_chief(),
    "model_variable": variable_kind(multi_worker_model.trainable_variables[0]),
    "history": history.history,
    "weights_sum": float(sum(np.abs(w).sum() for w in multi_worker_model.get_weights())),
})
