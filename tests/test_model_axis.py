"""The differential harness's model axis: plain ``model.fit`` against ``autodist.fit`` with its
defaults (no callbacks, so ``steps_per_execution=8`` under the default strategy), for a Dense
control, a CNN with BatchNormalization, Dropout, an LSTM, dict inputs through StringLookup and
an Embedding, a subclassed model with its own ``train_step``, two weighted outputs, keras.io's
VAE (no ``call()``), the guide's GAN (its own ``compile``, two optimizers), augmentation layers,
a ``test_step`` of the model's own with sample weights, ``mixed_float16``, a frozen base model
(and the same fine-tuned after a re-compile), and FeatureSpace in the input pipeline.

tests/scenarios/model_axis.py runs every model three times in one process per strategy: on one
device, with autodist, and under the hand-built strategy of the same kind with plain
``model.fit`` (built as the TensorFlow guide builds it; none under the default strategy). Each
cell (model x strategy) is one of:

- ``equal``: weights, History, evaluate and predict on a held-out batch within ``TOLERANCE`` of
  one device's, the same History keys and optimizer iterations;
- ``= hand-built, warned``: within ``TOLERANCE`` of the hand-built strategy's, and an
  AutodistWarning names the cause (BatchNormalization's per-replica batch, 16-bit rounding);
- ``warned``: where there is no hand-built arm to match (or it fails), or where autodist departs
  from it by design (each replica's random draws from its own stream, where Keras draws one for
  every replica), within the named cause's ``WARNED_BOUNDS`` of one device's (predict's bound
  follows from the cause);
- an expected AutodistError.

Anything else is autodist's own difference and fails with the measured sizes. The table, with
the hand-built arm's own distance from one device, is printed in the run's figures section.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tests import doc_tables
from tests.conftest import SCENARIOS, finished, scenario_result, start_python, start_scenario, subprocess_env

pytestmark = [pytest.mark.differential, pytest.mark.usefixtures("processes")]  # the differential tier: python -m pytest -m differential

#: Largest gap (absolute) between the arms that counts as equal: float32 sums in another order.
TOLERANCE = 1e-4
#: Words of the warnings (autodist.planning.global_batch.split_notes) that name why a model cannot train
#: as on one device over several replicas.
CAUSES = ("BatchNormalization (", "each replica from its own stream", "The model computes in mixed_float16")
#: Causes whose numbers differ from the hand-built strategy's by design: autodist draws each
#: replica's random numbers from its own stream (replica_random_streams), where Keras draws one
#: mask for every replica. Judged against one device, within the cause's bounds.
APART_FROM_HAND_BUILT = ("each replica from its own stream",)
#: Largest gap allowed, per named cause, where no hand-built arm gives numbers to match (7 steps x
#: 2 epochs of SGD(0.1) on models whose numbers are of order 1). Weights, History and evaluate: the
#: hand-built arms measured 0.035-0.045, 0.018-0.071 and 0.005-0.031 under mirrored, central_storage
#: and 2 workers (docs/differential.md), the bounds about twice that. predict follows from the cause:
#: BatchNormalization and the random draws act in training only (predict runs the moving statistics
#: and no draw), so predict differs only through the weights: measured 0.14 (BatchNormalization;
#: 0.2 once fine-tuned, whose weights are past the weights bound) and, with each replica's own
#: random draws (replica_random_streams), 0.22 (Dropout) and 0.42 (augmentation) on the logits,
#: bounded at the cause's largest and a third more; their History, 0.12 (Dropout), likewise. mixed_float16
#: differs by 16-bit rounding alone: weights 2.4e-05 and predict 0.00098 (one float16 step at the
#: logits' size), bounded at four float16 steps (and the rest well under a percent).
WARNED_BOUNDS = {
    "BatchNormalization (": {"weights": 0.1, "history": 0.15, "evaluate": 0.07, "predict": 0.2},
    "each replica from its own stream": {"weights": 0.1, "history": 0.16, "evaluate": 0.07, "predict": 0.56},
    "The model computes in mixed_float16": {"weights": 1e-3, "history": 1e-2, "evaluate": 1e-2, "predict": 4e-3},
}
STRATEGIES = {
    # set, as its 14-step fits would keep 1 (a short fit): this harness compares autodist's 8
    "default": {"AUTODIST_STEPS_PER_EXECUTION": "8"},
    "mirrored (2 logical CPUs)": {"AUTODIST_CPU_DEVICES": "2"},
    "central_storage (2 logical CPUs)": {"AUTODIST_CPU_DEVICES": "2", "AUTODIST_STRATEGY": "central_storage"},
}
MULTI_WORKER = "multi_worker_mirrored (2 workers)"
ALL = [*STRATEGIES, MULTI_WORKER]
#: (model, strategy): the AutodistError a strategy must raise for a model it cannot train.
EXPECTED_ERRORS: dict[tuple[str, str], str] = {
    # Keras's LossScaleOptimizer cannot apply under CentralStorage (plain model.fit fails too)
    ("mixed_float16", "central_storage (2 logical CPUs)"): "StrategyUnavailableError",
}
_REPORTED: list[bool] = []
ANSI = r"\x1b\[[0-9;]*m"  # Keras bolds parts of its error messages


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every strategy's run of tests/scenarios/model_axis.py, all started at once (each in its own
    process; two launched workers spend much of their time waiting on each other), whose
    workers' weights must agree."""
    out = tmp_path_factory.mktemp("model_axis")
    launched = start_python(
        ["-m", "autodist", "launch", "--workers", "2", "--timeout", "840", "--grace", "3", str(SCENARIOS / "model_axis.py"), str(out)],
        env=subprocess_env(),
    )
    started = {name: start_scenario("model_axis.py", **env) for name, env in STRATEGIES.items()}
    found = {name: scenario_result(proc, timeout=900) for name, proc in started.items()}
    code, stdout, _ = finished(launched, timeout=900)
    assert code == 0, stdout[-5000:]
    chief, other = (json.loads((out / f"worker-{i}.json").read_text()) for i in (0, 1))
    assert sorted(_models(chief)) == sorted(_models(other)), "the workers ran different models"
    for model, arms in _models(chief).items():
        mine, theirs = arms["autodist"], other[model]["autodist"]
        if "weights" not in mine:  # refused, or crashed (judged below): the same on the other worker
            assert ("weights" not in theirs) and mine.get("error", "").split(":")[0] == theirs.get("error", "").split(":")[0], (model, mine, theirs)
            continue
        gap = _gap(mine["weights"], theirs["weights"])
        assert gap == 0.0, f"{model}: the workers' weights differ by {gap:.2g}"
    found[MULTI_WORKER] = chief
    return found


