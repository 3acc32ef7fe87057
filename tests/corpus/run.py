"""Run one corpus program one way, as its author wrote it but for its data, and record what it
trained: ``python tests/corpus/run.py PROGRAM WAY OUT.json``.

WAY is ``plain`` (``model.fit`` on one device, no autodist), ``hand-built`` (the same program
with everything it creates inside a ``MirroredStrategy`` over 2 logical CPUs, the guide's way),
or ``autodist`` (the adopted text: ``import autodist`` first and ``x.fit(`` turned into
``autodist.fit(x, ``; ``AUTODIST_CPU_DEVICES`` says on how many devices).

Around the program, never in it:
- stand-ins for its data (``stand_ins.py``: ``keras.datasets``, the files it downloads or reads,
  ``tensorflow_datasets``), ``CORPUS_SAMPLES`` training samples (default 256), from fixed seeds;
- its epochs capped at ``CORPUS_EPOCHS`` (default 2), in ``Model.fit``, the same in every way;
- a record of each ``fit`` (History, and the model's weights after it), ``evaluate`` and
  ``predict`` the program makes (not those Keras makes inside ``fit``), and every
  ``AutodistWarning``;
- ``keras.utils.set_random_seed(0)`` before the program, so its ways draw the same numbers;
- with ``CORPUS_DRAWS=off``, Keras's random ops in a step give fixed values (``fix_draws``).
- with ``CORPUS_FLOATX=float64``, Keras's default float is float64 (its layers compute in it).
- with ``CORPUS_ORDER=fixed``, every tf.data ``shuffle`` keeps its first order (``fix_order``).
- with ``CORPUS_DETERMINISM=on``, TensorFlow's op determinism is on
  (``tf.config.experimental.enable_op_determinism()``: random ops in a parallel tf.data map then
  draw the same numbers on every run).
- with ``CORPUS_INITIALIZERS=seeded``, an initializer that is a plain function
  (``Dense(kernel_initializer=tf.random.normal)``) draws with a fixed seed (``seed_initializers``).
- with ``CORPUS_BATCHNORM=synchronized``, every ``BatchNormalization`` takes its batch statistics
  over all the replicas' samples (``synchronized=True``; on one device the same as without).
- with ``CORPUS_BATCH_ORDER=reversed``, every training step takes its batch's samples in reverse
  order (``reverse_batches``): the same step, its sums taken in another order.
- with ``CORPUS_GRADIENTS=dense``, every optimizer applies its sparse gradients as dense ones
  (``densify_gradients``).
- with ``CORPUS_SPEED=1`` (the speed mode, ``speed.py``), every ``fit`` runs exactly
  ``CORPUS_EPOCHS`` epochs, and each epoch's wall and CPU seconds and steps are recorded, with the
  seconds from the process's start (``CORPUS_LAUNCHED``, the caller's clock) to the end of its
  first trained step (``Timing``).

A notebook runs as its code cells in order (``program_text``). A program that makes its own
strategy keeps it: that strategy is its hand-built way, so ``hand-built`` only gives it 2 devices.
The program runs in the current folder, which the caller makes fresh for each run.

A program written for JAX (``KERAS_BACKEND=jax``, set by the caller) runs on Keras's JAX backend:
its 2 devices are XLA's (``--xla_force_host_platform_device_count=2``), and its ``hand-built``
way sets Keras's ``DataParallel`` distribution over them before the program runs, unless it
distributes itself (a mesh of its own). The settings that act on TensorFlow's ops
(``TENSORFLOW_ONLY``) are refused for it.
"""

from __future__ import annotations

import inspect
import json
import linecache
import os
import resource
import sys
import time
import traceback
import types
import warnings
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
PROGRAM, WAY, OUT = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
EPOCHS = int(os.environ.get("CORPUS_EPOCHS", "2"))
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

