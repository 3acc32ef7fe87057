"""Keras 3's TensorFlow trainer under ``tf.distribute`` (touches ``keras.symbolic_build`` and
``keras.reduce_per_replica``): the patches behind the workarounds ``first_batch_symbolic_build``,
``symbolic_build_reads_input``, ``no_call_symbolic_build``, ``symbolic_build_training`` and
``multi_worker_scalar_reduce`` of
:mod:`autodist.planning.keras_compat`, which decides when each is needed.

Keras 3.3 and 3.4 have no symbolic build: a model builds while its first step is traced, so the
first batch is never averaged over replicas there, and the symbolic-build patches are not
needed (their touch's probe says so, without a warning).

Example:
    >>> _first_batch([(0, 0, iter(["new"]))]), _first_batch([(0, iter(["old"]))])
    ('new', 'old')
"""

from __future__ import annotations

import contextlib
import inspect
import math
import sys
import threading
from collections.abc import Iterator
from typing import Any

from autodist.upstream import roles
from autodist.upstream.keras_models import all_layers
from autodist.upstream.surface import available, patch_once
from autodist.upstream.workaround import EVERY_RELEASE, NO_SYMBOLIC_BUILD, Workaround
from autodist.process import STATE, draws_kept, replace

__all__ = [
    "SYMBOLIC_BUILD_PATCHES",
    "TRAINER_PATCHES",
    "patch_every_replica_fed",
    "patch_trainer",
    "FIRST_BATCH_SYMBOLIC_BUILD",
    "SYMBOLIC_BUILD_READS_INPUT",
    "NO_CALL_SYMBOLIC_BUILD",
    "SYMBOLIC_BUILD_TRAINING",
    "build_as_training_step",
    "traced_draws",
    "names_as_they_were",
    "EVERY_REPLICA_FED",
    "METRIC_RESULTS_AS_NUMBERS",
    "MULTI_WORKER_SCALAR_REDUCE",
    "patch_metric_results_as_numbers",
    "metrics_holding_state",
    "builds_metrics_before_first_reset",
]

#: The workarounds applied by replacing parts of Keras 3's TensorFlow trainer.
TRAINER_PATCHES = (
    "first_batch_symbolic_build",
    "symbolic_build_reads_input",
    "no_call_symbolic_build",
    "symbolic_build_training",
    "multi_worker_scalar_reduce",
)
#: Those of them that live in the replaced ``_maybe_symbolic_build`` (and ``_symbolic_build``).
SYMBOLIC_BUILD_PATCHES = TRAINER_PATCHES[:4]


def has_no_call(model: Any) -> bool:
    """Whether a Keras 3 model's class has no ``call()`` of its own (keras.io's VAE, the GAN of
    the "customizing fit" guide: their ``train_step`` calls the sub-models themselves).

    Example:
        >>> import keras
        >>> class Pair(keras.Model):
        ...     def train_step(self, data):
        ...         return {}
        >>> has_no_call(Pair()), has_no_call(keras.Sequential())
        (True, False)
    """
    import keras

    return getattr(type(model), "call", None) is keras.Model.call


def _build_without_call(model: Any, strategy: Any) -> None:
    """What one device's first step builds for a model without ``call()``, built under the
    strategy: the optimizer over the trainable variables (Keras's symbolic build would call the
    model on symbolic inputs, and fail). Sub-models and anything else the ``train_step`` creates
    are built as on one device, when the step is traced."""
    with strategy.scope():
        if (
            model.optimizer is not None
            and not model.optimizer.built
            and all(layer.built for layer in all_layers(model) if layer is not model)
        ):
            model.optimizer.build(model.trainable_variables)


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


def _py_dataset_batch(epoch_iterator: Any) -> Any:
    """A ``PyDataset``'s first batch read as Keras reads it for its output signature
    (``py_dataset[0]``, standardized), without starting an epoch; ``None`` for other inputs.
    Starting one would shuffle (Python's ``random``, with ``shuffle=True``: every epoch after is
    then one device's next one) and leave a running iterator behind."""
    adapter = getattr(epoch_iterator, "data_adapter", None)
    py_dataset, standardize = getattr(adapter, "py_dataset", None), getattr(adapter, "_standardize_batch", None)
    if py_dataset is None or standardize is None or getattr(py_dataset, "num_batches", None) == 0:
        return None
    with draws_kept():  # one device's fit reads nothing here
        return standardize(py_dataset[0])


