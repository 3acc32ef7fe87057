"""A 20000x16 embedding under parameter-server training with 2 ps tasks (see test_parameter_server).

Prints ``RESULT`` on the chief: the embedding's variable type and the loss per epoch.
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import autodist  # noqa: E402
import numpy as np  # noqa: E402

if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras as keras  # noqa: E402
else:
    import keras  # noqa: E402

rng = np.random.default_rng(0)
X = rng.integers(0, 20000, (512, 4)).astype("int32")
Y = (X[:, 0] % 2).astype("int32")


def build():
    model = keras.Sequential(
        [keras.Input((4,), dtype="int32"), keras.layers.Embedding(20000, 16), keras.layers.Flatten(), keras.layers.Dense(2)]
    )
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


history = autodist.fit(build, X, Y, batch_size=32, epochs=2, verbose=0)
table = history.model.layers[0].embeddings
print("RESULT " + json.dumps({"variable": type(getattr(table, "value", table)).__name__, "loss": history.history["loss"], "reasons": list(history.plan.reasons)}))
