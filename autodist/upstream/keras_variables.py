"""Keras 3's variables under ``tf.distribute`` (touches ``keras.variable_updates``,
``keras.variable_aggregation``, ``keras.batchnorm_statistics`` and ``keras.seed_draws``): the
patches behind the workarounds ``aggregating_variable_updates``, ``variable_aggregation``,
``batchnorm_moving_statistics``, ``seed_state_aggregation`` and ``replica_random_streams`` of
:mod:`autodist.planning.keras_compat`, which decides when each is needed.

Each ``patch_*`` function applies its patch once per process and returns whether it is in place
(``False`` where its touch is off: Keras's own code then runs).

Example:
    >>> MOVING_STATISTICS[:2]
    ('moving_mean', 'moving_variance')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autodist.upstream import roles
from autodist.upstream.surface import available, patch_once
from autodist.upstream.tf_hooks import name_handle_reads
from autodist.upstream.workaround import AGGREGATION_PASSED, EVERY_RELEASE, Workaround
from autodist.process import STATE, replace

__all__ = [
    "MOVING_STATISTICS",
    "name_reads_outside_replicas",
    "maps_aggregation",
    "patch_aggregating_variable_updates",
    "patch_batchnorm_moving_statistics",
    "patch_global_seed_in_replicas",
    "patch_replica_random_streams",
    "patch_seed_state_aggregation",
    "patch_variable_aggregation",
    "VARIABLE_AGGREGATION",
    "AGGREGATING_VARIABLE_UPDATES",
    "REPLICA_RANDOM_STREAMS",
    "GLOBAL_SEED_IN_REPLICAS",
    "BATCHNORM_MOVING_STATISTICS",
    "SEED_STATE_AGGREGATION",
]


#: BatchNormalization's non-trainable statistics (renorm's too).
MOVING_STATISTICS = ("moving_mean", "moving_variance", "moving_stddev", "renorm_mean", "renorm_stddev")
_SEED_STATE = "seed_generator_state"


def maps_aggregation() -> bool:
    """Whether this Keras passes a variable's aggregation to ``tf.Variable`` (3.7 and later);
    3.3-3.6 pass none, and every variable is ``NONE`` under a strategy there."""
    try:
        return hasattr(roles.find("tf_variable"), "_map_aggregation")
    except LookupError:
        return False


def name_reads_outside_replicas(strategy: Any, error_for: Callable[[Any, BaseException], BaseException]) -> bool:
    """Where a Keras variable of ``strategy`` is read by its handle outside the replica context (a
    custom step written for one device: its ``tape.gradient`` or ``apply`` outside
    ``strategy.run``), raise ``error_for(variable, error)`` from TensorFlow's ``ValueError`` instead
    of that error alone (touch ``keras.variable_handle``). Every other read, and every other error,
    is Keras's own. Idempotent; ``False`` where the touch is off."""
    if not available("keras.variable_handle"):
        return False
    return name_handle_reads(roles.find("tf_variable"), lambda variable: variable._value, strategy, error_for)


@patch_once("assign_add", "keras.variable_updates")
def patch_aggregating_variable_updates() -> Any:
    """Make Keras 3 ``assign_add``/``assign_sub`` on SUM-aggregated distributed variables
    (AggregatingVariable, CachingVariable, MirroredVariable) a true delta update. Other variables
    keep Keras's own code path."""
    import tensorflow as tf
    from tensorflow.python.distribute import ps_values, values

    variable_class = roles.find("tf_variable")
    original_add, original_sub = variable_class.assign_add, variable_class.assign_sub

    def delta_update(name: str, original: Any) -> Any:
        def update(self: Any, value: Any) -> Any:
            # AggregatingVariable: CentralStorage (and PS) SUM-aggregated state. CachingVariable: every
            # variable on a ps task, where Keras's read-modify-write races between workers.
            # MirroredVariable with SUM aggregation: Mirrored and MultiWorkerMirrored counters.
            inner = getattr(self, "_value", None)
            if isinstance(inner, (ps_values.AggregatingVariable, ps_values.CachingVariable)) or (
                isinstance(inner, values.MirroredVariable) and inner.aggregation == tf.VariableAggregation.SUM
            ):
                delta = tf.cast(self._convert_to_tensor(value, dtype=self._dtype), inner.dtype)
                return getattr(inner, name)(delta)
            return original(self, value)

        return update

    replace(variable_class, "assign_add", delta_update("assign_add", original_add))
    replace(variable_class, "assign_sub", delta_update("assign_sub", original_sub))
    STATE.originals(__name__)["assign_sub"] = original_sub
    return original_add


