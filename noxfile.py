"""The support matrix: autodist installed into an environment that already holds a pinned
TensorFlow/Keras pair, as a user installs it, and its matrix slice run there.

    pip install nox
    nox -s "matrix(pair='oldest')"          # TensorFlow 2.16.2 + Keras 3.3.3 + tf_keras 2.16.0
    nox -s "matrix(pair='middle')"          # TensorFlow 2.18.1 + Keras 3.8.0
    nox -s "matrix(pair='next-tf')"         # TensorFlow 2.22.0rc0 + Keras 3.15.1
    nox -s "matrix(pair='next')"            # TensorFlow 2.22.0rc0 + keras-nightly 3.16.0.dev2026102704
    nox -l                                  # every pair (docs/support-matrix.md)

``.ci/run`` runs the pairs of :data:`CI_PAIRS` after the README's test command (the newest pair),
beside the differential tier and the corpus slice: the oldest, a middle one, and the next releases
(a TensorFlow pre-release with a dated ``keras-nightly``; with the released Keras, ``next-tf``, by hand).
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
nox.options.sessions = []  # a plain `nox`: what CI runs (set below, from CI_PAIRS)

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
    # The next releases (docs/support-matrix.md, "The next releases"): TensorFlow's newest pre-release, first
    # with the released Keras, then with a dated keras-nightly build, moved forward on purpose.
    "next-tf": ("tensorflow==2.22.0rc0", "keras==3.15.1"),
    "next": ("tensorflow==2.22.0rc0", "keras-nightly==3.16.0.dev2026102704"),
}
#: The pairs CI runs after the README's test command (.ci/run), one session each.
CI_PAIRS = ("oldest", "middle", "next")
#: What a pair's environment gets besides its pins and the test tools: JAX, where the pair is one the
#: JAX touches (the variable layout, the backends' state) must be probed on.
EXTRAS = {"next": ("jax==0.10.2",)}
#: The Keras distributions one ``keras`` package can come from: a TensorFlow pre-release requires
#: keras-nightly, which writes the same ``keras/`` folder as keras. A pair that pins one of them has
#: the other taken out after its pins are installed, so the Keras it names is the one imported.
KERAS_DISTRIBUTIONS = ("keras", "keras-nightly")

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
from autodist.upstream.versions import module_version
pins = dict(p.split("==") for p in sys.argv[1:])
found = {name: m.version(name) for name in pins}
found.update({name: module_version("keras") for name in pins if name in ("keras", "keras-nightly")})  # the one imported
assert found == pins, f"installing autodist changed the environment's pair: {found} != {pins}"
print("the pair is as it was:", found)
"""


@nox.session
@nox.parametrize("pair", list(PAIRS))
def matrix(session: nox.Session, pair: str) -> None:
    pins = PAIRS[pair]
    session.install(*pins)
    session.install(".")
    session.install("pytest>=7", "hypothesis", *EXTRAS.get(pair, ()))
    # One Keras in the keras/ folder, the pinned one: a TensorFlow pre-release requires keras-nightly, which pip
    # installs with the pins and again with autodist (TensorFlow's requirement, re-resolved), so this comes last.
    keras_pins = [pin for pin in pins if pin.split("==")[0] in KERAS_DISTRIBUTIONS]
    others = [name for name in KERAS_DISTRIBUTIONS if keras_pins and not keras_pins[0].startswith(f"{name}==")]
    shown = session.run("python", "-m", "pip", "show", *others, silent=True, success_codes=[0, 1]) if others else ""
    if "Name:" in str(shown):
        session.run("python", "-m", "pip", "uninstall", "--yes", *others)
        session.install("--force-reinstall", "--no-deps", *keras_pins)
    session.run("python", "-c", _UNCHANGED, *pins)
    tests = SLICE + (TF_KERAS_SLICE if any(pin.startswith("tf-keras") for pin in pins) else ())
    session.run("python", "-m", "pytest", "-p", "no:cacheprovider", "-q", *tests, *session.posargs)


nox.options.sessions = [f"matrix(pair='{pair}')" for pair in CI_PAIRS]
