"""Global batch sizes that divide evenly across replicas, and datasets re-batched to them.

The user's ``batch_size`` is always the **global** batch: the samples in one step across all
replicas. Keras 3 averages the *first* batch across replicas to build the model, so a first batch
that does not split evenly crashes under MirroredStrategy (``AddN must have the same size and
shape``). :func:`adjust_global_batch` moves the batch to the nearest multiple of the replica count
and says so. No sample is dropped: an uneven *last* batch is fine, and is kept.

Example:
    >>> d = adjust_global_batch(33, num_replicas=2)
    >>> (d.global_batch_size, d.per_replica_batch_size)
    (34, 17)
    >>> print(d.warning)  # doctest: +ELLIPSIS
    batch_size=33 is not divisible by 2 replicas; using the nearest multiple, 34 (17 per replica)...
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

from autodist.errors import BatchSizeError

__all__ = [
    "BatchDecision",
    "adjust_global_batch",
    "arrays_to_dataset",
    "dataset_batch_size",
    "file_source_count",
    "looks_batched",
    "prepare_dataset",
    "shard_policy",
]

#: Keras's own default when ``fit`` gets no ``batch_size``.
KERAS_DEFAULT_BATCH_SIZE = 32


@dataclass(frozen=True)
class BatchDecision:
    """The batch size autodist will use, and why."""

    requested_batch_size: int
    global_batch_size: int
    per_replica_batch_size: int
    warning: str | None = None


def validate_batch_size(batch_size: Any, *, name: str = "batch_size") -> int:
    """Return ``batch_size`` as an int, or raise :class:`BatchSizeError` with the fix."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
        if isinstance(batch_size, float) and batch_size.is_integer() and batch_size > 0:
            return int(batch_size)
        raise BatchSizeError(
            f"{name} must be a positive integer (Received: {name}={batch_size!r} of type "
            f"{type(batch_size).__name__}). It is the global batch: the samples in one training "
            f"step across all replicas. Pass an int such as {name}=64."
        )
    if batch_size <= 0:
        raise BatchSizeError(
            f"{name} must be at least 1 (Received: {name}={batch_size}). It is the global batch, "
            f"split across replicas. Pass a positive int such as {name}=64."
        )
    return int(batch_size)


