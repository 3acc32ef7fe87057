"""What every plan autodist accepts must be: the invariants the property tests check
(``tests/test_arguments.py``, ``tests/test_validation.py``) on each accepted plan."""

from __future__ import annotations

import numpy as np

from autodist.fields import MAX_WAIT_SECONDS
from autodist.planning.arguments import MAX_BATCH_SIZE, MAX_OPTIMIZER_SLOTS
from autodist.planning.plans import StrategyKind
from autodist.settings import CPU_DEVICES_PER_CORE, MIN_CPU_DEVICES_BOUND


def devices_of(snapshot) -> int:
    """The devices a single-host strategy replicates over: JAX's, the GPUs, else the logical CPUs."""
    if snapshot.keras_backend == "jax":
        return max(1, len(snapshot.jax_devices))
    return len(snapshot.gpus) or snapshot.num_cpu_devices


def check_plan_invariants(the_plan, snapshot, given: dict, *, refuse_when_nothing_fits: bool = True) -> None:
    """What every accepted plan must be, whatever led to it: ``given`` is what the call asked for
    (``strategy``, ``batch_size``, ``gpu_memory_fraction``, ``peer_timeout_seconds``, ...)."""
    kind, replicas = the_plan.strategy, the_plan.num_replicas
    assert replicas >= 1 and the_plan.global_batch_size == the_plan.per_replica_batch_size * replicas, the_plan
    assert 1 <= the_plan.global_batch_size <= MAX_BATCH_SIZE, the_plan
    if isinstance(given.get("batch_size"), (int, np.integer)) and not isinstance(given["batch_size"], bool):
        assert abs(the_plan.global_batch_size - int(given["batch_size"])) < replicas * (8 if kind == StrategyKind.TPU else 1), the_plan
    if the_plan.footprint_bytes is not None:
        assert the_plan.footprint_bytes > 0 and all(part >= 0 for part in the_plan.memory[0].device.values()), the_plan.memory
    assert snapshot.num_cpu_devices <= max(MIN_CPU_DEVICES_BOUND, CPU_DEVICES_PER_CORE * snapshot.num_cpus), "logical devices bounded by the cores"
    cluster = snapshot.cluster
    exists = {
        StrategyKind.DEFAULT: cluster is None or the_plan.num_workers == 1,
        StrategyKind.ONE_DEVICE: cluster is None,
        StrategyKind.MIRRORED: cluster is None and replicas == devices_of(snapshot) and (replicas >= 2 or given.get("strategy") not in (None, "auto")),
        StrategyKind.CENTRAL_STORAGE: cluster is None and replicas == devices_of(snapshot),
        StrategyKind.MULTI_WORKER_MIRRORED: cluster is not None and cluster.num_workers >= 2,
        StrategyKind.PARAMETER_SERVER: cluster is not None and cluster.num_ps >= 1,
        StrategyKind.TPU: snapshot.tpu is not None,
        StrategyKind.DATA_PARALLEL: snapshot.keras_backend == "jax",
        StrategyKind.MODEL_PARALLEL: snapshot.keras_backend == "jax",
    }
    assert exists.get(kind, False), f"{kind.value} does not exist on this snapshot: {snapshot.to_dict()}"
    trains = cluster is not None and cluster.task_type != "evaluator"  # the evaluator evaluates alone, on its own devices
    assert replicas <= devices_of(snapshot) * (cluster.num_workers if trains else 1) * (8 if kind == StrategyKind.TPU else 1)
    forced = given.get("strategy")
    name = forced.value if isinstance(forced, StrategyKind) else forced.strip().lower() if isinstance(forced, str) else "auto"
    if name not in ("auto", "tune"):
        assert kind.value == name, (kind, forced)
    timeout = given.get("peer_timeout_seconds")
    if timeout is not None:
        assert the_plan.peer_timeout_seconds == float(timeout) and 0 < the_plan.peer_timeout_seconds <= MAX_WAIT_SECONDS
    if snapshot.gpus and name == "auto" and the_plan.footprint_bytes is not None and refuse_when_nothing_fits:
        fraction = float(given.get("gpu_memory_fraction", 0.9))
        smallest = min(gpu.memory_bytes for gpu in snapshot.gpus)
        assert the_plan.footprint_bytes <= fraction * smallest + 1, (the_plan.footprint_bytes, fraction, smallest)
    slots = given.get("optimizer_slots")
    if slots is not None:
        assert 0 <= int(slots) <= MAX_OPTIMIZER_SLOTS
