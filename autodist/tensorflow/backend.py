"""The TensorFlow side of the backend seam (:class:`autodist.core.fit_call.Backend`): ``tf.distribute``.

- at import: once TensorFlow is imported, split the CPU, plan, and make the strategy current at
  the first trigger (:mod:`autodist.tensorflow.current_strategy`);
- ``init``: plan here, serve (parameter-server ``worker``/``ps`` tasks end there), build the
  strategy and apply the Keras workarounds (:func:`autodist.tensorflow.strategies.start`);
- the scope: the strategy's own;
- ``fit``: :func:`autodist.core.fit_template.run_fit` with :class:`autodist.tensorflow.fit.TensorFlowFit`'s
  stages, the workers' collective ops that did not match said as a ``CollectiveMismatchError``
  (:mod:`autodist.tensorflow.collectives`).

``import autodist`` loads this module to install the hook, and nothing else of the TensorFlow
side: each step imports its modules when it runs (the one reason for imports inside functions
here), so ``import autodist`` stays light.

Example:
    >>> TENSORFLOW.name
    'tensorflow'
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from autodist.planning.plans import Plan
from autodist.core.fit_call import FitCall
from autodist.core.framework_import import when_imported

__all__ = ["TENSORFLOW", "TensorFlowBackend"]

#: Packages whose import may import TensorFlow; the activation waits until the outermost one is done.
WATCHED = ("tensorflow", "keras", "tf_keras")


class TensorFlowBackend:
    """``tf.distribute``: the strategy is made current at import, and trains ``fit``."""

    name = "tensorflow"

    def at_import(self, environ: Mapping[str, str]) -> None:
        when_imported(WATCHED, "tensorflow", lambda: _activate(environ))

    def init(self, environ: Mapping[str, str], *, make_global: bool = True, **plan_kwargs: Any) -> tuple[Plan, Any]:
        from autodist.core.detect_and_plan import plan_here
        from autodist.tensorflow.current_strategy import complete, keep_current
        from autodist.tensorflow.parameter_server import serve_if_this_task_serves
        from autodist.tensorflow.strategies import start

        complete()  # the strategy made current at import, if it is still pending
        if make_global:
            keep_current()  # init: the script asked for autodist's strategy, which stays current
        the_plan = plan_here(environ, **plan_kwargs)
        serve_if_this_task_serves(the_plan)  # parameter-server worker and ps tasks end here
        return the_plan, start(the_plan)

    def scope(self, distribution: Any) -> AbstractContextManager[Any]:
        return distribution.scope()

    def fit(self, call: FitCall, environ: Mapping[str, str]) -> Any:
        """:func:`autodist.core.fit_template.run_fit` with TensorFlow's stages; the workers'
        collective ops not matching (work on one worker only, such as ``autodist.fit`` on the chief
        alone) raised as a ``CollectiveMismatchError`` that says so, with TensorFlow's error as its cause."""
        from autodist.core.fit_template import run_fit
        from autodist.tensorflow.collectives import collective_mismatch
        from autodist.tensorflow.fit import TensorFlowFit

        try:
            return run_fit(TensorFlowFit(environ), call)
        except Exception as err:
            mismatch = collective_mismatch(err, "in autodist.fit")
            if mismatch is None:
                raise
            raise mismatch from err


def _activate(environ: Mapping[str, str]) -> None:
    from autodist.tensorflow.current_strategy import activate

    activate(environ)


TENSORFLOW = TensorFlowBackend()
