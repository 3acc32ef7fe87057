"""Run at the start of every process the suite starts (``tests/conftest.py``'s ``subprocess_env`` puts
this folder on ``PYTHONPATH``): the packages named in ``TESTS_HIDDEN_MODULES`` cannot be imported.

TensorFlow and Keras import some packages whenever they are installed, though a training program
never uses them: Keras its scikit-learn wrapper, its image gallery's ``matplotlib.pyplot`` and
IPython for its file editor. The test extras install all three (the corpus's programs and the
benchmarks need them), and each process then spends about 2.3 CPU seconds more on
``import autodist, tensorflow, keras`` (8.8 s against 6.5 s, measured on 2 cores): a fifth of the
suite's CPU time over its few hundred processes. Hidden, a child imports them as in an environment
made by the README's ``pip install .``, where they are absent and Keras goes without them; a child
that needs one (a published program that plots) fails with ``ModuleNotFoundError`` naming it, and
its runner passes ``TESTS_HIDDEN_MODULES=None`` to ``subprocess_env``.
"""

import os
import sys

HIDDEN = tuple(name for name in os.environ.get("TESTS_HIDDEN_MODULES", "").split(",") if name)


class _Hidden:
    """A meta path finder that refuses the packages of :data:`HIDDEN` and their modules."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r} (hidden by TESTS_HIDDEN_MODULES)", name=name)
        return None


if HIDDEN:
    sys.meta_path.insert(0, _Hidden())
