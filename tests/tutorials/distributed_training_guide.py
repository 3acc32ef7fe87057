"""Distributed training with TensorFlow (the guide), adapted to autodist.

Source: tensorflow/docs site/en/guide/distributed_training.ipynb (commit 7c36502, Apache 2.0):
"Default Strategy", "Use tf.distribute.Strategy with Keras Model.fit" and "Use
tf.distribute.Strategy with custom training loops".

Run:  AUTODIST_CPU_DEVICES=2 python tests/tutorials/distributed_training_guide.py OUTDIR

Changed from the guide, as a user adopting autodist would:
- ``import autodist`` is the first import.
- The strategy-construction cells (MirroredStrategy with GPU lists or HierarchicalCopyAllReduce,
  MultiWorkerMirroredStrategy with NCCL, CentralStorageStrategy) are left out: choosing and
  configuring the strategy is what autodist does. So is the ``if GPUs: MirroredStrategy() else:
  get_strategy()`` choice: its ``else`` branch (``get_strategy()``, autodist's strategy) is kept,
  with its ``with strategy.scope(): print(tf.Variable(1.))``. (A ``tf.Variable`` made outside any
  scope and any Keras object is plain, as without autodist: docs/using.md.)
- The "Default Strategy" cells are kept as they are (``tf.distribute.get_strategy()`` and
  ``strategy.reduce("SUM", 1., axis=None)`` "in library code"); with autodist they run under the
  strategy autodist set globally. What they returned, or raised, is reported.
- Model.fit section: ``mirrored_strategy = tf.distribute.MirroredStrategy()`` and
  ``with mirrored_strategy.scope():`` removed; ``model.fit(...)`` became
  ``autodist.fit(model, ...)`` with the same arguments (twice); ``model.evaluate`` kept.
- Custom-loop section: ``mirrored_strategy`` comes from ``the_plan, mirrored_strategy =
  autodist.init()``, ``with mirrored_strategy.scope():`` removed, ``tf.nn.compute_average_loss``
  became ``autodist.compute_average_loss``.
Changed for Keras 3 (needed with or without autodist):
- ``reduction=tf.keras.losses.Reduction.NONE`` became ``reduction="none"``.
Added for the test: the initial weights of the custom-loop model and every step's loss are
reported, so the test can recompute the loop by hand; ``RESULT`` lines report the rest.
"""

import autodist

import sys

import tensorflow as tf

from synthetic_data import report, variable_kind

OUTDIR = sys.argv[1]
result = {}

# Default Strategy
default_strategy = tf.distribute.get_strategy()
result["default_strategy"] = type(default_strategy).__name__

# In optimizer or other library code
# Get currently active strategy
strategy = tf.distribute.get_strategy()
try:
  result["reduce_sum_1"] = float(strategy.reduce("SUM", 1., axis=None))  # reduce some values
except Exception as err:  # reported: the guide shows this line working
  result["reduce_sum_1"] = f"{type(err).__name__}: {err}"

# The guide's `else:  # Use the Default Strategy` branch: get_strategy(), here autodist's
strategy = tf.distribute.get_strategy()
with strategy.scope():
  # Do something interesting
  variable = tf.Variable(1.)
  print(variable)
result["variable"] = variable_kind(variable)
report(OUTDIR, result)

# Use tf.distribute.Strategy with Keras Model.fit
model = tf.keras.Sequential([
    tf.keras.layers.Dense(1, input_shape=(1,),
                          kernel_regularizer=tf.keras.regularizers.L2(1e-4))])
model.compile(loss='mse', optimizer='sgd')

dataset = tf.data.Dataset.from_tensors(([1.], [1.])).repeat(100).batch(10)
dataset_history = autodist.fit(model, dataset, epochs=2)
result["dataset_evaluate"] = model.evaluate(dataset)

import numpy as np

inputs, targets = np.ones((100, 1)), np.ones((100, 1))
arrays_history = autodist.fit(model, inputs, targets, epochs=2, batch_size=10)
result.update(dataset_history=dataset_history.history, arrays_history=arrays_history.history,
              fit_plan=arrays_history.plan.strategy.value,
              fit_model_variable=variable_kind(model.trainable_variables[0]))
report(OUTDIR, result)

# Use tf.distribute.Strategy with custom training loops
the_plan, mirrored_strategy = autodist.init()
result["num_replicas"] = mirrored_strategy.num_replicas_in_sync
result["global_strategy_is_autodists"] = tf.distribute.get_strategy() is mirrored_strategy

# Compute a global batch size using a number of replicas.
BATCH_SIZE_PER_REPLICA = 5
global_batch_size = (BATCH_SIZE_PER_REPLICA *
                     mirrored_strategy.num_replicas_in_sync)
dataset = tf.data.Dataset.from_tensors(([1.], [1.])).repeat(100)
dataset = dataset.batch(global_batch_size)

LEARNING_RATES_BY_BATCH_SIZE = {5: 0.1, 10: 0.15, 20:0.175}
learning_rate = LEARNING_RATES_BY_BATCH_SIZE[global_batch_size]

model = tf.keras.Sequential([
    tf.keras.layers.Dense(1, input_shape=(1,),
                          kernel_regularizer=tf.keras.regularizers.L2(1e-4))])
optimizer = tf.keras.optimizers.SGD()
result.update(global_batch_size=global_batch_size,
              initial_kernel=float(model.get_weights()[0][0, 0]),
              initial_bias=float(model.get_weights()[1][0]),
              sgd_learning_rate=float(optimizer.learning_rate.numpy()))

dataset = tf.data.Dataset.from_tensors(([1.], [1.])).repeat(1000).batch(
    global_batch_size)
dist_dataset = mirrored_strategy.experimental_distribute_dataset(dataset)

# Sets `reduction=NONE` to leave it to tf.nn.compute_average_loss() below.
loss_object = tf.keras.losses.BinaryCrossentropy(
  from_logits=True,
  reduction="none")

def train_step(inputs):
  features, labels = inputs

  with tf.GradientTape() as tape:
    predictions = model(features, training=True)
    per_example_loss = loss_object(labels, predictions)
    loss = autodist.compute_average_loss(per_example_loss)
    model_losses = model.losses
    if model_losses:
      loss += tf.nn.scale_regularization_loss(tf.add_n(model_losses))

  gradients = tape.gradient(loss, model.trainable_variables)
  optimizer.apply_gradients(zip(gradients, model.trainable_variables))
  return loss

@tf.function
def distributed_train_step(dist_inputs):
  per_replica_losses = mirrored_strategy.run(train_step, args=(dist_inputs,))
  return mirrored_strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses,
                         axis=None)

step_losses = []
for dist_inputs in dist_dataset:
  loss = distributed_train_step(dist_inputs)
  print(loss)
  step_losses.append(float(loss))

iterator = iter(dist_dataset)
for _ in range(10):
  loss = distributed_train_step(next(iterator))
  print(loss)
  step_losses.append(float(loss))

result.update(step_losses=step_losses, ctl_model_variable=variable_kind(model.trainable_variables[0]))
report(OUTDIR, result)
