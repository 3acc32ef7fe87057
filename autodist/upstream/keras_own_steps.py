"""A Keras 3 model's own ``train_step`` / ``test_step`` / ``compute_loss`` under ``tf.distribute``
(touch ``keras.own_steps``): the patches behind the workaround ``own_step_replica_mean`` of
:mod:`autodist.planning.keras_compat`.

Under a replicated strategy Keras sums the replicas' gradients. Keras's own ``train_step`` makes
that sum the global batch's mean by dividing each replica's loss by the replicas
(``scale_loss_for_distribution``, inside every ``keras.losses`` loss from 3.8; through
``optimizer.scale_loss`` on 3.5-3.7 with the workaround ``distributed_gradients``), and
multiplies it back before its loss metric sees it. A step the model writes itself gets neither
half right:

- a loss it computes itself (``ops.mean(...)``, a ``keras.losses`` function, keras.io's VAE) is
  not divided, so each optimizer step is N times one device's;
- a loss from a ``keras.losses`` object or ``compute_loss`` is divided, and a metric the step
  records it in (the GAN of the "customizing fit" guide, a ``test_step`` computing ``val_loss``)
  reads 1/N of one device's.

Inside a step of the model's own (:func:`own_steps`), the patches make every loss the
replica's mean, as on one device (no division by the replicas), and divide the gradients the
optimizer applies by the replicas, so that their sum is the global batch's mean gradient. A
step that divides by the global batch itself (``tf.nn.compute_average_loss``) keeps its
gradients as they are.

Where a batch does not split evenly over the replicas (the last batch of an epoch, 89 samples
split 45/44), each replica's mean still counts 1/N in that sum, so the samples of the smaller
share weigh more than on one device. :func:`share_weights` runs a model's ``train_step`` with
each replica's share of the step's samples (``n_k`` of ``n``, one scalar all-reduce) and its loss
weighted by ``N * n_k / n`` inside Keras's tape (``optimizer.scale_loss``; in a step of the
model's own, the gradients the optimizer applies): the sum is then the whole batch's mean
gradient, as one device takes it (the workaround ``uneven_shares_weighted``).

Both are right for a gradient of each share's mean. A step that takes the gradient of a sum over
its samples (keras.io's masked language model: ``tape.gradient`` of a loss with
``reduction=None``, whose gradient is that of its sum; ``tf.reduce_sum``; a ``keras.losses``
loss with ``reduction="sum"``) has, on one device, the sum of every sample's gradient, which is
what Keras's sum of the replicas' gradients already is, evenly split or not. ``tape.gradient``
tells which (:func:`summed_over_samples`), and the optimizer applying those gradients leaves them
as they are.

Keras's own ``train_step`` gets the endpoint-layer pattern wrong the same way (keras.io's
"Endpoint layer pattern"): a ``keras.losses`` loss a layer computes in ``call`` and passes to
``add_loss`` is divided by the replicas, and divided again when Keras sums the model's losses
(``_aggregate_additional_loss``), so its History reads 1/N of one device's and its gradients are
1/N (hidden under Adam, which ignores a gradient's scale). Inside a layer's ``call`` a
``keras.losses`` loss is the replica's mean, and Keras's sum divides it once. Elsewhere nothing
changes.

Example:
    >>> def step(data):
    ...     return in_own_step()
    >>> in_own_step(), own_steps_wrap(step)(None)
    (False, True)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from autodist.upstream.surface import patch_once
from autodist.upstream.workaround import EVERY_RELEASE, Workaround
from autodist.process import STATE, replace

__all__ = [
    "OWN_STEP_METHODS",
    "in_layer_call",
    "in_own_step",
    "own_steps",
    "own_steps_wrap",
    "patch_own_steps",
    "patch_share_weights",
    "share_weights",
    "share_weights_wrap",
    "summed_over_samples",
    "unshare_weights",
    "OWN_STEP_REPLICA_MEAN",
    "UNEVEN_SHARES_WEIGHTED",
]

#: The methods a model's class may define that make its steps its own.
OWN_STEP_METHODS = ("train_step", "test_step", "compute_loss")
#: The methods wrapped on the model (``compute_loss`` runs inside them).
_WRAPPED = ("train_step", "test_step")


def in_own_step() -> bool:
    """Whether the code running (being traced) is inside a step of a model's own."""
    return STATE.per_thread("own_step_depth") > 0  # per replica thread: MirroredStrategy traces each in its own


