"""Scaling worker: one process pinned to one core, 1 intra-op and 1 inter-op thread.

Usage: python benchmarks/_scaling.py STEPS PER_WORKER_BATCH MODE   (MODE: autodist | per_epoch | hand)
``per_epoch`` (2 workers only) turns off autodist's one-iterator-per-run input, to measure it.
``hand`` (2 workers, tf_keras) builds MultiWorkerMirrored by hand instead of calling autodist.
Without TF_CONFIG it trains alone (on core ``BENCH_CORE``, default 0); under ``autodist launch``
each worker pins itself to core <task index>. The chief prints ``RESULT`` with samples/s over the timed epochs and, in a
cluster, the time of one all-reduce of the model's gradients.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
STEPS, PER_WORKER, MODE = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
config = json.loads(os.environ.get("TF_CONFIG") or "{}")
index = config["task"]["index"] if config else 0
num_workers = len(config["cluster"]["worker"]) if config else 1
os.sched_setaffinity(0, {int(os.environ.get("BENCH_CORE", index)) % os.cpu_count()})
if MODE == "hand":  # the hand-written arm creates MultiWorkerMirrored itself, as without autodist
    os.environ["AUTODIST_ACTIVATE"] = "0"

import autodist  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras as keras  # noqa: E402
else:
    import keras  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
GLOBAL = PER_WORKER * num_workers
EPOCHS = 3  # the first one (tracing, connecting) is not timed
rng = np.random.default_rng(index)
MLP = os.environ.get("BENCH_MODEL") == "mlp"  # issue 13's MLP 512-1024-1024-10; else the CNN
X = rng.random((STEPS * GLOBAL, 512) if MLP else (STEPS * GLOBAL, 32, 32, 3), dtype=np.float32)
Y = rng.integers(0, 10, STEPS * GLOBAL).astype("int32")


def build():
    keras.utils.set_random_seed(0)
    if MLP:
        dense = [keras.Input((512,)), keras.layers.Dense(1024, activation="relu"), keras.layers.Dense(1024, activation="relu"), keras.layers.Dense(10)]
        model = keras.Sequential(dense)
        model.compile(optimizer=keras.optimizers.SGD(0.01), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model
    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


class Timer(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.starts, self.ends = {}, {}

    def on_epoch_begin(self, epoch, logs=None):
        self.starts[epoch] = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.ends[epoch] = time.perf_counter()


timer = Timer()
if num_workers == 1:
    # One worker's fastest input: one endless dataset, one pass per epoch, one iterator. The
    # default strategy would otherwise take Keras's own per-epoch array path, a slower baseline.
    autodist.init()
    data = tf.data.Dataset.from_tensor_slices((X, Y)).batch(GLOBAL).repeat()
    history = autodist.fit(build, data, epochs=EPOCHS, steps_per_epoch=STEPS, verbose=0, callbacks=[timer], backup_dir=False)
elif MODE == "hand":
    # MultiWorkerMirrored written by hand, as the TensorFlow tutorial does it: the strategy first,
    # the model in its scope, a dataset of global batches (auto-sharded by DATA). Run with tf_keras:
    # Keras 3 fit fails under a hand-made MultiWorkerMirrored (keras#20585).
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = build()
    data = tf.data.Dataset.from_tensor_slices((X, Y)).batch(GLOBAL)
    history = model.fit(data, epochs=EPOCHS, verbose=0, callbacks=[timer])
else:
    if MODE == "per_epoch":  # the A/B of autodist's input choice: Keras 3's per-epoch iterators
        import autodist.core.inputs

        autodist.core.inputs.one_iterator_per_run = lambda dataset, the_plan, fit_kwargs: (dataset, None)
    # What users write: arrays and a global batch; autodist builds the multi-worker input.
    history = autodist.fit(build, X, Y, batch_size=GLOBAL, epochs=EPOCHS, verbose=0, callbacks=[timer], shuffle=False, backup_dir=False)
model, strategy = history.model, history.model.distribute_strategy
seconds = sum(timer.ends[e] - timer.starts[e] for e in range(1, EPOCHS))
result = {"samples_per_second": (EPOCHS - 1) * STEPS * GLOBAL / seconds, "num_workers": num_workers, "params": model.count_params(),
          "step_ms": seconds / ((EPOCHS - 1) * STEPS) * 1000}
if hasattr(history, "plan"):  # what autodist picked
    result["plan"] = history.plan.strategy.value
checked = [r for r in getattr(history, "plan", None).reasons if r.startswith("communication check")] if hasattr(history, "plan") else []
if checked:  # autodist's projection before training (autodist.tensorflow.comm_check)
    import re

    result["projected_speedup"] = float(re.search(r"projected ([0-9.]+)x", checked[0]).group(1))
    result["communication_check"] = checked[0]


def input_ms_per_step(dataset) -> float:
    """Milliseconds per step to produce this worker's batch alone (no training), after 2 steps."""
    iterator = iter(strategy.experimental_distribute_dataset(dataset.repeat()))
    for _ in range(2):
        next(iterator)
    start = time.perf_counter()
    for _ in range(STEPS):
        next(iterator)
    return (time.perf_counter() - start) / STEPS * 1000


if num_workers == 1:
    result["input_ms"] = input_ms_per_step(tf.data.Dataset.from_tensor_slices((X, Y)).batch(GLOBAL))
else:
    from autodist.core.batching import arrays_to_dataset

    result["input_ms"] = input_ms_per_step(arrays_to_dataset(X, Y, global_batch_size=GLOBAL, shuffle=False)[0])
if num_workers > 1:
    def timed_all_reduce(values):
        """Milliseconds per all-reduce of ``values`` across the workers (20 calls after 1)."""

        @tf.function
        def all_reduce():
            return strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("SUM", values))

        all_reduce()
        start = time.perf_counter()
        for _ in range(20):
            all_reduce()
        return (time.perf_counter() - start) / 20 * 1000

    # the gradients' all-reduce, and a scalar one (the latency every per-step collective pays)
    result["all_reduce_ms"] = timed_all_reduce([tf.zeros_like(v) for v in model.trainable_variables])
    result["scalar_all_reduce_ms"] = timed_all_reduce([tf.zeros(())])

if index == 0:
    print("RESULT " + json.dumps(result), flush=True)
