"""autodist: pick and configure the right ``tf.distribute`` strategy, then train.

``import autodist`` does not import TensorFlow; it is imported when training starts. When
``AUTODIST_CPU_DEVICES=N`` is set, the host CPU is split into N logical devices as soon as
TensorFlow is imported (before its runtime starts), so import autodist before building models.

Example:
    >>> import autodist
    >>> snap = autodist.detect(fast=True)
    >>> autodist.plan(snap, num_params=1000, batch_size=64).strategy in list(autodist.StrategyKind)
    True
"""

from __future__ import annotations

from autodist.errors import (
    AutodistError,
    AutodistWarning,
    BatchSizeError,
    ClusterConfigError,
    ModelPlacementError,
    PeerError,
    RuntimeAlreadyStartedError,
    StrategyUnavailableError,
)
from autodist.cluster import ClusterInfo, is_chief
from autodist.decorator import compute_average_loss, current_plan, distributed, init
from autodist.hardware import GpuInfo, HardwareSnapshot, TpuInfo, detect
from autodist.keras_integration import fit
from autodist.planning import ModelInfo, Plan, StrategyKind, describe_model, plan

__version__ = "0.1.0"

import os as _os

from autodist.strategies import apply_cpu_devices_on_import as _apply_cpu_devices_on_import

_apply_cpu_devices_on_import(_os.environ)

__all__ = [
    "AutodistError",
    "AutodistWarning",
    "BatchSizeError",
    "ClusterConfigError",
    "ClusterInfo",
    "GpuInfo",
    "HardwareSnapshot",
    "ModelInfo",
    "ModelPlacementError",
    "PeerError",
    "Plan",
    "RuntimeAlreadyStartedError",
    "StrategyKind",
    "StrategyUnavailableError",
    "TpuInfo",
    "compute_average_loss",
    "current_plan",
    "describe_model",
    "detect",
    "distributed",
    "fit",
    "init",
    "is_chief",
    "plan",
]
