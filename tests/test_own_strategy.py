"""Scripts that create their own strategy, adopted as users adopt autodist (issue 23).

The programs in tests/as_written/ are the guide's and the multi-worker tutorial's code as they
have it: their own ``MirroredStrategy()`` / ``MultiWorkerMirroredStrategy()``, their own
``with strategy.scope():``, ``model.fit``, ``evaluate``, ``save``. Each runs as it is (the
baseline) and in its adopted forms, written by :mod:`tests.adoption`: ``import autodist`` added
and ``x.fit(`` turned into ``autodist.fit(x, ``, or only the import added (``model.fit`` kept).
Single-host programs run on 2 logical CPUs, where autodist plans mirrored; multi-worker ones as
2 workers under ``python -m autodist launch``. Independent processes run side by side.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from tests.adoption import write_adopted
from tests.conftest import ROOT, finished, scenario_result, start_python, start_scenario, subprocess_env

AS_WRITTEN = ROOT / "tests" / "as_written"
TIMEOUT = 240

pytestmark = [pytest.mark.differential, pytest.mark.usefixtures("processes")]  # the differential tier: python -m pytest -m differential


def _flat(value: Any, where: str = "") -> list[tuple[str, float]]:
    """Every number of a nest, with where it is (dict keys and list places)."""
    if isinstance(value, dict):
        return [x for key in sorted(value) for x in _flat(value[key], f"{where}/{key}")]
    if isinstance(value, (list, tuple)):
        return [x for i, item in enumerate(value) for x in _flat(item, f"{where}[{i}]")]
    return [(where, float(value))]


def max_gap(a: Any, b: Any) -> float:
    """The largest difference between two nests of numbers of the same shape: the same keys and
    lengths, and at least one number (inf otherwise: an empty or missing result is no match)."""
    fa, fb = _flat(a), _flat(b)
    if not fa or [where for where, _ in fa] != [where for where, _ in fb]:
        return math.inf
    return max(abs(x - y) for (_, x), (_, y) in zip(fa, fb, strict=True))


def _collect(proc: Any, name: str, outdir: Path) -> dict[str, Any]:
    code, out, err = finished(proc, TIMEOUT)
    assert code == 0, f"{name} exited {code}:\nstdout:\n{out[-4000:]}\nstderr:\n{err[-8000:]}"
    found = sorted(outdir.glob("*.json"))
    assert found, f"{name} wrote no result in {outdir}\nstdout:\n{out[-3000:]}"
    results = {path.stem: json.loads(path.read_text()) for path in found}
    results["files"] = sorted(str(p.relative_to(outdir)) for p in outdir.rglob("*") if p.is_file() and p.suffix != ".json")
    return results


def _forms(program: str, scratch: Path) -> dict[str, Path]:
    """The program as written and its two adopted forms."""
    source = AS_WRITTEN / f"{program}.py"
    forms = {"as_written": source}
    for form, keep in (("adopted", False), ("adopted_keep_fit", True)):
        target = scratch / f"{program}_{form}.py"
        changed = write_adopted(source, target, keep_fit=keep)
        assert changed > 0 or keep
        forms[form] = target
    return forms


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("adopted")


def _env(**overrides: str) -> dict[str, str]:
    """The programs import their data helpers (tests/tutorials/synthetic_data.py) from PYTHONPATH."""
    return subprocess_env(PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'tests' / 'tutorials'}", **overrides)


@pytest.fixture(scope="module")
def guide(scratch, tmp_path_factory):
    """The guide's MirroredStrategy programs: as written (on 2 logical CPUs, no autodist), adopted,
    and adopted with model.fit kept (AUTODIST_CPU_DEVICES=2: autodist plans mirrored)."""
    forms = _forms("distributed_training_guide", scratch)
    procs = {}
    for form, path in forms.items():
        out = tmp_path_factory.mktemp(f"guide-{form}")
        if form == "as_written":
            args, env = [str(AS_WRITTEN / "run_plain.py"), "2", str(path), str(out)], _env()
        else:
            args, env = [str(path), str(out)], _env(AUTODIST_CPU_DEVICES="2")
        procs[form] = (start_python(args, env=env), out)
    return {form: _collect(proc, form, out)["single"] for form, (proc, out) in procs.items()}


NUMBERS = ("dataset_history", "dataset_evaluate", "arrays_history", "arrays_evaluate", "predict", "fit_weights", "reloaded_evaluate", "loop_losses", "loop_weights")


@pytest.mark.parametrize("form", ["adopted", "adopted_keep_fit"])
def test_guide_programs_train_the_same_numbers_adopted(guide, form, report):
    plain, adopted = guide["as_written"], guide[form]
    assert plain["num_replicas"] == adopted["num_replicas"] == 2
    gaps = {key: max_gap(plain[key], adopted[key]) for key in NUMBERS}
    assert all(gap <= 1e-6 for gap in gaps.values()), sorted(gaps.items())
    report(f"own strategy, guide programs {form} vs as written (2 logical CPUs): max difference {max(gaps.values()):.1e} over fit/evaluate/predict/save/custom loop")


def test_guide_program_plan_says_the_scripts_strategy_was_kept(guide):
    reasons = guide["adopted"]["plan"]
    assert any(r.startswith("kept the script's own MirroredStrategy (2 replica(s)") and "autodist would have chosen mirrored" in r for r in reasons), reasons


@pytest.fixture(scope="module")
def workers(scratch, tmp_path_factory):
    """The multi-worker tutorial adopted (Keras 3 and tf_keras) and the init-then-fit script,
    each as 2 workers under ``autodist launch``, two jobs at a time. (With ``model.fit`` kept,
    the tutorial's BackupAndRestore cell fails under Keras 3 as it does without autodist: one
    backup folder shared by the workers, FileExistsError; ``autodist.fit`` gives each its own.)"""
    forms = _forms("multi_worker_with_keras", scratch)
    jobs = {
        "keras3": ([str(forms["adopted"])], {}),
        "tf_keras": ([str(forms["adopted"])], {"TF_USE_LEGACY_KERAS": "1"}),
        "init_then_fit": ([str(ROOT / "tests" / "scenarios" / "init_then_fit.py")], {}),
    }
    results = {}
    for batch in (("keras3", "tf_keras"), ("init_then_fit",)):
        started = {}
        for name in batch:
            program, env = jobs[name]
            out = tmp_path_factory.mktemp(name)
            launch = ["-m", "autodist", "launch", "--workers", "2", "--timeout", str(TIMEOUT - 30), "--grace", "3", *program, str(out)]
            started[name] = (start_python(launch, env=_env(**env)), out)
        results.update({name: _collect(proc, name, out) for name, (proc, out) in started.items()})
    return results


@pytest.mark.parametrize("flavor", ["keras3", "tf_keras"])
def test_multi_worker_tutorial_as_written_runs_to_the_end_in_step(workers, flavor, report):
    """fit, save on every worker, CheckpointManager, load_model, BackupAndRestore: to the end,
    with identical weights and Histories on both workers."""
    job = workers[flavor]
    assert sorted(job) == ["files", "worker-0", "worker-1"]
    first, second = job["worker-0"], job["worker-1"]
    assert max_gap(first["weights"], second["weights"]) == 0.0
    assert max_gap(first["histories"], second["histories"]) == 0.0
    assert [len(h["loss"]) for h in first["histories"]] == [3, 2, 2, 3]
    assert first["histories"][0]["loss"][-1] < first["histories"][0]["loss"][0]
    # the chief's files only: the other worker's temporary folders were removed, as the tutorial does
    # after the job: the chief's files only (the tutorial removes the other worker's temporary
    # folders; BackupAndRestore removes its backup when fit ends)
    assert job["files"] == ["ckpt/checkpoint", "ckpt/ckpt-1.data-00000-of-00001", "ckpt/ckpt-1.index", "keras-model.keras"], job["files"]
    report(f"own strategy, multi-worker tutorial as written ({flavor}, 2 workers): 4 fits to the end, weights identical on both workers")


def test_multi_worker_tutorial_keeps_one_strategy_object(workers):
    reasons = workers["keras3"]["worker-0"]["plans"][0]
    assert any("the script's own MultiWorkerMirroredStrategy() is this strategy object" in r for r in reasons), reasons


def test_init_then_fit_and_the_scripts_own_strategy_share_one_object(workers):
    first, second = workers["init_then_fit"]["worker-0"], workers["init_then_fit"]["worker-1"]
    assert first["same_object"] and first["model_strategy_is_init"] and second["same_object"]
    assert first["plan"] == "multi_worker_mirrored"
    assert max_gap(first["weights"], second["weights"]) == 0.0
    assert first["loss"][-1] < first["loss"][0]


@pytest.fixture(scope="module")
def one_process():
    """tests/scenarios/own_strategy.py: the tf_keras fallback cases, and (Keras 3, activation on)
    the script's strategy after autodist's holds variables; side by side."""
    legacy = start_scenario("own_strategy.py", "legacy", TF_USE_LEGACY_KERAS="1", AUTODIST_ACTIVATE="0", AUTODIST_CPU_DEVICES="2")
    activated = start_scenario("own_strategy.py", "activated", AUTODIST_CPU_DEVICES="2")
    legacy_activated = start_scenario("own_strategy.py", "legacy_activated", TF_USE_LEGACY_KERAS="1", AUTODIST_CPU_DEVICES="2")
    return {
        **scenario_result(legacy, TIMEOUT),
        **scenario_result(activated, TIMEOUT),
        **scenario_result(legacy_activated, TIMEOUT),
    }


def test_legacy_optimizer_v2_is_copied_back_after_the_fallback(one_process):
    legacy = one_process["legacy"]
    assert legacy["optimizer"].startswith("tf_keras.") and ".legacy." in legacy["optimizer"]
    assert legacy["plan"] == "mirrored"
    assert legacy["iterations"] == 8  # 64 samples, batch 16, 2 epochs
    assert legacy["num_momentum_slots"] == 4
    assert legacy["weights_gap"] <= 1e-6 and legacy["momentum_gap"] <= 1e-6


def test_after_autodists_strategy_holds_variables_the_scripts_strategy_coexists(one_process):
    """autodist's strategy is current and holds a model; the script then deep-copies a strategy
    and creates its own: autodist's stays current, and the script's model trains under its own
    strategy (the same weights as model.fit), and evaluates, predicts and saves outside the
    block as without autodist."""
    got = one_process["activated"]
    assert got["copy_is_not_the_scripts"] and got["autodists_model_under_ours"] and got["still_current"]
    assert got["script_strategy_recorded"] is None
    assert got["kept_plan"] == "one_device" and got["kept_reason"].startswith("kept the script's own OneDeviceStrategy")
    assert got["kept_weights_gap"] <= 1e-6
    assert all(gap <= 1e-6 for gap in got["outside_the_block"].values()), got["outside_the_block"]


def test_a_model_of_the_scripts_strategy_saved_outside_its_scope_trains_under_it(one_process):
    """The TensorFlow multi-worker tutorial's order, in tf_keras: autodist's strategy holds a model
    when the script makes its own; the script's model, saved outside its scope, gets its metrics'
    variables there. They were autodist's, and the model's fit under its own strategy then failed
    with 'Mixing different tf.distribute.Strategy objects'; as without autodist, they are plain."""
    got = one_process["legacy_activated"]
    assert got["metrics"] == ["loss", "mae"] and got["plan"] == "mirrored" and got["first"], got


def test_a_strategy_named_in_fit_moves_a_model_of_the_scripts_strategy_with_a_warning(one_process):
    got = one_process["activated"]
    assert got["forced_plan"] == "mirrored"
    assert len(got["forced_warnings"]) == 1 and "script's own OneDeviceStrategy" in got["forced_warnings"][0]
    assert "strategy='mirrored'" in got["forced_warnings"][0]


def test_legacy_optimizer_v2_is_tuned(one_process):
    tuned = one_process["tuned"]
    assert tuned["iterations"] == 8
    assert len(tuned["reason"]) == 1 and ("timed in" in tuned["reason"][0] or "cached decision" in tuned["reason"][0]), tuned


def test_legacy_optimizer_v2_resumes_after_sigterm(tmp_path):
    """tf_keras, legacy SGD with momentum: SIGTERM at step 6 of 12 saves and exits 75; the next
    start restores the slots and ends with the uninterrupted run's weights."""
    env = {"TF_USE_LEGACY_KERAS": "1", "AUTODIST_ACTIVATE": "0"}
    reference = start_scenario("own_strategy.py", "resume", "reference", str(tmp_path / "reference"), **env)
    killed = start_scenario("own_strategy.py", "resume", "kill", str(tmp_path / "backup"), **env)
    code, out, err = finished(killed, TIMEOUT)
    assert code == 75, f"exit {code}\n{err[-4000:]}"
    resumed = scenario_result(start_scenario("own_strategy.py", "resume", "go", str(tmp_path / "backup"), **env), TIMEOUT)["resumed"]
    expected = scenario_result(reference, TIMEOUT)["resumed"]
    assert resumed["iterations"] == expected["iterations"] == 12
    assert max_gap(resumed["weights"], expected["weights"]) <= 1e-6


def test_a_scripts_strategy_on_devices_that_do_not_exist_is_refused_with_the_fix(one_process):
    missing = one_process["missing"]
    assert missing["error"] == "StrategyUnavailableError"
    assert "GPU:0" in missing["message"] and "does not have" in missing["message"]
    assert "MirroredStrategy() picks" in missing["message"]
