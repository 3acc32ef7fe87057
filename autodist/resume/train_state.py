"""A training task's whole state in one private folder: the model's weights, the optimizer's and
the metrics' variables, and where in the run it stood (the epoch, and the batches of it already
trained), so that a restart resumes at that step and trains the same numbers.

Two kinds of save share a folder: ``epoch`` (at each epoch's end; no metrics: the next epoch
resets them) and ``step`` (when the task is preempted, mid-epoch; with the metrics, so that the
epoch's History is the uninterrupted run's). Each is ``<kind>-<epoch>-<step>.npz`` (the values)
and ``.json`` (the :class:`Position` and the variables' shapes), each written to a partial file
and renamed, the JSON last, so a save cut short is never read. The :data:`KEEP` newest stay. Every worker keeps its own
folder: under
``MultiWorkerMirroredStrategy`` all workers hold the same values, so none reads another's files
(no shared file system is needed).

Metric variables are ``ON_READ`` sums under a ``tf.distribute`` strategy: saved as their global
value (a cross-replica read; under ``MultiWorkerMirroredStrategy`` an all-reduce that every worker
runs at the same step) and restored to the first replica, every other replica holding zero, so
the sum is the saved value again.

Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> for epoch in (1, 2, 3):
    ...     _ = save(folder, "epoch", Position(epoch, 0, 10), {"weights": [np.zeros(2)]})
    >>> [found.position.epoch for found in saves(folder)]  # the two newest
    [2, 3]
    >>> save(folder, "step", Position(3, 5, 10), {"weights": [np.ones(2)]}).name
    'step-000003-00000005'
    >>> load(folder, saves(folder)[-1].name)["weights"][0].tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from autodist.jobs.private import private_folder, write_privately
from autodist.upstream.keras_models import optimizer_slots_ready

__all__ = [
    "build_optimizer",
    "DAMAGED",
    "GROUPS",
    "KEEP",
    "KINDS",
    "Damaged",
    "Position",
    "Save",
    "amend",
    "clear",
    "damaged",
    "set_aside",
    "discard_after",
    "load",
    "matches",
    "needed_for_resume",
    "readable",
    "record",
    "restore_metrics",
    "save",
    "saves",
    "state_variables",
]

#: The variable groups a save holds, in order.
GROUPS = ("weights", "optimizer", "metrics")
#: The kinds of save: at an epoch's end, on preemption mid-epoch, after a ``fit`` that finished
#: when a SIGTERM came too late to act on (its History is kept, and a new start trains nothing).
KINDS = ("epoch", "step", "done")
#: Saves kept in a folder: the newest and the one before. Under MultiWorkerMirroredStrategy a
#: worker that dies may not have made the save its peers made; they resume from one all have.
KEEP = 2


@dataclass(frozen=True)
class Position:
    """Where a run stood: ``epoch`` (0-based) and ``step``, the batches of it already trained;
    ``batches``: the epoch's length in batches when saved (``None`` when unknown)."""

    epoch: int
    step: int
    batches: int | None = None


def state_variables(model: Any, *, metrics: bool = True) -> dict[str, list[Any]]:
    """The model's variables by group: every weight (trainable or not) and, in Keras 3, the
    random layers' seed states; the optimizer's (step count, slots, learning rate, loss scale);
    and, with ``metrics``, the metrics' state."""
    tf_keras = type(model).__module__.startswith("tf_keras")
    metric_variables = [v for metric in model.metrics for v in metric.variables]
    # a subclassed tf_keras model's own metrics (self.loss_tracker = Mean()) are among its weights
    seen = {id(v) for v in metric_variables}
    weights = [v for v in (model.weights if tf_keras else model.variables) if id(v) not in seen]
    groups = {"weights": weights, "optimizer": _optimizer_variables(model)}
    if metrics:
        groups["metrics"] = metric_variables
    return groups


#: Create an optimizer's slots now, before a restore assigns them (tf_keras creates them at its first step).
build_optimizer = optimizer_slots_ready


def _optimizer_variables(model: Any) -> list[Any]:
    """Keras 3 lists all of them; tf_keras leaves out its learning-rate variable and a loss-scale
    optimizer's scale, found here among the variables the optimizer tracks."""
    optimizer = getattr(model, "optimizer", None)
    found = getattr(optimizer, "variables", []) if optimizer is not None else []
    found = list(found() if callable(found) else found)  # tf_keras's older optimizers: a method
    if optimizer is None or not type(optimizer).__module__.startswith("tf_keras"):
        return found
    import tensorflow as tf

    seen = {id(v) for v in found}
    for tracked in tf.train.TrackableView(optimizer).descendants():
        if isinstance(tracked, tf.Variable) and id(tracked) not in seen:
            found.append(tracked)
            seen.add(id(tracked))
    return found


