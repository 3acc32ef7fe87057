"""Kubernetes without an operator (issue 37): the manifest ``python -m autodist manifest`` writes,
checked against Kubernetes's schemas and JobSet's CRD; what each of its pods reads, from what
Kubernetes gives a pod (tests/scenarios/kubelet.py, by Kubernetes's own naming rules); each
inconsistency refused, naming its variable. The pod side runs for real in
tests/test_pods_on_kubernetes.py."""

from __future__ import annotations

import dataclasses
import gzip
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodist.detection.cluster import detect_cluster
from autodist.errors import ArgumentError, ClusterConfigError
from autodist.jobs.kubernetes import ManifestSpec, manifest_objects, to_yaml
from tests.conftest import ROOT, run_python, subprocess_env
from tests.scenarios.kubelet import pods, verdict

yaml = pytest.importorskip("yaml")
kubernetes_validate = pytest.importorskip("kubernetes_validate")
jsonschema = pytest.importorskip("jsonschema")

BUDGET = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
JOBSET_SCHEMA = ROOT / "tests" / "data" / "jobset-v0.12.0-crd-schema.json.gz"
KUBERNETES_VERSIONS = ("1.31", kubernetes_validate.latest_version())  # podFailurePolicy is GA from 1.31
DOC = ROOT / "docs" / "kubernetes.md"


def spec(**kwargs) -> ManifestSpec:
    kwargs.setdefault("image", "registry.example/train:1")
    kwargs.setdefault("command", ["python", "train.py"])
    return ManifestSpec.checked(**kwargs)


names = st.from_regex(r"[a-z][a-z0-9-]{0,18}[a-z0-9]", fullmatch=True).filter(lambda name: "--" not in name)


@BUDGET
@given(name=names, workers=st.integers(1, 6), ps=st.integers(0, 3), port=st.integers(1024, 60000), jobset=st.booleans())
def test_every_pod_reads_its_own_task_and_the_same_cluster(name, workers, ps, port, jobset):
    """From the env and host name Kubernetes gives each pod of the manifest: its task, and one
    cluster whose addresses are the pods' ``<host name>.<subdomain>``, each on its own port."""
    objects = manifest_objects(spec(name=name, workers=workers, ps=ps, port=port, jobset=jobset))
    made = pods(objects)
    assert len(made) == workers + ps + (1 if ps else 0)
    seen = [detect_cluster(pod.env) for pod in made]
    clusters = {json.dumps(info.cluster_spec, sort_keys=True) for info in seen}
    assert len(clusters) == 1, clusters
    spec_ = seen[0].cluster_spec
    addresses = [address for role in ("chief", "worker", "ps") for address in spec_.get(role, [])]
    assert sorted(a.rsplit(":", 1)[0] for a in addresses) == sorted(pod.address for pod in made)
    assert [int(a.rsplit(":", 1)[1]) for a in addresses] == list(range(port, port + len(made)))
    for pod, info in zip(made, seen, strict=True):
        assert spec_[info.task_type][info.task_index].startswith(pod.address + ":"), (pod.hostname, info)
        assert info.source == f"Kubernetes {'JobSet' if jobset else 'indexed Job'} {name}"
        assert info.is_chief == (info.task_type == "chief" or (not ps and info.task_index == 0))
    if not jobset:  # the headless Service selects every pod, and is their subdomain
        service = objects[0]
        assert service["spec"]["clusterIP"] == "None" and {pod.subdomain for pod in made} == {service["metadata"]["name"]}
        assert all(pod.labels.items() >= service["spec"]["selector"].items() for pod in made)


