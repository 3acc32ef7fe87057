"""What Kubernetes gives each pod of a manifest, read from the manifest's objects by Kubernetes's
own rules (written here from its documentation, not from autodist's layout), for the tests of
tests/test_kubernetes.py and the pod-side run of tests/scenarios/kubernetes_pods.py:

- an indexed Job's pod ``i``: ``JOB_COMPLETION_INDEX=i`` and the host name ``<job name>-<i>``,
  under the pod template's ``subdomain``;
- a JobSet's: the host name ``<jobset>-<replicated job>-<job index>-<i>`` under the JobSet's
  ``network.subdomain`` (the JobSet's name when unset), and JobSet's annotations
  (``jobset.sigs.k8s.io/...``) wherever the pod's env reads them (``fieldRef``);
- the container's ``env`` values, ``command`` and volume mounts;
- its security context (:class:`Security`), the container's fields over the pod's.

And the failure policy's verdict on an exit code (:func:`verdict`), as the Job controller
applies ``podFailurePolicy``: the first rule that matches decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Security:
    """What the container runs with: its user (``None``: the image's, root here), whether its root
    file system is read-only, whether it may gain privileges (``allowPrivilegeEscalation``), and
    whether every capability is dropped."""

    user: int | None = None
    group: int | None = None
    read_only_root: bool = False
    no_new_privileges: bool = False
    drop_all: bool = False


def security(pod_spec: dict[str, Any], container: dict[str, Any]) -> Security:
    """The container's security context over the pod's, as the kubelet merges them."""
    pod_context, context = pod_spec.get("securityContext", {}), container.get("securityContext", {})

    def merged(key: str) -> Any:
        return context.get(key, pod_context.get(key))

    return Security(
        merged("runAsUser"),
        merged("runAsGroup"),
        bool(context.get("readOnlyRootFilesystem")),
        context.get("allowPrivilegeEscalation") is False,
        "ALL" in context.get("capabilities", {}).get("drop", []),
    )


@dataclass
class Pod:
    job: str  # the Job's name (a JobSet's child Job: <jobset>-<replicated job>-<job index>)
    index: int
    hostname: str
    subdomain: str
    env: dict[str, str]
    command: list[str]
    mounts: dict[str, str] = field(default_factory=dict)  # mount path: claim name ("emptyDir" for one)
    failure_policy: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    security: Security = field(default_factory=Security)

    @property
    def address(self) -> str:
        return f"{self.hostname}.{self.subdomain}"


def pods(objects: list[dict[str, Any]]) -> list[Pod]:
    """Every pod the objects make, in the order the objects list them."""
    made = []
    for item in objects:
        if item["kind"] == "Job":
            made += _job_pods(item["metadata"]["name"], item["spec"], item["spec"]["template"]["spec"].get("subdomain", ""), {})
        elif item["kind"] == "JobSet":
            name = item["metadata"]["name"]
            subdomain = item["spec"].get("network", {}).get("subdomain") or name
            for replicated in item["spec"]["replicatedJobs"]:
                for job_index in range(replicated.get("replicas", 1)):
                    annotations = {
                        "jobset.sigs.k8s.io/jobset-name": name,
                        "jobset.sigs.k8s.io/replicatedjob-name": replicated["name"],
                        "jobset.sigs.k8s.io/job-index": str(job_index),
                    }
                    job = f"{name}-{replicated['name']}-{job_index}"
                    made += _job_pods(job, replicated["template"]["spec"], subdomain, annotations)
    return made


def _job_pods(job: str, spec: dict[str, Any], subdomain: str, annotations: dict[str, str]) -> list[Pod]:
    assert spec.get("completionMode") == "Indexed", spec
    template = spec["template"]
    (container,) = template["spec"]["containers"]
    claims = {volume["name"]: volume.get("persistentVolumeClaim", {}).get("claimName", "emptyDir") for volume in template["spec"].get("volumes", [])}
    made = []
    for index in range(spec["completions"]):
        hostname = f"{job}-{index}"
        env = {"HOSTNAME": hostname, "JOB_COMPLETION_INDEX": str(index)}
        for entry in container.get("env", []):
            if "value" in entry:
                env[entry["name"]] = entry["value"]
            else:
                path = entry["valueFrom"]["fieldRef"]["fieldPath"]
                key = re.fullmatch(r"metadata\.annotations\['([^']+)'\]", path)
                assert key is not None and key.group(1) in annotations, path
                env[entry["name"]] = annotations[key.group(1)]
        mounts = {mount["mountPath"]: claims[mount["name"]] for mount in container.get("volumeMounts", [])}
        made.append(Pod(job, index, hostname, subdomain, env, list(container["command"]), mounts, spec.get("podFailurePolicy", {}),
                        dict(template.get("metadata", {}).get("labels", {})), security(template["spec"], container)))  # fmt: skip
    return made


def verdict(pod: Pod, exit_code: int, container: str = "train") -> str:
    """``"succeeded"`` (exit 0 with no rule for it), ``"Ignore"`` (the index starts again and the
    failure does not count), ``"FailJob"``, ``"FailIndex"`` or ``"Count"``, as the first matching
    rule of the pod's failure policy says; ``"Count"`` when none matches (the backoff limit decides).
    A pod that exits 0 succeeded: the policy reads failed pods only."""
    if exit_code == 0:
        return "succeeded"
    for rule in pod.failure_policy.get("rules", []):
        codes = rule.get("onExitCodes")
        if codes is None or codes.get("containerName", container) != container:
            continue
        inside = exit_code in codes["values"]
        if inside == (codes["operator"] == "In"):
            return rule["action"]
    return "Count"
