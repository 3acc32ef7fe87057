"""autodist inside Ray Train, on a real local Ray cluster (tests/test_ray.py runs this inside a
private network with only loopback, as the launcher runs its jobs).

Cases (argv): ``keras3`` and ``tf_keras``: one ``TensorflowTrainer`` with 2 workers whose loop does
``import autodist`` and ``autodist.fit(build, x, y, batch_size=64, ...)`` for each flavor in turn
(one Ray start for both) and, with ``data``, then reads a Ray Data shard; each worker writes its
weights, History and plan, a Ray callback records every report Ray receives, and the driver
trains the same model with plain ``model.fit`` in one process for the reference. ``jax``:
``JaxTrainer`` with 2 workers on Keras's JAX backend (worker 0 also trains the one-process
reference). ``restart``: a worker SIGTERMed mid-epoch under ``FailureConfig(max_failures=1)``. ``doc``: Ray's documented example (tests/as_written/ray_tf_starter.py)
run as written and adopted as a user adopts it, both seeded and with Ray Data's order kept, each
worker's final weights and Histories recorded. ``example``: examples/ray_train.py. Ray sets ``TF_USE_LEGACY_KERAS=1`` in its workers; this driver sets
it too, as Ray's own example files do, so the example's ``tf.keras`` is tf_keras on both sides
(as written under Keras 3 it fails before any ``fit``: Keras 3's ``tf.keras`` has no
``losses.mean_squared_error``). Prints ``RESULT {json}``.
"""

from __future__ import annotations

import json
import os
import runpy
import socket
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
OUT = tempfile.mkdtemp(prefix="autodist-ray-")
EPOCHS, BATCH = 3, 64


#: Ray Train's port race (its own, upstream): ``TensorflowTrainer`` picks each worker's
#: TF_CONFIG port by binding port 0 and letting it go; TensorFlow binds it later, and on a loaded
#: machine another gRPC server of Ray's can take it first. Rank 0 then says "Could not start gRPC
#: server" and the others reach Ray's server ("RegisterTask" Unimplemented), before any step.
PORT_RACE = ("Could not start gRPC server", "CoordinationService/RegisterTask")
RETRIED: list[str] = []


def once_more_on_port_race(name: str, run, before_again=lambda: None):
    """``run()``; once more (after ``before_again()``) when it failed on :data:`PORT_RACE` alone,
    with the repeat recorded (the RESULT's ``retried``, which the test reports)."""
    try:
        return run()
    except Exception as err:
        if not any(marker in str(err) for marker in PORT_RACE):
            raise
        RETRIED.append(name)
        print(f"RETRY {name}: Ray Train's port race ({type(err).__name__}); running the case once more", flush=True)
        before_again()
        return run()


def data(rows: int = 256) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 4)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 3.0, 0.5], dtype="float32"))[:, None] + 0.1 * rng.normal(size=(rows, 1)).astype("float32")
    return x, y


def build(keras, batch_norm: bool = False):
    keras.utils.set_random_seed(1)
    middle = [keras.layers.BatchNormalization()] if batch_norm else []
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), *middle, keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return model


def keras_of(flavor: str):
    if flavor == "tf_keras":
        import tf_keras

        return tf_keras
    import keras

    return keras


