"""Act once a package has been imported: the import hook's mechanism, for either backend.

``import autodist`` imports neither TensorFlow nor JAX. The chosen backend asks to be called when
its framework has been imported (:func:`when_imported`): a finder on ``sys.meta_path`` wraps the
loading of the watched packages and calls back once the outermost import of them has finished,
so a half-imported Keras is never touched.

Example:
    >>> import sys
    >>> when_imported(("sys",), "sys", lambda: None)  # imported already: called at once
    True
    >>> any(isinstance(finder, AfterImport) for finder in sys.meta_path)
    False
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["AfterImport", "unwatch_all", "when_imported"]


class AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``callback`` once, when the outermost import of ``watched`` that leaves ``target``
    imported has finished (``target`` is TensorFlow or JAX; Keras may import it)."""

    def __init__(self, watched: tuple[str, ...], target: str, callback: Callable[[], Any]) -> None:
        self.watched, self.target, self.callback = watched, target, callback
        self.depth = 0
        self.searching = False

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in self.watched or self.searching:
            return None
        self.searching = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.searching = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        original = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            self.depth += 1
            try:
                original(module)
            finally:
                self.depth -= 1
            if self.depth == 0 and self.target in sys.modules and self in sys.meta_path:
                sys.meta_path.remove(self)
                self.callback()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def when_imported(watched: tuple[str, ...], target: str, callback: Callable[[], Any]) -> bool:
    """Call ``callback`` now if ``target`` is imported already (``True``), else once it is (one
    watch per target: a second request while one waits is dropped)."""
    if target in sys.modules:
        callback()
        return True
    if not any(isinstance(f, AfterImport) and f.target == target for f in sys.meta_path):
        sys.meta_path.insert(0, AfterImport(watched, target, callback))
    return False


def unwatch_all() -> None:
    """Drop every watch (commands that only report, such as ``inspect``, create no strategy)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, AfterImport)]
