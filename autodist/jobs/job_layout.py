"""The shape of a local or multi-host job, as data: the cluster layout, each task's TF_CONFIG,
and which GPUs each local worker gets.

Used by :mod:`autodist.jobs.launch` and by ``launch --dry-run`` / ``--hosts`` (whose hosts are
checked here: :func:`check_hosts`). The GPU split reads
the machine through :func:`autodist.detection.hardware.nvml_gpus` (the one GPU probe), or
``CUDA_VISIBLE_DEVICES`` when it is set.

Example:
    >>> cluster_layout(["h0:1", "h1:1", "h2:1", "h3:1"], 2, 1)
    {'chief': ['h0:1'], 'worker': ['h1:1', 'h2:1'], 'ps': ['h3:1']}
    >>> split_gpus(["0", "1", "2", "3"], 2)
    ['0,1', '2,3']
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import os
import re
import shlex
import shutil
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autodist.detection import (
    hardware,  # hardware.nvml_gpus: the one GPU probe, looked up when called
)
from autodist.errors import ArgumentError, AutodistError
from autodist.jobs.launch_flags import PS_MEANING, WORKERS_MEANING, received, whole
from autodist.jobs.netns import PrivateNetwork
from autodist.jobs.private import digest, private_root, release_private_root

__all__ = [
    "HOST_PORT",
    "LOOPBACK",
    "JobFiles",
    "check_hosts",
    "cluster_layout",
    "default_launch_backup",
    "free_ports",
    "host_plan",
    "local_cluster",
    "local_gpu_env",
    "num_tasks",
    "split_gpus",
    "task_configs",
    "task_table",
    "visible_gpus",
]

LOOPBACK = "127.0.0.1"
#: The port every task of a ``--hosts`` plan listens on (its TF_CONFIG names it).
HOST_PORT = 2222


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on every interface of this machine, IPv4 and IPv6
    (held open together, then released): TensorFlow's gRPC server binds ``0.0.0.0``/``::``
    whatever TF_CONFIG names, so a port that another program holds on any address would fail
    it. In a private network (:mod:`autodist.jobs.netns`) every port is free anyway; with
    ``--no-isolate`` another process may take one before the task binds it (the task then fails
    to start its server, and ``--max-restarts`` retries on new ports)."""
    sockets = []
    try:
        for _ in range(count):
            sockets.append(_bind_every_interface())
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _bind_every_interface() -> socket.socket:
    """A socket on a port the kernel finds free on every address: ``::`` with IPv4 mapped (a
    dual-stack socket conflicts with any IPv4 or IPv6 socket on its port), or ``0.0.0.0`` where
    this machine has no IPv6."""
    try:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    except OSError:
        sock = None  # no IPv6 here
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind(("::", 0))
            return sock
        except OSError:
            sock.close()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("", 0))
    return sock


def num_tasks(num_workers: int, num_ps: int) -> int:
    """Processes in a job: the workers, the ps tasks, and a chief when there are ps tasks. The
    counts are checked here (:func:`autodist.jobs.launch_flags.whole`), whoever asks.

    Example:
        >>> num_tasks(2, 0), num_tasks(2, 1)
        (2, 4)
    """
    num_workers = whole("--workers", num_workers, 1, WORKERS_MEANING)
    num_ps = whole("--ps", num_ps, 0, PS_MEANING)
    return num_workers + num_ps + (1 if num_ps else 0)


def cluster_layout(addresses: list[str], num_workers: int, num_ps: int) -> dict[str, list[str]]:
    """The one cluster layout: ``addresses`` in task order become N workers, or a chief + N
    workers + M ps when there are ps tasks.

    Example:
        >>> cluster_layout(["h0:1", "h1:1", "h2:1", "h3:1"], 2, 1)
        {'chief': ['h0:1'], 'worker': ['h1:1', 'h2:1'], 'ps': ['h3:1']}
    """
    assert len(addresses) == num_tasks(num_workers, num_ps)
    if not num_ps:
        return {"worker": list(addresses)}
    return {"chief": addresses[:1], "worker": addresses[1 : 1 + num_workers], "ps": addresses[1 + num_workers :]}


