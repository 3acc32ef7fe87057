"""The upstream surface (:mod:`autodist.upstream`): every touch of private TensorFlow, Keras or
JAX code lives there, is listed with its probe and still-needed test, and turns itself off with
one warning, not an ``AttributeError``, where what it needs is missing. And the support matrix:
the versions autodist accepts, and the failures older pairs had (run on each pair of the matrix
by ``noxfile.py``; see docs/support-matrix.md).

The ``test_still_needed_*`` tests here are for touches that read private state where TensorFlow
or Keras publish nothing equivalent: each fails the day a public API gives the same answer.
"""

from __future__ import annotations

import ast
import re
import warnings

import pytest

from autodist.errors import AutodistWarning, UnsupportedVersionError
from autodist.upstream import surface
from autodist.upstream.probes import describe
from autodist.upstream.versions import MEASURED, NEWEST_TESTED, OLDEST, check_versions, version_tuple
from tests.conftest import ROOT, start_scenario, scenario_result

PRIVATE = re.compile(r"(tensorflow\.(python|compiler|tsl|core|_api)|keras\.src|tf_keras\.src|jax\._src)\b")


# --- one room ------------------------------------------------------------------------------------


def test_private_modules_are_named_only_in_the_upstream_folder():
    found = []
    for path in sorted((ROOT / "autodist").rglob("*.py")):
        if path.parent.name == "upstream":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PRIVATE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_every_touch_names_a_still_needed_test_that_exists():
    missing = []
    for touch in surface.TOUCHES.values():
        file, _, name = touch.still_needed.partition("::")
        tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
        if name not in {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}:
            missing.append(f"{touch.name}: {touch.still_needed}")
    assert not missing, missing


def test_the_docs_tables_are_the_registries():
    """docs/upstream.md and docs/keras-workarounds.md hold the tables written from the touches and
    the workarounds (``python -m autodist.upstream.pages`` writes them)."""
    from autodist.upstream.pages import stale

    assert stale(ROOT) == [], "run python -m autodist.upstream.pages to write the tables"
    assert all(describe(touch.probe) != "checks nothing: always on" for touch in surface.TOUCHES.values())


def test_a_table_is_written_between_its_header_and_the_prose_after_it(tmp_path):
    from autodist.errors import AutodistError
    from autodist.upstream import pages

    page = tmp_path / "docs" / "keras-workarounds.md"
    page.parent.mkdir()
    from autodist.upstream import roles

    upstream_page = ["# touches", "", *roles.table(), "", *surface.table(), "", "after"]
    (tmp_path / "docs" / "upstream.md").write_text("\n".join(upstream_page), encoding="utf-8")
    header = pages.PAGES["docs/keras-workarounds.md"][0](tmp_path)[:2]
    page.write_text("\n".join(["# workarounds", "", *header, "| `gone` | a row no workaround has |", "", "prose"]), encoding="utf-8")
    assert pages.stale(tmp_path) == ["docs/keras-workarounds.md"]
    assert pages.main(["--root", str(tmp_path)]) == 0 and pages.stale(tmp_path) == []
    lines = page.read_text(encoding="utf-8").split("\n")
    assert lines[:2] == ["# workarounds", ""] and lines[-2:] == ["", "prose"] and "`gone`" not in "\n".join(lines)
    with pytest.raises(AutodistError, match="no table headed"):
        pages.replace_table(["# a page without the table"], header)


def test_each_workaround_is_one_object_declared_beside_its_patch():
    """A workaround that patches Keras is declared in the module that holds its patch, names touches
    of the surface, and its install is the one way the act layer applies it."""
    import inspect

    from autodist.upstream.keras_workarounds import DECLARING, PATCHES, WORKAROUNDS

    for name, workaround in WORKAROUNDS.items():
        assert set(workaround.touches) <= set(surface.TOUCHES), name
        if workaround.install is None:
            assert not workaround.touches and workaround.how in ("compile settings", "a default autodist picks"), name
            continue
        home = inspect.getmodule(workaround.install)
        assert home in DECLARING, f"{name}: its install is in {home}, not in a module the registry reads"
        assert getattr(home, name.upper()) is workaround, f"{name} is not declared in {home.__name__}"
        assert workaround.touches, name
    assert PATCHES == tuple(name for name, w in WORKAROUNDS.items() if w.install is not None)
    act_layer = (ROOT / "autodist" / "tensorflow" / "keras_patches.py").read_text(encoding="utf-8")
    assert "patch_" not in act_layer.replace("keras_patches", ""), "the act layer installs through each workaround's install"


