"""The record of what autodist's activation did in this process: the plan it made at import, the
strategy it created, the error it hit, and whether the script has a strategy of its own.

Below everything that acts on TensorFlow, so the strategy builder, the placement and the
activation all read one record, and no module needs the activation itself to know what it did.

Example:
    >>> from autodist.tensorflow.activation_record import runtime_started_message
    >>> "import autodist" in runtime_started_message("MultiWorkerMirroredStrategy must exist")
    True
"""

from __future__ import annotations

import dataclasses
from typing import Any

from autodist.settings import ACTIVATE_ENV
from autodist.process import STATE

__all__ = ["Activation", "current", "record", "runtime_started_message", "set_record"]


@dataclasses.dataclass(frozen=True)
class Activation:
    """What happened at import.

    Attributes:
        plan: the plan made at import (``None`` if none was made).
        strategy: the strategy created for it, or ``None`` (not yet, default plan, serving).
        error: the error activation hit.
        failed_key: the strategy (``strategies.strategy_key``) that failed to build; ``fit``
            raises ``error`` when it plans that same strategy, instead of trying again.
        ops_before_import: TensorFlow's runtime had started before ``import autodist``.
        pending: the strategy is still to be made current (see :func:`complete`).
        script_strategy: the script's own strategy class autodist stepped aside for, or shared with.
        shared: the script's ``MultiWorkerMirroredStrategy()`` is autodist's own object.
    """

    plan: Any = None
    strategy: Any = None
    error: BaseException | None = None
    failed_key: tuple[Any, ...] | None = None
    ops_before_import: bool = False
    pending: bool = False
    script_strategy: str | None = None
    shared: bool = False


def current() -> Activation | None:
    """What activation did in this process, or ``None`` when it has not run."""
    return STATE.activation


def runtime_started_message(what: str) -> str:
    """The one message for "the runtime started too early", with the cause as it happened."""
    done = current()
    if done is not None and done.ops_before_import:
        cause = (
            "TensorFlow ran ops before `import autodist` (the runtime had already started when "
            "autodist was imported). Fix: move `import autodist` to the top of the script, above "
            "any TensorFlow, Keras or tf.data code; ops after it are fine."
        )
    elif done is not None and done.plan is not None:
        cause = (
            "the runtime started before autodist could create the strategy. Fix: leave the "
            "strategy to autodist (AUTODIST_STRATEGY=<kind> picks it) rather than creating "
            "another one first."
        )
    else:
        cause = (
            f"the runtime started before autodist could act ({ACTIVATE_ENV}=0 turns off the "
            "activation at import). Fix: unset it and put `import autodist` at the top of the "
            "script, or call autodist.init() before any TensorFlow code."
        )
    return f"{what} before TensorFlow runs anything, but {cause}"


def set_record(outcome: Activation) -> Activation:
    """Record what the activation at import did (once per process)."""
    STATE.activation = outcome
    return outcome


def record(**changes: Any) -> Activation:
    """Record what happened since (fields of :class:`Activation`); returns the record."""
    STATE.activation = dataclasses.replace(STATE.activation, **changes)
    return STATE.activation
