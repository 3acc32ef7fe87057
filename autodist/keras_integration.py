"""``autodist.fit``: ``model.fit`` under the strategy autodist chose, from plan to History.

Flow: detect → plan → build the strategy (before anything else touches the runtime) → put the model
in the strategy's scope → prepare the input for the global batch → ``fit`` inside the scope →
copy the trained state back into the caller's model.

Example:
    >>> import numpy as np, keras, autodist
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> history = autodist.fit(model, np.ones((64, 4)), np.ones((64, 1)), batch_size=16, verbose=0)
    >>> len(history.history["loss"])
    1
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from autodist.activation import complete as complete_activation
from autodist.activation import plan_here
from autodist.batching import dataset_batch_size, shared_shuffle_seed
from autodist.callbacks import ChiefDuties, uses_batch_hooks
from autodist.errors import (
    AutodistError,
    BatchSizeError,
    ModelPlacementError,
    PeerError,
    StrategyUnavailableError,
)
from autodist.inputs import (
    batches_itself,
    build_from_generator,
    input_notes,
    length_unknown,
    pandas_to_numpy,
    prepare_input,
    training_samples,
)
from autodist.placement import (
    build_from_first_batch,
    build_in_scope,
    copy_training_state,
    is_compiled,
    is_model,
    keras_module,
    move_into_scope,
    needs_move,
    warn_moved,
)
from autodist.hardware import detect
from autodist.keras_compat import (
    WORKAROUNDS,
    apply_compile_overrides,
    compile_overrides,
    patch_aggregating_variable_updates,
    patch_multi_worker_trainer,
)
from autodist.log import get_logger, warn_all
from autodist.model_info import describe_model, keras_flavor_of
from autodist.planning import Plan, StrategyKind
from autodist.parameter_server import serve_if_this_task_serves
from autodist.strategies import build_strategy

__all__ = ["fit"]


@contextlib.contextmanager
def _mixed_precision(enabled: bool, builder: Any, the_plan: Plan) -> Iterator[list[str]]:
    """Set ``mixed_bfloat16`` while autodist builds the model, then restore the user's policy."""
    if not enabled:
        yield []
        return
    if builder is None:
        yield [
            "mixed_precision=True applies to models autodist builds from a function; your model "
            "was built already. Call keras.mixed_precision.set_global_policy('mixed_bfloat16') "
            "before building it."
        ]
        return
    precision = keras_module(the_plan.keras_flavor).mixed_precision
    previous = precision.global_policy()
    precision.set_global_policy("mixed_bfloat16")
    try:
        yield []
    finally:
        precision.set_global_policy(previous)


def _apply_keras_workarounds(trained: Any, the_plan: Plan) -> None:
    """Apply the Keras 3 workarounds this model needs, judged by the model's own Keras (idempotent)."""
    if keras_flavor_of(trained) != "keras3":
        return
    version = describe_model(trained).keras_version
    if the_plan.strategy != StrategyKind.DEFAULT and WORKAROUNDS["aggregating_variable_updates"].is_active(version):
        patch_aggregating_variable_updates()
    if the_plan.strategy != StrategyKind.DEFAULT:
        patch_multi_worker_trainer(version)


_prepare_input = prepare_input  # the name tests and older callers import


