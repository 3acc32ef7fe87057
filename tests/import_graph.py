"""The package's import graph, read from its source: modules, layers, edges, circles, upward
imports and the imports made inside functions. ``tests/test_layers.py`` checks it;
``python -m tests.import_graph`` prints the figures (``--list`` adds every function-level import).

A module's layer is its folder's: the basics (``errors``, ``log``, ``settings``, ``fields``, ``files``) →
``upstream`` (the touches of private TensorFlow, Keras and JAX code) → ``detection`` → ``planning`` → ``jobs`` → ``run`` → ``jax`` → ``entry`` → the edge (the public
names in ``__init__``, ``__main__``, ``cli``, ``demo``). A module imports its own layer and the
ones before it, never one after.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "autodist"
FOLDERS = ("upstream", "detection", "planning", "jobs", "run", "jax", "entry")
BASICS = ("errors", "log", "settings", "fields", "files")
EDGE = ("__init__", "__main__", "cli", "demo")
FRAMEWORKS = {"tensorflow", "keras", "tf_keras", "jax", "jaxlib"}


def layer_of(module: str) -> int:
    """0 the basics, 1 to 7 the folders in order, 8 the edge. ``module`` is dotted below the package."""
    parts = module.split(".")
    if len(parts) > 1 or parts[0] in FOLDERS:
        return 1 + FOLDERS.index(parts[0])
    if parts[0] in BASICS:
        return 0
    if parts[0] in EDGE:
        return len(FOLDERS) + 1
    raise KeyError(f"autodist/{module}.py has no layer: put it in a folder, or name it in BASICS or EDGE")


def modules() -> dict[str, Path]:
    """``{"run.fit": path, "errors": path, "detection": path-of-its-__init__, ...}``."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1]) if parts[-1] == "__init__" and len(parts) > 1 else ".".join(parts)
        found[name] = path
    return found


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # an autodist module, or a top-level third-party / standard package
    line: int
    in_function: bool
    internal: bool


def imports_of(name: str, path: Path, known: dict[str, Path]) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def targets(node: ast.AST) -> Iterator[tuple[str, bool]]:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "autodist" or node.module.startswith("autodist."):
                inner = node.module.split(".", 1)[1] if "." in node.module else ""
                for alias in node.names:
                    full = f"{inner}.{alias.name}".strip(".")
                    yield (full if full in known else (inner or "__init__")), True
            else:
                yield node.module.split(".")[0], False
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("autodist."):
                    yield alias.name.split(".", 1)[1], True
                elif alias.name == "autodist":
                    yield "__init__", True
                else:
                    yield alias.name.split(".")[0], False

    def walk(node: ast.AST, in_function: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for target, internal in targets(child):
                if target != name:
                    yield Import(name, target, child.lineno, in_function, internal)
            walk_children = walk(child, inside)
            yield from walk_children

    yield from walk(tree, False)


def all_imports() -> list[Import]:
    known = modules()
    return [imp for name, path in known.items() for imp in imports_of(name, path, known)]


def circles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The import circles (strongly connected groups of more than one module)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def figures() -> dict[str, object]:
    known = modules()
    imports = all_imports()
    internal = [imp for imp in imports if imp.internal]
    edges = {(imp.source, imp.target) for imp in internal}
    per_folder: dict[str, int] = {}
    for name in known:
        folder = name.split(".")[0] if name.split(".")[0] in FOLDERS else "(top)"
        per_folder[folder] = per_folder.get(folder, 0) + 1
    return {
        "modules": len(known),
        "lines": sum(len(path.read_text(encoding="utf-8").splitlines()) for path in known.values()),
        "modules per folder": per_folder,
        "import edges": len(edges),
        "circles": circles(edges),
        "upward imports": sorted({(i.source, i.target) for i in internal if layer_of(i.target) > layer_of(i.source)}),
        "function-level autodist imports": len([i for i in internal if i.in_function]),
        "function-level framework imports": len([i for i in imports if i.in_function and i.target in FRAMEWORKS]),
        "function-level other imports": len([i for i in imports if i.in_function and not i.internal and i.target not in FRAMEWORKS]),
    }


if __name__ == "__main__":  # python -m tests.import_graph [--list]
    for key, value in figures().items():
        print(f"{key}: {value}")
    if "--list" in sys.argv:
        for imp in all_imports():
            if imp.in_function and imp.internal:
                print(f"  autodist/{imp.source.replace('.', '/')}.py:{imp.line} -> autodist.{imp.target}")
