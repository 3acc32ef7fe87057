"""Act, Keras 3 on JAX: the arrays each process feeds ``fit`` under a ``keras.distribution``.

JAX shards every batch over the mesh's ``batch`` axis, so each batch, the epoch's last too, must
split evenly over its replicas; ``model.fit`` would stop with JAX's ``IndivisibleError`` on a short
last batch that does not. Arrays (numpy, or dicts, lists and tuples of them) are therefore cut to
the largest count whose last batch splits, with an ``AutodistWarning`` that gives the numbers
(fewer than ``replicas`` samples per epoch). ``validation_split`` is applied here as Keras applies
it (the last fraction), so both parts are cut alike.

With several processes, each feeds its own part of every global batch (Keras's
``DataParallel(auto_shard_dataset=False)``): process ``p`` of ``P`` takes the ``p``-th ``1/P`` of
each batch of the arrays in their order, so with ``shuffle=False`` the job trains on exactly the
batches one process would, and with shuffling every sample is still seen once per epoch.

A ``tf.data.Dataset`` is re-batched to the global batch (:func:`autodist.core.batching.prepare_dataset`)
and each batch is cut to a multiple of the replicas (the last one only can be short), with the
same warning when the dataset's size is known; with several processes Keras shards it. pandas
objects are read as their arrays. Other inputs (generators, ``PyDataset``) are passed as they
are, with a warning that autodist cannot re-batch them, and refused with several processes.

Example:
    >>> import numpy as np
    >>> part = Part(process=1, processes=2, replicas=2)
    >>> rows(10, batch=4, part=part)
    array([2, 3, 6, 7, 9])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from autodist.errors import AutodistError
from autodist.core.batching import prepare_dataset
from autodist.upstream.tf_data import samples_per_pass
from autodist.core.input_kinds import Arrays, Dataset, Input, classify, training_split

__all__ = ["LOCAL", "Part", "local_inputs", "rows"]

#: The question an input answers on JAX (:meth:`~autodist.core.input_kinds.Input.answers`): this process's part of it.
LOCAL = "local"
#: What an input answers to it: ``(x, y, fit_kwargs, warnings)`` for this process's ``model.fit``.
_Local = tuple[Any, Any, dict[str, Any], list[str]]


@dataclass(frozen=True)
class Part:
    """This process's share: its index, the process count and the replicas of the batch axis."""

    process: int = 0
    processes: int = 1
    replicas: int = 1


def rows(count: int, *, batch: int, part: Part) -> np.ndarray:
    """The rows this process feeds, in order: the ``process``-th ``1/processes`` of each global
    batch of the first ``count`` rows, cut so that the last batch splits over the replicas."""
    kept = count - (count % batch) % part.replicas
    picked = []
    for start in range(0, kept, batch):
        size = min(batch, kept - start) // part.processes
        picked.append(np.arange(start + part.process * size, start + (part.process + 1) * size))
    return np.concatenate(picked) if picked else np.arange(0)


def local_inputs(data: Input, fit_kwargs: Mapping[str, Any], *, batch: int, part: Part) -> _Local:
    """``(x, y, fit_kwargs, warnings)`` for this process's ``model.fit`` with the global ``batch``:
    arrays cut and split as the module says, with the batch sizes per process; a dataset re-batched
    and cut; any other input as it is, with a warning.

    Raises:
        AutodistError: several processes and an input that is neither arrays nor a tf.data.Dataset.
    """
    return data.answer(LOCAL, dict(fit_kwargs), batch, part)


@Input.answers(LOCAL)
def _local(data: Input, kwargs: dict[str, Any], batch: int, part: Part) -> _Local:
    """An input autodist cannot cut: as it is, with a warning; refused in a job of several processes."""
    if part.processes > 1:
        raise AutodistError(
            f"autodist.fit got {data.name} as x in a {part.processes}-process JAX job. "
            "Expected numpy arrays (autodist gives each process its part of every batch) or a "
            "tf.data.Dataset (Keras shards it). Pass arrays or a tf.data.Dataset."
        )
    note = (
        f"autodist cannot re-batch a {data.name}: each of its batches must split evenly over the "
        f"{part.replicas} replicas of the JAX mesh's batch axis, or JAX stops with an IndivisibleError"
    )
    return data.raw, data.y, kwargs, [note] if part.replicas > 1 else []