def local_cluster(
    num_workers: int, num_ps: int, ports: list[int] | None = None, host: str = LOOPBACK
) -> dict[str, list[str]]:
    """The cluster spec of a local job, on free ports of ``host`` (see :func:`cluster_layout`)."""
    ports = ports if ports is not None else free_ports(num_tasks(num_workers, num_ps))
    return cluster_layout([f"{host}:{port}" for port in ports], num_workers, num_ps)


def task_configs(cluster: dict[str, list[str]]) -> list[dict[str, Any]]:
    """One TF_CONFIG per task, chief first, then workers, then ps."""
    configs = []
    for task_type in ("chief", "worker", "ps"):
        for index in range(len(cluster.get(task_type, []))):
            configs.append({"cluster": cluster, "task": {"type": task_type, "index": index}})
    return configs


def task_name(config: dict[str, Any]) -> str:
    return f"{config['task']['type']} {config['task']['index']}"


def task_table(
    cluster: dict[str, list[str]], hosts: list[str], command: str, env: Mapping[str, Mapping[str, str]] | None = None
) -> list[dict[str, Any]]:
    """Each task's name, host, TF_CONFIG, extra environment and command: what ``--dry-run`` and
    ``--hosts`` print."""
    rows = []
    for host, config in zip(hosts, task_configs(cluster)):
        name = task_name(config)
        extra = dict((env or {}).get(name, {}))
        rows.append({"task": name, "host": host, "tf_config": config, "env": extra, "command": command})
    return rows


_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z")
_PORT = re.compile(r"(?P<host>\[[^\]]*\]|[^:\[\]]*):(?P<port>[0-9]+)\Z")


def _host(entry: str) -> str | None:
    """``entry`` as a TF_CONFIG host (an IPv6 address in brackets), or ``None`` when it is no
    host name (RFC 1123), IPv4 or IPv6 address."""
    inner = entry[1:-1] if entry.startswith("[") and entry.endswith("]") else None
    if inner is not None or ":" in entry:
        try:
            return f"[{ipaddress.IPv6Address(entry if inner is None else inner)}]"
        except ValueError:
            return None
    try:
        return str(ipaddress.IPv4Address(entry))
    except ValueError:
        pass
    name = entry.removesuffix(".")  # a fully qualified name may end with a dot
    labels = name.split(".")
    if len(name) > 253 or not all(_LABEL.match(label) for label in labels) or labels[-1].isdigit():
        return None  # an all-digit last label is a mistyped IPv4 address (RFC 3696), not a name
    return entry


def check_hosts(hosts: list[str]) -> list[str]:
    """The ``--hosts`` entries, each checked: a host name (RFC 1123 labels), an IPv4 address, or
    an IPv6 address (plain or in brackets; returned in brackets, as TF_CONFIG writes it); no empty
    entry, no port, no host twice (every task listens on :data:`HOST_PORT`). Spaces around an
    entry are dropped.

    Example:
        >>> check_hosts(["node-1", " 10.0.0.2", "::1", "[fe80::1]", "host.example.com."])
        ['node-1', '10.0.0.2', '[::1]', '[fe80::1]', 'host.example.com.']
        >>> check_hosts(["h0:22", "h1:22"])  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        autodist.errors.ArgumentError: launch: --hosts must name hosts without a port (Received: --hosts h0:22,h1:22,
        whose entry 1, h0:22, has port 22). Every task listens on port 2222 of its host (the plan's TF_CONFIG names it).
        Pass --hosts h0,h1.
    """
    raw = ",".join(hosts)
    checked = []
    for index, entry in enumerate(part.strip() for part in hosts):
        if not entry:
            raise ArgumentError(
                f"launch: --hosts must be comma-separated hosts, none empty (Received: --hosts {received(raw)}, whose "
                f"entry {index + 1} is empty). Pass for example --hosts host1,host2, one host per task."
            )
        host = _host(entry)
        if host is None:
            port = _PORT.match(entry)
            if port and _host(port["host"]):
                fixed = ",".join((m["host"] if (m := _PORT.match(part.strip())) else part.strip()) for part in hosts)
                raise ArgumentError(
                    f"launch: --hosts must name hosts without a port (Received: --hosts {received(raw)}, whose entry "
                    f"{index + 1}, {received(entry)}, has port {port['port']}). Every task listens on port {HOST_PORT} "
                    f"of its host (the plan's TF_CONFIG names it). Pass --hosts {received(fixed)}."
                )
            raise ArgumentError(
                f"launch: --hosts must be comma-separated host names (RFC 1123: letters, digits and "
                f"hyphens, dot-separated labels), IPv4 or IPv6 addresses (Received: --hosts {received(raw)}, "
                f"whose entry {index + 1}, {received(entry)}, is none of them). Pass for example --hosts host1,host2 "
                "or --hosts 10.0.0.1,10.0.0.2."
            )
        key = host.lower().rstrip(".")  # names are case-insensitive; a final dot changes nothing
        same = [index + 1 for index, other in enumerate(checked) if other.lower().rstrip(".") == key]
        if same:
            raise ArgumentError(
                f"launch: --hosts must name each host once (Received: --hosts {received(raw)}, whose entries {same[0]} "
                f"and {len(checked) + 1} are both {received(host)}). Every task listens on port {HOST_PORT} of its "
                "host, so two tasks on one host would take the same port. Name one host per task."
            )
        checked.append(host)
    return checked


