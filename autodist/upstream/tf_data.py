"""A ``tf.data.Dataset``'s graph: what it says about the pipeline's batching, size, files and
element shapes, read without iterating it (touch ``tf.dataset_graph``: the transformations'
private ``_input_dataset`` links, their class names and attributes), and the pipeline serialised
to rebuild it on parameter-server workers (touch ``tf.dataset_serialization``).

Detection, of a live pipeline: :mod:`autodist.core.batching` decides from these facts how to bring a
dataset to the global batch; nothing here changes a dataset or reads an element of it. Where the
graph touch is off, a dataset's batching is read from its element spec alone (public).

Example:
    >>> import tensorflow as tf
    >>> describe_batching(tf.data.Dataset.range(10).batch(4).prefetch(1))
    Batching(batched=True, size=4, evidence='BatchDataset', samples=10)
    >>> samples_per_pass(tf.data.Dataset.range(10).batch(4)), is_batched(tf.data.Dataset.range(3))
    (10, False)
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from autodist.errors import AutodistError
from autodist.upstream.surface import available

__all__ = [
    "Batching",
    "deserialize",
    "dataset_batch_size",
    "describe_batching",
    "file_source_count",
    "finite_cardinality",
    "is_batched",
    "is_dataset",
    "leaves",
    "samples_per_pass",
    "reshuffles",
    "repeated_shuffles",
    "serialize",
    "shuffles",
    "variable_length_parts",
]


#: Transformations that keep each element as it is batched: the walk goes through them.
_KEEPS_BATCHING = frozenset(
    {
        "_PrefetchDataset",
        "_MapDataset",
        "_ParallelMapDataset",
        "CacheDataset",
        "_CacheDataset",
        "_ShuffleDataset",
        "_RepeatDataset",
        "_TakeDataset",
        "_SkipDataset",
        "_FilterDataset",
        "_ParallelFilterDataset",
        "_OptionsDataset",
        "_ShardDataset",
        "_AssertCardinalityDataset",
        "_IgnoreErrorsDataset",
        "_RestructuredDataset",
        "_ConcatenateDataset",
        "_SnapshotDataset",
        "_ModelDataset",
        "_MaxIntraOpParallelismDataset",
        "_PrivateThreadPoolDataset",
        "_AutoShardDataset",
    }
)
#: Sources and transformations whose elements are single samples.
_YIELDS_SAMPLES = frozenset(
    {
        "_TensorSliceDataset",
        "_SparseTensorSliceDataset",
        "_RangeDataset",
        "_UnbatchDataset",
        "TFRecordDatasetV2",
        "TextLineDatasetV2",
        "FixedLengthRecordDatasetV2",
        "_CounterDataset",
    }
)


@dataclass(frozen=True)
class Batching:
    """How a ``tf.data.Dataset``'s elements are batched, as far as its graph and spec say.

    ``batched``: whether each element is a batch (Keras reads every element of a dataset as one
    batch). ``size``: the batch size, when known. ``evidence``: what decided it. ``samples``:
    the samples in one pass of a batched dataset, when its graph tells (the batch step's input
    has a known size and nothing after it changes the number of batches).
    """

    batched: bool
    size: int | None
    evidence: str
    samples: int | None = None


def describe_batching(dataset: Any) -> Batching:
    """Read a dataset's batching from its chain of transformations, then from its element spec.

    The walk goes back through transformations that keep batches as they are (``map``,
    ``prefetch``, ``cache``, ``shuffle``, ``take``, ...) to the nearest ``batch``,
    ``padded_batch`` or ``rebatch`` (batched, with its size), or to a source of single samples
    (``from_tensor_slices``, ``range``, a file reader) or an ``unbatch`` (not batched). Any other
    step (``from_generator``, ``flat_map``, ``interleave``, ``window``, ``zip``,
    ``from_tensors``, ...) leaves the element spec to decide: an element with a scalar part
    cannot be a batch, and neither can one whose parts are all vectors of unknown length
    (variable-length sequences); otherwise each element is a batch, of the leading dimension
    its parts share (a generator that yields batches of 16 has batch size 16). It reads no data.

    Example:
        >>> import tensorflow as tf
        >>> samples = tf.data.Dataset.from_tensor_slices(tf.zeros((10, 3)))
        >>> describe_batching(samples.batch(4).map(lambda x: x * 2)).size
        4
        >>> describe_batching(samples.batch(4).unbatch()).batched
        False
    """
    if not available("tf.dataset_graph"):
        return _batching_from_spec(dataset, type(dataset).__name__.strip("_"))
    node = dataset
    for _ in range(64):
        name = type(node).__name__
        size = getattr(node, "_batch_size", getattr(node, "_batch_sizes", None))
        if size is not None and "atch" in name:
            # The batch step's input is samples (for rebatch it is batches: no count).
            same_batches = finite_cardinality(dataset) == finite_cardinality(node) and name != "_RebatchDataset"
            samples = finite_cardinality(getattr(node, "_input_dataset", None)) if same_batches else None
            return Batching(True, _positive_int(size), name.strip("_"), samples)
        if name in _YIELDS_SAMPLES:
            return Batching(False, None, name.strip("_"))
        if name == "_ZipDataset":
            return _zipped(node)
        if name not in _KEEPS_BATCHING or getattr(node, "_input_dataset", None) is None:
            return _batching_from_spec(node, name.strip("_"))
        node = getattr(node, "_input_dataset", None)
    return _batching_from_spec(dataset, "a long chain")


def _zipped(node: Any) -> Batching:
    import tensorflow as tf

    parts = [describe_batching(child) for child in tf.nest.flatten(getattr(node, "_datasets", None) or [])]
    if not parts:
        return _batching_from_spec(node, "ZipDataset")
    sizes = {part.size for part in parts}
    if all(part.batched for part in parts):
        return Batching(True, sizes.pop() if len(sizes) == 1 else None, "ZipDataset of batched datasets")
    if not any(part.batched for part in parts):
        return Batching(False, None, "ZipDataset of unbatched datasets")
    return _batching_from_spec(node, "ZipDataset")


def _positive_int(size: Any) -> int | None:
    try:
        value = int(size.numpy()) if hasattr(size, "numpy") else int(size)
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def _batching_from_spec(dataset: Any, step: str) -> Batching:
    import tensorflow as tf

    shapes = [getattr(spec, "shape", None) for spec in tf.nest.flatten(dataset.element_spec)]
    evidence = f"{step}: element spec {dataset.element_spec}"
    if not shapes or None in shapes:
        return Batching(False, None, evidence + " (not all tensors: not a batch Keras can read)")
    ranks = [shape.rank for shape in shapes]
    if None in ranks:
        return Batching(True, None, evidence + " (rank unknown: read as batches, as Keras reads them)")
    if min(ranks) == 0:
        return Batching(False, None, evidence + " has a scalar part")
    if max(ranks) == 1 and all(shape[0] is None for shape in shapes if shape is not None):
        return Batching(False, None, evidence + " (vectors of unknown length: variable-length samples)")
    leading = {shape[0] for shape in shapes if shape is not None and shape.rank}
    return Batching(True, leading.pop() if len(leading) == 1 else None, evidence)


def samples_per_pass(dataset: Any) -> int | None:
    """Samples in one pass of a dataset, from its graph (never by reading it); ``None`` when the
    graph does not tell (infinite, ``filter``, batched from a source of unknown size).

    Example:
        >>> import tensorflow as tf
        >>> samples_per_pass(tf.data.Dataset.range(10).batch(4)), samples_per_pass(tf.data.Dataset.range(10))
        (10, 10)
    """
    batching = describe_batching(dataset)
    return batching.samples if batching.batched else finite_cardinality(dataset)


def is_dataset(x: Any) -> bool:
    """Whether ``x`` is a ``tf.data.Dataset`` (not a distributed one); it never imports TensorFlow.

    Example:
        >>> is_dataset([1, 2, 3])
        False
    """
    tf = sys.modules.get("tensorflow")
    dataset_class = getattr(getattr(tf, "data", None), "Dataset", None) if tf is not None else None
    return dataset_class is not None and isinstance(x, dataset_class)


def dataset_batch_size(dataset: Any) -> int | None:
    """The batch size of a batched ``tf.data.Dataset``, or ``None`` if unknown or unbatched.

    See :func:`describe_batching`. It reads no data.
    """
    batching = describe_batching(dataset)
    return batching.size if batching.batched else None


def variable_length_parts(dataset: Any) -> list[str]:
    """The parts of an unbatched dataset's elements whose shape is not fixed (``batch`` fails on them)."""
    found = []
    for path, spec in _flatten_with_paths(dataset.element_spec):
        shape = getattr(spec, "shape", None)
        dense = type(spec).__name__ == "TensorSpec"
        if dense and shape is not None and (shape.rank is None or any(dim is None for dim in shape)):
            found.append(f"{path or 'element'} {shape}")
    return found


