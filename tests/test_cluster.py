"""TF_CONFIG parsing and validation, checked against TensorFlow's own TFConfigClusterResolver."""

from __future__ import annotations

import json

import pytest

from autodist.detection.cluster import ClusterInfo, detect_cluster, parse_tf_config
from autodist.errors import ClusterConfigError

VALID = [
    {"cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}, "task": {"type": "worker", "index": 1}},
    {"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"]}, "task": {"type": "chief", "index": 0}},
    {"cluster": {"chief": ["h0:1"], "worker": ["h1:1"], "ps": ["h2:1", "h3:1"]}, "task": {"type": "ps", "index": 1}},
    {"cluster": {"worker": ["h1:1", "h2:1"], "evaluator": ["h3:1"]}, "task": {"type": "evaluator", "index": 0}},
]


@pytest.mark.parametrize("config", VALID, ids=["2-workers", "chief", "ps", "evaluator"])
def test_agrees_with_tensorflow_resolver(tensorflow_imported, config, monkeypatch):
    import tensorflow as tf

    TFConfigClusterResolver = tf.distribute.cluster_resolver.TFConfigClusterResolver

    raw = json.dumps(config)
    monkeypatch.setenv("TF_CONFIG", raw)
    resolver = TFConfigClusterResolver()
    info = parse_tf_config(raw)
    assert info is not None
    assert info.cluster_spec == resolver.cluster_spec().as_dict()
    assert (info.task_type, info.task_index) == (resolver.task_type, resolver.task_id)


@pytest.mark.parametrize(
    "config, chief",
    [
        ({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}}, True),
        ({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}}, False),
        ({"cluster": {"chief": ["c:1"], "worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}, False),
        ({"cluster": {"chief": ["c:1"], "worker": ["a:1"]}, "task": {"type": "chief", "index": 0}}, True),
    ],
)
def test_chief_is_chief_task_or_worker_zero(config, chief):
    assert parse_tf_config(json.dumps(config)).is_chief is chief


def test_counts_and_round_trip():
    info = parse_tf_config(json.dumps(VALID[2]))
    assert (info.num_workers, info.num_ps) == (2, 2)
    assert ClusterInfo.from_dict(json.loads(json.dumps(info.to_dict()))) == info
    assert info.tf_config()["task"] == {"type": "ps", "index": 1}


def test_empty_config_means_no_cluster():
    assert parse_tf_config("{}") is None
    assert detect_cluster({"TF_CONFIG": ""}) is None
    assert detect_cluster({}) is None


def test_kubeflow_sparse_cluster():
    raw = json.dumps({"sparseCluster": {"worker": {"1": "h1:1", "0": "h0:1"}}, "task": {"type": "worker", "index": 1}})
    assert parse_tf_config(raw).cluster_spec == {"worker": ["h0:1", "h1:1"]}


# Each malformed case: the config, and phrases the message must contain (received value + fix).
MALFORMED = [
    ("bad-json", "{'cluster': {}}", ["not valid JSON", "double quotes"]),
    ("missing-task", json.dumps({"cluster": {"worker": ["a:1", "b:1"]}}), ["no task type", "Set the task"]),
    ("missing-cluster", json.dumps({"task": {"type": "worker", "index": 0}}), ["no cluster", "Add it"]),
    ("type-not-in-cluster", json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "ps", "index": 0}}), ["no 'ps' tasks", "Fix the task type"]),
    ("index-out-of-range", json.dumps({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 5}}), ["index 5 is out of range", "from 0 to 1"]),
    ("unknown-type-master", json.dumps({"cluster": {"master": ["a:1"]}, "task": {"type": "master", "index": 0}}), ["unknown task type 'master'", "use 'chief'"]),
    ("empty-cluster", json.dumps({"cluster": {}, "task": {"type": "worker", "index": 0}}), ["empty cluster", "unset TF_CONFIG"]),
    ("duplicate-address", json.dumps({"cluster": {"worker": ["a:1", "a:1"]}, "task": {"type": "worker", "index": 0}}), ["'a:1' twice", "distinct port"]),
    ("string-index", json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "0"}}), ["task index '0'", "without quotes"]),
    ("no-port", json.dumps({"cluster": {"worker": ["hostonly"]}, "task": {"type": "worker", "index": 0}}), ["'hostonly'", "Add the port"]),
    ("two-chiefs", json.dumps({"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief", "index": 0}}), ["2 chief tasks", "workers"]),
]


