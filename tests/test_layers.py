"""The package's layers, from its import graph (:mod:`tests.import_graph`): the folders in order,
no circle, no upward import, and imports inside functions only where they must be.

The basics (``errors``, ``log``, ``settings``, ``fields``, ``files``, ``process``) → ``upstream/`` → ``detection/`` →
``planning/`` → ``jobs/`` → ``ray/`` → ``core/`` → ``resume/`` → ``tensorflow/`` → ``jax/`` → ``entry/`` → the edge (``__init__``, ``__main__``, ``cli``,
``demo``). The upstream surface, detection and planning import neither TensorFlow, Keras nor JAX
at module level (a subprocess test in tests/test_planning.py checks that importing them loads none).
"""

from __future__ import annotations

import ast
import doctest
import importlib

import pytest

from tests.conftest import ROOT
from tests.import_graph import FRAMEWORKS, all_imports, circles, layer_of, module_state, modules, state_in

MODULES = modules()

#: Where a function may import another autodist module, and why (anything else imports at module level).
FUNCTION_LEVEL = {
    "__init__": "autodist.plan: the planner loads when it is called, so `import autodist` loads only the import hook",
    "cli": "each command loads its own modules, so `inspect --fast` stays light",
    "entry.backends": "only the chosen backend's module loads: a TensorFlow run never loads the JAX side, nor the reverse",
    "tensorflow.backend": "`import autodist` loads this module for its hook; each step loads its modules when it runs",
    "jax.backend": "`import autodist` loads this module for its hook (KERAS_BACKEND=jax); each step loads its modules when it runs",
}


def test_every_module_has_a_layer():
    for name in MODULES:
        layer_of(name)  # raises, naming the module, for one outside the folders and the lists


def test_no_import_circle():
    edges = {(imp.source, imp.target) for imp in all_imports() if imp.internal}
    assert circles(edges) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_layer_above_its_own(module):
    imports = [imp for imp in all_imports() if imp.source == module]
    upward = sorted({imp.target for imp in imports if imp.internal and layer_of(imp.target) > layer_of(module)})
    assert not upward, f"autodist.{module} (layer {layer_of(module)}) imports {upward} from above"
    if layer_of(module) <= 3:
        top = {imp.target for imp in imports if not imp.in_function and not imp.internal}
        assert not top & FRAMEWORKS, f"autodist.{module} imports TensorFlow or JAX at module level"


def test_autodist_modules_are_imported_inside_functions_only_where_said_why():
    inside = sorted({imp.source for imp in all_imports() if imp.internal and imp.in_function} - set(FUNCTION_LEVEL))
    assert not inside, f"import these at module level, or say in FUNCTION_LEVEL why they cannot be: {inside}"


def test_the_backends_share_the_core_and_neither_imports_the_other():
    """JAX's folder uses the backend-neutral core, never TensorFlow's folder, nor the reverse."""
    crossing = sorted({(imp.source, imp.target) for imp in all_imports() if imp.internal and {imp.source.split(".")[0], imp.target.split(".")[0]} == {"jax", "tensorflow"}})
    assert crossing == [], crossing
    assert {imp.target.split(".")[0] for imp in all_imports() if imp.internal and imp.source.startswith("jax.")} >= {"core"}


def test_no_module_keeps_mutable_state_but_the_process_state():
    """What autodist decided and did in a process is one object (``autodist/process.py``'s
    ``STATE``, with one ``reset``); no other module keeps a box of its own."""
    assert module_state() == []


BOXES = """
import threading
from types import MappingProxyType

_SEEN = set()
_LOCAL = threading.local()
_CURRENT = [None]
TABLE = {"a": 1}
NAMES = ("a", "b")
FROZEN = MappingProxyType({"a": 1})


class Watch:
    used = False

    def before(self):
        type(self).used = True


def note(key):
    global _LAST
    TABLE[key] = 2
    NAMES.count("a")
    return FROZEN["a"]
"""


def test_the_state_check_finds_each_kind_of_box_and_passes_constants():
    found = "\n".join(state_in("example.py", BOXES))
    for box in ("_SEEN is mutable", "_LOCAL is mutable", "_CURRENT is mutable", "global _LAST", "class attribute (used)", "TABLE[...] changed"):
        assert box in found, (box, found)
    assert "NAMES" not in found and "FROZEN" not in found and "TABLE is mutable" not in found, found
    assert len(found.splitlines()) == 6, found


def test_reset_gives_a_fresh_process_state_and_puts_back_what_was_replaced(fresh_state):
    import types

    from autodist.process import STATE, ProcessState, once, replace, replaced, reset

    class Base:
        def g(self):
            return "base"

    class Child(Base):
        pass

    owner = types.ModuleType("example")
    owner.f = print
    replace(owner, "f", len)
    replace(owner, "f", abs)
    replace(Child, "g", lambda self: "replaced")  # an attribute the owner inherited
    STATE.originals("example")["f"] = print
    assert replaced() == ["example.f", "example.f", f"{__name__}.Child.g"] and owner.f is abs and Child().g() == "replaced"
    assert once("example") and not once("example")
    STATE.activation, STATE.init_called, STATE.custom_loops = "done", True, [("plan", "strategy")]
    next(STATE.fit_ids)
    reset()
    fresh = ProcessState()
    for field in ("activation", "init_called", "custom_loops", "warned", "strategies", "private_root", "join_error"):
        assert getattr(STATE, field) == getattr(fresh, field), field
    assert next(STATE.fit_ids) == 0 and once("example")
    assert (owner.f, "g" in vars(Child), Child().g(), replaced(), STATE.originals("example")) == (print, False, "base", [], {})


