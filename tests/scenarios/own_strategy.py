"""A script's own strategy with autodist imported, in one process (2 logical CPUs).

``legacy`` (TF_USE_LEGACY_KERAS=1 AUTODIST_ACTIVATE=0): a tf_keras model with a legacy
``OptimizerV2`` moved in and copied back, and tuned; a model built under a strategy that names
devices this machine lacks. ``resume kill|go|reference FOLDER`` (tf_keras): the legacy
optimizer saved on SIGTERM and restored. ``activated`` (Keras 3, activation on): autodist's strategy is current and
holds variables before the script creates one of its own; a deep copy of a strategy; a strategy
named in ``fit`` for a model built in the script's scope.

Run: AUTODIST_CPU_DEVICES=2 [TF_USE_LEGACY_KERAS=1 AUTODIST_ACTIVATE=0] python tests/scenarios/own_strategy.py legacy|activated|resume ...
Prints one ``RESULT <json>`` line; the assertions live in tests/test_own_strategy.py.
"""

from __future__ import annotations

import json
import os
import sys

import autodist

import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).rand(64, 4).astype("float32")
y = x @ np.arange(1, 5, dtype="float32").reshape(4, 1)


def build():
    tf.keras.utils.set_random_seed(3)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.legacy.SGD(0.01, momentum=0.9), loss="mse")
    return model


def legacy_optimizer_copied_back() -> dict:
    """The fallback with a legacy OptimizerV2: the model was built with no strategy (activation
    off), autodist trains a copy under mirrored and copies weights and momentum back."""
    model = build()
    history = autodist.fit(model, x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    reference_strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])  # activation is off: nothing is current
    with reference_strategy.scope():
        reference = build()
    reference.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    slots = [v for v in model.optimizer.variables() if "momentum" in v.name]
    reference_slots = [v for v in reference.optimizer.variables() if "momentum" in v.name]
    return {
        "optimizer": type(model.optimizer).__module__ + "." + type(model.optimizer).__name__,
        "plan": history.plan.strategy.value,
        "iterations": int(model.optimizer.iterations.numpy()),
        "weights_gap": max(float(np.max(np.abs(a - b))) for a, b in zip(model.get_weights(), reference.get_weights(), strict=True)),
        "momentum_gap": max(float(np.max(np.abs(a.numpy() - b.numpy()))) for a, b in zip(slots, reference_slots, strict=True)),
        "num_momentum_slots": len(slots),
    }


def legacy_optimizer_tuned() -> dict:
    """strategy='tune' times its candidates on copies of a model with a legacy OptimizerV2."""
    import autodist.planning.tune_rules

    autodist.planning.tune_rules.TUNE_SHARE = 1e9  # time the candidates, whatever the planned training
    model = build()
    history = autodist.fit(model, x, y, batch_size=16, epochs=2, strategy="tune", shuffle=False, verbose=0)
    return {"reason": [r for r in history.plan.reasons if r.startswith("strategy='tune'")], "iterations": int(model.optimizer.iterations.numpy())}


