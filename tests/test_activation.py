"""Activation at TensorFlow import (autodist/activation.py), each case in a fresh process.

The switch, the import orders a user writes, and the fallback's warning. The training numbers
under an activated strategy are checked against model.fit in tests/test_training.py.
"""

from __future__ import annotations

import json

import pytest

from autodist.settings import activation_enabled
from tests.conftest import run_python, subprocess_env

PROGRAM = """
import json, warnings
{imports}
import numpy as np
model = keras.Sequential([keras.layers.Dense(4), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    history = autodist.fit(model, np.ones((32, 3), "float32"), np.ones((32, 1), "float32"), batch_size=8, verbose=0)
weight = model.weights[0]
print("RESULT " + json.dumps({{
    "current": type(tf.distribute.get_strategy()).__name__,
    "variable": type(getattr(weight, "value", weight)).__name__,
    "strategy": history.plan.strategy.value,
    "warnings": [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)],
}}))
"""


def _run(imports: str, **env: str) -> dict:
    proc = run_python(["-c", PROGRAM.format(imports=imports)], env=subprocess_env(AUTODIST_CPU_DEVICES="2", **env), timeout=120)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


@pytest.mark.tensorflow
@pytest.mark.parametrize(
    "imports",
    [
        "import autodist\nimport keras\nimport tensorflow as tf",
        "import tensorflow as tf\nimport keras\nimport autodist",
        # tf.config calls after the import, as in TensorFlow's guides: the runtime has not started
        "import autodist\nimport tensorflow as tf\ntf.config.threading.set_intra_op_parallelism_threads(2)\n"
        "tf.config.threading.set_inter_op_parallelism_threads(2)\nimport keras",
    ],
    ids=["autodist-first", "tensorflow-first-no-ops", "tf-config-after-import"],
)
def test_import_order_before_any_op_creates_the_model_under_the_strategy(imports):
    result = _run(imports)
    assert result == {"current": "MirroredStrategy", "variable": "MirroredVariable", "strategy": "mirrored", "warnings": []}


@pytest.mark.tensorflow
def test_switch_off_falls_back_to_moving_with_one_warning_naming_the_switch():
    result = _run("import autodist\nimport keras\nimport tensorflow as tf", AUTODIST_ACTIVATE="0")
    assert (result["current"], result["variable"], result["strategy"]) == ("_DefaultDistributionStrategy", "ResourceVariable", "mirrored")
    (warning,) = result["warnings"]
    assert "trained a copy" in warning and "AUTODIST_ACTIVATE=0" in warning


def test_switch_values():
    assert [activation_enabled({"AUTODIST_ACTIVATE": v}) for v in ("0", "off", "False", "1", "")] == [False, False, False, True, True]
    assert activation_enabled({})
