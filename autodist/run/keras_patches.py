"""Act: the patches behind the Keras 3 workarounds of :mod:`autodist.planning.keras_compat`.

:mod:`autodist.planning.keras_compat` holds each workaround's upstream bug, gate and reason, and decides
which a plan needs; this module applies them, once per process, and only here: Keras's
``Variable.assign_add``, its TensorFlow trainer's symbolic build and per-replica reduce, and
BatchNormalization's moving statistics. :func:`apply_workarounds` is called with a plan's names
by :func:`autodist.run.strategies.start`; :func:`build_from_generator` by ``fit``.

Example:
    >>> apply_workarounds(())
    []
"""

from __future__ import annotations

import collections.abc
import inspect
from collections.abc import Iterable, Iterator
from typing import Any

from autodist.detection.model_info import keras_flavor_of
from autodist.planning.keras_compat import PATCHES, TRAINER_PATCHES, WORKAROUNDS

__all__ = [
    "apply_workarounds",
    "build_from_generator",
    "patch_aggregating_variable_updates",
    "patch_batchnorm_moving_statistics",
    "patch_multi_worker_trainer",
]

_PATCHED: dict[str, Any] = {}


def patch_aggregating_variable_updates() -> bool:
    """Make Keras 3 ``assign_add``/``assign_sub`` on SUM-aggregated distributed variables
    (AggregatingVariable, CachingVariable, MirroredVariable) a true delta update.

    Idempotent. Other variables keep Keras's own code path. Returns whether the patch is in place.
    """
    if "assign_add" in _PATCHED:
        return True
    import tensorflow as tf
    from keras.src.backend.tensorflow import core
    from tensorflow.python.distribute import ps_values, values

    original_add = core.Variable.assign_add
    original_sub = core.Variable.assign_sub

    def _delta(self: Any, value: Any) -> Any:
        value = self._convert_to_tensor(value, dtype=self._dtype)
        return tf.cast(value, self._value.dtype)

    # AggregatingVariable: CentralStorage (and PS) SUM-aggregated state. CachingVariable: every
    # variable on a ps task, where Keras's read-modify-write races between workers.
    # MirroredVariable with SUM aggregation: Mirrored and MultiWorkerMirrored counters.
    shared = (ps_values.AggregatingVariable, ps_values.CachingVariable)

    def summed(variable: Any) -> bool:
        inner = getattr(variable, "_value", None)
        if isinstance(inner, shared):
            return True
        return isinstance(inner, values.MirroredVariable) and inner.aggregation == tf.VariableAggregation.SUM

    def assign_add(self: Any, value: Any) -> Any:
        if summed(self):
            return self._value.assign_add(_delta(self, value))
        return original_add(self, value)

    def assign_sub(self: Any, value: Any) -> Any:
        if summed(self):
            return self._value.assign_sub(_delta(self, value))
        return original_sub(self, value)

    core.Variable.assign_add = assign_add
    core.Variable.assign_sub = assign_sub
    _PATCHED.update(assign_add=original_add, assign_sub=original_sub)
    return True


#: BatchNormalization's non-trainable statistics (renorm's too).
_MOVING_STATISTICS = ("moving_mean", "moving_variance", "moving_stddev", "renorm_mean", "renorm_stddev")


