"""The planner's rules, as a table: synthetic snapshot → strategy, batch sizes, and a reason."""

from __future__ import annotations

import pytest

import autodist
from autodist.planning.memory_model import estimate
from autodist.detection.model_info import ModelInfo
from autodist.planning.planner import plan
from autodist.planning.plans import Plan, StrategyKind
import dataclasses

from tests.conftest import make_snapshot

WORKERS_2 = {"cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}, "task": {"type": "worker", "index": 0}}
CHIEF_WORKER = {"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222"]}, "task": {"type": "worker", "index": 0}}
SINGLE_WORKER = {"cluster": {"worker": ["127.0.0.1:2222"]}, "task": {"type": "worker", "index": 0}}
WITH_PS = {
    "cluster": {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"], "ps": ["h3:1"]},
    "task": {"type": "worker", "index": 1},
}
EVALUATOR = {"cluster": {"worker": ["h1:1", "h2:1"], "evaluator": ["h3:1"]}, "task": {"type": "evaluator", "index": 0}}

SMALL = 1_000_000  # 24 MB to train with Adam
LARGE = 5_000_000_000  # 120 GB to train with Adam
MEDIUM = 500_000_000  # 16 GB replicated with Adam; 6 GB per GPU under central_storage

# (id, snapshot kwargs, plan kwargs, strategy, replicas, global batch, per replica, reason phrase, devices)
CASES = [
    ("cpu", {}, {"batch_size": 64}, "default", 1, 64, 64, "no GPU or TPU", ()),
    ("cpu-default-batch", {}, {}, "default", 1, 32, 32, "Keras's default global batch 32", ()),
    ("cpu-logical-2", {"num_cpu_devices": 2}, {"batch_size": 33}, "mirrored", 2, 34, 17, "AUTODIST_CPU_DEVICES=2", ("/cpu:0", "/cpu:1")),
    ("cpu-logical-4", {"num_cpu_devices": 4}, {"batch_size": 64}, "mirrored", 4, 64, 16, "4 logical devices", ("/cpu:0", "/cpu:1", "/cpu:2", "/cpu:3")),
    ("1-gpu", {"num_gpus": 1}, {"num_params": SMALL, "batch_size": 64}, "one_device", 1, 64, 64, "fits", ("/gpu:0",)),
    ("1-gpu-too-small", {"num_gpus": 1, "gpu_memory_gib": 8}, {"num_params": MEDIUM}, "central_storage", 1, 32, 32, "does not fit", ("/gpu:0",)),
    ("2-gpu", {"num_gpus": 2}, {"num_params": SMALL, "batch_size": 64}, "mirrored", 2, 64, 32, "2 GPUs found", ("/gpu:0", "/gpu:1")),
    ("8-gpu", {"num_gpus": 8}, {"num_params": SMALL, "batch_size": 100}, "mirrored", 8, 104, 13, "8 GPUs found", tuple(f"/gpu:{i}" for i in range(8))),
    ("8-gpu-large-model", {"num_gpus": 8, "gpu_memory_gib": 16}, {"num_params": MEDIUM, "batch_size": 64}, "central_storage", 8, 64, 8, "does not fit", tuple(f"/gpu:{i}" for i in range(8))),
    ("gpu-unknown-size", {"num_gpus": 2}, {"batch_size": 64}, "mirrored", 2, 64, 32, "model size unknown", ("/gpu:0", "/gpu:1")),
    ("gpu-unknown-memory", {"num_gpus": 2, "gpu_memory_gib": None}, {"num_params": LARGE}, "mirrored", 2, 32, 16, "GPU memory unknown", ("/gpu:0", "/gpu:1")),
    ("tpu", {"tpu": True, "num_gpus": 2}, {"batch_size": 128}, "tpu", 8, 128, 16, "a TPU was found", ()),
    ("tf-config-single-worker", {"tf_config": SINGLE_WORKER}, {"batch_size": 64}, "default", 1, 64, 64, "single worker", ()),
    ("tf-config-2-workers", {"tf_config": WORKERS_2}, {"batch_size": 64}, "multi_worker_mirrored", 2, 64, 32, "2 workers", ("/cpu:0",)),
    ("tf-config-chief-worker-gpus", {"tf_config": CHIEF_WORKER, "num_gpus": 4}, {"batch_size": 64}, "multi_worker_mirrored", 8, 64, 8, "NCCL", tuple(f"/gpu:{i}" for i in range(4))),
    ("tf-config-ps", {"tf_config": WITH_PS}, {"batch_size": 64}, "parameter_server", 1, 64, 64, "1 ps task", ("/cpu:0",)),
    ("tf-config-evaluator", {"tf_config": EVALUATOR}, {"batch_size": 64}, "default", 1, 64, 64, "evaluator", ()),
    # a batch smaller than the replicas: one device trains the program as written (issue 59)
    ("cpu-logical-2-batch-1", {"num_cpu_devices": 2}, {"batch_size": 1}, "default", 1, 1, 1, "smaller than the 2 replicas", ()),
    ("8-gpu-batch-5", {"num_gpus": 8}, {"num_params": SMALL, "batch_size": 5}, "default", 1, 5, 5, "one device's numbers", ()),
    ("cpu-logical-2-batch-2", {"num_cpu_devices": 2}, {"batch_size": 2}, "mirrored", 2, 2, 1, "AUTODIST_CPU_DEVICES=2", ("/cpu:0", "/cpu:1")),
    # ...but a forced strategy, central storage and a multi-worker job round the batch up, warned
    ("forced-mirrored-batch-1", {"num_cpu_devices": 2}, {"batch_size": 1, "strategy": "mirrored"}, "mirrored", 2, 2, 1, "forced", ("/cpu:0", "/cpu:1")),
    ("8-gpu-large-model-batch-1", {"num_gpus": 8, "gpu_memory_gib": 16}, {"num_params": MEDIUM, "batch_size": 1}, "central_storage", 8, 8, 1, "does not fit", tuple(f"/gpu:{i}" for i in range(8))),
    ("tf-config-2-workers-batch-1", {"tf_config": WORKERS_2}, {"batch_size": 1}, "multi_worker_mirrored", 2, 2, 1, "2 workers", ("/cpu:0",)),
]


@pytest.mark.parametrize(
    "snapshot_kwargs, plan_kwargs, strategy, replicas, global_batch, per_replica, phrase, devices",
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_plan_table(snapshot_kwargs, plan_kwargs, strategy, replicas, global_batch, per_replica, phrase, devices):
    result = plan(make_snapshot(**snapshot_kwargs), **plan_kwargs)
    assert result.strategy == StrategyKind(strategy)
    assert result.num_replicas == replicas
    assert result.global_batch_size == global_batch
    assert result.per_replica_batch_size == per_replica
    assert result.global_batch_size % result.num_replicas == 0
    assert result.devices == devices
    assert any(phrase in reason for reason in result.reasons), result.reasons


@pytest.mark.parametrize(
    "snapshot_kwargs, expected",
    [
        ({"num_gpus": 2}, "nccl"),
        ({"num_gpus": 2, "platform": "win32"}, "hierarchical_copy"),
        ({"num_cpu_devices": 2}, "collective"),
        ({"num_gpus": 2, "gpu_names": ["NVIDIA A100", "NVIDIA V100"]}, "reduction_to_one_device"),
        ({"tf_config": WORKERS_2}, "ring"),
        ({"tf_config": WORKERS_2, "num_gpus": 2}, "nccl"),
    ],
)
def test_cross_device_ops(snapshot_kwargs, expected):
    assert plan(make_snapshot(**snapshot_kwargs), num_params=SMALL).cross_device_ops == expected


def test_nccl_never_on_cpu():
    for snap in (make_snapshot(num_cpu_devices=4), make_snapshot(tf_config=WORKERS_2)):
        assert plan(snap, strategy="auto").cross_device_ops != "nccl"


def test_mixed_gpus_warn_and_name_both_models():
    result = plan(make_snapshot(num_gpus=2, gpu_names=["NVIDIA A100", "NVIDIA V100"]))
    assert any("mixed GPU models" in w and "A100" in w and "V100" in w for w in result.warnings)


def test_gpu_memory_fraction_can_flip_the_choice():
    # 16 GiB GPU, 500M params with SGD: 8 GB replicated (weights, gradients, step, activations
    # allowance 2 GB each); under central_storage 6 GB per GPU.
    snap = make_snapshot(num_gpus=2, gpu_memory_gib=16)
    info = ModelInfo(num_params=500_000_000, optimizer="sgd", optimizer_slots=0)
    assert plan(snap, model_info=info).strategy == StrategyKind.MIRRORED
    assert plan(snap, model_info=info, gpu_memory_fraction=0.4).strategy == StrategyKind.CENTRAL_STORAGE


def test_memory_model_counts_activations_per_replica_batch_and_moves_state_to_the_host():
    info = ModelInfo(num_params=1000, optimizer_slots=2, activation_elements=50)
    small, large = estimate("mirrored", info, 8), estimate("mirrored", info, 16)
    assert large.device["activations"] == 2 * small.device["activations"] == 2 * 50 * 16 * 4
    assert small.device_bytes == 4000 * (1 + 1 + 2 + 3) + 2 * 50 * 8 * 4
    central = estimate("central_storage", info, 8)
    # each GPU keeps the gradients, a transient copy of the weights and its activations
    assert central.device_bytes == 4000 + 4000 + 2 * 50 * 8 * 4
    assert central.host_bytes == 4000 * (1 + 2 + 3)


def test_5b_parameters_on_8_gpus_of_16_gb_refuse_with_the_numbers():
    """The old formula picked central_storage here; it cannot run: 20 GB of fp32 gradients per GPU."""
    snap = make_snapshot(num_gpus=8, gpu_memory_gib=16)
    with pytest.raises(autodist.StrategyUnavailableError) as caught:
        plan(snap, num_params=LARGE, batch_size=64)
    message = str(caught.value)
    assert "20.0 GB of gradients" in message and "14.4 GiB" in message
    assert "smaller batch" in message and "mixed precision" in message and "fewer parameters" in message
    dry = plan(snap, num_params=LARGE, batch_size=64, refuse_when_nothing_fits=False)
    assert any("No strategy fits" in w for w in dry.warnings)
    assert "memory: central_storage (batch 8 per device): 55.9 GiB per device" in dry.summary()  # activations: the allowance


def test_forced_strategy_that_does_not_fit_warns_with_the_numbers():
    result = plan(make_snapshot(num_gpus=2, gpu_memory_gib=16), num_params=MEDIUM, strategy="mirrored")
    assert any("mirrored needs an estimated 14.9 GiB per GPU" in w for w in result.warnings)


@pytest.mark.parametrize("kind", ["default", "one_device", "mirrored", "central_storage"])
def test_forcing_a_single_host_strategy(kind):
    result = plan(make_snapshot(num_gpus=2), num_params=SMALL, strategy=kind)
    assert result.strategy.value == kind
    assert any("forced" in reason for reason in result.reasons)


def test_forced_one_device_on_cpu_uses_cpu0():
    assert plan(make_snapshot(), strategy="one_device").devices == ("/cpu:0",)


def test_strategy_accepts_enum_and_string():
    snap = make_snapshot(num_cpu_devices=2)
    assert plan(snap, strategy=StrategyKind.CENTRAL_STORAGE).strategy == plan(snap, strategy="central_storage").strategy


def test_plan_is_deterministic_and_serialisable():
    snap = make_snapshot(num_gpus=4)
    first, second = plan(snap, num_params=SMALL, batch_size=30), plan(snap, num_params=SMALL, batch_size=30)
    assert first == second
    data = first.to_dict()
    assert data["strategy"] == "mirrored" and data["global_batch_size"] == 32
    assert isinstance(data["reasons"], list) and data["reasons"]


def test_plan_reads_the_model(keras_model):
    result = plan(make_snapshot(num_gpus=1, gpu_memory_gib=16), model=keras_model)
    info = ModelInfo(num_params=keras_model.count_params(), optimizer_slots=2, activation_elements=sum(
        int(layer.output.shape[-1]) for layer in keras_model.layers))
    assert result.footprint_bytes == estimate("one_device", info, 32).device_bytes
    assert result.strategy == StrategyKind.ONE_DEVICE


def test_compile_settings_that_break_mirrored_are_overridden(keras_model):
    keras_model.compile(optimizer="adam", loss="mse", jit_compile=True, steps_per_execution=8)
    import keras

    from autodist.upstream.keras_workarounds import WORKAROUNDS

    result = plan(make_snapshot(num_cpu_devices=2), model=keras_model)
    # steps_per_execution breaks Mirrored from Keras 3.7 on (its gate): on an older Keras it is kept
    stepped = WORKAROUNDS["mirrored_steps_per_execution"].is_active(keras.__version__, {})
    assert result.compile_overrides == {"jit_compile": False, **({"steps_per_execution": 1} if stepped else {})}
    assert any("keras#19246" in w for w in result.warnings) is stepped
    # Not under the default strategy: there they work and are kept.
    assert plan(make_snapshot(), model=keras_model).compile_overrides == {}


@pytest.fixture
def keras_model(tensorflow_imported):
    import keras

    model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(5)])
    model.compile(optimizer="adam", loss="mse")
    return model


