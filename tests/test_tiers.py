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
