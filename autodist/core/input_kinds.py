"""What the training input is, decided once: :func:`classify` reads the ``x`` (and ``y``) a ``fit``
call was given and returns one :class:`Input` of the kind it is, and every later step asks that
object, never the raw ``x`` again.

The kinds (:class:`Arrays`, :class:`Dataset`, :class:`IndexedBatches`, :class:`Stream`, :class:`DatasetCreator`,
:class:`RayShard`, :class:`NoInput` and :class:`Other`: each class says what it is) answer what ``fit`` asks
of an input: its length, the batch it brings, how its epochs end, how it is shuffled, its first inputs.

Example:
    >>> import numpy as np
    >>> data = classify({"a": np.zeros((10, 3))}, np.ones(10))
    >>> type(data).__name__, data.samples(), data.batches_itself
    ('Arrays', 10, False)
    >>> type(classify(iter([]))).__name__, classify(iter([])).batches_itself
    ('Stream', True)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

from autodist.detection.ray_train import is_data_iterator
from autodist.errors import AutodistError
from autodist.planning.global_batch import KERAS_DEFAULT_BATCH_SIZE
from autodist.planning.strategy_types import subclasses
from autodist.core.batching import own_shard
from autodist.process import draws_kept
from autodist.ray.data import from_ray_data
from autodist.upstream.tf_data import (
    dataset_batch_size,
    finite_cardinality,
    is_batched,
    is_dataset,
    leaves,
    reshuffles,
    repeated_shuffles,
    samples_per_pass,
)

__all__ = [
    "Arrays",
    "Dataset",
    "DatasetCreator",
    "IndexedBatches",
    "Input",
    "NoInput",
    "Other",
    "RayShard",
    "Stream",
    "classify",
    "first_batch",
    "numpy_view",
    "num_samples",
]


@dataclasses.dataclass(frozen=True, eq=False)
class Input:
    """The training input of one ``fit`` call, classified: ``raw`` is ``x`` as the caller gave it
    (what ``model.fit`` reads), ``y`` its targets as given. Each kind answers for itself; the
    answers here are those of an input autodist can tell nothing about."""

    raw: Any
    y: Any = None

    #: Keras refuses ``batch_size`` for it: it yields ready-made batches.
    batches_itself: ClassVar[bool] = False
    #: Where :func:`classify` asks it, among the kinds (lowest first): a kind that takes what a later
    #: one takes too comes first.
    rank: ClassVar[int] = 100

    @staticmethod
    def takes(x: Any) -> bool:
        """Whether ``x`` is of this kind (:func:`classify`)."""
        return False

    @classmethod
    def answers(cls, question: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A decorator for a layer above this one (a backend's preparation, resume): the function
        is this kind's answer to ``question`` (its first argument the input), kept on the kind, so
        a kind without one of its own answers as its base does. What the answer needs of that layer
        stays there; nothing asks which kind an input is."""

        def kept(answer: Callable[..., Any]) -> Callable[..., Any]:
            setattr(cls, f"_answer_{question}", staticmethod(answer))
            return answer

        return kept

    def answer(self, question: str, *args: Any) -> Any:
        """This input's answer to ``question`` (:meth:`answers`), its kind's or its base's."""
        return getattr(self, f"_answer_{question}")(self, *args)

    @property
    def name(self) -> str:
        """The input's type, as messages name it."""
        return type(self.raw).__name__

    @property
    def arrays(self) -> Any:
        """``x`` as numpy arrays or tensors (pandas as Keras reads it); ``None`` unless :class:`Arrays`."""
        return None

    #: Whether ``x`` is numpy arrays or pandas only (what autodist may order itself).
    numpy_only: ClassVar[bool] = False
    #: Whether Keras on JAX shards it over the processes itself (``auto_shard_dataset``).
    sharded_by_keras: ClassVar[bool] = False

    def refuse_on_jax(self) -> None:
        """Nothing, where Keras on JAX reads it.

        Raises:
            AutodistError: it cannot (a Ray Data shard), with the fix.
        """

    def own_batch(self) -> int | None:
        """The batch the input brings itself (a batched dataset's, a ``PyDataset``'s first); ``None``."""
        return None

    def length_unknown(self) -> bool:
        """Whether Keras cannot know the input's length before it ends (a generator, a dataset of
        unknown cardinality)."""
        return False

    def batches_per_epoch(self, batch: int | None, fit_kwargs: Mapping[str, Any]) -> int | None:
        """The batches of one epoch, where the input tells before training (``batch``: the
        global batch, Keras's default where ``None``); ``None`` where it does not."""
        return None

    def epoch_samples(self, fit_kwargs: Mapping[str, Any]) -> int | None:
        """The samples trained in one epoch, where the input tells before training; ``None``."""
        return None

    def reshuffled(self, fit_kwargs: Mapping[str, Any]) -> str | None:
        """What the input is when it draws a new order each time it is read; ``None`` when it does not."""
        return None

    def repeated_shuffles(self) -> tuple[Any, ...]:
        """The shuffles the input repeats that draw a new order each pass (``shuffle().repeat()``),
        each the pipeline's own object: what a replicated ``fit`` left after ``steps_per_epoch``
        steps reads ahead (:func:`autodist.core.inputs.shuffles_read_ahead`)."""
        return ()

    def unsplittable(self) -> str | None:
        """Why ``tf.distribute`` cannot split the input's batches over replicas; ``None`` where it can."""
        return None

    def requested_batch(self, batch_size: int | None, fit_kwargs: Mapping[str, Any]) -> int | None:
        """The global batch the call asks for: ``batch_size``; else the batch the input brings;
        else ``None`` (Keras's default)."""
        return batch_size if batch_size is not None else self.own_batch()

    def first_inputs(self) -> Any:
        """The model inputs of the first batch, without consuming anything (to build a model as
        ``model.fit`` would); ``None`` where they cannot be peeked."""
        import tensorflow as tf

        try:
            return tf.nest.map_structure(lambda part: getattr(part, "values", part)[:1], self.raw)
        except TypeError:
            return None

    def first_batch_spec(self) -> Any:
        """The model inputs of one batch, or their specs, read without spending anything of the
        input (what a traced training call is made from); ``None`` for an input that cannot be
        read twice (a generator)."""
        return None

    def timing_form(self, fit_kwargs: Mapping[str, Any]) -> tuple[Any, Any, int | None, bool] | None:
        """``(x, y, samples trained per epoch, whether x is a tf.data.Dataset)`` as ``strategy="tune"``
        times a copy of the model on it (``None`` samples: unknown or endless); ``None`` for an
        input that cannot be read twice."""
        return None

    def probe_sample(self, count: int) -> Any:
        """Its first ``count`` samples, where autodist reads them as Keras does (the batch probe); ``None``."""
        return None

    def first_batch_taken(self) -> tuple[Any, Input] | None:
        """Its first batch, read, and the input with it put back, for an input that loses what is
        read of it (a generator: Keras's symbolic build would); ``None`` for any other."""
        return None

    def read_on_tensorflow(self, batch: int | None) -> tuple[Input, int | None]:
        """The input as TensorFlow reads it, and the global batch: itself, and ``batch``."""
        return self, batch

    def graph_form(self) -> tuple[Any, Any] | None:
        """``(x, y)`` as a ``tf.data`` pipeline can be rebuilt from them in another process (what
        parameter-server workers read): arrays, or a pipeline of TensorFlow ops; ``None`` for Python
        objects (a generator, a ``PyDataset``), which stay where they were made."""
        return None

    def batch_needed(self, requested: int | None) -> bool:
        """Whether autodist must be told its batch to split it over replicas (``requested``: the
        batch the call asks for, ``None``: none given or found): only a dataset whose batch it
        cannot read, and which is not a worker's own shard, does."""
        return False


