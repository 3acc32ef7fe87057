"""``strategy="tune"``: candidates timed for real over 2 logical CPUs, the pick trains the caller's
own model as that plan would, and the decision is cached privately and shown by ``inspect``."""

from __future__ import annotations

import json
import re

import pytest

from autodist.detection.hardware import HardwareSnapshot
from autodist.planning.tune_rules import Projection, Timing, candidates, next_cost, pick, untimed_reason, within_budget
from tests.conftest import SCENARIOS, make_snapshot, run_python, subprocess_env


def test_candidates_cover_each_cross_device_op_and_put_the_likely_winner_first():
    cpu = [c.name for c in candidates(HardwareSnapshot.cpu_only(num_cpu_devices=2), default_steps=None)]
    assert cpu[0] == "default" and "central_storage" in cpu
    assert {"mirrored (collective)", "mirrored (reduction_to_one_device)", "mirrored (hierarchical_copy)"} <= set(cpu)
    gpus = [c.name for c in candidates(make_snapshot(num_gpus=4), default_steps=8)]
    assert gpus[0] == "mirrored (nccl)" and "one_device, steps_per_execution=8" in gpus
    assert [c.name for c in candidates(HardwareSnapshot.cpu_only(), default_steps=None)] == ["default", "one_device"]


def test_budget_is_the_smaller_of_the_seconds_and_a_tenth_of_the_training():
    assert within_budget(1.0, 1.0, planned_seconds=20.0, budget=60.0)  # 2 s of 2 s
    assert not within_budget(1.0, 1.1, planned_seconds=20.0, budget=60.0)
    assert not within_budget(50.0, 11.0, planned_seconds=10_000.0, budget=60.0)
    # a candidate's cost: the dearest per replica so far, times its replicas
    assert next_cost([(0.8, 1), (3.0, 2)], replicas=4) == pytest.approx(6.0)
    assert pick([Timing("a", 10.0), Timing("b", error="boom"), Timing("c", 30.0)]).name == "c"
    assert pick([Timing("b", error="boom")]) is None


def test_a_training_too_short_to_time_one_candidate_within_its_share_is_not_timed():
    # the decision benchmark's MLP (268k multiply-adds per sample), 4 epochs of 32 steps, at
    # about the rate measured here: 0.7 s of training cannot pay for a 0.5 s candidate
    short = Projection(steps=128, multiply_adds=268_000, batch=256, flops_per_second=80e9)
    reason = untimed_reason(short, budget=60.0)
    assert "about 0.66 s" in reason and "128 steps" in reason and "268,000 multiply-adds" in reason and "0.07 s" in reason
    assert untimed_reason(Projection(128 * 100, 268_000, 256, 80e9), budget=60.0) == ""  # 66 s: 6.6 s to spend
    assert untimed_reason(Projection(128 * 100, 268_000, 256, 80e9), budget=0.5) != ""  # the budget binds too
    # a tiny model: each step still costs a millisecond
    assert "1,000 steps of about 1.0 ms" in untimed_reason(Projection(1000, 10, 32, 80e9), budget=60.0)
    assert untimed_reason(Projection(100_000, 10, 32, 80e9), budget=60.0) == ""


BUILDERS = """
import sys
from autodist.tensorflow.tuning import _code_digest

def mlp():
    return [width for width in (64, 10)]

def cnn():
    return [filters for filters in (32, 64)]

print(_code_digest(mlp), _code_digest(lambda: mlp()), _code_digest(lambda: cnn()))
"""


def test_a_builders_cache_key_is_the_same_in_every_process_and_follows_what_it_calls(processes, tmp_path):
    # a list comprehension is a code object among the builder's constants: its repr holds a memory address
    script = tmp_path / "builders.py"
    script.write_text(BUILDERS)
    first, second = (run_python([str(script)], env=subprocess_env(), timeout=60).stdout.split() for _ in range(2))
    assert first == second and len(first) == 3, (first, second)
    assert first[1] != first[2]  # lambda: mlp() and lambda: cnn() are different models


def test_the_cache_reads_only_a_private_folder_and_skips_records_of_another_format(tmp_path, monkeypatch):
    import os
    import tempfile

    from autodist.jobs import tune_cache

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert tune_cache.cached_decisions() == [] and not (tmp_path / f"autodist-{os.getuid()}").exists()  # inspect creates nothing
    folder = tmp_path / f"autodist-{os.getuid()}" / "tune"
    folder.mkdir(parents=True)
    (folder / "a.json").write_text(json.dumps({"choice": "default", "timings": [{"name": "default", "rate": 1.0}]}))
    (folder / "b.json").write_text(json.dumps({"choice": "default", "timings": [{"name": "default", "samples_per_second": 1.0}]}))
    os.chmod(folder.parent, 0o755)  # readable by others: not trusted
    assert tune_cache.cached_decisions() == []
    os.chmod(folder.parent, 0o700)
    assert [r["timings"][0]["samples_per_second"] for r in tune_cache.cached_decisions()] == [1.0]  # a.json: another format


