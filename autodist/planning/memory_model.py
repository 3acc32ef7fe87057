"""Plan layer: what training needs in memory, per device, under each strategy. Pure arithmetic.

Per device, for a model of ``P`` parameters of ``b`` bytes, ``s`` optimizer slots per variable,
``A`` activation values per sample (the sum of the built model's layer output sizes) and a
per-replica batch ``B``:

- weights ``P·b``; gradients ``P·b``; optimizer slots ``s·P·b``;
- the optimizer step's temporaries ``(1 + s)·P·b`` (the update of each slot and of the weight
  is computed before it is assigned);
- activations ``2·A·B·b``: the forward values kept for the backward pass, and their gradients.

Where each part lives depends on the strategy. Replicated strategies (``default``,
``one_device``, ``mirrored``, ``multi_worker_mirrored``, ``tpu``) hold everything on every
device. ``central_storage`` keeps weights, slots and the update on the host; each GPU holds the
gradients, a transient copy of the weights it reads, and its batch's activations.
``parameter_server`` does the same with the ps tasks in place of the host.

When the layer output sizes are unknown (a subclassed model that was never called on symbolic
inputs, or only ``num_params`` given), activations are ``activation_fraction`` (default 0.5) of
weights and gradients, and the plan says so.
``python -m benchmarks.memory`` checks the estimate against TensorFlow's allocator.

Example:
    >>> from autodist.detection.model_info import ModelInfo
    >>> info = ModelInfo(num_params=1_000_000, optimizer="adam", optimizer_slots=2, activation_elements=10_000)
    >>> mirrored = estimate("mirrored", info, per_replica_batch=32)
    >>> mirrored.device["weights"], mirrored.device["activations"], mirrored.device_bytes
    (4000000, 2560000, 30560000)
    >>> central = estimate("central_storage", info, per_replica_batch=32)
    >>> central.device_bytes, central.host_bytes
    (10560000, 24000000)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autodist.planning.strategy_types import TYPES

__all__ = ["MemoryEstimate", "estimate", "format_gib", "largest_batch_that_fits"]


def format_gib(num_bytes: int | None, unknown: str = "unknown") -> str:
    """``17179869184`` → ``"16.0 GiB"``; ``unknown`` when ``None``."""
    return unknown if num_bytes is None else f"{num_bytes / 2**30:.1f} GiB"


def _home(strategy: str) -> str | None:
    """Where ``strategy`` keeps its variables when not on every device (a name no type has: on them)."""
    kind = TYPES.get(str(strategy))
    return None if kind is None else kind.variables_home


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per compute device and on the variables' home (host or ps), by part.

    Attributes:
        strategy: the strategy's name.
        per_replica_batch: the batch each device computes.
        device: bytes on each compute device, by part (``weights``, ``gradients``, ...).
        host: bytes where the variables live when that is not the device (else empty).
        activations_estimated: ``False`` when activations are the ``activation_fraction``
            allowance, not the model's layer output sizes.
    """

    strategy: str
    per_replica_batch: int
    device: Mapping[str, int] = field(default_factory=dict, hash=False)
    host: Mapping[str, int] = field(default_factory=dict, hash=False)
    activations_estimated: bool = True

    @property
    def device_bytes(self) -> int:
        return sum(self.device.values())

    @property
    def host_bytes(self) -> int:
        return sum(self.host.values())

    def to_dict(self) -> dict[str, Any]:
        return {**vars(self), "device": dict(self.device), "host": dict(self.host)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryEstimate:
        return cls(
            str(data["strategy"]),
            int(data["per_replica_batch"]),
            dict(data.get("device") or {}),
            dict(data.get("host") or {}),
            bool(data.get("activations_estimated", True)),
        )

    def row(self) -> str:
        """One line of the plan's per-device table.

        Example:
            >>> MemoryEstimate("mirrored", 8, {"weights": 2**30, "gradients": 2**30}).row()
            'mirrored (batch 8 per device): 2.0 GiB per device (weights 1.0, gradients 1.0)'
        """
        unit, scale = ("GiB", 2**30) if self.device_bytes >= 2**30 else ("MiB", 2**20)
        parts = ", ".join(f"{name} {size / scale:.1f}" for name, size in self.device.items())
        line = (
            f"{self.strategy} (batch {self.per_replica_batch} per device): {self.device_bytes / scale:.1f} {unit} per "
            f"device ({parts})"
        )
        if self.host:
            line += f"; {format_gib(self.host_bytes)} on the {_home(self.strategy) or 'host'}"
        if not self.activations_estimated:
            line += "; activations as a fraction (layer sizes unknown)"
        return line


def estimate(strategy: str, info: Any, per_replica_batch: int, *, activation_fraction: float = 0.5) -> MemoryEstimate:
    """The memory ``strategy`` needs to train the model ``info`` describes
    (:class:`autodist.detection.model_info.ModelInfo`, with ``num_params`` set).

    Example:
        >>> from autodist.detection.model_info import ModelInfo
        >>> estimate("default", ModelInfo(num_params=10, optimizer_slots=0), 4, activation_fraction=0.5).device
        {'weights': 40, 'gradients': 40, 'optimizer slots': 0, 'optimizer step': 40, 'activations': 40}
    """
    size = int(info.num_params) * int(info.bytes_per_param)
    slots = int(info.optimizer_slots)
    weights, gradients, slot_bytes, update = size, size, slots * size, (1 + slots) * size
    known = info.activation_elements is not None
    if known:
        activations = 2 * int(info.activation_elements) * max(1, per_replica_batch) * int(info.bytes_per_param)
    else:
        activations = int(activation_fraction * (weights + gradients))
    if _home(strategy):  # the variables live elsewhere; the devices compute
        device = {"gradients": gradients, "weights (transient copy)": weights, "activations": activations}
        host = {"weights": weights, "optimizer slots": slot_bytes, "optimizer step": update}
        return MemoryEstimate(strategy, per_replica_batch, device, host, known)
    device = {
        "weights": weights,
        "gradients": gradients,
        "optimizer slots": slot_bytes,
        "optimizer step": update,
        "activations": activations,
    }
    return MemoryEstimate(strategy, per_replica_batch, device, {}, known)


def largest_batch_that_fits(strategy: str, info: Any, budget: int) -> int:
    """The largest per-replica batch whose estimate fits ``budget`` bytes per device (0: none).

    Example:
        >>> from autodist.detection.model_info import ModelInfo
        >>> largest_batch_that_fits("mirrored", ModelInfo(num_params=1000, optimizer_slots=0,
        ...     activation_elements=100), 12_000 + 800 * 10)
        10
    """
    if info.activation_elements is None or info.activation_elements <= 0:
        return 0
    fixed = estimate(strategy, info, 1).device_bytes - estimate(strategy, info, 1).device["activations"]
    per_sample = 2 * int(info.activation_elements) * int(info.bytes_per_param)
    return max(0, (budget - fixed) // per_sample)


@dataclass(frozen=True)
class GpuFit:
    """Which strategy's estimate fits the GPUs: ``strategy`` (``None``: none does), the
    estimates compared, one reason, and what to do when nothing fits (``problem``)."""

    strategy: str | None
    estimates: tuple[MemoryEstimate, ...]
    reason: str
    problem: str = ""


def fit_on_gpus(
    info: Any,
    num_gpus: int,
    gpu_bytes: int,
    host_bytes: int | None,
    batch_size: int,
    *,
    fraction: float,
    activation_fraction: float = 0.5,
) -> GpuFit:
    """Replicated (``mirrored``, or ``one_device`` on one GPU) when its estimate fits ``fraction``
    of the smallest GPU; else ``central_storage`` when each GPU's part fits and the host holds the
    rest; else none, with the numbers and the options.

    Example:
        >>> from autodist.detection.model_info import ModelInfo
        >>> big = ModelInfo(num_params=5_000_000_000, optimizer_slots=2, activation_elements=10**6)
        >>> fit = fit_on_gpus(big, 8, 16 * 2**30, 1024 * 2**30, 64, fraction=0.9)
        >>> fit.strategy, "20.0 GB of gradients" in fit.problem
        (None, True)
    """
    per_replica = -(-batch_size // max(1, num_gpus))
    replicated = "mirrored" if num_gpus >= 2 else "one_device"
    budget = int(gpu_bytes * fraction)
    on_gpu = estimate(replicated, info, per_replica, activation_fraction=activation_fraction)
    central = estimate("central_storage", info, per_replica, activation_fraction=activation_fraction)
    both = (on_gpu, central)
    where = f"{fraction:.0%} of the smallest GPU's {format_gib(gpu_bytes)} ({format_gib(budget)})"
    if on_gpu.device_bytes <= budget:
        return GpuFit(
            replicated,
            both,
            f"training needs {format_gib(on_gpu.device_bytes)} per GPU under {replicated}: it fits {where}",
        )
    host_budget = None if host_bytes is None else int(host_bytes * fraction)
    host_fits = host_budget is None or central.host_bytes <= host_budget
    does_not = f"training needs {format_gib(on_gpu.device_bytes)} per GPU under {replicated}: it does not fit {where}"
    if central.device_bytes <= budget and host_fits:
        host = (
            "host memory unknown"
            if host_budget is None
            else f"{format_gib(central.host_bytes)} of the host's {format_gib(host_bytes)}"
        )
        return GpuFit(
            "central_storage",
            both,
            f"{does_not}; central_storage needs {format_gib(central.device_bytes)} per GPU and {host}",
        )
    return GpuFit(None, both, does_not, _nothing_fits(info, central, budget, host_bytes, host_budget, where))


def _nothing_fits(
    info: Any, central: MemoryEstimate, budget: int, host_bytes: int | None, host_budget: int | None, where: str
) -> str:
    size = int(info.num_params) * int(info.bytes_per_param)
    gpu_part = (
        f"central_storage still needs {format_gib(central.device_bytes)} on each GPU ({size / 1e9:.1f} GB of "
        f"gradients, a {size / 1e9:.1f} GB transient copy of the weights, {format_gib(central.device['activations'])} "
        "of activations)"
    )
    host_part = (
        ""
        if host_budget is None or central.host_bytes <= host_budget
        else f", and {format_gib(central.host_bytes)} of weights and optimizer state on the host, which has "
        f"{format_gib(host_bytes)}"
    )
    batch = largest_batch_that_fits("central_storage", info, budget)
    if info.activation_elements is None:
        smaller = "how small is unknown: pass the built model so its layer sizes count"
    else:
        smaller = (
            f"a per-GPU batch of at most {batch}"
            if batch
            else "none is small enough: gradients and weights alone exceed it"
        )
    return (
        f"No strategy fits this model on these GPUs: {gpu_part}, more than {where}{host_part}. "
        f"Options: a smaller batch ({smaller}); mixed precision (keras.mixed_precision "
        "'mixed_float16' halves activations; bfloat16 weights halve the rest); fewer parameters; "
        "or more memory per device (GPUs with more memory, or a cluster with ps tasks)."
    )
