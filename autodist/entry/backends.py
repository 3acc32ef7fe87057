"""The one place the backend is chosen: TensorFlow's ``tf.distribute``, or Keras 3 on JAX.

Every entry point (``fit``, ``init``, ``@distributed``, the import hook) asks
:func:`backend_for` and then calls the same :class:`~autodist.core.fit_call.Backend` methods. Only
the chosen backend's module is imported (the reason for the imports inside the function): a
TensorFlow run never loads the JAX side, nor a JAX run the TensorFlow side.

Example:
    >>> backend_for({"KERAS_BACKEND": "jax"}).name
    'jax'
"""

from __future__ import annotations

from collections.abc import Mapping

from autodist.detection.jax_devices import training_backend
from autodist.core.fit_call import Backend

__all__ = ["backend_for"]


def backend_for(environ: Mapping[str, str]) -> Backend:
    """The backend autodist trains on here: Keras 3's (``KERAS_BACKEND``, or the Keras already
    imported), or TensorFlow for tf_keras; the same rule as detection's (``training_backend``)."""
    if training_backend(environ) == "jax":
        from autodist.jax.backend import JAX

        return JAX
    from autodist.tensorflow.backend import TENSORFLOW

    return TENSORFLOW
