"""The backend seam: what TensorFlow's ``tf.distribute`` and Keras 3 on JAX each implement, so
every entry point runs one sequence (detect, plan, start, train) whatever the backend.

- :class:`FitCall`: one ``autodist.fit`` call, frozen, with its global batch worked out once.
- :class:`Backend`: the four things an entry point asks of a backend: act when the framework is
  imported, ``init`` (plan here, then start), the scope a custom loop runs in, and ``fit``.

The TensorFlow side is :mod:`autodist.tensorflow.backend`, the JAX side :mod:`autodist.jax.backend`;
:func:`autodist.entry.backends.backend_for` is the one place that chooses between them.

Example:
    >>> FitCall.__dataclass_fields__["requested_batch"].default is None
    True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from autodist.core.input_kinds import Input
from autodist.planning.plans import Plan

__all__ = ["Backend", "FitCall"]


@dataclasses.dataclass(frozen=True)
class FitCall:
    """One ``autodist.fit`` call, as the caller made it. Frozen: every step reads it, none
    changes it; ``fit_kwargs`` is a read-only copy (a ``CallbackList`` given as ``callbacks``
    is read as its list of callbacks, which ``model.fit`` would run)."""

    model: Any
    builder: Any
    data: Input  # x and y, classified once at the entry (:func:`autodist.core.input_kinds.classify`)
    batch_size: int | None
    epochs: int
    strategy: Any
    num_params: int | None
    gpu_memory_fraction: float | None
    backup_dir: Any
    peer_timeout_seconds: float | None
    mixed_precision: bool
    fit_kwargs: Mapping[str, Any]
    requested_batch: int | None = None  # the global batch asked for, worked out once (Input.requested_batch)
    ray_report: bool = True  # in a Ray Train worker: each epoch's metrics to ray.train.report
    ray_checkpoint: bool = True  # ... with worker 0's model as the epoch's ray.train.Checkpoint

    def plan_keywords(self) -> dict[str, Any]:
        """What the call tells the planner (:func:`autodist.core.detect_and_plan.plan_here`'s keywords):
        its model's size where given, the global batch, the strategy, the peers' timeout and, where
        given, the GPU memory fraction."""
        given = {} if self.gpu_memory_fraction is None else {"gpu_memory_fraction": self.gpu_memory_fraction}
        return dict(
            num_params=self.num_params,
            batch_size=self.requested_batch,
            strategy=self.strategy,
            peer_timeout_seconds=self.peer_timeout_seconds,
            **given,
        )

    @property
    def x(self) -> Any:
        """``x`` as the caller passed it: what ``model.fit`` reads."""
        return self.data.raw

    @property
    def y(self) -> Any:
        return self.data.y


class Backend(Protocol):
    """One backend: TensorFlow (``tf.distribute`` strategies) or Keras 3 on JAX (``keras.distribution``)."""

    name: str

    def at_import(self, environ: Mapping[str, str]) -> None:
        """What ``import autodist`` arranges: act once the framework is imported, before it runs anything."""

    def init(self, environ: Mapping[str, str], *, make_global: bool = True, **plan_kwargs: Any) -> tuple[Plan, Any]:
        """Plan here and start: ``(plan, strategy or distribution)``, the distribution set
        globally when ``make_global`` (``init``), or only for a scope (``@distributed``)."""

    def scope(self, distribution: Any) -> AbstractContextManager[Any]:
        """The scope a custom training function runs in."""

    def fit(self, call: FitCall, environ: Mapping[str, str]) -> Any:
        """``autodist.fit``: plan, start, place, train; the ``History`` with ``history.plan``."""
