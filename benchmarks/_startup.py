"""Benchmark worker: a fresh process that trains a tiny model for one epoch, as a user's script
does: ``python benchmarks/_startup.py manual`` (``model.fit``) or ``autodist`` (``import
autodist`` first, then ``autodist.fit``). ``benchmarks/overhead.py`` times both, alternately."""

from __future__ import annotations

import sys

if sys.argv[1] == "autodist":
    import autodist
import keras  # noqa: E402
import numpy as np  # noqa: E402

rng = np.random.default_rng(0)
X = rng.random((512, 32), dtype=np.float32)
Y = rng.integers(0, 2, 512).astype("int32")
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
if sys.argv[1] == "autodist":
    autodist.fit(model, X, Y, batch_size=32, epochs=1, verbose=0)
else:
    model.fit(X, Y, batch_size=32, epochs=1, verbose=0)
