"""The import hook: what ``import autodist`` arranges, and nothing else.

``import autodist`` imports neither TensorFlow nor JAX. It asks the chosen backend to act once
its framework is imported (:meth:`autodist.core.fit_call.Backend.at_import`): on TensorFlow, the
strategy made current before the script builds anything (:mod:`autodist.tensorflow.current_strategy`); on JAX
in a cluster, the processes joined before JAX computes anything.

Example:
    >>> install({"AUTODIST_ACTIVATE": "0", "KERAS_BACKEND": "jax"})  # JAX, no cluster: nothing to arrange
"""

from __future__ import annotations

from collections.abc import Mapping

from autodist.entry.backends import backend_for
from autodist.core.framework_import import unwatch_all

__all__ = ["install", "uninstall"]


def install(environ: Mapping[str, str]) -> None:
    """Arrange the chosen backend's activation at import. Called by ``import autodist``."""
    backend_for(environ).at_import(environ)


def uninstall() -> None:
    """Drop the hook (commands that only report, such as ``inspect``, create no strategy)."""
    unwatch_all()