#: The Keras the program is written for: Keras 3, or Keras 2 (``tf_keras``, what ``tf.keras`` is
#: with ``TF_USE_LEGACY_KERAS=1``), for a program written for TensorFlow before 2.16 (its entry's
#: ``"keras": "tf_keras"``, which the caller turns into that variable).
KERAS = "tf_keras" if os.environ.get("TF_USE_LEGACY_KERAS") == "1" else "keras"
#: Keras 3's backend: TensorFlow's, or JAX's for a program written for it (its entry's
#: ``"backend": "jax"``; the caller sets ``KERAS_BACKEND``, and splits the CPU into XLA's devices).
JAX = os.environ.get("KERAS_BACKEND") == "jax"

if WAY == "autodist":
    import autodist  # first, as the adopted text has it
if KERAS == "tf_keras":
    import tf_keras as keras  # noqa: E402
else:
    import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

if WAY == "hand-built" and not JAX:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

RECORD: dict = {"way": WAY, "fits": [], "evaluates": [], "predicts": [], "warnings": []}
SPEED = os.environ.get("CORPUS_SPEED") == "1"
if SPEED:
    RECORD["speed"] = {"fits": [], "first_step": None}
_DEPTH = [0]


def _numbers(value) -> list:
    array = np.asarray(value, dtype="float64").ravel()
    return array.tolist()


def _summary(value) -> dict:
    leaves = [np.asarray(leaf, dtype="float64") for leaf in tf.nest.flatten(value)]
    return {
        "shapes": [list(leaf.shape) for leaf in leaves],
        "values": [leaf.ravel()[:64].tolist() for leaf in leaves],
        "means": [float(leaf.mean()) if leaf.size else 0.0 for leaf in leaves],
    }


def _recorded(name, record):
    # Keras's method as it is when called, not as it was when this ran: autodist replaces the
    # trainer's evaluate and predict once it trains (every_replica_fed), after this wrapper is made.
    own = vars(keras.Model).get(name)

    def original(self, *args, **kwargs):
        if own is not None:
            return own(self, *args, **kwargs)
        return getattr(super(keras.Model, self), name)(*args, **kwargs)

    def method(self, *args, **kwargs):
        if name == "fit" and os.environ.get("CORPUS_BATCH_ORDER") == "reversed":
            reverse_batches(self)
        if name == "fit" and kwargs.get("epochs", 1) > kwargs.get("initial_epoch", 0) + EPOCHS:
            kwargs["epochs"] = kwargs.get("initial_epoch", 0) + EPOCHS  # a tuner's later brackets start past 0
        if name == "fit" and SPEED and _DEPTH[0] == 0:
            kwargs = timed(kwargs)
        _DEPTH[0] += 1
        try:
            result = original(self, *args, **kwargs)
        finally:
            _DEPTH[0] -= 1
        if _DEPTH[0] == 0:
            record(self, result)
        return result

    setattr(keras.Model, name, method)


class Timing(keras.callbacks.Callback):
    """``CORPUS_SPEED=1``: each epoch's wall and CPU seconds (this process's, every thread's) and the
    optimizer steps it took, and once per process the seconds from its start to the end of its first
    trained step. No batch-level hook (autodist keeps ``steps_per_execution`` 1 for a callback with
    one, and Keras calls such hooks in their own threads): the first step is timed by the model's
    first call of its train function, which is put back as it was after that call."""

    def __init__(self):
        super().__init__()
        self.epochs = []
        self.fit = {"epochs": self.epochs}
        RECORD["speed"]["fits"].append(self.fit)

    def on_train_begin(self, logs=None):
        per_call = getattr(self.model, "steps_per_execution", None)  # as the fit runs it: autodist's default too
        self.fit["steps_per_execution"] = int(per_call) if isinstance(per_call, int) else None
        if RECORD["speed"]["first_step"] is not None:
            return
        model, train = self.model, self.model.train_function

        def first(*args, **kwargs):
            result = train(*args, **kwargs)
            RECORD["speed"]["first_step"] = time.time() - float(os.environ["CORPUS_LAUNCHED"])
            model.train_function = train
            return result

        model.train_function = first

    def _iterations(self):
        optimizer = getattr(self.model, "optimizer", None)
        return int(tf.convert_to_tensor(optimizer.iterations)) if optimizer is not None else 0  # mirrored too

    def on_epoch_begin(self, epoch, logs=None):
        self.began = (time.perf_counter(), time.process_time(), self._iterations())

    def on_epoch_end(self, epoch, logs=None):
        wall, cpu, iterations = self.began
        steps = self._iterations() - iterations or self.params.get("steps")  # a GAN's own optimizers: Keras's count
        self.epochs.append({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "steps": steps})


