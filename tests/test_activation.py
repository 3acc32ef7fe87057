"""Activation at TensorFlow import (autodist/tensorflow/current_strategy.py), each case in a fresh process.

The switch, the import orders a user writes, and the fallback's warning. The training numbers
under an activated strategy are checked against model.fit in tests/test_training.py.
"""

from __future__ import annotations

import importlib.util
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
    history = autodist.fit(model, {data}, batch_size=8, verbose=0)
weight = model.weights[0]
print("RESULT " + json.dumps({{
    "current": type(tf.distribute.get_strategy()).__name__,
    "variable": type(getattr(weight, "value", weight)).__name__,
    "strategy": history.plan.strategy.value,
    "warnings": [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)],
}}))
"""


ARRAYS = 'np.ones((32, 3), "float32"), np.ones((32, 1), "float32")'
DATASET = 'tf.data.Dataset.from_tensor_slices((np.ones((32, 3), "float32"), np.ones((32, 1), "float32"))).batch(8)'


def _run(imports: str, data: str = ARRAYS, **env: str) -> dict:
    program = PROGRAM.format(imports=imports, data=data)
    proc = run_python(["-c", program], env=subprocess_env(AUTODIST_CPU_DEVICES="2", **env), timeout=120)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


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
def test_import_order_before_any_op_creates_the_model_under_the_strategy(processes, imports):
    result = _run(imports)
    assert result == {"current": "MirroredStrategy", "variable": "MirroredVariable", "strategy": "mirrored", "warnings": []}


@pytest.mark.parametrize("data", [ARRAYS, DATASET], ids=["arrays", "dataset"])
def test_switch_off_falls_back_to_moving_with_one_warning_naming_the_switch(processes, data):
    """The fallback builds the unbuilt model from its first batch (arrays or a dataset), moves
    it, trains, and copies the state back into the caller's object."""
    result = _run("import autodist\nimport keras\nimport tensorflow as tf", data, AUTODIST_ACTIVATE="0")
    assert (result["current"], result["variable"], result["strategy"]) == ("_DefaultDistributionStrategy", "ResourceVariable", "mirrored")
    (warning,) = result["warnings"]
    assert "trained a copy" in warning and "AUTODIST_ACTIVATE=0" in warning


def test_switch_values():
    assert [activation_enabled({"AUTODIST_ACTIVATE": v}) for v in ("0", "off", "False", "1", "")] == [False, False, False, True, True]
    assert activation_enabled({})


def test_import_plan_that_turns_out_too_small_switches_to_central_storage_with_the_cause(fresh_state):
    """On 2 x 16 GiB GPUs the import-time plan (no model yet) is mirrored and says what it
    assumed; fit's plan for a 1B-parameter model is central_storage, and the fallback's warning
    names that change and the fix (AUTODIST_STRATEGY=central_storage)."""
    import dataclasses

    from autodist.core.detect_and_plan import plan_here
    from autodist.tensorflow import activation_record, current_strategy, placement
    from tests.conftest import make_snapshot

    snapshot = make_snapshot(num_gpus=2, gpu_memory_gib=16)
    at_import = plan_here({}, snapshot=snapshot)
    at_import = dataclasses.replace(at_import, reasons=at_import.reasons + (current_strategy.ASSUMED_FITS,))
    assert at_import.strategy.value == "mirrored" and "assumes the model fits" in at_import.summary()
    in_fit = plan_here({}, snapshot=snapshot, num_params=1_000_000_000)
    assert in_fit.strategy.value == "central_storage"
    fresh_state.activation = activation_record.Activation(plan=at_import)
    key, cause = placement._move_cause(in_fit)
    assert "was mirrored, and this fit chose central_storage" in cause
    assert "AUTODIST_STRATEGY=central_storage" in cause


@pytest.mark.parametrize("strategy, variable", [("one_device", "ResourceVariable"), ("central_storage", "AggregatingVariable")])
def test_unbuilt_model_is_created_under_the_strategy_set_by_environment(processes, strategy, variable):
    """AUTODIST_STRATEGY picks what is made current, and fit's "auto" means the same: the unbuilt
    model is created there and trains as it is, no copy and no warning."""
    result = _run("import autodist\nimport keras\nimport tensorflow as tf", AUTODIST_STRATEGY=strategy)
    assert (result["strategy"], result["warnings"]) == (strategy, [])
    assert result["variable"] == variable


