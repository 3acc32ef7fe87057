"""Each Keras 3 workaround: its gate, and a test that fails the day it is no longer needed.

If a ``test_still_needed_*`` test fails after a Keras upgrade, upstream fixed the bug: delete the
workaround from ``autodist/planning/keras_compat.py`` (and this test), and re-run the suite.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autodist.planning.keras_compat import WORKAROUNDS, compile_overrides, version_tuple
from autodist.upstream.versions import NEWEST_TESTED
from tests.conftest import ROOT, early_scenario


@pytest.fixture(scope="module")
def upstream(processes):
    # a bound against a hang, not a duration: about a minute alone, it ran past 300 s beside two
    # busy loops, the whole suite and the model axis (issue 44); the model axis has 900 s too
    return early_scenario("keras_bugs.py", timeout=900)  # started when the session's tests were collected


def affects(name: str, result: dict) -> bool:
    """Whether the table of autodist.planning.keras_compat says this run's Keras has the bug."""
    return WORKAROUNDS[name].affects(result["keras_version"])


def error(value) -> str:
    """A case's recorded error text ('' when it ran through)."""
    if isinstance(value, dict) and "raised" in value:
        return value["raised"]
    return value if isinstance(value, str) else ""


def still_apart(upstream: dict, case: str, gap: str, workaround: str, what: str, beyond: float = 1e-3) -> dict:
    """The plain-Keras ``case`` of a workaround that makes replicas train as one device: it ran
    through, and where the table says this Keras has the bug, its ``gap`` to one device is past
    ``beyond`` (otherwise upstream fixed it, and the workaround goes)."""
    unpatched = upstream[case]
    assert error(unpatched) == "", unpatched
    if affects(workaround, upstream):
        assert unpatched[gap] > beyond, (
            f"{what} trains as on one device under Mirrored upstream now ({unpatched}): remove '{workaround}'"
        )
    return unpatched


def as_stated(text: str, pattern: str, gap: float) -> None:
    """The figure ``pattern`` reads in ``text`` (the docs, a workaround's summary) is ``gap``, within 25%."""
    stated = re.search(pattern, text)
    assert stated and abs(float(stated.group(1)) - gap) <= 0.25 * gap, (stated and stated.group(0), gap)


def test_every_workaround_has_a_still_needed_test():
    """Here, or in tests/test_multi_worker.py for the multi-worker ones (a 2-worker job)."""
    import ast

    from tests.conftest import ROOT

    def defined(test_id: str) -> bool:
        path, name = test_id.split("::")
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        return any(isinstance(node, ast.FunctionDef) and node.name == name for node in tree.body)

    missing = [w.still_needed for w in WORKAROUNDS.values() if not defined(w.still_needed)]
    assert not missing, missing


def test_the_measured_table_of_releases_matches_every_gate():
    """docs/keras-workarounds.md's measured table (``python -m tests.keras_releases``): every
    workaround has a row, every cell is its gate's word for that release, and the releases the
    issue names (3.3, 3.5, 3.8, 3.15 and the next, 3.16) are among the columns."""
    from tests.doc_tables import table

    rows = table("keras-workarounds.md", "The releases measured to need each")
    header = (ROOT / "docs" / "keras-workarounds.md").read_text(encoding="utf-8").split("## The releases measured to need each", 1)[1]
    columns = re.findall(r"Keras (\S+) \(TF [^)]+\)", next(line for line in header.splitlines() if line.startswith("| workaround")))
    assert {".".join(v.split(".")[:2]) for v in columns} >= {"3.3", "3.5", "3.8", "3.15", "3.16"}, columns
    assert sorted(rows) == sorted(f"`{name}`" for name in WORKAROUNDS), sorted(rows)
    for name, w in WORKAROUNDS.items():
        expected = ["needed" if w.affects(version) else "not needed" for version in columns]
        assert rows[f"`{name}`"] == expected, (name, dict(zip(columns, rows[f"`{name}`"])))


def test_still_needed_variable_aggregation(upstream):
    # a metric counting 990 samples on 2 replicas; a counter with aggregation="sum", 2 steps x 2 replicas
    count, counter = upstream["mirrored_sample_count_unpatched"], upstream["mirrored_sum_counter_unpatched"]
    if affects("variable_aggregation", upstream):
        assert (count, counter) == (495.0, [2.0, 2.0]), (count, counter)
        assert "aggregation method" in error(upstream["central_storage_mean_unpatched"])
    else:
        assert count != 495.0 and counter != [2.0, 2.0], (
            f"Keras {upstream['keras_version']} drops the aggregation as 3.3-3.6 do: extend "
            "'variable_aggregation' in autodist/planning/keras_compat.py"
        )
    assert upstream["mirrored_sample_count_patched"] == 990.0
    assert upstream["mirrored_sum_counter_patched"] == [4.0, 4.0]