def _dataset_batch(epoch_iterator: Any) -> Any:
    """A ``tf.data.Dataset``'s batch as its element spec (the symbolic build reads only shapes and
    dtypes), without starting an iterator; ``None`` for other inputs. Starting one would spend an
    epoch of every ``shuffle`` that reshuffles each iteration: each epoch after would train in the
    order one device uses one epoch later."""
    adapter = getattr(epoch_iterator, "data_adapter", None)
    dataset = getattr(adapter, "_dataset", None)
    spec = getattr(dataset, "element_spec", None)
    if spec is None or type(adapter).__name__ != "TFDatasetAdapter":
        return None
    from keras.src import tree

    leaves = tree.flatten(spec)
    if not leaves or not all(hasattr(leaf, "shape") and hasattr(leaf, "dtype") for leaf in leaves):
        return None
    return spec


def _training_call(model: Any, data_batch: Any) -> Any:
    """The model called symbolically on ``data_batch``'s inputs, as its training step calls it
    (``training=True`` where its ``call`` takes it)."""
    from keras.src import backend, tree
    from keras.src.trainers import data_adapters

    x = data_adapters.data_adapter_utils.unpack_x_y_sample_weight(tree.map_structure(_symbolic_input, data_batch))[0]
    takes_training = "training" in inspect.signature(model.call).parameters
    return backend.compute_output_spec(model, x, **({"training": True} if takes_training else {}))


def _symbolic_input(value: Any) -> Any:
    """A ``KerasTensor`` of ``value``'s shape and dtype (NumPy's strings and objects: Keras's ``string``)."""
    import keras
    from keras.src import backend

    if value is None:
        return None
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    dtype = "string" if kind in ("U", "S", "O") else keras.backend.standardize_dtype(value.dtype)
    return backend.KerasTensor(value.shape, dtype)


def build_as_training_step(model: Any, data_batch: Any) -> bool:
    """Build ``model`` from ``data_batch``'s shapes as one device's first training step builds it:
    called symbolically with ``training=True`` where its ``call`` takes ``training``, else with no
    ``training`` at all (``train_step`` passes none then). A ``Sequential`` or functional model
    that is built lazily inside the call records the ``training`` it was called with in its
    nodes, so Keras's symbolic build (``training=False``) would keep every later call of it in
    inference, in each training step too. ``False`` where nothing needed building or the call
    failed (Keras's own build then runs and says why)."""
    if model.built and all(layer.built for layer in all_layers(model)):
        return False
    try:
        _training_call(model, data_batch)
    except Exception:  # the same call Keras's build makes next, which raises it with its own message
        return False
    return True


#: TensorFlow's random ops whose type does not say "Random" (a call of a function, StatefulPartitionedCall, is not one).
_RANDOM_OPS = frozenset(
    {
        "TruncatedNormal",
        "ParameterizedTruncatedNormal",
        "Multinomial",
        "StatelessMultinomial",
        "StatelessTruncatedNormal",
        "StatelessTruncatedNormalV2",
        "StatelessParameterizedTruncatedNormal",
        "StatelessShuffle",
        "StatefulUniform",
        "StatefulUniformInt",
        "StatefulUniformFullInt",
        "StatefulStandardNormal",
        "StatefulStandardNormalV2",
        "StatefulTruncatedNormal",
        "RngReadAndSkip",
        "RngSkip",
    }
)


#: The names Keras counts for what a symbolic call makes and drops: its tensors and its scratch
#: graphs. A layer, metric or op it makes keeps its name (one device makes those too).
TRANSIENT_NAMES = ("keras_tensor", "scratch_graph")


