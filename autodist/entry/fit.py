"""``autodist.fit``: ``model.fit`` under the plan autodist makes, from the call to ``History``.

The call becomes a frozen :class:`~autodist.core.fit_call.FitCall`, with its global batch worked
out once (:meth:`autodist.core.input_kinds.Input.requested_batch`), and goes to the backend chosen at the
one fork (:func:`autodist.entry.backends.backend_for`): TensorFlow's ``tf.distribute``
(:mod:`autodist.tensorflow.fit`) or Keras 3 on JAX (:mod:`autodist.jax.runtime`). Each runs the same
sequence: plan here, start, place the model, train with the final callback list.

Example:
    >>> import numpy as np, keras, autodist
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> history = autodist.fit(model, np.ones((64, 4)), np.ones((64, 1)), batch_size=16, verbose=0)
    >>> len(history.history["loss"])
    1
"""

from __future__ import annotations

import inspect
import os
from types import MappingProxyType
from typing import Any

from autodist.detection.model_info import is_model
from autodist.entry.backends import backend_for
from autodist.errors import AutodistError
from autodist.fields import a_type
from autodist.log import warn_all
from autodist.process import once
from autodist.planning.arguments import check_fit_arguments
from autodist.planning.plans import StrategyKind
from autodist.core.fit_call import FitCall
from autodist.core.input_kinds import classify