TUNER = """
import json, sys
import autodist
import keras
import keras_tuner
import numpy as np
import tensorflow as tf

seen = []


class Record(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        weight = self.model.weights[0]
        seen.append({"replicas": self.model.distribute_strategy.num_replicas_in_sync,
                     "variable": type(getattr(weight, "value", weight)).__name__})


def build_model(hp):
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(hp.Int("units", 4, 16, step=4), activation="relu"),
                              keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


tuner = keras_tuner.RandomSearch(build_model, objective="val_loss", max_trials=3, overwrite=True,
                                 directory=sys.argv[1], project_name="search")
x, y = np.random.rand(64, 8).astype("float32"), np.random.rand(64, 1).astype("float32")
tuner.search(x, y, epochs=1, batch_size=16, validation_split=0.25, callbacks=[Record()], verbose=0)
print("RESULT " + json.dumps({"trials": seen, "current": type(tf.distribute.get_strategy()).__name__}))
"""


def test_a_keras_tuner_search_trains_every_trial_under_the_strategy_made_current(processes, tmp_path):
    """KerasTuner calls keras.backend.clear_session() before building each trial, which resets
    TensorFlow's default graph and with it the current strategy: the log said mirrored while every
    trial after the first trained on one device (issue 45). Now each trial trains on 2 replicas."""
    proc = run_python(["-c", TUNER, str(tmp_path)], env=subprocess_env(AUTODIST_CPU_DEVICES="2"), timeout=240)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    assert len(result["trials"]) == 3 and result["current"] == "MirroredStrategy", result
    assert all(trial == {"replicas": 2, "variable": "MirroredVariable"} for trial in result["trials"]), result
    assert "mirrored is the current strategy again" in proc.stderr


EVALUATE_ONLY = """
import json, sys
if sys.argv[1] == "autodist":
    import autodist
import keras
import numpy as np


class CustomModel(keras.Model):  # the 'customizing fit' guide's "Providing your own evaluation step", as written
    def test_step(self, data):
        x, y = data
        y_pred = self(x, training=False)
        loss = self.compute_loss(y=y, y_pred=y_pred)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


keras.utils.set_random_seed(0)
first = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
first.compile(optimizer="sgd", loss="mse")
rng = np.random.default_rng(0)
data = rng.random((64, 4)), rng.random((64, 1))
autodist.fit(first, *data, epochs=1, verbose=0) if sys.argv[1] == "autodist" else first.fit(*data, epochs=1, verbose=0)
inputs = keras.Input(shape=(32,))
model = CustomModel(inputs, keras.layers.Dense(1)(inputs))
model.compile(loss="mse", metrics=["mae"])
x, y = rng.random((1000, 32)), rng.random((1000, 1))
print("RESULT " + json.dumps(model.evaluate(x, y, verbose=0)))
"""


def test_a_model_only_evaluated_under_the_strategy_made_current_keeps_its_own_test_steps_loss(processes):
    """The 'customizing fit' guide evaluates a model with a test_step of its own that never goes
    through fit: under the strategy autodist made current, Keras divided its compute_loss by the
    replicas, so evaluate read half of one device's loss (the corpus's guide_custom_train_step,
    issue 45). Its test_step now runs as autodist.fit runs a model's own steps."""
    found = {}
    for arm in ("plain", "autodist"):
        proc = run_python(["-c", EVALUATE_ONLY, arm], env=subprocess_env(AUTODIST_CPU_DEVICES="2"), timeout=240)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        assert proc.returncode == 0 and lines, proc.stderr[-3000:]
        found[arm] = json.loads(lines[-1][len("RESULT "):])
    assert found["autodist"] == pytest.approx(found["plain"], rel=1e-5), found


RAW_TENSORFLOW = """
import importlib.util
import json
{imports}
import keras
import numpy as np
import tensorflow as tf

# The TensorFlow guide's basics, before any model: a variable, a tape, a function, a module.
x = tf.Variable(1.0)
with tf.GradientTape() as tape:
    y = x**2 + 2 * x - 5
gradient = tape.gradient(y, x)
x.assign_add(1.0)


@tf.function
def doubled():
    return x * 2


class Linear(tf.Module):
    def __init__(self):
        self.w = tf.Variable(5.0)
        self.b = tf.Variable(0.0)

    def __call__(self, inputs):
        return self.w * inputs + self.b


module = Linear()
for _ in range(3):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(module(tf.constant([1.0, 2.0])) - tf.constant([2.0, 4.0])))
    for variable, grad in zip(module.trainable_variables, tape.gradient(loss, module.trainable_variables)):
        variable.assign_sub(0.1 * grad)

# The data augmentation tutorial's generator, drawn from in a tf.data map (TensorFlow updates its
# state through the current strategy)
rng = tf.random.Generator.from_seed(123, alg="philox")
seeds = [int(seed[0]) for seed in tf.data.Dataset.range(3).map(lambda i: rng.make_seeds(1)[:, 0])]


class WithCounter(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.seen = tf.Variable(0.0, trainable=False)  # a raw variable of a Keras object: the model's

    def call(self, inputs):
        return self.dense(inputs)


model = WithCounter()
model.compile(optimizer="sgd", loss="mse")
model.fit(np.ones((8, 3), "float32"), np.ones((8, 1), "float32"), batch_size=4, verbose=0)
with tf.distribute.get_strategy().scope():
    scoped = tf.Variable(1.0)  # a scope the script opened: the strategy's, as without autodist


def kind(variable):
    return type(variable.value if isinstance(variable, keras.Variable) else variable).__name__


print("RESULT " + json.dumps({{
    "numbers": [float(gradient), float(x.numpy()), float(doubled()), float(module.w.numpy()), float(module.b.numpy())],
    "seeds": seeds,
    "raw": [kind(x), kind(module.w)],
    "keras": [kind(model.dense.kernel), kind(model.seen), kind(scoped)],
}}))
"""