@contextlib.contextmanager
def names_as_they_were() -> Iterator[None]:
    """Keras's counts of its automatic names for what a symbolic call makes and drops
    (:data:`TRANSIENT_NAMES`: ``keras_tensor_15``) after the block as before it. One device makes
    no such call before its first step, and a script reads those names: the TensorFlow image
    classification tutorial calls its TFLite model's signature with ``keras_tensor_15=``. Where
    this Keras keeps no such counts, nothing is kept (the names move on, as under Keras's own
    symbolic build)."""
    from keras.src.backend.common import global_state

    counts = global_state.get_global_attribute("object_name_uids")
    before = {name: counts.get(name) for name in TRANSIENT_NAMES} if isinstance(counts, dict) else None
    try:
        yield
    finally:
        for name, count in (before or {}).items():
            if count is None:
                counts.pop(name, None)
            else:
                counts[name] = count


def traced_draws(model: Any, data_batch: Any) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """``(Keras's layers, the caller's layers)`` that draw random numbers when ``model`` is called
    as its training step calls it (:func:`build_as_training_step`'s call, which builds a model not
    built yet), read from the random ops each layer's call adds to the traced graph: an op belongs
    to the innermost layer whose call made it. So a layer made in ``build()``, a nested model and
    a ``Sequential`` defined outside the model count, and a layer that draws nothing (a Dropout of
    rate 0 or left in inference, an RNN cell without dropout) does not. A layer of the caller's
    own is one whose class is not Keras's (a subclass of Dropout included). ``None`` where the call
    fails (the layer list decides then)."""
    import tensorflow as tf
    from keras.src.layers.layer import Layer

    owners: dict[Any, Any] = {}  # each random op, by the op, and the layer whose call made it
    original, tracer = Layer.__call__, threading.get_ident()

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() != tracer:  # another thread's call: not this trace's
            return original(self, *args, **kwargs)
        graph = tf.compat.v1.get_default_graph()
        start = len(graph.get_operations())
        try:
            return original(self, *args, **kwargs)
        finally:
            for op in graph.get_operations()[start:]:
                if op not in owners and ("Random" in op.type or op.type in _RANDOM_OPS):  # a draw of any kind
                    owners[op] = self

    try:
        build_as_training_step(model, data_batch)  # built by a call of its own first: initializers draw too
        with names_as_they_were():  # a call to read the model: what it makes is not the script's
            Layer.__call__ = __call__  # for this one call only; put back below
            _training_call(model, data_batch)
    except Exception:
        return None
    finally:
        Layer.__call__ = original
    drawing = list(dict.fromkeys(owners.values()))
    ours = tuple(layer.name for layer in drawing if type(layer).__module__.startswith(("keras.", "tf_keras.")))
    theirs = tuple(layer.name for layer in drawing if not type(layer).__module__.startswith(("keras.", "tf_keras.")))
    return ours, theirs


