"""The support matrix: autodist installed into an environment that already holds a pinned
TensorFlow/Keras pair, as a user installs it, and its matrix slice run there.

    pip install nox
    nox -s "matrix(pair='oldest')"          # TensorFlow 2.16.2 + Keras 3.3.3 + tf_keras 2.16.0
    nox -s "matrix(pair='middle')"          # TensorFlow 2.18.1 + Keras 3.8.0
    nox -l                                  # every pair (docs/support-matrix.md)

``.ci/run`` runs the oldest and the middle pair after the README's test command (the newest pair).
Each session installs the pair first, then autodist (``pip install .``: its requirements are
already met, so the pair stays as it is, which the session checks), then the test tools, and
runs the slice: a replicated single-host fit and models with BatchNormalization, Dropout and a
train_step of their own (tests/test_upstream.py), a 2-worker launch (tests/test_multi_worker.py),
and the still-needed test of every workaround and touch (tests/test_keras_compat.py,
tests/test_upstream.py).
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = False
nox.options.sessions = ["matrix(pair='oldest')", "matrix(pair='middle')"]  # a plain `nox`: what CI runs

#: Each pair of the support matrix: the pins a user's environment has (docs/support-matrix.md).
PAIRS = {
    "oldest": ("tensorflow==2.16.2", "keras==3.3.3", "tf-keras==2.16.0"),
    "2.17-3.4": ("tensorflow==2.17.1", "keras==3.4.1"),
    "2.17-3.6": ("tensorflow==2.17.1", "keras==3.6.0"),
    "2.18-3.7": ("tensorflow==2.18.1", "keras==3.7.0"),
    "middle": ("tensorflow==2.18.1", "keras==3.8.0"),
    "2.19-3.10": ("tensorflow==2.19.1", "keras==3.10.0"),
    "2.20-3.12": ("tensorflow==2.20.0", "keras==3.12.0"),
    "newest": ("tensorflow==2.21.0", "keras==3.15.1", "tf-keras==2.21.0"),
}

#: The matrix slice (about 4 minutes a pair on 2 cores).
SLICE = (
    "tests/test_upstream.py",
    "tests/test_keras_compat.py",
    "tests/test_multi_worker.py::test_still_needed_first_batch_symbolic_build_multi_worker",
    "tests/test_multi_worker.py::test_still_needed_multi_worker_scalar_reduce",
    "tests/test_multi_worker.py::test_two_workers_match_each_other_and_a_single_process[keras3]",
    "tests/test_arguments.py",  # the API's boundary against this pair's model.fit and callbacks
    "tests/test_replica_differences.py",  # what this pair's models tell about replica differences
)
#: Added where the pair has tf_keras.
TF_KERAS_SLICE = ("tests/test_multi_worker.py::test_two_workers_match_each_other_and_a_single_process[tf_keras]",)

_UNCHANGED = """
import importlib.metadata as m, sys
pins = dict(p.split("==") for p in sys.argv[1:])
found = {name: m.version(name) for name in pins}
assert found == pins, f"installing autodist changed the environment's pair: {found} != {pins}"
print("the pair is as it was:", found)
"""


@nox.session
@nox.parametrize("pair", list(PAIRS))
def matrix(session: nox.Session, pair: str) -> None:
    pins = PAIRS[pair]
    session.install(*pins)
    session.install(".")
    session.install("pytest>=7", "hypothesis")
    session.run("python", "-c", _UNCHANGED, *pins)
    tests = SLICE + (TF_KERAS_SLICE if any(pin.startswith("tf-keras") for pin in pins) else ())
    session.run("python", "-m", "pytest", "-p", "no:cacheprovider", "-q", *tests, *session.posargs)
