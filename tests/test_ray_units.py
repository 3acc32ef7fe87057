"""Ray Train without a Ray cluster: the probe, the cluster it reads, the Keras flavor a built model
brings, ``autodist.fit(trainer)``, JAX's join when Ray joined already, and a Ray Data shard's
columns and batch (tests/test_ray.py runs the real cluster)."""

from __future__ import annotations

import dataclasses
import json

import pytest

import autodist
from autodist.detection import cluster, ray_train
from autodist.detection.model_info import ModelInfo
from autodist.planning.planner import plan, refine
from tests.conftest import make_snapshot

RAY_TF_CONFIG = json.dumps({"cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}, "task": {"type": "worker", "index": 0}})


def test_without_ray_imported_no_process_is_a_ray_worker():
    import sys

    assert "ray.train" not in sys.modules and ray_train.ray_train_worker() is None
    assert cluster.detect_cluster({"TF_CONFIG": RAY_TF_CONFIG}).source == "TF_CONFIG"


def test_a_ray_workers_tf_config_is_named_after_ray_train_and_worker_0_is_chief(monkeypatch):
    monkeypatch.setattr(ray_train, "ray_train_worker", lambda: ray_train.RayTrainWorker(0, 2, 0))
    info = cluster.detect_cluster({"TF_CONFIG": RAY_TF_CONFIG})
    assert (info.source, info.num_workers, info.is_chief) == ("TF_CONFIG from Ray Train", 2, True)
    the_plan = plan(dataclasses.replace(make_snapshot(), cluster=info), batch_size=64)
    assert the_plan.strategy.value == "multi_worker_mirrored"
    assert any("TF_CONFIG from Ray Train" in reason for reason in the_plan.reasons), the_plan.reasons


def test_a_keras3_model_built_under_tf_use_legacy_keras_gets_the_keras3_workarounds():
    """Ray Train sets TF_USE_LEGACY_KERAS=1 in its workers; with tf_keras installed, the machine
    says tf_keras, but a builder that builds with Keras 3 needs Keras 3's workarounds."""
    snapshot = make_snapshot(num_cpu_devices=2)
    at_first = plan(dataclasses.replace(snapshot, keras_flavor="tf_keras"), batch_size=64)
    assert (at_first.strategy.value, at_first.keras_flavor, at_first.keras_workarounds) == ("mirrored", "tf_keras", ())
    built = refine(at_first, ModelInfo(keras_flavor="keras3", keras_version="3.15.1"), {})
    assert built.keras_flavor == "keras3" and "aggregating_variable_updates" in built.keras_workarounds


class TensorflowTrainer:  # what autodist.fit sees of a Ray trainer: its module and fit()
    __module__ = "ray.train.v2.tensorflow.tensorflow_trainer"

    def __init__(self):
        self.calls: list[tuple] = []

    def fit(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return object()  # a Result of this call's own


def test_autodist_fit_of_a_ray_trainer_is_its_fit_and_refuses_data():
    """autodist.fit(trainer) runs the trainer once, with nothing added, and hands back that run's
    Result; with data or keywords it refuses, naming them, before Ray runs anything."""
    trainer = TensorflowTrainer()
    result = autodist.fit(trainer)
    assert trainer.calls == [((), {})], trainer.calls  # one run, no argument of autodist's
    assert result is not None and type(result) is object, result
    refused = TensorflowTrainer()
    with pytest.raises(autodist.AutodistError, match=r"got a Ray Train TensorflowTrainer with x, batch_size\. Expected the trainer alone"):
        autodist.fit(refused, [1, 2], batch_size=4)
    with pytest.raises(autodist.AutodistError, match=r"with epochs, ray_report, verbose\. Expected the trainer alone"):
        autodist.fit(refused, epochs=3, ray_report=False, verbose=0)
    assert refused.calls == [], "a refused call runs nothing"


def test_jax_joins_nothing_outside_a_ray_group_of_two_or_more(tensorflow_imported):
    from autodist.jax.runtime import join_ray_workers

    assert join_ray_workers(None) is None and join_ray_workers(ray_train.RayTrainWorker(0, 1, 0)) is None
    joined = join_ray_workers(ray_train.RayTrainWorker(1, 2, 0, jax_joined=True))  # Ray joined them (TPU, GPU): not twice
    assert (joined.source, joined.num_workers, joined.task_index, joined.is_chief) == ("Ray Train", 2, 1, False)


class DataIterator:
    """What autodist reads of a Ray Data shard: its class, ``schema()`` and ``to_tf``."""

    __module__ = "ray.data.iterator"

    def __init__(self, *names):
        self.names, self.to_tf_calls = list(names), []

    def schema(self):
        return type("Schema", (), {"names": self.names})()

    def to_tf(self, **kwargs):
        self.to_tf_calls.append(kwargs)
        return ("to_tf", kwargs)  # the dataset of this call: what it was asked for


def test_a_ray_data_shard_is_read_as_to_tf_reads_it_with_the_global_batch():
    """The columns and batch are autodist's: every column but y's as the features (one column:
    itself; several: the list, in the shard's order), y's as the labels, batch_size global."""
    from autodist.ray.data import from_ray_data

    shard = DataIterator("a", "label", "b")
    dataset, batch = from_ray_data(shard, "label", 64)
    assert (dataset, batch) == (("to_tf", {"feature_columns": ["a", "b"], "label_columns": "label", "batch_size": 64}), 64)
    assert len(shard.to_tf_calls) == 1  # read once
    single = DataIterator("x", "y")
    dataset, batch = from_ray_data(single, ["y"], None)
    assert (dataset, batch) == (("to_tf", {"feature_columns": "x", "label_columns": "y", "batch_size": 32}), 32)  # Keras's default, as model.fit takes it
    labels = DataIterator("x", "y", "z")
    dataset, _ = from_ray_data(labels, ("y", "z"), 8)
    assert dataset == ("to_tf", {"feature_columns": "x", "label_columns": ["y", "z"], "batch_size": 8})
    from autodist.core.input_kinds import RayShard, classify

    assert isinstance(classify(shard, "label"), RayShard) and not isinstance(classify([1, 2], [3, 4]), RayShard)


@pytest.mark.parametrize(
    ("y", "message"),
    [
        (None, r"got a Ray Data shard as x, with y=None\. Expected y= the name of its label column.*its columns: x, y.*y='y'"),
        ("target", r"y=\['target'\] for a Ray Data shard whose columns are x, y: target is not one of them"),
        (["x", "y"], r"every column of the Ray Data shard: no column is left for the features"),
    ],
)
def test_a_ray_data_shard_without_its_label_column_is_refused_with_the_columns(y, message):
    from autodist.ray.data import from_ray_data

    with pytest.raises(autodist.AutodistError, match=message):
        from_ray_data(DataIterator("x", "y"), y, 64)


def test_a_ray_data_shard_on_jax_is_refused_with_the_ways_that_work():
    from autodist.core.input_kinds import classify

    with pytest.raises(autodist.AutodistError, match=r"Ray Data shard.*JAX.*shard\.to_tf\(.*KERAS_BACKEND=tensorflow"):
        classify(DataIterator("x", "y")).refuse_on_jax()
    classify([1, 2]).refuse_on_jax()


def test_in_a_ray_worker_the_saves_travel_in_rays_checkpoints_and_sigterm_is_noticed_at_exit(tensorflow_imported, monkeypatch, tmp_path):
    import os
    import threading

    import keras

    from autodist.planning.plans import Plan, StrategyKind
    from autodist.resume import guard

    the_plan = Plan(StrategyKind.DEFAULT, 1)
    seeded = []
    monkeypatch.setattr(guard, "saves_from_checkpoint", seeded.append)  # what a restarted group takes from Ray
    monkeypatch.setattr(ray_train, "ray_train_worker", lambda: ray_train.RayTrainWorker(0, 1, 0))
    armed = guard.guard_for(None, the_plan, [], keras, None)
    state, saves = armed.state, armed.ray_saves
    assert seeded == [saves] and saves.folder == state.folder and state.before_exit is not None and state.staging
    assert saves.inside == "autodist/" + os.path.basename(state.folder) and state.notice_at_exit
    state.install()
    assert not state.installed  # its folder only stages what goes to Ray: no exit is held for it
    state.close(finished=True)
    assert guard.guard_for(None, the_plan, [], keras, None, ray_checkpoints=False) is None  # opted out: nothing carries them
    mine = guard.guard_for(str(tmp_path / "mine"), the_plan, [], keras, None).state  # a folder of the caller's: kept
    assert mine.folder.startswith(str(tmp_path / "mine")) and mine.notice_at_exit and not mine.staging
    mine.install()  # outside the main thread's signal handling: an exit handler
    exiting = threading.Thread(target=mine._at_exit)  # what the interpreter's exit runs (Ray's SIGTERM handler ends it)
    exiting.start()
    assert mine.received.wait(5) and exiting.is_alive()  # the flag is up, the exit waits for the save
    mine.close(finished=True)
    exiting.join(5)
    assert not exiting.is_alive() and not mine.installed


def test_a_restarted_worker_takes_its_own_saves_out_of_rays_checkpoint(monkeypatch, tmp_path, fresh_state):
    """What autodist reads of Ray here: ``ray.train.get_checkpoint()`` and its ``as_directory()``
    (Ray itself stays unimported in this process; tests/test_ray.py restarts a real group)."""
    import contextlib
    import sys
    import types

    from autodist.ray.reports import RaySaves, saves_from_checkpoint
    from autodist.resume.train_state import needed_for_resume

    reported = tmp_path / "reported"
    for fit in ("fit-0", "fit-1"):  # worker 0's saves of two fits in one loop
        (reported / "autodist" / fit).mkdir(parents=True)
        (reported / "autodist" / fit / "step-000001-00000003.json").write_text(fit)
    checkpoint = types.SimpleNamespace(as_directory=lambda: contextlib.nullcontext(str(reported)))
    ray_module = types.ModuleType("ray")
    ray_module.train = types.SimpleNamespace(get_checkpoint=lambda: checkpoint)
    monkeypatch.setitem(sys.modules, "ray", ray_module)
    monkeypatch.setitem(sys.modules, "ray.train", ray_module.train)
    fresh_state.ray_started_with = None  # a new process: it reads the checkpoint once
    second = RaySaves(str(tmp_path / "local" / "worker-1" / "fit-1"), "autodist/fit-1", needed_for_resume)
    assert saves_from_checkpoint(second)
    assert (tmp_path / "local" / "worker-1" / "fit-1" / "step-000001-00000003.json").read_text() == "fit-1"
    assert not saves_from_checkpoint(RaySaves(str(tmp_path / "other"), "autodist/fit-2", needed_for_resume))  # a fit it has none of
    ray_module.train.get_checkpoint = lambda: None  # what later reports of this start leave there does not count
    assert saves_from_checkpoint(RaySaves(str(tmp_path / "again"), "autodist/fit-0", needed_for_resume))
    fresh_state.ray_started_with = None
    assert not saves_from_checkpoint(second)  # a start without a checkpoint
