"""Custom training with tf.distribute.Strategy, adapted to autodist.

Source: tensorflow/docs site/en/tutorials/distribute/custom_training.ipynb (commit 7c36502,
Apache 2.0), its code cells in order except where noted.

Run:  AUTODIST_CPU_DEVICES=2 python tests/tutorials/custom_training.py OUTDIR
The one-device reference (autodist's default strategy: a plain loop) at the same global batch:
      python tests/tutorials/custom_training.py OUTDIR 128

Changed from the tutorial, as a user adopting autodist would:
- ``import autodist`` is the first import.
- ``strategy = tf.distribute.MirroredStrategy()`` is gone: the code from there on is the body of
  ``main(strategy)``, decorated with ``@autodist.distributed``, which fills ``strategy`` with the
  one autodist chose (Mirrored over 2 logical CPUs here). ``strategy.run``,
  ``strategy.experimental_distribute_dataset`` and ``strategy.reduce`` are kept.
- ``with strategy.scope():`` removed (three times).
- ``tf.nn.compute_average_loss(per_example_loss)`` became
  ``autodist.compute_average_loss(per_example_loss)``.
Changed for Keras 3 (needed with or without autodist):
- ``model.build((None, 28, 28, 1))`` and ``optimizer.build(model.trainable_variables)`` before
  the first step, as autodist's docs/using.md says for Keras 3 custom loops: Adam building its slots
  inside ``strategy.run`` fails under Mirrored ("You must feed a value for placeholder tensor").
- ``reduction=tf.keras.losses.Reduction.NONE`` became ``reduction="none"``, and
  ``metric.reset_states()`` became ``metric.reset_state()``.
Changed to run here, small, offline and repeatable:
- ``fashion_mnist.load_data()`` became a synthetic data set of the same shapes and dtypes (640
  train, 256 test images: 5 global batches of 128, 2 test batches).
- ``EPOCHS = 10`` became 3; the "iterate with an iterator" cell runs ``range(5)`` steps (one pass
  of this data) instead of ``range(10)``.
- ``tf.keras.utils.set_random_seed(0)`` at the top and ``shuffle(BUFFER_SIZE, seed=0)``, so this
  run and the one-device reference see the same weights and batches.
- ``BATCH_SIZE_PER_REPLICA = 64`` unless the command line gives another (the one-device
  reference passes 128, so that its batches are the 2-replica run's global batches).
- The checkpoint directory is under OUTDIR.
- The restore cells ("restore without a strategy", cells 32-34) run last, after the two
  iterator-loop cells (36, 38): they only read the checkpoint written by the main loop.
- Added for the test: losses and accuracies are collected and reported in ``RESULT`` lines (the
  last line is the complete one).
"""

import autodist

import os
import sys

# Import TensorFlow
import tensorflow as tf

# Helper libraries
import numpy as np

from synthetic_data import files_under, mnist_load_data, report, variable_kind

OUTDIR = sys.argv[1]
PER_REPLICA = int(sys.argv[2]) if len(sys.argv) > 2 else 64

print(tf.__version__)
tf.keras.utils.set_random_seed(0)

(train_images, train_labels), (test_images, test_labels) = mnist_load_data(num_train=640, num_test=256)

# Add a dimension to the array -> new shape == (28, 28, 1)
train_images = train_images[..., None]
test_images = test_images[..., None]

# Scale the images to the [0, 1] range.
train_images = train_images / np.float32(255)
test_images = test_images / np.float32(255)

result = {}


