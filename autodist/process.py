"""What autodist decided and did in this process, in one object: :data:`STATE`.

Keras keeps its process-wide facts in one ``global_state``, Accelerate in one ``PartialState``;
autodist keeps them here, and nowhere else: no other module holds mutable state at module level
(``tests/test_layers.py`` checks it). :func:`reset` puts the state back as a fresh process has
it, the one reset the tests use: with every attribute of TensorFlow and Keras that a workaround
or the activation at import replaced (:func:`replace`) put back.

Example:
    >>> from autodist.process import STATE, reset
    >>> STATE.warned.add("example")
    >>> reset()
    >>> "example" in STATE.warned
    False
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import threading
import weakref
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

__all__ = [
    "LiveMapping",
    "LiveSequence",
    "STATE",
    "ProcessState",
    "draws_kept",
    "installing",
    "once",
    "put_back",
    "put_back_by",
    "replace",
    "replaced",
    "reset",
]


@dataclasses.dataclass(eq=False)
class ProcessState:
    """Every fact autodist keeps for the life of the process, by the layer that writes it.

    Attributes:
        probed: the upstream surface's probes, by touch: ``None`` where the touch is available,
            its ``Absence`` where not (each touch is probed once).
        warned: the keys of the once-a-process warnings already said (:func:`once`).
        patched: the TensorFlow and Keras functions the upstream patches replaced, by patching
            module, then by name (a patch is applied once, until :func:`reset` puts them back).
        replaced: each attribute :func:`replace` set, in order, with what its owner held before and
            who set it (the workaround installing then, :func:`installing`; ``""``: the activation).
        undos: each installed workaround's own undo, in the order they were installed.
        symbolic_build: the behaviours of the patched Keras symbolic build in force.
        ours: autodist's strategy, once made current (the guard on other strategies' scopes).
        thread: per-thread depths and flags: inside a model's own step, inside another
            strategy's scope, copying a model, building a strategy.
        private_root: the private folder used when ``<temp>/autodist-<uid>`` is not this user's.
        fit_ids: each ``fit``'s number, the same on every worker (they run their fits in order).
        shuffle_draws: each shuffled ``fit``'s draw of the run's seed.
        ray_started_with: the Ray checkpoint this process started with, once read (a 1-tuple).
        activation: what the activation at import did (``tensorflow/activation_record.py``'s ``Activation``).
        main_thread: the thread the activation may make the strategy current in, if any.
        activating: held while the activation completes (one thread at a time).
        init_called: ``autodist.init()`` was called: the script asked for autodist's strategy.
        strategies: the strategies autodist built, by their key (one per key per process).
        triggers: the TensorFlow functions wrapped to complete the activation (``Hooks``).
        variable_watch: the watch on variable creation until a first variable is autodist's.
        first_variable_ours: a first variable was created under autodist's strategy.
        join_error: the error joining the JAX processes hit (raised again at each try).
        custom_loops: the plans and strategies of the ``@distributed`` loops running, innermost last.
        read_ahead: the repeated, reshuffling shuffles a replicated ``fit`` left after
            ``steps_per_epoch`` steps, read ahead of its last step, with its replicas (weakly held).
        declared: the workarounds declared outside autodist's own modules (a test's own), by name,
            while they exist (weakly held).
    """

    probed: dict[str, Any] = dataclasses.field(default_factory=dict)
    warned: set[str] = dataclasses.field(default_factory=set)
    patched: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    replaced: list[tuple[Any, str, Any, str]] = dataclasses.field(default_factory=list)
    undos: list[tuple[str, Any]] = dataclasses.field(default_factory=list)
    symbolic_build: set[str] = dataclasses.field(default_factory=set)
    ours: Any = None
    thread: threading.local = dataclasses.field(default_factory=threading.local)
    private_root: str | None = None
    fit_ids: Iterator[int] = dataclasses.field(default_factory=itertools.count)
    shuffle_draws: Iterator[int] = dataclasses.field(default_factory=itertools.count)
    ray_started_with: tuple[Any] | None = None
    activation: Any = None
    main_thread: int | None = None
    activating: Any = dataclasses.field(default_factory=threading.Lock)
    init_called: bool = False
    strategies: dict[tuple[Any, ...], Any] = dataclasses.field(default_factory=dict)
    triggers: Any = None
    variable_watch: Any = None
    first_variable_ours: bool = False
    join_error: BaseException | None = None
    custom_loops: list[tuple[Any, Any]] = dataclasses.field(default_factory=list)
    read_ahead: Any = dataclasses.field(default_factory=weakref.WeakKeyDictionary)
    declared: Any = dataclasses.field(default_factory=weakref.WeakValueDictionary)

    def originals(self, patcher: str) -> dict[str, Any]:
        """The originals one patching module replaced, by name (see ``patched``)."""
        return self.patched.setdefault(patcher, {})

    def per_thread(self, name: str, default: Any = 0) -> Any:
        """This thread's value of ``name`` (see ``thread``), ``default`` before it is set."""
        return getattr(self.thread, name, default)


