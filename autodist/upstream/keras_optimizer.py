"""Keras 3's optimizer under ``tf.distribute`` (touches ``keras.distributed_gradients`` and
``keras.optimizer_build``, ``keras.replica_slices``): the patches behind the workarounds
``distributed_gradients``, ``optimizer_built_in_step`` and ``replica_slices_summed`` of
:mod:`autodist.planning.keras_compat`.

An optimizer first used inside a step (a GAN's two optimizers, built by their first ``apply``)
builds its variables in each replica's thread while the step is traced: under MirroredStrategy
an optimizer with slots (Adam) then fails at the step's first run ("You must feed a value for
placeholder tensor"). :func:`patch_optimizer_build` builds it once, in the cross-replica context
(a merge call, outside the traced step), as TensorFlow's own optimizers create their slots.

Keras 3.3 and 3.4 reduce no gradient over the replicas (``_all_reduce_sum_gradients`` runs in
the merge call, where there is no replica context, and returns them as they are): each replica
applies its own, and the replicas drift apart. Keras 3.5 to 3.7 sum them, but ``fit`` computes
each replica's loss as the mean over its own share, so the step is N times one device's. Keras
3.8 divides ``fit``'s loss by the replicas (``scale_loss_for_distribution``), which makes the sum
the mean.

The patches make 3.3-3.7 do what 3.8 does for ``fit``: gradients summed over the replicas (in the
merge call, where 3.3-3.4 leave them unreduced; with collective cross-device ops there is no merge
call, and Keras sums them in the replica context), and
``fit``'s loss divided by them (through ``scale_loss``, which ``fit``'s ``train_step`` calls before
taking gradients; a custom training loop does not, and gets TensorFlow's sum, as its loss is
divided by the global batch).

A sparse gradient (an embedding's ``tf.IndexedSlices``) is all-reduced by concatenating the
replicas' slices, and Keras's sparse update squares each slice apart: an embedding that every
replica looks up alike (a position embedding) gets Adam's second moment from the sum of the
replicas' squared slices, where one device squares their sum. :func:`patch_replica_slices_summed`
sums such slices after the reduction (:func:`replicas_alike_summed`).

Example:
    >>> from autodist.process import STATE, replace
    >>> set(STATE.originals(__name__)) <= {"reduce", "scale_loss", "build", "slices"}  # Keras's own, once patched
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autodist.process import STATE, replace
from autodist.upstream.keras_own_steps import in_own_step
from autodist.upstream.surface import patch_once
from autodist.upstream.workaround import EVERY_RELEASE, GRADIENTS_REDUCED, Workaround

__all__ = [
    "patch_distributed_gradients",
    "patch_optimizer_build",
    "looked_up_once_per_step",
    "patch_replica_slices_summed",
    "replicas_alike_summed",
    "DISTRIBUTED_GRADIENTS",
    "REPLICA_SLICES_SUMMED",
    "OPTIMIZER_BUILT_IN_STEP",
]


def divides_loss_itself() -> bool:
    """Whether this Keras divides the loss by the replicas itself (3.8 and later)."""
    try:
        from keras.src.losses import loss
    except ImportError:
        return False
    return hasattr(loss, "scale_loss_for_distribution")


@patch_once("scale_loss", "keras.distributed_gradients", unless=divides_loss_itself)
def patch_distributed_gradients() -> Any:
    """Sum the gradients over the replicas in the merge call (where Keras 3.3-3.4 leave them
    unreduced), and divide ``fit``'s loss by the replicas (``scale_loss``) on 3.3-3.7."""
    import tensorflow as tf
    from keras.src.backend.tensorflow import optimizer as tf_optimizer
    from keras.src.optimizers import base_optimizer, loss_scale_optimizer

    original_reduce = tf_optimizer.TFOptimizer._all_reduce_sum_gradients

    def _all_reduce_sum_gradients(self: Any, grads_and_vars: Any) -> Any:
        # In a merge call (cross-device ops that merge: ReductionToOneDevice, HierarchicalCopy),
        # Keras 3.3-3.4 find no replica context and return the gradients unreduced: sum them there.
        if tf.distribute.get_replica_context() is not None or not tf.distribute.in_cross_replica_context():
            return original_reduce(self, grads_and_vars)
        grads_and_vars = list(grads_and_vars)
        strategy = tf.distribute.get_strategy()
        present = [(grad, var) for grad, var in grads_and_vars if grad is not None]
        if (
            strategy.num_replicas_in_sync < 2
            or not present
            or not isinstance(present[0][0], tf.distribute.DistributedValues)
        ):
            return grads_and_vars
        # On one machine through one device: the strategy's collective ops fail there under Adam ("You
        # must feed a value for placeholder tensor"); across workers, only the strategy's own reach them.
        if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
            reduced = iter(strategy.extended.batch_reduce_to(tf.distribute.ReduceOp.SUM, present))
        else:
            reduced = iter(tf.distribute.ReductionToOneDevice().batch_reduce(tf.distribute.ReduceOp.SUM, present))
        return [(None if grad is None else next(reduced), var) for grad, var in grads_and_vars]

    def scaled(original: Any) -> Any:
        def scale_loss(self: Any, loss: Any) -> Any:
            loss = original(self, loss)
            # in a step of the model's own, own_step_replica_mean divides the gradients instead
            if in_own_step() or tf.distribute.in_cross_replica_context() or not tf.distribute.has_strategy():
                return loss
            replicas = int(tf.distribute.get_strategy().num_replicas_in_sync)
            return loss if replicas < 2 else loss * tf.cast(1.0 / replicas, loss.dtype)

        return scale_loss

    replace(tf_optimizer.TFOptimizer, "_all_reduce_sum_gradients", _all_reduce_sum_gradients)
    originals = (base_optimizer.BaseOptimizer.scale_loss, loss_scale_optimizer.LossScaleOptimizer.scale_loss)
    replace(base_optimizer.BaseOptimizer, "scale_loss", scaled(originals[0]))
    replace(loss_scale_optimizer.LossScaleOptimizer, "scale_loss", scaled(originals[1]))
    STATE.originals(__name__)["reduce"] = original_reduce
    return originals


