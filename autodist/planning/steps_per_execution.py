"""Plan layer, one rule: autodist's ``steps_per_execution`` default, for one ``fit``.

A Keras 3 model compiled with 1 (Keras's default) runs 8 steps per compiled call on the
``default`` and ``one_device`` strategies: the same steps and weights, faster on small models
(``python -m benchmarks``, "default: steps_per_execution 8 / 1"). It stays as compiled where 8
would change what the caller sees (batch-level hooks, ``steps_per_epoch``, an input of unknown
length, eager runs), on Keras 3.3-3.6 (a Keras bug), and on a fit too short to pay for the first
trace of the loop (:data:`SHORT_FIT_STEPS`) unless ``AUTODIST_STEPS_PER_EXECUTION`` asks for it.

Example:
    >>> from autodist.planning.plans import StrategyKind
    >>> info = ModelInfo(keras_flavor="keras3", keras_version="3.15.1")
    >>> choose_steps_per_execution(StrategyKind.DEFAULT, "keras3", info, {}, FitFacts(total_steps=40)).value is None
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autodist.detection.model_info import ModelInfo
from autodist.planning.choosers import Choice
from autodist.upstream.keras_workarounds import SHORT_EPOCH_STEPS_PER_EXECUTION
from autodist.planning.plans import StrategyKind
from autodist.settings import STEPS_PER_EXECUTION_ENV, steps_per_execution_setting
from autodist.planning.strategy_types import strategy_type

__all__ = ["DEFAULT_STEPS_PER_EXECUTION", "SHORT_FIT_STEPS", "FitFacts", "choose_steps_per_execution"]

#: Steps per compiled call that autodist sets for a ``fit``.
DEFAULT_STEPS_PER_EXECUTION = 8
#: A fit of fewer steps keeps ``steps_per_execution`` 1: in a fresh process the first trace of
#: Keras's loop of 8 steps cost 0.05-0.08 s, and 8 steps per call saved 0.5-0.6 ms a step (a small
#: MLP on a 2-core CPU; the speed-up is ``python -m benchmarks.defaults``'s figure), so it pays off
#: from about 100 steps.
SHORT_FIT_STEPS = 128


@dataclass(frozen=True)
class FitFacts:
    """What a ``fit`` call tells the planner besides the model: read by the caller of the planner
    (:mod:`autodist.tensorflow.fit`) from the callbacks, keywords and input it was given."""

    batch_hooks: bool = False  # a callback overrides on_*_batch_* hooks
    steps_given: bool = False  # steps_per_epoch or validation_steps is given
    length_unknown: bool = False  # a generator, or a dataset of unknown cardinality
    total_steps: int | None = None  # training steps in the whole fit, where the input tells
    unmovable: str | None = None  # why the model, built under a strategy, cannot be moved to another
    unsplittable: str | None = None  # why tf.distribute cannot split the input over replicas


def _why_steps_stay(info: ModelInfo, facts: FitFacts) -> str | None:
    whys = (
        (info.run_eagerly, "the model runs eagerly"),
        (facts.batch_hooks, "a callback uses batch-level hooks"),
        (facts.steps_given, "steps_per_epoch or validation_steps is given"),
        (facts.length_unknown, "the input's length is unknown, and Keras 3 then counts optimizer steps differently"),
    )
    return next((why for applies, why in whys if applies), None)


def choose_steps_per_execution(
    kind: StrategyKind,
    flavor: str,
    info: ModelInfo,
    environ: Mapping[str, str],
    facts: FitFacts = FitFacts(),
    *,
    keras_version: str | None = None,
) -> Choice[int | None]:
    """autodist's ``steps_per_execution`` default, or ``None`` (leave the model's own).

    Kept at 1 (and the reason says why) for a fit shorter than :data:`SHORT_FIT_STEPS` (unless
    ``AUTODIST_STEPS_PER_EXECUTION`` is set), when a callback uses batch-level hooks, which would fire
    once per call rather than per step; when ``steps_per_epoch`` or ``validation_steps`` is given,
    because Keras 3 runs whole calls (an epoch of 4 steps on an endless input ran 8); when the
    input's length is unknown (a generator, ``from_generator``), because Keras 3 with 1 counts one
    extra optimizer iteration per epoch there, which moves Adam's bias correction (measured: 5
    iterations for 4 batches, and weights 1e-4 apart after 2 epochs); and under ``run_eagerly``.

    Example:
        >>> info = ModelInfo(keras_flavor="keras3")
        >>> choose_steps_per_execution(StrategyKind.DEFAULT, "keras3", info, {}, FitFacts(batch_hooks=True)).reasons
        ('steps_per_execution stays as compiled: a callback uses batch-level hooks',)
    """
    if not strategy_type(kind).single_device or flavor != "keras3":
        return Choice(None)  # measured on these two; Keras 3 Mirrored fails with it (keras#19246)
    if info.steps_per_execution not in (None, 1):
        return Choice(
            None, (f"steps_per_execution stays as compiled: {info.steps_per_execution}, the caller's choice",)
        )
    value = steps_per_execution_setting(environ, DEFAULT_STEPS_PER_EXECUTION)
    if value == 1:
        return Choice(None, (f"steps_per_execution stays 1 ({STEPS_PER_EXECUTION_ENV}=1)",))
    version = keras_version or info.keras_version
    if SHORT_EPOCH_STEPS_PER_EXECUTION.is_active(version, environ):
        return Choice(None, (SHORT_EPOCH_STEPS_PER_EXECUTION.warning.format(version=version),))
    why = _why_steps_stay(info, facts)
    if why is not None:
        return Choice(None, (f"steps_per_execution stays as compiled: {why}",))
    asked = bool(environ.get(STEPS_PER_EXECUTION_ENV, "").strip())  # empty is unset, as for every setting
    if not asked and facts.total_steps is not None and facts.total_steps < SHORT_FIT_STEPS:
        return Choice(
            None,
            (
                f"steps_per_execution stays as compiled: this fit trains {facts.total_steps} steps, fewer than "
                f"{SHORT_FIT_STEPS}, and the first trace of a loop of {value} steps costs more than it saves "
                f"there. {STEPS_PER_EXECUTION_ENV}={value} sets it anyway",
            ),
        )
    return Choice(
        value,
        (
            f"steps_per_execution={value} for a model compiled with 1: the same steps and weights, "
            f"{value} steps per call (faster on a small MLP: python -m benchmarks, figures in "
            f"benchmarks/README.md). fit keeps 1 for a fit of fewer than {SHORT_FIT_STEPS} steps, when a callback uses "
            "batch-level hooks, which would then fire "
            f"every {value} steps, when steps_per_epoch or validation_steps is given, or when the input's "
            f"length is unknown. Opt out: {STEPS_PER_EXECUTION_ENV}=1",
        ),
    )
