"""Preemption without lost steps: on SIGTERM a training task finishes its step, saves its whole
state with the step within the epoch (:mod:`autodist.resume.train_state`), and exits with
:data:`PREEMPTED_EXIT_CODE`. The next start (the launcher's restart, or the cluster manager's)
resumes at that step (:mod:`autodist.resume.resumed_fit`).

Spot VMs, Kubernetes evictions and SLURM's ``--signal`` send SIGTERM with a grace period. While
``autodist.fit`` trains with a backup folder (every multi-worker run; a single-host run given
``backup_dir`` or ``AUTODIST_BACKUP_DIR``, which the launcher sets), SIGTERM only sets a flag;
the :func:`guard` callback acts on it after the step that is running:

- one process: it saves right after that step;
- ``MultiWorkerMirroredStrategy``: every worker saves after the *same* step, the one they agree
  on (:mod:`autodist.resume.agreement`); when a worker does not answer, none saves a step, and every
  worker that heard the decision exits, naming the one that did not answer.

The callbacks' own state (``EarlyStopping``'s patience, ...: :mod:`autodist.resume.callback_state`) and
the seed of autodist's epoch orders go into every save.

Each epoch's end saves too (without the metrics), so a task that dies without warning resumes
at its last finished epoch, as with ``BackupAndRestore``; workers resume from the newest save
they all have (a worker that died may lack its peers' last one). After a ``fit`` that finished,
the saves are removed. A SIGTERM after the last step (in the last validation or callbacks), on
any worker, makes every worker save the finished fit with its History and exit 75 (the next start
trains nothing); one after ``fit`` returned is delivered again, as without autodist (a restart
trains that fit again, as with ``BackupAndRestore``). Why not TensorFlow's own tools:
``PreemptionCheckpointHandler`` needs a custom loop, tf_keras's ``BackupAndRestore`` with a
``save_freq`` restores the step count but reads the epoch's data from its start, and Keras 3's
``BackupAndRestore`` restores only the epoch.

Example:
    >>> PREEMPTED_EXIT_CODE
    75
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from autodist.errors import AutodistError
from autodist.resume import callback_state, train_state
from autodist.resume.agreement import watch_tf_notice
from autodist.resume.holder import Holding
from autodist.jobs.exit_codes import PREEMPTED_EXIT_CODE
from autodist.jobs.private import release_private_root
from autodist.resume.train_state import Position, Save
from autodist.log import get_logger, warn_all
from autodist.upstream.keras_models import SupportsTensorLogs

__all__ = ["EXIT_WAIT_S", "PREEMPTED_EXIT_CODE", "Guard", "guard", "restore_state"]

#: With the notice at the interpreter's exit (Ray Train): the longest the exit waits for the save,
#: in seconds (the step in flight, the agreement and the save; within Kubernetes' 30 s grace).
EXIT_WAIT_S = 25.0


@dataclass
class Guard:
    """What the :func:`guard` callback keeps: where the saves go, the agreement, the signal."""

    folder: str
    agreement: Any
    strategy: Any
    root: str | None = None  # the backup root, removed with the folder when empty (if autodist's)
    own_root: bool = True
    epoch_scalars: list[float] | None = None  # the optimizer's scalars in the last epoch save
    epoch_callbacks: list[Any] | None = None  # the callbacks' carried state in the last epoch save
    resume_from: Save | None = None  # the save to restore
    callbacks: list[Any] = field(default_factory=list)  # the caller's, whose state is carried
    order_seed: int | None = None  # the seed of autodist's epoch orders (shuffled arrays), if any
    received: threading.Event = field(default_factory=threading.Event)
    previous_handler: Any = None
    installed: bool = False
    #: SIGTERM arrives as the interpreter's exit (Ray Train: Ray's handler in the main thread turns
    #: it into ``SystemExit`` there, while ``fit`` runs in Ray's training thread).
    notice_at_exit: bool = False
    tf_task: str | None = None  # this task as TensorFlow names it (/job:worker/task:1), in a multi-worker job
    #: Called in every worker after the save it exits with, before it exits, with the model, the
    #: position and the step's logs (Ray Train: the save goes to Ray as the newest checkpoint).
    before_exit: Callable[[Any, Position, Any], None] | None = None
    #: Where the save goes on exit, for the message (``before_exit``'s destination), and whether
    #: the folder is only a staging place, removed when the fit ends however it ends.
    destination: str | None = None
    staging: bool = False
    acted: threading.Event = field(default_factory=threading.Event)  # saved (or gave up) after a notice
    #: The run's History so far, every start's epochs (restored from the save resumed from), and
    #: the entry of the epoch whose end is being saved, before every callback has added to it.
    entries: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    pending: tuple[int, dict[str, Any]] | None = None
    newest: Position | None = None  # the newest save written (or resumed from): what a preemption falls back to
    failing: str | None = None  # the error of the last save that could not be written, while saves fail
    last_epoch: Save | None = None  # the newest epoch save this start wrote
    holding: Holding | None = None  # this process's hold on the folder (:mod:`autodist.resume.holder`)
    warned_failure: bool = False  # one AutodistWarning a fit

    def install(self) -> None:
        """Catch SIGTERM (only a flag: the step that is running finishes). A handler of the
        caller's own, or SIGTERM ignored, is left as it is (and then nothing is saved on SIGTERM).
        With ``notice_at_exit`` (``fit`` outside the main thread, in Ray Train), SIGTERM reaches
        either Ray's handler, which ends the interpreter from the main thread (an exit handler
        sets the flag and holds the exit until the save is made, at most :data:`EXIT_WAIT_S`:
        the training thread goes on while exit handlers run; not for a ``staging`` folder, which
        the exit would lose), or, in a multi-worker job
        (``tf_task``), TensorFlow's own handler, which names the task in the coordination
        service (:func:`autodist.resume.agreement.watch_tf_notice` sets the flag)."""
        if self.notice_at_exit:
            if not self.staging:  # a folder that outlives the process: worth holding the exit for
                atexit.register(self._at_exit)
                self.installed = True
            if self.tf_task is not None:
                # TensorFlow's own handler took SIGTERM: it says so in the coordination service
                watch_tf_notice(self.tf_task, self.received.set, stop=self.acted)
            return
        if threading.current_thread() is not threading.main_thread():
            get_logger().warning(
                "autodist: fit runs outside the main thread; SIGTERM cannot be caught to save the step"
            )
            return
        current = signal.getsignal(signal.SIGTERM)
        if current not in (signal.SIG_DFL, None):
            get_logger().warning(
                "autodist: SIGTERM has a handler already (yours, or SIG_IGN); it stays, so SIGTERM saves no step"
            )
            return
        self.previous_handler = signal.signal(signal.SIGTERM, lambda signum, frame: self.received.set())
        self.installed = True

    def _at_exit(self) -> None:
        self.received.set()
        if not self.acted.wait(EXIT_WAIT_S):
            get_logger().warning(
                f"autodist: the process exits, and no step was saved within {EXIT_WAIT_S:g} s; the next start resumes "
                "at the newest save"
            )

    def save(
        self, model: Any, kind: str, position: Position, *, metrics: bool = True, extra: dict | None = None
    ) -> Save | None:
        """Save the model's state with the callbacks' carried state, the epoch orders' seed and the
        run's History so far; ``None`` when the save could not be written (:meth:`save_failed`)."""
        scalars, arrays = callback_state.capture(self.callbacks)
        groups = train_state.state_variables(model, metrics=metrics)
        if arrays:
            groups[callback_state.ARRAYS] = arrays
        seed = {} if self.order_seed is None else {"order_seed": self.order_seed}
        try:
            made = train_state.save(
                self.folder,
                kind,
                position,
                groups,
                extra={"callbacks": scalars, **seed, **self.run_record(), **(extra or {})},
            )
        except OSError as err:
            self.save_failed(kind, position, err)
            return None
        if self.failing is not None:
            get_logger().warning(
                f"autodist: the {kind} save to {self.folder} was written again (the last ones failed: {self.failing}); "
                f"a preemption now resumes at epoch {position.epoch + 1}, after {position.step} of its batches"
            )
            self.failing = None
        self.newest = position
        return made

    def save_failed(self, kind: str, position: Position, err: OSError) -> None:
        """A save that could not be written (a full disk, a quota, a folder gone read-only or
        removed): its own files are gone, the saves made before stay, and training goes on. Said
        once a fit as an :class:`~autodist.errors.AutodistWarning` with the folder, the error and
        what a preemption would now cost; then in the log while saves keep failing."""
        self.failing = f"{type(err).__name__}: {err}"
        cost = _cost(self.newest, position)
        if self.warned_failure:
            get_logger().warning(
                f"autodist: the {kind} save to {self.folder} failed again ({self.failing}); a preemption now costs "
                f"{cost}"
            )
            return
        self.warned_failure = True
        warn_all(
            [
                f"autodist could not write its {kind} save (epoch {position.epoch + 1}, after {position.step} of its "
                "batches) to "
                f"{self.folder}: {self.failing}. Training goes on, and the saves already made stay; a preemption now "
                "would cost "
                f"{cost}. autodist tries again at each epoch's end. Free space there, or pass backup_dir= a folder "
                "with room "
                "for two saves."
            ],
        )

    def run_record(self) -> dict[str, Any]:
        """The run's History to keep in a save: the logs of every epoch trained so far (this
        start's and the earlier starts'), the pending epoch's included."""
        entries = list(self.entries)
        if self.pending is not None and all(epoch != self.pending[0] for epoch, _ in entries):
            entries.append(self.pending)
        return {"epoch_logs": [[epoch, entry] for epoch, entry in entries]}

    def amend(self, found: Save, extra: dict[str, Any]) -> None:
        """Complete an epoch save's record with the epoch's final logs (and ``extra``)."""
        try:
            train_state.amend(self.folder, found.name, {**self.run_record(), **extra})
        except OSError as err:  # the save stays whole: its History lacks what the later callbacks logged
            get_logger().warning(
                f"autodist: the epoch save {found.name} in {self.folder} keeps the epoch's logs as they were before "
                f"your callbacks added to them ({type(err).__name__}: {err})"
            )

    def record_epoch(self, epoch: int, logs: Any) -> bool:
        """Add an epoch's final logs (every callback has added to them) to the run's History;
        whether they differ from the pending entry its epoch save holds."""
        entry = _entry(logs)
        changed = self.pending is None or self.pending != (epoch, entry)
        self.entries = [(e, logged) for e, logged in self.entries if e != epoch] + [(epoch, entry)]
        self.pending = None
        return changed

    def resumed_history(self, found: Save) -> None:
        """The logs of the epochs trained before the save ``found`` (by earlier starts)."""
        saved = train_state.record(self.folder, found.name)
        before = None if found.kind == "done" else found.position.epoch
        self.entries = [
            (int(epoch), dict(entry))
            for epoch, entry in saved.get("epoch_logs", [])
            if before is None or int(epoch) < before
        ]
        self.newest = found.position

    def give_back_callbacks(self) -> None:
        """On resume, after the callbacks' ``on_train_begin``: their carried state, as saved."""
        if self.resume_from is None or self.resume_from.kind == "done":
            return
        scalars = train_state.record(self.folder, self.resume_from.name).get("callbacks")
        if scalars:
            saved = train_state.load(self.folder, self.resume_from.name) or {}
            callback_state.give_back(self.callbacks, scalars, saved.get(callback_state.ARRAYS, []))

    def preempted(self) -> bool:
        """Whether this task got SIGTERM, or a worker proposed a step to save after."""
        return self.received.is_set() or self.agreement.agreed() is not None

    def finish(self, model: Any, history: Any) -> None:
        """After a ``fit`` that finished: when SIGTERM came too late to save a step (in the last
        steps, validation or callbacks), save the finished state with its History and exit with
        :data:`PREEMPTED_EXIT_CODE`: a new start returns that History and trains nothing."""
        if not self.agreement.any_preempted(self.preempted()):
            return
        logged = {
            key: [_number(value) for value in values] for key, values in dict(getattr(history, "history", {})).items()
        }
        record = {"history": logged, "epochs": list(getattr(history, "epoch", []))}
        epochs = int(getattr(history, "params", {}).get("epochs") or 0)
        position = Position(epochs, 0, getattr(history, "params", {}).get("steps"))
        saved = self.save(model, "done", position, metrics=False, extra=record) is not None
        last = {key: values[-1] for key, values in record["history"].items() if values}
        _exit(self, position, finished=True, model=model, logs=last, saved=saved)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """The ``fit`` inside guarded; :meth:`close` after, ``finished`` where it ended without an error."""
        finished = False
        try:
            yield
            finished = True
        finally:
            self.close(finished=finished)

    def close(self, *, finished: bool) -> None:
        """Give SIGTERM back; after a finished fit (or always, for a staging folder), remove the
        saves and any folder they leave empty."""
        self.agreement.close()
        self.acted.set()  # an exit that waits goes on
        if self.installed and self.notice_at_exit:
            atexit.unregister(self._at_exit)
        elif self.installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if self.previous_handler is None else self.previous_handler)
        self.installed = False
        removed = finished or self.staging
        if removed:
            train_state.clear(self.folder)  # while still held: no other process reads a half-cleared folder
        if self.holding is not None:
            self.holding.release(remove=removed)
        if removed:
            for folder in (self.folder, os.path.dirname(self.folder), self.root if self.own_root else None):
                if folder:
                    with contextlib.suppress(OSError):  # other workers' folders, or the user's files
                        os.rmdir(folder)
                release_private_root()
        if self.received.is_set() and not self.notice_at_exit:
            # came after the fit's end was agreed: as without autodist
            self.received.clear()
            os.kill(os.getpid(), signal.SIGTERM)