def exact_epochs(kwargs: dict) -> dict:
    """A ``fit``'s keywords in the speed mode: exactly ``EPOCHS`` epochs after its first."""
    return {**kwargs, "epochs": kwargs.get("initial_epoch", 0) + EPOCHS}


def timed(kwargs: dict) -> dict:
    """A ``Model.fit``'s keywords in the speed mode: its epochs exact, and :class:`Timing` added to its callbacks."""
    return {**exact_epochs(kwargs), "callbacks": [*(kwargs.get("callbacks") or []), Timing()]}


if SPEED and WAY == "autodist":  # autodist plans for the epochs it is given: those Model.fit then runs
    _AUTODIST_FIT = autodist.fit

    def _autodist_fit(model, *args, **kwargs):
        return _AUTODIST_FIT(model, *args, **(exact_epochs(kwargs) if isinstance(model, keras.Model) else kwargs))

    autodist.fit = _autodist_fit


def _fit_record(model, history):
    weights = [np.asarray(w, dtype="float64") for w in model.get_weights()]
    RECORD["fits"].append(
        {
            "history": {k: [float(v) for v in vs] for k, vs in history.history.items()},
            "weights": [w.ravel()[:256].tolist() for w in weights],
            "weight_norms": [float(np.sqrt((w**2).sum())) for w in weights],
            "plan": str(getattr(getattr(history, "plan", None), "strategy", "") or ""),
        }
    )


_recorded("fit", _fit_record)

#: Every Keras model the program makes, in the order it makes them, held to its end (a weak
#: reference would lose the ones the collector frees first, at no fixed moment): a program that
#: calls no ``fit`` (its own loop, or none) is compared by their weights at its end (``finals``).
MADE: list = []
_MODEL_INIT = keras.Model.__init__


def _made(self, *args, **kwargs):
    _MODEL_INIT(self, *args, **kwargs)
    MADE.append(self)


keras.Model.__init__ = _made


def _finals() -> list:
    """The first 256 numbers of each weight of each model the program made."""
    return [np.asarray(weight, dtype="float64").ravel()[:256].tolist() for model in MADE for weight in model.get_weights()]
_recorded(
    "evaluate",
    lambda model, result: RECORD["evaluates"].append(
        _numbers(result if not isinstance(result, dict) else list(result.values()))
    ),
)
_recorded("predict", lambda model, result: RECORD["predicts"].append(_summary(result)))


def fix_draws() -> None:
    """``CORPUS_DRAWS=off``: inside a traced step, Keras's random ops with a layer's seed (a
    ``SeedGenerator``, or none: Keras's global one) give fixed values (dropout keeps its input, a
    normal draw its mean, a uniform one its middle, a shuffle its order), so two ways that differ
    then differ by more than their random numbers. TensorFlow's ``tf.random`` draws inside a traced
    function are fixed the same way. An initializer's draws (a numeric seed, made
    inside the step when a model builds there) and eager draws stay as they are."""
    if KERAS == "tf_keras":
        _fix_tf_keras_draws()
    else:
        _fix_keras_draws()
    _fix_tf_draws()