@patch_once("build", "keras.optimizer_build")
def patch_optimizer_build() -> Any:
    """An optimizer not built yet, applied in a replica's step under a strategy with more than
    one replica, is built across the replicas first: in a merge call, with its variables created
    outside the step being traced, under the strategy; anywhere else ``apply`` is Keras's."""
    import tensorflow as tf
    from keras.src import backend
    from keras.src.optimizers import base_optimizer

    original_apply = base_optimizer.BaseOptimizer.apply

    def apply(self: Any, grads: Any, trainable_variables: Any = None) -> Any:
        first_in_a_replica = (
            trainable_variables is not None
            and not self.built
            and len(grads)
            and tf.distribute.has_strategy()
            and not tf.distribute.in_cross_replica_context()
            and tf.distribute.get_replica_context().num_replicas_in_sync > 1
        )
        if first_in_a_replica:
            trainable_variables = list(trainable_variables)

            def build(strategy: Any) -> None:
                with tf.init_scope(), strategy.scope():
                    if not self.built:
                        with backend.name_scope(self.name, caller=self):
                            self.build(trainable_variables)
                        self.built = True

            tf.distribute.get_replica_context().merge_call(build)
        return original_apply(self, grads, trainable_variables)

    replace(base_optimizer.BaseOptimizer, "apply", apply)
    return original_apply


