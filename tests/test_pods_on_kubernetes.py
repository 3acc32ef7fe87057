"""Kubernetes's pod side, run for real on this machine (issue 37): the pods of the manifests
``python -m autodist manifest`` writes, each a process with what Kubernetes would give it, in a
private network where the pods' host names resolve to loopback (tests/scenarios/kubernetes_pods.py,
started beside the suite by tests/conftest.py)."""

from __future__ import annotations


import math

from autodist.jobs.kubernetes import DEFAULT_USER
from tests.conftest import scenario_result


def test_the_pods_train_as_one_process_and_a_sigterm_restart_redoes_no_step(kubernetes_pods):
    """From the manifests the command line writes, each pod with what Kubernetes would give it and
    under the security context its manifest sets (a non-root user, a read-only root with its
    ``emptyDir`` volumes, no new privileges, no capabilities: tests/scenarios/kubernetes_pods.py):
    2 pods, one SIGTERMed after step 9 and restarted by the failure policy, 3 pods, and a JobSet
    of 2: every pod's weights equal, and equal to one process's; the restart trains on from the
    step saved. A chief, 2 workers and a parameter server: the chief trains every step, the
    others end when it is gone. The run starts at the first test that mostly waits (the fixture
    mostly_waits: the waiting tests of tests/test_multi_worker.py), or here when none of them runs."""
    from autodist.planning.strategy_types import strategy_type
    from autodist.upstream.versions import module_version
    result = scenario_result(kubernetes_pods["proc"], timeout=480)
    reference = result["reference"][-1]
    assert reference["end"] == 16 and reference["strategy"] == "default"
    refused = strategy_type("multi_worker_mirrored").keras_refusal("keras3", module_version("keras"))
    if refused is not None:  # Keras 3.3-3.6: the named refusal, and the failure policy ends each job
        for name, case in result["cases"].items():
            if name == "kp":
                continue
            attempts = [attempt for pod in case["pods"].values() for attempt in pod["attempts"]]
            assert case["failed"] is not None and case["failed"].endswith("exited 1: FailJob"), case["failed"]
            assert all(attempt["exit"] != 0 for attempt in attempts) and any("StrategyUnavailableError: " + refused.split(".")[0] in attempt["tail"] for attempt in attempts), case
        return
    for name, hosts, source in (("k2", ["k2-0", "k2-1"], "indexed Job"), ("k3", ["k3-0", "k3-1", "k3-2"], "indexed Job"),
                                ("kj", ["kj-worker-0-0", "kj-worker-0-1"], "JobSet")):  # fmt: skip
        case = result["cases"][name]
        assert case["failed"] is None and case["timed_out"] == [], case
        finals = {host: pod["records"][-1] for host, pod in case["pods"].items()}
        assert sorted(finals) == hosts
        for host, final in finals.items():
            assert final["exit"] == 0 and final["end"] == 16 and final["strategy"] == "multi_worker_mirrored", (host, final)
            assert final["user"] == DEFAULT_USER and final["root_writable"] is False, (host, final)
            assert any(f"(Kubernetes {source} {name})" in reason for reason in final["reasons"]), final["reasons"]
            assert final["weights"] == finals[hosts[0]]["weights"], f"{host}'s weights differ from {hosts[0]}'s"
            gap = max(abs(a - b) for mine, theirs in zip(final["weights"], reference["weights"], strict=True)
                      for a, b in zip(_flat(mine), _flat(theirs), strict=True))  # fmt: skip
            assert gap <= 1e-5, f"{host}: {gap:.2g} from one process"
    restarted = result["cases"]["k2"]["pods"]
    for host, pod in restarted.items():
        exits = [(attempt["exit"], attempt["verdict"]) for attempt in pod["attempts"]]
        assert exits == [(75, "Ignore"), (0, "succeeded")], (host, exits, pod["attempts"][0]["tail"])
        first, again = pod["records"]
        assert first["exit"] == 75 and first["last"] >= 9, first
        assert again["begin"] == first["last"], f"{host}: saved at step {first['last']}, resumed at {again['begin']}: {first['last'] - again['begin']} steps redone"
    assert all(len(pod["attempts"]) == 1 for pod in result["cases"]["k3"]["pods"].values())
    ps = result["cases"]["kp"]
    assert ps["failed"] is None and ps["timed_out"] == [], ps
    assert {host: [attempt["exit"] for attempt in pod["attempts"]] for host, pod in ps["pods"].items()} == dict.fromkeys(["kp-chief-0", "kp-0", "kp-1", "kp-ps-0"], [0])
    (chief,) = ps["pods"]["kp-chief-0"]["records"]
    assert chief["strategy"] == "parameter_server" and chief["end"] == 16 and chief["user"] == DEFAULT_USER, chief
    assert all(math.isfinite(loss) for loss in chief["loss"]) and chief["loss"][-1] < chief["loss"][0], chief["loss"]


def _flat(value):
    return [x for item in value for x in _flat(item)] if isinstance(value, list) else [value]
