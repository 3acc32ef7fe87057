"""One Keras 3 bug that autodist works around, as one object: :class:`Workaround`.

A workaround is declared once, in the module that holds its patch (``keras_variables``,
``keras_optimizer``, ``keras_own_steps``, ``keras_trainer``, ``keras_adapters``), or in
:mod:`autodist.upstream.keras_workarounds` where it changes compile settings or a default and
patches nothing. The object carries everything about it:

- what the bug is, its upstream issue, and what autodist does (``upstream``, ``summary``);
- its gate: the releases that have the bug (``affected``), measured on each release of the support
  matrix, and why it is harmless where the bug is fixed (``if_fixed``); :meth:`Workaround.is_active`;
- the touches of private code it needs (``touches``, each a row of :mod:`autodist.upstream.surface`);
- ``install``: the patch, applied once per process (``None`` for a compile setting or a default);
  what it replaces goes through :func:`autodist.process.replace`, so the tests' reset undoes it;
- its still-needed test, ``tests/test_keras_compat.py::test_still_needed_<name>`` (``tested_in``
  names another file), :attr:`Workaround.still_needed`;
- its row of ``docs/keras-workarounds.md`` (:meth:`Workaround.row`), which
  ``python -m autodist.upstream.pages`` writes from the registry.

:mod:`autodist.upstream.keras_workarounds` gathers them; :mod:`autodist.planning.keras_compat`
decides which a plan needs; :mod:`autodist.tensorflow.keras_patches` installs them.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from autodist.errors import AutodistError, AutodistWarning
from autodist.log import user_stacklevel
from autodist.process import STATE, installing, once, put_back_by
from autodist.settings import KERAS_COMPAT_ENV, keras_compat_setting
from autodist.upstream.versions import NEWEST_TESTED, release_order, version_tuple

__all__ = [
    "AGGREGATION_PASSED",
    "EVERY_RELEASE",
    "GRADIENTS_REDUCED",
    "NO_SYMBOLIC_BUILD",
    "Act",
    "Workaround",
    "warn_untested",
]

#: Every Keras 3 release autodist supports (a bug not fixed yet).
EVERY_RELEASE = (("3.3.0", None),)
#: Keras 3.3 and 3.4 build a model while its first step is traced: no symbolic build.
NO_SYMBOLIC_BUILD = "3.5.0"
#: Keras 3.3-3.6 pass no aggregation to tf.Variable.
AGGREGATION_PASSED = "3.7.0"
#: Keras 3.3 and 3.4 reduce no gradient over the replicas.
GRADIENTS_REDUCED = "3.5.0"


@dataclass(frozen=True)
class Act:
    """What the act layer lends a workaround's ``install`` (it cannot be imported from here).

    Attributes:
        trains_under: whether autodist trains under a strategy (made or adopted by it): what it
            does better than Keras applies there only.
        every_replica_fed: the batch size that feeds every replica (planning's rule).
        prepare_own_steps: readies a model with steps of its own evaluated outside ``fit``.
    """

    trains_under: Callable[[Any], bool]
    every_replica_fed: Callable[..., Any]
    prepare_own_steps: Callable[[Any], None]


@dataclass(frozen=True)
class Workaround:
    """One upstream bug that autodist works around, the Keras releases that have it, and its patch."""

    name: str
    upstream: str
    summary: str
    affected: tuple[tuple[str, str | None], ...]  # (first release, first release fixed or None)
    touches: tuple[str, ...] = ()  # the touches of autodist.upstream.surface it needs
    last_tested: str = NEWEST_TESTED["keras"]
    if_fixed: str = ""
    install: Callable[[Act], bool] | None = field(default=None, compare=False, repr=False)
    how: str = "a patch"  # without install: "compile settings" or "a default autodist picks"
    #: The file of its still-needed test (tests/test_multi_worker.py for a bug a 2-worker job shows).
    tested_in: str = "tests/test_keras_compat.py"
    #: It adds work to every training step on every replica (its cost is measured:
    #: ``python -m tests.corpus --speed --workarounds``).
    in_step: bool = False
    #: A compile setting it changes where Keras's step runs under mirrored variables (``how`` is
    #: "compile settings"): the setting, the value it gives one that fails there (``None``: keep it),
    #: and the warning (``{strategy}``, ``{version}``, ``{value}``: the value it changed).
    compile_setting: str = ""
    changed: Callable[[Any], Any] | None = field(default=None, compare=False, repr=False)
    warning: str = ""
    #: Every workaround, by name: set once, by the registry that declares them all
    #: (:mod:`autodist.upstream.keras_workarounds`), for the setting's names and the untested warning.
    registry: ClassVar[Mapping[str, Workaround]] = MappingProxyType({})

    def releases(self) -> str:
        """The releases with the bug, as docs/keras-workarounds.md names them.

        Example:
            >>> from autodist.upstream.keras_workarounds import WORKAROUNDS
            >>> WORKAROUNDS["variable_aggregation"].releases()
            '3.3 to 3.6 (fixed in 3.7.0)'
        """
        parts = []
        for first, fixed in self.affected:
            start = ".".join(first.split(".")[:2])
            if fixed is None:
                parts.append(f"{start} and later (up to {self.last_tested} tested)")
            else:
                major, minor = fixed.split(".")[:2]
                parts.append(f"{start} to {major}.{int(minor) - 1} (fixed in {fixed})")
        return "; ".join(parts)

    @property
    def still_needed(self) -> str:
        """Its still-needed test, as pytest names it: it fails the day Keras fixes the bug."""
        return f"{self.tested_in}::test_still_needed_{self.name}"

    def affects(self, keras_version: str | None) -> bool:
        """Whether this Keras release has the bug, by the measured table (no setting read). A fix
        measured in a nightly holds from that nightly on, not for the nightlies before it."""
        version = release_order(keras_version)
        return bool(version) and any(
            release_order(first) <= version and (fixed is None or version < release_order(fixed))
            for first, fixed in self.affected
        )

    def is_active(self, keras_version: str | None, environ: Mapping[str, str] | None = None) -> bool:
        """Whether to apply it for this Keras 3 version: on the releases with the bug, unless
        ``AUTODIST_KERAS_COMPAT`` says otherwise (``off``, ``force``, ``auto,-name``). On a Keras
        newer than every release it was tested on it stays applied where it is harmless if the
        bug is fixed, with one warning (:func:`warn_untested`).
        """
        env = os.environ if environ is None else environ
        mode, left_out = keras_compat_setting(env)
        unknown = sorted(left_out - set(self.registry)) if left_out else []
        if unknown:
            raise AutodistError(
                f"{KERAS_COMPAT_ENV} leaves out {', '.join(unknown)}, which is no workaround of autodist's "
                f"(Received: {KERAS_COMPAT_ENV}={env.get(KERAS_COMPAT_ENV)!r}; the workarounds are "
                f"{', '.join(sorted(self.registry))}). Name one of them after the minus, or unset it."
            )
        if mode == "off" or self.name in left_out:
            return False
        if mode == "force":
            return True
        if not self.affects(keras_version):
            return False
        if version_tuple(keras_version)[:2] > version_tuple(self.last_tested)[:2]:
            warn_untested(str(keras_version), self.registry.values())
            return bool(self.if_fixed)
        return True

    def installed(self, act: Act) -> bool:
        """Its patch in place (:attr:`install`, once per process; ``False`` where its touch is off),
        with what it replaced and added to the process state kept for its :meth:`undo`."""
        assert self.install is not None, f"{self.name} patches nothing"
        known = any(by == self.name for by, _ in STATE.undos)
        before = {(module, key) for module, found in STATE.patched.items() for key in found}, set(STATE.symbolic_build)
        with installing(self.name):
            done = self.install(act)
        if done and not known:
            added = {(m, k) for m, found in STATE.patched.items() for k in found} - before[0]
            behaviours = set(STATE.symbolic_build) - before[1]
            STATE.undos.append((self.name, lambda: self._taken_out(added, behaviours)))
        return done

    def undo(self) -> None:
        """Its patch taken out, where it is installed: what it replaced put back (a patch another
        workaround shares goes with it; installing that one again puts it back), and what its
        install added to the process state dropped. :func:`autodist.process.reset` undoes each."""
        for by, undo in list(STATE.undos):
            if by == self.name:
                undo()

    def _taken_out(self, added: set[tuple[str, str]], behaviours: set[str]) -> None:
        put_back_by(self.name)
        for module, key in added:  # its originals' keys: installing it again patches again
            STATE.patched.get(module, {}).pop(key, None)
        STATE.symbolic_build.difference_update(behaviours)
        STATE.undos[:] = [(by, undo) for by, undo in STATE.undos if by != self.name]

    def in_plan(self, plan: Any) -> bool:
        """Whether ``plan`` applies it (its ``keras_workarounds`` name it)."""
        return self.name in plan.keras_workarounds

    def compile_override(
        self, settings: Mapping[str, Any], strategy: str, version: str | None
    ) -> tuple[Any, str] | None:
        """The value it gives its compile setting among ``settings``, and the warning that says so;
        ``None`` where it changes none."""
        value = settings.get(self.compile_setting) if self.changed is not None else None
        new = None if value is None else self.changed(value)
        return None if new is None else (new, self.warning.format(strategy=strategy, version=version, value=value))

    def row(self) -> str:
        """Its row of docs/keras-workarounds.md."""
        touches = ", ".join(f"`{touch}`" for touch in self.touches) or "none (no private code)"
        how = "a patch" if self.install is not None else self.how
        return (
            f"| `{self.name}` | {self.releases()} | {self.summary} | {how}; touches {touches} "
            f"| `test_still_needed_{self.name}` |"
        )


def warn_untested(keras_version: str, workarounds: Iterable[Workaround] | None = None) -> None:
    """Warn once per process that this Keras is newer than the workarounds were tested on (the one
    note a newer Keras gets: TensorFlow's import says nothing of it); ``workarounds``: those of the
    registry, by default."""
    if not once(f"keras untested: {keras_version}"):
        return
    workarounds = list(Workaround.registry.values() if workarounds is None else workarounds)
    newest = max((w.last_tested for w in workarounds), key=version_tuple)
    kept = sorted(w.name for w in workarounds if w.if_fixed)
    warnings.warn(
        f"Keras {keras_version} is newer than the Keras versions autodist's workarounds for Keras "
        f"bugs under tf.distribute were tested on (up to {newest}). They stay applied, because "
        f"each is harmless where its bug is fixed: {', '.join(kept)}. To check whether Keras "
        f"{keras_version} still needs them, run with {KERAS_COMPAT_ENV}=off and compare History and "
        "weights with a single-device model.fit; set it to force to silence this warning.",
        AutodistWarning,
        stacklevel=user_stacklevel(),
    )