def test_the_reset_puts_back_every_attribute_the_workarounds_replaced(tensorflow_imported, fresh_state, report):
    """Every workaround this Keras needs, applied as a plan applies them, then the tests' reset:
    each attribute replaced is the framework's own again, and the workarounds apply again."""
    import keras

    from autodist import process
    from autodist.planning.keras_compat import PATCHES, WORKAROUNDS
    from autodist.process import STATE, replaced, reset
    from autodist.tensorflow.keras_patches import apply_workarounds

    names = [name for name in PATCHES if WORKAROUNDS[name].is_active(keras.__version__, {})]
    applied = apply_workarounds(names)
    first: dict = {}
    for owner, name, before, _by in STATE.replaced:
        first.setdefault((owner, name), before)
    count = len(replaced())
    assert applied and count >= len(applied), (applied, replaced())
    reset()
    assert replaced() == []
    for (owner, name), before in first.items():  # an attribute the owner inherited is its own again by not being there
        assert vars(owner).get(name, process._INHERITED) is before, (owner, name)
    assert apply_workarounds(names) == applied and len(replaced()) == count
    report(f"reset: {count} attributes of Keras and TensorFlow replaced by {len(applied)} workarounds, 0 after the reset")
    # each workaround's own undo: its attributes put back, the others' kept; installed again, as before
    for name in reversed(applied):
        mine: dict = {}
        for owner, attribute, before, by in STATE.replaced:
            if by == name:
                mine.setdefault((owner, attribute), before)  # what it found there: Keras's, or an earlier patch
        others = [(owner, attribute) for owner, attribute, _before, by in STATE.replaced if by != name]
        WORKAROUNDS[name].undo()  # what its install added to the state goes with it
        assert all(vars(o).get(a, process._INHERITED) is before for (o, a), before in mine.items()), name
        assert [(o, a) for o, a, *_ in STATE.replaced] == others and all(by != name for by, _ in STATE.undos), name
    assert replaced() == [] and STATE.undos == [] and not STATE.symbolic_build
    assert apply_workarounds(names) == applied and len(replaced()) == count and len(STATE.undos) == len(applied)
    reset()
    assert replaced() == [] and STATE.undos == []


@pytest.fixture(scope="module")
def undo_runs(processes):
    """``tests/scenarios/undo.py``: plain Keras without autodist, and after ``autodist.fit`` on 2
    replicas, with and without the activation at import (each in a fresh process)."""
    settings = {"AUTODIST_CPU_DEVICES": "2", "AUTODIST_STRATEGY": "mirrored"}
    procs = {
        "plain": start_scenario("undo.py", "plain", AUTODIST_CPU_DEVICES="2"),
        "not activated": start_scenario("undo.py", "after", AUTODIST_ACTIVATE="0", **settings),
        "activated": start_scenario("undo.py", "after", **settings),
    }
    return {name: scenario_result(proc, timeout=240) for name, proc in procs.items()}


def test_a_plain_fit_after_autodist_fit_trains_bit_for_bit_as_in_a_process_without_autodist(undo_runs, report):
    """With ``AUTODIST_ACTIVATE=0``, plain ``model.fit`` of a CNN with BatchNormalization and
    Dropout on one device, in the process where ``autodist.fit`` trained on 2 replicas: the
    same History and weights, to the bit, as without autodist, while its replacements are in
    place (they call straight through) and after the reset."""
    plain, after = undo_runs["plain"]["cnn"], undo_runs["not activated"]
    assert after["replicas"] == 2 and after["after_fit"], after
    assert plain["replicas"] == after["cnn_after_fit"]["replicas"] == 1
    assert after["cnn_after_fit"] == plain, (after["cnn_after_fit"], plain)
    assert after["cnn_after_reset"] == plain, (after["cnn_after_reset"], plain)
    report(f"plain model.fit after autodist.fit (2 replicas): weights {plain['weights'][:12]} as without autodist, "
           f"with {len(after['after_fit'])} attributes replaced and after the reset")


@pytest.mark.parametrize("run", ["activated", "not activated"])
def test_the_reset_puts_back_everything_autodist_replaced_in_tensorflow_and_keras(undo_runs, run, report):
    """Every function, method and class of TensorFlow and Keras compared with what they held
    before autodist was imported: after ``fit`` returns, each one changed was replaced through
    :func:`autodist.process.replace` (the workarounds' and the activation's alike), and after
    :func:`autodist.process.reset` none is."""
    result = undo_runs[run]
    assert result["replicas"] == 2 and result["after_fit"], result
    unrecorded = sorted(set(result["after_fit"]) - set(result["recorded_after_fit"]))
    assert not unrecorded, f"replaced without autodist.process.replace: {unrecorded}"
    assert result["after_reset"] == [], result["after_reset"]
    report(f"reset ({run} at import): {len(result['after_fit'])} attributes of TensorFlow and Keras replaced after fit, "
           f"{len(result['after_reset'])} after the reset")


def test_every_touch_is_on_or_not_needed_on_this_pair(tensorflow_imported):
    rows = surface.status()
    assert {row["touch"] for row in rows} == set(surface.TOUCHES)
    off = [row for row in rows if row["state"] == "off"]
    assert not off, off


# --- a probe that finds something missing -----------------------------------------------------------


