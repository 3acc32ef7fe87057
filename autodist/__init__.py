"""autodist: pick and configure the right ``tf.distribute`` strategy, then train.

``import autodist`` does not import TensorFlow. It arranges that, the moment TensorFlow is
imported, the host CPU is split (``AUTODIST_CPU_DEVICES=N``) and the strategy autodist chooses
becomes the current one (:mod:`autodist.activation`; ``AUTODIST_ACTIVATE=0`` turns that off). So
put ``import autodist`` first: every model built afterwards is created under the strategy, and
``autodist.fit(model, ...)`` trains that very object.

Layers (each module imports only its own layer and those below; see docs/architecture.md):
shared (``errors``, ``log``, ``settings``) → detect (``hardware``, ``cluster``, ``cluster_spec``,
``model_info``, ``dataset_graph``) → plan (``planning``, ``choosers``, ``plans``, ``global_batch``,
``keras_compat``) → act (``strategies``, ``activation``, ``keras_integration``, ``placement``,
``compile_settings``, ``inputs``, ``batching``, ``callbacks``, ``parameter_server``, ``ps_input``,
``decorator``, ``launch``, ``job_layout``, ``netns``, ``coexistence``, ``preemption``, ``resume``,
``train_state``) → edge (this package's public names, ``cli``, ``demo``). A change to
one concern touches one module: a new rule of choice goes in ``choosers``, a new cluster manager
in ``cluster``, a new Keras workaround in ``keras_compat`` (decided by ``choosers``, applied by
``activation.start``).

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
from autodist.callbacks import beat
from autodist.cluster import ClusterInfo, is_chief
from autodist.decorator import compute_average_loss, current_plan, distributed, init
from autodist.hardware import GpuInfo, HardwareSnapshot, TpuInfo, detect
from autodist.keras_integration import fit
from autodist.model_info import ModelInfo, describe_model
from autodist.planning import Plan, StrategyKind
from autodist.preemption import PREEMPTED_EXIT_CODE

__version__ = "0.1.0"


def plan(snapshot: HardwareSnapshot | None = None, **plan_kwargs: object) -> Plan:
    """Plan for ``snapshot``, or for this machine (:func:`detect`) when it is ``None``.

    The pure planner is :func:`autodist.planning.plan`, which takes the same keywords
    (``model``, ``num_params``, ``batch_size``, ``strategy``, ...) and reads no machine.

    Example:
        >>> import autodist
        >>> autodist.plan(autodist.HardwareSnapshot.cpu_only(), batch_size=64).global_batch_size
        64
    """
    from autodist import planning

    return planning.plan(detect() if snapshot is None else snapshot, **plan_kwargs)  # type: ignore[arg-type]

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
    "PREEMPTED_EXIT_CODE",
    "RuntimeAlreadyStartedError",
    "StrategyKind",
    "StrategyUnavailableError",
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
    "plan",
]