def patch_batchnorm_moving_statistics() -> bool:
    """Create Keras 3 BatchNormalization's moving statistics with ``aggregation="mean"`` (the
    layers built from now on). Idempotent; other weights keep Keras's own settings."""
    if "batchnorm" in _PATCHED:
        return True
    from keras.src.layers.normalization.batch_normalization import BatchNormalization

    original = BatchNormalization.add_weight

    def add_weight(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("name") in _MOVING_STATISTICS and kwargs.get("aggregation") in (None, "none"):
            kwargs["aggregation"] = "mean"
        return original(self, *args, **kwargs)

    BatchNormalization.add_weight = add_weight  # type: ignore[method-assign]
    _PATCHED["batchnorm"] = original
    return True


def patch_seed_state_aggregation() -> bool:
    """Create Keras 3 random layers' seed state with ``aggregation="only_first_replica"`` when a
    CentralStorageStrategy or ParameterServerStrategy is current (the layers built from now on):
    their variables are AggregatingVariables, which refuse Keras's update in each replica. Every
    replica computes the same next seed; the first one's is kept. Idempotent."""
    if "seed_state" in _PATCHED:
        return True
    import tensorflow as tf
    from keras.src.backend.tensorflow import core

    original = core.Variable._map_aggregation
    aggregating = (tf.distribute.experimental.CentralStorageStrategy, tf.distribute.experimental.ParameterServerStrategy)

    def _map_aggregation(self: Any, aggregation: Any) -> Any:
        if aggregation == "none" and self.name == "seed_generator_state" and isinstance(tf.distribute.get_strategy(), aggregating):
            aggregation = "only_first_replica"
        return original(self, aggregation)

    core.Variable._map_aggregation = _map_aggregation
    _PATCHED["seed_state"] = original
    return True


def _multi_worker(strategy: Any) -> bool:
    from keras.src.backend.tensorflow import trainer

    return bool(trainer._collective_all_reduce_multi_worker(strategy))


def _mirrored(strategy: Any) -> bool:
    import tensorflow as tf

    return isinstance(strategy, (tf.distribute.MirroredStrategy, tf.distribute.MultiWorkerMirroredStrategy))


_SYMBOLIC_BUILD: set[str] = set()  # the behaviours of the patched _maybe_symbolic_build in force


def _fully_built(model: Any) -> bool:
    """Whether a compiled Keras 3 model's layers, loss, metrics and optimizer are all built."""
    parts = (model._compile_metrics, model._compile_loss, model.optimizer)
    return all(layer.built for layer in model._flatten_layers()) and all(
        part is None or part.built for part in parts
    )


def _first_batch(epoch_iterator: Any) -> Any:
    """The first batch of a Keras 3 TF epoch iterator, whatever the shape of its items.

    Recent Keras 3 releases iterate the epoch iterator itself and yield ``(begin_step,
    end_step, data_iterator)``; earlier ones yield ``(step, data_iterator)`` from
    ``enumerate_epoch()``: the data iterator is the item's last part in both.
    """
    items = epoch_iterator if hasattr(epoch_iterator, "__iter__") else epoch_iterator.enumerate_epoch()
    item = next(iter(items))
    source = item[-1] if isinstance(item, tuple) else item
    return next(source) if hasattr(source, "__next__") else source


def _install_symbolic_build() -> None:
    """Replace Keras 3's ``_maybe_symbolic_build`` once; what it does follows ``_SYMBOLIC_BUILD``."""
    from keras.src import tree
    from keras.src.backend.tensorflow import trainer

    if "symbolic_build" in _PATCHED:
        return
    original_build = trainer.TensorFlowTrainer._maybe_symbolic_build

    def _maybe_symbolic_build(self: Any, iterator: Any = None, data_batch: Any = None) -> Any:
        if iterator is None or self._distribute_strategy is None:
            return original_build(self, iterator=iterator, data_batch=data_batch)
        if "symbolic_build_reads_input" in _SYMBOLIC_BUILD and _fully_built(self):
            return None  # nothing to build: read nothing from the input
        if "first_batch_symbolic_build" not in _SYMBOLIC_BUILD or not _mirrored(self.distribute_strategy):
            return original_build(self, iterator=iterator, data_batch=data_batch)
        import tensorflow as tf

        strategy = self.distribute_strategy
        if not (hasattr(iterator, "__iter__") or hasattr(iterator, "enumerate_epoch")):
            return original_build(self, iterator=iterator, data_batch=data_batch)  # a shape we do not know
        data_batch = tree.map_structure(
            lambda v: strategy.experimental_local_results(v)[0]
            if isinstance(v, tf.distribute.DistributedValues)
            else v,
            _first_batch(iterator),
        )
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    trainer.TensorFlowTrainer._maybe_symbolic_build = _maybe_symbolic_build
    _PATCHED["symbolic_build"] = original_build


def apply_workarounds(names: Iterable[str]) -> list[str]:
    """Apply the named workarounds, a plan's ``keras_workarounds``: the one place the act layer
    puts patches in. Idempotent; returns the names in place (``apply_workarounds(())`` is ``[]``).
    """
    wanted = [name for name in PATCHES if name in set(names)]
    if "aggregating_variable_updates" in wanted:
        patch_aggregating_variable_updates()
    if set(wanted) & set(TRAINER_PATCHES):
        _patch_trainer(wanted)
    if "batchnorm_moving_statistics" in wanted:
        patch_batchnorm_moving_statistics()
    if "seed_state_aggregation" in wanted:
        patch_seed_state_aggregation()
    return wanted


def patch_multi_worker_trainer(keras_version: str | None) -> list[str]:
    """Apply the trainer workarounds active for ``keras_version`` (tests and scripts that patch
    by hand; autodist itself applies a plan's with :func:`apply_workarounds`). Idempotent.

    Under any strategy, a model with nothing left to build reads nothing for its symbolic build;
    the first-batch build acts under (MultiWorker)MirroredStrategy; the scalar reduce only in
    multi-worker mode. Everything else keeps Keras's own code. Returns the patches in place.
    """
    return _patch_trainer([name for name in TRAINER_PATCHES if WORKAROUNDS[name].is_active(keras_version)])


def _patch_trainer(names: list[str]) -> list[str]:
    from keras.src import tree
    from keras.src.backend.tensorflow import trainer

    applied = [name for name in ("first_batch_symbolic_build", "symbolic_build_reads_input") if name in names]
    if applied:
        _install_symbolic_build()
    _SYMBOLIC_BUILD.update(applied)
    if "multi_worker_scalar_reduce" in names:
        if "reduce_per_replica" not in _PATCHED:
            original_reduce = trainer.reduce_per_replica

            def _rank(value: Any) -> int | None:
                sample = value.values[0] if hasattr(value, "values") else value
                shape = getattr(sample, "shape", None)
                return None if shape is None else shape.rank

            def reduce_per_replica(values: Any, strategy: Any, reduction: str) -> Any:
                if reduction not in ("auto", "mean") or not _multi_worker(strategy):
                    return original_reduce(values, strategy, reduction)

                def reduce_one(value: Any) -> Any:
                    if _rank(value) == 0:
                        return strategy.reduce("MEAN", value, axis=None)
                    return original_reduce(value, strategy, reduction)

                return tree.map_structure(reduce_one, values)

            trainer.reduce_per_replica = reduce_per_replica
            _PATCHED["reduce_per_replica"] = original_reduce
        applied.append("multi_worker_scalar_reduce")
    return applied


def build_from_generator(model: Any, x: Any, distribution: Any, the_plan: Any) -> Any:
    """Build a Keras 3 model from a generator's first batch, and return the generator with that
    batch put back, when the plan has the ``symbolic_build_reads_input`` workaround (Keras would
    otherwise read and lose it). Anything else comes back as it is."""
    if not (inspect.isgenerator(x) or isinstance(x, collections.abc.Iterator)) or keras_flavor_of(model) != "keras3":
        return x
    if "symbolic_build_reads_input" not in the_plan.keras_workarounds:
        return x
    from keras.src.trainers.data_adapters import data_adapter_utils

    first = next(x)
    with distribution.scope():
        model._symbolic_build(data_batch=data_adapter_utils.unpack_x_y_sample_weight(first))

    def put_back() -> Iterator[Any]:  # a generator, as Keras accepts
        yield first
        yield from x

    return put_back()
