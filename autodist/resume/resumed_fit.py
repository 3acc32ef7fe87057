"""Resume mid-epoch: the rest of the interrupted epoch, then the remaining epochs, as one ``fit``
for every callback.

Neither Keras 3 nor tf_keras can start ``fit`` part-way through an epoch: Keras 3's
``BackupAndRestore`` restores only the epoch, and tf_keras's, with ``save_freq=N``, counts the
steps as done but reads the epoch's data from its start. So a resumed run is two ``fit`` calls,
the *phases* (:func:`phases`): the interrupted epoch on the batches it had left (an unshuffled
array sliced after the trained samples; a dataset that skips the trained batches), then the
remaining epochs on the input as it was. One :func:`phased_callbacks` list serves both: the
callbacks see one ``on_train_begin``, one ``on_train_end``, one History and the epoch's batch
numbers as the uninterrupted run gives them.

Numpy arrays (and pandas) that Keras would shuffle are ordered by autodist instead, while a
backup folder is on: each epoch is one ``fit`` over the arrays in the order drawn from a seed and
the epoch number (:func:`epoch_order`), the seed kept in every save, so the uninterrupted run and
a restart train every epoch in the same order. Where the order of the rest of the epoch cannot be
the uninterrupted run's (a dataset with a ``shuffle``), the phase trains the epoch's remaining
count of batches, drawn anew, with a warning that says so. An input that cannot skip batches (a
generator, a ``PyDataset``, ``steps_per_epoch`` over a finite input, shuffled tensors) resumes
from the epoch's start instead.

Example:
    >>> import numpy as np
    >>> from autodist.core.input_kinds import classify
    >>> data = classify(np.arange(10), np.arange(10))
    >>> first, rest = phases(data, {"batch_size": 4, "shuffle": False}, epoch=1, step=1, epochs=3).phases
    >>> first.x.tolist(), first.kwargs["initial_epoch"], first.kwargs["epochs"], first.batch_offset
    ([4, 5, 6, 7, 8, 9], 1, 2, 1)
    >>> rest.kwargs["initial_epoch"], rest.kwargs["epochs"], len(rest.x)
    (2, 3, 10)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autodist.upstream.tf_data import finite_cardinality, shuffles
from autodist.resume.preemption import Guard, history_of, restore_state
from autodist.resume.train_state import (
    Damaged,
    Save,
    clear,
    damaged,
    discard_after,
    readable,
    record,
    saves,
    set_aside,
)
from autodist.log import warn_all
from autodist.core.input_kinds import Arrays, Dataset, Input, numpy_only, numpy_view, training_split
from autodist.core.inputs import slice_samples, take_samples

__all__ = ["Phase", "Phases", "fit_resuming", "phased_callbacks", "phases", "restore_finished", "run_phases"]


@dataclass(frozen=True)
class Phase:
    """One ``fit`` call: its input and keywords (``initial_epoch`` and ``epochs`` included), and
    the batches of its first epoch trained before it (added to the batch numbers callbacks see)."""

    x: Any
    y: Any
    kwargs: Mapping[str, Any]
    batch_offset: int = 0


@dataclass(frozen=True)
class Phases:
    """The phases of a resumed run; ``exact``: the interrupted epoch's remaining batches are the
    uninterrupted run's; ``note``: why not, when they are not; ``batches``: the epoch's length."""

    phases: Sequence[Phase]
    exact: bool = True
    note: str = ""
    batches: int | None = None
    warnings: tuple[str, ...] = field(default=())


def phases(
    data: Input, kwargs: Mapping[str, Any], *, epoch: int, step: int, epochs: int, order_seed: int | None = None
) -> Phases | None:
    """The ``fit`` calls that resume at ``step`` of ``epoch`` (0-based), or ``None`` when this
    input cannot skip batches (resume from the epoch's start). ``kwargs`` are the ``fit``
    keywords as ``model.fit`` reads them, without ``epochs`` and ``callbacks``. Arrays that Keras
    would shuffle get autodist's epoch orders from ``order_seed`` (:func:`epoch_order`), one
    ``fit`` an epoch, from the start of a run too (``step=0``)."""
    kwargs = {key: value for key, value in kwargs.items() if key not in ("epochs", "callbacks")}
    if order_seed is not None and ordered_by_autodist(data, kwargs):
        return _ordered_phases(data.arrays, data.targets, kwargs, epoch, step, epochs, order_seed)
    if step == 0 and not data.answer(STREAMED, kwargs):
        return Phases((Phase(data.raw, data.y, {**kwargs, "initial_epoch": epoch, "epochs": epochs}),))
    found = data.answer(SKIPPED, kwargs, epoch, step)
    if found is None:
        return None
    first, rest, batches, note = found
    if batches is not None and step >= batches:  # saved after the epoch's last batch: resume after it
        return phases(data, kwargs, epoch=epoch + 1, step=0, epochs=epochs)
    if step == 0:  # a stream resumed at an epoch's start: one phase, from the right place in it
        return Phases((Phase(first[0], None, {**first[2], "initial_epoch": epoch, "epochs": epochs}),), batches=batches)
    later = (
        (Phase(rest[0], rest[1], {**rest[2], "initial_epoch": epoch + 1, "epochs": epochs}),)
        if epoch + 1 < epochs
        else ()
    )
    first_phase = Phase(
        first[0], first[1], {**first[2], "initial_epoch": epoch, "epochs": epoch + 1}, batch_offset=step
    )
    warnings = (_inexact_warning(epoch, step, batches, note),) if note else ()
    return Phases((first_phase,) + later, exact=not note, note=note, batches=batches, warnings=warnings)


def ordered_by_autodist(data: Input, kwargs: Mapping[str, Any]) -> bool:
    """Whether autodist orders this input's epochs itself under a backup folder: numpy arrays
    (or pandas; a dict, list or tuple of them) that Keras batches (``batch_size``, no
    ``steps_per_epoch``) and would shuffle. Tensors are left to Keras (a string tensor cannot
    become a numpy array Keras takes)."""
    shuffled = kwargs.get("shuffle", True) is True
    arrays = data.numpy_only and numpy_only(kwargs.get("sample_weight"))
    return shuffled and arrays and kwargs.get("steps_per_epoch") is None and bool(kwargs.get("batch_size"))


def epoch_order(seed: int, epoch: int, samples: int) -> Any:
    """The order of the training samples in ``epoch``: a permutation drawn from ``(seed, epoch)``
    alone, so a restart draws the same one.

    Example:
        >>> epoch_order(7, 1, 5).tolist() == epoch_order(7, 1, 5).tolist() != epoch_order(7, 2, 5).tolist()
        True
    """
    import numpy as np

    return np.random.default_rng([int(seed), int(epoch)]).permutation(samples)


class _EpochPhases(Sequence):  # type: ignore[type-arg]
    """One phase an epoch, each made when it is reached (a copy of the arrays in its order)."""

    def __init__(self, x: Any, y: Any, kwargs: Mapping[str, Any], epochs: range, step: int, seed: int, train: int):
        self.x, self.y, self.kwargs, self.epochs = x, y, kwargs, epochs
        self.step, self.seed, self.train = step, seed, train

    def __len__(self) -> int:
        return len(self.epochs)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        epoch, offset = self.epochs[index], self.step if index == 0 else 0
        order = epoch_order(self.seed, epoch, self.train)[offset * int(self.kwargs["batch_size"]) :]
        kwargs = {**self.kwargs, "initial_epoch": epoch, "epochs": epoch + 1}
        if kwargs.get("sample_weight") is not None:
            kwargs["sample_weight"] = take_samples(kwargs["sample_weight"], order)
        return Phase(take_samples(self.x, order), take_samples(self.y, order), kwargs, batch_offset=offset)


def _ordered_phases(x: Any, y: Any, kwargs: Mapping[str, Any], epoch: int, step: int, epochs: int, seed: int) -> Phases:
    """Shuffled arrays in autodist's epoch orders: the training part in the order of
    :func:`epoch_order`, after the ``step`` batches trained; ``validation_split``'s part kept."""
    train, batches, held_out = _training_part(x, y, kwargs)
    if step >= batches:
        epoch, step = epoch + 1, 0
    weights = kwargs.get("sample_weight")
    changes: dict[str, Any] = {"shuffle": False, "validation_split": 0.0, **held_out}
    if weights is not None:
        changes["sample_weight"] = slice_samples(numpy_view(weights), 0, train)
    x, y = slice_samples(x, 0, train), slice_samples(y, 0, train)
    if epoch >= epochs:  # saved after the last batch of the last epoch: nothing left to train
        return Phases((Phase(x, y, {**kwargs, **changes, "initial_epoch": epoch, "epochs": epochs}),), batches=batches)
    # type: ignore[arg-type]
    return Phases(_EpochPhases(x, y, {**kwargs, **changes}, range(epoch, epochs), step, seed, train), batches=batches)


_SHUFFLED_DATASET = "the dataset shuffles, in a new order after a restart"
#: Said once per fit that autodist orders (its numbers differ from a seeded model.fit's).
ORDERED_NOTE = (
    "With a backup folder, autodist orders the epochs of these shuffled arrays itself (one fit "
    "an epoch over a copy of the training arrays in the order drawn from a seed kept in the "
    "backup), so that a restart goes on in the same order. The orders differ from Keras's own "
    "shuffle: a run seeded with keras.utils.set_random_seed trains as randomly as under "
    "model.fit, but not the same numbers. Pass shuffle=False, or backup_dir=False, to keep "
    "Keras's order."
)


#: What an input answers on resume (:meth:`~autodist.core.input_kinds.Input.answers`).
STREAMED, SKIPPED = "streamed", "skipped"


@Input.answers(STREAMED)
def _streamed(data: Input, kwargs: Mapping[str, Any]) -> bool:
    """Whether the input is read as one endless stream, ``steps_per_epoch`` batches an epoch (an
    epoch's start is then a place in it, not its start): a repeated dataset only."""
    return False


@Dataset.answers(STREAMED)
def _dataset_streamed(data: Dataset, kwargs: Mapping[str, Any]) -> bool:
    # -1: tf.data.INFINITE_CARDINALITY
    return kwargs.get("steps_per_epoch") is not None and int(data.raw.cardinality()) == -1


@Input.answers(SKIPPED)
def _skipped(data: Input, kwargs: Mapping[str, Any], epoch: int, step: int) -> Any:
    """How the input resumes after ``step`` batches of ``epoch``: the first epoch's input and
    keywords, the later epochs', the epoch's batches and what is inexact (``None``: it cannot
    skip batches: a generator, a ``PyDataset``, shuffled arrays autodist does not order)."""
    return None


@Dataset.answers(SKIPPED)
def _dataset_skipped(data: Dataset, kwargs: Mapping[str, Any], epoch: int, step: int) -> Any:
    x = data.raw
    note = _SHUFFLED_DATASET if shuffles(x) else ""
    if _dataset_streamed(data, kwargs):
        # an endless dataset read steps_per_epoch batches an epoch, one stream from the first epoch of
        # the run (initial_epoch) on: skip every batch the run has read
        steps = int(kwargs["steps_per_epoch"])
        read = (epoch - int(kwargs.get("initial_epoch") or 0)) * steps
        first = (x.skip(read + step), None, {**kwargs, "steps_per_epoch": steps - step} if step else dict(kwargs))
        return first, (x.skip(read + steps), None, dict(kwargs)), steps, note
    if kwargs.get("steps_per_epoch") is not None or finite_cardinality(x) is None:
        return None
    return (x.skip(step), None, kwargs), (x, None, kwargs), finite_cardinality(x), note


@Arrays.answers(SKIPPED)
def _arrays_skipped(data: Arrays, kwargs: Mapping[str, Any], epoch: int, step: int) -> Any:
    """Unshuffled arrays that Keras batches: the training part sliced after the trained samples,
    the validation part (``validation_split``) kept as it was."""
    if kwargs.get("steps_per_epoch") is not None or not kwargs.get("batch_size") or kwargs.get("shuffle", True):
        return None
    x, y = data.arrays, data.targets
    train, batches, changes = _training_part(x, y, kwargs)
    skip = step * int(kwargs["batch_size"])
    if kwargs.get("sample_weight") is not None:
        changes["sample_weight"] = slice_samples(kwargs["sample_weight"], skip, train)
    first = (slice_samples(x, skip, train), slice_samples(y, skip, train), {**kwargs, **changes})
    return first, (x, y, dict(kwargs)), batches, ""


def _training_part(x: Any, y: Any, kwargs: Mapping[str, Any]) -> tuple[int, int, dict[str, Any]]:
    """Arrays' training samples, their batches an epoch, and the keywords that keep
    ``validation_split``'s part (the samples after them) as ``validation_data``."""
    train, split = training_split(x, kwargs)
    batches = math.ceil(train / int(kwargs["batch_size"]))
    if not split:
        return train, batches, {}
    held_out = (x, y) if kwargs.get("sample_weight") is None else (x, y, kwargs["sample_weight"])
    validation = tuple(slice_samples(part, train, None) for part in held_out)
    return train, batches, {"validation_split": 0.0, "validation_data": validation}


def _inexact_warning(epoch: int, step: int, batches: int | None, note: str) -> str:
    return (
        f"Resuming epoch {epoch + 1} after {step} of its {batches or '?'} batches: {note}, so its "
        f"remaining {'' if batches is None else batches - step} batches are drawn anew, and some "
        "of its samples may be trained twice and others not at all in this one epoch. Pass "
        "shuffle=False, or numpy arrays (with keras.utils.set_random_seed under "
        "multi_worker_mirrored), for the uninterrupted run's numbers."
    )


def phased_callbacks(keras_module: Any, callbacks: list[Any], model: Any, **params: Any) -> Any:
    """One Keras ``CallbackList`` for every phase: ``on_train_begin`` in the first phase only,
    ``on_train_end`` after the last, batch numbers counted from the epoch's start."""

    class PhasedCallbacks(keras_module.callbacks.CallbackList):  # type: ignore[misc, name-defined]
        first_phase, last_phase, batch_offset = True, False, 0

        def on_train_begin(self, logs: Any = None) -> None:
            if self.first_phase:
                super().on_train_begin(logs)

        def on_train_end(self, logs: Any = None) -> None:
            if self.last_phase:
                super().on_train_end(logs)

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            super().on_train_batch_begin(batch + self.batch_offset, logs)

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            super().on_train_batch_end(batch + self.batch_offset, logs)

    return PhasedCallbacks(
        callbacks, add_history=True, add_progbar=params.get("verbose", 1) != 0, model=model, **params
    )


@contextlib.contextmanager
def _final_values_at_the_end_only(model: Any, last: bool) -> Iterator[None]:
    """Keras ends every ``fit`` with ``optimizer.finalize_variable_values`` (with ``use_ema``,
    the averaged weights replace the model's): only after the last phase, as after one ``fit``."""
    optimizer = getattr(model, "optimizer", None)
    if last or optimizer is None or not hasattr(optimizer, "finalize_variable_values"):
        yield
        return
    optimizer.finalize_variable_values = lambda *args, **kwargs: None
    try:
        yield
    finally:
        del optimizer.finalize_variable_values  # the class's own again


def run_phases(model: Any, plan: Phases, callbacks: Any) -> Any:
    """Run the phases with one :func:`phased_callbacks` list; the History of them all."""
    history = None
    for index, phase in enumerate(plan.phases):
        callbacks.first_phase, callbacks.last_phase = index == 0, index == len(plan.phases) - 1
        callbacks.batch_offset = phase.batch_offset
        with _final_values_at_the_end_only(model, callbacks.last_phase):
            history = model.fit(phase.x, phase.y, callbacks=callbacks, **phase.kwargs)
        callbacks.batch_offset = 0
        if model.stop_training and not callbacks.last_phase:  # EarlyStopping, TerminateOnNaN, ...
            if hasattr(model.optimizer, "finalize_variable_values"):  # as fit does before on_train_end
                model.optimizer.finalize_variable_values(model.trainable_variables)
            callbacks.last_phase = True
            logs = {
                key: values[-1] for key, values in (history.history if history is not None else {}).items() if values
            }
            callbacks.on_train_end(logs)
            break
    return history


def fit_resuming(
    model: Any,
    ready: Any,
    epochs: int,
    callbacks: list[Any],
    armed: Any,
    keras_module: Any,
    *,
    order_note: str = "",
    order_seed: Any = None,
) -> Any:
    """``model.fit`` with the preemption guard's callbacks first and last, resumed at the newest
    intact save that every worker has, when there is one (see the module's docstring). Damaged
    saves are moved aside, each named in a warning. Shuffled arrays take autodist's epoch orders
    from a seed kept with every save (``order_seed()`` draws it for a fresh start), so a restart
    trains the rest of the epoch in the uninterrupted run's order. The History returned holds
    every epoch of the run, the earlier starts' included; a run whose saves say it finished
    trains nothing and returns that History."""
    state = armed.state
    state.callbacks = list(callbacks)
    broken = damaged(state.folder)
    aside = set_aside(state.folder, broken) if broken else ""
    common = state.agreement.common([found for found in saves(state.folder) if readable(state.folder, found.name)])
    if common:
        state.order_seed = record(state.folder, common[-1].name).get("order_seed")
    kwargs = {key: value for key, value in ready.fit_kwargs.items() if key != "callbacks"}
    plan, state.resume_from = (
        _resume_plan(ready, kwargs, epochs, common, state.folder, state.order_seed) if common else (None, None)
    )
    if broken:
        warn_all([_damaged_warning(state.folder, aside, broken, state.resume_from)])
    if state.resume_from is not None:
        state.resumed_history(state.resume_from)
    # Ray's report: after the epoch's last save
    late = [cb for cb in callbacks if getattr(cb, "autodist_after_guard", False)]
    run_history = _run_history(keras_module, state.entries)
    callbacks = [armed.first, *[cb for cb in callbacks if cb not in late], armed.last, *late, run_history]
    if state.resume_from is None:
        clear(state.folder)  # saves no peer has, or a stale one: this run starts afresh
        ordered = order_seed is not None and ordered_by_autodist(ready.data, kwargs)
        state.order_seed = int(order_seed()) if ordered else None
        if not ordered:
            return model.fit(ready.data.raw, ready.data.y, epochs=epochs, callbacks=callbacks, **kwargs)
        warn_all([ORDERED_NOTE])
        plan = phases(
            ready.data,
            kwargs,
            epoch=int(kwargs.get("initial_epoch") or 0),
            step=0,
            epochs=epochs,
            order_seed=state.order_seed,
        )
        assert plan is not None
        return _run_plan(model, plan, callbacks, keras_module, kwargs, epochs)
    discard_after(state.folder, state.resume_from)
    if plan is None:  # its saves say the run finished: nothing is trained
        return restore_finished(model, state, keras_module)
    position = state.resume_from.position
    warnings = list(plan.warnings)
    if order_note and position.step:
        warnings.append(_inexact_warning(position.epoch, position.step, plan.batches, order_note))
    warn_all(warnings)
    if len(plan.phases) == 1 and plan.phases[0].batch_offset == 0:
        only = plan.phases[0]
        return model.fit(only.x, only.y, callbacks=callbacks, **only.kwargs)
    return _run_plan(model, plan, callbacks, keras_module, kwargs, epochs)


def _run_history(keras_module: Any, entries: list[tuple[int, dict[str, Any]]]) -> Any:
    """Keras's ``History`` callback, holding the epochs the earlier starts trained: ``fit``
    returns it (the last ``History`` in a callback list is the one Keras fills), so a resumed
    run's History is the uninterrupted run's, every epoch in it."""
    earlier, epochs = history_of(entries)

    class RunHistory(keras_module.callbacks.History):  # type: ignore[misc, name-defined]
        def on_train_begin(self, logs: Any = None) -> None:
            super().on_train_begin(logs)
            self.history = {key: list(values) for key, values in earlier.items()}
            self.epoch = list(epochs)

    return RunHistory()


def _damaged_warning(folder: str, aside: str, broken: list[Damaged], resumed: Save | None) -> str:
    """What the damaged saves cost: the steps trained again, and where their files are kept."""
    named = "; ".join(f"{found.name} ({found.why})" for found in broken)
    newest = broken[-1].position
    held = f"epoch {newest.epoch + 1}, after {newest.step} of its batches"
    if resumed is None:
        steps = f": {newest.epoch * newest.batches + newest.step} steps" if newest.batches else ""
        return (
            f"Every save in {folder} is damaged: {named}. The run starts over from its first step, and the steps they "
            "held "
            f"(up to {held}{steps}) are trained again. The damaged files are kept in {aside}."
        )
    back = resumed.position
    if (back.epoch, back.step) >= (newest.epoch, newest.step):
        return (
            f"autodist moved damaged saves in {folder} aside: {named}; it resumes from the newer save {resumed.name}. "
            f"The damaged files are kept in {aside}."
        )
    return (
        f"The newest save in {folder} is damaged: {named}. autodist resumes from the older save {resumed.name} (epoch "
        f"{back.epoch + 1}, after {back.step} of its batches), so the steps up to {held} are trained again. The "
        f"damaged files are kept in {aside}."
    )


def _run_plan(
    model: Any, plan: Phases, callbacks: list[Any], keras_module: Any, kwargs: Mapping[str, Any], epochs: int
) -> Any:
    verbose = kwargs.get("verbose", "auto")
    phased = phased_callbacks(
        keras_module, callbacks, model, verbose=1 if verbose == "auto" else verbose, epochs=epochs, steps=plan.batches
    )
    return run_phases(model, plan, phased)


def _resume_plan(
    ready: Any, kwargs: dict[str, Any], epochs: int, common: list[Save], folder: str, seed: int | None
) -> tuple[Phases | None, Save | None]:
    """The phases for the newest save in ``common``; for an input that cannot skip batches, the
    epoch-end save before it (the epoch's trained batches are trained again, with a warning)."""
    found = common[-1]
    position = found.position
    if found.kind == "done" or (
        found.kind == "epoch" and (position.epoch >= epochs or record(folder, found.name).get("stopped"))
    ):
        return None, found  # the run finished before the restart (killed after its last save)
    plan = phases(ready.data, kwargs, epoch=position.epoch, step=position.step, epochs=epochs, order_seed=seed)
    if plan is not None:
        if position.batches and plan.batches and position.batches != plan.batches:
            warn_all(
                [
                    f"The save in {folder} was made with {position.batches} batches an epoch, and this "
                    f"run has {plan.batches}: the input changed, so resuming after batch {position.step} "
                    "of the epoch does not continue the same epoch."
                ]
            )
        return plan, found
    warn_all(
        [
            f"autodist resumes epoch {position.epoch + 1} from its start, not after the {position.step} "
            f"batches saved on preemption: this input ({ready.data.name}) cannot skip batches, "
            f"so {position.step} steps are trained again. Pass numpy arrays or a tf.data.Dataset to "
            "resume at the saved step."
        ]
    )
    earlier = [s for s in common if s.kind == "epoch" and s.position.epoch == position.epoch]
    if earlier:
        return phases(ready.data, kwargs, epoch=position.epoch, step=0, epochs=epochs, order_seed=seed), earlier[-1]
    return None, None  # no save of the epoch's start: the run starts afresh


def restore_finished(model: Any, state: Guard, keras_module: Any) -> Any:
    """A ``fit`` whose saves say it finished (a SIGTERM after its last step; a process killed after
    its last epoch's save, or after an early stop): its weights and optimizer back, and the
    run's History; nothing is trained, and no callback runs."""
    found = state.resume_from
    assert found is not None
    restore_state(model, state, finished=True)
    saved = record(state.folder, found.name)
    history = keras_module.callbacks.History()
    history.set_model(model)
    if "history" in saved:  # a finished fit's save: its History as fit returned it
        history.history, history.epoch = dict(saved["history"]), list(saved.get("epochs", []))
    else:
        history.history, history.epoch = history_of(state.entries)
    history.params = {"epochs": found.position.epoch, "steps": found.position.batches}
    model.history = history
    return history
