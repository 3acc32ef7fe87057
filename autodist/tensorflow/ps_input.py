"""The input of parameter-server training: one pipeline per worker, rebuilt there from arrays or
from the dataset's graph, and the chief's batches of sample indices.

Used by :mod:`autodist.tensorflow.parameter_server` on the chief. The workers run the functions made here,
so they capture no state of the chief's (the dataset travels as its serialised graph).

Example:
    >>> steps_per_epoch(1000, 64)
    16
    >>> batches = index_batches(5, 2, shuffle=False, seed=0)
    >>> [next(batches).tolist() for _ in range(3)]
    [[0, 1], [2, 3], [4]]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from autodist.upstream.tf_data import deserialize, is_batched, samples_per_pass, serialize
from autodist.errors import AutodistError

__all__ = [
    "dataset_fn_for",
    "first_batch",
    "gather",
    "index_batches",
    "pass_samples",
    "steps",
    "steps_per_epoch",
    "whole_arrays_fn",
]


def steps_per_epoch(num_samples: int, global_batch_size: int) -> int:
    """Steps that cover every sample once: ``ceil(num_samples / global_batch_size)``."""
    return max(1, math.ceil(num_samples / global_batch_size))


def _samples(dataset: Any) -> Any:
    """The dataset one sample per element: unbatched if it is batched, as it is otherwise."""
    return dataset.unbatch() if is_batched(dataset) else dataset


def dataset_fn_for(
    x: Any, y: Any, sample_weight: Any, *, global_batch_size: int, shuffle: bool, seed: int = 0
) -> Callable[[Any], Any]:
    """A ``dataset_fn(input_context)`` that each worker calls to build its own input pipeline.

    Each worker reads its own shard (``input_pipeline_id``), shuffled with its own seed, repeated
    without end: the coordinator decides how many steps make an epoch.
    """
    import tensorflow as tf

    if isinstance(x, tf.data.Dataset):
        # The workers run this function, so it must not capture the chief's dataset (workers
        # then fail with "Failed copying input tensor from /job:chief"): the pipeline travels as
        # its serialised graph, the way ClusterCoordinator.create_per_worker_dataset sends one.
        samples = _samples(x)
        graph, spec = serialize(samples), samples.element_spec

        def from_dataset(context: Any) -> Any:
            dataset = deserialize(graph, spec)
            shard = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
            return shard.repeat().batch(global_batch_size).prefetch(2)

        return from_dataset
    data = _arrays(x, y, sample_weight)
    num_samples = int(tf.nest.flatten(data)[0].shape[0])

    def from_arrays(context: Any) -> Any:
        # The shard's indices are shuffled (a buffer of ints, not of samples), then gathered.
        indices = tf.data.Dataset.range(num_samples).shard(context.num_input_pipelines, context.input_pipeline_id)
        if shuffle:
            indices = indices.shuffle(num_samples, seed=seed + context.input_pipeline_id, reshuffle_each_iteration=True)
        batches = tf.data.Dataset.zip(
            (indices.repeat().batch(global_batch_size), tf.data.Dataset.from_tensors(data).repeat())
        )
        return batches.map(gather).prefetch(2)

    return from_arrays


def _arrays(x: Any, y: Any, sample_weight: Any) -> Any:
    parts = tuple(part for part in (tuple(x) if isinstance(x, list) else x, y, sample_weight) if part is not None)
    return parts[0] if len(parts) == 1 else parts


def gather(indices: Any, data: Any) -> Any:
    import tensorflow as tf

    return tf.nest.map_structure(lambda array: tf.gather(array, indices, axis=0), data)


def whole_arrays_fn(x: Any, y: Any, sample_weight: Any) -> Callable[[Any], Any]:
    """A ``dataset_fn`` whose every element is all the arrays: each worker holds one copy, and
    each step gathers the batch the chief chose (see :func:`index_batches`)."""
    import tensorflow as tf

    data = _arrays(x, y, sample_weight)
    return lambda context: tf.data.Dataset.from_tensors(data).repeat()


def index_batches(num_samples: int, batch_size: int, *, shuffle: bool, seed: int) -> Iterator[Any]:
    """The chief's batches of sample indices, without end: pass after pass, each pass every
    sample once, in order or in a new seeded order, its last batch the remainder (as Keras).

    Example:
        >>> batches = index_batches(5, 2, shuffle=False, seed=0)
        >>> [next(batches).tolist() for _ in range(4)]
        [[0, 1], [2, 3], [4], [0, 1]]
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(num_samples) if shuffle else np.arange(num_samples)
        for start in range(0, num_samples, batch_size):
            yield order[start : start + batch_size]


def first_batch(x: Any, y: Any, sample_weight: Any, size: int) -> tuple[Any, Any, Any]:
    import tensorflow as tf

    if isinstance(x, tf.data.Dataset):
        batch = next(iter(_samples(x).batch(size).take(1)))
        batch = batch if isinstance(batch, tuple) else (batch,)
        return tuple(batch) + (None,) * (3 - len(batch))  # type: ignore[return-value]
    head = lambda part: None if part is None else tf.nest.map_structure(lambda a: a[:size], part)  # noqa: E731
    return head(x), head(y), head(sample_weight)


def pass_samples(x: Any) -> int | None:
    """Samples in one pass of ``x``, from its shape or its graph (never by reading it); ``None``
    when unknown (infinite, ``filter``, a batched dataset whose batch step's input size is unknown)."""
    import tensorflow as tf

    if not isinstance(x, tf.data.Dataset):
        return int(tf.nest.flatten(x)[0].shape[0])
    return samples_per_pass(x)


def steps(x: Any, global_batch_size: int, given: int | None) -> int:
    if given is not None:
        return int(given)
    count = pass_samples(x)
    if count is None:
        raise AutodistError(
            "Parameter-server training needs the number of steps per epoch, and the dataset's size "
            "is unknown from its graph (infinite, filter(), or batched from a source of unknown "
            "size); autodist does not read a whole pass just to count it. Expected arrays, a "
            "finite dataset of known size, or steps_per_epoch=. Pass steps_per_epoch=<steps>, or "
            "give the dataset its size with tf.data.experimental.assert_cardinality(n)."
        )
    return steps_per_epoch(count, global_batch_size)
