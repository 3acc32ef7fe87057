"""The pod side of a Kubernetes job, run on this machine: ``python kubernetes_pods.py OUTDIR CASES``.

CASES is JSON: ``[{"name": "k2", "workers": 2, "port": 2222, "kill_at": {"1": 9}}, ...]``, with
``"ps": N`` for parameter servers (and a chief) and ``"jobset": true`` for a JobSet. For each case
the driver asks ``python -m autodist manifest`` for the manifest (a backup claim), as a user would,
and starts every pod it describes (tests/scenarios/kubelet.py reads them by Kubernetes's rules):
the container's command and env, ``JOB_COMPLETION_INDEX`` and ``HOSTNAME``, the claim as a folder
under OUTDIR. ``kill_at`` gives some pods ``KILL_AT``, the step after which they get SIGTERM once.
A pod that fails starts again with the same index when the manifest's failure policy says
``Ignore`` (exit 75); ``FailJob`` stops the case's other pods. One more process runs the same
script alone, with no cluster: the reference.

Each pod runs with its security context (:func:`container`), as a container runtime applies it:
- its user: the driver's user namespace maps the manifest's ``runAsUser`` (every pod's) to this
  machine's user, so the pods are that user inside and not root;
- a read-only root file system: each pod has its own mount namespace, where ``/`` and every other
  mount but ``/proc`` and ``/dev`` are remounted read-only and each ``emptyDir`` (a fresh folder
  per pod) and the claim are mounted writable at their paths (a path this machine's root lacks,
  such as the claim's or ``HOME``'s, is given by the folder's path instead, in the variables that
  name it: a write that does not go through them is not tried here);
- the image's environment: this machine's ``PATH``, Python's and the locale's variables
  (:data:`IMAGE_ENV`), then the container's ``env``; nothing else of this process's (no ``TMPDIR``,
  ``XDG_*`` or ``KERAS_HOME``);
- ``allowPrivilegeEscalation: false`` as ``PR_SET_NO_NEW_PRIVS``, and every capability dropped
  (the bounding set emptied: a root pod keeps none).
The runtime's seccomp profile and ``fsGroup`` (the claim's group) are not applied here: the claim
is a folder of the pods' own user.

Isolation: the driver first enters a new user, network and mount namespace (only a loopback, up),
and bind-mounts a hosts file over /etc/hosts in which every pod's ``<host name>.<service>``
resolves to 127.0.0.1. So the pods find each other by the names Kubernetes would give them, and
no address outside this machine is used. Every pod is bounded by the case's deadline.

Prints ``RESULT <json>``: per case, each pod's attempts (exit code, verdict) and its records.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import struct
import sys


LIBC = ctypes.CDLL(None, use_errno=True)
#: What a pod keeps of this process's environment: what an image's ``ENV`` would set.
IMAGE_ENV = ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "PYTHONFAULTHANDLER", "TF_CPP_MIN_LOG_LEVEL", "LD_LIBRARY_PATH")
#: statvfs's flags that a remount must keep (a mount made in another user namespace locks them), as mount's.
_KEPT_FLAGS = {2: 2, 4: 4, 8: 8, 1024: 1024, 2048: 2048, 4096: 1 << 21}  # nosuid, nodev, noexec, noatime, nodiratime, relatime
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE, MS_RELATIME = 1, 32, 4096, 16384, 1 << 18, 1 << 21
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24


def isolate(user: int, group: int) -> None:
    """Enter new user (``user`` inside, this user outside), network and mount namespaces; bring the
    loopback up. Before any thread starts (unshare with a new user namespace needs that). The driver
    keeps every capability in its namespaces until it starts a program (which, as a user other than
    0, starts with none)."""
    uid, gid = os.geteuid(), os.getegid()
    if LIBC.unshare(0x10000000 | 0x40000000 | 0x00020000) != 0:  # CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS
        sys.exit(f"SKIP namespaces unavailable: {os.strerror(ctypes.get_errno())}")
    for name, text in (("setgroups", "deny"), ("gid_map", f"{group} {gid} 1"), ("uid_map", f"{user} {uid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    import fcntl

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, 0x8913, struct.pack("16sH14x", b"lo", 0)))[1]
        fcntl.ioctl(sock, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))


def resolve_to_loopback(names: list[str], folder: str) -> None:
    """Bind-mount a hosts file that maps ``names`` to 127.0.0.1 over /etc/hosts (this mount
    namespace only)."""
    hosts = os.path.join(folder, "hosts")
    with open(hosts, "w") as handle:
        handle.write("127.0.0.1 localhost\n" + "".join(f"127.0.0.1 {name}\n" for name in names))
    if LIBC.mount(hosts.encode(), b"/etc/hosts", None, MS_BIND, None) != 0:
        sys.exit(f"SKIP bind mount refused: {os.strerror(ctypes.get_errno())}")


def _mount(source: str | None, target: str, flags: int) -> None:
    if LIBC.mount(source.encode() if source else None, target.encode(), None, flags, None) != 0:
        raise OSError(ctypes.get_errno(), f"mount {source} on {target}: {os.strerror(ctypes.get_errno())}")


def _mount_points() -> list[str]:
    """This mount namespace's mount points (``/proc/self/mountinfo``; octal escapes undone)."""
    with open("/proc/self/mountinfo") as handle:
        return [line.split()[4].encode().decode("unicode_escape") for line in handle]


