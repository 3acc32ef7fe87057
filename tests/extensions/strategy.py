"""A strategy of a test's own, in one file: its type (what it answers), and its builder."""

from __future__ import annotations

from typing import Any

from autodist.planning.strategy_types import Choice, Layout, StrategyType


class Pinned(StrategyType):
    """One device named by the plan, as ``tf.distribute.OneDeviceStrategy`` places it."""

    kind = "pinned"
    single_device = True
    single_host = True

    def layout(self, snapshot: Any) -> Choice[Layout]:
        return Choice(Layout(("/cpu:0",)), ("pinned to the first CPU",))


@Pinned.builds
def _pinned(plan: Any) -> Any:
    import tensorflow as tf

    return tf.distribute.OneDeviceStrategy(plan.devices[0])
