"""The training input, made ready for the plan: batched to the global batch, sharded, and read
the same way on every worker; and the warnings where an input cannot match ``model.fit``.

Used by :class:`autodist.tensorflow.fit.TensorFlowFit`. Each step returns new values and changes nothing
it is given: :func:`prepare_input` returns a :class:`TrainingInput` with new ``fit`` keywords
(``batch_size``, ``steps_per_epoch``, ``shuffle``, ``validation_data`` where it takes them over),
as ``model.fit`` will read them.

Every step reads the input as classified once at the entry (:mod:`autodist.core.input_kinds`), never
the raw ``x``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from autodist.core.input_kinds import (
    Arrays,
    Dataset,
    DatasetCreator,
    IndexedBatches,
    Input,
    NoInput,
    Stream,
    classify,
    numpy_view,
    training_split,
)
from autodist.errors import ArgumentError, BatchSizeError
from autodist.log import get_logger
from autodist.planning.global_batch import dropped_samples, every_replica_fed, shares_of
from autodist.planning.keras_compat import kept_strategy_order
from autodist.planning.plans import Plan
from autodist.core.batching import (
    arrays_to_dataset,
    own_shard,
    prepare_dataset,
    repeat_across_epochs,
)

__all__ = [
    "fit_steps",
    "input_notes",
    "last_batch",
    "LastBatch",
    "one_iterator_per_run",
    "READ_AHEAD_NOTE",
    "shuffles_read_ahead",
    "READY",
    "prepare_input",
    "slice_samples",
    "take_samples",
    "TrainingInput",
]


_MOVABLE_INPUT_NOTE = (
    "autodist cannot check the batch size of a {kind}; make each of its batches a multiple of "
    "{replicas} (the replica count), or pass numpy arrays or a tf.data.Dataset"
)


#: Said where a fit reads a repeated, reshuffling shuffle that an earlier replicated fit left after
#: steps_per_epoch steps (:func:`shuffles_read_ahead`). Measured: the TensorFlow tutorial "Overfit
#: and underfit" trains 7 models from one ``shuffle().repeat().batch()``; its first is model.fit's,
#: the next six 0.06 apart, under autodist and a hand-built MirroredStrategy alike.
READ_AHEAD_NOTE = (
    "This fit reads a repeated tf.data shuffle that draws a new order on each pass, which an earlier fit on "
    "{replicas} replicas left after steps_per_epoch steps. TensorFlow's distributed iterator reads ahead of "
    "the step it trains: that fit read into passes model.fit never starts, and each pass took the shuffle's "
    "next order from a generator every reader of that shuffle shares, so this fit starts at other orders "
    "than after model.fit (the TensorFlow tutorial 'Overfit and underfit': its second to seventh models "
    "0.06 apart). Any tf.distribute strategy does the same. To train every fit as model.fit, call shuffle() "
    "anew for each fit, or pass shuffle(..., reshuffle_each_iteration=False)"
)


def shuffles_read_ahead(data: Input, the_plan: Plan, fit_kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
    """The shuffles this fit leaves read ahead of its last step, for a later reader to be told of:
    the input's repeated, reshuffling shuffles, on more than one replica in sync, left after
    ``steps_per_epoch`` steps (a fit that reads its input to the end starts no pass beyond it)."""
    if the_plan.num_replicas < 2 or the_plan.type.asynchronous or fit_kwargs.get("steps_per_epoch") is None:
        return ()
    return data.repeated_shuffles()


_OWN_STEP_UNEVEN_NOTE = (
    "On {replicas} replicas {where}. autodist weights each replica's gradients by its share (a gradient of "
    "a sum over the samples, such as a loss with reduction=None, it leaves as the replicas' sum), so the "
    "weights are model.fit's; but a mean your train_step records itself (a metric's "
    "update_state(loss)) is updated once per replica, and on such a step it averages the replicas' "
    "means, counting the smaller share's samples more: that History entry differs slightly from "
    "model.fit's. Pass each batch's sample count as update_state's sample_weight (as Keras's own "
    "loss tracker does: the same epoch mean on one device and on {replicas} replicas), or make "
    "every batch a multiple of {replicas}."
)


_EMPTY_SHARE_NOTE = (
    "autodist cannot check the batch size of a {kind}: a batch of fewer than {replicas} samples (the "
    "replica count) leaves a replica an empty share, whose mean loss is not a number in History. "
    "Make each batch at least {replicas} samples, or pass numpy arrays or a tf.data.Dataset"
)


_UNEVEN_OWN_BATCH_NOTE = (
    "This {kind} yields batches of {own} samples, which do not split evenly over {replicas} replicas, "
    "and autodist cannot re-batch it: the replicas' shares differ in size on every step, and the "
    "smaller shares' samples weigh more than in model.fit. Make each batch a multiple of {replicas}, "
    "or pass numpy arrays or a tf.data.Dataset"
)


class TrainingInput(NamedTuple):
    """The input as ``model.fit`` will read it (``data``: what it is), with the ``fit`` keywords
    that go with it."""

    data: Input
    fit_kwargs: Mapping[str, Any]
    warnings: tuple[str, ...] = ()
    shuffled_by_autodist: bool = False  # arrays autodist shuffles as a dataset, in an order of its own


def _updated(fit_kwargs: Mapping[str, Any], *, without: tuple[str, ...] = (), **changes: Any) -> dict[str, Any]:
    """A new dict of ``fit_kwargs`` without ``without``, with ``changes``; the argument is left alone."""
    return {**{key: value for key, value in fit_kwargs.items() if key not in without}, **changes}


def prepare_input(
    data: Input,
    the_plan: Plan,
    fit_kwargs: Mapping[str, Any],
    *,
    batch_given: bool = True,
    shuffle_seed: Callable[[], int] = lambda: 0,
) -> TrainingInput:
    """The input ready for the plan, and new ``fit`` keywords: ``batch_size`` where Keras batches
    the input itself, ``steps_per_epoch``/``shuffle``/``validation_data`` where autodist takes the
    batching over (each kind its own way, its answer to :data:`READY`). Nothing passed in is changed."""
    assert the_plan.global_batch_size is not None
    return data.answer(READY, the_plan, fit_kwargs, batch_given, shuffle_seed)


#: The question an input answers for ``model.fit`` on TensorFlow (:meth:`Input.answers`): itself, ready for the plan.
READY = "ready"


def _per_worker_shuffle(the_plan: Plan, fit_kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """The note for an input Keras shuffles itself, on each worker in its own order."""
    return (_PER_WORKER_SHUFFLE_NOTE,) if the_plan.type.collective_workers and fit_kwargs.get("shuffle", True) else ()


@Input.answers(READY)
def _ready(
    data: Input, the_plan: Plan, fit_kwargs: Mapping[str, Any], batch_given: bool, shuffle_seed: Callable[[], int]
) -> TrainingInput:
    """An input autodist cannot batch (a list, say): Keras batches it, or says in its own words why
    it cannot; it must split over the replicas."""
    _splits(data, the_plan)
    own_dataset = the_plan.type.collective_workers or the_plan.drop_remainder
    kwargs = _updated(fit_kwargs, batch_size=the_plan.global_batch_size)
    return TrainingInput(data, kwargs, _per_worker_shuffle(the_plan, fit_kwargs) if own_dataset else ())


@NoInput.answers(READY)
@IndexedBatches.answers(READY)
@DatasetCreator.answers(READY)
def _batches(data: Input, the_plan: Plan, fit_kwargs: Mapping[str, Any], *_: Any) -> TrainingInput:
    """Ready-made batches (or none): Keras reads them as they are."""
    return TrainingInput(data, dict(fit_kwargs), _per_worker_shuffle(the_plan, fit_kwargs))


@Stream.answers(READY)
def _stream(data: Stream, the_plan: Plan, fit_kwargs: Mapping[str, Any], *_: Any) -> TrainingInput:
    """A generator's batches, read as they come (Keras shuffles none of them)."""
    return TrainingInput(data, dict(fit_kwargs))