def _number(value: Any) -> Any:
    """A log value as JSON keeps it: a float, or a list for a metric that is not one number."""
    import numpy as np

    found = np.asarray(value)
    return float(found) if found.size == 1 else found.tolist()


def _entry(logs: Any) -> dict[str, Any]:
    return {str(key): _number(value) for key, value in dict(logs or {}).items()}


def history_of(entries: list[tuple[int, dict[str, Any]]]) -> tuple[dict[str, list[Any]], list[int]]:
    """Keras's ``History.history`` and ``History.epoch`` for these epochs' logs (a key an epoch
    did not log, such as validation every other epoch, has no value for it, as in Keras)."""
    history: dict[str, list[Any]] = {}
    for _, entry in sorted(entries, key=lambda item: item[0]):
        for key, value in entry.items():
            history.setdefault(key, []).append(value)
    return history, sorted(epoch for epoch, _ in entries)


def _cost(newest: Position | None, now: Position) -> str:
    """What a preemption at ``now`` costs when it resumes at ``newest`` (``None``: the run's start)."""
    if newest is None:
        return "the whole run so far (no save of it was written): it would start again from its first step"
    batches = now.batches or newest.batches
    where = f"epoch {newest.epoch + 1}, after {newest.step} of its batches"
    if batches:
        steps = (now.epoch - newest.epoch) * batches + now.step - newest.step
        return f"the {steps} steps since the newest save ({where})"
    return f"the steps since the newest save ({where})"