class NoInput(Input):
    """``x=None``."""

    rank: ClassVar[int] = 0

    @staticmethod
    def takes(x: Any) -> bool:
        return x is None

    def first_inputs(self) -> Any:
        return None


@dataclasses.dataclass(frozen=True, eq=False)
class Arrays(Input):
    """Numpy arrays, tensors or pandas objects, also in a dict, list or tuple. ``arrays`` is
    ``raw`` with pandas as numpy (``raw`` itself where it holds no pandas), ``targets`` the same
    of ``y``: converted when first asked for, so an input Keras reads itself (one device, say) is
    never copied; :meth:`head` converts only the first samples."""

    rank: ClassVar[int] = 60

    @staticmethod
    def takes(x: Any) -> bool:
        return all(_pandas(v) or (hasattr(v, "shape") and hasattr(v, "dtype")) for v in leaves(x))

    @functools.cached_property
    def arrays(self) -> Any:
        return numpy_view(self.raw)

    @functools.cached_property
    def targets(self) -> Any:
        return numpy_view(self.y)

    @property
    def from_pandas(self) -> bool:
        """Whether ``raw`` holds pandas objects (``arrays`` is then a converted copy)."""
        return any(_pandas(v) for v in leaves(self.raw))

    @functools.cached_property
    def numpy_only(self) -> bool:
        """Whether every array of ``x`` is a numpy array or pandas (tensors are left to Keras: a
        string tensor cannot become a numpy array Keras takes)."""
        return numpy_only(self.raw)

    def head(self, count: int) -> Any:
        """The first ``count`` samples of ``x`` (fewer where it has fewer), pandas as numpy."""
        return _head(self.raw, count)

    def unsplittable(self) -> str | None:
        """A composite tensor that cannot be sliced (a ``tf.experimental.ExtensionType`` of the
        script's, the TensorFlow guide's ``MaskedTensor``), in ``x`` or ``y``: one device batches it
        as a whole, and ``tf.distribute`` cannot split it over replicas."""
        leaf = _unsliceable(self.raw) or _unsliceable(self.y)
        if leaf is None:
            return None
        return (
            f"the input holds a {type(leaf).__name__}, a composite tensor that cannot be sliced (no __getitem__), "
            "which tf.distribute cannot split over replicas"
        )

    def samples(self) -> int:
        """The samples, as Keras counts them: the length of the first array."""
        return num_samples(self.raw)

    def training_samples(self, fit_kwargs: Mapping[str, Any]) -> int:
        """Samples ``fit`` trains on: all, less Keras's ``validation_split`` (:func:`training_split`)."""
        return training_split(self.raw, fit_kwargs)[0]

    def epoch_samples(self, fit_kwargs: Mapping[str, Any]) -> int | None:
        try:
            return self.training_samples(fit_kwargs)
        except (TypeError, ValueError, KeyError, IndexError):  # not arrays autodist can count
            return None

    def batches_per_epoch(self, batch: int | None, fit_kwargs: Mapping[str, Any]) -> int | None:
        samples = self.epoch_samples(fit_kwargs)
        return None if samples is None else math.ceil(samples / (batch or KERAS_DEFAULT_BATCH_SIZE))

    def requested_batch(self, batch_size: int | None, fit_kwargs: Mapping[str, Any]) -> int | None:
        """``batch_size``; else, with ``steps_per_epoch``, the batch Keras itself would take
        (``ceil(training samples / steps_per_epoch)``); else ``None``.

        Example:
            >>> import numpy as np
            >>> classify(np.ones((100, 2))).requested_batch(None, {"steps_per_epoch": 3})
            34
        """
        if batch_size is not None or not fit_kwargs.get("steps_per_epoch"):
            return batch_size
        samples = self.epoch_samples(fit_kwargs)
        return math.ceil(samples / int(fit_kwargs["steps_per_epoch"])) if samples else None

    def first_inputs(self) -> Any:
        try:
            return self.head(1)
        except (TypeError, ValueError):  # a tensor that cannot be sliced (a SparseTensor): not peeked
            return None

    def first_batch_spec(self) -> Any:
        return self.first_inputs()

    def timing_form(self, fit_kwargs: Mapping[str, Any]) -> tuple[Any, Any, int | None, bool] | None:
        return self.arrays, self.targets, self.training_samples(fit_kwargs), False

    def probe_sample(self, count: int) -> Any:
        return None if self.from_pandas else self.head(count)  # pandas: left alone

    def graph_form(self) -> tuple[Any, Any] | None:
        return self.arrays, self.targets