def own_steps_wrap(step: Callable[..., Any]) -> Callable[..., Any]:
    """``step`` run as a step of the model's own: losses are each replica's mean, and the
    optimizer divides the gradients by the replicas."""

    @functools.wraps(step)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        STATE.thread.own_step_depth = STATE.per_thread("own_step_depth") + 1
        STATE.thread.own_step_divided = False
        _note_step(args[0] if args else kwargs.get("data"))
        try:
            return step(*args, **kwargs)
        finally:
            STATE.thread.own_step_depth -= 1

    wrapped.autodist_own_step = step  # type: ignore[attr-defined]
    return wrapped


def _note_step(data: Any) -> None:
    """A step starts: nothing noted of its gradients yet, and its inputs' static leading dimension
    (what :func:`summed_over_samples` reads a per-sample tensor by)."""
    STATE.thread.own_step_summed = False
    STATE.thread.own_step_noted = {}
    STATE.thread.own_step_rows = _static_rows(data) if data is not None else None


def own_steps(model: Any) -> bool:
    """Run ``model``'s ``train_step`` and ``test_step`` as steps of its own (instance attributes,
    so the class stays Keras's or the user's). Idempotent; ``True`` when newly wrapped: the
    model's cached train and test functions are dropped, to be traced with the wrappers."""
    installed = "compute_average_loss" in STATE.originals(__name__)
    if not installed or all(hasattr(getattr(model, name, None), "autodist_own_step") for name in _WRAPPED):
        return False
    for name in _WRAPPED:
        method = getattr(model, name)
        if not hasattr(method, "autodist_own_step"):
            setattr(model, name, own_steps_wrap(method))
    for cached in ("train_function", "test_function"):
        if getattr(model, cached, None) is not None:
            setattr(model, cached, None)
    return True


def share_weights_wrap(step: Callable[..., Any], applies: Callable[[Any], bool]) -> Callable[..., Any]:
    """``step`` (a model's ``train_step``) run with its replica's share of the step's samples
    known, so that the optimizer weights its gradients by it, under a strategy of more than one
    replica for which ``applies(strategy)``; elsewhere ``step`` as it is."""

    @functools.wraps(step)
    def wrapped(data: Any, *args: Any, **kwargs: Any) -> Any:
        import tensorflow as tf

        context = tf.distribute.get_replica_context()
        if context is None or int(context.num_replicas_in_sync) < 2 or not applies(tf.distribute.get_strategy()):
            return step(data, *args, **kwargs)
        rows = tf.cast(_rows(data), tf.float32)
        total = context.all_reduce(tf.distribute.ReduceOp.SUM, rows)  # every replica, every step, in one order
        STATE.thread.share_weight = tf.math.divide_no_nan(rows * float(context.num_replicas_in_sync), total)
        STATE.thread.own_step_divided = False
        _note_step(data)
        try:
            return step(data, *args, **kwargs)
        finally:
            STATE.thread.share_weight = None

    wrapped.autodist_share_weights = step  # type: ignore[attr-defined]
    return wrapped


def share_weights(model: Any, applies: Callable[[Any], bool]) -> bool:
    """Run ``model``'s ``train_step`` with its gradients weighted by each replica's share of the
    batch (:func:`share_weights_wrap`; an instance attribute, around a step of its own when it
    has one). Idempotent; ``False`` where the patch is not installed (:func:`patch_share_weights`)."""
    if _APPLY not in STATE.originals(__name__):
        return False
    if not hasattr(model.train_step, "autodist_share_weights"):
        model.train_step = share_weights_wrap(model.train_step, applies)
        if getattr(model, "train_function", None) is not None:
            model.train_function = None  # traced again, with the wrapper
        _optimizer_built_before_the_step(model)
    return True


def _optimizer_built_before_the_step(model: Any) -> None:
    """Build a built model's optimizer now, under its strategy, as Keras 3.5 and later do in their
    symbolic build. Keras 3.3 and 3.4 build it inside the first step, in each replica's thread;
    with the weighted step's all-reduce there, that step fails under MirroredStrategy ("You must
    feed a value for placeholder tensor", an Adam on an epoch with a partial last batch, measured
    on 3.3.3), where one device trains. The same slots, built earlier: the same numbers."""
    optimizer, strategy = getattr(model, "optimizer", None), getattr(model, "_distribute_strategy", None)
    if optimizer is None or strategy is None or getattr(optimizer, "built", True) or not model.built:
        return
    if not all(getattr(variable, "_value", variable) is not None for variable in model.trainable_variables):
        return
    with strategy.scope():
        optimizer.build(model.trainable_variables)