def fit(
    model: Any,
    x: Any = None,
    y: Any = None,
    *,
    batch_size: int | None = None,
    epochs: int = 1,
    strategy: str | StrategyKind = "auto",
    num_params: int | None = None,
    gpu_memory_fraction: float | None = None,
    backup_dir: str | bool | None = None,
    peer_timeout_seconds: float | None = None,
    mixed_precision: bool = False,
    **fit_kwargs: Any,
) -> Any:
    """Train ``model`` like ``model.fit``, under the strategy autodist picks for this machine.

    Args:
        model: a compiled Keras model (Keras 3 or tf_keras), built anywhere; or a zero-argument
            function that builds and compiles one, which autodist calls inside the scope.
        x: input data, as for ``model.fit`` (numpy arrays, tensors, a ``tf.data.Dataset``, ...).
        y: targets, as for ``model.fit``.
        batch_size: the **global** batch. Moved to the nearest multiple of the replica count,
            with a warning. For a batched dataset, the dataset is re-batched to it.
        epochs: as for ``model.fit``.
        strategy: ``"auto"``, or a strategy name to force (``"mirrored"``, ...).
        num_params: the model size, for a model built by a function (to check GPU memory).
        gpu_memory_fraction: share of GPU memory the model may use (default 0.9).
        backup_dir: multi-worker runs add ``BackupAndRestore`` with one folder per worker under
            this directory (default: ``AUTODIST_BACKUP_DIR``, which the launcher sets, else a
            temporary folder named after the cluster). ``False`` turns it off.
        peer_timeout_seconds: multi-worker runs: the longest wait for peers before the job fails
            with an error (default ``AUTODIST_PEER_TIMEOUT`` or 300).
        mixed_precision: set Keras's global ``mixed_bfloat16`` policy before building the model
            (recommended on TPU). Only for a model autodist builds from a function.
        **fit_kwargs: passed to ``model.fit`` as they are (``validation_data``, ``callbacks``,
            ``class_weight``, ``sample_weight``, ``initial_epoch``, ``steps_per_epoch``, ...).

    Returns:
        The ``keras.callbacks.History`` of the run. The caller's model object holds the trained
        weights and optimizer state afterwards; for a model built by a function, it is
        ``history.model``. ``history.plan`` is the :class:`~autodist.planning.Plan` that ran.

    Raises:
        AutodistError: for a model, batch size or strategy that cannot work, with the fix.
        PeerError: when a worker of the cluster is lost during multi-worker training.

    Example:
        >>> import numpy as np, keras, autodist
        >>> def build():
        ...     m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        ...     m.compile(optimizer="sgd", loss="mse")
        ...     return m
        >>> history = autodist.fit(build, np.ones((64, 4)), np.ones((64, 1)), batch_size=32, verbose=0)
        >>> history.model is not None
        True
    """
    builder = _builder_of(model)
    complete_activation()  # the strategy made current at import, if it is still pending
    plan_args = (
        model, builder, x, batch_size, strategy, num_params, gpu_memory_fraction, peer_timeout_seconds, fit_kwargs,
    )
    the_plan, distribution = _plan_and_build(plan_args)
    with _mixed_precision(mixed_precision, builder, the_plan) as precision_warnings:
        trained, moved, extra_warnings = _model_in_scope(model, builder, x, the_plan, distribution)
    extra_warnings = precision_warnings + extra_warnings
    _apply_keras_workarounds(trained, the_plan)
    if the_plan.strategy not in (StrategyKind.DEFAULT, StrategyKind.PARAMETER_SERVER):
        x = build_from_generator(trained, x, distribution)
    get_logger().info(the_plan.summary(include_warnings=False))
    warn_all(list(the_plan.warnings) + extra_warnings + input_notes(x, the_plan, fit_kwargs))

    fit_kwargs = dict(fit_kwargs)
    if _is_callback_list(fit_kwargs.get("callbacks")):
        # model.fit takes a CallbackList as it is; autodist inspects and adds callbacks one by one
        fit_kwargs["callbacks"] = list(fit_kwargs["callbacks"].callbacks)
    with _copy_back_on_interrupt(model, trained, moved):
        return _train(
            trained, distribution, model, moved, x, y, the_plan, epochs, backup_dir, fit_kwargs, batch_size is not None
        )


