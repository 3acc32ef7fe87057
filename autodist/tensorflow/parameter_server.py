"""ParameterServerStrategy: variables on ``ps`` tasks, steps on ``worker`` tasks, the chief coordinates.

The same script runs on every task:

- on ``worker`` and ``ps`` tasks, :func:`serve` starts a ``tf.distribute.Server`` and serves until
  the chief is gone (finished or failed), then ends the process with exit code 0. A task whose
  chief never appears gives up after the peer timeout, with exit code 1;
- on the chief, :func:`train` (what ``autodist.fit`` calls) checks the input and hands it to
  :func:`fit_keras3` (Keras 3 has no parameter-server ``fit``, keras#18624) or
  :func:`fit_tf_keras`; the workers' input pipelines come from :mod:`autodist.tensorflow.ps_input`. Training is
  asynchronous: each step runs on one worker, against the
  variables on the ps tasks, so one replica is in sync and the global batch is the step's batch.

Worker failures are the coordinator's business: TensorFlow's ``ClusterCoordinator`` re-runs the
steps of a worker that fails on the others, and uses the worker again when it comes back. A ps
failure loses variables: the coordinator raises, and autodist turns that into a ``PeerError``.

Example:
    >>> steps_per_epoch(1000, 64)
    16
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from autodist.detection.cluster import ClusterInfo
from autodist.errors import AutodistError, PeerError
from autodist.jobs.heartbeat import beat
from autodist.log import warn_all
from autodist.core.batching import shared_shuffle_seed
from autodist.core.callbacks import needs_each_step, uses_batch_hooks
from autodist.core.input_kinds import Input, numpy_view
from autodist.tensorflow.ps_input import dataset_fn_for, gather, index_batches, steps_per_epoch, whole_arrays_fn
from autodist.tensorflow.ps_input import first_batch as _first_batch
from autodist.tensorflow.ps_input import pass_samples
from autodist.tensorflow.ps_input import steps as _steps
from autodist.upstream.keras_models import remote_value_finished, symbolic_build, takes_tensor_logs

__all__ = [
    "chief_alive",
    "fit_keras3",
    "fit_tf_keras",
    "serve",
    "serve_if_this_task_serves",
    "steps_per_epoch",
    "train",
    "watch_chief",
]

#: ``fit`` keywords the Keras 3 parameter-server loop cannot honour, with the alternative.
UNSUPPORTED_KERAS3 = {
    "validation_data": "evaluate on the chief after fit (model.evaluate outside the strategy), or use tf_keras "
    "(TF_USE_LEGACY_KERAS=1), whose parameter-server fit validates",
    "validation_split": "split the data yourself and evaluate after fit, or use tf_keras (TF_USE_LEGACY_KERAS=1)",
    "validation_steps": "drop it: the Keras 3 parameter-server loop does not validate",
    "validation_freq": "drop it: the Keras 3 parameter-server loop does not validate",
    "validation_batch_size": "drop it: the Keras 3 parameter-server loop does not validate",
    "class_weight": "turn the class weights into sample_weight= (one weight per sample)",
}


def chief_alive(address: str, timeout: float = 1.0) -> bool:
    """Whether the chief's server accepts a TCP connection at ``host:port``."""
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def watch_chief(
    chief: str,
    name: str,
    peer_timeout: float,
    *,
    poll_seconds: float = 1.0,
    misses: int = 3,
    search_seconds: float = 0.05,
) -> int:
    """Wait until the chief at ``host:port`` has come and gone; return the exit code for this task.

    Returns 0 once the chief was seen and then refused ``misses`` connections in a row (tried
    every ``poll_seconds``), and 1 when it never came within ``peer_timeout`` seconds. Both
    outcomes are printed to stderr.

    Until the chief is first seen, its port is tried every ``search_seconds``. The fast search
    matters: a short chief connects, trains and ends between two slow polls (measured on
    loopback: the chief's port was open for 0.6 s around a 16-step epoch, and with 1 s polls all
    three tasks missed it in about one run of four), and a task that never saw its chief would
    wait out ``peer_timeout`` and then fail with "never came".

    Example:
        >>> watch_chief("127.0.0.1:1", "worker 0", peer_timeout=0.1)  # nothing listens on port 1
        1
    """
    deadline = time.monotonic() + peer_timeout
    seen, missed = False, 0
    while True:
        beat()  # serving is progress, for the launcher's stall watchdog
        if chief_alive(chief):
            seen, missed = True, 0
        elif seen:
            missed += 1
            if missed >= misses:
                print(f"autodist: {name}: the chief is gone; exiting", file=sys.stderr, flush=True)
                return 0
        elif time.monotonic() > deadline:
            print(
                f"autodist: error: {name} waited {peer_timeout:g} s for the chief at {chief}, and it "
                "never came. Expected the chief task to run the same script. Start it, or allow a "
                "longer wait with AUTODIST_PEER_TIMEOUT.",
                file=sys.stderr,
                flush=True,
            )
            return 1
        time.sleep(poll_seconds if seen else search_seconds)


