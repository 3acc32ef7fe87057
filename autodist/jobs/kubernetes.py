"""The Kubernetes manifest that runs a script on N workers (optionally with parameter servers):
``python -m autodist manifest`` prints it, ready for ``kubectl apply -f -`` (docs/kubernetes.md
explains every field it sets).

- Indexed Jobs (the default; Kubernetes 1.26 or later): a headless Service and one indexed Job
  per role (``<name>`` for the workers; ``<name>-chief`` and ``<name>-ps`` with parameter
  servers), their pods named ``<job>-<index>`` under the Service.
- A JobSet (``--jobset``; the JobSet controller installed): one replicated job per role, under
  the JobSet's own headless Service.

- A NetworkPolicy per job, created first: the task ports (TensorFlow's gRPC servers, which
  authenticate nobody) take connections from the job's own pods only; ``--egress job`` closes the
  pods' egress too, but for the job's own pods and the cluster's DNS.

Every pod meets the restricted Pod Security Standard: a non-root user (``--user``, default
:data:`DEFAULT_USER`), no privilege escalation, every capability dropped, the runtime's seccomp
profile, no service account token, and a read-only root file system with ``emptyDir`` volumes where
Python, TensorFlow and Keras write (``/tmp`` and ``HOME``). ``--allow-root`` (for images that
cannot run as another user) and ``--writable-root`` each give one of those up, and the manifest
says what, in an annotation and a comment (:data:`GIVES_UP`).

Each pod learns its place from Kubernetes (``JOB_COMPLETION_INDEX``, its host name; in a JobSet,
its annotations) and from the variables the manifest passes, which
:mod:`autodist.detection.kubernetes` reads with the same :class:`KubernetesLayout`. The failure
policy restarts the same index when a pod exits 75 (autodist saved its state on SIGTERM) or is
evicted, and fails the job on any other exit; a backup volume (``--backup-claim``) keeps the saves
across restarts, so a restarted pod resumes at the step it saved.

Example:
    >>> spec = ManifestSpec.checked(name="mnist", workers="2", image="python:3.11", command=["python", "train.py"])
    >>> [item["kind"] for item in manifest_objects(spec)]
    ['NetworkPolicy', 'Service', 'Job']
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from autodist.detection.kubernetes import JOBSET_ENVS, MAX_TASKS, KubernetesLayout
from autodist.errors import ArgumentError
from autodist.jobs.exit_codes import PREEMPTED_EXIT_CODE
from autodist.settings import (
    BACKUP_DIR_ENV,
    K8S_NAME_ENV,
    K8S_PS_ENV,
    K8S_ROLE_ENV,
    K8S_SERVICE_ENV,
    K8S_WORKERS_ENV,
    PORT_ENV,
)

__all__ = [
    "BACKUP_MOUNT",
    "CONTAINER",
    "DEFAULT_USER",
    "GIVES_UP",
    "ManifestSpec",
    "manifest_comments",
    "manifest_objects",
    "to_yaml",
]

CONTAINER = "train"  # the container the failure policy's exit codes are read from
BACKUP_MOUNT = "/autodist-backup"
JOB_LABEL = "autodist/job"  # every pod of the job: the headless Service selects them by it
MAX_GPUS = 64  # per pod: more than any node has
#: The user (and group, and the volumes' group) a pod runs as, where ``--user`` does not say: not
#: root, and above the ids images and hosts give their own users (scanners ask for 10000 or more).
DEFAULT_USER = 10001
MAX_USER = 2**31 - 1  # Kubernetes's runAsUser is an int64; Linux ids stop below 2^32, and 2^31-1 is safe on both
#: Where a pod with a read-only root writes: an ``emptyDir`` each, ``HOME`` set to the second (Keras's
#: ~/.keras, caches), so neither the image's user nor its files matter.
SCRATCH = (("tmp", "/tmp"), ("home", "/home/autodist"))
#: The pods' egress: ``open`` (the default: datasets, buckets, package indexes stay reachable) or
#: ``job`` (the job's own pods and port 53, DNS, only).
EGRESS = ("open", "job")
#: The annotation that says what a manifest gives up of the restricted defaults (also written, as a
#: comment, above the YAML: :func:`manifest_comments`), by the flag that gives it up.
GIVES_UP_KEY = "autodist/gives-up"
GIVES_UP = MappingProxyType(
    {
        "--allow-root": (
            "--allow-root: the pods run as the image's user (root in most images). The restricted Pod Security "
            "Standard rejects them (runAsNonRoot), so a namespace that enforces it does not start them; the rest "
            "is kept: no privilege escalation, every capability dropped, the runtime's seccomp profile."
        ),
        "--writable-root": (
            "--writable-root: the container's root file system is writable, so a process that breaks in can change "
            "the image's files for the pod's life (scanners flag it: readOnlyRootFilesystem)."
        ),
    }
)

_NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")  # a DNS-1035 label: Service names must be one
# Kubernetes's quantity, unsigned
_QUANTITY = re.compile(r"(\d+(\.\d+)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+)?")
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*")  # registry/name:tag or @sha256:digest
#: JobSet's annotations on every pod, as the variables the pod reads (:data:`JOBSET_ENVS`).
_JOBSET_ANNOTATIONS = tuple(
    zip(
        JOBSET_ENVS,
        ("jobset.sigs.k8s.io/jobset-name", "jobset.sigs.k8s.io/replicatedjob-name", "jobset.sigs.k8s.io/job-index"),
    )
)


@dataclass(frozen=True)
class ManifestSpec:
    """The job a manifest describes, every field checked (:meth:`checked`)."""

    layout: KubernetesLayout
    image: str
    command: tuple[str, ...]
    namespace: str | None = None
    gpus: int = 0
    cpu: str | None = None
    memory: str | None = None
    backup_claim: str | None = None
    timeout: int | None = None
    user: int | None = DEFAULT_USER  # None: --allow-root, the image's user
    writable_root: bool = False
    egress: str = "open"
    cpu_limit: str | None = None
    memory_limit: str | None = None

    @classmethod
    def checked(
        cls,
        *,
        name: str,
        workers: Any,
        image: str,
        command: list[str],
        ps: Any = 0,
        namespace: str | None = None,
        gpus: Any = 0,
        cpu: str | None = None,
        memory: str | None = None,
        port: Any = 2222,
        backup_claim: str | None = None,
        timeout: Any = None,
        jobset: bool = False,
        user: Any = None,
        allow_root: bool = False,
        writable_root: bool = False,
        egress: Any = "open",
        cpu_limit: str | None = None,
        memory_limit: str | None = None,
    ) -> ManifestSpec:
        """The spec, or an :class:`~autodist.errors.ArgumentError` that names the flag, the value,
        what was expected and the fix."""
        num_workers = _int("--workers", workers, 1, MAX_TASKS)
        num_ps = _int("--ps", ps, 0, MAX_TASKS)
        tasks = num_workers + num_ps + (1 if num_ps else 0)
        layout = KubernetesLayout(
            _label("--name", name), name, num_workers, num_ps, _int("--port", port, 1, 65536 - tasks), jobset
        )
        longest = max((layout.hostname(role, count - 1) for role, count in layout.counts().items()), key=len)
        if len(longest) > 63:
            raise ArgumentError(
                f"--name {name!r} makes the host name {longest!r}, {len(longest)} characters (Received: --name "
                f"{name}). "
                "Expected at most 63: Kubernetes cuts longer host names, and the pods would not find each other. "
                "Choose a shorter name."
            )
        if len(image) > 512 or not _IMAGE.fullmatch(image):
            raise ArgumentError(
                f"--image {image!r} is not an image reference (Received: --image {json.dumps(image)}). Expected a name "
                "such as python:3.11 or registry/train:1."
            )
        if not command:
            raise ArgumentError(
                "No command was given (Received: nothing after the flags). Expected the command each pod runs, for "
                "example: -- python train.py."
            )
        if allow_root and user is not None:
            raise ArgumentError(
                f"--user and --allow-root were both given (Received: --user {json.dumps(str(user))} --allow-root). "
                "Expected one: --user runs the pods as that user, --allow-root as the image's own. Drop one."
            )
        run_as = None if allow_root else DEFAULT_USER if user is None else _user(user)
        if egress not in EGRESS:
            raise ArgumentError(
                f"--egress must be one of {', '.join(EGRESS)} (Received: --egress {json.dumps(str(egress))}). "
                "Pass --egress open (the default: the pods' egress as the cluster has it) or --egress job (the "
                "job's own pods and DNS only)."
            )
        quantities = {"--cpu": cpu, "--memory": memory, "--cpu-limit": cpu_limit, "--memory-limit": memory_limit}
        for flag, quantity in quantities.items():
            if quantity is not None and not _QUANTITY.fullmatch(quantity):
                raise ArgumentError(
                    f"{flag} {quantity!r} is not a Kubernetes quantity (Received: {flag} {json.dumps(quantity)}). "
                    "Expected for example 4, 500m or 16Gi."
                )
        for resource, request, limit in (("cpu", cpu, cpu_limit), ("memory", memory, memory_limit)):
            if request is not None and limit is not None and _amount(limit) < _amount(request):
                raise ArgumentError(
                    f"--{resource}-limit {limit} is below --{resource} {request} (Received: --{resource} {request} "
                    f"--{resource}-limit {limit}). Expected a limit at least the request: Kubernetes rejects such "
                    f"pods. Raise --{resource}-limit, or lower --{resource}."
                )
        return cls(
            layout,
            image,
            tuple(command),
            _label("--namespace", namespace) if namespace is not None else None,
            _int("--gpus", gpus, 0, MAX_GPUS),
            cpu,
            memory,
            _label("--backup-claim", backup_claim) if backup_claim is not None else None,
            _int("--timeout", timeout, 1, 7 * 24 * 3600) if timeout is not None else None,
            run_as,
            bool(writable_root),
            egress,
            cpu_limit,
            memory_limit,
        )

    def gives_up(self) -> list[str]:
        """What these pods give up of the restricted defaults (:data:`GIVES_UP`), by flag."""
        flags = (("--allow-root", self.user is None), ("--writable-root", self.writable_root))
        return [GIVES_UP[flag] for flag, given in flags if given]


def _user(raw: Any) -> int:
    """``--user``: a user id that is not root's."""
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = -1
    if value == 0:
        raise ArgumentError(
            f"--user {raw} is root (Received: --user {json.dumps(str(raw))}). Expected a user id from 1: the "
            "restricted Pod Security Standard rejects root pods. For an image that must run as root, pass "
            "--allow-root instead of --user (docs/kubernetes.md says what it gives up)."
        )
    if not 1 <= value <= MAX_USER:
        raise ArgumentError(
            f"--user must be a user id from 1 to {MAX_USER} (Received: --user {json.dumps(str(raw))}). Pass the id "
            f"the image's files expect, or leave --user out for {DEFAULT_USER}."
        )
    return value


