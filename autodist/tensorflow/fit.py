"""``autodist.fit`` on TensorFlow: the stages of :mod:`autodist.core.fit_template`, each a method of
:class:`TensorFlowFit` that says what it does, each stage's work in its own module: the random layers a
traced training call reads (:mod:`autodist.tensorflow.draws`), ``strategy="tune"``
(:mod:`autodist.tensorflow.tuning`), the strategy (:mod:`autodist.tensorflow.strategies`), the model that
trains (:mod:`autodist.tensorflow.placement`), parameter servers (:mod:`autodist.tensorflow.parameter_server`),
the input made ready for the plan (:mod:`autodist.core.inputs`), the plan's compile settings
(:mod:`autodist.core.compile_settings`), the chief's duties (:mod:`autodist.core.callbacks`) and resume
(:mod:`autodist.resume`).

Each stage returns new values: the caller's ``fit`` keywords are never changed; what
``model.fit`` itself would change (the model's weights, a generator it reads, a compile setting
the strategy cannot run with) changes as it would.

The public entry, with its example, is :func:`autodist.entry.fit.fit`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping
from typing import Any

from autodist.detection.hardware import detect
from autodist.detection.model_info import ModelInfo, describe_model, keras_module, overrides
from autodist.errors import BatchSizeError, PeerError, StrategyUnavailableError
from autodist.log import get_logger, log_plan, warn_all
from autodist.planning.steps_per_execution import FitFacts
from autodist.core.detect_and_plan import plan_here
from autodist.planning.planner import refine, steps_on_one_device, workarounds_before_building
from autodist.planning.plans import Plan
from autodist.planning.tune_rules import TUNE
from autodist.tensorflow import parameter_server
from autodist.tensorflow.current_strategy import complete as complete_activation
from autodist.core.fit_call import FitCall
from autodist.core.fit_template import Placed, Prepared, Started
from autodist.core.batching import shared_shuffle_seed
from autodist.core.callbacks import ChiefDuties, final_callbacks, needs_each_step, ray_reports_itself
from autodist.tensorflow.batch_probe import SAMPLES as PROBED
from autodist.tensorflow.batch_probe import batch_mixing_check
from autodist.tensorflow.comm_check import check_communication
from autodist.tensorflow.draws import traced_model_info
from autodist.tensorflow.metric_state import metric_state_notes
from autodist.core.compile_settings import compiled_for, mixed_precision_while_building
from autodist.core.inputs import fit_steps, input_notes, last_batch, prepare_input, shuffles_read_ahead
from autodist.process import STATE
from autodist.tensorflow.keras_patches import (
    apply_workarounds,
    build_from_generator,
    shares_weighted,
    steps_as_one_device,
    trains_under,
)
from autodist.tensorflow.placement import (
    copy_training_state,
    move_into_scope,
    place_model,
    script_strategy,
    stuck,
)
from autodist.tensorflow.activation_record import current as current_activation
from autodist.resume.guard import guard_for, ray_owns_backups
from autodist.resume.resumed_fit import fit_resuming
from autodist.tensorflow.strategies import describe_strategy, start
from autodist.tensorflow.tuning import tuned_plan
from autodist.settings import strategy_setting, verbose_setting
from autodist.upstream.tf_runtime import global_seed
from autodist.upstream.versions import module_version

__all__ = ["TensorFlowFit"]


class TensorFlowFit:
    """The stages of one ``fit`` on TensorFlow (:class:`autodist.core.fit_template.FitStages`),
    each a method, what they learn of the call (``facts``) and say before training kept here."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.facts = FitFacts()
        self.own: Any = None  # the script's own strategy, kept
        self.said: tuple[str, ...] = ()  # what placing the model said (its precision)

    def read(self, call: FitCall) -> FitCall:
        """The call with its input as TensorFlow reads it: a Ray Data shard as this worker's
        ``tf.data.Dataset``, with the global batch; any other input as it is. The strategy made
        current at import, if it is still pending, is made current now."""
        data, batch = call.data.read_on_tensorflow(call.requested_batch)
        complete_activation()
        if data is call.data:
            return call
        return dataclasses.replace(call, data=data, batch_size=batch, requested_batch=batch)

    def plan(self, call: FitCall) -> Plan:
        """The plan: the script's own strategy's, where the model was built in its scope; else
        autodist's, served (parameter-server worker and ps tasks end here) and tuned where asked."""
        self.facts = _fit_facts(call)
        # the strategy the script created itself and built the model in, kept with strategy="auto" (or "tune",
        # which then times nothing)
        keeps = call.builder is None and str(call.strategy).lower() in ("auto", TUNE)
        self.own = script_strategy(call.model) if keeps else None
        if self.own is not None:
            return _planned(call, self.facts, kept=describe_strategy(self.own))
        auto = _planned(call, self.facts)
        parameter_server.serve_if_this_task_serves(auto)
        return _tuned(call, self.facts, auto) if strategy_setting(os.environ, call.strategy) == TUNE else auto

    def start(self, call: FitCall, the_plan: Plan) -> Started:
        """The strategy (the Keras workarounds are applied once, when placing), made the one
        autodist trains under; on a TPU, the batch planned again with the real number of cores."""
        if self.own is not None:
            started = Started(the_plan, self.own, kept=True)
        else:
            distribution = start(the_plan, workarounds=False)
            done = current_activation()
            shared = done is not None and done.shared and distribution is done.strategy
            cores = int(distribution.num_replicas_in_sync) if the_plan.type.on_tpu else the_plan.num_replicas
            built = _plan_for(call, self.facts, tpu_cores=cores) if cores != the_plan.num_replicas else the_plan
            final = dataclasses.replace(built, reasons=built.reasons + (_SHARED,)) if shared else built
            started = Started(final, distribution)
        cluster = started.plan.cluster
        if cluster is not None and cluster.task_type == "evaluator":
            raise StrategyUnavailableError(
                f"This process is the cluster's evaluator ({cluster.source}), and "
                "autodist.fit trains. Expected fit on the chief and workers only. On the evaluator, "
                "run keras.utils.SidecarEvaluator (or model.evaluate on the checkpoints the chief "
                "writes) instead of autodist.fit."
            )
        trains_under(started.distribution)
        return started

    def place(self, call: FitCall, started: Started) -> Placed:
        """The plan's Keras workarounds applied (once, before the model is built), and the model
        that trains (:mod:`autodist.tensorflow.placement`)."""
        apply_workarounds(
            workarounds_before_building(started.plan, call.builder is not None, module_version("keras"), self.environ)
        )
        with mixed_precision_while_building(call.mixed_precision, call.builder, started.plan) as precision_warnings:
            # move_into_scope is looked up here, so a test or profiler may wrap this module's name
            placed = place_model(
                call.model, call.builder, call.data, started.plan, started.distribution, move=move_into_scope
            )
        self.said = tuple(precision_warnings)
        return placed

    def refine(self, call: FitCall, started: Started, placed: Placed) -> Started:
        """The plan ``fit`` trains on: a model built from a function refines it (its Keras flavor,
        workarounds and compile settings, known once it is built; those it needs are among the
        workarounds applied before building) and, on a multi-worker job, the communication check
        (it warns when the workers cannot pay off)."""
        built = (
            refine(started.plan, describe_model(placed.trained), self.environ, self.facts)
            if call.builder is not None
            else started.plan
        )
        return started._replace(plan=check_communication(placed.trained, started.distribution, built))

    def prepare(self, call: FitCall, started: Started, placed: Placed) -> Prepared:
        """The input as it trains (a generator's first batch put back where the model was built
        from it), the model's own steps and the replicas' shares set, and the notes."""
        the_plan, distribution = started.plan, started.distribution
        data = (
            build_from_generator(placed.trained, call.data, distribution, the_plan)
            if the_plan.type.distributes and not the_plan.type.asynchronous
            else call.data
        )
        steps_as_one_device(placed.trained, the_plan)
        split = last_batch(data, the_plan, call.fit_kwargs)
        weighted = shares_weighted(placed.trained, the_plan, None if split is None else split.last)
        log_plan(the_plan, verbose_setting(self.environ))
        if weighted:
            get_logger().info(_WEIGHTED.format(split=_said_split(split)))
        notes = input_notes(
            data,
            the_plan,
            call.fit_kwargs,
            kept=started.kept,
            split=split,
            weighted=weighted,
            own_train_step=overrides(placed.trained, "train_step"),
            read_ahead_before=max(
                (STATE.read_ahead.get(shuffle, 0) for shuffle in data.repeated_shuffles()), default=0
            ),
        )
        STATE.read_ahead.update(
            dict.fromkeys(shuffles_read_ahead(data, the_plan, call.fit_kwargs), the_plan.num_replicas)
        )
        said = tuple(the_plan.warnings) + self.said + tuple(notes) + metric_state_notes(call.model, placed.trained)
        return Prepared(dataclasses.replace(call, data=data), said)

    def train(self, call: FitCall, started: Started, placed: Placed) -> Any:
        """The History: the plan's type picks the loop, the seam where parameter servers join
        (:mod:`autodist.tensorflow.parameter_server`: the chief's loop, with the final callbacks, no
        batch-level hooks, as the workers step asynchronously); every other strategy trains in sync
        (:func:`_train_in_sync`)."""
        the_plan = started.plan
        if not the_plan.type.asynchronous:
            return _train_in_sync(call, the_plan, started.distribution, placed)
        callbacks = final_callbacks(
            keras_module(the_plan.keras_flavor),
            call.fit_kwargs.get("callbacks"),
            per_batch=False,
            ray_report=call.ray_report,
            ray_checkpoint=call.ray_checkpoint,
        )
        kwargs = {**call.fit_kwargs, "callbacks": callbacks}
        return parameter_server.train(placed.trained, started.distribution, call.data, the_plan, call.epochs, kwargs)

    def copy_back(self, trained: Any, model: Any) -> None:
        copy_training_state(trained, model)


