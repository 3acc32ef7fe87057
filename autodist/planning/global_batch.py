"""Global batch sizes that divide evenly across replicas: pure arithmetic, with the reason.

The user's ``batch_size`` is always the **global** batch: the samples in one step across all
replicas. Keras 3 averages the *first* batch across replicas to build the model, so a first batch
that does not split evenly crashes under MirroredStrategy (``AddN must have the same size and
shape``). :func:`adjust_global_batch` moves the batch to the nearest multiple of the replica count
and says so. No sample is dropped: an uneven *last* batch is fine, and is kept.
:func:`split_notes` says what splitting each batch over replicas changes for a model's layers.

Example:
    >>> d = adjust_global_batch(33, num_replicas=2)
    >>> (d.global_batch_size, d.per_replica_batch_size)
    (34, 17)
    >>> print(d.warning)  # doctest: +ELLIPSIS
    batch_size=33 is not divisible by 2 replicas; using the nearest multiple, 34 (17 per replica)...
"""

from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass
from typing import Any

from autodist.errors import BatchSizeError
from autodist.fields import a_type, shown

__all__ = [
    "KERAS_DEFAULT_BATCH_SIZE",
    "MAX_BATCH_SIZE",
    "BatchDecision",
    "adjust_global_batch",
    "dropped_samples",
    "every_replica_fed",
    "feeds_every_replica",
    "validate_batch_size",
]

#: Keras's own default when ``fit`` gets no ``batch_size``.
KERAS_DEFAULT_BATCH_SIZE = 32


@dataclass(frozen=True)
class BatchDecision:
    """The batch size autodist will use, and why."""

    requested_batch_size: int
    global_batch_size: int
    per_replica_batch_size: int
    warning: str | None = None


#: The largest global batch: TensorFlow's shapes and Keras's step counts are 32-bit there.
MAX_BATCH_SIZE = 2**31 - 1


def validate_batch_size(batch_size: Any, *, name: str = "batch_size") -> int:
    """``batch_size`` as an ``int``: an integer from 1 to :data:`MAX_BATCH_SIZE` (a numpy one
    too, or a float with no fraction, such as ``64.0``; a bool is not one).

    Raises:
        BatchSizeError: naming the value, with the fix.

    Example:
        >>> validate_batch_size(64.0), validate_batch_size(32)
        (64, 32)
    """
    value = batch_size
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)) and math.isfinite(value):
        value = int(value) if float(value).is_integer() else value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value <= MAX_BATCH_SIZE:
        raise BatchSizeError(
            f"{name} must be an integer from 1 to {MAX_BATCH_SIZE} (Received: {name}={shown(batch_size)}, "
            f"{a_type(batch_size)}). "
            "It is the global batch: the samples in one training step across all replicas. Pass an int such as "
            f"{name}=64."
        )
    return int(value)