def loop(config: dict) -> None:
    import autodist  # first, as a user's loop does

    import ray.train

    for flavor in config["flavors"]:  # one worker group trains each flavor's model in turn
        keras = keras_of(flavor)
        x, y = data()
        history = autodist.fit(lambda: build(keras), x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
        rank = ray.train.get_context().get_world_rank()
        record = {
            "weights": [w.tolist() for w in history.model.get_weights()],
            "history": {k: [float(v) for v in vs] for k, vs in history.history.items()},
            "strategy": history.plan.strategy.value,
            "reasons": list(history.plan.reasons),
            "flavor": history.plan.keras_flavor,
        }
        record["network"] = network()  # while this worker's TensorFlow server still listens
        Path(config["out"], f"{flavor}-{rank}.json").write_text(json.dumps(record))
    if config.get("data"):  # the same worker group goes on with a Ray Data shard (one group start less)
        data_loop(config)


class Reports:
    """Every report Ray received (a Ray Train callback: it runs in Ray's controller, and writes
    each report's worker-0 metrics and checkpoint files to a file here)."""

    def __new__(cls, path: str):
        from ray.train import UserCallback

        class Recorder(UserCallback):
            def after_report(self, run_context, metrics, checkpoint):
                files = sorted(str(p.relative_to(checkpoint.path)) for p in Path(checkpoint.path).rglob("*") if p.is_file()) if checkpoint is not None else []
                with open(path, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps({"metrics": metrics[0], "checkpoint_files": files}) + "\n")

        return Recorder()


def reference(flavor: str) -> dict:
    """Plain ``model.fit`` in one process, the same global batch."""
    keras = keras_of(flavor)
    x, y = data()
    model = build(keras)
    history = model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    return {"weights": [w.tolist() for w in model.get_weights()], "history": {k: [float(v) for v in vs] for k, vs in history.history.items()}}


def trainer_case(flavors: tuple[str, ...], with_data: bool) -> dict:
    """One TensorflowTrainer: each flavor in turn, then (``with_data``) a Ray Dataset of 256 rows
    (columns x: 4 floats, y: 1 float) read from each worker's shard."""
    import ray.data
    from ray.train import RunConfig, ScalingConfig
    from ray.train.tensorflow import TensorflowTrainer

    reports = os.path.join(OUT, "reports.jsonl")
    x, y = data()
    datasets = {"train": ray.data.from_items([{"x": x[i], "y": y[i]} for i in range(len(x))])} if with_data else None
    trainer = TensorflowTrainer(
        loop,
        train_loop_config={"flavors": list(flavors), "data": with_data, "out": OUT},
        scaling_config=ScalingConfig(num_workers=2),
        datasets=datasets,
        run_config=RunConfig(storage_path=os.path.join(OUT, "runs"), name="flavors", callbacks=[Reports(reports)]),
    )
    result = once_more_on_port_race("flavors", trainer.fit, lambda: Path(reports).unlink(missing_ok=True))
    received = [json.loads(line) for line in Path(reports).read_text().splitlines()]
    found = {}
    for index, flavor in enumerate(flavors):
        workers = [json.loads(Path(OUT, f"{flavor}-{rank}.json").read_text()) for rank in (0, 1)]
        found[flavor] = {"workers": workers, "reference": reference(flavor), "reports": received[index * EPOCHS : (index + 1) * EPOCHS]}
    found["error"] = repr(result.error) if result.error else None
    if with_data:
        found["data"] = {"workers": [json.loads(Path(OUT, f"data-{rank}.json").read_text()) for rank in (0, 1)], "rows": len(x), "error": found["error"]}
    return found


class StepsPerEpoch:
    """A Keras callback that counts each epoch's steps (made in the worker, for its flavor)."""

    def __new__(cls, keras):
        class Counter(keras.callbacks.Callback):
            def __init__(self):
                super().__init__()
                self.steps = []

            def on_epoch_begin(self, epoch, logs=None):
                self.steps.append(0)

            def on_train_batch_end(self, batch, logs=None):
                self.steps[-1] += 1

        return Counter()


def data_loop(config: dict) -> None:
    """A Ray Data shard as the input: ``y`` names the label column, ``batch_size`` is global. The
    model, built by a function with Keras 3 under Ray's ``TF_USE_LEGACY_KERAS=1``, has a
    BatchNormalization layer: its moving statistics must stay the same on every worker."""
    import autodist

    import keras
    import ray.train

    import warnings

    shard = ray.train.get_dataset_shard("train")
    counter = StepsPerEpoch(keras)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = autodist.fit(lambda: build(keras, batch_norm=True), shard, y="y", batch_size=BATCH, epochs=2, verbose=0, callbacks=[counter])
    rank = ray.train.get_context().get_world_rank()
    record = {"weights": [w.tolist() for w in history.model.get_weights()], "loss": [float(v) for v in history.history["loss"]],
              "steps": counter.steps, "strategy": history.plan.strategy.value, "global_batch": history.plan.global_batch_size,
              "keras": history.model.__class__.__module__.split(".")[0], "flavor": history.plan.keras_flavor,
              "batch_norm": [layer.name for layer in history.model.layers if "BatchNormalization" in type(layer).__name__],
              "warnings": [str(w.message) for w in caught if type(w.message).__name__ == "AutodistWarning"]}
    Path(config["out"], f"data-{rank}.json").write_text(json.dumps(record))


def jax_loop(config: dict) -> None:
    """Keras on JAX in each of JaxTrainer's workers (KERAS_BACKEND=jax in their environment)."""
    import autodist

    import keras
    import ray.train

    x, y = data()
    history = autodist.fit(lambda: build(keras), x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    rank = ray.train.get_context().get_world_rank()
    record = {"weights": [w.tolist() for w in history.model.get_weights()], "history": {k: [float(v) for v in vs] for k, vs in history.history.items()},
              "strategy": history.plan.strategy.value, "backend": keras.backend.backend(), "mesh": list(history.plan.mesh.shape) if history.plan.mesh else [],
              "workers": history.plan.num_workers, "reasons": list(history.plan.reasons)}
    if rank == 0:  # the reference: plain model.fit on JAX, in this one process (its own device only)
        model = build(keras)
        plain = model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
        record["reference"] = {"backend": keras.backend.backend(), "weights": [w.tolist() for w in model.get_weights()],
                               "history": {k: [float(v) for v in vs] for k, vs in plain.history.items()}}  # fmt: skip
    Path(config["out"], f"jax-{rank}.json").write_text(json.dumps(record))


def jax_case() -> dict:
    from ray.train import RunConfig, ScalingConfig
    from ray.train.v2.jax import JaxTrainer

    on_jax = {"env_vars": {"KERAS_BACKEND": "jax", "TF_USE_LEGACY_KERAS": "0"}}
    trainer = JaxTrainer(
        jax_loop,
        train_loop_config={"out": OUT},
        scaling_config=ScalingConfig(num_workers=2),
        run_config=RunConfig(storage_path=os.path.join(OUT, "runs"), name="jax", worker_runtime_env=on_jax),
    )
    result = trainer.fit()
    workers = [json.loads(Path(OUT, f"jax-{rank}.json").read_text()) for rank in (0, 1)]
    return {"workers": workers, "reference": workers[0].pop("reference"), "error": repr(result.error) if result.error else None}


#: The restart case: 512 rows, batch 64 (8 steps an epoch), 3 epochs; worker 1 gets SIGTERM in
#: epoch 2 after its 2nd step, once (the workers then agree to save two steps later).
RESTART_ROWS, SIGTERM_AT = 512, (1, 1)


def restart_loop(config: dict) -> None:
    """``autodist.fit`` as a user writes it; a callback of the test's own counts the steps this
    start trains and, on the first start, sends worker 1 SIGTERM mid-epoch (a preemption)."""
    import signal

    import autodist

    import keras
    import ray.train

    rank = ray.train.get_context().get_world_rank()
    start = "again" if Path(config["out"], "sigterm-sent").exists() else "first"
    steps_file = Path(config["out"], f"restart-{rank}-{start}.steps")

    class Preempt(keras.callbacks.Callback):
        trained = 0

        def on_train_batch_end(self, batch, logs=None):
            self.trained += 1
            steps_file.write_text(str(self.trained))
            if rank == 1 and start == "first" and (self.epoch, batch) == SIGTERM_AT:
                Path(config["out"], "sigterm-sent").write_text("")
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(3)  # a slow step: TensorFlow's handler passes the notice on within a second

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

    x, y = data(RESTART_ROWS)
    checkpoint = ray.train.get_checkpoint()
    given = []  # what Ray's checkpoint handed this start: autodist's saves
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            given = sorted(p.name for p in Path(folder, "autodist").rglob("*.json"))
    history = autodist.fit(lambda: build(keras), x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=[Preempt()])
    record = {"weights": [w.tolist() for w in history.model.get_weights()], "history": {k: [float(v) for v in vs] for k, vs in history.history.items()},
              "epochs": list(history.epoch), "iterations": int(history.model.optimizer.iterations.numpy()), "given": given}
    Path(config["out"], f"restart-{rank}.json").write_text(json.dumps(record))


def restart_case() -> dict:
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.tensorflow import TensorflowTrainer

    from autodist.jobs.private import private_root_path

    staged = lambda: {p.name for p in Path(private_root_path()).glob("ray-saves-*")}  # noqa: E731  the workers' staging folders
    before = staged()
    reports = os.path.join(OUT, "restart-reports.jsonl")
    trainer = TensorflowTrainer(
        restart_loop,
        train_loop_config={"out": OUT},
        scaling_config=ScalingConfig(num_workers=2),
        run_config=RunConfig(storage_path=os.path.join(OUT, "runs"), name="restart", failure_config=FailureConfig(max_failures=1), callbacks=[Reports(reports)]),
    )
    result = trainer.fit()
    workers = [json.loads(Path(OUT, f"restart-{rank}.json").read_text()) for rank in (0, 1)]
    steps = {f"{rank}-{start}": int(Path(OUT, f"restart-{rank}-{start}.steps").read_text()) for rank in (0, 1) for start in ("first", "again")}
    x, y = data(RESTART_ROWS)
    keras = keras_of("keras3")
    model = build(keras)
    history = model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    reference = {"weights": [w.tolist() for w in model.get_weights()], "history": {k: [float(v) for v in vs] for k, vs in history.history.items()}, "steps": int(model.optimizer.iterations.numpy())}
    received = [json.loads(line) for line in Path(reports).read_text().splitlines()]
    return {"workers": workers, "steps": steps, "reference": reference, "reports": received, "staging_left": sorted(staged() - before), "error": repr(result.error) if result.error else None}


def instrumented(text: str, tag: str) -> str:
    """Ray's documented example (as written, or adopted) with the harness's two additions, the same
    in both runs: one seed for the initial weights (the example sets none, so two runs would start
    apart), and each worker's final weights and every fit's History written to
    OUT/doc-<tag>-<rank>.json when its loop ends."""
    start, end = "def train_func(config: dict):\n", "    return results\n"
    assert text.count(start) == 1 and text.count(end) == 1, "the documented example changed: update the harness's additions"
    record = (
        "def record_for_the_harness(model, results):\n"
        "    import json, os\n"
        "    from ray import train as ray_train\n"
        "    rank = ray_train.get_context().get_world_rank()\n"
        f"    with open(os.path.join({OUT!r}, f'doc-{tag}-{{rank}}.json'), 'w') as handle:\n"
        "        json.dump({'weights': [w.tolist() for w in model.get_weights()], 'results': [{k: [float(v) for v in vs] for k, vs in r.items()} for r in results]}, handle)\n"
        "\n\n"
    )
    seeded = start + "    tf.keras.utils.set_random_seed(0)  # the harness: the same initial weights in both runs\n"
    return text.replace(start, record + seeded).replace(end, "    record_for_the_harness(multi_worker_model, results)\n" + end)


def doc_case() -> dict:
    """Ray's documented example run as written (no autodist) and adopted, with one seed and Ray
    Data's order kept (each worker's shard the same rows in the same order in both runs): the
    adopted workers must end where the program without autodist ends."""
    from ray.data import DataContext

    from tests.adoption import adopt

    written = (ROOT / "tests" / "as_written" / "ray_tf_starter.py").read_text()
    adopted, changed = adopt(written)
    options = DataContext.get_current().execution_options  # Ray Train takes the driver's, as the trainer is made
    kept, options.preserve_order = options.preserve_order, True
    runs = {}
    try:
        for tag, text in (("as_written", written), ("adopted", adopted)):
            script = Path(OUT, f"ray_tf_starter_{tag}.py")
            script.write_text(instrumented(text, tag))
            found = once_more_on_port_race(f"doc {tag}", lambda: runpy.run_path(str(script), run_name="__main__"))  # noqa: B023  (run at once)
            result = found["result"]
            runs[tag] = {
                "metrics": {k: v for k, v in (result.metrics or {}).items() if isinstance(v, (int, float))},
                "error": repr(result.error) if result.error else None,
                "checkpoint": result.checkpoint is not None,
                "workers": [json.loads(Path(OUT, f"doc-{tag}-{rank}.json").read_text()) for rank in (0, 1)],
            }
    finally:
        options.preserve_order = kept
    return {"fit_calls_changed": changed, **runs["adopted"], "as_written": runs["as_written"]}


def example_case() -> dict:
    """examples/ray_train.py as a user runs it (Ray is up already: it uses this cluster)."""
    saved = sys.argv

    def run(folder: str = "example"):
        sys.argv = ["ray_train.py", "--storage-path", os.path.join(OUT, folder)]
        try:
            return runpy.run_path(str(ROOT / "examples" / "ray_train.py"), run_name="not_main")["main"]()
        finally:
            sys.argv = saved

    tries = iter(["example", "example-again"])
    result = once_more_on_port_race("example", lambda: run(next(tries)))
    files = sorted(str(p.relative_to(result.checkpoint.path)) for p in Path(result.checkpoint.path).rglob("*") if p.is_file())
    return {"metrics": {k: v for k, v in result.metrics.items() if isinstance(v, (int, float))}, "checkpoint_files": files, "error": repr(result.error) if result.error else None}


def network() -> dict:
    """This namespace's interfaces, and the addresses its TCP sockets listen on."""
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A":
                raw = bytes.fromhex(local.rsplit(":", 1)[0])
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                listening.add(socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, words))
    return {"interfaces": sorted(name for _, name in socket.if_nameindex()), "listening": sorted(listening)}


def main() -> None:
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # what Ray sets in its workers, and its example files at their top
    import ray

    ray.init(num_cpus=4, _node_ip_address="127.0.0.1", include_dashboard=False, configure_logging=False)
    results = {}
    started = time.monotonic()
    try:
        flavors = tuple(case for case in sys.argv[1:] if case in ("keras3", "tf_keras"))
        if flavors or "data" in sys.argv[1:]:
            results.update(trainer_case(flavors, with_data="data" in sys.argv[1:]))
        for case in sys.argv[1:]:
            if case in ("doc", "example", "jax", "restart"):
                print(f"CASE {case}", flush=True)  # the restart's expected errors come after its mark
                results[case] = {"doc": doc_case, "example": example_case, "jax": jax_case, "restart": restart_case}[case]()
        results["network"] = network()
        results["retried"] = RETRIED
    finally:
        ray.shutdown()
    results["seconds"] = round(time.monotonic() - started, 1)
    print("RESULT " + json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