def host_plan(
    hosts: list[str], num_workers: int, num_ps: int, script: str, args: list[str], port: int = HOST_PORT
) -> list[dict[str, Any]]:
    """Per-host TF_CONFIG and command for a real cluster: one task per host, in order. Each
    entry of ``hosts`` is checked (:func:`autodist.jobs.launch_flags.check_hosts`), and their count.

    Example:
        >>> [row["tf_config"]["cluster"] for row in host_plan(["h0", "::1"], 2, 0, "train.py", [])][0]
        {'worker': ['h0:2222', '[::1]:2222']}
    """
    total = num_tasks(num_workers, num_ps)
    checked = check_hosts(hosts)
    if len(checked) != total:
        raise ArgumentError(
            f"launch: --hosts must name {received(total)} host(s), one per "
            f"task{' (a chief, the workers, then the ps)' if num_ps else ''} "
            f"(Received: --hosts {received(','.join(hosts))}, which names {len(checked)} host(s), with --workers "
            f"{received(num_workers)} --ps {received(num_ps)}). Name {received(total)} hosts, or change --workers and "
            "--ps to match them."
        )
    cluster = cluster_layout([f"{h}:{port}" for h in checked], int(num_workers), int(num_ps))
    return task_table(cluster, checked, " ".join(shlex.quote(part) for part in ["python", script, *args]))


def visible_gpus(environ: Mapping[str, str]) -> list[str]:
    """The GPU ids this machine lets a job use: ``CUDA_VISIBLE_DEVICES`` as CUDA reads it (up to
    its first invalid entry, so ``-1`` hides every GPU) when set, else every GPU the driver
    reports (none without a driver).

    Example:
        >>> visible_gpus({"CUDA_VISIBLE_DEVICES": "0,-1,1"}), visible_gpus({"CUDA_VISIBLE_DEVICES": ""})
        (['0'], [])
    """
    raw = environ.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return [str(index) for index in range(len(hardware.nvml_gpus() or []))]
    tokens = (part.strip() for part in raw.split(","))
    return list(itertools.takewhile(lambda token: token.isdigit() or token.startswith(("GPU-", "MIG-")), tokens))


def split_gpus(gpus: list[str], num_workers: int) -> list[str]:
    """``CUDA_VISIBLE_DEVICES`` for each local worker: its own ``len(gpus) / num_workers`` GPUs.

    Raises:
        AutodistError: when the workers cannot share the GPUs out evenly.
    """
    if not gpus:
        return []
    if len(gpus) % num_workers:
        raise AutodistError(
            f"launch gives each local worker its own GPUs, and {num_workers} workers cannot share "
            f"{len(gpus)} GPUs ({','.join(gpus)}) evenly (Received: --workers {num_workers}). Expected "
            f"a worker count that divides {len(gpus)}. Pass --workers "
            f"{' or '.join(str(n) for n in range(1, len(gpus) + 1) if len(gpus) % n == 0)}, or choose "
            "the GPUs with CUDA_VISIBLE_DEVICES (CUDA_VISIBLE_DEVICES= for CPU-only workers)."
        )
    each = len(gpus) // num_workers
    return [",".join(gpus[i * each : (i + 1) * each]) for i in range(num_workers)]