def test_raw_tensorflow_beside_keras_runs_as_without_autodist(processes):
    """Issue 59: the TensorFlow guide's basics (a tf.Variable and a tape before any model) raised
    'DistributedVariable.handle is not available outside the replica context' on 2 replicas, and a
    tf.random.Generator drawn from in a tf.data map failed MirroredStrategy's update assertion.
    The script's own variables are now plain, with one device's numbers; Keras's objects, and
    what the script creates in a scope it opens, are still the strategy's."""
    runs = {}
    for name, imports in {"without": "", "autodist": "import autodist"}.items():
        program = RAW_TENSORFLOW.format(imports=imports)
        proc = run_python(["-c", program], env=subprocess_env(AUTODIST_CPU_DEVICES="2"), timeout=120)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        assert proc.returncode == 0 and lines, proc.stderr[-3000:]
        runs[name] = json.loads(lines[-1][len("RESULT "):])
    assert runs["autodist"]["numbers"] == runs["without"]["numbers"]
    assert runs["autodist"]["seeds"] == runs["without"]["seeds"] and len(set(runs["without"]["seeds"])) == 3
    assert runs["autodist"]["raw"] == ["ResourceVariable", "ResourceVariable"]
    assert runs["autodist"]["keras"] == ["MirroredVariable", "MirroredVariable", "MirroredVariable"]
    assert "MirroredVariable" not in runs["without"]["keras"]


DRAWING = """
import json, warnings
import autodist
import keras
import numpy as np

augment = keras.Sequential([keras.layers.RandomFlip("horizontal")])  # outside the model (keras.io's Perceiver)


class Classifier(keras.Model):
    def build(self, input_shape):  # layers made in build(): not in the layer list before fit
        self.head = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(8), keras.layers.Dropout(0.5)])
        self.quiet = keras.layers.GRU(4, dropout=0.0, recurrent_dropout=0.0)
        self.out = keras.layers.Dense(2)
        super().build(input_shape)

    def call(self, inputs, training=False):
        images = augment(inputs, training=training)
        steps = keras.ops.reshape(images, (-1, 4, 4))
        return self.out(keras.ops.concatenate([self.head(images, training=training), self.quiet(steps)], axis=-1))


model = Classifier()
model.compile(optimizer="sgd", loss="mse")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    history = autodist.fit(model, np.ones((16, 4, 4, 1), "float32"), np.ones((16, 2), "float32"), batch_size=8, verbose=0)
said = [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)]
print("RESULT " + json.dumps({"warnings": said, "replicas": history.plan.num_replicas}))
"""


def test_the_layers_said_to_draw_are_those_a_traced_training_call_runs(processes):
    """Issue 59: the layer list missed a Sequential defined outside the model and the layers made
    in build(), and named RNN cells that draw nothing. The warning now names what the model's
    training call draws with: the module-level RandomFlip and build()'s Dropout, not the GRU."""
    proc = run_python(["-c", DRAWING], env=subprocess_env(AUTODIST_CPU_DEVICES="2"), timeout=180)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    drawn = [w for w in result["warnings"] if "each replica from its own stream" in w]
    assert result["replicas"] == 2 and len(drawn) == 1, result
    named = drawn[0].split(" draw random masks")[0]
    assert sorted(named.split(", ")) == ["dropout", "random_flip"], drawn[0]