@pytest.mark.parametrize("raw, phrases", [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_malformed_tf_config(raw, phrases):
    with pytest.raises(ClusterConfigError) as caught:
        detect_cluster({"TF_CONFIG": raw})
    message = str(caught.value)
    assert "Received: TF_CONFIG=" in message
    for phrase in phrases:
        assert phrase in message, message


# --------------------------------------------------------------------------- cluster managers

VERTEX_CLUSTER_SPEC = json.dumps(
    {
        "cluster": {
            "workerpool0": ["cmle-training-workerpool0-8c5c3b1a7f-0:2222"],
            "workerpool1": ["cmle-training-workerpool1-8c5c3b1a7f-0:2222", "cmle-training-workerpool1-8c5c3b1a7f-1:2222"],
        },
        "environment": "cloud",
        "task": {"type": "workerpool1", "index": 1, "trial": ""},
        "job": '{"python_module":"trainer.task","package_uris":["gs://bucket/trainer.tar.gz"]}',
    }
)


def test_vertex_ai_cluster_spec():
    info = detect_cluster({"CLUSTER_SPEC": VERTEX_CLUSTER_SPEC, "CLOUD_ML_JOB_ID": "123"})
    assert info.source == "CLUSTER_SPEC"
    assert (info.task_type, info.task_index, info.num_workers, info.num_ps) == ("worker", 1, 3, 0)
    assert info.cluster_spec["chief"] == ["cmle-training-workerpool0-8c5c3b1a7f-0:2222"]
    assert not info.is_chief


def test_vertex_ai_ps_pool():
    spec = json.loads(VERTEX_CLUSTER_SPEC)
    spec["cluster"]["workerpool2"] = ["cmle-training-workerpool2-8c5c3b1a7f-0:2222"]
    spec["task"] = {"type": "workerpool0", "index": 0}
    info = detect_cluster({"CLUSTER_SPEC": json.dumps(spec)})
    assert (info.task_type, info.num_ps, info.is_chief) == ("chief", 1, True)


def test_sagemaker_hosts():
    env = {
        "SM_HOSTS": '["algo-1","algo-2","algo-3"]',
        "SM_CURRENT_HOST": "algo-3",
        "SM_NUM_GPUS": "0",
        "SM_TRAINING_ENV": "{}",
    }
    info = detect_cluster(env)
    assert info.source == "SM_HOSTS"
    assert info.cluster_spec == {"worker": ["algo-1:2222", "algo-2:2222", "algo-3:2222"]}
    assert (info.task_index, info.is_chief) == (2, False)
    single = detect_cluster({"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-1"})
    assert single.num_workers == 1


SLURM_ENV = {
    "SLURM_JOB_ID": "4242",
    "SLURM_PROCID": "3",
    "SLURM_LOCALID": "1",
    "SLURM_STEP_NODELIST": "gpu-node[07-08]",
    "SLURM_STEP_TASKS_PER_NODE": "2(x2)",
    "SLURM_STEP_NUM_TASKS": "4",
    "SLURM_NTASKS": "4",
}


def test_slurm_step(tensorflow_imported):
    info = detect_cluster(SLURM_ENV)
    assert info.source == "SLURM"
    assert info.cluster_spec == {"worker": ["gpu-node07:8888", "gpu-node07:8889", "gpu-node08:8888", "gpu-node08:8889"]}
    assert (info.task_index, info.num_workers, info.is_chief) == (3, 4, False)


def test_slurm_agrees_with_tensorflow_resolver(tensorflow_imported, monkeypatch):
    """TF's resolver pairs tasks with GPUs; given 2 GPUs per node it must agree with ours."""
    import tensorflow as tf

    for key, value in SLURM_ENV.items():
        monkeypatch.setenv(key, value)
    resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
        jobs={"worker": 4}, gpus_per_node=2, gpus_per_task=1, auto_set_gpu=False
    )
    info = detect_cluster(SLURM_ENV)
    assert resolver.cluster_spec().as_dict() == info.cluster_spec
    assert (resolver.task_type, resolver.task_id) == (info.task_type, info.task_index)


def test_tf_config_wins_over_other_managers():
    env = {
        "TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}}),
        "CLUSTER_SPEC": VERTEX_CLUSTER_SPEC,
        **SLURM_ENV,
    }
    assert detect_cluster(env).source == "TF_CONFIG"
    assert detect_cluster({"CLUSTER_SPEC": VERTEX_CLUSTER_SPEC, **SLURM_ENV}).source == "CLUSTER_SPEC"


@pytest.mark.parametrize(
    "env, phrase",
    [
        ({"CLUSTER_SPEC": "{oops"}, "CLUSTER_SPEC is not valid JSON"),
        ({"CLUSTER_SPEC": json.dumps({"cluster": {"pool9": ["a:1"]}, "task": {"type": "pool9", "index": 0}})}, "not Vertex AI pools"),
        ({"SM_HOSTS": "algo-1", "SM_CURRENT_HOST": "algo-1"}, "not a JSON list"),
        ({"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-9"}, "not among SM_HOSTS"),
        ({**SLURM_ENV, "SLURM_PROCID": "7"}, "index 7 is out of range"),
        ({**SLURM_ENV, "SLURM_STEP_TASKS_PER_NODE": "2,2,2"}, "3 task counts"),
    ],
)
def test_malformed_manager_variables(tensorflow_imported, env, phrase):
    with pytest.raises(ClusterConfigError, match=phrase):
        detect_cluster(env)


def test_is_chief(tensorflow_imported):
    from autodist import is_chief

    assert is_chief({})
    assert is_chief({"SM_HOSTS": '["algo-1","algo-2"]', "SM_CURRENT_HOST": "algo-1"})
    assert not is_chief(SLURM_ENV)


def test_ps_tasks_need_a_chief():
    raw = json.dumps({"cluster": {"worker": ["a:1", "b:1"], "ps": ["c:1"]}, "task": {"type": "ps", "index": 0}})
    with pytest.raises(ClusterConfigError, match="'ps' tasks but no chief.*--ps adds one"):
        parse_tf_config(raw)


def test_sparse_cluster_keys_must_be_indices():
    raw = json.dumps({"sparseCluster": {"worker": {"a": "h:1"}}, "task": {"type": "worker", "index": 0}})
    with pytest.raises(ClusterConfigError, match="Expected task indices as keys"):
        parse_tf_config(raw)