def adjust_global_batch(
    batch_size: Any, num_replicas: int, *, per_replica_multiple: int = 1, drop_remainder: bool = False
) -> BatchDecision:
    """Move ``batch_size`` to the nearest multiple of ``num_replicas`` (never 0).

    Ties go up, so no replica's share shrinks. The warning names both numbers. With
    ``per_replica_multiple`` (8 on TPUs), each replica's share is also a multiple of it.

    Args:
        batch_size: the requested global batch.
        num_replicas: replicas that share each step.
        per_replica_multiple: the multiple each replica's share must be.
        drop_remainder: whether the last partial batch will be dropped (only changes the words).

    Raises:
        BatchSizeError: when ``batch_size`` is not a positive integer.

    Example:
        >>> adjust_global_batch(64, 4).per_replica_batch_size
        16
        >>> adjust_global_batch(1, 2).global_batch_size
        2
    """
    requested = validate_batch_size(batch_size)
    unit = num_replicas * per_replica_multiple
    if requested % unit == 0:
        return BatchDecision(requested, requested, requested // num_replicas)
    lower = (requested // unit) * unit
    upper = lower + unit
    adjusted = upper if lower == 0 or (upper - requested) <= (requested - lower) else lower
    what = (
        f"not divisible by {num_replicas} replicas"
        if per_replica_multiple == 1
        else f"not a multiple of {unit} ({num_replicas} replicas x {per_replica_multiple} per replica)"
    )
    remainder = (
        "The last partial batch of each epoch is dropped (static shapes); fit says how many samples."
        if drop_remainder
        else "No samples are dropped: the last batch of each epoch holds the remainder."
    )
    warning = (
        f"batch_size={requested} is {what}; using the nearest multiple, {adjusted} "
        f"({adjusted // num_replicas} per replica). {remainder} Pass a multiple of {unit} to "
        "silence this."
    )
    return BatchDecision(requested, adjusted, adjusted // num_replicas, warning)


def dataset_batch_size(dataset: Any) -> int | None:
    """The batch size a batched ``tf.data.Dataset`` was built with, or ``None`` if unknown.

    It follows the chain of datasets back (through ``prefetch``, ``map``, ``cache``, ...) to the
    nearest ``batch``. It reads no data.
    """
    node = dataset
    for _ in range(64):
        size = getattr(node, "_batch_size", None)
        if size is not None:
            try:
                value = int(size.numpy()) if hasattr(size, "numpy") else int(size)
            except (TypeError, ValueError):
                return None
            return value if value > 0 else None
        node = getattr(node, "_input_dataset", None)
        if node is None:
            return None
    return None


_READER_OPS = ("TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset")


def _children(node: Any) -> list[Any]:
    found = [getattr(node, name, None) for name in ("_input_dataset", "_dataset")]
    found += list(getattr(node, "_input_datasets", None) or [])
    return [child for child in found if child is not None]


def _reads_files(function: Any) -> bool:
    try:
        graph_def = function.function.graph.as_graph_def()
    except AttributeError:
        return False
    ops = {node.op for node in graph_def.node}
    ops |= {node.op for f in graph_def.library.function for node in f.node_def}
    return any(op.startswith(_READER_OPS) for op in ops)


def _finite_cardinality(dataset: Any) -> int | None:
    try:
        count = int(dataset.cardinality())
    except Exception:
        return None
    return count if count >= 0 else None


def file_source_count(dataset: Any) -> int | None:
    """How many files a dataset reads, when its graph says so; ``None`` for in-memory data.

    It recognises file readers (``TFRecordDataset(files)``, ``TextLineDataset``,
    ``FixedLengthRecordDataset``) and ``interleave`` over a list of files (``list_files``).
    """
    stack, seen = [dataset], 0
    while stack and seen < 256:
        node, seen = stack.pop(), seen + 1
        filenames = getattr(node, "_filenames", None)
        if filenames is not None and hasattr(filenames, "cardinality"):
            return _finite_cardinality(filenames)
        function = getattr(node, "_map_func", None)
        if "Interleave" in type(node).__name__ and function is not None and _reads_files(function):
            return _finite_cardinality(node._input_dataset)
        stack.extend(_children(node))
    return None


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


def looks_batched(dataset: Any) -> bool:
    """Whether a dataset's elements have an unknown leading dimension, as batched elements do."""
    import tensorflow as tf

    specs = tf.nest.flatten(dataset.element_spec)
    return any(getattr(s, "shape", None) is not None and s.shape.rank and s.shape[0] is None for s in specs)


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
    batched. ``rebatch=False`` leaves the batching alone (one replica, batch size unknown). The
    auto-shard policy follows :func:`shard_policy`; a policy the user set explicitly is kept.
    """
    import tensorflow as tf

    known = dataset_batch_size(dataset)
    if known is None and not looks_batched(dataset):
        dataset = dataset.batch(global_batch_size, drop_remainder=drop_remainder)
    elif rebatch and (drop_remainder or known != global_batch_size):
        dataset = dataset.rebatch(global_batch_size, drop_remainder=drop_remainder)
    current = dataset.options().experimental_distribute.auto_shard_policy
    if current == tf.data.experimental.AutoShardPolicy.AUTO:
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = shard_policy(dataset, num_workers)[0]
        dataset = dataset.with_options(options)
    return dataset


def _with_data_sharding(dataset: Any) -> Any:
    import tensorflow as tf

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
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

    For multi-worker training. Keras's own array adapter shuffles with an unseeded op, so each
    worker would take its shard of a *different* order: some samples seen twice, others never.
    Here the shuffle is seeded the same on every worker, the batch is the global batch, and the
    auto-shard policy is ``DATA``, so each global batch is the one a single process would train
    on. ``validation_split`` takes the last fraction, before shuffling, as Keras does.

    Returns:
        ``(train_dataset, validation_dataset or None)``.
    """
    import math

    import tensorflow as tf

    def slice_all(structure: Any, start: int, stop: int | None) -> Any:
        return tf.nest.map_structure(lambda a: a[start:stop], structure)

    # Keras reads a list of arrays as the inputs of a multi-input model; tf.data would stack a
    # list into one tensor (and fail on inputs of different shapes), so it becomes a tuple.
    x = tuple(x) if isinstance(x, list) else x
    leaves = tf.nest.flatten(x)
    num_samples = int(leaves[0].shape[0])
    parts = tuple(part for part in (x, y, sample_weight) if part is not None)
    validation = None
    if validation_split:
        split_at = int(math.floor(num_samples * (1.0 - validation_split)))
        validation_parts = tuple(None if p is None else slice_all(p, split_at, None) for p in parts)
        parts = tuple(None if p is None else slice_all(p, 0, split_at) for p in parts)
        validation = _with_data_sharding(
            tf.data.Dataset.from_tensor_slices(_pack(validation_parts)).batch(
                global_batch_size, drop_remainder=drop_remainder
            )
        )
        num_samples = split_at
    train = tf.data.Dataset.from_tensor_slices(_pack(parts))
    if shuffle:
        train = train.shuffle(num_samples, seed=seed, reshuffle_each_iteration=True)
    return _with_data_sharding(train.batch(global_batch_size, drop_remainder=drop_remainder)), validation


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
    steps = _finite_cardinality(dataset)
    if not steps:
        return dataset, None
    return dataset.repeat(), steps


def _pack(parts: tuple[Any, ...]) -> Any:
    return parts[0] if len(parts) == 1 else parts


def dropped_samples(num_samples: int | None, global_batch_size: int) -> int | None:
    """Samples ``drop_remainder`` leaves out of each epoch (``None`` when the count is unknown)."""
    return None if num_samples is None else num_samples % global_batch_size
