"""Which of autodist's workarounds for Keras 3 bugs under ``tf.distribute`` a plan needs, and the
compile settings they change.

Each workaround is one object (:class:`~autodist.upstream.workaround.Workaround`), declared beside
its patch; :data:`WORKAROUNDS` is their registry (:mod:`autodist.upstream.keras_workarounds`). Each
names its upstream bug, the Keras releases that have it (measured on each release of the support
matrix, docs/support-matrix.md), the touches of private code it needs
(:mod:`autodist.upstream.surface`), and a test in ``tests/test_keras_compat.py`` that reproduces
the bug with plain Keras where the table says it is, and finds it absent where the table says it
is not. That test fails the day a release behaves otherwise, which is the signal to change the
table (or delete the workaround).

Gating (:meth:`~autodist.upstream.workaround.Workaround.is_active`): a workaround is active on the
releases of its ``affected`` ranges (``(first, fixed_in)``, ``fixed_in`` excluded; ``None``: not
fixed in the newest release tested). On a Keras newer than every release it was tested on
(``last_tested``), where the bug may or may not be fixed, it fails safe: each workaround is
harmless where its bug is fixed (``if_fixed`` says why), so it stays applied, and autodist warns
once (an ``AutodistWarning``) that names the untested version. Switching them off there would
silently bring back the wrong numbers they exist to prevent. ``AUTODIST_KERAS_COMPAT=force``
applies every workaround whatever the version; ``AUTODIST_KERAS_COMPAT=off`` applies none (to
check whether one is still needed).

This module decides, and is pure: :func:`autodist.planning.choosers.choose_workarounds` names the
:data:`PATCHES` a plan needs; :func:`compile_overrides` gives the compile settings. The act layer
installs the patches (:func:`autodist.tensorflow.keras_patches.apply_workarounds`, from
:func:`autodist.tensorflow.strategies.start`).

Example:
    >>> WORKAROUNDS["aggregating_variable_updates"].is_active("3.15.1", environ={})
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from autodist.upstream.keras_workarounds import PATCHES, WORKAROUNDS
from autodist.upstream.versions import version_tuple
from autodist.upstream.workaround import Workaround, warn_untested

__all__ = [
    "KEPT_STRATEGY_ORDER",
    "PATCHES",
    "WORKAROUNDS",
    "Workaround",
    "compile_overrides",
    "kept_strategy_order",
    "refused_strategy",
    "version_tuple",
    "warn_untested",
]

#: Strategies under which Keras 3's compiled step breaks with the settings above.
_MIRRORED_KINDS = ("mirrored", "multi_worker_mirrored")


def compile_overrides(
    strategy: str,
    keras_flavor: str,
    keras_version: str | None,
    *,
    jit_compile: Any,
    steps_per_execution: Any,
    environ: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Compile settings to change for this strategy, and a warning for each change.

    Pure: it reads the values and the versions, and touches no model.

    Example:
        >>> overrides, warnings = compile_overrides("mirrored", "keras3", "3.15.1",
        ...     jit_compile=True, steps_per_execution=8, environ={})
        >>> overrides
        {'jit_compile': False, 'steps_per_execution': 1}
    """
    overrides: dict[str, Any] = {}
    warnings: list[str] = []
    if keras_flavor != "keras3" or str(strategy) not in _MIRRORED_KINDS:
        return overrides, warnings
    fix = WORKAROUNDS["mirrored_jit_compile"]
    if jit_compile is True and fix.is_active(keras_version, environ):
        overrides["jit_compile"] = False
        warnings.append(
            f"jit_compile=True is turned off under {strategy}: Keras {keras_version} fails there "
            "('Trying to access resource ... located in device ... from device ...'). The model "
            "trains without XLA; use a single-device plan to keep XLA."
        )
    fix = WORKAROUNDS["mirrored_steps_per_execution"]
    if isinstance(steps_per_execution, int) and steps_per_execution > 1 and fix.is_active(keras_version, environ):
        overrides["steps_per_execution"] = 1
        warnings.append(
            f"steps_per_execution={steps_per_execution} is set to 1 under {strategy}: Keras "
            f"{keras_version} fails there with 'You must feed a value for placeholder tensor' "
            "(keras-team/keras#19246)."
        )
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
    if not kept or reshuffled is None or "symbolic_build_reads_input" not in workarounds:
        return None
    return KEPT_STRATEGY_ORDER.format(input=reshuffled)


#: What a Keras that passes no aggregation to TensorFlow (3.3-3.6) cannot train under, and why.
_REFUSED = MappingProxyType(
    {
        "central_storage": (
            "CentralStorageStrategy: its metrics update their state with assign(total + value), which "
            "that strategy turns into N*total + value on N replicas (History and evaluate would be wrong)"
        ),
        "multi_worker_mirrored": (
            "MultiWorkerMirroredStrategy: measured on 2 workers, Keras 3.3-3.4 end with the workers' "
            "weights apart (0.09), and 3.5-3.6 with steps off one process (0.02)"
        ),
    }
)


#: Keras 3's LossScaleOptimizer under CentralStorage (measured on 3.15.1, plain model.fit too).
MIXED_FLOAT16_CENTRAL_STORAGE = (
    "A mixed_float16 model cannot train under CentralStorageStrategy: Keras's LossScaleOptimizer "
    "updates its loss scale in each replica and applies its step inside a cond, which "
    'CentralStorageStrategy refuses ("merge_call called while defining a new graph"; plain '
    "model.fit fails the same way). Use strategy='mirrored', or train in float32"
)


def refused_strategy(
    strategy: str,
    keras_flavor: str,
    keras_version: str | None,
    environ: Mapping[str, str] | None = None,
    mixed_precision: str | None = None,
) -> str | None:
    """Why this Keras cannot train under ``strategy`` at all (``None``: it can), for the planner's
    refusal: Keras 3.3-3.6 under CentralStorage and MultiWorkerMirrored (:data:`_REFUSED`), and
    ``mixed_float16`` under CentralStorage (:data:`MIXED_FLOAT16_CENTRAL_STORAGE`).

    Example:
        >>> refused_strategy("central_storage", "keras3", "3.4.1", {}) is not None
        True
        >>> refused_strategy("central_storage", "keras3", "3.8.0", {}), refused_strategy("mirrored", "keras3",
        ...     "3.4.1", {})
        (None, None)
    """
    if keras_flavor != "keras3" or str(strategy) not in _REFUSED:
        return None
    if mixed_precision == "mixed_float16" and str(strategy) == "central_storage":
        return MIXED_FLOAT16_CENTRAL_STORAGE
    if not WORKAROUNDS["variable_aggregation"].affects(keras_version):
        return None  # the release's behaviour, whatever AUTODIST_KERAS_COMPAT says
    return (
        f"Keras {keras_version} cannot train under {_REFUSED[str(strategy)]}. Keras 3.7 and later "
        "can, and so does tf_keras. Upgrade Keras (pip install 'keras>=3.8'), train with tf_keras "
        "(pip install tf-keras, TF_USE_LEGACY_KERAS=1), or use strategy='mirrored' on one machine"
    )
