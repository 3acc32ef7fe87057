"""The ``AUTODIST_*`` settings that decide the plan, each read from an explicit ``environ``.

One place for the settings shared by the import-time activation, ``fit``, ``init`` and
``@distributed``, so all of them plan from the same values.

Example:
    >>> strategy_setting({"AUTODIST_STRATEGY": "mirrored"}), strategy_setting({})
    ('mirrored', 'auto')
    >>> peer_timeout_setting({"AUTODIST_PEER_TIMEOUT": "5"})
    5.0
"""

from __future__ import annotations

from collections.abc import Mapping

from autodist.errors import AutodistError

__all__ = [
    "ACTIVATE_ENV",
    "PEER_TIMEOUT_ENV",
    "STRATEGY_ENV",
    "activation_enabled",
    "peer_timeout_setting",
    "plan_here",
    "strategy_setting",
]

ACTIVATE_ENV = "AUTODIST_ACTIVATE"
STRATEGY_ENV = "AUTODIST_STRATEGY"
PEER_TIMEOUT_ENV = "AUTODIST_PEER_TIMEOUT"
_OFF = ("0", "off", "false", "no")


def activation_enabled(environ: Mapping[str, str]) -> bool:
    """Whether ``AUTODIST_ACTIVATE`` leaves the activation at TensorFlow import on (the default)."""
    return environ.get(ACTIVATE_ENV, "1").strip().lower() not in _OFF


def strategy_setting(environ: Mapping[str, str], requested: str | object = "auto") -> str | object:
    """What ``strategy="auto"`` means: ``AUTODIST_STRATEGY`` when set, else ``"auto"``. A
    strategy the caller names explicitly wins."""
    if requested != "auto" and requested is not None:
        return requested
    return environ.get(STRATEGY_ENV, "").strip() or "auto"


def peer_timeout_setting(environ: Mapping[str, str], given: float | None = None) -> float | None:
    """``peer_timeout_seconds`` as given, else ``AUTODIST_PEER_TIMEOUT``, else ``None`` (the
    planner's default).

    Raises:
        AutodistError: when the value is not a number.
    """
    raw = given if given is not None else environ.get(PEER_TIMEOUT_ENV)
    if raw is None or raw == "":
        return None
    try:
        return float(raw)
    except (TypeError, ValueError):
        source = "peer_timeout_seconds" if given is not None else PEER_TIMEOUT_ENV
        raise AutodistError(
            f"{source} must be a number of seconds (Received: {source}={raw!r}). It bounds how "
            "long a worker waits for its peers; pass a number such as 300."
        ) from None


def plan_here(environ: Mapping[str, str], *, strategy: str | object = "auto", peer_timeout_seconds: float | None = None, snapshot: object = None, **plan_kwargs: object) -> object:
    """Detect this machine (unless ``snapshot`` is given) and plan with the settings above: the
    one way the activation at import, ``init``, ``@distributed`` and ``fit`` make their plans.

    Example:
        >>> from autodist.hardware import HardwareSnapshot
        >>> plan_here({"AUTODIST_STRATEGY": "one_device"}, snapshot=HardwareSnapshot.cpu_only()).strategy.value
        'one_device'
    """
    from autodist.hardware import detect
    from autodist.planning import plan

    timeout = peer_timeout_setting(environ, peer_timeout_seconds)
    if timeout is not None:
        plan_kwargs["peer_timeout_seconds"] = timeout
    return plan(
        snapshot if snapshot is not None else detect(environ),
        strategy=strategy_setting(environ, strategy),
        environ=environ,
        **plan_kwargs,
    )
