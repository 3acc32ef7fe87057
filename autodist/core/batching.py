"""Act: datasets brought to the global batch, sharded, and read the same way on every worker.

The batch arithmetic is :mod:`autodist.planning.global_batch` (plan layer) and what a dataset's graph says
is :mod:`autodist.upstream.tf_data` (the upstream surface: it reads the dataset's private graph); both are re-exported
here. This module builds
``tf.data`` pipelines: :func:`prepare_dataset` re-batches a dataset to the global batch,
:func:`arrays_to_dataset` turns arrays into one every worker reads in the same order, and
:func:`shared_shuffle_seed` agrees on a seed across workers.

Example:
    >>> import tensorflow as tf
    >>> dataset = prepare_dataset(tf.data.Dataset.range(10).batch(3), global_batch_size=4)
    >>> [len(batch) for batch in dataset]
    [4, 4, 2]
"""

from __future__ import annotations

from typing import Any

from autodist.errors import BatchSizeError
from autodist.planning.global_batch import adjust_global_batch
from autodist.upstream.tf_data import (
    dataset_batch_size,
    describe_batching,
    file_source_count,
    finite_cardinality,
    variable_length_parts,
)
from autodist.upstream.tf_runtime import global_seed
from autodist.process import STATE

__all__ = [
    "adjust_global_batch",
    "arrays_to_dataset",
    "dataset_batch_size",
    "file_source_count",
    "describe_batching",
    "prepare_dataset",
    "own_shard",
    "shard_policy",
    "shared_shuffle_seed",
]


def own_shard(dataset: Any) -> bool:
    """Whether ``dataset`` is this worker's own part of the data (auto-sharding set ``OFF``, as
    Ray Data's ``to_tf`` sets it): TensorFlow does not shard it, and autodist leaves it as it is."""
    import tensorflow as tf

    return dataset.options().experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.OFF


def shard_policy(dataset: Any, num_workers: int) -> tuple[Any, str]:
    """The auto-shard policy for ``dataset`` across ``num_workers`` workers, and the reason.

    ``FILE`` only when the dataset reads at least one file per worker; otherwise ``DATA`` (for
    in-memory data, FILE sharding makes TensorFlow warn and fall back; with fewer files than
    workers, some workers would get no data at all).
    """
    import tensorflow as tf

    policy = tf.data.experimental.AutoShardPolicy
    files = file_source_count(dataset)
    if files is not None and files >= num_workers:
        return policy.FILE, f"FILE sharding: the dataset reads {files} files for {num_workers} workers"
    if files is not None:
        return policy.DATA, f"DATA sharding: {files} file(s) are fewer than {num_workers} workers"
    return policy.DATA, "DATA sharding: the dataset is not read from files"


def prepare_dataset(
    dataset: Any,
    global_batch_size: int,
    num_workers: int = 1,
    *,
    drop_remainder: bool = False,
    rebatch: bool = True,
) -> Any:
    """Bring a dataset to ``global_batch_size`` and set its auto-shard policy.

    A batched dataset is re-batched (``rebatch`` keeps every sample: a smaller final batch holds
    the remainder, unless ``drop_remainder``, for TPUs' static shapes). An unbatched one is
    batched (:func:`describe_batching` tells which). ``rebatch=False`` leaves the batching alone
    (one replica, no ``batch_size``: Keras's own reading of the dataset). The auto-shard policy
    follows :func:`shard_policy`; a policy the user set explicitly is kept.

    Raises:
        BatchSizeError: for unbatched elements of variable shape, which ``batch`` cannot stack.
    """
    import tensorflow as tf

    batching = describe_batching(dataset)
    if rebatch and not batching.batched:
        _refuse_variable_length(dataset, global_batch_size)
        dataset = dataset.batch(global_batch_size, drop_remainder=drop_remainder)
    elif rebatch and (drop_remainder or batching.size != global_batch_size):
        dataset = dataset.rebatch(global_batch_size, drop_remainder=drop_remainder)
    if dataset.options().experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.AUTO:
        dataset = _sharded(dataset, shard_policy(dataset, num_workers)[0])
    return dataset