@dataclasses.dataclass(frozen=True, eq=False)
class Dataset(Input):
    """A ``tf.data.Dataset`` (not a distributed one; on JAX too)."""

    sharded_by_keras: ClassVar[bool] = True
    rank: ClassVar[int] = 20
    takes = staticmethod(is_dataset)

    def own_batch(self) -> int | None:
        return dataset_batch_size(self.raw)  # read from the pipeline's graph: nothing is iterated

    def length_unknown(self) -> bool:
        return int(self.raw.cardinality()) == -2  # tf.data.UNKNOWN_CARDINALITY

    def batches_per_epoch(self, batch: int | None, fit_kwargs: Mapping[str, Any]) -> int | None:
        return finite_cardinality(self.raw)

    def epoch_samples(self, fit_kwargs: Mapping[str, Any]) -> int | None:
        return samples_per_pass(self.raw)

    def reshuffled(self, fit_kwargs: Mapping[str, Any]) -> str | None:
        return "a tf.data pipeline whose shuffle reshuffles each iteration" if reshuffles(self.raw) else None

    def repeated_shuffles(self) -> tuple[Any, ...]:
        return repeated_shuffles(self.raw)

    def first_inputs(self) -> Any:
        element = next(iter((self.raw if is_batched(self.raw) else self.raw.batch(1)).take(1)))
        return element[0] if isinstance(element, tuple) else element

    def graph_form(self) -> tuple[Any, Any] | None:
        return self.raw, self.y

    def batch_needed(self, requested: int | None) -> bool:
        # sharding OFF: each worker's own part (Ray Data's to_tf), its batches the worker's, as with model.fit
        return requested is None and not own_shard(self.raw)

    def first_batch_spec(self) -> Any:
        """Its element spec, a batch dimension added where it is not batched."""
        import tensorflow as tf

        spec = self.raw.element_spec
        inputs = spec[0] if isinstance(spec, tuple) else spec
        if not is_batched(self.raw):
            inputs = tf.nest.map_structure(lambda s: tf.TensorSpec((None, *s.shape), s.dtype), inputs)
        return inputs

    def timing_form(self, fit_kwargs: Mapping[str, Any]) -> tuple[Any, Any, int | None, bool] | None:
        count = int(self.raw.cardinality())  # batches; endless (-1) or unknown (-2)
        return self.raw, None, count * (self.own_batch() or 1) if count > 0 else None, True


