"""Detect, Keras 3 on JAX: which backend Keras will run on, and the devices JAX sees.

Two probes, each the one place its fact comes from (tests replace them): :func:`keras_backend`
reads the backend as Keras itself would (an imported Keras says; else ``KERAS_BACKEND``; else
``keras.json`` under ``KERAS_HOME`` or ``~/.keras``; else ``tensorflow``), importing nothing.
:func:`jax_local_devices` lists this process's JAX devices. Neither imports TensorFlow.

In a cluster, JAX must be told about the other processes (``jax.distributed.initialize``) before
its runtime starts, and listing devices starts it. So there, until the runtime has started (after
autodist initialized it), the devices are read from the environment instead: ``JAX_PLATFORMS``,
the visible GPUs from NVML, and ``--xla_force_host_platform_device_count`` in ``XLA_FLAGS``.

Example:
    >>> keras_backend({"KERAS_BACKEND": "jax"}, imported=None)
    'jax'
    >>> JaxDevice("cpu", "cpu").describe()
    'cpu (cpu), memory unknown'
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autodist.upstream.jax_runtime import backends_started

__all__ = ["BACKENDS", "JaxDevice", "jax_local_devices", "keras_backend", "keras_flavor", "training_backend"]

#: The Keras 3 backends autodist knows, and what it does on each.
BACKENDS = ("tensorflow", "jax", "torch", "numpy", "openvino")


@dataclass(frozen=True)
class JaxDevice:
    """One device of this process, as JAX reports it.

    Attributes:
        platform: ``cpu``, ``gpu`` or ``tpu``.
        kind: the device's model (``NVIDIA H100 80GB HBM3``, ``TPU v5 lite``, ``cpu``).
        memory_bytes: what the device may use, or ``None`` when unknown (CPU devices).
    """

    platform: str
    kind: str
    memory_bytes: int | None = None

    def describe(self) -> str:
        memory = "memory unknown" if self.memory_bytes is None else f"{self.memory_bytes / 2**30:.1f} GiB"
        return f"{self.platform} ({self.kind}), {memory}"


def keras_flavor(environ: Mapping[str, str]) -> str:
    """``tf_keras`` when ``TF_USE_LEGACY_KERAS`` is on and tf_keras is installed, else ``keras3``."""
    legacy = environ.get("TF_USE_LEGACY_KERAS", "").strip().lower() in ("1", "true", "yes")
    if legacy and importlib.util.find_spec("tf_keras") is not None:
        return "tf_keras"
    return "keras3"


def training_backend(environ: Mapping[str, str]) -> str:
    """The backend autodist trains on: Keras 3's backend (:func:`keras_backend`), or TensorFlow
    for tf_keras (``TF_USE_LEGACY_KERAS``). The one rule detection and the backend choice share.

    Example:
        >>> training_backend({"KERAS_BACKEND": "tensorflow"})
        'tensorflow'
    """
    return keras_backend(environ) if keras_flavor(environ) == "keras3" else "tensorflow"


def keras_backend(environ: Mapping[str, str], imported: Any = "sys") -> str:
    """The backend Keras 3 runs on in this process, read as Keras reads it; imports nothing.

    Args:
        environ: the environment (``KERAS_BACKEND``, ``KERAS_HOME``).
        imported: the imported ``keras`` module; ``"sys"`` looks in ``sys.modules``.

    Example:
        >>> keras_backend({}, imported=None) in BACKENDS
        True
    """
    module = sys.modules.get("keras") if imported == "sys" else imported
    backend = getattr(getattr(module, "backend", None), "backend", None)
    if callable(backend):
        return str(backend())
    if environ.get("KERAS_BACKEND"):
        return environ["KERAS_BACKEND"].strip().lower()
    home = environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    try:
        with open(os.path.join(home, "keras.json"), encoding="utf-8") as handle:
            return str(json.load(handle).get("backend") or "tensorflow").lower()
    except (OSError, ValueError, AttributeError):
        return "tensorflow"


def jax_local_devices(
    environ: Mapping[str, str], in_cluster: bool, nvml_memory: list[int | None] | None
) -> tuple[JaxDevice, ...]:
    """This process's JAX devices; ``()`` without JAX. In a cluster whose JAX runtime has not
    started, read from the environment (see the module's docstring), so it is not started here.

    Args:
        environ: the environment.
        in_cluster: whether this process is one of a multi-process job.
        nvml_memory: the visible GPUs' memory from NVML, in CUDA's order (``None``: no driver).
    """
    try:
        import jax
    except ImportError:
        return ()
    if in_cluster and not backends_started():
        return _from_environment(environ, nvml_memory)
    devices = []
    for index, device in enumerate(jax.local_devices()):
        devices.append(JaxDevice(device.platform, str(device.device_kind), _memory(device, index, nvml_memory)))
    return tuple(devices)


def _memory(device: Any, index: int, nvml_memory: list[int | None] | None) -> int | None:
    """A GPU's total from NVML, as on TensorFlow (JAX's ``bytes_limit`` is only what XLA
    preallocates, 75% by default, and the plan applies ``gpu_memory_fraction`` itself); else what
    the device reports (TPUs); else unknown (CPU devices)."""
    if device.platform == "gpu" and nvml_memory and index < len(nvml_memory) and nvml_memory[index]:
        return nvml_memory[index]
    try:
        stats = device.memory_stats() or {}
    except Exception:  # not every platform reports it
        stats = {}
    return int(stats["bytes_limit"]) if stats.get("bytes_limit") else None


def _from_environment(environ: Mapping[str, str], nvml_memory: list[int | None] | None) -> tuple[JaxDevice, ...]:
    platforms = [p.strip().lower() for p in environ.get("JAX_PLATFORMS", "").split(",") if p.strip()]
    if nvml_memory and (not platforms or platforms[0] in ("cuda", "gpu")):
        return tuple(JaxDevice("gpu", "gpu", memory) for memory in nvml_memory)
    found = re.search(r"--xla_force_host_platform_device_count=(\d+)", environ.get("XLA_FLAGS", ""))
    return tuple(JaxDevice("cpu", "cpu") for _ in range(int(found.group(1)) if found else 1))
