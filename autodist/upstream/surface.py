"""The table of autodist's upstream surface: each touch of TensorFlow's, Keras's or JAX's private
code, what it touches and why, the releases it was measured on, its probe, what changes when it
is off, and the test that shows when it stops being needed.

A touch is used only after :func:`available` says what it needs exists. The probe runs once per
process. Where it finds something missing, the touch is off: the code that uses it falls back to
the framework's own behaviour, and one :class:`~autodist.errors.AutodistWarning` names the piece
and what changes for the user. Some absences are expected: Keras 3.3 and 3.4 have no symbolic
build, so they have neither the code autodist patches nor the bug it works around; such a touch
is off without a warning (``python -m autodist inspect`` lists it).

``docs/upstream.md`` shows the same table (``tests/test_upstream.py`` checks that it does).

Example:
    >>> sorted(TOUCHES)[:2]
    ['jax.backend_state', 'keras.batchnorm_statistics']
    >>> TOUCHES["tf.coordination_service"].package
    'tensorflow'
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
import warnings
from collections.abc import Callable
from typing import Any

from autodist.errors import AutodistWarning
from autodist.upstream.probes import (
    Absence,
    Touch,
    _coordination_key_value,
    _mentions,
    _one_of,
    _present,
    _runtime_handle,
    _slurm,
    describe,
    resolve,
)
from autodist.log import user_stacklevel
from autodist.process import STATE, once
from autodist.upstream.versions import named
from autodist.upstream.workaround import NO_SYMBOLIC_BUILD

__all__ = ["Absence", "TOUCHES", "Touch", "available", "absence", "patch_once", "resolve", "status"]


_K3 = (
    "Keras 3.3.3, 3.4.1, 3.6.0, 3.7.0, 3.8.0, 3.10.0, 3.12.0, 3.15.1 (read in every 3.3-3.15 release), "
    "3.16.0.dev2026102704 (keras-nightly; names found by their role there)"
)
_TF = "TensorFlow 2.16.2, 2.17.1, 2.18.1, 2.19.1, 2.20.0, 2.21.0, 2.22.0rc0"
_TEST = "tests/test_upstream.py::"
_KC = "tests/test_keras_compat.py::"
_OPTIMIZERS = "keras.src.optimizers"
_LOSS_SCALE = "keras.src.optimizers.loss_scale_optimizer"
_CONTEXT = "tensorflow.python.eager.context"
_DISTRIBUTE = "tensorflow.python.distribute"
#: What the activation's wrappers replace (tf_hooks), each probed.
_ACTIVATION_HOOKS = (
    f"{_CONTEXT}.Context.ensure_initialized",
    "tensorflow.python.ops.variables.VariableMetaclass.__call__",
    f"{_DISTRIBUTE}.distribute_lib.get_strategy",
    f"{_DISTRIBUTE}.distribute_lib.has_strategy",
    f"{_DISTRIBUTE}.distribute_lib.StrategyBase.__init__",
    f"{_DISTRIBUTE}.distribute_lib.StrategyBase.__deepcopy__",
    f"{_DISTRIBUTE}.collective_all_reduce_strategy.CollectiveAllReduceStrategy.__init__",
    f"{_DISTRIBUTE}.collective_all_reduce_strategy.CollectiveAllReduceExtended._create_variable",
    "tensorflow.python.framework.ops.reset_default_graph",
)

TOUCHES: dict[str, Touch] = {
    t.name: t
    for t in (
        # --- TensorFlow -------------------------------------------------------------------------
        Touch(
            "tf.runtime_started",
            "tensorflow",
            (f"{_CONTEXT}.context()._context_handle",),
            "whether TensorFlow's runtime has started: logical devices and MultiWorkerMirroredStrategy "
            "must be set up before it does, and autodist says so (RuntimeAlreadyStartedError) "
            "instead of TensorFlow's later 'Collective ops must be configured at program startup'",
            _TF,
            "autodist cannot tell whether the runtime started: it tries, and TensorFlow's own error "
            "comes instead of autodist's advice",
            _TEST + "test_still_needed_runtime_started",
            _runtime_handle,
        ),
        Touch(
            "tf.default_strategy",
            "tensorflow",
            (f"{_DISTRIBUTE}.distribute_lib._get_default_strategy",),
            "the plan 'default' names TensorFlow's default strategy object, whatever strategy is "
            "current in the caller (tf.distribute.get_strategy() answers the current one)",
            _TF,
            "the plan 'default' uses tf.distribute.get_strategy() where no strategy is current",
            _TEST + "test_still_needed_default_strategy",
            _present(f"{_DISTRIBUTE}.distribute_lib._get_default_strategy"),
        ),
        Touch(
            "tf.coordination_service",
            "tensorflow",
            (
                f"{_CONTEXT}.coordination_config_pb2.CoordinatedJob",
                f"{_CONTEXT}.Context.configure_coordination_service",
                f"{_CONTEXT}.Context._coordination_service_config.cluster_register_with_barrier",
            ),
            "configures MultiWorkerMirroredStrategy's coordination service first, with a registration "
            "deadline, so a worker whose peer never starts raises PeerError instead of waiting for "
            "ever (the barrier field, from TensorFlow 2.19, makes the leader raise too)",
            _TF + " (the protobuf module moved: tensorflow.tsl.protobuf before 2.19, "
            "tensorflow.compiler.xla.tsl.protobuf from 2.19; the eager context module names it in all)",
            "a worker whose peer never connects waits as long as TensorFlow lets it (for ever on the "
            "leader): the launcher's --timeout, or your cluster manager's, ends it",
            _TEST + "test_still_needed_coordination_service_deadline",
            _present(
                f"{_CONTEXT}.coordination_config_pb2.CoordinatedJob",
                f"{_CONTEXT}.Context.configure_coordination_service",
            ),
        ),
        Touch(
            "tf.coordination_key_value",
            "tensorflow",
            (f"{_CONTEXT}.Context.get_config_key_value", f"{_CONTEXT}.Context.set_config_key_value"),
            "the workers of a multi-worker job agree, through the coordination service's key-value "
            "store, on the step to save after SIGTERM, and on the saves every worker has",
            _TF,
            "a multi-worker job makes no autodist saves: SIGTERM ends it as TensorFlow does, and a "
            "restart starts over (a BackupAndRestore callback of your own still saves each epoch)",
            _TEST + "test_still_needed_coordination_key_value",
            _coordination_key_value,
        ),
        Touch(
            "tf.global_seed",
            "tensorflow",
            (f"{_CONTEXT}.global_seed",),
            "reads whether the script set a global seed (keras.utils.set_random_seed) without drawing "
            "from TensorFlow's op-seed counter, which tf.compat.v1.get_seed would advance",
            _TF,
            "autodist treats the run as unseeded: shuffled arrays get a fresh order on every run",
            _TEST + "test_still_needed_global_seed",
            _present(f"{_CONTEXT}.global_seed"),
        ),
        Touch(
            "tf.activation_hooks",
            "tensorflow",
            _ACTIVATION_HOOKS,
            "the activation at import: the strategy is created at the first trigger (the runtime "
            "starting, a variable created, the current strategy asked for), and a strategy the "
            "script constructs itself is noticed, so autodist's steps aside; a collective that "
            "fails while the multi-worker strategy creates a variable is named (CollectiveMismatchError); "
            "autodist's strategy stays current through Keras's clear_session() (a reset of the default graph)",
            _TF,
            "nothing is made current at import (as with AUTODIST_ACTIVATE=0): autodist.fit and "
            "autodist.init create the strategy, and a model built before is moved into it with a warning",
            _TEST + "test_still_needed_activation_hooks",
            _present(*_ACTIVATION_HOOKS),
        ),
        Touch(
            "tf.script_variables",
            "tensorflow",
            (
                f"{_DISTRIBUTE}.distribute_lib.StrategyExtendedV2._create_variable",
                f"{_DISTRIBUTE}.distribute_lib.StrategyExtendedV2._update",
                "tensorflow.python.ops.variables.VariableMetaclass.__call__",
            ),
            "a tf.Variable the script makes itself, outside any Keras object (the TensorFlow guide's "
            "basics: a variable and a tape before any model; a tf.random.Generator), is created as "
            "without autodist while autodist's strategy is current: its strategy's variable creator "
            "passes it on to the next one, and its update updates it as the default strategy does. Who "
            "creates a variable is read from the frames that call tf.Variable",
            _TF,
            "such a variable is the strategy's (a MirroredVariable on several replicas): tape.gradient "
            "on it raises 'DistributedVariable.handle is not available outside the replica context'; "
            "create it in `with autodist.local():`",
            _TEST + "test_still_needed_script_variables",
            _present(
                f"{_DISTRIBUTE}.distribute_lib.StrategyExtendedV2._create_variable",
                f"{_DISTRIBUTE}.distribute_lib.StrategyExtendedV2._update",
                "tensorflow.python.ops.variables.VariableMetaclass.__call__",
            ),
        ),
        Touch(
            "tf.distributed_variable_handle",
            "tensorflow",
            (f"{_DISTRIBUTE}.values.DistributedVariable.handle",),
            "names the cause and the fix where a custom step written for one device reads a variable "
            "of the strategy made current at import outside strategy.run: a tf_keras model's, whose "
            "variables are TensorFlow's own (the TensorFlow guide's basic training loops, on 2 "
            "replicas). TensorFlow says only that a DistributedVariable's handle is not available "
            "outside the replica context",
            "TensorFlow 2.16.2, 2.18.1, 2.21.0, 2.22.0rc0 (the support matrix's pairs)",
            "such a step under tf_keras fails with TensorFlow's ValueError alone, not a "
            "ReplicaContextError naming the fix",
            _TEST + "test_still_needed_distributed_variable_handle",
            _present(f"{_DISTRIBUTE}.values.DistributedVariable.handle"),
        ),
        Touch(
            "tf.strategy_scopes",
            "tensorflow",
            (
                f"{_DISTRIBUTE}.distribute_lib.StrategyBase.scope",
                f"{_DISTRIBUTE}.distribute_lib.enter_or_assert_strategy",
                "tensorflow.python.framework.ops.Graph._global_distribute_strategy_scope",
                "tensorflow.python.framework.ops.Graph._distribution_strategy_stack",
            ),
            "while autodist's strategy is current, another strategy's scope (the save-and-load "
            "tutorial's OneDeviceStrategy) makes TensorFlow fail with 'Mixing different "
            "tf.distribute.Strategy objects': autodist's steps aside for the block",
            _TF,
            "autodist's strategy does not step aside: a scope of another strategy the script creates "
            "after autodist's holds variables fails as TensorFlow makes it fail",
            _TEST + "test_still_needed_strategy_scopes",
            _present(
                f"{_DISTRIBUTE}.distribute_lib.StrategyBase.scope",
                f"{_DISTRIBUTE}.distribute_lib.enter_or_assert_strategy",
                "tensorflow.python.framework.ops.Graph._global_distribute_strategy_scope",
                "tensorflow.python.framework.ops.Graph._distribution_strategy_stack",
            ),
        ),
        Touch(
            "tf.saved_model_load",
            "tensorflow",
            ("tensorflow.python.saved_model.load.load",),
            "tf.saved_model.load outside any scope means 'without a strategy'; with autodist's current, "
            "its signatures fail when called directly ('Trying to access a placeholder'): autodist's "
            "steps aside for the load",
            _TF,
            "a SavedModel loaded outside any scope while autodist's strategy is current is loaded "
            "under it, as TensorFlow does with a current strategy",
            _TEST + "test_still_needed_saved_model_load",
            _present("tensorflow.python.saved_model.load.load"),
        ),
        Touch(
            "tf.strategy_internals",
            "tensorflow",
            (
                "StrategyExtended._num_workers",
                "CentralStorageStrategy.extended._variable_device",
                "the strategy classes' modules under tensorflow.python.",
            ),
            "describes a strategy the script created itself (its workers, its parameter device, its "
            "kind by class), which has no public accessor",
            _TF,
            "a script's own strategy counts as one worker, with no parameter device",
            _TEST + "test_still_needed_strategy_internals",
            _mentions(f"{_DISTRIBUTE}.collective_all_reduce_strategy.CollectiveAllReduceExtended", "self._num_workers"),
        ),
        Touch(
            "tf.dataset_graph",
            "tensorflow",
            (
                "tensorflow.python.data.ops.dataset_ops.DatasetV2",
                "DatasetV2._input_dataset",
                "._datasets",
                "a dataset's attributes that hold its input datasets (_data_inputs, _selector_input, ...)",
                "the dataset classes' names (_BatchDataset, _RebatchDataset, _RepeatDataset, ...)",
                "_ShuffleDataset._reshuffle_each_iteration",
            ),
            "reads how a tf.data pipeline is batched (its batch size, its samples) without iterating "
            "it, to bring it to the global batch, and whether it reshuffles (in a repeat)",
            _TF,
            "a dataset's batching is unknown: pass batch_size= (the global batch) and autodist re-batches it",
            _TEST + "test_still_needed_dataset_graph",
            _mentions("tensorflow.python.data.ops.dataset_ops.UnaryDataset", "self._input_dataset"),
        ),
        Touch(
            "tf.dataset_serialization",
            "tensorflow",
            (
                "tensorflow.python.ops.gen_dataset_ops.dataset_to_graph_v2",
                "DatasetV2._variant_tensor",
                "tensorflow.python.data.ops.options.ExternalStatePolicy",
                f"{_DISTRIBUTE}.coordinator.values.deserialize_dataset_from_graph",
            ),
            "Keras 3 parameter-server training rebuilds the chief's tf.data pipeline on every worker "
            "from its graph (a function capturing the dataset fails there)",
            _TF,
            "Keras 3 parameter-server training takes arrays only; a tf.data.Dataset is refused",
            _TEST + "test_still_needed_dataset_serialization",
            _present(
                "tensorflow.python.ops.gen_dataset_ops.dataset_to_graph_v2",
                "tensorflow.python.data.ops.options.ExternalStatePolicy",
                f"{_DISTRIBUTE}.coordinator.values.deserialize_dataset_from_graph",
            ),
        ),
        Touch(
            "tf.remote_value_status",
            "tensorflow",
            (f"{_DISTRIBUTE}.coordinator.remote_value.RemoteValue._status",),
            "counts the parameter-server steps that finished, for the progress a stalled job is told by",
            _TF,
            "every poll of the chief's loop counts as progress",
            _TEST + "test_still_needed_remote_value_status",
            _mentions(f"{_DISTRIBUTE}.coordinator.values.RemoteValueImpl", "self._status"),
        ),
        Touch(
            "tf.slurm_hostlist",
            "tensorflow",
            (
                f"{_DISTRIBUTE}.cluster_resolver.slurm_cluster_resolver.expand_hostlist",
                f"{_DISTRIBUTE}.cluster_resolver.slurm_cluster_resolver.expand_tasks_per_node",
            ),
            "reads SLURM's compressed host lists as TensorFlow's SlurmClusterResolver does (the "
            "resolver itself pairs tasks with GPUs and returns no tasks on CPU-only nodes)",
            _TF,
            "a SLURM job is not detected: set TF_CONFIG, or run python -m autodist launch",
            _TEST + "test_still_needed_slurm_hostlist",
            _slurm,
        ),
        # --- Keras 3 ----------------------------------------------------------------------------
        Touch(
            "keras.symbolic_build",
            "keras",
            (
                "<tf_trainer>._maybe_symbolic_build(self, iterator, data_batch)",
                "<base_trainer>._symbolic_build(self, iterator, data_batch)",
                "keras.src.trainers.data_adapters.data_adapter_utils.unpack_x_y_sample_weight",
                "keras.src.trainers.data_adapters.py_dataset_adapter.PyDatasetAdapter._standardize_batch (read where "
                "present)",
                "keras.src.backend.compute_output_spec",
                "keras.src.layers.layer.Layer.__call__",
                "keras.src.backend.common.global_state.get_global_attribute('object_name_uids')",
            ),
            "the workarounds first_batch_symbolic_build and symbolic_build_reads_input (keras#20585: "
            "the first batch averaged over replicas), no_call_symbolic_build, and symbolic_build_training "
            "(the model built for fit as one device's first training step builds it, with "
            "keras.src.backend.compute_output_spec), and the layers that draw random numbers read from "
            "that call (Layer.__call__ wrapped for its length); the counts of the names those symbolic "
            "calls make and drop (keras_tensor_N) are put back, as one device's first step leaves them",
            _K3 + "; Keras 3.3 and 3.4 have no symbolic build (a model builds while its first step "
            "is traced), hence neither bug",
            "the first batch is averaged over replicas as Keras does: MultiWorkerMirrored fit fails "
            "('unsupported type PerReplica'), and an uneven first batch fails under Mirrored; the layers "
            "said to draw random numbers are read from the model's layer list",
            _KC + "test_still_needed_first_batch_symbolic_build",
            _present(
                "<tf_trainer>._maybe_symbolic_build(self, iterator, data_batch)",
                "<base_trainer>._symbolic_build(self, iterator, data_batch)",
                "keras.src.trainers.data_adapters.data_adapter_utils.unpack_x_y_sample_weight",
                "keras.src.layers.layer.Layer._flatten_layers",
                "keras.src.backend.compute_output_spec",
                "keras.src.layers.layer.Layer.__call__",
                "keras.src.backend.common.global_state.get_global_attribute",
                when_absent_expected="this Keras builds a model while its first step is traced: no first-batch bug",
                keras_before=NO_SYMBOLIC_BUILD,
            ),
        ),
        Touch(
            "keras.reduce_per_replica",
            "keras",
            (
                "<tf_trainer_module>.reduce_per_replica(values, strategy, reduction)",
                "<tf_trainer_module>._collective_all_reduce_multi_worker(strategy)",
            ),
            "the workaround multi_worker_scalar_reduce (tensorflow#72388: 'Invalid reduction "
            "dimension 0' on every step's logs under MultiWorkerMirrored)",
            _K3,
            "Keras 3 fit under MultiWorkerMirroredStrategy fails as it does upstream; tf_keras trains",
            "tests/test_multi_worker.py::test_still_needed_multi_worker_scalar_reduce",
            _present(
                "<tf_trainer_module>.reduce_per_replica(values, strategy, reduction)",
                "<tf_trainer_module>._collective_all_reduce_multi_worker(strategy)",
            ),
        ),
        Touch(
            "keras.variable_updates",
            "keras",
            (
                "<tf_variable>.assign_add(self, value)",
                "<tf_variable>.assign_sub(self, value)",
                "<tf_variable>._convert_to_tensor(self, value, dtype)",
                "Variable._value",
                f"{_DISTRIBUTE}.ps_values.AggregatingVariable",
                f"{_DISTRIBUTE}.ps_values.CachingVariable",
                f"{_DISTRIBUTE}.values.MirroredVariable",
            ),
            "the workaround aggregating_variable_updates: Keras's assign_add is assign(old + delta), "
            "which SUM-aggregated distributed variables turn into N*old + sum(deltas)",
            _K3,
            "CentralStorage reports wrong loss and metrics, as Keras does; parameter-server metrics race",
            _KC + "test_still_needed_aggregating_variable_updates",
            _present(
                "<tf_variable>.assign_add(self, value)",
                "<tf_variable>.assign_sub(self, value)",
                "<tf_variable>._convert_to_tensor(self, value, dtype)",
                f"{_DISTRIBUTE}.ps_values.AggregatingVariable",
                f"{_DISTRIBUTE}.ps_values.CachingVariable",
                f"{_DISTRIBUTE}.values.MirroredVariable",
            ),
        ),
        Touch(
            "keras.variable_aggregation",
            "keras",
            (
                "<tf_variable>._map_aggregation(self, aggregation) (Keras 3.7 and later)",
                "<tf_variable>._initialize(self, value) (Keras 3.3-3.6)",
            ),
            "Keras 3.3-3.6 pass no aggregation to tf.Variable, so every variable is NONE under a "
            "strategy (a metric counts 495 of 990 samples on 2 replicas, CentralStorage metrics fail): "
            "autodist passes what Keras 3.10 passes. From 3.7 it maps the seed state of random layers "
            "(workaround seed_state_aggregation; Keras 3.7.0 made it an integer MEAN, which TensorFlow refuses)",
            _K3,
            "on Keras 3.3-3.6 metrics under a replicated strategy count one replica's share, and "
            "random layers fail under CentralStorage",
            _KC + "test_still_needed_variable_aggregation",
            _one_of("<tf_variable>._map_aggregation(self, aggregation)", "<tf_variable>._initialize(self, value)"),
        ),
        Touch(
            "keras.seed_generators",
            "keras",
            ("Layer._seed_generators",),
            "which layers draw random numbers: every Keras 3 layer (and model) that owns a SeedGenerator (Dropout, "
            "noise, augmentation, a VAE's sampling layer, a GAN's own noise), to warn that each replica draws the "
            "same ones",
            _K3,
            "only the random layers autodist knows by name (Dropout, noise, Random* augmentation) are warned about",
            _TEST + "test_still_needed_seed_generators",
            _mentions("keras.src.layers.layer.Layer._initialize_tracker", "_seed_generators"),
        ),
        Touch(
            "keras.seed_draws",
            "keras",
            ("keras.src.random.seed_generator.SeedGenerator.next",),
            "the workaround replica_random_streams: every seed a SeedGenerator hands out in a replica's step "
            "(Dropout, noise, augmentation, keras.random) is the same on every replica, as its state is one mirrored "
            "variable",
            "Keras 3.3.3 and 3.15.1 (the support matrix's oldest and newest)",
            "random layers draw the same masks, noise and transforms on every replica, as with plain Keras (warned: "
            "one random draw for every replica)",
            _KC + "test_still_needed_replica_random_streams",
            _present("keras.src.random.seed_generator.SeedGenerator.next"),
        ),
        Touch(
            "keras.global_seed_generator",
            "keras",
            (
                "keras.src.random.seed_generator.global_seed_generator",
                "keras.src.backend.common.stateless_scope.in_stateless_scope",
            ),
            "the workaround global_seed_in_replicas: Keras makes its global SeedGenerator "
            "(keras.random draws without a seed) at its first use in thread-local state, so each replica's "
            "thread of a MirroredStrategy step makes "
            "one of its own, which TensorFlow refuses, and a tf.data map under the strategy makes a "
            "distributed one that TensorFlow cannot lift out of the map function",
            "Keras 3.3.3, 3.8.0 and 3.15.1",
            "a model that draws with keras.random without a seed in its step (the Keras guide's VAE Sampling layer) "
            "fails under a replicated strategy as with plain Keras "
            "('tf.function only supports singleton tf.Variables'); give the layer a SeedGenerator of its own "
            "(seed=self.seed_generator)",
            _KC + "test_still_needed_global_seed_in_replicas",
            _present(
                "keras.src.random.seed_generator.global_seed_generator",
                "keras.src.backend.common.global_state.set_global_attribute",
                "keras.src.backend.common.stateless_scope.in_stateless_scope",
            ),
        ),
        Touch(
            "keras.optimizer_build",
            "keras",
            (
                "keras.src.optimizers.base_optimizer.BaseOptimizer.apply(self, grads, trainable_variables)",
                "keras.src.optimizers.base_optimizer.BaseOptimizer.build(self, variables)",
            ),
            "the workaround optimizer_built_in_step: an optimizer first applied inside a step (a GAN's two optimizers) "
            "builds its slots in each replica's thread while the step is traced, and fails under MirroredStrategy",
            "Keras 3.3.3 (no failure: 3.3-3.4 reduce no gradient), 3.8.0 and 3.15.1",
            "an optimizer with slots first applied inside a model's own train_step fails under a replicated strategy "
            "as "
            "with plain Keras ('You must feed a value for placeholder tensor'); build it before fit to avoid it",
            _KC + "test_still_needed_optimizer_built_in_step",
            _present(
                "keras.src.optimizers.base_optimizer.BaseOptimizer.apply(self, grads, trainable_variables)",
                "keras.src.optimizers.base_optimizer.BaseOptimizer.build(self, variables)",
            ),
        ),
        Touch(
            "keras.own_steps",
            "keras",
            (
                "keras.src.optimizers.base_optimizer.BaseOptimizer.apply(self, grads, trainable_variables)",
                "keras.src.optimizers.loss_scale_optimizer.LossScaleOptimizer.apply(self, grads, trainable_variables)",
                "keras.src.losses.loss.scale_loss_for_distribution",
                "keras.src.losses.loss.unscale_loss_for_distribution",
                "keras.src.optimizers.base_optimizer.BaseOptimizer.scale_loss(self, loss)",
                "tensorflow.python.eager.backprop.GradientTape.gradient(self, target, sources)",
            ),
            "the workaround own_step_replica_mean: in a train_step or test_step of the model's own, Keras divides a "
            "keras.losses loss by the replicas (3.8 and later: scale_loss_for_distribution; 3.3-3.7: fit's loss in "
            "scale_loss with distributed_gradients) and a loss the step computes itself not; in a layer's call "
            "(reading Keras's call context), a keras.losses loss passed to add_loss is divided twice (3.8 and later)",
            _K3
            + "; scale_loss_for_distribution from 3.8; GradientTape.gradient on TensorFlow 2.16.2, 2.21.0, 2.22.0rc0",
            "a model's own train_step or test_step trains and records its losses as Keras makes them under a strategy: "
            "steps N times one device's, or losses at 1/N; a layer's add_loss of a keras.losses loss reads 1/N in "
            "History, with gradients 1/N (not warned: the plan lists the workaround)",
            _KC + "test_still_needed_own_step_replica_mean",
            _present(
                "keras.src.optimizers.base_optimizer.BaseOptimizer.apply(self, grads, trainable_variables)",
                "keras.src.optimizers.loss_scale_optimizer.LossScaleOptimizer.apply(self, grads, trainable_variables)",
                "keras.src.optimizers.base_optimizer.BaseOptimizer.scale_loss(self, loss)",
                "keras.src.losses.loss.reduce_values",
                "keras.src.backend.common.global_state.get_global_attribute",
                "tensorflow.python.eager.backprop.GradientTape.gradient(self, target, sources)",
            ),
        ),
        Touch(
            "keras.share_weights",
            "keras",
            (
                f"{_OPTIMIZERS}.base_optimizer.BaseOptimizer.apply(self, grads, trainable_variables)",
                f"{_LOSS_SCALE}.LossScaleOptimizer.apply(self, grads, trainable_variables)",
                "tensorflow.python.eager.backprop.GradientTape.gradient(self, target, sources)",
            ),
            "the workaround uneven_shares_weighted: Keras sums the replicas' gradients of their shares' means, each "
            "counting 1/N, so where a batch splits unevenly (an epoch's last batch) the smaller share's samples weigh "
            "more; a step's tape.gradient of a sum over its samples (a loss with reduction=None) is left as it is",
            _K3 + "; GradientTape.gradient on TensorFlow 2.16.2, 2.21.0, 2.22.0rc0",
            "a batch that splits unevenly over the replicas trains as plain Keras under the strategy: its smaller "
            "share's samples weigh more than on one device, and autodist warns with the split",
            _KC + "test_still_needed_uneven_shares_weighted",
            _present(
                f"{_OPTIMIZERS}.base_optimizer.BaseOptimizer.apply(self, grads, trainable_variables)",
                f"{_LOSS_SCALE}.LossScaleOptimizer.apply(self, grads, trainable_variables)",
                "tensorflow.python.eager.backprop.GradientTape.gradient(self, target, sources)",
            ),
        ),
        Touch(
            "keras.replica_slices",
            "keras",
            ("keras.src.backend.tensorflow.optimizer.TFOptimizer._all_reduce_sum_gradients(self, grads_and_vars)",),
            "the workaround replica_slices_summed: a sparse gradient all-reduced over the replicas holds each "
            "replica's slice of a row apart, and Keras's sparse update squares each slice apart (Adam's second "
            "moment): an embedding every replica looks up alike (a position embedding) is updated otherwise than on "
            "one device",
            _K3,
            "an embedding every replica looks up alike (a position embedding) trains as plain Keras under the "
            "strategy: Adam's second moment takes the sum of the replicas' squared slices, where one device squares "
            "their sum",
            _KC + "test_still_needed_replica_slices_summed",
            _present(
                "keras.src.backend.tensorflow.optimizer.TFOptimizer._all_reduce_sum_gradients(self, grads_and_vars)"
            ),
        ),
        Touch(
            "keras.trainer_loops",
            "keras",
            (
                "<tf_trainer>.evaluate(self, x, y, batch_size)",
                "<tf_trainer>.predict(self, x, batch_size)",
                "<tf_trainer>.test_step",
            ),
            "the workaround every_replica_fed: evaluate and predict re-batch array inputs so that no replica gets an "
            "empty share",
            _K3,
            "evaluate and predict on fewer samples than replicas (or a last batch that small) run as Keras runs them: "
            "some models fail on the empty share, or give NaN (by machine and run)",
            _KC + "test_still_needed_every_replica_fed",
            _present(
                "<tf_trainer>.evaluate(self, x, y, batch_size)",
                "<tf_trainer>.predict(self, x, batch_size)",
                "<tf_trainer>.test_step",
            ),
        ),
        Touch(
            "keras.metrics_result",
            "keras",
            ("<base_trainer>.get_metrics_result(self)",),
            "the workaround metric_results_as_numbers: Keras 3.3-3.11 keep a metric's result in the logs as it is "
            "where float() refuses it, as a distributed variable under a strategy",
            _K3,
            "a metric whose result() returns its own variable leaves that variable in History under a replicated "
            "strategy on Keras 3.3-3.11, as with plain Keras (return self.n.value, or a tensor, from result())",
            _KC + "test_still_needed_metric_results_as_numbers",
            _present("<base_trainer>.get_metrics_result(self)"),
        ),
        Touch(
            "keras.compile_metrics_reset",
            "keras",
            (
                "keras.src.trainers.compile_utils.CompileMetrics._user_metrics",
                "keras.src.trainers.compile_utils.CompileMetrics._user_weighted_metrics",
                "CompileMetrics.reset_state (does nothing while unbuilt)",
                "<tf_trainer>._maybe_symbolic_build (builds them first under a strategy)",
            ),
            "says where the first epoch's metrics differ from model.fit's: metric objects compiled into a model "
            "while they hold an earlier use's state, which one device adds into its first epoch and a strategy "
            "resets first",
            _K3,
            "no warning: a replicated fit's first-epoch metrics differ from model.fit's, where metric objects "
            "shared between models hold state, without a word (make the metrics anew for each compile)",
            _TEST + "test_still_needed_compile_metrics_reset",
            _mentions(
                "keras.src.trainers.compile_utils.CompileMetrics", "self._user_metrics", "self._user_weighted_metrics"
            ),
        ),
        Touch(
            "keras.python_batches",
            "keras",
            (
                "keras.src.trainers.data_adapters.py_dataset_adapter.PyDatasetAdapter._standardize_batch",
                "keras.src.trainers.data_adapters.generator_data_adapter.GeneratorDataAdapter.__init__",
            ),
            "the workaround batches_copied: every NumPy array in a batch of a PyDataset or a Python generator is "
            "copied "
            "before TensorFlow's re-batching for the replicas can write into it",
            _K3,
            "a PyDataset or generator that yields slices of arrays it keeps may have them overwritten by a loss's "
            "residuals under a replicated strategy, as with plain Keras (yield copies: np.array(y[i:j]))",
            _KC + "test_still_needed_batches_copied",
            _present(
                "keras.src.trainers.data_adapters.py_dataset_adapter.PyDatasetAdapter._standardize_batch",
                "keras.src.trainers.data_adapters.generator_data_adapter.GeneratorDataAdapter.__init__",
            ),
        ),
        Touch(
            "keras.distributed_gradients",
            "keras",
            (
                "keras.src.backend.tensorflow.optimizer.TFOptimizer._all_reduce_sum_gradients(self, grads_and_vars)",
                "keras.src.optimizers.base_optimizer.BaseOptimizer.scale_loss(self, loss)",
                "keras.src.optimizers.loss_scale_optimizer.LossScaleOptimizer.scale_loss(self, loss)",
            ),
            "the workaround distributed_gradients: Keras 3.3-3.4 reduce no gradient over the replicas "
            "(they drift apart), and 3.5-3.7 sum them with each replica's loss a mean over its share "
            "(a step N times one device's); 3.8 divides fit's loss by the replicas",
            _K3,
            "on Keras 3.3-3.7 a replicated fit trains as Keras makes it: replicas apart (3.3-3.4) or "
            "steps N times one device's (3.5-3.7)",
            _KC + "test_still_needed_distributed_gradients",
            _present(
                "keras.src.backend.tensorflow.optimizer.TFOptimizer._all_reduce_sum_gradients(self, grads_and_vars)",
                "keras.src.optimizers.base_optimizer.BaseOptimizer.scale_loss(self, loss)",
                "keras.src.optimizers.loss_scale_optimizer.LossScaleOptimizer.scale_loss(self, loss)",
            ),
        ),
        Touch(
            "keras.batchnorm_statistics",
            "keras",
            ("keras.src.layers.normalization.batch_normalization.BatchNormalization.add_weight",),
            "the workaround batchnorm_moving_statistics: moving mean and variance created "
            "mean-aggregated, so replicas keep one set of statistics",
            _K3,
            "each replica keeps its own moving statistics, as Keras does",
            _KC + "test_still_needed_batchnorm_moving_statistics",
            _present("keras.src.layers.normalization.batch_normalization.BatchNormalization.add_weight"),
        ),
        Touch(
            "keras.model_internals",
            "keras",
            (
                "keras.src.layers.layer.Layer._flatten_layers",
                "<base_trainer>._symbolic_build(self, iterator, data_batch)",
                "<base_trainer>._jit_compile",
                "<base_trainer>._compile_metrics",
                "<base_trainer>._compile_loss",
                "<tf_trainer>._distribute_strategy",
            ),
            "what a model tells that Keras does not publish: every nested layer (model.layers lists "
            "the top ones), jit_compile as compiled (the public property resolves 'auto'), the "
            "strategy its variables were created under, and a build from one batch (parameter-server "
            "training builds on the chief)",
            _K3,
            "nested layers are not seen (BatchNormalization inside a sub-model is not warned about), "
            "and Keras 3 parameter-server training is refused",
            _TEST + "test_still_needed_model_internals",
            _present(
                "keras.src.layers.layer.Layer._flatten_layers",
                "<base_trainer>._symbolic_build(self, iterator, data_batch)",
                "keras.src.trainers.data_adapters.data_adapter_utils.unpack_x_y_sample_weight",
            ),
        ),
        Touch(
            "keras.variable_handle",
            "keras",
            ("<tf_variable>.handle",),
            "names the cause and the fix where a custom step written for one device reads a Keras "
            "variable of the strategy made current at import outside strategy.run (the Keras guide's "
            "own training loop, on 2 replicas): TensorFlow says only that a DistributedVariable's "
            "handle is not available outside the replica context",
            _K3,
            "such a step fails with TensorFlow's ValueError alone, not a ReplicaContextError naming the fix",
            _TEST + "test_still_needed_variable_handle",
            _present("<tf_variable>.handle"),
        ),
        Touch(
            "keras.variable_relocation",
            "keras",
            (
                "<tf_variable>._initialize(self, value)",
                "<tf_trainer>._distribute_strategy",
                "<tf_trainer>.train_function",
                "keras.src.backend.tensorflow.optimizer.TFOptimizer._distribution_strategy",
            ),
            "moves a model built under the strategy made current at import onto one device in place "
            "(its variables made again there), where a batch is smaller than the replicas: the caller's "
            "model trains, and one Keras cannot save and load moves too (a custom layer without "
            "get_config: keras.io's attention MIL classifier)",
            _K3,
            "such a model moves as a copy saved and loaded (one Keras cannot save trains on the replicas "
            "with its batch rounded up, warned)",
            _TEST + "test_still_needed_variable_relocation",
            _present("<tf_variable>._initialize(self, value)", "<tf_trainer>.distribute_strategy"),
        ),
        Touch(
            "keras.callback_internals",
            "keras",
            (
                "BackupAndRestore._weights_path",
                "._training_metadata_path",
                "._prev_weights_path (3.7+)",
                "TensorBoard._start_batch",
            ),
            "moves a BackupAndRestore to one folder per worker (Keras 3 fails with one shared folder), "
            "and tells whether a TensorBoard callback profiles batches",
            _K3,
            "a Keras 3 BackupAndRestore shared by the workers fails as it does upstream",
            _TEST + "test_still_needed_callback_internals",
            _mentions(
                "keras.src.callbacks.backup_and_restore.BackupAndRestore.__init__",
                "self._weights_path",
                "self._training_metadata_path",
            ),
        ),
        # --- tf_keras ---------------------------------------------------------------------------
        Touch(
            "tf_keras.internals",
            "tf_keras",
            (
                "Model._distribution_strategy",
                "Callback._supports_tf_logs",
                "OptimizerV2._create_all_weights",
                "Optimizer._built",
            ),
            "the strategy a tf_keras model was built under, whether a callback takes tensor logs "
            "(tf_keras refuses the others under parameter servers), and the slots of a legacy "
            "optimizer made before a restore",
            "tf_keras 2.16.0, 2.21.0 (read in every 2.16-2.21 release)",
            "read with defaults: an unknown strategy is none, a callback takes no tensor logs",
            _TEST + "test_still_needed_tf_keras_internals",
            _mentions("tf_keras.src.callbacks.Callback.__init__", "self._supports_tf_logs"),
        ),
        Touch(
            "tf_keras.loss_reduction",
            "tf_keras",
            ("tf_keras.src.losses.Loss._get_reduction",),
            "names the cause and the fix where a custom step written for one device calls a tf_keras "
            "loss object (reduction AUTO) outside strategy.run while the strategy made current at import "
            "is (the TensorFlow guides' own loops, on 2 replicas): tf_keras asks only for another reduction",
            "tf_keras 2.16.0, 2.21.0 (the support matrix's pairs that carry it)",
            "such a step fails with tf_keras's ValueError alone, not a ReplicaContextError naming the fix",
            _TEST + "test_still_needed_tf_keras_loss_reduction",
            _present("tf_keras.src.losses.Loss._get_reduction"),
        ),
        # --- JAX --------------------------------------------------------------------------------
        Touch(
            "jax.backend_state",
            "jax",
            ("jax._src.xla_bridge.backends_are_initialized", "jax._src.distributed.global_state"),
            "whether JAX's backends started (keras.distribution.initialize must come first), and, "
            "where JAX has no public jax.distributed.is_initialized, whether a process already joined "
            "a JAX cluster (Ray's JaxTrainer joins TPU workers)",
            "JAX 0.10.2",
            "autodist cannot tell whether JAX started or joined: it joins the processes itself",
            _TEST + "test_still_needed_jax_backend_state",
            _present("jax._src.xla_bridge.backends_are_initialized"),
        ),
        Touch(
            "keras.jax_variable_layout",
            "jax",
            ("<jax_variable>._layout",),
            "places a model built before the distribution existed on its mesh (sets each variable's layout)",
            "Keras 3.15.1 with JAX 0.10.2",
            "a model built before keras.distribution is refused with the fix (build it in the scope)",
            _TEST + "test_still_needed_jax_variable_layout",
            _mentions("<jax_variable>", "self._layout"),
        ),
    )
}


def absence(name: str) -> Absence | None:
    """What the touch ``name`` lacks in this process (``None``: everything it needs is there).
    Probed once per process."""
    if name not in STATE.probed:
        touch = TOUCHES[name]
        if touch.package not in sys.modules and importlib.util.find_spec(touch.package) is None:
            STATE.probed[name] = Absence(f"{touch.package} is not installed", expected=True)
        else:
            try:
                STATE.probed[name] = touch.probe()
            except Exception as err:  # a probe never raises into the user's code
                STATE.probed[name] = Absence(f"{type(err).__name__}: {err}")
    return STATE.probed[name]


def available(name: str) -> bool:
    """Whether the touch ``name`` can be used here. Where it cannot, and its absence is not
    expected, one :class:`AutodistWarning` says which piece is off and what changes."""
    missing = absence(name)
    if missing is None:
        return True
    if not missing.expected and once(f"touch off: {name}"):
        touch = TOUCHES[name]
        warnings.warn(
            f"autodist: {touch.name} is off: {named()} has no {missing.what}, which autodist "
            f"uses for this: {touch.why}. What changes: {touch.off}. Everything else works as "
            "before; `python -m autodist inspect` lists every piece and its state.",
            AutodistWarning,
            stacklevel=user_stacklevel(),
        )
    return False


def patch_once(key: str, touch: str, unless: Callable[[], bool] = lambda: False) -> Callable[..., Any]:
    """A ``patch_*`` function applied once per process: the function patches and returns what it replaced, kept as
    ``key`` of its module's originals (:meth:`autodist.process.ProcessState.originals`), and the decorated one
    returns whether the patch is in place. Idempotent; ``False`` (nothing patched) where ``unless()`` or the touch
    ``touch`` is off: Keras's own code then runs."""

    def decorate(patch: Callable[..., Any]) -> Callable[..., bool]:
        @functools.wraps(patch)
        def in_place(*args: Any, **kwargs: Any) -> bool:
            originals = STATE.originals(patch.__module__)
            if key in originals:
                return True
            if unless() or not available(touch):
                return False
            originals[key] = patch(*args, **kwargs)
            return True

        return in_place

    return decorate


def status() -> list[dict[str, str]]:
    """Every touch and its state here (``on``, ``not needed``, ``off``), probing those not probed
    yet: what ``python -m autodist inspect`` shows."""
    return [
        {
            "touch": name,
            "state": "on" if (missing := absence(name)) is None else ("not needed" if missing.expected else "off"),
            "missing": "" if missing is None else missing.what,
            "off": touch.off,
            "still_needed": touch.still_needed,
        }
        for name, touch in TOUCHES.items()
    ]


def table() -> list[str]:
    """The rows of docs/upstream.md's table, header first (``python -m autodist.upstream.pages``
    writes them)."""
    return [
        "| touch | what it touches | why | measured on | its probe | when it is off | still-needed test |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| `{touch.name}` | {', '.join(f'`{piece}`' for piece in touch.touches)} | {touch.why} | {touch.measured} "
            f"| {describe(touch.probe)} | {touch.off} | `{touch.still_needed}` |"
            for touch in TOUCHES.values()
        ),
    ]
