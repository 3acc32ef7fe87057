"""``autodist.fit``'s one sequence, whatever the backend: read, plan, start, place, refine, prepare,
train, finish. A backend supplies each stage (:class:`FitStages`); :func:`run_fit` runs them in this
order and passes each one's value to the next, so no backend orders its own.

- ``read``: the call's input as the backend reads it (a Ray Data shard becomes a dataset), or a refusal;
- ``plan``: the plan, made once from the machine and the call (``strategy="tune"`` picks here; a
  parameter-server task serves here and ends);
- ``start``: the strategy or distribution built, before anything else touches the runtime;
- ``place``: the model that trains (built by the caller's function in the scope, or the caller's
  model, moved where it must be);
- ``refine``: the plan with the model's facts, once; frozen from here;
- ``prepare``: the input as it trains, and what is said before training;
- ``train``: ``model.fit`` in the scope, with the chief's duties and the backend's own concerns;
- ``finish`` (here): a model moved into the scope copied back into the caller's, ``history.plan``.

Like ``model.fit``, an interrupted fit leaves the caller's model with the training done so far.

Example:
    >>> [stage for stage in FitStages.__dict__ if not stage.startswith("_")][:4]
    ['read', 'plan', 'start', 'place']
"""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple, Protocol

from autodist.core.fit_call import FitCall
from autodist.log import warn_all
from autodist.planning.plans import Plan

__all__ = ["FitStages", "Placed", "Prepared", "Started", "run_fit"]


class Started(NamedTuple):
    """The plan and the strategy (TensorFlow) or distribution (JAX) it started; ``kept``: the
    script's own strategy."""

    plan: Plan
    distribution: Any
    kept: bool = False


class Placed(NamedTuple):
    """The model that trains, and whether it is a copy moved into the scope (copied back after)."""

    trained: Any
    moved: bool = False


class Prepared(NamedTuple):
    """The call with its input as it trains, and what is said before training."""

    call: FitCall
    notes: tuple[str, ...]


class FitStages(Protocol):
    """One backend's stages of one ``fit`` (:func:`run_fit` calls them in this order)."""

    def read(self, call: FitCall) -> FitCall: ...

    def plan(self, call: FitCall) -> Plan: ...

    def start(self, call: FitCall, the_plan: Plan) -> Started: ...

    def place(self, call: FitCall, started: Started) -> Placed: ...

    def refine(self, call: FitCall, started: Started, placed: Placed) -> Started: ...

    def prepare(self, call: FitCall, started: Started, placed: Placed) -> Prepared: ...

    def train(self, call: FitCall, started: Started, placed: Placed) -> Any: ...

    def copy_back(self, trained: Any, model: Any) -> None: ...


def run_fit(stages: FitStages, call: FitCall) -> Any:
    """``autodist.fit`` for the frozen call, stage by stage; the ``History``, with ``history.plan``."""
    call = stages.read(call)
    started = stages.start(call, stages.plan(call))
    placed = stages.place(call, started)
    started = stages.refine(call, started, placed)  # the plan is frozen from here
    prepared = stages.prepare(call, started, placed)
    warn_all(list(prepared.notes))
    try:
        history = stages.train(prepared.call, started, placed)
    except BaseException:  # interrupted (Ctrl-C, a callback raising): the training done so far, as model.fit
        if placed.moved:
            with contextlib.suppress(Exception):  # the original error matters more
                stages.copy_back(placed.trained, call.model)
        raise
    if placed.moved:
        stages.copy_back(placed.trained, call.model)
        history.set_model(call.model)
        call.model.history = history
    history.plan = started.plan
    return history
