"""The JAX side of the backend seam (:class:`autodist.core.fit_call.Backend`): ``keras.distribution``.

- at import: in a cluster, join the processes once JAX is imported, before it computes anything
  (:func:`autodist.jax.runtime.join_at_import`); on one host there is nothing to do at import;
- ``init``: join, plan here, build the distribution (:func:`autodist.jax.runtime.init_on_jax`);
- the scope: the distribution's (none for one device);
- ``fit``: :func:`autodist.core.fit_template.run_fit` with :class:`autodist.jax.runtime.JaxFit`'s stages.

Only the hook's part is imported with ``import autodist`` under ``KERAS_BACKEND=jax``; the rest
is imported when it runs (the one reason for imports inside functions here).

Example:
    >>> JAX.name
    'jax'
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from autodist.detection.cluster import detect_cluster
from autodist.errors import AutodistError
from autodist.planning.plans import Plan
from autodist.core.fit_call import FitCall
from autodist.core.framework_import import when_imported
from autodist.settings import activation_enabled

__all__ = ["JAX", "JaxBackend"]


class JaxBackend:
    """Keras 3 on JAX: the processes are joined at import, and ``keras.distribution`` trains."""

    name = "jax"

    def at_import(self, environ: Mapping[str, str]) -> None:
        try:
            in_cluster = activation_enabled(environ) and detect_cluster(environ) is not None
        except AutodistError:
            in_cluster = False  # fit and init raise the malformed definition, with its fix
        if in_cluster:
            when_imported(("jax", "keras"), "jax", lambda: _join(environ))

    def init(self, environ: Mapping[str, str], *, make_global: bool = True, **plan_kwargs: Any) -> tuple[Plan, Any]:
        from autodist.jax.runtime import init_on_jax

        return init_on_jax(environ, make_global=make_global, **plan_kwargs)

    def scope(self, distribution: Any) -> AbstractContextManager[Any]:
        from autodist.jax.runtime import distribution_scope

        return distribution_scope(distribution)

    def fit(self, call: FitCall, environ: Mapping[str, str]) -> Any:
        from autodist.core.fit_template import run_fit
        from autodist.jax.runtime import JaxFit

        return run_fit(JaxFit(environ), call)


def _join(environ: Mapping[str, str]) -> None:
    from autodist.jax.runtime import join_at_import

    join_at_import(environ)


JAX = JaxBackend()
