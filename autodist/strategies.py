"""Act: turn a :class:`~autodist.planning.Plan` into a ``tf.distribute.Strategy``.

This is the one module that configures the TensorFlow runtime and creates strategies. Logical CPU
devices (``AUTODIST_CPU_DEVICES``) must be configured before the runtime starts, and
MultiWorkerMirroredStrategy must be created before any op runs, so both happen here, first.
Strategies are cached per configuration: a process gets one strategy object per plan, so a second
``autodist.fit`` reuses it (creating MultiWorkerMirroredStrategy twice is an error in TF).

Example:
    >>> import autodist
    >>> from autodist.strategies import build_strategy
    >>> p = autodist.plan(autodist.HardwareSnapshot.cpu_only(), batch_size=32)
    >>> type(build_strategy(p)).__name__
    '_DefaultDistributionStrategy'
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Mapping
from typing import Any

from autodist.errors import RuntimeAlreadyStartedError, StrategyUnavailableError
from autodist.hardware import CPU_DEVICES_ENV
from autodist.keras_compat import WORKAROUNDS, patch_aggregating_variable_updates
from autodist.planning import Plan, StrategyKind

__all__ = ["apply_cpu_devices_on_import", "build_strategy", "configure_cpu_devices", "runtime_started"]

_STRATEGIES: dict[tuple[Any, ...], Any] = {}


def runtime_started() -> bool:
    """Whether the TensorFlow runtime (its device context) is already initialised."""
    import sys

    if "tensorflow" not in sys.modules:
        return False
    from tensorflow.python.eager import context

    return context.context()._context_handle is not None


def configure_cpu_devices(num_devices: int) -> None:
    """Split the first physical CPU into ``num_devices`` logical devices (before the runtime starts).

    Raises:
        RuntimeAlreadyStartedError: when the runtime already runs with a different split.
    """
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu)
    wanted = num_devices if num_devices > 1 else 0
    if (len(current or []) or 0) == wanted or (wanted == 0 and not current):
        return
    if runtime_started():
        raise RuntimeAlreadyStartedError(
            f"AUTODIST_CPU_DEVICES={num_devices} asks for {num_devices} logical CPU devices, but "
            f"the TensorFlow runtime already started with {max(1, len(current or []))} (some "
            "TensorFlow op ran before autodist). Logical devices can only be set at program "
            "startup. Set AUTODIST_CPU_DEVICES before the script starts and let autodist run "
            "first: build the model inside a function passed to autodist.fit, or call "
            "autodist.init() at the top of the script."
        )
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)]
    )


class _ConfigureAfterImport(importlib.abc.MetaPathFinder):
    """Runs ``configure_cpu_devices`` right after ``tensorflow`` is imported, once."""

    def __init__(self, num_devices: int) -> None:
        self.num_devices = num_devices

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        original = spec.loader.exec_module
        num_devices = self.num_devices

        def exec_module(module: Any) -> None:
            original(module)
            _configure_quietly(num_devices)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _configure_quietly(num_devices: int) -> None:
    try:
        configure_cpu_devices(num_devices)
    except RuntimeAlreadyStartedError:
        pass  # build_strategy raises it again, with the fix, when a plan needs the devices


def apply_cpu_devices_on_import(environ: Mapping[str, str]) -> None:
    """Honour ``AUTODIST_CPU_DEVICES`` as early as possible, without importing TensorFlow.

    Logical devices can only be set before the runtime starts, and a user script usually builds
    its model (which starts the runtime) before calling ``autodist.fit``. So ``import autodist``
    calls this: if TensorFlow is already imported, the split happens now; otherwise it happens
    the moment TensorFlow is imported. An invalid value is left for ``detect`` to report.
    """
    raw = environ.get(CPU_DEVICES_ENV, "").strip()
    if not raw.isdigit() or int(raw) < 2:
        return
    if "tensorflow" in sys.modules:
        _configure_quietly(int(raw))
    elif not any(isinstance(f, _ConfigureAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _ConfigureAfterImport(int(raw)))


def _cross_device_ops(name: str | None) -> Any:
    import tensorflow as tf

    if name in (None, "collective"):
        return None  # TensorFlow's default for local devices: CollectiveAllReduce
    return {
        "nccl": tf.distribute.NcclAllReduce,
        "hierarchical_copy": tf.distribute.HierarchicalCopyAllReduce,
        "reduction_to_one_device": tf.distribute.ReductionToOneDevice,
    }[name]()


def _key(plan: Plan) -> tuple[Any, ...]:
    return (plan.strategy, plan.devices, plan.parameter_device, plan.cross_device_ops, plan.num_cpu_devices)


def build_strategy(plan: Plan) -> Any:
    """Create (or reuse) the strategy that ``plan`` describes. The only side-effecting step.

    Raises:
        StrategyUnavailableError: for strategies this version of autodist cannot build yet.
        RuntimeAlreadyStartedError: when the runtime started before logical devices were set.
    """
    import tensorflow as tf

    key = _key(plan)
    if key in _STRATEGIES:
        return _STRATEGIES[key]
    if plan.num_cpu_devices > 1:
        configure_cpu_devices(plan.num_cpu_devices)
    kind = plan.strategy
    if kind == StrategyKind.DEFAULT:
        strategy = tf.distribute.get_strategy()
    elif kind == StrategyKind.ONE_DEVICE:
        strategy = tf.distribute.OneDeviceStrategy(plan.devices[0])
    elif kind == StrategyKind.MIRRORED:
        strategy = tf.distribute.MirroredStrategy(
            devices=list(plan.devices), cross_device_ops=_cross_device_ops(plan.cross_device_ops)
        )
    elif kind == StrategyKind.CENTRAL_STORAGE:
        strategy = tf.distribute.experimental.CentralStorageStrategy(
            compute_devices=list(plan.devices), parameter_device=plan.parameter_device
        )
        if plan.keras_flavor == "keras3" and WORKAROUNDS["aggregating_variable_updates"].is_active(
            plan.keras_version
        ):
            patch_aggregating_variable_updates()
    else:
        raise StrategyUnavailableError(
            f"autodist {__import__('autodist').__version__} cannot build {kind.value!r} yet. "
            "Expected one of default, one_device, mirrored, central_storage. Use one of those, "
            "or create the strategy yourself and call model.fit inside strategy.scope()."
        )
    _STRATEGIES[key] = strategy
    return strategy