@Arrays.answers(READY)
def _arrays(
    data: Arrays, the_plan: Plan, fit_kwargs: Mapping[str, Any], batch_given: bool, shuffle_seed: Callable[[], int]
) -> TrainingInput:
    """Arrays: Keras batches them as the caller gave them, but where a replica would get no sample
    (:func:`_fewer_samples_than_replicas`), and on several workers or a TPU, where autodist makes
    them the dataset every worker reads alike (:func:`_arrays_as_dataset`)."""
    _splits(data, the_plan)
    own_dataset = the_plan.type.collective_workers or the_plan.drop_remainder
    if not fit_kwargs.get("validation_split"):
        fewer = _fewer_samples_than_replicas(data, the_plan, fit_kwargs)
        if fewer is not None:
            return (
                fewer if not own_dataset else _arrays_as_dataset(fewer.data, the_plan, fewer.fit_kwargs, shuffle_seed)
            )
    if not own_dataset or (data.y is None and fit_kwargs.get("sample_weight") is not None):
        return _ready(data, the_plan, fit_kwargs, batch_given, shuffle_seed)  # as the caller gave it
    return _arrays_as_dataset(data, the_plan, fit_kwargs, shuffle_seed)


def _splits(data: Input, the_plan: Plan) -> None:
    """Nothing, where the input's batches split over the plan's replicas.

    Raises:
        ArgumentError: they cannot (a composite tensor that cannot be sliced), with the fix.
    """
    if the_plan.num_replicas > 1 and (why := data.unsplittable()) is not None:
        raise ArgumentError(
            f"{why}: it cannot train on the {the_plan.num_replicas} replicas of {the_plan.strategy.value}, and one "
            "device was not possible here (the plan's reasons say why: a strategy asked for, a multi-worker job, "
            "or a model built under the strategy that cannot be moved). Fix: set AUTODIST_STRATEGY=default before "
            "the script starts (one device, as model.fit), or give the input as tensors or numpy arrays"
        )