def container(security, mounts: dict[str, str], outdir: str):
    """The function a pod's process runs before its program (``preexec_fn``): a mount namespace of
    its own, ``mounts`` (mount path: folder) bound writable, ``/tmp``'s keeping ``outdir`` (which
    lies under it here) at its path, ``/`` read-only, no new privileges, no capabilities."""

    def enter() -> None:
        if LIBC.unshare(0x00020000) != 0:  # CLONE_NEWNS
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
        _mount(None, "/", MS_REC | MS_PRIVATE)
        for path, folder in mounts.items():
            if path == "/tmp" and outdir.startswith("/tmp/"):  # outdir, seen through the pod's own /tmp
                inner = os.path.join(folder, os.path.relpath(outdir, "/tmp"))
                os.makedirs(inner, exist_ok=True)
                _mount(outdir, inner, MS_BIND)
            _mount(folder, path, MS_BIND | MS_REC)
        if security.read_only_root:
            _mount(None, "/", MS_REMOUNT | MS_BIND | MS_RDONLY | MS_RELATIME)
            for other in _mount_points():
                if other != "/" and not other.startswith(("/proc", "/dev", *mounts)):
                    kept = sum(flag for found, flag in _KEPT_FLAGS.items() if os.statvfs(other).f_flag & found)
                    LIBC.mount(None, other.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept, None)  # best effort
        if security.no_new_privileges and LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
        if security.drop_all:
            for capability in range(64):
                LIBC.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)  # EINVAL past the last one the kernel has

    return enter


