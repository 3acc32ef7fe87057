"""Distributed training with Keras, adapted to autodist.

Source: tensorflow/docs site/en/tutorials/distribute/keras.ipynb (commit 7c36502, Apache 2.0),
its code cells in order.

Run:  AUTODIST_CPU_DEVICES=2 python tests/tutorials/keras_mirrored.py OUTDIR

Changed from the tutorial, as a user adopting autodist would:
- ``import autodist`` is the first import.
- ``strategy = tf.distribute.MirroredStrategy()`` became ``strategy = tf.distribute.get_strategy()``:
  autodist chose the strategy (Mirrored over 2 logical CPUs here) and set it as TensorFlow's
  global one, and the tutorial still reads ``strategy.num_replicas_in_sync`` for the batch size.
- ``with strategy.scope():`` removed (around the model, and around the "load with
  Strategy.scope" cell, which is now the same code as the cell before it).
- ``model.fit(train_dataset, epochs=EPOCHS, callbacks=callbacks)`` became
  ``autodist.fit(model, train_dataset, epochs=EPOCHS, callbacks=callbacks)``.
Changed to run here, small and offline:
- ``tfds.load("mnist")`` became ``tf.data.Dataset.from_tensor_slices`` over a synthetic MNIST of
  the same shape and dtype (512 train, 256 test images): 4 steps per epoch.
- ``EPOCHS = 12`` became 8: epochs 1-8 still show all three learning rates of ``decay``.
- Paths (``./training_checkpoints``, ``./logs``, ``my_model.keras``) are under OUTDIR.
- Notebook-only cells (``%load_ext``, ``%tensorboard``, ``!ls``) are left out.
- Added for the test: the History that ``fit`` returns and every evaluation are kept, and one
  ``RESULT`` line reports them with the files written. PrintLR's own lines are read from stdout.
"""

import autodist

import os
import sys

import tensorflow as tf

from synthetic_data import files_under, mnist_load_data, report, variable_kind

OUTDIR = sys.argv[1]

print(tf.__version__)

# Download the dataset
(x_train, y_train), (x_test, y_test) = mnist_load_data()
mnist_train = tf.data.Dataset.from_tensor_slices((x_train[..., None], y_train.astype("int64")))
mnist_test = tf.data.Dataset.from_tensor_slices((x_test[..., None], y_test.astype("int64")))

# Define the distribution strategy: autodist's
strategy = tf.distribute.get_strategy()

print('Number of devices: {}'.format(strategy.num_replicas_in_sync))

# Set up the input pipeline
num_train_examples = len(x_train)
num_test_examples = len(x_test)

BUFFER_SIZE = 10000

BATCH_SIZE_PER_REPLICA = 64
BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync


def scale(image, label):
  image = tf.cast(image, tf.float32)
  image /= 255

  return image, label


train_dataset = mnist_train.map(scale).cache().shuffle(BUFFER_SIZE).batch(BATCH_SIZE)
eval_dataset = mnist_test.map(scale).batch(BATCH_SIZE)

# Create the model and instantiate the optimizer
model = tf.keras.Sequential([
    tf.keras.layers.Conv2D(32, 3, activation='relu', input_shape=(28, 28, 1)),
    tf.keras.layers.MaxPooling2D(),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(64, activation='relu'),
    tf.keras.layers.Dense(10)
])

model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              optimizer=tf.keras.optimizers.Adam(learning_rate=0.001),
              metrics=['accuracy'])

# Define the callbacks
# Define the checkpoint directory to store the checkpoints.
checkpoint_dir = os.path.join(OUTDIR, 'training_checkpoints')
# Define the name of the checkpoint files.
checkpoint_prefix = os.path.join(checkpoint_dir, "ckpt_{epoch:04d}.weights.h5")


# Define a function for decaying the learning rate.
# You can define any decay function you need.
def decay(epoch):
  if epoch < 3:
    return 1e-3
  elif epoch >= 3 and epoch < 7:
    return 1e-4
  else:
    return 1e-5


# Define a callback for printing the learning rate at the end of each epoch.
class PrintLR(tf.keras.callbacks.Callback):
  def on_epoch_end(self, epoch, logs=None):
    print('\nLearning rate for epoch {} is {}'.format(epoch + 1, model.optimizer.learning_rate.numpy()))


# Put all the callbacks together.
callbacks = [
    tf.keras.callbacks.TensorBoard(log_dir=os.path.join(OUTDIR, 'logs')),
    tf.keras.callbacks.ModelCheckpoint(filepath=checkpoint_prefix,
                                       save_weights_only=True),
    tf.keras.callbacks.LearningRateScheduler(decay),
    PrintLR()
]

# Train and evaluate
EPOCHS = 8

history = autodist.fit(model, train_dataset, epochs=EPOCHS, callbacks=callbacks)

import pathlib
latest_checkpoint = sorted(pathlib.Path(checkpoint_dir).glob('*'))[-1]

model.load_weights(latest_checkpoint)

eval_loss, eval_acc = model.evaluate(eval_dataset)

print('Eval loss: {}, Eval accuracy: {}'.format(eval_loss, eval_acc))
evaluations = {"after_load_weights": [eval_loss, eval_acc]}

# Save the model
path = os.path.join(OUTDIR, 'my_model.keras')

model.save(path)

# Load the model (the tutorial: "without Strategy.scope")
unreplicated_model = tf.keras.models.load_model(path)

unreplicated_model.compile(
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    optimizer=tf.keras.optimizers.Adam(),
    metrics=['accuracy'])

eval_loss, eval_acc = unreplicated_model.evaluate(eval_dataset)

print('Eval loss: {}, Eval Accuracy: {}'.format(eval_loss, eval_acc))
evaluations["unreplicated_model"] = [eval_loss, eval_acc]

# Load the model (the tutorial: "with Strategy.scope"; the scope is autodist's, set globally)
replicated_model = tf.keras.models.load_model(path)
replicated_model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                         optimizer=tf.keras.optimizers.Adam(),
                         metrics=['accuracy'])

eval_loss, eval_acc = replicated_model.evaluate(eval_dataset)
print ('Eval loss: {}, Eval Accuracy: {}'.format(eval_loss, eval_acc))
evaluations["replicated_model"] = [eval_loss, eval_acc]

report(OUTDIR, {
    "strategy": type(strategy).__name__,
    "num_replicas": strategy.num_replicas_in_sync,
    "plan": history.plan.strategy.value,
    "model_variable": variable_kind(model.trainable_variables[0]),
    "loaded_variable": variable_kind(replicated_model.trainable_variables[0]),
    "history": history.history,
    "evaluations": evaluations,
    "checkpoints": files_under(checkpoint_dir),
    "logs": files_under(os.path.join(OUTDIR, 'logs')),
})
