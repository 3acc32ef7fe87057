"""TF_CONFIG parsing and validation, checked against TensorFlow's own TFConfigClusterResolver."""

from __future__ import annotations

import json

import pytest

from autodist.cluster import ClusterInfo, detect_cluster, parse_tf_config
from autodist.errors import ClusterConfigError

VALID = [
    {"cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}, "task": {"type": "worker", "index": 1}},
    {"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"]}, "task": {"type": "chief", "index": 0}},
    {"cluster": {"chief": ["h0:1"], "worker": ["h1:1"], "ps": ["h2:1", "h3:1"]}, "task": {"type": "ps", "index": 1}},
    {"cluster": {"worker": ["h1:1", "h2:1"], "evaluator": ["h3:1"]}, "task": {"type": "evaluator", "index": 0}},
]


@pytest.mark.parametrize("config", VALID, ids=["2-workers", "chief", "ps", "evaluator"])
def test_agrees_with_tensorflow_resolver(config, monkeypatch):
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