@pytest.fixture(scope="module")
def verdicts(results):
    """``{strategy: {model: (verdict, ok)}}``: every cell judged."""
    return {strategy: {model: judge(arms, model, strategy) for model, arms in _models(results[strategy]).items()} for strategy in ALL}


def report_table(table: dict, report) -> None:
    """The table in the figures section, once per run (every cell is judged before any test)."""
    if _REPORTED:
        return
    _REPORTED.append(True)
    models = list(table["default"])
    width = max(len(model) for model in models)
    report("model axis (model x strategy: equal / warned / AutodistError; w = max weight gap, spe = steps_per_execution in fit; ! = fails):")
    report(f"  {'':<{width}} | " + " | ".join(ALL))
    for model in models:
        cells = [("" if table[s][model][1] else "! ") + table[s][model][0] if model in table[s] else "-" for s in ALL]
        report(f"  {model:<{width}} | " + " | ".join(cells))


def _models(result: dict) -> dict:
    return {name: arms for name, arms in result.items() if isinstance(arms, dict)}


def _gap(a, b) -> float:
    """The largest absolute difference between two lists of arrays (``inf`` if shapes differ, or
    if there is nothing to compare: an empty result matches nothing)."""
    if not a or len(a) != len(b):
        return float("inf")
    gaps = [float(np.max(np.abs(np.array(x) - np.array(y)), initial=0.0)) if np.shape(x) == np.shape(y) else float("inf") for x, y in zip(a, b, strict=True)]
    return max(gaps)


def measure(reference: dict, got: dict) -> tuple[dict[str, float], list[str]]:
    """``(gaps, problems)``: the largest gap in weights, History, evaluate and predict, and what
    differs in kind (History keys or epochs, evaluate's keys, the optimizer's iterations)."""
    problems = []
    if sorted(got["history"]) != sorted(reference["history"]):
        problems.append(f"History keys {sorted(got['history'])} != {sorted(reference['history'])}")
    lengths = {key: (len(got["history"].get(key, [])), len(values)) for key, values in reference["history"].items()}
    if any(a != b for a, b in lengths.values()):
        problems.append(f"History epochs {lengths}")
    if sorted(got["evaluate"]) != sorted(reference["evaluate"]):
        problems.append(f"evaluate keys {sorted(got['evaluate'])} != {sorted(reference['evaluate'])}")
    if got["iterations"] != reference["iterations"]:
        problems.append(f"optimizer iterations {got['iterations']} != {reference['iterations']}")
    keys = sorted(set(got["history"]) & set(reference["history"]))
    gaps = {
        "weights": _gap(got["weights"], reference["weights"]),
        "history": _gap([got["history"][k] for k in keys], [reference["history"][k] for k in keys]),
    }
    # keras.io's VAE and the guide's GAN have no call(): the scenario neither evaluates nor predicts
    # them (empty on every arm); every other model's are measured
    if reference["evaluate"]:
        gaps["evaluate"] = _gap([got["evaluate"].get(k, np.inf) for k in reference["evaluate"]], list(reference["evaluate"].values()))
    if reference["predict"]:
        gaps["predict"] = _gap(got["predict"], reference["predict"])
    problems += [f"{key} ran where one device's did not" for key in ("evaluate", "predict") if got[key] and not reference[key]]
    return gaps, problems