def test_a_missing_attribute_turns_its_touch_off_with_one_warning(tensorflow_imported, monkeypatch, fresh_state):
    touch = surface.Touch(
        "tf.example", "tensorflow", ("tensorflow.python.eager.context.no_such_thing",), "an example", "-",
        "nothing", "tests/test_upstream.py::test_a_missing_attribute_turns_its_touch_off_with_one_warning",
        surface._present("tensorflow.python.eager.context.no_such_thing"),
    )  # fmt: skip
    monkeypatch.setitem(surface.TOUCHES, "tf.example", touch)
    with pytest.warns(AutodistWarning, match=r"tf\.example is off: .* has no tensorflow\.python\.eager\.context\.no_such_thing"):
        assert surface.available("tf.example") is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert surface.available("tf.example") is False  # once per process
    assert next(row for row in surface.status() if row["touch"] == "tf.example")["state"] == "off"


def test_an_expected_absence_is_silent(tensorflow_imported, monkeypatch, fresh_state):
    probe = surface._present("keras.src.no_such_module.thing", when_absent_expected="this release has no such code")
    touch = surface.Touch("keras.example", "keras", ("x",), "-", "-", "-", "-", probe)
    monkeypatch.setitem(surface.TOUCHES, "keras.example", touch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert surface.available("keras.example") is False
    assert surface.absence("keras.example").expected


# --- Keras's classes found by the part they play (autodist/upstream/roles.py) ---------------------------


def test_each_role_is_played_by_what_keras_trains_with_on_this_pair(tensorflow_imported):
    """On every pair: the TensorFlow trainer is a base of keras.Model and derives from the base
    trainer, the variable class is the one keras.Variable makes, and its module is the ops core."""
    import keras

    from autodist.upstream import roles

    trainer, base, variable = roles.find("tf_trainer"), roles.find("base_trainer"), roles.find("tf_variable")
    assert issubclass(keras.Model, trainer) and issubclass(trainer, base) and trainer is not base
    assert roles.find("tf_trainer_module").reduce_per_replica.__module__ == trainer.__module__
    assert isinstance(keras.Variable(1.0), variable)
    assert roles.find("tf_ops_core").__name__ == variable.__module__
    assert set(roles.ROLES) == {role for touch in surface.TOUCHES.values() for name in touch.touches
                                if (role := roles.split(name)[0])} | {"tf_ops_core", "tf_trainer_module"} - {None}


def test_a_renamed_trainer_is_found_and_its_touches_stay_on(tensorflow_imported, monkeypatch, fresh_state):
    """Keras 3.16's rename (TensorFlowTrainer → Trainer, Trainer → BaseTrainer), made here on this
    pair's classes: the roles follow the classes, and the touches that use them stay on."""
    from autodist.upstream import roles

    trainer, base = roles.find("tf_trainer"), roles.find("base_trainer")
    trainer_module, base_module = roles.find("tf_trainer_module"), __import__(base.__module__, fromlist=["_"])
    monkeypatch.delattr(trainer_module, trainer.__name__)
    monkeypatch.setattr(trainer_module, "RenamedTrainer", trainer, raising=False)
    monkeypatch.delattr(base_module, base.__name__)
    monkeypatch.setattr(base_module, "RenamedBaseTrainer", base, raising=False)
    assert roles.find("tf_trainer") is trainer and roles.find("base_trainer") is base
    for name in ("keras.symbolic_build", "keras.trainer_loops", "keras.reduce_per_replica", "keras.model_internals"):
        assert surface.absence(name) is None or surface.absence(name).expected, (name, surface.absence(name))


def test_a_role_nothing_plays_turns_its_touches_off_with_a_warning(tensorflow_imported, monkeypatch, fresh_state):
    """On main before roles, Keras 3.16's renamed trainer read as 'no symbolic build here' (not
    needed, silent) and its first-batch bug came back: a role that nothing plays is never an
    expected absence."""
    from autodist.upstream import roles

    trainer = roles.find("tf_trainer")
    monkeypatch.delattr(roles.find("tf_trainer_module"), trainer.__name__)
    with pytest.raises(roles.RoleMissing, match="trainer class"):
        roles.find("tf_trainer")
    missing = surface.absence("keras.symbolic_build")
    assert missing is not None and not missing.expected, missing
    with pytest.warns(AutodistWarning, match=r"keras\.trainer_loops is off: TensorFlow [\d.\w-]+ / Keras [\d.\w]+"):
        assert surface.available("keras.trainer_loops") is False


def test_a_changed_signature_turns_its_touch_off(tensorflow_imported, monkeypatch, fresh_state):
    """A patch calls the original with the parameters it names: a release that changes them turns
    the touch off, naming the signature found."""
    from autodist.upstream import roles

    def reduce_per_replica(values, reduction, strategy):  # the order changed
        return values

    monkeypatch.setattr(roles.find("tf_trainer_module"), "reduce_per_replica", reduce_per_replica)
    missing = surface.absence("keras.reduce_per_replica")
    assert missing is not None and not missing.expected
    assert "reduce_per_replica(values, reduction, strategy), not (values, strategy, reduction)" in missing.what


@pytest.fixture(scope="module")
def probes_off(processes):
    procs = {
        "hooks_off": start_scenario("support_matrix.py", "hooks_off", AUTODIST_CPU_DEVICES="2"),
        "slurm_off": start_scenario(
            "support_matrix.py", "slurm_off", SLURM_PROCID="0", SLURM_STEP_NODELIST="node[1-2]", SLURM_STEP_TASKS_PER_NODE="1"
        ),
    }
    return {case: scenario_result(proc, timeout=240) for case, proc in procs.items()}


def test_activation_hooks_off_a_warning_and_a_mirrored_fit_still_trains(probes_off):
    result = probes_off["hooks_off"]
    named = [w for w in result["warnings"] if "tf.activation_hooks is off" in w]
    assert len(named) == 1, result["warnings"]
    assert "StrategyBase.__deepcopy__" in named[0] and "nothing is made current at import" in named[0]
    assert (result["plan"], result["replicas"], result["epochs"]) == ("mirrored", 2, 1)
    assert result["states"]["tf.activation_hooks"] == "off"
    assert any("moved into" in w or "into the strategy" in w for w in result["warnings"]), result["warnings"]


def test_slurm_hostlist_off_a_warning_and_the_process_trains_alone(probes_off):
    result = probes_off["slurm_off"]
    assert sum("tf.slurm_hostlist is off" in w for w in result["warnings"]) == 1, result["warnings"]
    assert (result["plan"], result["epochs"]) == ("default", 1)


# --- the failures of older pairs (each fails on the main of 2026-11-26 with its pair) -------------------


@pytest.fixture(scope="module")
def older_pairs(processes):
    procs = {
        "replicated": start_scenario("support_matrix.py", "replicated", AUTODIST_CPU_DEVICES="2"),
        "short_epochs": start_scenario("support_matrix.py", "short_epochs"),
        "import_warning": start_scenario("support_matrix.py", "import_warning", AUTODIST_STRATEGY="mirored"),
        "models": start_scenario("support_matrix.py", "models", AUTODIST_CPU_DEVICES="2"),
        "uneven_batches": start_scenario("support_matrix.py", "uneven_batches", AUTODIST_CPU_DEVICES="4"),
        "metric_variable": start_scenario("support_matrix.py", "metric_variable", AUTODIST_CPU_DEVICES="2"),
        "central_storage": start_scenario(
            "support_matrix.py", "central_storage", AUTODIST_CPU_DEVICES="2", AUTODIST_STRATEGY="central_storage"
        ),
    }
    return {case: scenario_result(proc, timeout=240) for case, proc in procs.items()}


def test_replicated_fit_gives_one_devices_numbers_on_this_pair(older_pairs, report):
    """Keras 3.3.3: AttributeError '_maybe_symbolic_build' on main; with the workarounds off, a
    metric counted 495 of 990 samples."""
    result = older_pairs["replicated"]
    assert (result["plan"], result["replicas"]) == ("mirrored", 2)
    assert result["counted"] == [990.0, 990.0], result
    assert result["history_gap"] <= 1e-5 and result["weights_gap"] <= 1e-5 and result["evaluate_gap"] <= 1e-5, result
    report(f"support matrix, TF {result['tensorflow']} + Keras {result['keras']}: mirrored on 2 replicas counts "
           f"{result['counted'][-1]:.0f} of 990 samples; History, weights, evaluate within "
           f"{max(result['history_gap'], result['weights_gap'], result['evaluate_gap']):.1e} of one device")


def test_uneven_first_batches_on_4_replicas_give_one_devices_numbers_on_this_pair(older_pairs, report):
    """Keras 3.16 (keras-nightly 3.16.0.dev2026102704) renamed the trainer autodist patches: on main
    of 2026-12-06 its touches were off there, and validation data whose first batch splits unevenly
    over 4 replicas (or evaluate on 30 samples) raised 'AddN must have the same size and shape'."""
    result = older_pairs["uneven_batches"]
    assert result["replicas"] == 4, result
    assert result["history_gap"] <= 1e-5 and result["evaluate_gap"] <= 1e-5, result
    report(f"support matrix, TF {result['tensorflow']} + Keras {result['keras']}: 4 replicas, uneven first batches: History "
           f"and evaluate within {max(result['history_gap'], result['evaluate_gap']):.1e} of one device")


def test_every_history_value_is_a_number_on_this_pair(older_pairs, report):
    """Issue 58, on TF 2.17.1 + Keras 3.5.0 on main of 2026-12-06: a metric whose result() returns
    its own variable left a SyncOnReadVariable in History (a Keras variable over a MirroredVariable
    on 3.8.0), and float() of it raised TypeError; one device gives floats."""
    result = older_pairs["metric_variable"]
    assert result["replicas"] == 2 and result["types"] == ["float"], result
    # one device's numbers: 990 and 99 samples (Keras 3.15 reads the training count after validation: 99 and 99)
    assert {"seen": result["seen"], "val_seen": result["val_seen"]} == result["reference"], result
    report(f"support matrix, TF {result['tensorflow']} + Keras {result['keras']}: a metric returning its own variable, "
           f"2 replicas: History holds {result['types']}, {result['seen'][-1]:.0f} samples counted as on one device")


def test_central_storage_reports_one_devices_numbers_on_this_pair(older_pairs, report):
    """Keras 3.16 nightly on main of 2026-12-06: the variable touches were off (the backend's core
    moved), and CentralStorage's History read 0.042 from one device's (Keras's own
    assign(old + delta) on SUM-aggregated variables)."""
    from autodist.planning.strategy_types import strategy_type

    result = older_pairs["central_storage"]
    if strategy_type("central_storage").keras_refusal("keras3", result["keras"]) is not None:  # Keras 3.3-3.6
        assert "refused" in result and "pip install" in result["refused"], result
        return
    assert (result["plan"], result["replicas"]) == ("central_storage", 2), result
    assert result["counted"] == [990.0, 990.0], result
    assert result["history_gap"] <= 1e-5 and result["weights_gap"] <= 1e-5 and result["evaluate_gap"] <= 1e-5, result
    report(f"support matrix, TF {result['tensorflow']} + Keras {result['keras']}: central_storage on 2 replicas: History, "
           f"weights, evaluate within {max(result['history_gap'], result['weights_gap'], result['evaluate_gap']):.1e} of one device")


def test_short_epochs_train_with_autodists_defaults_on_this_pair(older_pairs):
    """Keras 3.3.3: autodist's steps_per_execution=8 failed on 5-step epochs on main (the
    scenario sets it: a fit this short keeps 1 by default)."""
    from autodist.planning.keras_compat import WORKAROUNDS

    result = older_pairs["short_epochs"]
    assert result["epochs"] == 2, result
    if WORKAROUNDS["short_epoch_steps_per_execution"].affects(result["keras"]):
        assert result["steps_per_execution"] is None and "keras-team/keras#20390" in result["reasons"][0], result
    else:
        assert result["steps_per_execution"] == 8, result


def test_a_bad_setting_at_import_is_said_with_model_fit_kept(older_pairs):
    result = older_pairs["import_warning"]
    assert result["epochs"] == 1 and result["strategy"] == "_DefaultDistributionStrategy"
    said = [line for line in result["log"].splitlines() if "AUTODIST_STRATEGY" in line]
    assert len(said) == 1, result["log"]
    assert "'mirored'" in said[0] and "mirrored" in said[0].replace("'mirored'", "") and "model.fit trains under" in said[0]


def test_batchnorm_dropout_and_an_own_train_step_train_on_2_replicas_as_warned(older_pairs, report):
    """On every pair: each model trains on 2 replicas; where it cannot match one device, the
    warning names the cause, and the gap is the size that cause gives; a train_step of the
    model's own matches one device, weights and History's loss."""

    result, models = older_pairs["models"], older_pairs["models"]["models"]
    assert all(model["replicas"] == 2 for model in models.values()), models
    bn, dropout, own = models["batchnorm"], models["dropout"], models["own_train_step"]
    assert any("BatchNormalization (" in w and "16 samples, not the global 32" in w for w in bn["warnings"]), bn["warnings"]
    assert bn["weights_gap"] < 0.1, bn  # each replica normalises its own 16 samples
    assert any("each replica from its own stream" in w for w in dropout["warnings"]), dropout["warnings"]  # replica_random_streams
    assert dropout["weights_gap"] < 0.1, dropout
    # own_step_replica_mean: the step of the model's own trains as one device, on every pair, unwarned
    assert not any("own train_step" in w for w in own["warnings"]), own["warnings"]
    assert own["weights_gap"] <= 1e-5 and own["loss"] == pytest.approx(own["reference_loss"], abs=1e-5), own
    report(f"support matrix, TF {result['tensorflow']} + Keras {result['keras']}: 2 replicas against one device, "
           + ", ".join(f"{kind} w {model['weights_gap']:.1g}" for kind, model in models.items()) + " (each warned with its cause)")


# --- versions ----------------------------------------------------------------------------------------


def test_older_releases_are_refused_with_the_fix():
    with pytest.raises(UnsupportedVersionError, match=r"TensorFlow 2\.15\.1 .*oldest supported is 2\.16\.0.*pip install"):
        check_versions({"tensorflow": "2.15.1", "keras": "3.3.3"})
    with pytest.raises(UnsupportedVersionError, match=r"Keras 3\.2\.1"):
        check_versions({"tensorflow": "2.16.2", "keras": "3.2.1"})


def test_newer_releases_get_a_note_naming_what_is_unverified():
    notes = check_versions({"tensorflow": "2.23.0", "keras": "3.17.0", "tf_keras": None})
    assert len(notes) == 2 and "TensorFlow 2.23.0 is newer" in notes[0] and "Keras 3.17.0" in notes[1]
    assert all("inspect" in note and "private code" in note for note in notes)


def test_every_measured_pair_is_supported_and_quiet():
    for tf_version, keras_version, tf_keras in MEASURED:
        assert check_versions({"tensorflow": tf_version, "keras": keras_version, "tf_keras": tf_keras}) == []
    assert version_tuple(MEASURED[0][0]) >= version_tuple(OLDEST["tensorflow"])
    assert MEASURED[-1][:2] == (NEWEST_TESTED["tensorflow"], NEWEST_TESTED["keras"])


def test_pyproject_declares_the_oldest_releases():
    import tomllib

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert f"tensorflow>={OLDEST['tensorflow'][:-2]}" in dependencies
    # Keras comes with TensorFlow (keras-nightly with a pre-release): a requirement of autodist's own
    # would put a released Keras over the nightly; an older Keras is refused at run time instead.
    assert not [d for d in dependencies if re.match(r"keras\b|keras-nightly", d)], dependencies
    with pytest.raises(UnsupportedVersionError, match=rf"Keras 3\.2\.1 \(the oldest supported is {re.escape(OLDEST['keras'])}\)"):
        check_versions({"tensorflow": "2.16.2", "keras": "3.2.1"})


def test_the_support_matrix_page_has_a_row_per_measured_pair():
    page = (ROOT / "docs" / "support-matrix.md").read_text(encoding="utf-8")
    for tf_version, keras_version, _ in MEASURED:
        assert re.search(rf"^\| {re.escape(tf_version)} \| {re.escape(keras_version)}", page, re.M), (tf_version, keras_version)


# --- still needed: private reads with no public equivalent --------------------------------------------


def test_still_needed_runtime_started(tensorflow_imported):
    import tensorflow as tf

    from autodist.upstream.tf_runtime import runtime_started

    assert not any(hasattr(tf.config.experimental, name) for name in ("is_runtime_initialized", "runtime_started")), (
        "TensorFlow publishes whether its runtime started: use it in autodist/upstream/tf_runtime.py"
    )
    tf.constant(1.0) + 1  # an op: the runtime runs now, and the touch says so
    assert runtime_started()


def test_still_needed_default_strategy(tensorflow_imported):
    import tensorflow as tf

    from autodist.upstream.tf_runtime import default_strategy

    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():  # the public getter answers the current strategy, not the default one
        assert tf.distribute.get_strategy() is strategy and default_strategy() is not strategy


def test_still_needed_coordination_service_deadline(tensorflow_imported):
    import inspect

    import tensorflow as tf

    parameters = inspect.signature(tf.distribute.MultiWorkerMirroredStrategy.__init__).parameters
    assert not any("timeout" in name for name in parameters), (
        "MultiWorkerMirroredStrategy takes a registration timeout now: pass it instead of configuring the service"
    )


def test_still_needed_coordination_key_value(tensorflow_imported):
    import tensorflow as tf

    assert not hasattr(tf.distribute.experimental, "coordination_key_value"), "a public key-value store exists now"
    assert surface.available("tf.coordination_key_value")


def test_still_needed_global_seed(tensorflow_imported):
    import tensorflow as tf

    from autodist.upstream.tf_runtime import global_seed

    assert not hasattr(tf.random, "get_global_seed"), "TensorFlow publishes the global seed now: read it there"
    tf.random.set_seed(5)
    first, second = tf.compat.v1.get_seed(None), tf.compat.v1.get_seed(None)
    assert first[1] != second[1], "the public getter advances the op seeds (the script's random stream)"
    assert global_seed() == 5


def test_still_needed_activation_hooks(tensorflow_imported):
    import tensorflow as tf

    assert not hasattr(tf.distribute, "register_strategy_creation_hook"), "TensorFlow has a public hook now"
    assert surface.available("tf.activation_hooks")


def test_still_needed_strategy_scopes(tensorflow_imported):
    """TensorFlow without autodist's wrapper: a strategy made current, then another's scope."""
    import tensorflow as tf

    current, other = tf.distribute.OneDeviceStrategy("/cpu:0"), tf.distribute.OneDeviceStrategy("/cpu:0")
    tf.distribute.experimental_set_strategy(current)
    try:
        with pytest.raises(RuntimeError, match="Mixing different tf.distribute.Strategy objects"):
            with other.scope():
                pass
    finally:
        tf.distribute.experimental_set_strategy(None)
    assert surface.available("tf.strategy_scopes")


def test_still_needed_saved_model_load(tensorflow_imported):
    import inspect

    import tensorflow as tf

    assert "strategy" not in inspect.signature(tf.saved_model.load).parameters, "load takes the strategy to load under now"


def test_still_needed_strategy_internals(tensorflow_imported):
    import tensorflow as tf

    from autodist.upstream.tf_runtime import strategy_workers

    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    assert not hasattr(strategy.extended, "num_workers"), "StrategyExtended publishes its workers now"
    assert strategy_workers(strategy) == 1


def test_still_needed_dataset_graph(tensorflow_imported):
    import tensorflow as tf

    from autodist.upstream.tf_data import describe_batching

    dataset = tf.data.Dataset.range(8).batch(4).map(lambda x: x)
    assert not hasattr(dataset, "batch_size") and not hasattr(dataset, "input_dataset"), "tf.data publishes its batching now"
    assert dataset.element_spec.shape.as_list() == [None]  # the public spec does not say 4
    assert describe_batching(dataset).size == 4


def test_still_needed_compile_metrics_reset(tensorflow_imported):
    """One list of metric objects compiled into a second model (the TensorFlow tutorial
    "Classification on imbalanced data"): without a strategy, fit's first epoch adds the state they
    hold (Keras resets compiled metrics only once built); under a strategy (3.5 and later: its
    symbolic build) it is reset first, and autodist says so. The day both count alike, drop the
    note (autodist/tensorflow/metric_state.py)."""
    import keras
    import numpy as np
    import tensorflow as tf

    from autodist.upstream.keras_trainer import builds_metrics_before_first_reset, metrics_holding_state

    x = np.linspace(-1.0, 1.0, 40, dtype="float32").reshape(20, 2)
    y = (x[:, :1] > 0).astype("float32")
    metrics = [keras.metrics.TruePositives(name="tp"), keras.metrics.FalseNegatives(name="fn")]

    def first_epochs(scope):
        with scope:
            model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, activation="sigmoid")])
            model.compile(keras.optimizers.SGD(0.0), "binary_crossentropy", metrics=metrics)  # predictions fixed
        held = metrics_holding_state(model) if builds_metrics_before_first_reset(model) else ()
        history = model.fit(x, y, batch_size=5, epochs=2, verbose=0).history
        return held, [history["tp"][0] + history["fn"][0], history["tp"][1] + history["fn"][1]]

    metrics[0].update_state([1.0] * 7, [1.0] * 7)  # an earlier use: 7 positives counted
    held, counts = first_epochs(tf.distribute.OneDeviceStrategy("/cpu:0").scope())
    if hasattr(keras.Model, "_maybe_symbolic_build"):
        assert held == (("tp", 7.0),)
        assert counts[0] == counts[1] == float(y.sum()), "a strategy's first epoch counts an earlier use now"
    else:  # Keras 3.3, 3.4: no symbolic build, a strategy counts it as one device does
        assert held == () and counts[0] == counts[1] + 7
    metrics[0].update_state([1.0] * 7, [1.0] * 7)
    none = tf.distribute.get_strategy()
    assert not tf.distribute.has_strategy()
    held, counts = first_epochs(none.scope())
    assert held == ()  # nothing differs from model.fit where it is model.fit
    assert counts[0] > counts[1], "model.fit's first epoch no longer counts an earlier use: drop the note"


