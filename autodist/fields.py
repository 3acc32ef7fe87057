"""Typed fields for the values that come from outside (a ``--snapshot`` file, the command line,
the arguments of the public API): one checker per kind of value, each returning the value or
raising an ``AutodistError`` that says which field, what was received, what was expected and how
to fix it.

The API's arguments are :class:`Parameter` rows (a name, a :class:`Kind`, what it means), checked
together by :func:`check_arguments`; the tables are in :mod:`autodist.planning.arguments`. What
is read from files and JSON text is in :mod:`autodist.files`.

Settings have their parsers in :mod:`autodist.settings`, cluster variables in
:mod:`autodist.detection.cluster_spec` and :mod:`autodist.detection.cluster`; both use the same words.

Example:
    >>> count("num_cpus", 8, minimum=1, where="the snapshot")
    8
    >>> count("num_cpus", -1, minimum=1, where="the snapshot")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    autodist.errors.AutodistError: the snapshot's num_cpus is -1. Expected an integer of at least 1. Fix the value, or
    write the snapshot again with `python -m autodist inspect --json`.
"""

from __future__ import annotations

import difflib
import math
import numbers
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from autodist.errors import ArgumentError, AutodistError
from autodist.files import folder_problem

__all__ = [
    "MAX_WAIT_SECONDS",
    "Kind",
    "Parameter",
    "boolean",
    "bounded",
    "check_arguments",
    "check_environ",
    "choice",
    "count",
    "either",
    "a_type",
    "flag",
    "folder",
    "integer",
    "mapping",
    "name_of",
    "nearest",
    "none_or",
    "number",
    "optional",
    "path",
    "positive_int_argument",
    "sequence",
    "shown",
    "text",
    "unknown_names",
    "wrong",
]

#: The longest wait any argument or setting may ask for: a week. Longer ones overflow the
#: waits they bound (``threading`` refuses a timeout over about 9.2e18 ns), and are typos.
MAX_WAIT_SECONDS = 7 * 24 * 3600.0

FIX = "Fix the value, or write the snapshot again with `python -m autodist inspect --json`."


def _refuse(name: str, value: Any, expected: str, where: str) -> AutodistError:
    return AutodistError(f"{where}'s {name} is {shown(value)}. Expected {expected}. {FIX}")


