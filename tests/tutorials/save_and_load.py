"""Save and load a model using a distribution strategy, adapted to autodist.

Source: tensorflow/docs site/en/tutorials/distribute/save_and_load.ipynb (commit 7c36502,
Apache 2.0): "The Keras high-level API" (save, load, load under another strategy), "The
low-level API" (``tf.saved_model.save`` / ``load``, distributed inference), and "Saving
subclassed models" (trained with ``fit``).

Run:  AUTODIST_CPU_DEVICES=2 python tests/tutorials/save_and_load.py OUTDIR

Changed from the tutorial, as a user adopting autodist would:
- ``import autodist`` is the first import.
- ``mirrored_strategy = tf.distribute.MirroredStrategy()`` became
  ``mirrored_strategy = tf.distribute.get_strategy()`` (autodist's strategy, set globally; the
  tutorial reads ``num_replicas_in_sync`` for the batch size), and the ``another_strategy =
  tf.distribute.MirroredStrategy()`` of the distributed-inference cell became
  ``another_strategy = tf.distribute.get_strategy()`` (its ``run`` and
  ``experimental_distribute_dataset`` are kept).
- ``with mirrored_strategy.scope():`` and ``with another_strategy.scope():`` (Mirrored) removed.
- The cell that calls the loaded SavedModel's serving signature directly (loaded "without a
  strategy" in the tutorial; here autodist's is current) is wrapped in ``try``, so that what it
  raised is reported and the program goes on.
- ``model.fit(...)`` became ``autodist.fit(model, ...)`` with the same arguments.
- The cell that loads under a strategy the user picks by hand,
  ``OneDeviceStrategy('/cpu:0')``, is kept as it is, ``model.fit`` included: a hand-picked
  strategy is not autodist's to choose. It runs last, and what it did (or raised) is reported.
Changed for Keras 3 (needed with or without autodist), or left out:
- ``tensorflow_hub.KerasLayer`` (not installed, a tf_keras layer) is left out, and so are the
  cells that save a SavedModel through ``model.save(dir)`` (Keras 3 saves only ``.keras``
  files), the SavedModel of the not yet built subclassed model, and ``save_spec()`` (gone in
  Keras 3). The trained subclassed model is saved to ``OUTDIR/subclassed.keras``.
Changed to run here, small and offline:
- ``tfds.load("mnist")`` became ``tf.data.Dataset.from_tensor_slices`` over a synthetic MNIST of
  the same shapes and dtypes (512 train, 256 test images). Paths are under OUTDIR.
Added for the test: ``evaluate`` right before the ``.keras`` save and right after the load,
the optimizer's step count, and the serving signature's outputs (direct and distributed) next to
the Keras model's own, all reported in ``RESULT`` lines (the last line is the complete one).
"""

import autodist

import os
import sys

import tensorflow as tf

from synthetic_data import mnist_load_data, report, variable_kind

OUTDIR = sys.argv[1]
result = {}

mirrored_strategy = tf.distribute.get_strategy()  # autodist's

def get_data():
  (x_train, y_train), (x_test, y_test) = mnist_load_data()
  mnist_train = tf.data.Dataset.from_tensor_slices((x_train[..., None], y_train.astype("int64")))
  mnist_test = tf.data.Dataset.from_tensor_slices((x_test[..., None], y_test.astype("int64")))

  BUFFER_SIZE = 10000

  BATCH_SIZE_PER_REPLICA = 64
  BATCH_SIZE = BATCH_SIZE_PER_REPLICA * mirrored_strategy.num_replicas_in_sync

  def scale(image, label):
    image = tf.cast(image, tf.float32)
    image /= 255

    return image, label

  train_dataset = mnist_train.map(scale).cache().shuffle(BUFFER_SIZE).batch(BATCH_SIZE)
  eval_dataset = mnist_test.map(scale).batch(BATCH_SIZE)

  return train_dataset, eval_dataset

def get_model():
  model = tf.keras.Sequential([
      tf.keras.layers.Conv2D(32, 3, activation='relu', input_shape=(28, 28, 1)),
      tf.keras.layers.MaxPooling2D(),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(64, activation='relu'),
      tf.keras.layers.Dense(10)
  ])

  model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                optimizer=tf.keras.optimizers.Adam(),
                metrics=[tf.metrics.SparseCategoricalAccuracy()])
  return model

model = get_model()
train_dataset, eval_dataset = get_data()
history = autodist.fit(model, train_dataset, epochs=2)
result.update(num_replicas=mirrored_strategy.num_replicas_in_sync, plan=history.plan.strategy.value,
              history=history.history, model_variable=variable_kind(model.trainable_variables[0]))