def replicas_alike_summed(grad: Any, replicas: int) -> Any:
    """A sparse gradient all-reduced over ``replicas`` (``tf.IndexedSlices``, which TensorFlow sums
    by concatenating the replicas' slices in their order) with each row's slices summed into the
    first replica's block where every replica's block holds the same indices in the same order (a
    lookup that does not depend on the batch: a position embedding, looked up once per step); the
    other blocks then hold zeros. Any other gradient comes back as it is.

    One device looks such an embedding up once per step, and its gradient is one slice per row:
    Keras's sparse optimizer update squares it (Adam's second moment). On N replicas each replica
    looks it up once with its share's gradient, and Keras's update would square each slice apart
    (g1² + g2², where one device takes (g1 + g2)²). A lookup of the batch's own tokens is one slice
    per token on one device too; its blocks differ (each replica looked up its own samples) and
    stay as they are, and so does a block that holds a row twice (positions tiled over a share's
    samples: one slice per sample on one device too). The sum of the slices, and so a dense or
    plain-SGD update, is unchanged. :func:`looked_up_once_per_step` says which lookups these are."""
    import tensorflow as tf

    if not isinstance(grad, tf.IndexedSlices) or replicas < 2:
        return grad
    indices = grad.indices
    count = tf.shape(indices, out_type=indices.dtype)[0]
    block = count // replicas
    row_in_block = tf.math.floormod(tf.range(count, dtype=indices.dtype), tf.maximum(block, 1))
    first = tf.sort(indices[:block])
    alike = tf.logical_and(
        tf.logical_and(block > 0, tf.equal(block * replicas, count)),
        tf.logical_and(
            tf.reduce_all(tf.equal(tf.gather(indices, row_in_block), indices)),
            tf.reduce_all(tf.not_equal(first[1:], first[:-1])),  # each row once in a replica's block
        ),
    )
    summed = tf.math.unsorted_segment_sum(grad.values, row_in_block, count)  # blocks after the first: zeros
    return tf.IndexedSlices(tf.where(alike, summed, grad.values), indices, grad.dense_shape)


#: Ops that read only the shape of their input.
_SHAPE_OPS = ("Shape", "ShapeN", "Size", "Rank")


def looked_up_once_per_step(grad: Any) -> bool:
    """Whether ``grad`` (one replica's gradient, before the all-reduce) is a sparse gradient whose
    rows the step computes from constants alone (a position embedding's ``ops.arange``): the
    same rows on every replica and on one device, whatever the batch. Its rows' graph holds no
    input, no variable's value and no random draw (a shape counts where it is fully known: a
    table's); eagerly, where there is no graph to read, ``False``."""
    import tensorflow as tf

    if not isinstance(grad, tf.IndexedSlices) or not hasattr(grad.indices, "op"):
        return False
    seen: set[str] = set()
    stack = [grad.indices.op]
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in _SHAPE_OPS and all(tensor.shape.is_fully_defined() for tensor in op.inputs):
            continue
        if op.op_def is not None and op.op_def.is_stateful or (not op.inputs and op.type != "Const"):
            return False  # an input (Placeholder), a variable's value, a random draw, an iterator
        stack.extend(tensor.op for tensor in op.inputs)
    return True


@patch_once("slices", "keras.replica_slices")
def patch_replica_slices_summed(applies: Callable[[Any], bool]) -> Any:
    """Sum the replicas' slices of a sparse gradient whose rows the step computes from constants
    alone (:func:`looked_up_once_per_step`) and that every replica takes at the same rows
    (:func:`replicas_alike_summed`), once Keras has all-reduced the gradients, under a strategy for
    which ``applies(strategy)`` (autodist's, or the script's once autodist.fit trained under it) with
    more than one replica; anywhere else Keras's reduction as it is. On Keras 3.3-3.4, whose
    reduction autodist runs in the merge call (``distributed_gradients``), the reduced gradient
    reaches every replica's update as the one tensor it is; a gradient returned unreduced is left
    as it is."""
    import tensorflow as tf
    from keras.src.backend.tensorflow import optimizer as tf_optimizer

    original = tf_optimizer.TFOptimizer._all_reduce_sum_gradients

    def _all_reduce_sum_gradients(self: Any, grads_and_vars: Any) -> Any:
        grads_and_vars = list(grads_and_vars)
        reduced = original(self, grads_and_vars)
        strategy = tf.distribute.get_strategy()
        replicas = int(strategy.num_replicas_in_sync)
        if replicas < 2 or not applies(strategy):
            return reduced
        return [
            (_summed(strategy, before, after, replicas), var)
            for (before, _), (after, var) in zip(grads_and_vars, reduced, strict=True)
        ]

    def _summed(strategy: Any, before: Any, after: Any, replicas: int) -> Any:
        if after is None or after is before:  # no gradient, or returned unreduced
            return after
        merged = isinstance(before, tf.distribute.DistributedValues)  # the merge call: per replica, then reduced
        first = strategy.experimental_local_results if merged else (lambda value: (value,))
        if not looked_up_once_per_step(first(before)[0]):
            return after
        return replicas_alike_summed(first(after)[0], replicas)

    replace(tf_optimizer.TFOptimizer, "_all_reduce_sum_gradients", _all_reduce_sum_gradients)
    return original


