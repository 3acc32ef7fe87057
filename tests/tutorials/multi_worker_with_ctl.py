"""Custom training loop with MultiWorkerMirroredStrategy, adapted to autodist.

Source: tensorflow/docs site/en/tutorials/distribute/multi_worker_with_ctl.ipynb (commit
7c36502, Apache 2.0): its ``mnist.py`` and ``main.py`` (the "complete code at a glance" cells),
in one file.

Run:  python -m autodist launch --workers 2 tests/tutorials/multi_worker_with_ctl.py OUTDIR

Changed from the tutorial, as a user adopting autodist would:
- ``import autodist`` is the first import (before ``tensorflow``).
- ``strategy = tf.distribute.MultiWorkerMirroredStrategy()`` became
  ``the_plan, strategy = autodist.init()``: the strategy autodist chose for this TF_CONFIG.
  ``strategy.cluster_resolver``, ``strategy.distribute_datasets_from_function``,
  ``strategy.run`` and ``strategy.reduce`` are kept.
- ``with strategy.scope():`` removed.
- ``tf.nn.compute_average_loss(per_example_loss)`` became
  ``autodist.compute_average_loss(per_example_loss)``.
Changed for Keras 3 (needed with or without autodist):
- ``reduction=tf.keras.losses.Reduction.NONE`` became ``reduction="none"``, and
  ``train_accuracy.reset_states()`` became ``train_accuracy.reset_state()``.
Changed to run here, small, offline and repeatable:
- ``tf.keras.datasets.mnist.load_data()`` became a synthetic MNIST of the same shapes and
  dtypes (640 images: 5 global batches of 128); ``shuffle(60000)`` got ``seed=0`` so both
  workers shuffle alike and their shards together cover each epoch's data once.
- ``num_steps_per_epoch = 70`` became 5 (one pass of this data).
- ``checkpoint_dir`` is ``OUTDIR/ckpt`` instead of ``multiprocessing.util.get_temp_dir()``.
- Added for the test: each worker reports its per-epoch losses, the files under OUTDIR/ckpt at
  the end and a checksum of its final weights in ``OUTDIR/<task>.json``.
"""

import autodist

import os
import json
import sys

import tensorflow as tf
import numpy as np

from synthetic_data import files_under, mnist_load_data, report, variable_kind

OUTDIR = sys.argv[1]


# mnist.py
def mnist_dataset(batch_size):
  (x_train, y_train), _ = mnist_load_data(num_train=640)
  # The `x` arrays are in uint8 and have values in the range [0, 255].
  # You need to convert them to float32 with values in the range [0, 1]
  x_train = x_train / np.float32(255)
  y_train = y_train.astype(np.int64)
  train_dataset = tf.data.Dataset.from_tensor_slices(
      (x_train, y_train)).shuffle(60000, seed=0)
  return train_dataset

def dataset_fn(global_batch_size, input_context):
  batch_size = input_context.get_per_replica_batch_size(global_batch_size)
  dataset = mnist_dataset(batch_size)
  dataset = dataset.shard(input_context.num_input_pipelines,
                          input_context.input_pipeline_id)
  dataset = dataset.batch(batch_size)
  return dataset

def build_cnn_model():
  regularizer = tf.keras.regularizers.L2(1e-5)
  return tf.keras.Sequential([
      tf.keras.Input(shape=(28, 28)),
      tf.keras.layers.Reshape(target_shape=(28, 28, 1)),
      tf.keras.layers.Conv2D(32, 3,
                             activation='relu',
                             kernel_regularizer=regularizer),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(128,
                            activation='relu',
                            kernel_regularizer=regularizer),
      tf.keras.layers.Dense(10, kernel_regularizer=regularizer)
  ])


# main.py
per_worker_batch_size = 64
tf_config = json.loads(os.environ['TF_CONFIG'])
num_workers = len(tf_config['cluster']['worker'])
global_batch_size = per_worker_batch_size * num_workers

num_epochs = 3
num_steps_per_epoch=5

# Checkpoint saving and restoring
def _is_chief(task_type, task_id, cluster_spec):
  return (task_type is None
          or task_type == 'chief'
          or (task_type == 'worker'
              and task_id == 0
              and 'chief' not in cluster_spec.as_dict()))

def _get_temp_dir(dirpath, task_id):
  base_dirpath = 'workertemp_' + str(task_id)
  temp_dir = os.path.join(dirpath, base_dirpath)
  tf.io.gfile.makedirs(temp_dir)
  return temp_dir