class _BatchesItself(Input):
    batches_itself: ClassVar[bool] = True

    def first_inputs(self) -> Any:
        return None


@dataclasses.dataclass(frozen=True, eq=False)
class IndexedBatches(_BatchesItself):
    """A Keras ``PyDataset`` or ``Sequence``: ready-made batches read by index (``x[i]``)."""

    rank: ClassVar[int] = 40

    @staticmethod
    def takes(x: Any) -> bool:
        return any(cls.__name__ in ("PyDataset", "Sequence") for cls in type(x).__mro__)

    def own_batch(self) -> int | None:
        return self._first_batch_size

    @functools.cached_property
    def _first_batch_size(self) -> int | None:
        return first_batch_size(self.raw)

    def reshuffled(self, fit_kwargs: Mapping[str, Any]) -> str | None:
        return f"a {self.name} with shuffle=True" if fit_kwargs.get("shuffle", True) else None

    def first_inputs(self) -> Any:
        element = first_batch(self.raw)
        return element[0] if isinstance(element, tuple) else element

    def first_batch_spec(self) -> Any:
        return self.first_inputs()  # x[0], as Keras reads it for its signature


class Stream(_BatchesItself):
    """A generator or iterator of batches: read once, its length unknown unless it has one."""

    rank: ClassVar[int] = 30

    @staticmethod
    def takes(x: Any) -> bool:
        return inspect.isgenerator(x) or isinstance(x, Iterator)

    def length_unknown(self) -> bool:
        return inspect.isgenerator(self.raw) or not hasattr(self.raw, "__len__")

    def first_batch_taken(self) -> tuple[Any, Input] | None:
        x = self.raw
        first = next(x)

        def put_back() -> Iterator[Any]:  # a generator, as Keras accepts
            yield first
            yield from x

        return first, Stream(put_back(), self.y)


class DatasetCreator(_BatchesItself):
    """tf_keras's ``DatasetCreator``: a function that makes each worker's dataset."""

    rank: ClassVar[int] = 50

    @staticmethod
    def takes(x: Any) -> bool:
        return any(cls.__name__ == "DatasetCreator" for cls in type(x).__mro__)


class RayShard(Input):
    """This worker's shard of a Ray Data dataset (``ray.data.DataIterator``), ``y`` its label
    column(s): TensorFlow reads it as a ``tf.data.Dataset`` (:func:`autodist.ray.data.from_ray_data`)."""

    rank: ClassVar[int] = 10
    takes = staticmethod(is_data_iterator)

    def refuse_on_jax(self) -> None:
        raise AutodistError(
            "autodist.fit got a Ray Data shard (ray.train.get_dataset_shard) as x, and Keras runs on "
            "JAX here: autodist reads Ray Data shards on TensorFlow only. Expected arrays or a "
            "tf.data.Dataset on JAX. Pass shard.to_tf(feature_columns=..., label_columns=..., "
            "batch_size=...) or numpy arrays, or train with KERAS_BACKEND=tensorflow."
        )

    def first_inputs(self) -> Any:
        return None

    def read_on_tensorflow(self, batch: int | None) -> tuple[Input, int | None]:
        """This worker's ``tf.data.Dataset`` of it (:func:`autodist.ray.data.from_ray_data`), and its global batch."""
        dataset, batch = from_ray_data(self.raw, self.y, batch)
        return Dataset(dataset), batch


class Other(Input):
    """Anything else (Python lists, ...): ``model.fit`` reads it, or says in its own words why not."""


