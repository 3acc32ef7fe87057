"""Plan: a pure function from a hardware snapshot (and optional model facts) to a :class:`Plan`.

:func:`plan` starts no TensorFlow runtime and reads no environment but the ``environ`` it is
given: the same inputs give the same plan, with the reasons for each choice as data. It is a
short sequence of choosers (:mod:`autodist.planning.choosers`, where the rules are): the strategy, its
layout, the global batch, the coordinator's threads, the compile settings and Keras workarounds,
and ``steps_per_execution`` (its default on one device: :mod:`autodist.planning.steps_per_execution`). A
model's memory per device decides between a replicated strategy and ``central_storage`` on GPUs
(:mod:`autodist.planning.memory_model`). The plan's data type is in :mod:`autodist.planning.plans`.

Example:
    >>> from autodist import HardwareSnapshot, GpuInfo, plan
    >>> gpus = tuple(GpuInfo("NVIDIA A100", 40 * 2**30, "8.0") for _ in range(4))
    >>> p = plan(HardwareSnapshot.cpu_only(gpus=gpus), num_params=10_000_000, batch_size=250)
    >>> (p.strategy.value, p.num_replicas, p.global_batch_size, p.per_replica_batch_size)
    ('mirrored', 4, 252, 63)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from enum import Enum
from typing import Any

from autodist.detection.model_info import ModelInfo, describe_model
from autodist.detection.snapshot import HardwareSnapshot
from autodist.errors import AutodistError, StrategyUnavailableError
from autodist.fields import nearest, shown
from autodist.planning import choosers
from autodist.planning.arguments import PLAN_PARAMETERS, STRATEGY_NAMES, check_plan_arguments, check_snapshot
from autodist.planning.global_batch import KERAS_DEFAULT_BATCH_SIZE
from autodist.planning.jax_planning import plan_jax
from autodist.planning.keras_compat import compile_overrides
from autodist.planning.plans import (
    DEFAULT_ACTIVATION_FRACTION,
    DEFAULT_GPU_MEMORY_FRACTION,
    DEFAULT_PEER_TIMEOUT_SECONDS,
    Plan,
    ScriptStrategy,
    StrategyKind,
)
from autodist.planning.steps_per_execution import FitFacts, choose_steps_per_execution
from autodist.planning.tune_rules import TUNE
from autodist.settings import STRATEGY_ENV, check_settings, strategy_setting, strategy_source
from autodist.planning.strategy_types import strategy_type

__all__ = ["check_strategy_setting", "plan", "refine", "steps_on_one_device", "workarounds_before_building"]


def plan(
    snapshot: HardwareSnapshot,
    *,
    model: Any = None,
    model_info: ModelInfo | None = None,
    num_params: int | None = None,
    batch_size: int | None = None,
    strategy: str | StrategyKind = "auto",
    gpu_memory_fraction: float = DEFAULT_GPU_MEMORY_FRACTION,
    activation_fraction: float = DEFAULT_ACTIVATION_FRACTION,
    optimizer_slots: int | None = None,
    peer_timeout_seconds: float = DEFAULT_PEER_TIMEOUT_SECONDS,
    environ: Mapping[str, str] | None = None,
    fit_facts: FitFacts | None = None,
    refuse_when_nothing_fits: bool = True,
    kept: ScriptStrategy | None = None,
) -> Plan:
    """Choose and configure a strategy. Pure: it reads no machine and no environment but
    ``environ``, and starts nothing (``autodist.plan`` is the edge that detects this machine).

    Args:
        snapshot: the hardware (:func:`autodist.detect`, or ``HardwareSnapshot.from_dict``).
        model: a Keras model to read the size, optimizer and compile settings from.
        model_info: the same facts given directly (tests, dry runs).
        num_params: the model's parameter count, when no model is given.
        batch_size: the requested **global** batch; Keras's default 32 when ``None``.
        strategy: ``"auto"``, a :class:`StrategyKind` value to force, or ``"tune"`` (as ``"auto"`` here).
        gpu_memory_fraction: the fraction of each GPU's memory the model may use.
        activation_fraction: activations as a share of weights and gradients, layer sizes unknown.
        optimizer_slots: slots per variable, overriding what the optimizer implies.
        peer_timeout_seconds: multi-worker only: the longest wait for peers before failing.
        environ: only for ``AUTODIST_KERAS_COMPAT`` and ``AUTODIST_STEPS_PER_EXECUTION``.
        fit_facts: what a ``fit`` call's callbacks, keywords and input say (for
            ``steps_per_execution``); none of them by default.
        refuse_when_nothing_fits: raise when nothing fits the GPUs (``False``: dry runs warn).
        kept: the script's own strategy (the model was built in its scope): kept, not chosen.

    Raises:
        StrategyUnavailableError: a forced strategy cannot run here, or the model fits no GPU.
        ArgumentError: for a bad argument (:mod:`autodist.planning.arguments`; ``BatchSizeError`` for the batch).

    Example:
        >>> p = plan(HardwareSnapshot.cpu_only(num_cpu_devices=2), batch_size=33)
        >>> (p.strategy.value, p.global_batch_size)
        ('mirrored', 34)
    """
    settings = environ if isinstance(environ, Mapping) else {}
    # AUTODIST_STRATEGY is read here, for every caller that passes its environment
    forced_by = strategy_source(settings, strategy)
    strategy = strategy_setting(settings, strategy)
    # every setting checked (typos too): a setting is named as the setting, before the argument it became
    if environ is None or isinstance(environ, Mapping):
        check_settings(settings)
        check_strategy_setting(settings)
    check_snapshot("autodist.planning.planner.plan", snapshot, optional=False)
    # every keyword as given, in the signature's order (the first bad one is the one named), the strategy as set
    given = {name: value for name, value in locals().items() if name in PLAN_PARAMETERS}
    checked = check_plan_arguments("autodist.planning.planner.plan", given)
    strategy, gpu_memory_fraction, activation_fraction, peer_timeout_seconds = (
        checked.get(name, default) for name, default in _DEFAULTS
    )
    info = model_info or (describe_model(model) if model is not None else ModelInfo())
    params = num_params if num_params is not None else info.num_params
    forced = _coerce_kind(strategy, snapshot.keras_backend)
    slots = optimizer_slots if optimizer_slots is not None else info.optimizer_slots
    sized = dataclasses.replace(info, num_params=params, optimizer_slots=slots)
    if snapshot.keras_backend == "jax":  # keras.distribution plans (autodist.planning.jax_planning)
        made = plan_jax(
            snapshot,
            sized,
            batch_size=batch_size,
            forced=forced,
            gpu_memory_fraction=gpu_memory_fraction,
            refuse_when_nothing_fits=refuse_when_nothing_fits,
        )
        _positive(choosers.Choice(made.memory), params)
        reasons = _opening(strategy, False).reasons + made.reasons  # what "tune" means there comes first
        return dataclasses.replace(made, peer_timeout_seconds=float(peer_timeout_seconds), reasons=reasons)
    facts = (sized, batch_size or KERAS_DEFAULT_BATCH_SIZE, activation_fraction, refuse_when_nothing_fits)
    memory = None if params is None else choosers.MemoryFacts(*facts)
    flavor = info.keras_flavor or snapshot.keras_flavor
    version = info.keras_version or (snapshot.keras_version if flavor == snapshot.keras_flavor else None)
    env, unbuilt = (environ if environ is not None else {}), _opening(strategy, model is not None and params is None)
    kind, layout = (
        _keep(snapshot, kept, memory, gpu_memory_fraction)
        if kept
        else _choose(snapshot, forced, memory, gpu_memory_fraction, forced_by, batch_size, fit_facts)
    )
    _refuse_for_keras(kind.value, flavor, version, kept, info.mixed_precision)
    batch = choosers.choose_batch(snapshot, kind.value, layout.value.num_replicas, batch_size, KERAS_DEFAULT_BATCH_SIZE)
    per_replica = batch.value.per_replica_batch_size
    estimates = _positive(
        choosers.choose_memory(
            snapshot, kind.value, memory, per_replica, gpu_memory_fraction, forced=bool(forced or kept)
        ),
        params,
    )
    threads = choosers.choose_coordinator_threads(snapshot, kind.value, layout.value.num_workers, flavor)
    made = (unbuilt, kind, layout, estimates, batch, threads)
    unrefined = Plan(
        strategy=kind.value,
        **dataclasses.asdict(layout.value),
        **{
            name: getattr(batch.value, name)
            for name in ("global_batch_size", "per_replica_batch_size", "requested_batch_size")
        },
        num_cpu_devices=snapshot.num_cpu_devices,
        footprint_bytes=estimates.value[0].device_bytes if estimates.value else None,
        memory=estimates.value,
        keras_flavor=flavor,
        keras_version=info.keras_version or snapshot.keras_version,
        cluster=snapshot.cluster,
        peer_timeout_seconds=float(peer_timeout_seconds),
        inter_op_threads=threads.value,
        tpu=snapshot.tpu if strategy_type(kind.value).on_tpu else None,
        drop_remainder=strategy_type(kind.value).drops_remainder,
        reasons=tuple(reason for choice in made for reason in choice.reasons),
        warnings=snapshot.diagnostics + tuple(warning for choice in made for warning in choice.warnings),
    )
    return _refined(unrefined, info, flavor, version, env, fit_facts)


def refine(
    the_plan: Plan, info: ModelInfo, environ: Mapping[str, str], fit_facts: FitFacts | None = None, kept: Any = None
) -> Plan:
    """``the_plan`` with the decisions that follow the model, made again from ``info``: its Keras
    flavor and the refusals of that Keras, the workarounds, the compile overrides,
    ``steps_per_execution``, and what each replica draws. For a model known better after planning:
    one autodist built from a function in the strategy's scope, or one whose random layers a
    traced training call read. Pure, like :func:`plan`; what the plan said of the model before is
    replaced, not repeated. The strategy, its layout, batch and memory stay.

    Example:
        >>> from autodist.detection.hardware import HardwareSnapshot
        >>> made = plan(HardwareSnapshot.cpu_only(num_cpu_devices=2), environ={})
        >>> info = ModelInfo(keras_flavor="keras3", keras_version="3.15.1", jit_compile=True)
        >>> refine(made, info, {}).compile_overrides
        {'jit_compile': False}
    """
    flavor = info.keras_flavor or the_plan.keras_flavor
    version = info.keras_version or the_plan.keras_version
    _refuse_for_keras(the_plan.strategy, flavor, version, kept, info.mixed_precision)
    return _refined(the_plan, info, flavor, version, environ, fit_facts)


def steps_on_one_device(
    the_plan: Plan, info: ModelInfo, environ: Mapping[str, str], fit_facts: FitFacts | None = None
) -> int | None:
    """The ``steps_per_execution`` autodist sets for this model and fit on one device, whatever
    ``the_plan``'s strategy: what ``strategy="tune"`` times one device's candidates with."""
    flavor = info.keras_flavor or the_plan.keras_flavor
    version = info.keras_version or the_plan.keras_version
    return _steps_per_execution(the_plan.cluster, StrategyKind.DEFAULT, flavor, version, info, environ, fit_facts).value


def _refined(
    base: Plan,
    info: ModelInfo,
    flavor: str,
    version: str | None,
    environ: Mapping[str, str],
    fit_facts: FitFacts | None,
) -> Plan:
    """``base`` with the model's part from ``info``, in place of what it said of a model before."""
    kind = base.strategy
    settings = {"jit_compile": info.jit_compile, "steps_per_execution": info.steps_per_execution}
    found, changed = compile_overrides(kind.value, flavor, version, **settings, environ=environ)
    overrides = choosers.Choice(found, warnings=tuple(changed))  # what the strategy cannot run with
    workarounds = choosers.choose_workarounds(kind, flavor, version, environ)
    steps = _steps_per_execution(base.cluster, kind, flavor, version, info, environ, fit_facts)
    notes = choosers.choose_data_parallel_notes(
        kind, base.num_replicas, base.per_replica_batch_size, info, version, workarounds.value
    )
    made = (overrides, workarounds, steps, notes)
    said = tuple(r for c in made for r in c.reasons), tuple(w for c in made for w in c.warnings)
    before_reasons, before_warnings = base.model_said
    return dataclasses.replace(
        base,
        # the model's own: TF_USE_LEGACY_KERAS=1 (Ray Train sets it) does not make a Keras 3 model tf_keras
        keras_flavor=flavor,
        keras_version=info.keras_version or base.keras_version,
        keras_workarounds=workarounds.value,
        compile_overrides=overrides.value,
        steps_per_execution=steps.value,
        reasons=tuple(r for r in base.reasons if r not in before_reasons) + said[0],
        warnings=tuple(w for w in base.warnings if w not in before_warnings) + said[1],
        model_said=said,
    )