def serve_if_this_task_serves(plan: Any) -> None:
    """On a parameter-server plan's ``worker`` and ``ps`` tasks, serve and end the process
    (:func:`serve`); on any other task or plan, return. Called by ``fit``, ``init`` and
    ``@distributed`` before they build the strategy (building never ends the process)."""
    cluster = plan.cluster
    if plan.type.asynchronous and cluster is not None and cluster.task_type in ("worker", "ps"):
        serve(cluster, plan.peer_timeout_seconds)


def serve(cluster: ClusterInfo, peer_timeout: float) -> NoReturn:
    """Serve this worker or ps task until the chief is gone, then end the process.

    A TensorFlow server cannot be stopped from Python and keeps the process alive, so the process
    ends with ``os._exit`` and the code from :func:`watch_chief`: 0 once the chief has come and
    gone, 1 if it never came within ``peer_timeout`` seconds.
    """
    import tensorflow as tf

    tf.distribute.Server(
        tf.train.ClusterSpec(cluster.cluster_spec),
        job_name=cluster.task_type,
        task_index=cluster.task_index,
        protocol=cluster.rpc_layer or "grpc",
        start=True,
    )
    chief = cluster.cluster_spec["chief"][0]
    name = f"{cluster.task_type} {cluster.task_index}"
    print(
        f"autodist: {name} serving the parameter-server job until the chief at {chief} finishes",
        file=sys.stderr,
        flush=True,
    )
    code = watch_chief(chief, name, peer_timeout)
    sys.stdout.flush()
    os._exit(code)


def train(model: Any, strategy: Any, data: Input, the_plan: Any, epochs: int, fit_kwargs: Mapping[str, Any]) -> Any:
    """``autodist.fit`` on a parameter-server chief: the input checked and read as arrays, then
    Keras 3's loop (:func:`fit_keras3`) or tf_keras's own ``fit`` (:func:`fit_tf_keras`).

    Raises:
        AutodistError: for an input the workers cannot rebuild (a generator, a PyDataset).
    """
    assert the_plan.global_batch_size is not None
    form = data.graph_form()
    if form is None:
        raise AutodistError(
            f"Parameter-server training cannot read a {data.name} as its input: the "
            "workers rebuild the input pipeline from its TensorFlow graph, and Python objects "
            "(generators, keras.utils.PyDataset) stay on the chief. Expected numpy arrays (or "
            "pandas), or a tf.data.Dataset built from TensorFlow ops. Pass the data as arrays, "
            "or build a tf.data pipeline from tensors or files."
        )
    kwargs = dict(fit_kwargs)
    if "sample_weight" in kwargs:
        kwargs["sample_weight"] = numpy_view(kwargs["sample_weight"])
    loop = fit_tf_keras if the_plan.keras_flavor == "tf_keras" else fit_keras3
    x, y = form
    return loop(model, strategy, x, y, global_batch_size=the_plan.global_batch_size, epochs=epochs, fit_kwargs=kwargs)