_WEIGHTED = (
    "autodist: {split}; each replica's gradients are weighted by its share of the step's samples, so "
    "every step takes the whole batch's mean gradient, as model.fit does on one device"
)


def _said_split(split: Any) -> str:
    if split is None or not split.last:
        return "the input's batches may not split evenly over the replicas"
    if not split.shares:
        return f"the last batch of each epoch holds {split.last} of {split.count} samples"
    shares = "/".join(map(str, split.shares))
    return f"the last batch of each epoch, {split.last} of {split.count} samples, splits {shares}"


def _fit_facts(call: FitCall) -> FitFacts:
    """What the call's callbacks, keywords and input tell the planner (for ``steps_per_execution``)."""
    kwargs = call.fit_kwargs
    return FitFacts(
        # ModelCheckpoint per epoch: no
        batch_hooks=any(needs_each_step(callback) for callback in (kwargs.get("callbacks") or [])),
        steps_given=kwargs.get("steps_per_epoch") is not None or kwargs.get("validation_steps") is not None,
        length_unknown=call.data.length_unknown(),
        total_steps=fit_steps(call.data, call.requested_batch, call.epochs, kwargs),
        # a batch too small to split, or an input that cannot be split, trains on one device, which a
        # model built under the strategy reaches by a move
        unmovable=(
            stuck(call.model)
            if call.builder is None
            and (
                (call.requested_batch is not None and call.requested_batch < _SMALL_BATCH)
                or call.data.unsplittable() is not None
            )
            else None
        ),
        unsplittable=call.data.unsplittable(),
    )