def _flatten_with_paths(structure: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(structure, dict):
        return [item for key, value in structure.items() for item in _flatten_with_paths(value, f"{path}[{key!r}]")]
    if isinstance(structure, (tuple, list)):
        return [item for i, value in enumerate(structure) for item in _flatten_with_paths(value, f"{path}[{i}]")]
    return [(path, structure)]


_READER_OPS = ("TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset")


def _walk(dataset: Any, limit: int = 256) -> Any:
    """The pipeline's datasets, ``dataset`` first, then its inputs' (at most ``limit``)."""
    stack, seen = [dataset], 0
    while stack and seen < limit:
        node, seen = stack.pop(), seen + 1
        yield node
        stack.extend(_children(node))


def _children(node: Any) -> list[Any]:
    """The datasets ``node`` reads, whatever its class names them: ``_input_dataset`` (one input),
    ``_datasets`` (zip), ``_data_inputs`` and ``_selector_input`` (``sample_from_datasets``,
    ``choose_from_datasets``), ``_dataset_to_concatenate``, and any other attribute holding a
    dataset or a list, tuple or dict of datasets."""
    found: dict[int, Any] = {}  # each dataset once, in order
    for value in vars(node).values() if hasattr(node, "__dict__") else ():
        for item in leaves(value):
            if any(cls.__name__ == "DatasetV2" for cls in type(item).__mro__) and item is not node:
                found.setdefault(id(item), item)
    return list(found.values())


def leaves(value: Any) -> Iterator[Any]:
    """What ``value`` holds in mappings, lists and tuples, depth first, in order (``value`` where it is none)."""
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return (leaf for item in value for leaf in leaves(item))
    return iter((value,))


def _reads_files(function: Any) -> bool:
    try:
        graph_def = function.function.graph.as_graph_def()
    except AttributeError:
        return False
    ops = {node.op for node in graph_def.node}
    ops |= {node.op for f in graph_def.library.function for node in f.node_def}
    return any(op.startswith(_READER_OPS) for op in ops)


def finite_cardinality(dataset: Any) -> int | None:
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
    for node in _walk(dataset):
        filenames = getattr(node, "_filenames", None)
        if filenames is not None and hasattr(filenames, "cardinality"):
            return finite_cardinality(filenames)
        function = getattr(node, "_map_func", None)
        if "Interleave" in type(node).__name__ and function is not None and _reads_files(function):
            return finite_cardinality(getattr(node, "_input_dataset", None))
    return None


def shuffles(dataset: Any) -> bool:
    """Whether the pipeline has a ``shuffle`` step (its order is drawn when it is read).

    Example:
        >>> import tensorflow as tf
        >>> shuffles(tf.data.Dataset.range(8).shuffle(8).batch(2)), shuffles(tf.data.Dataset.range(8).batch(2))
        (True, False)
    """
    return any("Shuffle" in type(node).__name__ for node in _walk(dataset))


def reshuffles(dataset: Any) -> bool:
    """Whether the pipeline has a ``shuffle`` step that draws a new order each time it is read
    (``reshuffle_each_iteration``, tf.data's default): reading it once spends an order.

    Example:
        >>> import tensorflow as tf
        >>> reshuffles(tf.data.Dataset.range(8).shuffle(8).batch(2))
        True
        >>> reshuffles(tf.data.Dataset.range(8).shuffle(8, reshuffle_each_iteration=False).batch(2))
        False
    """
    return any(_reshuffling(node) for node in _walk(dataset))


def _reshuffling(node: Any) -> bool:
    return "Shuffle" in type(node).__name__ and getattr(node, "_reshuffle_each_iteration", True) is not False


def repeated_shuffles(dataset: Any) -> tuple[Any, ...]:
    """The shuffles the pipeline repeats that draw a new order each pass (``shuffle().repeat()``,
    tf.data's default reshuffling): each pass an iterator starts takes the shuffle's next order, from
    a generator every iterator of that shuffle shares. Each is the pipeline's own dataset object.

    Example:
        >>> import tensorflow as tf
        >>> len(repeated_shuffles(tf.data.Dataset.range(8).shuffle(8).repeat().batch(2)))
        1
        >>> repeated_shuffles(tf.data.Dataset.range(8).repeat().shuffle(8).batch(2))
        ()
    """
    found: list[Any] = []
    for node in _walk(dataset):
        if "Repeat" in type(node).__name__:
            found += [inner for inner in _walk(node) if _reshuffling(inner) and inner not in found]
    return tuple(found)


def is_batched(dataset: Any) -> bool:
    """Whether each element of ``dataset`` is a batch (see :func:`describe_batching`)."""
    return describe_batching(dataset).batched


def serialize(dataset: Any) -> Any:
    """The dataset's graph, to rebuild it on the workers (:func:`deserialize`); touch
    ``tf.dataset_serialization``.

    Raises:
        AutodistError: when the touch is off, or the pipeline holds state a graph cannot carry
            (``py_function``, ``from_generator``, a lookup table built in Python), which would
            fail on the workers.
    """
    import tensorflow as tf

    if not available("tf.dataset_serialization"):
        raise AutodistError(
            "Keras 3 parameter-server training rebuilds a tf.data pipeline on every worker from its "
            "graph, and this TensorFlow lacks what autodist uses for that (the warning above names "
            "it). Expected arrays here. Pass the data as arrays, or use tf_keras "
            "(TF_USE_LEGACY_KERAS=1) with a DatasetCreator."
        )
    from tensorflow.python.data.ops.options import ExternalStatePolicy
    from tensorflow.python.ops import gen_dataset_ops

    try:
        return gen_dataset_ops.dataset_to_graph_v2(
            dataset._variant_tensor, external_state_policy=ExternalStatePolicy.FAIL.value, strip_device_assignment=True
        )
    except (tf.errors.FailedPreconditionError, tf.errors.InvalidArgumentError) as err:
        raise AutodistError(
            "Parameter-server training rebuilds the input pipeline on every worker from its graph, "
            f"and this tf.data.Dataset holds state that cannot travel ({str(err).strip().splitlines()[0][:200]}): "
            "py_function, from_generator or Python-side state. Expected a pipeline of TensorFlow "
            "ops. Pass the data as arrays, or build the pipeline from files or tensors with "
            "TensorFlow ops only."
        ) from err


def deserialize(graph: Any, element_spec: Any) -> Any:
    """The dataset :func:`serialize` made a graph of, rebuilt (on a worker)."""
    from tensorflow.python.distribute.coordinator import values

    return values.deserialize_dataset_from_graph(graph, element_spec)