def _choose(
    snapshot: HardwareSnapshot,
    forced: StrategyKind | None,
    memory: choosers.MemoryFacts | None,
    fraction: float,
    forced_by: str = "the caller",
    batch_size: int | None = None,
    fit_facts: FitFacts | None = None,
) -> tuple[choosers.Choice[StrategyKind], choosers.Choice[choosers.Layout]]:
    kind = choosers.choose_kind(snapshot, forced=forced, memory=memory, fraction=fraction, forced_by=forced_by)
    layout = strategy_type(kind.value).layout(snapshot)
    if forced is not None:
        return kind, layout
    facts = fit_facts or FitFacts()
    return choosers.choose_unsplit(snapshot, kind, layout, batch_size, facts.unmovable, facts.unsplittable)


def _keep(
    snapshot: HardwareSnapshot, kept: ScriptStrategy, memory: choosers.MemoryFacts | None, fraction: float
) -> tuple[choosers.Choice[StrategyKind], choosers.Choice[choosers.Layout]]:
    """The script's own strategy as the plan's kind and layout, with what autodist would have
    chosen in its reason."""
    try:
        relaxed = dataclasses.replace(memory, refuse=False) if memory is not None else None
        auto, auto_layout = _choose(snapshot, None, relaxed, fraction)
        would = f"{auto.value.value} with {auto_layout.value.num_replicas} replica(s)"
    except AutodistError as err:
        would = f"nothing ({err})"
    reason = (
        f"kept the script's own {kept.describe()}: the model was created in its scope, so it "
        f"trains there, as model.fit would train it; autodist would have chosen {would} (build "
        "the model outside the script's `with strategy.scope():` to let autodist choose)"
    )
    layout = choosers.Layout(kept.devices, kept.parameter_device, None, kept.num_workers, kept.num_replicas)
    return choosers.Choice(kept.kind, (reason,)), choosers.Choice(layout)