def test_still_needed_distributed_gradients(upstream):
    gaps, patched = upstream["gradient_gaps_unpatched"], upstream["gradient_gaps_patched"]
    if WORKAROUNDS["distributed_gradients"].affects(upstream["keras_version"]):
        assert gaps["replicas"] > 1e-3 or gaps["one_device"] > 1e-3, gaps  # apart (3.3-3.4), or N times the step (3.5-3.7)
    else:
        assert gaps["replicas"] <= 1e-6 and gaps["one_device"] <= 1e-6, (
            f"Keras {upstream['keras_version']} trains Mirrored apart from one device: {gaps}"
        )
    assert patched["replicas"] <= 1e-6 and patched["one_device"] <= 1e-6, patched


def test_still_needed_aggregating_variable_updates(upstream):
    # Keras 3 assign_add = assign(old + delta); SUM aggregation over 2 replicas double-counts old.
    if not affects("aggregating_variable_updates", upstream):  # 3.3-3.6: no SUM variable to double-count
        assert "aggregation method" in error(upstream["central_storage_mean_unpatched"]), upstream["central_storage_mean_unpatched"]
        assert upstream["mirrored_sum_counter_unpatched"] == [2.0, 2.0]
        return
    assert upstream["central_storage_mean_unpatched"] == pytest.approx(2.8333333, abs=1e-5), (
        "CentralStorage metrics are right without autodist's patch: remove "
        "'aggregating_variable_updates' from autodist/planning/keras_compat.py"
    )
    assert upstream["mirrored_sum_counter_unpatched"] == [6.0, 6.0], (
        "SUM-aggregated variables count right under Mirrored without autodist's patch: drop "
        "MirroredVariable from 'aggregating_variable_updates' in autodist/planning/keras_compat.py"
    )
    assert upstream["central_storage_mean_patched"] == pytest.approx(3.5)


def test_still_needed_first_batch_symbolic_build(upstream):
    found = error(upstream["mirrored_uneven_first_batch_error"])
    if affects("first_batch_symbolic_build", upstream):
        assert "AddN must have the same size and shape" in found or "Inputs to operation AddN" in found, (
            "Mirrored evaluates an uneven first batch upstream now: the Mirrored half of "
            "'first_batch_symbolic_build' can go"
        )
    else:
        assert found == "", found


def test_still_needed_transient_names_kept(upstream):
    """Keras's symbolic build under a strategy counts names that one device's first step never
    makes (``keras_tensor_N``: the TF image classification tutorial's TFLite call reads one);
    autodist's symbolic build puts the counts back (``names_as_they_were``)."""
    one, unpatched = upstream["transient_names_one_device"], upstream["transient_names_unpatched"]
    patched = upstream["transient_names_patched"]
    assert error(one) == error(unpatched) == error(patched) == "", (one, unpatched, patched)
    if affects("first_batch_symbolic_build", upstream):  # a Keras with the symbolic build
        assert unpatched != one, (
            f"Keras's symbolic build under a strategy leaves the names as one device now ({unpatched}): "
            "names_as_they_were (autodist/upstream/keras_trainer.py) can go"
        )
    assert patched == one, (patched, one)


def test_still_needed_no_call_symbolic_build(upstream):
    """keras.io's VAE pattern (no call(), its own train_step) under a hand-built MirroredStrategy."""
    found = error(upstream["no_call_unpatched"])
    if affects("no_call_symbolic_build", upstream):
        assert "does not have a `call()` method" in found or "Unable to automatically build the model" in found, (
            "a model without call() trains under Mirrored upstream now: remove 'no_call_symbolic_build'"
        )
    else:  # Keras 3.3-3.4 build while the first step is traced
        assert found == "", found
    patched = upstream["no_call_patched"]
    assert error(patched) == "" and patched["weights_gap"] <= 1e-5, patched