def guard(keras_module: Any, state: Guard) -> tuple[Any, Any]:
    """Two callbacks, first and last in the list. The first restores the save at the start of
    ``fit``, before any other callback sees the model, and saves at each epoch's end before any
    other callback of the epoch can end the task. The last saves the epoch again when a callback
    changed the optimizer meanwhile (a learning rate cut), and, on SIGTERM, saves after the agreed
    step once every other callback has seen it, then exits with :data:`PREEMPTED_EXIT_CODE`."""
    base = keras_module.callbacks.Callback

    class RestoreSave(SupportsTensorLogs, base):  # type: ignore[misc, valid-type]
        autodist_coarse_hooks = True  # at each execution's end is enough: no reason for steps_per_execution 1
        metrics_pending: list[Any] | None = None

        def on_train_begin(self, logs: Any = None) -> None:
            if state.resume_from is not None:
                self.metrics_pending = restore_state(self.model, state)
            state.install()

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            if self.metrics_pending and _apply_metrics(
                self.model, state, self.metrics_pending, add=False, last_try=False
            ):
                self.metrics_pending = None

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if self.metrics_pending:  # metrics built by the first step (tf_keras, Keras 3 under a strategy): add
                _apply_metrics(self.model, state, self.metrics_pending, add=True, last_try=True)
                self.metrics_pending = None

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            # first in the list: saved before any other callback of the epoch can end the task, with
            # the epoch's logs as they are now (the last callback completes them)
            state.pending = (epoch, _entry(logs))
            state.epoch_scalars = _save_epoch(self.model, state, Position(epoch + 1, 0, self.params.get("steps")))

    class SaveOnPreemption(SupportsTensorLogs, base):  # type: ignore[misc, valid-type]
        autodist_coarse_hooks = True
        finished_steps = epoch = step = 0
        exit_at_epoch_end = False

        def on_train_begin(self, logs: Any = None) -> None:
            state.give_back_callbacks()  # last in the list: after every callback reset its own

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.epoch, self.step = epoch, 0

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self.finished_steps += 1
            self.step = batch + 1
            if state.received.is_set() and state.agreement.agreed() is None:
                state.agreement.propose(self.finished_steps)
            if state.agreement.missing() is not None:  # a worker did not answer: no step is saved
                _abandon(state)
            if state.agreement.agreed() != self.finished_steps:
                return
            if not state.agreement.confirmed():
                _abandon(state)
            batches = self.params.get("steps")
            position = Position(self.epoch, self.step, batches)
            saved = state.save(self.model, "step", position) is not None
            if saved and batches and self.step >= batches:
                self.exit_at_epoch_end = True  # saved; its validation and epoch-end callbacks first
                return
            _exit(state, position, model=self.model, logs=logs, saved=saved)

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            position = Position(epoch + 1, 0, self.params.get("steps"))
            logged = state.record_epoch(epoch, logs)  # the History's entry, every callback's keys in it
            stopped = {"stopped": True} if self.model.stop_training else {}  # EarlyStopping: the run ends here
            changed = _scalars(self.model) != state.epoch_scalars  # a callback changed the learning rate (or the like)
            if changed or callback_state.capture(state.callbacks)[0] != state.epoch_callbacks:  # or its own state
                _save_epoch(self.model, state, position, extra=stopped)
            elif (logged or stopped) and state.last_epoch is not None and state.last_epoch.position == position:
                state.amend(state.last_epoch, stopped)
            last = epoch + 1 >= int(self.params.get("epochs") or 0) or self.model.stop_training
            if self.exit_at_epoch_end and not last:  # the last epoch: fit ends, and Guard.finish saves it
                _exit(state, position, model=self.model, logs=logs)

    return RestoreSave(), SaveOnPreemption()