GOOD = {"AUTODIST_K8S_WORKERS": "2", "AUTODIST_K8S_PS": "0", "AUTODIST_K8S_SERVICE": "k2", "AUTODIST_PORT": "2222",
        "AUTODIST_K8S_NAME": "k2", "AUTODIST_K8S_ROLE": "worker", "JOB_COMPLETION_INDEX": "1", "HOSTNAME": "k2-1"}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"JOB_COMPLETION_INDEX": "2"}, "JOB_COMPLETION_INDEX=2 is out of range for 2 worker task(s)"),
        ({"AUTODIST_K8S_WORKERS": "1"}, "the worker Job's completions and AUTODIST_K8S_WORKERS disagree"),
        ({"JOB_COMPLETION_INDEX": None}, "JOB_COMPLETION_INDEX is missing"),
        ({"JOB_COMPLETION_INDEX": "one"}, "JOB_COMPLETION_INDEX=one is not an index"),
        ({"AUTODIST_K8S_SERVICE": None}, "AUTODIST_K8S_SERVICE is missing"),
        ({"AUTODIST_K8S_SERVICE": "K2_svc"}, "AUTODIST_K8S_SERVICE=K2_svc is not a DNS label"),
        ({"AUTODIST_K8S_NAME": None}, "AUTODIST_K8S_NAME is missing"),
        ({"AUTODIST_K8S_WORKERS": "two"}, "AUTODIST_K8S_WORKERS=two is not a task count"),
        ({"AUTODIST_K8S_PS": "-1"}, "AUTODIST_K8S_PS=-1 is not a task count"),
        ({"AUTODIST_K8S_ROLE": "ps"}, "AUTODIST_K8S_ROLE=ps is not a role of this job"),
        ({"HOSTNAME": "k3-1"}, "HOSTNAME='k3-1' is not the host name Kubernetes gives worker 1 of Job 'k2', 'k2-1'"),
        ({"AUTODIST_PORT": "65535"}, "AUTODIST_PORT=65535 gives the last of 2 tasks port 65536"),
        ({"JOBSET_NAME": "k2", "REPLICATED_JOB_NAME": "worker", "JOB_INDEX": "1", "HOSTNAME": "k2-worker-1-1"}, "JOB_INDEX=1: the replicated job has more than one Job"),
    ],
)
def test_each_inconsistency_is_a_cluster_error_that_names_the_variable(change, named):
    environ = {**GOOD, **{k: v for k, v in change.items() if v is not None}}
    for key in [k for k, v in change.items() if v is None]:
        environ.pop(key)
    assert detect_cluster(GOOD).task_index == 1  # the unchanged pod is read
    assert detect_cluster({**GOOD, "AUTODIST_K8S_PS": ""}).cluster_spec == detect_cluster(GOOD).cluster_spec  # empty is unset
    with pytest.raises(ClusterConfigError) as raised:
        detect_cluster(environ)
    assert named in str(raised.value) and "(Received: " in str(raised.value), str(raised.value)