def unshare_weights(model: Any) -> bool:
    """Take :func:`share_weights`'s wrapper off ``model``'s ``train_step`` (a later ``fit`` that
    does not weight: the workaround left out, or an input whose batches are whole). ``False``."""
    step = getattr(model, "train_step", None)
    if hasattr(step, "autodist_share_weights"):
        model.train_step = step.autodist_share_weights
        if getattr(model, "train_function", None) is not None:
            model.train_function = None
    return False


def _rows(data: Any) -> Any:
    """The samples in a step's batch: the leading dimension of its first tensor (the inputs'), as
    Keras counts them for its loss metric."""
    import tensorflow as tf

    first = tf.nest.flatten(data)[0]
    if isinstance(first, tf.RaggedTensor):
        return first.nrows()
    if isinstance(first, tf.SparseTensor):
        return first.dense_shape[0]
    return tf.shape(first)[0]


def _replicas() -> int:
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    return 1 if context is None else int(context.num_replicas_in_sync)


def _scaled(grads: Any, factor: Any) -> list[Any]:
    """Each gradient times ``factor`` (a number or a scalar tensor); ``0`` where ``factor`` is
    (a replica with no samples in its share, whose mean loss is not a number)."""
    import tensorflow as tf

    def times(value: Any) -> Any:
        return tf.math.multiply_no_nan(value, tf.cast(factor, value.dtype))

    def one(grad: Any) -> Any:
        if grad is None:
            return None
        if isinstance(grad, tf.IndexedSlices):
            return tf.IndexedSlices(times(grad.values), grad.indices, grad.dense_shape)
        return times(grad)

    return [one(grad) for grad in grads]


def _gradient_factor(grads: list[Any]) -> Any:
    """What the optimizer multiplies this replica's gradients by (``None``: nothing): ``1 / N``
    in a step of the model's own, its share's weight ``N * n_k / n`` where :func:`share_weights`
    runs the step, both where both do. A step that divides by the global batch it names
    (``tf.nn.compute_average_loss(..., global_batch_size=)``) keeps its gradients; one that lets
    TensorFlow divide by ``N`` times its share takes the weight only. The gradient of a sum over
    the samples (:func:`summed_over_samples`, the step's latest ``tape.gradient``) takes neither:
    the replicas' sum of their sums is one device's."""
    divided = STATE.per_thread("own_step_divided", False)
    if divided == "global" or _summed(grads):
        return None  # the global batch's mean, or the sum of every sample's gradient: as the replicas' sum has it
    factor = 1.0 / _replicas() if in_own_step() and not divided and _replicas() > 1 else None
    weight = STATE.per_thread("share_weight", None)
    if weight is not None:
        factor = weight if factor is None else weight * factor
    return factor


@patch_once("compute_average_loss", "keras.own_steps")
def patch_own_steps(applies: Callable[[Any], bool] = lambda strategy: False) -> Any:
    """Install the patches (Keras's loss scaling, ``BaseOptimizer.apply`` and
    ``LossScaleOptimizer.apply``; each acts only in a step of a model's own, and the loss scaling
    in a layer's ``call`` under a strategy for which ``applies(strategy)``: autodist's, or the
    script's once autodist.fit trained under it). On Keras 3.3-3.7,
    whose losses are not divided by the replicas, the workaround ``distributed_gradients``
    divides ``fit``'s loss in ``optimizer.scale_loss``; it asks :func:`in_own_step` and leaves a
    step of the model's own alone."""
    import tensorflow as tf
    from keras.src.losses import loss as loss_module

    for name in ("scale_loss_for_distribution", "unscale_loss_for_distribution"):  # Keras 3.8 and later
        original = getattr(loss_module, name, None)
        if original is not None:
            STATE.originals(__name__)[name] = original
            in_layers = applies if name.startswith("scale") else None  # Keras divides; nothing unscales in a layer
            replace(loss_module, name, _unless_own_step(original, in_layers=in_layers))
    _patch_apply()
    original_average = tf.nn.compute_average_loss

    def compute_average_loss(*args: Any, **kwargs: Any) -> Any:
        if in_own_step():  # the step divides itself: by the global batch it names, or by N * its share
            given = kwargs.get("global_batch_size", args[2] if len(args) > 2 else None) is not None
            STATE.thread.own_step_divided = "global" if given else "replicas"
        return original_average(*args, **kwargs)

    replace(tf.nn, "compute_average_loss", compute_average_loss)
    return original_average


