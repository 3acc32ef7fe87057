"""JAX's runtime and Keras's JAX variables, read where they have no public accessor (touches
``jax.backend_state`` and ``keras.jax_variable_layout``).

Example:
    >>> joined_jax_cluster() if "jax" not in __import__("sys").modules else False
    False
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["backends_started", "joined_jax_cluster", "set_layout", "takes_layouts"]


def backends_started() -> bool:
    """Whether JAX's backends are initialised (``keras.distribution.initialize`` must come before);
    ``False`` where JAX does not tell."""
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):
        return False


def joined_jax_cluster() -> bool:
    """Whether this process has joined a multi-process JAX runtime (``jax.distributed`` has a
    client: Ray's JaxTrainer joins TPU workers itself); ``False`` where JAX does not tell."""
    jax = sys.modules.get("jax")
    if jax is None:
        return False
    public = getattr(getattr(jax, "distributed", None), "is_initialized", None)  # JAX 0.4.34 and later
    if callable(public):
        return bool(public())
    try:
        from jax._src import distributed

        return distributed.global_state.client is not None
    except Exception:  # another JAX: it says nothing
        return False


def takes_layouts(variables: list[Any]) -> list[Any]:
    """The variables that cannot take a layout (Keras's ``JaxVariable`` keeps it in ``_layout``)."""
    return [v for v in variables if not hasattr(v, "_layout")]


def set_layout(variable: Any, layout: Any) -> None:
    """Place a Keras JAX variable by ``layout`` (``None`` drops the one it had): assigning its
    value again re-places it (``JaxVariable._direct_assign`` reads the layout)."""
    variable._layout = layout
    if layout is not None:
        variable.assign(variable.value)
