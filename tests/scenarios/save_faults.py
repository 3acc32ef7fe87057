"""One start of a single-host run with a backup folder, under a fault a real machine makes
(tests/test_save_faults.py).

Usage: save_faults.py OUTDIR MODE
  MODE  reference: uninterrupted;
        full: the backup folder's file system (a small tmpfs the test mounts) is filled after the
              first save so that the second fits and the third does not; room is made again when
              the fourth epoch begins;
        kill_mid: SIGKILL in epoch 3, batch 6 (the newest save is epoch 2's end);
        kill_epoch: SIGKILL as epoch 4 begins (saves of epochs 2 and 3 are there);
        kill_end: SIGKILL after the last epoch's save, before fit returns;
        hold: writes OUTDIR/held in epoch 2 and holds that step until OUTDIR/release exists;
        slow_term: sends itself SIGTERM in epoch 3, batch 6, writes OUTDIR/reached, and holds the
              step, before autodist's save, until OUTDIR/release exists (a pod terminating while
              its replacement starts);
        again: a plain start (a restart, or a second process on the same folder).

Every start appends "<run> <epoch> <batch> <iterations>" per trained step to OUTDIR/steps.txt,
and, when fit returns, writes OUTDIR/<MODE>.json: History, epochs, final weights, and the
AutodistWarnings it raised. The backup folder is OUTDIR/backup (``backup_dir=``), or
SAVE_FAULTS_BACKUP when set.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import uuid
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import autodist  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

OUTDIR, MODE = sys.argv[1], sys.argv[2]
BACKUP = os.environ.get("SAVE_FAULTS_BACKUP") or os.path.join(OUTDIR, "backup")
FOLDER = os.path.join(BACKUP, "single", "fit-0")
EPOCHS, BATCH = 5, 16  # 160 samples: 10 batches an epoch
RUN = uuid.uuid4().hex[:8]

rng = np.random.default_rng(3)
X = rng.normal(size=(160, 8)).astype("float32")
Y = (X @ rng.normal(size=(8, 1)) + 0.1 * rng.normal(size=(160, 1))).astype("float32")


def save_bytes(epoch: int) -> int:
    return sum(
        os.path.getsize(os.path.join(FOLDER, f)) for f in os.listdir(FOLDER) if f.startswith(f"epoch-{epoch:06d}-")
    )


def until_released(bound_s: float = 120.0) -> None:
    deadline = time.monotonic() + bound_s
    while not os.path.exists(os.path.join(OUTDIR, "release")) and time.monotonic() < deadline:
        time.sleep(0.05)


class Faults(keras.callbacks.Callback):
    """Logs every trained step and brings about MODE's fault at its step."""

    def __init__(self):
        super().__init__()
        self.epoch = 0
        self.filler = os.path.join(BACKUP, "filler")

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        if MODE == "kill_epoch" and epoch == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        if MODE == "full" and epoch == 3 and os.path.exists(self.filler):
            os.remove(self.filler)  # room again: the fourth epoch's save is written

    def on_train_batch_begin(self, batch, logs=None):
        if (self.epoch, batch) == (2, 5) and MODE == "kill_mid":
            os.kill(os.getpid(), signal.SIGKILL)
        if (self.epoch, batch) == (2, 5) and MODE == "slow_term":
            os.kill(os.getpid(), signal.SIGTERM)  # arrives during this step: autodist saves after it
        if (self.epoch, batch) == (1, 0) and MODE == "hold":
            open(os.path.join(OUTDIR, "held"), "w").close()
            until_released()

    def on_train_batch_end(self, batch, logs=None):
        iterations = int(np.asarray(self.model.optimizer.iterations))
        with open(os.path.join(OUTDIR, "steps.txt"), "a") as out:
            out.write(f"{RUN} {self.epoch} {batch} {iterations}\n")
        if (self.epoch, batch) == (2, 5) and MODE == "slow_term":
            open(os.path.join(OUTDIR, "reached"), "w").close()
            until_released()  # the step's save comes after this: the replacement starts meanwhile

    def on_epoch_end(self, epoch, logs=None):
        if MODE != "full":
            return
        if epoch == 0:  # after autodist's first save: leave room for one more and a half
            free = os.statvfs(BACKUP).f_bavail * os.statvfs(BACKUP).f_frsize
            with open(self.filler, "wb") as handle:
                handle.write(b"\0" * max(0, free - int(1.5 * save_bytes(1))))
        if epoch == 2:  # the third save failed: what is in the folder now
            with open(os.path.join(OUTDIR, "after_failed_save.json"), "w") as out:
                json.dump(sorted(os.listdir(FOLDER)), out)

    def on_train_end(self, logs=None):
        if MODE == "kill_end":
            os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    os.makedirs(OUTDIR, exist_ok=True)
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(64, activation="tanh"),
            keras.layers.Dense(64, activation="tanh"),
            keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.5), loss="mse", metrics=["mae"])
    raised = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        shown = warnings.showwarning

        def record(message, category, *args, **kwargs):
            if issubclass(category, autodist.AutodistWarning):
                raised.append(str(message))
            shown(message, category, *args, **kwargs)

        warnings.showwarning = record
        history = autodist.fit(
            model, X, Y, batch_size=BATCH, epochs=EPOCHS, verbose=0, backup_dir=BACKUP, callbacks=[Faults()]
        )
    result = {
        "history": {key: [float(v) for v in values] for key, values in history.history.items()},
        "epochs": list(history.epoch),
        "weights": [w.tolist() for w in model.get_weights()],
        "warnings": raised,
        "pid": os.getpid(),
    }
    with open(os.path.join(OUTDIR, f"{MODE}.json"), "w") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main()