UNSPLIT = """
import json, sys, warnings
{imports}
import keras
import numpy as np

keras.utils.set_random_seed(1)


class Scaled(keras.layers.Layer):  # no get_config, and its __init__ takes a value: Keras cannot save it
    def __init__(self, units):
        super().__init__()
        self.units = units

    def build(self, shape):
        self.w = self.add_weight(shape=(shape[-1], self.units))

    def call(self, x):
        return x @ self.w


hidden = {{"saved": lambda: keras.layers.Dense(4, activation="relu"), "unsaveable": lambda: Scaled(4)}}[{kind!r}]
model = keras.Sequential([keras.Input((3,)), hidden(), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse", metrics=["mae"])
x, y = np.random.rand(10, 3).astype("float32"), np.random.rand(10, 1).astype("float32")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    history = {fit}(x, y, batch_size=1, epochs=2, verbose=0, shuffle=False)
print("RESULT " + json.dumps({{
    "history": history.history,
    "weights": [w.tolist() for w in model.get_weights()],
    "strategy": getattr(getattr(history, "plan", None), "strategy", None) and history.plan.strategy.value,
    "warnings": [str(w.message) for w in caught if "Autodist" in type(w.message).__name__],
}}))
"""


@pytest.mark.parametrize("kind", ["saved", "unsaveable"])
def test_a_batch_smaller_than_the_replicas_trains_the_program_as_written_on_one_device(processes, kind):
    """keras.io's attention MIL classifier trains with batch_size=1: on 2 replicas autodist made
    it 2 (half the steps, other numbers). Now the fit trains on one device, with one device's
    History and weights, and the warning names the batch as the cause. A model Keras cannot save
    (the classifier's attention layer has no get_config) is moved there in place: the caller's
    own model trains, its weights, metrics and optimizer on one device."""
    runs = {}
    for name, imports, fit in (("plain", "", "model.fit"), ("autodist", "import autodist", "autodist.fit")):
        program = UNSPLIT.format(
            imports=imports, kind=kind, fit=fit if name == "plain" else "(lambda *a, **k: autodist.fit(model, *a, **k))"
        )
        proc = run_python(["-c", program], env=subprocess_env(AUTODIST_CPU_DEVICES="2"), timeout=180)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        assert proc.returncode == 0 and lines, proc.stderr[-3000:]
        runs[name] = json.loads(lines[-1][len("RESULT "):])
    assert runs["autodist"]["strategy"] == "default"
    assert runs["autodist"]["history"] == runs["plain"]["history"]
    assert runs["autodist"]["weights"] == runs["plain"]["weights"]
    assert any("batch_size=1 is smaller than the 2 replicas" in w for w in runs["autodist"]["warnings"]), runs["autodist"]
    in_place = [w for w in runs["autodist"]["warnings"] if "moved its variables into that scope, in place" in w]
    assert in_place, runs["autodist"]["warnings"]  # the caller's model, moved in place: nothing saved or loaded


COUNTER = """
import json, warnings
import autodist
import keras
import numpy as np
import tensorflow as tf

seen = tf.Variable(0.0, trainable=False)  # the script's own, outside any Keras object: plain


class Counting(keras.Model):
    def train_step(self, data):
        seen.assign_add(1.0)  # written in each replica's step
        return super().train_step(data)


inputs = keras.Input((3,))
model = Counting(inputs, keras.layers.Dense(1)(inputs))
model.compile(optimizer="sgd", loss="mse")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    autodist.fit(model, np.ones((8, 3), "float32"), np.ones((8, 1), "float32"), batch_size=4, verbose=0)
said = [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)]
print("RESULT " + json.dumps({"warnings": said, "seen": float(seen.numpy())}))
"""


def test_a_plain_variable_of_the_script_written_in_each_replicas_step_is_said(processes):
    """The script's own variables are plain (as without autodist); one that a training step writes
    is written by every replica (here 2 steps on 2 replicas: 4 where one device counts 2), and an
    AutodistWarning says so, with the fix."""
    proc = run_python(["-c", COUNTER], env=subprocess_env(AUTODIST_CPU_DEVICES="2"), timeout=180)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    written = [w for w in result["warnings"] if "tf.Variable 'Variable'" in w and "writes it 2 times" in w]
    assert len(written) == 1 and result["seen"] == 4.0, result


OWN_LOOP = """
import autodist, keras, numpy as np, tensorflow as tf
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
optimizer = keras.optimizers.Adam()


@tf.function
def step(x, y):
    with tf.GradientTape() as tape:
        loss = keras.losses.mean_squared_error(y, model(x))
    grads = tape.gradient(loss, model.trainable_weights)
    optimizer.apply(grads, model.trainable_weights)
    return loss


try:
    step(np.ones((4, 3), "float32"), np.ones((4, 1), "float32"))
    print("RESULT ran", float(model.trainable_weights[1].numpy()[0]))
except autodist.ReplicaContextError as err:
    print("RESULT named", isinstance(err, ValueError), " ".join(str(err).split()))
"""


