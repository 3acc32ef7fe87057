"""Typed fields for the values that come from outside (a ``--snapshot`` file, the command line):
one checker per kind of value, each returning the value or raising an ``AutodistError`` that
says which field, what was received, what was expected and how to fix it.

Settings have their parsers in :mod:`autodist.settings`, cluster variables in
:mod:`autodist.detection.cluster_spec` and :mod:`autodist.detection.cluster`; both use the same words.

Example:
    >>> count("num_cpus", 8, minimum=1, where="the snapshot")
    8
    >>> count("num_cpus", -1, minimum=1, where="the snapshot")
    Traceback (most recent call last):
    ...
    autodist.errors.AutodistError: the snapshot's num_cpus is -1. Expected an integer of at least 1. Fix the value, or write the snapshot again with `python -m autodist inspect --json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autodist.errors import AutodistError

__all__ = ["choice", "count", "flag", "mapping", "optional", "positive_int_argument", "sequence", "text"]

FIX = "Fix the value, or write the snapshot again with `python -m autodist inspect --json`."


def _refuse(name: str, value: Any, expected: str, where: str, fix: str) -> AutodistError:
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return AutodistError(f"{where}'s {name} is {shown}. Expected {expected}. {fix}")


def count(name: str, value: Any, *, minimum: int = 0, where: str, fix: str = FIX) -> int:
    """An integer of at least ``minimum`` (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _refuse(name, value, f"an integer of at least {minimum}", where, fix)
    return value


def text(name: str, value: Any, *, where: str, fix: str = FIX) -> str:
    """A string."""
    if not isinstance(value, str):
        raise _refuse(name, value, "a string", where, fix)
    return value


def flag(name: str, value: Any, *, where: str, fix: str = FIX) -> bool:
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise _refuse(name, value, "true or false", where, fix)
    return value


def choice(name: str, value: Any, options: tuple[str, ...], *, where: str, fix: str = FIX) -> str:
    """One of ``options`` (an unknown value is refused, not defaulted)."""
    if not isinstance(value, str) or value not in options:
        raise _refuse(name, value, f"one of {', '.join(options)}", where, fix)
    return value


def optional(check: Any, name: str, value: Any, **kwargs: Any) -> Any:
    """``None``, or what ``check`` accepts."""
    return None if value is None else check(name, value, **kwargs)


def mapping(name: str, value: Any, *, where: str, fix: str = FIX) -> Mapping[str, Any]:
    """A JSON object."""
    if not isinstance(value, Mapping):
        raise _refuse(name, value, "an object", where, fix)
    return value


def sequence(name: str, value: Any, *, where: str, fix: str = FIX) -> list[Any]:
    """A JSON list (``None`` is an empty one)."""
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
        raise _refuse(name, value, "a list", where, fix)
    return list(value)


def positive_int_argument(raw: str) -> int:
    """An ``argparse`` type: a positive integer (``--num-params``, ``--batch-size``, ``--workers``).

    Example:
        >>> positive_int_argument("64")
        64
    """
    import argparse

    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a positive integer; pass a whole number of at least 1")
    return value
