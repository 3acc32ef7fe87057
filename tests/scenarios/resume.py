"""The resume table's runs (tests/test_resume.py): every cell is one ``autodist.fit`` with
autodist's defaults and steps_per_execution 8 (``AUTODIST_STEPS_PER_EXECUTION=8``: a fit of 60
steps would keep 1; no callback uses batch-level hooks), SIGTERMed in the middle of an 8-step
call, and started again.

Usage: resume.py OUTDIR MODE
  MODE  reference: every cell uninterrupted; first: every cell SIGTERMed at its training step
        KILL_AT (by the model itself: the step lands inside a compiled call of 8 steps); the
        script catches the SystemExit that autodist raises after saving, as a restarted job
        would start again, and goes on to the next cell; again: every cell run again, as the
        restart of ``first`` (each ``fit`` of a script resumes its own save).

Each cell gets its own backup folder (OUTDIR/backup-<cell>, the same in every MODE), seeds
Keras with ``keras.utils.set_random_seed(1)`` and writes OUTDIR/<mode>-<cell>.json: the
History, the epochs run, the weights, the learning rate, the optimizer's step count when
``fit`` began (after any restore) and ended, the checkpoints written, the steps_per_execution
in force, and the AutodistWarnings. ``RESUME_CELLS="a|b"`` runs only the cells named.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["AUTODIST_STEPS_PER_EXECUTION"] = "8"  # what a longer fit gets by default

import autodist  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import tensorflow as tf  # noqa: E402

OUTDIR, MODE = sys.argv[1], sys.argv[2]
EPOCHS, BATCH = 6, 16  # 160 samples: 10 batches an epoch, compiled calls of steps 1-8, 9-10, 11-18, 19-20, ...
KILL_AT = {"step": 14}  # step 14 is batch 4 of epoch 2, inside the call of steps 11-18
rng = np.random.default_rng(3)
X = rng.normal(size=(160, 8)).astype("float32")
Y = (X @ rng.normal(size=(8, 1)) + 0.1 * rng.normal(size=(160, 1))).astype("float32")


class KillAt(keras.layers.Layer):
    """Counts the training steps (a weight, so saved and restored with the model) and, in MODE
    ``first``, sends this process SIGTERM while step KILL_AT runs, inside the compiled call."""

    def build(self, input_shape):
        self.steps = self.add_weight(shape=(), initializer="zeros", trainable=False, name="steps")

    def call(self, inputs, training=False):
        if training:
            self.steps.assign_add(1.0)
            if MODE == "first":
                tf.py_function(_kill_at, [self.steps], [])
        return inputs


def _kill_at(steps):
    if int(steps.numpy()) == KILL_AT["step"]:
        os.kill(os.getpid(), signal.SIGTERM)


def build():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((8,)), KillAt(), keras.layers.Dense(16, activation="tanh"), keras.layers.Dense(1)])
    # jit_compile=False: the step that kills is a py_function, which XLA cannot compile
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="mse", metrics=["mae"], jit_compile=False)
    return model


class Observe(keras.callbacks.Callback):
    """Epoch-level only (so autodist keeps its steps_per_execution default)."""

    def on_train_begin(self, logs=None):
        self.start = int(self.model.optimizer.iterations.numpy())
        self.steps_per_execution = self.model.steps_per_execution


def cells(out: str) -> dict:
    frame = pd.DataFrame(X)
    data = tf.data.Dataset.from_tensor_slices((X, Y)).batch(BATCH)
    best = os.path.join(out, "best-{epoch:02d}.keras")
    return {
        "arrays, `shuffle=True`": lambda: ((X, Y), {"batch_size": BATCH}, []),
        "arrays, `shuffle=False`": lambda: ((X, Y), {"batch_size": BATCH, "shuffle": False}, []),
        "pandas, `shuffle=True`": lambda: ((frame, pd.Series(Y[:, 0])), {"batch_size": BATCH}, []),
        "batched `tf.data`": lambda: ((data, None), {}, []),
        "arrays, `shuffle=True`, SIGTERM in an epoch's last call (step 19)": lambda: ((X, Y), {"batch_size": BATCH}, [], 19),
        "arrays, `shuffle=True`, `validation_split=0.1` (9 batches an epoch)": lambda: ((X, Y), {"batch_size": BATCH, "validation_split": 0.1}, []),
        "`EarlyStopping(patience=3)` (stops after epoch 4)": lambda: (
            (X, Y), {"batch_size": BATCH}, [keras.callbacks.EarlyStopping(monitor="loss", min_delta=10.0, patience=3)]
        ),
        "`ReduceLROnPlateau(patience=2)` (0.05 → 0.0125)": lambda: (
            (X, Y), {"batch_size": BATCH}, [keras.callbacks.ReduceLROnPlateau(monitor="loss", min_delta=10.0, patience=2, factor=0.5)]
        ),
        "`ModelCheckpoint(save_best_only=True)`": lambda: (
            (X, Y), {"batch_size": BATCH},
            [keras.callbacks.ModelCheckpoint(best, monitor="loss", mode="max", save_best_only=True)],
        ),
    }


def run(name: str, make, index: int) -> dict:
    (x, y), kwargs, callbacks, *kill = make()
    KILL_AT["step"] = kill[0] if kill else 14
    observe = Observe()
    model = build()
    backup = os.path.join(OUTDIR, f"backup-{index}")
    outcome: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", autodist.AutodistWarning)
        try:
            history = autodist.fit(model, x, y, epochs=EPOCHS, verbose=0, callbacks=[observe, *callbacks], backup_dir=backup, **kwargs)
            outcome = {"history": history.history, "epochs": history.epoch}
        except SystemExit as stop:  # saved on SIGTERM: a restart goes on from the save
            outcome = {"exit": stop.code}
    outcome.update(
        start=getattr(observe, "start", None),
        end=int(model.optimizer.iterations.numpy()),
        steps_per_execution=getattr(observe, "steps_per_execution", None),
        learning_rate=float(np.asarray(model.optimizer.learning_rate)),
        weights=[w.tolist() for w in model.get_weights()],
        checkpoints=sorted(f for f in os.listdir(OUTDIR) if f.startswith("best-")) if "ModelCheckpoint" in name else [],
        warnings=[str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)],
    )
    return outcome


def main() -> None:
    os.makedirs(OUTDIR, exist_ok=True)
    only = os.environ.get("RESUME_CELLS")
    for index, (name, make) in enumerate(cells(OUTDIR).items()):
        if only and name not in only.split("|"):
            continue
        result = run(name, make, index)
        with open(os.path.join(OUTDIR, f"{MODE}-{index}.json"), "w") as handle:
            json.dump({"cell": name, **result}, handle)
    print(f"{MODE} done")


if __name__ == "__main__":
    main()
