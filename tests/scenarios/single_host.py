"""Real TensorFlow training cases, run in a fresh process (see tests/test_training.py).

The parent sets AUTODIST_CPU_DEVICES (and TF_USE_LEGACY_KERAS for tf_keras) before this process
starts, exactly as a user would. Each case prints nothing; the process prints one line,
``RESULT <json>``, with the measured values. Assertions live in the tests, not here.

Usage: python single_host.py {keras3,tf_keras}
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import autodist  # noqa: E402  (imported first: it splits the CPU when TensorFlow loads)
import numpy as np  # noqa: E402

FLAVOR = sys.argv[1] if len(sys.argv) > 1 else "keras3"
if FLAVOR == "tf_keras":
    import tf_keras as keras  # noqa: E402
else:
    import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from reference import plain  # noqa: E402
from autodist.tensorflow.strategies import build_strategy  # noqa: E402

NUM_SAMPLES, NUM_FEATURES, NUM_CLASSES = 256, 12, 3
rng = np.random.default_rng(7)
X = rng.normal(size=(NUM_SAMPLES, NUM_FEATURES)).astype("float32")
Y = (np.argmax(X[:, :NUM_CLASSES] + 0.5 * rng.normal(size=(NUM_SAMPLES, NUM_CLASSES)), axis=1)).astype("int32")
PLANS_MADE: list[str] = []  # every plan autodist makes after the import-time one


def _counting(plan):
    def counted(*args, **kwargs):
        PLANS_MADE.append(str(kwargs.get("strategy")))
        return plan(*args, **kwargs)

    return counted


autodist.planning.planner.plan = _counting(autodist.planning.planner.plan)  # what fit, init and @distributed plan with
log_stream = io.StringIO()
logging.getLogger("autodist").addHandler(logging.StreamHandler(log_stream))
logging.getLogger("autodist").setLevel(logging.INFO)


def build(optimizer: str = "sgd", compile_kwargs: dict | None = None):
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [keras.Input((NUM_FEATURES,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(NUM_CLASSES)]
    )
    opt = keras.optimizers.SGD(0.1) if optimizer == "sgd" else keras.optimizers.Adam(0.01)
    model.compile(
        optimizer=opt,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        **(compile_kwargs or {}),
    )
    return model


def autodist_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)]


def max_diff(a, b) -> float:
    return float(max(np.abs(x - y).max() for x, y in zip(a, b, strict=True)))


def reference(batch_size: int = 32, epochs: int = 1):
    """Plain single-device model.fit: no strategy, no autodist."""
    with plain():
        model = build()
        history = model.fit(X, Y, batch_size=batch_size, epochs=epochs, shuffle=False, verbose=0)
        evaluation = model.evaluate(X, Y, batch_size=batch_size, verbose=0)
    return model, history.history, evaluation


def history_gap(h1: dict, h2: dict) -> float:
    return float(max(abs(a - b) for key in h1 for a, b in zip(h1[key], h2[key], strict=True)))


def case_equivalence(strategy: str, ref_model, ref_hist, ref_eval) -> dict:
    """autodist.fit against plain model.fit: weights, History and evaluate (caller's and in-scope)."""
    import autodist.tensorflow.fit as integration

    moved: list = []
    original = integration.move_into_scope

    def remember(model, strategy_obj):
        moved.append(original(model, strategy_obj))
        return moved[-1]

    integration.move_into_scope = remember
    try:
        model = build()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            history = autodist.fit(
                model, X, Y, batch_size=32, epochs=1, shuffle=False, verbose=0, strategy=strategy
            )
    finally:
        integration.move_into_scope = original
    evaluation = model.evaluate(X, Y, batch_size=32, verbose=0)
    # The copy that trained in the strategy's scope, evaluated there: where the upstream metric
    # bug showed (CentralStorage).
    scoped_eval = None
    if moved:
        with build_strategy(history.plan).scope():
            scoped_eval = moved[0].evaluate(X, Y, batch_size=32, verbose=0)
    weight = model.weights[0]
    return {
        "variable_type": type(getattr(weight, "value", weight)).__name__,
        "warnings": autodist_warnings(caught),
        "strategy": history.plan.strategy.value,
        "num_replicas": history.plan.num_replicas,
        "moved_into_scope": bool(moved),
        "weight_diff": max_diff(model.get_weights(), ref_model.get_weights()),
        "history_gap": history_gap(history.history, ref_hist),
        "evaluate_gap": float(max(abs(a - b) for a, b in zip(evaluation, ref_eval, strict=True))),
        "scoped_evaluate_gap": None
        if scoped_eval is None
        else float(max(abs(a - b) for a, b in zip(scoped_eval, ref_eval, strict=True))),
        "caller_is_history_model": history.model is model,
    }


def case_batch_33() -> dict:
    model = build()
    counter = CountBatches()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = autodist.fit(model, X, Y, batch_size=33, epochs=1, verbose=0, shuffle=False, callbacks=[counter])
    with plain():
        reference_model = build()
        expected = reference_model.fit(X, Y, batch_size=34, epochs=1, shuffle=False, verbose=0).history
    messages = [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)]
    return {
        "global_batch_size": history.plan.global_batch_size,
        "loss": history.history["loss"][0],
        "loss_gap_vs_single_device_34": abs(history.history["loss"][0] - expected["loss"][0]),
        "batches": counter.train,
        "warnings": messages,
    }


