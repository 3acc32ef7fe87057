"""The package's import graph, read from its source: modules, layers, edges, circles, upward
imports and the imports made inside functions. ``tests/test_layers.py`` checks it;
``python -m tests.import_graph`` prints the figures (``--list`` adds every function-level import).

A module's layer is its folder's: the basics (``errors``, ``log``, ``settings``, ``fields``, ``files``, ``process``) →
``upstream`` (the touches of private TensorFlow, Keras and JAX code) → ``detection`` → ``planning`` → ``jobs`` → ``ray`` →
``core`` → ``resume`` → ``tensorflow`` → ``jax`` → ``entry`` → the edge (the public
names in ``__init__``, ``__main__``, ``cli``, ``demo``). A module imports its own layer and the
ones before it, never one after.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "autodist"
FOLDERS = ("upstream", "detection", "planning", "jobs", "ray", "core", "resume", "tensorflow", "jax", "entry")
BASICS = ("errors", "log", "settings", "fields", "files", "process")
EDGE = ("__init__", "__main__", "cli", "demo")
FRAMEWORKS = {"tensorflow", "keras", "tf_keras", "jax", "jaxlib"}


def layer_of(module: str) -> int:
    """0 the basics, 1 to 10 the folders in order, 11 the edge. ``module`` is dotted below the package."""
    parts = module.split(".")
    if len(parts) > 1 or parts[0] in FOLDERS:
        return 1 + FOLDERS.index(parts[0])
    if parts[0] in BASICS:
        return 0
    if parts[0] in EDGE:
        return len(FOLDERS) + 1
    raise KeyError(f"autodist/{module}.py has no layer: put it in a folder, or name it in BASICS or EDGE")


def modules() -> dict[str, Path]:
    """``{"tensorflow.fit": path, "errors": path, "detection": path-of-its-__init__, ...}``."""
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


def all_imports() -> tuple[Import, ...]:
    """Every import of the package, read once per process (each test of the layers asks for it)."""
    return _all_imports(tuple(sorted((name, str(path), path.stat().st_mtime_ns) for name, path in modules().items())))


@functools.cache
def _all_imports(files: tuple) -> tuple[Import, ...]:
    known = {name: Path(path) for name, path, _ in files}
    return tuple(imp for name, path in known.items() for imp in imports_of(name, path, known))


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


#: Calls whose result is mutable state: kept at module level, it would be a box of its own.
_STATEFUL_CALLS = {"list", "dict", "set", "bytearray", "defaultdict", "deque", "OrderedDict", "Counter", "count", "local", "Lock", "RLock", "Event", "Condition", "Semaphore", "WeakKeyDictionary", "WeakValueDictionary", "WeakSet", "ContextVar"}
_MUTATORS = {"append", "add", "update", "pop", "clear", "setdefault", "discard", "remove", "extend", "insert", "popitem", "appendleft", "__setitem__"}
#: The one module that keeps what autodist decided and did in a process.
STATE_MODULE = "process"


def _call_name(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def module_state() -> list[str]:
    """Where a module keeps mutable state at module level (``autodist/process.py`` aside):

    - a module-level name bound to a container or a stateful object (a lock, a counter, a
      thread-local, an instance of the module's own class) that is not a public constant
      (UPPER_CASE, no leading underscore);
    - a public constant that code changes (a subscript assigned or deleted, a mutating method);
    - a ``global`` statement, or a class attribute assigned from inside a function
      (``type(self).x = ...``, ``Class.x = ...``).
    """
    return [place for name, path in modules().items() if name != STATE_MODULE for place in state_in(f"autodist/{path.relative_to(PACKAGE)}", path.read_text(encoding="utf-8"))]


def state_in(where: str, source: str) -> list[str]:
    """:func:`module_state` for one module's ``source``."""
    found = []
    tree = ast.parse(source)
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    bound: set[str] = set()
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [target.id for target in targets if isinstance(target, ast.Name) and target.id != "__all__"]
        value = node.value
        stateful = isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (
            isinstance(value, ast.Call) and (_call_name(value) in _STATEFUL_CALLS or _call_name(value) in classes)
        )
        for bound_name in names:
            bound.add(bound_name)
            if stateful and (bound_name.startswith("_") or not bound_name.isupper()):
                found.append(f"{where}:{node.lineno}: {bound_name} is mutable state at module level")
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.append(f"{where}:{node.lineno}: global {', '.join(node.names)}")
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target] if isinstance(node, ast.AugAssign) else []
        for target in targets:
            base = target.value if isinstance(target, (ast.Subscript, ast.Attribute)) else None
            if isinstance(target, ast.Subscript) and isinstance(base, ast.Name) and base.id in bound:
                found.append(f"{where}:{node.lineno}: {base.id}[...] changed")
            if isinstance(target, ast.Attribute) and isinstance(base, ast.Call) and _call_name(base) == "type":
                found.append(f"{where}:{node.lineno}: a class attribute ({target.attr}) set from a function")
            if isinstance(target, ast.Attribute) and isinstance(base, ast.Name) and base.id in classes:
                found.append(f"{where}:{node.lineno}: {base.id}.{target.attr} set from a function")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in bound:
                found.append(f"{where}:{node.lineno}: {owner.id}.{node.func.attr}(...) changes a module-level value")
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
        "module-level mutable state (outside autodist/process.py)": len(module_state()),
    }


if __name__ == "__main__":  # python -m tests.import_graph [--list]
    for key, value in figures().items():
        print(f"{key}: {value}")
    if "--list" in sys.argv:
        for place in module_state():
            print(f"  {place}")
        for imp in all_imports():
            if imp.in_function and imp.internal:
                print(f"  autodist/{imp.source.replace('.', '/')}.py:{imp.line} -> autodist.{imp.target}")