def test_still_needed_own_step_replica_mean(upstream):
    """The same model with call(): a loss the step computes itself takes steps N times one
    device's (3.5 and later; 3.3-3.4 leave the replicas apart), and a keras.losses loss it
    records reads 1/N (3.8 and later). With autodist's steps both equal one device's."""
    unpatched, patched = upstream["own_step_unpatched"], upstream["own_step_patched"]
    assert error(unpatched) == "", unpatched
    if affects("own_step_replica_mean", upstream):
        assert unpatched["weights_gap"] > 1e-3, (
            f"an own train_step trains as one device under Mirrored upstream now ({unpatched}): "
            "remove 'own_step_replica_mean'"
        )
    assert patched["weights_gap"] <= 1e-5, patched
    assert abs(patched["own_loss_ratio"] - 1) <= 1e-4 and abs(patched["keras_loss_ratio"] - 1) <= 1e-4, patched
    # under mixed_float16 (a LossScaleOptimizer applying through its inner one): one device's steps, to float16's digits
    mixed = upstream["own_step_mixed_patched"]
    assert error(mixed) == "" and mixed["weights_gap"] <= 2e-3 and abs(mixed["own_loss_ratio"] - 1) <= 1e-2, mixed
    # keras.io's endpoint layer (a keras.losses loss in a layer's call, to add_loss) under Keras's own train_step:
    # divided twice from 3.8 (History 1/N, SGD steps 1/N); autodist divides it once
    unpatched, patched = upstream["endpoint_unpatched"], upstream["endpoint_patched"]
    assert error(unpatched) == "" and error(patched) == "", (unpatched, patched)
    if version_tuple(upstream["keras_version"]) >= (3, 8):
        assert abs(unpatched["loss_ratio"] - 0.5) <= 0.05 and unpatched["weights_gap"] > 1e-3, (
            f"an add_loss of a keras.losses loss reads one device's under Mirrored upstream now ({unpatched}): "
            "drop the layer-call case of 'own_step_replica_mean'"
        )
    assert abs(patched["loss_ratio"] - 1) <= 1e-4 and patched["weights_gap"] <= 1e-5, patched
    # under a strategy autodist neither made nor adopted, Keras divides such a loss twice as before
    plain = upstream["endpoint_plain_strategy_patched"]
    if version_tuple(upstream["keras_version"]) >= (3, 8):
        assert abs(plain["loss_ratio"] - 0.5) <= 0.05, plain


def test_still_needed_uneven_shares_weighted(upstream):
    """99 samples in batches of 16 under Mirrored: the last batch of each epoch (3) splits 2/1, and
    plain Keras counts each replica's mean 1/2, so the weights end apart from one device's (where
    Keras reduces the gradients as one device's mean, 3.8 and later: by the figure docs/batching.md
    gives). Weighted by each share, one device's numbers, also for a train_step of the model's own
    (whose own Mean metric, updated once per replica, still averages the replicas' means)."""
    unpatched = still_apart(upstream, "uneven_shares_unpatched", "weights_gap", "uneven_shares_weighted", "an uneven batch")
    if not affects("distributed_gradients", upstream):
        as_stated((ROOT / "docs" / "batching.md").read_text(), r"weights ([0-9.]+) apart after 2 epochs", unpatched["weights_gap"])
    patched = upstream["uneven_shares_patched"]
    assert error(patched) == "" and patched["weights_gap"] <= 1e-5 and abs(patched["loss_ratio"] - 1) <= 1e-4, patched
    own = upstream["uneven_shares_own_step_patched"]
    assert error(own) == "" and own["weights_gap"] <= 1e-5, own
    # keras.io's masked language model: the gradient of a sum over the samples (a loss with reduction=None, or
    # its ops.sum) is the replicas' sum of theirs, evenly split or not: neither divided nor weighted
    regularized = upstream["uneven_shares_regularized_patched"]  # Keras's sum of the loss and a penalty: still a mean
    assert error(regularized) == "" and regularized["weights_gap"] <= 1e-5, regularized
    # ... and ops.sum of a mean (a number, as Keras sums an add_loss) is still a mean: divided and weighted
    for summed in ("uneven_shares_own_sum_patched", "uneven_shares_own_scalar_sum_patched", "uneven_shares_own_sum_of_a_mean_patched"):
        found = upstream[summed]
        assert error(found) == "" and found["weights_gap"] <= 1e-5, (summed, found)


def test_still_needed_replica_slices_summed(upstream):
    """keras.io's Vision Transformer PatchEncoder (a position embedding looked up with arange in
    call) beside positions tiled over each sample and an embedding of each sample's tokens, 3
    epochs of Adam under Mirrored (patched, 1e-8 apart: the gap is 3 orders past that): plain Keras
    squares each replica's slice of a position row apart, so the weights and History end apart
    from one device's (the position embedding by the figure the workaround's summary gives, where
    Keras reduces the gradients as one device's mean: 3.8 and later). With the slices summed, one
    device's numbers, the tiled and token embeddings' too (their slices are not summed: one per
    sample on one device as well); under a strategy autodist neither made nor adopted, as before."""
    unpatched = still_apart(
        upstream, "position_embedding_unpatched", "position_gap", "replica_slices_summed", "a position embedding", beyond=3e-4
    )
    if not affects("distributed_gradients", upstream):
        as_stated(WORKAROUNDS["replica_slices_summed"].summary, r"embedding ([0-9.]+) apart after 3 epochs", unpatched["position_gap"])
        plain = upstream["position_embedding_plain_strategy_patched"]  # its History is read by other workarounds too
        weights = ("position_gap", "tiled_gap", "token_gap")
        assert [plain[key] for key in weights] == [unpatched[key] for key in weights], plain
    patched = upstream["position_embedding_patched"]
    assert error(patched) == "" and max(patched.values()) <= 1e-5, patched