def _fill(shape, number, dtype):
    dtype = keras.backend.floatx() if dtype is None else dtype  # the program's Keras's default float
    if KERAS == "tf_keras":  # never Keras 3 in a tf_keras program: its import draws from Python's random (rich)
        return tf.fill(shape, tf.cast(number, tf.as_dtype(dtype)))
    from keras.src import backend

    return tf.fill(shape, tf.cast(number, backend.standardize_dtype(dtype)))


def _fix_tf_keras_draws() -> None:
    """tf_keras's layers draw through their ``backend.RandomGenerator`` (Dropout, GaussianNoise,
    the augmentation layers): inside a traced function its draws are fixed as Keras 3's are."""
    from tf_keras.src import backend as legacy

    def fixed(name, value):
        original = getattr(legacy.RandomGenerator, name)

        def draw(self, *args, **kwargs):
            return value(*args, **kwargs) if tf.inside_function() else original(self, *args, **kwargs)

        setattr(legacy.RandomGenerator, name, draw)

    fixed("random_normal", lambda shape, mean=0.0, stddev=1.0, dtype=None, nonce=None: _fill(shape, mean, dtype))
    fixed("truncated_normal", lambda shape, mean=0.0, stddev=1.0, dtype=None, nonce=None: _fill(shape, mean, dtype))
    fixed(
        "random_uniform",
        lambda shape, minval=0.0, maxval=None, dtype=None, nonce=None: _fill(
            shape, (minval + (1.0 if maxval is None else maxval)) / 2, dtype
        ),
    )
    fixed("dropout", lambda inputs, rate, noise_shape=None: inputs)


def _fix_keras_draws() -> None:
    from keras.src.backend.tensorflow import random as draws

    from keras.src.random.seed_generator import SeedGenerator

    def fixed(name, value):
        original = getattr(draws, name)
        signature = inspect.signature(original)

        def draw(*args, **kwargs):
            seed = signature.bind(*args, **kwargs).arguments.get("seed")
            # a layer's seed: its SeedGenerator, one drawn from it (a tensor: augmentation layers), or
            # none (Keras's global one); an initializer's seed is a number
            layers_draw = seed is None or isinstance(seed, SeedGenerator) or tf.is_tensor(seed)
            return value(*args, **kwargs) if tf.inside_function() and layers_draw else original(*args, **kwargs)

        setattr(draws, name, draw)

    fill = _fill
    fixed("normal", lambda shape, mean=0.0, stddev=1.0, dtype=None, seed=None: fill(shape, mean, dtype))
    fixed("truncated_normal", lambda shape, mean=0.0, stddev=1.0, dtype=None, seed=None: fill(shape, mean, dtype))
    fixed(
        "uniform",
        lambda shape, minval=0.0, maxval=1.0, dtype=None, seed=None: fill(shape, (minval + maxval) / 2, dtype),
    )
    fixed("randint", lambda shape, minval, maxval, dtype="int32", seed=None: fill(shape, minval, dtype))
    fixed("dropout", lambda inputs, rate, noise_shape=None, seed=None: inputs)
    fixed("shuffle", lambda x, axis=0, seed=None: x)


def _fix_tf_draws() -> None:
    """TensorFlow's stateful draws in a layer's call or a step of the program's own (keras.io's VAE):
    inside a traced function, fixed the same way; eager draws (data, initial values) stay."""
    fill = _fill

    def tf_fixed(name, value):
        original = getattr(tf.random, name)

        def draw(*args, **kwargs):
            return value(*args, **kwargs) if tf.inside_function() else original(*args, **kwargs)

        setattr(tf.random, name, draw)

    def mean_of(shape, mean=0.0, stddev=1.0, dtype=tf.float32, seed=None, name=None):
        return fill(shape, mean, dtype)

    tf_fixed("normal", mean_of)
    tf_fixed("truncated_normal", mean_of)
    tf_fixed(
        "uniform",
        lambda shape, minval=0, maxval=None, dtype=tf.float32, seed=None, name=None: fill(
            shape, (minval + (1 if maxval is None else maxval)) / 2, dtype
        ),
    )
    tf_fixed("shuffle", lambda value, seed=None, name=None: value)