def fit_keras3(
    model: Any, strategy: Any, x: Any, y: Any, *, global_batch_size: int, epochs: int, fit_kwargs: Mapping[str, Any]
) -> Any:
    """Train a Keras 3 model with ``ClusterCoordinator``: the model's own ``train_step``, loss,
    optimizer and metrics; every training callback hook (batch-level ones once per step, in
    order: see :func:`_run_epoch`); returns a ``History`` like ``fit``."""
    import keras
    import tensorflow as tf

    for name, alternative in UNSUPPORTED_KERAS3.items():
        if fit_kwargs.get(name) is not None and fit_kwargs.get(name) != 0.0:
            raise AutodistError(
                f"fit({name}=...) is not supported for Keras 3 under parameter-server training: "
                f"Keras 3 has no parameter-server fit (keras#18624) and autodist's loop trains only. "
                f"Fix: {alternative}."
            )
    fit_kwargs = dict(fit_kwargs)  # the caller's keywords stay as they are
    sample_weight = fit_kwargs.pop("sample_weight", None)
    verbose = fit_kwargs.pop("verbose", "auto")
    initial_epoch = int(fit_kwargs.pop("initial_epoch", 0))
    steps = _steps(x, global_batch_size, fit_kwargs.pop("steps_per_epoch", None))
    shuffle = bool(fit_kwargs.pop("shuffle", True))
    user_callbacks = fit_kwargs.pop("callbacks", None) or []
    # batching is the plan's; steps are scheduled one by one; of the unsupported, only empty values (None, 0.0) are left
    for ignored in ("batch_size", "steps_per_execution", *UNSUPPORTED_KERAS3):
        fit_kwargs.pop(ignored, None)
    if fit_kwargs:
        raise AutodistError(
            f"fit keywords {sorted(fit_kwargs)} are not supported for Keras 3 under parameter-server "
            "training. Expected callbacks, verbose, epochs, initial_epoch, steps_per_epoch, shuffle, "
            "sample_weight. Drop them, or use tf_keras (TF_USE_LEGACY_KERAS=1)."
        )

    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        # Build the model, its metrics and the optimizer's slots here, on the chief: variables
        # created inside a scheduled step would be created on a worker.
        if not symbolic_build(model, _first_batch(x, y, sample_weight, min(global_batch_size, 8))):
            raise AutodistError(
                "Keras 3 parameter-server training builds the model on the chief from one batch, and "
                "this Keras has no Trainer._symbolic_build (the warning above names what is missing). "
                "Expected Keras 3.3 to 3.15. Use tf_keras for parameter-server training "
                "(TF_USE_LEGACY_KERAS=1), or strategy='multi_worker_mirrored'."
            )
        model.optimizer.build(model.trainable_variables)
    train_step, step_args = _scheduled_step(
        model, strategy, coordinator, x, y, sample_weight, global_batch_size, shuffle
    )

    callbacks = keras.callbacks.CallbackList(
        user_callbacks, add_history=True, add_progbar=False, model=model, epochs=epochs, steps=steps, verbose=0
    )
    history = next(cb for cb in callbacks.callbacks if isinstance(cb, keras.callbacks.History))
    per_step = _per_step(user_callbacks)
    model.stop_training = False
    callbacks.on_train_begin()
    logs: dict[str, float] = {}
    try:
        for epoch in range(initial_epoch, epochs):
            for metric in model.metrics:
                metric.reset_state()
            callbacks.on_epoch_begin(epoch)
            started = time.monotonic()
            _run_epoch(model, coordinator, train_step, step_args, callbacks, steps, per_step=per_step)
            logs = {name: float(value) for name, value in model.get_metrics_result().items()}
            if verbose not in (0, "0"):
                print(
                    f"Epoch {epoch + 1}/{epochs} - {steps} steps - {time.monotonic() - started:.1f}s - "
                    + " - ".join(f"{name}: {value:.4f}" for name, value in logs.items()),
                    flush=True,
                )
            callbacks.on_epoch_end(epoch, logs)
            if model.stop_training:
                break
    except (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.CancelledError) as err:
        raise PeerError(_ps_lost(err)) from err
    callbacks.on_train_end(logs)
    model.history = history
    return history


def _per_step(callbacks: list[Any]) -> bool:
    """Whether batch hooks must run at every step; warns with the cost when they must."""
    names = [type(callback).__name__ for callback in callbacks if needs_each_step(callback)]
    if names:
        warn_all(
            [
                f"{names} run batch-level hooks, so autodist's parameter-server loop waits for each "
                "step's result before scheduling the next, and steps no longer overlap across workers "
                "(slower than asynchronous training). Move their work to on_epoch_end to keep it "
                "asynchronous."
            ]
        )
    return bool(names)


def _scheduled_step(
    model: Any,
    strategy: Any,
    coordinator: Any,
    x: Any,
    y: Any,
    sample_weight: Any,
    global_batch_size: int,
    shuffle: bool,
) -> tuple[Any, Callable[[], tuple[Any, ...]]]:
    """The step the chief schedules, and the function that gives each step's arguments.

    Arrays: every worker holds the arrays, and the chief picks each step's samples
    (:func:`index_batches`), so each epoch trains on every sample once, as ``model.fit`` does,
    whichever worker runs which step (a step re-run after a worker failure gets the same
    samples). A dataset: each worker reads its own shard without end (warned: an epoch is then
    a number of steps, not one pass).
    """
    import tensorflow as tf

    if isinstance(x, tf.data.Dataset):
        warn_all([_SHARDS_NOTE])
        dataset_fn = dataset_fn_for(x, y, sample_weight, global_batch_size=global_batch_size, shuffle=shuffle)
        iterator = iter(
            coordinator.create_per_worker_dataset(lambda: strategy.distribute_datasets_from_function(dataset_fn))
        )

        @tf.function
        def step_on_shard(batches: Any) -> Any:
            return strategy.run(model.train_step, args=(next(batches),))

        return step_on_shard, lambda: (iterator,)
    dataset_fn = whole_arrays_fn(x, y, sample_weight)
    iterator = iter(
        coordinator.create_per_worker_dataset(lambda: strategy.distribute_datasets_from_function(dataset_fn))
    )
    num_samples = pass_samples(x) or 0
    if num_samples == 0:
        raise AutodistError(
            "autodist.fit got arrays with 0 samples. Expected at least one sample to train on. Pass the training data."
        )
    batches = index_batches(num_samples, global_batch_size, shuffle=shuffle, seed=shared_shuffle_seed())

    @tf.function(reduce_retracing=True)
    def step_on_chosen(arrays: Any, indices: Any) -> Any:
        return strategy.run(model.train_step, args=(gather(indices, next(arrays)),))

    return step_on_chosen, lambda: (iterator, tf.constant(next(batches), tf.int64))


