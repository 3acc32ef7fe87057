"""Real training with real TensorFlow, each configuration in a fresh process.

AUTODIST_CPU_DEVICES splits the CPU into logical devices, so MirroredStrategy and
CentralStorageStrategy run for real. Every figure is compared with a plain single-device
``model.fit`` run in the same process (SGD, no shuffle, same global batch).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import scenario_result, start_scenario

pytestmark = pytest.mark.usefixtures("processes")  # every test here runs TensorFlow or starts processes: the tensorflow tier

WEIGHT_TOLERANCE = 1e-4
METRIC_TOLERANCE = 1e-3


@pytest.fixture(scope="module")
def single_host():
    """The three configurations of tests/scenarios/single_host.py, run side by side (each in its
    own process: the numbers do not depend on what else runs)."""
    started = {
        "cpu2": start_scenario("single_host.py", "keras3", AUTODIST_CPU_DEVICES="2"),
        "cpu4": start_scenario("single_host.py", "keras3", "equivalence", AUTODIST_CPU_DEVICES="4"),  # the 4-replica cells only
        "legacy": start_scenario("single_host.py", "tf_keras", AUTODIST_CPU_DEVICES="2", TF_USE_LEGACY_KERAS="1"),
    }
    return {name: scenario_result(proc, timeout=600) for name, proc in started.items()}


@pytest.fixture(scope="module")
def cpu2(single_host):
    return single_host["cpu2"]


@pytest.fixture(scope="module")
def cpu4(single_host):
    return single_host["cpu4"]


@pytest.fixture(scope="module")
def legacy(single_host):
    return single_host["legacy"]


def _check_equivalence(case, strategy, replicas):
    assert case["strategy"] == strategy
    assert case["num_replicas"] == replicas
    assert case["weight_diff"] <= WEIGHT_TOLERANCE
    assert case["history_gap"] <= METRIC_TOLERANCE, "History loss/metrics differ from single device"
    assert case["evaluate_gap"] <= METRIC_TOLERANCE, "evaluate differs from single device"
    if case["scoped_evaluate_gap"] is not None:
        assert case["scoped_evaluate_gap"] <= METRIC_TOLERANCE, "evaluate under the strategy differs"
    assert case["caller_is_history_model"]


def test_logical_devices_were_created(cpu2, cpu4, legacy):
    assert (cpu2["logical_cpus"], cpu4["logical_cpus"], legacy["logical_cpus"]) == (2, 4, 2)


def test_mirrored_2_matches_single_device(cpu2):
    _check_equivalence(cpu2["equivalence_auto"], "mirrored", 2)
    # import autodist first: the model was created under the strategy, and that very object trained
    case = cpu2["equivalence_auto"]
    assert not case["moved_into_scope"] and case["variable_type"] == "MirroredVariable"
    assert case["warnings"] == []


@pytest.mark.parametrize("strategy", ["default", "one_device", "central_storage"])
def test_forced_strategy_other_than_the_current_one_moves_with_a_warning(cpu2, strategy):
    case = cpu2[f"equivalence_{strategy}"]
    assert case["moved_into_scope"]
    (warning,) = [w for w in case["warnings"] if "trained a copy" in w]
    assert "made current at import was mirrored" in warning and f"AUTODIST_STRATEGY={strategy}" in warning


def test_callback_closing_over_the_model_sees_the_schedule(cpu2):
    """The distributed Keras tutorial's PrintLR: it read 1e-3 for all 8 epochs when a copy trained."""
    assert cpu2["drop_in"]["printed_lr"] == pytest.approx([1e-3] * 3 + [1e-4] * 4 + [1e-5], rel=1e-5)
    assert cpu2["drop_in"]["variable_type"] == "MirroredVariable"


