"""autodist: pick and configure the right ``tf.distribute`` strategy, then train.

``import autodist`` does not import TensorFlow. It arranges that, the moment TensorFlow is
imported, the host CPU is split (``AUTODIST_CPU_DEVICES=N``) and the strategy autodist chooses
becomes the current one (:mod:`autodist.entry.at_import`; ``AUTODIST_ACTIVATE=0`` turns that off). So
put ``import autodist`` first: every model built afterwards is created under the strategy, and
``autodist.fit(model, ...)`` trains that very object.

The package's folders are its layers, each importing only itself and those before it (see
docs/architecture.md): the basics (``errors``, ``log``, ``settings``, ``fields``, ``files``,
``process``: the one process state) → ``upstream/`` → ``detection/`` → ``planning/`` → ``jobs/`` →
``ray/`` → ``core/`` (the backend-neutral fit and the backend seam) → ``resume/`` →
``tensorflow/`` → ``jax/`` → ``entry/`` (``fit``, ``init``, ``@distributed``, the import hook,
the one backend choice) → this package's public names, ``cli`` and ``demo``. The public names below are loaded
when first used, so ``import autodist`` loads only the import hook.

Example:
    >>> import autodist
    >>> snap = autodist.detect(fast=True)
    >>> autodist.plan(snap, num_params=1000, batch_size=64).strategy in list(autodist.StrategyKind)
    True
"""

from __future__ import annotations

import importlib
import os as _os
from typing import TYPE_CHECKING, Any
from types import MappingProxyType

from autodist.entry.at_import import install as _install_hook
from autodist.errors import (
    ArgumentError,
    AutodistError,
    AutodistWarning,
    BackupFolderInUseError,
    BatchSizeError,
    ClusterConfigError,
    CollectiveMismatchError,
    ModelPlacementError,
    PeerError,
    ReplicaContextError,
    RuntimeAlreadyStartedError,
    StrategyUnavailableError,
    UnsupportedVersionError,
)

if TYPE_CHECKING:  # the names as the lazy table below gives them
    from autodist.detection.cluster import ClusterInfo, is_chief
    from autodist.detection.hardware import GpuInfo, HardwareSnapshot, TpuInfo, detect
    from autodist.detection.model_info import ModelInfo, describe_model
    from autodist.entry.custom_loops import (
        compute_average_loss,
        current_plan,
        distributed,
        init,
    )
    from autodist.entry.fit import fit
    from autodist.jobs.heartbeat import beat
    from autodist.jobs.exit_codes import PREEMPTED_EXIT_CODE
    from autodist.planning.plans import Plan, StrategyKind
    from autodist.tensorflow.current_strategy import local

__version__ = "0.1.0"

#: Each public name and the module it lives in, imported on first use (PEP 562).
_LAZY = MappingProxyType(
    {
        "ClusterInfo": "autodist.detection.cluster",
        "is_chief": "autodist.detection.cluster",
        "GpuInfo": "autodist.detection.hardware",
        "HardwareSnapshot": "autodist.detection.hardware",
        "TpuInfo": "autodist.detection.hardware",
        "detect": "autodist.detection.hardware",
        "ModelInfo": "autodist.detection.model_info",
        "describe_model": "autodist.detection.model_info",
        "Plan": "autodist.planning.plans",
        "StrategyKind": "autodist.planning.plans",
        "PREEMPTED_EXIT_CODE": "autodist.jobs.exit_codes",
        "beat": "autodist.jobs.heartbeat",
        "compute_average_loss": "autodist.entry.custom_loops",
        "current_plan": "autodist.entry.custom_loops",
        "distributed": "autodist.entry.custom_loops",
        "init": "autodist.entry.custom_loops",
        "fit": "autodist.entry.fit",
        "local": "autodist.tensorflow.current_strategy",
    }
)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'autodist' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def plan(snapshot: HardwareSnapshot | None = None, **plan_kwargs: object) -> Plan:
    """Plan for ``snapshot``, or for this machine when it is ``None``: then as ``fit``, ``init``
    and ``python -m autodist inspect`` plan (:func:`autodist.core.detect_and_plan.plan_here`),
    under this process's ``AUTODIST_*`` settings: the same strategy, replicas, global batch and
    refusals as the run.

    The pure planner is :func:`autodist.planning.planner.plan`, which takes the same keywords
    (``model``, ``num_params``, ``batch_size``, ``strategy``, ...) and reads no machine; given a
    ``snapshot``, this is that planner (no setting read unless ``environ=`` is passed).

    Example:
        >>> import autodist
        >>> autodist.plan(autodist.HardwareSnapshot.cpu_only(), batch_size=64).global_batch_size
        64
    """
    from autodist.core.detect_and_plan import plan_here
    from autodist.planning.arguments import check_plan_arguments, check_snapshot
    from autodist.planning.planner import plan as pure_plan

    check_snapshot("autodist.plan", snapshot, optional=True)
    checked = check_plan_arguments("autodist.plan", plan_kwargs)  # before this machine is read
    if snapshot is not None:
        return pure_plan(snapshot, **checked)
    environ = checked.pop("environ", None)
    return plan_here(_os.environ if environ is None else environ, **checked)  # type: ignore[arg-type]


_install_hook(_os.environ)

__all__ = [
    "ArgumentError",
    "AutodistError",
    "AutodistWarning",
    "BackupFolderInUseError",
    "BatchSizeError",
    "ClusterConfigError",
    "ClusterInfo",
    "CollectiveMismatchError",
    "GpuInfo",
    "HardwareSnapshot",
    "ModelInfo",
    "ModelPlacementError",
    "PeerError",
    "Plan",
    "PREEMPTED_EXIT_CODE",
    "ReplicaContextError",
    "RuntimeAlreadyStartedError",
    "StrategyKind",
    "StrategyUnavailableError",
    "UnsupportedVersionError",
    "TpuInfo",
    "beat",
    "compute_average_loss",
    "current_plan",
    "describe_model",
    "detect",
    "distributed",
    "fit",
    "init",
    "is_chief",
    "local",
    "plan",
]