def count(name: str, value: Any, *, minimum: int = 0, maximum: int | None = None, where: str = "the snapshot") -> int:
    """An integer from ``minimum`` to ``maximum`` (a bool is not one)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        bound = f"of at least {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise _refuse(name, value, f"an integer {bound}", where)
    return value


def text(name: str, value: Any, *, where: str = "the snapshot") -> str:
    """A string."""
    if not isinstance(value, str):
        raise _refuse(name, value, "a string", where)
    return value


def flag(name: str, value: Any, *, where: str = "the snapshot") -> bool:
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise _refuse(name, value, "true or false", where)
    return value


def choice(name: str, value: Any, options: tuple[str, ...], *, where: str = "the snapshot") -> str:
    """One of ``options`` (an unknown value is refused, not defaulted)."""
    if not isinstance(value, str) or value not in options:
        raise _refuse(name, value, f"one of {', '.join(options)}", where)
    return value


def optional(check: Any, name: str, value: Any, **kwargs: Any) -> Any:
    """``None``, or what ``check`` accepts."""
    return None if value is None else check(name, value, **kwargs)


def mapping(name: str, value: Any, *, where: str = "the snapshot") -> Mapping[str, Any]:
    """A JSON object."""
    if not isinstance(value, Mapping):
        raise _refuse(name, value, "an object", where)
    return value


def sequence(name: str, value: Any, *, where: str = "the snapshot") -> list[Any]:
    """A JSON list (``None`` is an empty one)."""
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
        raise _refuse(name, value, "a list", where)
    return list(value)


def positive_int_argument(raw: str, maximum: int | None = None) -> int:
    """An ``argparse`` type: an integer from 1 to ``maximum`` (``--num-params``, ``--batch-size``,
    ``--epochs``); :func:`bounded` makes one with its maximum.

    Example:
        >>> positive_int_argument("64")
        64
    """
    import argparse

    try:
        value = int(raw)
    except ValueError:  # not a whole number, or one of more than 4300 digits
        try:
            number = float(raw)  # 1e9, as a count is often written
            value = int(number) if math.isfinite(number) and number.is_integer() else 0
        except ValueError:
            value = 0
    if value < 1 or (maximum is not None and value > maximum):
        bound = "of at least 1" if maximum is None else f"from 1 to {maximum}"
        raise argparse.ArgumentTypeError(f"{raw[:40]!r} is not an integer {bound}; pass a whole number {bound}")
    return value


def bounded(maximum: int) -> Callable[[str], int]:
    """An ``argparse`` type: :func:`positive_int_argument` with ``maximum``.

    Example:
        >>> bounded(10)("11")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: '11' is not an integer from 1 to 10; pass a whole number from 1 to 10
    """
    return lambda raw: positive_int_argument(raw, maximum)


# ----------------------------------------------------------------------------- the API's arguments


class _Wrong(Exception):
    """A value a :class:`Kind` does not accept; its text, when any, is a hint that ends the
    error (``Did you mean 'mirrored'?``), the rest is written by :func:`check_arguments`."""


@dataclass(frozen=True)
class Kind:
    """A kind of value: what it is called in an error (``expected``) and ``convert``, which
    returns the value as autodist uses it, or raises ``_Wrong`` (or ``TypeError``/``ValueError``)."""

    expected: str
    convert: Callable[[Any], Any]


@dataclass(frozen=True)
class Parameter:
    """One argument of the public API: its name, its kind, what it sets and how to fix a bad one
    (``meaning``), and the error class raised for it."""

    name: str
    kind: Kind
    meaning: str
    error: type[AutodistError] = ArgumentError


def shown(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters (a huge list stays one short line; an
    integer of more digits than Python prints, as its size).

    Example:
        >>> shown(10**5000)
        '<an int of 5001 digits>'
    """
    try:
        text = repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits
        return (
            f"<an int of {len(str(abs(value) // 10**4000)) + 4000} digits>"
            if isinstance(value, int)
            else f"<{type(value).__name__} object>"
        )
    except Exception:  # a user's object whose __repr__ fails is still named
        text = f"<{type(value).__name__} object>"
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def a_type(value: Any) -> str:
    """``"an int"``, ``"a str"``: the type of ``value`` with its article.

    Example:
        >>> a_type(3), a_type("x")
        ('an int', 'a str')
    """
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def check_arguments(where: str, parameters: Mapping[str, Parameter], values: Mapping[str, Any]) -> dict[str, Any]:
    """Every value of ``values`` checked by its row of ``parameters``, converted; the first bad
    one raised as ``"{where}: {name} must be {expected} (Received: {name}=...). {meaning}"``.

    Example:
        >>> rows = {"epochs": Parameter("epochs", integer(0), "Pass for example epochs=10.")}
        >>> check_arguments("autodist.fit", rows, {"epochs": 3})
        {'epochs': 3}
        >>> check_arguments("autodist.fit", rows, {"epochs": 2.5})  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        autodist.errors.ArgumentError: autodist.fit: epochs must be an integer of at least 0 (Received: epochs=2.5, a
        float). Pass for example epochs=10.
    """
    unknown_names(where, parameters, values)
    checked = {}
    for name, value in values.items():
        row = parameters[name]
        try:
            checked[name] = row.kind.convert(value)
        except (_Wrong, TypeError, ValueError, OverflowError, AttributeError) as err:
            hint = f" {err}" if isinstance(err, _Wrong) and str(err) else ""
            raise row.error(
                f"{where}: {name} must be {row.kind.expected} (Received: {name}={shown(value)}, {a_type(value)}). "
                f"{row.meaning}{hint}"
            ) from None
    return checked


def unknown_names(where: str, known: Iterable[str], given: Iterable[str] | Mapping[str, Any]) -> None:
    """Refuse a keyword that is none of ``known``, with the nearest known name (and its value,
    when ``given`` maps names to values).

    Example:
        >>> unknown_names("autodist.plan", ["num_params", "batch_size"],
        ...     {"num_param": 10})  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        autodist.errors.ArgumentError: autodist.plan got an unexpected keyword argument 'num_param' (Received:
        num_param=10). Expected one of: batch_size, num_params. Did you mean 'num_params'?
    """
    names = sorted(known)
    for name in given:
        if name not in names:
            value = f"={shown(given[name])}" if isinstance(given, Mapping) else ""
            raise ArgumentError(
                f"{where} got an unexpected keyword argument {name!r} (Received: {name}{value}). Expected "
                f"one of: {', '.join(names)}.{nearest(name, names)}"
            )


