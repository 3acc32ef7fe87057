"""Multi-worker training with Keras, as the tutorial has it: its own strategy, its own scopes,
``model.fit``. The tests adopt it as a user does (``import autodist`` added, ``x.fit(`` became
``autodist.fit(x, ``; nothing else) and run it as 2 workers under ``autodist launch``.

Source: tensorflow/docs site/en/tutorials/distribute/multi_worker_with_keras.ipynb (Apache
2.0): ``mnist_setup.py``, ``main.py``, then the "Fault tolerance" cells in order (model saving
and loading, checkpoint saving and restoring, BackupAndRestore), in one file every worker runs.

Changed to run here, small and offline (not for autodist):
- ``tf.keras.datasets.mnist.load_data()`` is a synthetic MNIST of the same shapes and dtypes
  (512 images); ``steps_per_epoch=70`` is 5 and ``steps_per_epoch=20`` is 3.
- Paths (``/tmp/keras-model``, ``/tmp/ckpt``, ``/tmp/backup``) are under OUTDIR, and Keras 3
  saves the model as ``keras-model.keras`` (it saves only ``.keras`` files; tf_keras takes it too).
- In the Colab the cell that loads the saved model runs in the notebook's own process; here
  every worker runs it, after the checkpoint cells.
- Added for the test: each worker writes the Histories and its final weights to
  ``OUTDIR/<task>.json``.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

from synthetic_data import mnist_load_data, report  # tests/tutorials, on PYTHONPATH

OUTDIR = sys.argv[1]
tf.keras.utils.set_random_seed(1)


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

strategy = tf.distribute.MultiWorkerMirroredStrategy()

global_batch_size = per_worker_batch_size * num_workers
multi_worker_dataset = mnist_dataset(global_batch_size)

with strategy.scope():
  # Model building/compiling need to be within `strategy.scope()`.
  multi_worker_model = build_and_compile_cnn_model()


main_history = multi_worker_model.fit(multi_worker_dataset, epochs=3, steps_per_epoch=5)

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
  # For the case where `task_type` is `None`, please see the comments below.
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

# Checkpoint saving and restoring
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
restored_history = multi_worker_model.fit(multi_worker_dataset, epochs=2, steps_per_epoch=3)

# Model loading (every worker reads the model the chief saved)
loaded_model = tf.keras.models.load_model(model_path)

# Now that the model is restored, and can continue with the training.
loaded_history = loaded_model.fit(mnist_dataset(per_worker_batch_size), epochs=2, steps_per_epoch=3)

# Multi-worker training with `MultiWorkerMirroredStrategy`
# and the `BackupAndRestore` callback. The training state
# is backed up at epoch boundaries by default.

callbacks = [tf.keras.callbacks.BackupAndRestore(backup_dir=os.path.join(OUTDIR, 'backup'))]
with strategy.scope():
  multi_worker_model = build_and_compile_cnn_model()
backup_history = multi_worker_model.fit(multi_worker_dataset,
                                        epochs=3,
                                        steps_per_epoch=5,
                                        callbacks=callbacks)

report(OUTDIR, {
    "is_chief": _is_chief(task_type, task_id),
    "histories": [h.history for h in (main_history, restored_history, loaded_history, backup_history)],
    "plans": [getattr(getattr(h, "plan", None), "reasons", None) for h in (main_history, backup_history)],
    "weights": [float(np.sum(np.abs(w))) for w in multi_worker_model.get_weights()],

})