def _builder_of(model: Any) -> Any:
    """``None`` for a compiled model, the function for a model-building function; else the error."""
    builder = None if is_model(model) else model
    if builder is not None and not callable(builder):
        raise ModelPlacementError(
            f"autodist.fit got {type(model).__name__} as the model. Expected a compiled Keras model "
            "or a zero-argument function that builds and compiles one."
        )
    if builder is None and not is_compiled(model):
        raise ModelPlacementError(
            "autodist.fit got a model that is not compiled. Expected a compiled model, as for "
            "model.fit. Call model.compile(optimizer=..., loss=...) first, or pass a function "
            "that builds and compiles it."
        )
    return builder


def _plan_and_build(plan_args: tuple[Any, ...]) -> tuple[Plan, Any]:
    """Plan, serve (parameter-server worker and ps tasks end here), build the strategy; on a
    TPU, plan the batch again with the real number of cores once connected."""
    the_plan = _plan_for(*plan_args)
    serve_if_this_task_serves(the_plan)
    distribution = build_strategy(the_plan)
    if the_plan.strategy == StrategyKind.TPU and distribution.num_replicas_in_sync != the_plan.num_replicas:
        the_plan = _plan_for(*plan_args, tpu_cores=int(distribution.num_replicas_in_sync))
    _refuse_evaluator(the_plan)
    return the_plan, distribution


def _refuse_evaluator(the_plan: Plan) -> None:
    if the_plan.cluster is not None and the_plan.cluster.task_type == "evaluator":
        raise StrategyUnavailableError(
            f"This process is the cluster's evaluator ({the_plan.cluster.source}), and "
            "autodist.fit trains. Expected fit on the chief and workers only. On the evaluator, "
            "run keras.utils.SidecarEvaluator (or model.evaluate on the checkpoints the chief "
            "writes) instead of autodist.fit."
        )


@contextlib.contextmanager
def _copy_back_on_interrupt(model: Any, trained: Any, moved: bool) -> Iterator[None]:
    """Like model.fit, an interrupted fit (Ctrl-C, a callback raising) leaves the caller's model
    with the training done so far."""
    try:
        yield
    except BaseException:
        if moved:
            try:
                copy_training_state(trained, model)
            except Exception:  # the original error matters more
                pass
        raise


def _train(
    trained: Any,
    distribution: Any,
    model: Any,
    moved: bool,
    x: Any,
    y: Any,
    the_plan: Plan,
    epochs: int,
    backup_dir: Any,
    fit_kwargs: dict[str, Any],
    batch_given: bool,
) -> Any:
    import tensorflow as tf

    if the_plan.strategy == StrategyKind.PARAMETER_SERVER:
        history = _fit_parameter_server(trained, distribution, x, y, the_plan, epochs, fit_kwargs)
        return _finish(history, model, trained, moved, the_plan)
    multi_worker = the_plan.strategy == StrategyKind.MULTI_WORKER_MIRRORED
    x, y, input_warnings = prepare_input(
        x,
        y,
        the_plan,
        fit_kwargs,
        batch_given=batch_given,
        shuffle_seed=lambda: shared_shuffle_seed(distribution if multi_worker else None),
    )
    warn_all([w for w in input_warnings if w])
    duties = ChiefDuties(
        the_plan.cluster if the_plan.strategy == StrategyKind.MULTI_WORKER_MIRRORED else None,
        keras_module(keras_flavor_of(trained)),
        backup_dir,
    )
    the_plan, restore_steps = _apply_steps_per_execution(trained, the_plan, x, fit_kwargs)
    succeeded = False
    try:
        fit_kwargs["callbacks"] = duties.prepare(fit_kwargs.get("callbacks"))
        with distribution.scope():
            history = trained.fit(x, y, epochs=epochs, **fit_kwargs)
        succeeded = True
    except (tf.errors.UnavailableError, tf.errors.DeadlineExceededError, tf.errors.CancelledError, tf.errors.AbortedError) as err:
        if duties.cluster is None:
            raise
        raise PeerError(_peer_message(the_plan, err)) from err
    finally:
        try:
            duties.restore(succeeded=succeeded)
        finally:
            restore_steps()
    return _finish(history, model, trained, moved, the_plan)