#: The one process state.
STATE = ProcessState()


class _Live:
    """A read-only view whose content ``read()`` gives anew at each use (a table that a test's own
    entries join while they exist, and leave at :func:`reset`)."""

    def __init__(self, read: Callable[[], Any]) -> None:
        self.read = read

    def __getitem__(self, key: Any) -> Any:
        return self.read()[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.read())

    def __len__(self) -> int:
        return len(self.read())


class LiveMapping(_Live, Mapping[Any, Any]):
    """A mapping read anew at each use (see :class:`_Live`)."""


class LiveSequence(_Live, Sequence[Any]):
    """A sequence read anew at each use (see :class:`_Live`), equal to what it reads."""

    def __eq__(self, other: object) -> bool:
        return self.read() == other


def once(key: str) -> bool:
    """``True`` the first time ``key`` is asked for in this process (a once-a-process warning)."""
    first = key not in STATE.warned
    STATE.warned.add(key)
    return first


#: What :func:`replace` records where the owner held no attribute of that name itself (it inherited it).
_INHERITED = "<not the owner's own: inherited>"


def replace(owner: Any, name: str, value: Any) -> None:
    """Set ``owner.name`` (a TensorFlow or Keras class, module or object: the one way autodist
    changes one) to ``value``, recording what the owner held itself, so that :func:`put_back` and
    :func:`reset` put it back (an attribute it inherited is deleted again)."""
    STATE.replaced.append((owner, name, vars(owner).get(name, _INHERITED), STATE.per_thread("installing", "")))
    setattr(owner, name, value)


@contextlib.contextmanager
def installing(by: str) -> Iterator[None]:
    """What :func:`replace` sets inside is ``by``'s, for :func:`put_back_by` to put back."""
    before = STATE.per_thread("installing", "")
    STATE.thread.installing = by
    try:
        yield
    finally:
        STATE.thread.installing = before


def put_back_by(by: str) -> None:
    """Undo every :func:`replace` made while ``by`` was installing, the newest first."""
    for index in range(len(STATE.replaced) - 1, -1, -1):
        if STATE.replaced[index][3] == by:
            _restore(*STATE.replaced[index][:3])
            del STATE.replaced[index]


def put_back(owner: Any, name: str) -> None:
    """Undo the latest :func:`replace` of ``owner.name``: what the owner held before it comes back
    (a later replacement of the same attribute, if any, is dropped with it); nothing where it is
    not replaced. A record that cannot be put back stays, for :func:`reset` to name."""
    for index in range(len(STATE.replaced) - 1, -1, -1):
        if STATE.replaced[index][0] is owner and STATE.replaced[index][1] == name:
            _restore(*STATE.replaced[index][:3])
            del STATE.replaced[index]
            return


def _restore(owner: Any, name: str, before: Any) -> None:
    if before is _INHERITED:
        delattr(owner, name)
    else:
        setattr(owner, name, before)


def _named(owner: Any) -> str:
    if isinstance(owner, types.ModuleType):
        return owner.__name__
    if isinstance(owner, type):
        return f"{owner.__module__}.{owner.__name__}"
    return f"<{type(owner).__qualname__} object>"


def replaced() -> list[str]:
    """The attributes replaced now, as ``module.Owner.name``, in the order they were set."""
    return [f"{_named(owner)}.{name}" for owner, name, *_ in STATE.replaced]


def reset() -> None:
    """Put :data:`STATE` back as a fresh process has it, for tests: each installed workaround's own
    undo, the last installed first, then every other attribute :func:`replace` set put back (the
    activation's, the newest first), and every field anew (so a patch or the activation can be
    applied again). An attribute that cannot be put back is named in a ``RuntimeError``, after the
    rest is reset."""
    failed = []
    while STATE.undos:
        by, undo = STATE.undos[-1]
        try:
            undo()
        except (AttributeError, TypeError) as err:
            failed.append(f"the workaround {by}: {err}")
        finally:
            if STATE.undos and STATE.undos[-1][0] == by:
                STATE.undos.pop()
    while STATE.replaced:
        owner, name, before, _by = STATE.replaced.pop()
        try:
            _restore(owner, name, before)
        except (AttributeError, TypeError) as err:
            failed.append(f"{name} of {owner!r}: {err}")
    fresh = ProcessState()
    for field in dataclasses.fields(ProcessState):
        setattr(STATE, field.name, getattr(fresh, field.name))
    if failed:
        raise RuntimeError(f"reset could not put back {'; '.join(failed)}")


@contextlib.contextmanager
def draws_kept() -> Iterator[None]:
    """A block after which Python's and NumPy's global random states are as before it: for
    autodist's own reads of the user's code (a PyDataset's ``x[0]`` that augments with them), so
    that it draws nothing ``model.fit`` would not (Keras shuffles a PyDataset with ``random``)."""
    import random

    import numpy as np

    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
