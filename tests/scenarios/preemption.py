"""One task of a job that is preempted (SIGTERM) mid-epoch and started again (tests/test_preemption.py).

Usage: preemption.py OUTDIR MODE [INPUT]
  MODE   reference: uninterrupted; self: the task sends itself SIGTERM in epoch 2, batch 5,
         on the first attempt (single host: the process; multi-worker: worker 1 only); late:
         the same at the end of the last epoch; wait: the test sends SIGTERM (to the
         launcher) once OUTDIR/<task>-reached exists, and each task holds that step until its
         SIGTERM has come. With WARMUP=1 in the environment, a
         smaller fit runs first (a script's second fit must not resume its first).
  INPUT  arrays (default: numpy, shuffle=False) or dataset (a batched tf.data.Dataset).

Every task appends "<run> <epoch> <batch> <iterations>" per trained step to OUTDIR/<task>-steps.txt,
where <run> is a fresh id per process, writes OUTDIR/<task>.npz (final weights) and
OUTDIR/<task>.json (history) when fit returns. The backup folder is AUTODIST_BACKUP_DIR (the
launcher's --backup-dir), or OUTDIR/backup for a single host. OPTIMIZER: sgd (default), momentum,
or legacy (tf_keras only).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import autodist  # noqa: E402  (first: nothing may touch the TF runtime before the strategy)
import numpy as np  # noqa: E402

OUTDIR, MODE = sys.argv[1], sys.argv[2]
INPUT = sys.argv[3] if len(sys.argv) > 3 else "arrays"
if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras as keras  # noqa: E402
else:
    import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

os.makedirs(OUTDIR, exist_ok=True)
config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
TASK = f"{config['task']['type']}-{config['task']['index']}" if config else "single"
FIRST_ATTEMPT = not os.path.exists(os.path.join(OUTDIR, f"{TASK}-steps.txt"))
RUN = uuid.uuid4().hex[:8]
with open(os.path.join(OUTDIR, f"{TASK}.pid"), "w") as pid_file:
    pid_file.write(str(os.getpid()))
EPOCHS, BATCH, KILL_AT = 3, 16, (1, 4)  # 160 samples: 10 batches an epoch; SIGTERM in epoch 2, batch 5

rng = np.random.default_rng(3)
X = rng.normal(size=(160, 8)).astype("float32")
Y = (X @ rng.normal(size=(8, 1)) + 0.1 * rng.normal(size=(160, 1))).astype("float32")


def build():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="tanh"), keras.layers.Dense(1)])
    optimizer = {
        "sgd": lambda: keras.optimizers.SGD(0.05),
        "momentum": lambda: keras.optimizers.SGD(0.05, momentum=0.9),  # slots, built lazily in tf_keras
        "legacy": lambda: keras.optimizers.legacy.SGD(0.05, momentum=0.9),  # tf_keras's OptimizerV2
    }[os.environ.get("OPTIMIZER", "sgd")]()
    model.compile(optimizer=optimizer, loss="mse", metrics=["mae"])
    return model


class SigtermNoted:
    """Notes a SIGTERM and passes it on to the handler in place (autodist's), from
    :meth:`install` on: installed at the fit's start, after autodist's, so that a SIGTERM that
    comes before the named step is noted too."""

    def __init__(self):
        import threading

        self.arrived = threading.Event()

    def install(self) -> None:
        previous = signal.getsignal(signal.SIGTERM)

        def noted(signum, frame):
            self.arrived.set()
            if callable(previous):
                previous(signum, frame)

        signal.signal(signal.SIGTERM, noted)

    def hold(self, reached: str, bound_s: float = 120.0) -> None:
        """Writes ``reached`` and holds this step until SIGTERM has come, so the preemption lands at
        this named step however loaded the machine is, not at whatever step training got to
        meanwhile (issue 44). Bounded: the test fails on the steps it finds if none comes."""
        import time

        open(reached, "w").close()
        deadline = time.monotonic() + bound_s
        while not self.arrived.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)  # the main thread wakes to run the handler


SIGTERM = SigtermNoted()


class StepLog(keras.callbacks.Callback):
    """Logs every trained step; in ``self``/``wait`` mode, brings about the preemption."""

    def __init__(self):
        super().__init__()
        self.epoch = 0

    def on_train_begin(self, logs=None):
        if MODE == "wait" and FIRST_ATTEMPT:
            SIGTERM.install()

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if not FIRST_ATTEMPT or (self.epoch, batch) != KILL_AT:
            return
        if MODE == "self" and TASK in ("single", "worker-1"):
            os.kill(os.getpid(), signal.SIGTERM)  # arrives during this step: it must still finish
        if MODE == "wait":
            SIGTERM.hold(os.path.join(OUTDIR, f"{TASK}-reached"))

    def on_epoch_end(self, epoch, logs=None):
        if MODE == "late" and FIRST_ATTEMPT and epoch == EPOCHS - 1 and TASK in ("single", "worker-1"):
            os.kill(os.getpid(), signal.SIGTERM)  # too late to save a step: the finished fit is saved

    def on_train_batch_end(self, batch, logs=None):
        if MODE == "freeze" and FIRST_ATTEMPT and TASK == "worker-0" and (self.epoch, batch) == KILL_AT:
            with open(os.path.join(OUTDIR, "worker-1.pid")) as handle:
                os.kill(int(handle.read()), signal.SIGSTOP)
            os.kill(os.getpid(), signal.SIGTERM)  # after this step: the guard proposes the next but one
        iterations = int(self.model.optimizer.iterations.numpy())
        with open(os.path.join(OUTDIR, f"{TASK}-steps.txt"), "a") as handle:
            handle.write(f"{RUN} {self.epoch} {batch} {iterations}\n")


x, y = X, Y
if INPUT == "dataset":
    x, y = tf.data.Dataset.from_tensor_slices((X, Y)).batch(BATCH), None
backup = None if config else os.path.join(OUTDIR, "backup")
if MODE == "reference":
    backup = False
if os.environ.get("WARMUP") == "1":
    def small():
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(3), keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        return model

    autodist.fit(small, X, Y, batch_size=BATCH, epochs=1, verbose=0, backup_dir=backup)
history = autodist.fit(build, x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=[StepLog()], backup_dir=backup)
np.savez(os.path.join(OUTDIR, f"{TASK}.npz"), *history.model.get_weights())
with open(os.path.join(OUTDIR, f"{TASK}.json"), "w") as handle:
    json.dump({"history": history.history, "epochs": history.epoch, "strategy": history.plan.strategy.value}, handle)
print(f"{TASK} done: {history.plan.strategy.value}")