def test_still_needed_dataset_serialization(tensorflow_imported):
    import tensorflow as tf

    assert not hasattr(tf.data.experimental, "to_graph"), "tf.data serialises a pipeline publicly now"
    assert surface.available("tf.dataset_serialization")


def test_still_needed_remote_value_status(tensorflow_imported):
    import tensorflow as tf

    assert not hasattr(tf.distribute.experimental.coordinator.RemoteValue, "done"), "RemoteValue tells it is done now"


def test_still_needed_slurm_hostlist(tensorflow_imported):
    import tensorflow as tf

    assert not hasattr(tf.distribute.cluster_resolver, "expand_hostlist"), "the host-list parser is public now"


def test_still_needed_model_internals(tensorflow_imported):
    import keras

    inner = keras.Sequential([keras.Input((2,)), keras.layers.BatchNormalization()])
    outer = keras.Sequential([keras.Input((2,)), inner, keras.layers.Dense(1)])
    from autodist.upstream.keras_models import all_layers

    assert not any(isinstance(layer, keras.layers.BatchNormalization) for layer in outer.layers)
    assert any(isinstance(layer, keras.layers.BatchNormalization) for layer in all_layers(outer))


def test_still_needed_variable_relocation(tensorflow_imported, tmp_path):
    """Keras has no public way to move a built model's variables to another strategy, and its
    save/load (the other way to move one) cannot load a layer whose ``__init__`` takes a value
    without a ``get_config`` (keras.io's attention MIL classifier): relocation moves it in place."""
    import keras

    class Scaled(keras.layers.Layer):
        def __init__(self, units):
            super().__init__()
            self.units = units

        def build(self, shape):
            self.w = self.add_weight(shape=(shape[-1], self.units))

        def call(self, x):
            return x @ self.w

    model = keras.Sequential([keras.Input((3,)), Scaled(2)])
    model.save(tmp_path / "m.keras")
    with pytest.raises(Exception, match="deserializ|Scaled"):
        keras.models.load_model(tmp_path / "m.keras", custom_objects={"Scaled": Scaled})
    assert not any(hasattr(model, name) for name in ("move_to_strategy", "relocate")), "Keras moves models now"