def local_gpu_env(num_workers: int, num_ps: int, gpus: list[str]) -> dict[str, dict[str, str]]:
    """Each local task's ``CUDA_VISIBLE_DEVICES``, by task name: the workers split the GPUs; the
    chief and ps tasks of a parameter-server job get none. Empty when there are no GPUs."""
    shares = split_gpus(gpus, num_workers)
    if not shares:
        return {}
    env = {f"worker {index}": {"CUDA_VISIBLE_DEVICES": share} for index, share in enumerate(shares)}
    if num_ps:
        env["chief 0"] = {"CUDA_VISIBLE_DEVICES": ""}
        env.update({f"ps {index}": {"CUDA_VISIBLE_DEVICES": ""} for index in range(num_ps)})
    return env


@dataclass
class JobFiles:
    """What one launch keeps beside its tasks: a private folder (heartbeats), the backup folder,
    the private network, each worker's GPUs. ``spec`` is the launcher's ``JobSpec``."""

    folder: str
    backup_dir: str
    network: PrivateNetwork | None
    gpu_env: dict[str, dict[str, str]]
    lock: int | None = None  # holds the default backup folder's lock file

    @classmethod
    def create(cls, spec: Any, gpu_env: dict[str, dict[str, str]], say: Any, command: list[str]) -> JobFiles:
        backup = spec.backup_dir or default_launch_backup(command, spec)
        lock = None if spec.backup_dir else _lock(backup, command)
        folder = tempfile.mkdtemp(prefix="job-", dir=private_root())
        network = None
        if spec.isolate:
            network, why = PrivateNetwork.create()
            if network is None:
                say(
                    f"[launcher] no private network for this job ({why}): TensorFlow's gRPC ports "
                    "listen on every interface of this machine while it runs. Run it on a trusted "
                    "host; --no-isolate silences this."
                )
        return cls(folder, backup, network, gpu_env, lock)

    def close(self) -> None:
        """Remove the job's own files; the backup folder stays while it holds saves (tasks
        remove theirs when they finish), so the same command started again resumes."""
        if self.network is not None:
            self.network.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.lock is not None:  # autodist's own folder, not --backup-dir
            with contextlib.suppress(OSError):  # not empty: saves to resume from
                os.rmdir(self.backup_dir)
            try:
                os.remove(self.backup_dir + ".lock")  # while held: see _lock
            finally:
                os.close(self.lock)
        release_private_root()


def _lock(backup: str, command: list[str]) -> int:
    """Hold ``<backup>.lock`` while the job runs: the same command launched twice at once would
    share one backup folder, each resuming from or removing the other's saves.

    Its holder removes the file, while it holds it, when the job ends (autodist leaves nothing
    behind). So a launch that locked a file checks that the path still names that file; if not,
    it locked one that its holder has removed since this launch opened it, and it starts again
    with the file now at the path: two launches never both hold the lock of the file the path
    names, whatever the order of opens, locks and removals.
    """
    import fcntl

    while True:
        private_root()  # (again: an ending job may have removed it, empty)
        descriptor = os.open(backup + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            raise AutodistError(
                f"launch: the same command ({' '.join(command)}) is already running, and it keeps its "
                f"saves in {backup}. Expected one launch of a command at a time. Pass --backup-dir "
                "(another folder for this run) to run both."
            ) from None
        with contextlib.suppress(OSError):  # the path names no file now
            if os.path.samestat(os.lstat(backup + ".lock"), os.fstat(descriptor)):
                return descriptor
        os.close(descriptor)  # removed by the launch that held it: lock the one at the path now


def default_launch_backup(command: list[str], spec: Any) -> str:
    """The backup folder of a launch without ``--backup-dir``: named after the script, its
    arguments and the job's shape, in the private folder, so the same command resumes."""
    return os.path.join(
        private_root(), f"launch-{digest([os.path.abspath(command[0]), *command[1:], spec.num_workers, spec.num_ps])}"
    )
