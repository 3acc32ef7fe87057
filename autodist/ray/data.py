"""A Ray Data shard as ``autodist.fit``'s input: ``autodist.fit(model, shard, y="label",
batch_size=64)`` in a Ray Train worker, where ``shard = ray.train.get_dataset_shard("train")``.

The shard is this worker's part of the dataset (Ray splits it over the workers, the same number
of rows to each), so it is read as Ray's own ``to_tf`` reads it: ``y`` names the label column (or
columns), every other column is a feature (one column: a tensor; several: a dict by column name,
as a functional model's named inputs take them), and ``batch_size`` is the **global** batch, as
everywhere in autodist. Each worker's dataset yields batches of the global size with
auto-sharding off; the strategy takes each replica's share of them, so a worker reads its own
rows ``global batch / workers`` at a time and the workers together train the global batch in
each step. Without ``batch_size``, Keras's default (32) is the global batch.

Example:
    >>> label_columns("y", ["x", "y"]), feature_columns(["y"], ["a", "b", "y"])
    (['y'], ['a', 'b'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autodist.errors import AutodistError
from autodist.planning.global_batch import KERAS_DEFAULT_BATCH_SIZE

__all__ = ["feature_columns", "from_ray_data", "label_columns"]


def label_columns(y: Any, columns: Sequence[str]) -> list[str]:
    """The label columns ``y`` names, checked against the shard's ``columns``."""
    names = (
        [y]
        if isinstance(y, str)
        else list(y)
        if isinstance(y, (list, tuple)) and all(isinstance(n, str) for n in y)
        else None
    )
    if not names:
        example = columns[-1] if columns else "label"
        raise AutodistError(
            f"autodist.fit got a Ray Data shard as x, with y={_short(y)}. Expected y= the name of "
            f"its label column, or a list of them (its columns: {', '.join(columns)}): autodist reads "
            "the shard as Ray's to_tf does, the other columns as the features. For example "
            f"autodist.fit(model, shard, y={example!r}, batch_size=64)."
        )
    unknown = [name for name in names if name not in columns]
    if unknown:
        raise AutodistError(
            f"autodist.fit got y={names!r} for a Ray Data shard whose columns are {', '.join(columns)}: "
            f"{', '.join(unknown)} is not one of them. Expected y= the label column's name."
        )
    return names


def feature_columns(labels: Sequence[str], columns: Sequence[str]) -> list[str]:
    """Every column that is not a label, in the shard's order."""
    features = [name for name in columns if name not in labels]
    if not features:
        raise AutodistError(
            f"autodist.fit got y={list(labels)!r}, every column of the Ray Data shard: no column is "
            "left for the features. Expected y= the label column(s) only."
        )
    return features


def from_ray_data(x: Any, y: Any, requested_batch: int | None) -> tuple[Any, int]:
    """A Ray Data shard passed as ``x`` (:class:`autodist.core.input_kinds.RayShard`), with ``y``
    its label column(s), as this worker's ``tf.data.Dataset`` and its global batch
    (``requested_batch``, or Keras's default): see the module's docstring."""
    schema = x.schema()
    columns = list(schema.names) if schema is not None else []
    labels = label_columns(y, columns)
    features = feature_columns(labels, columns)
    batch = requested_batch or KERAS_DEFAULT_BATCH_SIZE
    dataset = x.to_tf(
        feature_columns=features[0] if len(features) == 1 else features,
        label_columns=labels[0] if len(labels) == 1 else labels,
        batch_size=batch,
    )
    return dataset, batch


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{type(value).__name__} ({text[:40]}...)"
