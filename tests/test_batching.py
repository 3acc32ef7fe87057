"""Global batch adjustment and dataset re-batching."""

from __future__ import annotations

import numpy as np
import pytest

from autodist.core.batching import adjust_global_batch, dataset_batch_size, prepare_dataset
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
    with pytest.raises(BatchSizeError, match=f"an integer from 1 to {2**31 - 1}.*Received: batch_size="):
        adjust_global_batch(bad, 2)


def test_dataset_rebatched_keeps_every_sample_and_sets_data_sharding(tensorflow_imported):
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


def test_explicit_shard_policy_is_kept(tensorflow_imported):
    import tensorflow as tf

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    dataset = tf.data.Dataset.range(8).batch(4).with_options(options)
    prepared = prepare_dataset(dataset, 4)
    assert prepared.options().experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.OFF


def test_unbatched_dataset_has_no_batch_size(tensorflow_imported):
    import tensorflow as tf

    assert dataset_batch_size(tf.data.Dataset.range(8)) is None


def test_only_a_repeated_reshuffling_shuffle_left_after_steps_per_epoch_is_read_ahead(tensorflow_imported):
    """What a later fit is told of (READ_AHEAD_NOTE; tests/test_reshuffled_dataset.py shows it on 2
    replicas): the pipeline's own shuffle objects, whatever steps come after them."""
    import tensorflow as tf

    from autodist.core.input_kinds import classify
    from autodist.core.inputs import shuffles_read_ahead
    from autodist.planning.plans import Plan
    from autodist.planning.strategy_types import StrategyKind

    shuffled = tf.data.Dataset.range(8).shuffle(8)
    repeated = classify(shuffled.repeat().batch(2).map(lambda x: x))
    assert [type(s).__name__ for s in repeated.repeated_shuffles()] == [type(shuffled).__name__]
    assert repeated.repeated_shuffles()[0] is shuffled  # the same object a later pipeline of it holds
    kept = tf.data.Dataset.range(8).shuffle(8, reshuffle_each_iteration=False).repeat().batch(2)
    outside = tf.data.Dataset.range(8).repeat().shuffle(8).batch(2)  # one shuffle over every pass: drawn once
    assert classify(kept).repeated_shuffles() == classify(outside).repeated_shuffles() == ()
    assert classify(np.ones((8, 2))).repeated_shuffles() == ()
    # Whatever a dataset calls its inputs: sample_from_datasets (the TensorFlow tutorial "Classification
    # on imbalanced data" resamples two shuffle().repeat()s), zip of a nest, concatenate.
    positives, negatives = tf.data.Dataset.range(4).shuffle(4), tf.data.Dataset.range(4, 8).shuffle(4)
    sampled = tf.data.Dataset.sample_from_datasets([positives.repeat(), negatives.repeat()], weights=[0.5, 0.5])
    assert classify(sampled.batch(2).prefetch(2)).repeated_shuffles() == (negatives, positives)
    zipped = tf.data.Dataset.zip((tf.data.Dataset.range(3), {"a": (negatives.repeat(),)}))
    assert classify(zipped.batch(2)).repeated_shuffles() == (negatives,)
    assert classify(tf.data.Dataset.range(3).concatenate(positives.repeat())).repeated_shuffles() == (positives,)
    two, one = Plan(StrategyKind.MIRRORED, 2), Plan(StrategyKind.MIRRORED, 1)
    steps = {"steps_per_epoch": 3}
    assert shuffles_read_ahead(repeated, two, steps) == repeated.repeated_shuffles()
    assert shuffles_read_ahead(repeated, two, {}) == shuffles_read_ahead(repeated, one, steps) == ()


