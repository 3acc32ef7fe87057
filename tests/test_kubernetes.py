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
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodist.detection.cluster import detect_cluster
from autodist.errors import ArgumentError, ClusterConfigError
from autodist.jobs.kubernetes import DEFAULT_USER, GIVES_UP, ManifestSpec, manifest_comments, manifest_objects, to_yaml
from tests import pod_security
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
        (service,) = [item for item in objects if item["kind"] == "Service"]
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
    "3 workers, 2 ps, closed egress, limits": dict(name="closed", workers=3, ps=2, egress="job", user="20000", cpu="2", memory="4Gi", cpu_limit="2", memory_limit="4Gi"),
    "1 worker, writable root": dict(name="one", workers=1, writable_root=True),
    "2 workers, root allowed": dict(name="rooted", workers=2, allow_root=True, backup_claim="saves"),
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
            assert pod.mounts["/autodist-backup"] == MANIFESTS[case]["backup_claim"] and pod.env["AUTODIST_BACKUP_DIR"] == "/autodist-backup"


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


def _kwargs(case: str) -> dict:
    return dict(MANIFESTS[case])


@pytest.mark.parametrize("case", list(MANIFESTS))
def test_every_pod_meets_the_restricted_pod_security_standard(case):
    """Every pod template of every manifest shape against the restricted standard's checks, as
    Kubernetes defines them (tests/pod_security.py, version :data:`pod_security.VERSION`): none
    fails. ``--allow-root`` fails runAsNonRoot alone, and its manifest says so above the YAML and in
    an annotation of every object."""
    objects = manifest_objects(spec(**_kwargs(case)))
    templates = pod_security.pod_templates(objects)
    assert templates and {role for role, _ in templates} >= {item["metadata"]["name"] for item in objects if item["kind"] == "Job"}
    failed = {role: pod_security.restricted(template) for role, template in templates}
    if MANIFESTS[case].get("allow_root"):
        assert all(checks == ["runAsNonRoot: container train (nor the pod) sets it true"] for checks in failed.values()), failed
        comment = manifest_comments(objects)
        assert comment.startswith("# autodist: --allow-root: ") and "rejects them (runAsNonRoot)" in comment
        annotated = [item["metadata"] for item in objects] + [template["metadata"] for _, template in templates]
        assert all(GIVES_UP["--allow-root"] in metadata["annotations"]["autodist/gives-up"] for metadata in annotated)
    else:
        assert failed == {role: [] for role, _ in templates}, failed
        assert all(pod_security.baseline(template) == [] for _, template in templates)
    for pod in pods(objects):  # what a container runtime applies: tests/scenarios/kubernetes_pods.py runs pods with it
        expected_user = None if MANIFESTS[case].get("allow_root") else int(MANIFESTS[case].get("user", DEFAULT_USER))
        assert pod.security.user == expected_user and pod.security.no_new_privileges and pod.security.drop_all
        assert pod.security.read_only_root != bool(MANIFESTS[case].get("writable_root"))
        assert {path for path, source in pod.mounts.items() if source == "emptyDir"} >= {"/tmp", pod.env["HOME"]}