def test_multiply_adds_count_lookups_as_nothing_and_walk_into_nested_models(tensorflow_imported):
    import keras

    from autodist.detection.model_info import multiply_adds

    inner = keras.Sequential([keras.Input((10, 8)), keras.layers.Flatten(), keras.layers.Dense(4)])
    model = keras.Sequential([keras.Input((10,)), keras.layers.Embedding(1000, 8), inner])
    assert multiply_adds(model) == 80 * 4 + 4  # the 8,000 embedding weights are looked up, not multiplied
    recurrent = keras.Sequential([keras.Input((10, 8)), keras.layers.LSTM(4), keras.layers.Dense(2)])
    assert multiply_adds(recurrent) is None  # its 10 time steps are not in its output's size: no estimate


def test_tune_times_every_candidate_trains_like_the_pick_and_caches_it(processes, tmp_path, report):
    # AUTODIST_STEPS_PER_EXECUTION=8: these fits are short (a short fit keeps 1), and the candidate
    # "default, steps_per_execution=8" is one this test times
    # AUTODIST_TUNE_BUDGET=600: every candidate is timed however slowly a loaded machine runs the
    # first (the 60 s default would stop after fewer); the scenario's own bound is run_python's
    env = subprocess_env(AUTODIST_CPU_DEVICES="2", TMPDIR=str(tmp_path), AUTODIST_STEPS_PER_EXECUTION="8", AUTODIST_TUNE_BUDGET="600")
    proc = run_python([str(SCENARIOS / "tuning.py")], env=env, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.split("RESULT ", 1)[1])
    reason = result["reason"]
    for name in result["candidates"]:  # every candidate with its samples/s, or its error
        assert f"{name} " in reason, (name, reason)
    assert reason.count("samples/s") >= 5 and "(picked)" in reason
    # the caller's model trained, as under the picked plan forced (tuning trained copies only)
    assert result["moved_from_start"] > 1e-3
    assert result["weight_difference"] < 1e-5, result
    assert result["loss"][0] == pytest.approx(result["loss"][1], rel=1e-5)
    assert "cached decision" in result["second_reason"]
    assert result["dataset_reason"].count("samples/s") >= 5 and "cached" not in result["dataset_reason"]
    assert len(result["cache_files"]) == 2 and result["cache_mode"] == "0o600"
    # with the share as shipped, 16 steps are too short to time a candidate: default, not cached
    assert result["short"]["strategy"] == "default" and "not timed: the planned training is about" in result["short"]["reason"]
    assert result["short"]["loss"] > 0
    shown = run_python(["-m", "autodist", "inspect", "--fast"], env=env, timeout=60)
    assert "tuned decisions (strategy='tune', cached; 2)" in shown.stdout, shown.stdout[-2000:]
    report(f"tune, 2 logical CPUs, MLP 32-64-10: {reason}")


def test_communication_projection_and_its_warning_give_the_numbers():
    from autodist.planning.tune_rules import communication_note, projected_speedup

    assert projected_speedup(2, 40.0, 2.0) == pytest.approx(80 / 42)
    reason, warning = communication_note(2, 256, 6_400_000, compute_ms=11.0, all_reduce_ms=15.0)
    assert "projected 0.85x" in reason and "6.4 MB" in reason
    assert "0.85x" in warning and "larger batch per worker" in warning and "fewer workers" in warning
    assert communication_note(2, 256, 80_000, compute_ms=40.0, all_reduce_ms=2.0)[1] == ""


def test_communication_check_warns_for_the_mlp_and_not_the_cnn_on_2_loopback_workers(processes, report):
    """Both measured on 2 real workers on 127.0.0.1, before training: the MLP's 6.3 MB all-reduce
    outweighs its compute at 32 samples per worker; the CNN's 0.1 MB does not at 128. Each
    warning agrees with the projection its reason gives."""
    proc = run_python(
        ["-m", "autodist", "launch", "--workers", "2", "--timeout", "200", "--grace", "3", str(SCENARIOS / "communication.py")],
        env=subprocess_env(), timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.split("RESULT ", 1)[1].splitlines()[0])
    assert result["mlp"]["warnings"] and result["mlp"]["reason"], result
    assert not result["cnn"]["warnings"] and result["cnn"]["reason"], result
    from autodist.planning.tune_rules import MIN_SPEEDUP

    # each model's warning as its reason's projection says (printed to 2 places: within 0.01 of the line)
    projected = {name: float(re.search(r"projected ([0-9.]+)x", found["reason"][0]).group(1)) for name, found in result.items()}
    assert projected["mlp"] <= MIN_SPEEDUP and projected["cnn"] >= MIN_SPEEDUP - 0.01, projected
    report(f"communication check, 2 loopback workers: MLP: {result['mlp']['reason'][0]}")
    report(f"communication check, 2 loopback workers: CNN: {result['cnn']['reason'][0]}")


def test_tune_keeps_the_rule_plan_on_a_cluster_and_says_it_plans_as_auto_without_a_model():
    from autodist.planning.planner import plan
    from autodist.tensorflow.tuning import tuned_plan

    cluster = make_snapshot(tf_config={"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "task": {"type": "worker", "index": 1}})
    auto = plan(cluster, strategy="tune", batch_size=64)
    assert auto.strategy.value == "multi_worker_mirrored" and "plans as 'auto' here" in auto.reasons[0]
    kept = tuned_plan(cluster, auto, lambda kind: pytest.fail("nothing to time on a cluster"), None, None, None, 1, {})
    assert kept.strategy == auto.strategy and "every worker takes the same plan" in kept.reasons[0]
