"""The training input is classified once, at the entry (autodist/core/input_kinds.py): each kind
answers what later steps ask, and no other module looks at the raw ``x``. No TensorFlow here."""

from __future__ import annotations

import math
import pathlib
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autodist.core.input_kinds import (
    Arrays,
    DatasetCreator,
    IndexedBatches,
    NoInput,
    Other,
    RayShard,
    Stream,
    classify,
    num_samples,
    numpy_view,
)


class PyDataset:  # what autodist reads of a Keras PyDataset: its class name, and x[0]
    def __getitem__(self, index):
        return np.ones((6, 2)), np.ones(6)


class DataIterator:  # a Ray Data shard, by its class and module as Ray defines them
    pass


DataIterator.__module__ = "ray.data.iterator"


def _generator():
    yield np.ones((2, 2)), np.ones(2)


@pytest.mark.parametrize(
    ("x", "kind", "batches_itself", "length_unknown", "own_batch"),
    [
        (None, NoInput, False, False, None),
        (np.ones((10, 3)), Arrays, False, False, None),
        ({"a": np.ones((10, 3)), "b": [np.ones(10), np.ones((10, 2))]}, Arrays, False, False, None),
        (_generator(), Stream, True, True, None),
        (iter([1, 2]), Stream, True, True, None),
        (PyDataset(), IndexedBatches, True, False, 6),
        (type("DatasetCreator", (), {})(), DatasetCreator, True, False, None),
        (DataIterator(), RayShard, False, False, None),
        ([[1.0, 2.0], [3.0, 4.0]], Other, False, False, None),
    ],
    ids=["none", "array", "nested", "generator", "iterator", "py_dataset", "dataset_creator", "ray_shard", "list"],
)
def test_each_kind_of_input_is_classified_once_and_answers_for_itself(x, kind, batches_itself, length_unknown, own_batch):
    data = classify(x, "y")
    assert type(data) is kind and data.raw is x and data.y == "y"
    assert (data.batches_itself, data.length_unknown(), data.own_batch()) == (batches_itself, length_unknown, own_batch)
    assert data.requested_batch(48, {}) == 48  # a batch_size given is the batch asked for, whatever the input
    if kind is not Arrays:
        assert data.arrays is None and data.batches_per_epoch(8, {}) is None and data.epoch_samples({}) is None


def test_pandas_is_read_as_keras_reads_it_and_the_callers_object_is_kept():
    pd = pytest.importorskip("pandas")
    frame, labels = pd.DataFrame({"a": np.arange(5.0), "b": np.arange(5.0) * 2}), pd.Series(np.arange(5))
    data = classify({"features": frame}, labels)
    assert isinstance(data, Arrays) and data.from_pandas and data.raw["features"] is frame
    assert np.array_equal(data.arrays["features"], frame.to_numpy()) and np.array_equal(data.targets, labels.to_numpy())
    assert data.numpy_only and data.samples() == 5
    plain = np.ones((5, 2))
    assert classify(plain).arrays is plain and not classify(plain).from_pandas  # no copy where nothing is pandas


def test_pandas_is_copied_only_where_autodist_reads_the_arrays_itself():
    """Counting, batching and asking for the batch read the DataFrame as it is (Keras copies it
    itself where it batches it); the first samples are converted alone."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": np.arange(100.0), "b": np.arange(100.0)})
    data = classify(frame, pd.Series(np.arange(100)))
    assert (data.samples(), data.batches_per_epoch(16, {}), data.requested_batch(None, {"steps_per_epoch": 3})) == (100, 7, 34)
    assert data.numpy_only and data.from_pandas
    assert "arrays" not in vars(data) and "targets" not in vars(data)  # nothing converted yet
    assert np.array_equal(data.head(2), frame.to_numpy()[:2]) and "arrays" not in vars(data)


arrays_of = st.integers(min_value=1, max_value=300).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.recursive(
            st.integers(min_value=0, max_value=2).map(lambda extra: np.zeros((n,) + (2,) * extra)),
            lambda inner: st.lists(inner, min_size=1, max_size=3)
            | st.dictionaries(st.sampled_from("abc"), inner, min_size=1, max_size=3),
            max_leaves=5,
        ),
    )
)


@settings(max_examples=60, deadline=None)
@given(
    sized=arrays_of,
    batch=st.integers(min_value=1, max_value=64),
    steps=st.integers(min_value=1, max_value=20),
    split=st.sampled_from([0.0, 0.2, 0.5]),
)
def test_arrays_of_any_nesting_count_their_samples_and_batches_as_keras_does(sized, batch, steps, split):
    """Any dict/list nesting of arrays of one length: Keras's count of samples, of batches per
    epoch (validation_split taken off first), and the batch Keras takes for steps_per_epoch."""
    n, x = sized
    data = classify(x)
    assert isinstance(data, Arrays) and data.samples() == n == num_samples(x) and data.arrays is x
    kwargs = {"validation_split": split} if split else {}
    train = int(math.floor(n * (1.0 - split)))
    assert data.epoch_samples(kwargs) == train
    assert data.batches_per_epoch(batch, kwargs) == math.ceil(train / batch)
    assert data.batches_per_epoch(None, kwargs) == math.ceil(train / 32)  # Keras's default batch
    asked = data.requested_batch(None, {**kwargs, "steps_per_epoch": steps})
    assert asked == (math.ceil(train / steps) if train else None)
    assert data.requested_batch(None, kwargs) is None  # nothing asked: Keras's default


def test_numpy_view_keeps_the_callers_containers_where_nothing_is_pandas():
    nested = {"a": [np.ones(3), (np.zeros(3),)]}
    assert numpy_view(nested) is nested


def test_no_module_but_input_kinds_looks_at_what_the_raw_input_is():
    """The checks that tell one kind of input from another live in one module; everything after
    the entry asks the classified input (``call.data``) instead."""
    root = pathlib.Path(__file__).resolve().parents[1] / "autodist"
    looks = re.compile(
        r"is_dataset\(|is_data_iterator\(|inspect\.isgenerator\(|\.to_numpy\(|\"PyDataset\"|\"DatasetCreator\""
    )
    found = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name == "core/input_kinds.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if looks.search(code) and not re.match(r"\s*(def |>>>)", code):
                found.append(f"{name}:{number}: {line.strip()}")
    assert not found, "classify the input once (autodist/core/input_kinds.py), and ask it:\n" + "\n".join(found)


class _Masked:
    """A composite tensor of the script's own (the TensorFlow guide's ``MaskedTensor``, a
    ``tf.experimental.ExtensionType``): a shape and a dtype, and no ``__getitem__``."""

    shape, dtype = (3, 2), "float32"


def test_a_composite_tensor_that_cannot_be_sliced_counts_its_samples_and_is_named_unsplittable():
    """The Extension types guide fits a MaskedTensor: Keras counts its leading dimension, and
    tf.distribute cannot split it over replicas (a hand-built strategy fails on it): the input says
    so, and numpy, tensors' stand-ins and plain Python values do not."""
    masked = classify(_Masked(), np.ones((3, 1)))
    assert masked.samples() == 3
    assert "holds a _Masked, a composite tensor that cannot be sliced" in masked.unsplittable()
    assert "_Masked" in classify({"a": np.ones((3, 1)), "b": [_Masked()]}).unsplittable()
    assert classify(np.ones((3, 2)), _Masked()).unsplittable() is not None  # in y too
    for plain in (np.ones((3, 2)), [np.ones(3), np.ones(3)], {"a": np.ones((3, 1))}, [1.0, 2.0, 3.0]):
        assert classify(plain).unsplittable() is None, plain