def _refuse_variable_length(dataset: Any, global_batch_size: int) -> None:
    parts = variable_length_parts(dataset)
    if parts:
        raise BatchSizeError(
            f"autodist was asked to batch a tf.data.Dataset of single samples to batch_size="
            f"{global_batch_size}, and its elements vary in shape ({', '.join(parts)}): batch() "
            "cannot stack them. Expected a batched dataset, or samples of one shape. Batch it "
            f"yourself, for example dataset.padded_batch({global_batch_size}) or "
            f"dataset.ragged_batch({global_batch_size}); autodist then re-batches it to the "
            "global batch."
        )


def _sharded(dataset: Any, policy: Any) -> Any:
    import tensorflow as tf

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = policy
    return dataset.with_options(options)


def arrays_to_dataset(
    x: Any,
    y: Any = None,
    sample_weight: Any = None,
    *,
    global_batch_size: int,
    shuffle: bool = True,
    seed: int = 0,
    validation_split: float = 0.0,
    drop_remainder: bool = False,
) -> tuple[Any, Any]:
    """In-memory arrays as ``(train, validation)`` datasets that every worker reads identically.

    For multi-worker training. Keras's own array adapter shuffles with a stateful op, so each
    worker would take its shard of a *different* order: some samples seen twice, others never.
    Here, as in Keras's adapter, the sample *indices* are shuffled and each batch is gathered
    from the arrays, so no worker holds a shuffle buffer of samples. The order of each epoch is
    a stateless function of ``(seed, epoch)``: the same on every worker that gets the same
    ``seed`` (see :func:`shared_shuffle_seed`), whatever the workers' own random seeds, and a
    new order every epoch. A shuffled dataset is therefore endless (one pass per epoch; the
    caller sets ``steps_per_epoch``); an unshuffled one is one pass. The batch is the global
    batch and the auto-shard policy is ``DATA``, so each global batch is the one a single
    process would train on. ``validation_split`` takes the last fraction, before shuffling, as
    Keras does.

    Returns:
        ``(train_dataset, validation_dataset or None)``.

    Example:
        >>> import numpy as np
        >>> train, _ = arrays_to_dataset(np.arange(10), global_batch_size=4, shuffle=False)
        >>> [batch.numpy().tolist() for batch in train]
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    """
    import math

    import tensorflow as tf

    data_sharding = tf.data.experimental.AutoShardPolicy.DATA

    def slice_all(structure: Any, start: int, stop: int | None) -> Any:
        return tf.nest.map_structure(lambda a: a[start:stop], structure)

    # Keras reads a list of arrays as the inputs of a multi-input model; tf.data would stack a
    # list into one tensor (and fail on inputs of different shapes), so it becomes a tuple.
    x = tuple(x) if isinstance(x, list) else x
    num_samples = int(tf.nest.flatten(x)[0].shape[0])
    parts = tuple(part for part in (x, y, sample_weight) if part is not None)
    validation = None
    if validation_split:
        split_at = int(math.floor(num_samples * (1.0 - validation_split)))
        validation_parts = tuple(None if p is None else slice_all(p, split_at, None) for p in parts)
        parts = tuple(None if p is None else slice_all(p, 0, split_at) for p in parts)
        validation = tf.data.Dataset.from_tensor_slices(_pack(validation_parts))
        validation = _sharded(validation.batch(global_batch_size, drop_remainder=drop_remainder), data_sharding)
        num_samples = split_at
    indices = _epoch_batches(num_samples, global_batch_size, drop_remainder=drop_remainder, shuffle=shuffle, seed=seed)
    data = tf.nest.map_structure(tf.convert_to_tensor, _pack(parts))
    train = tf.data.Dataset.zip((indices, tf.data.Dataset.from_tensors(data).repeat()))
    train = train.map(
        lambda batch, arrays: tf.nest.map_structure(lambda a: tf.gather(a, batch, axis=0), arrays),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    return _sharded(train, data_sharding), validation


def _epoch_batches(num_samples: int, batch_size: int, *, drop_remainder: bool, shuffle: bool, seed: int) -> Any:
    """Batches of sample indices, one pass per epoch: in order (one pass), or shuffled by
    ``(seed, epoch)`` without end, each epoch batched on its own (no batch spans two epochs)."""
    import tensorflow as tf

    if not shuffle:
        return tf.data.Dataset.range(num_samples).batch(batch_size, drop_remainder=drop_remainder)

    def one_epoch(epoch: Any) -> Any:
        order = tf.random.experimental.stateless_shuffle(
            tf.range(num_samples, dtype=tf.int64), seed=tf.stack([tf.constant(seed, tf.int64), epoch])
        )
        return tf.data.Dataset.from_tensor_slices(order).batch(batch_size, drop_remainder=drop_remainder)

    # Endless, and said so: with an unknown size, multi-worker input all-reduces "has data" each step.
    endless = tf.data.experimental.assert_cardinality(tf.data.INFINITE_CARDINALITY)
    return tf.data.Dataset.counter().flat_map(one_epoch).apply(endless)


def shared_shuffle_seed(strategy: Any = None) -> int:
    """A shuffle seed every worker agrees on: the first replica's draw, shared by one all-reduce.

    The draw comes from TensorFlow's global seed and the number of draws before it in this
    process, when a global seed is set (``keras.utils.set_random_seed``: the same orders on every
    run, and a second ``fit`` in a run gets new ones, as with ``model.fit``), else it is random
    (a new order each run). Under a multi-worker strategy every replica but the first adds 0 to a
    sum, so all workers get the first replica's draw; every worker must call it at the same
    point. With ``strategy=None`` (one process), it returns the draw.

    Example:
        >>> import tensorflow as tf
        >>> tf.random.set_seed(5)
        >>> shared_shuffle_seed() != shared_shuffle_seed()  # a new draw for each fit
        True
    """
    import secrets

    import tensorflow as tf

    seed, draw = global_seed(), next(STATE.shuffle_draws)  # each fit of a run draws anew
    mine = 1 + (secrets.randbits(30) if seed is None else (int(seed) * 2654435761 + draw * 40503) % (2**30))
    if strategy is None:
        return mine

    def first_replica_only() -> Any:
        first = tf.distribute.get_replica_context().replica_id_in_sync_group == 0
        return tf.where(first, tf.constant(mine, tf.int64), tf.constant(0, tf.int64))

    agreed = tf.function(lambda: strategy.reduce("SUM", strategy.run(first_replica_only), axis=None))
    return int(agreed())


def repeat_across_epochs(dataset: Any) -> tuple[Any, int | None]:
    """``(dataset.repeat(), batches per pass)`` for a finite dataset of known size, else ``(dataset, None)``.

    For multi-worker training. Keras 3 creates a new distributed iterator every epoch, and a finite
    one also all-reduces a "has data" flag across workers every step. An endless dataset with
    ``steps_per_epoch`` set to one pass keeps one iterator for the whole run and needs no flag.
    Each epoch is still one pass: the same batches, in the same order for unshuffled data, and a
    ``shuffle(reshuffle_each_iteration=True)`` still reshuffles each pass. ``benchmarks/scaling.py``
    measures both ways on 2 loopback workers.

    Example:
        >>> import tensorflow as tf
        >>> endless, steps = repeat_across_epochs(tf.data.Dataset.range(10).batch(4))
        >>> steps, int(endless.cardinality()) == int(tf.data.INFINITE_CARDINALITY)
        (3, True)
    """
    steps = finite_cardinality(dataset)
    if not steps:
        return dataset, None
    return dataset.repeat(), steps


def _pack(parts: tuple[Any, ...]) -> Any:
    return parts[0] if len(parts) == 1 else parts