def _steps_per_execution(
    cluster: Any,
    kind: StrategyKind,
    flavor: str,
    version: str | None,
    info: ModelInfo,
    environ: Mapping[str, str],
    facts: FitFacts | None,
) -> choosers.Choice[int | None]:
    if cluster is not None and cluster.task_type == "evaluator":
        return choosers.Choice(None)  # the evaluator trains nothing
    return choose_steps_per_execution(kind, flavor, info, environ, facts or FitFacts(), keras_version=version)


def _refuse_for_keras(
    kind: StrategyKind,
    flavor: str,
    version: str | None,
    kept: ScriptStrategy | None,
    mixed_precision: str | None = None,
) -> None:
    """A strategy this Keras release cannot train under, or not this model's precision
    (:meth:`autodist.planning.strategy_types.StrategyType.keras_refusal`)."""
    why = strategy_type(kind).keras_refusal(flavor, version, mixed_precision)
    if why is not None:
        whose = f"the script's own {kept.class_name}" if kept else f"the plan's {kind.value}"
        raise StrategyUnavailableError(f"{why} (Received: {whose}, Keras {version}).")


#: The planner's keywords that are used as checked (a name in lower case, a numpy number as a
#: Python one), with the default of each when it is left out or ``None``.
_DEFAULTS = (
    ("strategy", "auto"),
    ("gpu_memory_fraction", DEFAULT_GPU_MEMORY_FRACTION),
    ("activation_fraction", DEFAULT_ACTIVATION_FRACTION),
    ("peer_timeout_seconds", DEFAULT_PEER_TIMEOUT_SECONDS),
)


