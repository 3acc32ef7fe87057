"""Parameter server training with ParameterServerStrategy, adapted to autodist.

Source: tensorflow/docs site/en/tutorials/distribute/parameter_server_training.ipynb (commit
7c36502, Apache 2.0): "Training with Model.fit", "Training with a custom training loop" and
"Evaluation", in one file that every task of the cluster runs.

Run:  TF_USE_LEGACY_KERAS=1 python -m autodist launch --workers 2 --ps 1 \\
          tests/tutorials/parameter_server_training.py OUTDIR
The tutorial's Keras is tf_keras: it uses ``tf.keras.optimizers.legacy``, which Keras 3 only
has as stubs that raise.

Changed from the tutorial, as a user adopting autodist would:
- ``import autodist`` is the first import.
- ``create_in_process_cluster(NUM_WORKERS, NUM_PS)`` (servers started in the notebook's own
  process) is gone: the launcher starts the chief, 2 workers and 1 ps as processes, and on the
  worker and ps tasks autodist serves instead of running the script on.
- ``strategy = tf.distribute.ParameterServerStrategy(cluster_resolver,
  variable_partitioner=...)`` became ``the_plan, strategy = autodist.init()`` (autodist sets the
  partitioner itself when there are several ps tasks).
- ``with strategy.scope():`` removed (four times).
- ``model.fit(dataset, epochs=5, steps_per_epoch=20, callbacks=callbacks)`` became
  ``autodist.fit(model, dataset, epochs=5, steps_per_epoch=20, callbacks=callbacks)``.
- ``tf.nn.compute_average_loss`` became ``autodist.compute_average_loss``.
- The cell that asserts the embedding is split in 2 shards (one per ps of the tutorial's 2) is
  left out: this cluster has 1 ps; the shards' shapes and devices are reported instead.
Changed to run here, small and repeatable:
- ``random.seed(0)`` before the examples are drawn; paths are under OUTDIR instead of
  ``/tmp/my_working_dir``.
- Added for the test: the History, the files written, every epoch's accuracy, the final loss
  and both evaluations are reported (chief only: the other tasks serve).
"""

import autodist

import os
import random
import sys

import tensorflow as tf

from synthetic_data import files_under, report

OUTDIR = sys.argv[1]
random.seed(0)

# Set the environment variable to allow reporting worker and ps failure to the
# coordinator. This is a workaround and won't be necessary in the future.
os.environ["GRPC_FAIL_FAST"] = "use_caller"

# The cluster comes from TF_CONFIG (set by the launcher); the strategy from autodist.
the_plan, strategy = autodist.init()

# Training with Model.fit
global_batch_size = 64

x = tf.random.uniform((10, 10))
y = tf.random.uniform((10,))

dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(10).repeat()
dataset = dataset.batch(global_batch_size)
dataset = dataset.prefetch(2)

model = tf.keras.models.Sequential([tf.keras.layers.Dense(10)])

model.compile(tf.keras.optimizers.legacy.SGD(), loss="mse", steps_per_execution=10)

working_dir = os.path.join(OUTDIR, "my_working_dir")
log_dir = os.path.join(working_dir, "log")
ckpt_filepath = os.path.join(working_dir, "ckpt")
backup_dir = os.path.join(working_dir, "backup")

callbacks = [
    tf.keras.callbacks.TensorBoard(log_dir=log_dir),
    tf.keras.callbacks.ModelCheckpoint(filepath=ckpt_filepath),
    tf.keras.callbacks.BackupAndRestore(backup_dir=backup_dir),
]

history = autodist.fit(model, dataset, epochs=5, steps_per_epoch=20, callbacks=callbacks)
result = {
    "plan": the_plan.strategy.value,
    "strategy": type(strategy).__name__,
    "global_strategy_is_autodists": tf.distribute.get_strategy() is strategy,
    "history": history.history,
    "fit_variable_device": model.trainable_variables[0].device,
    "files": files_under(working_dir),
}
report(OUTDIR, result)

# Training with a custom training loop
feature_vocab = [
    "avenger", "ironman", "batman", "hulk", "spiderman", "kingkong", "wonder_woman"
]
label_vocab = ["yes", "no"]

feature_lookup_layer = tf.keras.layers.StringLookup(
    vocabulary=feature_vocab,
    mask_token=None)
label_lookup_layer = tf.keras.layers.StringLookup(
    vocabulary=label_vocab,
    num_oov_indices=0,
    mask_token=None)

raw_feature_input = tf.keras.layers.Input(
    shape=(3,),
    dtype=tf.string,
    name="feature")
feature_id_input = feature_lookup_layer(raw_feature_input)
feature_preprocess_stage = tf.keras.Model(
    {"features": raw_feature_input},
    feature_id_input)

raw_label_input = tf.keras.layers.Input(
    shape=(1,),
    dtype=tf.string,
    name="label")
label_id_input = label_lookup_layer(raw_label_input)

label_preprocess_stage = tf.keras.Model(
    {"label": raw_label_input},
    label_id_input)

def feature_and_label_gen(num_examples=200):
  examples = {"features": [], "label": []}
  for _ in range(num_examples):
    features = random.sample(feature_vocab, 3)
    label = ["yes"] if "avenger" in features else ["no"]
    examples["features"].append(features)
    examples["label"].append(label)
  return examples

examples = feature_and_label_gen()