#: The key of the optimizers' ``apply`` among this module's originals.
_APPLY = "BaseOptimizer.apply"


@patch_once(_APPLY, "keras.share_weights")
def patch_share_weights() -> Any:
    """Install the optimizers' ``apply`` that weights a replica's gradients by its share of the
    batch where :func:`share_weights` runs the step (the workaround ``uneven_shares_weighted``)."""
    _patch_apply()
    return STATE.originals(__name__)[_APPLY]


def summed_over_samples(target: Any, rows: int | None = None) -> bool:
    """Whether a ``tape.gradient`` target sums its samples, where a mean would divide them: a
    tensor of one number per sample (its gradient is that of its sum: a loss with
    ``reduction=None``), or a number a ``Sum`` op makes of such a tensor (``tf.reduce_sum``, a
    ``keras.losses`` loss with ``reduction="sum"``), read through ``Identity``, ``Cast`` and a
    product with a variable (a ``LossScaleOptimizer``'s loss scale). A tensor is one number per
    sample where its leading dimension is the step's ``rows`` (its inputs' static leading
    dimension), or unknown. A sum of numbers (``ops.sum([loss, regularization])``, ``ops.sum`` of a
    scalar ``add_loss``) or over another leading dimension (a class's) is not one over the samples.
    Traced steps only: an eager tensor keeps no op, and a number then counts as a mean.

    Example:
        >>> import tensorflow as tf
        >>> summed_over_samples(tf.ones([3]), rows=3), summed_over_samples(tf.ones([10]), rows=3)
        (True, False)
        >>> summed_over_samples(tf.constant(1.0))
        False
    """
    import tensorflow as tf

    def per_sample(value: Any) -> bool:
        shape = getattr(value, "shape", None)
        if shape is None or shape.rank is None or shape.rank == 0 or shape.num_elements() == 1:
            return False
        return shape[0] is None or shape[0] == rows

    def through(op: Any) -> Any:
        """The op that made the number, past casts and a product with a variable (a loss scale)."""
        for _ in range(8):
            if op is None or not op.inputs:
                return op
            if op.type in ("Identity", "Cast"):
                op = op.inputs[0].op
            elif op.type == "Mul" and len(op.inputs) == 2:
                scales = [x.op.type == "ReadVariableOp" for x in op.inputs]
                if scales.count(True) != 1:
                    return op
                op = op.inputs[scales.index(False)].op
            else:
                return op
        return op

    def one(value: Any) -> bool:
        if per_sample(value):
            return True
        shape = getattr(value, "shape", None)
        if shape is None or shape.rank is None or shape.num_elements() != 1:
            return False
        op = through(getattr(value, "op", None))  # an eager tensor raises AttributeError: no op
        return op is not None and op.type == "Sum" and per_sample(op.inputs[0])

    return any(one(value) for value in tf.nest.flatten(target))


def _static_rows(data: Any) -> int | None:
    """The static leading dimension of a step's first tensor (its inputs'), where it is known."""
    import tensorflow as tf

    flat = tf.nest.flatten(data)
    shape = getattr(flat[0], "shape", None) if flat else None
    return None if shape is None or shape.rank in (None, 0) else shape[0]


def _patch_gradient() -> None:
    """``GradientTape.gradient`` that, in a step whose gradients the optimizer would scale (a step
    of the model's own, or one :func:`share_weights` runs), notes whether its target is a sum over
    the samples (:func:`summed_over_samples`), for the gradients it returns and as the step's
    latest: the optimizer's ``apply`` reads it for the gradients it gets, or, where it gets others
    (clipped, say), the latest. Only the outermost call notes: a gradient taken inside one
    (``tf.recompute_grad``, Keras's rematerialization, ``tape.jacobian``) is of something else."""
    import tensorflow as tf

    original = tf.GradientTape.gradient
    STATE.originals(__name__)["GradientTape.gradient"] = original

    @functools.wraps(original)
    def gradient(self: Any, target: Any, sources: Any, *args: Any, **kwargs: Any) -> Any:
        depth = STATE.per_thread("own_step_gradient_depth", 0)
        noting = depth == 0 and (in_own_step() or STATE.per_thread("share_weight", None) is not None)
        summed = summed_over_samples(target, STATE.per_thread("own_step_rows", None)) if noting else False
        STATE.thread.own_step_gradient_depth = depth + 1
        try:
            result = original(self, target, sources, *args, **kwargs)
        finally:
            STATE.thread.own_step_gradient_depth = depth
        if noting:
            STATE.thread.own_step_summed = summed
            noted = STATE.per_thread("own_step_noted", None)
            if noted is not None:
                noted.update({id(grad): summed for grad in tf.nest.flatten(result) if grad is not None})
        return result

    replace(tf.GradientTape, "gradient", gradient)


