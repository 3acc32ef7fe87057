"""The edges that read values from outside, checked with generated input (Hypothesis): TF_CONFIG,
Vertex AI's CLUSTER_SPEC, SageMaker's and SLURM's variables, every ``AUTODIST_*`` setting, and a
``--snapshot`` file, each run on through the planner. Whatever comes in, the result is a plan or
an ``AutodistError`` that names what it refused, never another exception; and an accepted input
gives what it says, worked out here from the input by the manager's own rules: the cluster
(source, task, every task's address, workers and ps counted) and the strategy that cluster
means, the setting's value in the plan (or its parser's value, where no plan field carries it),
the snapshot as the file gives it, round-tripping, with a plan on its devices. Every accepted
plan's invariants hold too (:mod:`tests.plan_invariants`).

The budget is fixed (``derandomize``: the same cases on every run); the count of cases goes to
the run's figures. The bad inputs a review found are pinned as examples.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from autodist.core.detect_and_plan import plan_here
from autodist.detection.cluster import detect_cluster
from autodist.detection.cluster_spec import ClusterInfo
from autodist.detection.snapshot import HardwareSnapshot
from autodist.errors import AutodistError
from autodist.planning.planner import plan
from autodist.planning.plans import DEFAULT_PEER_TIMEOUT_SECONDS, StrategyKind
from autodist.planning.keras_compat import WORKAROUNDS
from autodist.settings import SETTINGS, activation_enabled, cpu_devices_setting, grace_setting, keras_compat_mode, keras_compat_setting, port_setting, tune_budget_setting
from tests.plan_invariants import check_plan_invariants

BUDGET = settings(max_examples=250, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
CASES = {"TF_CONFIG": 0, "CLUSTER_SPEC": 0, "SLURM": 0, "SM_HOSTS": 0, "settings": 0, "snapshot": 0}
OUTCOMES = {"accepted": 0, "AutodistError": 0}
ACCEPTED = dict.fromkeys(CASES, 0)
#: Accepted cluster variables that defined a cluster (TF_CONFIG may define none), by family.
CLUSTERS = dict.fromkeys(("TF_CONFIG", "CLUSTER_SPEC", "SLURM", "SM_HOSTS"), 0)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 70000), st.floats(allow_nan=True), st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)
hosts = st.sampled_from(["a", "b", "10.0.0.2", "[::1]", "", "host"])
ports = st.one_of(st.integers(-1, 70000).map(str), st.sampled_from(["2222", "notaport", "", "65535", "0"]))
addresses = st.one_of(st.builds(lambda h, p: f"{h}:{p}", hosts, ports), scalars)
task_types = st.one_of(st.sampled_from(["chief", "worker", "ps", "evaluator", "master", "workerpool0"]), scalars, st.lists(st.text(max_size=5), max_size=2))
clusters = st.dictionaries(task_types.filter(lambda t: isinstance(t, str)), st.one_of(st.lists(addresses, max_size=3), scalars), max_size=4)
tasks = st.one_of(st.fixed_dictionaries({"type": task_types, "index": st.one_of(st.integers(-2, 8), scalars)}), scalars)
good_addresses = st.builds(lambda h, p: f"{h}:{p}", st.sampled_from(["a", "b", "10.0.0.2"]), st.integers(1, 65535))


def distinct_addresses(draw, sizes: dict[str, int]) -> dict[str, list[str]]:
    """``{task type or pool: its addresses}`` for each non-empty size, no address used twice."""
    every = draw(st.lists(good_addresses, min_size=sum(sizes.values()), max_size=sum(sizes.values()), unique=True))
    cluster, at = {}, 0
    for name, size in sizes.items():
        if size:
            cluster[name], at = every[at : at + size], at + size
    return cluster


@st.composite
def well_formed_tf_configs(draw):
    """A TF_CONFIG as a cluster manager writes one (most are accepted; a ps without a chief, or a
    task index past its list, is not): distinct addresses, a task among the cluster's types."""
    counts = {"chief": draw(st.integers(0, 1)), "worker": draw(st.integers(0, 3)), "ps": draw(st.integers(0, 2)), "evaluator": draw(st.integers(0, 1))}
    if not any(counts.values()):
        counts["worker"] = 1
    cluster = distinct_addresses(draw, counts)
    kind = draw(st.sampled_from(sorted(cluster)))
    config = {"cluster": cluster, "task": {"type": kind, "index": draw(st.integers(0, len(cluster[kind])))}}
    if draw(st.booleans()):
        config["rpc_layer"] = draw(st.sampled_from(["grpc", "grpc+verbs", "grpc+mpi", "", "http"]))
    return config