@pytest.mark.parametrize("flavor", ["cpu2", "legacy"])
@pytest.mark.parametrize("kind", ["unbuilt", "subclassed"])
def test_unbuilt_and_unmovable_models_train_like_model_fit(cpu2, legacy, flavor, kind):
    """No input shape (built by the first batch), or subclassed without get_config (cannot be
    saved and reloaded): ModelPlacementError or a crash before; now model.fit's numbers."""
    case = (cpu2 if flavor == "cpu2" else legacy)["drop_in"][kind]
    assert case["strategy"] == "mirrored"
    assert case["weight_diff"] <= WEIGHT_TOLERANCE
    assert case["history_gap"] <= METRIC_TOLERANCE
    assert case["warnings"] == []
    if kind == "unbuilt":
        assert any("not built yet" in reason for reason in case["reasons"])


@pytest.mark.parametrize("flavor", ["cpu2", "legacy"])
def test_compute_average_loss_divides_by_each_steps_global_batch(cpu2, legacy, flavor):
    """Bare @distributed, dataset batch 64 (not the plan's default 32), short last batch of 58:
    the same weights as model.fit at batch 64 only if every step divides by its real batch."""
    case = (cpu2 if flavor == "cpu2" else legacy)["custom_loop_batches"]
    assert case["num_steps"] == 4
    assert case["weight_diff"] <= WEIGHT_TOLERANCE


def test_mirrored_4_matches_single_device(cpu4):
    _check_equivalence(cpu4["equivalence_auto"], "mirrored", 4)


@pytest.mark.parametrize("strategy, replicas", [("default", 1), ("one_device", 1), ("central_storage", 2)])
def test_every_buildable_strategy_reports_single_device_numbers(cpu2, strategy, replicas):
    _check_equivalence(cpu2[f"equivalence_{strategy}"], strategy, replicas)


def test_central_storage_4_reports_single_device_numbers(cpu4):
    _check_equivalence(cpu4["equivalence_central_storage"], "central_storage", 4)


def test_batch_33_on_2_replicas_trains_with_a_warning(cpu2):
    case = cpu2["batch_33"]
    assert case["global_batch_size"] == 34
    assert case["batches"] == 8  # ceil(256 / 34): every sample trained, none dropped
    assert case["loss_gap_vs_single_device_34"] <= METRIC_TOLERANCE
    assert any("batch_size=33" in w and "34" in w for w in case["warnings"])


def test_batched_dataset_is_rebatched(cpu2):
    # batched in 16, batch_size=33 -> 34: 8 steps of 34 (16 without the re-batch), the numbers
    # of a single-device fit at 34
    case = cpu2["dataset"]
    assert case["global_batch_size"] == 34
    assert case["batches"] == 8
    assert case["loss_gap_vs_single_device_34"] <= METRIC_TOLERANCE
    assert case["weight_diff_vs_single_device_34"] <= WEIGHT_TOLERANCE
    assert any("batch_size=33" in w for w in case["warnings"])


def test_model_built_outside_the_strategy_is_moved_and_copied_back(cpu2):
    """The fallback, for a model created while the strategy was not current."""
    case = cpu2["built_outside"]
    assert case["strategy"] == "mirrored"
    assert any("trained a copy" in w and "the model was created while it was not" in w for w in case["warnings"])
    assert case["weights_changed"] > 1e-3
    assert case["history_model_is_caller"]
    # 2 earlier steps, then 2 epochs x 4 steps: Adam's state was kept, not reset, and copied back.
    assert case["iterations_before"] == 2
    assert case["iterations_after"] == 2 + 2 * 4


def test_model_building_callable(cpu2):
    case = cpu2["callable"]
    assert case["strategy"] == "mirrored"
    assert case["variable_type"] == "MirroredVariable"
    assert case["loss"][-1] < case["loss"][0]


def test_decorator_custom_loop_divides_by_global_batch(cpu2):
    case = cpu2["decorator"]
    assert (case["strategy"], case["num_replicas"], case["num_steps"]) == ("mirrored", 2, 8)
    # Same weights as single-device fit only if each replica divided by the GLOBAL batch.
    assert case["weight_diff"] <= WEIGHT_TOLERANCE


