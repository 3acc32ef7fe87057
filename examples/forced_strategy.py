"""Force a single-host strategy: one_device or central_storage (what autodist picks on GPUs when
the model is too large for one GPU). On a CPU machine, split the CPU to see central_storage work:

    AUTODIST_CPU_DEVICES=2 python examples/forced_strategy.py --strategy central_storage
    python examples/forced_strategy.py --strategy one_device
"""

import argparse

import autodist
import keras
from autodist.demo import load_digits

parser = argparse.ArgumentParser()
parser.add_argument("--strategy", default="central_storage", choices=["one_device", "central_storage", "mirrored", "default"])
args = parser.parse_args()

keras.utils.set_random_seed(0)
x, y = load_digits()
model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
history = autodist.fit(model, x, y, batch_size=64, epochs=10, validation_split=0.2, strategy=args.strategy, verbose=0)

# Under central_storage, Keras 3 alone reports wrong loss and metrics; autodist's fix makes the
# History agree with an evaluation of the same weights.
loss, accuracy = model.evaluate(x[-360:], y[-360:], verbose=0)
print(f"{history.plan.strategy.value} x {history.plan.num_replicas}: val_accuracy {history.history['val_accuracy'][-1]:.3f}, evaluate {accuracy:.3f}")
