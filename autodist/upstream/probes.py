"""How a touch of :mod:`autodist.upstream.surface` checks that what it needs exists: a
:class:`Touch` and its probe, and the probes the table is built of.

Example:
    >>> resolve("os.path.join").__name__
    'join'
    >>> _present("os.path.no_such_thing")()
    Absence(what='os.path.no_such_thing', expected=False)
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autodist.upstream import roles
from autodist.upstream.versions import module_version, version_tuple

__all__ = ["Absence", "Probe", "Touch", "describe", "resolve"]

_CONTEXT = "tensorflow.python.eager.context"


@dataclass(frozen=True)
class Absence:
    """What a probe did not find. ``expected``: this release has neither the code nor the bug the
    touch is for, so the touch is not needed here (off without a warning)."""

    what: str
    expected: bool = False


Probe = Callable[[], "Absence | None"]


@dataclass(frozen=True)
class Touch:
    """One touch of private upstream code."""

    name: str
    package: str  # "tensorflow", "keras", "tf_keras" or "jax"
    touches: tuple[str, ...]
    why: str
    measured: str
    off: str  # what changes for the user where the probe finds it missing
    still_needed: str  # the test that fails the day upstream makes the touch unnecessary
    probe: Probe = dataclasses.field(repr=False, compare=False, default=lambda: None)


def resolve(dotted: str) -> Any:
    """The object a dotted name names (``package.module.Class.attribute``), importing the longest
    module prefix, or, for ``<role>.attribute``, the attribute of what plays that role
    (:mod:`autodist.upstream.roles`: Keras's classes found by the part they play, whatever a
    release names them). Raises :class:`LookupError` naming the part that is missing."""
    role, rest = roles.split(dotted)
    if role is not None:
        return _attribute(roles.find(role), f"<{role}>", rest.split(".") if rest else [])
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        return _attribute(module, ".".join(parts[:cut]), parts[cut:])
    raise LookupError(parts[0])


def _attribute(found: Any, name: str, parts: list[str]) -> Any:
    """``found``'s attribute ``parts`` (``found`` is ``name``); :class:`LookupError` names the first part missing."""
    for index, part in enumerate(parts):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise LookupError(".".join([name, *parts[: index + 1]])) from None
    return found


def _signature_lacks(name: str) -> str | None:
    """For ``dotted(a, b, c)``: what the callable ``dotted`` lacks of those leading positional
    parameters, by name and order (``None``: it has them, or the name states none). A patch
    that calls the original with those arguments relies on them.

    Example:
        >>> _signature_lacks("os.path.basename(p)"), _signature_lacks("os.path.basename(path)")
        (None, 'os.path.basename(p), not (path)')
    """
    import inspect

    if not name.endswith(")") or "(" not in name:
        return None
    dotted, wanted = name[:-1].split("(", 1)
    expected = [part.strip() for part in wanted.split(",") if part.strip()]
    try:
        parameters = list(inspect.signature(resolve(dotted)).parameters.values())
    except (TypeError, ValueError):  # no signature to read: nothing can be said
        return None
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if positional[: len(expected)] == expected:
        return None
    shown = ", ".join(
        ("*" if p.kind == p.VAR_POSITIONAL else "**" if p.kind == p.VAR_KEYWORD else "") + p.name for p in parameters
    )
    return f"{dotted}({shown}), not ({', '.join(expected)})"


