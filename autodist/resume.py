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

Where the order of the rest of the epoch cannot be the uninterrupted run's (an input that Keras
shuffles itself, or a dataset with a ``shuffle``), the phase trains the epoch's remaining count of
batches, drawn anew, with a warning that says so. An input that cannot skip batches (a generator,
a ``PyDataset``, ``steps_per_epoch`` over a finite input) resumes from the epoch's start instead.

Example:
    >>> import numpy as np
    >>> first, rest = phases(np.arange(10), np.arange(10), {"batch_size": 4, "shuffle": False}, epoch=1, step=1, epochs=3).phases
    >>> first.x.tolist(), first.kwargs["initial_epoch"], first.kwargs["epochs"], first.batch_offset
    ([4, 5, 6, 7, 8, 9], 1, 2, 1)
    >>> rest.kwargs["initial_epoch"], rest.kwargs["epochs"], len(rest.x)
    (2, 3, 10)
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from autodist.callbacks import command_line, digest
from autodist.dataset_graph import finite_cardinality, shuffles
from autodist.inputs import is_array_like, num_samples, pandas_to_numpy
from autodist.log import warn_all
from autodist.preemption import ClusterAgreement, Guard, LocalAgreement, guard, next_fit_id, restore_state
from autodist.train_state import Save, clear, discard_after, readable, record, saves

__all__ = ["Armed", "Phase", "Phases", "fit_resuming", "guard_for", "phased_callbacks", "phases", "restore_finished", "run_phases"]


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

    phases: tuple[Phase, ...]
    exact: bool = True
    note: str = ""
    batches: int | None = None
    warnings: tuple[str, ...] = field(default=())


def phases(x: Any, y: Any, kwargs: Mapping[str, Any], *, epoch: int, step: int, epochs: int) -> Phases | None:
    """The ``fit`` calls that resume at ``step`` of ``epoch`` (0-based), or ``None`` when this
    input cannot skip batches (resume from the epoch's start). ``kwargs`` are the ``fit``
    keywords as ``model.fit`` reads them, without ``epochs`` and ``callbacks``."""
    kwargs = {key: value for key, value in kwargs.items() if key not in ("epochs", "callbacks")}
    stream = hasattr(x, "skip") and kwargs.get("steps_per_epoch") is not None and _endless(x)
    if step == 0 and not stream:
        return Phases((Phase(x, y, {**kwargs, "initial_epoch": epoch, "epochs": epochs}),))
    if stream:
        found = _stream_phases(x, kwargs, epoch, step)
    elif hasattr(x, "skip") and kwargs.get("steps_per_epoch") is None and finite_cardinality(x) is not None:
        note = _SHUFFLED_DATASET if shuffles(x) else ""
        found = (x.skip(step), None, kwargs), (x, None, kwargs), finite_cardinality(x), note
    elif is_array_like(pandas_to_numpy(x)) and kwargs.get("steps_per_epoch") is None and kwargs.get("batch_size"):
        found = _array_phases(pandas_to_numpy(x), pandas_to_numpy(y), kwargs, step)
    else:
        return None
    first, rest, batches, note = found
    if batches is not None and step >= batches:  # saved after the epoch's last batch: resume after it
        return phases(x, y, kwargs, epoch=epoch + 1, step=0, epochs=epochs)
    if step == 0:  # a stream resumed at an epoch's start: one phase, from the right place in it
        return Phases((Phase(first[0], None, {**first[2], "initial_epoch": epoch, "epochs": epochs}),), batches=batches)
    later = (Phase(rest[0], rest[1], {**rest[2], "initial_epoch": epoch + 1, "epochs": epochs}),) if epoch + 1 < epochs else ()
    first_phase = Phase(first[0], first[1], {**first[2], "initial_epoch": epoch, "epochs": epoch + 1}, batch_offset=step)
    warnings = (_inexact_warning(epoch, step, batches, note),) if note else ()
    return Phases((first_phase,) + later, exact=not note, note=note, batches=batches, warnings=warnings)


_SHUFFLED_DATASET = "the dataset shuffles, in a new order after a restart"


def _endless(dataset: Any) -> bool:
    return int(dataset.cardinality()) == -1  # tf.data.INFINITE_CARDINALITY


def _stream_phases(dataset: Any, kwargs: Mapping[str, Any], epoch: int, step: int) -> Any:
    """An endless dataset read ``steps_per_epoch`` batches an epoch, one stream from the first
    epoch of the run (``initial_epoch``) on: skip every batch the run has read."""
    steps = int(kwargs["steps_per_epoch"])
    read = (epoch - int(kwargs.get("initial_epoch") or 0)) * steps
    note = _SHUFFLED_DATASET if shuffles(dataset) else ""
    first = (dataset.skip(read + step), None, {**kwargs, "steps_per_epoch": steps - step} if step else dict(kwargs))
    rest = (dataset.skip(read + steps), None, dict(kwargs))
    return first, rest, steps, note


