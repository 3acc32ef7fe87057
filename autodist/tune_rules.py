"""Plan layer, ``strategy="tune"``: which plans to time here, how long tuning may take, and which
plan wins. Pure: :mod:`autodist.tuning` measures and caches; this module only decides.

Candidates on one machine: ``default`` (and ``default`` with ``steps_per_execution=8`` where
autodist would set it), ``one_device``, ``mirrored`` with each cross-device op that runs here
(NCCL only on GPUs), and ``central_storage``. On a cluster (or a TPU) the one candidate is the
rule's plan: MultiWorkerMirrored keeps the same workers and TensorFlow allows one per process,
so every worker takes the same plan without a vote. The order puts the plan most likely to win
first (on CPUs ``default``, measured fastest in ``python -m benchmarks``; with GPUs the rule's
pick), because a short training only has the time to time the first.

Example:
    >>> from autodist.hardware import HardwareSnapshot
    >>> [c.name for c in candidates(HardwareSnapshot.cpu_only(num_cpu_devices=2), default_steps=8)]
    ['default, steps_per_execution=8', 'default', 'one_device', 'mirrored (collective)', 'mirrored (reduction_to_one_device)', 'mirrored (hierarchical_copy)', 'central_storage']
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["TUNE", "TUNE_SHARE", "Candidate", "Timing", "cache_key", "candidates", "pick", "within_budget"]

TUNE = "tune"
#: Tuning stops before it takes more than this share of the planned training (or the budget).
TUNE_SHARE = 0.1
DEFAULT_TUNE_BUDGET_SECONDS = 60.0


@dataclass(frozen=True)
class Candidate:
    """One plan to time: a strategy, its cross-device op, and ``steps_per_execution``."""

    strategy: str
    cross_device_ops: str | None = None
    steps_per_execution: int | None = None

    @property
    def name(self) -> str:
        name = self.strategy + (f" ({self.cross_device_ops})" if self.cross_device_ops else "")
        return name + (f", steps_per_execution={self.steps_per_execution}" if self.steps_per_execution else "")


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
    docstring). ``default_steps`` is the ``steps_per_execution`` autodist would set on
    ``default``/``one_device`` (``None``: it would not)."""
    gpus = len(snapshot.gpus)
    local = gpus or snapshot.num_cpu_devices
    single = Candidate("one_device" if gpus else "default")
    firsts = ([Candidate(single.strategy, None, default_steps)] if default_steps else []) + [single]
    if not gpus:
        firsts.append(Candidate("one_device"))
    if local < 2:
        return tuple(firsts)
    ops = (["nccl"] if gpus and snapshot.platform.startswith("linux") else ["collective"]) + ["reduction_to_one_device", "hierarchical_copy"]
    mirrored = [Candidate("mirrored", op) for op in ops]
    central = [Candidate("central_storage")]
    return tuple(mirrored + firsts + central if gpus else firsts + mirrored + central)


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
        >>> from autodist.hardware import HardwareSnapshot
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


def communication_note(num_workers: int, per_worker_batch: int, gradient_bytes: int, compute_ms: float, all_reduce_ms: float) -> tuple[str, str]:
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
        f"against {compute_ms:.1f} ms of compute for {per_worker_batch} samples per worker. Options: a larger batch per "
        "worker (compute grows, the all-reduce does not), fewer workers, or gradients compressed to float16 before "
        "the all-reduce in a custom loop (TensorFlow's CommunicationOptions has no compression)."
    )
    return reason, warning
