"""Workarounds for Keras 3 bugs under ``tf.distribute``, each gated on the releases it affects.

Every workaround here names its upstream bug, the Keras releases that have it (measured on each
release of the support matrix, docs/support-matrix.md), the touches of private code it needs
(:mod:`autodist.upstream.surface`), and a test in ``tests/test_keras_compat.py`` that reproduces
the bug with plain Keras where the table says it is, and finds it absent where the table says it
is not. That test fails the day a release behaves otherwise, which is the signal to change the
table (or delete the workaround).

Gating: a workaround is active on the releases of its ``affected`` ranges (``(first, fixed_in)``,
``fixed_in`` excluded; ``None``: not fixed in the newest release tested). On a Keras newer than
every release it was tested on (``last_tested``), where the bug may or may not be fixed, it
fails safe: each workaround here is harmless where its bug is fixed (``if_fixed`` says why), so
it stays applied, and autodist warns once (an ``AutodistWarning``) that names the untested
version. Switching them off there would silently bring back the wrong numbers they exist to
prevent. ``AUTODIST_KERAS_COMPAT=force`` applies every workaround whatever the version;
``AUTODIST_KERAS_COMPAT=off`` applies none (to check whether one is still needed).

This module decides, and is pure: :func:`autodist.planning.choosers.choose_workarounds` names the
:data:`PATCHES` a plan needs; :func:`compile_overrides` gives the compile settings. The patches
themselves are the act layer's, in :mod:`autodist.tensorflow.keras_patches`
(:func:`~autodist.tensorflow.keras_patches.apply_workarounds` from :func:`autodist.tensorflow.strategies.start`).

Example:
    >>> WORKAROUNDS["aggregating_variable_updates"].is_active("3.15.1", environ={})
    True
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from autodist.errors import AutodistError, AutodistWarning
from autodist.settings import KERAS_COMPAT_ENV, keras_compat_setting
from autodist.upstream.versions import NEWEST_TESTED, version_tuple
from autodist.process import once

__all__ = [
    "KEPT_STRATEGY_ORDER",
    "PATCHES",
    "WORKAROUNDS",
    "Workaround",
    "compile_overrides",
    "kept_strategy_order",
    "refused_strategy",
    "version_tuple",
    "warn_untested",
]

_NEWEST = NEWEST_TESTED["keras"]


@dataclass(frozen=True)
class Workaround:
    """One upstream bug that autodist works around, and the Keras releases that have it."""

    name: str
    upstream: str
    summary: str
    affected: tuple[tuple[str, str | None], ...]  # (first release, first release fixed or None)
    touches: tuple[str, ...] = ()  # the touches of autodist.upstream.surface it needs
    last_tested: str = _NEWEST
    if_fixed: str = ""

    def releases(self) -> str:
        """The releases with the bug, as docs/keras-workarounds.md names them.

        Example:
            >>> WORKAROUNDS["variable_aggregation"].releases()
            '3.3 to 3.6 (fixed in 3.7.0)'
        """
        parts = []
        for first, fixed in self.affected:
            start = ".".join(first.split(".")[:2])
            if fixed is None:
                parts.append(f"{start} and later (up to {self.last_tested} tested)")
            else:
                major, minor = fixed.split(".")[:2]
                parts.append(f"{start} to {major}.{int(minor) - 1} (fixed in {fixed})")
        return "; ".join(parts)

    def affects(self, keras_version: str | None) -> bool:
        """Whether this Keras release has the bug, by the measured table (no setting read)."""
        version = version_tuple(keras_version)
        return bool(version) and any(
            version_tuple(first) <= version and (fixed is None or version < version_tuple(fixed)) for first, fixed in self.affected
        )

    def is_active(self, keras_version: str | None, environ: Mapping[str, str] | None = None) -> bool:
        """Whether to apply it for this Keras 3 version (see the module docstring)."""
        env = os.environ if environ is None else environ
        mode, left_out = keras_compat_setting(env)
        unknown = sorted(left_out - set(WORKAROUNDS))
        if unknown:
            raise AutodistError(
                f"{KERAS_COMPAT_ENV} leaves out {', '.join(unknown)}, which is no workaround of autodist's "
                f"(Received: {KERAS_COMPAT_ENV}={env.get(KERAS_COMPAT_ENV)!r}; the workarounds are "
                f"{', '.join(sorted(WORKAROUNDS))}). Name one of them after the minus, or unset it."
            )
        if mode == "off" or self.name in left_out:
            return False
        if mode == "force":
            return True
        version = version_tuple(keras_version)
        if not self.affects(keras_version):
            return False
        if version[:2] > version_tuple(self.last_tested)[:2]:
            warn_untested(str(keras_version))
            return bool(self.if_fixed)
        return True


def warn_untested(keras_version: str) -> None:
    """Warn once per process that this Keras is newer than the workarounds were tested on (the one
    note a newer Keras gets: TensorFlow's import says nothing of it)."""
    if not once(f"keras untested: {keras_version}"):
        return

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


_ALL = (("3.3.0", None),)
_NO_SYMBOLIC_BUILD = "3.5.0"  # Keras 3.3 and 3.4 build a model while its first step is traced
_AGGREGATION_PASSED = "3.7.0"  # Keras 3.3-3.6 pass no aggregation to tf.Variable
_GRADIENTS_REDUCED = "3.5.0"  # Keras 3.3 and 3.4 reduce no gradient over the replicas

WORKAROUNDS: dict[str, Workaround] = {
    w.name: w
    for w in (
        Workaround(
            name="variable_aggregation",
            upstream="keras-team/keras#19891 (fixed by #20541 in 3.7.0; metrics on-read from #21072, 3.10.0)",
            summary=(
                "Keras 3.3-3.6 pass no aggregation to tf.Variable: under any replicated strategy every "
                "variable is NONE. Metrics count one replica's share (495 of 990 samples on 2 "
                "replicas), a counter with aggregation='sum' adds one replica's steps, "
                "BatchNormalization's replicas keep their own statistics, and under CentralStorage "
                "every metric update fails ('You must specify an aggregation method'). autodist "
                "passes what Keras 3.10 passes: metrics' state summed on read, optimizer counters "
                "from the first replica, BatchNormalization's statistics averaged, random layers' "
                "seeds from the first replica under CentralStorage and parameter servers."
            ),
            affected=(("3.3.0", _AGGREGATION_PASSED),),
            touches=("keras.variable_aggregation",),
            if_fixed="it acts only on a Keras that maps no aggregation itself",
        ),
        Workaround(
            name="distributed_gradients",
            upstream="Keras 3.3-3.7 under tf.distribute (fixed by scale_loss_for_distribution in 3.8.0)",
            summary=(
                "Keras 3.3 and 3.4 reduce no gradient over the replicas under MirroredStrategy (the "
                "reduction runs where there is no replica context): each replica applies its own "
                "share's gradient and the replicas drift apart (0.09 after 2 epochs of a small MLP). "
                "Keras 3.5-3.7 sum the replicas' gradients of per-share mean losses: each step is N "
                "times one device's. autodist sums them on 3.3-3.4 too, and divides fit's loss by the "
                "replicas, as Keras 3.8 does."
            ),
            affected=(("3.3.0", "3.8.0"),),
            touches=("keras.distributed_gradients",),
            if_fixed="it acts only where the gradients are unreduced, and on releases before 3.8",
        ),
        Workaround(
            name="aggregating_variable_updates",
            upstream="Keras 3 Variable.assign_add is assign(self + value) (keras-team/keras#21054)",
            summary=(
                "Under CentralStorageStrategy (and ParameterServerStrategy) metric state lives in "
                "AggregatingVariables with SUM aggregation. Keras 3 implements assign_add as "
                "assign(old + delta), so N replicas write N*old + sum(deltas): History and "
                "evaluate report wrong loss and metrics. Under ParameterServerStrategy the same "
                "read-modify-write on CachingVariables races between workers and loses updates "
                "(per-epoch metrics vary from run to run). Under MirroredStrategy and "
                "MultiWorkerMirroredStrategy a variable created with aggregation='sum' (a counter "
                "in a custom layer; every metric on Keras 3.7-3.9) doubles its old value at every "
                "update on 2 replicas. autodist routes assign_add/assign_sub on all three to "
                "TensorFlow's own delta updates."
            ),
            affected=(("3.7.0", None),),  # 3.3-3.6 create no SUM variable, and their metrics update with assign
            touches=("keras.variable_updates",),
            if_fixed="a delta update is TensorFlow's own assign_add: right whether or not Keras's is",
        ),
        Workaround(
            name="mirrored_steps_per_execution",
            upstream="keras-team/keras#19246",
            summary=(
                "Under MirroredStrategy, steps_per_execution > 1 fails with 'You must feed a value "
                "for placeholder tensor' (from Keras 3.7, whose steps run in a tf.while_loop). "
                "autodist runs with steps_per_execution=1 there."
            ),
            affected=(("3.7.0", None),),
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
            affected=_ALL,
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
                "the same size and shape'. autodist builds from the first local replica's batch. "
                "Keras 3.3 and 3.4 have no symbolic build, hence no such bug."
            ),
            affected=((_NO_SYMBOLIC_BUILD, None),),
            touches=("keras.symbolic_build",),
            if_fixed="the build only needs the batch's shapes, which one replica's batch has; an "
            "epoch iterator of another shape falls back to Keras's own build",
        ),
        Workaround(
            name="symbolic_build_reads_input",
            upstream="Keras 3 TensorFlowTrainer._maybe_symbolic_build",
            summary=(
                "Under any tf.distribute strategy, fit reads the first batch of its input to build "
                "the model, then starts the input over, even when the model, loss, metrics and "
                "optimizer are all built. A tf.data pipeline starts over, but a shuffle that "
                "reshuffles each iteration (tf.data's default) spent an epoch of its orders, and a "
                "PyDataset with shuffle=True spent its shuffle: every epoch then trains in one "
                "device's next epoch's order (History and weights slightly apart, keras.io's "
                "FeatureSpace example, no warning); a Python "
                "generator cannot, so the batches read (and prefetched) are lost: for example 32 of "
                "100 samples never seen and 32 seen twice in the first epoch (Mirrored and "
                "CentralStorage, 2 replicas, batch 16; how many varies with tf.data's prefetching, "
                "by load). autodist builds the model from the generator's first batch, "
                "puts that batch back, builds from a PyDataset's py_dataset[0] (as Keras reads it "
                "for its signature) and from a tf.data pipeline's element spec (the build reads "
                "shapes and dtypes only), and skips the read when nothing needs building. Under a "
                "script's own strategy that order is model.fit's without a strategy, not the one plain "
                "Keras trains in under that strategy: where the input reshuffles on every read, autodist "
                "says so (kept_strategy_order)."
            ),
            affected=((_NO_SYMBOLIC_BUILD, None),),
            touches=("keras.symbolic_build",),
            if_fixed="skipping the read when nothing needs building changes nothing Keras uses",
        ),
        Workaround(
            name="no_call_symbolic_build",
            upstream="Keras 3 TensorFlowTrainer._maybe_symbolic_build (a model without call())",
            summary=(
                "Under any tf.distribute strategy, fit builds the model by calling it on symbolic "
                "inputs. A subclassed model whose train_step calls its sub-models itself and that "
                "has no call() of its own (keras.io's VAE, the GAN of the 'customizing fit' guide) "
                "fails there ('Model VAE does not have a call() method implemented'), though it "
                "trains on one device, where Keras builds nothing before the first step. autodist "
                "builds such a model's optimizer under the strategy instead, and leaves the rest "
                "to the first step, as one device does."
            ),
            affected=((_NO_SYMBOLIC_BUILD, None),), touches=("keras.symbolic_build",),
            if_fixed="a model without call() has nothing a symbolic call could build",
        ),
        Workaround(
            name="own_step_replica_mean",
            upstream="Keras 3 loss scaling under tf.distribute (scale_loss_for_distribution)",
            summary=(
                "Under a replicated strategy Keras sums the replicas' gradients and divides a "
                "keras.losses loss by the replicas. A train_step of the model's own gets one of "
                "two wrong answers: a loss it computes itself (keras.io's VAE) is not divided, so "
                "every step is N times one device's; a keras.losses loss or compute_loss is, so a "
                "metric the step records it in (the guide's GAN, a test_step's val_loss, "
                "evaluate) reads 1/N of one device's. Inside a model's own train_step and "
                "test_step (or Keras's, when the model defines compute_loss), autodist keeps each "
                "loss the replica's mean, as on one device, and divides the gradients the "
                "optimizer applies by the replicas; a step that divides by the global batch "
                "itself (tf.nn.compute_average_loss) keeps its gradients. Keras's own train_step divides a "
                "keras.losses loss a layer computes in call() and passes to add_loss (keras.io's endpoint "
                "layer) twice, so History reads 1/N of one device's and its gradients are 1/N: autodist keeps "
                "such a loss the replica's mean, and Keras's sum of the model's losses divides it once."
            ),
            affected=_ALL, touches=("keras.own_steps",),
            if_fixed="a step whose losses Keras no longer divides trains with the mean of the replicas' gradients, as one device",
        ),
        Workaround(
            name="uneven_shares_weighted",
            upstream="Keras 3 under tf.distribute: every replica's share of a batch counts 1/N in the gradient",
            summary=(
                "Under a replicated strategy each replica takes its share's mean loss, and Keras sums the replicas'"
                " gradients of it divided by the replicas: every share counts 1/N. Where a batch does not split evenly"
                " (the last batch of an epoch, 89 samples split 45/44 on 2 replicas; a PyDataset's own odd batches) the"
                " samples of the smaller share weigh more than in model.fit, and History and weights end apart (99"
                " samples, batch 16: 0.03). For an input that may hold a partial batch, autodist weights each"
                " replica's gradients by its share of the step's samples (one scalar all-reduce per step): the whole"
                " batch's mean gradient, as one device takes it. An input whose every batch is whole is left as it is"
                " (under MultiWorkerMirrored every worker weights: they must issue the same collectives)."
            ),
            affected=_ALL, touches=("keras.share_weights",),
            if_fixed="a share's weight is 1 wherever batches split evenly; where they do not, it is right for gradients"
            " of each share's mean divided by the replicas, as every Keras 3 release and tf.keras take them (the"
            " still-needed test fails on a Keras that weights the shares itself)",
        ),
        Workaround(
            name="replica_slices_summed",
            upstream=(
                "Keras 3's sparse optimizer updates (a tf.IndexedSlices gradient's slices squared apart) under"
                " tf.distribute"
            ),
            summary=(
                "TensorFlow all-reduces a sparse gradient (an embedding's tf.IndexedSlices) by concatenating the"
                " replicas' slices, and Keras's sparse update squares each slice apart. An embedding every replica"
                " looks up alike, once per step (keras.io's Vision Transformer and EANet position embeddings), has one"
                " slice per row on one device and one per replica here: Adam's second moment takes g1\u00b2 + g2\u00b2"
                " where one device takes (g1 + g2)\u00b2 (a small model's position embedding 0.0009 apart after 3"
                " epochs). Where every replica's slices hold the same rows in the same order,"
                " autodist sums them into one, for a lookup whose rows the step computes from constants alone (an"
                " arange); a lookup of each batch's own tokens, or of positions tiled over its samples (one slice per"
                " sample on one device too), is left as it is. No extra collective."
            ),
            affected=_ALL, touches=("keras.replica_slices",),
            if_fixed="slices summed before a sparse update that already sums them give the same sums",
        ),
        Workaround(
            name="optimizer_built_in_step",
            upstream="Keras 3 optimizers built by their first apply inside a replica's step",
            summary=(
                "An optimizer first used inside a train_step of the model's own (the two optimizers of the 'customizing"
                " fit' guide's GAN) builds its variables in each replica's thread while the step is traced. Under"
                " MirroredStrategy an optimizer with slots (Adam) then fails at the first step ('You must feed a value"
                " for placeholder tensor') in the gradients' all-reduce, where one device trains (Keras 3.3 and 3.4"
                " reduce no gradient, hence no failure). autodist builds it once for all replicas, in the"
                " cross-replica context, before its first update."
            ),
            affected=((_GRADIENTS_REDUCED, None),), touches=("keras.optimizer_build",),
            if_fixed="an optimizer built before its first update updates as one built by it",
        ),
        Workaround(
            name="replica_random_streams",
            upstream="Keras 3 SeedGenerator under tf.distribute (one seed state for every replica)",
            summary=(
                "Keras 3 keeps a random layer's seed state as one mirrored variable, so under a replicated strategy"
                " every replica draws the same Dropout mask, noise or augmentation for its share of the batch: on 8"
                " GPUs, 8 shares share one mask, and the regularisation weakens as replicas grow. autodist folds each"
                " replica's id into the seed a SeedGenerator hands out in its step (the state advances as Keras"
                " advances it): the replicas draw independently, as one device draws for its whole batch, reproducibly"
                " from keras.utils.set_random_seed, though not one device's numbers."
            ),
            affected=_ALL, touches=("keras.seed_draws",),
            if_fixed="a replica's draws from a seed folded with its id are as independent as Keras's own",
        ),
        Workaround(
            name="global_seed_in_replicas",
            upstream="Keras 3's global SeedGenerator (keras.random without a seed) under tf.distribute",
            summary=(
                "keras.random.normal and the other draws without a seed use Keras's global SeedGenerator, which Keras"
                " keeps in thread-local state and makes at its first use. A layer that draws so in its call (the Keras"
                " guide's VAE Sampling layer) makes it inside the first step; under MirroredStrategy each replica's"
                " thread makes one of its own, and TensorFlow refuses the second ('tf.function only supports singleton"
                " tf.Variables created on the first call'), where one device trains. autodist makes it once, in the"
                " main thread, outside the step and under the strategy, at the same point as one device, and every"
                " replica draws from it (each its own stream, with replica_random_streams). The same draw in a"
                " tf.data map made under the strategy (keras.io's CutMix; autodist makes its strategy current at"
                " import) makes it inside the map function as a distributed variable, which TensorFlow cannot lift"
                " out ('Unable to lift tensor'): autodist makes it in the eager context there, as a layer's own is."
            ),
            affected=_ALL, touches=("keras.global_seed_generator",),
            if_fixed="a global SeedGenerator made once for the replicas is the one each would have used",
        ),
        Workaround(
            name="every_replica_fed",
            upstream="Keras 3 evaluate/predict under tf.distribute (a batch with fewer samples than replicas)",
            summary=(
                "evaluate and predict split each batch over the replicas, and a batch with fewer samples than "
                "replicas (one image to predict on 2 replicas, or 33 samples in batches of 32) leaves a replica an "
                "empty share. What a model does with it varies by machine and run: a residual add becomes a rank-2 "
                "BiasAdd ('Shape must be rank 1 but is rank 2', keras.io's image classification from scratch), or the"
                " numbers turn to NaN, or nothing shows (the still-needed test proves the empty share itself). For "
                "array inputs, autodist picks the nearest batch size that feeds every replica as TensorFlow splits it"
                " (means over the samples do not depend on the batching; not for a test_step of the model's own), and"
                " repeats fewer samples than replicas in one batch (predict returns the first copy)."
            ),
            affected=_ALL, touches=("keras.trainer_loops",),
            if_fixed="another batching of the same samples gives the same means and predictions",
        ),
        Workaround(
            name="batches_copied",
            upstream="TensorFlow's legacy re-batching of a generator's batches under tf.distribute (Keras 3's PyDataset and generator inputs)",
            summary=(
                "Keras feeds a PyDataset or a Python generator through tf.data's from_generator, which keeps a NumPy"
                " batch's memory; under a replicated strategy TensorFlow splits each batch into views of it and, where a"
                " view starts on a 64-byte boundary, lets an op write its output there (y_true - y_pred in a loss). A"
                " PyDataset that returns slices of arrays it keeps has its targets overwritten by the loss's residuals in"
                " the first epoch and trains later epochs on them (History [2.29, 3.68, 2.46] where one device gives"
                " [2.29, 0.002, 0.0]), in the runs whose arrays happen to be so aligned (measured on TensorFlow 2.16.2 and"
                " 2.21.0; 2.18.1 copies the batch itself). autodist hands TensorFlow a copy of every NumPy array in a batch."
            ),
            affected=_ALL, touches=("keras.python_batches",),
            if_fixed="a PyDataset's arrays stay unchanged after fit under a replicated strategy without the copy",
        ),
        Workaround(
            name="batchnorm_moving_statistics",
            upstream="Keras 3 BatchNormalization under tf.distribute (moving statistics)",
            summary=(
                "Keras 3 creates BatchNormalization's moving mean and variance with no "
                "aggregation: under MirroredStrategy (and MultiWorkerMirrored, CentralStorage) "
                "each replica assigns its own batch's statistics, the replicas end with "
                "different copies, evaluate and predict normalise each share with its own, and "
                "save keeps the first replica's. tf.keras made them mean-aggregated. autodist "
                "creates them with aggregation='mean': each update is averaged over the replicas. "
                "(Keras 3.7.0 made every variable mean-aggregated; on 3.3-3.6 the workaround "
                "variable_aggregation passes it.)"
            ),
            affected=(("3.3.0", _AGGREGATION_PASSED), ("3.8.0", None)),
            touches=("keras.batchnorm_statistics",),
            if_fixed="mean aggregation is how tf.keras kept them, and what a fixed Keras would do",
        ),
        Workaround(
            name="seed_state_aggregation",
            upstream="Keras 3 SeedGenerator state under tf.distribute (keras-team/keras#20700 on 3.7.0)",
            summary=(
                "Keras 3 creates a random layer's seed state (Dropout, noise layers) with "
                "aggregation='none'. Under CentralStorageStrategy that is an AggregatingVariable, "
                "and Keras's update of it in each replica fails: 'You must specify an aggregation "
                "method to update a AggregatingVariable in Replica Context'. Keras 3.7.0 made it "
                "'mean', which TensorFlow refuses for an integer under any replicated strategy. "
                "autodist creates it with aggregation='only_first_replica' under CentralStorage "
                "and ParameterServer (every replica computes the same next seed, and the first "
                "one's is kept), and with none elsewhere."
            ),
            affected=_ALL,
            touches=("keras.variable_aggregation",),
            if_fixed="keeping the first replica's seed keeps the one seed every replica computes",
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
            affected=_ALL,
            touches=("keras.reduce_per_replica",),
            if_fixed="a scalar's mean over workers with axis=None is the mean Keras means to take",
        ),
        Workaround(
            name="short_epoch_steps_per_execution",
            upstream="keras-team/keras#20390, #20344 (fixed by #20396 in 3.7.0)",
            summary=(
                "Keras 3.3-3.6 run every call's steps_per_execution steps whatever is left of the "
                "epoch: an epoch shorter than one call fails ('NoneType' object is not iterable, "
                "3.3-3.4) or ends with empty logs (3.5-3.6), and a call that runs out of data loses "
                "its logs. autodist's default steps_per_execution stays 1 there (a model compiled "
                "with more keeps it), and the plan says why."
            ),
            affected=(("3.3.0", _AGGREGATION_PASSED),),
            if_fixed="steps_per_execution=1 trains the same steps, only with more calls",
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


#: The workarounds applied by patching Keras (the others change compile settings or defaults).
PATCHES = (
    "variable_aggregation", "distributed_gradients", "aggregating_variable_updates", "first_batch_symbolic_build",
    "symbolic_build_reads_input", "no_call_symbolic_build", "own_step_replica_mean", "uneven_shares_weighted",
    "replica_slices_summed",
    "optimizer_built_in_step", "every_replica_fed", "batches_copied", "multi_worker_scalar_reduce",
    "batchnorm_moving_statistics", "seed_state_aggregation", "replica_random_streams", "global_seed_in_replicas",
)  # fmt: skip


#: Said when autodist keeps a script's own strategy and its input reshuffles on every read: Keras's
#: symbolic build would have spent one of its orders (the workaround symbolic_build_reads_input).
KEPT_STRATEGY_ORDER = (
    "The script's own strategy trains {input}. Keras's model.fit under a strategy reads the input "
    "once to build the model, then starts it over, which spends one of its shuffled orders: every "
    "epoch trains in the order model.fit without a strategy uses one epoch later. autodist builds "
    "the model without reading the input (the workaround symbolic_build_reads_input), so the "
    "epochs train in model.fit's order without a strategy, and the numbers differ from model.fit "
    "under your strategy by that order. AUTODIST_KERAS_COMPAT=auto,-symbolic_build_reads_input "
    "trains in Keras's order"
)


def kept_strategy_order(workarounds: tuple[str, ...], kept: bool, reshuffled: str | None) -> str | None:
    """The warning for a script's own strategy (``kept``) trained on an input that draws a new
    order each time it is read (``reshuffled``: what it is, or ``None``), where autodist's build
    reads none of it; ``None`` otherwise.

    Example:
        >>> kept_strategy_order(("symbolic_build_reads_input",), True, "a PyDataset with shuffle=True")[:58]
        "The script's own strategy trains a PyDataset with shuffle="
        >>> kept_strategy_order(("symbolic_build_reads_input",), False, "a PyDataset with shuffle=True")
    """
    if not kept or reshuffled is None or "symbolic_build_reads_input" not in workarounds:
        return None
    return KEPT_STRATEGY_ORDER.format(input=reshuffled)


#: What a Keras that passes no aggregation to TensorFlow (3.3-3.6) cannot train under, and why.
_REFUSED = MappingProxyType({
    "central_storage": (
        "CentralStorageStrategy: its metrics update their state with assign(total + value), which "
        "that strategy turns into N*total + value on N replicas (History and evaluate would be wrong)"
    ),
    "multi_worker_mirrored": (
        "MultiWorkerMirroredStrategy: measured on 2 workers, Keras 3.3-3.4 end with the workers' "
        "weights apart (0.09), and 3.5-3.6 with steps off one process (0.02)"
    ),
})


#: Keras 3's LossScaleOptimizer under CentralStorage (measured on 3.15.1, plain model.fit too).
MIXED_FLOAT16_CENTRAL_STORAGE = (
    "A mixed_float16 model cannot train under CentralStorageStrategy: Keras's LossScaleOptimizer "
    "updates its loss scale in each replica and applies its step inside a cond, which "
    "CentralStorageStrategy refuses (\"merge_call called while defining a new graph\"; plain "
    "model.fit fails the same way). Use strategy='mirrored', or train in float32"
)


def refused_strategy(
    strategy: str, keras_flavor: str, keras_version: str | None, environ: Mapping[str, str] | None = None, mixed_precision: str | None = None,
) -> str | None:
    """Why this Keras cannot train under ``strategy`` at all (``None``: it can), for the planner's
    refusal: Keras 3.3-3.6 under CentralStorage and MultiWorkerMirrored (:data:`_REFUSED`), and
    ``mixed_float16`` under CentralStorage (:data:`MIXED_FLOAT16_CENTRAL_STORAGE`).

    Example:
        >>> refused_strategy("central_storage", "keras3", "3.4.1", {}) is not None
        True
        >>> refused_strategy("central_storage", "keras3", "3.8.0", {}), refused_strategy("mirrored", "keras3", "3.4.1", {})
        (None, None)
    """
    if keras_flavor != "keras3" or str(strategy) not in _REFUSED:
        return None
    if mixed_precision == "mixed_float16" and str(strategy) == "central_storage":
        return MIXED_FLOAT16_CENTRAL_STORAGE
    if not WORKAROUNDS["variable_aggregation"].affects(keras_version):
        return None  # the release's behaviour, whatever AUTODIST_KERAS_COMPAT says
    return (
        f"Keras {keras_version} cannot train under {_REFUSED[str(strategy)]}. Keras 3.7 and later "
        "can, and so does tf_keras. Upgrade Keras (pip install 'keras>=3.8'), train with tf_keras "
        "(pip install tf-keras, TF_USE_LEGACY_KERAS=1), or use strategy='mirrored' on one machine"
    )
