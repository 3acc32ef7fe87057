"""Act: install the Keras 3 workarounds a plan names (:mod:`autodist.planning.keras_compat` decides
which; each workaround, with its patch, is one object of the upstream surface:
:mod:`autodist.upstream.workaround`).

:func:`apply_workarounds` is called with a plan's names by :func:`autodist.tensorflow.strategies.start`;
:func:`build_from_generator` by ``fit``. A patch whose touch is off where it runs is not applied
(its probe warned once).

Example:
    >>> apply_workarounds(())
    []
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from autodist.core.input_kinds import Input
from autodist.detection.model_info import keras_flavor_of, overrides
from autodist.planning.global_batch import every_replica_fed
from autodist.upstream.keras_models import symbolic_build
from autodist.upstream.keras_own_steps import (
    OWN_STEP_METHODS,
    OWN_STEP_REPLICA_MEAN,
    UNEVEN_SHARES_WEIGHTED,
    own_steps,
    share_weights,
    unshare_weights,
)
from autodist.upstream.keras_trainer import SYMBOLIC_BUILD_READS_INPUT
from autodist.upstream.keras_workarounds import PATCHES, WORKAROUNDS
from autodist.upstream.workaround import Act

__all__ = [
    "apply_workarounds",
    "autodist_trains_under",
    "build_from_generator",
    "shares_weighted",
    "steps_as_one_device",
    "trains_under",
]


def trains_under(strategy: Any) -> None:
    """Mark ``strategy`` as one autodist trains under (its own, from creation; a script's, once
    ``autodist.fit`` adopts it): what autodist does better than Keras there (each replica's own
    random draws) applies under it, and under no strategy autodist neither made nor adopted."""
    strategy._autodist_trains = True


def autodist_trains_under(strategy: Any) -> bool:
    """Whether ``strategy`` is marked by :func:`trains_under`."""
    return bool(getattr(strategy, "_autodist_trains", False))


def apply_workarounds(names: Iterable[str]) -> list[str]:
    """Install the named workarounds, a plan's ``keras_workarounds``: the one place the act layer
    puts patches in, each by its own ``install`` (in the registry's order). Idempotent; returns
    the names in place (``apply_workarounds(())`` is ``[]``).
    """
    act = Act(
        trains_under=autodist_trains_under,
        every_replica_fed=every_replica_fed,
        prepare_own_steps=_own_steps_under_autodist,
    )
    wanted = set(names)
    return [name for name in PATCHES if name in wanted and WORKAROUNDS[name].installed(act)]


def build_from_generator(model: Any, data: Input, distribution: Any, the_plan: Any) -> Input:
    """Build a Keras 3 model from a generator's first batch, and return the generator with that
    batch put back, when the plan has the ``symbolic_build_reads_input`` workaround (Keras would
    otherwise read and lose it). Any other input comes back as it is."""
    if the_plan.keras_flavor != "keras3" or not SYMBOLIC_BUILD_READS_INPUT.in_plan(the_plan):
        return data
    taken = data.first_batch_taken()
    if taken is None:
        return data
    first, data = taken
    with distribution.scope():
        symbolic_build(model, first)
    return data


def _own_steps_under_autodist(model: Any) -> None:
    """A model of Keras 3 with a ``test_step`` (or ``compute_loss``) of its own, evaluated under a
    replicated strategy autodist trains under without going through ``autodist.fit`` (the
    'customizing fit' guide's evaluate-only model): its steps run as fit would run them, with one
    device's losses (where the process has ``own_step_replica_mean``)."""
    strategy = getattr(model, "_distribute_strategy", None)
    if strategy is None or not autodist_trains_under(strategy) or int(strategy.num_replicas_in_sync) < 2:
        return
    if keras_flavor_of(model) == "keras3" and any(overrides(model, name) for name in OWN_STEP_METHODS):
        own_steps(model)


def steps_as_one_device(model: Any, the_plan: Any) -> None:
    """Run a Keras 3 model's own ``train_step``/``test_step`` (or Keras's, when the model defines
    ``compute_loss``) with one device's losses and the replicas' mean gradient, when the plan has
    the ``own_step_replica_mean`` workaround and more than one replica."""
    wanted = OWN_STEP_REPLICA_MEAN.in_plan(the_plan) and the_plan.num_replicas > 1 and the_plan.keras_flavor == "keras3"
    if wanted and any(overrides(model, name) for name in OWN_STEP_METHODS):
        own_steps(model)


def shares_weighted(model: Any, the_plan: Any, last: int | None) -> bool:
    """Weight each replica's gradients by its share of the batch (:func:`share_weights`) when
    the plan has the workaround ``uneven_shares_weighted``, its replicas share every batch, and
    the input may hold a partial batch (``last``: the last batch's samples, ``0`` where every
    batch is whole, ``None`` where that is not known): a partial batch may split unevenly however
    its size divides. Under MultiWorkerMirrored every worker decides the same from the plan alone
    (each worker's own input may end otherwise, and the weighting adds a collective to every
    step). ``True`` when it does; otherwise a weighting an earlier ``fit`` put on the model is
    taken off."""
    kind = the_plan.type
    wanted = (
        UNEVEN_SHARES_WEIGHTED.in_plan(the_plan)
        and the_plan.num_replicas > 1
        and kind.backend == "tensorflow"
        and kind.shares_batches
        and not kind.drops_remainder  # a TPU's batches are whole: its last partial one is dropped
        and the_plan.keras_flavor == "keras3"
        and (last != 0 or kind.collective_workers)
    )
    return share_weights(model, autodist_trains_under) if wanted else unshare_weights(model)