def _array_phases(x: Any, y: Any, kwargs: Mapping[str, Any], step: int) -> Any:
    """Arrays that Keras batches: the training part sliced after the trained samples, the
    validation part (``validation_split``) kept as it was. Shuffled: the remaining count of
    batches, from a new order."""
    samples = num_samples(x)
    split = 0.0 if kwargs.get("validation_data") is not None else float(kwargs.get("validation_split") or 0.0)
    train = int(math.floor(samples * (1.0 - split)))
    batch = int(kwargs["batch_size"])
    batches = math.ceil(train / batch)
    if kwargs.get("shuffle", True):
        first = (x, y, {**kwargs, "steps_per_epoch": batches - step})
        return first, (x, y, dict(kwargs)), batches, "Keras shuffles this input itself, in a new order after a restart"
    weights = kwargs.get("sample_weight")
    changes: dict[str, Any] = {"validation_split": 0.0} if split else {}
    if split:
        validation = (slice_samples(x, train, None), slice_samples(y, train, None))
        changes["validation_data"] = validation + ((slice_samples(weights, train, None),) if weights is not None else ())
    if weights is not None:
        changes["sample_weight"] = slice_samples(weights, step * batch, train)
    first = (slice_samples(x, step * batch, train), slice_samples(y, step * batch, train), {**kwargs, **changes})
    return first, (x, y, dict(kwargs)), batches, ""


