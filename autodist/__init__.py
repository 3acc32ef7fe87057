"""autodist: pick and configure the right ``tf.distribute`` strategy, then train.

``import autodist`` does not import TensorFlow. It arranges that, the moment TensorFlow is
imported, the host CPU is split (``AUTODIST_CPU_DEVICES=N``) and the strategy autodist chooses
becomes the current one (:mod:`autodist.activation`; ``AUTODIST_ACTIVATE=0`` turns that off). So
put ``import autodist`` first: every model built afterwards is created under the strategy, and
``autodist.fit(model, ...)`` trains that very object.

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

from autodist.activation import install as _install_activation

_install_activation(_os.environ)

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
