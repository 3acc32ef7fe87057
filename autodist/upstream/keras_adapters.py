"""Keras 3's data adapters for Python data, a ``keras.utils.PyDataset`` or a generator (touch
``keras.python_batches``): the patch behind the workaround ``batches_copied`` of
:mod:`autodist.planning.keras_compat`.

Keras feeds both through ``tf.data.Dataset.from_generator``. Under a replicated strategy
TensorFlow cannot see that dataset's batch size and splits each batch with its legacy re-batching
(``_LegacyRebatchDataset``), whose slice of a batch is a view of the batch's memory when the slice
starts on a 64-byte boundary. For a NumPy array the generator yielded, that memory is the
array's own (``from_generator`` does not copy it), but the view counts as TensorFlow's: an op
whose input has no other reader writes its output there (``y_true - y_pred`` in a loss). A
``PyDataset`` that returns slices of arrays it keeps (``self.y[i * n:(i + 1) * n]``, the common
way) has its targets overwritten by the loss's residuals during its first epoch, and trains every
later epoch on them: History ``[2.29, 3.68, 2.46]`` where one device gives ``[2.29, 0.002, 0.0]``,
in the runs whose arrays start on a 64-byte boundary. autodist hands TensorFlow a copy of every
NumPy leaf of a batch, so what the program keeps is never written.

Example:
    >>> import numpy as np
    >>> kept = np.zeros(4, "float32")
    >>> batch = _copied((kept[:2], {"x": kept[2:]}, None))
    >>> batch[0].base is None, np.shares_memory(batch[1]["x"], kept), batch[2]
    (True, False, None)
"""

from __future__ import annotations

from typing import Any

from autodist.process import replace
from autodist.upstream.surface import patch_once
from autodist.upstream.workaround import Workaround

__all__ = [
    "patch_batches_copied",
    "BATCHES_COPIED",
]


def _copied(batch: Any) -> Any:
    """``batch`` with each NumPy array in it replaced by a copy of its own (everything else, a
    tensor, a string, ``None``, as it is)."""
    import numpy as np
    from keras.src import tree

    return tree.map_structure(lambda leaf: np.array(leaf, copy=True) if isinstance(leaf, np.ndarray) else leaf, batch)


def _copying(generator: Any) -> Any:
    """A ``GeneratorDataAdapter``'s generator (a function that starts one, Keras 3.5 and later; the
    generator itself before) that yields copied batches."""
    if callable(generator) and not hasattr(generator, "__next__"):
        return lambda: (_copied(batch) for batch in generator())
    return (_copied(batch) for batch in generator)


@patch_once("batches_copied", "keras.python_batches")
def patch_batches_copied() -> Any:
    """Copy every NumPy leaf of a batch that a PyDataset or a Python generator gives Keras, before
    TensorFlow sees it."""
    from keras.src.trainers.data_adapters.generator_data_adapter import GeneratorDataAdapter
    from keras.src.trainers.data_adapters.py_dataset_adapter import PyDatasetAdapter

    standardize, init = PyDatasetAdapter._standardize_batch, GeneratorDataAdapter.__init__

    def _standardize_batch(self: Any, batch: Any) -> Any:
        return _copied(standardize(self, batch))

    def __init__(self: Any, generator: Any, *args: Any, **kwargs: Any) -> None:
        init(self, generator, *args, **kwargs)
        self.generator = _copying(self.generator)

    replace(PyDatasetAdapter, "_standardize_batch", _standardize_batch)
    replace(GeneratorDataAdapter, "__init__", __init__)
    return standardize, init


# --- the workarounds whose patches these are (autodist.upstream.keras_workarounds gathers them) ---

BATCHES_COPIED = Workaround(
    name="batches_copied",
    upstream="TensorFlow's legacy re-batching of a generator's batches under tf.distribute (Keras 3's PyDataset and "
    "generator inputs)",
    summary=(
        "Keras feeds a PyDataset or a Python generator through tf.data's from_generator, which keeps a NumPy"
        " batch's memory; under a replicated strategy TensorFlow splits each batch into views of it and, where a"
        " view starts on a 64-byte boundary, lets an op write its output there (y_true - y_pred in a loss). A"
        " PyDataset that returns slices of arrays it keeps has its targets overwritten by the loss's residuals in"
        " the first epoch and trains later epochs on them (History [2.29, 3.68, 2.46] where one device gives"
        " [2.29, 0.002, 0.0]), in the runs whose arrays happen to be so aligned (measured on TensorFlow 2.16.2 and"
        " 2.21.0; 2.18.1 copies the batch itself; Keras 3.16, keras-nightly 3.16.0.dev2026102704 with TensorFlow"
        " 2.22.0rc0, leaves them unchanged, where 3.15.1 with 2.22.0rc0 does not). autodist hands TensorFlow a copy"
        " of every NumPy array in a batch."
    ),
    affected=(("3.3.0", "3.16.0.dev2026102704"),),
    touches=("keras.python_batches",),
    if_fixed="a PyDataset's arrays stay unchanged after fit under a replicated strategy without the copy",
    install=lambda act: patch_batches_copied(),
)
