"""Plan here: detect this machine, read the ``AUTODIST_*`` settings, and plan.

The one way every entry point (the activation at import, ``init``, ``@distributed``, ``fit``, on
TensorFlow and on JAX) makes its plan. The planner itself (:mod:`autodist.planning.planner`)
stays pure; this is the edge of the plan layer that reads the machine.

Example:
    >>> from autodist.detection.hardware import HardwareSnapshot
    >>> plan_here({"AUTODIST_STRATEGY": "one_device"}, snapshot=HardwareSnapshot.cpu_only()).strategy.value
    'one_device'
"""

from __future__ import annotations

from collections.abc import Mapping

from autodist.detection.hardware import HardwareSnapshot, detect
from autodist.planning import planner  # planner.plan, looked up at each call (a test or profiler may wrap it)
from autodist.planning.plans import Plan
from autodist.settings import peer_timeout_setting

__all__ = ["plan_here"]


def plan_here(
    environ: Mapping[str, str],
    *,
    strategy: str | object = "auto",
    peer_timeout_seconds: float | None = None,
    snapshot: HardwareSnapshot | None = None,
    **plan_kwargs: object,
) -> Plan:
    """Detect this machine (unless ``snapshot`` is given) and plan with the ``AUTODIST_*``
    settings (:mod:`autodist.settings`)."""
    timeout = peer_timeout_setting(environ, peer_timeout_seconds)
    if timeout is not None:
        plan_kwargs["peer_timeout_seconds"] = timeout
    return planner.plan(
        snapshot if snapshot is not None else detect(environ),
        strategy=strategy,  # "auto" reads AUTODIST_STRATEGY in the planner, which names it in the plan's reason
        environ=environ,
        **plan_kwargs,  # type: ignore[arg-type]
    )