def adjust_global_batch(
    batch_size: Any, num_replicas: int, *, per_replica_multiple: int = 1, drop_remainder: bool = False
) -> BatchDecision:
    """Move ``batch_size`` to the nearest multiple of ``num_replicas`` (never 0).

    Ties go up, so no replica's share shrinks. The warning names both numbers. With
    ``per_replica_multiple`` (8 on TPUs), each replica's share is also a multiple of it.

    Args:
        batch_size: the requested global batch.
        num_replicas: replicas that share each step.
        per_replica_multiple: the multiple each replica's share must be.
        drop_remainder: whether the last partial batch will be dropped (only changes the words).

    Raises:
        BatchSizeError: when ``batch_size`` is not a positive integer.

    Example:
        >>> adjust_global_batch(64, 4).per_replica_batch_size
        16
        >>> adjust_global_batch(1, 2).global_batch_size
        2
    """
    requested = validate_batch_size(batch_size)
    unit = num_replicas * per_replica_multiple
    if requested % unit == 0:
        return BatchDecision(requested, requested, requested // num_replicas)
    lower = (requested // unit) * unit
    upper = lower + unit
    adjusted = (
        upper if lower == 0 or ((upper - requested) <= (requested - lower) and upper <= MAX_BATCH_SIZE) else lower
    )
    what = (
        f"not divisible by {num_replicas} replicas"
        if per_replica_multiple == 1
        else f"not a multiple of {unit} ({num_replicas} replicas x {per_replica_multiple} per replica)"
    )
    remainder = (
        "The last partial batch of each epoch is dropped (static shapes); fit says how many samples."
        if drop_remainder
        else "No samples are dropped: the last batch of each epoch holds the remainder."
    )
    warning = (
        f"batch_size={requested} is {what}; using the nearest multiple, {adjusted} "
        f"({adjusted // num_replicas} per replica). {remainder} Pass a multiple of {unit} to "
        "silence this."
    )
    return BatchDecision(requested, adjusted, adjusted // num_replicas, warning)


def shares_of(batch: int, num_replicas: int) -> tuple[int, ...]:
    """Each replica's share of a batch of ``batch`` samples, as TensorFlow splits a batch of a size
    it cannot see (Keras's array inputs): every replica takes ``ceil(batch / num_replicas)`` in
    turn until the batch runs out.

    Example:
        >>> shares_of(3, 2), shares_of(5, 4), shares_of(8, 2)
        ((2, 1), (2, 2, 1, 0), (4, 4))
    """
    share = -(-batch // num_replicas)
    return tuple(min(share, max(0, batch - r * share)) for r in range(num_replicas))


def feeds_every_replica(batch: int, num_replicas: int) -> bool:
    """Whether a batch of ``batch`` samples gives each of ``num_replicas`` replicas at least one,
    split as TensorFlow splits it (:func:`shares_of`).

    Example:
        >>> feeds_every_replica(4, 3), feeds_every_replica(5, 3), feeds_every_replica(1, 1)
        (False, True, True)
    """
    return batch >= 1 and shares_of(batch, num_replicas)[-1] >= 1


def every_replica_fed(num_samples: int, batch_size: int, num_replicas: int) -> tuple[int, int] | None:
    """``(batch_size, copies)`` for ``evaluate``/``predict`` on ``num_samples`` samples so that no
    batch leaves a replica an empty share (:func:`feeds_every_replica`; some models fail on one:
    a residual ``add`` becomes a rank-2 ``BiasAdd``), or ``None`` when none does. Means over the
    samples do not depend on the batching: the nearest batch size that feeds every replica is
    taken, smaller first. Fewer samples than replicas are repeated ``copies`` times in one batch,
    the fewest copies whose batch feeds every replica (each sample as often, so every mean stays
    the same; ``predict`` keeps the first copy).

    Example:
        >>> every_replica_fed(33, 32, 2), every_replica_fed(1, 32, 2), every_replica_fed(64, 32,
        ...     2), every_replica_fed(3, 32, 4)
        ((31, 1), (2, 2), None, (12, 4))
    """
    if num_replicas < 2 or num_samples <= 0 or batch_size <= 0:
        return None

    def fed(size: int) -> bool:
        last = num_samples % size
        return feeds_every_replica(min(size, num_samples), num_replicas) and (
            last == 0 or num_samples < size or feeds_every_replica(last, num_replicas)
        )

    if num_samples >= num_replicas and fed(batch_size):
        return None
    smaller = range(min(batch_size, num_samples) - 1, num_replicas - 1, -1)
    larger = range(max(batch_size + 1, num_replicas), num_samples + 1)
    # both ranges are empty where there are fewer samples than replicas
    size = next((size for size in itertools.chain(smaller, larger) if fed(size)), None)
    if size is not None:
        return size, 1
    copies = next(k for k in range(1, num_replicas + 1) if feeds_every_replica(num_samples * k, num_replicas))
    return num_samples * copies, copies


def dropped_samples(num_samples: int | None, global_batch_size: int) -> int | None:
    """Samples ``drop_remainder`` leaves out of each epoch (``None`` when the count is unknown)."""
    return None if num_samples is None else num_samples % global_batch_size


#: What becomes of BatchNormalization's moving statistics on the replicas, said after its warning.
AVERAGED_STATISTICS = (
    "autodist averages each update of the moving statistics over the replicas, as tf.keras did, so "
    "every replica, evaluate, predict and a save read the same ones; Keras 3 under a strategy of your "
    "own keeps each replica's own copy (the workaround batchnorm_moving_statistics: "
    "AUTODIST_KERAS_COMPAT=auto,-batchnorm_moving_statistics trains as Keras does)"
)
OWN_STATISTICS = (
    "Each replica keeps moving statistics of its own shares, and evaluate and predict normalise each "
    "replica's share with that replica's copy"
)


def split_notes(
    num_replicas: int,
    per_replica: int | None,
    batch_statistics_layers: tuple[str, ...],
    random_layers: tuple[str, ...],
    keras_flavor: str | None,
    own_steps: tuple[str, ...] = (),
    summed_steps: str | None = None,
    mixed_precision: str | None = None,
    independent_draws: bool = False,
    own_draw_layers: tuple[str, ...] = (),
    averaged_statistics: bool = False,
    function_initializers: tuple[str, ...] = (),
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(reasons, warnings)``: what splitting each batch over replicas changes for a model's
    layers. BatchNormalization normalises each replica's share (a warning with the sizes and the
    opt-in, and what becomes of the moving statistics: with ``averaged_statistics``, the
    workaround ``batchnorm_moving_statistics``, each update averaged over the replicas); Keras
    3's random layers (Dropout, noise, augmentation) draw one mask or transform for every replica,
    or with ``independent_draws`` (the workaround ``replica_random_streams``)
    each replica its own, still not one device's numbers (a warning; tf_keras: a note); layers or
    steps of the caller's own that draw in their own code (``own_draw_layers``: ``tf.random``, or
    ``keras.random`` without a seed) draw each replica's own numbers (a warning); a Keras 3 step of
    the caller's own
    (``own_steps``: the methods, when the workaround ``own_step_replica_mean`` does not run them
    as on one device) records losses divided by the replicas (a warning), or, on a Keras that
    divides no loss by the replicas (``summed_steps``: its version, 3.3-3.7), takes steps N times
    one device's (a warning); a 16-bit mixed-precision policy rounds the replicas' sums apart
    from one device's (a warning). Nothing on one replica.

    Example:
        >>> "16 samples, not the global 32" in split_notes(2, 16, ("bn",), (), "keras3")[1][0]
        True
    """
    if num_replicas <= 1 or per_replica is None:
        return (), ()
    warned: tuple[str, ...] = ()
    if batch_statistics_layers:
        names = _names(batch_statistics_layers)
        warned = (
            f"BatchNormalization ({names}) normalises each replica's share of the batch: "
            f"{per_replica} samples, not the global {per_replica * num_replicas} that one device normalises over "
            f"({num_replicas} replicas), so the training differs from model.fit on one device. For "
            "batch statistics over the global batch, create the layers with "
            "BatchNormalization(synchronized=True) (one all-reduce per layer per step). "
            + (AVERAGED_STATISTICS if averaged_statistics else OWN_STATISTICS),
        )
    noted: tuple[str, ...] = ()
    if random_layers and keras_flavor == "tf_keras":
        noted = (
            f"{_names(random_layers)} draw masks or noise for each replica's share: other draws than one device's",
        )
    elif random_layers:
        template = INDEPENDENT_DRAWS if independent_draws else SAME_MASKS
        warned += (template.format(names=_names(random_layers), per_replica=per_replica, num_replicas=num_replicas),)
    if own_draw_layers:
        warned += (OWN_DRAWS.format(names=_names(own_draw_layers), per_replica=per_replica, num_replicas=num_replicas),)
    if own_steps and keras_flavor == "keras3":
        template = SUMMED_STEPS if summed_steps else SCALED_LOSS
        warned += (template.format(num_replicas=num_replicas, keras_version=summed_steps, methods="/".join(own_steps)),)
    if function_initializers:
        warned += (FUNCTION_INITIALIZERS.format(names=_names(function_initializers)),)
    if mixed_precision:
        warned += (MIXED_PRECISION.format(policy=mixed_precision, num_replicas=num_replicas, per_replica=per_replica),)
    return noted, warned


#: An unbuilt model with a plain function as an initializer (the TensorFlow guide's basics:
#: Dense(kernel_initializer=tf.random.normal)), measured on it: loss 31.0 against one device's 48.1
#: in the first epoch, from other initial weights.
FUNCTION_INITIALIZERS = (
    "{names} is a plain function, not a Keras initializer: unseeded, it draws from TensorFlow's op "
    "seeds, which depend on where the draw happens. One device builds this model inside its first "
    "training step; under a strategy Keras builds it before, so its initial weights, and all the "
    "training after, differ from model.fit's on one device (by the spread of the draw). Fix: a Keras "
    "initializer with a seed (keras.initializers.RandomNormal(seed=1)), or build the model before fit "
    "(an Input, or model.build(shape))"
)


def _names(layers: tuple[str, ...]) -> str:
    return ", ".join(layers[:4]) + (", ..." if len(layers) > 4 else "")


#: Keras 3 under tf.distribute: compute_loss returns the loss divided by the replicas (the gradients
#: of the replicas then sum to the global batch's); Keras's own train_step multiplies it back before
#: its loss metric sees it, a train_step written as Keras's guide shows does not (measured in
#: tests/test_model_axis.py: History's loss half of model.fit's on 2 replicas, weights equal).
SCALED_LOSS = (
    "This model's own {methods} runs on {num_replicas} replicas, where Keras 3's compute_loss "
    "returns each replica's loss divided by {num_replicas} (so that the gradients sum to the global "
    "batch's): a loss your step records in a metric (metric.update_state(loss), as Keras's guide "
    "writes it; val_loss and evaluate from a test_step) reads 1/{num_replicas} of model.fit's on "
    "one device, and a loss it computes itself without Keras's losses takes steps {num_replicas} "
    "times one device's. autodist corrects both (workaround own_step_replica_mean), which is off "
    "here: unset AUTODIST_KERAS_COMPAT=off, or train on one replica (strategy='default')"
)

#: Keras 3 with a 16-bit compute policy: float16 keeps about 3 significant digits, and the
#: replicas' shares are summed in another order than one device's batch (measured on a small
#: model, 1 vs 2 replicas: loss 1.9e-2 and test loss 6e-2 apart, where float32 agrees within 1e-7).
MIXED_PRECISION = (
    "The model computes in {policy}: 16-bit floats keep about 3 significant digits, and "
    "{num_replicas} replicas reduce their {per_replica}-sample shares in another order than one "
    "device reduces the whole batch, so losses and weights round apart from model.fit's on one "
    "device (measured on a small model, 1 against 2 replicas: loss 2e-2 and test loss 6e-2 apart, "
    "where float32 agrees within 1e-7). Train in float32, or on one replica "
    "(strategy='default'), where the last digits matter"
)

#: Keras 3.3-3.7 under tf.distribute: the replicas' gradients are summed and no loss is divided by
#: the replicas. autodist divides fit's own loss (workaround distributed_gradients); a train_step of
#: the model's own takes its gradients itself (tests/test_upstream.py measures it on each pair).
SUMMED_STEPS = (
    "This model's own {methods} runs on {num_replicas} replicas, where Keras {keras_version} sums the "
    "replicas' gradients of losses that are each a mean over the replica's share: every optimizer "
    "step is {num_replicas} times one device's (autodist divides the loss of Keras's own train_step "
    "by the replicas, as Keras 3.8 does; yours takes its gradients itself). Divide the loss you take "
    "gradients of by self.distribute_strategy.num_replicas_in_sync, upgrade Keras to 3.8 or later, "
    "or train on one replica (strategy='default')"
)

#: Keras 3 under tf.distribute: a random layer's seed state is a mirrored variable, so every
#: replica draws the same masks (tests/test_keras_compat.py checks it is still so); said where the
#: workaround replica_random_streams is off (AUTODIST_KERAS_COMPAT=off).
SAME_MASKS = (
    "{names} draw the same random masks, noise or transforms on every replica (Keras 3 keeps "
    "their seed state as one mirrored variable): the {num_replicas} replicas' shares of each batch "
    "({per_replica} samples each) get identical draws, where one device draws independent ones for "
    "the whole batch, so training is less random than model.fit's and its numbers differ. Train on "
    "one replica (strategy='default' or 'one_device') where that matters"
)

#: The same with the workaround replica_random_streams: each replica draws from its own stream.
INDEPENDENT_DRAWS = (
    "{names} draw random masks, noise or transforms on {num_replicas} replicas ({per_replica} samples "
    "each), each replica from its own stream (autodist folds the replica's id into Keras's seed): "
    "the draws are independent, as one device's are for the whole batch, and reproducible from "
    "keras.utils.set_random_seed, but they are not one device's numbers, so training differs from "
    "model.fit's by its randomness. Train on one replica (strategy='default' or 'one_device') for "
    "one device's numbers"
)

#: A layer's call or a step of the user's own that draws in its own code (keras.io's VAE:
#: tf.random.normal; the Keras guide's: keras.random.normal without a seed): under a strategy each
#: replica's TensorFlow op has a seed of its own, and autodist folds the replica's id into Keras's.
OWN_DRAWS = (
    "{names} draw random numbers in their own code (tf.random.normal, or keras.random without a seed) on "
    "{num_replicas} replicas ({per_replica} samples each), each replica from its own stream (TensorFlow gives "
    "each replica's op a seed of its own; autodist folds the replica's id into Keras's): the draws are "
    "independent, as one device's are for the whole batch, and reproducible from "
    "keras.utils.set_random_seed, but they are not one device's numbers, so training differs from "
    "model.fit's by its randomness. Train on one replica (strategy='default' or 'one_device') for one "
    "device's numbers"
)

#: A step of the model's own that scales by the replicas itself, as autodist's earlier warnings
#: and custom-loop habits advised: autodist now does it (own_step_replica_mean), so it is done twice.
OWN_STEPS_READ_REPLICAS = (
    "This model's own {methods} reads num_replicas_in_sync. autodist runs it on {num_replicas} replicas "
    "with one device's losses and the replicas' mean gradient (workaround own_step_replica_mean), so a "
    "loss or metric your step divides or multiplies by the replicas itself is scaled twice: steps "
    "1/{num_replicas} of one device's, or metrics {num_replicas} times. Remove that scaling (tf.nn."
    "compute_average_loss is recognised and kept), or set AUTODIST_KERAS_COMPAT=off to train as Keras does"
)
