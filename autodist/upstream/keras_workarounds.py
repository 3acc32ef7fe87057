"""The registry of autodist's workarounds for Keras 3 bugs under ``tf.distribute``: every
:class:`~autodist.upstream.workaround.Workaround`, in one table, :data:`WORKAROUNDS`.

Each workaround is declared once, as one object, beside its patch (see
:mod:`autodist.upstream.workaround`), and found there: a new one in a module of :data:`DECLARING`
needs no line here; one declared elsewhere (a test's own) joins by :func:`declare`. The three
here patch nothing: they change compile settings or a default, which
:mod:`autodist.planning.keras_compat` and the planner decide. The order of the table is the
order of ``docs/keras-workarounds.md`` and the order the patches go in (:data:`PATCHES`).

Example:
    >>> PATCHES[:2]
    ('variable_aggregation', 'aggregating_variable_updates')
    >>> WORKAROUNDS["mirrored_jit_compile"].install is None
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from autodist.process import STATE, LiveMapping, LiveSequence
from autodist.upstream import keras_adapters, keras_optimizer, keras_own_steps, keras_trainer, keras_variables
from autodist.upstream.workaround import AGGREGATION_PASSED, EVERY_RELEASE, Workaround

__all__ = ["DECLARING", "PATCHES", "WORKAROUNDS", "declare", "step_cost", "table"]


MIRRORED_STEPS_PER_EXECUTION = Workaround(
    name="mirrored_steps_per_execution",
    upstream="keras-team/keras#19246",
    summary=(
        "Under MirroredStrategy, steps_per_execution > 1 fails with 'You must feed a value "
        "for placeholder tensor' (from Keras 3.7, whose steps run in a tf.while_loop). "
        "autodist runs with steps_per_execution=1 there."
    ),
    affected=(("3.7.0", None),),
    if_fixed="steps_per_execution=1 trains the same steps, only with more calls (warned)",
    how="compile settings",
    compile_setting="steps_per_execution",
    changed=lambda value: 1 if isinstance(value, int) and value > 1 else None,
    warning=(
        "steps_per_execution={value} is set to 1 under {strategy}: Keras {version} fails there with 'You must feed "
        "a value for placeholder tensor' (keras-team/keras#19246)."
    ),
)


MIRRORED_JIT_COMPILE = Workaround(
    name="mirrored_jit_compile",
    upstream="Keras 3 + MirroredStrategy + XLA",
    summary=(
        "Under MirroredStrategy, jit_compile=True fails with 'Trying to access resource "
        "... located in device CPU:1 from device CPU:0'. autodist runs with "
        "jit_compile=False there."
    ),
    affected=EVERY_RELEASE,
    if_fixed="without XLA the same model trains, only without compilation (warned)",
    how="compile settings",
    compile_setting="jit_compile",
    changed=lambda value: False if value is True else None,
    warning=(
        "jit_compile=True is turned off under {strategy}: Keras {version} fails there ('Trying to access resource "
        "... located in device ... from device ...'). The model trains without XLA; use a single-device plan to "
        "keep XLA."
    ),
)


SHORT_EPOCH_STEPS_PER_EXECUTION = Workaround(
    name="short_epoch_steps_per_execution",
    upstream="keras-team/keras#20390, #20344 (fixed by #20396 in 3.7.0)",
    summary=(
        "Keras 3.3-3.6 run every call's steps_per_execution steps whatever is left of the "
        "epoch: an epoch shorter than one call fails ('NoneType' object is not iterable, "
        "3.3-3.4) or ends with empty logs (3.5-3.6), and a call that runs out of data loses "
        "its logs. autodist's default steps_per_execution stays 1 there (a model compiled "
        "with more keeps it), and the plan says why."
    ),
    affected=(("3.3.0", AGGREGATION_PASSED),),
    if_fixed="steps_per_execution=1 trains the same steps, only with more calls",
    how="a default autodist picks",
    warning=(
        "steps_per_execution stays 1: Keras {version} runs every call's steps whatever is left of the epoch, so an "
        "epoch shorter than one call fails ('NoneType' object is not iterable) or ends with empty logs, and a call "
        "that runs out of data loses its logs (keras-team/keras#20390, fixed in 3.7.0)"
    ),
)


#: The modules that declare workarounds beside their patches, in the order the patches go in (a
#: later patch of an attribute wraps an earlier one: keras_own_steps's ``BaseOptimizer.apply`` is
#: wrapped by keras_optimizer's build of an optimizer in its first step); within a module, in the
#: order they are declared there.
DECLARING = (keras_variables, keras_own_steps, keras_optimizer, keras_trainer, keras_adapters)


# DECLARING's, then the three above
_BUILT_IN = MappingProxyType(
    {w.name: w for space in [*map(vars, DECLARING), globals()] for w in space.values() if isinstance(w, Workaround)}
)


def declare(workaround: Workaround) -> Workaround:
    """``workaround``, declared outside :data:`DECLARING`'s modules (a test's own): in the
    registry after autodist's own while it exists (:func:`autodist.process.reset` forgets it).

    Raises:
        ValueError: a workaround of that name is declared already.
    """
    if workaround.name in WORKAROUNDS:
        raise ValueError(f"a workaround named {workaround.name!r} is declared already")
    STATE.declared[workaround.name] = workaround
    return workaround


#: Every workaround, by name, in the order of the docs page and of installing: autodist's, then
#: those :func:`declare` adds, while they exist.
WORKAROUNDS: Mapping[str, Workaround] = LiveMapping(lambda: _BUILT_IN | dict(STATE.declared))

#: The names of the workarounds that patch Keras, in the registry's order (the others change compile
#: settings or defaults).
PATCHES: Sequence[str] = LiveSequence(lambda: tuple(name for name, w in WORKAROUNDS.items() if w.install is not None))

Workaround.registry = WORKAROUNDS  # the one registry: the setting's names and the untested warning read it


def table(costs: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """The rows of docs/keras-workarounds.md's table, header first; ``costs``: each in-step
    workaround's measured step cost (``benchmarks/results-corpus.json``'s ``workaround costs``)."""
    return [
        "| workaround | Keras releases with the bug | the bug, and what autodist does | how | still-needed test "
        "| step time with it ÷ without (2 replicas) |",
        "|---|---|---|---|---|---|",
        *(f"{w.row()} {step_cost(w, (costs or {}).get(w.name))} |" for w in WORKAROUNDS.values()),
    ]


def step_cost(workaround: Workaround, cost: Mapping[str, Any] | None) -> str:
    """Its cell of the table's last column: the median step time with it ÷ without it over the
    corpus programs where it acted, those programs, and those where it did not act.

    Example:
        >>> step_cost(WORKAROUNDS["replica_random_streams"], {"median": 1.031, "acted on": {"cct": 1.031}})
        '1.03 (cct)'
        >>> step_cost(WORKAROUNDS["mirrored_jit_compile"], None)
        'none: outside the step'
    """
    if not workaround.in_step:
        return "none: outside the step"
    if cost is None:
        return "not measured yet"
    idle = ", ".join(cost.get("did not act on") or ())
    if cost.get("median") is None:
        return f"did not act on {idle}" if idle else "not measured yet"
    acted = ", ".join(cost["acted on"])
    return f"{cost['median']:.2f} ({acted}" + (f"; did not act on {idle})" if idle else ")")
