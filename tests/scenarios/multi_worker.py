"""One worker's side of a multi-worker job, started by ``python -m autodist launch``.

Usage: multi_worker.py OUTDIR MODE   (MODE: train | fault | checkpoint | die | reference)

Each worker writes OUTDIR/<task>.json (history, plan) and OUTDIR/<task>.npz (final weights).
``reference`` runs the same training in one process without a cluster. ``fault`` makes worker 1
exit abnormally after epoch 2 on the first attempt only; ``die`` makes it exit after epoch 1. Every epoch each worker appends
"<attempt> <epoch>" to OUTDIR/<task>-epochs.txt, so the test can see what ran, and when.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import autodist  # noqa: E402  (first: nothing may touch the TF runtime before the strategy)
import numpy as np  # noqa: E402

OUTDIR, MODE = sys.argv[1], sys.argv[2]
LEGACY = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
if LEGACY:
    import tf_keras as keras  # noqa: E402
else:
    import keras  # noqa: E402

config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
TASK = f"{config['task']['type']}-{config['task']['index']}" if config else "single"
ATTEMPT = int(os.environ.get("AUTODIST_LAUNCH_ATTEMPT", "0"))

rng = np.random.default_rng(7)
# 250 = 7 x 32 + 26: a partial last batch (13 per worker), so the endless input autodist builds
# for multi-worker runs is checked across pass boundaries, over 3 epochs
X = rng.normal(size=(250, 12)).astype("float32")
Y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(250, 3)), axis=1).astype("int32")


def build():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)])
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


class EpochLog(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        with open(os.path.join(OUTDIR, f"{TASK}-epochs.txt"), "a") as handle:
            handle.write(f"{ATTEMPT} {epoch}\n")

    def on_epoch_end(self, epoch, logs=None):
        if MODE == "fault" and TASK == "worker-1" and ATTEMPT == 0 and epoch == 1:
            os._exit(17)  # abnormal exit after epoch 2, once
        if MODE == "die" and TASK == "worker-1" and epoch == 0:
            os._exit(17)  # dies mid-job, with no launcher to stop the others


class PathProbe(keras.callbacks.Callback):
    """Records where the checkpoint callback actually writes on this worker, during training."""

    def __init__(self, checkpoint):
        super().__init__()
        self.checkpoint, self.paths = checkpoint, []

    def on_epoch_end(self, epoch, logs=None):
        self.paths.append(self.checkpoint.filepath)


callbacks = [EpochLog()]
epochs = {"train": 3, "reference": 3, "fault": 5, "checkpoint": 2, "die": 50}[MODE]
probe = None
if MODE == "checkpoint":
    checkpoint = keras.callbacks.ModelCheckpoint(os.path.join(OUTDIR, "ckpt", "model.keras"))
    probe = PathProbe(checkpoint)
    callbacks += [checkpoint, probe]
history = autodist.fit(build, X, Y, batch_size=32, epochs=epochs, shuffle=False, verbose=0, callbacks=callbacks)
np.savez(os.path.join(OUTDIR, f"{TASK}.npz"), *history.model.get_weights())
with open(os.path.join(OUTDIR, f"{TASK}.json"), "w") as handle:
    json.dump(
        {
            "history": history.history,
            "strategy": history.plan.strategy.value,
            "num_replicas": history.plan.num_replicas,
            "is_chief": autodist.is_chief(),
            "checkpoint_paths": probe.paths if probe else None,
            "checkpoint_path_after": checkpoint.filepath if probe else None,
        },
        handle,
    )
print(f"{TASK} done: {history.plan.strategy.value}, loss {history.history['loss'][-1]:.4f}")
