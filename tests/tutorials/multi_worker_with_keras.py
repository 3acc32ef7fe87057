"""Multi-worker training with Keras, adapted to autodist.

Source: tensorflow/docs site/en/tutorials/distribute/multi_worker_with_keras.ipynb (commit
7c36502, Apache 2.0): ``mnist_setup.py``, ``main.py``, then the cells of "Fault tolerance"
(model saving and loading, checkpoint saving and restoring, BackupAndRestore), in one file that
every worker runs.

Run:  python -m autodist launch --workers 2 tests/tutorials/multi_worker_with_keras.py OUTDIR

Changed from the tutorial, as a user adopting autodist would:
- ``import autodist`` is the first import (before ``tensorflow``).
- ``strategy = tf.distribute.MultiWorkerMirroredStrategy()`` became
  ``strategy = tf.distribute.get_strategy()``: autodist created MultiWorkerMirroredStrategy for
  this TF_CONFIG and set it as the global strategy; the tutorial still reads
  ``strategy.cluster_resolver`` to find the chief.
- ``with strategy.scope():`` removed (around the model of ``main.py`` and of the
  BackupAndRestore cell).
- ``model.fit(dataset, ...)`` became ``autodist.fit(model, dataset, ...)`` with the same
  arguments (four times). The data pipeline and the model are built at module level, before the
  first ``autodist.fit``, as in the tutorial's ``main.py``.
Changed for Keras 3 (needed with or without autodist):
- ``model_path = '/tmp/keras-model'`` became ``OUTDIR/keras-model.keras`` (Keras 3 saves only
  ``.keras`` files).
Changed to run here, small and offline:
- ``tf.keras.datasets.mnist.load_data()`` became a synthetic MNIST of the same shapes and dtypes
  (512 images); ``steps_per_epoch=70`` became 5 and ``steps_per_epoch=20`` became 3.
- Paths (``/tmp/keras-model``, ``/tmp/ckpt``, ``/tmp/backup``) are under OUTDIR.
- The Colab-only cells (``%%bash``, ``%killbgscripts``, the single-worker warm-up fit, the
  ``AutoShardPolicy.OFF`` aside) are left out, and so is the third BackupAndRestore cell (the
  same fit with ``save_freq=30``).
- Order: in the Colab, the cell that loads the saved model runs in the notebook's own process.
  Here both workers run it, so it runs after the checkpoint cells, whose ``fit`` (collective
  steps) guarantees the chief has finished writing the file the other worker then reads.
- Added for the test: each worker reports every History and the files it saw in
  ``OUTDIR/<task>.json``.
"""

import autodist

import json
import os
import sys

import tensorflow as tf
import numpy as np

from synthetic_data import files_under, mnist_load_data, report, variable_kind

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

strategy = tf.distribute.get_strategy()  # autodist's MultiWorkerMirroredStrategy

global_batch_size = per_worker_batch_size * num_workers
multi_worker_dataset = mnist_dataset(global_batch_size)
single_worker_dataset = mnist_dataset(per_worker_batch_size)

# Model building/compiling need to be within `strategy.scope()`: autodist's, set globally.
multi_worker_model = build_and_compile_cnn_model()

main_history = autodist.fit(multi_worker_model, multi_worker_dataset, epochs=3, steps_per_epoch=5)

# Model saving and loading
model_path = os.path.join(OUTDIR, 'keras-model.keras')

def _is_chief(task_type, task_id):
  # Note: there are two possible `TF_CONFIG` configurations.
  #   1) In addition to `worker` tasks, a `chief` task type is use;
  #      in this case, this function should be modified to
  #      `return task_type == 'chief'`.
  #   2) Only `worker` task type is used; in this case, worker 0 is
  #      regarded as the chief. The implementation demonstrated here
  #      is for this case.
  return (task_type == 'worker' and task_id == 0) or task_type is None

def _get_temp_dir(dirpath, task_id):
  base_dirpath = 'workertemp_' + str(task_id)
  temp_dir = os.path.join(dirpath, base_dirpath)
  tf.io.gfile.makedirs(temp_dir)
  return temp_dir

def write_filepath(filepath, task_type, task_id):
  dirpath = os.path.dirname(filepath)
  base = os.path.basename(filepath)
  if not _is_chief(task_type, task_id):
    dirpath = _get_temp_dir(dirpath, task_id)
  return os.path.join(dirpath, base)

task_type, task_id = (strategy.cluster_resolver.task_type,
                      strategy.cluster_resolver.task_id)
write_model_path = write_filepath(model_path, task_type, task_id)

multi_worker_model.save(write_model_path)

if not _is_chief(task_type, task_id):
  tf.io.gfile.rmtree(os.path.dirname(write_model_path))

# Checkpoint saving and restoring (saving)
checkpoint_dir = os.path.join(OUTDIR, 'ckpt')

checkpoint = tf.train.Checkpoint(model=multi_worker_model)
write_checkpoint_dir = write_filepath(checkpoint_dir, task_type, task_id)
checkpoint_manager = tf.train.CheckpointManager(
    checkpoint, directory=write_checkpoint_dir, max_to_keep=1)

checkpoint_manager.save()
if not _is_chief(task_type, task_id):
  tf.io.gfile.rmtree(write_checkpoint_dir)

latest_checkpoint = tf.train.latest_checkpoint(checkpoint_dir)
checkpoint.restore(latest_checkpoint)
restored_history = autodist.fit(multi_worker_model, multi_worker_dataset, epochs=2, steps_per_epoch=3)

result = {
    "is_chief": _is_chief(task_type, task_id),
    "strategy": type(strategy).__name__,
    "plan": main_history.plan.strategy.value,
    "num_replicas": main_history.plan.num_replicas,
    "model_variable": variable_kind(multi_worker_model.trainable_variables[0]),
    "main_history": main_history.history,
    "restored_history": restored_history.history,
}
report(OUTDIR, result)

# Model loading (moved here): every worker reads the model the chief saved
loaded_model = tf.keras.models.load_model(model_path)

# Now that the model is restored, and can continue with the training.
loaded_history = autodist.fit(loaded_model, single_worker_dataset, epochs=2, steps_per_epoch=3)
result["loaded_history"] = loaded_history.history
report(OUTDIR, result)

# Multi-worker training with `MultiWorkerMirroredStrategy`
# and the `BackupAndRestore` callback. The training state
# is backed up at epoch boundaries by default.

callbacks = [tf.keras.callbacks.BackupAndRestore(backup_dir=os.path.join(OUTDIR, 'backup'))]
multi_worker_model = build_and_compile_cnn_model()
backup_history = autodist.fit(multi_worker_model, multi_worker_dataset,
                              epochs=3,
                              steps_per_epoch=5,
                              callbacks=callbacks)
result["backup_history"] = backup_history.history
result["files"] = files_under(OUTDIR)
report(OUTDIR, result)