@Dataset.answers(READY)
def _dataset_ready(
    data: Dataset, the_plan: Plan, fit_kwargs: Mapping[str, Any], batch_given: bool, *_: Any
) -> TrainingInput:
    """A ``tf.data.Dataset`` re-batched to the global batch and sharded (:func:`prepare_dataset`);
    left as it is where it is this worker's own part (Ray Data's ``to_tf``) and no batch is given."""
    x, batch, drop = data.raw, the_plan.global_batch_size, the_plan.drop_remainder
    assert batch is not None
    own = data.own_batch()
    if not batch_given and own_shard(x) and own is None:
        return TrainingInput(data, dict(fit_kwargs))  # this worker's own batches: as model.fit reads them
    # No batch_size, one replica, no batch size found: nothing to divide; Keras reads it as it is.
    keep = own is None and not batch_given and the_plan.num_replicas == 1
    prepared = prepare_dataset(x, batch, the_plan.num_workers, drop_remainder=drop, rebatch=not keep)
    count = data.epoch_samples(fit_kwargs) if drop else None
    prepared, steps = one_iterator_per_run(prepared, the_plan, fit_kwargs)
    warnings_ = [_drop_warning(count, batch)] if drop else []
    if batch_given and own is not None and own != the_plan.requested_batch_size:
        warnings_.append(_rebatched_note(own, the_plan))
    if the_plan.num_replicas > 1 and data.length_unknown() and not own_shard(x):
        warnings_.append(_UNKNOWN_SIZE_NOTE)  # a worker's own shard (Ray Data): its size is not the user's to give
    kwargs = _updated(fit_kwargs, steps_per_epoch=steps) if steps is not None else dict(fit_kwargs)
    return TrainingInput(Dataset(prepared, data.y), kwargs, tuple(w for w in warnings_ if w))


def _fewer_samples_than_replicas(data: Arrays, the_plan: Plan, fit_kwargs: Mapping[str, Any]) -> TrainingInput | None:
    """Fewer samples than replicas (one replica would get an empty share, which some models
    fail on): each sample repeated as often, in one batch of them all, as one device trains
    them in one batch (the mean loss, its gradient and every mean metric are the same).
    ``None`` when there are enough samples."""
    import numpy as np
    import tensorflow as tf

    num_samples = data.samples()
    if num_samples == 0 or num_samples >= the_plan.num_replicas:
        return None
    _, copies = every_replica_fed(num_samples, num_samples, the_plan.num_replicas) or (num_samples, 1)

    def repeated(value: Any) -> Any:
        return (
            None
            if value is None
            else tf.nest.map_structure(lambda leaf: np.concatenate([np.asarray(leaf)] * copies), value)
        )

    kwargs = _updated(fit_kwargs, batch_size=num_samples * copies)
    if kwargs.get("sample_weight") is not None:
        kwargs["sample_weight"] = repeated(kwargs["sample_weight"])
    get_logger().info(
        "autodist: %d sample(s) for %d replicas: each is repeated %d times in one batch, so that no replica gets an "
        "empty share (the mean loss, its gradient and mean metrics are one device's)",
        num_samples,
        the_plan.num_replicas,
        copies,
    )
    return TrainingInput(Arrays(repeated(data.arrays), repeated(data.targets)), kwargs)