def judge(arms: dict, model: str, strategy: str) -> tuple[str, bool]:
    """The cell's verdict and whether it is allowed: ``equal``, ``= hand-built, warned``,
    ``warned: <sizes>``, the AutodistError's class, or what differs (with the measured sizes).
    In brackets: the hand-built arm's own distance from one device."""
    verdict, ok = _verdict(arms, model, strategy)
    return f"{verdict} [{_hand_built(arms)}]", ok


def _hand_built(arms: dict) -> str:
    hand_built, reference = arms.get("hand_built"), arms["reference"]
    if hand_built is None:
        return "hand-built: -"
    if "crash" in hand_built or "error" in hand_built:
        failure = re.sub(ANSI, "", hand_built.get("crash") or hand_built.get("error"))
        return f"hand-built fails ({' '.join(failure.split())[:90]})"
    gaps, problems = measure(reference, hand_built)
    return "hand-built: " + ("; ".join(problems) + " " if problems else "") + ", ".join(f"{key[0]} {value:.2g}" for key, value in gaps.items())


def _verdict(arms: dict, model: str, strategy: str) -> tuple[str, bool]:
    reference, got = arms["reference"], arms["autodist"]
    if "crash" in reference:
        return f"the reference crashed: the harness is wrong ({reference['crash']})", False
    if "error" in got:
        name = got["error"].split(":")[0]
        return name, EXPECTED_ERRORS.get((model, strategy)) == name
    if "crash" in got:
        return f"crash ({' '.join(re.sub(ANSI, '', got['crash']).split())[:220]})", False
    gaps, problems = measure(reference, got)
    sizes = ", ".join(f"{key} {value:.2g}" for key, value in gaps.items())
    spe = ",".join(str(s) for s in got["spe_in_fit"]) or "?"
    if problems:
        return f"{'; '.join(problems)} ({sizes}; spe {spe})", False
    if all(value <= TOLERANCE for value in gaps.values()):
        return f"equal (w {gaps['weights']:.1g}, spe {spe})", True
    named = [cause for cause in CAUSES if any(cause in warning for warning in got["warnings"])]
    causes = " / ".join(c.strip(" (") for c in named)
    hand_built = arms.get("hand_built")
    if named and hand_built is not None and "weights" in hand_built:
        apart, kinds = measure(hand_built, got)
        if not kinds and all(value <= TOLERANCE for value in apart.values()):
            return f"= hand-built, warned: {causes} (w {gaps['weights']:.2g} from one device; spe {spe})", True
    bounds = {key: max(WARNED_BOUNDS[cause][key] for cause in named) for key in gaps} if named else {}  # the loosest named cause's
    within = bool(named) and all(gaps[key] <= bounds[key] for key in gaps)
    apart = bool(named) and all(cause in APART_FROM_HAND_BUILT for cause in named)
    if named and within and (hand_built is None or "weights" not in hand_built or apart):  # no hand-built numbers to match
        return f"warned: {sizes} ({causes}; spe {spe})", True
    said = f"warned ({', '.join(named)}) but not the hand-built arm's numbers (or over {bounds} without one)" if named else "no warning names a cause"
    return f"differs: {sizes}; {said} (spe {spe})", False


#: docs/differential.md's model-axis rows, by the harness's model names.
PAGE_ROWS = {
    "dense (control)": "Dense (control)",
    "cnn + batchnorm": "CNN + BatchNormalization",
    "dropout": "Dropout(0.5)",
    "lstm": "LSTM",
    "embedding, dict inputs, StringLookup": "dict inputs, `StringLookup` + `Embedding`",
    "subclassed train_step": "subclassed model, own `train_step` (the guide's)",
    "two outputs, loss_weights": "two outputs, `loss_weights`",
    "VAE: own train_step, no call()": "keras.io's VAE: no `call()`, own `train_step`, its own loss",
    "GAN: own compile, two optimizers": "the guide's GAN: own `compile`, two optimizers",
    "augmentation (RandomFlip, RandomRotation)": "augmentation (`RandomFlip`, `RandomRotation`)",
    "own test_step, sample_weight": "own `test_step`, `sample_weight` (the guide's)",
    "mixed_float16": "`mixed_float16`",
    "frozen base, training=False": "frozen base with BatchNormalization, called with `training=False`",
    "frozen base fine-tuned after re-compile": "the same base fine-tuned after a re-compile",
    "FeatureSpace in the input pipeline": "FeatureSpace in the input pipeline (`Dataset.map`)",
    "residual CNN, 1 sample (fewer than replicas)": "keras.io's residual CNN, 1 sample to fit, evaluate and predict",
}


