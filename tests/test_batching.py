"""Global batch adjustment and dataset re-batching."""

from __future__ import annotations

import pytest

from autodist.batching import adjust_global_batch, dataset_batch_size, prepare_dataset
from autodist.errors import BatchSizeError


@pytest.mark.parametrize(
    "requested, replicas, expected",
    [(64, 2, 64), (33, 2, 34), (65, 2, 66), (3, 2, 4), (1, 2, 2), (1, 8, 8), (9, 4, 8), (10, 4, 12), (11, 4, 12), (100, 8, 104), (5, 1, 5)],
)
def test_nearest_multiple_never_zero(requested, replicas, expected):
    decision = adjust_global_batch(requested, replicas)
    assert decision.global_batch_size == expected
    assert decision.per_replica_batch_size * replicas == expected
    assert (decision.warning is None) == (requested == expected)


def test_warning_names_both_numbers_and_says_nothing_is_dropped():
    warning = adjust_global_batch(33, 2).warning
    assert "batch_size=33" in warning and "34" in warning and "2 replicas" in warning
    assert "No samples are dropped" in warning


@pytest.mark.parametrize("bad", [0, -4, 2.5, "64", None, True])
def test_bad_batch_sizes(bad):
    with pytest.raises(BatchSizeError, match="positive|at least 1"):
        adjust_global_batch(bad, 2)


def test_dataset_rebatched_keeps_every_sample_and_sets_data_sharding():
    import numpy as np
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices(np.arange(101)).batch(33).prefetch(2)
    assert dataset_batch_size(dataset) == 33
    prepared = prepare_dataset(dataset, 34)
    sizes = [int(batch.shape[0]) for batch in prepared]
    assert sizes == [34, 34, 33]
    assert sorted(np.concatenate(list(prepared.as_numpy_iterator())).tolist()) == list(range(101))
    policy = prepared.options().experimental_distribute.auto_shard_policy
    assert policy == tf.data.experimental.AutoShardPolicy.DATA


def test_explicit_shard_policy_is_kept():
    import tensorflow as tf

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    dataset = tf.data.Dataset.range(8).batch(4).with_options(options)
    prepared = prepare_dataset(dataset, 4)
    assert prepared.options().experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.OFF


def test_unbatched_dataset_has_no_batch_size():
    import tensorflow as tf

    assert dataset_batch_size(tf.data.Dataset.range(8)) is None