def outcome(run, kind: str, names: tuple[str, ...]):
    """Run ``run()``; an AutodistError that names one of ``names`` (what was refused) is a fine
    outcome, any other exception fails the test."""
    CASES[kind] += 1
    try:
        result = run()
    except AutodistError as err:
        OUTCOMES["AutodistError"] += 1
        assert any(name in str(err) for name in names), f"the refusal names none of {names}: {err}"
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


def check_cluster_plan(the_plan, expected: ClusterInfo | None, family: str) -> None:
    """The plan is for ``expected``, the cluster worked out from the variables here, and its
    strategy is what that cluster means (one CPU device a task): the evaluator evaluates alone;
    ps tasks make parameter-server training, whose workers are the ``worker`` tasks; two or
    more workers, the chief counted, make multi-worker training, a replica each; else one machine.
    The chief is the ``chief`` task, or worker 0 when there is none."""
    assert the_plan.cluster == expected, (the_plan.cluster, expected)
    if expected is None:
        assert (the_plan.strategy, the_plan.num_workers, the_plan.num_replicas) == (StrategyKind.DEFAULT, 1, 1), the_plan
        return
    CLUSTERS[family] += 1
    spec = expected.cluster_spec
    workers, ps = len(spec.get("chief", [])) + len(spec.get("worker", [])), len(spec.get("ps", []))
    cluster = the_plan.cluster
    assert (cluster.num_workers, cluster.num_ps) == (workers, ps), (cluster, workers, ps)
    chief = expected.task_type == "chief" if "chief" in spec else (expected.task_type, expected.task_index) == ("worker", 0)
    assert cluster.is_chief == chief, cluster
    if expected.task_type == "evaluator":
        wanted = (StrategyKind.DEFAULT, 1, 1)
    elif ps:
        wanted = (StrategyKind.PARAMETER_SERVER, len(spec.get("worker", [])), 1)
    elif workers >= 2:
        wanted = (StrategyKind.MULTI_WORKER_MIRRORED, workers, workers)
    else:
        wanted = (StrategyKind.DEFAULT, 1, 1)
    assert (the_plan.strategy, the_plan.num_workers, the_plan.num_replicas) == wanted, (the_plan.strategy, the_plan.num_workers, the_plan.num_replicas, expected)


def tf_config_cluster(config: dict) -> ClusterInfo | None:
    """The cluster an accepted TF_CONFIG defines: none without a cluster and a task (as in
    TensorFlow); else the task given, every type's addresses in task-index order, and the
    ``rpc_layer`` when one is set."""
    if config.get("cluster") is None and not config.get("task"):
        return None
    task = config["task"]
    return ClusterInfo("TF_CONFIG", task["type"], task["index"], {kind: list(addresses) for kind, addresses in config["cluster"].items()}, config.get("rpc_layer") or None)