@dataclass(frozen=True)
class Save:
    """One save in a folder: its file name (without suffix), kind and position."""

    name: str
    kind: str
    position: Position

    @property
    def order(self) -> tuple[int, int]:
        return (self.position.epoch, self.position.step)


def save(
    folder: str, kind: str, position: Position, groups: dict[str, list[Any]], *, extra: dict | None = None
) -> Save:
    """Write the variables' values, then the position and ``extra`` (atomically), as
    ``<folder>/<kind>-<epoch>-<step>.*``; keep the :data:`KEEP` newest saves."""
    values = {
        name: [np.asarray(v.numpy() if hasattr(v, "numpy") else v) for v in variables]
        for name, variables in groups.items()
    }
    private_folder(folder)
    name = f"{kind}-{position.epoch:06d}-{position.step:08d}"
    arrays = {f"{group}_{i}": value for group, found in values.items() for i, value in enumerate(found)}
    shapes = {group: [list(np.shape(value)) for value in found] for group, found in values.items()}
    record = {"position": asdict(position), "shapes": shapes, **(extra or {})}
    try:
        write_privately(os.path.join(folder, f"{name}.npz"), lambda handle: np.savez(handle, **arrays))
        write_privately(os.path.join(folder, f"{name}.json"), lambda handle: handle.write(json.dumps(record).encode()))
    except BaseException:
        _remove(folder, name)  # its own files only: the saves made before stay
        raise
    for old in saves(folder)[:-KEEP]:
        _remove(folder, old.name)
    return Save(name, kind, position)


def amend(folder: str, name: str, extra: dict[str, Any]) -> None:
    """Rewrite the JSON of save ``name`` with ``extra`` merged in (atomically; the values stay)."""
    updated = {**record(folder, name), **extra}
    write_privately(os.path.join(folder, f"{name}.json"), lambda handle: handle.write(json.dumps(updated).encode()))


@dataclass(frozen=True)
class Damaged:
    """A save whose files are there but do not read: its name, why, and where its name says the
    run stood (its epoch and step)."""

    name: str
    why: str
    position: Position

    def files(self, folder: str) -> list[str]:
        return [
            os.path.join(folder, self.name + suffix)
            for suffix in (".json", ".npz")
            if os.path.exists(os.path.join(folder, self.name + suffix))
        ]


def damaged(folder: str) -> list[Damaged]:
    """The saves in ``folder`` that cannot be resumed from, oldest first: a record (JSON) that does
    not parse, or values (``.npz``) missing, truncated or failing their checksums (every array is
    read: a zip's CRC catches bit rot). A save cut short while it was written (values without a
    record) is not one: it was never made."""
    found = []
    for file in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if file.endswith(".json") and file.partition("-")[0] in KINDS:
            name = file[: -len(".json")]
            why, position = _damage(folder, name)
            if why:
                found.append(Damaged(name, why, position))
    return sorted(found, key=lambda d: (d.position.epoch, d.position.step))


def _damage(folder: str, name: str) -> tuple[str, Position]:
    """Why save ``name`` cannot be resumed from (``""``: it can), and where it stood: by its
    record, or by its name (``<kind>-<epoch>-<step>``) when the record does not read."""
    try:
        saved = record(folder, name)
        position = Position(**saved["position"])
        shapes = dict(saved["shapes"])
    except (OSError, ValueError, KeyError, TypeError):
        _, epoch, step = (name.split("-") + ["0", "0"])[:3]
        return "its record (.json) does not read", Position(
            int(epoch) if epoch.isdigit() else 0, int(step) if step.isdigit() else 0
        )
    if not os.path.exists(os.path.join(folder, f"{name}.npz")):
        return "its values (.npz) are missing", position
    try:
        with np.load(os.path.join(folder, f"{name}.npz")) as data:
            for group, group_shapes in shapes.items():
                for i, shape in enumerate(group_shapes):
                    if list(np.shape(data[f"{group}_{i}"])) != list(shape):
                        return f"its values (.npz) do not match its record ({group}_{i})", position
    except Exception as err:  # zipfile, EOF, CRC, pickle and key errors alike
        return f"its values (.npz) do not read ({type(err).__name__}: {err})", position
    return "", position


#: Where damaged saves are moved, inside their folder: kept, never deleted.
DAMAGED = "damaged"


def set_aside(folder: str, found: list[Damaged]) -> str:
    """Move the files of the ``found`` saves into ``<folder>/damaged`` (a name already there gets a
    number), where a user can still recover what they hold; returns that folder."""
    aside = os.path.join(folder, DAMAGED)
    private_folder(aside)
    for damage in found:
        for path in damage.files(folder):
            target, number = os.path.join(aside, os.path.basename(path)), 1
            while os.path.exists(target):
                target, number = os.path.join(aside, f"{os.path.basename(path)}.{number}"), number + 1
            os.replace(path, target)
    return aside