def test_a_check_of_the_standard_fails_a_pod_that_breaks_each_rule():
    """The checks of tests/pod_security.py themselves: each rule of the restricted standard, broken
    in a compliant pod, fails by its name (so a green check above means something)."""
    (_, compliant), *_ = pod_security.pod_templates(manifest_objects(spec(name="mnist", workers=2)))
    container = lambda pod: pod["containers"][0]  # noqa: E731
    breaks = {
        "allowPrivilegeEscalation": lambda pod: pod["containers"][0]["securityContext"].pop("allowPrivilegeEscalation"),
        "runAsNonRoot": lambda pod: [pod["securityContext"].pop("runAsNonRoot"), pod["containers"][0]["securityContext"].pop("runAsNonRoot")],
        "runAsUser": lambda pod: pod["securityContext"].update(runAsUser=0),
        "seccompProfile_restricted": lambda pod: pod["securityContext"].pop("seccompProfile"),
        "capabilities_restricted": lambda pod: pod["containers"][0]["securityContext"]["capabilities"].update(drop=["NET_RAW"]),
        "capabilities_baseline": lambda pod: pod["containers"][0]["securityContext"]["capabilities"].update(add=["SYS_ADMIN"]),
        "restrictedVolumes": lambda pod: pod["volumes"].append({"name": "docker", "hostPath": {"path": "/var/run"}}),
        "hostNamespaces": lambda pod: pod.update(hostNetwork=True),
        "privileged": lambda pod: pod["containers"][0]["securityContext"].update(privileged=True),
        "procMount": lambda pod: container(pod)["securityContext"].update(procMount="Unmasked"),
        "seLinuxOptions": lambda pod: pod["securityContext"].update(seLinuxOptions={"type": "spc_t"}),
        "appArmorProfile": lambda pod: container(pod)["securityContext"].update(appArmorProfile={"type": "Unconfined"}),
        "sysctls": lambda pod: pod["securityContext"].update(sysctls=[{"name": "kernel.msgmax", "value": "1"}]),
        "probe": lambda pod: container(pod).update(livenessProbe={"tcpSocket": {"host": "10.0.0.1", "port": 80}}),
        "hostPorts": lambda pod: container(pod).update(ports=[{"containerPort": 2222, "hostPort": 2222}]),
        "seccompProfile_baseline": lambda pod: container(pod)["securityContext"].update(seccompProfile={"type": "Unconfined"}),
    }
    for name, breaking in breaks.items():
        template = json.loads(json.dumps(compliant))
        breaking(template["spec"])
        assert any(check.startswith(name + ":") for check in pod_security.restricted(template)), (name, pod_security.restricted(template))
    template = json.loads(json.dumps(compliant))  # the pod says false, its containers true: still refused
    template["spec"]["securityContext"]["runAsNonRoot"] = False
    assert "runAsNonRoot: the pod sets it false" in pod_security.restricted(template)
    template = json.loads(json.dumps(compliant))
    template["metadata"]["annotations"] = {"container.apparmor.security.beta.kubernetes.io/train": "unconfined"}
    assert any(check.startswith("appArmorProfile: annotation") for check in pod_security.restricted(template))


#: The scanner's checks that are the user's to decide, and the flag that decides each (docs/kubernetes.md, "Security").
USERS_TO_DECIDE = {"CKV_K8S_43": "--image", "CKV_K8S_21": "--namespace", "CKV_K8S_10": "--cpu", "CKV_K8S_12": "--memory",
                   "CKV_K8S_11": "--cpu-limit", "CKV_K8S_13": "--memory-limit"}  # fmt: skip
#: The checks each flag that gives up a default fails, by its choice (:data:`GIVES_UP`).
GIVEN_UP_CHECKS = {"allow_root": {"CKV_K8S_23", "CKV_K8S_40"}, "writable_root": {"CKV_K8S_22"}}
DIGEST = "registry.example/train@sha256:" + "0123456789abcdef" * 4


