"""Bad input gets an AutodistError that says what happened, what was expected and how to fix it."""

from __future__ import annotations

import json

import numpy as np
import pytest

import autodist
from autodist.errors import (
    AutodistError,
    BatchSizeError,
    ClusterConfigError,
    ModelPlacementError,
    RuntimeAlreadyStartedError,
    StrategyUnavailableError,
)
from tests.conftest import make_snapshot, run_python, subprocess_env

TWO_WORKERS = {"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}}

# (id, call, error type, phrases the message must contain)
PLAN_ERRORS = [
    ("malformed-tf-config", lambda: autodist.detect({"TF_CONFIG": "{not json"}, fast=True), ClusterConfigError, ["not valid JSON", "Received: TF_CONFIG={not json"]),
    ("tf-config-index", lambda: autodist.detect({"TF_CONFIG": json.dumps({**TWO_WORKERS, "task": {"type": "worker", "index": 2}})}, fast=True), ClusterConfigError, ["out of range", "0 to 1"]),
    ("batch-zero", lambda: autodist.plan(make_snapshot(), batch_size=0), BatchSizeError, ["an integer from 1", "Received: batch_size=0"]),
    ("batch-float", lambda: autodist.plan(make_snapshot(), batch_size=12.5), BatchSizeError, ["an integer from 1", "12.5", "Pass an int"]),
    ("forced-tpu-missing", lambda: autodist.plan(make_snapshot(), strategy="tpu"), StrategyUnavailableError, ["no TPU was found", "strategy='auto'"]),
    ("forced-ps-missing", lambda: autodist.plan(make_snapshot(tf_config=TWO_WORKERS), strategy="parameter_server"), StrategyUnavailableError, ["no 'ps' tasks", "--ps 1"]),
    ("forced-mwms-no-cluster", lambda: autodist.plan(make_snapshot(), strategy="multi_worker_mirrored"), StrategyUnavailableError, ["no cluster is defined", "autodist launch"]),
    ("single-host-in-cluster", lambda: autodist.plan(make_snapshot(tf_config=TWO_WORKERS), strategy="mirrored"), StrategyUnavailableError, ["2-worker cluster", "unsynchronised"]),
    ("unknown-strategy", lambda: autodist.plan(make_snapshot(), strategy="horovod"), AutodistError, ["Received: strategy='horovod'", "mirrored"]),
    ("memory-fraction", lambda: autodist.plan(make_snapshot(), gpu_memory_fraction=0), AutodistError, ["gpu_memory_fraction", "0.9"]),
    ("cpu-devices-env", lambda: autodist.detect({"AUTODIST_CPU_DEVICES": "-1"}, fast=True), AutodistError, ["AUTODIST_CPU_DEVICES='-1'", "unset it"]),
    ("cpu-devices-over-the-cores", lambda: autodist.detect({"AUTODIST_CPU_DEVICES": "9999"}, fast=True), AutodistError, ["AUTODIST_CPU_DEVICES='9999'", "Expected at most", "per core"]),
]


@pytest.mark.parametrize("call, error, phrases", [e[1:] for e in PLAN_ERRORS], ids=[e[0] for e in PLAN_ERRORS])
def test_plan_level_errors(call, error, phrases):
    with pytest.raises(error) as caught:
        call()
    assert isinstance(caught.value, AutodistError)
    for phrase in phrases:
        assert phrase in str(caught.value), str(caught.value)


def _data():
    return np.ones((8, 4), "float32"), np.zeros((8, 1), "float32")


def test_fit_uncompiled_model(tensorflow_imported):
    import keras

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    with pytest.raises(ModelPlacementError, match="not compiled.*model.compile"):
        autodist.fit(model, *_data(), batch_size=4, verbose=0)


def test_fit_builder_returning_something_else(tensorflow_imported):
    with pytest.raises(ModelPlacementError, match="returned dict, not a Keras model"):
        autodist.fit(lambda: {}, *_data(), batch_size=4, verbose=0)


def test_fit_builder_returning_uncompiled_model(tensorflow_imported):
    import keras

    with pytest.raises(ModelPlacementError, match="not compiled.*inside the function"):
        autodist.fit(lambda: keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)]), *_data(), batch_size=4, verbose=0)


def test_fit_not_a_model():
    with pytest.raises(ModelPlacementError, match="Received: model='model.keras', a str"):
        autodist.fit("model.keras", *_data(), verbose=0)


