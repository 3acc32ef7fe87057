"""The same autodist.fit script on every worker of a cluster: MultiWorkerMirrored, synchronous.

Run it as a 2-worker cluster on this machine (127.0.0.1 only):

    python -m autodist launch --workers 2 examples/multi_worker.py --out /tmp/digits-job

On real hosts, print each host's TF_CONFIG and command, and run those there:

    python -m autodist launch --workers 2 --hosts host1,host2 examples/multi_worker.py

Under SLURM (srun), Vertex AI, SageMaker or Kubeflow the script runs unchanged: autodist reads
the cluster from their variables. Only the chief writes the checkpoint and prints the summary.
"""

import argparse
import os

import autodist  # first: nothing may start the TensorFlow runtime before the strategy exists
import keras
from autodist.demo import load_digits

parser = argparse.ArgumentParser()
parser.add_argument("--out", default="multi_worker_out")
parser.add_argument("--epochs", type=int, default=5)
args = parser.parse_args()


def build_model():
    """Called by autodist inside the strategy's scope, after the workers have connected."""
    model = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


x, y = load_digits()
checkpoint = keras.callbacks.ModelCheckpoint(os.path.join(args.out, "digits.keras"))
history = autodist.fit(
    build_model,
    x,
    y,
    batch_size=128,  # global: 64 per worker on 2 workers
    epochs=args.epochs,
    validation_split=0.2,
    callbacks=[checkpoint],  # written by the chief only
    verbose=2 if autodist.is_chief() else 0,
)
if autodist.is_chief():
    plan = history.plan
    print(f"{plan.strategy.value}: {plan.num_workers} workers, global batch {plan.global_batch_size}")
    print(f"validation accuracy: {history.history['val_accuracy'][-1]:.3f}")
