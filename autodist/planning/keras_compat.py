"""Which of autodist's workarounds for Keras 3 bugs under ``tf.distribute`` a plan needs, and the
compile settings they change.

Each workaround is one object (:class:`~autodist.upstream.workaround.Workaround`), declared beside
its patch with its upstream bug, the Keras releases that have it and the test that fails the day a
release behaves otherwise; :data:`WORKAROUNDS` is their registry (:mod:`autodist.upstream.keras_workarounds`).
Gating is :meth:`~autodist.upstream.workaround.Workaround.is_active`. On a Keras newer than every
release tested, each stays applied (harmless where its bug is fixed), with one warning: switching them
off there would silently bring back the wrong numbers they exist to prevent.

This module decides, and is pure: :func:`autodist.planning.choosers.choose_workarounds` names the
:data:`PATCHES` a plan needs; :func:`compile_overrides` gives the compile settings. What a Keras
release cannot train under at all, each strategy type says itself
(:meth:`autodist.planning.strategy_types.StrategyType.keras_refusal`). The act layer
installs the patches (:func:`autodist.tensorflow.keras_patches.apply_workarounds`, from
:func:`autodist.tensorflow.strategies.start`).

Example:
    >>> WORKAROUNDS["aggregating_variable_updates"].is_active("3.15.1", environ={})
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autodist.planning.strategy_types import TYPES, strategy_type
from autodist.upstream.keras_trainer import SYMBOLIC_BUILD_READS_INPUT
from autodist.upstream.keras_workarounds import PATCHES, WORKAROUNDS
from autodist.upstream.versions import version_tuple

__all__ = [
    "KEPT_STRATEGY_ORDER",
    "PATCHES",
    "WORKAROUNDS",
    "compile_overrides",
    "kept_strategy_order",
    "version_tuple",
]


def compile_overrides(
    strategy: str,
    keras_flavor: str,
    keras_version: str | None,
    *,
    jit_compile: Any,
    steps_per_execution: Any,
    environ: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Compile settings to change for this strategy, and a warning for each change: each active
    workaround's own (:meth:`~autodist.upstream.workaround.Workaround.compile_override`), where
    Keras 3's step runs under mirrored variables. Pure: it reads the values and the versions.

    Example:
        >>> overrides, warnings = compile_overrides("mirrored", "keras3", "3.15.1",
        ...     jit_compile=True, steps_per_execution=8, environ={})
        >>> overrides
        {'jit_compile': False, 'steps_per_execution': 1}
    """
    overrides: dict[str, Any] = {}
    warnings: list[str] = []
    if keras_flavor != "keras3" or str(strategy) not in TYPES or not strategy_type(strategy).mirrors_variables:
        return overrides, warnings
    settings = {"jit_compile": jit_compile, "steps_per_execution": steps_per_execution}
    for fix in (w for setting in settings for w in WORKAROUNDS.values() if w.compile_setting == setting):
        changed = fix.compile_override(settings, str(strategy), keras_version)
        if changed is not None and fix.is_active(keras_version, environ):
            overrides[fix.compile_setting], _ = changed
            warnings.append(changed[1])
    return overrides, warnings


#: Said when autodist keeps a script's own strategy and its input reshuffles on every read: Keras's
#: symbolic build would have spent one of its orders (the workaround symbolic_build_reads_input).
KEPT_STRATEGY_ORDER = (
    "The script's own strategy trains {input}. Keras's model.fit under a strategy reads the input "
    "once to build the model, then starts it over, which spends one of its shuffled orders: every "
    "epoch trains in the order model.fit without a strategy uses one epoch later. autodist builds "
    "the model without reading the input (the workaround symbolic_build_reads_input), so the "
    "epochs train in model.fit's order without a strategy, and the numbers differ from model.fit "
    "under your strategy by that order. AUTODIST_KERAS_COMPAT=auto,-symbolic_build_reads_input "
    "trains in Keras's order"
)


def kept_strategy_order(workarounds: tuple[str, ...], kept: bool, reshuffled: str | None) -> str | None:
    """The warning for a script's own strategy (``kept``) trained on an input that draws a new
    order each time it is read (``reshuffled``: what it is, or ``None``), where autodist's build
    reads none of it; ``None`` otherwise.

    Example:
        >>> kept_strategy_order(("symbolic_build_reads_input",), True, "a PyDataset with shuffle=True")[:58]
        "The script's own strategy trains a PyDataset with shuffle="
        >>> kept_strategy_order(("symbolic_build_reads_input",), False, "a PyDataset with shuffle=True")
    """
    if not kept or reshuffled is None or SYMBOLIC_BUILD_READS_INPUT.name not in workarounds:
        return None
    return KEPT_STRATEGY_ORDER.format(input=reshuffled)