def nearest(name: Any, options: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the option closest to ``name``, or ``""`` when none is close.

    Example:
        >>> nearest("mirored", ["mirrored", "tpu"])
        " Did you mean 'mirrored'?"
    """
    if not isinstance(name, str):
        return ""
    lowered = {option.lower(): option for option in options}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return f" Did you mean {lowered[close[0]]!r}?" if close else ""


def wrong(hint: str = "") -> Any:
    """Refuse the value a :class:`Kind` is converting, with ``hint`` (a sentence), if any, ending the error."""
    raise _Wrong(hint)


def integer(minimum: int, maximum: int | None = None, *, integral_floats: bool = False) -> Kind:
    """An integer (``numpy`` ones too; a bool is not one) from ``minimum`` to ``maximum``; with
    ``integral_floats``, a float with no fraction too (``1e9`` parameters)."""

    def convert(value: Any) -> int:
        if (
            integral_floats
            and isinstance(value, numbers.Real)
            and not isinstance(value, (bool, numbers.Integral))
            and math.isfinite(value)
            and float(value).is_integer()
        ):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            wrong()
        if value < minimum or (maximum is not None and value > maximum):
            wrong()
        return int(value)

    bound = f"of at least {minimum}" if maximum is None else f"from {minimum} to {maximum}"
    return Kind(f"an integer {bound}", convert)


def number(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> Kind:
    """A finite real number (``numpy`` ones too; not a bool, not a string) in the interval."""

    def convert(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            wrong()
        value = float(value)
        below = value <= low if low_open else value < low
        above = value >= high if high_open else value > high
        if not math.isfinite(value) or below or above:
            wrong()
        return value

    return Kind(f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}", convert)


def boolean() -> Kind:
    """``True`` or ``False`` (not ``0``, ``1`` or a string: a typo must not read as a switch)."""
    return Kind("True or False", lambda value: value if isinstance(value, bool) else wrong())


def path() -> Kind:
    """A path: a string or any ``os.PathLike`` (``pathlib.Path``), as a non-empty ``str``."""

    def convert(value: Any) -> str:
        if not isinstance(value, (str, os.PathLike)):
            wrong()
        text = os.fspath(value)
        if not isinstance(text, str) or not text or "\0" in text:
            wrong("" if isinstance(text, str) else "A bytes path is not one: pass os.fsdecode(path).")
        return text

    return Kind("a path (a str or os.PathLike, not empty)", convert)


def environ_mapping() -> Kind:
    """An environment: ``None`` (``os.environ``) or a mapping of ``str`` to ``str``."""

    def convert(value: Any) -> Any:
        if value is None:
            return value
        if not isinstance(value, Mapping):
            wrong()
        odd = next(
            ((key, item) for key, item in value.items() if not isinstance(key, str) or not isinstance(item, str)), None
        )
        if odd is not None:
            wrong(f"Its entry {shown(odd[0])}: {shown(odd[1])} is not a str: str pair.")
        return value

    return Kind("None (os.environ) or a mapping of str to str", convert)


ENVIRON = Parameter(
    "environ", environ_mapping(), "It is the environment to read: pass os.environ, a dict of str to str, or None."
)
FAST = Parameter("fast", boolean(), "True skips importing TensorFlow.")
DONE = Parameter("done", boolean(), "True says the training loop has ended.")


def check_environ(where: str, environ: Any, **flags: Any) -> None:
    """The ``environ`` (and the ``fast``/``done`` flags) of a detection call (``autodist.detect``,
    ``is_chief``, ``beat``), checked before it reads anything."""
    rows = {row.name: row for row in (ENVIRON, FAST, DONE)}
    check_arguments(where, rows, {"environ": environ, **flags})


def either(*kinds: Kind) -> Kind:
    """The first of ``kinds`` that accepts the value."""

    def convert(value: Any) -> Any:
        for kind in kinds:
            try:
                return kind.convert(value)
            except (_Wrong, TypeError, ValueError):
                continue
        wrong()

    return Kind(" or ".join(kind.expected for kind in kinds), convert)


def none_or(kind: Kind) -> Kind:
    """``None``, or what ``kind`` accepts."""
    return Kind(f"None or {kind.expected}", lambda value: None if value is None else kind.convert(value))


def name_of(options: Iterable[str], *, enum: type | None = None) -> Kind:
    """One of ``options`` (any case, read at each call: a live sequence may grow), or a member of
    ``enum`` whose value is one; a close misspelling is named in the error (``Did you mean``)."""
    names = tuple(options)

    def convert(value: Any) -> str:
        names = tuple(options)
        if enum is not None and isinstance(value, enum):
            value = value.value
        if not isinstance(value, str):
            wrong()
        if value.strip().lower() not in names:
            wrong(nearest(value.strip(), names).strip())  # the hint: the closest name
        return value.strip().lower()

    return Kind(f"one of {', '.join(names)}", convert)


def folder() -> Kind:
    """A path (:func:`path`) that is, or can become, a folder this user writes in (:func:`folder_problem`)."""

    def convert(value: Any) -> str:
        text = path().convert(value)
        problem = folder_problem(text)
        if problem:
            wrong(f"{text} is not one: {problem}.")
        return text

    return Kind(
        "a folder path (a str or os.PathLike) that is, or can be created as, a folder you can write in", convert
    )