def saves(folder: str) -> list[Save]:
    """The readable saves in ``folder``, oldest first (a save cut short has no JSON: not listed)."""
    found = []
    for file in os.listdir(folder) if os.path.isdir(folder) else []:
        kind, _, rest = file.partition("-")
        if not file.endswith(".json") or kind not in KINDS:
            continue
        try:
            with open(os.path.join(folder, file)) as handle:
                position = Position(**json.load(handle)["position"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if os.path.exists(os.path.join(folder, file[: -len(".json")] + ".npz")):
            found.append(Save(file[: -len(".json")], kind, position))
    return sorted(found, key=_newness)


def needed_for_resume(folder: str) -> set[str]:
    """The names of the saves a resume from ``folder`` needs: the newest and, when that is a
    step's, the newest epoch save (an input that cannot skip batches resumes at its epoch's
    start). Empty when ``folder`` holds none."""
    found = saves(folder)
    if not found:
        return set()
    return {found[-1].name, next((s.name for s in reversed(found) if s.kind == "epoch"), found[-1].name)}


def _newness(found: Save) -> tuple[int, int, int]:
    """Later position first; at one position, ``done`` after ``epoch``."""
    return (*found.order, KINDS.index(found.kind))


def load(folder: str, name: str) -> dict[str, list[np.ndarray]] | None:
    """The saved values of save ``name``, by group; ``None`` when it is unreadable."""
    try:
        shapes = record(folder, name)["shapes"]
        with np.load(os.path.join(folder, f"{name}.npz")) as data:
            return {group: [data[f"{group}_{i}"] for i in range(len(shapes[group]))] for group in shapes}
    except Exception:  # a truncated or corrupt file: zipfile, EOF, pickle and key errors alike
        return None


def record(folder: str, name: str) -> dict[str, Any]:
    """The JSON of save ``name``: its position, shapes and what :func:`save` got as ``extra``."""
    with open(os.path.join(folder, f"{name}.json")) as handle:
        return dict(json.load(handle))


def readable(folder: str, name: str) -> bool:
    """Whether save ``name`` opens and lists every array its JSON names (cheap: the zip's
    directory, which a file cut short lacks, not the arrays)."""
    try:
        shapes = record(folder, name)["shapes"]
        with np.load(os.path.join(folder, f"{name}.npz")) as data:
            return {f"{group}_{i}" for group in shapes for i in range(len(shapes[group]))} <= set(data.files)
    except Exception:
        return False


def matches(variables: list[Any], values: list[np.ndarray]) -> bool:
    """Whether saved ``values`` fit ``variables``: as many, and the same shapes."""
    return [tuple(np.shape(v)) for v in variables] == [tuple(np.shape(value)) for value in values]


def _remove(folder: str, name: str) -> None:
    for suffix in (".json", ".npz"):  # the JSON first: a half-removed save is not listed
        with contextlib.suppress(OSError):
            os.remove(os.path.join(folder, name + suffix))


def discard_after(folder: str, kept: Save) -> None:
    """Remove the saves newer than ``kept`` (one this run resumed before, or one another worker
    lacks): the next save must not be followed by a stale one."""
    for found in saves(folder):
        if _newness(found) > _newness(kept):
            _remove(folder, found.name)


def clear(folder: str) -> None:
    """Remove every save from ``folder`` (and any cut short), and the folder when that leaves it empty."""
    for file in os.listdir(folder) if os.path.isdir(folder) else []:
        if file.lstrip(".").startswith(tuple(f"{kind}-" for kind in KINDS)):
            os.remove(os.path.join(folder, file))
    with contextlib.suppress(OSError):
        os.rmdir(folder)


def restore_metrics(strategy: Any, variables: list[Any], values: list[np.ndarray], *, add: bool = False) -> None:
    """Give the metrics their saved (global) state: the first replica holds it, every other
    replica zero, for variables summed across replicas; each replica holds it for the others.
    With ``add``, the saved state is added to what the variables hold."""
    import tensorflow as tf

    def per_replica() -> None:
        first = tf.equal(tf.distribute.get_replica_context().replica_id_in_sync_group, 0)
        for variable, value in zip(variables, values):
            summed = "SUM" in str(getattr(variable, "aggregation", "")).upper()
            mine = tf.where(first, value, tf.zeros_like(value)) if summed else tf.constant(value)
            (variable.assign_add if add else variable.assign)(tf.cast(mine, variable.dtype))

    tf.function(lambda: strategy.run(per_replica))()  # eager strategy.run warns of its overhead
