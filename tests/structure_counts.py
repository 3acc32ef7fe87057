"""How the package's concepts are spread over its files (issue 62's before/after counts), read
from its source with ast (no import of autodist, TensorFlow, Keras or JAX).

Run from the repository root:  python -m tests.structure_counts [--root autodist] [--quiet]

Prints each category with one ``file:line`` per hit (``--quiet``: totals only), then TOTALS.

Categories
  A  strategy-kind comparisons outside autodist/planning/strategy_types.py: a Compare
     (==, !=, in, not in, is, is not) one of whose operands is a StrategyKind member
     (``StrategyKind.X`` or an alias such as ``K = StrategyKind``), a string literal equal to a
     StrategyKind value, a tuple/list/set of those, or a name of a "kind table" (B).
  B  kind tables outside strategy_types.py: module-level constants (tuple/list/set/dict, also
     inside MappingProxyType(...)) whose elements or keys are StrategyKind members or values.
  C  other mentions of a kind outside strategy_types.py (returned, passed, built): a StrategyKind
     member, or a string literal equal to a kind value that is a call argument, not in a
     docstring, a comparison (A) or a table (B).
  D  isinstance/issubclass/type()-is checks of a strategy type class (StrategyType and its
     subclasses in strategy_types.py) outside strategy_types.py.
  E  isinstance/issubclass/type()-is checks of an input kind class (Input and its subclasses in
     core/input_kinds.py) outside core/input_kinds.py.
  F  branches keyed on a workaround's name outside the module that declares it: a string literal
     equal to a Workaround(name=...) declared anywhere in autodist/, or WORKAROUNDS["name"]
     (split: F.lookup = WORKAROUNDS["name"], F.compare = the name in a comparison, F.other).
  G  plan sites in the fit path: calls that make or revise a Plan in tensorflow/fit.py,
     tensorflow/tuning.py, tensorflow/comm_check.py and jax/runtime.py.
  H  lines of autodist/ (all .py), and per subpackage.
  I  the walk of the fit call: the shortest static call chain from autodist.entry.fit.fit to the
     call of Keras's fit (``<model>.fit(``) on each backend, and the autodist modules each
     backend's fit module imports.
"""

from __future__ import annotations

import argparse
import ast
import collections
import os
import sys

ROOT = "autodist"
STRATEGY_HOME = "autodist/planning/strategy_types.py"
INPUT_HOME = "autodist/core/input_kinds.py"
STRATEGY_MODULES = {"autodist.planning.strategy_types", "autodist.planning.plans"}  # plans re-exports StrategyKind
INPUT_MODULE = "autodist.core.input_kinds"


def py_files(root: str) -> list[str]:
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        out += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".py")]
    return out


def parse(path: str) -> ast.Module:
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read(), path)


def parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    up = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            up[child] = node
    return up


def subclasses_of(tree: ast.Module, base: str) -> set[str]:
    found, changed = {base}, True
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    while changed:
        changed = False
        for cls in classes:
            names = {b.id for b in cls.bases if isinstance(b, ast.Name)}
            if cls.name not in found and names & found:
                found.add(cls.name)
                changed = True
    return found


def strategy_facts() -> tuple[dict[str, str], set[str]]:
    tree = parse(STRATEGY_HOME)
    members = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "StrategyKind":
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant):
                    members[stmt.targets[0].id] = stmt.value.value
    return members, subclasses_of(tree, "StrategyType")


def workaround_names(files: list[str]) -> dict[str, str]:
    """Each Workaround(name=...) declared in autodist/, with the file that declares it."""
    names = {}
    for path in files:
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Workaround":
                for kw in node.keywords:
                    if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                        names[kw.value.value] = path
    return names


class Imports:
    """What a module's names refer to: imported names (by original module and name) and aliases."""

    def __init__(self, tree: ast.Module):
        self.names: dict[str, tuple[str, str]] = {}  # local name -> (module, name)
        self.modules: dict[str, str] = {}  # local name -> module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    self.names[alias.asname or alias.name] = (node.module, alias.name)
                    # from autodist.planning import strategy_types
                    self.modules.setdefault(alias.asname or alias.name, f"{node.module}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    self.modules[alias.asname or alias.name.split(".")[0]] = alias.name
        # K = StrategyKind at module level
        self.kind_aliases = {n for n, (m, o) in self.names.items() if o == "StrategyKind" and m in STRATEGY_MODULES}
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in self.kind_aliases:
                self.kind_aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}

    def resolves(self, node: ast.AST, module: str | set[str], classes: set[str]) -> str | None:
        modules = {module} if isinstance(module, str) else module
        if isinstance(node, ast.Name) and node.id in self.names:
            origin, name = self.names[node.id]
            if origin in modules and name in classes:
                return name
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if self.modules.get(node.value.id) in modules and node.attr in classes:
                return node.attr
        return None


def docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=ROOT)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    files = py_files(args.root)
    members, strategy_classes = strategy_facts()
    kind_values = set(members.values())
    input_classes = subclasses_of(parse(INPUT_HOME), "Input")
    workarounds = workaround_names(files)
    hits: dict[str, list[str]] = collections.defaultdict(list)

    for path in files:
        tree = parse(path)
        imports = Imports(tree)
        up = parents(tree)
        docs = docstrings(tree)
        home_strategy = path == STRATEGY_HOME

        def is_member(node: ast.AST) -> bool:
            return (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in imports.kind_aliases
                and node.attr in members
            )

        def is_kind_literal(node: ast.AST) -> bool:
            return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in kind_values

        def is_kind(node: ast.AST) -> bool:
            if is_member(node) or is_kind_literal(node):
                return True
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts:
                return all(is_kind(e) for e in node.elts)
            return False

        # B: module-level kind tables
        tables: dict[str, int] = {}
        for node in tree.body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if value is None:
                continue
            inner = value.args[0] if isinstance(value, ast.Call) and value.args else value
            keyed = isinstance(inner, ast.Dict) and any(k is not None and is_kind(k) for k in inner.keys)
            listed = isinstance(inner, (ast.Tuple, ast.List, ast.Set)) and any(
                is_kind(e) or (isinstance(e, ast.Tuple) and any(is_kind(x) for x in e.elts)) for e in inner.elts
            )
            if keyed or listed:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        tables[t.id] = node.lineno
        table_nodes = set()
        if not home_strategy:
            for name, line in tables.items():
                hits["B kind tables"].append(f"{path}:{line}: {name}")
            for node in tree.body:
                if isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if any(isinstance(t, ast.Name) and t.id in tables for t in targets):
                        table_nodes |= {id(n) for n in ast.walk(node)}
        # tables imported from another module (none today; kept for the after picture)
        imported_tables = {n for n, (m, o) in imports.names.items() if o in {"_SINGLE_HOST", "REPLICATED", "CENTRAL"}}

        def is_table_name(node: ast.AST) -> bool:
            return isinstance(node, ast.Name) and (node.id in tables or node.id in imported_tables)

        compared = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and not home_strategy:
                operands = [node.left, *node.comparators]
                # str(strategy) in X, kind.value == "x"
                if any(is_kind(o) or is_table_name(o) for o in operands):
                    hits["A kind comparisons"].append(f"{path}:{node.lineno}: {ast.unparse(node)[:110]}")
                    compared |= {id(n) for n in ast.walk(node)}
            if isinstance(node, ast.Call):
                func = node.func
                fname = func.id if isinstance(func, ast.Name) else None
                if fname in ("isinstance", "issubclass") and len(node.args) == 2:
                    targets = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                    if not home_strategy and any(
                        imports.resolves(t, "autodist.planning.strategy_types", strategy_classes) for t in targets
                    ):
                        hits["D isinstance of a strategy type"].append(f"{path}:{node.lineno}: {ast.unparse(node)[:110]}")
                    if path != INPUT_HOME and any(imports.resolves(t, INPUT_MODULE, input_classes) for t in targets):
                        hits["E isinstance of an input kind"].append(f"{path}:{node.lineno}: {ast.unparse(node)[:110]}")
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                for o in [node.left, *node.comparators]:
                    if imports.resolves(o, INPUT_MODULE, input_classes) and path != INPUT_HOME:
                        hits["E isinstance of an input kind"].append(f"{path}:{node.lineno}: {ast.unparse(node)[:110]}")
                    if imports.resolves(o, "autodist.planning.strategy_types", strategy_classes) and not home_strategy:
                        hits["D isinstance of a strategy type"].append(
                            f"{path}:{node.lineno}: {ast.unparse(node)[:110]}"
                        )

        # C: other kind mentions; F: workaround names (a name in __all__ is a function's, not a workaround's)
        exported = {
            id(n)
            for stmt in tree.body
            if isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in stmt.targets)
            for n in ast.walk(stmt)
        }
        for node in ast.walk(tree):
            if id(node) in exported:
                continue
            if id(node) in docs:
                continue
            if not home_strategy and id(node) not in compared and id(node) not in table_nodes:
                parent = up.get(node)
                if is_member(node):
                    hits["C other kind mentions"].append(f"{path}:{node.lineno}: {ast.unparse(parent)[:110]}")
                elif is_kind_literal(node) and (
                    (
                        isinstance(parent, ast.Call)
                        and getattr(parent.func, "attr", getattr(parent.func, "id", "")) not in ("get", "opt")
                    )  # a dict key read with .get / fields.opt is a JSON field name, not a kind
                    or isinstance(parent, (ast.IfExp, ast.Return, ast.Assign, ast.keyword))
                ):
                    hits["C other kind mentions"].append(f"{path}:{node.lineno}: {ast.unparse(parent)[:110]}")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in workarounds:
                if workarounds[node.value] == path or isinstance(up.get(node), ast.keyword):
                    continue  # its declaration
                parent = up.get(node)
                if isinstance(parent, ast.Subscript):
                    where = "F.lookup"
                elif isinstance(parent, ast.Compare):
                    where = "F.compare"
                else:
                    where = "F.other"
                hits["F workaround-name branches"].append(
                    f"{path}:{node.lineno}: [{where}] {ast.unparse(parent)[:100]}"
                )

    # G: plan sites in the fit path
    plan_calls = {
        "plan_here": "make",
        "plan": "make",
        "_plan_for": "make",
        "_planned": "make (+1 when the traced draws differ)",
        "plan_for": "make",
        "_plan_of": "make (tuning candidate)",
        "tuned_plan": "choose among made plans",
        "plan_for_built_model": "revise",
        "check_communication": "revise (reasons)",
        "_with_reason": "revise (reasons)",
        "_with": "revise (reasons)",
    }
    for path in [
        "autodist/tensorflow/fit.py",
        "autodist/tensorflow/tuning.py",
        "autodist/tensorflow/comm_check.py",
        "autodist/jax/runtime.py",
    ]:
        tree = parse(path)
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in own_nodes(fn):
                if not isinstance(node, ast.Call):
                    continue
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                what = plan_calls.get(name)
                if name == "replace" and node.args and "plan" in ast.unparse(node.args[0]) + ast.unparse(node):
                    if any(k.arg in ("reasons", "cross_device_ops") for k in node.keywords):
                        what = "revise (dataclasses.replace)"
                if name == "replace" and node.args and ast.unparse(node.args[0]) in ("built", "made"):
                    what = "revise (dataclasses.replace)"
                if what and not (name == "plan" and path != "autodist/tensorflow/fit.py"):
                    hits["G plan sites"].append(f"{path}:{node.lineno}: in {fn.name}(): {name} -> {what}")
        hits["G plan sites"].sort(key=lambda r: (r.split(":")[0] != "autodist/tensorflow/fit.py", r.split(":")[0],
                                                 int(r.split(":")[1])))

    # H: lines
    total, per = 0, collections.Counter()
    for path in files:
        with open(path, encoding="utf-8") as handle:
            n = sum(1 for _ in handle)
        total += n
        parts = path.split(os.sep)
        per[parts[1] if len(parts) > 2 else "(top level)"] += n

    # I: the walk
    walk = call_walk(files)

    order = [
        "A kind comparisons",
        "B kind tables",
        "C other kind mentions",
        "D isinstance of a strategy type",
        "E isinstance of an input kind",
        "F workaround-name branches",
        "G plan sites",
    ]
    for key in order:
        rows = hits.get(key, [])
        print(f"== {key}: {len(rows)} in {len({r.split(':')[0] for r in rows})} files")
        if not args.quiet:
            for row in rows:
                print("  " + row)
    print(f"== H lines of {args.root}/: {total} in {len(files)} files")
    for name, n in sorted(per.items(), key=lambda kv: -kv[1]):
        print(f"  {name:14s} {n:6d}")
    for line in walk:
        print(line)

    # J: the files each concept is spread over (its home, plus every file that names one of its
    # members or asks which one it is: A-D for a strategy, E for an input kind, F for a workaround)
    def files_of(*keys: str) -> list[str]:
        return sorted({r.split(":")[0] for k in keys for r in hits.get(k, [])})

    spread = {
        "a strategy kind": [STRATEGY_HOME] + [f for f in files_of(*order[:4]) if f != STRATEGY_HOME],
        "an input kind": [INPUT_HOME] + files_of("E isinstance of an input kind"),
        "a workaround": sorted(set(workarounds.values())) + [
            f for f in files_of("F workaround-name branches") if f not in set(workarounds.values())
        ],
    }
    for concept, paths in spread.items():
        print(f"== J files that name {concept} or branch on one: {len(paths)}")
        if not args.quiet:
            for path in paths:
                print("  " + path)
    print("== TOTALS")
    f_rows = hits.get("F workaround-name branches", [])
    for key in order:
        print(f"  {key}: {len(hits.get(key, []))}")
        if key.startswith("F "):
            for kind in ("F.lookup", "F.compare", "F.other"):
                print(f"    {kind}: {sum(1 for r in f_rows if f'[{kind}]' in r)}")
    print(f"  H lines: {total}")
    for concept, paths in spread.items():
        print(f"  J files naming {concept}: {len(paths)}")
    print(f"  strategy kinds: {len(members)}; strategy type classes: {len(strategy_classes)}; "
          f"input kind classes: {len(input_classes)}; workarounds: {len(workarounds)}")