def test_checkov_fails_only_the_checks_that_are_the_users_to_decide(tmp_path, processes):
    """Every manifest shape through checkov (the test extras' release, ``--framework kubernetes``):
    each failed check is one of :data:`USERS_TO_DECIDE` (or what ``--allow-root`` and
    ``--writable-root`` give up, by the user's choice), and with each of those flags given, none
    fails. docs/kubernetes.md names each of them with its flag."""
    decided = dict(namespace="training", image=DIGEST, cpu="4", memory="8Gi", cpu_limit="4", memory_limit="8Gi")
    for case, kwargs in MANIFESTS.items():
        for how, more in (("as given", {}), ("decided", decided)):
            folder = tmp_path / how
            folder.mkdir(exist_ok=True)
            objects = manifest_objects(spec(**{**kwargs, **more}))
            (folder / f"{re.sub(r'[^a-z0-9]+', '-', case.lower())}.yaml").write_text(manifest_comments(objects) + to_yaml(objects))
    found = {}
    for how in ("as given", "decided"):
        out = run_python(["-m", "checkov.main", "-d", str(tmp_path / how), "--framework", "kubernetes", "-o", "json"], env=subprocess_env(), timeout=300)
        assert out.returncode in (0, 1) and out.stdout.strip(), f"checkov did not run (pip install '.[test]'):\n{out.stderr[-3000:]}"
        report = json.loads(out.stdout)
        reports = report if isinstance(report, list) else [report]
        found[how] = [(Path(check["file_path"]).stem, check["check_id"]) for item in reports for check in item["results"]["failed_checks"]]
        scanned = {Path(check["file_path"]).stem for item in reports for check in item["results"]["passed_checks"]}
        jobs = {re.sub(r"[^a-z0-9]+", "-", case.lower()) for case, kwargs in MANIFESTS.items() if not kwargs.get("jobset")}
        assert scanned >= jobs, f"checkov scanned no pod of {sorted(jobs - scanned)}"  # a JobSet's pods it does not read
    slug = {re.sub(r"[^a-z0-9]+", "-", case.lower()): kwargs for case, kwargs in MANIFESTS.items()}
    for how, failures in found.items():
        for stem, check in failures:
            given_up = set().union(*(GIVEN_UP_CHECKS[key] for key in GIVEN_UP_CHECKS if slug[stem].get(key)))
            allowed = given_up | (set() if how == "decided" else set(USERS_TO_DECIDE))
            assert check in allowed, f"{stem} ({how}): checkov fails {check}, which is not the user's to decide"
    assert {check for _, check in found["as given"]} >= {"CKV_K8S_43", "CKV_K8S_21"}  # the scanner ran on what it should
    assert {check for stem, check in found["as given"] if slug[stem].get("allow_root")} >= GIVEN_UP_CHECKS["allow_root"]
    text = DOC.read_text(encoding="utf-8")
    for check, flag in USERS_TO_DECIDE.items():
        assert re.search(rf"^\|[^\n]*`{check}`[^\n]*`{flag}", text, flags=re.M), f"docs/kubernetes.md does not list {check} with {flag}"


def _pod_view(pod, namespace):
    return {"namespace": namespace, "labels": pod.labels, "namespace_labels": {"kubernetes.io/metadata.name": namespace}}


@pytest.mark.parametrize("case", list(MANIFESTS))
def test_only_the_jobs_own_pods_reach_its_task_ports(case):
    """The job's NetworkPolicy, evaluated by Kubernetes's rules (tests/pod_security.py) on the
    job's pods and on pods outside it: every pod of the job reaches every task port of every other
    (and any other port: NCCL's, between GPU workers), a pod outside the job (another app in the
    namespace, or a pod in another namespace with the same labels) reaches none of their ports.
    Egress is open unless ``--egress job``, which leaves the job's own pods and port 53 (DNS)."""
    kwargs = _kwargs(case)
    objects = manifest_objects(spec(**kwargs))
    policies = [item for item in objects if item["kind"] == "NetworkPolicy"]
    assert len(policies) == 1 and objects[0] is policies[0]  # created before any pod
    namespace = kwargs.get("namespace", "default")
    made = pods(objects)
    ports = sorted({int(pod.env["AUTODIST_PORT"]) + offset for pod in made for offset in range(len(made))})
    task_ports = range(ports[0], ports[0] + len(made))
    job = [_pod_view(pod, namespace) for pod in made]
    outside = [
        {"namespace": namespace, "labels": {"app": "notebook"}, "namespace_labels": {"kubernetes.io/metadata.name": namespace}},
        {"namespace": "elsewhere", "labels": dict(made[0].labels), "namespace_labels": {"kubernetes.io/metadata.name": "elsewhere"}},
    ]
    dns = {"namespace": "kube-system", "labels": {"k8s-app": "node-local-dns"}, "namespace_labels": {"kubernetes.io/metadata.name": "kube-system"}}
    other_ports = (task_ports[0] - 1, task_ports[-1] + 1, 22, 6006, 40123)
    for source in job:
        for target in job:
            assert all(pod_security.reachable(policies, source, target, port) for port in (*task_ports, *other_ports))
    for stranger in outside:
        for target in job:
            assert not any(pod_security.ingress_allowed(policies, stranger, target, port) for port in (*task_ports, *other_ports)), stranger
    closed = kwargs.get("egress") == "job"
    assert pod_security.egress_allowed(policies, job[0], outside[0], 443) != closed
    assert pod_security.egress_allowed(policies, job[0], dns, 53, "UDP") and pod_security.egress_allowed(policies, job[0], dns, 53, "TCP")
    assert pod_security.egress_allowed(policies, job[0], dns, 443) != closed