@BUDGET
@given(config=st.one_of(well_formed_tf_configs(), st.fixed_dictionaries({"cluster": clusters, "task": tasks}), json_values))
@example(config={"cluster": {"worker": ["a:notaport", "b:99999"]}, "task": {"type": "worker", "index": 0}})
@example(config={"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 7}})
@example(config={"cluster": {"worker": ["a:²"]}, "task": {"type": "worker", "index": 0}})
@example(config={"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}, "rpc_layer": 5})
@example(config={"cluster": {"chief": ["a:1"], "worker": ["b:1", "b:2"], "ps": ["c:1"]}, "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"})
def test_tf_config_is_the_plan_for_its_cluster_or_an_autodist_error(config):
    the_plan = outcome(lambda: plan_for({"TF_CONFIG": json.dumps(config)}), "TF_CONFIG", ("TF_CONFIG",))
    if the_plan is not None:
        check_cluster_plan(the_plan, tf_config_cluster(config), "TF_CONFIG")


pools = st.sampled_from(["workerpool0", "workerpool1", "workerpool2", "x"])
pool_tasks = st.one_of(st.fixed_dictionaries({"type": pools, "index": st.integers(-1, 2)}), tasks)
#: Vertex AI's worker pools: 0 is the chief, 1 the workers, 2 the parameter servers, 3 the evaluators.
VERTEX_POOLS = {"workerpool0": "chief", "workerpool1": "worker", "workerpool2": "ps", "workerpool3": "evaluator"}


@st.composite
def well_formed_cluster_specs(draw):
    """A CLUSTER_SPEC as Vertex AI writes one: pools of distinct addresses, a task in one of them
    (a ps pool without exactly one chief, or an index past its pool, is refused)."""
    sizes = {pool: draw(st.integers(0, 2)) for pool in VERTEX_POOLS}
    if not any(sizes.values()):
        sizes["workerpool1"] = 1
    cluster = distinct_addresses(draw, sizes)
    pool = draw(st.sampled_from(sorted(cluster)))
    return {"cluster": cluster, "task": {"type": pool, "index": draw(st.integers(0, len(cluster[pool])))}}


def cluster_spec_cluster(spec: dict) -> ClusterInfo:
    """The cluster an accepted CLUSTER_SPEC defines: each non-empty pool as its task type."""
    task = spec["task"]
    return ClusterInfo("CLUSTER_SPEC", VERTEX_POOLS[task["type"]], task["index"], {VERTEX_POOLS[pool]: list(addresses) for pool, addresses in spec["cluster"].items() if addresses})


@BUDGET
@given(spec=st.one_of(well_formed_cluster_specs(), st.fixed_dictionaries({"cluster": st.dictionaries(pools, st.lists(st.one_of(good_addresses, addresses), min_size=1, max_size=2, unique=True), max_size=3), "task": pool_tasks}), json_values))
@example(spec={"cluster": {"workerpool0": ["a:1"]}, "task": {"type": ["workerpool0"], "index": 0}})
@example(spec={"cluster": {"workerpool0": ["a:2222"], "workerpool1": ["b:2222"]}, "task": {"type": "workerpool1", "index": 0}})
@example(spec={"cluster": {"workerpool0": ["a:1"], "workerpool1": ["b:1", "b:2"], "workerpool2": ["c:1"], "workerpool3": ["d:1"]}, "task": {"type": "workerpool3", "index": 0}})
def test_cluster_spec_is_the_plan_for_its_pools_or_an_autodist_error(spec):
    the_plan = outcome(lambda: plan_for({"CLUSTER_SPEC": json.dumps(spec)}), "CLUSTER_SPEC", ("CLUSTER_SPEC",))
    if the_plan is not None:
        check_cluster_plan(the_plan, cluster_spec_cluster(spec), "CLUSTER_SPEC")


#: The node lists and task counts generated below, expanded as SLURM means them (those left out
#: expand to nothing, or are malformed: refused).
SLURM_NODES = {"n1": ["n1"], "n[1-2]": ["n1", "n2"], "n[1-3],m1": ["n1", "n2", "n3", "m1"]}
SLURM_TASKS = {"1": [1], "2": [2], "2(x2)": [2, 2], "1,3": [1, 3]}


def slurm_cluster(nodes: str, per_node: str, rank: str, port_base: str) -> ClusterInfo:
    """The cluster an accepted SLURM step defines: every task a worker, the nodes in sorted order,
    each node's tasks on consecutive ports from the port base (default 8888); the task is
    ``SLURM_PROCID``. One count stands for every node."""
    names, counts = SLURM_NODES[nodes], SLURM_TASKS[per_node]
    counts = counts * len(names) if len(counts) == 1 else counts
    base = int(port_base.strip() or 8888)
    workers = [f"{name}:{base + local}" for name, count in sorted(zip(names, counts, strict=True)) for local in range(count)]
    return ClusterInfo("SLURM", "worker", int(rank), {"worker": workers})


def sagemaker_cluster(sm_hosts: str, current: str, port: str) -> ClusterInfo:
    """The cluster an accepted SageMaker job defines: every host a worker on ``AUTODIST_PORT``
    (default 2222), in SM_HOSTS's order; this task is SM_CURRENT_HOST's place in it."""
    names = json.loads(sm_hosts)
    base = int(port.strip() or 2222)
    return ClusterInfo("SM_HOSTS", "worker", names.index(current), {"worker": [f"{name}:{base}" for name in names]})


@BUDGET
@given(
    nodes=st.sampled_from(["n1", "n[1-2]", "n[1-3],m1", "", "n[2-1]", "x[a-b]"]),
    per_node=st.sampled_from(["1", "2", "2(x2)", "1,3", "0", "", "x"]),
    rank=st.one_of(st.integers(0, 3).map(str), st.integers(-1, 7).map(str), st.sampled_from(["", "a"])),
    port_base=st.one_of(st.integers(1, 60000).map(str), st.integers(-1, 70000).map(str), st.sampled_from(["", "x", "65535", " 9000 "])),
    sm_hosts=st.one_of(st.none(), st.none(), json_values.map(json.dumps), st.lists(st.sampled_from(["algo-1", "algo-2", "algo-3"]), min_size=1, max_size=3, unique=True).map(json.dumps)),
    current=st.sampled_from(["algo-1", "algo-2", "x"]),
)
@example(nodes="n1", per_node="2", rank="0", port_base="65535", sm_hosts=None, current="algo-1")
@example(nodes="n1", per_node="1", rank="0", port_base="²", sm_hosts=None, current="algo-1")
@example(nodes="n[1-2]", per_node="1", rank="1", port_base="8888", sm_hosts=None, current="algo-1")
@example(nodes="n[1-3],m1", per_node="1", rank="3", port_base="", sm_hosts=None, current="algo-1")
@example(nodes="n[1-2]", per_node="1,3", rank="2", port_base="9000", sm_hosts=None, current="algo-1")
@example(nodes="n1", per_node="1", rank="0", port_base="2222", sm_hosts='["algo-1", "algo-2"]', current="algo-2")
def test_slurm_and_sagemaker_variables_are_the_plan_for_their_tasks_or_an_autodist_error(tensorflow_imported, nodes, per_node, rank, port_base, sm_hosts, current):
    environ = {"SLURM_JOB_ID": "1", "SLURM_STEP_NODELIST": nodes, "SLURM_STEP_TASKS_PER_NODE": per_node, "SLURM_PROCID": rank, "AUTODIST_SLURM_PORT_BASE": port_base}
    kind, names = "SLURM", ("SLURM",)
    if sm_hosts is not None:
        environ, kind, names = {"SM_HOSTS": sm_hosts, "SM_CURRENT_HOST": current, "AUTODIST_PORT": port_base}, "SM_HOSTS", ("SM_HOSTS", "SM_CURRENT_HOST", "AUTODIST_PORT")
    the_plan = outcome(lambda: plan_for(environ), kind, names)
    if the_plan is not None:
        expected = slurm_cluster(nodes, per_node, rank, port_base) if kind == "SLURM" else sagemaker_cluster(sm_hosts, current, port_base)
        check_cluster_plan(the_plan, expected, kind)


#: What planning with no setting gives on the settings' snapshot (2 cores, one CPU device).
SETTINGS_SNAPSHOT = HardwareSnapshot.cpu_only(num_cpus=2)
BASELINE = plan(SETTINGS_SNAPSHOT, num_params=1000, environ={}, refuse_when_nothing_fits=False)
ON, OFF = ("", "1", "on", "true", "yes"), ("0", "off", "false", "no")
#: Settings read where the plan is made but carried by no field of it: each parser, and what an
#: accepted value means (the stripped text as a number; the default when empty).
PARSED = {
    "AUTODIST_ACTIVATE": (activation_enabled, lambda word: word in ON if word in ON + OFF else "refused"),
    "AUTODIST_GRACE": (grace_setting, lambda word: float(word) if word else None),
    "AUTODIST_TUNE_BUDGET": (lambda env: tune_budget_setting(env, 60.0), lambda word: float(word) if word else 60.0),
    "AUTODIST_PORT": (lambda env: port_setting(env, "AUTODIST_PORT", 2222), lambda word: int(word) if word else 2222),
    "AUTODIST_SLURM_PORT_BASE": (lambda env: port_setting(env, "AUTODIST_SLURM_PORT_BASE", 8888), lambda word: int(word) if word else 8888),
}


def check_setting(name: str, value: str, the_plan, environ: dict[str, str]) -> None:
    """What an accepted ``name=value`` made of the plan: the plan's own field where it carries the
    setting, else the parser's value; and nothing else changed."""
    word = value.strip().lower()
    if name == "AUTODIST_STRATEGY":  # what strategy="auto" means; auto and tune plan as auto here
        assert the_plan.strategy == (BASELINE.strategy if word in ("", "auto", "tune") else StrategyKind(word)), (value, the_plan.strategy)
    elif name == "AUTODIST_PEER_TIMEOUT":
        assert the_plan.peer_timeout_seconds == (float(value) if value != "" else DEFAULT_PEER_TIMEOUT_SECONDS), (value, the_plan.peer_timeout_seconds)
    elif name == "AUTODIST_CPU_DEVICES":  # that many logical CPU devices, mirrored over when 2 or more
        count = int(word) if word else 1
        wanted = (count, count, StrategyKind.MIRRORED if count >= 2 else StrategyKind.DEFAULT)
        assert (the_plan.num_cpu_devices, the_plan.num_replicas, the_plan.strategy) == wanted, (value, the_plan)
    elif name == "AUTODIST_STEPS_PER_EXECUTION":  # on the default strategy; 1 leaves the model's own
        steps = int(word) if word else 8
        assert the_plan.steps_per_execution == (None if steps == 1 else steps), (value, the_plan.steps_per_execution)
    elif name == "AUTODIST_KERAS_COMPAT":  # a mode, then the workarounds it leaves out (-name)
        mode, *rest = [part.strip() for part in word.split(",")]
        mode, rest = ("", [mode, *rest]) if mode.startswith("-") else (mode, rest)
        left_out = frozenset(part[1:].strip() for part in rest)
        assert mode in ("", "auto", "off", "force") and keras_compat_mode(environ) == ("" if mode == "auto" else mode), value
        assert keras_compat_setting(environ)[1] == left_out and left_out <= set(WORKAROUNDS), value
        assert not left_out & set(the_plan.keras_workarounds), (value, the_plan.keras_workarounds)
        # force applies every workaround, whatever the version: the short-epoch one keeps steps_per_execution at 1
        short_epoch = mode == "force" and "short_epoch_steps_per_execution" not in left_out
        assert the_plan.steps_per_execution == (None if short_epoch else 8), (value, the_plan.steps_per_execution)
    else:
        assert the_plan == BASELINE, f"{name}={value!r} changed the plan: {the_plan} != {BASELINE}"
        if name in PARSED:
            parser, meaning = PARSED[name]
            assert parser(environ) == meaning(word), (name, value, parser(environ), meaning(word))
    if name not in ("AUTODIST_STRATEGY", "AUTODIST_CPU_DEVICES"):
        assert the_plan.strategy == BASELINE.strategy, (name, value, the_plan.strategy)


@BUDGET
@given(name=st.sampled_from(sorted(SETTINGS)), value=st.one_of(st.text(max_size=10), st.sampled_from(["inf", "nan", "-1", "0", "1e400", "disable", "off", "force", "²", "mirored", "2", "1", " 3 ", "7.5", "one_device", "Mirrored", "tune", "yes"])))
@example(name="AUTODIST_PEER_TIMEOUT", value="inf")
@example(name="AUTODIST_KERAS_COMPAT", value="disable")
@example(name="AUTODIST_PORT", value="²")
@example(name="AUTODIST_STRATEGY", value="mirored")
@example(name="AUTODIST_STRATEGY", value=" Mirrored ")
@example(name="AUTODIST_PEER_TIMEOUT", value="7.5")
@example(name="AUTODIST_CPU_DEVICES", value="2")
@example(name="AUTODIST_STEPS_PER_EXECUTION", value="3")
@example(name="AUTODIST_KERAS_COMPAT", value="force")
@example(name="AUTODIST_KERAS_COMPAT", value="force, -short_epoch_steps_per_execution")
@example(name="AUTODIST_KERAS_COMPAT", value="-batchnorm_moving_statistics")
@example(name="AUTODIST_KERAS_COMPAT", value="auto,-nope")
@example(name="AUTODIST_KERAS_COMPAT", value="off,-batches_copied")
def test_every_setting_is_what_the_plan_says_or_an_autodist_error(name, value):
    """Each setting as the entry points read it (:func:`autodist.core.detect_and_plan.plan_here`,
    with ``AUTODIST_CPU_DEVICES`` read into the snapshot as :func:`autodist.detect` reads it)."""
    environ = {name: value}

    def run():
        snapshot = HardwareSnapshot.cpu_only(num_cpus=2, num_cpu_devices=cpu_devices_setting(environ, 2))
        strategy = value.strip().lower() if name == "AUTODIST_STRATEGY" and value.strip() else "auto"
        return checked(plan_here(environ, snapshot=snapshot, num_params=1000, refuse_when_nothing_fits=False), snapshot, {"strategy": strategy})

    # refused: the error names the setting (or, for a strategy that cannot run here, the strategy)
    the_plan = outcome(run, "settings", (name, value.strip().lower() or name))
    if the_plan is not None:
        check_setting(name, value, the_plan, environ)


SNAPSHOT = HardwareSnapshot.cpu_only(num_cpus=4, host_memory_bytes=2**34).to_dict()
#: A snapshot's fields that hold a plain value: an accepted file's is the file's.
PLAIN_FIELDS = ("tensorflow_version", "keras_version", "keras_flavor", "platform", "num_cpus", "host_memory_bytes", "num_cpu_devices", "num_driver_gpus", "num_tensorflow_gpus", "tensorflow_cuda_build", "keras_backend", "jax_version")


def as_read(given: dict) -> dict:
    """The snapshot's JSON as an accepted file reads: the plain fields as given, each GPU, TPU and
    JAX device with its own keys (missing ones None), the cluster's own keys."""
    def each(items, keys):
        return [{key: item.get(key) for key in keys} for item in items or []]

    tpu = given["tpu"]
    read = {key: given[key] for key in PLAIN_FIELDS}
    read["gpus"] = each(given["gpus"], ("name", "memory_bytes", "compute_capability"))
    read["tpu"] = {key: tpu.get(key) for key in ("source", "name", "num_cores")} if tpu else None
    read["jax_devices"] = each(given["jax_devices"], ("platform", "kind", "memory_bytes"))
    read["diagnostics"] = list(given["diagnostics"] or [])
    cluster = given["cluster"]
    read["cluster"] = None if cluster is None else {key: cluster.get(key) for key in ("source", "task_type", "task_index", "cluster_spec", "rpc_layer")}
    return read


def local_devices(snapshot: HardwareSnapshot) -> tuple[str, ...]:
    """The devices a plan may place replicas on: JAX's, else the GPUs, else the logical CPUs."""
    if snapshot.keras_backend == "jax":
        platform = snapshot.jax_devices[0].platform if snapshot.jax_devices else "cpu"
        return tuple(f"{platform}:{i}" for i in range(max(1, len(snapshot.jax_devices))))
    return tuple(f"/gpu:{i}" for i in range(len(snapshot.gpus))) or tuple(f"/cpu:{i}" for i in range(snapshot.num_cpu_devices))


@BUDGET
@given(changes=st.dictionaries(st.sampled_from(sorted(SNAPSHOT) + ["gpus", "tpu", "cluster", "jax_devices"]), json_values, max_size=3), num_params=st.one_of(st.none(), st.integers(0, 10**12)))
@example(changes={"gpus": "A100"}, num_params=None)
@example(changes={"cluster": {"source": "TF_CONFIG", "task_type": "worker"}}, num_params=None)
@example(changes={"jax_devices": [{"platform": 3}]}, num_params=None)
@example(changes={"gpus": [{"name": "A100", "memory_bytes": 2**35}, {"name": "A100"}], "num_cpu_devices": 3}, num_params=10**6)
@example(changes={"keras_backend": "jax", "jax_devices": [{"platform": "cpu", "kind": "cpu"}, {"platform": "cpu", "kind": "cpu"}]}, num_params=None)
@example(changes={"cluster": {"source": "TF_CONFIG", "task_type": "worker", "task_index": 1, "cluster_spec": {"worker": ["a:1", "b:1"]}}}, num_params=None)
def test_a_snapshot_file_is_itself_with_a_plan_on_its_devices_or_an_autodist_error(changes, num_params):
    given = {**SNAPSHOT, **changes}

    def run():
        snapshot = HardwareSnapshot.from_dict(given)
        return snapshot, checked(plan(snapshot, num_params=num_params, environ={}, refuse_when_nothing_fits=False), snapshot)

    # refused: the error names a field the file changed, or the count of parameters
    result = outcome(run, "snapshot", (*changes, *(str(value) for value in changes.values() if isinstance(value, str) and value), "num_params"))
    if result is None:
        return
    snapshot, the_plan = result
    data = snapshot.to_dict()
    assert as_read(data) == as_read(given), (changes, data)
    assert HardwareSnapshot.from_dict(json.loads(json.dumps(data))) == snapshot, "a snapshot round-trips through its JSON"
    local = local_devices(snapshot)
    kind = the_plan.strategy
    placed = {StrategyKind.ONE_DEVICE: local[:1], StrategyKind.DEFAULT: (), StrategyKind.TPU: ()}.get(kind, local)
    assert the_plan.devices == placed, (kind, the_plan.devices, local)
    assert the_plan.parameter_device == ("/cpu:0" if kind == StrategyKind.CENTRAL_STORAGE else None), the_plan.parameter_device
    assert (the_plan.cluster, the_plan.tpu) == (snapshot.cluster, snapshot.tpu if kind == StrategyKind.TPU else None), the_plan


def test_the_budget_ran_and_every_case_ended_in_what_its_input_says_or_an_autodist_error(report):
    """Last in the module: the counts of the properties above (each would have failed on any
    other exception, on a refusal that names nothing, or on an accepted input whose plan is not
    what it says)."""
    if not all(CASES.values()):
        pytest.skip("run with the properties above")
    total = sum(CASES.values())
    assert total >= 5 * 250 and OUTCOMES["AutodistError"] > 0, (CASES, OUTCOMES)
    assert all(ACCEPTED.values()), f"a family never reached a plan, so its valid path went untested: {ACCEPTED}"
    assert all(CLUSTERS.values()), f"a family never defined a cluster, so its cluster went unchecked: {CLUSTERS}"
    report(
        f"validation (Hypothesis, derandomized): {total} generated cases ({', '.join(f'{k} {v}' for k, v in CASES.items())}): "
        f"{OUTCOMES['accepted']} accepted, each the plan its input says with every plan invariant held ({', '.join(f'{k} {v}' for k, v in ACCEPTED.items())}; "
        f"a cluster in {', '.join(f'{k} {v}' for k, v in CLUSTERS.items())}), {OUTCOMES['AutodistError']} AutodistError naming what it refused, 0 other exceptions"
    )


@pytest.mark.parametrize("blocker", ["another user's folder", "a folder others can read", "a link"])
def test_a_blocked_private_folder_falls_back_to_one_of_the_users_own_and_says_so(tmp_path, monkeypatch, caplog, blocker, fresh_state):
    """``<temp>/autodist-<uid>`` made first by someone else (or a link to elsewhere) never stops
    autodist, and is never used: the files go to a folder private to this user, named once."""
    import logging
    import os
    import stat
    import tempfile

    from autodist.jobs import private

    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
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
