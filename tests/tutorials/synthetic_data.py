"""What the tutorial programs share: stand-ins for downloaded data sets, and result reporting.

No TensorFlow here: the tutorials import this after ``import autodist``, and it must not start
the TensorFlow runtime.

- ``mnist_load_data()`` replaces ``keras.datasets.mnist.load_data()`` (and Fashion-MNIST, and
  ``tfds.load("mnist")``): the same structure, shapes and dtypes (``uint8`` 28x28 images with
  values in [0, 255], ``uint8`` labels 0-9), made with a fixed seed, small, and learnable: each
  label lights one of ten 8x5 blocks of the image over dim noise (one image in five shows a
  random label's block instead), so a falling loss means the model learns, and accuracy stays
  below 1.
- ``report(outdir, result)`` writes ``OUTDIR/<task>.json`` (``single`` without TF_CONFIG,
  ``worker-0``, ``chief-0``, ... in a cluster) and prints one ``RESULT <json>`` line.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

__all__ = ["files_under", "mnist_load_data", "report", "task_name", "variable_kind"]


def _images(rng: np.random.Generator, labels: np.ndarray) -> np.ndarray:
    # One image in five shows a random label's block: accuracy stays short of 1, so the numbers
    # the tests compare (accuracies, evaluations) are not all saturated.
    shown = np.where(rng.random(len(labels)) < 0.2, rng.integers(0, 10, size=len(labels)), labels)
    masks = np.zeros((10, 28, 28), dtype=bool)
    for label in range(10):
        row, col = divmod(label, 5)
        masks[label, 4 + 12 * row : 12 + 12 * row, 1 + 5 * col : 6 + 5 * col] = True
    noise = rng.integers(0, 64, size=(len(labels), 28, 28))
    bright = rng.integers(160, 256, size=(len(labels), 28, 28))
    return np.where(masks[shown], bright, noise).astype(np.uint8)


def mnist_load_data(num_train: int = 512, num_test: int = 256, seed: int = 0):
    """``((x_train, y_train), (x_test, y_test))`` shaped like ``keras.datasets.mnist.load_data()``."""
    rng = np.random.default_rng(seed)
    y_train = rng.integers(0, 10, size=num_train).astype(np.uint8)
    y_test = rng.integers(0, 10, size=num_test).astype(np.uint8)
    return (_images(rng, y_train), y_train), (_images(rng, y_test), y_test)


def task_name() -> str:
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    return f"{config['task']['type']}-{config['task']['index']}" if config else "single"


def files_under(root: str) -> list[str]:
    """Every file below ``root``, as sorted paths relative to it."""
    found = []
    for folder, _, names in os.walk(root):
        found += [os.path.relpath(os.path.join(folder, name), root) for name in names]
    return sorted(found)


def variable_kind(variable: Any) -> str:
    """The class of the TensorFlow variable behind a Keras 3 or tf_keras variable (MirroredVariable, ...)."""
    inner = getattr(variable, "value", None)
    return type(variable if inner is None or callable(inner) else inner).__name__


def _plain(value: Any) -> Any:
    if hasattr(value, "numpy"):
        value = value.numpy()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def report(outdir: str, result: dict[str, Any]) -> None:
    """Write ``OUTDIR/<task>.json`` and print ``RESULT <json>``."""
    text = json.dumps(result, default=_plain)
    with open(os.path.join(outdir, f"{task_name()}.json"), "w") as handle:
        handle.write(text)
    print(f"RESULT {text}", flush=True)
