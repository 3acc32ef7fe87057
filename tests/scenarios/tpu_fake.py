"""The TPU path against stand-ins for what cannot exist here, in a fresh process.

The parent sets TPU_NAME. Stand-ins: the resolver (at autodist's single probe,
``strategies.tpu_cluster_resolver``) and TensorFlow's three TPU-only calls, which record the
order they run in. The stand-in TPUStrategy reports 4 cores and hands out the default scope, so
``fit`` trains for real on the CPU. Prints ``RESULT <json>``.
"""

from __future__ import annotations

import json
import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import autodist  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from autodist.tensorflow import strategies  # noqa: E402

calls: list[str] = []


class FakeResolver:
    def __init__(self, tpu):
        self.tpu = tpu


class FakeTPUStrategy:
    num_replicas_in_sync = 4

    def __init__(self, resolver):
        calls.append(f"TPUStrategy({resolver.tpu})")

    def scope(self):
        return tf.distribute.get_strategy().scope()


def fake_resolver(tpu, timeout=30.0):
    calls.append(f"resolve({tpu}, runtime_started={strategies.runtime_started()})")
    return FakeResolver(tpu)


strategies.tpu_cluster_resolver = fake_resolver
tf.config.experimental_connect_to_cluster = lambda resolver: calls.append("connect_to_cluster")
tf.tpu.experimental.initialize_tpu_system = lambda resolver: calls.append("initialize_tpu_system")
tf.distribute.TPUStrategy = FakeTPUStrategy

init_plan, _ = autodist.init(batch_size=100)


def build():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    return model


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    history = autodist.fit(build, np.ones((1000, 4), "float32"), np.ones((1000, 2), "float32"), batch_size=100, epochs=1, verbose=0)
with warnings.catch_warnings(record=True) as caught_pandas:  # pandas goes the way arrays go
    warnings.simplefilter("always")
    import pandas as pd

    pandas_history = autodist.fit(
        build, pd.DataFrame(np.ones((1000, 4), "float32")), pd.DataFrame(np.ones((1000, 2), "float32")), batch_size=100, epochs=1, verbose=0
    )
print(
    "RESULT "
    + json.dumps(
        {
            "calls": calls,
            "init_plan": init_plan.to_dict(),
            "fit_plan": history.plan.to_dict(),
            "steps": int(history.model.optimizer.iterations.numpy()),
            "pandas_steps": int(pandas_history.model.optimizer.iterations.numpy()),
            "pandas_warnings": [str(w.message) for w in caught_pandas if issubclass(w.category, autodist.AutodistWarning)],
            "policy": keras.mixed_precision.global_policy().name,
            "warnings": [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)],
        }
    )
)