@patch_once("symbolic_build", "keras.symbolic_build")
def _install_symbolic_build() -> Any:
    """Replace Keras 3's ``_maybe_symbolic_build`` and ``_symbolic_build`` once; what they do
    follows ``STATE.symbolic_build``."""
    from keras.src import tree

    trainer, base = roles.find("tf_trainer"), roles.find("base_trainer")
    original_build, original_symbolic = trainer._maybe_symbolic_build, base._symbolic_build

    def _symbolic_build(self: Any, iterator: Any = None, data_batch: Any = None) -> Any:
        if (
            "symbolic_build_training" in STATE.symbolic_build
            and STATE.per_thread("building_for_fit", False)
            and data_batch is not None
        ):
            build_as_training_step(self, data_batch)  # the model's own build: the names one device's makes
        built = self.built and all(layer.built for layer in all_layers(self))
        with names_as_they_were() if built else contextlib.nullcontext():  # the loss's, the metrics'
            return original_symbolic(self, iterator=iterator, data_batch=data_batch)

    def _maybe_symbolic_build(self: Any, iterator: Any = None, data_batch: Any = None) -> Any:
        before = STATE.per_thread("building_for_fit", False)
        STATE.thread.building_for_fit = sys._getframe(1).f_code.co_name == "fit"  # Keras's fit, not evaluate
        built = self.built and all(layer.built for layer in all_layers(self))
        try:  # a built model's symbolic build under a strategy makes names one device's first step does not
            with names_as_they_were() if built else contextlib.nullcontext():
                return _build(self, iterator, data_batch)
        finally:
            STATE.thread.building_for_fit = before

    def _build(self: Any, iterator: Any = None, data_batch: Any = None) -> Any:
        if iterator is None or getattr(self, "_distribute_strategy", None) is None:
            return original_build(self, iterator=iterator, data_batch=data_batch)
        if "no_call_symbolic_build" in STATE.symbolic_build and has_no_call(self):
            return _build_without_call(self, self.distribute_strategy)
        if "symbolic_build_reads_input" in STATE.symbolic_build:
            parts = (getattr(self, "_compile_metrics", None), getattr(self, "_compile_loss", None), self.optimizer)
            if all(layer.built for layer in all_layers(self)) and all(part is None or part.built for part in parts):
                return None  # layers, loss, metrics and optimizer all built: read nothing from the input
            batch = _py_dataset_batch(iterator)
            batch = _dataset_batch(iterator) if batch is None else batch
            if batch is not None:
                with self.distribute_strategy.scope():
                    return self._symbolic_build(data_batch=batch)
        import tensorflow as tf

        strategy = self.distribute_strategy
        if (
            "first_batch_symbolic_build" not in STATE.symbolic_build
            or not isinstance(strategy, (tf.distribute.MirroredStrategy, tf.distribute.MultiWorkerMirroredStrategy))
            or not (hasattr(iterator, "__iter__") or hasattr(iterator, "enumerate_epoch"))  # a shape we do not know
        ):
            return original_build(self, iterator=iterator, data_batch=data_batch)
        data_batch = tree.map_structure(
            lambda v: (
                strategy.experimental_local_results(v)[0] if isinstance(v, tf.distribute.DistributedValues) else v
            ),
            _first_batch(iterator),
        )
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    replace(trainer, "_maybe_symbolic_build", _maybe_symbolic_build)
    replace(base, "_symbolic_build", _symbolic_build)
    return original_build


def patch_trainer(names: Any) -> list[str]:
    """Apply the named trainer workarounds (of :data:`TRAINER_PATCHES`), each where its touch is
    on. Idempotent; returns those in place.

    Under any strategy, a model with nothing left to build reads nothing for its symbolic build,
    and a model without ``call()`` builds its optimizer instead of failing there; the first-batch build acts under
    (MultiWorker)MirroredStrategy; the scalar reduce only in
    multi-worker mode. Everything else keeps Keras's own code.
    """
    names = set(names)
    applied = [name for name in SYMBOLIC_BUILD_PATCHES if name in names]
    applied = applied if applied and _install_symbolic_build() else []
    STATE.symbolic_build.update(applied)
    if "multi_worker_scalar_reduce" in names and available("keras.reduce_per_replica"):
        from keras.src import tree

        trainer = roles.find("tf_trainer_module")
        if "reduce_per_replica" not in STATE.originals(__name__):
            original_reduce = trainer.reduce_per_replica

            def reduce_per_replica(values: Any, strategy: Any, reduction: str) -> Any:
                if reduction not in ("auto", "mean") or not trainer._collective_all_reduce_multi_worker(strategy):
                    return original_reduce(values, strategy, reduction)

                def reduce_one(value: Any) -> Any:
                    shape = getattr(value.values[0] if hasattr(value, "values") else value, "shape", None)
                    if shape is not None and shape.rank == 0:
                        return strategy.reduce("MEAN", value, axis=None)
                    return original_reduce(value, strategy, reduction)

                return tree.map_structure(reduce_one, values)

            replace(trainer, "reduce_per_replica", reduce_per_replica)
            STATE.originals(__name__)["reduce_per_replica"] = original_reduce
        applied.append("multi_worker_scalar_reduce")
    return applied


