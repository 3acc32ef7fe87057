"""The ``autodist`` logger and the warnings autodist emits."""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Iterable
from typing import Any

from autodist.errors import AutodistWarning
from autodist.process import once

__all__ = ["get_logger", "log_plan", "user_stacklevel", "warn_all"]


def get_logger() -> logging.Logger:
    """The ``autodist`` logger; it prints INFO to stderr unless the application set up logging."""
    logger = logging.getLogger("autodist")
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    return logger


#: The packages whose frames a warning does not point at: autodist's own, and the frameworks'
#: (and the standard library's wrappers) it runs in, between it and the user's line.
_NOT_THE_CALLER = frozenset({"autodist", "keras", "tensorflow", "tf_keras", "contextlib", "functools", "warnings"})


def user_stacklevel() -> int:
    """The ``stacklevel`` at which :func:`warnings.warn`, called by the caller of this function,
    points at the user's line: the first frame outside :data:`_NOT_THE_CALLER` (the script's
    ``autodist.fit(...)`` or ``model.fit(...)``); the outermost frame where every one is inside."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] in _NOT_THE_CALLER:
        frame, level = frame.f_back, level + 1
    return level


def warn_all(messages: Iterable[str]) -> None:
    """Emit each message as an :class:`AutodistWarning` (visible, and catchable in tests), pointing
    at the user's line that led to it (:func:`user_stacklevel`)."""
    level = user_stacklevel()
    for message in messages:
        warnings.warn(message, AutodistWarning, stacklevel=level)


def log_plan(plan: Any, verbose: bool) -> None:
    """Log the plan a fit runs: the whole of it with ``verbose`` (``AUTODIST_VERBOSE=1``), else its
    one line, and that once per process (a fit repeated with the same plan, in a tuner's trials or a
    loop of folds, says nothing new)."""
    if verbose:
        get_logger().info(plan.summary(include_warnings=False))
    elif once(f"plan: {plan.headline()}"):
        get_logger().info(plan.headline())
