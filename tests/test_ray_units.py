"""Ray Train without a Ray cluster: the probe, the cluster it reads, the Keras flavor a built model
brings, and ``autodist.fit(trainer)`` (tests/test_ray.py runs the real cluster)."""

from __future__ import annotations

import dataclasses
import json

import pytest

import autodist
from autodist.detection import cluster, ray_train
from autodist.detection.model_info import ModelInfo
from autodist.planning.planner import plan, plan_for_built_model
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
    built = plan_for_built_model(at_first, ModelInfo(keras_flavor="keras3", keras_version="3.15.1"), {})
    assert built.keras_flavor == "keras3" and "aggregating_variable_updates" in built.keras_workarounds


class TensorflowTrainer:  # what autodist.fit sees of a Ray trainer: its module and fit()
    __module__ = "ray.train.v2.tensorflow.tensorflow_trainer"

    def fit(self):
        return "the Result"


def test_autodist_fit_of_a_ray_trainer_is_its_fit_and_refuses_data():
    assert autodist.fit(TensorflowTrainer()) == "the Result"
    with pytest.raises(autodist.AutodistError, match=r"got a Ray Train TensorflowTrainer with x, batch_size\. Expected the trainer alone"):
        autodist.fit(TensorflowTrainer(), [1, 2], batch_size=4)
    with pytest.raises(autodist.AutodistError, match=r"with epochs, ray_report, verbose\. Expected the trainer alone"):
        autodist.fit(TensorflowTrainer(), epochs=3, ray_report=False, verbose=0)


def test_unjoined_jax_workers_under_ray_are_refused_with_the_ways_that_work():
    from autodist.jax.runtime import refuse_unjoined_ray_workers

    refuse_unjoined_ray_workers(None)
    refuse_unjoined_ray_workers(ray_train.RayTrainWorker(0, 1, 0))
    for joined in (False, True):  # Ray joined them on GPUs or TPUs: autodist still plans no cluster for them
        with pytest.raises(autodist.AutodistError, match=r"worker 1 of 2 in a Ray Train run.*KERAS_BACKEND=tensorflow.*num_workers=1"):
            refuse_unjoined_ray_workers(ray_train.RayTrainWorker(1, 2, 1, jax_joined=joined))
