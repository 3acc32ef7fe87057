"""The differential harness's model axis: plain ``model.fit`` against ``autodist.fit`` with its
defaults (no callbacks, so ``steps_per_execution=8`` under the default strategy), for a Dense
control, a CNN with BatchNormalization, Dropout, an LSTM, dict inputs through StringLookup and
an Embedding, a subclassed model with its own ``train_step``, and two weighted outputs.

tests/scenarios/model_axis.py runs every model twice in one process per strategy. Each cell
(model x strategy) is ``equal`` (weights, History, evaluate and predict on a held-out batch
within ``TOLERANCE``, the same History keys and optimizer iterations), ``warned`` (they differ,
within ``WARNED_BOUNDS``, and an AutodistWarning names the cause: BatchNormalization's
per-replica batch or Dropout's one mask for every replica), or an expected AutodistError. Anything
else fails with the measured sizes. The table is printed in the run's figures section.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tests.conftest import SCENARIOS, run_python, scenario_result, start_scenario, subprocess_env

pytestmark = pytest.mark.tensorflow

#: Largest gap (absolute) between the arms that counts as equal: float32 sums in another order.
TOLERANCE = 1e-4
#: Largest gap allowed where a warning names the cause (7 steps x 2 epochs of SGD(0.1) on models
#: whose numbers are of order 1: measured 0.035-0.045 on weights, 0.018-0.071 on History,
#: 0.005-0.031 on evaluate and 0.14-0.18 on the logits under mirrored, central_storage and 2
#: workers; the bounds are about twice that).
WARNED_BOUNDS = {"weights": 0.1, "history": 0.15, "evaluate": 0.07, "predict": 0.4}
#: Words of the warnings (autodist.planning.global_batch.split_notes) that name why a model cannot train
#: as on one device over several replicas.
CAUSES = ("BatchNormalization (", "draw the same random mask")
#: The warning for a train_step of the model's own (autodist.planning.global_batch.SCALED_LOSS): the weights,
#: evaluate and predict equal model.fit's, History's loss is 1/N of it, and that is all.
SCALED_LOSS = re.compile(r"own train_step runs on (\d+) replicas")
STRATEGIES = {
    "default": {},
    "mirrored (2 logical CPUs)": {"AUTODIST_CPU_DEVICES": "2"},
    "central_storage (2 logical CPUs)": {"AUTODIST_CPU_DEVICES": "2", "AUTODIST_STRATEGY": "central_storage"},
}
MULTI_WORKER = "multi_worker_mirrored (2 workers)"
ALL = [*STRATEGIES, MULTI_WORKER]
#: (model, strategy): the AutodistError a strategy must raise for a model it cannot train.
EXPECTED_ERRORS: dict[tuple[str, str], str] = {}
_REPORTED: list[bool] = []
ANSI = r"\x1b\[[0-9;]*m"  # Keras bolds parts of its error messages


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every strategy's run of tests/scenarios/model_axis.py: the single-host ones side by side
    (each in its own process), then two launched workers, whose weights must agree."""
    started = {name: start_scenario("model_axis.py", **env) for name, env in STRATEGIES.items()}
    found = {name: scenario_result(proc, timeout=900) for name, proc in started.items()}
    out = tmp_path_factory.mktemp("model_axis")
    proc = run_python(
        ["-m", "autodist", "launch", "--workers", "2", "--timeout", "560", "--grace", "3", str(SCENARIOS / "model_axis.py"), str(out)],
        env=subprocess_env(),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-5000:]
    chief, other = (json.loads((out / f"worker-{i}.json").read_text()) for i in (0, 1))
    for model, arms in _models(chief).items():
        if "weights" in arms["autodist"]:
            gap = _gap(arms["autodist"]["weights"], other[model]["autodist"]["weights"])
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
    """The largest absolute difference between two lists of arrays (``inf`` if shapes differ)."""
    if len(a) != len(b):
        return float("inf")
    gaps = [float(np.max(np.abs(np.array(x) - np.array(y)), initial=0.0)) if np.shape(x) == np.shape(y) else float("inf") for x, y in zip(a, b)]
    return max(gaps, default=0.0)


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
        "evaluate": _gap([got["evaluate"].get(k, np.inf) for k in reference["evaluate"]], list(reference["evaluate"].values())),
        "predict": _gap(got["predict"], reference["predict"]),
    }
    return gaps, problems


def judge(arms: dict, model: str, strategy: str) -> tuple[str, bool]:
    """The cell's verdict and whether it is allowed: ``equal``, ``warned: <sizes>``, the
    AutodistError's class, or what differs (with the measured sizes)."""
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
    scaled = [int(m.group(1)) for m in map(SCALED_LOSS.search, got["warnings"]) if m]
    if scaled:
        return _judge_scaled_loss(reference, got, scaled[0], spe)
    named = [cause for cause in CAUSES if any(cause in warning for warning in got["warnings"])]
    within = all(gaps[key] <= bound for key, bound in WARNED_BOUNDS.items())
    if named and within:
        return f"warned: {sizes} ({' / '.join(c.strip(' (') for c in named)}; spe {spe})", True
    said = f"warned ({', '.join(named)}) but over {WARNED_BOUNDS}" if named else "no warning names a cause"
    return f"differs: {sizes}; {said} (spe {spe})", False


def _judge_scaled_loss(reference: dict, got: dict, replicas: int, spe: str) -> tuple[str, bool]:
    """A train_step of the model's own, warned: History's loss times the replicas, and every
    other figure, equal model.fit's."""
    history = {key: [v * replicas for v in values] if key == "loss" else values for key, values in got["history"].items()}
    gaps, _ = measure(reference, {**got, "history": history})
    sizes = ", ".join(f"{key} {value:.2g}" for key, value in gaps.items())
    if all(value <= TOLERANCE for value in gaps.values()):
        return f"warned: History loss 1/{replicas} of model.fit's, the rest equal (w {gaps['weights']:.1g}; spe {spe})", True
    return f"differs beyond the scaled loss: {sizes} (spe {spe})", False


@pytest.mark.parametrize("strategy", ALL)
def test_autodist_fit_with_its_defaults_matches_model_fit_for_every_model(strategy, results, verdicts, report):
    report_table(verdicts, report)
    wrong = {model: verdict for model, (verdict, ok) in verdicts[strategy].items() if not ok}
    assert not wrong, (strategy, results[strategy]["strategy"], wrong)


def test_the_default_strategy_compares_autodist_steps_per_execution(results):
    """The default strategy's autodist arm ran with steps_per_execution 8 (autodist's default for
    Keras 3: what makes this harness compare that path), the reference with 1, and the model has
    its own 1 back after fit."""
    assert results["default"]["strategy"] == "_DefaultDistributionStrategy"
    control = results["default"]["dense (control)"]["autodist"]
    assert control.get("spe_in_fit") == [8] and control["spe_plan"] == 8, {k: control.get(k) for k in ("spe_in_fit", "spe_plan", "error", "crash")}
    for model, arms in _models(results["default"]).items():
        assert arms["reference"].get("spe_in_fit") == [1], (model, arms["reference"])
        got = arms["autodist"]
        assert "spe_in_fit" not in got or got["spe_in_fit"] == [got["spe_plan"] or 1], (model, got["spe_in_fit"], got["spe_plan"])
        assert got.get("spe_after", 1) == 1, (model, got["spe_after"])  # the model's own, given back