def reverse_batches(model) -> None:
    """``CORPUS_BATCH_ORDER=reversed``: ``model``'s ``train_step`` (Keras's or the program's own)
    takes each batch's samples in reverse order. A step whose losses are means over the samples
    is mathematically the same step; float32 takes its sums in another order, as a batch split
    over replicas does: how far that alone moves the program is its own rounding."""
    if getattr(model.train_step, "corpus_reversed", False):
        return
    step = model.train_step

    def reversed_step(data):
        def backwards(value):
            if isinstance(value, tf.Tensor) and value.shape.rank:
                return tf.reverse(value, [0])
            return value

        return step(tf.nest.map_structure(backwards, data))

    reversed_step.corpus_reversed = True
    model.train_step = reversed_step
    model.train_function = None


def densify_gradients() -> None:
    """``CORPUS_GRADIENTS=dense``: every optimizer applies a sparse gradient (``tf.IndexedSlices``,
    an embedding's) as the dense tensor it sums to. Keras's sparse update squares each slice
    apart (its sparse-aware ``square``), so a row that several slices hold (each replica's slice of
    a position embedding looked up once per batch, all-reduced by concatenation) gets Adam's second
    moment from the sum of their squares, where one device, with one slice, squares the sum."""
    from keras.src.optimizers import base_optimizer

    original = base_optimizer.BaseOptimizer.apply

    def apply(self, grads, trainable_variables=None):
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        return original(self, grads, trainable_variables)

    base_optimizer.BaseOptimizer.apply = apply


def fix_order() -> None:
    """``CORPUS_ORDER=fixed``: every tf.data ``shuffle`` draws its order once and keeps it
    (``reshuffle_each_iteration=False``), so a way that reads its input once more than another
    (Keras's symbolic build under a strategy) trains in the same order."""
    original = tf.data.Dataset.shuffle

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None, name=None):
        return original(self, buffer_size, seed=seed, reshuffle_each_iteration=False, name=name)

    tf.data.Dataset.shuffle = shuffle


def seed_initializers() -> None:
    """``CORPUS_INITIALIZERS=seeded``: an initializer that is a plain function taking a ``seed``
    (the TensorFlow guide's ``Dense(kernel_initializer=tf.random.normal)``) draws with a fixed one,
    so its numbers no longer depend on where Keras calls it (inside one device's first step, or
    before it under a strategy): two ways that differ then differ by more than their initial weights."""
    import functools

    from keras.src import initializers

    original = initializers.get

    def get(identifier):
        found = original(identifier)
        if isinstance(found, initializers.Initializer) or not callable(found):
            return found
        try:
            takes_seed = "seed" in inspect.signature(found).parameters
        except (TypeError, ValueError):
            return found
        if not takes_seed:
            return found

        @functools.wraps(found)  # its name and module: a model that saves it serializes the function's name
        def seeded(*args, **kwargs):
            return found(*args, **{**kwargs, "seed": 1})

        return seeded

    initializers.get = get


def synchronize_batchnorm() -> None:
    """``CORPUS_BATCHNORM=synchronized``: every ``BatchNormalization`` made is ``synchronized=True``
    (Keras's own argument: its batch statistics all-reduced over the replicas, the global batch's),
    so two ways that differ then differ by more than each replica's own statistics."""
    original = keras.layers.BatchNormalization.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **{**kwargs, "synchronized": True})

    keras.layers.BatchNormalization.__init__ = __init__


#: The settings that reach into Keras 3's own modules, so act on a Keras 3 program only.
KERAS_3_ONLY = ("CORPUS_INITIALIZERS", "CORPUS_GRADIENTS")
#: The settings that act on TensorFlow's ops and tensors (its draws, its op determinism, its
#: sparse gradients, a step's tf.Tensor batch), so do nothing to a program on JAX.
TENSORFLOW_ONLY = ("CORPUS_DRAWS", "CORPUS_DETERMINISM", "CORPUS_GRADIENTS", "CORPUS_BATCH_ORDER")