__all__ = ["fit"]


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
    ray_report: bool = True,
    ray_checkpoint: bool = True,
    **fit_kwargs: Any,
) -> Any:
    """Train ``model`` like ``model.fit``, under the strategy autodist picks (JAX: :mod:`autodist.jax.runtime`).

    Args:
        model: a compiled Keras model (Keras 3 or tf_keras), built anywhere; or a zero-argument
            function that builds and compiles one, which autodist calls inside the scope.
        x, y: input data and targets, as for ``model.fit`` (arrays, a ``tf.data.Dataset``, ...).
            In a Ray Train worker ``x`` may be a Ray Data shard (``ray.train.get_dataset_shard``),
            with ``y`` the name of its label column(s) (:mod:`autodist.ray.data`).
        batch_size: the **global** batch. Moved to the nearest multiple of the replica count,
            with a warning. For a batched dataset, the dataset is re-batched to it.
        epochs: as for ``model.fit``.
        strategy: ``"auto"``, a strategy name to force (``"mirrored"``, ...), or ``"tune"``: the
            fastest candidate plan, timed on copies of the model (:mod:`autodist.tensorflow.tuning`).
        num_params, gpu_memory_fraction: the size of a model built by a function, and the share of GPU memory it may use
        (0.9).
        backup_dir: where each task saves its state at every epoch's end and, on SIGTERM, after
            its step, then exits 75: the next start resumes there (:mod:`autodist.resume.preemption`).
            Multi-worker runs save by default (one folder per worker under
            ``AUTODIST_BACKUP_DIR``, which the launcher sets, else a private folder); single-host
            runs given a folder here or ``AUTODIST_BACKUP_DIR``; a Ray Train worker in the
            checkpoints it reports to Ray (:mod:`autodist.resume.guard`). ``False`` turns it off.
        peer_timeout_seconds: multi-worker runs: the longest wait for peers before the job fails
            with an error (default ``AUTODIST_PEER_TIMEOUT`` or 300).
        mixed_precision: Keras's ``mixed_bfloat16`` policy while autodist builds the model (TPU).
        ray_report: in a Ray Train worker, each epoch's metrics go to ``ray.train.report``
            (docs/ray.md); ``False`` leaves reporting to your own callbacks.
        ray_checkpoint: with ``ray_report``, worker 0's model and autodist's saves (what a restarted
            group resumes from) go with each epoch's report; ``False``: the metrics alone.
        **fit_kwargs: passed to ``model.fit`` as they are (``validation_data``, ``callbacks``,
            ``class_weight``, ``sample_weight``, ``initial_epoch``, ``steps_per_epoch``, ...).

    Returns:
        The ``keras.callbacks.History`` of the run. The caller's model object holds the trained
        weights and optimizer state afterwards; for a model built by a function, it is
        ``history.model``. ``history.plan`` is the :class:`~autodist.planning.plans.Plan` that ran.

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
    given = {
        "batch_size": batch_size,
        "epochs": epochs,
        "strategy": strategy,
        "num_params": num_params,
        "gpu_memory_fraction": gpu_memory_fraction,
        "backup_dir": backup_dir,
        "peer_timeout_seconds": peer_timeout_seconds,
        "mixed_precision": mixed_precision,
        "ray_report": ray_report,
        "ray_checkpoint": ray_checkpoint,
    }
    own_fit = _own_fit_of(model)
    if own_fit is not None:  # a script's x.fit( of another library's object (or a Ray trainer's)
        kwargs = {**_set_by_the_caller(given), **fit_kwargs}
        if own_fit == "ray trainer":
            return _fit_ray_trainer(
                model, [name for name, value in {"x": x, "y": y, **kwargs}.items() if value is not None]
            )
        return _fit_as_written(model, (x, y), kwargs)
    builder, checked, kwargs = check_fit_arguments(model, given, fit_kwargs)  # before anything is detected or imported
    read_only = MappingProxyType(kwargs)
    data = classify(x, y)
    call = FitCall(
        model=model,
        builder=builder,
        data=data,
        fit_kwargs=read_only,
        requested_batch=data.requested_batch(checked["batch_size"], read_only),
        **checked,
    )
    return backend_for(os.environ).fit(call, os.environ)


def _own_fit_of(model: Any) -> str | None:
    """What ``model`` is when it is not a Keras model, nor a class or function that builds one, but
    an object with a ``fit`` of its own, which a script's ``x.fit(`` turned into
    ``autodist.fit(x, `` reaches: ``"ray trainer"`` (``TensorflowTrainer``, ``JaxTrainer``, ...: its
    loop's own ``autodist.fit`` calls distribute), ``"library"`` (a scikit-learn estimator, a
    ``LabelEncoder``: nothing of Keras's to distribute), or ``None`` (autodist's own arguments)."""
    if is_model(model) or isinstance(model, type) or not callable(getattr(model, "fit", None)):
        return None
    return "ray trainer" if type(model).__module__.startswith("ray.train.") else "library"


#: The defaults of ``fit``'s own named arguments: a value other than its default was set by the caller.
_DEFAULTS = MappingProxyType(
    {name: p.default for name, p in inspect.signature(fit).parameters.items() if p.kind is p.KEYWORD_ONLY}
)


def _set_by_the_caller(named: dict[str, Any]) -> dict[str, Any]:
    """Of ``fit``'s own named arguments, those the caller set (each other than its default)."""

    def default(name: str, value: Any) -> bool:
        return value is _DEFAULTS[name] or (type(value) is type(_DEFAULTS[name]) and value == _DEFAULTS[name])

    return {name: value for name, value in named.items() if not default(name, value)}


def _fit_as_written(model: Any, data: tuple[Any, Any], kwargs: dict[str, Any]) -> Any:
    """``autodist.fit(x, ...)`` for an object of another library with its own ``fit``: that
    ``fit``, called as the script wrote it before (``x.fit(...)``), its result back; an
    :class:`~autodist.errors.AutodistWarning`, once a process for each class, says that autodist
    distributed nothing there."""
    kind = type(model)
    if once(f"a fit of its own: {kind.__module__}.{kind.__qualname__}"):
        warn_all(
            [
                f"autodist.fit got {a_type(model)} of {kind.__module__.split('.')[0]}, not a Keras model: it "
                f"ran {kind.__name__}.fit as the script wrote it, undistributed, and returned its result. "
                f"autodist distributes a Keras model's fit only; call {kind.__name__}'s fit directly there "
                "to say so."
            ]
        )
    args = list(data)
    while args and args[-1] is None:  # fit(X) stays fit(X): no y it was not given
        args.pop()
    return model.fit(*args, **kwargs)


def _fit_ray_trainer(trainer: Any, given: list[str]) -> Any:
    """``autodist.fit(trainer)``, where a script had ``trainer.fit()``: Ray Train runs the loop,
    whose own ``autodist.fit(model, ...)`` calls distribute the training; the ``Result`` back.
    ``given``: the arguments the call set, all refused (they belong to the loop's calls)."""
    if given:
        raise AutodistError(
            f"autodist.fit got a Ray Train {type(trainer).__name__} with {', '.join(given)}. Expected the "
            "trainer alone: Ray runs train_loop_per_worker, and the data and batch size belong to the "
            "autodist.fit(model, ...) call inside that loop (docs/ray.md). Call autodist.fit(trainer) "
            "(or trainer.fit()) without them."
        )
    return trainer.fit()
