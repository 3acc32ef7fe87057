"""Asynchronous parameter-server training: the same script on the chief, the workers and the ps.

    python -m autodist launch --workers 2 --ps 1 examples/parameter_server.py

The chief coordinates and trains (Keras 3 through autodist's ClusterCoordinator loop, tf_keras
through its own fit); workers and ps serve, and exit 0 when the chief is done.
"""

import autodist
import keras
from autodist.demo import load_digits


def build_model():
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


x, y = load_digits()
history = autodist.fit(build_model, x, y, batch_size=64, epochs=5, verbose=1)  # returns only on the chief
print(f"{history.plan.strategy.value}: loss {history.history['loss'][0]:.3f} -> {history.history['loss'][-1]:.3f}")