def own_nodes(fn: ast.AST) -> list[ast.AST]:
    """The nodes of ``fn``'s body, without those of functions defined inside it (their own rows)."""
    out, todo = [], list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def module_name(path: str) -> str:
    name = path[:-3].replace(os.sep, ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def call_walk(files: list[str]) -> list[str]:
    """A static call graph of autodist's module-level functions and methods (calls by a name
    imported or defined in the module, ``module.function``, and ``self.method``), with the one
    dynamic edge of the backend seam (``backend_for(...).fit`` -> each Backend class's ``fit``);
    the shortest path from autodist.entry.fit.fit to a function that calls ``<x>.fit(``."""
    defs: dict[str, ast.AST] = {}
    module_of: dict[str, str] = {}
    trees = {}
    for path in files:
        tree = parse(path)
        mod = module_name(path)
        trees[mod] = (path, tree)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs[f"{mod}:{node.name}"] = node
                module_of[f"{mod}:{node.name}"] = path
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        defs[f"{mod}:{node.name}.{item.name}"] = item
                        module_of[f"{mod}:{node.name}.{item.name}"] = path
    edges: dict[str, list[str]] = collections.defaultdict(list)
    keras_fit: dict[str, int] = {}
    for key, fn in defs.items():
        mod, qual = key.split(":")
        path, tree = trees[mod]
        imports = Imports(tree)
        up_of = {child: parent for parent in ast.walk(fn) for child in ast.iter_child_nodes(parent)}
        cls = qual.split(".")[0] if "." in qual else None
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and not isinstance(up_of.get(node), ast.Call):
                # a function passed or picked as a value (trainer = _a if ... else _b; trainer(...))
                if f"{mod}:{node.id}" in defs:
                    edges[key].append(f"{mod}:{node.id}")
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            target = None
            if isinstance(func, ast.Name):
                if f"{mod}:{func.id}" in defs:
                    target = f"{mod}:{func.id}"
                elif func.id in imports.names:
                    origin, name = imports.names[func.id]
                    target = f"{origin}:{name}"
            elif isinstance(func, ast.Attribute):
                base = func.value
                if isinstance(base, ast.Name) and base.id == "self" and cls:
                    target = f"{mod}:{cls}.{func.attr}"
                elif isinstance(base, ast.Name) and base.id in imports.modules:
                    target = f"{imports.modules[base.id]}:{func.attr}"
                elif func.attr == "fit" and isinstance(base, ast.Call) and getattr(base.func, "id", "") == "backend_for":
                    for other in defs:
                        if other.endswith("Backend.fit") and ":" in other and not other.startswith("autodist.core"):
                            edges[key].append(other)
                elif isinstance(base, ast.Name) and base.id == "stages":  # run_fit's stages: each backend's
                    for other in defs:
                        if other.endswith(("TensorFlowFit." + func.attr, "JaxFit." + func.attr)):
                            edges[key].append(other)
                elif func.attr == "fit" and not (isinstance(base, ast.Name) and base.id in ("self", "trainer")):
                    keras_fit[key] = node.lineno
            if target in defs:
                edges[key].append(target)
    lines = ["== I the walk of the fit call (static, shortest path to <model>.fit)"]
    start = "autodist.entry.fit:fit"
    for backend in ("autodist.tensorflow", "autodist.jax"):
        prev = {start: None}
        queue = collections.deque([start])
        found = None
        while queue:
            node = queue.popleft()
            if node in keras_fit and node.startswith(backend):
                found = node
                break
            for nxt in edges.get(node, []):
                if nxt.startswith("autodist.tensorflow.tuning"):
                    continue  # the timing of tune's candidates fits copies, not the model that trains
                if nxt not in prev and (nxt.startswith(backend) or not nxt.startswith(("autodist.tensorflow", "autodist.jax"))):
                    prev[nxt] = node
                    queue.append(nxt)
        chain = []
        while found is not None:
            chain.append(found)
            found = prev[found]
        chain.reverse()
        lines.append(f"  {backend.split('.')[1]}: depth {len(chain)} functions to model.fit")
        for step in chain:
            fn = defs.get(step)
            if fn is None:
                continue
            lines.append(f"    {module_of[step]}:{fn.lineno} {step.split(':')[1]}")
        if chain:
            last = chain[-1]
            lines.append(f"    {module_of[last]}:{keras_fit[last]} <model>.fit(...)  (Keras)")
        # reachable autodist functions from the backend's fit function
        root = next((s for s in chain if s.split(":")[1] in ("fit_on_tensorflow", "fit_on_jax")), None)
        if root:
            seen, todo = {root}, [root]
            while todo:
                for nxt in edges.get(todo.pop(), []):
                    if nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
            lines.append(f"  {backend.split('.')[1]}: {len(seen)} autodist functions reachable (static) from {root}")
    # the stages: each stage function's calls of autodist functions, in the order of its lines
    stage_functions = [
        "autodist.entry.fit:fit",
        "autodist.tensorflow.fit:fit_on_tensorflow",
        "autodist.tensorflow.fit:_start",
        "autodist.tensorflow.fit:_plan_and_build",
        "autodist.tensorflow.fit:_build",
        "autodist.tensorflow.fit:_train",
        "autodist.tensorflow.fit:_train_in_sync",
        "autodist.tensorflow.fit:_finish",
        "autodist.jax.runtime:fit_on_jax",
        "autodist.jax.runtime:_built",
        "autodist.jax.runtime:_train_with_duties",
        "autodist.jax.runtime:train",
        "autodist.core.fit_template:run_fit",
        "autodist.tensorflow.fit:TensorFlowFit.plan",
        "autodist.tensorflow.fit:TensorFlowFit.start",
        "autodist.tensorflow.fit:TensorFlowFit.place",
        "autodist.tensorflow.fit:TensorFlowFit.refine",
        "autodist.tensorflow.fit:TensorFlowFit.prepare",
        "autodist.tensorflow.fit:TensorFlowFit.train",
        "autodist.jax.runtime:JaxFit.plan",
        "autodist.jax.runtime:JaxFit.place",
        "autodist.jax.runtime:JaxFit.refine",
    ]
    lines.append("  stage functions and the autodist functions each calls, in line order:")
    for key in stage_functions:
        if key not in defs:
            continue
        fn = defs[key]
        mod = key.split(":")[0]
        imports = Imports(trees[mod][1])
        called = []
        nested = {n.name for n in ast.walk(fn) if isinstance(n, ast.FunctionDef) and n is not fn}
        nested |= {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) for t in n.targets
                   if isinstance(t, ast.Name) and isinstance(n.value, ast.IfExp)}  # trainer = _a if ... else _b
        for node in own_nodes(fn):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else (
                    f"{f.value.id}.{f.attr}" if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else None)
                if name is None:
                    continue
                base = name.split(".")[0]
                local = f"{mod}:{name}" in defs
                imported = base in imports.names and imports.names[base][0].startswith("autodist")
                module = base in imports.modules and imports.modules[base].startswith("autodist")
                if local or imported or module or name in nested or name.endswith(".fit"):
                    called.append(f"{node.lineno}:{name}")
        lines.append(f"    {module_of[key]}:{fn.lineno} {key.split(':')[1]} -> " + ", ".join(called))
    for path in ("autodist/tensorflow/fit.py", "autodist/jax/runtime.py"):
        imported = set()
        for node in parse(path).body:
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autodist"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    imported.add(full if os.path.exists(full.replace(".", os.sep) + ".py") else node.module)
        lines.append(f"  {path} imports from {len(imported)} autodist modules at its top")
    return lines


if __name__ == "__main__":
    sys.exit(main())
