"""What autodist saw on a machine: a frozen snapshot (:class:`HardwareSnapshot`, with its GPUs
and TPU) that round-trips through JSON. :mod:`autodist.detection.hardware` probes the machine and makes
one; ``plan --snapshot`` reads one back from a file, every field checked for its type and range
(:meth:`HardwareSnapshot.from_dict`): a bad field is an ``AutodistError`` naming it.

Example:
    >>> snap = HardwareSnapshot.cpu_only(num_cpus=4)
    >>> HardwareSnapshot.from_dict(snap.to_dict()) == snap
    True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from autodist import fields
from autodist.detection.cluster_spec import ClusterInfo, validate_cluster
from autodist.detection.jax_devices import JaxDevice
from autodist.errors import AutodistError
from autodist.settings import CPU_DEVICES_PER_CORE, MIN_CPU_DEVICES_BOUND

__all__ = ["GpuInfo", "HardwareSnapshot", "KERAS_BACKENDS", "TpuInfo"]


@dataclass(frozen=True)
class GpuInfo:
    """One GPU. ``memory_bytes`` and ``compute_capability`` are ``None`` when unknown."""

    name: str
    memory_bytes: int | None = None
    compute_capability: str | None = None


@dataclass(frozen=True)
class TpuInfo:
    """A TPU found from the environment, without connecting to it.

    Attributes:
        source: the evidence, for example ``"TPU_NAME"`` or ``"/dev/accel0"``.
        name: the TPU name or address, when the environment gives one.
        num_cores: cores, when known without connecting (``None`` otherwise).
    """

    source: str
    name: str | None = None
    num_cores: int | None = None


@dataclass(frozen=True)
class HardwareSnapshot:
    """What autodist saw on this machine. Frozen; ``to_dict``/``from_dict`` round-trip via JSON.

    Attributes:
        tensorflow_version: installed TensorFlow, or ``None``.
        keras_version: the version of the Keras that ``tf.keras`` resolves to.
        keras_flavor: ``"keras3"``, or ``"tf_keras"`` when ``TF_USE_LEGACY_KERAS`` selects it.
        platform: ``sys.platform`` (NCCL exists on Linux only).
        num_cpus: CPU cores this process may use.
        host_memory_bytes: total host memory, or ``None`` when unknown.
        num_cpu_devices: logical CPU devices requested with ``AUTODIST_CPU_DEVICES`` (default 1).
        gpus: the GPUs TensorFlow can use (memory from NVML when the driver is present).
        num_driver_gpus: GPUs the NVIDIA driver reports, or ``None`` without a driver.
        num_tensorflow_gpus: GPUs TensorFlow sees, or ``None`` when not checked (``fast``).
        tensorflow_cuda_build: whether TensorFlow was built with CUDA, ``None`` if not checked.
        tpu: a TPU found from the environment, or ``None``.
        cluster: the cluster this process belongs to, or ``None``.
        diagnostics: plain sentences about likely set-up problems.
        keras_backend: the Keras 3 backend (``tensorflow``, ``jax``, ...;
            :func:`autodist.detection.jax_devices.keras_backend`).
        jax_version: installed JAX, when the backend is ``jax``.
        jax_devices: this process's JAX devices, when the backend is ``jax``.
    """

    tensorflow_version: str | None
    keras_version: str | None
    keras_flavor: str
    platform: str
    num_cpus: int
    host_memory_bytes: int | None
    num_cpu_devices: int = 1
    gpus: tuple[GpuInfo, ...] = ()
    num_driver_gpus: int | None = None
    num_tensorflow_gpus: int | None = None
    tensorflow_cuda_build: bool | None = None
    tpu: TpuInfo | None = None
    cluster: ClusterInfo | None = None
    diagnostics: tuple[str, ...] = field(default=())
    keras_backend: str = "tensorflow"
    jax_version: str | None = None
    jax_devices: tuple[JaxDevice, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["gpus"] = [asdict(g) for g in self.gpus]
        data["tpu"] = asdict(self.tpu) if self.tpu else None
        data["cluster"] = self.cluster.to_dict() if self.cluster else None
        data["diagnostics"] = list(self.diagnostics)
        data["jax_devices"] = [asdict(d) for d in self.jax_devices]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HardwareSnapshot:
        """Rebuild a snapshot from :meth:`to_dict` output (for example ``inspect --json``).

        Raises:
            AutodistError: when ``data`` is not a snapshot, naming what is missing.
        """
        required = ("keras_flavor", "platform", "num_cpus")
        missing = [k for k in required if not isinstance(data, Mapping) or k not in data]
        if missing:
            raise AutodistError(
                f"Not a hardware snapshot: missing {', '.join(missing)} (Received: "
                f"{type(data).__name__} with keys "
                f"{sorted(map(str, data))[:10] if isinstance(data, Mapping) else '-'}). "
                "Expected the JSON that `python -m autodist inspect --json > snap.json` writes."
            )
        return cls(**_snapshot_fields(data))

    def check(self) -> HardwareSnapshot:
        """This snapshot, once every field is checked as a snapshot file's are (one built in
        Python, with :meth:`cpu_only` or the constructor, is not checked as it is made).

        Raises:
            AutodistError: naming the field and its value.

        Example:
            >>> HardwareSnapshot.cpu_only(num_cpus=2).check().num_cpus
            2
        """
        try:
            data = self.to_dict()
        except (AttributeError, TypeError, ValueError) as err:  # a field of another type: a str for the TpuInfo, ...
            raise AutodistError(
                f"The snapshot has a field of the wrong type ({type(err).__name__}: {err}) (Received: "
                f"{fields.shown(self, 200)}). "
                "Expected TpuInfo, GpuInfo, ClusterInfo and JaxDevice objects where the snapshot holds them. Build it "
                "with autodist.detect(), HardwareSnapshot.from_dict(...) or cpu_only(...) with those types."
            ) from None
        if self.cluster is not None and not isinstance(self.cluster, ClusterInfo):
            raise AutodistError(
                f"The snapshot's cluster is {fields.shown(self.cluster)}, {fields.a_type(self.cluster)}. Expected a "
                "ClusterInfo "
                "(autodist.detect() reads it from TF_CONFIG, SLURM, ...), or None. Build the snapshot with "
                "autodist.detect()."
            )
        # a ClusterInfo was checked where it was made (TF_CONFIG, Ray Train's own)
        _snapshot_fields({**data, "cluster": None})
        return self

    @classmethod
    def cpu_only(cls, **overrides: Any) -> HardwareSnapshot:
        """A plain CPU machine, for dry runs and examples.

        Example:
            >>> HardwareSnapshot.cpu_only(num_cpus=8).num_cpus
            8
        """
        base = cls(
            tensorflow_version=None,
            keras_version=None,
            keras_flavor="keras3",
            platform="linux",
            num_cpus=1,
            host_memory_bytes=None,
        )
        return replace(base, **overrides)


def _snapshot_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """Every field of a snapshot's JSON checked for its type and range (unknown keys are
    ignored: a newer autodist may write more)."""
    opt = fields.optional
    gpus = [fields.mapping("gpus[]", gpu) for gpu in fields.sequence("gpus", data.get("gpus"))]
    fields.count("len(gpus)", len(gpus), maximum=MAX_GPUS)
    num_cpus = fields.count("num_cpus", data["num_cpus"], minimum=1, maximum=MAX_CPUS)
    tpu = opt(fields.mapping, "tpu", data.get("tpu"))
    return {
        "tensorflow_version": opt(fields.text, "tensorflow_version", data.get("tensorflow_version")),
        "keras_version": opt(fields.text, "keras_version", data.get("keras_version")),
        "keras_flavor": fields.choice("keras_flavor", data["keras_flavor"], ("keras3", "tf_keras")),
        "platform": fields.text("platform", data["platform"]),
        "num_cpus": num_cpus,
        "host_memory_bytes": opt(
            fields.count, "host_memory_bytes", data.get("host_memory_bytes"), maximum=MAX_MEMORY_BYTES
        ),
        # as AUTODIST_CPU_DEVICES on the machine itself (settings.cpu_devices_setting)
        "num_cpu_devices": fields.count(
            "num_cpu_devices",
            data.get("num_cpu_devices", 1),
            minimum=1,
            maximum=max(MIN_CPU_DEVICES_BOUND, CPU_DEVICES_PER_CORE * num_cpus),
        ),
        "gpus": tuple(
            GpuInfo(
                fields.text("gpus[].name", gpu.get("name")),
                opt(fields.count, "gpus[].memory_bytes", gpu.get("memory_bytes"), minimum=1, maximum=MAX_MEMORY_BYTES),
                opt(fields.text, "gpus[].compute_capability", gpu.get("compute_capability")),
            )
            for gpu in gpus
        ),
        "num_driver_gpus": opt(fields.count, "num_driver_gpus", data.get("num_driver_gpus"), maximum=MAX_GPUS),
        "num_tensorflow_gpus": opt(
            fields.count, "num_tensorflow_gpus", data.get("num_tensorflow_gpus"), maximum=MAX_GPUS
        ),
        "tensorflow_cuda_build": opt(fields.flag, "tensorflow_cuda_build", data.get("tensorflow_cuda_build")),
        "tpu": None
        if not tpu
        else TpuInfo(
            fields.text("tpu.source", tpu.get("source")),
            opt(fields.text, "tpu.name", tpu.get("name")),
            opt(fields.count, "tpu.num_cores", tpu.get("num_cores"), minimum=1, maximum=MAX_CPUS),
        ),
        "cluster": _snapshot_cluster(data.get("cluster")),
        "diagnostics": tuple(
            fields.text("diagnostics[]", d) for d in fields.sequence("diagnostics", data.get("diagnostics"))
        ),
        "keras_backend": fields.choice("keras_backend", data.get("keras_backend", "tensorflow"), KERAS_BACKENDS),
        "jax_version": opt(fields.text, "jax_version", data.get("jax_version")),
        "jax_devices": tuple(_jax_device(d) for d in fields.sequence("jax_devices", data.get("jax_devices"))),
    }


#: The most CPU cores (and TPU cores) a snapshot may say one machine has.
MAX_CPUS = 1 << 16
#: The most GPUs a snapshot may say one machine has.
MAX_GPUS = 1024
#: The most bytes of memory a snapshot may give a host or a GPU: an exbibyte.
MAX_MEMORY_BYTES = 1 << 60

#: The Keras 3 backends a snapshot may name.
KERAS_BACKENDS = ("tensorflow", "jax", "torch", "numpy", "openvino")


def _jax_device(raw: Any) -> JaxDevice:
    device = fields.mapping("jax_devices[]", raw)
    return JaxDevice(
        fields.text("jax_devices[].platform", device.get("platform")),
        fields.text("jax_devices[].kind", device.get("kind")),
        fields.optional(
            fields.count, "jax_devices[].memory_bytes", device.get("memory_bytes"), minimum=1, maximum=MAX_MEMORY_BYTES
        ),
    )


def _snapshot_cluster(raw: Any) -> ClusterInfo | None:
    """A snapshot's cluster, checked as TF_CONFIG is (task type and index inside the cluster)."""
    if raw is None:  # 0, false or "" are not a cluster: refused below
        return None
    cluster = fields.mapping("cluster", raw)
    info = validate_cluster(
        cluster.get("cluster_spec"),
        cluster.get("task_type"),
        cluster.get("task_index"),
        source=f"the snapshot's cluster ({fields.text('cluster.source', cluster.get('source'))})",
        received=json.dumps(dict(cluster), default=str),
    )
    rpc_layer = fields.optional(fields.text, "cluster.rpc_layer", cluster.get("rpc_layer"))
    return ClusterInfo(cluster["source"], info.task_type, info.task_index, info.cluster_spec, rpc_layer)