def legacy_optimizer_resumed(mode: str, folder: str) -> dict:
    """SIGTERM at optimizer step 6 of 12 (``kill``: exits 75 after saving), then a start that
    resumes (``go``); ``reference`` trains the same uninterrupted."""
    import signal

    class Kill(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if mode == "kill" and int(self.model.optimizer.iterations.numpy()) == 6:
                os.kill(os.getpid(), signal.SIGTERM)

    model = build()
    autodist.fit(model, x, y, batch_size=16, epochs=3, shuffle=False, verbose=0, callbacks=[Kill()], backup_dir=folder)
    return {"iterations": int(model.optimizer.iterations.numpy()), "weights": [w.tolist() for w in model.get_weights()]}


def missing_devices() -> dict:
    """A model built in the scope of a strategy that names GPUs this machine does not have."""
    strategy = tf.distribute.MirroredStrategy(devices=["/gpu:0", "/gpu:1"])
    with strategy.scope():
        model = build()
    try:
        autodist.fit(model, x, y, batch_size=16, epochs=1, verbose=0)
    except autodist.AutodistError as err:
        return {"error": type(err).__name__, "message": str(err)}
    return {"error": None}


def after_autodists_strategy_holds_variables() -> dict:
    """Autodist's strategy is current and holds a model; then the script copies a strategy and
    creates one of its own: autodist's stays current (it steps aside inside the script's scope
    only), and fit keeps the script's strategy for the model built in its scope."""
    import copy
    import os
    import tempfile
    import warnings

    import keras

    from autodist.tensorflow import activation_record

    ours = tf.distribute.get_strategy()
    copied = copy.deepcopy(ours)
    after_copy = activation_record.current().script_strategy
    autodists_model = build_keras3()
    own = tf.distribute.OneDeviceStrategy("/cpu:1")
    still_current = tf.distribute.get_strategy() is ours
    with own.scope():
        scripts_model = build_keras3()
    kept = autodist.fit(scripts_model, x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    with own.scope():
        plain_model = build_keras3()
    plain_model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    # outside the block, with autodist's strategy current: evaluate, predict, save and reload
    outside = {
        "evaluate_gap": abs(scripts_model.evaluate(x, y, verbose=0) - plain_model.evaluate(x, y, verbose=0)),
        "predict_gap": float(np.max(np.abs(scripts_model.predict(x, verbose=0) - plain_model.predict(x, verbose=0)))),
    }
    path = os.path.join(tempfile.mkdtemp(prefix="own-strategy-"), "model.keras")
    plain_model.save(path)
    outside["reloaded_evaluate_gap"] = abs(keras.models.load_model(path).evaluate(x, y, verbose=0) - plain_model.evaluate(x, y, verbose=0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with own.scope():
            forced_model = build_keras3()
        forced = autodist.fit(forced_model, x, y, batch_size=16, epochs=1, strategy="mirrored", verbose=0)
    return {
        "copy_is_not_the_scripts": after_copy is None and copied is not ours,
        "autodists_model_under_ours": autodists_model.distribute_strategy is ours,
        "still_current": still_current,
        "script_strategy_recorded": activation_record.current().script_strategy,
        "kept_plan": kept.plan.strategy.value,
        "kept_reason": kept.plan.reasons[0],
        "kept_weights_gap": max(float(np.max(np.abs(a - b))) for a, b in zip(scripts_model.get_weights(), plain_model.get_weights(), strict=True)),
        "outside_the_block": outside,
        "forced_plan": forced.plan.strategy.value,
        "forced_warnings": [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)],
    }


def build_keras3():
    import keras

    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9), loss="mse")
    return model


def legacy_model_saved_outside_its_scope() -> dict:
    """The multi-worker tutorial's order, in tf_keras with autodist's strategy activated: a first
    model (autodist's strategy then holds variables), then the script's own strategy and a model in
    its scope, saved outside it (tf_keras builds its metrics there, lazily), then trained."""
    import os
    import tempfile

    import numpy as np
    import tensorflow as tf

    import autodist

    x, y = np.ones((8, 3), "float32"), np.ones((8, 1), "float32")
    first = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
    first.compile(optimizer="sgd", loss="mse")
    autodist.fit(first, x, y, batch_size=4, epochs=1, verbose=0)
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    with tempfile.TemporaryDirectory() as folder:
        model.save(os.path.join(folder, "saved"))  # a SavedModel, outside the script's scope
    history = autodist.fit(model, x, y, batch_size=4, epochs=1, verbose=0)
    return {"metrics": sorted(history.history), "plan": history.plan.strategy.value, "first": first.distribute_strategy is not strategy}


if sys.argv[1:] == ["legacy"]:
    print("RESULT " + json.dumps({"legacy": legacy_optimizer_copied_back(), "missing": missing_devices(), "tuned": legacy_optimizer_tuned()}), flush=True)
elif sys.argv[1:] == ["legacy_activated"]:
    print("RESULT " + json.dumps({"legacy_activated": legacy_model_saved_outside_its_scope()}), flush=True)
elif sys.argv[1] == "resume":
    print("RESULT " + json.dumps({"resumed": legacy_optimizer_resumed(sys.argv[2], sys.argv[3])}), flush=True)
else:
    print("RESULT " + json.dumps({"activated": after_autodists_strategy_holds_variables()}), flush=True)