def test_still_needed_global_seed_in_replicas(upstream):
    """The Keras guide's VAE Sampling layer (keras.random.normal without a seed) under a hand-built
    MirroredStrategy fails in its first step, each replica's thread making Keras's global
    SeedGenerator; under a strategy autodist trains under it trains, each replica drawing its own
    noise; under one autodist neither made nor adopted it fails as before. The same draw in a
    tf.data map made in the strategy's scope (keras.io's CutMix) fails upstream to lift the
    generator out of the map function; under autodist's strategy it trains as one device."""
    found = error(upstream["unseeded_draws_unpatched"])
    if affects("global_seed_in_replicas", upstream):
        assert "singleton tf.Variables" in found or "tf.Variable" in found, (
            f"an unseeded keras.random draw in a step trains under Mirrored upstream now ({found[:300]}): "
            "remove 'global_seed_in_replicas'"
        )
    plain = error(upstream["unseeded_draws_plain_strategy_patched"])
    assert ("singleton tf.Variables" in plain) == ("singleton tf.Variables" in found), plain
    patched = upstream["unseeded_draws_patched"]
    assert error(patched) == "" and patched["same_draws"] is False, patched
    # keras.io's CutMix: the same draw in a tf.data map made in the strategy's scope (autodist makes
    # its strategy current at import) fails to lift Keras's SeedGenerator out of the map function
    found = error(upstream["unseeded_dataset_draws_unpatched"])
    if affects("global_seed_in_replicas", upstream):
        assert "Unable to lift" in found, (
            f"an unseeded keras.random draw in a tf.data map under Mirrored works upstream now ({found[:300]}): "
            "remove the tf.data half of 'global_seed_in_replicas'"
        )
    assert "Unable to lift" in error(upstream["unseeded_dataset_draws_plain_strategy_patched"])
    one, patched = upstream["unseeded_dataset_draws_one_device"], upstream["unseeded_dataset_draws_patched"]
    assert error(one) == "" == error(patched) and abs(patched["loss"] - one["loss"]) <= 1e-5 * max(1.0, abs(one["loss"])), (one, patched)


def test_still_needed_optimizer_built_in_step(upstream):
    """The guide's GAN pattern (a step that updates with Adams of its own, built by their first
    apply) under a hand-built MirroredStrategy fails at its first step; with autodist's steps it
    trains as one device."""
    found = error(upstream["two_optimizers_unpatched"])
    if affects("optimizer_built_in_step", upstream):
        assert "You must feed a value for placeholder tensor" in found, (
            f"an optimizer built by its first apply in a step trains under Mirrored upstream now ({upstream['two_optimizers_unpatched']}): "
            "remove 'optimizer_built_in_step'"
        )
    else:  # Keras 3.3-3.4 reduce no gradient over the replicas: nothing to fail in
        assert found == "", f"extend 'optimizer_built_in_step' to Keras {upstream['keras_version']}: {found[:300]}"
    patched = upstream["two_optimizers_patched"]
    assert error(patched) == "" and patched["weights_gap"] <= 1e-5 and abs(patched["own_loss_ratio"] - 1) <= 1e-4, patched


def test_still_needed_metric_results_as_numbers(upstream):
    """A metric whose result() returns its own variable (issue 58's sample counter), under a
    hand-built MirroredStrategy: on Keras 3.3-3.11 History keeps the variable (float() refuses it);
    with autodist's patch it holds floats, and the count one device gives."""
    unpatched, patched = upstream["metric_result_unpatched"], upstream["metric_result_patched"]
    assert "raised" not in unpatched and "raised" not in patched, (unpatched, patched)
    if affects("metric_results_as_numbers", upstream):
        assert unpatched["types"] != ["float"], (
            f"Keras {upstream['keras_version']} logs a metric's own variable as a float under Mirrored now "
            f"({unpatched}): end 'metric_results_as_numbers' before it"
        )
    else:
        assert unpatched["types"] == ["float"], f"extend 'metric_results_as_numbers' to Keras {upstream['keras_version']}: {unpatched}"
    assert patched == {"types": ["float"], "counts": [990.0, 990.0]}, patched


