"""Whether a model's output for a sample depends on the other samples in its batch, measured on a
few of the caller's own samples before training on more than one replica.

Such a model (keras.io's collaborative filtering: ``ops.tensordot(users, movies, 2)`` sums over
the whole batch; a layer that normalises over the batch axis in inference too) computes on each
replica's share where one device computes on the whole batch, so its numbers are the hand-built
strategy's, not one device's. BatchNormalization (batch statistics only in training) and random
layers are read from the model and warned by the plan; this probe finds what the layers do not
say. It runs the model in inference three times, on 4 samples and on their two halves, at the
start of ``fit`` (the model is built by then), and warns when the outputs differ.

It runs nothing where it cannot tell without changing what training draws or keeps: a model that
is not built, a stateful layer (an RNN's ``stateful=True``), a layer that draws random numbers
(the plan warns for those), an input that is not arrays (a dataset would have to be read).

Example:
    >>> import numpy as np
    >>> sample = first_samples({"a": np.arange(10), "b": np.ones((10, 2))})
    >>> sample["a"].tolist(), sample["b"].shape
    ([0, 1, 2, 3], (4, 2))
    >>> first_samples(np.arange(3)), first_samples([np.arange(8), np.arange(9)])
    (None, None)
"""

from __future__ import annotations

from typing import Any

from autodist.core.inputs import take_samples
from autodist.detection.model_info import describe_model
from autodist.log import warn_all
from autodist.upstream.keras_models import all_layers

__all__ = ["SAMPLES", "batch_mixing_check", "first_samples", "mixing_gap"]

#: Samples the probe runs the model on (then on each half of them).
SAMPLES = 4
#: An output gap above this, relative to the outputs' size, is the batch mixing, not rounding.
TOLERANCE = 1e-5


def first_samples(x: Any) -> Any:
    """The first :data:`SAMPLES` samples of ``x`` when ``x`` is a NumPy array, or a list, tuple or
    dict of them with one length (at least :data:`SAMPLES`); ``None`` for anything else."""
    import numpy as np

    leaves: list[Any] = []

    def take(value: Any) -> Any:
        if isinstance(value, np.ndarray) and value.ndim >= 1:
            leaves.append(value)
            return value[:SAMPLES]
        if isinstance(value, dict):
            return {key: take(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)) and value:
            return type(value)(take(item) for item in value)
        raise TypeError

    try:
        sample = take(x)
    except TypeError:
        return None
    lengths = {len(leaf) for leaf in leaves}
    return sample if len(lengths) == 1 and lengths.pop() >= SAMPLES else None


def _can_probe(model: Any) -> bool:
    """Built, no stateful layer, no layer that draws random numbers (in inference a sampling
    layer may still draw, and a draw would move the seed training starts from)."""
    if not getattr(model, "built", False):
        return False
    if any(getattr(layer, "stateful", False) is True for layer in all_layers(model)):
        return False
    info = describe_model(model)
    return not (info.random_layers or info.own_draw_layers)


def mixing_gap(model: Any, sample: Any) -> float | None:
    """How far apart, relative to their size, ``model``'s inference outputs for ``sample`` are when
    it runs on the whole sample and on its two halves (``0.0``: each sample on its own); ``None``
    when the model cannot be probed or fails on the sample."""
    import numpy as np
    import tensorflow as tf

    if sample is None or not _can_probe(model):
        return None
    try:
        whole = model(sample, training=False)
        parts_of = (slice(0, SAMPLES // 2), slice(SAMPLES // 2, None))
        halves = [model(take_samples(sample, part), training=False) for part in parts_of]
        parts = [tf.nest.flatten(whole), *(tf.nest.flatten(half) for half in halves)]
    except Exception:  # a model whose call wants more than its fit inputs: nothing measured
        return None
    gap = 0.0
    for one, first, second in zip(*parts):
        one = np.asarray(one, dtype="float64")
        split = np.concatenate([np.asarray(first, dtype="float64"), np.asarray(second, dtype="float64")])
        if one.shape != split.shape:
            return None
        if one.size:
            gap = max(gap, float(np.max(np.abs(one - split)) / max(1.0, float(np.max(np.abs(one))))))
    return gap


#: What the warning says (filled with the measured gap and the plan's sizes).
MIXES_BATCH = (
    "The model's output for a sample depends on the other samples in its batch: on 4 of your "
    "samples its outputs differ by {gap:.2g} when they go through it as 2 batches of 2 (an op that "
    "reduces over the batch axis, such as a tensordot or a sum over the whole batch). On "
    "{num_replicas} replicas each computes on its share ({per_replica} samples), where one device "
    "computes on the global batch of {global_batch}, so training differs from model.fit on one "
    "device (it trains as model.fit under a hand-built strategy does). Train on one replica "
    "(strategy='default' or 'one_device') for one device's numbers, or compute each sample's output "
    "from that sample alone"
)


def batch_mixing_check(keras_module: Any, x: Any, num_replicas: int, per_replica: int | None) -> Any:
    """A callback that, at the start of ``fit``, warns (:data:`MIXES_BATCH`) when the model's
    outputs for the first samples of ``x`` depend on their batch; ``None`` on one replica or when
    ``x`` gives no samples to probe with."""
    sample = first_samples(x)
    if num_replicas <= 1 or sample is None:
        return None

    class BatchMixingCheck(keras_module.callbacks.Callback):
        measured = False  # once per fit, though a resumed fit begins training more than once

        def on_train_begin(self, logs: Any = None) -> None:
            if self.measured:
                return
            self.measured = True
            gap = mixing_gap(self.model, sample)
            if gap is not None and gap > TOLERANCE:
                global_batch = None if per_replica is None else per_replica * num_replicas
                sizes = {"num_replicas": num_replicas, "per_replica": per_replica, "global_batch": global_batch}
                warn_all([MIXES_BATCH.format(gap=gap, **sizes)])

    return BatchMixingCheck()