def test_still_needed_variable_handle(tensorflow_imported):
    """TensorFlow still refuses a mirrored variable's handle outside the replica context with a
    ValueError that names neither the variable's owner nor the fix (what autodist names)."""
    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    tf.distribute.experimental_set_strategy(strategy)
    try:
        with strategy.scope():
            variable = tf.Variable(1.0)
        with pytest.raises(ValueError, match="not available outside the replica context") as caught:
            variable.handle
        assert "strategy.run(" not in str(caught.value), "TensorFlow names the fix now"
    finally:
        tf.distribute.experimental_set_strategy(None)
    assert surface.available("keras.variable_handle")


def test_still_needed_distributed_variable_handle(tensorflow_imported):
    """TensorFlow's own distributed variable (what tf_keras makes under a strategy) still refuses
    its handle outside the replica context with a ValueError that names no fix, and the touch
    finds the property it wraps."""
    import tensorflow as tf
    from tensorflow.python.distribute import values

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    tf.distribute.experimental_set_strategy(strategy)
    try:
        with strategy.scope():
            variable = tf.Variable(1.0)
        assert isinstance(variable, values.DistributedVariable)
        with pytest.raises(ValueError, match="not available outside the replica context") as caught:
            variable.handle
        assert "strategy.run(" not in str(caught.value), "TensorFlow names the fix now"
    finally:
        tf.distribute.experimental_set_strategy(None)
    assert isinstance(vars(values.DistributedVariable)["handle"], property)
    assert surface.available("tf.distributed_variable_handle")