if __name__ == "__main__":
    import subprocess  # no thread before isolate(): these start none
    import tempfile
    import time

    import yaml

    from tests.scenarios.kubelet import Pod, pods, verdict

    OUTDIR, CASES = sys.argv[1], json.loads(sys.argv[2])
    SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kubernetes_train.py")
    jobs: dict[str, list[Pod]] = {}
    for case in CASES:
        shape = ["--ps", str(case.get("ps", 0))] + (["--jobset"] if case.get("jobset") else [])
        manifest = subprocess.run(
            [sys.executable, "-m", "autodist", "manifest", "--name", case["name"], "--workers", str(case["workers"]), "--port", str(case["port"]),
             *shape, "--image", "registry.example/train:1", "--backup-claim", f"{case['name']}-saves", "--", "python", SCRIPT, OUTDIR],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        jobs[case["name"]] = pods(list(yaml.safe_load_all(manifest)))
    (USER, GROUP), = {(pod.security.user or 0, pod.security.group or pod.security.user or 0) for made in jobs.values() for pod in made}
    isolate(USER, GROUP)
    DEADLINE = time.monotonic() + float(os.environ.get("PODS_TIMEOUT", "240"))
    resolve_to_loopback([pod.address for made in jobs.values() for pod in made], OUTDIR)
    started: dict[str, int] = {}

    def start(case: dict, pod: Pod) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if k in IMAGE_ENV}
        env.update(pod.env)
        started[pod.hostname] = attempt = started.get(pod.hostname, 0) + 1
        mounts = {}
        for path, claim in pod.mounts.items():  # a claim: a folder every pod of the case shares; an emptyDir: the pod's own
            folder = os.path.join(OUTDIR, claim) if claim != "emptyDir" else os.path.join(OUTDIR, "pods", f"{pod.hostname}-{attempt}", path.strip("/").replace("/", "-"))
            os.makedirs(folder, exist_ok=True)
            if os.path.isdir(path):
                mounts[path] = folder
            else:  # a path this machine's root lacks: the variables that name it name the folder
                env.update({k: folder + v[len(path):] for k, v in pod.env.items() if v == path or v.startswith(path + "/")})
        if str(pod.index) in case.get("kill_at", {}):
            env["KILL_AT"] = str(case["kill_at"][str(pod.index)])
        command = [sys.executable if part == "python" else part for part in pod.command]
        log = tempfile.TemporaryFile("w+")
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, text=True, preexec_fn=container(pod.security, mounts, OUTDIR))
        proc.log = log  # type: ignore[attr-defined]
        return proc

    reference = subprocess.Popen([sys.executable, SCRIPT, OUTDIR], env={k: v for k, v in os.environ.items() if k not in ("PODS_TIMEOUT", "HOSTNAME")},
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    # each pod by its host name: an index alone repeats across a job's roles (the chief's, a worker's and a ps's 0)
    running = {(case["name"], pod.hostname): (case, pod, start(case, pod)) for case in CASES for pod in jobs[case["name"]]}
    attempts: dict[str, list[dict]] = {f"{name}/{host}": [] for name, host in running}
    failed: dict[str, str] = {}
    while running and time.monotonic() < DEADLINE:
        for key, (case, pod, proc) in list(running.items()):
            if key not in running:  # stopped with its job just now
                continue
            code = proc.poll()
            if code is None:
                continue
            proc.log.seek(0)  # type: ignore[attr-defined]
            said = verdict(pod, code)
            attempts[f"{key[0]}/{key[1]}"].append({"exit": code, "verdict": said, "tail": proc.log.read()[-1500:]})  # type: ignore[attr-defined]
            del running[key]
            if said == "Ignore":
                running[key] = (case, pod, start(case, pod))
            elif said != "succeeded":
                failed[key[0]] = f"pod {key[1]} exited {code}: {said}"
                for other in [k for k in running if k[0] == key[0]]:
                    running.pop(other)[2].kill()
        time.sleep(0.2)
    for _, _, proc in running.values():
        proc.kill()
    try:
        reference.wait(timeout=max(1.0, DEADLINE - time.monotonic()))
    except subprocess.TimeoutExpired:
        reference.kill()

    def records(host: str) -> list[dict]:
        path = os.path.join(OUTDIR, f"{host}.jsonl")
        return [json.loads(line) for line in open(path)] if os.path.exists(path) else []

    result = {
        "cases": {
            case["name"]: {
                "failed": failed.get(case["name"]),
                "timed_out": [host for name, host in running if name == case["name"]],
                "pods": {pod.hostname: {"attempts": attempts[f"{case['name']}/{pod.hostname}"], "records": records(pod.hostname)} for pod in jobs[case["name"]]},
            }
            for case in CASES
        },
        "reference": records("single"),
    }
    print("RESULT " + json.dumps(result))
