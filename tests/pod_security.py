"""The Pod Security Standards' checks, as Kubernetes defines them, applied to a pod template, and a
NetworkPolicy evaluator: what a namespace labelled ``pod-security.kubernetes.io/enforce: restricted``
admits, and which pod may reach which port, read from the objects by Kubernetes's rules (written
from its documentation, not from autodist's manifest code) for tests/test_kubernetes.py.

:data:`VERSION` is the standard's version these checks are: the "Pod Security Standards" page of
kubernetes.io and pod-security-admission's checks at v1.35 (the restricted checks have not changed
since v1.25; v1.30 added the ``appArmorProfile`` fields, v1.32 two safe sysctls, v1.34 the
probes' ``host`` check). A pod template passes at v1.35 and at every version back to v1.31 where
it sets no sysctl and no probe, as autodist's do.
Each check is named as Kubernetes's pod-security-admission names it (``k8s.io/pod-security-admission/policy``).
"""

from __future__ import annotations

from typing import Any

VERSION = "v1.35"  # the newest: v1.32 added two safe sysctls, v1.34 the probes' host check; the manifests use neither

#: Baseline: the capabilities a container may add.
BASELINE_CAPABILITIES = frozenset(
    {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP",
     "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
)  # fmt: skip
#: Baseline: the sysctls a pod may set.
SAFE_SYSCTLS = frozenset(
    {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
     "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
     "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
     "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
)  # fmt: skip
#: Restricted: the volume types a pod may use.
RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
_SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}


def pod_templates(objects: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Every pod template of the objects (a Job's, each of a JobSet's replicated jobs'), named."""
    found = []
    for item in objects:
        if item["kind"] == "Job":
            found.append((item["metadata"]["name"], item["spec"]["template"]))
        elif item["kind"] == "JobSet":
            for replicated in item["spec"]["replicatedJobs"]:
                found.append((f"{item['metadata']['name']}/{replicated['name']}", replicated["template"]["spec"]["template"]))
    return found


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for key in ("containers", "initContainers", "ephemeralContainers") for c in spec.get(key, [])]


def baseline(template: dict[str, Any]) -> list[str]:
    """The Baseline checks a pod template (``metadata`` and ``spec``) fails, each as ``name: why``."""
    spec, annotations = template["spec"], template.get("metadata", {}).get("annotations", {})
    failed = []
    containers = _containers(spec)
    pod_context = spec.get("securityContext", {})
    contexts = [pod_context] + [c.get("securityContext", {}) for c in containers]
    if any(ctx.get("windowsOptions", {}).get("hostProcess") for ctx in contexts):
        failed.append("hostProcess: windowsOptions.hostProcess is true")
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            failed.append(f"hostNamespaces: {key} is true")
    for c in containers:
        context = c.get("securityContext", {})
        if context.get("privileged"):
            failed.append(f"privileged: container {c['name']}")
        added = set(context.get("capabilities", {}).get("add", [])) - BASELINE_CAPABILITIES
        if added:
            failed.append(f"capabilities_baseline: container {c['name']} adds {sorted(added)}")
        if any(port.get("hostPort") for port in c.get("ports", [])):
            failed.append(f"hostPorts: container {c['name']}")
        if context.get("procMount", "Default") != "Default":
            failed.append(f"procMount: container {c['name']}")
        handlers = [c.get(probe, {}) for probe in ("livenessProbe", "readinessProbe", "startupProbe")]
        handlers += [c.get("lifecycle", {}).get(hook, {}) for hook in ("postStart", "preStop")]
        if any(handler.get(kind, {}).get("host") for handler in handlers for kind in ("httpGet", "tcpSocket")):
            failed.append(f"probe: container {c['name']} sets a host")
    if any("hostPath" in volume for volume in spec.get("volumes", [])):
        failed.append("hostPathVolumes: a hostPath volume")
    for key, value in annotations.items():
        if key.startswith("container.apparmor.security.beta.kubernetes.io/") and value not in ("runtime/default", "") and not value.startswith("localhost/"):
            failed.append(f"appArmorProfile: annotation {key}: {value}")
    for ctx in contexts:
        profile = ctx.get("appArmorProfile", {}).get("type")
        if profile not in (None, "RuntimeDefault", "Localhost"):
            failed.append(f"appArmorProfile: {profile}")
        selinux = ctx.get("seLinuxOptions", {})
        if selinux.get("type", "") not in _SELINUX_TYPES or selinux.get("user") or selinux.get("role"):
            failed.append(f"seLinuxOptions: {selinux}")
        if ctx.get("seccompProfile", {}).get("type") == "Unconfined":
            failed.append("seccompProfile_baseline: Unconfined")
    unsafe = {s["name"] for s in pod_context.get("sysctls", [])} - SAFE_SYSCTLS
    if unsafe:
        failed.append(f"sysctls: {sorted(unsafe)}")
    return failed


def restricted(template: dict[str, Any]) -> list[str]:
    """The Restricted checks (Baseline's included) a pod template fails, each as ``name: why``."""
    failed = baseline(template)
    spec = template["spec"]
    containers = _containers(spec)
    pod_context = spec.get("securityContext", {})
    for volume in spec.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            failed.append(f"restrictedVolumes: volume {volume['name']} is {sorted(kinds)}")
    for c in containers:
        context = c.get("securityContext", {})
        if context.get("allowPrivilegeEscalation") is not False:
            failed.append(f"allowPrivilegeEscalation: container {c['name']} does not set it false")
        non_root = context.get("runAsNonRoot", pod_context.get("runAsNonRoot"))
        if non_root is not True:
            failed.append(f"runAsNonRoot: container {c['name']} (nor the pod) sets it true")
        if context.get("seccompProfile", {}).get("type") == "Unconfined":
            failed.append(f"seccompProfile_restricted: container {c['name']} is Unconfined")
        seccomp = context.get("seccompProfile", pod_context.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            failed.append(f"seccompProfile_restricted: container {c['name']} has {seccomp}")
        capabilities = context.get("capabilities", {})
        if "ALL" not in capabilities.get("drop", []):
            failed.append(f"capabilities_restricted: container {c['name']} does not drop ALL")
        if set(capabilities.get("add", [])) - {"NET_BIND_SERVICE"}:
            failed.append(f"capabilities_restricted: container {c['name']} adds {capabilities['add']}")
    if pod_context.get("runAsNonRoot") is False:
        failed.append("runAsNonRoot: the pod sets it false")
    if any(ctx.get("runAsUser") == 0 for ctx in [pod_context] + [c.get("securityContext", {}) for c in containers]):
        failed.append("runAsUser: 0")
    return failed


# ----------------------------------------------------------------------------- NetworkPolicy


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A label selector (``matchLabels``, ``matchExpressions``); ``{}`` selects everything."""
    if selector is None:
        return False
    if any(labels.get(key) != value for key, value in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        held = key in labels
        if operator == "In" and not (held and labels[key] in values):
            return False
        if operator == "NotIn" and held and labels[key] in values:
            return False
        if operator == "Exists" and not held:
            return False
        if operator == "DoesNotExist" and held:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"not a label selector operator: {operator}")
    return True


def _port_matches(rule_ports: list[dict[str, Any]] | None, port: int, protocol: str) -> bool:
    if not rule_ports:  # no ports: every port
        return True
    for item in rule_ports:
        if item.get("protocol", "TCP") != protocol:
            continue
        if "port" not in item:
            return True
        first = item["port"]
        assert isinstance(first, int), "a named port needs the container's ports: none are named here"
        if first <= port <= item.get("endPort", first):
            return True
    return False


def _peer_matches(peer: dict[str, Any], policy_namespace: str, pod: dict[str, Any]) -> bool:
    if "ipBlock" in peer:
        raise NotImplementedError("an ipBlock peer: the evaluator reasons about pods, not addresses")
    namespace_selector = peer.get("namespaceSelector")
    if namespace_selector is None:
        in_namespace = pod["namespace"] == policy_namespace
    else:
        in_namespace = _selects(namespace_selector, pod.get("namespace_labels", {}))
    pod_selector = peer.get("podSelector", {})
    return in_namespace and _selects(pod_selector, pod["labels"])


def _types(policy: dict[str, Any]) -> list[str]:
    """``policyTypes``, or where unset Kubernetes's default: Ingress, and Egress where it has egress rules."""
    spec = policy["spec"]
    return spec.get("policyTypes") or ["Ingress"] + (["Egress"] if spec.get("egress") else [])


def reachable(policies: list[dict[str, Any]], source: dict[str, Any], target: dict[str, Any], port: int, protocol: str = "TCP") -> bool:
    """Whether a connection from ``source`` to ``target``'s ``port`` is let through: the source's
    egress and the target's ingress both allow it."""
    return egress_allowed(policies, source, target, port, protocol) and ingress_allowed(policies, source, target, port, protocol)


#: Each direction of a policy: its type, its rules' key, the key of a rule's peers, and which end of a
#: connection the policy selects (the other end is the peer).
_DIRECTIONS = {"Ingress": ("ingress", "from", "target"), "Egress": ("egress", "to", "source")}


def _allowed(direction: str, policies: list[dict[str, Any]], ends: dict[str, dict[str, Any]], port: int, protocol: str) -> bool:
    """One direction of a connection (``ends``: its ``source`` and ``target`` pods, each as
    ``{"namespace", "labels"[, "namespace_labels"]}``) by the NetworkPolicies: a pod no policy of its
    namespace selects for that direction is open to everything; a selected pod allows what any rule
    of any such policy allows. (Kubernetes's semantics; what a CNI that enforces them does.)"""
    rules_key, peers_key, selected = _DIRECTIONS[direction]
    pod, peer = ends[selected], ends["source" if selected == "target" else "target"]
    chosen = [
        policy for policy in policies
        if policy["metadata"].get("namespace", "default") == pod["namespace"]
        and direction in _types(policy)
        and _selects(policy["spec"]["podSelector"], pod["labels"])
    ]  # fmt: skip
    if not chosen:
        return True
    for policy in chosen:
        namespace = policy["metadata"].get("namespace", "default")
        for rule in policy["spec"].get(rules_key, []):
            peers = rule.get(peers_key)
            if (not peers or any(_peer_matches(item, namespace, peer) for item in peers)) and _port_matches(rule.get("ports"), port, protocol):
                return True
    return False


def ingress_allowed(policies: list[dict[str, Any]], source: dict[str, Any], target: dict[str, Any], port: int, protocol: str = "TCP") -> bool:
    """Whether ``target``'s ingress rules let ``source`` open ``port`` on it."""
    return _allowed("Ingress", policies, {"source": source, "target": target}, port, protocol)


def egress_allowed(policies: list[dict[str, Any]], source: dict[str, Any], target: dict[str, Any], port: int, protocol: str = "TCP") -> bool:
    """Whether ``source``'s egress rules let it open ``port`` on ``target``."""
    return _allowed("Egress", policies, {"source": source, "target": target}, port, protocol)
