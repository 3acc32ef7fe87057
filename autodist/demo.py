"""``python -m autodist demo``: train a small classifier on bundled handwritten digits.

The data set ships inside the package (``autodist/data/digits.csv.gz``, 1,797 8×8 images, see
``autodist/data/README.md``), so the demo needs no download. It trains through
``autodist.fit`` under whatever plan this machine gets, and reports test accuracy.

Example:
    >>> from autodist.demo import load_digits
    >>> x, y = load_digits()
    >>> x.shape, y.shape
    ((1797, 64), (1797,))
"""

from __future__ import annotations

import gzip
from importlib import resources
from typing import Any

import autodist

__all__ = ["load_digits", "run_demo"]


def load_digits() -> tuple[Any, Any]:
    """The bundled digits: pixels scaled to [0, 1] as float32, labels as int32."""
    import numpy as np

    with resources.files("autodist").joinpath("data/digits.csv.gz").open("rb") as raw:
        table = np.loadtxt(gzip.open(raw), delimiter=",", dtype=np.float32)
    return table[:, :-1] / 16.0, table[:, -1].astype(np.int32)


def build_model() -> Any:
    """A small MLP for 8×8 digits, compiled. Called inside the strategy's scope by autodist."""
    import keras

    model = keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def run_demo(*, epochs: int = 20, batch_size: int = 64, seed: int = 0, verbose: int = 0) -> dict[str, Any]:
    """Train on 80% of the digits, evaluate on the held-out 20%, and return the figures."""
    import keras
    import numpy as np

    x, y = load_digits()
    order = np.random.default_rng(seed).permutation(len(x))
    split = int(0.8 * len(x))
    train, test = order[:split], order[split:]
    keras.utils.set_random_seed(seed)
    history = autodist.fit(build_model, x[train], y[train], batch_size=batch_size, epochs=epochs, verbose=verbose)
    model = history.model
    loss, accuracy = model.evaluate(x[test], y[test], batch_size=256, verbose=0)
    return {
        "strategy": history.plan.strategy.value,
        "num_replicas": history.plan.num_replicas,
        "num_train": int(len(train)),
        "num_test": int(len(test)),
        "epochs": epochs,
        "final_train_loss": float(history.history["loss"][-1]),
        "test_loss": float(loss),
        "test_accuracy": float(accuracy),
    }