def _summed(grads: list[Any]) -> bool:
    """Whether the gradients an optimizer applies are of a sum over the samples: as noted for them
    where ``tape.gradient`` returned them, else as noted for the step's latest gradient."""
    noted = STATE.per_thread("own_step_noted", None) or {}
    found = [noted[id(grad)] for grad in grads if grad is not None and id(grad) in noted]
    return any(found) if found else STATE.per_thread("own_step_summed", False)


def _patch_apply() -> None:
    """``BaseOptimizer.apply`` and ``LossScaleOptimizer.apply`` that scale the gradients by
    :func:`_gradient_factor`, once per step. A LossScaleOptimizer applies through its inner
    optimizer, in the merge call's own threads where this thread's state is not seen: its apply
    scales, and the inner one does not again."""
    if _APPLY in STATE.originals(__name__):
        return
    from keras.src.optimizers import base_optimizer, loss_scale_optimizer

    for owner in (base_optimizer.BaseOptimizer, loss_scale_optimizer.LossScaleOptimizer):
        STATE.originals(__name__)[f"{owner.__name__}.apply"] = owner.apply
        replace(owner, "apply", _scaling(owner.apply))
        replace(owner, "scale_loss", _weighting_loss(owner.scale_loss))
    _patch_gradient()


def _weighting_loss(original_scale: Callable[..., Any]) -> Callable[..., Any]:
    """``scale_loss`` (which Keras's own ``train_step`` calls inside its tape, on every Keras 3
    release) that multiplies a replica's loss by its share's weight where :func:`share_weights`
    runs Keras's own step; the weight is then taken, and ``apply`` leaves the gradients as they are.
    Weighting the loss weights all it reaches: what one replica's loss contributes through a
    cross-replica op (a synchronized BatchNormalization's statistics, whose gradient TensorFlow
    sums over the replicas) lands in another replica's gradients, which weighting them after the
    tape gives that replica's weight (measured: 7e-5 from one device in float64 after one epoch
    ending 52/51, where the loss weighted is 1e-16). A step of the model's own, and a loss that
    sums its samples (:func:`summed_over_samples`), keep the weighting at ``apply``."""

    def scale_loss(self: Any, loss: Any) -> Any:
        loss = original_scale(self, loss)
        weight = STATE.per_thread("share_weight", None)
        if weight is None or in_own_step() or summed_over_samples(loss, STATE.per_thread("own_step_rows", None)):
            return loss
        import tensorflow as tf

        STATE.thread.share_weight = None  # taken: apply weights nothing more in this step
        return tf.math.multiply_no_nan(loss, tf.cast(weight, loss.dtype))

    return scale_loss


def _scaling(original_apply: Callable[..., Any]) -> Callable[..., Any]:
    """``apply`` that multiplies the gradients by :func:`_gradient_factor`, once."""

    def apply(self: Any, grads: Any, trainable_variables: Any = None) -> Any:
        grads = list(grads)
        factor = None if STATE.per_thread("own_step_applying", False) else _gradient_factor(grads)
        if factor is None:
            return original_apply(self, grads, trainable_variables)
        STATE.thread.own_step_applying = True  # an optimizer applying through another one in this thread
        try:
            return original_apply(self, _scaled(grads, factor), trainable_variables)
        finally:
            STATE.thread.own_step_applying = False

    return apply


def in_layer_call() -> bool:
    """Whether the code running (being traced) is inside a layer's ``call`` (Keras's call context
    of this thread: each replica's own under MirroredStrategy)."""
    from keras.src.backend.common import global_state

    return global_state.get_global_attribute("current_call_ctx") is not None