def _positive(estimates: choosers.Choice[Any], params: int | None) -> choosers.Choice[Any]:
    """``estimates``, whose every part is positive where the model has weights: anything else
    is a bug in the facts it was given (a negative count that got through), refused rather than
    planned."""
    bad = [
        estimate
        for estimate in estimates.value or ()
        if estimate.device_bytes <= 0 or min(estimate.device.values(), default=0) < 0
    ]
    if bad and params:
        raise AutodistError(
            f"The memory estimate for {params} parameters is {bad[0].device_bytes} bytes per device under "
            f"{bad[0].strategy} "
            f"(Received: {dict(bad[0].device)}). Expected a positive size of every part. Check num_params, "
            "optimizer_slots and activation_fraction, or report it as a bug of autodist."
        )
    return estimates


def _opening(strategy: Any, unbuilt: bool) -> choosers.Choice[None]:
    """The reason that comes before the others: what ``"tune"`` means in the pure planner, or
    that the model's size is unknown."""
    if str(strategy).lower() == TUNE:
        return choosers.Choice(None, (_TUNE_HERE,))
    return choosers.Choice(None, (_UNBUILT,) if unbuilt else ())


_TUNE_HERE = (
    "strategy='tune' plans as 'auto' here: autodist.fit times the candidates on your model and "
    "data (on TensorFlow; Keras on JAX is planned as 'auto'); init, @distributed and the plan at "
    "import have none to time"
)
_UNBUILT = (
    "the model is not built yet (no input shape): its size is unknown until its first "
    "batch builds it, so the plan assumes it fits one device"
)