def _arrays_as_dataset(
    data: Arrays, the_plan: Plan, fit_kwargs: Mapping[str, Any], shuffle_seed: Callable[[], int]
) -> TrainingInput:
    """Multi-worker and TPU: the arrays as a dataset every worker reads the same way
    (:func:`autodist.core.batching.arrays_to_dataset`); the new ``fit`` keywords lose what it took over."""
    batch, drop = the_plan.global_batch_size, the_plan.drop_remainder
    assert batch is not None
    given_validation = fit_kwargs.get("validation_data")
    train_samples, split = training_split(data.raw, fit_kwargs)
    num_samples = data.samples()
    if train_samples == 0 or (drop and train_samples < batch):
        raise BatchSizeError(
            f"autodist has {train_samples} training samples (of {num_samples}) and a global batch of "
            f"{batch}{' whose partial batches are dropped (static shapes)' if drop else ''}: no step "
            "would run. Expected at least one full batch of samples. Pass more samples, or a "
            "smaller batch_size."
        )
    shuffle = bool(fit_kwargs.get("shuffle", True))
    train, validation = arrays_to_dataset(
        data.arrays,
        data.targets,
        numpy_view(fit_kwargs.get("sample_weight")),
        global_batch_size=batch,
        shuffle=shuffle,
        seed=shuffle_seed() if shuffle else 0,
        validation_split=split,
        drop_remainder=drop,
    )
    # the dataset is shuffled already, the same on every worker
    changes: dict[str, Any] = {"shuffle": False}
    if isinstance(given_validation, tuple):
        if all(classify(part).arrays is not None for part in given_validation if part is not None):
            changes["validation_data"] = arrays_to_dataset(
                *(numpy_view(part) for part in given_validation),
                global_batch_size=batch,
                shuffle=False,
                drop_remainder=drop,
            )[0]
    elif validation is not None:
        changes["validation_data"] = validation
    steps = fit_kwargs.get("steps_per_epoch")
    if shuffle and steps is None:
        # An endless stream of per-epoch orders: one pass is an epoch.
        changes["steps_per_epoch"] = train_samples // batch if drop else math.ceil(train_samples / batch)
    elif not shuffle:
        train, steps = one_iterator_per_run(train, the_plan, fit_kwargs)
        if steps is not None:
            changes["steps_per_epoch"] = steps
    warnings_ = (_drop_warning(train_samples, batch),) if drop else ()
    kwargs = _updated(fit_kwargs, without=("validation_split", "sample_weight"), **changes)
    return TrainingInput(Dataset(train), kwargs, tuple(w for w in warnings_ if w), shuffled_by_autodist=shuffle)


_PER_WORKER_SHUFFLE_NOTE = (
    "Keras shuffles this input itself (shuffle=True), on each worker in its own order, so under "
    "multi_worker_mirrored some samples would be trained on twice and others never in an epoch "
    "(measured in the harness on a previous version: 24 of 100 never, 24 twice). autodist shuffles "
    "numpy arrays and pandas the same on every worker, but not this input. Expected numpy arrays, "
    "pandas, or a tf.data.Dataset: pass one of those, or shuffle=False."
)


def _rebatched_note(own: int, the_plan: Plan) -> str:
    """A dataset the user batched, passed with another ``batch_size``: what model.fit would do."""
    return (
        f"x is a tf.data.Dataset already batched by {own}, and batch_size={the_plan.requested_batch_size} "
        f"was given. model.fit ignores batch_size for a dataset and takes its batches of {own} as "
        f"the steps; autodist.fit re-batches it to the global batch, {the_plan.global_batch_size} "
        "samples a step (batch_size is always the global batch here), so the steps and the numbers "
        "differ from model.fit's. To keep the dataset's batches, pass no batch_size (autodist then "
        "splits each of them over the replicas)."
    )


_UNKNOWN_SIZE_NOTE = (
    "The dataset's size is unknown (from_generator, filter, unbatch, ...). Keras's single-device "
    "model.fit then runs one more, empty step at the end of each epoch, which can count in its "
    "History (measured: 5 full batches reported 5/6 of the true mean, 0.59 for 0.71) and in the "
    "optimizer's step count. Over several replicas that end of the data is met differently: under "
    "multi_worker_mirrored the workers agree when the data ends (History 0.2 from model.fit's in "
    "the harness), and under mirrored the harness once saw the epoch's History 0.078 from model.fit's "
    "in 6 runs (weights equal). To get model.fit's numbers, give the dataset its size: "
    "dataset.apply(tf.data.experimental.assert_cardinality(n))."
)