def test_a_custom_step_written_for_one_device_gets_a_named_error_on_replicas_and_runs_on_one(processes, tmp_path):
    """The Keras guide's own training loop (tape.gradient and apply on a Keras model, outside
    strategy.run) cannot run on 2 replicas as written: TensorFlow said only that a
    DistributedVariable's handle is not available outside the replica context. autodist names the
    variable, the line and the fix (a ReplicaContextError, still a ValueError); on one device the
    same script runs."""
    said = {}
    script = tmp_path / "own_loop.py"  # a file: TensorFlow's error shows its lines
    script.write_text(OWN_LOOP)
    for devices in ("2", "1"):
        proc = run_python([str(script)], env=subprocess_env(AUTODIST_CPU_DEVICES=devices), timeout=180)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        assert proc.returncode == 0 and lines, proc.stderr[-3000:]
        said[devices] = lines[-1]
    assert said["2"].startswith("RESULT named True"), said
    assert 'own_loop.py", line 11, in step' in said["2"] and "grads = tape.gradient" in said["2"], said  # the line
    assert "sequential/dense/kernel" in said["2"] and "strategy.run(train_step" in said["2"], said
    assert said["1"].startswith("RESULT ran"), said


LEGACY_LOOP = """
import autodist, numpy as np, tensorflow as tf


class MyModel(tf.keras.Model):  # the TensorFlow guide's basic training loop, in tf_keras
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = tf.Variable(5.0)
        self.b = tf.Variable(0.0)

    def call(self, x):
        return self.w * x + self.b


model = MyModel()
x, y = tf.constant(np.arange(4.0, dtype="float32")), tf.constant(np.arange(4.0, dtype="float32") * 3.0)
try:
    with tf.GradientTape() as t:
        current_loss = tf.reduce_mean(tf.square(y - model(x)))
    dw, db = t.gradient(current_loss, [model.w, model.b])
    print("RESULT ran", type(model).__module__, float(dw))
except autodist.ReplicaContextError as err:
    print("RESULT named", isinstance(err, ValueError), " ".join(str(err).split()))
loss_object = tf.keras.losses.MeanSquaredError()  # reduction AUTO, as the guides make it


@tf.function
def train_step(x, y):
    return loss_object(y, model(x))


try:
    print("LOSS ran", float(train_step(x, y)))
except autodist.ReplicaContextError as err:
    print("LOSS named", isinstance(err, ValueError), " ".join(str(err).split()))
"""


def test_a_custom_step_written_for_one_device_under_tf_keras_gets_the_named_error_too(processes, tmp_path):
    """tf_keras's variables are TensorFlow's own, not Keras 3's: the TensorFlow guide's basic
    training loop (a tf.keras.Model's variables, tape.gradient outside strategy.run), written for
    Keras 2, gets the same ReplicaContextError on 2 replicas, naming the variable and the fix, where
    TensorFlow said only that a DistributedVariable's handle is not available there. A tf_keras loss
    object averaged over the batch in a tf.function of the script's own (the mixed-precision and
    Effective TF2 guides' steps), where tf_keras asked only for another reduction, gets it too, with
    the line. On one device both run."""
    if importlib.util.find_spec("tf_keras") is None:  # not imported here: it sets os.environ
        pytest.skip("tf_keras is not installed")
    said = {}
    script = tmp_path / "legacy_loop.py"
    script.write_text(LEGACY_LOOP)
    for devices in ("2", "1"):
        env = subprocess_env(AUTODIST_CPU_DEVICES=devices, TF_USE_LEGACY_KERAS="1")
        proc = run_python([str(script)], env=env, timeout=180)
        lines = [line for line in proc.stdout.splitlines() if line.startswith(("RESULT ", "LOSS "))]
        assert proc.returncode == 0 and len(lines) == 2, proc.stderr[-3000:]
        said[devices] = lines
    (read, loss), (read_alone, loss_alone) = said["2"], said["1"]
    assert read.startswith("RESULT named True"), said
    assert "Variable:0" in read and "strategy.run(train_step" in read, said
    assert loss.startswith("LOSS named True") and "MeanSquaredError" in loss, said
    assert 'legacy_loop.py", line 29, in train_step' in loss and "Reduction.NONE" in loss, said
    assert read_alone == "RESULT ran __main__ 14.0", said  # mean(-2x(y - 5x)) for y = 3x, x = 0..3
    assert loss_alone.startswith("LOSS ran"), said
