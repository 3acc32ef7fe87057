"""The edges that read values from outside, checked with generated input (Hypothesis): TF_CONFIG,
Vertex AI's CLUSTER_SPEC, SageMaker's and SLURM's variables, every ``AUTODIST_*`` setting, and a
``--snapshot`` file, each run on through the planner. Whatever comes in, the result is a plan whose
invariants hold (:mod:`tests.plan_invariants`) or an ``AutodistError``, never another exception.

The budget is fixed (``derandomize``: the same cases on every run); the count of cases goes to
the run's figures. The bad inputs a review found are pinned as examples.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from autodist.detection.cluster import detect_cluster
from autodist.errors import AutodistError
from autodist.planning.planner import plan
from autodist.settings import SETTINGS, grace_setting, keras_compat_mode, peer_timeout_setting, port_setting, steps_per_execution_setting, tune_budget_setting
from autodist.detection.snapshot import HardwareSnapshot
from tests.plan_invariants import check_plan_invariants

BUDGET = settings(max_examples=250, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
CASES = {"TF_CONFIG": 0, "CLUSTER_SPEC": 0, "SLURM": 0, "SM_HOSTS": 0, "settings": 0, "snapshot": 0}
OUTCOMES = {"accepted": 0, "AutodistError": 0}
ACCEPTED = dict.fromkeys(CASES, 0)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 70000), st.floats(allow_nan=True), st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)
hosts = st.sampled_from(["a", "b", "10.0.0.2", "[::1]", "", "host"])
ports = st.one_of(st.integers(-1, 70000).map(str), st.sampled_from(["2222", "notaport", "", "65535", "0"]))
addresses = st.one_of(st.builds(lambda h, p: f"{h}:{p}", hosts, ports), scalars)
task_types = st.one_of(st.sampled_from(["chief", "worker", "ps", "evaluator", "master", "workerpool0"]), scalars, st.lists(st.text(max_size=5), max_size=2))
clusters = st.dictionaries(task_types.filter(lambda t: isinstance(t, str)), st.one_of(st.lists(addresses, max_size=3), scalars), max_size=4)
tasks = st.one_of(st.fixed_dictionaries({"type": task_types, "index": st.one_of(st.integers(-2, 8), scalars)}), scalars)


def outcome(run, kind: str):
    """Run ``run()``; an AutodistError is a fine outcome, any other exception fails the test."""
    CASES[kind] += 1
    try:
        result = run()
    except AutodistError:
        OUTCOMES["AutodistError"] += 1
        return None
    OUTCOMES["accepted"] += 1
    ACCEPTED[kind] += 1
    return result


def plan_for(environ: dict[str, str]):
    """The cluster these variables describe, planned for (a plan needs no hardware here)."""
    cluster = detect_cluster(environ)
    snapshot = HardwareSnapshot.cpu_only(num_cpus=2, cluster=cluster)
    return checked(plan(snapshot, num_params=1000, environ={}, refuse_when_nothing_fits=False), snapshot)


def checked(the_plan, snapshot, given=None):
    """An accepted plan, once its invariants held (:mod:`tests.plan_invariants`): a positive
    footprint, a batch divisible by the replicas, a strategy that exists on the snapshot."""
    check_plan_invariants(the_plan, snapshot, given or {}, refuse_when_nothing_fits=False)
    return the_plan


@BUDGET
@given(config=st.one_of(st.fixed_dictionaries({"cluster": clusters, "task": tasks}), json_values))
@example(config={"cluster": {"worker": ["a:notaport", "b:99999"]}, "task": {"type": "worker", "index": 0}})
@example(config={"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 7}})
@example(config={"cluster": {"worker": ["a:²"]}, "task": {"type": "worker", "index": 0}})
@example(config={"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}, "rpc_layer": 5})
def test_tf_config_is_a_plan_or_an_autodist_error(config):
    outcome(lambda: plan_for({"TF_CONFIG": json.dumps(config)}), "TF_CONFIG")


pools = st.sampled_from(["workerpool0", "workerpool1", "workerpool2", "x"])
good_addresses = st.builds(lambda h, p: f"{h}:{p}", st.sampled_from(["a", "b", "10.0.0.2"]), st.integers(1, 65535))
pool_tasks = st.one_of(st.fixed_dictionaries({"type": pools, "index": st.integers(-1, 2)}), tasks)


@BUDGET
@given(spec=st.one_of(st.fixed_dictionaries({"cluster": st.dictionaries(pools, st.lists(st.one_of(good_addresses, addresses), min_size=1, max_size=2, unique=True), max_size=3), "task": pool_tasks}), json_values))
@example(spec={"cluster": {"workerpool0": ["a:1"]}, "task": {"type": ["workerpool0"], "index": 0}})
@example(spec={"cluster": {"workerpool0": ["a:2222"], "workerpool1": ["b:2222"]}, "task": {"type": "workerpool1", "index": 0}})
def test_cluster_spec_is_a_plan_or_an_autodist_error(spec):
    outcome(lambda: plan_for({"CLUSTER_SPEC": json.dumps(spec)}), "CLUSTER_SPEC")


@BUDGET
@given(
    nodes=st.sampled_from(["n1", "n[1-2]", "n[1-3],m1", "", "n[2-1]", "x[a-b]"]),
    per_node=st.sampled_from(["1", "2", "2(x2)", "1,3", "0", "", "x"]),
    rank=st.one_of(st.integers(-1, 7).map(str), st.sampled_from(["", "a"])),
    port_base=st.one_of(st.integers(-1, 70000).map(str), st.sampled_from(["", "x", "65535"])),
    sm_hosts=st.one_of(st.none(), json_values.map(json.dumps), st.lists(st.sampled_from(["algo-1", "algo-2", "algo-3"]), min_size=1, max_size=3, unique=True).map(json.dumps)),
    current=st.sampled_from(["algo-1", "algo-2", "x"]),
)
@example(nodes="n1", per_node="2", rank="0", port_base="65535", sm_hosts=None, current="algo-1")
@example(nodes="n1", per_node="1", rank="0", port_base="²", sm_hosts=None, current="algo-1")
@example(nodes="n[1-2]", per_node="1", rank="1", port_base="8888", sm_hosts=None, current="algo-1")
@example(nodes="n1", per_node="1", rank="0", port_base="2222", sm_hosts='["algo-1", "algo-2"]', current="algo-2")
def test_slurm_and_sagemaker_variables_are_a_plan_or_an_autodist_error(nodes, per_node, rank, port_base, sm_hosts, current):
    environ = {"SLURM_JOB_ID": "1", "SLURM_STEP_NODELIST": nodes, "SLURM_STEP_TASKS_PER_NODE": per_node, "SLURM_PROCID": rank, "AUTODIST_SLURM_PORT_BASE": port_base}
    kind = "SLURM"
    if sm_hosts is not None:
        environ, kind = {"SM_HOSTS": sm_hosts, "SM_CURRENT_HOST": current, "AUTODIST_PORT": port_base}, "SM_HOSTS"
    outcome(lambda: plan_for(environ), kind)


PARSERS = {
    "AUTODIST_PEER_TIMEOUT": lambda env: peer_timeout_setting(env),
    "AUTODIST_KERAS_COMPAT": keras_compat_mode,
    "AUTODIST_GRACE": grace_setting,
    "AUTODIST_STEPS_PER_EXECUTION": lambda env: steps_per_execution_setting(env, 8),
    "AUTODIST_TUNE_BUDGET": lambda env: tune_budget_setting(env, 60.0),
    "AUTODIST_PORT": lambda env: port_setting(env, "AUTODIST_PORT", 2222),
}


@BUDGET
@given(name=st.sampled_from(sorted(SETTINGS)), value=st.one_of(st.text(max_size=10), st.sampled_from(["inf", "nan", "-1", "0", "1e400", "disable", "off", "force", "²", "mirored", "2"])))
@example(name="AUTODIST_PEER_TIMEOUT", value="inf")
@example(name="AUTODIST_KERAS_COMPAT", value="disable")
@example(name="AUTODIST_PORT", value="²")
@example(name="AUTODIST_STRATEGY", value="mirored")
def test_every_setting_is_accepted_or_an_autodist_error(name, value):
    """Each setting through its parser, then the planner with it in the environment."""
    environ = {name: value}

    def run():
        if name in PARSERS:
            PARSERS[name](environ)
        snapshot = HardwareSnapshot.cpu_only(num_cpus=2)
        strategy = value.strip().lower() if name == "AUTODIST_STRATEGY" and value.strip() else "auto"
        return checked(plan(snapshot, num_params=1000, environ=environ, refuse_when_nothing_fits=False), snapshot, {"strategy": strategy})

    outcome(run, "settings")


SNAPSHOT = HardwareSnapshot.cpu_only(num_cpus=4, host_memory_bytes=2**34).to_dict()


@BUDGET
@given(changes=st.dictionaries(st.sampled_from(sorted(SNAPSHOT) + ["gpus", "tpu", "cluster", "jax_devices"]), json_values, max_size=3), num_params=st.one_of(st.none(), st.integers(0, 10**12)))
@example(changes={"gpus": "A100"}, num_params=None)
@example(changes={"cluster": {"source": "TF_CONFIG", "task_type": "worker"}}, num_params=None)
@example(changes={"jax_devices": [{"platform": 3}]}, num_params=None)
def test_a_snapshot_file_is_a_plan_or_an_autodist_error(changes, num_params):
    def run():
        snapshot = HardwareSnapshot.from_dict({**SNAPSHOT, **changes})
        return checked(plan(snapshot, num_params=num_params, environ={}, refuse_when_nothing_fits=False), snapshot)

    outcome(run, "snapshot")


def test_the_budget_ran_and_every_case_ended_in_a_plan_or_an_autodist_error(report):
    """Last in the module: the counts of the properties above (each would have failed on any
    other exception)."""
    if not all(CASES.values()):
        pytest.skip("run with the properties above")
    total = sum(CASES.values())
    assert total >= 5 * 250 and OUTCOMES["AutodistError"] > 0, (CASES, OUTCOMES)
    assert all(ACCEPTED.values()), f"a family never reached a plan, so its valid path went untested: {ACCEPTED}"
    report(
        f"validation (Hypothesis, derandomized): {total} generated cases ({', '.join(f'{k} {v}' for k, v in CASES.items())}): "
        f"{OUTCOMES['accepted']} accepted with every plan invariant held ({', '.join(f'{k} {v}' for k, v in ACCEPTED.items())}), {OUTCOMES['AutodistError']} AutodistError, 0 other exceptions"
    )


@pytest.mark.parametrize("blocker", ["another user's folder", "a folder others can read", "a link"])
def test_a_blocked_private_folder_falls_back_to_one_of_the_users_own_and_says_so(tmp_path, monkeypatch, caplog, blocker):
    """``<temp>/autodist-<uid>`` made first by someone else (or a link to elsewhere) never stops
    autodist, and is never used: the files go to a folder private to this user, named once."""
    import logging
    import os
    import stat
    import tempfile

    from autodist.jobs import private

    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(private, "_FALLBACK", {})
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    blocked = tmp_path / f"autodist-{os.getuid()}"
    if blocker == "a link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        blocked.symlink_to(tmp_path / "elsewhere")
    else:
        blocked.mkdir(mode=0o755)
        blocked.chmod(0o755)
        if blocker == "another user's folder":
            if os.getuid() != 0:
                pytest.skip("making a folder another user's needs root")
            os.chown(blocked, 65534, 65534)  # nobody
    with caplog.at_level(logging.WARNING, logger="autodist"):
        first, second = private.private_root(), private.private_root()
    assert first == second == str(tmp_path / "run" / "autodist"), first
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o700 and os.stat(first).st_uid == os.getuid()
    said = [r.getMessage() for r in caplog.records if "not a folder private to you" in r.getMessage()]
    assert len(said) == 1 and str(blocked) in said[0] and first in said[0], said
    assert not list(blocked.iterdir()) if blocker != "a link" else not list((tmp_path / "elsewhere").iterdir())
