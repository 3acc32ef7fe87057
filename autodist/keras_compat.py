"""Workarounds for Keras 3 bugs under ``tf.distribute``, each gated on the versions tested.

Every workaround here names its upstream bug, the Keras versions it was tested on, and a test in
``tests/test_keras_compat.py`` that reproduces the bug with plain Keras. That test fails the day
the bug is fixed upstream, which is the signal to delete the workaround.

Gating: a workaround is active for Keras ``>= first_affected`` up to the newest *minor* release
it was tested on (``last_tested``). On a newer Keras, where the bug may or may not be fixed, it
fails safe: each workaround here is harmless where its bug is fixed (``if_fixed`` says why), so
it stays applied, and autodist warns once (an ``AutodistWarning``) that names the untested
version. Switching them off there would silently bring back the wrong numbers they exist to
prevent. ``AUTODIST_KERAS_COMPAT=force`` applies every workaround whatever the version;
``AUTODIST_KERAS_COMPAT=off`` applies none (to check whether one is still needed).

Decided once, in the plan (:func:`autodist.choosers.choose_workarounds` names the :data:`PATCHES`
a plan needs; :func:`compile_overrides` gives the compile settings), and applied by the act layer
only: :func:`apply_workarounds` from ``activation.start``, :func:`build_from_generator` from ``fit``.

Example:
    >>> WORKAROUNDS["aggregating_variable_updates"].is_active("3.15.1", environ={})
    True
"""

from __future__ import annotations

import os
import re
import warnings
import collections.abc
import inspect
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from autodist.model_info import keras_flavor_of
from autodist.settings import KERAS_COMPAT_ENV, keras_compat_mode

__all__ = [
    "PATCHES",
    "WORKAROUNDS",
    "Workaround",
    "apply_workarounds",
    "build_from_generator",
    "compile_overrides",
    "patch_aggregating_variable_updates",
    "patch_multi_worker_trainer",
]

_UNTESTED_WARNED: set[str] = set()


def version_tuple(version: str | None) -> tuple[int, ...]:
    """``"3.15.1"`` → ``(3, 15, 1)``; pre-release suffixes are ignored."""
    if not version:
        return ()
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


@dataclass(frozen=True)
class Workaround:
    """One upstream bug that autodist works around."""

    name: str
    upstream: str
    summary: str
    first_affected: str
    last_tested: str

    if_fixed: str = ""

    def is_active(self, keras_version: str | None, environ: Mapping[str, str] | None = None) -> bool:
        """Whether to apply it for this Keras 3 version (see the module docstring)."""
        env = os.environ if environ is None else environ
        mode = keras_compat_mode(env)
        if mode == "off":
            return False
        if mode == "force":
            return True
        version = version_tuple(keras_version)
        if not version or version < version_tuple(self.first_affected):
            return False
        if version[:2] > version_tuple(self.last_tested)[:2]:
            warn_untested(str(keras_version))
            return bool(self.if_fixed)
        return True


def warn_untested(keras_version: str) -> None:
    """Warn once per process that this Keras is newer than the workarounds were tested on."""
    if keras_version in _UNTESTED_WARNED:
        return
    _UNTESTED_WARNED.add(keras_version)
    from autodist.errors import AutodistWarning

    newest = max((w.last_tested for w in WORKAROUNDS.values()), key=version_tuple)
    kept = sorted(w.name for w in WORKAROUNDS.values() if w.if_fixed)
    warnings.warn(
        f"Keras {keras_version} is newer than the Keras versions autodist's workarounds for Keras "
        f"bugs under tf.distribute were tested on (up to {newest}). They stay applied, because "
        f"each is harmless where its bug is fixed: {', '.join(kept)}. To check whether Keras "
        f"{keras_version} still needs them, run with {KERAS_COMPAT_ENV}=off and compare History and "
        "weights with a single-device model.fit; set it to force to silence this warning.",
        AutodistWarning,
        stacklevel=3,
    )


