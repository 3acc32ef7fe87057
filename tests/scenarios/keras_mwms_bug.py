"""Plain Keras 3 under MultiWorkerMirroredStrategy, for the still-needed tests.

Run by ``python -m autodist launch --workers 2``. MODE ``none`` applies no workaround;
``symbolic_build`` applies only autodist's first one. Each worker prints ``RESULT <json>``.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

MODE = sys.argv[1]
strategy = tf.distribute.MultiWorkerMirroredStrategy()
if MODE == "symbolic_build":  # only the symbolic-build fix (where this Keras has a symbolic build)
    from autodist.upstream.keras_trainer import patch_trainer

    patch_trainer(["first_batch_symbolic_build"])

with strategy.scope():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
options = tf.data.Options()
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
data = tf.data.Dataset.from_tensor_slices((np.ones((64, 4), "float32"), np.ones((64, 2), "float32"))).batch(16)
try:
    model.fit(data.with_options(options), verbose=0)
    error = None
except Exception as err:  # the upstream failure is what we record
    error = f"{type(err).__name__}: {err}"
print("RESULT " + json.dumps({"error": error, "keras_version": keras.__version__}), flush=True)