def check_strategy_setting(environ: Mapping[str, str]) -> None:
    """``AUTODIST_STRATEGY``, when set, names a strategy (or ``auto``, ``tune``).

    Raises:
        AutodistError: for an unknown name, with the names accepted.

    Example:
        >>> check_strategy_setting({"AUTODIST_STRATEGY": "mirrored"})
    """
    name = environ.get(STRATEGY_ENV, "").strip()
    if not name or name.lower() in STRATEGY_NAMES:
        return
    raise AutodistError(
        f"{STRATEGY_ENV} must be one of {', '.join(STRATEGY_NAMES)} (Received: {STRATEGY_ENV}={shown(name)}). "
        f"Fix it, or unset it to let autodist choose.{nearest(name, STRATEGY_NAMES)}"
    )


def _coerce_kind(strategy: Any, backend: str = "tensorflow") -> StrategyKind | None:
    """The forced strategy (``None`` for auto), or the error for a name that cannot run on ``backend``."""
    if backend not in ("tensorflow", "jax"):
        raise AutodistError(
            f"Keras runs on the {backend!r} backend here (KERAS_BACKEND), and autodist distributes "
            "Keras 3 on TensorFlow (tf.distribute) and on JAX (keras.distribution) only. Set "
            "KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax before Keras is imported, or distribute "
            f"the {backend} model with that backend's own tools."
        )
    # "tune" plans as "auto": fit then times the candidates (autodist.tensorflow.tuning)
    if strategy is None or (isinstance(strategy, str) and strategy.lower() in ("auto", TUNE)):
        return None
    # a name checked by planning.arguments
    kind = StrategyKind(str(strategy.value if isinstance(strategy, Enum) else strategy).strip().lower())
    strategy_type(kind).check_backend(backend)
    return kind


def workarounds_before_building(
    the_plan: Plan, built_from_function: bool, keras_version: str | None, environ: Mapping[str, str]
) -> tuple[str, ...]:
    """The Keras workarounds a ``fit`` applies, once, before its model is built: the plan's,
    or, for a model built from a function under a tf_keras plan, Keras 3's. The flavor a function
    builds with is known only after it has run (``TF_USE_LEGACY_KERAS=1``, which Ray Train sets,
    says tf_keras, and the function may build with Keras 3 all the same), and Keras 3's
    creation-time workarounds (BatchNormalization's statistics, random layers' seeds) must be in
    before it builds; they touch Keras 3 only. What :func:`refine` then picks is
    among them.

    Example:
        >>> from autodist.detection.hardware import HardwareSnapshot
        >>> made = plan(HardwareSnapshot.cpu_only(num_cpu_devices=2), environ={})
        >>> workarounds_before_building(made, False, "3.15.1", {}) == made.keras_workarounds
        True
    """
    if built_from_function and the_plan.keras_flavor == "tf_keras":
        return choosers.choose_workarounds(the_plan.strategy, "keras3", keras_version, environ).value
    return the_plan.keras_workarounds
