"""The ``autodist`` logger and the warnings autodist emits."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable

from autodist.errors import AutodistWarning

__all__ = ["get_logger", "warn_all"]


def get_logger() -> logging.Logger:
    """The ``autodist`` logger; it prints INFO to stderr unless the application set up logging."""
    logger = logging.getLogger("autodist")
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    return logger


def warn_all(messages: Iterable[str], *, stacklevel: int = 3) -> None:
    """Emit each message as an :class:`AutodistWarning` (visible, and catchable in tests)."""
    for message in messages:
        warnings.warn(message, AutodistWarning, stacklevel=stacklevel)