def one_iterator_per_run(dataset: Any, the_plan: Plan, fit_kwargs: Mapping[str, Any]) -> tuple[Any, int | None]:
    """Multi-worker: a finite training dataset repeats, with ``steps_per_epoch`` one pass.
    Returns the dataset and the ``steps_per_epoch`` to set (``None``: leave it).

    See :func:`autodist.core.batching.repeat_across_epochs`. Only under ``DATA`` sharding, where every
    worker steps through the global batches. A ``steps_per_epoch`` the caller gave is theirs: the
    dataset is then left as it is, and Keras's own rules apply.
    """
    import tensorflow as tf

    if not the_plan.type.collective_workers or fit_kwargs.get("steps_per_epoch") is not None:
        return dataset, None
    if dataset.options().experimental_distribute.auto_shard_policy != tf.data.experimental.AutoShardPolicy.DATA:
        return dataset, None  # FILE sharding: this worker's share of a pass is not the global count
    return repeat_across_epochs(dataset)


def _drop_warning(num_samples: int | None, global_batch_size: int) -> str:
    dropped = dropped_samples(num_samples, global_batch_size)
    if dropped is None:
        return (
            f"TPUs need static shapes: the last partial batch of each epoch (fewer than "
            f"{global_batch_size} samples) is dropped; the dataset's size is unknown, so the count is too."
        )
    if dropped == 0:
        return ""
    return (
        f"TPUs need static shapes: the last partial batch is dropped, {dropped} of {num_samples} "
        f"samples each epoch (global batch {global_batch_size}). Pick a batch size that divides "
        f"{num_samples} to train on every sample."
    )


def fit_steps(data: Input, batch: int | None, epochs: int, fit_kwargs: Mapping[str, Any]) -> int | None:
    """Training steps in the whole ``fit``, where the input tells before training: arrays
    (``ceil(training samples / batch)`` per epoch, Keras's default batch of 32 when none is asked
    for) or a dataset of known cardinality (its batches); ``None`` otherwise (a generator, a
    ``Sequence``, an endless or filtered dataset, ``steps_per_epoch``).

    Example:
        >>> import numpy as np
        >>> from autodist.core.input_kinds import classify
        >>> data = classify(np.ones((100, 2)))
        >>> fit_steps(data, None, 2, {}), fit_steps(data, 10, 1, {"validation_split": 0.2})
        (8, 8)
    """
    if fit_kwargs.get("steps_per_epoch") is not None:
        return None
    rounds = max(0, int(epochs) - int(fit_kwargs.get("initial_epoch") or 0))
    per_epoch = data.batches_per_epoch(batch, fit_kwargs)
    return None if per_epoch is None else per_epoch * rounds


def input_notes(
    data: Input,
    the_plan: Plan,
    fit_kwargs: Mapping[str, Any],
    kept: bool = False,
    split: LastBatch | None = None,
    weighted: bool = False,
    own_train_step: bool = False,
    read_ahead_before: int = 0,
) -> list[str]:
    """Warnings about the input under this plan: a batch size autodist cannot check, an uneven
    last batch (``split``, from :func:`last_batch`), and, under a script's own strategy (``kept``),
    an order Keras would have spent (:func:`autodist.planning.keras_compat.kept_strategy_order`).
    Where each replica's gradients are weighted by its share (``weighted``: the workaround
    ``uneven_shares_weighted``), a batch that splits unevenly trains as on one device, and only
    a ``train_step`` of the model's own (``own_train_step``) has something left to say: a mean it
    records itself averages the replicas' means. ``read_ahead_before``: the replicas of an earlier
    fit that left a repeated shuffle of this input read ahead (:func:`shuffles_read_ahead`), or 0."""
    order = kept_strategy_order(the_plan.keras_workarounds, kept, data.reshuffled(fit_kwargs))
    notes = [order] if order else []
    if read_ahead_before:
        notes.append(READ_AHEAD_NOTE.format(replicas=read_ahead_before))
    if weighted and own_train_step and (split is None or split.last):
        if split is None:
            where = f"this {data.name}'s batches may not split evenly"
        elif split.shares:
            where = (
                f"the last batch of each epoch, {split.last} of {split.count} samples, splits "
                f"{'/'.join(map(str, split.shares))}"
            )
        else:
            where = f"the last batch of each epoch, {split.last} of {split.count} samples, may split unevenly"
        notes.append(_OWN_STEP_UNEVEN_NOTE.format(where=where, replicas=the_plan.num_replicas))
    if data.batches_itself and the_plan.num_replicas > 1:
        own = data.own_batch()
        if weighted:
            if own is None or own < the_plan.num_replicas:
                notes.append(_EMPTY_SHARE_NOTE.format(kind=data.name, replicas=the_plan.num_replicas))
        elif own is not None and own % the_plan.num_replicas:
            notes.append(_UNEVEN_OWN_BATCH_NOTE.format(kind=data.name, own=own, replicas=the_plan.num_replicas))
        else:  # its other batches (an uneven last one) are not read before training
            notes.append(_MOVABLE_INPUT_NOTE.format(kind=data.name, replicas=the_plan.num_replicas))
    if not weighted and split is not None and split.shares:
        notes.append(_uneven_last_batch(split, the_plan.num_replicas, the_plan.global_batch_size))
    return notes


