"""Act layer, ``strategy="tune"``: time the candidate plans on a copy of the model, pick the
fastest by measured samples/s, and cache the decision. Which candidates, the budget and the
pick are pure rules in :mod:`autodist.planning.tune_rules`.

Each candidate: its strategy is built, a copy of the caller's model is made in its scope (saved
and loaded, or built by the caller's function), and ``fit`` runs two short epochs on the first
``TIMED_STEPS`` global batches of the caller's input (arrays, or a ``tf.data`` dataset): the
first warms up (tracing), the second is timed. The caller's model is not touched. Tuning stays
within ``min(AUTODIST_TUNE_BUDGET`` (default 60 s), 10% of the planned training): before the first
candidate, the training's length is estimated from its steps, the model's multiply-adds and a
matrix product's rate here (:class:`~autodist.planning.tune_rules.Projection`), and a training too short
to time even one candidate (about 0.5 s and 32 steps) is not timed: on CPUs it trains with the
first candidate, ``default``, the fastest in ``python -m benchmarks``. Each next candidate is
timed while the budget holds: the training's length from the fastest so far, the candidate's cost
from the dearest per replica so far (:func:`~autodist.planning.tune_rules.next_cost`). The decision is cached in the
private folder
(``<temp>/autodist-<uid>/tune``, mode 700; files 600) under the hardware, the model's signature,
the batch and the versions; the next run with the same key takes it without timing, unless the
budget cut the decision short and this training is long enough to time more.

Example:
    >>> from autodist.planning.tune_rules import Timing
    >>> describe([Timing("default", 2000.0), Timing("mirrored (collective)", 900.0)], "default")
    'default 2,000 samples/s (picked); mirrored (collective) 900 samples/s'
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import hashlib
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from autodist.detection.hardware import package_version
from autodist.detection.model_info import keras_flavor_of, keras_module, multiply_adds
from autodist.jobs.tune_cache import cache_path, read_cache, write_cache
from autodist.log import get_logger
from autodist.planning.plans import Plan
from autodist.planning.tune_rules import (
    DEFAULT_TUNE_BUDGET_SECONDS,
    TIMED_STEPS,
    TUNE_SHARE,
    Candidate,
    Projection,
    Timing,
    cache_key,
    candidates,
    next_cost,
    pick,
    untimed_reason,
    within_budget,
)
from autodist.core.batching import prepare_dataset
from autodist.core.compile_settings import apply_compile_settings
from autodist.core.input_kinds import Input, num_samples
from autodist.core.inputs import slice_samples
from autodist.tensorflow.placement import build_in_scope, move_into_scope
from autodist.tensorflow.strategies import start
from autodist.settings import STEPS_PER_EXECUTION_ENV, tune_budget_setting

__all__ = ["TIMED_STEPS", "describe", "tuned_plan"]


def describe(timings: list[Timing], picked: str | None) -> str:
    """Every candidate with its samples/s (or why it has none), the pick marked."""
    return "; ".join(t.describe() + (" (picked)" if t.name == picked else "") for t in timings)


def tuned_plan(
    snapshot: Any,
    auto: Plan,
    plan_for: Callable[[str], Plan],
    model: Any,
    builder: Any,
    given: Input,
    epochs: int,
    environ: Mapping[str, str],
    fit_kwargs: Mapping[str, Any] | None = None,
    default_steps: int | None = None,
) -> Plan:
    """The plan ``strategy="tune"`` trains with: the fastest candidate (timed now, or cached),
    with every candidate's samples/s in its reasons. ``plan_for(kind)`` plans a strategy by name.
    On a cluster, a TPU, or an input that cannot be read twice, the rule's plan ``auto``; for a
    training too short to time even one candidate within its share, the first candidate.
    ``fit_kwargs`` (``steps_per_epoch``, ``validation_split``) tell the planned training's length;
    ``default_steps`` is the ``steps_per_execution`` autodist sets on one device
    (:func:`autodist.planning.planner.steps_on_one_device`)."""
    if auto.cluster is not None or auto.type.on_tpu:
        return _with_reason(
            auto,
            "strategy='tune' on a cluster or TPU keeps the rule's plan: the workers and devices stay, and TensorFlow "
            "allows one such strategy per process, so every worker takes the same plan",
        )
    form = given.timing_form(fit_kwargs or {})
    data = _Input(*form) if form is not None else None
    if data is None:
        return _with_reason(
            auto,
            "strategy='tune' times arrays and tf.data datasets; this input (a generator, a PyDataset) cannot be read "
            "twice, so the plan is the rule's",
        )
    found = {c.name: c for c in candidates(snapshot, default_steps=default_steps)}
    batch = int(auto.global_batch_size or 32)
    per_epoch = (fit_kwargs or {}).get("steps_per_epoch") or (-(-data.samples // batch) if data.samples else None)
    steps = epochs * int(per_epoch) if per_epoch else None  # None: a dataset of unknown size
    samples = steps * batch if steps else None
    policy = keras_module(auto.keras_flavor).mixed_precision.global_policy().name  # a builder builds under it
    key = cache_key(snapshot, _signature(model, builder) + [policy], batch, environ.get(STEPS_PER_EXECUTION_ENV, ""))
    budget = tune_budget_setting(environ, DEFAULT_TUNE_BUDGET_SECONDS)
    cached = read_cache(key["digest"])
    if cached is not None and cached.get("choice") in found and _cache_serves(cached, samples, budget):
        timings = [Timing(**t) for t in cached["timings"]]
        why = (
            f"strategy='tune': cached decision of {cached['date']} ({cache_path(key['digest'])}): "
            f"{describe(timings, cached['choice'])}"
        )
        return _with_reason(_plan_of(found[cached["choice"]], plan_for), why)
    plans = {name: _plan_of(candidate, plan_for) for name, candidate in found.items()}
    gate = _Gate(steps, batch, budget, "/gpu:0" if snapshot.gpus else "/cpu:0")
    timings, spent = _time_all(plans, model, builder, data, samples, budget, gate)
    if gate.untimed:  # on CPUs the first candidate, the fastest in python -m benchmarks (decision quality)
        first = next(iter(plans))
        chosen, which = (
            (auto, "the rule's plan")
            if snapshot.gpus
            else (plans[first], f"{first}, the fastest on CPUs in python -m benchmarks (decision quality)")
        )
        return _with_reason(
            chosen, f"strategy='tune': {gate.untimed}; trains with {which}; a longer training times the candidates"
        )
    best = pick(timings)
    if best is None:
        return _with_reason(
            auto, f"strategy='tune': no candidate ran ({describe(timings, None)}); the plan is the rule's"
        )
    write_cache(key, best.name, timings, spent)
    partial = "" if all(not t.skipped for t in timings) else "; a longer training times the rest"
    return _with_reason(
        plans[best.name],
        f"strategy='tune': timed in {spent:.1f} s, the fastest by measured samples/s: "
        f"{describe(timings, best.name)}{partial}",
    )


@dataclasses.dataclass
class _Gate:
    """Before the first candidate is timed, on its model copy: whether the planned training is
    long enough to time one (:func:`autodist.planning.tune_rules.untimed_reason`); ``untimed`` says why
    not. A training of unknown length, or a model of unknown multiply-adds (subclassed, recurrent),
    has no estimate: its first candidate is timed."""

    steps: int | None  # None: unknown (a dataset of unknown size): tuning keeps to the budget alone
    batch: int
    budget: float
    device: str
    untimed: str = ""
    checked: bool = False
    planned_seconds: float = float("inf")

    def allows(self, copy: Any) -> bool:
        self.checked = True
        macs = multiply_adds(copy)
        if self.steps is None or macs is None:  # no estimate to go by: the first candidate's timing measures
            return True
        projection = Projection(self.steps, macs, self.batch, _flops_per_second(self.device))
        self.planned_seconds = projection.seconds
        self.untimed = untimed_reason(projection, self.budget)
        return not self.untimed


def _flops_per_second(device: str) -> float:
    """What a 512 x 512 float32 matrix product reaches on ``device`` (the best of 6: the first
    calls start TensorFlow's threads)."""
    import tensorflow as tf

    size, best = 512, float("inf")
    with tf.device(device):
        a = tf.random.uniform((size, size))
        for _ in range(6):
            began = time.perf_counter()
            _ = tf.linalg.matmul(a, a).numpy()
            best = min(best, time.perf_counter() - began)
    return 2 * size**3 / max(best, 1e-9)


def _cache_serves(cached: Mapping[str, Any], samples: int | None, budget: float) -> bool:
    """A complete decision always serves; one cut short by the budget serves a training whose
    own budget (estimated with the cached fastest rate) would not time more, or one of unknown
    length."""
    timings = [Timing(**t) for t in cached.get("timings", [])]
    best = pick(timings)
    if best is None:
        return False
    if all(not t.skipped for t in timings) or samples is None:
        return True
    planned = samples / (best.samples_per_second or 1.0)
    return min(budget, TUNE_SHARE * planned) <= 1.5 * float(cached.get("tuning_seconds", 0.0))


def _plan_of(candidate: Candidate, plan_for: Callable[[str], Plan]) -> Plan:
    made = plan_for(candidate.strategy)
    return dataclasses.replace(
        made,
        cross_device_ops=candidate.cross_device_ops or made.cross_device_ops,
        steps_per_execution=candidate.steps_per_execution,
        reasons=tuple(r for r in made.reasons if not r.startswith(("strategy=", "steps_per_execution"))),
    )


def _with_reason(the_plan: Plan, reason: str) -> Plan:
    return dataclasses.replace(the_plan, reasons=(reason,) + the_plan.reasons)


def _time_all(
    plans: dict[str, Plan], source: Any, builder: Any, data: Any, samples: int | None, budget: float, gate: _Gate
) -> tuple[list[Timing], float]:
    """Each candidate's samples/s, while tuning stays within its budget; none when ``gate``
    finds the training too short on the first model copy made."""
    timings: list[Timing] = []
    started = time.perf_counter()
    costs: list[tuple[float, int]] = []  # each timed candidate's seconds and replicas
    for name, the_plan in plans.items():
        spent = time.perf_counter() - started
        best = pick(timings)
        if costs:  # the training's length from the fastest so far, else (all failed) the gate's estimate
            planned = (
                (samples / (best.samples_per_second or 1.0) if samples else float("inf"))
                if best
                else gate.planned_seconds
            )
            cost = next_cost(costs, the_plan.num_replicas)
            if not within_budget(spent, cost, planned, budget):
                limit = min(budget, TUNE_SHARE * planned)
                timings.append(
                    Timing(name, skipped=f"budget, {spent:.1f} s spent of {limit:.1f} s, this one about {cost:.1f} s")
                )
                continue
        began = time.perf_counter()
        try:
            timings.append(
                Timing(name, _samples_per_second(the_plan, source, builder, data, None if gate.checked else gate))
            )
        except _Untimed:
            return [], time.perf_counter() - started
        except Exception as err:  # a candidate that cannot run here is skipped, with its error
            timings.append(
                Timing(name, error=f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}")
            )
        costs.append((time.perf_counter() - began, the_plan.num_replicas))
        gc.collect()
    get_logger().info("autodist tune: %s", describe(timings, (pick(timings) or Timing("")).name))
    return timings, time.perf_counter() - started


class _Untimed(Exception):
    """The gate found the training too short to time a candidate."""


@dataclasses.dataclass(frozen=True)
class _Input:
    x: Any
    y: Any
    samples: int | None  # trained per epoch; None: a dataset of unknown or endless size
    dataset: bool


def _samples_per_second(the_plan: Plan, source: Any, builder: Any, data: _Input, gate: _Gate | None = None) -> float:
    strategy = start(the_plan)
    model = build_in_scope(builder, strategy) if builder is not None else move_into_scope(source, strategy)
    if gate is not None and not gate.allows(model):
        raise _Untimed()
    apply_compile_settings(model, the_plan)
    batch = int(the_plan.global_batch_size or 32)
    if data.dataset:
        import tensorflow as tf

        x, y, kwargs = prepare_dataset(data.x, batch, 1, drop_remainder=False, rebatch=True).take(TIMED_STEPS), None, {}
        seen = sum(int(tf.nest.flatten(step)[0].shape[0]) for step in x)
    else:
        seen = min(num_samples(data.x), TIMED_STEPS * batch)
        x, y = slice_samples(data.x, 0, seen), slice_samples(data.y, 0, seen)
        kwargs = {"batch_size": batch, "shuffle": False}
    return seen / _timed_second_epoch(model, x, y, kwargs, strategy)


def _timed_second_epoch(model: Any, x: Any, y: Any, kwargs: dict[str, Any], strategy: Any) -> float:
    keras = keras_module(keras_flavor_of(model))
    marks: dict[str, float] = {}

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            marks[f"begin{epoch}"] = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            marks[f"end{epoch}"] = time.perf_counter()

    with strategy.scope():
        model.fit(x, y, epochs=2, verbose=0, callbacks=[EpochTimer()], **kwargs)
    return max(marks["end1"] - marks["begin1"], 1e-9)


def _signature(model: Any, builder: Any) -> list[Any]:
    """The model's class, layers, weight shapes and optimizer; for a model-building function, its
    name and code, with the code of what it calls and the values it reads (building a model only
    to read it would cost more than the lookup); and autodist's version."""
    version = ["autodist", package_version("autodist")]
    if builder is not None:
        return ["builder", getattr(builder, "__qualname__", type(builder).__name__), _code_digest(builder), *version]
    optimizer = getattr(model, "optimizer", None)
    weights = [[str(getattr(w, "dtype", "")), list(getattr(w, "shape", ()))] for w in getattr(model, "weights", [])]
    layers = [type(layer).__name__ for layer in getattr(model, "layers", [])]
    return [
        type(model).__name__,
        layers,
        weights,
        type(optimizer).__name__ if optimizer is not None else None,
        *version,
    ]


def _code_digest(function: Any, depth: int = 2) -> str:
    """A digest of a function's code (nested code objects included), the values of its closure
    and of the globals it names (the code of functions among them, ``depth`` calls deep), stable
    from one process to the next: no memory addresses. ``functools.partial``: its function and
    arguments."""
    digest = hashlib.sha256()
    if isinstance(function, functools.partial):
        digest.update(
            _code_digest(function.func, depth).encode() + _stable_repr((function.args, function.keywords)).encode()
        )
        return digest.hexdigest()[:16]
    code = getattr(function, "__code__", None)
    if code is None:
        return _stable_repr(function)
    cells = [cell.cell_contents for cell in getattr(function, "__closure__", None) or () if _has_contents(cell)]
    names = getattr(function, "__globals__", {})
    for part in _code_parts(code) + [_stable_repr(c) for c in cells]:
        digest.update(part.encode())
    for name in code.co_names:
        value = names.get(name)
        if hasattr(value, "__code__"):
            digest.update((_code_digest(value, depth - 1) if depth > 0 else name).encode())
        elif value is not None and not isinstance(value, type(os)):
            digest.update(_stable_repr(value).encode())
    return digest.hexdigest()[:16]


def _code_parts(code: Any) -> list[str]:
    parts = [code.co_code.hex(), repr(code.co_names)]
    for const in code.co_consts:
        parts += _code_parts(const) if hasattr(const, "co_code") else [_stable_repr(const)]
    return parts


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


def _stable_repr(value: Any) -> str:
    """``repr`` without memory addresses, at most 2,000 characters."""
    import re

    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))[:2000]