def _number(text: str) -> float:
    """A gap as printed (``nan`` and ``inf`` included); anything else reads as NaN: not equal."""
    try:
        return float(text)
    except ValueError:
        return float("nan")


def measured_category(verdict: str) -> tuple[str, str]:
    """A measured cell's verdict and its hand-built bracket, in :mod:`tests.doc_tables`' words."""
    mine = doc_tables.category(verdict)
    inside = verdict.split(" [", 1)[1].rstrip("]")
    if inside.startswith("hand-built fails"):
        theirs = "fails"
    elif inside == "hand-built: -":
        theirs = "-"
    else:
        numbers = [_number(n) for n in re.findall(r"\b[whep] ([^,;\s\]]+)", inside)]  # nan and inf too: they differ
        theirs = "equal" if inside.startswith("hand-built: w ") and numbers and all(n <= TOLERANCE for n in numbers) else "differs"
    return mine, theirs


def test_the_page_shows_the_model_axis_as_measured(verdicts):
    """docs/differential.md's model-axis table: a row for each model, and in each cell the verdict
    measured here (equal, = hand-built and warned, or the error) and what the hand-built arm did
    (equal, differs, fails; where plain Keras's outcome varies by machine and run, one of those
    the page names)."""
    page = doc_tables.table("differential.md", "The model axis")
    assert sorted(page) == sorted(PAGE_ROWS.values()), sorted(set(page) ^ set(PAGE_ROWS.values()))
    wrong = []
    for model, row in PAGE_ROWS.items():
        mine_before = theirs_before = None
        for strategy, cell in zip(ALL, page[row], strict=True):
            mine, theirs = doc_tables.category(cell, mine_before), doc_tables.bracket(cell, theirs_before) if strategy != "default" else frozenset({"-"})
            measured = measured_category(verdicts[strategy][model][0])
            if mine != measured[0] or measured[1] not in theirs:
                wrong.append(f"{model} under {strategy}: the page says {mine} [{' or '.join(sorted(theirs))}], measured {measured}")
            mine_before, theirs_before = mine, theirs
    assert not wrong, wrong


@pytest.mark.parametrize("strategy", ALL)
def test_autodist_fit_with_its_defaults_matches_model_fit_for_every_model(strategy, results, verdicts, report):
    report_table(verdicts, report)
    wrong = {model: verdict for model, (verdict, ok) in verdicts[strategy].items() if not ok}
    assert not wrong, (strategy, results[strategy]["strategy"], wrong)


def test_the_default_strategy_compares_autodist_steps_per_execution(results):
    """The default strategy's autodist arm ran with steps_per_execution 8 (autodist's default for
    Keras 3 on fits of 128 steps or more, set here for 14: what makes this harness compare that
    path), the reference with 1, and the model has its own 1 back after fit."""
    assert results["default"]["strategy"] == "_DefaultDistributionStrategy"
    control = results["default"]["dense (control)"]["autodist"]
    assert control.get("spe_in_fit") == [8] and control["spe_plan"] == 8, {k: control.get(k) for k in ("spe_in_fit", "spe_plan", "error", "crash")}
    for model, arms in _models(results["default"]).items():
        assert arms["reference"].get("spe_in_fit") == [1], (model, arms["reference"])
        got = arms["autodist"]
        assert "spe_in_fit" in got and "spe_after" in got, (model, got)  # every model trains under the default strategy: recorded
        assert got["spe_in_fit"] == [got["spe_plan"] or 1], (model, got["spe_in_fit"], got["spe_plan"])
        assert got["spe_after"] == 1, (model, got["spe_after"])  # the model's own, given back


def test_no_warning_where_nothing_differs(results):
    """A frozen base model's BatchNormalization runs in inference mode: equal to one device, and
    not warned about (it was, before issue 35), under every strategy."""
    for strategy in ALL:
        got = results[strategy]["frozen base, training=False"]["autodist"]
        assert "weights" in got, (strategy, got)
        assert not [w for w in got["warnings"] if "BatchNormalization" in w], (strategy, got["warnings"])