# --- the workarounds whose patches these are (autodist.upstream.keras_workarounds gathers them) ---

DISTRIBUTED_GRADIENTS = Workaround(
    name="distributed_gradients",
    upstream="Keras 3.3-3.7 under tf.distribute (fixed by scale_loss_for_distribution in 3.8.0)",
    summary=(
        "Keras 3.3 and 3.4 reduce no gradient over the replicas under MirroredStrategy (the "
        "reduction runs where there is no replica context): each replica applies its own "
        "share's gradient and the replicas drift apart (0.09 after 2 epochs of a small MLP). "
        "Keras 3.5-3.7 sum the replicas' gradients of per-share mean losses: each step is N "
        "times one device's. autodist sums them on 3.3-3.4 too, and divides fit's loss by the "
        "replicas, as Keras 3.8 does."
    ),
    affected=(("3.3.0", "3.8.0"),),
    touches=("keras.distributed_gradients",),
    if_fixed="it acts only where the gradients are unreduced, and on releases before 3.8",
    install=lambda act: patch_distributed_gradients(),
)


REPLICA_SLICES_SUMMED = Workaround(
    name="replica_slices_summed",
    in_step=True,
    upstream=(
        "Keras 3's sparse optimizer updates (a tf.IndexedSlices gradient's slices squared apart) under tf.distribute"
    ),
    summary=(
        "TensorFlow all-reduces a sparse gradient (an embedding's tf.IndexedSlices) by concatenating the"
        " replicas' slices, and Keras's sparse update squares each slice apart. An embedding every replica"
        " looks up alike, once per step (keras.io's Vision Transformer and EANet position embeddings), has one"
        " slice per row on one device and one per replica here: Adam's second moment takes g1\u00b2 + g2\u00b2"
        " where one device takes (g1 + g2)\u00b2 (a small model's position embedding 0.0009 apart after 3"
        " epochs). Where every replica's slices hold the same rows in the same order,"
        " autodist sums them into one, for a lookup whose rows the step computes from constants alone (an"
        " arange); a lookup of each batch's own tokens, or of positions tiled over its samples (one slice per"
        " sample on one device too), is left as it is. No extra collective."
    ),
    affected=EVERY_RELEASE,
    touches=("keras.replica_slices",),
    if_fixed="slices summed before a sparse update that already sums them give the same sums",
    install=lambda act: patch_replica_slices_summed(act.trains_under),
)


OPTIMIZER_BUILT_IN_STEP = Workaround(
    name="optimizer_built_in_step",
    upstream="Keras 3 optimizers built by their first apply inside a replica's step",
    summary=(
        "An optimizer first used inside a train_step of the model's own (the two optimizers of the 'customizing"
        " fit' guide's GAN) builds its variables in each replica's thread while the step is traced. Under"
        " MirroredStrategy an optimizer with slots (Adam) then fails at the first step ('You must feed a value"
        " for placeholder tensor') in the gradients' all-reduce, where one device trains (Keras 3.3 and 3.4"
        " reduce no gradient, hence no failure). autodist builds it once for all replicas, in the"
        " cross-replica context, before its first update. Keras 3.16 (keras-nightly 3.16.0.dev2026102704,"
        " measured with TensorFlow 2.22.0rc0; 3.15.1 still fails there) trains it as one device."
    ),
    affected=((GRADIENTS_REDUCED, "3.16.0.dev2026102704"),),
    touches=("keras.optimizer_build",),
    if_fixed="an optimizer built before its first update updates as one built by it",
    install=lambda act: patch_optimizer_build(),
)