def test_the_command_line_says_what_allow_root_gives_up(capsys):
    """``--allow-root``: the YAML opens with what it gives up (a comment a YAML reader skips);
    ``--user`` and ``--allow-root`` together, or a user 0, are refused naming the way."""
    from autodist.cli import main

    assert main(["manifest", "--name", "job", "--workers", "2", "--image", "i", "--allow-root", "--", "python", "t.py"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# autodist: {GIVES_UP['--allow-root']}\n")
    assert all("runAsUser" not in json.dumps(item) and item["metadata"]["annotations"] for item in yaml.safe_load_all(out))
    for flags, said in ((["--user", "1000", "--allow-root"], "--user and --allow-root were both given"), (["--user", "0"], "--user 0 is root"),
                        (["--user", "00"], "--user 00 is root")):  # fmt: skip
        assert main(["manifest", "--name", "job", "--workers", "2", "--image", "i", *flags, "--", "python", "t.py"]) == 2
        err = capsys.readouterr().err
        assert said in err and "(Received: " in err and "--allow-root" in err, err


@pytest.mark.parametrize(("request_", "limit", "refused"), [("4", "2", True), ("500m", "1", False), ("16Gi", "16G", True), ("1Gi", "1Gi", False), ("1e3", "1k", False)])
def test_a_limit_below_its_request_is_refused(request_, limit, refused):
    """Kubernetes rejects a pod whose limit is below its request: the manifest refuses it first, naming both flags."""
    for resource in ("cpu", "memory"):
        kwargs = {resource: request_, f"{resource}_limit": limit}
        if refused:
            with pytest.raises(ArgumentError, match=f"--{resource}-limit {limit} is below --{resource} {request_}"):
                spec(name="job", workers=2, **kwargs)
        else:
            (container,) = _containers(manifest_objects(spec(name="job", workers=2, **kwargs))[-1])
            assert container["resources"] == {"requests": {resource: request_}, "limits": {resource: limit}}


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


flags = st.sampled_from(["--workers", "--ps", "--gpus", "--port", "--timeout", "--name", "--namespace", "--backup-claim", "--cpu", "--memory",
                         "--image", "--user", "--egress", "--cpu-limit", "--memory-limit"])  # fmt: skip


@BUDGET
@given(flag=flags, value=st.one_of(st.text(max_size=12), st.sampled_from(["0", "-1", "4097", "65", "8", "1e3", "My-Job", "a" * 64, "500m", "16Gi", "x y", "job", "open", "2147483648"])))
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
    elif key in ("cpu_limit", "memory_limit"):
        assert container["resources"]["limits"][key.split("_")[0]] == value
    elif key == "user":
        assert container["securityContext"]["runAsUser"] == int(value) > 0 and container["securityContext"]["runAsNonRoot"]
    elif key == "egress":
        assert objects[0]["spec"]["policyTypes"] == ["Ingress"] + (["Egress"] if value == "job" else [])
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