def _as_one_device_logs(value: Any) -> Any:
    """A metric's result as one device's logs hold it: a value of one number as a Python float
    (under a strategy it may still be the metric's own variable, distributed, which float()
    refuses); anything else as it is, unread."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    shape = getattr(value, "shape", None)
    try:
        size = 1 if shape is None else math.prod(int(dimension) for dimension in shape)
    except (TypeError, ValueError):  # a dimension not known: not one number
        return value
    if size != 1:
        return value
    import numpy as np
    from keras import ops

    try:
        array = np.asarray(ops.convert_to_numpy(value))
    except Exception:  # not a tensor or a variable: Keras's own value
        return value
    return float(array.reshape(-1)[0]) if array.size == 1 and array.dtype.kind in "biuf" else value


def _read_whole() -> bool:
    """Whether a variable read here is its whole value: eagerly, outside any replica's step, in a
    strategy's scope or in none (a SyncOnReadVariable then reads the sum over the replicas; inside
    a step, or a traced function, it reads one replica's share, and Keras's step converts nothing)."""
    import tensorflow as tf

    outside_a_step = tf.distribute.in_cross_replica_context() or not tf.distribute.has_strategy()
    return tf.executing_eagerly() and outside_a_step


@patch_once("get_metrics_result", "keras.metrics_result")
def patch_metric_results_as_numbers() -> Any:
    """A model's ``get_metrics_result`` under a strategy: every scalar a Python float, as one
    device's are."""
    base = roles.find("base_trainer")
    original = base.get_metrics_result

    def get_metrics_result(self: Any) -> Any:
        logs = original(self)
        if getattr(self, "_distribute_strategy", None) is None or not isinstance(logs, dict) or not _read_whole():
            return logs
        return {key: _as_one_device_logs(value) for key, value in logs.items()}

    replace(base, "get_metrics_result", get_metrics_result)
    return original


def metrics_holding_state(model: Any) -> tuple[tuple[str, float | None], ...]:
    """The metric objects ``model`` was compiled with that hold an earlier use's state (another
    model's fit or evaluate, when one list of metrics is passed to every compile), each with its
    result now, while its compiled metrics are not built yet (touch ``keras.compile_metrics_reset``).

    Keras resets a model's compiled metrics at the start of each epoch, but only once they are
    built (``CompileMetrics.reset_state`` returns while unbuilt). Without a strategy they build in
    the first step, after that reset, so the first epoch adds to the state they held; under a
    strategy Keras 3.5 and later build them first (:func:`builds_metrics_before_first_reset`), and
    the reset clears it. Empty where the touch is off.
    """
    compiled = getattr(model, "_compile_metrics", None)
    if compiled is None or getattr(compiled, "built", True) or not available("keras.compile_metrics_reset"):
        return ()
    import keras
    import numpy as np

    found: dict[int, tuple[str, float | None]] = {}
    for metric in keras.tree.flatten([compiled._user_metrics, compiled._user_weighted_metrics]):
        if isinstance(metric, keras.metrics.Metric) and id(metric) not in found:
            if any(np.any(np.asarray(variable) != 0) for variable in metric.variables):
                result = np.asarray(metric.result())
                found[id(metric)] = (metric.name, float(result) if result.size == 1 else None)
    return tuple(found.values())


def builds_metrics_before_first_reset(model: Any) -> bool:
    """Whether ``model``'s fit builds its compiled metrics before the first epoch's reset: under a
    strategy, on a Keras with a symbolic build (3.5 and later; 3.3 and 3.4 build in the first step,
    as one device does)."""
    return getattr(model, "_distribute_strategy", None) is not None and hasattr(model, "_maybe_symbolic_build")


def _samples(x: Any) -> int | None:
    """The number of samples of an array-like input (numpy arrays, tensors, and lists, tuples
    and dicts of them, all of one length); ``None`` for anything else."""
    from keras.src import tree

    leaves = tree.flatten(x) if x is not None else []
    if not leaves or not all(
        hasattr(leaf, "shape") and hasattr(leaf, "dtype") and len(leaf.shape) > 0 for leaf in leaves
    ):
        return None
    lengths = {int(leaf.shape[0]) for leaf in leaves}
    return lengths.pop() if len(lengths) == 1 else None


def _repeated_leaf(leaf: Any, copies: int) -> Any:
    """``copies`` of an array-like input one after another, of the leaf's own kind: a TensorFlow
    tensor (strings, ragged and sparse ones too) stays a tensor, for Keras reads a string or ragged
    one that NumPy would turn into objects; anything else becomes a NumPy array."""
    import numpy as np

    if type(leaf).__module__.startswith("tensorflow"):
        import tensorflow as tf

        if isinstance(leaf, tf.SparseTensor):
            return tf.sparse.concat(0, [leaf] * copies)
        return tf.concat([leaf] * copies, axis=0)
    return np.concatenate([np.asarray(leaf)] * copies)