_UNITS = MappingProxyType(
    {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
    | {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
)


def _amount(quantity: str) -> float:
    """A Kubernetes quantity (checked by :data:`_QUANTITY`) as a number: ``500m`` 0.5, ``16Gi`` 2**34."""
    number = re.match(r"(\d+(\.\d+)?|\.\d+)([eE][+-]?\d+)?", quantity)
    assert number is not None
    return float(number.group(0)) * _UNITS.get(quantity[number.end() :], 1.0)


def _int(flag: str, raw: Any, low: int, high: int) -> int:
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise ArgumentError(
            f"{flag} must be an integer from {low} to {high} (Received: {flag} {json.dumps(str(raw))})."
        )
    return value


def _label(flag: str, raw: str) -> str:
    if len(raw) > 63 or not _NAME.fullmatch(raw):
        raise ArgumentError(
            f"{flag} {raw!r} is not a DNS label (Received: {flag} {json.dumps(raw)}). Expected at most 63 lowercase "
            "letters, digits and '-', starting with a letter and ending with a letter or digit, for example "
            "mnist-train."
        )
    return raw


def manifest_objects(spec: ManifestSpec) -> list[dict[str, Any]]:
    """The Kubernetes objects, in the order ``kubectl apply`` creates them."""
    layout = spec.layout
    if layout.jobset:
        jobs = [
            {"name": layout.job_name(role), "replicas": 1, "template": {"spec": _job(spec, role, count)}}
            for role, count in layout.counts().items()
        ]
        jobset = {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": _metadata(spec, layout.name),
            # publishNotReadyAddresses: a pod resolves its peers as they start, before they are ready
            "spec": {
                "network": {"enableDNSHostnames": True, "subdomain": layout.service, "publishNotReadyAddresses": True},
                "replicatedJobs": jobs,
            },
        }
        return [_network_policy(spec), jobset]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(spec, layout.service),
        "spec": {"clusterIP": "None", "selector": {JOB_LABEL: layout.name}, "publishNotReadyAddresses": True},
    }
    jobs = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": _metadata(spec, layout.job_name(role)),
            "spec": _job(spec, role, count),
        }
        for role, count in layout.counts().items()
    ]
    return [_network_policy(spec), service, *jobs]