@pytest.fixture
def record_files(tensorflow_imported, tmp_path):
    import tensorflow as tf

    paths = []
    for index in range(3):
        path = str(tmp_path / f"part-{index}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            writer.write(b"sample")
        paths.append(path)
    return paths


def test_shard_policy_file_only_with_enough_files(record_files, tmp_path):
    import tensorflow as tf

    from autodist.core.batching import file_source_count, shard_policy

    policy = tf.data.experimental.AutoShardPolicy
    direct = tf.data.TFRecordDataset(record_files).batch(2)
    listed = tf.data.Dataset.list_files(str(tmp_path / "*.tfrecord"), shuffle=False).interleave(tf.data.TFRecordDataset).batch(2)
    in_memory = tf.data.Dataset.from_tensor_slices(["a", "b", "c"]).batch(2)
    assert (file_source_count(direct), file_source_count(listed), file_source_count(in_memory)) == (3, 3, None)
    assert shard_policy(direct, 2)[0] == policy.FILE
    assert shard_policy(listed, 3)[0] == policy.FILE
    assert shard_policy(direct, 4) == (policy.DATA, "DATA sharding: 3 file(s) are fewer than 4 workers")
    assert shard_policy(in_memory, 2)[0] == policy.DATA
    prepared = prepare_dataset(direct, 2, num_workers=2)
    assert prepared.options().experimental_distribute.auto_shard_policy == policy.FILE


def test_repeat_across_epochs_keeps_the_batches_and_order(tensorflow_imported):
    import tensorflow as tf

    from autodist.core.batching import repeat_across_epochs

    finite = tf.data.Dataset.range(10).shuffle(10, seed=3, reshuffle_each_iteration=True).batch(4)
    endless, steps = repeat_across_epochs(finite)
    assert steps == 3
    assert int(endless.cardinality()) == int(tf.data.INFINITE_CARDINALITY)
    batches = [b.numpy().tolist() for b in endless.take(6)]
    assert [len(b) for b in batches] == [4, 4, 2, 4, 4, 2]  # the partial batch ends each pass
    assert sorted(sum(batches[:3], [])) == sorted(sum(batches[3:], [])) == list(range(10))
    assert batches[:3] != batches[3:]  # reshuffled each pass, as per-epoch iterators would be
    unknown = tf.data.Dataset.range(10).filter(lambda v: v % 2 == 0)
    assert repeat_across_epochs(unknown) == (unknown, None)
    assert repeat_across_epochs(tf.data.Dataset.range(3).repeat())[1] is None


def test_a_list_of_arrays_stays_the_inputs_of_a_multi_input_model(tensorflow_imported):
    """Keras reads x=[x1, x2] as two inputs; tf.data would stack the list into one tensor, which
    fails for inputs of different widths (multi-worker and TPU runs build this dataset)."""
    import tensorflow as tf

    from autodist.core.batching import arrays_to_dataset

    x = [np.zeros((10, 3), "float32"), np.ones((10, 5), "float32")]
    train, _ = arrays_to_dataset(x, np.arange(10), global_batch_size=4, shuffle=False)
    (first, second), labels = next(iter(train))
    assert (tuple(first.shape), tuple(second.shape), labels.numpy().tolist()) == ((4, 3), (4, 5), [0, 1, 2, 3])
    assert isinstance(train.element_spec[0], tuple) and isinstance(train.element_spec[0][0], tf.TensorSpec)


def _kinds_of_datasets():
    import tensorflow as tf

    samples = tf.data.Dataset.from_tensor_slices((np.zeros((10, 3), "float32"), np.zeros(10, "int32")))

    def generator(*specs):
        return tf.data.Dataset.from_generator(lambda: iter(()), output_signature=specs)

    spec = tf.TensorSpec
    return {
        "batch(4).map": (samples.batch(4).map(lambda x, y: (x, y)), True, 4),
        "padded_batch(3).prefetch": (samples.padded_batch(3).prefetch(1), True, 3),
        "batch(4).rebatch(2)": (samples.batch(4).rebatch(2), True, 2),
        "batch(4).map.unbatch()": (samples.batch(4).map(lambda x, y: (x, y)).unbatch(), False, None),
        "flat_map(slices)": (samples.batch(5).flat_map(lambda x, y: tf.data.Dataset.from_tensor_slices((x, y))), False, None),
        "window(2)": (samples.window(2), False, None),
        "from_tensor_slices": (samples, False, None),
        "generator of batches of 16": (generator(spec((16, 3)), spec((16,))), True, 16),
        "generator of batches, size unknown": (generator(spec((None, 3)), spec((None,))), True, None),
        "generator of variable-length samples, scalar label": (generator(spec((None,), tf.int32), spec(())), False, None),
        "generator of variable-length samples, sequence label": (generator(spec((None,)), spec((None,))), False, None),
        "zip of batched": (tf.data.Dataset.zip((samples.batch(2), samples.batch(2))), True, 2),
    }


#: The names of :func:`_kinds_of_datasets` (collecting them builds no dataset: no TensorFlow).
DATASET_KINDS = (
    "batch(4).map", "padded_batch(3).prefetch", "batch(4).rebatch(2)", "batch(4).map.unbatch()", "flat_map(slices)",
    "window(2)", "from_tensor_slices", "generator of batches of 16", "generator of batches, size unknown",
    "generator of variable-length samples, scalar label", "generator of variable-length samples, sequence label",
    "zip of batched",
)


@pytest.mark.parametrize("name", DATASET_KINDS)
def test_describe_batching_reads_the_chain_and_the_spec(tensorflow_imported, name):
    from autodist.core.batching import describe_batching

    kinds = _kinds_of_datasets()
    assert tuple(kinds) == DATASET_KINDS
    dataset, batched, size = kinds[name]
    found = describe_batching(dataset)
    assert (found.batched, found.size) == (batched, size), found.evidence


def test_variable_length_samples_get_an_error_that_names_padded_batch(tensorflow_imported):
    import tensorflow as tf

    ragged = tf.data.Dataset.from_generator(
        lambda: iter(()), output_signature=(tf.TensorSpec((None,), tf.int32), tf.TensorSpec((), tf.int32))
    )
    with pytest.raises(BatchSizeError, match=r"padded_batch\(8\)"):
        prepare_dataset(ragged, 8)


def test_batches_of_unknown_size_are_left_alone_without_rebatch(tensorflow_imported):
    import tensorflow as tf

    batches = tf.data.Dataset.from_generator(
        lambda: (np.zeros((5, 3), "float32") for _ in range(2)), output_signature=tf.TensorSpec((None, 3))
    )
    assert [tuple(b.shape) for b in prepare_dataset(batches, 32, rebatch=False)] == [(5, 3), (5, 3)]


def test_shuffled_arrays_every_sample_once_per_epoch_a_new_order_each_epoch_the_same_for_a_seed(tensorflow_imported):
    from autodist.core.batching import arrays_to_dataset

    def epochs(seed, count=3):
        train, _ = arrays_to_dataset(np.arange(10), global_batch_size=4, shuffle=True, seed=seed)
        batches = [b.numpy().tolist() for b in train.take(3 * count)]
        return [sum(batches[i : i + 3], []) for i in range(0, 3 * count, 3)], [len(b) for b in batches]

    orders, sizes = epochs(seed=11)
    assert sizes == [4, 4, 2] * 3  # no batch spans two epochs
    assert all(sorted(order) == list(range(10)) for order in orders)
    assert len({tuple(order) for order in orders}) == 3
    assert epochs(seed=11)[0] == orders
    assert epochs(seed=12)[0] != orders


def test_shared_shuffle_seed_follows_the_global_seed_else_differs_each_run(tensorflow_imported, fresh_state):
    import itertools

    import tensorflow as tf

    from autodist.core.batching import shared_shuffle_seed

    def a_run(global_seed):  # a fresh process: its fits draw 0, 1, 2
        fresh_state.shuffle_draws = itertools.count()
        tf.random.set_seed(global_seed)
        return [shared_shuffle_seed() for _ in range(3)]

    try:
        first = a_run(5)
        assert a_run(5) == first and len(set(first)) == 3  # same orders each run, new ones per fit
        assert a_run(6) != first
        assert a_run(None) != a_run(None)  # no global seed: random
    finally:
        tf.random.set_seed(None)


def test_samples_in_a_pass_come_from_the_graph_only_when_it_tells(tensorflow_imported):
    import tensorflow as tf

    from autodist.core.batching import describe_batching

    samples = tf.data.Dataset.from_tensor_slices(np.zeros((10, 3), "float32"))
    assert describe_batching(samples.batch(4).map(lambda x: x).prefetch(1)).samples == 10
    assert describe_batching(samples.batch(4).rebatch(2)).samples is None  # rebatch's input is batches
    assert describe_batching(samples.batch(4).take(2)).samples is None  # take changed the batch count
    assert describe_batching(samples.filter(lambda x: True).batch(4)).samples is None


def test_a_batched_dataset_with_another_batch_size_is_rebatched_and_says_what_model_fit_does(tensorflow_imported):
    """model.fit(ds.batch(32), batch_size=64) steps through batches of 32; autodist.fit re-batches
    to the global batch 64, and warns with both numbers. The same size, or no batch_size: no word."""
    import tensorflow as tf

    from autodist.core.input_kinds import classify
    from autodist.core.inputs import prepare_input
    from autodist.planning.planner import plan
    from tests.conftest import make_snapshot

    data = tf.data.Dataset.from_tensor_slices((np.zeros((128, 3), "float32"), np.zeros((128, 1), "float32"))).batch(32)
    ready = prepare_input(classify(data), plan(make_snapshot(), batch_size=64), {}, batch_given=True)
    assert [int(x.shape[0]) for x, _ in ready.data.raw] == [64, 64]
    assert len(ready.warnings) == 1 and "batched by 32, and batch_size=64" in ready.warnings[0]
    assert "model.fit ignores batch_size" in ready.warnings[0] and "pass no batch_size" in ready.warnings[0]
    assert not prepare_input(classify(data), plan(make_snapshot(), batch_size=32), {}, batch_given=True).warnings
    assert not prepare_input(classify(data), plan(make_snapshot(), batch_size=32), {}, batch_given=False).warnings
