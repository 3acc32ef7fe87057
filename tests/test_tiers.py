"""The test tiers (tests/conftest.py): a test's tier follows from the fixtures it uses, and a test
in the unit tier that imports TensorFlow or starts a process fails, naming the fixture to use."""

from __future__ import annotations

from tests.conftest import ROOT

TESTS = """
import subprocess
import sys


def test_light():
    assert sum([1, 2]) == 3


def test_imports_tensorflow():
    import tensorflow  # noqa: F401


def test_catches_the_refusal():
    try:
        import jax  # noqa: F401
    except ImportError:
        pass


def test_starts_a_process():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_declares_tensorflow(tensorflow_imported):
    import tensorflow  # noqa: F401


def test_declares_processes(processes):
    subprocess.run([sys.executable, "-c", "pass"], check=True)
"""


def test_a_unit_test_that_imports_tensorflow_or_starts_a_process_fails_naming_the_fixture(pytester, processes):
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nmarkers =\n    tensorflow: heavy\n    unit: light\n    differential: tier\n")
    pytester.makepyfile(test_tiers=TESTS)
    unit = pytester.runpytest_subprocess("-m", "unit", "-p", "no:cacheprovider")
    unit.assert_outcomes(passed=1, failed=3, deselected=2)
    unit.stdout.fnmatch_lines(["*a unit test imports jax*"])
    unit.stdout.fnmatch_lines(["*a unit test imports tensorflow: request the fixture tensorflow_imported*"])
    unit.stdout.fnmatch_lines(["*a unit test starts a process*request the fixture processes*"])
    heavy = pytester.runpytest_subprocess("-m", "tensorflow", "-p", "no:cacheprovider")
    heavy.assert_outcomes(passed=2, deselected=4)


def test_a_child_of_the_suite_goes_without_the_packages_keras_imports_unasked(processes):
    """Outside the differential tier, a child cannot import what ``HIDDEN_IN_CHILDREN`` names (Keras
    then goes without them, as where they are not installed); ``TESTS_HIDDEN_MODULES=None`` shows them."""
    import json

    from tests.conftest import HIDDEN_IN_CHILDREN, run_python, subprocess_env

    probe = (
        "import importlib, json, sys\n"
        "found = {}\n"
        "for name in sys.argv[1].split(','):\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "        found[name] = True\n"
        "    except ModuleNotFoundError as err:\n"
        "        found[name] = str(err)\n"
        "print(json.dumps(found))\n"
    )
    names = HIDDEN_IN_CHILDREN + ",matplotlib.pyplot,json"
    hidden = json.loads(run_python(["-c", probe, names], env=subprocess_env()).stdout)
    shown = json.loads(run_python(["-c", probe, names], env=subprocess_env(TESTS_HIDDEN_MODULES=None)).stdout)
    assert {name for name, found in hidden.items() if found is True} == {"json"}, hidden
    assert all("hidden by TESTS_HIDDEN_MODULES" in found for name, found in hidden.items() if name != "json"), hidden
    assert all(found is True for found in shown.values()), shown
