"""Kubernetes: a pod of an indexed Job, or of a JobSet's replicated job, reads its cluster from
what Kubernetes and its manifest give it (docs/kubernetes.md).

Kubernetes gives a pod of an indexed Job ``JOB_COMPLETION_INDEX`` and the host name
``<job name>-<index>``; with a headless Service as the pod template's ``subdomain``, the pods
resolve each other as ``<host name>.<service>``. A JobSet names its pods
``<jobset>-<replicated job>-<job index>-<index>`` under its own subdomain. What Kubernetes does
not give a pod, the manifest passes (``python -m autodist manifest`` writes it):

- ``AUTODIST_K8S_WORKERS`` (the marker: without it, an indexed Job is a batch of independent
  pods, not a cluster) and ``AUTODIST_K8S_PS``: the task counts;
- ``AUTODIST_K8S_SERVICE``: the headless Service, the pods' subdomain;
- ``AUTODIST_K8S_NAME`` and ``AUTODIST_K8S_ROLE``: the Job's name and this pod's role (``chief``,
  ``worker``, ``ps``). In a JobSet, ``JOBSET_NAME``, ``REPLICATED_JOB_NAME`` and ``JOB_INDEX``
  (the manifest maps JobSet's annotations to them) say the same, and win;
- ``AUTODIST_PORT``: the first task's port.

:class:`KubernetesLayout` is the one description of the job that both the manifest writer
(:mod:`autodist.jobs.kubernetes`) and the pod's reader use: the Jobs, the host names, and each
task's address. Each task listens on the port plus its place in the cluster (as TensorFlow's
SLURM resolver numbers a node's tasks), so pods that share a node's network (``hostNetwork``)
never collide. Every inconsistency is a :class:`~autodist.errors.ClusterConfigError` that names
the variable.

Example:
    >>> layout = KubernetesLayout("mnist", "mnist-workers", workers=2)
    >>> layout.cluster_spec()
    {'worker': ['mnist-0.mnist-workers:2222', 'mnist-1.mnist-workers:2223']}
    >>> KubernetesLayout("mnist", "mnist-workers", workers=2, ps=1, jobset=True).hostname("ps", 0)
    'mnist-ps-0-0'
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from autodist.detection.cluster_spec import ClusterInfo, shorten, validate_cluster
from autodist.errors import ClusterConfigError
from autodist.settings import K8S_NAME_ENV as NAME_ENV
from autodist.settings import K8S_PS_ENV as PS_ENV
from autodist.settings import K8S_ROLE_ENV as ROLE_ENV
from autodist.settings import K8S_SERVICE_ENV as SERVICE_ENV
from autodist.settings import K8S_WORKERS_ENV as WORKERS_ENV
from autodist.settings import PORT_ENV, port_setting

__all__ = [
    "INDEX_ENV",
    "JOBSET_ENVS",
    "NAME_ENV",
    "PS_ENV",
    "ROLE_ENV",
    "ROLES",
    "SERVICE_ENV",
    "WORKERS_ENV",
    "KubernetesEnvironment",
    "KubernetesLayout",
]

INDEX_ENV = "JOB_COMPLETION_INDEX"  # Kubernetes sets it in every pod of an indexed Job
#: JobSet's annotations, as the manifest maps them to variables: the JobSet, the replicated job
#: (the role) and the Job's index within it (0: one Job per role).
JOBSET_ENVS = ("JOBSET_NAME", "REPLICATED_JOB_NAME", "JOB_INDEX")
#: The roles, in the cluster's order: a chief only with parameter servers (it coordinates them).
ROLES = ("chief", "worker", "ps")
#: Workers and parameter servers one job may have: far more than any cluster runs.
MAX_TASKS = 4096
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


@dataclass(frozen=True)
class KubernetesLayout:
    """One training job on Kubernetes: its name, its headless Service, the task counts, the first
    port, and whether it is a JobSet (one replicated job per role) or indexed Jobs (one per role:
    ``<name>`` for the workers, ``<name>-chief``, ``<name>-ps``)."""

    name: str
    service: str
    workers: int
    ps: int = 0
    port: int = 2222
    jobset: bool = False

    def counts(self) -> dict[str, int]:
        """Each role's task count, in the cluster's order (roles without tasks left out)."""
        counts = {"chief": 1 if self.ps else 0, "worker": self.workers, "ps": self.ps}
        return {role: count for role, count in counts.items() if count}

    def job_name(self, role: str) -> str:
        """The Job (indexed Jobs) or replicated job (JobSet) that runs ``role``."""
        if self.jobset:
            return role
        return self.name if role == "worker" else f"{self.name}-{role}"

    def hostname(self, role: str, index: int) -> str:
        """The host name Kubernetes gives the pod of ``role`` and ``index``."""
        if self.jobset:
            return f"{self.name}-{role}-0-{index}"
        return f"{self.job_name(role)}-{index}"

    def cluster_spec(self) -> dict[str, list[str]]:
        """Every task's address, ``<host name>.<service>:<port + place in the cluster>``."""
        ports = itertools.count(self.port)
        return {
            role: [f"{self.hostname(role, index)}.{self.service}:{next(ports)}" for index in range(count)]
            for role, count in self.counts().items()
        }