def test_still_needed_tf_keras_loss_reduction(tensorflow_imported):
    """tf_keras still refuses a loss averaged over the batch under a strategy, outside fit, with a
    ValueError that asks only for another reduction (not for the step to run in each replica)."""
    import tensorflow as tf

    tf_keras = pytest.importorskip("tf_keras")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        with pytest.raises(ValueError, match="Reduction.SUM") as caught:
            tf_keras.losses.MeanSquaredError()(tf.ones((2, 1)), tf.zeros((2, 1)))
    assert "strategy.run(" not in str(caught.value), "tf_keras names the fix now"
    assert surface.available("tf_keras.loss_reduction")


def test_still_needed_callback_internals(tensorflow_imported):
    import keras

    callback = keras.callbacks.BackupAndRestore("/tmp/never-written")
    assert "backup_dir" not in __import__("inspect").signature(callback.on_train_begin).parameters
    assert not hasattr(callback, "set_backup_dir"), "BackupAndRestore moves its folder publicly now"


def test_still_needed_tf_keras_internals(tensorflow_imported):
    tf_keras = pytest.importorskip("tf_keras")
    assert not hasattr(tf_keras.callbacks.Callback, "supports_tf_logs"), "tf_keras publishes the tensor-logs flag now"


def test_still_needed_jax_backend_state(tensorflow_imported):
    jax = pytest.importorskip("jax")
    from autodist.upstream.jax_runtime import joined_jax_cluster

    assert not hasattr(jax, "backends_are_initialized"), "JAX publishes whether its backends started now"
    if hasattr(jax.distributed, "is_initialized"):  # the public answer is used where JAX has it
        assert joined_jax_cluster() == jax.distributed.is_initialized()