def _is_callback_list(callbacks: Any) -> bool:
    """Whether ``callbacks`` is a Keras ``CallbackList`` (Keras 3 or tf_keras), not a plain list."""
    return type(callbacks).__name__ == "CallbackList" and isinstance(getattr(callbacks, "callbacks", None), list)


def _apply_steps_per_execution(model: Any, the_plan: Plan, x: Any, fit_kwargs: Mapping[str, Any]) -> tuple[Plan, Callable[[], None]]:
    """Set the plan's ``steps_per_execution`` on a Keras 3 model compiled with 1, for this ``fit``.

    Skipped (and the returned plan says why) when a callback uses batch-level hooks, which would
    fire once per call rather than per step; when ``steps_per_epoch`` or ``validation_steps`` is
    given, because Keras 3 runs whole calls (an epoch of 4 steps on an endless input ran 8); when
    the input's length is unknown (a generator, ``from_generator``), because Keras 3 with 1 counts
    one extra optimizer iteration per epoch there, which moves Adam's bias correction (measured:
    5 iterations for 4 batches, and weights 1e-4 apart after 2 epochs); and under ``run_eagerly``.
    Returns the plan as applied and the function that gives the model back its own value and
    compiled functions, so the caller's later ``fit``, ``evaluate`` and
    ``predict`` behave, and cost, as before.
    """
    import dataclasses

    value = the_plan.steps_per_execution
    if not value:
        return the_plan, lambda: None
    why = None
    if keras_flavor_of(model) != "keras3" or getattr(model, "steps_per_execution", None) != 1:
        why = "the model was not compiled with 1"
    elif getattr(model, "run_eagerly", False):
        why = "the model runs eagerly"
    elif any(uses_batch_hooks(callback) for callback in (fit_kwargs.get("callbacks") or [])):
        why = "a callback uses batch-level hooks"
    elif fit_kwargs.get("steps_per_epoch") is not None or fit_kwargs.get("validation_steps") is not None:
        why = "steps_per_epoch or validation_steps is given"
    elif length_unknown(x):
        why = "the input's length is unknown, and Keras 3 then counts optimizer steps differently"
    if why is not None:  # the planner's "steps_per_execution=8 ..." reason is replaced, not contradicted
        kept = tuple(reason for reason in the_plan.reasons if not reason.startswith("steps_per_execution="))
        reasons = kept + (f"steps_per_execution stays as compiled: {why}",)
        return dataclasses.replace(the_plan, steps_per_execution=None, reasons=reasons), lambda: None
    compiled = (model.train_function, model.test_function, model.predict_function)
    apply_compile_overrides(model, {"steps_per_execution": value})

    def restore() -> None:
        model.steps_per_execution = 1
        model.train_function, model.test_function, model.predict_function = compiled

    return the_plan, restore


def _finish(history: Any, model: Any, trained: Any, moved: bool, the_plan: Plan) -> Any:
    if moved:
        copy_training_state(trained, model)
        history.set_model(model)
        model.history = history
    history.plan = the_plan
    return history


def _fit_parameter_server(trained: Any, distribution: Any, x: Any, y: Any, the_plan: Plan, epochs: int, fit_kwargs: dict[str, Any]) -> Any:
    from autodist import parameter_server

    assert the_plan.global_batch_size is not None
    if x is None or batches_itself(x):
        raise AutodistError(
            f"Parameter-server training cannot read a {type(x).__name__} as its input: the "
            "workers rebuild the input pipeline from its TensorFlow graph, and Python objects "
            "(generators, keras.utils.PyDataset) stay on the chief. Expected numpy arrays (or "
            "pandas), or a tf.data.Dataset built from TensorFlow ops. Pass the data as arrays, "
            "or build a tf.data pipeline from tensors or files."
        )
    x, y = pandas_to_numpy(x), pandas_to_numpy(y)
    if "sample_weight" in fit_kwargs:
        fit_kwargs["sample_weight"] = pandas_to_numpy(fit_kwargs["sample_weight"])
    if keras_flavor_of(trained) == "tf_keras":
        train = parameter_server.fit_tf_keras
    else:
        train = parameter_server.fit_keras3
    return train(trained, distribution, x, y, global_batch_size=the_plan.global_batch_size, epochs=epochs, fit_kwargs=fit_kwargs)