def test_an_input_that_cannot_be_split_is_refused_on_replicas_with_the_fix():
    """Where the plan keeps several replicas for such an input (here a strategy asked for), it is
    refused when prepared, before Keras fails on it inside TensorFlow: what, why, and the fix."""
    from autodist.core.inputs import prepare_input
    from autodist.errors import ArgumentError
    from autodist.planning.planner import plan
    from tests.conftest import make_snapshot

    kept = plan(make_snapshot(num_cpu_devices=2), batch_size=32, strategy="mirrored")
    with pytest.raises(ArgumentError) as caught:
        prepare_input(classify(_Masked(), np.ones((3, 1))), kept, {})
    said = str(caught.value)
    assert "holds a _Masked" in said and "2 replicas of mirrored" in said and "AUTODIST_STRATEGY=default" in said


def test_each_kind_answers_for_itself_what_fit_tune_and_the_probe_ask():
    """What each kind says of itself, by value: its form for ``tune``, the batch probe's sample
    (pandas is left alone), a generator's first batch put back in front of the rest, what
    parameter servers can rebuild; and how ``fit`` makes each ready-made kind ready (as Keras reads
    it, the per-worker shuffle note where Keras shuffles it on a cluster, never for a generator)."""
    import pandas as pd

    from autodist.core.inputs import prepare_input
    from autodist.detection.cluster import ClusterInfo
    from autodist.planning.plans import Plan

    arrays = classify(np.arange(10.0).reshape(5, 2), np.arange(5.0))
    x, y, samples, dataset = arrays.timing_form({"validation_split": 0.2})
    assert (x.shape, y.shape, samples, dataset) == ((5, 2), (5,), 4, False)
    assert arrays.probe_sample(2).tolist() == [[0.0, 1.0], [2.0, 3.0]] and arrays.graph_form()[1] is arrays.targets
    frame = classify(pd.DataFrame({"a": [1.0, 2.0]}), np.ones(2))
    assert frame.probe_sample(1) is None and frame.timing_form({})[2] == 2
    for other in (classify(iter([])), classify(PyDataset()), classify([1, "a"]), classify(None)):
        assert other.timing_form({}) is None and other.probe_sample(2) is None and other.graph_form() is None
    taken = classify(iter([("a", 1), ("b", 2)]), None).first_batch_taken()
    assert taken[0] == ("a", 1) and list(taken[1].raw) == [("a", 1), ("b", 2)] and isinstance(taken[1], Stream)
    assert classify(PyDataset()).first_batch_taken() is None and not classify(PyDataset()).batch_needed(None)

    cluster = ClusterInfo("TF_CONFIG", "worker", 0, {"worker": ["a:1", "b:1"]})
    on_cluster = Plan("multi_worker_mirrored", 2, num_workers=2, cluster=cluster, global_batch_size=8)
    note = prepare_input(classify(PyDataset()), on_cluster, {"shuffle": True}).warnings
    assert len(note) == 1 and "on each worker in its own order" in note[0]
    generator = prepare_input(classify(iter([])), on_cluster, {"shuffle": True})
    assert generator.warnings == () and generator.fit_kwargs == {"shuffle": True}
    other = prepare_input(classify([1, "a"]), on_cluster, {"shuffle": True})
    assert other.fit_kwargs == {"shuffle": True, "batch_size": 8} and len(other.warnings) == 1
    alone = prepare_input(classify([1, "a"]), Plan("default", 1, global_batch_size=8), {})
    assert (alone.fit_kwargs, alone.warnings) == ({"batch_size": 8}, ())