def test_plan_logged_in_one_line_once_per_distinct_plan(cpu2):
    """Issue 59: a fit repeated with the same plan (a tuner, folds) logs nothing new; a new plan
    gets its one line (AUTODIST_VERBOSE=1 logs the whole plan at every fit)."""
    lines = cpu2["plan_lines"]
    assert len(set(lines)) == len(lines) == cpu2["plan_log_count"] >= 2, lines
    assert cpu2["num_plans_made"] > len(lines), (cpu2["num_plans_made"], lines)


def test_each_fit_makes_one_plan_and_refines_it(cpu2, legacy):
    """Issue 62: a fit plans once, then refines that plan with its model's facts (no plan again):
    a model, one built outside the strategy, a function that builds one, a batch it rounds, a
    dataset, a fit interrupted, each strategy forced; on tf_keras too."""
    cases = [c for c in cpu2 if c.startswith("equivalence_")] + ["built_outside", "callable", "batch_33", "dataset"]
    made = {case: cpu2[case]["plans_made"] for case in cases + ["interrupted"]}
    made.update({f"tf_keras {case}": legacy[case]["plans_made"] for case in ("equivalence_auto", "callable")})
    assert set(made.values()) == {1}, made


def test_tf_keras_model_trains(legacy):
    assert legacy["flavor"] == "tf_keras"
    _check_equivalence(legacy["equivalence_auto"], "mirrored", 2)
    case = legacy["built_outside"]
    assert case["history_model_is_caller"] and case["weights_changed"] > 1e-3
    assert case["iterations_after"] == case["iterations_before"] + 2 * 4
    assert legacy["callable"]["loss"][-1] < legacy["callable"]["loss"][0]


@pytest.mark.parametrize(
    "name", ["validation_dataset_33", "validation_batch_size_33", "small_validation", "class_weight", "sample_weight", "initial_epoch_steps"]
)
def test_fit_keywords_match_single_device(cpu2, name):
    """Keras 3 alone crashes on the first three under Mirrored (AddN: uneven first batch)."""
    case = cpu2["fit_keywords"][name]
    assert case["gap"] <= METRIC_TOLERANCE, case
    if name.startswith(("validation", "small")):
        assert "val_loss" in case["keys"]
    assert case["epochs"] == (1 if name == "initial_epoch_steps" else 2)


def test_train_set_smaller_than_the_batch(cpu2):
    # 25 samples, batch 32, 2 replicas: one step, split 13/12. It trains (Keras alone crashes on
    # the uneven first batch), and each replica's gradients weighted by its share (13 and 12 of 25,
    # where Keras counts the replicas' means equally: 5.8e-4 apart) move the weights as one device.
    case = cpu2["fit_keywords"]["small_train_set"]
    assert case["batches"] == 1
    assert case["loss_gap"] <= METRIC_TOLERANCE
    assert case["weight_diff"] <= 1e-6, case
    assert not any("splits 13/12" in w for w in case["warnings"]), case["warnings"]


def test_one_sample_as_pandas_on_two_replicas_trains_as_on_one_device(cpu2):
    """A DataFrame of one sample on 2 replicas: read as the arrays Keras reads, so no replica is
    left an empty share (a NaN loss where Keras alone runs it), and History and weights are one
    device's."""
    case = cpu2["fit_keywords"].get("one_sample_pandas")
    if case is None:
        pytest.skip("pandas is not installed in this environment")
    got, expected = case["loss"]
    assert case["replicas"] == 2 and all(np.isfinite(got)), case
    assert max(abs(a - b) for a, b in zip(got, expected, strict=True)) <= METRIC_TOLERANCE, case
    assert case["weight_diff"] <= 1e-6, case


def test_interrupted_fit_keeps_the_training_done(cpu2):
    # 3 epochs of 4 steps ran before the interrupt; like model.fit, the caller's model has them.
    assert cpu2["interrupted"]["iterations"] == 12