#: Batches below this may be smaller than a host's replicas (no host has more GPUs).
_SMALL_BATCH = 64


_SHARED = (
    "the script's own MultiWorkerMirroredStrategy() is this strategy object: collectives are "
    "configured once per process, so autodist gave the script the strategy it had created"
)


def _tuned(call: FitCall, facts: FitFacts, auto: Plan) -> Plan:
    """``strategy="tune"``: the fastest candidate plan, timed on copies of the model
    (:mod:`autodist.tensorflow.tuning`)."""
    snapshot = detect()

    def plan_for(kind: str) -> Plan:
        return _plan_for(dataclasses.replace(call, strategy=kind), facts, snapshot=snapshot)

    epochs = max(1, call.epochs - int(call.fit_kwargs.get("initial_epoch") or 0))
    with mixed_precision_while_building(call.mixed_precision, call.builder, auto):  # copies built as the model will be
        info = describe_model(call.model) if call.builder is None else ModelInfo()
        return tuned_plan(
            snapshot,
            auto,
            plan_for,
            call.model,
            call.builder,
            call.data,
            epochs,
            os.environ,
            call.fit_kwargs,
            default_steps=steps_on_one_device(auto, info, os.environ, facts),
        )


def _train_in_sync(call: FitCall, the_plan: Plan, distribution: Any, placed: Placed) -> Any:
    """``model.fit`` in the scope, its concerns each a context put together here, each undone
    however the fit ends: a lost peer named (:class:`PeerError`); with a backup folder, preemption
    saves and a resume at the saved step (the seam where resume joins:
    :mod:`autodist.resume.preemption`); the plan's compile settings (``steps_per_execution`` given
    back after); the chief's duties; and, on several replicas, the batch probe."""
    trained = placed.trained
    keras = keras_module(the_plan.keras_flavor)
    multi_worker = the_plan.type.collective_workers
    ready = prepare_input(
        call.data,
        the_plan,
        call.fit_kwargs,
        batch_given=call.batch_size is not None,
        shuffle_seed=lambda: shared_shuffle_seed(distribution if multi_worker else None),
    )
    warn_all(list(ready.warnings))
    cluster = the_plan.cluster if the_plan.type.collective_workers else None
    given = ready.fit_kwargs.get("callbacks")
    # what can carry autodist's saves in Ray
    ray_checkpoints = call.ray_report and call.ray_checkpoint and not ray_reports_itself(given)
    guard = guard_for(call.backup_dir, the_plan, given, keras, distribution, ray_checkpoints=ray_checkpoints)
    duties = ChiefDuties(
        cluster, keras, False if guard is not None or ray_owns_backups(call.backup_dir) else call.backup_dir
    )
    with (
        _peers_named(cluster),
        guard.state.held() if guard is not None else contextlib.nullcontext(),
        compiled_for(trained, the_plan),
        duties.held(given) as prepared,
    ):
        callbacks = final_callbacks(
            keras,
            prepared,
            ray_report=call.ray_report,
            ray_checkpoint=call.ray_checkpoint,
            ray_saves=guard.ray_saves if guard is not None else None,
        )
        # its first samples probed: arrays autodist reads as Keras does (pandas: left alone)
        sample = call.data.probe_sample(PROBED) if the_plan.num_replicas > 1 else None
        probe = batch_mixing_check(keras, sample, the_plan.num_replicas, the_plan.per_replica_batch_size)
        callbacks += [probe] if probe is not None else []
        with distribution.scope():
            if guard is None:
                return trained.fit(
                    ready.data.raw, ready.data.y, epochs=call.epochs, **{**ready.fit_kwargs, "callbacks": callbacks}
                )
            history = fit_resuming(
                trained,
                ready,
                call.epochs,
                callbacks,
                guard,
                keras,
                order_note=_UNORDERED if ready.shuffled_by_autodist and global_seed() is None else "",
                order_seed=lambda: shared_shuffle_seed(distribution if cluster is not None else None),
            )
            guard.state.finish(trained, history)  # a SIGTERM too late to save a step: exits 75
            return history