def _present(*names: str, when_absent_expected: str | None = None, keras_before: str | None = None) -> Probe:
    """A probe that every dotted name resolves (a name written ``dotted(a, b)`` must also take
    ``a`` and ``b`` as its first positional parameters). With ``when_absent_expected``, the
    absence of the first name is expected (the release has no such code and no bug for it): on a
    Keras older than ``keras_before`` only, where that is given (a later release that lacks it
    renamed it, and is warned)."""

    def probe() -> Absence | None:
        for index, name in enumerate(names):
            try:
                resolve(name.split("(", 1)[0])
                lacks = _signature_lacks(name)
                if lacks is not None:
                    return Absence(lacks)
            except LookupError as missing:  # a role nothing plays is never an expected absence
                expected = (
                    index == 0
                    and when_absent_expected is not None
                    and not isinstance(missing, roles.RoleMissing)
                    and (keras_before is None or _keras_older_than(keras_before))
                )
                return Absence(f"{missing.args[0]}" + (f" ({when_absent_expected})" if expected else ""), expected)
            except Exception as err:  # a module that fails to import: the touch is off
                return Absence(f"{name} ({type(err).__name__}: {err})")
        return None

    probe.describes = "finds " + ", ".join(f"`{name}`" for name in names)  # type: ignore[attr-defined]
    return probe


def _keras_older_than(release: str) -> bool:
    """Whether the installed Keras (as its own code names it) is older than ``release``."""
    installed = version_tuple(module_version("keras"))
    return bool(installed) and installed < version_tuple(release)


def _mentions(dotted: str, *names: str, when_absent_expected: str | None = None) -> Probe:
    """A probe that the source of ``dotted`` (a class or function) sets or reads each of
    ``names``: for attributes that exist only on instances, which cannot be made here without
    starting the runtime or writing files."""

    def probe() -> Absence | None:
        import inspect

        try:
            source = inspect.getsource(resolve(dotted))
        except LookupError as missing:
            expected = when_absent_expected is not None and not isinstance(missing, roles.RoleMissing)
            return Absence(str(missing.args[0]), expected=expected)
        except (OSError, TypeError) as err:  # no source shipped: nothing can be said
            return Absence(f"the source of {dotted} ({type(err).__name__})")
        lacking = [name for name in names if name not in source]
        return Absence(f"{dotted}'s {', '.join(lacking)}") if lacking else None

    probe.describes = f"finds {', '.join(f'`{name}`' for name in names)} in the source of `{dotted}`"
    return probe


def _one_of(*alternatives: str) -> Probe:
    def probe() -> Absence | None:
        for name in alternatives:
            try:
                resolve(name.split("(", 1)[0])
            except Exception:
                continue
            lacks = _signature_lacks(name)
            return None if lacks is None else Absence(lacks)
        return Absence(" and ".join(alternatives))

    probe.describes = "finds one of " + ", ".join(f"`{name}`" for name in alternatives)  # type: ignore[attr-defined]
    return probe


def _coordination_key_value() -> Absence | None:
    import inspect

    try:
        context = resolve("tensorflow.python.eager.context.Context")
        getter, _ = context.get_config_key_value, context.set_config_key_value  # both there
        if "timeout_in_ms" not in inspect.signature(getter).parameters:
            return Absence(
                "the timeout_in_ms parameter of tensorflow.python.eager.context.Context.get_config_key_value"
            )
    except LookupError as missing:
        return Absence(str(missing.args[0]))
    return None


def _runtime_handle() -> Absence | None:
    context = resolve("tensorflow.python.eager.context.context")()  # the context object; the runtime stays unstarted
    return None if hasattr(context, "_context_handle") else Absence(f"{_CONTEXT}.context()._context_handle")


_runtime_handle.describes = "finds `_context_handle` on the eager context object (created, not started)"


def _slurm() -> Absence | None:
    return _present(
        "tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver.expand_hostlist",
        "tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver.expand_tasks_per_node",
    )()


_coordination_key_value.describes = (
    "finds `Context.get_config_key_value` with a `timeout_in_ms` parameter, and "
    "`set_config_key_value`"  # type: ignore[attr-defined]
)
_slurm.describes = "finds `slurm_cluster_resolver.expand_hostlist` and `expand_tasks_per_node`"


def describe(probe: Probe) -> str:
    """What a probe checks, in words (docs/upstream.md's probe column)."""
    return getattr(probe, "describes", "checks nothing: always on")