def _scalars(model: Any) -> list[float]:
    """The optimizer's one-number variables (step count, learning rate, loss scale)."""
    import numpy as np

    variables = train_state.state_variables(model, metrics=False)["optimizer"]
    return [float(np.asarray(v.numpy()).reshape(())) for v in variables if int(np.prod(tuple(v.shape))) == 1]


def _save_epoch(model: Any, state: Guard, position: Position, extra: dict | None = None) -> list[float]:
    state.last_epoch = state.save(model, "epoch", position, metrics=False, extra=extra)
    state.epoch_callbacks = callback_state.capture(state.callbacks)[0]
    return _scalars(model)


def restore_state(model: Any, state: Guard, *, finished: bool = False) -> list[Any] | None:
    """Restore weights and optimizer from the save; return its metric values, to restore when
    the epoch begins (or, in tf_keras, after its first step builds the metrics). ``finished``:
    the save is the end of the run (nothing is trained after it)."""
    found = state.resume_from
    assert found is not None
    with state.strategy.scope():
        train_state.build_optimizer(getattr(model, "optimizer", None), model.trainable_variables)
    groups = train_state.state_variables(model, metrics=False)
    saved = train_state.load(state.folder, found.name) or {}
    missing = [name for name in groups if name not in saved or not train_state.matches(groups[name], saved[name])]
    if missing:
        raise AutodistError(
            f"autodist found the save {found.name} in {state.folder} to resume from, but its {', '.join(missing)} "
            "do not match this model's (another model, or a changed one). Expected the model of the "
            "run that saved it. Remove the folder to start afresh, or pass backup_dir= another folder."
        )
    for name in groups:
        for variable, value in zip(groups[name], saved[name]):
            variable.assign(value)
    what = {"step": "preemption", "epoch": "epoch-end", "done": "finished-fit"}[found.kind]
    if finished:
        epochs = found.position.epoch
        stopped = found.kind == "epoch" and train_state.record(state.folder, found.name).get("stopped")
        ended = f"the run stopped early, after epoch {epochs}" if stopped else f"all {epochs} epochs were trained"
        get_logger().warning(
            f"autodist: {ended} before the restart: nothing to train; the weights and History are the finished run's, "
            f"from the {what} save in {state.folder}"
        )
    else:
        get_logger().warning(
            f"autodist: resuming at epoch {found.position.epoch + 1}, after {found.position.step} of its batches, from "
            f"the {what} save in {state.folder}"
        )
    return saved.get("metrics") if found.kind == "step" else None


