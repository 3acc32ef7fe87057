"""Force a single-host strategy: one_device or central_storage (what autodist picks on GPUs when
the model is too large for one GPU). On a CPU machine, split the CPU to see central_storage work:

    AUTODIST_CPU_DEVICES=2 python examples/forced_strategy.py --strategy central_storage
    python examples/forced_strategy.py --strategy one_device

AUTODIST_STRATEGY, set before autodist is imported, makes the forced strategy the current one
when TensorFlow loads, so the model below is created under it and trains as it is (forced only
in fit, autodist would have to move a copy, with a warning).
"""

import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument("--strategy", default="central_storage", choices=["one_device", "central_storage", "mirrored", "default"])
args = parser.parse_args()
os.environ["AUTODIST_STRATEGY"] = args.strategy

import autodist  # noqa: E402
import keras  # noqa: E402
from autodist.demo import load_digits  # noqa: E402

keras.utils.set_random_seed(0)
x, y = load_digits()
model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
history = autodist.fit(model, x, y, batch_size=64, epochs=10, validation_split=0.2, strategy=args.strategy, verbose=0)

# Under central_storage, Keras 3 alone reports wrong loss and metrics; autodist's fix makes the
# History agree with an evaluation of the same weights.
loss, accuracy = model.evaluate(x[-360:], y[-360:], verbose=0)
print(f"{history.plan.strategy.value} x {history.plan.num_replicas}: val_accuracy {history.history['val_accuracy'][-1]:.3f}, evaluate {accuracy:.3f}")