# The Keras high-level API
keras_model_path = os.path.join(OUTDIR, 'keras_save.keras')
result["evaluate_before_save"] = model.evaluate(eval_dataset)
result["iterations_before_save"] = int(model.optimizer.iterations.numpy())
model.save(keras_model_path)

restored_keras_model = tf.keras.models.load_model(keras_model_path)
result["evaluate_after_load"] = restored_keras_model.evaluate(eval_dataset)
result["iterations_after_load"] = int(restored_keras_model.optimizer.iterations.numpy())
result["restored_variable"] = variable_kind(restored_keras_model.trainable_variables[0])
restored_history = autodist.fit(restored_keras_model, train_dataset, epochs=2)
result["restored_history"] = restored_history.history
result["iterations_after_restored_fit"] = int(restored_keras_model.optimizer.iterations.numpy())
report(OUTDIR, result)

# The low-level API: tf.saved_model.save / tf.saved_model.load
model = get_model()  # get a fresh model
saved_model_path = os.path.join(OUTDIR, 'tf_save')
tf.saved_model.save(model, saved_model_path)

DEFAULT_FUNCTION_KEY = 'serving_default'
predict_dataset = eval_dataset.map(lambda image, label: image)
try:  # the tutorial loads this one "without a strategy"; here autodist's is current
  loaded = tf.saved_model.load(saved_model_path)
  inference_func = loaded.signatures[DEFAULT_FUNCTION_KEY]

  for batch in predict_dataset.take(1):
    outputs = inference_func(batch)
    print(outputs)
    (output,) = outputs.values()
    result["signature_vs_model_max_diff"] = float(tf.reduce_max(tf.abs(output - model(batch))))
except Exception as err:  # reported: the tutorial shows this cell working
  result["signature_vs_model_max_diff"] = f"{type(err).__name__}: {str(err)[:600]}"

another_strategy = tf.distribute.get_strategy()  # autodist's
loaded = tf.saved_model.load(saved_model_path)
inference_func = loaded.signatures[DEFAULT_FUNCTION_KEY]

dist_predict_dataset = another_strategy.experimental_distribute_dataset(
    predict_dataset)

# Calling the function in a distributed manner
for batch in dist_predict_dataset:
  dist_result = another_strategy.run(inference_func, args=(batch,))
  print(dist_result)
  (per_replica,) = dist_result.values()
  local = another_strategy.experimental_local_results(per_replica)
  result["distributed_inference_replicas"] = len(local)
  images = tf.concat(another_strategy.experimental_local_results(batch), 0)
  result["distributed_vs_model_max_diff"] = float(tf.reduce_max(tf.abs(tf.concat(local, 0) - model(images))))
  break
report(OUTDIR, result)

# Saving subclassed models
class SubclassedModel(tf.keras.Model):
  """Example model defined by subclassing `tf.keras.Model`."""

  output_name = 'output_layer'

  def __init__(self):
    super(SubclassedModel, self).__init__()
    self._dense_layer = tf.keras.layers.Dense(
        5, dtype=tf.dtypes.float32, name=self.output_name)

  def call(self, inputs):
    return self._dense_layer(inputs)

my_model = SubclassedModel()
try:
  my_model.save(saved_model_path)
except ValueError as e:
  print(f'{type(e).__name__}: ', *e.args)

BATCH_SIZE_PER_REPLICA = 4
BATCH_SIZE = BATCH_SIZE_PER_REPLICA * mirrored_strategy.num_replicas_in_sync

dataset_size = 100
dataset = tf.data.Dataset.from_tensors(
    (tf.range(5, dtype=tf.float32), tf.range(5, dtype=tf.float32))
    ).repeat(dataset_size).batch(BATCH_SIZE)

my_model.compile(optimizer='adam', loss='mean_squared_error')
subclassed_history = autodist.fit(my_model, dataset, epochs=2)
result["subclassed_history"] = subclassed_history.history
result["subclassed_variable"] = variable_kind(my_model.trainable_variables[0])

my_model.save(os.path.join(OUTDIR, 'subclassed.keras'))
report(OUTDIR, result)

# Load the .keras model under a strategy picked by hand (kept as in the tutorial)
try:
  another_strategy = tf.distribute.OneDeviceStrategy('/cpu:0')
  with another_strategy.scope():
    restored_keras_model_ds = tf.keras.models.load_model(keras_model_path)
    restored_keras_model_ds.fit(train_dataset, epochs=2)
  result["one_device_strategy"] = "ok"
except Exception as err:  # reported: the tutorial shows this cell working
  result["one_device_strategy"] = f"{type(err).__name__}: {err}"
report(OUTDIR, result)