class LastBatch(NamedTuple):
    """The last batch of each epoch: its samples (``last``, ``0`` where every batch is whole) of
    the epoch's ``count``, and how it splits over the replicas (``shares``, one per replica, as
    TensorFlow splits a batch of a size it cannot see; ``()`` where that is even). A partial batch
    may still split otherwise: TensorFlow's re-batching of a dataset whose shard policy is not
    ``DATA`` fills the replicas in turn (a last batch of 36 for a global batch of 64: 32/4)."""

    last: int
    count: int
    shares: tuple[int, ...]


def last_batch(data: Input, the_plan: Plan, fit_kwargs: Mapping[str, Any]) -> LastBatch | None:
    """How the last batch of each epoch splits over the plan's replicas, where autodist can tell:
    arrays and a ``tf.data.Dataset`` of known length (``shares`` empty where every batch splits
    evenly: one replica, a TPU's dropped remainder, a parameter server's workers, which each
    take whole batches); ``None`` where it cannot (a generator, a ``PyDataset``,
    ``steps_per_epoch``).

    Each replica averages its own share and, unless autodist weights them
    (``uneven_shares_weighted``), the replicas' averages count equally, so on that one step the
    samples of a smaller share weigh more than in ``model.fit`` (measured: 99 samples, batch 16,
    2 replicas, a last batch of 3 split 2/1: weights 0.03 apart after 2 epochs of SGD)."""
    replicas, batch = the_plan.num_replicas, the_plan.global_batch_size
    if replicas < 2 or the_plan.drop_remainder or the_plan.type.asynchronous:
        return LastBatch(0, 0, ())
    if not batch or fit_kwargs.get("steps_per_epoch") is not None:
        return None
    count = data.epoch_samples(fit_kwargs)
    if not count:
        return None
    last = count % batch
    shares = shares_of(last, replicas) if last else ()
    return LastBatch(last, count, shares if len(set(shares)) > 1 else ())


def _uneven_last_batch(split: LastBatch, replicas: int, batch: int) -> str:
    return (
        f"The last batch of each epoch, {split.last} of {split.count} samples (global batch {batch}), splits "
        f"{'/'.join(map(str, split.shares))} over {replicas} replicas. tf.distribute averages each "
        "replica's share and counts the replicas' averages equally, so on that one step the "
        "samples of the smaller shares weigh more than in model.fit, and the epoch's History and "
        "weights differ slightly from model.fit's (the other steps are exact). To match "
        f"model.fit, make the last batch a multiple of {replicas}: train on a number of samples "
        f"that leaves such a remainder for batch_size={batch}."
    )


def take_samples(x: Any, order: Any) -> Any:
    """The samples at ``order`` of an array, or of each array of a dict, list or tuple (``None`` stays)."""
    if x is None:
        return None
    if isinstance(x, Mapping):
        return {key: take_samples(value, order) for key, value in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(take_samples(value, order) for value in x)
    return x[order]


def slice_samples(x: Any, start: int, stop: int | None) -> Any:
    """Samples ``start:stop`` of an array, or of each array of a dict, list or tuple of inputs
    (``None`` stays).

    Example:
        >>> import numpy as np
        >>> slice_samples({"a": np.arange(3)}, 1, None)["a"].tolist(), slice_samples([np.arange(3)], 0, 1)[0].tolist()
        ([1, 2], [0])
    """
    return take_samples(x, slice(start, stop))