def case_built_outside() -> dict:
    """The fallback: a model built while no strategy was current (as before autodist could act)."""
    with plain():
        model = build("adam", {"jit_compile": True, "steps_per_execution": 4} if FLAVOR == "keras3" else None)
        model.fit(X[:64], Y[:64], batch_size=32, epochs=1, verbose=0)  # partly trained: Adam has state
    iterations_before = int(model.optimizer.iterations.numpy())
    before = [w.copy() for w in model.get_weights()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = autodist.fit(model, X, Y, batch_size=64, epochs=2, verbose=0)
    return {
        "warnings": autodist_warnings(caught),
        "strategy": history.plan.strategy.value,
        "iterations_before": iterations_before,
        "iterations_after": int(model.optimizer.iterations.numpy()),
        "weights_changed": max_diff(model.get_weights(), before),
        "history_model_is_caller": history.model is model,
        "loss": history.history["loss"],
    }


def case_callable() -> dict:
    history = autodist.fit(lambda: build("adam"), X, Y, batch_size=64, epochs=3, verbose=0)
    weight = history.model.weights[0]
    value = getattr(weight, "value", weight)
    return {
        "strategy": history.plan.strategy.value,
        "variable_type": type(value).__name__,
        "loss": history.history["loss"],
    }


def custom_loop(strategy, model, dataset) -> list[float]:
    """One epoch of the tutorials' custom loop: compute_average_loss inside strategy.run, the
    replicas' losses summed. Returns each step's loss."""
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    @tf.function
    def step(batch):
        def replica_step(inputs):
            x, y = inputs
            with tf.GradientTape() as tape:
                loss = autodist.compute_average_loss(loss_fn(y, model(x, training=True)))
            grads = tape.gradient(loss, model.trainable_variables)
            model.optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        return strategy.reduce("SUM", strategy.run(replica_step, args=(batch,)), axis=None)

    return [float(step(batch)) for batch in strategy.experimental_distribute_dataset(dataset)]


def case_decorator(ref_model) -> dict:
    @autodist.distributed(batch_size=32)
    def train(plan, strategy):
        model = build()
        losses = custom_loop(strategy, model, tf.data.Dataset.from_tensor_slices((X, Y)).batch(plan.global_batch_size))
        return model, losses, plan

    model, losses, plan = train()
    return {
        "strategy": plan.strategy.value,
        "num_replicas": plan.num_replicas,
        "weight_diff": max_diff(model.get_weights(), ref_model.get_weights()),
        "num_steps": len(losses),
    }


def lr_schedule(epoch: int) -> float:
    """The distributed Keras tutorial's decay: 1e-3 for 3 epochs, 1e-4 for 4, then 1e-5."""
    return 1e-3 if epoch < 3 else (1e-4 if epoch < 7 else 1e-5)


class NoConfig(keras.Model):
    """Subclassed, no constructor arguments, no get_config: it cannot be saved and reloaded."""

    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(16, activation="relu")
        self.out = keras.layers.Dense(NUM_CLASSES)

    def call(self, inputs):
        return self.out(self.hidden(inputs))


def compiled(model):
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def unbuilt():
    keras.utils.set_random_seed(1)
    return compiled(keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(NUM_CLASSES)]))