def test_another_librarys_fit_that_the_one_line_change_reached_runs_as_written_and_says_so(recwarn):
    """A script's ``le.fit(labels)`` (scikit-learn), adopted as every ``x.fit(`` is
    (``autodist.fit(le, labels)``): that object's own fit runs with the arguments the line gave, its
    result comes back, and one AutodistWarning a class says autodist distributed nothing there."""
    from sklearn import preprocessing

    labels = ["blink", "math", "blink", "relax"]
    encoder = preprocessing.LabelEncoder()
    assert autodist.fit(encoder, labels) is encoder
    assert list(encoder.classes_) == ["blink", "math", "relax"]
    rows = np.array([[1.0, 2.0], [3.0, 6.0], [5.0, 10.0]])
    scaler = preprocessing.StandardScaler()
    assert autodist.fit(scaler, rows, None, sample_weight=np.array([1.0, 1.0, 2.0])) is scaler
    assert scaler.mean_.tolist() == np.average(rows, axis=0, weights=[1, 1, 2]).tolist()
    autodist.fit(preprocessing.LabelEncoder(), labels)  # the same class again: nothing new to say
    said = [str(w.message) for w in recwarn if w.category is autodist.AutodistWarning]
    assert len(said) == 2 and all("not a Keras model" in m and "undistributed" in m for m in said), said
    assert "a LabelEncoder of sklearn" in said[0] and "call LabelEncoder's fit directly" in said[0], said[0]
    assert {w.filename for w in recwarn if w.category is autodist.AutodistWarning} == {__file__}  # the script's line

    class Regression:  # another library's model, whose fit takes epochs and a batch of its own
        def fit(self, x, y=None, epochs=10, batch_size=None, verbose=1):
            self.given = (x, y, epochs, batch_size, verbose)
            return "its own result"

    model = Regression()
    assert autodist.fit(model, [1.0], [2.0], epochs=3, batch_size=8, verbose=0) == "its own result"
    assert model.given == ([1.0], [2.0], 3, 8, 0)
    autodist.fit(model, [1.0])
    assert model.given == ([1.0], None, 10, None, 1), "what the line did not set is the library's own default"


def test_model_that_cannot_move_into_scope_names_the_fix(tensorflow_imported):
    """A subclassed model without get_config, built outside the scope that one_device needs."""
    import keras

    class Unserialisable(keras.Model):
        def __init__(self, width):
            super().__init__()
            self.dense = keras.layers.Dense(width)

        def call(self, x):
            return self.dense(x)

    model = Unserialisable(1)
    model(np.ones((1, 4), "float32"))
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ModelPlacementError) as caught:
        autodist.fit(model, *_data(), batch_size=4, verbose=0, strategy="one_device")
    message = str(caught.value)
    assert "outside the OneDeviceStrategy scope" in message
    assert "zero-argument function that builds and compiles" in message


def test_runtime_started_before_cpu_split(processes):
    """TensorFlow ran an op before autodist was imported: the split is impossible, and we say why."""
    code = (
        "import tensorflow as tf, numpy as np, keras\n"
        "tf.constant(1.0) + 1\n"
        "import autodist\n"
        "m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)]); m.compile('sgd', 'mse')\n"
        "try:\n"
        "    autodist.fit(m, np.ones((8, 4)), np.ones((8, 1)), batch_size=4, verbose=0)\n"
        "except autodist.RuntimeAlreadyStartedError as err:\n"
        "    print('ERROR', err)\n"
    )
    proc = run_python(["-c", code], env=subprocess_env(AUTODIST_CPU_DEVICES="2"), timeout=120)
    assert "ERROR AUTODIST_CPU_DEVICES=2 asks for 2 logical CPU devices" in proc.stdout, proc.stderr[-2000:]
    assert "TensorFlow ran ops before `import autodist`" in proc.stdout
    assert "move `import autodist` to the top of the script" in proc.stdout
    assert issubclass(RuntimeAlreadyStartedError, AutodistError)


def test_a_warning_points_at_the_users_line_not_at_autodist_or_keras():
    """Issue 59: every warning of a fit pointed at autodist/tensorflow/backend.py:68. Now it points
    at the first frame outside autodist, Keras and TensorFlow: the user's own line."""
    import warnings

    from autodist.errors import AutodistWarning

    inner = {"__name__": "autodist.tensorflow.fake"}  # a function of autodist's, called by one of Keras's
    exec("from autodist.log import warn_all\ndef warn():\n    warn_all(['said'])", inner)
    outer = {"__name__": "keras.src.fake", "warn": inner["warn"]}
    exec("def fit():\n    warn()", outer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outer["fit"]()  # the user's line
        line = __import__("inspect").currentframe().f_lineno - 1
    assert [(w.category, w.filename, w.lineno) for w in caught] == [(AutodistWarning, __file__, line)]
