"""Act: apply the Keras 3 workarounds a plan names (:mod:`autodist.planning.keras_compat` decides
which; the patches themselves are touches of the upstream surface, in
:mod:`autodist.upstream.keras_variables` and :mod:`autodist.upstream.keras_trainer`).

:func:`apply_workarounds` is called with a plan's names by :func:`autodist.tensorflow.strategies.start`;
:func:`build_from_generator` by ``fit``. A patch whose touch is off where it runs is not applied
(its probe warned once).

Example:
    >>> apply_workarounds(())
    []
"""

from __future__ import annotations

import collections.abc
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from autodist.detection.model_info import keras_flavor_of, overrides
from autodist.planning.keras_compat import PATCHES
from autodist.upstream import keras_variables
from autodist.upstream.keras_models import symbolic_build
from autodist.upstream.keras_adapters import patch_batches_copied
from autodist.upstream.keras_optimizer import (
    patch_distributed_gradients,
    patch_optimizer_build,
    patch_replica_slices_summed,
)
from autodist.upstream.keras_own_steps import (
    OWN_STEP_METHODS,
    own_steps,
    patch_own_steps,
    patch_share_weights,
    share_weights,
    unshare_weights,
)
from autodist.planning.global_batch import every_replica_fed
from autodist.upstream.keras_trainer import TRAINER_PATCHES, patch_every_replica_fed, patch_trainer

__all__ = [
    "apply_workarounds",
    "autodist_trains_under",
    "build_from_generator",
    "shares_weighted",
    "steps_as_one_device",
    "trains_under",
]

#: The workarounds patched one by one (the trainer's go in together).
_ONE_BY_ONE: Mapping[str, Callable[[], bool]] = MappingProxyType({
    "variable_aggregation": keras_variables.patch_variable_aggregation,
    "distributed_gradients": patch_distributed_gradients,
    "aggregating_variable_updates": keras_variables.patch_aggregating_variable_updates,
    "batchnorm_moving_statistics": keras_variables.patch_batchnorm_moving_statistics,
    "seed_state_aggregation": keras_variables.patch_seed_state_aggregation,
    "replica_random_streams": lambda: keras_variables.patch_replica_random_streams(autodist_trains_under),
    "own_step_replica_mean": lambda: patch_own_steps(autodist_trains_under),
    "uneven_shares_weighted": patch_share_weights,
    "replica_slices_summed": lambda: patch_replica_slices_summed(autodist_trains_under),
    "optimizer_built_in_step": patch_optimizer_build,
    "every_replica_fed": lambda: patch_every_replica_fed(every_replica_fed, prepare=_own_steps_under_autodist),
    "batches_copied": patch_batches_copied,
    "global_seed_in_replicas": lambda: keras_variables.patch_global_seed_in_replicas(autodist_trains_under),
})


def trains_under(strategy: Any) -> None:
    """Mark ``strategy`` as one autodist trains under (its own, from creation; a script's, once
    ``autodist.fit`` adopts it): what autodist does better than Keras there (each replica's own
    random draws) applies under it, and under no strategy autodist neither made nor adopted."""
    strategy._autodist_trains = True


def autodist_trains_under(strategy: Any) -> bool:
    """Whether ``strategy`` is marked by :func:`trains_under`."""
    return bool(getattr(strategy, "_autodist_trains", False))


def apply_workarounds(names: Iterable[str]) -> list[str]:
    """Apply the named workarounds, a plan's ``keras_workarounds``: the one place the act layer
    puts patches in. Idempotent; returns the names in place (``apply_workarounds(())`` is ``[]``).
    """
    wanted = [name for name in PATCHES if name in set(names)]
    applied = set(patch_trainer(wanted)) if set(wanted) & set(TRAINER_PATCHES) else set()
    applied |= {name for name in wanted if name in _ONE_BY_ONE and _ONE_BY_ONE[name]()}
    return [name for name in wanted if name in applied]


def build_from_generator(model: Any, x: Any, distribution: Any, the_plan: Any) -> Any:
    """Build a Keras 3 model from a generator's first batch, and return the generator with that
    batch put back, when the plan has the ``symbolic_build_reads_input`` workaround (Keras would
    otherwise read and lose it). Anything else comes back as it is."""
    if not (inspect.isgenerator(x) or isinstance(x, collections.abc.Iterator)) or keras_flavor_of(model) != "keras3":
        return x
    if "symbolic_build_reads_input" not in the_plan.keras_workarounds:
        return x
    first = next(x)
    with distribution.scope():
        symbolic_build(model, first)

    def put_back() -> Iterator[Any]:  # a generator, as Keras accepts
        yield first
        yield from x

    return put_back()


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


def steps_as_one_device(model: Any, the_plan: Any) -> bool:
    """Run a Keras 3 model's own ``train_step``/``test_step`` (or Keras's, when the model defines
    ``compute_loss``) with one device's losses and the replicas' mean gradient, when the plan has
    the ``own_step_replica_mean`` workaround and more than one replica. ``True`` when it does."""
    if "own_step_replica_mean" not in the_plan.keras_workarounds or the_plan.num_replicas < 2:
        return False
    if keras_flavor_of(model) != "keras3" or not any(overrides(model, name) for name in OWN_STEP_METHODS):
        return False
    own_steps(model)
    return True


#: The strategies whose replicas take a share of every batch in sync (a parameter server's
#: workers each train on a whole batch; a TPU's batches are whole, its last partial one dropped).
_SHARING = ("mirrored", "multi_worker_mirrored", "central_storage")


def shares_weighted(model: Any, the_plan: Any, last: int | None) -> bool:
    """Weight each replica's gradients by its share of the batch (:func:`share_weights`) when
    the plan has the workaround ``uneven_shares_weighted``, its replicas share every batch, and
    the input may hold a partial batch (``last``: the last batch's samples, ``0`` where every
    batch is whole, ``None`` where that is not known): a partial batch may split unevenly however
    its size divides. Under MultiWorkerMirrored every worker decides the same from the plan alone
    (each worker's own input may end otherwise, and the weighting adds a collective to every
    step). ``True`` when it does; otherwise a weighting an earlier ``fit`` put on the model is
    taken off."""
    wanted = (
        "uneven_shares_weighted" in the_plan.keras_workarounds
        and the_plan.num_replicas > 1
        and str(the_plan.strategy) in _SHARING
        and keras_flavor_of(model) == "keras3"
        and (last != 0 or str(the_plan.strategy) == "multi_worker_mirrored")
    )
    return share_weights(model, autodist_trains_under) if wanted else unshare_weights(model)