@autodist.distributed
def main(strategy):
  print('Number of devices: {}'.format(strategy.num_replicas_in_sync))

  BUFFER_SIZE = len(train_images)

  BATCH_SIZE_PER_REPLICA = PER_REPLICA
  GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync

  EPOCHS = 3

  train_dataset = tf.data.Dataset.from_tensor_slices((train_images, train_labels)).shuffle(BUFFER_SIZE, seed=0).batch(GLOBAL_BATCH_SIZE)
  test_dataset = tf.data.Dataset.from_tensor_slices((test_images, test_labels)).batch(GLOBAL_BATCH_SIZE)

  train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset)
  test_dist_dataset = strategy.experimental_distribute_dataset(test_dataset)

  def create_model():
    regularizer = tf.keras.regularizers.L2(1e-5)
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(32, 3,
                               activation='relu',
                               kernel_regularizer=regularizer),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(64, 3,
                               activation='relu',
                               kernel_regularizer=regularizer),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64,
                              activation='relu',
                              kernel_regularizer=regularizer),
        tf.keras.layers.Dense(10, kernel_regularizer=regularizer)
      ])

    return model

  # Create a checkpoint directory to store the checkpoints.
  checkpoint_dir = os.path.join(OUTDIR, 'training_checkpoints')
  checkpoint_prefix = os.path.join(checkpoint_dir, "ckpt")

  # Set reduction to `NONE` so you can do the reduction yourself.
  loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
      from_logits=True,
      reduction="none")
  def compute_loss(labels, predictions, model_losses):
    per_example_loss = loss_object(labels, predictions)
    loss = autodist.compute_average_loss(per_example_loss)
    if model_losses:
      loss += tf.nn.scale_regularization_loss(tf.add_n(model_losses))
    return loss

  test_loss = tf.keras.metrics.Mean(name='test_loss')

  train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(
      name='train_accuracy')
  test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(
      name='test_accuracy')

  # A model, an optimizer, and a checkpoint must be created under `strategy.scope`.
  model = create_model()

  optimizer = tf.keras.optimizers.Adam(learning_rate=0.001)
  # Keras 3 (autodist docs/using.md): build Adam before the first step of a custom loop.
  model.build((None, 28, 28, 1))
  optimizer.build(model.trainable_variables)

  checkpoint = tf.train.Checkpoint(optimizer=optimizer, model=model)

  def train_step(inputs):
    images, labels = inputs

    with tf.GradientTape() as tape:
      predictions = model(images, training=True)
      loss = compute_loss(labels, predictions, model.losses)

    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))

    train_accuracy.update_state(labels, predictions)
    return loss

  def test_step(inputs):
    images, labels = inputs

    predictions = model(images, training=False)
    t_loss = loss_object(labels, predictions)

    test_loss.update_state(t_loss)
    test_accuracy.update_state(labels, predictions)

  # `run` replicates the provided computation and runs it
  # with the distributed input.
  @tf.function
  def distributed_train_step(dataset_inputs):
    per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses,
                           axis=None)

  @tf.function
  def distributed_test_step(dataset_inputs):
    return strategy.run(test_step, args=(dataset_inputs,))

  result.update(num_replicas=strategy.num_replicas_in_sync, strategy=type(strategy).__name__,
                epochs=[], iterator_epochs=[], tf_function_epochs=[])
  for epoch in range(EPOCHS):
    # TRAIN LOOP
    total_loss = 0.0
    num_batches = 0
    for x in train_dist_dataset:
      total_loss += distributed_train_step(x)
      num_batches += 1
    train_loss = total_loss / num_batches

    # TEST LOOP
    for x in test_dist_dataset:
      distributed_test_step(x)

    if epoch % 2 == 0:
      checkpoint.save(checkpoint_prefix)

    template = ("Epoch {}, Loss: {}, Accuracy: {}, Test Loss: {}, "
                "Test Accuracy: {}")
    print(template.format(epoch + 1, train_loss,
                           train_accuracy.result() * 100, test_loss.result(),
                           test_accuracy.result() * 100))
    result["epochs"].append({"loss": float(train_loss), "accuracy": float(train_accuracy.result()),
                             "test_loss": float(test_loss.result()),
                             "test_accuracy": float(test_accuracy.result())})

    test_loss.reset_state()
    train_accuracy.reset_state()
    test_accuracy.reset_state()
  result.update(model_variable=variable_kind(model.trainable_variables[0]),
                checkpoints=files_under(checkpoint_dir))
  report(OUTDIR, result)

  # Alternate ways of iterating over a dataset: using iterators
  for _ in range(EPOCHS):
    total_loss = 0.0
    num_batches = 0
    train_iter = iter(train_dist_dataset)

    for _ in range(5):
      total_loss += distributed_train_step(next(train_iter))
      num_batches += 1
    average_train_loss = total_loss / num_batches

    template = ("Epoch {}, Loss: {}, Accuracy: {}")
    print(template.format(epoch + 1, average_train_loss, train_accuracy.result() * 100))
    result["iterator_epochs"].append(float(average_train_loss))
    train_accuracy.reset_state()

  # Iterating inside a tf.function
  @tf.function
  def distributed_train_epoch(dataset):
    total_loss = 0.0
    num_batches = 0
    for x in dataset:
      per_replica_losses = strategy.run(train_step, args=(x,))
      total_loss += strategy.reduce(
        tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)
      num_batches += 1
    return total_loss / tf.cast(num_batches, dtype=tf.float32)

  for epoch in range(EPOCHS):
    train_loss = distributed_train_epoch(train_dist_dataset)

    template = ("Epoch {}, Loss: {}, Accuracy: {}")
    print(template.format(epoch + 1, train_loss, train_accuracy.result() * 100))
    result["tf_function_epochs"].append(float(train_loss))

    train_accuracy.reset_state()
  report(OUTDIR, result)

  # Restore the latest checkpoint and test ("without a strategy" in the tutorial)
  eval_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(
        name='eval_accuracy')

  new_model = create_model()
  new_optimizer = tf.keras.optimizers.Adam()

  test_dataset = tf.data.Dataset.from_tensor_slices((test_images, test_labels)).batch(GLOBAL_BATCH_SIZE)

  @tf.function
  def eval_step(images, labels):
    predictions = new_model(images, training=False)
    eval_accuracy(labels, predictions)

  checkpoint = tf.train.Checkpoint(optimizer=new_optimizer, model=new_model)
  checkpoint.restore(tf.train.latest_checkpoint(checkpoint_dir))

  for images, labels in test_dataset:
    eval_step(images, labels)

  print('Accuracy after restoring the saved model without strategy: {}'.format(
      eval_accuracy.result() * 100))
  result["restored_accuracy"] = float(eval_accuracy.result())
  report(OUTDIR, result)


main()