@contextlib.contextmanager
def _peers_named(cluster: Any) -> Iterator[None]:
    """On a multi-worker job, a peer lost during training said as a :class:`PeerError`."""
    import tensorflow as tf

    try:
        yield
    except (
        tf.errors.UnavailableError,
        tf.errors.DeadlineExceededError,
        tf.errors.CancelledError,
        tf.errors.AbortedError,
    ) as err:
        if cluster is None:
            raise
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise PeerError(
            f"{cluster.task_type} {cluster.task_index} lost contact with a peer during multi-worker "
            f"training ({type(err).__name__}: {first_line[:300]}). Expected all "
            f"{cluster.num_workers} workers to run to the end; one stopped or became unreachable. "
            "Find the failed worker's own error in its log. To survive such failures, start the job "
            "with python -m autodist launch --max-restarts 1 (or your cluster manager's restart "
            "policy): training resumes from the last save every worker has (each epoch's end, or the step saved on "
            "SIGTERM)."
        ) from err


#: Why a resumed run cannot read the rest of an epoch in the uninterrupted run's order: arrays
#: that autodist shuffles as a dataset, with no global seed (a new seed each run).
_UNORDERED = (
    "autodist shuffles these arrays with a seed drawn for each run (no keras.utils.set_random_seed), in a new "
    "order after a restart"
)


def _planned(call: FitCall, facts: FitFacts, kept: Any = None) -> Plan:
    """The plan for the call (the script's own strategy ``kept``), refined with the layers that
    draw random numbers read from a traced training call of the model
    (:mod:`autodist.tensorflow.draws`) where it splits batches over replicas and they differ from
    the layer list's: what each replica draws is said of the layers the model runs. A model the
    call built, its size unknown before, is planned again with it."""
    the_plan = _plan_for(call, facts, kept=kept)
    if call.builder is not None:
        return the_plan
    info = describe_model(call.model)
    traced = traced_model_info(call.model, call.data, the_plan, info)
    if traced is None or (traced.random_layers, traced.own_draw_layers) == (info.random_layers, info.own_draw_layers):
        return the_plan
    if traced.num_params != info.num_params:
        return _plan_for(call, facts, kept=kept, model_info=traced)
    return refine(the_plan, traced, os.environ, facts, kept)


def _plan_for(
    call: FitCall,
    facts: FitFacts,
    tpu_cores: int | None = None,
    snapshot: Any = None,
    kept: Any = None,
    model_info: Any = None,
) -> Plan:
    snapshot = snapshot if snapshot is not None else detect()
    if tpu_cores is not None and snapshot.tpu is not None:
        snapshot = dataclasses.replace(snapshot, tpu=dataclasses.replace(snapshot.tpu, num_cores=tpu_cores))
    the_plan = plan_here(
        os.environ,
        snapshot=snapshot,
        model=None if call.builder is not None else call.model,
        fit_facts=facts,
        kept=kept,
        model_info=model_info,
        **call.plan_keywords(),
    )
    if call.data.batch_needed(call.requested_batch) and the_plan.num_replicas > 1:
        raise BatchSizeError(
            "autodist could not find the batch size of the tf.data.Dataset passed as x, and it "
            f"must split each batch over {the_plan.num_replicas} replicas. Expected a dataset "
            "batched with .batch(n), or a batch_size. Pass batch_size= (the global batch) and "
            "autodist re-batches the dataset to it."
        )
    return the_plan
