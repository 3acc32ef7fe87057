"""The distributed-training guide's MirroredStrategy programs, as the guide has them: the script
builds its own strategies and scopes and calls ``model.fit``, ``evaluate`` and ``predict``.
The tests run it as it is, and adopted as a user adopts autodist (the import added; the fit
calls changed, or kept), on 2 logical CPUs, and compare the numbers.

Source: tensorflow/docs site/en/guide/distributed_training.ipynb (Apache 2.0): the strategy
construction cells (MirroredStrategy, with a device list, with HierarchicalCopyAllReduce;
CentralStorageStrategy), "Use tf.distribute.Strategy with Keras Model.fit" and "Use
tf.distribute.Strategy with custom training loops", in order.

Changed to run here (not for autodist):
- ``tf.keras.utils.set_random_seed(1)`` first, so runs can be compared.
- ``reduction=tf.keras.losses.Reduction.NONE`` is ``reduction="none"`` (Keras 3).
- Added for the test: the Histories, evaluations, a prediction, every custom-loop loss and the
  final weights go to ``OUTDIR/single.json``.
"""

import os
import sys

import numpy as np
import tensorflow as tf

from synthetic_data import report  # tests/tutorials, on PYTHONPATH

OUTDIR = sys.argv[1]
tf.keras.utils.set_random_seed(1)
result = {}

# Types of strategies: MirroredStrategy
mirrored_strategy = tf.distribute.MirroredStrategy()
mirrored_strategy = tf.distribute.MirroredStrategy(devices=["/gpu:0", "/gpu:1"])
mirrored_strategy = tf.distribute.MirroredStrategy(
    cross_device_ops=tf.distribute.HierarchicalCopyAllReduce())
# CentralStorageStrategy
central_storage_strategy = tf.distribute.experimental.CentralStorageStrategy()

# Use tf.distribute.Strategy with Keras Model.fit
mirrored_strategy = tf.distribute.MirroredStrategy()

with mirrored_strategy.scope():
  model = tf.keras.Sequential([
      tf.keras.layers.Dense(1, input_shape=(1,),
                            kernel_regularizer=tf.keras.regularizers.L2(1e-4))])
  model.compile(loss='mse', optimizer='sgd')

dataset = tf.data.Dataset.from_tensors(([1.], [1.])).repeat(100).batch(10)
history = model.fit(dataset, epochs=2)
result["dataset_history"] = history.history
result["dataset_evaluate"] = model.evaluate(dataset)
result["plan"] = list(getattr(getattr(history, "plan", None), "reasons", []) or [])

inputs, targets = np.ones((100, 1)), np.ones((100, 1))
history = model.fit(inputs, targets, epochs=2, batch_size=10)
result["arrays_history"] = history.history
result["arrays_evaluate"] = model.evaluate(inputs, targets, batch_size=10)
result["predict"] = model.predict(np.linspace(-1, 1, 8).reshape(8, 1))
result["fit_weights"] = model.get_weights()
model.save(os.path.join(OUTDIR, "guide.keras"))
result["reloaded_evaluate"] = tf.keras.models.load_model(os.path.join(OUTDIR, "guide.keras")).evaluate(inputs, targets, batch_size=10)
result["num_replicas"] = mirrored_strategy.num_replicas_in_sync

# Use tf.distribute.Strategy with custom training loops
with mirrored_strategy.scope():
  model = tf.keras.Sequential([
      tf.keras.layers.Dense(1, input_shape=(1,),
                            kernel_regularizer=tf.keras.regularizers.L2(1e-4))])
  optimizer = tf.keras.optimizers.SGD()

# Compute a global batch size using a number of replicas.
BATCH_SIZE_PER_REPLICA = 5
global_batch_size = (BATCH_SIZE_PER_REPLICA *
                     mirrored_strategy.num_replicas_in_sync)
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
    loss = tf.nn.compute_average_loss(per_example_loss)
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

losses = []
for dist_inputs in dist_dataset:
  losses.append(float(distributed_train_step(dist_inputs)))
result["loop_losses"] = losses
result["loop_weights"] = model.get_weights()
report(OUTDIR, result)
