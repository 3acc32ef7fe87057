"""Plan layer, ``strategy="tune"``: which plans to time here, how long tuning may take, and which
plan wins. Pure: :mod:`autodist.tensorflow.tuning` measures and caches; this module only decides.

Candidates on one machine: ``default`` (and ``default`` with ``steps_per_execution=8`` where
autodist would set it), ``one_device``, ``mirrored`` with each cross-device op that runs here
(NCCL only on GPUs), and ``central_storage``. On a cluster (or a TPU) the one candidate is the
rule's plan: MultiWorkerMirrored keeps the same workers and TensorFlow allows one per process,
so every worker takes the same plan without a vote. The order puts the plan most likely to win
first (on CPUs ``default``, measured fastest in ``python -m benchmarks``; with GPUs the rule's
pick), because a short training only has the time to time the first.

Example:
    >>> from autodist.detection.hardware import HardwareSnapshot
    >>> [c.name for c in candidates(HardwareSnapshot.cpu_only(num_cpu_devices=2),
    ...     default_steps=8)]  # doctest: +NORMALIZE_WHITESPACE
    ['default, steps_per_execution=8', 'default', 'one_device', 'mirrored (collective)', 'mirrored
    (reduction_to_one_device)', 'mirrored (hierarchical_copy)', 'central_storage']
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from autodist.planning.strategy_types import TYPES, Candidate

__all__ = [
    "TIMED_STEPS",
    "TUNE",
    "TUNE_SHARE",
    "Candidate",
    "Projection",
    "Timing",
    "cache_key",
    "candidates",
    "next_cost",
    "pick",
    "untimed_reason",
    "within_budget",
]

TUNE = "tune"
#: Tuning stops before it takes more than this share of the planned training (or the budget).
TUNE_SHARE = 0.1
DEFAULT_TUNE_BUDGET_SECONDS = 60.0
#: Global batches per timed epoch (and per warm-up epoch) of a candidate.
TIMED_STEPS = 16
#: What timing a candidate costs besides its steps: its strategy, the model's copy and the
#: tracing. Measured on 2 cores: about 0.6 s of the 0.8 s a small MLP's first candidate takes.
CANDIDATE_OVERHEAD_SECONDS = 0.5
#: The least a Keras training step takes whatever its compute (dispatch, callbacks).
MIN_STEP_SECONDS = 0.001


@dataclass(frozen=True)
class Timing:
    """A candidate's measured samples per second, or the error that made it fail, or why it
    was not timed (``skipped``)."""

    name: str
    samples_per_second: float | None = None
    error: str = ""
    skipped: str = ""

    def describe(self) -> str:
        if self.samples_per_second is not None:
            return f"{self.name} {self.samples_per_second:,.0f} samples/s"
        return f"{self.name} {'failed: ' + self.error if self.error else 'not timed: ' + self.skipped}"


def candidates(snapshot: Any, *, default_steps: int | None) -> tuple[Candidate, ...]:
    """The plans worth timing on this single machine, most likely winner first (module
    docstring): each strategy type's own (:meth:`~autodist.planning.strategy_types.StrategyType.tune_candidates`),
    in its ``tune_order``. ``default_steps`` is the ``steps_per_execution`` autodist would set on
    ``default``/``one_device`` (``None``: it would not)."""
    with_gpus = 0 if snapshot.gpus else 1
    ordered = sorted(TYPES.values(), key=lambda t: t.tune_order[with_gpus])
    return tuple(c for t in ordered for c in t.tune_candidates(snapshot, default_steps))


@dataclass(frozen=True)
class Projection:
    """The planned training's length, estimated before anything is timed: its steps, each
    costing the model's training FLOPs (3 x the forward pass's 2 per multiply-add) at the
    rate a matrix product reaches on this machine, or :data:`MIN_STEP_SECONDS`.

    Example:
        >>> p = Projection(steps=128, multiply_adds=268_000, batch=256, flops_per_second=80e9)
        >>> round(p.step_seconds * 1000, 1), round(p.seconds, 2)
        (5.1, 0.66)
    """

    steps: int
    multiply_adds: int
    batch: int
    flops_per_second: float

    @property
    def step_seconds(self) -> float:
        return max(MIN_STEP_SECONDS, 6 * self.multiply_adds * self.batch / max(self.flops_per_second, 1.0))

    @property
    def seconds(self) -> float:
        return self.steps * self.step_seconds


def untimed_reason(projection: Projection, budget: float) -> str:
    """Why no candidate is timed (empty when the first one fits): timing one costs
    :data:`CANDIDATE_OVERHEAD_SECONDS` and two epochs of :data:`TIMED_STEPS`, and tuning may take
    ``min(budget, TUNE_SHARE x the planned training)``.

    Example:
        >>> short = Projection(steps=128, multiply_adds=268_000, batch=256, flops_per_second=80e9)
        >>> untimed_reason(short, 60.0).split(" (")[0]
        'not timed: the planned training is about 0.66 s'
        >>> untimed_reason(Projection(20_000, 268_000, 256, 80e9), 60.0)
        ''
    """
    cost = CANDIDATE_OVERHEAD_SECONDS + 2 * TIMED_STEPS * projection.step_seconds
    limit = min(budget, TUNE_SHARE * projection.seconds)
    if cost <= limit:
        return ""
    return (
        f"not timed: the planned training is about {_seconds(projection.seconds)} ({projection.steps:,} steps of about "
        f"{projection.step_seconds * 1000:.1f} ms, estimated: {projection.multiply_adds:,} multiply-adds per sample at "
        f"{projection.flops_per_second / 1e9:.0f} GFLOP/s, "
        f"a matrix product's rate here), and timing one candidate costs about {cost:.1f} s, more than "
        f"{_seconds(limit)} ({TUNE_SHARE:.0%} of the training, or the budget)"
    )


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value >= 1 else f"{value:.2f} s"


def next_cost(costs: Sequence[tuple[float, int]], replicas: int) -> float:
    """What timing a candidate of ``replicas`` replicas will cost, from ``(seconds, replicas)`` of
    those timed so far: the dearest per replica, times its replicas (a mirrored candidate traces
    and steps once per replica; measured on 4 logical CPUs, it cost about 4 times ``default``).

    Example:
        >>> next_cost([(0.8, 1), (1.2, 1)], replicas=4)
        4.8
    """
    return max(seconds / max(count, 1) for seconds, count in costs) * max(replicas, 1)


def within_budget(spent: float, next_cost: float, planned_seconds: float, budget: float) -> bool:
    """Whether timing one more candidate keeps tuning within ``min(budget, TUNE_SHARE x the
    planned training)``.

    Example:
        >>> within_budget(2.0, 2.0, planned_seconds=30.0, budget=60.0), within_budget(2.0, 2.0, 1000.0, 60.0)
        (False, True)
    """
    return spent + next_cost <= min(budget, TUNE_SHARE * planned_seconds)


def pick(timings: Sequence[Timing]) -> Timing | None:
    """The fastest timed candidate (``None`` when none ran)."""
    timed = [t for t in timings if t.samples_per_second is not None]
    return max(timed, key=lambda t: t.samples_per_second or 0.0) if timed else None


def cache_key(snapshot: Any, signature: Sequence[Any], batch_size: int, environ_steps: str) -> dict[str, Any]:
    """What a tuned decision depends on: the hardware, the model (layer classes, weight shapes and
    dtypes, optimizer), the global batch, the versions, and the ``steps_per_execution`` switch.

    Example:
        >>> from autodist.detection.hardware import HardwareSnapshot
        >>> key = cache_key(HardwareSnapshot.cpu_only(), ["Dense", [4, 2]], 64, "")
        >>> key["batch_size"], len(key["digest"])
        (64, 16)
    """
    fields = {
        "hardware": {
            "cpus": snapshot.num_cpus,
            "cpu_devices": snapshot.num_cpu_devices,
            "gpus": [[g.name, g.memory_bytes] for g in snapshot.gpus],
            "platform": snapshot.platform,
        },
        "model": list(signature),
        "batch_size": batch_size,
        "versions": [snapshot.tensorflow_version, snapshot.keras_flavor, snapshot.keras_version],
        "steps_per_execution_setting": environ_steps,
    }
    fields["digest"] = hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return fields


#: Below this projected speedup over one worker, the communication check warns.
MIN_SPEEDUP = 1.2


def projected_speedup(num_workers: int, compute_ms: float, all_reduce_ms: float) -> float:
    """Samples/s of ``num_workers`` over one worker with the same per-worker batch: each step
    computes for ``compute_ms`` and then all-reduces the gradients for ``all_reduce_ms`` (Keras
    does not overlap them).

    Example:
        >>> round(projected_speedup(2, compute_ms=11.0, all_reduce_ms=15.0), 2)
        0.85
    """
    return num_workers * compute_ms / max(compute_ms + all_reduce_ms, 1e-9)


def communication_note(
    num_workers: int, per_worker_batch: int, gradient_bytes: int, compute_ms: float, all_reduce_ms: float
) -> tuple[str, str]:
    """The plan's reason with the projection, and the warning (empty when the projection is at
    least :data:`MIN_SPEEDUP`), with the numbers and the options."""
    speedup = projected_speedup(num_workers, compute_ms, all_reduce_ms)
    reason = (
        f"communication check: a step computes for {compute_ms:.1f} ms ({per_worker_batch} samples per worker) and "
        f"all-reduces {gradient_bytes / 1e6:.1f} MB of gradients in {all_reduce_ms:.1f} ms (both measured here, "
        f"over this cluster's link): projected {speedup:.2f}x the samples/s of one worker with {num_workers} workers"
    )
    if speedup >= MIN_SPEEDUP:
        return reason, ""
    warning = (
        f"{num_workers} workers are projected to train at {speedup:.2f}x the samples/s of one worker (below "
        f"{MIN_SPEEDUP}x): each step all-reduces {gradient_bytes / 1e6:.1f} MB of gradients in {all_reduce_ms:.1f} ms, "
        f"against {compute_ms:.1f} ms of compute for {per_worker_batch} samples per worker. Options: a larger batch "
        "per "
        "worker (compute grows, the all-reduce does not), fewer workers, or gradients compressed to float16 before "
        "the all-reduce in a custom loop (TensorFlow's CommunicationOptions has no compression)."
    )
    return reason, warning
