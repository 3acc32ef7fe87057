"""See the world: probe the hardware and return a frozen, JSON-round-trippable snapshot
(:mod:`autodist.detection.snapshot`).

Each hardware fact comes from exactly one module-level probe function (``nvml_gpus``,
``tensorflow_gpus``, ``tpu_environment``, ...); tests replace that one function. :func:`detect`
never writes ``os.environ``, never connects to a TPU and never starts the TensorFlow runtime:
it may call ``tf.config.list_physical_devices`` and ``get_device_details``, which are safe before
``MultiWorkerMirroredStrategy`` is created, and nothing else.

Example:
    >>> import autodist
    >>> snap = autodist.detect(fast=True)     # fast: skips importing TensorFlow
    >>> snap.num_cpus >= 1
    True
    >>> autodist.HardwareSnapshot.from_dict(snap.to_dict()) == snap
    True
"""

from __future__ import annotations

import contextlib
import glob
import os
import sys
from collections.abc import Mapping

from autodist.detection.cluster import detect_cluster
from autodist.detection.jax_devices import jax_local_devices, keras_flavor, training_backend
from autodist.detection.snapshot import GpuInfo, HardwareSnapshot, TpuInfo
from autodist import fields
from autodist.settings import cpu_devices_setting
from autodist.upstream.versions import module_version, package_version, tensorflow_version

__all__ = ["GpuInfo", "HardwareSnapshot", "TpuInfo", "detect"]


# ----------------------------------------------------------------------------- probes


def num_cpus() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def host_memory_bytes() -> int | None:
    """Total host memory, from psutil."""
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().total)


def nvml_gpus() -> list[GpuInfo] | None:
    """GPUs as the NVIDIA driver reports them, through NVML; ``None`` when there is no driver.

    NVML lists every GPU on the machine; ``CUDA_VISIBLE_DEVICES`` is applied in :func:`detect`.
    """
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return None
    try:
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            if isinstance(name, bytes):
                name = name.decode()
            memory = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
            try:
                major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
                capability: str | None = f"{major}.{minor}"
            except Exception:
                capability = None
            gpus.append(GpuInfo(name=name, memory_bytes=memory, compute_capability=capability))
        return gpus
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def tensorflow_gpus() -> list[GpuInfo] | None:
    """GPUs TensorFlow can use, from ``list_physical_devices``; ``None`` without TensorFlow.

    Only physical-device queries are made, so the runtime is not started.
    """
    try:
        import tensorflow as tf
    except ImportError:
        return None
    gpus = []
    for device in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(device) or {}
        capability = details.get("compute_capability")
        if isinstance(capability, tuple):
            capability = ".".join(str(part) for part in capability)
        gpus.append(GpuInfo(name=details.get("device_name", device.name), compute_capability=capability))
    return gpus


def tensorflow_cuda_build() -> bool | None:
    """Whether the installed TensorFlow was built with CUDA (``tensorflow-cpu`` was not)."""
    try:
        import tensorflow as tf
    except ImportError:
        return None
    return bool(tf.test.is_built_with_cuda())


def tpu_environment(environ: Mapping[str, str]) -> TpuInfo | None:
    """A TPU, judged from the environment and device files alone: no resolver, no network."""
    for variable in ("TPU_NAME", "COLAB_TPU_ADDR"):
        if environ.get(variable):
            return TpuInfo(source=variable, name=environ[variable])
    if environ.get("PJRT_DEVICE", "").upper() == "TPU":
        return TpuInfo(source="PJRT_DEVICE", name="local")
    if environ.get("TPU_WORKER_ID", "").strip():
        return TpuInfo(source="TPU_WORKER_ID", name="local")
    accel = sorted(glob.glob("/dev/accel[0-9]*"))
    if accel:
        return TpuInfo(source=accel[0], name="local")
    return None


# ----------------------------------------------------------------------------- detect


def _visible(gpus: list[GpuInfo], environ: Mapping[str, str]) -> list[GpuInfo]:
    """Apply ``CUDA_VISIBLE_DEVICES`` to the driver's list, as CUDA reads it.

    CUDA stops at the first invalid entry: ``-1`` hides every GPU, ``0,-1`` keeps GPU 0. UUID
    entries (``GPU-...``, ``MIG-...``) cannot be matched without more NVML calls, so the driver's
    list is kept for them.
    """
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return gpus
    picked = []
    for token in visible.split(","):
        token = token.strip()
        if token.startswith(("GPU-", "MIG-")):
            return gpus
        if not token.isdigit() or int(token) >= len(gpus):
            break
        picked.append(gpus[int(token)])
    return picked