@Dataset.answers(LOCAL)
def _local_dataset(data: Dataset, kwargs: dict[str, Any], batch: int, part: Part) -> _Local:
    """A dataset at the global batch, each batch cut to split over the replicas (Keras shards it)."""
    return _dataset(data.raw, batch, part), data.y, kwargs, _dataset_warning(data.raw, batch, part)


@Arrays.answers(LOCAL)
def _local_arrays(data: Arrays, kwargs: dict[str, Any], batch: int, part: Part) -> _Local:
    """Arrays: this process's rows of every global batch (:func:`rows`), validation's too."""
    x, y = data.arrays, data.targets
    kwargs["batch_size"] = batch // part.processes
    sample_weight = kwargs.pop("sample_weight", None)
    at, split = training_split(x, kwargs)
    kwargs.pop("validation_split", None)
    if split:
        kwargs["validation_data"] = tuple(_take(a, slice(at, None)) for a in (x, y, sample_weight) if a is not None)
        x, y, sample_weight = (_take(a, slice(0, at)) for a in (x, y, sample_weight))
    picked = rows(_length(x), batch=batch, part=part)
    warnings = _cut_warning("training", _length(x), batch, part)
    x, y = _take(x, picked), _take(y, picked)
    if sample_weight is not None:
        kwargs["sample_weight"] = _take(sample_weight, picked)
    validation = kwargs.get("validation_data")
    if part.processes > 1 and hasattr(validation, "element_spec"):
        raise AutodistError(
            f"autodist.fit got arrays as x and a {type(validation).__name__} as validation_data in a "
            f"{part.processes}-process JAX job: each process feeds its part of the arrays, and Keras "
            "would shard the dataset only with datasets for both. Expected the same kind for both. "
            "Pass validation arrays (or validation_split), or a tf.data.Dataset for x too."
        )
    if isinstance(validation, (tuple, list)) and validation and classify(validation[0]).arrays is not None:
        val_batch = int(kwargs.get("validation_batch_size") or batch)
        val_rows = rows(_length(validation[0]), batch=val_batch, part=part)
        warnings += _cut_warning("validation", _length(validation[0]), val_batch, part)
        kwargs["validation_data"] = tuple(_take(a, val_rows) for a in validation)
        if kwargs.get("validation_batch_size"):
            kwargs["validation_batch_size"] = val_batch // part.processes
    return x, y, kwargs, warnings


def _dataset(dataset: Any, batch: int, part: Part) -> Any:
    """The dataset at the global ``batch``, each batch cut to a multiple of the replicas."""
    import tensorflow as tf

    dataset = prepare_dataset(dataset, batch)
    if part.replicas == 1:
        return dataset
    replicas = part.replicas

    def cut(*parts: Any) -> Any:
        kept = (tf.shape(tf.nest.flatten(parts)[0])[0] // replicas) * replicas
        parts = tf.nest.map_structure(lambda t: t[:kept], parts)
        return parts if len(parts) > 1 else parts[0]

    return dataset.map(cut)


def _dataset_warning(dataset: Any, batch: int, part: Part) -> list[str]:
    count = samples_per_pass(dataset)
    if count is None and part.replicas > 1:
        return [
            f"the dataset's size is unknown: its last batch is cut to a multiple of the {part.replicas} replicas "
            f"of the JAX mesh's batch axis (fewer than {part.replicas} samples per epoch left out) when it does "
            "not split"
        ]
    return _cut_warning("training", count, batch, part) if count is not None else []


def _cut_warning(what: str, count: int, batch: int, part: Part) -> list[str]:
    left_out = (count % batch) % part.replicas
    if not left_out:
        return []
    return [
        f"{left_out} of the {count} {what} samples are left out of every epoch: the last batch "
        f"({count % batch} samples) must split evenly over the {part.replicas} replicas of the JAX "
        f"mesh's batch axis, so it is cut to {count % batch - left_out}. Pass a number of samples "
        f"that is a multiple of {part.replicas} to use all of them."
    ]


def _length(x: Any) -> int:
    if isinstance(x, Mapping):
        return _length(next(iter(x.values())))
    if isinstance(x, (list, tuple)):
        return _length(x[0])
    return int(x.shape[0])


def _take(x: Any, index: Any) -> Any:
    if x is None:
        return None
    if isinstance(x, Mapping):
        return {k: _take(v, index) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_take(v, index) for v in x)
    return np.asarray(x)[index]