def test_still_needed_every_replica_fed(upstream, report):
    """Under Mirrored on 2 replicas, Keras hands a replica an empty share of a batch with fewer
    samples than replicas (predict on 1 sample, evaluate on 3 in batches of 2). A layer that fails
    on an empty share shows the bug itself, the same on every machine and run. What a real model
    then does with the empty share varies by machine and run (keras.io's residual block: a crash,
    NaN, or one device's numbers, issue 44), so that is reported, not asserted. With autodist's
    patch every replica is fed, and the residual block and a dict of string, integer and float
    tensors (issue 45) give one device's numbers."""
    unpatched, patched = upstream["empty_shares_unpatched"], upstream["empty_shares_patched"]
    assert "raised" not in unpatched and sorted(unpatched) == ["evaluate", "predict"], unpatched
    fed = sorted(name for name, outcome in unpatched.items() if upstream["empty_share_words"] not in outcome)
    assert not fed, (
        f"Keras's {' and '.join(fed)} feed every replica upstream now ({unpatched}): remove "
        "'every_replica_fed' from autodist/planning/keras_compat.py"
    )
    assert patched == {"predict": "every replica fed", "evaluate": "every replica fed"}, patched
    residual = upstream["one_image_patched"]
    assert all(isinstance(value, float) and value <= 1e-5 for value in residual.values()), residual
    # a dict of string, integer and float tensors (keras.io's FeatureSpace inference on one row) is fed the same way
    structured = upstream["structured_patched"]
    assert "raised" not in structured and all(value <= 1e-6 for value in structured.values()), structured
    report(f"every_replica_fed: keras.io's residual block on an empty share, unpatched: {empty_share_outcomes(upstream['one_image_unpatched'])}")


#: TensorFlow releases measured to copy a generator's batches themselves before re-batching them for
#: the replicas (TF 2.18.1 with Keras 3.8.0: no target written, without autodist's copies too);
#: TF 2.16.2 and 2.21.0 hand the replicas views that the loss writes into.
COPIES_GENERATOR_BATCHES = ("2.18",)


def test_still_needed_batches_copied(upstream, report):
    """A PyDataset that returns slices of arrays it keeps (targets on a 64-byte boundary), 3 epochs
    under Mirrored on 2 replicas, every other workaround applied: without autodist's copies,
    TensorFlow's re-batching writes the loss's residuals into its targets and the later epochs train
    on them; with them the targets stay and the History is one device's."""
    without, patched = upstream["py_dataset_targets_without_copies"], upstream["py_dataset_targets_patched"]
    assert "raised" not in without and "raised" not in patched, (without, patched)
    tensorflow = ".".join(upstream["tensorflow_version"].split(".")[:2])
    if not affects("batches_copied", upstream):  # Keras 3.16: the arrays stay as they were
        assert without["targets_written"] == 0 and without["history_gap"] <= 1e-5, (
            f"Keras {upstream['keras_version']} was measured to leave a PyDataset's arrays unchanged, and now writes "
            f"into them ({without}): extend 'batches_copied' to it"
        )
    elif tensorflow in COPIES_GENERATOR_BATCHES:
        assert without["targets_written"] == 0 and without["history_gap"] <= 1e-5, (
            f"TensorFlow {tensorflow} was measured to copy a generator's batches, and now writes into them ({without})"
        )
    else:
        assert without["targets_written"] > 0 and without["history_gap"] > 0.1, (
            f"fit under Mirrored leaves a PyDataset's arrays as they were on TensorFlow {tensorflow} now ({without}): "
            "remove 'batches_copied' (or name this release in COPIES_GENERATOR_BATCHES)"
        )
    assert patched["targets_written"] == 0 and patched["history_gap"] <= 1e-5, patched
    report(f"batches_copied: TensorFlow {tensorflow}, without the copies: {without['targets_written']} target values written")


def empty_share_outcomes(gaps: dict) -> dict:
    """What each of predict and evaluate gave on an empty share, in the words of the known outcomes:
    a crash, NaN, a wrong value, or one device's numbers."""
    if "raised" in gaps:
        return {"all": "crash"}

    def outcome(value) -> str:
        if isinstance(value, str):
            return "crash"
        return "NaN" if value != value else ("wrong value" if value > 1e-5 else "one device's numbers")

    return {name: outcome(value) for name, value in gaps.items()}


def test_still_needed_mixed_float16_refused_under_central_storage(upstream):
    """autodist refuses mixed_float16 under central_storage (strategy_types.MIXED_FLOAT16_CENTRAL_STORAGE)
    because plain Keras fails there."""
    found = error(upstream["central_storage_mixed_float16_error"])
    assert "AggregatingVariable" in found or "merge_call" in found, (
        f"a mixed_float16 model trains under CentralStorage upstream now ({found!r}): drop the refusal in CentralStorage.keras_refusal"
    )


