"""Keras 3 on JAX: detect, plan and act with keras.distribution (tests/scenarios/jax_single_host.py,
examples/jax_train.py). JAX's devices are real virtual CPU devices (``XLA_FLAGS``); only their
memory is simulated, at the one probe ``autodist.detection.hardware.jax_local_devices``."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from autodist.planning import planner
from autodist.detection.cluster import detect_cluster
from autodist.errors import AutodistError, StrategyUnavailableError
from autodist.detection.hardware import HardwareSnapshot, detect
from autodist.detection.jax_devices import JaxDevice, _from_environment, _memory, keras_backend
from autodist.core.input_kinds import classify
from autodist.jax.inputs import Part, local_inputs, rows
from autodist.jax.runtime import _refuse_backups, coordinates, join_processes
from autodist.detection.model_info import ModelInfo
from autodist.planning.plans import Plan
from autodist.cli import _plan_text, build_parser, plan_command, render_inspect
from tests.conftest import ROOT, finished, scenario_result, start_python, start_scenario, subprocess_env

CPU = JaxDevice("cpu", "cpu")
#: Two Dense layers' kernels and biases: 64 x 512 and 512 x 64, then 512 x 4.
VARIABLES = (("net/d1/kernel", (64, 512)), ("net/d1/bias", (512,)), ("net/d2/kernel", (512, 64)), ("net/d2/bias", (64,)), ("net/o/kernel", (512, 4)))
INFO = ModelInfo(num_params=64 * 512 + 512 + 512 * 64 + 64 + 512 * 4, optimizer="sgd", optimizer_slots=0, activation_elements=1000, variables=VARIABLES)


def jax_snapshot(devices=4, memory=None, **overrides):
    return HardwareSnapshot.cpu_only(keras_backend="jax", jax_devices=(JaxDevice("cpu", "cpu", memory),) * devices, **overrides)


# ----------------------------------------------------------------------------- detect


def test_the_backend_is_read_as_keras_reads_it(tmp_path):
    (tmp_path / "keras.json").write_text(json.dumps({"backend": "jax"}))
    assert keras_backend({"KERAS_HOME": str(tmp_path)}, imported=None) == "jax"
    assert keras_backend({"KERAS_HOME": str(tmp_path), "KERAS_BACKEND": "torch"}, imported=None) == "torch"
    assert keras_backend({"KERAS_HOME": str(tmp_path / "none")}, imported=None) == "tensorflow"


def test_in_a_cluster_the_devices_come_from_the_environment_until_jax_starts():
    """Listing devices would start JAX's runtime before the processes joined."""
    assert _from_environment({"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}, None) == (CPU,) * 3
    assert _from_environment({}, [80 * 2**30] * 2) == (JaxDevice("gpu", "gpu", 80 * 2**30),) * 2
    assert _from_environment({"JAX_PLATFORMS": "cpu"}, [80 * 2**30]) == (CPU,)


def test_a_jax_snapshot_round_trips_and_detect_does_not_import_tensorflow(monkeypatch):
    snap = jax_snapshot(2, 2**30)
    assert HardwareSnapshot.from_dict(json.loads(json.dumps(snap.to_dict()))) == snap
    monkeypatch.setattr("autodist.detection.jax_devices.keras_backend", lambda env: "jax")  # the probe, in its own module
    monkeypatch.setattr("autodist.detection.hardware.jax_local_devices", lambda *args: (CPU, CPU))
    monkeypatch.setattr("autodist.detection.hardware.tensorflow_gpus", lambda: pytest.fail("TensorFlow probed on JAX"))
    found = detect({}, fast=False)
    assert (found.keras_backend, found.jax_devices, found.num_tensorflow_gpus) == ("jax", (CPU, CPU), None)


# ----------------------------------------------------------------------------- plan


def test_data_parallel_over_every_device_with_the_batch_divisible():
    the_plan = planner.plan(jax_snapshot(4), model_info=INFO, batch_size=30)
    assert (the_plan.strategy.value, the_plan.mesh.shape, the_plan.mesh.axes) == ("data_parallel", (4,), ("batch",))
    assert (the_plan.global_batch_size, the_plan.per_replica_batch_size, the_plan.mesh.layout_map) == (32, 8, ())
    assert any("30" in w and "32" in w for w in the_plan.warnings)
    assert Plan.from_dict(json.loads(json.dumps(the_plan.to_dict()))) == the_plan


def test_one_device_needs_no_distribution():
    the_plan = planner.plan(jax_snapshot(1), model_info=INFO, batch_size=30)
    assert (the_plan.strategy.value, the_plan.num_replicas, the_plan.global_batch_size, the_plan.mesh) == ("default", 1, 30, None)


def test_a_model_too_large_for_one_device_is_sharded_with_the_numbers():
    the_plan = planner.plan(jax_snapshot(4, 700_000), model_info=INFO, batch_size=32)
    assert (the_plan.strategy.value, the_plan.mesh.shape, the_plan.mesh.axes) == ("model_parallel", (2, 2), ("batch", "model"))
    assert the_plan.mesh.layout_map == (("net/d1/kernel", (None, "model")), ("net/d2/kernel", ("model", None)))
    assert the_plan.global_batch_size % 2 == 0 and the_plan.num_replicas == 2
    why = next(r for r in the_plan.reasons if r.startswith("model_parallel"))
    assert "net/d1/kernel on dim 1, net/d2/kernel on dim 0" in why
    before, after, limit = (float(v) for v in re.findall(r"([0-9.]+) KiB", why))
    assert after <= limit < before
    assert the_plan.memory[0].device_bytes <= 0.9 * 700_000


def test_forced_model_parallel_shards_every_kernel_that_divides():
    the_plan = planner.plan(jax_snapshot(2), model_info=INFO, strategy="model_parallel")
    assert [path for path, _ in the_plan.mesh.layout_map] == ["net/d1/kernel", "net/d2/kernel", "net/o/kernel"]
    assert the_plan.mesh.shape == (1, 2)


def test_a_model_that_fits_no_mesh_is_refused_or_warned_in_a_dry_run():
    with pytest.raises(StrategyUnavailableError, match=r"even with its kernels sharded over all 4"):
        planner.plan(jax_snapshot(4, 200_000), model_info=INFO, batch_size=32)
    dry = planner.plan(jax_snapshot(4, 200_000), model_info=INFO, batch_size=32, refuse_when_nothing_fits=False)
    assert dry.strategy.value == "data_parallel" and any("even with its kernels sharded" in w for w in dry.warnings)


def test_a_size_alone_cannot_be_sharded_and_says_what_can():
    with pytest.raises(StrategyUnavailableError, match="its variables are unknown here .num_params only.*Pass the model"):
        planner.plan(jax_snapshot(4, 700_000), num_params=INFO.num_params, batch_size=32)


def test_forced_data_parallel_that_does_not_fit_is_warned_with_its_estimate():
    the_plan = planner.plan(jax_snapshot(4, 700_000), model_info=INFO, batch_size=32, strategy="data_parallel")
    assert the_plan.strategy.value == "data_parallel"
    assert any(w.startswith("strategy='data_parallel' was forced and the model does not fit one device: it needs") for w in the_plan.warnings)


def test_no_jax_devices_means_jax_is_missing():
    with pytest.raises(AutodistError, match=r'pip install "autodist\[jax\]"'):
        planner.plan(HardwareSnapshot.cpu_only(keras_backend="jax"))


def test_a_gpu_memory_is_the_nvml_total_not_the_xla_share():
    class Device:
        platform = "gpu"

        def memory_stats(self):
            return {"bytes_limit": 60 * 2**30}  # XLA's 75% preallocation of 80 GiB

    assert _memory(Device(), 0, [80 * 2**30]) == 80 * 2**30
    assert _memory(Device(), 0, None) == 60 * 2**30  # no driver: what JAX reports


@pytest.mark.parametrize("forced, equivalent", [("mirrored", "data_parallel"), ("central_storage", "model_parallel"), ("multi_worker_mirrored", "data_parallel"), ("one_device", "default")])
def test_tensorflow_strategies_are_refused_on_jax_with_the_equivalent(forced, equivalent):
    with pytest.raises(AutodistError, match=rf"strategy='{equivalent}'"):
        planner.plan(jax_snapshot(2), strategy=forced)


def test_jax_plans_are_refused_on_tensorflow_and_other_backends_are_named():
    with pytest.raises(AutodistError, match="use mirrored"):
        planner.plan(HardwareSnapshot.cpu_only(), strategy="data_parallel")
    with pytest.raises(AutodistError, match="'torch' backend"):
        planner.plan(HardwareSnapshot.cpu_only(keras_backend="torch"))
    with pytest.raises(StrategyUnavailableError, match="JAX sees one device"):
        planner.plan(jax_snapshot(1), strategy="model_parallel")


def test_a_cluster_counts_every_process_devices_and_names_the_coordinator():
    config = '{"cluster": {"chief": ["127.0.0.1:2000"], "worker": ["127.0.0.1:2001"]}, "task": {"type": "worker", "index": 0}}'
    cluster = detect_cluster({"TF_CONFIG": config})
    the_plan = planner.plan(jax_snapshot(2, cluster=cluster), model_info=INFO, batch_size=64)
    assert (the_plan.num_workers, the_plan.num_replicas, the_plan.mesh.shape) == (2, 4, (4,))
    assert coordinates(cluster) == ("127.0.0.1:2000", 2, 1)
    with pytest.raises(StrategyUnavailableError, match="each would train its own copy"):
        planner.plan(jax_snapshot(2, cluster=cluster), strategy="default")
    with_ps = detect_cluster({"TF_CONFIG": config.replace('"worker": ', '"ps": ["127.0.0.1:2002"], "worker": ').replace('"type": "worker"', '"type": "ps"')})
    with pytest.raises(AutodistError, match="there are no ps or evaluator tasks"):
        join_processes(with_ps)


# ----------------------------------------------------------------------------- act: inputs


def test_each_process_takes_its_part_of_every_global_batch():
    parts = [rows(20, batch=8, part=Part(p, 2, 2)) for p in range(2)]
    assert [list(p) for p in parts] == [[0, 1, 2, 3, 8, 9, 10, 11, 16, 17], [4, 5, 6, 7, 12, 13, 14, 15, 18, 19]]
    together = np.sort(np.concatenate(parts))
    assert list(together) == list(range(20))  # every sample once


def test_a_last_batch_that_cannot_split_is_cut_with_the_numbers():
    x, y = np.arange(42.0).reshape(21, 2), np.arange(21.0)
    xs, ys, kwargs, warnings = local_inputs(classify(x, y), {"validation_split": 0.2, "shuffle": False}, batch=4, part=Part(0, 1, 4))
    assert len(xs) == 16 and kwargs["batch_size"] == 4 and len(kwargs["validation_data"][0]) == 4
    assert list(ys) == list(range(16)) and list(kwargs["validation_data"][1]) == [16, 17, 18, 19]  # Keras's split: the last 20%
    assert len(warnings) == 1 and warnings[0].startswith("1 of the 5 validation samples are left out of every epoch")
    _, _, _, warned = local_inputs(classify(x[:18], y[:18]), {}, batch=8, part=Part(0, 1, 4))
    assert warned and "2 of the 18 training samples are left out of every epoch" in warned[0]


def test_backups_are_refused_on_jax_with_the_fix():
    with pytest.raises(AutodistError, match="BackupAndRestore"):
        _refuse_backups("/tmp/backups")
    _refuse_backups(None), _refuse_backups(False)  # the defaults pass


def test_a_multi_process_job_refuses_inputs_it_cannot_split():
    with pytest.raises(AutodistError, match="Pass arrays or a tf.data.Dataset"):
        local_inputs(classify(iter([])), {}, batch=8, part=Part(0, 2, 2))

    class Dataset:  # what local_inputs reads of a tf.data.Dataset: that it has an element_spec
        element_spec = None

    with pytest.raises(AutodistError, match="Expected the same kind for both"):
        local_inputs(classify(np.ones((8, 2)), np.ones(8)), {"validation_data": Dataset()}, batch=8, part=Part(0, 2, 2))


# ----------------------------------------------------------------------------- act: real JAX


def started(args, **env):
    """``python ARGS`` with Keras on JAX, started now (the real-JAX tests overlap their processes)."""
    return start_python(args, env=subprocess_env(KERAS_BACKEND="jax", **env))


@pytest.fixture(scope="module")
def on_2_and_4_devices(processes):
    """tests/scenarios/jax_single_host.py on 2 and on 4 virtual CPU devices, side by side."""
    procs = {n: start_scenario("jax_single_host.py", KERAS_BACKEND="jax", XLA_FLAGS=f"--xla_force_host_platform_device_count={n}") for n in (2, 4)}
    return {n: scenario_result(proc, timeout=240) for n, proc in procs.items()}


@pytest.mark.parametrize("devices", [2, 4])
def test_fit_on_jax_trains_the_same_numbers_as_one_device(on_2_and_4_devices, devices):
    result = on_2_and_4_devices[devices]
    assert result["devices"] == devices and not result["imported_tensorflow"]
    assert not result["imported_tensorflow_by_fit"], "autodist.fit on JAX imported TensorFlow"
    for name in ("data_parallel", "data_parallel_split", "data_parallel_builder", "dataset", "model_parallel", "model_parallel_adam_builder", "model_parallel_builder_num_params"):
        case = result[name]
        assert case["weights"] < 1e-5 and case["history"] < 1e-4 and case["keys"], (name, case)
        assert case["plans_made"] == 1, (name, case["plans_made"])  # a function's model too: planned once it is built
        assert case["devices_used"] == [f"cpu:{i}" for i in range(devices)], name
        assert case["distribution_after"] == "None" and case["history_is_model_history"], name
    assert result["data_parallel"]["strategy"] == "data_parallel" and result["data_parallel"]["mesh"] == [devices]
    assert all(spec.startswith("P(None") and "model" not in spec for spec in result["data_parallel"]["specs"].values())
    for name in ("model_parallel", "model_parallel_adam_builder", "model_parallel_builder_num_params"):
        case = result[name]
        assert case["strategy"] == "model_parallel" and case["mesh"][1] >= 2, case
        sharded = sorted(path for path, spec in case["specs"].items() if "'model'" in spec)
        named = re.findall(r"(net/\w+/kernel) on dim", next(r for r in case["reasons"] if r.startswith("model_parallel")))
        assert sharded and sharded == sorted(named), (sharded, case["reasons"])
    assert result["dataset"]["strategy"] == "data_parallel" and not result["dataset"]["warnings"]  # 192 = 6 batches of 32
    readme = result["readme"]
    assert readme["strategy"] == "data_parallel" and readme["val_accuracy"] > 0.8 and f"mesh: batch {devices}" in readme["printed"]
    assert len(readme["warnings"]) == 1 and readme["warnings"][0].startswith("1 of the 1437 training samples are left out of every epoch")
    settings = result["settings"]
    assert settings["fit_keeps_the_users"] and settings["init_sets_it"] and settings["distributed_inside"], settings
    assert settings["built_after_init_devices"] == devices and settings["distributed_after"] == "None"
    adam = result["model_parallel_adam_builder"]
    kernels = [path for path, spec in adam["specs"].items() if "'model'" in spec]
    assert sum("'model'" in spec for spec in adam["slot_specs"].values()) == 2 * len(kernels)  # Adam's two slots follow their kernel


def test_two_processes_through_the_launcher_train_as_one(processes, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    example = str(ROOT / "examples" / "jax_train.py")
    single = started([example, "--no-shuffle", "--weights", str(one)])
    job = started(["-m", "autodist", "launch", "--workers", "2", "--timeout", "200", example, "--no-shuffle", "--weights", str(two)])
    (code, out, err), (job_code, job_out, _) = finished(single), finished(job)
    assert code == 0 and "plan: default" in out, err[-3000:]
    assert job_code == 0, job_out[-3000:]
    assert "[worker 0] plan: data_parallel, mesh (2,), 2 process(es), global batch 64" in job_out
    assert float(re.search(r"\[worker 0\] validation accuracy: ([0-9.]+)", job_out).group(1)) > 0.8
    reference, first, second = (np.load(folder / name) for folder, name in ((one, "weights-0.npz"), (two, "weights-0.npz"), (two, "weights-1.npz")))
    assert all(np.array_equal(first[k], second[k]) for k in first.files)
    assert max(float(np.abs(reference[k] - first[k]).max()) for k in reference.files) < 1e-5


def test_inspect_and_plan_on_jax_without_tensorflow(processes, tmp_path):
    code = (
        "import sys, autodist; loaded = [m for m in ('tensorflow', 'jax', 'keras') if m in sys.modules]; "
        "from autodist.cli import main; main(['inspect', '--json']); "
        "print('LOADED', loaded, 'tensorflow' in sys.modules)"
    )
    returncode, out, err = finished(started(["-c", code], XLA_FLAGS="--xla_force_host_platform_device_count=4"), timeout=120)
    assert returncode == 0, err[-3000:]
    assert out.strip().splitlines()[-1] == "LOADED [] False"  # import autodist: neither; inspect: no TensorFlow
    data = json.loads(out[: out.rindex("LOADED")])
    assert data["snapshot"]["keras_backend"] == "jax" and len(data["snapshot"]["jax_devices"]) == 4
    assert data["plan"]["strategy"] == "data_parallel" and data["plan"]["mesh_shape"] == [4]
    report = render_inspect(data)  # the text `python -m autodist inspect` prints
    assert "keras backend: jax" in report and "JAX devices of this process: 4" in report and "mesh: batch 4" in report
    for device in data["snapshot"]["jax_devices"]:
        device["memory_bytes"] = 1_000_000
    (tmp_path / "snap.json").write_text(json.dumps(data))
    planned = _plan_text(plan_command(build_parser().parse_args(["plan", "--snapshot", str(tmp_path / "snap.json"), "--strategy", "model_parallel"])))
    assert "plan: model_parallel with 2 replica(s)" in planned and "mesh: batch 2 x model 2" in planned
