"""The pod side of a Kubernetes job, run on this machine: ``python kubernetes_pods.py OUTDIR CASES``.

CASES is JSON: ``[{"name": "k2", "workers": 2, "port": 2222, "kill_at": {"1": 9}}, ...]``. For each
case the driver asks ``python -m autodist manifest`` for the manifest (indexed Jobs, a backup
claim), as a user would, and starts every pod it describes (tests/scenarios/kubelet.py reads them
by Kubernetes's rules): the container's command and env, ``JOB_COMPLETION_INDEX`` and
``HOSTNAME``, the claim as a folder under OUTDIR. ``kill_at`` gives some pods ``KILL_AT``, the step
after which they get SIGTERM once. A pod that fails starts again with the same index when the
manifest's failure policy says ``Ignore`` (exit 75); ``FailJob`` stops the case's other pods. One
more process runs the same script alone, with no cluster: the reference.

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


def isolate() -> None:
    """Enter new user (root inside, this user outside), network and mount namespaces; bring the
    loopback up. Before any thread starts (unshare with a new user namespace needs that)."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(0x10000000 | 0x40000000 | 0x00020000) != 0:  # CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS
        sys.exit(f"SKIP namespaces unavailable: {os.strerror(ctypes.get_errno())}")
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
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
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(hosts.encode(), b"/etc/hosts", None, 4096, None) != 0:  # MS_BIND
        sys.exit(f"SKIP bind mount refused: {os.strerror(ctypes.get_errno())}")


if __name__ == "__main__":
    isolate()
    import subprocess
    import tempfile
    import time

    import yaml

    from tests.scenarios.kubelet import Pod, pods, verdict

    OUTDIR, CASES = sys.argv[1], json.loads(sys.argv[2])
    SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kubernetes_train.py")
    DEADLINE = time.monotonic() + float(os.environ.get("PODS_TIMEOUT", "240"))
    jobs: dict[str, list[Pod]] = {}
    for case in CASES:
        manifest = subprocess.run(
            [sys.executable, "-m", "autodist", "manifest", "--name", case["name"], "--workers", str(case["workers"]), "--port", str(case["port"]),
             "--image", "registry.example/train:1", "--backup-claim", f"{case['name']}-saves", "--", "python", SCRIPT, OUTDIR],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        jobs[case["name"]] = pods(list(yaml.safe_load_all(manifest)))
    resolve_to_loopback([pod.address for made in jobs.values() for pod in made], OUTDIR)

    def start(case: dict, pod: Pod) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "PODS_TIMEOUT")}
        env.update(pod.env)
        for path, claim in pod.mounts.items():  # the claim: a folder every pod of the case shares
            if claim != "emptyDir":
                env.update({k: os.path.join(OUTDIR, claim) for k, v in pod.env.items() if v == path})
        if str(pod.index) in case.get("kill_at", {}):
            env["KILL_AT"] = str(case["kill_at"][str(pod.index)])
        command = [sys.executable if part == "python" else part for part in pod.command]
        log = tempfile.TemporaryFile("w+")
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        proc.log = log  # type: ignore[attr-defined]
        return proc

    reference = subprocess.Popen([sys.executable, SCRIPT, OUTDIR], env={k: v for k, v in os.environ.items() if k not in ("PODS_TIMEOUT", "HOSTNAME")},
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    running = {(case["name"], pod.index): (case, pod, start(case, pod)) for case in CASES for pod in jobs[case["name"]]}
    attempts: dict[str, list[dict]] = {f"{name}/{index}": [] for name, index in running}
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
                "timed_out": [index for name, index in running if name == case["name"]],
                "pods": {pod.hostname: {"attempts": attempts[f"{case['name']}/{pod.index}"], "records": records(pod.hostname)} for pod in jobs[case["name"]]},
            }
            for case in CASES
        },
        "reference": records("single"),
    }
    print("RESULT " + json.dumps(result))