def _merge_gpus(driver: list[GpuInfo] | None, tf_gpus: list[GpuInfo] | None) -> list[GpuInfo]:
    if tf_gpus is None:  # fast mode: trust the driver
        return list(driver or [])
    merged = []
    for index, gpu in enumerate(tf_gpus):
        source = driver[index] if driver and index < len(driver) else None
        merged.append(
            GpuInfo(
                name=source.name if source else gpu.name,
                memory_bytes=source.memory_bytes if source else None,
                compute_capability=gpu.compute_capability or (source.compute_capability if source else None),
            )
        )
    return merged


def _diagnose(driver: list[GpuInfo] | None, tf_gpus: list[GpuInfo] | None, cuda_build: bool | None) -> list[str]:
    notes = []
    if driver and tf_gpus is not None and not tf_gpus:
        if cuda_build is False:
            fix = (
                "the installed TensorFlow is a CPU-only build (tensorflow-cpu, or a wheel without "
                "CUDA). Fix: pip uninstall tensorflow-cpu && pip install 'tensorflow[and-cuda]'"
            )
        else:
            fix = (
                "TensorFlow could not load the CUDA libraries or CUDA_VISIBLE_DEVICES hides the "
                "GPUs. Fix: pip install 'tensorflow[and-cuda]' (it brings matching CUDA and cuDNN), "
                "and check CUDA_VISIBLE_DEVICES"
            )
        notes.append(f"The NVIDIA driver sees {len(driver)} GPU(s) but TensorFlow sees none: likely {fix}.")
    if tf_gpus and driver is None:
        notes.append("TensorFlow sees GPUs but NVML is unavailable: GPU memory is unknown.")
    return notes


def detect(environ: Mapping[str, str] | None = None, *, fast: bool = False) -> HardwareSnapshot:
    """Probe this machine and return a :class:`HardwareSnapshot`.

    Args:
        environ: the environment to read; ``os.environ`` when ``None``. It is never written.
        fast: skip importing TensorFlow (GPUs then come from the NVIDIA driver alone). With the
            ``jax`` backend TensorFlow is never imported, and JAX's devices are listed.

    Returns:
        The snapshot.

    Raises:
        ClusterConfigError: when the cluster definition (TF_CONFIG, ...) is malformed.
        AutodistError: when ``AUTODIST_CPU_DEVICES`` is not a positive integer.

    Example:
        >>> snap = detect({"TF_CONFIG": ""}, fast=True)
        >>> snap.cluster is None
        True
    """
    fields.check_environ("autodist.detect", environ, fast=fast)
    env: Mapping[str, str] = os.environ if environ is None else environ
    cluster = detect_cluster(env)
    flavor = keras_flavor(env)
    driver = nvml_gpus()
    visible_driver = _visible(driver, env) if driver is not None else None
    backend = training_backend(env)
    fast = fast or backend != "tensorflow"
    tf_gpus = None if fast else tensorflow_gpus()
    cuda_build = None if fast else tensorflow_cuda_build()
    jax_devices = (
        ()
        if backend != "jax"
        else jax_local_devices(env, cluster is not None, [g.memory_bytes for g in visible_driver or []] or None)
    )
    return HardwareSnapshot(
        tensorflow_version=tensorflow_version(),
        keras_version=module_version("tf_keras" if flavor == "tf_keras" else "keras"),
        keras_flavor=flavor,
        platform=sys.platform,
        num_cpus=num_cpus(),
        host_memory_bytes=host_memory_bytes(),
        num_cpu_devices=cpu_devices_setting(env, num_cpus()),
        gpus=tuple(_merge_gpus(visible_driver, tf_gpus)),
        num_driver_gpus=None if driver is None else len(driver),
        num_tensorflow_gpus=None if tf_gpus is None else len(tf_gpus),
        tensorflow_cuda_build=cuda_build,
        tpu=tpu_environment(env),
        cluster=cluster,
        diagnostics=tuple(_diagnose(visible_driver, tf_gpus, cuda_build)),
        keras_backend=backend,
        jax_version=package_version("jax") if backend == "jax" else None,
        jax_devices=jax_devices,
    )