def _plan_for(
    model: Any,
    builder: Any,
    x: Any,
    batch_size: int | None,
    strategy: Any,
    num_params: int | None,
    gpu_memory_fraction: float | None,
    peer_timeout_seconds: float | None,
    fit_kwargs: Mapping[str, Any],
    tpu_cores: int | None = None,
) -> Plan:
    import dataclasses

    import tensorflow as tf

    requested = batch_size
    if requested is None and isinstance(x, tf.data.Dataset):
        requested = dataset_batch_size(x)
    elif requested is None and fit_kwargs.get("steps_per_epoch") and x is not None and not batches_itself(x):
        # Keras batches arrays in ceil(training samples / steps_per_epoch) without a batch_size.
        requested = math.ceil(training_samples(x, fit_kwargs) / int(fit_kwargs["steps_per_epoch"]))
    options: dict[str, Any] = {}
    if gpu_memory_fraction is not None:
        options["gpu_memory_fraction"] = gpu_memory_fraction
    snapshot = detect()
    if tpu_cores is not None and snapshot.tpu is not None:
        snapshot = dataclasses.replace(snapshot, tpu=dataclasses.replace(snapshot.tpu, num_cores=tpu_cores))
    the_plan = plan_here(
        os.environ,
        snapshot=snapshot,
        model=None if builder is not None else model,
        num_params=num_params,
        batch_size=requested,
        strategy=strategy,
        peer_timeout_seconds=peer_timeout_seconds,
        **options,
    )
    if isinstance(x, tf.data.Dataset) and requested is None and the_plan.num_replicas > 1:
        raise BatchSizeError(
            "autodist could not find the batch size of the tf.data.Dataset passed as x, and it "
            f"must split each batch over {the_plan.num_replicas} replicas. Expected a dataset "
            "batched with .batch(n), or a batch_size. Pass batch_size= (the global batch) and "
            "autodist re-batches the dataset to it."
        )
    return the_plan


def _model_in_scope(model: Any, builder: Any, x: Any, the_plan: Plan, distribution: Any) -> tuple[Any, bool, list[str]]:
    """The model to train (built, moved or as given), whether it was moved, and extra warnings."""
    if builder is not None:
        trained = build_in_scope(builder, distribution)
        info = describe_model(trained)
        overrides, warnings_ = compile_overrides(
            the_plan.strategy.value,
            info.keras_flavor or the_plan.keras_flavor,
            info.keras_version,
            jit_compile=info.jit_compile,
            steps_per_execution=info.steps_per_execution,
            environ=os.environ,
        )
        apply_compile_overrides(trained, overrides)
        return trained, False, warnings_
    trained, moved = model, False
    if needs_move(model, the_plan, distribution):
        build_from_first_batch(model, x)
        trained, moved = move_into_scope(model, distribution), True
        warn_moved(the_plan)
    apply_compile_overrides(trained, dict(the_plan.compile_overrides))
    return trained, moved, []


def _peer_message(the_plan: Plan, err: Exception) -> str:
    cluster = the_plan.cluster
    assert cluster is not None
    first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return (
        f"{cluster.task_type} {cluster.task_index} lost contact with a peer during multi-worker "
        f"training ({type(err).__name__}: {first_line[:300]}). Expected all "
        f"{cluster.num_workers} workers to run to the end; one stopped or became unreachable. "
        "Find the failed worker's own error in its log. To survive such failures, start the job "
        "with python -m autodist launch --max-restarts 1 (or your cluster manager's restart "
        "policy): training resumes from the last finished epoch through BackupAndRestore."
    )