WORKAROUNDS: dict[str, Workaround] = {
    w.name: w
    for w in (
        Workaround(
            name="aggregating_variable_updates",
            upstream="Keras 3 Variable.assign_add is assign(self + value)",
            summary=(
                "Under CentralStorageStrategy (and ParameterServerStrategy) metric state lives in "
                "AggregatingVariables with SUM aggregation. Keras 3 implements assign_add as "
                "assign(old + delta), so N replicas write N*old + sum(deltas): History and "
                "evaluate report wrong loss and metrics. Under ParameterServerStrategy the same "
                "read-modify-write on CachingVariables races between workers and loses updates "
                "(per-epoch metrics vary from run to run). Under MirroredStrategy and "
                "MultiWorkerMirroredStrategy a variable created with aggregation='sum' (a counter "
                "in a custom layer) doubles its old value at every update on 2 replicas. autodist "
                "routes assign_add/assign_sub on all three to TensorFlow's own delta updates."
            ),
            first_affected="3.0.0",
            last_tested="3.15.1",
            if_fixed="a delta update is TensorFlow's own assign_add: right whether or not Keras's is",
        ),
        Workaround(
            name="mirrored_steps_per_execution",
            upstream="keras-team/keras#19246",
            summary=(
                "Under MirroredStrategy, steps_per_execution > 1 fails with 'You must feed a value "
                "for placeholder tensor'. autodist runs with steps_per_execution=1 there."
            ),
            first_affected="3.0.0",
            last_tested="3.15.1",
            if_fixed="steps_per_execution=1 trains the same steps, only with more calls (warned)",
        ),
        Workaround(
            name="mirrored_jit_compile",
            upstream="Keras 3 + MirroredStrategy + XLA",
            summary=(
                "Under MirroredStrategy, jit_compile=True fails with 'Trying to access resource "
                "... located in device CPU:1 from device CPU:0'. autodist runs with "
                "jit_compile=False there."
            ),
            first_affected="3.0.0",
            last_tested="3.15.1",
            if_fixed="without XLA the same model trains, only without compilation (warned)",
        ),
        Workaround(
            name="first_batch_symbolic_build",
            upstream="keras-team/keras#20585",
            summary=(
                "fit/evaluate/predict's _maybe_symbolic_build averages the first data batch across "
                "replicas (strategy.reduce('MEAN', PerReplica)) only to learn its shapes. Under "
                "MultiWorkerMirroredStrategy that fails ('Attempt to convert a value (PerReplica...) "
                "to a Tensor'); under MirroredStrategy a first batch that does not split evenly "
                "(validation data, a data set smaller than the batch) fails with 'AddN must have "
                "the same size and shape'. autodist builds from the first local replica's batch."
            ),
            first_affected="3.0.0",
            last_tested="3.15.1",
            if_fixed="the build only needs the batch's shapes, which one replica's batch has; an "
            "epoch iterator of another shape falls back to Keras's own build",
        ),
        Workaround(
            name="symbolic_build_reads_input",
            upstream="Keras 3 TensorFlowTrainer._maybe_symbolic_build",
            summary=(
                "Under any tf.distribute strategy, fit reads the first batch of its input to build "
                "the model, then starts the input over, even when the model, loss, metrics and "
                "optimizer are all built. A tf.data pipeline or a PyDataset starts over; a Python "
                "generator cannot, so the batches read (and prefetched) are lost: 32 of 100 samples "
                "never seen and 32 seen twice in the first epoch (Mirrored and CentralStorage, 2 "
                "replicas, batch 16). autodist builds the model from the generator's first batch, "
                "puts that batch back, and skips the read when nothing needs building."
            ),
            first_affected="3.0.0",
            last_tested="3.15.1",
            if_fixed="skipping the read when nothing needs building changes nothing Keras uses",
        ),
        Workaround(
            name="multi_worker_scalar_reduce",
            upstream="tensorflow/tensorflow#72388",
            summary=(
                "Under MultiWorkerMirroredStrategy, reduce_per_replica averages each step's logs "
                "with strategy.reduce('MEAN', v, axis=0); the logs are scalars, so it fails with "
                "'Invalid reduction dimension 0 for input with 0 dimensions'. autodist reduces "
                "rank-0 values with axis=None; other values keep Keras's path."
            ),
            first_affected="3.0.0",
            last_tested="3.15.1",
            if_fixed="a scalar's mean over workers with axis=None is the mean Keras means to take",
        ),
    )
}

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
    if isinstance(steps_per_execution, int) and steps_per_execution > 1 and fix.is_active(
        keras_version, environ
    ):
        overrides["steps_per_execution"] = 1
        warnings.append(
            f"steps_per_execution={steps_per_execution} is set to 1 under {strategy}: Keras "
            f"{keras_version} fails there with 'You must feed a value for placeholder tensor' "
            "(keras-team/keras#19246)."
        )
    return overrides, warnings


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
    if set(wanted) & set(_TRAINER_PATCHES):
        _patch_trainer(wanted)
    return wanted


#: The workarounds applied by patching Keras (the others change compile settings).
PATCHES = ("aggregating_variable_updates", "first_batch_symbolic_build", "symbolic_build_reads_input", "multi_worker_scalar_reduce")
_TRAINER_PATCHES = PATCHES[1:]


def patch_multi_worker_trainer(keras_version: str | None) -> list[str]:
    """Apply the trainer workarounds active for ``keras_version`` (tests and scripts that patch
    by hand; autodist itself applies a plan's with :func:`apply_workarounds`). Idempotent.

    Under any strategy, a model with nothing left to build reads nothing for its symbolic build;
    the first-batch build acts under (MultiWorker)MirroredStrategy; the scalar reduce only in
    multi-worker mode. Everything else keeps Keras's own code. Returns the patches in place.
    """
    return _patch_trainer([name for name in _TRAINER_PATCHES if WORKAROUNDS[name].is_active(keras_version)])


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