def _unless_own_step(
    original: Callable[[Any], Any], *, in_layers: Callable[[Any], bool] | None = None
) -> Callable[[Any], Any]:
    """``original`` (Keras's scaling of a loss for the replicas), except in a step of the model's
    own and, under a strategy for which ``in_layers(strategy)``, in a layer's ``call``: a
    ``keras.losses`` loss a layer computes there is passed to ``add_loss`` (the endpoint-layer
    pattern), which Keras divides by the replicas when it sums the model's losses, or to a metric."""

    def in_layers_here() -> bool:
        import tensorflow as tf

        return in_layers is not None and in_layer_call() and in_layers(tf.distribute.get_strategy())

    def scaled(value: Any) -> Any:
        return value if in_own_step() or in_layers_here() else original(value)

    return scaled


# --- the workarounds whose patches these are (autodist.upstream.keras_workarounds gathers them) ---

OWN_STEP_REPLICA_MEAN = Workaround(
    name="own_step_replica_mean",
    in_step=True,
    upstream="Keras 3 loss scaling under tf.distribute (scale_loss_for_distribution)",
    summary=(
        "Under a replicated strategy Keras sums the replicas' gradients and divides a "
        "keras.losses loss by the replicas. A train_step of the model's own gets one of "
        "two wrong answers: a loss it computes itself (keras.io's VAE) is not divided, so "
        "every step is N times one device's; a keras.losses loss or compute_loss is, so a "
        "metric the step records it in (the guide's GAN, a test_step's val_loss, "
        "evaluate) reads 1/N of one device's. Inside a model's own train_step and "
        "test_step (or Keras's, when the model defines compute_loss), autodist keeps each "
        "loss the replica's mean, as on one device, and divides the gradients the "
        "optimizer applies by the replicas; a step that divides by the global batch "
        "itself (tf.nn.compute_average_loss) keeps its gradients. Keras's own train_step divides a "
        "keras.losses loss a layer computes in call() and passes to add_loss (keras.io's endpoint "
        "layer) twice, so History reads 1/N of one device's and its gradients are 1/N: autodist keeps "
        "such a loss the replica's mean, and Keras's sum of the model's losses divides it once."
    ),
    affected=EVERY_RELEASE,
    touches=("keras.own_steps",),
    if_fixed="a step whose losses Keras no longer divides trains with the mean of the replicas' gradients, as one "
    "device",
    install=lambda act: patch_own_steps(act.trains_under),
)


UNEVEN_SHARES_WEIGHTED = Workaround(
    name="uneven_shares_weighted",
    in_step=True,
    upstream="Keras 3 under tf.distribute: every replica's share of a batch counts 1/N in the gradient",
    summary=(
        "Under a replicated strategy each replica takes its share's mean loss, and Keras sums the replicas'"
        " gradients of it divided by the replicas: every share counts 1/N. Where a batch does not split evenly"
        " (the last batch of an epoch, 89 samples split 45/44 on 2 replicas; a PyDataset's own odd batches) the"
        " samples of the smaller share weigh more than in model.fit, and History and weights end apart (99"
        " samples, batch 16: 0.03). For an input that may hold a partial batch, autodist weights each"
        " replica's loss by its share of the step's samples inside Keras's train_step (one scalar all-reduce per"
        " step), so that what it reaches through the replicas' shared statistics (a synchronized"
        " BatchNormalization) is weighted too, and the gradients in a step of the model's own: the whole"
        " batch's mean gradient, as one device takes it. A step of the model's own whose tape.gradient takes a"
        " sum over its samples (keras.io's masked language model: a loss with reduction=None) is left as it is,"
        " neither weighted nor divided: the replicas' sum of their sums is one device's gradient. An input whose"
        " every batch is whole is left as it is"
        " (under MultiWorkerMirrored every worker weights: they must issue the same collectives). A built"
        " model's optimizer is built before the weighted step, as Keras 3.5 and later build it: Keras 3.3 and"
        " 3.4 would build it inside that step, in each replica's thread, which fails beside the all-reduce."
    ),
    affected=EVERY_RELEASE,
    touches=("keras.share_weights",),
    if_fixed="a share's weight is 1 wherever batches split evenly; where they do not, it is right for gradients"
    " of each share's mean divided by the replicas, as every Keras 3 release and tf.keras take them (the"
    " still-needed test fails on a Keras that weights the shares itself)",
    install=lambda act: patch_share_weights(),
)
