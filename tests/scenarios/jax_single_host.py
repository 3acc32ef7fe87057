"""Keras 3 on JAX, one process over JAX's virtual CPU devices (see tests/test_jax.py).

The parent sets KERAS_BACKEND=jax and XLA_FLAGS=--xla_force_host_platform_device_count=N before
this process starts, as a user would. Every case trains the same program under ``model.fit`` on
one device (no distribution) and under ``autodist.fit``, and reports the differences; the
``model_parallel`` case gives the devices a small memory at the one probe,
``autodist.detection.hardware.jax_local_devices``. Prints one line, ``RESULT <json>``; assertions live
in the tests.
"""

from __future__ import annotations

import json
import sys
import warnings

import autodist  # first, as a user would
import autodist.planning.planner
import keras
import numpy as np
from autodist.detection import hardware
from autodist.detection.jax_devices import JaxDevice

PLANS_MADE: list[object] = []  # every plan autodist makes, from here


def _counting(plan):
    def counted(*args, **kwargs):
        PLANS_MADE.append(kwargs.get("strategy"))
        return plan(*args, **kwargs)

    return counted


autodist.planning.planner.plan = _counting(autodist.planning.planner.plan)  # what fit plans with
rng = np.random.default_rng(3)
X = rng.normal(size=(192, 32)).astype("float32")
Y = rng.normal(size=(192, 4)).astype("float32")


def build(optimizer="sgd"):
    keras.utils.set_random_seed(11)
    model = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(256, activation="relu"), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(4)],
        name="net",
    )
    opt = keras.optimizers.SGD(0.05) if optimizer == "sgd" else keras.optimizers.Adam(1e-3)
    model.compile(optimizer=opt, loss="mse", metrics=["mae"])
    return model


def differences(reference, ref_history, model, history):
    weights = max(float(np.abs(a - b).max()) for a, b in zip(reference.get_weights(), model.get_weights(), strict=True))
    logs = max(abs(a - b) for key in ref_history.history for a, b in zip(ref_history.history[key], history.history[key], strict=True))
    return {"weights": weights, "history": logs, "keys": sorted(history.history) == sorted(ref_history.history)}


def case(optimizer, *, builder=False, x=X, num_params=None, **fit_kwargs):
    """One epoch of the same program under model.fit (one device, the arrays at batch 32) and
    autodist.fit (``x``: the arrays, or a dataset of them)."""
    reference = build(optimizer)
    ref_history = reference.fit(X, Y, batch_size=32, epochs=1, shuffle=False, verbose=0, **fit_kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        given = (lambda: build(optimizer)) if builder else build(optimizer)  # a builder's model is planned once built
        extra = {"batch_size": 32} if hasattr(x, "element_spec") else {"y": Y, "batch_size": 32}
        before = len(PLANS_MADE)
        history = autodist.fit(given, x, epochs=1, shuffle=False, verbose=0, num_params=num_params, **extra, **fit_kwargs)
        model = history.model if builder else given
    return {
        **differences(reference, ref_history, model, history),
        "strategy": history.plan.strategy.value,
        "mesh": list(history.plan.mesh.shape) if history.plan.mesh else [],
        "reasons": list(history.plan.reasons),
        "specs": {v.path: str(v.value.sharding.spec) for v in model.weights},
        "slot_specs": {v.path: str(v.value.sharding.spec) for v in model.optimizer.variables if len(v.shape) == 2},
        "devices_used": sorted({str(d) for v in model.weights for d in v.value.sharding.device_set}),
        "distribution_after": repr(keras.distribution.distribution()),
        "history_is_model_history": model.history is history,
        "warnings": [str(w.message) for w in caught if "autodist" in type(w.message).__name__.lower()],
        "plans_made": len(PLANS_MADE) - before,
    }


def fit_imports_tensorflow() -> bool:
    """One autodist.fit before anything that imports TensorFlow on its own (keras.utils.
    set_random_seed does, when it is installed): whether TensorFlow is loaded after it."""
    seeded = keras.initializers.GlorotUniform(seed=5)
    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(4, kernel_initializer=seeded)])
    model.compile(optimizer="sgd", loss="mse")
    autodist.fit(model, X, Y, batch_size=32, epochs=1, verbose=0)
    return "tensorflow" in sys.modules


result = {"devices": len(__import__("jax").devices()), "imported_tensorflow": "tensorflow" in sys.modules}
result["imported_tensorflow_by_fit"] = fit_imports_tensorflow()
result["data_parallel"] = case("sgd")
result["data_parallel_split"] = case("sgd", validation_split=0.25)
result["data_parallel_builder"] = case("sgd", builder=True)
measured = hardware.jax_local_devices


def small_devices(memory_bytes):
    """The one probe of JAX's devices, with a small memory each (CPU devices report none)."""
    hardware.jax_local_devices = lambda *args: tuple(JaxDevice(d.platform, d.kind, memory_bytes) for d in measured(*args))


small_devices(300_000)  # 0.9 x 300 kB: less than the 315 kB the model needs with SGD, replicated
result["model_parallel"] = case("sgd")
small_devices(500_000)  # less than the 708 kB it needs with Adam's two slots
result["model_parallel_adam_builder"] = case("adam", builder=True)
small_devices(300_000)  # num_params alone cannot be sharded: built on the host, then sharded
result["model_parallel_builder_num_params"] = case("sgd", builder=True, num_params=build().count_params())
hardware.jax_local_devices = measured


def dataset_case():
    """A tf.data.Dataset batched by 24, with batch_size=32: re-batched to it."""
    import tensorflow as tf

    return case("sgd", x=tf.data.Dataset.from_tensor_slices((X, Y)).batch(24))


def readme_example():
    """The JAX example of docs/jax.md, as it is written there."""
    import contextlib
    import io
    import pathlib

    readme = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "jax.md").read_text(encoding="utf-8")
    block = readme.split("# Keras 3 on JAX", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace, printed = {}, io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(printed):
        warnings.simplefilter("always")
        exec(compile(block, "docs/jax.md", "exec"), namespace)
    history = namespace["history"]
    return {"strategy": history.plan.strategy.value, "val_accuracy": history.history["val_accuracy"][-1],
            "printed": printed.getvalue(), "warnings": [str(w.message) for w in caught if "Autodist" in type(w.message).__name__]}  # fmt: skip


def distribution_settings():
    """fit gives back the user's own distribution; init sets one globally; @distributed only inside."""
    from keras import distribution as kd

    mine = kd.DataParallel(devices=kd.list_devices())
    kd.set_distribution(mine)
    autodist.fit(build(), X, Y, batch_size=32, verbose=0)
    kept = kd.distribution() is mine
    kd.set_distribution(None)
    the_plan, made = autodist.init(batch_size=32)
    after_init = kd.distribution() is made and made is not None
    built_on_mesh = len(build().weights[0].value.sharding.device_set)
    kd.set_distribution(None)

    @autodist.distributed
    def inside(strategy):
        return kd.distribution() is strategy

    return {"fit_keeps_the_users": kept, "init_sets_it": after_init, "built_after_init_devices": built_on_mesh,
            "distributed_inside": inside(), "distributed_after": repr(kd.distribution())}  # fmt: skip


result["settings"] = distribution_settings()
result["readme"] = readme_example()
result["dataset"] = dataset_case()  # last: it imports TensorFlow
print("RESULT " + json.dumps(result))
