"""The script a pod of tests/scenarios/kubernetes_pods.py runs, as a user's script on Kubernetes:
``autodist.fit`` on a small regression, unshuffled (so one process trains the same batches), with
no cluster code of its own. ``python kubernetes_train.py OUTDIR``.

With ``KILL_AT=<step>`` (the test's stand-in for the kubelet's SIGTERM), the pod sends itself
SIGTERM after that training step, once (a marker file in OUTDIR says it did). Each attempt
appends a line to ``OUTDIR/<HOSTNAME>.jsonl``: the optimizer's step when ``fit`` began and when
the process left it, its exit code, the plan's strategy and reasons, and, once ``fit``
returned, the weights and the History; and the user it ran as and whether it could write to ``/``.
"""

from __future__ import annotations

import json
import os
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import autodist  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

OUTDIR = sys.argv[1]
HOST = os.environ.get("HOSTNAME", "single")
rng = np.random.default_rng(7)
X = rng.normal(size=(96, 8)).astype("float32")
Y = (X @ rng.normal(size=(8, 1)) + 0.1 * rng.normal(size=(96, 1))).astype("float32")
record: dict = {"host": HOST, "user": os.getuid(), "root_writable": os.access("/", os.W_OK)}


def build() -> keras.Model:
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="tanh"), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return model


class Steps(keras.callbacks.Callback):
    """Records the optimizer's step; sends SIGTERM once after step KILL_AT (when set)."""

    def on_train_begin(self, logs=None):
        record["begin"] = int(self.model.optimizer.iterations.numpy())

    def on_train_batch_end(self, batch, logs=None):
        record["last"] = int(self.model.optimizer.iterations.numpy())
        marker = os.path.join(OUTDIR, f"{HOST}.killed")
        if os.environ.get("KILL_AT") and record["last"] == int(os.environ["KILL_AT"]) and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGTERM)


def write(**more) -> None:
    with open(os.path.join(OUTDIR, f"{HOST}.jsonl"), "a") as handle:
        handle.write(json.dumps({**record, **more}) + "\n")


try:
    history = autodist.fit(build, X, Y, batch_size=24, epochs=4, shuffle=False, verbose=0, callbacks=[Steps()])
except SystemExit as stop:  # autodist saved on SIGTERM and exits 75: the restart resumes
    write(exit=stop.code)
    raise
write(exit=0, strategy=history.plan.strategy.value, reasons=list(history.plan.reasons), end=int(history.model.optimizer.iterations.numpy()),
      loss=history.history["loss"], weights=[w.tolist() for w in history.model.get_weights()])  # fmt: skip