def test_still_needed_mirrored_steps_per_execution(upstream):
    found = error(upstream["mirrored_steps_per_execution_error"])
    if affects("mirrored_steps_per_execution", upstream):
        assert "You must feed a value for placeholder tensor" in found, (
            "Mirrored + steps_per_execution works upstream now: remove 'mirrored_steps_per_execution'"
        )
    else:
        assert found == "", found


def test_still_needed_symbolic_build_reads_input(upstream):
    """A 4-step fit on a generator of exactly 4 batches: one device trains all 4; under Mirrored
    the symbolic build reads batches of its own, the generator cannot start over, and the fit
    runs out of data (or fails). Steps trained, not batches pulled: tf.data's prefetching pulls
    more or fewer by load, the steps a fit trains do not vary."""
    plain, mirrored = upstream["generator_steps_plain"], upstream["generator_steps_mirrored"]
    assert plain == {"trained": 4, "ran_out": False}, plain
    if affects("symbolic_build_reads_input", upstream):  # the batches lost leave fewer steps, or the fit fails
        assert "raised" in mirrored or mirrored["trained"] < 4, (
            f"a 4-step fit under Mirrored trains {mirrored} of a generator's 4 batches: Keras no "
            "longer loses generator batches to its symbolic build; remove 'symbolic_build_reads_input'"
        )
    else:  # no symbolic build to patch: the probe says so, without a warning
        from autodist.upstream.surface import absence

        assert absence("keras.symbolic_build") is not None and absence("keras.symbolic_build").expected


def test_still_needed_mirrored_jit_compile(upstream):
    assert "Trying to access resource" in error(upstream["mirrored_jit_compile_error"]), (
        "Mirrored + jit_compile works upstream now: remove 'mirrored_jit_compile'"
    )


def test_still_needed_short_epoch_steps_per_execution(upstream):
    found = upstream["short_epoch_steps_per_execution"]
    broken = "raised" in found or found.get("losses") != 2
    assert broken == affects("short_epoch_steps_per_execution", upstream), (
        f"Keras {upstream['keras_version']}: steps_per_execution=8 on 5-step epochs gave {found}; "
        "change 'short_epoch_steps_per_execution' in autodist/planning/keras_compat.py"
    )


def test_newer_keras_keeps_every_workaround_and_warns_once_naming_it(fresh_state):
    """The fail-safe path (the harness's faked-3.17 run shows its numbers): applied, one warning."""
    import warnings

    from autodist.errors import AutodistWarning

    open_ended = [w for w in WORKAROUNDS.values() if w.affected[-1][1] is None]
    fixed = [w for w in WORKAROUNDS.values() if w.affected[-1][1] is not None]
    assert open_ended and fixed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert all(w.is_active("3.17.0", {}) for w in open_ended)
        assert all(w.is_active("3.17.0", {}) for w in open_ended)
        assert not any(w.is_active("3.17.0", {}) for w in fixed)  # fixed in a release before: nothing to warn about
    named = [str(w.message) for w in caught if issubclass(w.category, AutodistWarning)]
    assert len(named) == 1 and "Keras 3.17.0 is newer" in named[0] and f"up to {NEWEST_TESTED['keras']}" in named[0]
    assert all(w.if_fixed for w in WORKAROUNDS.values()), "each workaround says why it is harmless once fixed"


def test_off_force_and_the_releases_of_each_bug():
    from autodist.upstream.versions import MEASURED

    for workaround in WORKAROUNDS.values():
        for _, keras_version, _ in MEASURED:
            assert workaround.is_active(keras_version, {}) == workaround.affects(keras_version)
            assert not workaround.is_active(keras_version, {"AUTODIST_KERAS_COMPAT": "off"})
        assert workaround.is_active("2.15.0", {"AUTODIST_KERAS_COMPAT": "force"})
        assert not workaround.is_active("2.15.0", {}) and not workaround.is_active(None, {})
    on = lambda version: sorted(n for n, w in WORKAROUNDS.items() if w.is_active(version, {}))  # noqa: E731
    assert "variable_aggregation" in on("3.3.3") and "variable_aggregation" not in on("3.7.0")
    assert "first_batch_symbolic_build" not in on("3.4.1") and "first_batch_symbolic_build" in on("3.5.0")
    assert "batchnorm_moving_statistics" not in on("3.7.0") and "batchnorm_moving_statistics" in on("3.8.0")