def _apply_metrics(model: Any, state: Guard, values: list[Any], *, add: bool, last_try: bool) -> bool:
    """Give the metrics the saved state; ``False`` when they do not match it (not built yet)."""
    variables = [v for metric in model.metrics for v in metric.variables]
    if not train_state.matches(variables, values):
        if last_try:
            get_logger().warning(
                "autodist: the metrics differ from the saved ones; this epoch's History covers the resumed batches only"
            )
        return False
    train_state.restore_metrics(state.strategy, variables, values, add=add)
    return True


def _abandon(state: Guard) -> None:
    """The workers did not all agree on a step: exit without saving one (the newest save every
    worker has stays)."""
    state.received.clear()
    state.agreement.say_abandoned()
    state.acted.set()
    raise SystemExit(PREEMPTED_EXIT_CODE)


def _exit(
    state: Guard, position: Position, *, finished: bool = False, model: Any = None, logs: Any = None, saved: bool = True
) -> None:
    state.received.clear()  # acted on
    reported = saved and state.before_exit is not None and model is not None
    if reported:
        state.before_exit(model, position, logs)
    state.acted.set()
    where = (
        "the finished fit"
        if finished
        else f"epoch {position.epoch + 1} after {position.step} of its {position.batches or '?'} batches"
    )
    if saved:
        said = f"saved {where} to {state.destination if reported else state.folder}"
        then = "with that History" if finished else "at that step"
    else:
        said = f"could not save {where} to {state.folder} ({state.failing})"
        then = f"at the newest save, costing {_cost(state.newest, position)}"
    print(
        f"autodist: preempted (SIGTERM): {said}; exiting with code {PREEMPTED_EXIT_CODE}. The next start resumes "
        f"{then}.",
        file=sys.stderr,
        flush=True,
    )
    raise SystemExit(PREEMPTED_EXIT_CODE)