def test_plan_does_not_import_tensorflow(processes):
    from tests.conftest import run_python, subprocess_env

    code = (
        "import sys, autodist; from tests.conftest import make_snapshot; "
        "autodist.plan(make_snapshot(num_gpus=2), num_params=10); print('tensorflow' in sys.modules)"
    )
    proc = run_python(["-c", code], env=subprocess_env(), timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr


def test_detect_and_plan_modules_import_neither_tensorflow_nor_keras(processes):
    from tests.conftest import run_python, subprocess_env

    code = (
        "import sys; import autodist.settings, autodist.detection.cluster, autodist.detection.hardware, autodist.planning.planner, "
        "autodist.core.batching; from tests.conftest import make_snapshot; "
        "autodist.planning.planner.plan(make_snapshot(num_gpus=2), num_params=10, batch_size=33); "
        "print(sorted(m for m in ('tensorflow', 'keras', 'tf_keras') if m in sys.modules))"
    )
    proc = run_python(["-c", code], env=subprocess_env(), timeout=60)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_public_names():
    for name in ("fit", "plan", "detect", "distributed", "compute_average_loss", "AutodistError", "ClusterConfigError", "StrategyKind", "HardwareSnapshot", "Plan"):
        assert hasattr(autodist, name)


@pytest.mark.parametrize(
    "snapshot_kwargs, plan_kwargs, expected",
    [
        ({}, {}, 8),
        ({"num_gpus": 1}, {"num_params": SMALL}, 8),  # one_device
        ({"num_cpu_devices": 2}, {}, None),  # mirrored: Keras 3 fails with it (keras#19246)
        ({"tf_config": WORKERS_2}, {}, None),
        ({"tpu": True}, {}, None),
        ({"tf_config": EVALUATOR}, {}, None),  # trains nothing
        ({}, {"strategy": "central_storage"}, None),
        ({}, {"model_info": ModelInfo(steps_per_execution=4)}, None),  # the caller chose
        ({}, {"model_info": ModelInfo(keras_flavor="tf_keras")}, None),
    ],
    ids=["default", "one-device", "mirrored", "multi-worker", "tpu", "evaluator", "central-storage", "caller-chose", "tf-keras"],
)
def test_steps_per_execution_default(snapshot_kwargs, plan_kwargs, expected):
    p = plan(make_snapshot(**snapshot_kwargs), **plan_kwargs)
    assert p.steps_per_execution == expected
    assert p.to_dict()["steps_per_execution"] == expected
    if expected:
        assert any("steps_per_execution=8" in r and "AUTODIST_STEPS_PER_EXECUTION=1" in r for r in p.reasons)


@pytest.mark.parametrize(
    ("total_steps", "environ", "expected"),
    [(127, {}, None), (128, {}, 8), (None, {}, 8), (5, {"AUTODIST_STEPS_PER_EXECUTION": "8"}, 8), (5, {"AUTODIST_STEPS_PER_EXECUTION": "1"}, None)],
)
def test_a_short_fit_keeps_one_step_per_call_unless_the_setting_asks(total_steps, environ, expected):
    """Fewer than SHORT_FIT_STEPS steps in the fit: the first trace of an 8-step loop costs more
    than it saves, so 1 stays, with the count in the reason; an explicit setting wins."""
    from autodist.planning.steps_per_execution import SHORT_FIT_STEPS, FitFacts, choose_steps_per_execution

    choice = choose_steps_per_execution(StrategyKind.DEFAULT, "keras3", ModelInfo(keras_flavor="keras3", keras_version="3.15.1"), environ, FitFacts(total_steps=total_steps))
    assert SHORT_FIT_STEPS == 128 and choice.value == expected, choice
    if expected is None and not environ:
        assert choice.reasons == (f"steps_per_execution stays as compiled: this fit trains {total_steps} steps, fewer than 128, "
                                  "and the first trace of a loop of 8 steps costs more than it saves there. AUTODIST_STEPS_PER_EXECUTION=8 sets it anyway",)


def test_steps_per_execution_opt_out_and_bad_value():
    off = plan(make_snapshot(), environ={"AUTODIST_STEPS_PER_EXECUTION": "1"})
    assert off.steps_per_execution is None
    assert any("stays 1" in r for r in off.reasons)
    assert plan(make_snapshot(), environ={"AUTODIST_STEPS_PER_EXECUTION": "16"}).steps_per_execution == 16
    with pytest.raises(autodist.AutodistError, match="AUTODIST_STEPS_PER_EXECUTION must be an integer from 1.*'eight'"):
        plan(make_snapshot(), environ={"AUTODIST_STEPS_PER_EXECUTION": "eight"})


def test_the_readme_lists_every_setting_and_nothing_else():
    import re

    from autodist.settings import SETTINGS
    from tests.conftest import ROOT

    readme = "".join(path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    table = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert re.findall(r"^\| `(AUTODIST_[A-Z0-9_]+)` \|", table, flags=re.M) == list(SETTINGS)
    mentioned = set(re.findall(r"AUTODIST_[A-Z0-9_]*[A-Z0-9]", readme))
    assert mentioned <= set(SETTINGS), mentioned - set(SETTINGS)
    package = "".join(path.read_text(encoding="utf-8") for path in (ROOT / "autodist").glob("*.py"))
    assert set(re.findall(r"\"(AUTODIST_[A-Z0-9_]+)\"", package)) == set(SETTINGS)


def test_a_plan_round_trips_through_its_dict():
    from autodist.planning.plans import Plan

    cluster = {"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]}, "task": {"type": "chief", "index": 0}}
    made = plan(make_snapshot(tf_config=cluster), batch_size=64)
    assert made.cluster is not None and Plan.from_dict(made.to_dict()) == made
    tpu = plan(make_snapshot(tpu=True), batch_size=100)
    assert tpu.tpu is not None and Plan.from_dict(tpu.to_dict()) == tpu


def test_batchnorm_and_dropout_are_said_once_per_plan_with_the_per_replica_batch():
    from autodist.detection.model_info import ModelInfo
    from autodist.planning.planner import plan

    layers = ModelInfo(num_params=100, keras_flavor="keras3", keras_version="3.15.1", batch_statistics_layers=("bn",), random_layers=("dropout",))
    split = plan(make_snapshot(num_cpu_devices=2), model_info=layers, batch_size=64)
    said = [w for w in split.warnings if w.startswith(("BatchNormalization", "dropout"))]
    assert len(said) == 2 and "32 samples, not the global 64" in said[0] and "synchronized=True" in said[0]
    assert "each replica from its own stream" in said[1] and "(32 samples each)" in said[1] and "not one device's numbers" in said[1]
    assert "averages each update of the moving statistics over the replicas" in said[0], said[0]
    shared = plan(make_snapshot(num_cpu_devices=2), model_info=layers, batch_size=64, environ={"AUTODIST_KERAS_COMPAT": "off"})
    assert any("same random masks, noise or transforms on every replica" in w for w in shared.warnings), shared.warnings
    # the moving statistics as Keras keeps them, where the workaround that averages them is left out
    keras_own = plan(make_snapshot(num_cpu_devices=2), model_info=layers, batch_size=64, environ={"AUTODIST_KERAS_COMPAT": "auto,-batchnorm_moving_statistics"})
    assert "batchnorm_moving_statistics" not in keras_own.keras_workarounds and "replica_random_streams" in keras_own.keras_workarounds
    kept = [w for w in keras_own.warnings if w.startswith("BatchNormalization")]
    assert len(kept) == 1 and "that replica's copy" in kept[0] and "averages" not in kept[0], kept
    one = plan(make_snapshot(), model_info=layers, batch_size=64)
    assert not [w for w in one.warnings if "BatchNormalization" in w or "mask" in w]
    tf_keras = plan(make_snapshot(num_cpu_devices=2), model_info=dataclasses.replace(layers, keras_flavor="tf_keras", batch_statistics_layers=()), batch_size=64)
    assert not tf_keras.warnings and any("dropout draw masks" in r for r in tf_keras.reasons)


@pytest.mark.parametrize("kind", list(StrategyKind))
@pytest.mark.parametrize("plan_flavor", ["keras3", "tf_keras"])
@pytest.mark.parametrize("keras_version", ["3.3.3", "3.6.0", "3.8.0", "3.15.1", "3.17.0"])
@pytest.mark.parametrize("compat", [None, "off"])
@pytest.mark.filterwarnings("ignore:Keras 3.17.0 is newer:autodist.errors.AutodistWarning")  # said once a process, tested in test_keras_compat.py
def test_fit_applies_before_building_every_workaround_the_built_model_then_needs(kind, plan_flavor, keras_version, compat, fresh_state):
    """``fit`` applies the Keras workarounds once, before its model is built; the final plan for
    the built model (either flavor) names none that were not applied. Without a builder, the
    plan's own are applied, unchanged."""
    from autodist.planning.choosers import choose_workarounds
    from autodist.planning.planner import workarounds_before_building

    environ = {} if compat is None else {"AUTODIST_KERAS_COMPAT": compat}
    made = plan(make_snapshot(num_cpu_devices=2), environ={}, refuse_when_nothing_fits=False)
    the_plan = dataclasses.replace(made, strategy=kind, keras_flavor=plan_flavor, keras_workarounds=choose_workarounds(kind, plan_flavor, keras_version, environ).value)
    applied = set(workarounds_before_building(the_plan, True, keras_version, environ))
    for built_flavor in ("keras3", "tf_keras"):
        assert set(choose_workarounds(kind, built_flavor, keras_version, environ).value) <= applied, built_flavor
    assert workarounds_before_building(the_plan, False, keras_version, environ) == the_plan.keras_workarounds
    if kind not in (StrategyKind.DEFAULT,) and compat is None:
        assert applied, "a strategy with Keras 3 workarounds applies some"


def test_each_strategy_is_one_type_that_answers_what_autodist_asks_of_it():
    """What the rest of autodist asks of a strategy (does it distribute, share each batch, run
    collectives across workers, train asynchronously, drop the last batch, train on one device),
    answered by its type, and the plans agree with it."""
    from autodist.planning.strategy_types import TYPES, strategy_type

    assert set(TYPES) == set(StrategyKind)
    answers = {
        kind: tuple(
            name
            for name in (
                "distributes",
                "shares_batches",
                "collective_workers",
                "asynchronous",
                "drops_remainder",
                "single_device",
            )
            if getattr(kind_type, name)
        )
        + (kind_type.backend,)
        for kind, kind_type in TYPES.items()
    }
    assert all(isinstance(kind, str) and TYPES[kind].kind == kind for kind in TYPES)
    assert answers == {
        "default": ("single_device", "tensorflow"),
        "one_device": ("distributes", "single_device", "tensorflow"),
        "mirrored": ("distributes", "shares_batches", "tensorflow"),
        "central_storage": ("distributes", "shares_batches", "tensorflow"),
        "multi_worker_mirrored": ("distributes", "shares_batches", "collective_workers", "tensorflow"),
        "parameter_server": ("distributes", "asynchronous", "tensorflow"),
        "tpu": ("distributes", "shares_batches", "drops_remainder", "tensorflow"),
        "data_parallel": ("distributes", "shares_batches", "jax"),
        "model_parallel": ("distributes", "shares_batches", "jax"),
    }
    owned = {
        kind: tuple(
            name
            for name in ("single_host", "on_tpu", "mirrors_variables", "one_device_when_unsplit", "splits_weights")
            if getattr(kind_type, name)
        )
        + (kind_type.variables_home, kind_type.adopts, kind_type.jax_equivalent, kind_type.tune_order)
        for kind, kind_type in TYPES.items()
    }
    assert owned == {
        "default": ("single_host", None, (), None, (1, 0)),
        "one_device": ("single_host", None, ("OneDeviceStrategy",), "default", (1, 1)),
        "mirrored": ("single_host", "mirrors_variables", "one_device_when_unsplit", None, ("MirroredStrategy",), "data_parallel", (0, 2)),
        "central_storage": ("single_host", "host", ("CentralStorageStrategy",), "model_parallel", (2, 3)),
        "multi_worker_mirrored": ("mirrors_variables", None, ("CollectiveAllReduceStrategy",), "data_parallel", (0, 0)),
        "parameter_server": ("ps tasks", ("ParameterServerStrategyV2",), "data_parallel", (0, 0)),
        "tpu": ("on_tpu", None, ("TPUStrategyV2", "TPUStrategy"), "data_parallel", (0, 0)),
        "data_parallel": (None, (), None, (0, 0)),
        "model_parallel": ("splits_weights", None, (), None, (0, 0)),
    }
    snapshot = make_snapshot(num_cpu_devices=2)
    for kind in ("one_device", "mirrored", "central_storage"):
        the_plan = plan(snapshot, strategy=kind, batch_size=30)
        layout = strategy_type(kind).layout(snapshot).value
        assert (the_plan.devices, the_plan.num_replicas, the_plan.parameter_device) == (
            layout.devices,
            layout.num_replicas,
            layout.parameter_device,
        ), kind
        assert the_plan.drop_remainder is strategy_type(kind).drops_remainder is False
        assert the_plan.global_batch_size % the_plan.num_replicas == 0
    assert strategy_type(StrategyKind.MIRRORED) is strategy_type("mirrored") is TYPES[StrategyKind.MIRRORED]
    assert all(Plan(kind, 1).type is TYPES[kind] for kind in StrategyKind)  # the plan holds its strategy's type


def test_a_jax_plans_mesh_is_its_own_spec_owned_by_its_strategy_and_round_trips():
    """The mesh (shape, axis names, layout map) is one object, made by the JAX strategy's type;
    TensorFlow's strategies and JAX's default have none. A plan's JSON keeps it under the keys
    plans always had (the mesh's three fields side by side)."""
    from autodist.planning.strategy_types import Mesh, strategy_type

    layout = (("net/d/kernel", (None, "model")),)
    assert strategy_type("model_parallel").mesh(2, 4, layout) == Mesh((2, 4), ("batch", "model"), layout)
    assert strategy_type("data_parallel").mesh(8, 1) == Mesh((8,), ("batch",))
    assert all(strategy_type(kind).mesh(2, 1) is None for kind in StrategyKind if strategy_type(kind).backend != "jax")
    assert strategy_type("default").mesh(1, 1) is None
    made = Plan(StrategyKind.MODEL_PARALLEL, 2, keras_backend="jax", mesh=strategy_type("model_parallel").mesh(2, 4, layout))
    assert Plan.from_dict(made.to_dict()) == made and (made.mesh_shape, made.mesh.model_axis) == ((2, 4), 4)
    written = made.to_dict()  # the JSON keeps the keys plans always had
    assert (written["mesh_shape"], written["mesh_axes"], written["layout_map"]) == ([2, 4], ["batch", "model"], [["net/d/kernel", [None, "model"]]])
    assert "mesh" not in written and Plan.from_dict({**written, "mesh_shape": []}).mesh is None
    assert "  mesh: batch 2 x model 4" in made.summary()


def test_a_plain_function_initializer_is_warned_only_where_replicas_build_the_model_first():
    """The TensorFlow guide's Dense(kernel_initializer=tf.random.normal) on a model built in fit:
    one device draws it inside its first step, a strategy before, so the initial weights differ."""
    info = ModelInfo(keras_flavor="keras3", keras_version="3.15.1", function_initializers=("dense.kernel_initializer",))
    two = plan(make_snapshot(num_cpu_devices=2), model_info=info, batch_size=32)
    one = plan(make_snapshot(), model_info=info, batch_size=32)
    said = [w for w in two.warnings if "dense.kernel_initializer is a plain function" in w]
    assert len(said) == 1 and "keras.initializers.RandomNormal(seed=1)" in said[0], two.warnings
    assert not any("plain function" in w for w in one.warnings)


def test_a_batch_smaller_than_the_replicas_trains_on_one_device_unless_the_model_cannot_move_there():
    """keras.io's attention MIL classifier (batch_size=1) on 2 replicas: one device, with the
    reason; a model built under the strategy that Keras cannot save stays there, its batch rounded
    up, and the warning says why one device was not possible."""
    from autodist.planning.steps_per_execution import FitFacts

    snap = make_snapshot(num_cpu_devices=2)
    moved = plan(snap, batch_size=1)
    assert (moved.strategy, moved.global_batch_size) == (StrategyKind.DEFAULT, 1)
    assert any("smaller than the 2 replicas" in reason for reason in moved.reasons), moved.reasons
    stuck = plan(snap, batch_size=1, fit_facts=FitFacts(unmovable="Keras cannot save it: NotImplementedError: x"))
    assert (stuck.strategy, stuck.global_batch_size) == (StrategyKind.MIRRORED, 2)
    said = [w for w in stuck.warnings if "cannot be moved there (Keras cannot save it" in w]
    assert len(said) == 1 and "batch_size=2 or more" in said[0], stuck.warnings


def test_an_input_that_cannot_be_split_trains_on_one_device_unless_the_model_cannot_move_there():
    """The Extension types guide fits a MaskedTensor, which tf.distribute cannot split (a
    hand-built strategy fails on it): one device, with the reason, whatever the batch; a model
    built under the strategy that cannot move stays (its input is then refused with the fix)."""
    from autodist.planning.steps_per_execution import FitFacts

    snap = make_snapshot(num_cpu_devices=2)
    why = "the input holds a MaskedTensor, a composite tensor that cannot be sliced (no __getitem__)"
    moved = plan(snap, batch_size=32, fit_facts=FitFacts(unsplittable=why))
    assert (moved.strategy, moved.global_batch_size) == (StrategyKind.DEFAULT, 32)
    said = [reason for reason in moved.reasons if reason.startswith(why)]
    assert len(said) == 1 and "trains on one device" in said[0], moved.reasons
    stuck = plan(snap, batch_size=32, fit_facts=FitFacts(unsplittable=why, unmovable="Keras cannot save it"))
    assert stuck.strategy == StrategyKind.MIRRORED
    assert plan(snap, batch_size=32).strategy == StrategyKind.MIRRORED
