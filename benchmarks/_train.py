"""Benchmark worker: time ``fit`` arms alternately in one fresh process. Prints ``RESULT <json>``.

Usage: python benchmarks/_train.py '<spec json>'
spec: {"model": "mlp"|"cnn", "samples": N, "batch": B, "epochs": E, "rounds": R, "arms": [...]}
An arm is "manual:<strategy>" (the strategy built by hand, model.fit in its scope) or
"autodist:<strategy>[:spe1|:spe8|:jit|:noprefetch|:prefetch]" (autodist.fit; "auto" lets it choose,
"tune" times the candidates in its warm-up run, of "tune_epochs" epochs, which is why the caller
gives it an empty TMPDIR;
spe1 opts out of autodist's steps_per_execution default, spe8 compiles with 8).
Each arm runs once to warm up, then once per round, in an order that rotates every round; with
"focus_rounds", that many more rounds of the fastest hand-run arm and the autodist arms.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# The manual arms stand for a script without autodist: their "default" arm is
# tf.distribute.get_strategy(), which would return the strategy autodist makes current. The
# autodist arms pass builders, so they lose nothing.
os.environ["AUTODIST_ACTIVATE"] = "0"

import autodist  # noqa: E402  (first: AUTODIST_CPU_DEVICES splits the CPU when TF loads)
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

spec = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
if spec["model"] == "cnn":
    X = rng.random((spec["samples"], 32, 32, 3), dtype=np.float32)
else:
    X = rng.random((spec["samples"], 784), dtype=np.float32)
Y = rng.integers(0, 10, spec["samples"]).astype("int32")


def build(compile_kwargs=None):
    keras.utils.set_random_seed(0)
    if spec["model"] == "cnn":
        layers = [
            keras.Input((32, 32, 3)),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(64, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    else:
        layers = [keras.Input((784,)), keras.layers.Dense(256, activation="relu"), keras.layers.Dense(256, activation="relu"), keras.layers.Dense(10)]
    model = keras.Sequential(layers)
    model.compile(
        optimizer=keras.optimizers.SGD(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        **(compile_kwargs or {}),
    )
    return model


_manual: dict[str, object] = {}


def manual_strategy(kind: str):
    if kind not in _manual:
        devices = [f"/cpu:{i}" for i in range(int(os.environ.get("AUTODIST_CPU_DEVICES") or 1))]
        _manual[kind] = {
            "default": lambda: tf.distribute.get_strategy(),
            "one_device": lambda: tf.distribute.OneDeviceStrategy("/cpu:0"),
            "mirrored": lambda: tf.distribute.MirroredStrategy(devices),
            "mirrored_reduction_to_one_device": lambda: tf.distribute.MirroredStrategy(
                devices, cross_device_ops=tf.distribute.ReductionToOneDevice()
            ),
            "mirrored_hierarchical_copy": lambda: tf.distribute.MirroredStrategy(
                devices, cross_device_ops=tf.distribute.HierarchicalCopyAllReduce()
            ),
            "central_storage": lambda: tf.distribute.experimental.CentralStorageStrategy(devices, parameter_device="/cpu:0"),
        }[kind]()
    return _manual[kind]


class EpochTimer(keras.callbacks.Callback):
    """Seconds of each epoch (epoch-level hooks only: no effect on steps_per_execution)."""

    def __init__(self):
        super().__init__()
        self.seconds: list[float] = []

    def on_epoch_begin(self, epoch, logs=None):
        self.began = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self.began)


def run_arm(arm: str, epochs: int | None = None) -> float:
    """Wall seconds of the whole call; with ``"steady": true`` in the spec, seconds of the fastest
    epoch after the first (no build, tracing or first-epoch warm-up: the strategy's own speed; the
    fastest, as timeit does, because interference on shared cores only ever adds time)."""
    parts = arm.split(":")
    kind, strategy = parts[0], parts[1]
    option = parts[2] if len(parts) > 2 else ""
    timer = EpochTimer()
    gc.collect()  # the previous arm's garbage is not this arm's time
    start, cpu_start = time.perf_counter(), time.process_time()
    if kind == "manual":
        distribution = manual_strategy(strategy)
        with distribution.scope():
            model = build()
            model.fit(X, Y, batch_size=spec["batch"], epochs=epochs or spec["epochs"], verbose=0, callbacks=[timer])
    else:
        compile_kwargs = {"steps_per_execution": 8} if option == "spe8" else {"jit_compile": True} if option == "jit" else {}
        if option == "spe1":  # autodist's opt-out of its steps_per_execution default
            os.environ["AUTODIST_STEPS_PER_EXECUTION"] = "1"
        else:
            os.environ.pop("AUTODIST_STEPS_PER_EXECUTION", None)
        data: object = X
        labels: object = Y
        if option in ("prefetch", "noprefetch"):
            dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(spec["batch"])
            data, labels = (dataset.prefetch(tf.data.AUTOTUNE) if option == "prefetch" else dataset), None
        history = autodist.fit(
            lambda: build(compile_kwargs),
            data,
            labels,
            batch_size=spec["batch"],
            epochs=epochs or spec["epochs"],
            verbose=0,
            strategy=strategy,
            callbacks=[timer],
        )
        plans[arm] = [history.plan.strategy.value, history.plan.cross_device_ops]
        first_reasons.setdefault(arm, history.plan.reasons[0])
    walls.append(time.perf_counter() - start)
    cpu_seconds.setdefault(arm, []).append(time.process_time() - cpu_start)
    return min(timer.seconds[1:]) if spec.get("steady") else walls[-1]


times: dict[str, list[float]] = {arm: [] for arm in spec["arms"]}
walls: list[float] = []  # wall seconds of every call, in order
cpu_seconds: dict[str, list[float]] = {}  # each arm's CPU seconds (all threads) per call, warm-up first
plans: dict[str, list[str | None]] = {}  # each autodist arm's strategy and cross-device op
first_reasons: dict[str, str] = {}  # each autodist arm's first reason, in its first run
first_runs: dict[str, float] = {}
for arm in spec["arms"]:
    # warm-up; a "tune" arm tunes here, into an empty cache, in a training of "tune_epochs"
    # (long enough for tuning to time candidates within its share)
    run_arm(arm, spec.get("tune_epochs") if arm.split(":")[1] == "tune" else None)
    first_runs[arm] = walls[-1]
for round_index in range(spec["rounds"]):
    shift = round_index % len(spec["arms"])
    for arm in spec["arms"][shift:] + spec["arms"][:shift]:
        times[arm].append(run_arm(arm))
if spec.get("focus_rounds"):
    # Then more rounds of the fastest hand-run arm (by median) against the autodist arms that may
    # pick it (not "auto" over logical CPUs: mirrored): the slow arms have shown they lose, and more
    # alternations make the ratio precise.
    manual = [arm for arm in spec["arms"] if arm.startswith("manual:")]
    fastest = min(manual, key=lambda arm: sorted(times[arm])[len(times[arm]) // 2])
    focus = [fastest] + [arm for arm in spec["arms"] if arm.startswith("autodist:") and arm.split(":")[1] != "auto"]
    for round_index in range(spec["focus_rounds"]):
        shift = round_index % len(focus)
        for arm in focus[shift:] + focus[:shift]:
            times[arm].append(run_arm(arm))
result = {"times": times, "cpu_seconds": {arm: seconds[1:] for arm, seconds in cpu_seconds.items()}, "plans": plans, "samples_per_call": spec["samples"] * (1 if spec.get("steady") else spec["epochs"])}
tuned = [arm for arm in spec["arms"] if arm.split(":")[1] == "tune"]
if tuned:  # what tuning cost in its first run, and what it measured (nothing, in a run too short to tune)
    from autodist.jobs.tune_cache import cached_decisions

    decision = (cached_decisions() or [{"tuning_seconds": 0.0, "choice": None, "timings": []}])[0]
    result["tune"] = {"seconds": decision["tuning_seconds"], "first_run_seconds": first_runs[tuned[0]], "first_run_epochs": spec.get("tune_epochs") or spec["epochs"],
                      "choice": decision["choice"], "timings": decision["timings"], "first_reason": first_reasons[tuned[0]]}
if spec.get("fixed_cost"):
    # What autodist.fit does besides the caller's build and Keras's fit: detect, plan, and look up
    # the (cached) strategy, with its workarounds. Median of 20 calls, in this warm process.
    from autodist.tensorflow.strategies import start as start_strategy

    costs = []
    for _ in range(20):
        start = time.perf_counter()
        start_strategy(autodist.plan(autodist.detect(), batch_size=spec["batch"], strategy=spec["fixed_cost"], environ=os.environ))
        costs.append(time.perf_counter() - start)
    result["fixed_seconds"] = sorted(costs)[len(costs) // 2]
print("RESULT " + json.dumps(result))