def test_still_needed_jax_variable_layout(tensorflow_imported):
    keras = pytest.importorskip("keras")
    assert not hasattr(keras.Variable, "set_layout"), "Keras variables take a layout publicly now"


def test_still_needed_seed_generators(tensorflow_imported):
    """Keras 3 lists a layer's SeedGenerators only privately: autodist reads them to find every
    layer that draws random numbers (a VAE's sampling layer, a GAN's noise)."""
    import keras

    dropout = keras.layers.Dropout(0.5)
    assert dropout._seed_generators, "Keras no longer keeps a layer's SeedGenerators in _seed_generators"
    assert not hasattr(dropout, "seed_generators"), "Keras lists a layer's SeedGenerators publicly now: read that"


def test_still_needed_script_variables(tensorflow_imported):
    """TensorFlow without autodist's creator: under a strategy made current, the script's own
    tf.Variable is the strategy's, and a tape cannot take its gradient outside a replica."""
    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    tf.distribute.experimental_set_strategy(strategy)
    try:
        variable = tf.Variable(1.0)
        assert type(variable).__name__ == "MirroredVariable", "a strategy made current keeps raw variables plain now"
        with tf.GradientTape() as tape:
            y = variable * 2
        with pytest.raises(ValueError, match="not available outside the replica context"):
            tape.gradient(y, variable)
    finally:
        tf.distribute.experimental_set_strategy(None)
    assert surface.available("tf.script_variables")
