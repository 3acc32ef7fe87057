"""Multi-GPU distributed training with TensorFlow (keras.io guide), adapted to autodist.

Source: keras-team/keras-io guides/distributed_training_with_tensorflow.py (commit 1806537,
Apache 2.0), all of its code.

Run:  AUTODIST_CPU_DEVICES=2 python tests/tutorials/keras_io_distributed_training.py OUTDIR

Changed from the guide, as a user adopting autodist would:
- ``import autodist`` is the first import (before ``os.environ["KERAS_BACKEND"]`` is set and
  TensorFlow and Keras are imported).
- ``strategy = tf.distribute.MirroredStrategy()`` (twice) and ``with strategy.scope():`` (twice)
  removed. ``print("Number of devices: ...")`` reads ``tf.distribute.get_strategy()``, the
  strategy autodist set globally.
- ``model.fit(...)`` became ``autodist.fit(model, ...)`` with the same arguments (twice);
  ``model.evaluate`` kept.
Changed to run here, small and offline:
- ``keras.datasets.mnist.load_data()`` became a synthetic MNIST of the same shapes and dtypes
  (640 train images of which ``num_val_samples = 128`` (10000 in the guide) for validation, 256
  test images).
- ``checkpoint_dir = "./ckpt"`` is ``OUTDIR/ckpt``.
- Added for the test: the Histories, the evaluation, and each run's optimizer step count are
  reported in ``RESULT`` lines (the last line is the complete one).
"""

import autodist

import os
import sys

os.environ["KERAS_BACKEND"] = "tensorflow"

import tensorflow as tf
import keras

from synthetic_data import files_under, mnist_load_data, report, variable_kind

OUTDIR = sys.argv[1]
result = {"runs": []}


def get_compiled_model():
    # Make a simple 2-layer densely-connected neural network.
    inputs = keras.Input(shape=(784,))
    x = keras.layers.Dense(256, activation="relu")(inputs)
    x = keras.layers.Dense(256, activation="relu")(x)
    outputs = keras.layers.Dense(10)(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
    )
    return model


def get_dataset():
    batch_size = 32
    num_val_samples = 128

    # Return the MNIST dataset in the form of a `tf.data.Dataset`.
    (x_train, y_train), (x_test, y_test) = mnist_load_data(num_train=640, num_test=256)

    # Preprocess the data (these are Numpy arrays)
    x_train = x_train.reshape(-1, 784).astype("float32") / 255
    x_test = x_test.reshape(-1, 784).astype("float32") / 255
    y_train = y_train.astype("float32")
    y_test = y_test.astype("float32")

    # Reserve num_val_samples samples for validation
    x_val = x_train[-num_val_samples:]
    y_val = y_train[-num_val_samples:]
    x_train = x_train[:-num_val_samples]
    y_train = y_train[:-num_val_samples]
    return (
        tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(batch_size),
        tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(batch_size),
        tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(batch_size),
    )


# The strategy autodist chose, and set globally.
print("Number of devices: {}".format(tf.distribute.get_strategy().num_replicas_in_sync))

# Everything that creates variables is under autodist's strategy.
model = get_compiled_model()

# Train the model on all available devices.
train_dataset, val_dataset, test_dataset = get_dataset()
history = autodist.fit(model, train_dataset, epochs=2, validation_data=val_dataset)

# Test the model on all available devices.
result["evaluate"] = model.evaluate(test_dataset)
result.update(num_replicas=tf.distribute.get_strategy().num_replicas_in_sync,
              plan=history.plan.strategy.value, history=history.history,
              model_variable=variable_kind(model.trainable_variables[0]))
report(OUTDIR, result)

# Using callbacks to ensure fault tolerance

# Prepare a directory to store all the checkpoints.
checkpoint_dir = os.path.join(OUTDIR, "ckpt")
if not os.path.exists(checkpoint_dir):
    os.makedirs(checkpoint_dir)


def make_or_restore_model():
    # Either restore the latest model, or create a fresh one
    # if there is no checkpoint available.
    checkpoints = [checkpoint_dir + "/" + name for name in os.listdir(checkpoint_dir)]
    if checkpoints:
        latest_checkpoint = max(checkpoints, key=os.path.getctime)
        print("Restoring from", latest_checkpoint)
        return keras.models.load_model(latest_checkpoint)
    print("Creating a new model")
    return get_compiled_model()


def run_training(epochs=1):
    # Create/restore the model (under autodist's strategy)
    model = make_or_restore_model()

    callbacks = [
        # This callback saves a SavedModel every epoch
        # We include the current epoch in the folder name.
        keras.callbacks.ModelCheckpoint(
            filepath=checkpoint_dir + "/ckpt-{epoch}.keras",
            save_freq="epoch",
        )
    ]
    history = autodist.fit(
        model,
        train_dataset,
        epochs=epochs,
        callbacks=callbacks,
        validation_data=val_dataset,
        verbose=2,
    )
    result["runs"].append({"history": history.history,
                           "iterations": int(model.optimizer.iterations.numpy()),
                           "checkpoints": files_under(checkpoint_dir)})


# Running the first time creates the model
run_training(epochs=1)

# Calling the same function again will resume from where we left off
run_training(epochs=1)
report(OUTDIR, result)