def dataset_fn(_):
  raw_dataset = tf.data.Dataset.from_tensor_slices(examples)

  train_dataset = raw_dataset.map(
      lambda x: (
          {"features": feature_preprocess_stage(x["features"])},
          label_preprocess_stage(x["label"])
      )).shuffle(200).batch(32).repeat()
  return train_dataset

# These variables created under the `Strategy.scope` will be placed on parameter
# servers in a round-robin fashion.
# Create the model. The input needs to be compatible with Keras processing layers.
model_input = tf.keras.layers.Input(
    shape=(3,), dtype=tf.int64, name="model_input")

emb_layer = tf.keras.layers.Embedding(
    input_dim=len(feature_lookup_layer.get_vocabulary()), output_dim=16384)
emb_output = tf.reduce_mean(emb_layer(model_input), axis=1)
dense_output = tf.keras.layers.Dense(
    units=1, activation="sigmoid",
    kernel_regularizer=tf.keras.regularizers.L2(1e-4),
)(emb_output)
model = tf.keras.Model({"features": model_input}, dense_output)

optimizer = tf.keras.optimizers.legacy.RMSprop(learning_rate=0.1)
accuracy = tf.keras.metrics.Accuracy()

for weight in emb_layer.weights:
  print(weight.device)
result["embedding_shards"] = [[list(w.shape), w.device] for w in emb_layer.weights]

@tf.function
def step_fn(iterator):

  def replica_fn(batch_data, labels):
    with tf.GradientTape() as tape:
      pred = model(batch_data, training=True)
      per_example_loss = tf.keras.losses.BinaryCrossentropy(
          reduction=tf.keras.losses.Reduction.NONE)(labels, pred)
      loss = autodist.compute_average_loss(per_example_loss)
      model_losses = model.losses
      if model_losses:
        loss += tf.nn.scale_regularization_loss(tf.add_n(model_losses))
    gradients = tape.gradient(loss, model.trainable_variables)

    optimizer.apply_gradients(zip(gradients, model.trainable_variables))

    actual_pred = tf.cast(tf.greater(pred, 0.5), tf.int64)
    accuracy.update_state(labels, actual_pred)
    return loss

  batch_data, labels = next(iterator)
  losses = strategy.run(replica_fn, args=(batch_data, labels))
  return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

@tf.function
def per_worker_dataset_fn():
  return strategy.distribute_datasets_from_function(dataset_fn)

per_worker_dataset = coordinator.create_per_worker_dataset(per_worker_dataset_fn)
per_worker_iterator = iter(per_worker_dataset)

num_epochs = 4
steps_per_epoch = 5
result["ctl_accuracy"] = []
for i in range(num_epochs):
  accuracy.reset_states()
  for _ in range(steps_per_epoch):
    coordinator.schedule(step_fn, args=(per_worker_iterator,))
  # Wait at epoch boundaries.
  coordinator.join()
  print("Finished epoch %d, accuracy is %f." % (i, accuracy.result().numpy()))
  result["ctl_accuracy"].append(float(accuracy.result().numpy()))

loss = coordinator.schedule(step_fn, args=(per_worker_iterator,))
print("Final loss is %f" % loss.fetch())
result["final_loss"] = float(loss.fetch())
report(OUTDIR, result)

# Evaluation: inline, on the coordinator
eval_dataset = tf.data.Dataset.from_tensor_slices(
    feature_and_label_gen(num_examples=16)).map(
          lambda x: (
              {"features": feature_preprocess_stage(x["features"])},
              label_preprocess_stage(x["label"])
          )).batch(8)

eval_accuracy = tf.keras.metrics.Accuracy()

for batch_data, labels in eval_dataset:
  pred = model(batch_data, training=False)
  actual_pred = tf.cast(tf.greater(pred, 0.5), tf.int64)
  eval_accuracy.update_state(labels, actual_pred)

print("Evaluation accuracy: %f" % eval_accuracy.result())
result["inline_eval_accuracy"] = float(eval_accuracy.result())
report(OUTDIR, result)

# Evaluation: distributed
# Define the eval metric on parameter servers.
eval_accuracy = tf.keras.metrics.Accuracy()

@tf.function
def eval_step(iterator):
  def replica_fn(batch_data, labels):
    pred = model(batch_data, training=False)
    actual_pred = tf.cast(tf.greater(pred, 0.5), tf.int64)
    eval_accuracy.update_state(labels, actual_pred)
  batch_data, labels = next(iterator)
  strategy.run(replica_fn, args=(batch_data, labels))

def eval_dataset_fn():
  return tf.data.Dataset.from_tensor_slices(
      feature_and_label_gen(num_examples=16)).map(
          lambda x: (
              {"features": feature_preprocess_stage(x["features"])},
              label_preprocess_stage(x["label"])
          )).shuffle(16).repeat().batch(8)

per_worker_eval_dataset = coordinator.create_per_worker_dataset(eval_dataset_fn)
per_worker_eval_iterator = iter(per_worker_eval_dataset)

eval_steps_per_epoch = 2
for _ in range(eval_steps_per_epoch):
  coordinator.schedule(eval_step, args=(per_worker_eval_iterator,))
coordinator.join()
print("Evaluation accuracy: %f" % eval_accuracy.result())
result["distributed_eval_accuracy"] = float(eval_accuracy.result())
report(OUTDIR, result)