@patch_once("batchnorm", "keras.batchnorm_statistics")
def patch_batchnorm_moving_statistics() -> Any:
    """Create Keras 3 BatchNormalization's moving statistics with ``aggregation="mean"`` (the
    layers built from now on); other weights keep Keras's own settings."""
    from keras.src.layers.normalization.batch_normalization import BatchNormalization

    original = BatchNormalization.add_weight

    def add_weight(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("name") in MOVING_STATISTICS and kwargs.get("aggregation") in (None, "none"):
            kwargs["aggregation"] = "mean"
        return original(self, *args, **kwargs)

    replace(BatchNormalization, "add_weight", add_weight)
    return original


def _aggregating_strategy() -> bool:
    import tensorflow as tf

    aggregating = (
        tf.distribute.experimental.CentralStorageStrategy,
        tf.distribute.experimental.ParameterServerStrategy,
    )
    return isinstance(tf.distribute.get_strategy(), aggregating)


def patch_seed_state_aggregation() -> bool:
    """Create Keras 3 random layers' seed state (an integer) with ``"only_first_replica"``
    aggregation under CentralStorageStrategy and ParameterServerStrategy, whose
    AggregatingVariables refuse Keras's update in each replica, and with none elsewhere (Keras
    3.7.0 made it ``"mean"``, which TensorFlow refuses for integers). Every replica computes the
    same next seed; the first one's is kept. On Keras 3.3-3.6 :func:`patch_variable_aggregation`
    does this."""
    if "seed_state" in STATE.originals(__name__):
        return True
    if not maps_aggregation():
        return patch_variable_aggregation()
    variable_class = roles.find("tf_variable")
    original = variable_class._map_aggregation

    def _map_aggregation(self: Any, aggregation: Any) -> Any:
        if self.name == _SEED_STATE and aggregation in ("none", "mean"):
            aggregation = "only_first_replica" if _aggregating_strategy() else "none"
        return original(self, aggregation)

    replace(variable_class, "_map_aggregation", _map_aggregation)
    STATE.originals(__name__)["seed_state"] = original
    return True


def _distribution_settings(variable: Any) -> tuple[str, str]:
    """The aggregation and synchronization Keras 3.10 gives ``variable`` under a strategy, for a
    Keras that gives none (3.3-3.6): metrics' state summed and read across replicas, optimizer
    counters from the first replica, BatchNormalization's statistics averaged, random layers'
    seeds kept from the first replica under CentralStorage and parameter servers, nothing for
    the rest (as Keras 3.8 and later)."""
    aggregation = getattr(variable, "aggregation", "none")
    floating = "float" in str(getattr(variable, "dtype", ""))
    if variable.name == _SEED_STATE:
        return ("only_first_replica" if _aggregating_strategy() else "none"), "auto"
    if aggregation == "sum" and not variable.trainable:
        return "sum", "on_read"
    if aggregation == "only_first_replica":
        return "only_first_replica", "auto"
    if aggregation == "mean" and floating and variable.name in MOVING_STATISTICS:
        return "mean", "auto"
    return "none", "auto"


@patch_once("initialize", "keras.variable_aggregation", unless=maps_aggregation)
def patch_variable_aggregation() -> Any:
    """On a Keras that passes no aggregation to ``tf.Variable`` (3.3-3.6), pass what Keras 3.10
    passes (:func:`_distribution_settings`). ``False`` where this Keras maps the aggregation itself
    (then nothing is needed)."""
    import tensorflow as tf

    variable_class = roles.find("tf_variable")
    synchronizations = {"auto": tf.VariableSynchronization.AUTO, "on_read": tf.VariableSynchronization.ON_READ}
    aggregations = {
        name: getattr(tf.VariableAggregation, name.upper()) for name in ("none", "sum", "mean", "only_first_replica")
    }

    def create(self: Any, value: Any) -> None:
        aggregation, synchronization = _distribution_settings(self)
        self._value = tf.Variable(
            value,
            dtype=self._dtype,
            trainable=self.trainable,
            name=self.name,
            aggregation=aggregations[aggregation],
            synchronization=synchronizations[synchronization],
        )

    original = variable_class._initialize

    def _initialize(self: Any, value: Any) -> None:
        if not tf.distribute.has_strategy() or isinstance(value, tf.Variable):
            return original(self, value)
        return create(self, value)

    replace(variable_class, "_initialize", _initialize)
    # Keras 3.5-3.6 create through it too
    with_initializer = getattr(variable_class, "_initialize_with_initializer", None)
    if with_initializer is not None:

        def _initialize_with_initializer(self: Any, initializer: Any) -> None:
            if not tf.distribute.has_strategy():
                return with_initializer(self, initializer)
            return create(self, lambda: initializer(self._shape, dtype=self._dtype))

        replace(variable_class, "_initialize_with_initializer", _initialize_with_initializer)
        STATE.originals(__name__)["initialize_with_initializer"] = with_initializer
    STATE.originals(__name__)["seed_state"] = original  # the seeds' aggregation is part of it here
    return original


def _replica_in_sync() -> Any:
    """The id of the replica whose step runs here (a tensor or an int), where a strategy runs more
    than one in sync; ``None`` anywhere else (one device, a parameter-server step, cross-replica)."""
    import tensorflow as tf

    if not tf.distribute.has_strategy() or tf.distribute.in_cross_replica_context():
        return None
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync < 2:
        return None
    return context.replica_id_in_sync_group


@patch_once("seed_draws", "keras.seed_draws")
def patch_replica_random_streams(applies: Callable[[Any], bool]) -> Any:
    """Give each replica its own stream of Keras 3 random draws (Dropout, noise, augmentation,
    ``keras.random`` with a ``SeedGenerator`` or none): the seed a ``SeedGenerator`` hands out in a
    replica's step is folded with the replica's id (``tf.random.experimental.stateless_fold_in``).
    The seed state itself advances as Keras advances it, the same on every replica, so a run is
    reproducible from ``keras.utils.set_random_seed``. Only under a strategy for which
    ``applies(strategy)`` (autodist's, or the script's once autodist.fit trained under it): a
    strategy autodist neither made nor adopted draws as Keras draws. Outside a step with replicas in
    sync, Keras's own seed."""
    import tensorflow as tf
    from keras.src.random.seed_generator import SeedGenerator

    original = SeedGenerator.next

    def next(self: Any, ordered: bool = True) -> Any:
        seed = original(self, ordered)
        if getattr(self.backend, "backend", lambda: "")() != "tensorflow":
            return seed
        replica = _replica_in_sync()
        if replica is None or not applies(tf.distribute.get_strategy()):
            return seed
        folded = tf.random.experimental.stateless_fold_in(tf.cast(seed, tf.int64), tf.cast(replica, tf.int32))
        return tf.cast(folded, seed.dtype)

    replace(SeedGenerator, "next", next)
    return original


@patch_once("global_seed", "keras.global_seed_generator")
def patch_global_seed_in_replicas(applies: Callable[[Any], bool]) -> Any:
    """Give every replica's step Keras's one global ``SeedGenerator`` (what ``keras.random.normal``
    and the other draws without a ``seed`` use, as the Keras guide's VAE ``Sampling`` layer does).
    Keras keeps it in thread-local state and makes it at its first use; under MirroredStrategy each
    replica's thread then makes one of its own inside the step being traced, and TensorFlow refuses
    the second ("tf.function only supports singleton tf.Variables created on the first call"), where
    one device trains. In a replica's step under a strategy for which ``applies(strategy)``, it is
    made (or found) once in the main thread, in a merge call, outside the step and under the
    strategy, as one device makes it at the same point (where one was made earlier under another
    strategy, one from the same seed under this one); each replica then draws from it (its own stream with
    ``replica_random_streams``). A function traced under such a strategy outside a step (a
    ``tf.data`` map drawing ``keras.random.uniform`` without a seed, keras.io's CutMix) makes it in
    the eager context, where Keras would make it inside the function and TensorFlow fails to lift
    the distributed variable out ("UnliftableError"), even before any ``fit``. Anywhere else Keras's
    own."""
    import tensorflow as tf
    from keras.src.backend.common import global_state
    from keras.src.backend.common.stateless_scope import in_stateless_scope
    from keras.src.random import seed_generator

    original = seed_generator.global_seed_generator
    name = getattr(seed_generator, "GLOBAL_SEED_GENERATOR", "global_seed_generator")

    def made_once(strategy: Any) -> Any:  # the main thread: its own, made there the first time
        with tf.init_scope(), strategy.scope():
            made = original()
            if strategy.extended.variable_created_in_scope(made.state.value):
                return made
            # made under another strategy (an earlier fit's), whose variables this one cannot read:
            # one of this strategy's from the same seed (its stream starts again)
            moved = seed_generator.SeedGenerator(seed=getattr(made, "_initial_seed", None))
            global_state.set_global_attribute(name, moved)
            return moved

    def global_seed_generator() -> Any:
        strategy = tf.distribute.get_strategy()
        if not applies(strategy):
            return original()
        if _replica_in_sync() is None:
            if tf.inside_function() and tf.distribute.in_cross_replica_context() and not in_stateless_scope():
                # a function traced under the strategy, outside any step and any of Keras's symbolic
                # calls (a tf.data map): made in the eager context, as a layer's own generator is,
                # where TensorFlow could not lift a distributed variable made inside the function
                return made_once(strategy)
            return original()
        if global_state.get_global_attribute(name) is not None:
            return original()
        found = tf.distribute.get_replica_context().merge_call(made_once)
        global_state.set_global_attribute(name, found)  # this replica thread's reference, for its later draws
        return found

    replace(seed_generator, "global_seed_generator", global_seed_generator)
    return original


# --- the workarounds whose patches these are (autodist.upstream.keras_workarounds gathers them) ---

VARIABLE_AGGREGATION = Workaround(
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
    affected=(("3.3.0", AGGREGATION_PASSED),),
    touches=("keras.variable_aggregation",),
    if_fixed="it acts only on a Keras that maps no aggregation itself",
    install=lambda act: patch_variable_aggregation(),
)


AGGREGATING_VARIABLE_UPDATES = Workaround(
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
    install=lambda act: patch_aggregating_variable_updates(),
)


REPLICA_RANDOM_STREAMS = Workaround(
    name="replica_random_streams",
    in_step=True,
    upstream="Keras 3 SeedGenerator under tf.distribute (one seed state for every replica)",
    summary=(
        "Keras 3 keeps a random layer's seed state as one mirrored variable, so under a replicated strategy"
        " every replica draws the same Dropout mask, noise or augmentation for its share of the batch: on 8"
        " GPUs, 8 shares share one mask, and the regularisation weakens as replicas grow. autodist folds each"
        " replica's id into the seed a SeedGenerator hands out in its step (the state advances as Keras"
        " advances it): the replicas draw independently, as one device draws for its whole batch, reproducibly"
        " from keras.utils.set_random_seed, though not one device's numbers."
    ),
    affected=EVERY_RELEASE,
    touches=("keras.seed_draws",),
    if_fixed="a replica's draws from a seed folded with its id are as independent as Keras's own",
    install=lambda act: patch_replica_random_streams(act.trains_under),
)


GLOBAL_SEED_IN_REPLICAS = Workaround(
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
    affected=EVERY_RELEASE,
    touches=("keras.global_seed_generator",),
    if_fixed="a global SeedGenerator made once for the replicas is the one each would have used",
    install=lambda act: patch_global_seed_in_replicas(act.trains_under),
)


BATCHNORM_MOVING_STATISTICS = Workaround(
    name="batchnorm_moving_statistics",
    in_step=True,
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
    affected=(("3.3.0", AGGREGATION_PASSED), ("3.8.0", None)),
    touches=("keras.batchnorm_statistics",),
    if_fixed="mean aggregation is how tf.keras kept them, and what a fixed Keras would do",
    install=lambda act: patch_batchnorm_moving_statistics(),
)


SEED_STATE_AGGREGATION = Workaround(
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
    affected=EVERY_RELEASE,
    touches=("keras.variable_aggregation",),
    if_fixed="keeping the first replica's seed keeps the one seed every replica computes",
    install=lambda act: patch_seed_state_aggregation(),
)