def _network_policy(spec: ManifestSpec) -> dict[str, Any]:
    """The job's NetworkPolicy: its pods take connections from the job's own pods only, on any port
    (the task ports, and the ports NCCL opens between GPU workers), and from no one else (a pod a
    policy selects for Ingress takes only what a rule allows). With ``--egress job``, the pods reach
    only each other and port 53 (DNS, wherever the cluster serves it: kube-dns, a node-local cache)."""
    ours = {"podSelector": {"matchLabels": {JOB_LABEL: spec.layout.name}}}
    policy: dict[str, Any] = {
        "podSelector": ours["podSelector"],
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [ours]}],
    }
    if spec.egress == "job":
        policy["policyTypes"].append("Egress")
        policy["egress"] = [
            {"to": [ours]},
            {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
        ]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(spec, f"{spec.layout.name}-tasks"),
        "spec": policy,
    }


def _metadata(spec: ManifestSpec, name: str) -> dict[str, Any]:
    """An object's: its pods' labels and annotations (:func:`_pod_metadata`), its name and namespace."""
    pod = _pod_metadata(spec)
    labels = pod.pop("labels") | {"app.kubernetes.io/managed-by": "autodist"}
    namespace = {} if spec.namespace is None else {"namespace": spec.namespace}
    return {"name": name, "labels": labels, **namespace, **pod}


