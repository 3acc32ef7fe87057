"""The workers' collective ops that did not match, said as what most likely happened and the fix.

Under MultiWorkerMirroredStrategy, creating a variable broadcasts its initial value from worker
0, and ``fit``, ``evaluate`` and ``save`` run collective ops: every worker must run them, in the
same order. Work that one worker does alone (the chief's evaluation or export) under the strategy
waits for workers that never join; TensorFlow then aborts it with an internal message ("Collective
ops is aborted by: ... tasks are unhealthy", once the others have exited, or "Collective instance
... expected type ..." when they ran other work). :func:`collective_mismatch` turns it into a
:class:`~autodist.errors.CollectiveMismatchError` that names the likely cause and the fix
(``autodist.local()``, :func:`autodist.tensorflow.current_strategy.local`). The activation gives it to
variable creation under autodist's multi-worker strategy, and ``autodist.fit`` to what it raises.

Example:
    >>> collective_mismatch(ValueError("not TensorFlow's")) is None
    True
"""

from __future__ import annotations

import re
import sys

from autodist.errors import CollectiveMismatchError
from autodist.tensorflow.activation_record import current

__all__ = ["MARKERS", "collective_mismatch"]

#: What TensorFlow's messages say when the workers' collective ops were aborted or did not match.
MARKERS = ("Collective ops is aborted by", "Collective instance")
#: A task of a cluster in an op's device name (single-host devices are ``/job:localhost``).
_CLUSTER_DEVICE = re.compile(r"/job:(?!localhost\b)\w+")


def collective_mismatch(err: BaseException, where: str = "in autodist.fit") -> CollectiveMismatchError | None:
    """The :class:`CollectiveMismatchError` for TensorFlow's ``err``, when it is a multi-worker
    job's collective ops aborted or mismatched, raised ``where``; ``None`` for any other error
    (a peer lost during training stays a ``PeerError``: ``fit`` raises that one itself)."""
    tf = sys.modules.get("tensorflow")
    if tf is None or not isinstance(err, tf.errors.OpError):
        return None
    message = str(err)
    the_plan = getattr(current(), "plan", None)
    # a cluster's collective ops: autodist's plan here is multi-worker, or the op's device names a cluster's task
    planned = the_plan is not None and the_plan.type.collective_workers
    if not any(marker in message for marker in MARKERS) or not (planned or _CLUSTER_DEVICE.search(message)):
        return None
    cluster = the_plan.cluster if the_plan is not None else None
    task = f"{cluster.task_type.capitalize()} {cluster.task_index}" if cluster is not None else "This worker"
    first_line = message.strip().splitlines()[0][:300]
    return CollectiveMismatchError(
        f"{task} ran a collective op that the other workers did not join ({where}; TensorFlow: "
        f"{type(err).__name__}: {first_line}). Expected every "
        "worker to run the same work under MultiWorkerMirroredStrategy, in the same order. Likely "
        "cause: work on one worker only (an `if is_chief:` branch) under the multi-worker "
        "strategy: creating variables (building or loading a model, an optimizer, a metric), "
        "saving, evaluating, or calling fit/evaluate on that worker alone, while the others had "
        "finished or were doing other work. Fix: do that work on every worker, or do it inside "
        "`with autodist.local():` (autodist's strategy is not current there), or, in a script "
        "with its own `strategy = tf.distribute.MultiWorkerMirroredStrategy()`, outside its "
        "`with strategy.scope():` block. If every worker ran the same code, a worker failed: "
        "find its own error in its log.",
        err,
    )