def slice_samples(x: Any, start: int, stop: int | None) -> Any:
    """Samples ``start:stop`` of an array, or of each array of a dict, list or tuple of inputs
    (``None`` stays).

    Example:
        >>> import numpy as np
        >>> slice_samples({"a": np.arange(3)}, 1, None)["a"].tolist(), slice_samples([np.arange(3)], 0, 1)[0].tolist()
        ([1, 2], [0])
    """
    if x is None:
        return None
    if isinstance(x, Mapping):
        return {key: slice_samples(value, start, stop) for key, value in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(slice_samples(value, start, stop) for value in x)
    return x[start:stop]


def _inexact_warning(epoch: int, step: int, batches: int | None, note: str) -> str:
    return (
        f"Resuming epoch {epoch + 1} after {step} of its {batches or '?'} batches: {note}, so its "
        f"remaining {'' if batches is None else batches - step} batches are drawn anew, and some "
        "of its samples may be trained twice and others not at all in this one epoch. Pass "
        "shuffle=False, or numpy arrays with keras.utils.set_random_seed under "
        "multi_worker_mirrored, for the uninterrupted run's numbers."
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

    return PhasedCallbacks(callbacks, add_history=True, add_progbar=params.get("verbose", 1) != 0, model=model, **params)


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
            logs = {key: values[-1] for key, values in (history.history if history is not None else {}).items() if values}
            callbacks.on_train_end(logs)
            break
    return history


def fit_resuming(model: Any, ready: Any, epochs: int, callbacks: list[Any], armed: Any, keras_module: Any, *, order_note: str = "") -> Any:
    """``model.fit`` with the preemption guard's callbacks first and last, resumed at the newest
    save that every worker has, when there is one (see the module's docstring)."""
    state = armed.state
    callbacks = [armed.first, *callbacks, armed.last]
    kwargs = {key: value for key, value in ready.fit_kwargs.items() if key != "callbacks"}
    common = state.agreement.common([found for found in saves(state.folder) if readable(state.folder, found.name)])
    plan, state.resume_from = _resume_plan(ready, kwargs, epochs, common, state.folder) if common else (None, None)
    if state.resume_from is None:
        clear(state.folder)  # saves no peer has, or a stale one: this run starts afresh
        return model.fit(ready.x, ready.y, epochs=epochs, callbacks=callbacks, **kwargs)
    discard_after(state.folder, state.resume_from)
    if state.resume_from.kind == "done":
        return restore_finished(model, state, keras_module)
    assert plan is not None
    position = state.resume_from.position
    warn_all(list(plan.warnings) + ([_inexact_warning(position.epoch, position.step, plan.batches, order_note)] if order_note and position.step else []))
    if len(plan.phases) == 1 and plan.phases[0].batch_offset == 0:
        only = plan.phases[0]
        return model.fit(only.x, only.y, callbacks=callbacks, **only.kwargs)
    verbose = kwargs.get("verbose", "auto")
    phased = phased_callbacks(keras_module, callbacks, model, verbose=1 if verbose == "auto" else verbose, epochs=epochs, steps=plan.batches)
    return run_phases(model, plan, phased)


def _resume_plan(ready: Any, kwargs: dict[str, Any], epochs: int, common: list[Save], folder: str) -> tuple[Phases | None, Save | None]:
    """The phases for the newest save in ``common``; for an input that cannot skip batches, the
    epoch-end save before it (the epoch's trained batches are trained again, with a warning)."""
    found = common[-1]
    position = found.position
    if found.kind == "done":
        return None, found
    plan = phases(ready.x, ready.y, kwargs, epoch=position.epoch, step=position.step, epochs=epochs)
    if plan is not None:
        if position.batches and plan.batches and position.batches != plan.batches:
            warn_all([
                f"The save in {folder} was made with {position.batches} batches an epoch, and this "
                f"run has {plan.batches}: the input changed, so resuming after batch {position.step} "
                "of the epoch does not continue the same epoch."
            ])
        return plan, found
    warn_all([
        f"autodist resumes epoch {position.epoch + 1} from its start, not after the {position.step} "
        f"batches saved on preemption: this input ({type(ready.x).__name__}) cannot skip batches, "
        f"so {position.step} steps are trained again. Pass numpy arrays or a tf.data.Dataset to "
        "resume at the saved step."
    ])
    earlier = [s for s in common if s.kind == "epoch" and s.position.epoch == position.epoch]
    if earlier:
        return phases(ready.x, ready.y, kwargs, epoch=position.epoch, step=0, epochs=epochs), earlier[-1]
    return None, None  # no save of the epoch's start: the run starts afresh


def restore_finished(model: Any, state: Guard, keras_module: Any) -> Any:
    """A ``fit`` that finished before a late SIGTERM: its weights and optimizer back, and its
    History; nothing is trained, and no callback runs."""
    found = state.resume_from
    assert found is not None
    restore_state(model, state)
    saved = record(state.folder, found.name)
    history = keras_module.callbacks.History()
    history.set_model(model)
    history.history, history.epoch = dict(saved.get("history", {})), list(saved.get("epochs", []))
    history.params = {"epochs": found.position.epoch, "steps": found.position.batches}
    model.history = history
    return history


def _single(backup_dir: Any) -> str:
    """A single process's folder: under ``AUTODIST_BACKUP_DIR``, which other scripts may share,
    named after the command line too."""
    return "single" if isinstance(backup_dir, str) else f"single-{digest(command_line())}"


@dataclass(frozen=True)
class Armed:
    """A guard ready for one ``fit``: its state and its two callbacks (see :func:`guard`)."""

    state: Guard
    first: Any
    last: Any


def guard_for(backup_dir: Any, the_plan: Any, callbacks: Any, keras_module: Any, strategy: Any) -> Armed | None:
    """The preemption guard for this ``fit``, or ``None``: without a backup folder (a single-host
    run given neither ``backup_dir`` nor ``AUTODIST_BACKUP_DIR``; ``backup_dir=False``), with the
    caller's own ``BackupAndRestore``, or under parameter-server training (asynchronous: no step
    that every worker shares)."""
    from autodist.callbacks import backup_folder, default_backup_root
    from autodist.plans import StrategyKind
    from autodist.settings import backup_dir_setting

    fit_id = next_fit_id()  # every fit counts, guarded or not: workers must agree on the ids
    cluster = the_plan.cluster
    multi_worker = the_plan.strategy == StrategyKind.MULTI_WORKER_MIRRORED and cluster is not None and cluster.num_workers >= 2
    own_backup = any(type(cb).__name__ == "BackupAndRestore" for cb in callbacks or [])
    if backup_dir is False or own_backup or the_plan.strategy == StrategyKind.PARAMETER_SERVER:
        return None
    if isinstance(backup_dir, str):
        root = backup_dir
    elif multi_worker or backup_dir_setting(os.environ):
        root = default_backup_root(cluster, os.environ) if cluster is not None else str(backup_dir_setting(os.environ))
    else:
        return None
    task = backup_folder(root, cluster.task_type, cluster.task_index) if cluster is not None else os.path.join(root, _single(backup_dir))
    folder = os.path.join(task, f"fit-{fit_id}")  # one folder per fit: a second fit must not resume the first
    if multi_worker:
        assert cluster is not None
        worker = 0 if cluster.task_type == "chief" else cluster.task_index + (1 if "chief" in cluster.cluster_spec else 0)
        agreement: Any = ClusterAgreement(worker, cluster.num_workers, fit_id).start()
    else:
        agreement = LocalAgreement()
    state = Guard(folder, agreement, strategy, root=root, own_root=not isinstance(backup_dir, str) and not backup_dir_setting(os.environ))
    return Armed(state, *guard(keras_module, state))