def classify(x: Any, y: Any = None) -> Input:
    """The kind of input ``x`` is, with its targets ``y``: the one place autodist looks at what
    the caller passed as training data. Each kind says what it takes (``takes``), asked in the
    order of their ``rank`` (a kind defined elsewhere, a test's own, too); :class:`Other` takes the rest."""
    kinds = sorted(subclasses(Input), key=lambda kind: kind.rank)
    return next((kind for kind in kinds if kind.takes(x)), Other)(x, y)


def numpy_view(data: Any) -> Any:
    """pandas DataFrames and Series (also inside a list, tuple or dict) as numpy arrays, as Keras
    reads them (``to_numpy()``); anything else as it is (the same object where it holds no pandas)."""
    if isinstance(data, (list, tuple)):
        parts = [numpy_view(part) for part in data]
        return data if all(new is old for new, old in zip(parts, data)) else type(data)(parts)
    if isinstance(data, dict):
        values = {key: numpy_view(part) for key, part in data.items()}
        return data if all(values[key] is data[key] for key in data) else values
    return data.to_numpy() if _pandas(data) else data


def _pandas(x: Any) -> bool:
    return type(x).__module__.startswith("pandas") and callable(getattr(x, "to_numpy", None))


def _head(x: Any, count: int) -> Any:
    if isinstance(x, Mapping):
        return {key: _head(value, count) for key, value in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_head(value, count) for value in x)
    return x.iloc[:count].to_numpy() if _pandas(x) else x[:count]


def _unsliceable(x: Any) -> Any:
    """The first leaf of ``x`` that has a shape but cannot be sliced (a composite tensor); ``None``."""
    return next(
        (v for v in leaves(x) if getattr(v, "shape", None) is not None and not hasattr(type(v), "__getitem__")), None
    )


def numpy_only(x: Any) -> bool:
    """Whether ``x`` (a sample weight, say) is ``None`` or numpy arrays only, pandas read as numpy."""
    if x is None:
        return True
    if isinstance(x, Mapping):
        return all(numpy_only(value) for value in x.values())
    if isinstance(x, (list, tuple)):
        return bool(x) and all(numpy_only(value) for value in x)
    import numpy as np

    return isinstance(x, np.ndarray) or _pandas(x)


def num_samples(x: Any) -> int:
    """The number of samples in arrays, tensors or pandas objects (also nested in dicts, lists
    and tuples), as Keras counts them: the length of the first one (all have the same).

    Example:
        >>> import numpy as np
        >>> num_samples({"b": np.ones((3, 2)), "a": [np.ones(3), np.ones(3)]})
        3
    """
    first = x
    while isinstance(first, (Mapping, list, tuple)) and len(first) > 0:
        first = first[sorted(first)[0]] if isinstance(first, Mapping) else first[0]
    if not hasattr(first, "__len__") and getattr(first, "shape", None) is not None:
        # a composite tensor (tf.SparseTensor, a tf.experimental.ExtensionType with a shape): its
        # leading dimension, as Keras's data adapter reads it
        return int(first.shape[0])
    return int(len(first))


def training_split(x: Any, fit_kwargs: Mapping[str, Any]) -> tuple[int, float]:
    """The samples ``fit`` trains on of arrays ``x``, and Keras's ``validation_split`` it holds out
    of them (``0.0`` where ``validation_data`` is given, which wins, as in Keras)."""
    split = 0.0 if fit_kwargs.get("validation_data") is not None else float(fit_kwargs.get("validation_split") or 0.0)
    return int(math.floor(num_samples(x) * (1.0 - split))), split


def first_batch(x: Any) -> Any:
    """``x[0]`` of a ``PyDataset``/``Sequence``, with the global random states kept
    (:func:`autodist.process.draws_kept`)."""
    with draws_kept():
        return x[0]


def first_batch_size(x: Any) -> int | None:
    """The samples in the first batch of a ``PyDataset``/``Sequence`` (``x[0]``, read as Keras
    reads it for its output signature): the leading size of its first array; ``None`` when it
    has none, or ``x[0]`` fails (Keras says why when it reads it).

    Example:
        >>> import numpy as np
        >>> class Batches:  # a Sequence in all but name
        ...     def __getitem__(self, i):
        ...         return {"a": np.ones((16, 3))}, np.ones((16, 1))
        >>> first_batch_size(Batches())
        16
    """
    try:
        first = first_batch(x)
    except Exception:  # noqa: BLE001 - the user's __getitem__; Keras raises it again, in its words
        return None
    for part in leaves(first):
        shape = getattr(part, "shape", None)
        try:
            return int(shape[0])
        except (TypeError, ValueError, IndexError):  # no shape, a scalar, an unknown size or rank: look further
            continue
    return None