def main() -> None:
    from tests.corpus import stand_ins
    from tests.corpus.text import own_distribution, program_text

    stand_ins.install(KERAS)
    if KERAS == "tf_keras" and any(os.environ.get(name) for name in KERAS_3_ONLY):
        raise SystemExit(f"run.py: {', '.join(KERAS_3_ONLY)} act on Keras 3; this program is written for tf_keras")
    if JAX and any(os.environ.get(name) for name in TENSORFLOW_ONLY):
        raise SystemExit(f"run.py: {', '.join(TENSORFLOW_ONLY)} act on TensorFlow; this program runs on JAX")
    if os.environ.get("CORPUS_DRAWS") == "off":
        fix_draws()
    if os.environ.get("CORPUS_ORDER") == "fixed":
        fix_order()
    if os.environ.get("CORPUS_INITIALIZERS") == "seeded":
        seed_initializers()
    if os.environ.get("CORPUS_BATCHNORM") == "synchronized":
        synchronize_batchnorm()
    if os.environ.get("CORPUS_DETERMINISM") == "on":
        tf.config.experimental.enable_op_determinism()
    if os.environ.get("CORPUS_GRADIENTS") == "dense":
        densify_gradients()
    if os.environ.get("CORPUS_FLOATX"):
        keras.backend.set_floatx(os.environ["CORPUS_FLOATX"])  # float64: the rounding of float32 sums out of the way
    keras.utils.set_random_seed(0)
    text = program_text(PROGRAM, shell=True)
    for command in stand_ins.shell_blocks(text):  # a keras.io example's setup for its data, run first
        stand_ins.shell(command)
    if WAY == "autodist":
        from tests.adoption import adopt

        text, _ = adopt(text)
    # A notebook runs as its code cells: its tracebacks show those lines, under a name of their own.
    filename = str(PROGRAM) if PROGRAM.suffix == ".py" else f"{PROGRAM} (its code cells)"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    code = compile(text, filename, "exec", dont_inherit=True)  # not run.py's own `from __future__ import annotations`
    sys.path.insert(0, os.getcwd())  # as Jupyter, or `python program.py` in its folder: what it writes there imports
    scope = None
    if WAY == "hand-built" and not own_distribution(text):  # the program's own is its hand-built one
        if JAX:  # Keras's data parallelism over XLA's 2 CPU devices, set before the program makes anything
            keras.distribution.set_distribution(keras.distribution.DataParallel())
        else:
            scope = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if scope is not None:
                scope.__enter__()
            # the program's own __main__ module, as `python program.py` makes it (runpy does the same):
            # what looks itself up there (a forward reference, a pickled class) finds the program's names
            main_module = types.ModuleType("__main__")
            main_module.__dict__.update(__file__=str(PROGRAM), __corpus_shell__=stand_ins.shell)
            sys.modules["__main__"] = main_module
            exec(code, main_module.__dict__)
            RECORD["outcome"] = "ran"
        except Exception as err:  # the program's failure is what this way recorded
            name = type(err).__name__
            RECORD["outcome"] = f"{name}: {' '.join(str(err).split())[:300]}"
            RECORD["autodist_error"] = any(cls.__name__ == "AutodistError" for cls in type(err).__mro__)
            RECORD["traceback"] = traceback.format_exc()[-3000:]
    if not RECORD["fits"]:  # its own loop, or none: what its models hold at its end
        try:
            RECORD["finals"] = _finals()
        except Exception as err:  # a model that cannot give its weights: not compared
            RECORD["finals_error"] = f"{type(err).__name__}: {err}"[:300]
    RECORD["warnings"] = sorted({str(w.message) for w in caught if type(w.message).__name__ == "AutodistWarning"})
    RECORD["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    OUT.write_text(json.dumps(RECORD))


if __name__ == "__main__":
    main()
