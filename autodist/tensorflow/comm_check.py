"""Act layer: before multi-worker training, measure one step's compute and one all-reduce of
the gradients on this cluster, and warn when the projected speedup over one worker is below
1.2x (:func:`autodist.planning.tune_rules.communication_note` says what and why).

Both are measured here, on the workers, with the model as it will train: the compute as the
forward and backward pass of a per-worker batch of zeros on this worker's replicas, without an
update (weights, optimizer and metrics stay as they are; ``training=False``, so no batch
statistics move); the all-reduce as TensorFlow's collective all-reduce of zeros shaped like the
trainable variables, across every worker, as ``fit`` does it each step. Every worker runs the
same collective in the same order. Each takes a warm-up call and the median of a few.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from typing import Any

from autodist.log import get_logger, warn_all
from autodist.planning.plans import Plan
from autodist.planning.tune_rules import communication_note

__all__ = ["check_communication"]

CALLS = 5


def check_communication(model: Any, strategy: Any, the_plan: Plan) -> Plan:
    """``the_plan`` with the communication check's reason; warns when the projection is low.
    Only for ``multi_worker_mirrored``; a model whose inputs are unknown (subclassed, unbuilt
    inputs) is not checked, and the plan says so."""
    if not the_plan.type.collective_workers:
        return the_plan
    local = max(1, the_plan.num_replicas // max(1, the_plan.num_workers))
    per_replica = int(the_plan.per_replica_batch_size or 1)
    inputs = _zeros_like_inputs(model, per_replica)
    if inputs is None:
        return _with(the_plan, "communication check skipped: the model's input shapes are unknown (a subclassed model)")
    variables = list(model.trainable_variables)
    try:  # the same model on every worker fails the same way, before any collective
        compute_ms = _median_ms(_compute_step(model, strategy, inputs))
    except Exception as err:
        return _with(the_plan, f"communication check skipped: one step on zeros failed ({type(err).__name__})")
    all_reduce_ms = _median_ms(_all_reduce(strategy, variables))
    size = sum(math.prod(int(dim) for dim in v.shape) * _itemsize(v) for v in variables)
    reason, warning = communication_note(the_plan.num_workers, per_replica * local, size, compute_ms, all_reduce_ms)
    get_logger().info(reason)
    if warning:
        warn_all([warning])
    return _with(the_plan, reason)


def _with(the_plan: Plan, reason: str) -> Plan:
    return dataclasses.replace(the_plan, reasons=the_plan.reasons + (reason,))


def _zeros_like_inputs(model: Any, batch: int) -> Any:
    import tensorflow as tf

    try:
        specs = model.inputs
    except (AttributeError, ValueError):
        return None
    if not specs:
        return None
    tensors = []
    for spec in specs:
        dims = list(spec.shape)[1:]
        if any(d is None for d in dims):
            return None
        try:
            tensors.append(tf.zeros([batch, *dims], dtype=tf.as_dtype(getattr(spec.dtype, "name", spec.dtype))))
        except (TypeError, ValueError):  # a string input (text models): no zeros to feed
            return None
    return tensors[0] if len(tensors) == 1 else tensors


def _compute_step(model: Any, strategy: Any, inputs: Any) -> Any:
    import tensorflow as tf

    def replica() -> Any:
        with tf.GradientTape() as tape:
            outputs = model(inputs, training=False)
            loss = tf.add_n([tf.reduce_sum(tf.cast(o, tf.float32)) for o in tf.nest.flatten(outputs)])
        return tape.gradient(loss, model.trainable_variables)

    return tf.function(lambda: strategy.run(replica))


def _all_reduce(strategy: Any, variables: list[Any]) -> Any:
    import tensorflow as tf

    zeros = [tf.zeros(v.shape, dtype=v.dtype) for v in variables]
    return tf.function(lambda: strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("SUM", zeros)))


def _median_ms(function: Any) -> float:
    function()  # warm-up: tracing, and the collective's first rendezvous
    times = []
    for _ in range(CALLS):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _itemsize(variable: Any) -> int:
    import tensorflow as tf

    return tf.as_dtype(getattr(variable.dtype, "name", variable.dtype)).size