def _job(spec: ManifestSpec, role: str, count: int) -> dict[str, Any]:
    """One role's indexed Job spec: ``count`` pods at once, each index restarted after exit 75 or
    an eviction (its replacement started once it has ended, never beside it), the job failed by
    any other exit."""
    restart = {"containerName": CONTAINER, "operator": "In", "values": [PREEMPTED_EXIT_CODE]}
    fail = {"containerName": CONTAINER, "operator": "NotIn", "values": [0, PREEMPTED_EXIT_CODE]}
    job: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": count,
        "parallelism": count,
        "backoffLimit": 0,
        # a replacement pod starts once its predecessor has ended (docs/kubernetes.md)
        "podReplacementPolicy": "Failed",
        "podFailurePolicy": {
            "rules": [
                {"action": "Ignore", "onExitCodes": restart},
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                {"action": "FailJob", "onExitCodes": fail},
            ]
        },
        "template": {"metadata": _pod_metadata(spec), "spec": _pod(spec, role)},
    }
    if spec.timeout is not None:
        job["activeDeadlineSeconds"] = spec.timeout
    return job


def _pod_metadata(spec: ManifestSpec) -> dict[str, Any]:
    """A pod's labels (the Service and the NetworkPolicy select the job's pods by them), and what it
    gives up of the restricted defaults, where it does (``kubectl get pod -o yaml`` shows it)."""
    gives_up = {"annotations": {GIVES_UP_KEY: " ".join(spec.gives_up())}} if spec.gives_up() else {}
    return {"labels": {JOB_LABEL: spec.layout.name}, **gives_up}