def test_first_batch_reads_old_and_new_epoch_iterator_shapes():
    from autodist.upstream.keras_trainer import _first_batch

    assert _first_batch([(0, 0, iter(["new"]))]) == "new"  # (begin_step, end_step, iterator)
    assert _first_batch([(0, iter(["old"]))]) == "old"  # (step, iterator), earlier Keras 3


def test_overrides_only_for_keras3_mirrored():
    args = dict(jit_compile=True, steps_per_execution=4, environ={})
    overrides, warnings = compile_overrides("mirrored", "keras3", "3.15.1", **args)
    assert list(overrides.items()) == [("jit_compile", False), ("steps_per_execution", 1)]
    assert warnings[0].startswith("jit_compile=True is turned off under mirrored: Keras 3.15.1 fails there")
    assert warnings[1].startswith("steps_per_execution=4 is set to 1 under mirrored: Keras 3.15.1 fails there")
    assert compile_overrides("a name no strategy has", "keras3", "3.15.1", **args)[0] == {}
    assert compile_overrides("central_storage", "keras3", "3.15.1", **args)[0] == {}
    assert compile_overrides("mirrored", "tf_keras", "2.21.0", **args)[0] == {}
    assert compile_overrides("mirrored", "keras3", "3.15.1", jit_compile="auto", steps_per_execution=1, environ={})[0] == {}


def test_version_tuple():
    assert version_tuple("3.15.1") == (3, 15, 1)
    assert version_tuple("3.16.0.dev2026110101") == (3, 16, 0)


def test_still_needed_batchnorm_moving_statistics(upstream):
    # one step, zeros on one replica and fives on the other: each replica keeps its own mean
    unpatched = upstream["batchnorm_unpatched"]
    if affects("batchnorm_moving_statistics", upstream):
        assert unpatched["replica_gap"] > 1e-3 and unpatched["evaluate_gap"] > 1e-3, (
            "BatchNormalization's replicas end with one set of moving statistics upstream now: remove "
            "'batchnorm_moving_statistics' from autodist/planning/keras_compat.py"
        )
    else:  # Keras 3.7.0 made every variable mean-aggregated
        assert unpatched["replica_gap"] <= 1e-6, unpatched


def test_batchnorm_patch_gives_one_set_of_statistics(upstream):
    patched = upstream["batchnorm_patched"]
    assert patched["replica_gap"] <= 1e-6 and patched["evaluate_gap"] <= 1e-4, patched


def test_still_needed_seed_state_aggregation(upstream):
    found = error(upstream["central_storage_dropout_unpatched"])
    assert "aggregation method" in found or "int64" in found, (
        "Keras 3 Dropout trains under CentralStorageStrategy on 2 replicas upstream now: remove "
        "'seed_state_aggregation' from autodist/planning/keras_compat.py"
    )


def test_seed_state_patch_lets_dropout_train_under_central_storage(upstream):
    assert upstream["central_storage_dropout_patched"] is None, upstream["central_storage_dropout_patched"]
    assert "raised" not in upstream["dropout_masks_patched"]  # Keras 3.7.0's integer MEAN seed no longer fails under Mirrored


def test_still_needed_replica_random_streams(upstream, report):
    """Keras 3 Dropout under Mirrored on 2 replicas: both replicas draw the same mask for their
    shares. With autodist's patch each draws its own (about half the entries agree, as two
    independent masks of rate 0.5 do), and the same seed draws the same masks again."""
    unpatched, patched = upstream["dropout_masks_equal_across_replicas"], upstream["dropout_masks_patched"]
    assert "raised" not in unpatched and "raised" not in patched, (unpatched, patched)
    if affects("replica_random_streams", upstream):
        assert unpatched["agreement"] == 1.0, (
            f"Keras 3 draws independent masks per replica upstream now (agreement {unpatched['agreement']}): "
            "remove 'replica_random_streams'"
        )
    assert 0.3 <= patched["agreement"] <= 0.7, patched["agreement"]  # 8 x 16 entries: 0.5 give or take 0.2 (4.5 sigma)
    assert upstream["dropout_masks_patched_again"]["masks"] == patched["masks"]
    # a strategy the script uses with plain model.fit (not through autodist) draws as Keras draws
    assert upstream["dropout_masks_plain_strategy_patched"]["agreement"] == 1.0, upstream["dropout_masks_plain_strategy_patched"]
    report(f"replica_random_streams: Dropout(0.5) masks alike between 2 replicas: {unpatched['agreement']:.2f} with Keras's draws, {patched['agreement']:.2f} with autodist's")


