"""The package's layers, from its import graph (:mod:`tests.import_graph`): the folders in order,
no circle, no upward import, and imports inside functions only where they must be.

The basics (``errors``, ``log``, ``settings``, ``fields``, ``files``) → ``upstream/`` → ``detection/`` → ``planning/`` →
``jobs/`` → ``run/`` → ``jax/`` → ``entry/`` → the edge (``__init__``, ``__main__``, ``cli``,
``demo``). The upstream surface, detection and planning import neither TensorFlow, Keras nor JAX
at module level (a subprocess test in tests/test_planning.py checks that importing them loads none).
"""

from __future__ import annotations

import ast
import doctest
import importlib

import pytest

from tests.conftest import ROOT
from tests.import_graph import FRAMEWORKS, all_imports, circles, layer_of, modules

MODULES = modules()

#: Where a function may import another autodist module, and why (anything else imports at module level).
FUNCTION_LEVEL = {
    "__init__": "autodist.plan: the planner loads when it is called, so `import autodist` loads only the import hook",
    "cli": "each command loads its own modules, so `inspect --fast` stays light",
    "entry.backends": "only the chosen backend's module loads: a TensorFlow run never loads the JAX side, nor the reverse",
    "run.tf_backend": "`import autodist` loads this module for its hook; each step loads its modules when it runs",
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


def test_functions_fit_on_a_screen_and_modules_stay_small():
    """Reminders, not reasons: a concept decides where code goes; a long one is a place to look."""
    too_long = []
    for path in MODULES.values():
        source = path.read_text(encoding="utf-8")
        if source.count("\n") > 450:
            too_long.append(f"{path.relative_to(ROOT)}: {source.count(chr(10))} lines (at most 450)")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                too_long.append(f"{path.relative_to(ROOT)} {node.name}: {node.end_lineno - node.lineno + 1} lines (at most 80)")
    assert not too_long, too_long


def test_the_detect_and_plan_modules_docstring_examples_run():
    """Their examples are data in, data out: they must run as written."""
    failed, tried = 0, 0
    for module in (m for m in MODULES if layer_of(m) <= 3):
        result = doctest.testmod(importlib.import_module(f"autodist.{module}"), optionflags=doctest.ELLIPSIS)
        failed, tried = failed + result.failed, tried + result.attempted
    assert failed == 0 and tried >= 30, (failed, tried)


def test_the_planners_own_modules_import_no_tensorflow_even_inside_functions():
    for module in ("planning.planner", "planning.plans", "planning.choosers", "planning.global_batch", "planning.here"):
        names = {imp.target for imp in all_imports() if imp.source == module and not imp.internal}
        assert not names & FRAMEWORKS, f"autodist.{module} imports {names & FRAMEWORKS}"


def test_every_folder_is_packaged():
    """A fresh ``pip install .`` (what CI runs) ships every layer folder."""
    import tomllib

    from tests.import_graph import FOLDERS

    packages = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]
    assert {f"autodist.{folder}" for folder in FOLDERS} <= set(packages), packages
