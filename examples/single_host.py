"""Replace model.fit with autodist.fit: the whole change a Keras user makes.

Run:  python examples/single_host.py
      AUTODIST_CPU_DEVICES=2 python examples/single_host.py   # Mirrored over 2 logical CPUs
"""

import autodist  # first: with AUTODIST_CPU_DEVICES it splits the CPU when TensorFlow loads
import keras
from autodist.demo import load_digits

keras.utils.set_random_seed(0)
x, y = load_digits()

model = keras.Sequential(
    [keras.Input((64,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)]
)
model.compile(
    optimizer="adam",
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)

# was: history = model.fit(x, y, batch_size=64, epochs=20, validation_split=0.2)
history = autodist.fit(model, x, y, batch_size=64, epochs=20, validation_split=0.2, verbose=2)

print(f"plan: {history.plan.strategy.value}, {history.plan.num_replicas} replica(s)")
print(f"validation accuracy: {history.history['val_accuracy'][-1]:.3f}")
# The model object you built holds the trained weights, exactly as after model.fit.
print(f"evaluate: {model.evaluate(x, y, verbose=0)}")
