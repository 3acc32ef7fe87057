"""Each Keras 3 workaround: its gate, and a test that fails the day it is no longer needed.

If a ``test_still_needed_*`` test fails after a Keras upgrade, upstream fixed the bug: delete the
workaround from ``autodist/planning/keras_compat.py`` (and this test), and re-run the suite.
"""

from __future__ import annotations

import pytest

from autodist.planning.keras_compat import WORKAROUNDS, compile_overrides, version_tuple
from tests.conftest import run_scenario


@pytest.fixture(scope="module")
def upstream():
    return run_scenario("keras_bugs.py", timeout=240)


def test_still_needed_central_storage_metrics(upstream):
    # Keras 3 assign_add = assign(old + delta); SUM aggregation over 2 replicas double-counts old.
    assert upstream["central_storage_mean_unpatched"] == pytest.approx(2.8333333, abs=1e-5), (
        "CentralStorage metrics are right without autodist's patch: remove "
        "'aggregating_variable_updates' from autodist/planning/keras_compat.py"
    )


def test_aggregating_variable_patch_fixes_it(upstream):
    assert upstream["central_storage_mean_patched"] == pytest.approx(3.5)


def test_still_needed_mirrored_sum_counter(upstream):
    # 2 steps x 2 replicas x 1: 4. Keras's assign(old + delta) summed over replicas gives 2*old + 2.
    assert upstream["mirrored_sum_counter_unpatched"] == [6.0, 6.0], (
        "SUM-aggregated variables count right under Mirrored without autodist's patch: drop "
        "MirroredVariable from 'aggregating_variable_updates' in autodist/planning/keras_compat.py"
    )
    assert upstream["mirrored_sum_counter_patched"] == [4.0, 4.0]


def test_still_needed_first_batch_symbolic_build_mirrored(upstream):
    error = upstream["mirrored_uneven_first_batch_error"]
    assert error is not None and "AddN must have the same size and shape" in error, (
        "Mirrored evaluates an uneven first batch upstream now: the Mirrored half of "
        "'first_batch_symbolic_build' can go"
    )


def test_still_needed_mirrored_steps_per_execution(upstream):
    error = upstream["mirrored_steps_per_execution_error"]
    assert error is not None and "You must feed a value for placeholder tensor" in error, (
        "Mirrored + steps_per_execution works upstream now: remove 'mirrored_steps_per_execution'"
    )


def test_still_needed_symbolic_build_reads_input(upstream):
    # 4 steps read 5 batches without a strategy (Keras peeks one); under Mirrored the symbolic
    # build reads more, and the generator cannot start over: those batches are lost.
    plain, mirrored = upstream["generator_batches_read_plain"], upstream["generator_batches_read_mirrored"]
    assert mirrored > plain, (
        f"fit reads {mirrored} batches under Mirrored and {plain} without a strategy: Keras no "
        "longer loses generator batches to its symbolic build; remove 'symbolic_build_reads_input'"
    )


def test_still_needed_mirrored_jit_compile(upstream):
    error = upstream["mirrored_jit_compile_error"]
    assert error is not None and "Trying to access resource" in error, (
        "Mirrored + jit_compile works upstream now: remove 'mirrored_jit_compile'"
    )


def test_newer_keras_keeps_every_workaround_and_warns_once_naming_it(monkeypatch):
    """The fail-safe path (the harness's faked-3.16 run shows its numbers): applied, one warning."""
    import warnings

    from autodist.planning import keras_compat
    from autodist.errors import AutodistWarning

    monkeypatch.setattr(keras_compat, "_UNTESTED_WARNED", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert all(w.is_active("3.16.0", {}) for w in WORKAROUNDS.values())
        assert all(w.is_active("3.16.0", {}) for w in WORKAROUNDS.values())
    named = [str(w.message) for w in caught if issubclass(w.category, AutodistWarning)]
    assert len(named) == 1 and "Keras 3.16.0 is newer" in named[0] and "up to 3.15.1" in named[0]
    assert all(w.if_fixed for w in WORKAROUNDS.values()), "each workaround says why it is harmless once fixed"


def test_off_force_and_versions_before_the_bugs():
    for workaround in WORKAROUNDS.values():
        assert workaround.is_active("3.15.1", {}) and not workaround.is_active("3.15.1", {"AUTODIST_KERAS_COMPAT": "off"})
        assert workaround.is_active("2.15.0", {"AUTODIST_KERAS_COMPAT": "force"})
        assert not workaround.is_active("2.15.0", {}) and not workaround.is_active(None, {})


def test_first_batch_reads_old_and_new_epoch_iterator_shapes():
    from autodist.run.keras_patches import _first_batch

    assert _first_batch([(0, 0, iter(["new"]))]) == "new"  # (begin_step, end_step, iterator)
    assert _first_batch([(0, iter(["old"]))]) == "old"  # (step, iterator), earlier Keras 3


def test_overrides_only_for_keras3_mirrored():
    args = dict(jit_compile=True, steps_per_execution=4, environ={})
    assert compile_overrides("mirrored", "keras3", "3.15.1", **args)[0] == {"jit_compile": False, "steps_per_execution": 1}
    assert compile_overrides("central_storage", "keras3", "3.15.1", **args)[0] == {}
    assert compile_overrides("mirrored", "tf_keras", "2.21.0", **args)[0] == {}
    assert compile_overrides("mirrored", "keras3", "3.15.1", jit_compile="auto", steps_per_execution=1, environ={})[0] == {}


def test_version_tuple():
    assert version_tuple("3.15.1") == (3, 15, 1)
    assert version_tuple("3.16.0.dev2026110101") == (3, 16, 0)


def test_still_needed_batchnorm_moving_statistics(upstream):
    # one step, zeros on one replica and fives on the other: each replica keeps its own mean
    unpatched = upstream["batchnorm_unpatched"]
    assert unpatched["replica_gap"] > 1e-3 and unpatched["evaluate_gap"] > 1e-3, (
        "BatchNormalization's replicas end with one set of moving statistics upstream now: remove "
        "'batchnorm_moving_statistics' from autodist/planning/keras_compat.py"
    )


def test_batchnorm_patch_gives_one_set_of_statistics(upstream):
    patched = upstream["batchnorm_patched"]
    assert patched["replica_gap"] <= 1e-6 and patched["evaluate_gap"] <= 1e-5, patched


def test_still_needed_seed_state_aggregation(upstream):
    error = upstream["central_storage_dropout_unpatched"]
    assert error is not None and "aggregation method" in error, (
        "Keras 3 Dropout trains under CentralStorageStrategy on 2 replicas upstream now: remove "
        "'seed_state_aggregation' from autodist/planning/keras_compat.py"
    )


def test_seed_state_patch_lets_dropout_train_under_central_storage(upstream):
    assert upstream["central_storage_dropout_patched"] is None, upstream["central_storage_dropout_patched"]


def test_still_true_keras3_dropout_draws_one_mask_for_every_replica(upstream):
    # Not worked around: autodist warns (autodist.planning.global_batch.SAME_MASKS) when a Keras 3 model
    # with Dropout or noise layers trains on several replicas.
    assert upstream["dropout_masks_equal_across_replicas"] is True, (
        "Keras 3 draws independent masks per replica now: change the Dropout warning in "
        "autodist/planning/global_batch.py (SAME_MASKS) into a note"
    )