def _repeated(value: Any, copies: int) -> Any:
    from keras.src import tree

    if value is None or copies == 1:
        return value
    return tree.map_structure(lambda leaf: _repeated_leaf(leaf, copies), value)


@patch_once("every_replica_fed", "keras.trainer_loops")
def patch_every_replica_fed(decide: Any, prepare: Any = None) -> Any:
    """``evaluate`` and ``predict`` on array-like inputs under a replicated strategy (every
    worker passes the same arrays, as with ``model.fit``): re-batched (``decide(samples, batch_size, replicas)``:
    :func:`autodist.planning.global_batch.every_replica_fed`) so that no replica gets an empty
    share, where Keras would hand it one. ``prepare(model)`` runs first (a model evaluated under
    autodist's strategy that never went through ``autodist.fit`` gets what fit would give it)."""
    from keras.src import tree

    trainer = roles.find("tf_trainer")
    original_evaluate, original_predict = trainer.evaluate, trainer.predict

    def plan(self: Any, x: Any, batch_size: Any, steps: Any) -> tuple[int, int] | None:
        strategy = getattr(self, "_distribute_strategy", None)
        if strategy is None or steps is not None:
            return None
        try:
            samples = _samples(x)
            replicas = int(strategy.num_replicas_in_sync)
            return None if samples is None else decide(samples, int(batch_size or 32), replicas)
        except (TypeError, ValueError, AttributeError):  # an input of a shape not foreseen: Keras's own loop
            return None

    def evaluate(self: Any, x: Any = None, y: Any = None, batch_size: Any = None, *args: Any, **kwargs: Any) -> Any:
        if prepare is not None:
            prepare(self)
        fed = None if args or "_use_cached_eval_dataset" in kwargs else plan(self, x, batch_size, kwargs.get("steps"))
        if fed is not None and fed[1] == 1 and type(self).test_step is not trainer.test_step:
            fed = None  # a test_step of the model's own may average its batches' means: keep its batches
        if fed is None:
            return original_evaluate(self, x, y, batch_size, *args, **kwargs)
        size, copies = fed
        if kwargs.get("sample_weight") is not None:
            kwargs["sample_weight"] = _repeated(kwargs["sample_weight"], copies)
        return original_evaluate(self, _repeated(x, copies), _repeated(y, copies), size, *args, **kwargs)

    def predict(self: Any, x: Any, batch_size: Any = None, *args: Any, **kwargs: Any) -> Any:
        fed = None if args else plan(self, x, batch_size, kwargs.get("steps"))
        if fed is None:
            return original_predict(self, x, batch_size, *args, **kwargs)
        size, copies = fed
        outputs = original_predict(self, _repeated(x, copies), size, **kwargs)
        samples = _samples(x)
        return tree.map_structure(lambda value: value[:samples], outputs) if copies > 1 else outputs

    replace(trainer, "evaluate", evaluate)
    replace(trainer, "predict", predict)
    return original_evaluate, original_predict


# --- the workarounds whose patches these are (autodist.upstream.keras_workarounds gathers them) ---

FIRST_BATCH_SYMBOLIC_BUILD = Workaround(
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
    affected=((NO_SYMBOLIC_BUILD, None),),
    touches=("keras.symbolic_build",),
    if_fixed="the build only needs the batch's shapes, which one replica's batch has; an "
    "epoch iterator of another shape falls back to Keras's own build",
    install=lambda act: "first_batch_symbolic_build" in patch_trainer(["first_batch_symbolic_build"]),
)


SYMBOLIC_BUILD_READS_INPUT = Workaround(
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
    affected=((NO_SYMBOLIC_BUILD, None),),
    touches=("keras.symbolic_build",),
    if_fixed="skipping the read when nothing needs building changes nothing Keras uses",
    install=lambda act: "symbolic_build_reads_input" in patch_trainer(["symbolic_build_reads_input"]),
)