def _pod(spec: ManifestSpec, role: str) -> dict[str, Any]:
    layout = spec.layout
    env = [
        {"name": K8S_WORKERS_ENV, "value": str(layout.workers)},
        {"name": K8S_PS_ENV, "value": str(layout.ps)},
        {"name": K8S_SERVICE_ENV, "value": layout.service},
        {"name": PORT_ENV, "value": str(layout.port)},
    ]
    if layout.jobset:
        env += [
            {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{key}']"}}}
            for name, key in _JOBSET_ANNOTATIONS
        ]
    else:
        env += [{"name": K8S_NAME_ENV, "value": layout.name}, {"name": K8S_ROLE_ENV, "value": role}]
    env.append({"name": "HOME", "value": SCRATCH[1][1]})
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": spec.image,
        # every pod runs the image the tag names now: a node's older copy of the tag would train other code
        "imagePullPolicy": "Always",
        "command": list(spec.command),
        "env": env,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": not spec.writable_root,
        },
    }
    if spec.user is not None:
        container["securityContext"] |= {"runAsNonRoot": True, "runAsUser": spec.user, "runAsGroup": spec.user}
    resources = _resources(spec, role)
    if resources:
        container["resources"] = resources
    pod_context: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
    if spec.user is not None:  # the volumes (the backup claim) writable by the pods' group
        pod_context |= {"runAsNonRoot": True, "runAsUser": spec.user, "runAsGroup": spec.user, "fsGroup": spec.user}
        pod_context["fsGroupChangePolicy"] = "OnRootMismatch"  # not a walk of the whole claim at every start
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,  # training never calls the Kubernetes API
        "securityContext": pod_context,
        "containers": [container],
    }
    if not layout.jobset:
        pod["subdomain"] = layout.service  # a JobSet sets its own
    mounts = [{"name": name, "mountPath": path} for name, path in SCRATCH]
    volumes: list[dict[str, Any]] = [{"name": name, "emptyDir": {}} for name, _ in SCRATCH]
    if spec.backup_claim is not None:
        env.append({"name": BACKUP_DIR_ENV, "value": BACKUP_MOUNT})
        mounts.append({"name": "backup", "mountPath": BACKUP_MOUNT})
        volumes.append({"name": "backup", "persistentVolumeClaim": {"claimName": spec.backup_claim}})
    if spec.gpus and role == "worker":  # NCCL between a pod's GPUs needs more than the 64 MiB /dev/shm a pod has
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory"}})
    container["volumeMounts"], pod["volumes"] = mounts, volumes
    return pod


def _resources(spec: ManifestSpec, role: str) -> dict[str, Any]:
    """Requests (and the GPU limit) of a pod: GPUs for workers only (the chief coordinates and the
    parameter servers hold variables: neither computes a step)."""
    requests = {key: value for key, value in (("cpu", spec.cpu), ("memory", spec.memory)) if value is not None}
    limits = {
        key: value for key, value in (("cpu", spec.cpu_limit), ("memory", spec.memory_limit)) if value is not None
    }
    if spec.gpus and role == "worker":
        limits["nvidia.com/gpu"] = spec.gpus
    return {key: value for key, value in (("requests", requests), ("limits", limits)) if value}


_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9._/-]*")
_RESERVED = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def _scalar(value: Any) -> str:
    """A YAML scalar: a bool, an int, an empty dict or list (:func:`_lines` writes the others as blocks), a string."""
    if isinstance(value, (bool, int, dict, list)):
        return json.dumps(value)
    text = str(value)
    return text if _PLAIN.fullmatch(text) and text.lower() not in _RESERVED else json.dumps(text)


def manifest_comments(objects: list[dict[str, Any]]) -> str:
    """What the objects give up of the restricted defaults (their :data:`GIVES_UP_KEY` annotation),
    as YAML comments to write above them: a reader of the file sees it before applying it."""
    said = dict.fromkeys(item["metadata"].get("annotations", {}).get(GIVES_UP_KEY) for item in objects)
    return "".join(f"# autodist: {note}\n" for note in said if note)


def to_yaml(objects: list[dict[str, Any]]) -> str:
    """The objects as one YAML stream (``---`` between them): block style, a string quoted where a
    YAML reader could take it for anything but that string.

    Example:
        >>> print(to_yaml([{"kind": "Job", "spec": {"completions": 2, "values": ["on", 75]}}]))
        kind: Job
        spec:
          completions: 2
          values:
          - "on"
          - 75
        <BLANKLINE>
    """
    return "---\n".join("\n".join(_lines(item, 0)) + "\n" for item in objects)


def _lines(value: Any, indent: int) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{_scalar(key)}:")
                lines += _lines(item, indent + (1 if isinstance(item, dict) else 0))
            else:
                lines.append(f"{pad}{_scalar(key)}: {_scalar(item)}")
        return lines
    for item in value:
        if isinstance(item, (dict, list)) and item:
            nested = _lines(item, indent + 1)
            lines.append(f"{pad}- {nested[0].lstrip()}")
            lines += nested[1:]
        else:
            lines.append(f"{pad}- {_scalar(item)}")
    return lines