def test_the_public_names_are_the_lazy_table_and_each_resolves():
    import autodist
    import autodist.errors

    lazy = set(autodist._LAZY)
    assert set(autodist.__all__) == lazy | set(autodist.errors.__all__) | {"plan"}
    for name in sorted(lazy):
        assert getattr(importlib.import_module(autodist._LAZY[name]), name) is getattr(autodist, name)


def test_the_architecture_page_names_every_module():
    layout = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split("## Layout", 1)[1].split("\n## ", 1)[0]
    missing = [str(path.relative_to(ROOT / "autodist")) for name, path in MODULES.items() if path.name != "__init__.py" and name != "__main__"]
    missing = [path for path in missing if f"`{path}`" not in layout]
    assert not missing, missing


def test_the_detect_and_plan_modules_docstring_examples_run(tensorflow_imported):
    """Their examples are data in, data out: they must run as written."""
    failed, tried = 0, 0
    for module in (m for m in MODULES if layer_of(m) <= 3):
        result = doctest.testmod(importlib.import_module(f"autodist.{module}"), optionflags=doctest.ELLIPSIS)
        failed, tried = failed + result.failed, tried + result.attempted
    assert failed == 0 and tried >= 30, (failed, tried)


def test_the_planners_own_modules_import_no_tensorflow_even_inside_functions():
    for module in ("planning.planner", "planning.plans", "planning.choosers", "planning.global_batch", "core.detect_and_plan"):
        names = {imp.target for imp in all_imports() if imp.source == module and not imp.internal}
        assert not names & FRAMEWORKS, f"autodist.{module} imports {names & FRAMEWORKS}"


def test_every_folder_is_packaged():
    """A fresh ``pip install .`` (what CI runs) ships every layer folder."""
    import tomllib

    from tests.import_graph import FOLDERS

    packages = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]
    assert {f"autodist.{folder}" for folder in FOLDERS} <= set(packages), packages


def test_fit_on_tensorflow_trains_on_one_final_plan_and_applies_the_workarounds_once():
    """Each plan in ``tensorflow/fit.py`` is bound once (the strategy's plan, then the final one:
    no plan is changed in place), and one call applies the Keras workarounds."""
    tree = ast.parse((ROOT / "autodist" / "tensorflow" / "fit.py").read_text(encoding="utf-8"))
    rebound = []
    for function in (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)):
        bound = [name.id for node in ast.walk(function) if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                 for target in (node.targets if isinstance(node, ast.Assign) else [node.target]) for name in ast.walk(target)
                 if isinstance(name, ast.Name) and "plan" in name.id]  # fmt: skip
        parameters = {arg.arg for arg in function.args.args}
        rebound += [f"{function.name}: {name}" for name in set(bound) if bound.count(name) > 1 or name in parameters]
    assert rebound == [], rebound
    applies = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "apply_workarounds"]
    assert len(applies) == 1, [node.lineno for node in applies]


def test_no_module_but_strategy_types_asks_which_strategy_it_is():
    """A strategy's behaviour is its type's (``planning/strategy_types.py``): no other module keeps
    a table of strategy kinds (a tuple, set or dict of them at module level), nor asks
    ``isinstance`` of a strategy type. A new kind then cannot fall into another module's default."""
    from autodist.planning import strategy_types

    type_names = {name for name, value in vars(strategy_types).items() if isinstance(value, type) and issubclass(value, strategy_types.StrategyType)}
    kind_values = {kind.value for kind in strategy_types.StrategyKind}
    found = []
    for name, path in MODULES.items():
        if name == "planning.strategy_types":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            kinds = [
                n
                for n in (ast.walk(value) if value is not None else ())
                if (isinstance(n, ast.Attribute) and n.attr.isupper() and ast.unparse(n.value) in ("StrategyKind", "K"))
                or (isinstance(n, ast.Constant) and n.value in kind_values)
            ]
            if len(kinds) >= 2:  # a tuple, set or dict of them, as they are or wrapped (MappingProxyType)
                found.append(f"autodist/{path.relative_to(ROOT / 'autodist')}:{node.lineno}: a table of strategy kinds")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance" and len(node.args) == 2:
                asked = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if asked & type_names:
                    found.append(f"autodist/{path.relative_to(ROOT / 'autodist')}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_no_module_but_input_kinds_asks_which_kind_an_input_is():
    """An input's behaviour is its kind's (``core/input_kinds.py``): no other module asks
    ``isinstance`` of a kind; a layer above answers a question per kind with ``Input.answers``."""
    from autodist.core import input_kinds

    kind_names = {name for name, value in vars(input_kinds).items() if isinstance(value, type) and issubclass(value, input_kinds.Input)}
    found = []
    for name, path in MODULES.items():
        if name == "core.input_kinds":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance" and len(node.args) == 2:
                if {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)} & kind_names:
                    found.append(f"autodist/{path.relative_to(ROOT / 'autodist')}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_no_module_but_its_own_reaches_a_workaround_by_its_name():
    """A workaround's behaviour is its object's: another module reaches it by the object (its
    ``in_plan``, its fields), never by comparing or looking up its name."""
    from autodist.upstream.keras_workarounds import WORKAROUNDS

    names = set(WORKAROUNDS)
    found = []
    for name, path in MODULES.items():
        if name in ("upstream.keras_workarounds",):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        declared = {
            kw.value.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "Workaround"
            for kw in node.keywords
            if kw.arg == "name" and isinstance(kw.value, ast.Constant)
        }
        for node in ast.walk(tree):
            literals = (
                [node.slice] if isinstance(node, ast.Subscript) else [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
            )
            for literal in literals:
                if isinstance(literal, ast.Constant) and literal.value in names - declared:
                    found.append(f"autodist/{path.relative_to(ROOT / 'autodist')}:{node.lineno}: {ast.unparse(node)}")
    assert found == []