NO_CALL_SYMBOLIC_BUILD = Workaround(
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
    affected=((NO_SYMBOLIC_BUILD, None),),
    touches=("keras.symbolic_build",),
    if_fixed="a model without call() has nothing a symbolic call could build",
    install=lambda act: "no_call_symbolic_build" in patch_trainer(["no_call_symbolic_build"]),
)


SYMBOLIC_BUILD_TRAINING = Workaround(
    name="symbolic_build_training",
    upstream="Keras 3 Trainer._symbolic_build (training=False) with Functional nodes recording training",
    summary=(
        "Under any tf.distribute strategy, fit builds the model by calling it symbolically with "
        "training=False. A Sequential or functional model built lazily inside that call (an "
        "augmentation Sequential defined at module level, a feed-forward Sequential made in build(): "
        "keras.io's Perceiver) keeps training=False, so every later call of it, each "
        "training step's too, runs in inference: Dropout, RandomFlip and RandomZoom do nothing, "
        "silently, where one device trains with them. autodist first builds the model as one "
        "device's first training step does (training=True where its call takes training, else none). "
        "One difference remains, Keras's own: on one device a Sequential built inside the step hands "
        "the training=True that RandomFlip's default sets during its build to the layers before "
        "RandomFlip too, for that step's trace; built before the step, those layers keep their default."
    ),
    # measured: 3.5 and 3.8 keep training in such a Sequential, 3.12 and 3.15 do not, the 2026-10-27 nightly
    # does again; 3.10.0 rewrote how a call passes training on (keras-team/keras#21204), 3.10-3.11 not measured
    affected=(("3.10.0", "3.16.0.dev2026102704"),),
    touches=("keras.symbolic_build",),
    if_fixed="the model is built by the call one device's first step makes; Keras's own build then finds it built",
    install=lambda act: "symbolic_build_training" in patch_trainer(["symbolic_build_training"]),
)


EVERY_REPLICA_FED = Workaround(
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
    affected=EVERY_RELEASE,
    touches=("keras.trainer_loops",),
    if_fixed="another batching of the same samples gives the same means and predictions",
    install=lambda act: patch_every_replica_fed(act.every_replica_fed, prepare=act.prepare_own_steps),
)


METRIC_RESULTS_AS_NUMBERS = Workaround(
    name="metric_results_as_numbers",
    upstream="Keras 3 logs under tf.distribute (keras/src/utils/python_utils.py pythonify_logs; converts tensors "
    "first from 3.12.0)",
    summary=(
        "Keras turns each metric's result into a Python number with float(value) and keeps what float() refuses. "
        "A metric whose result() returns its own variable (a counter: self.n.assign_add(...); return self.n) is, "
        "under a replicated strategy, a variable over a MirroredVariable or SyncOnReadVariable, which float() "
        "refuses: History keeps the variable, and float(history.history['seen'][-1]) raises TypeError, where "
        "one device gives a float. autodist reads every scalar result as a float, in the cross-replica context "
        "(a SyncOnReadVariable's sum over the replicas)."
    ),
    affected=(("3.3.0", "3.12.0"),),
    touches=("keras.metrics_result",),
    if_fixed="a float read from a float is the same float",
    install=lambda act: patch_metric_results_as_numbers(),
)


MULTI_WORKER_SCALAR_REDUCE = Workaround(
    name="multi_worker_scalar_reduce",
    upstream="tensorflow/tensorflow#72388",
    summary=(
        "Under MultiWorkerMirroredStrategy, reduce_per_replica averages each step's logs "
        "with strategy.reduce('MEAN', v, axis=0); the logs are scalars, so it fails with "
        "'Invalid reduction dimension 0 for input with 0 dimensions'. autodist reduces "
        "rank-0 values with axis=None; other values keep Keras's path."
    ),
    affected=EVERY_RELEASE,
    touches=("keras.reduce_per_replica",),
    tested_in="tests/test_multi_worker.py",
    if_fixed="a scalar's mean over workers with axis=None is the mean Keras means to take",
    install=lambda act: "multi_worker_scalar_reduce" in patch_trainer(["multi_worker_scalar_reduce"]),
)
