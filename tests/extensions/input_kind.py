"""An input of a test's own, in one file: its kind (what it takes, what it brings) and how it is
made ready for ``model.fit``."""

from __future__ import annotations

from typing import Any, ClassVar

from autodist.core.input_kinds import Input, Stream
from autodist.core.inputs import READY, TrainingInput


class Pairs(Input):
    """A list of ready-made ``(x, y)`` batches of numpy arrays."""

    rank: ClassVar[int] = 35  # before Arrays, which would take a list of arrays
    batches_itself: ClassVar[bool] = True

    @staticmethod
    def takes(x: Any) -> bool:
        return isinstance(x, list) and bool(x) and all(isinstance(p, tuple) and len(p) == 2 for p in x)

    def own_batch(self) -> int | None:
        return len(self.raw[0][0])

    def batches_per_epoch(self, batch: Any, fit_kwargs: Any) -> int | None:
        return len(self.raw)


@Pairs.answers(READY)
def _ready(data: Pairs, the_plan: Any, fit_kwargs: Any, *_: Any) -> TrainingInput:
    """Keras reads a generator of batches: the pairs, one epoch's, each epoch."""
    return TrainingInput(Stream(iter(data.raw)), {**fit_kwargs, "steps_per_epoch": len(data.raw)})