def test_tf_config_wins_and_the_plan_names_kubernetes():
    import autodist
    from tests.conftest import make_snapshot

    explicit = {"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}}
    assert detect_cluster({**GOOD, "TF_CONFIG": json.dumps(explicit)}).source == "TF_CONFIG"
    snapshot = dataclasses.replace(make_snapshot(), cluster=detect_cluster(GOOD))
    the_plan = autodist.plan(snapshot, batch_size=64)
    assert the_plan.strategy.value == "multi_worker_mirrored"
    assert any("(Kubernetes indexed Job k2)" in reason for reason in the_plan.reasons), the_plan.reasons


def unknown_fields(value, schema, path="") -> list[str]:
    """Keys the CRD's structural schema does not define (the API server would drop them silently)."""
    found = []
    if isinstance(value, dict) and "properties" in schema:
        for key, item in value.items():
            if key not in schema["properties"]:
                found.append(f"{path}.{key}")
            else:
                found += unknown_fields(item, schema["properties"][key], f"{path}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found += unknown_fields(item, schema["items"], f"{path}[{index}]")
    return found


MANIFESTS = {
    "2 workers, CPU": dict(name="mnist", workers=2),
    "4 workers x 8 GPUs": dict(name="resnet", workers=4, gpus=8, cpu="16", memory="64Gi", backup_claim="resnet-saves", namespace="training", timeout=86400),
    "2 workers, 1 ps": dict(name="ps-train", workers=2, ps=1, memory="8Gi"),
    "JobSet, 4 workers x 8 GPUs": dict(name="resnet", workers=4, gpus=8, backup_claim="resnet-saves", jobset=True),
    "JobSet, 2 workers, 1 ps": dict(name="ps-train", workers=2, ps=1, jobset=True),
}


@pytest.mark.parametrize("case", list(MANIFESTS))
def test_the_manifest_is_valid_kubernetes_and_reads_back_from_its_yaml(case):
    """Services and Jobs against Kubernetes's own schemas (kubernetes-validate, strict: no field
    it does not know), for the oldest Kubernetes with podFailurePolicy GA and the newest; a JobSet
    against the JobSet CRD's published schema (v0.12.0), with no field the schema lacks. The YAML
    reads back as the same objects."""
    objects = manifest_objects(spec(**MANIFESTS[case]))
    assert list(yaml.safe_load_all(to_yaml(objects))) == objects
    crd = json.loads(gzip.decompress(JOBSET_SCHEMA.read_bytes()))
    for item in objects:
        if item["kind"] == "JobSet":
            assert item["apiVersion"] == f"{crd['group']}/{crd['version']}"
            jsonschema.validate(item, crd["openAPIV3Schema"])
            assert unknown_fields(item, crd["openAPIV3Schema"]) == []
        else:
            for version in KUBERNETES_VERSIONS:
                kubernetes_validate.validate(item, version, strict=True)
    for pod in pods(objects):  # exit 75 and evictions restart the index; other failures end the job
        assert (verdict(pod, 75), verdict(pod, 1), verdict(pod, 137), verdict(pod, 0)) == ("Ignore", "FailJob", "FailJob", "succeeded")
        if MANIFESTS[case].get("backup_claim"):
            assert pod.mounts["/autodist-backup"] == "resnet-saves" and pod.env["AUTODIST_BACKUP_DIR"] == "/autodist-backup"


def _containers(item):
    jobs = [item["spec"]] if item["kind"] == "Job" else [r["template"]["spec"] for r in item["spec"].get("replicatedJobs", [])]
    return [c for job in jobs for c in job["template"]["spec"]["containers"]]


@pytest.mark.parametrize("case", list(MANIFESTS))
def test_a_replacement_pod_starts_once_its_predecessor_has_ended(case):
    """Every Job (and every JobSet's Job) replaces a pod of an index only once the old pod has
    ended (``podReplacementPolicy: Failed``), never while it still writes its preemption save to
    the same folder (issue 46); Kubernetes requires that value beside a ``podFailurePolicy``."""
    objects = manifest_objects(spec(**MANIFESTS[case]))
    jobs = [item["spec"] for item in objects if item["kind"] == "Job"]
    jobs += [r["template"]["spec"] for item in objects if item["kind"] == "JobSet" for r in item["spec"]["replicatedJobs"]]
    assert jobs and all(job.get("podReplacementPolicy") == "Failed" and "podFailurePolicy" in job for job in jobs), jobs


def test_gpus_go_to_workers_only():
    objects = manifest_objects(spec(name="ps-train", workers=2, ps=1, gpus=8))
    limits = {item["metadata"]["name"]: _containers(item)[0].get("resources", {}).get("limits") for item in objects if item["kind"] == "Job"}
    assert limits == {"ps-train-chief": None, "ps-train": {"nvidia.com/gpu": 8}, "ps-train-ps": None}
    shm = {pod.job: pod.mounts.get("/dev/shm") for pod in pods(objects)}
    assert shm == {"ps-train-chief": None, "ps-train": "emptyDir", "ps-train-ps": None}  # NCCL's shared memory, where GPUs are


def test_the_docs_page_shows_what_its_commands_write(capsys):
    """docs/kubernetes.md: every ``$ python -m autodist manifest ...`` block is followed by the
    YAML that command prints, and every field the manifests set is explained on the page."""
    from autodist.cli import main

    text = DOC.read_text(encoding="utf-8")
    shown = re.findall(r"```console\n\$ (python -m autodist manifest [^\n]+)\n```\n\n```yaml\n(.*?)```", text, flags=re.S)
    assert len(shown) >= 2, "the page shows the 2-worker and the 4 x 8 GPU manifests"
    for command, written in shown:
        capsys.readouterr()
        assert main(command.split()[3:]) == 0
        assert capsys.readouterr().out == written, f"{command}: the page shows other YAML than the command writes"
    for field in sorted({key for _, written in shown for key in re.findall(r"^\s*-?\s*([A-Za-z][A-Za-z./-]*):", written, flags=re.M)}):
        assert f"`{field}`" in text, f"docs/kubernetes.md does not explain `{field}`"


flags = st.sampled_from(["--workers", "--ps", "--gpus", "--port", "--timeout", "--name", "--namespace", "--backup-claim", "--cpu", "--memory", "--image"])


@BUDGET
@given(flag=flags, value=st.one_of(st.text(max_size=12), st.sampled_from(["0", "-1", "4097", "65", "8", "1e3", "My-Job", "a" * 64, "500m", "16Gi", "x y"])))
def test_every_flag_is_checked_and_what_it_accepts_is_what_the_manifest_holds(flag, value):
    kwargs = {"name": "job", "workers": "2", "image": "registry.example/train:1"}
    key = flag[2:].replace("-", "_")
    kwargs[key] = value
    try:
        made = spec(**kwargs)
    except ArgumentError as err:
        assert flag in str(err) and "(Received: " in str(err), str(err)
        return
    objects = manifest_objects(made)
    container = _containers(objects[-1])[0]
    env = {entry["name"]: entry.get("value") for entry in container["env"]}
    if key in ("workers", "ps", "port"):
        assert int(env[{"workers": "AUTODIST_K8S_WORKERS", "ps": "AUTODIST_K8S_PS", "port": "AUTODIST_PORT"}[key]]) == int(value)
    elif key == "gpus":
        assert container.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0) == int(value)
    elif key == "timeout":
        assert objects[-1]["spec"]["activeDeadlineSeconds"] == int(value)
    elif key in ("cpu", "memory"):
        assert container["resources"]["requests"][key] == value
    elif key == "image":
        assert container["image"] == value
    else:
        assert value in json.dumps(objects)
    assert list(yaml.safe_load_all(to_yaml(objects))) == objects


def test_the_command_line_refuses_in_one_line(processes):
    """As ``python -m autodist manifest`` runs it (the same ``main``; tests/test_cli.py runs the
    command line as a process)."""
    out = run_python(["-m", "autodist", "manifest", "--name", "Job", "--workers", "2", "--image", "i", "--", "python", "t.py"], env=subprocess_env(), timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "--name 'Job' is not a DNS label" in out.stderr, out.stderr


def test_a_manifest_needs_a_command(capsys):
    from autodist.cli import main

    assert main(["manifest", "--name", "job", "--workers", "2", "--image", "i"]) == 2
    assert "No command was given" in capsys.readouterr().err