def subclassed():
    keras.utils.set_random_seed(1)
    return compiled(NoConfig())


def case_drop_in() -> dict:
    """The user's own object trains: a callback closing over `model` sees live state, and models
    that cannot be moved (subclassed without get_config) or are not built yet train, with the
    numbers of plain model.fit."""
    model = build()
    seen_lr = []
    print_lr = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: seen_lr.append(float(model.optimizer.learning_rate.numpy()))
    )
    autodist.fit(model, X[:64], Y[:64], batch_size=32, epochs=8, verbose=0,
                 callbacks=[keras.callbacks.LearningRateScheduler(lr_schedule), print_lr])
    weight = model.weights[0]
    results = {"printed_lr": seen_lr, "variable_type": type(getattr(weight, "value", weight)).__name__}
    for name, make in (("unbuilt", unbuilt), ("subclassed", subclassed)):
        with plain():
            expected_model = make()
            expected = expected_model.fit(X, Y, batch_size=32, epochs=2, shuffle=False, verbose=0).history
        got_model = make()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = autodist.fit(got_model, X, Y, batch_size=32, epochs=2, shuffle=False, verbose=0)
        results[name] = {
            "strategy": got.plan.strategy.value,
            "weight_diff": max_diff(got_model.get_weights(), expected_model.get_weights()),
            "history_gap": history_gap(got.history, expected),
            "warnings": autodist_warnings(caught),
            "reasons": list(got.plan.reasons),
        }
    return results


def case_custom_loop_batches(ref_weights_64) -> dict:
    """compute_average_loss divides by each step's real global batch, in a bare @distributed,
    with a dataset batch (64) that is not the plan's and a short last batch (250 = 3 x 64 + 58)."""

    @autodist.distributed
    def train(strategy):
        model = build()
        return model, custom_loop(strategy, model, tf.data.Dataset.from_tensor_slices((X[:250], Y[:250])).batch(64))

    model, losses = train()
    return {"weight_diff": max_diff(model.get_weights(), ref_weights_64), "num_steps": len(losses)}


def case_dataset() -> dict:
    """A dataset batched in 16, trained with batch_size=33: re-batched to 34 (a multiple of 2)."""
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(16)
    model = build()
    counter = CountBatches()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = autodist.fit(model, dataset, batch_size=33, epochs=1, verbose=0, callbacks=[counter])
    with plain():
        reference_model = build()
        expected = reference_model.fit(X, Y, batch_size=34, epochs=1, shuffle=False, verbose=0)
    return {
        "global_batch_size": history.plan.global_batch_size,
        "batches": counter.train,
        "loss_gap_vs_single_device_34": abs(history.history["loss"][0] - expected.history["loss"][0]),
        "weight_diff_vs_single_device_34": max_diff(model.get_weights(), reference_model.get_weights()),
        "warnings": [str(w.message) for w in caught if issubclass(w.category, autodist.AutodistWarning)],
    }


