"""Keras's private classes found by the part they play, not by the name one release gives them.

Keras renames and moves its backend's code between releases: Keras 3.16 calls the TensorFlow
trainer ``keras.src.backend.tensorflow.trainer.Trainer`` (``TensorFlowTrainer`` in 3.3-3.15),
its base ``BaseTrainer`` (``Trainer``), and moved ``keras.src.backend.tensorflow.core`` to
``keras.src.backend.tensorflow.ops.core``. A touch of :mod:`autodist.upstream.surface` names what
it needs through a role (``<tf_trainer>._maybe_symbolic_build``), and the role follows Keras's
code: the trainer is the class of the trainer module that the base trainer is a base of, the
variable class is the one the backend package exports, its module is wherever that class is
defined. A role is gone only where what plays it is gone; then :func:`find` raises
:class:`LookupError` naming it, and the touches that need it are off, as for any absence.

Example:
    >>> sorted(ROLES)
    ['base_trainer', 'jax_variable', 'tf_ops_core', 'tf_trainer', 'tf_trainer_module', 'tf_variable']
    >>> split("<tf_trainer>.evaluate"), split("os.path.join")
    (('tf_trainer', 'evaluate'), (None, 'os.path.join'))
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

__all__ = ["ROLES", "Role", "RoleMissing", "find", "split", "table"]


class RoleMissing(LookupError):
    """Nothing in this installation plays a role: unlike a missing attribute of what plays it,
    never an absence a release is expected to have."""


@dataclass(frozen=True)
class Role:
    """One part a private Keras class or module plays, how it is found, and the names it had."""

    name: str
    what: str  # the part it plays, in words
    found_by: str  # how it is found, in words (docs/upstream.md)
    names: tuple[str, ...]  # the names it had, by the releases measured
    finder: Callable[[], Any] = field(repr=False, compare=False)


def _module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise RoleMissing(name) from None


def _defined_in(module: ModuleType) -> list[type]:
    """The classes ``module`` defines, each once (an alias kept for an old name is the same class)."""
    classes = [c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == module.__name__]
    return list({id(c): c for c in classes}.values())


def _root(classes: list[type]) -> type | None:
    """The one class of ``classes`` that every other derives from (``None``: none, or several)."""
    roots = [c for c in classes if not any(other is not c and issubclass(c, other) for other in classes)]
    return roots[0] if len(roots) == 1 else None


def _base_trainer() -> type:
    """The class of ``keras.src.trainers.trainer`` that compiles, fits, evaluates and predicts, and
    that every other such class there derives from."""
    module = _module("keras.src.trainers.trainer")
    trainers = [c for c in _defined_in(module) if all(hasattr(c, a) for a in ("compile", "fit", "evaluate", "predict"))]
    found = _root(trainers)
    if found is None:
        raise RoleMissing(f"{module.__name__}'s trainer class (one class with compile, fit, evaluate and predict)")
    return found


def _tf_trainer() -> type:
    """The class of ``keras.src.backend.tensorflow.trainer`` that derives from the base trainer
    (the most basic one, should Keras add a specialised one there): what a Keras model trains with
    on TensorFlow."""
    base = _base_trainer()
    module = _module("keras.src.backend.tensorflow.trainer")
    found = _root([c for c in _defined_in(module) if issubclass(c, base) and c is not base])
    if found is None:
        raise RoleMissing(f"{module.__name__}'s trainer class (a subclass of {base.__module__}.{base.__name__})")
    return found


def _backend_variable(backend: str) -> type:
    """The variable class Keras's ``backend`` package exports (``keras.src.backend.<backend>.Variable``)."""
    package = _module(f"keras.src.backend.{backend}")
    variable = getattr(package, "Variable", None)
    common = "keras.src.backend.common.variables"  # its class: KerasVariable to 3.5, Variable from 3.6
    if not (inspect.isclass(variable) and any(base.__module__ == common for base in variable.__mro__[1:])):
        raise RoleMissing(f"keras.src.backend.{backend}.Variable (a subclass of {common}'s variable class)")
    return variable


#: Every role, by name.
ROLES: dict[str, Role] = {
    role.name: role
    for role in (
        Role(
            "base_trainer",
            "Keras 3's backend-neutral trainer: compile, fit, the symbolic build",
            "the class of `keras.src.trainers.trainer` with `compile`, `fit`, `evaluate` and `predict` that every "
            "other such class there derives from",
            ("keras.src.trainers.trainer.Trainer (3.3-3.15)", "keras.src.trainers.trainer.BaseTrainer (3.16)"),
            _base_trainer,
        ),
        Role(
            "tf_trainer",
            "Keras 3's TensorFlow trainer: what a model trains, evaluates and predicts with on TensorFlow",
            "the most basic class of `keras.src.backend.tensorflow.trainer` that derives from `<base_trainer>`",
            (
                "keras.src.backend.tensorflow.trainer.TensorFlowTrainer (3.3-3.15)",
                "keras.src.backend.tensorflow.trainer.Trainer (3.16)",
            ),
            _tf_trainer,
        ),
        Role(
            "tf_trainer_module",
            "the module of the TensorFlow trainer: its per-replica reduce",
            "the module `<tf_trainer>` is defined in",
            ("keras.src.backend.tensorflow.trainer (3.3-3.16)",),
            lambda: sys.modules[_tf_trainer().__module__],
        ),
        Role(
            "tf_variable",
            "Keras 3's variable on TensorFlow",
            "`keras.src.backend.tensorflow.Variable`, a subclass of the class of `keras.src.backend.common.variables`",
            (
                "keras.src.backend.tensorflow.core.Variable (3.3-3.15)",
                "keras.src.backend.tensorflow.ops.core.Variable (3.16)",
            ),
            lambda: _backend_variable("tensorflow"),
        ),
        Role(
            "tf_ops_core",
            "the TensorFlow backend's core ops module",
            "the module `<tf_variable>` is defined in",
            ("keras.src.backend.tensorflow.core (3.3-3.15)", "keras.src.backend.tensorflow.ops.core (3.16)"),
            lambda: sys.modules[_backend_variable("tensorflow").__module__],
        ),
        Role(
            "jax_variable",
            "Keras 3's variable on JAX",
            "`keras.src.backend.jax.Variable`, a subclass of the class of `keras.src.backend.common.variables`",
            (
                "keras.src.backend.jax.core.Variable or JaxVariable (3.3-3.15)",
                "keras.src.backend.jax.ops.core.Variable (3.16)",
            ),
            lambda: _backend_variable("jax"),
        ),
    )
}


def split(dotted: str) -> tuple[str | None, str]:
    """``"<role>.rest"`` → ``(role, rest)``; a plain dotted name → ``(None, name)``."""
    if dotted.startswith("<") and ">" in dotted:
        role, rest = dotted[1:].split(">", 1)
        return role, rest.lstrip(".")
    return None, dotted


def find(name: str) -> Any:
    """What plays the role ``name`` in this installation.

    Raises:
        RoleMissing: nothing plays it here (the message names what was looked for).
        ValueError: no role has that name (a mistake in autodist's table, never an expected absence).
    """
    if name not in ROLES:
        raise ValueError(f"no role named {name!r}: the roles are {', '.join(sorted(ROLES))}")
    return ROLES[name].finder()


def table() -> list[str]:
    """The rows of docs/upstream.md's roles table, header first."""
    return [
        "| role | the part it plays | found as | its names, by release |",
        "|---|---|---|---|",
        *(
            f"| `<{role.name}>` | {role.what} | {role.found_by} | {', '.join(f'`{n}`' for n in role.names)} |"
            for role in ROLES.values()
        ),
    ]