class KubernetesEnvironment:
    """A pod of a training job on Kubernetes (see the module's docstring): detected by
    ``AUTODIST_K8S_WORKERS``, which the manifest passes."""

    name = "Kubernetes"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return bool(environ.get(WORKERS_ENV, "").strip())  # empty is unset, as for every setting

    @staticmethod
    def read(environ: Mapping[str, str]) -> ClusterInfo | None:
        names = (WORKERS_ENV, PS_ENV, SERVICE_ENV, NAME_ENV, ROLE_ENV, INDEX_ENV, "HOSTNAME", PORT_ENV, *JOBSET_ENVS)
        received = ", ".join(f"{name}={shorten(environ[name])}" for name in names if name in environ)
        layout, role = _layout(environ, received)
        index = _index(environ, layout, role, received)
        expected = layout.hostname(role, index)
        host = environ.get("HOSTNAME")
        if host is not None and host.split(".")[0] != expected:
            raise ClusterConfigError(
                f"HOSTNAME={host!r} is not the host name Kubernetes gives {role} {index} of "
                f"{'JobSet' if layout.jobset else 'Job'} {layout.name!r}, {expected!r} (Received: {received}). "
                f"The pods would not find each other. Expected the Job's name in {NAME_ENV} "
                f"(a JobSet's in JOBSET_NAME) and the role in {ROLE_ENV}: write the manifest again "
                "with python -m autodist manifest, or correct them."
            )
        source = f"Kubernetes {'JobSet' if layout.jobset else 'indexed Job'} {layout.name}"
        return validate_cluster(layout.cluster_spec(), role, index, source=source, received=received)


def _count(environ: Mapping[str, str], name: str, low: int, received: str) -> int:
    raw = environ.get(name, "").strip() or ("0" if name == PS_ENV else "")  # empty is unset, as for every setting
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if not low <= value <= MAX_TASKS:
        raise ClusterConfigError(
            f"{name}={shorten(raw)} is not a task count (Received: {received}). Expected an integer "
            f"from {low} to {MAX_TASKS}, as the manifest passes it: the Job's completions."
        )
    return value


def _label(environ: Mapping[str, str], name: str, what: str, received: str) -> str:
    raw = environ.get(name, "")
    if not raw.strip():
        raise ClusterConfigError(
            f"{name} is missing (Received: {received}). Expected {what}: the pods find each other "
            "through it. Pass it in the pod's env, as python -m autodist manifest writes it."
        )
    if len(raw) > 63 or not _DNS_LABEL.fullmatch(raw):
        raise ClusterConfigError(
            f"{name}={shorten(raw)} is not a DNS label (Received: {received}). Expected {what}: at "
            "most 63 lowercase letters, digits and '-', starting and ending with a letter or digit."
        )
    return raw


def _layout(environ: Mapping[str, str], received: str) -> tuple[KubernetesLayout, str]:
    """The job's layout and this pod's role, from the variables (a JobSet's win)."""
    workers = _count(environ, WORKERS_ENV, 1, received)
    ps = _count(environ, PS_ENV, 0, received)
    service = _label(environ, SERVICE_ENV, "the name of the job's headless Service (the pods' subdomain)", received)
    jobset = "JOBSET_NAME" in environ
    if jobset:
        name = _label(environ, "JOBSET_NAME", "the JobSet's name", received)
        role_variable = "REPLICATED_JOB_NAME"
        if environ.get("JOB_INDEX", "0").strip() != "0":
            raise ClusterConfigError(
                f"JOB_INDEX={shorten(environ['JOB_INDEX'])}: the replicated job has more than one "
                f"Job (Received: {received}). Expected 0: one Job per role (replicas: 1), its "
                "pods the role's tasks. Set the replicated job's replicas to 1 and its completions "
                "to the task count."
            )
    else:
        name = _label(environ, NAME_ENV, "the indexed Job's name (of the workers' Job)", received)
        role_variable = ROLE_ENV
    layout = KubernetesLayout(name, service, workers, ps, port_setting(environ, PORT_ENV, 2222), jobset)
    role = environ.get(role_variable, "worker")
    if role not in layout.counts():
        raise ClusterConfigError(
            f"{role_variable}={shorten(role)} is not a role of this job (Received: {received}). "
            f"Expected one of {', '.join(layout.counts())}"
            f"{' (a chief and ps only with ' + PS_ENV + ' above 0)' if role in ROLES else ''}."
        )
    last = layout.port + sum(layout.counts().values()) - 1
    if last > 65535:
        raise ClusterConfigError(
            f"{PORT_ENV}={layout.port} gives the last of {sum(layout.counts().values())} tasks port {last}, "
            f"past 65535 (Received: {received}). Expected a first port of at most "
            f"{65536 - sum(layout.counts().values())}."
        )
    return layout, role


def _index(environ: Mapping[str, str], layout: KubernetesLayout, role: str, received: str) -> int:
    """This pod's index within its role, from ``JOB_COMPLETION_INDEX``, in range of the count."""
    raw = environ.get(INDEX_ENV)
    if raw is None:
        raise ClusterConfigError(
            f"{INDEX_ENV} is missing (Received: {received}). Expected the index Kubernetes sets "
            "in each pod of an indexed Job: set the Job's completionMode to Indexed."
        )
    try:
        index = int(raw.strip())
    except ValueError:
        raise ClusterConfigError(
            f"{INDEX_ENV}={shorten(raw)} is not an index (Received: {received}). Expected the integer "
            "Kubernetes sets in each pod of an indexed Job; do not set it yourself."
        ) from None
    count = layout.counts()[role]
    if not 0 <= index < count:
        counted = {"worker": WORKERS_ENV, "ps": PS_ENV}.get(role, "the one chief")
        raise ClusterConfigError(
            f"{INDEX_ENV}={shorten(raw)} is out of range for {count} {role} task(s) (Received: "
            f"{received}). Expected 0 to {count - 1}: the {role} Job's completions and {counted} "
            "disagree. Make them the same number."
        )
    return index