_SHARDS_NOTE = (
    "Parameter-server training with a tf.data.Dataset: each worker reads its own shard of it "
    "without end, and an epoch is steps_per_epoch steps on whichever worker is free. So within an "
    "epoch a sample can be trained on twice or not at all (model.fit trains on each once), while "
    "over the run every sample is trained on at the same rate. Pass the data as arrays to train "
    "on each sample exactly once per epoch."
)


def _run_epoch(
    model: Any,
    coordinator: Any,
    train_step: Any,
    step_args: Callable[[], tuple[Any, ...]],
    callbacks: Any,
    steps: int,
    *,
    per_step: bool,
) -> None:
    """Schedule one epoch's steps on the workers and wait for them.

    Without batch-level callbacks, all steps are in flight at once (asynchronous training).
    With them (``ModelCheckpoint(save_freq=N)``, ``TerminateOnNaN``, ...), each step runs its
    hooks in order, as ``model.fit`` does: ``on_train_batch_begin``, the step, then
    ``on_train_batch_end`` with that step's logs, which waits for the step's result, so steps no
    longer overlap. ``model.stop_training`` set by a hook ends the epoch after that step.
    """
    if not per_step:
        results = [coordinator.schedule(train_step, args=step_args()) for _ in range(steps)]
        finished = 0
        while not coordinator.done():  # the launcher's stall watchdog hears of every finished step
            now = remote_value_finished(results)
            if now is None or now > finished:
                beat()
            finished = now or 0
            time.sleep(0.5)
        coordinator.join()
        return
    for step in range(steps):
        callbacks.on_train_batch_begin(step)
        result = coordinator.schedule(train_step, args=step_args())
        logs = {name: float(value) for name, value in result.fetch().items()}
        callbacks.on_train_batch_end(step, logs)
        if model.stop_training:
            break
    coordinator.join()


def fit_tf_keras(
    model: Any, strategy: Any, x: Any, y: Any, *, global_batch_size: int, epochs: int, fit_kwargs: Mapping[str, Any]
) -> Any:
    """tf_keras's own parameter-server ``fit``, fed by a ``DatasetCreator`` built from the input."""
    import tensorflow as tf
    import tf_keras

    refused = [
        type(callback).__name__
        for callback in fit_kwargs.get("callbacks") or []
        if uses_batch_hooks(callback) and not takes_tensor_logs(callback)
    ]
    if refused:
        raise AutodistError(
            f"tf_keras refuses batch-level callbacks under parameter-server training, and "
            f"{refused} override on_*_batch_* hooks. Expected epoch-level callbacks only. Fix: "
            "move their work to on_epoch_end, or use Keras 3 (unset TF_USE_LEGACY_KERAS), whose "
            "autodist parameter-server loop runs batch hooks once per step, in order."
        )
    fit_kwargs = dict(fit_kwargs)  # the caller's keywords stay as they are
    sample_weight = fit_kwargs.pop("sample_weight", None)
    shuffle = bool(fit_kwargs.pop("shuffle", True))
    fit_kwargs.pop("batch_size", None)
    steps = _steps(x, global_batch_size, fit_kwargs.pop("steps_per_epoch", None))

    creator = tf_keras.utils.experimental.DatasetCreator(
        dataset_fn_for(
            x, y, sample_weight, global_batch_size=global_batch_size, shuffle=shuffle, seed=shared_shuffle_seed()
        )
    )
    try:
        with strategy.scope():
            return model.fit(creator, epochs=epochs, steps_per_epoch=steps, **fit_kwargs)
    except (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.CancelledError) as err:
        raise PeerError(_ps_lost(err)) from err


def _ps_lost(err: Exception) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    telling = [line for line in lines if "/job:" in line or "unavailable" in line.lower()]
    first = (telling or lines or [type(err).__name__])[0][:300]
    return (
        f"Parameter-server training lost a task it cannot do without ({type(err).__name__}: {first}). "
        "Expected every ps task to stay up: a ps holds part of the variables, so its loss ends the "
        "job (a lost worker's steps are re-run on the others). Restart the job, for example with "
        "python -m autodist launch --max-restarts 1, and check the failed task's own log."
    )