@settings(max_examples=40, deadline=None)
@given(
    replicas=st.integers(2, 4),
    rows=st.integers(0, 5),
    kind=st.sampled_from(["alike, each row once", "alike, rows drawn", "apart"]),
    seed=st.integers(0, 2**16),
)
def test_replica_slices_summed_keeps_every_row_sum_and_merges_only_alike_blocks(tensorflow_imported, replicas, rows, kind, seed):
    """What replica_slices_summed hands Keras's update, for any all-reduced sparse gradient: every
    row's sum is the one TensorFlow reduced (a dense or plain-SGD update is unchanged); where each
    replica's block holds the same rows in the same order, each row once, the first block holds
    their sums and the others zeros; otherwise (a row twice in a block: positions tiled over a
    share's samples) the slices are as they came."""
    import numpy as np
    import tensorflow as tf

    from autodist.upstream.keras_optimizer import looked_up_once_per_step, replicas_alike_summed

    rng = np.random.default_rng(seed)
    drawn = [rng.permutation(6)[:rows] if kind == "alike, each row once" else rng.integers(0, 6, rows) for _ in range(replicas)]
    blocks = drawn if kind == "apart" else [drawn[0]] * replicas
    indices = np.concatenate(blocks).astype("int64")
    values = rng.normal(size=(len(indices), 3)).astype("float32")
    grad = tf.IndexedSlices(tf.constant(values), tf.constant(indices), tf.constant([6, 3], "int64"))
    summed = replicas_alike_summed(grad, replicas)
    assert np.array_equal(summed.indices.numpy(), indices)
    np.testing.assert_allclose(tf.convert_to_tensor(summed).numpy(), tf.convert_to_tensor(grad).numpy(), atol=1e-6)
    merged = rows > 0 and all(np.array_equal(block, blocks[0]) for block in blocks) and len(set(blocks[0])) == rows
    if merged:
        np.testing.assert_allclose(summed.values.numpy()[:rows], values.reshape(replicas, rows, 3).sum(0), atol=1e-6)
        assert not summed.values.numpy()[rows:].any()
    else:
        assert np.array_equal(summed.values.numpy(), values)
    assert replicas_alike_summed(grad, 1) is grad and replicas_alike_summed(tf.constant(values), replicas).shape == values.shape
    assert not looked_up_once_per_step(grad)  # eager: no graph to read, so never summed


def test_a_lookup_is_once_per_step_only_where_its_rows_come_from_constants(tensorflow_imported):
    """looked_up_once_per_step reads the graph of a lookup's rows: a position embedding's arange
    (and its table's shape) is; the batch's own tokens, positions tiled over the batch, and rows
    drawn at random are not."""
    import tensorflow as tf

    from autodist.upstream.keras_optimizer import looked_up_once_per_step

    table = tf.Variable(tf.zeros((6, 3)))

    def lookup(rows):
        with tf.GradientTape() as tape:
            taken = tf.gather(table, tf.where(rows < 0, rows + tf.shape(table, out_type=rows.dtype)[0], rows))
            loss = tf.reduce_sum(taken)
        return looked_up_once_per_step(tape.gradient(loss, table))

    @tf.function(input_signature=[tf.TensorSpec((None, 6), tf.int32)])
    def read(tokens):
        once = tf.expand_dims(tf.range(6), 0)
        tiled = tf.tile(once, [tf.shape(tokens)[0], 1])
        drawn = tf.random.uniform((6,), maxval=6, dtype=tf.int32)
        return [lookup(rows) for rows in (once, tokens, tiled, drawn)]

    assert [bool(found) for found in read(tf.zeros((2, 6), tf.int32))] == [True, False, False, False]


def test_still_needed_symbolic_build_training(upstream):
    """keras.io's Perceiver pattern: under a hand-built MirroredStrategy, the Sequentials built
    inside Keras's symbolic build (training=False) stay in inference in every training step, so
    RandomFlip and what follows it never train (3.5 and later); autodist's build gives one device's."""
    unpatched, patched = upstream["training_in_step_unpatched"], upstream["training_in_step_patched"]
    assert error(unpatched) == "" and error(patched) == "", (unpatched, patched)
    if affects("symbolic_build_training", upstream):
        assert "after=True" in unpatched["one_device"], unpatched  # RandomFlip's default: training on one device
        assert unpatched["mirrored"] != unpatched["one_device"] and "after=True" not in unpatched["mirrored"], (
            f"layers built in the symbolic build train under Mirrored upstream now ({unpatched}): "
            "remove 'symbolic_build_training'"
        )
    else:  # 3.3-3.4 build in the first step; 3.5-3.8 and the 2026-10-27 nightly pass training on
        assert unpatched["mirrored"] == unpatched["one_device"], unpatched
    assert patched["mirrored"] == patched["one_device"], patched
