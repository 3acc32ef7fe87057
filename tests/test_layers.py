"""The package's layers, from its import graph: detect → plan → act, and the edge above them.

Each module of ``autodist/`` has a layer; a module may import its own layer and the ones below,
never one above. Detection and planning import neither TensorFlow nor Keras at module level (a
subprocess test in tests/test_planning.py checks that importing them loads neither).
"""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT

#: 0 shared basics, 1 detect, 2 plan, 3 act, 4 the edge (public entry points and the CLI).
LAYERS = {
    "errors": 0, "log": 0, "settings": 0, "fields": 0,
    "cluster": 1, "cluster_spec": 1, "hardware": 1, "snapshot": 1, "model_info": 1, "dataset_graph": 1, "jax_devices": 1,
    "planning": 2, "plans": 2, "choosers": 2, "jax_planning": 2, "memory_model": 2, "tune_rules": 2, "global_batch": 2, "keras_compat": 2,
    "strategies": 3, "activation": 3, "coexistence": 3, "placement": 3, "callbacks": 3,
    "batching": 3, "keras_patches": 3, "parameter_server": 3, "ps_input": 3, "keras_integration": 3, "inputs": 3, "compile_settings": 3,
    "decorator": 3, "jax_inputs": 3, "jax_runtime": 3, "launch": 3, "job_layout": 3, "netns": 3, "preemption": 3, "agreement": 3, "callback_state": 3, "resume": 3, "train_state": 3, "tuning": 3, "comm_check": 3,
    "__init__": 4, "__main__": 4, "cli": 4, "demo": 4,
}  # fmt: skip
MODULES = sorted(path.stem for path in (ROOT / "autodist").glob("*.py"))


def imports_of(module: str) -> tuple[set[str], set[str]]:
    """``(autodist modules it imports anywhere, third-party packages it imports at module level)``."""
    tree = ast.parse((ROOT / "autodist" / f"{module}.py").read_text(encoding="utf-8"))
    inner: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "autodist":
            inner |= {alias.name for alias in node.names if alias.name in LAYERS}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autodist."):
            inner.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            inner |= {alias.name.split(".")[1] for alias in node.names if alias.name.startswith("autodist.")}
    top = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            top |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            top.add(node.module.split(".")[0])
    return inner, top


def test_every_module_has_a_layer():
    assert set(MODULES) == set(LAYERS), "place the new module in LAYERS (and docs/architecture.md)"


@pytest.mark.parametrize("module", MODULES)
def test_no_module_imports_a_layer_above_its_own(module):
    inner, top = imports_of(module)
    upward = sorted(name for name in inner if LAYERS[name] > LAYERS[module])
    assert not upward, f"autodist.{module} (layer {LAYERS[module]}) imports {upward} from above"
    if LAYERS[module] <= 2:
        assert not top & {"tensorflow", "keras", "tf_keras", "jax"}, f"autodist.{module} imports TensorFlow or JAX at module level"


def test_the_readme_layout_names_every_module():
    layout = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split("## Layout", 1)[1].split("\n## ", 1)[0]
    missing = [m for m in MODULES if m not in ("__init__", "__main__") and f"`{m}.py`" not in layout]
    assert not missing, missing


def test_functions_fit_on_a_screen_and_modules_stay_small():
    too_long = []
    for module in MODULES:
        source = (ROOT / "autodist" / f"{module}.py").read_text(encoding="utf-8")
        if source.count("\n") > 450:
            too_long.append(f"autodist/{module}.py: {source.count(chr(10))} lines (at most 450)")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                too_long.append(f"autodist/{module}.py {node.name}: {node.end_lineno - node.lineno + 1} lines (at most 80)")
    assert not too_long, too_long


def test_the_detect_and_plan_modules_docstring_examples_run():
    """Their examples are data in, data out: they must run as written."""
    import doctest
    import importlib

    failed, tried = 0, 0
    for module in (m for m in MODULES if LAYERS[m] <= 2):
        result = doctest.testmod(importlib.import_module(f"autodist.{module}"), optionflags=doctest.ELLIPSIS)
        failed, tried = failed + result.failed, tried + result.attempted
    assert failed == 0 and tried >= 30, (failed, tried)


def test_the_planners_own_modules_import_no_tensorflow_even_inside_functions():
    for module in ("planning", "plans", "choosers", "global_batch"):
        tree = ast.parse((ROOT / "autodist" / f"{module}.py").read_text(encoding="utf-8"))
        names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        names |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert not names & {"tensorflow", "keras", "tf_keras"}, f"autodist.{module} imports {names & {'tensorflow', 'keras', 'tf_keras'}}"
