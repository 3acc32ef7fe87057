"""What is said of a model's metrics before it trains under a strategy: metric objects that
hold an earlier use's state (one list of metrics passed to every ``compile``, as the TensorFlow
tutorial "Classification on imbalanced data" does), which model.fit on one device adds into its
first epoch and Keras under a strategy resets first
(:func:`autodist.upstream.keras_trainer.metrics_holding_state`).

autodist keeps the strategy's numbers, which count this fit's samples only (the first epoch as
every later one), and says so: the one-device numbers are Keras's quirk, not the program's.

Example:
    >>> metric_state_note((("tp", 408.0), ("auc", 0.4689), ("confusion", None))).split(": ")[1][:36]
    'tp (408), auc (0.4689), confusion. m'
"""

from __future__ import annotations

from typing import Any

from autodist.upstream.keras_trainer import builds_metrics_before_first_reset, metrics_holding_state

__all__ = ["METRIC_STATE_NOTE", "metric_state_note", "metric_state_notes"]

#: Measured: the TensorFlow tutorial "Classification on imbalanced data" (tests/corpus), its sixth
#: fit's first-epoch fp 11043 with model.fit on one device, 11023 under any strategy.
METRIC_STATE_NOTE = (
    "The metric objects compiled into this model hold the state of an earlier use, another model's fit or "
    "evaluate (one list of metrics passed to every compile): {metrics}. model.fit on one device adds that "
    "state into the first epoch's values, because Keras resets compiled metrics before an epoch only once "
    "they are built, and without a strategy they build in the first step; under the strategy Keras builds "
    "them first and resets them, so History's first epoch counts this fit's samples only, as every later "
    "epoch does, and differs from model.fit's by that state. To have the same numbers from both, make the "
    "metric objects anew for each compile, or call reset_state() on each before fit"
)


def metric_state_note(held: tuple[tuple[str, float | None], ...]) -> str:
    """The note for the metrics ``held`` (each name, with its result where it is one number)."""
    named = ", ".join(name if value is None else f"{name} ({value:.4g})" for name, value in held)
    return METRIC_STATE_NOTE.format(metrics=named)


def metric_state_notes(given: Any, trained: Any) -> tuple[str, ...]:
    """The note where the model ``given`` to fit (whose metric objects model.fit on one device
    would count from) holds state that ``trained`` (itself, or its copy moved into the scope)
    resets before its first epoch."""
    if not builds_metrics_before_first_reset(trained):
        return ()
    held = metrics_holding_state(given if given is not None else trained)
    return (metric_state_note(held),) if held else ()
