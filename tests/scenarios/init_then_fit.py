"""One strategy per process in a multi-worker job: ``autodist.init()`` before TensorFlow is
imported, the script's own ``MultiWorkerMirroredStrategy()``, then ``autodist.fit`` and
``model.get_weights()``: one object throughout.

Run: python -m autodist launch --workers 2 tests/scenarios/init_then_fit.py OUTDIR
Each worker writes ``OUTDIR/<task>.json``; the assertions live in tests/test_own_strategy.py.
"""

import json
import os
import sys

import autodist

the_plan, strategy = autodist.init()

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

own = tf.distribute.MultiWorkerMirroredStrategy()
keras.utils.set_random_seed(5)
with own.scope():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
x = np.random.RandomState(0).rand(64, 4).astype("float32")
y = x.sum(axis=1, keepdims=True)
history = autodist.fit(model, x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
task = json.loads(os.environ["TF_CONFIG"])["task"]
with open(os.path.join(sys.argv[1], f"{task['type']}-{task['index']}.json"), "w") as handle:
    json.dump({
        "same_object": own is strategy and tf.distribute.get_strategy() is strategy,
        "model_strategy_is_init": model.distribute_strategy is strategy,
        "plan": history.plan.strategy.value,
        "reasons": list(history.plan.reasons),
        "loss": history.history["loss"],
        "weights": [w.tolist() for w in model.get_weights()],
    }, handle)