class CountBatches(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.train, self.test = 0, 0

    def on_train_batch_end(self, batch, logs=None):
        self.train += 1

    def on_test_batch_end(self, batch, logs=None):
        self.test += 1


def case_fit_keywords() -> dict:
    """The fit keywords users pass, under the strategy, against the same call on one device."""
    val = tf.data.Dataset.from_tensor_slices((X[:66], Y[:66])).batch(33)
    weights = np.linspace(0.5, 1.5, NUM_SAMPLES).astype("float32")
    results = {}
    calls = {
        "validation_dataset_33": dict(validation_data=val),
        "validation_batch_size_33": dict(validation_data=(X[:66], Y[:66]), validation_batch_size=33),
        "small_validation": dict(validation_data=(X[:25], Y[:25])),
        "class_weight": dict(class_weight={0: 1.0, 1: 2.0, 2: 0.5}),
        "sample_weight": dict(sample_weight=weights),
        "initial_epoch_steps": dict(initial_epoch=1, steps_per_epoch=4),
    }
    for name, kwargs in calls.items():
        with plain():
            reference_model = build()
            expected = reference_model.fit(X, Y, batch_size=32, epochs=2, shuffle=False, verbose=0, **kwargs).history
        model = build()
        got = autodist.fit(model, X, Y, batch_size=32, epochs=2, shuffle=False, verbose=0, **kwargs).history
        results[name] = {"gap": history_gap(got, expected), "keys": sorted(got), "epochs": len(got["loss"])}
    counter = CountBatches()
    small_model = build()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        small = autodist.fit(small_model, X[:25], Y[:25], batch_size=32, epochs=1, verbose=0, callbacks=[counter])
    with plain():
        reference_model = build()
        expected = reference_model.fit(X[:25], Y[:25], batch_size=32, epochs=1, verbose=0)
    results["small_train_set"] = {
        "batches": counter.train,
        "loss_gap": abs(small.history["loss"][0] - expected.history["loss"][0]),
        "weight_diff": max_diff(small_model.get_weights(), reference_model.get_weights()),
        "warnings": autodist_warnings(caught),
    }
    try:
        import pandas as pd
    except ImportError:  # an environment without pandas: the case is not run
        return results
    # One sample as a pandas DataFrame, on 2 replicas: no replica is left an empty share (the
    # sample repeated in one batch, as for arrays), and the numbers are one device's.
    frame, labels = pd.DataFrame(X[:1]), pd.DataFrame(Y[:1])
    one_model = build()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        one = autodist.fit(one_model, frame, labels, batch_size=32, epochs=2, verbose=0)
    with plain():
        reference_model = build()
        expected = reference_model.fit(frame, labels, batch_size=32, epochs=2, verbose=0)
    results["one_sample_pandas"] = {
        "loss": [one.history["loss"], expected.history["loss"]],
        "weight_diff": max_diff(one_model.get_weights(), reference_model.get_weights()),
        "replicas": one.plan.num_replicas,
    }
    return results


class Interrupt(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 2:
            raise KeyboardInterrupt


def case_interrupted() -> dict:
    model = build()
    try:
        autodist.fit(model, X, Y, batch_size=64, epochs=10, verbose=0, callbacks=[Interrupt()])
    except KeyboardInterrupt:
        pass
    return {"iterations": int(model.optimizer.iterations.numpy())}


def counted(case, *args) -> dict:
    """A case's results, with the plans autodist made while it ran (``plans_made``)."""
    before = len(PLANS_MADE)
    found = case(*args)
    return {**found, "plans_made": len(PLANS_MADE) - before}


def main() -> None:
    results: dict = {"flavor": FLAVOR, "logical_cpus": len(tf.config.list_logical_devices("CPU"))}
    ref = reference()
    strategies = ["auto"] if FLAVOR == "tf_keras" else ["auto", "default", "one_device", "central_storage"]
    if len(sys.argv) > 2 and sys.argv[2] == "equivalence":  # only the strategies' equivalence with one device
        strategies = ["auto", "central_storage"]
    for strategy in strategies:
        results[f"equivalence_{strategy}"] = counted(case_equivalence, strategy, *ref)
    if len(sys.argv) > 2 and sys.argv[2] == "equivalence":
        print("RESULT " + json.dumps(results))
        return
    results["built_outside"] = counted(case_built_outside)
    results["callable"] = counted(case_callable)
    results["drop_in"] = case_drop_in()
    with plain():
        ref_64 = build()
        ref_64.fit(X[:250], Y[:250], batch_size=64, epochs=1, shuffle=False, verbose=0)
    results["custom_loop_batches"] = case_custom_loop_batches(ref_64.get_weights())
    if FLAVOR == "keras3":
        results["batch_33"] = counted(case_batch_33)
        results["decorator"] = case_decorator(ref[0])
        results["dataset"] = counted(case_dataset)
        results["fit_keywords"] = case_fit_keywords()
        results["interrupted"] = counted(case_interrupted)
    results["plan_log_count"] = log_stream.getvalue().count("autodist plan:")
    results["num_plans_made"] = len(PLANS_MADE)
    results["plan_lines"] = [line for line in log_stream.getvalue().splitlines() if line.startswith("autodist plan:")]
    print("RESULT " + json.dumps(results))


if __name__ == "__main__":
    main()