def write_filepath(filepath, task_type, task_id, cluster_spec):
  dirpath = os.path.dirname(filepath)
  base = os.path.basename(filepath)
  if not _is_chief(task_type, task_id, cluster_spec):
    dirpath = _get_temp_dir(dirpath, task_id)
  return os.path.join(dirpath, base)

checkpoint_dir = os.path.join(OUTDIR, 'ckpt')

# Define Strategy: the one autodist chose
the_plan, strategy = autodist.init()

# Model building/compiling need to be within `tf.distribute.Strategy.scope`:
# autodist's strategy is the global one.
multi_worker_model = build_cnn_model()

multi_worker_dataset = strategy.distribute_datasets_from_function(
    lambda input_context: dataset_fn(global_batch_size, input_context))
optimizer = tf.keras.optimizers.RMSprop(learning_rate=0.001)
train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(
    name='train_accuracy')

@tf.function
def train_step(iterator):
  """Training step function."""

  def step_fn(inputs):
    """Per-Replica step function."""
    x, y = inputs
    with tf.GradientTape() as tape:
      predictions = multi_worker_model(x, training=True)
      per_example_loss = tf.keras.losses.SparseCategoricalCrossentropy(
          from_logits=True,
          reduction="none")(y, predictions)
      loss = autodist.compute_average_loss(per_example_loss)
      model_losses = multi_worker_model.losses
      if model_losses:
        loss += tf.nn.scale_regularization_loss(tf.add_n(model_losses))

    grads = tape.gradient(loss, multi_worker_model.trainable_variables)
    optimizer.apply_gradients(
        zip(grads, multi_worker_model.trainable_variables))
    train_accuracy.update_state(y, predictions)

    return loss

  per_replica_losses = strategy.run(step_fn, args=(next(iterator),))
  return strategy.reduce(
      tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)

epoch = tf.Variable(
    initial_value=tf.constant(0, dtype=tf.dtypes.int64), name='epoch')
step_in_epoch = tf.Variable(
    initial_value=tf.constant(0, dtype=tf.dtypes.int64),
    name='step_in_epoch')

task_type, task_id, cluster_spec = (strategy.cluster_resolver.task_type,
                                    strategy.cluster_resolver.task_id,
                                    strategy.cluster_resolver.cluster_spec())

checkpoint = tf.train.Checkpoint(
    model=multi_worker_model, epoch=epoch, step_in_epoch=step_in_epoch)

write_checkpoint_dir = write_filepath(checkpoint_dir, task_type, task_id,
                                      cluster_spec)
checkpoint_manager = tf.train.CheckpointManager(
    checkpoint, directory=write_checkpoint_dir, max_to_keep=1)

# Restoring the checkpoint
latest_checkpoint = tf.train.latest_checkpoint(checkpoint_dir)
if latest_checkpoint:
  checkpoint.restore(latest_checkpoint)

losses, accuracies = [], []
# Resume our CTL training
while epoch.numpy() < num_epochs:
  iterator = iter(multi_worker_dataset)
  total_loss = 0.0
  num_batches = 0

  while step_in_epoch.numpy() < num_steps_per_epoch:
    total_loss += train_step(iterator)
    num_batches += 1
    step_in_epoch.assign_add(1)

  train_loss = total_loss / num_batches
  print('Epoch: %d, accuracy: %f, train_loss: %f.'
                %(epoch.numpy(), train_accuracy.result(), train_loss))
  losses.append(float(train_loss))
  accuracies.append(float(train_accuracy.result()))

  train_accuracy.reset_state()

  checkpoint_manager.save()
  if not _is_chief(task_type, task_id, cluster_spec):
    tf.io.gfile.rmtree(write_checkpoint_dir)

  epoch.assign_add(1)
  step_in_epoch.assign(0)

report(OUTDIR, {
    "plan": the_plan.strategy.value,
    "num_replicas": strategy.num_replicas_in_sync,
    "is_chief": _is_chief(task_type, task_id, cluster_spec),
    "global_strategy_is_autodists": tf.distribute.get_strategy() is strategy,
    "model_variable": variable_kind(multi_worker_model.trainable_variables[0]),
    "losses": losses,
    "accuracies": accuracies,
    "weights_sum": float(sum(np.abs(w).sum() for w in multi_worker_model.get_weights())),
    "checkpoint_files": files_under(checkpoint_dir),
})
