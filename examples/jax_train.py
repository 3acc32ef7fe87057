"""Keras 3 on JAX: the same autodist.fit line, distributed with keras.distribution.

One process over the devices JAX sees (on a CPU, split it into 4 first):

    KERAS_BACKEND=jax XLA_FLAGS=--xla_force_host_platform_device_count=4 python examples/jax_train.py

Two processes on this machine (127.0.0.1 only), data parallel across both:

    KERAS_BACKEND=jax python -m autodist launch --workers 2 examples/jax_train.py

`--weights DIR` saves each process's trained weights there (the tests compare them).
"""

import argparse
import os

import autodist  # first: in a cluster, it joins the processes when JAX is imported
import keras
import numpy as np
from autodist.demo import load_digits

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--no-shuffle", action="store_true", help="the same batches as one process would train on")
parser.add_argument("--weights", help="a folder for each process's trained weights (weights-<process>.npz)")
args = parser.parse_args()

keras.utils.set_random_seed(0)  # the same initial weights in every process
model = keras.Sequential(
    [keras.Input((64,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)], name="digits"
)
model.compile(
    optimizer=keras.optimizers.SGD(0.05, momentum=0.9),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)
x, y = load_digits()
x, y = x[:1760], y[:1760]  # 1408 to train, 352 to validate: both split evenly over 2 or 4 replicas
history = autodist.fit(
    model, x, y, batch_size=64, epochs=args.epochs, validation_split=0.2, shuffle=not args.no_shuffle, verbose=0
)
if autodist.is_chief():
    plan = history.plan
    print(f"plan: {plan.strategy.value}, mesh {plan.mesh_shape or '-'}, {plan.num_workers} process(es), global batch {plan.global_batch_size}")
    print(f"validation accuracy: {history.history['val_accuracy'][-1]:.3f}")
if args.weights:
    import jax

    np.savez(os.path.join(args.weights, f"weights-{jax.process_index()}.npz"), *model.get_weights())
