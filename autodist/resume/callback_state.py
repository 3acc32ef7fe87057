"""The state that callbacks carry from epoch to epoch, kept with every preemption save and given
back on resume, so that a resumed run stops, cuts its learning rate and keeps its best
checkpoint at the same epochs as the uninterrupted run.

Keras's built-in callbacks reset this state in ``on_train_begin``, and neither Keras's
``BackupAndRestore`` nor tf_keras's saves it: a resumed ``EarlyStopping`` would count its
patience from zero. Carried (Keras 3 and tf_keras alike, subclasses included):

- ``EarlyStopping``: ``wait``, ``best``, ``best_epoch``, ``stopped_epoch`` and, with
  ``restore_best_weights``, the best weights;
- ``ReduceLROnPlateau``: ``wait``, ``best``, ``cooldown_counter`` (the learning rate itself is
  the optimizer's, saved with it);
- ``ModelCheckpoint``: ``best`` (``save_best_only``), the batch counters of ``save_freq=N``, and
  tf_keras's ``epochs_since_last_save``.

A callback of your own carries the attributes it names in ``autodist_state`` (a tuple of
attribute names whose values are numbers, strings, ``None``, or lists of arrays); anything else
it holds starts afresh after a restart, as it would under ``model.fit``.

Example:
    >>> import keras
    >>> stop = keras.callbacks.EarlyStopping(patience=3)
    >>> stop.on_train_begin()
    >>> stop.wait, stop.best = 2, 0.25
    >>> scalars, arrays = capture([stop, keras.callbacks.History()])
    >>> scalars  # doctest: +NORMALIZE_WHITESPACE
    [{'class': 'EarlyStopping', 'wait': 2, 'best': 0.25, 'best_epoch': 0, 'stopped_epoch': 0, 'best_weights': None},
    None]
    >>> fresh = keras.callbacks.EarlyStopping(patience=3)
    >>> fresh.on_train_begin()
    >>> give_back([fresh, keras.callbacks.History()], scalars, arrays)  # the same callbacks, in order
    >>> fresh.wait, fresh.best
    (2, 0.25)
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ARRAYS", "capture", "carried", "give_back"]

#: The save's group that holds the callbacks' arrays (EarlyStopping's best weights).
ARRAYS = "callback_arrays"
#: Attributes carried, by the name of the built-in class (or a base class) of a callback.
CARRIED = {
    "EarlyStopping": ("wait", "best", "best_epoch", "stopped_epoch", "best_weights"),
    "ReduceLROnPlateau": ("wait", "best", "cooldown_counter"),
    "ModelCheckpoint": ("best", "epochs_since_last_save", "_batches_seen_since_last_saving", "_last_batch_seen"),
}


def carried(callback: Any) -> tuple[str, ...]:
    """The attribute names carried across a restart for ``callback`` (empty: nothing)."""
    own = getattr(callback, "autodist_state", None)
    if own is not None:
        return tuple(own)
    for base in type(callback).__mro__:
        if base.__name__ in CARRIED and base.__module__.split(".")[0] in ("keras", "tf_keras"):
            return CARRIED[base.__name__]
    return ()


def capture(callbacks: list[Any]) -> tuple[list[dict[str, Any] | None], list[np.ndarray]]:
    """Per callback, its carried attributes (``None`` when it carries none); arrays (lists of
    numpy arrays, such as best weights) go to the second list, the scalars say where:
    ``{"best_weights": {"arrays": [start, count]}}``."""
    scalars: list[dict[str, Any] | None] = []
    arrays: list[np.ndarray] = []
    for callback in callbacks:
        names = [name for name in carried(callback) if hasattr(callback, name)]
        if not names:
            scalars.append(None)
            continue
        state: dict[str, Any] = {"class": type(callback).__name__}
        for name in names:
            value = getattr(callback, name)
            if isinstance(value, (list, tuple)) and all(isinstance(part, np.ndarray) for part in value) and value:
                state[name] = {"arrays": [len(arrays), len(value)]}
                arrays.extend(np.asarray(part) for part in value)
            else:
                if isinstance(value, np.ndarray) and value.ndim == 0:  # JSON-ready: numpy numbers as Python's
                    value = value.item()
                if isinstance(value, np.generic):
                    value = value.item()
                if value is None or isinstance(value, (bool, int, float, str)):
                    state[name] = value
        scalars.append(state)
    return scalars, arrays


def give_back(callbacks: list[Any], scalars: list[dict[str, Any] | None], arrays: list[np.ndarray]) -> None:
    """Set each callback's carried attributes to the captured values (after its own
    ``on_train_begin`` reset them). A list of another length, or a callback of another class at
    a place (the callbacks changed), is left as it is."""
    if len(scalars) != len(callbacks):
        return
    for callback, state in zip(callbacks, scalars):
        if state and state.get("class") != type(callback).__name__:
            continue
        for name, value in (state or {}).items():
            if name not in carried(callback):
                continue
            if isinstance(value, dict) and "arrays" in value:
                start, count = value["arrays"]
                value = [np.asarray(part) for part in arrays[start : start + count]]
            setattr(callback, name, value)
