"""Cluster detection: which cluster (if any) this process belongs to, and what its role is.

Each cluster manager is a small class with ``detect(environ) -> bool`` and
``read(environ) -> ClusterInfo | None``. :func:`detect_cluster` tries them in the fixed order of
:data:`CLUSTER_ENVIRONMENTS`. Nothing here touches the network or the TensorFlow runtime; only the
SLURM reader imports TensorFlow (for its host-list parsers), and only under SLURM. The result
is validated data that ``tf.distribute`` can consume as it is (:meth:`ClusterInfo.tf_config`).

Example:
    >>> from autodist.cluster import detect_cluster
    >>> info = detect_cluster({"TF_CONFIG": '{"cluster": {"worker": ["127.0.0.1:2222", '
    ...     '"127.0.0.1:2223"]}, "task": {"type": "worker", "index": 1}}'})
    >>> (info.task_type, info.task_index, info.num_workers, info.is_chief)
    ('worker', 1, 2, False)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autodist.errors import ClusterConfigError
from autodist.settings import PORT_ENV, SLURM_PORT_BASE_ENV

__all__ = [
    "CLUSTER_ENVIRONMENTS",
    "ClusterInfo",
    "TFConfigEnvironment",
    "detect_cluster",
    "is_chief",
    "parse_tf_config",
]

#: Task types that tf.distribute understands. The TF1 name ``master`` is not among them.
KNOWN_TASK_TYPES = ("chief", "worker", "ps", "evaluator")


@dataclass(frozen=True)
class ClusterInfo:
    """A validated cluster definition and this process's place in it.

    Attributes:
        source: where it came from, for example ``"TF_CONFIG"``.
        task_type: this process's role: ``chief``, ``worker``, ``ps`` or ``evaluator``.
        task_index: this process's index among the tasks of its type.
        cluster_spec: task type to the list of ``host:port`` addresses, in task-index order.
        rpc_layer: the ``rpc_layer`` given in TF_CONFIG, if any.
    """

    source: str
    task_type: str
    task_index: int
    cluster_spec: dict[str, list[str]] = field(hash=False)
    rpc_layer: str | None = None

    @property
    def num_workers(self) -> int:
        """Training workers, the chief counted: the tasks that run replicas synchronously."""
        return len(self.cluster_spec.get("chief", [])) + len(self.cluster_spec.get("worker", []))

    @property
    def num_ps(self) -> int:
        """Parameter-server tasks."""
        return len(self.cluster_spec.get("ps", []))

    @property
    def is_chief(self) -> bool:
        """The ``chief`` task, or worker 0 when the cluster has no chief."""
        if "chief" in self.cluster_spec:
            return self.task_type == "chief"
        return self.task_type == "worker" and self.task_index == 0

    def tf_config(self) -> dict[str, Any]:
        """The TF_CONFIG dict that describes this cluster and task to TensorFlow."""
        config: dict[str, Any] = {
            "cluster": {k: list(v) for k, v in self.cluster_spec.items()},
            "task": {"type": self.task_type, "index": self.task_index},
        }
        if self.rpc_layer:
            config["rpc_layer"] = self.rpc_layer
        return config

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "task_type": self.task_type,
            "task_index": self.task_index,
            "cluster_spec": {k: list(v) for k, v in self.cluster_spec.items()},
            "rpc_layer": self.rpc_layer,
            "num_workers": self.num_workers,
            "num_ps": self.num_ps,
            "is_chief": self.is_chief,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterInfo:
        return cls(
            source=data["source"],
            task_type=data["task_type"],
            task_index=int(data["task_index"]),
            cluster_spec={k: list(v) for k, v in data["cluster_spec"].items()},
            rpc_layer=data.get("rpc_layer"),
        )


def _shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate_cluster(
    cluster_spec: Any, task_type: Any, task_index: Any, *, source: str, received: str
) -> ClusterInfo:
    """Check a cluster spec and task, and return them as a :class:`ClusterInfo`.

    Args:
        cluster_spec: task type to a list of ``host:port`` addresses.
        task_type: this process's task type.
        task_index: this process's task index.
        source: the name of the variable or manager the values came from, for messages.
        received: the raw value, quoted in messages.

    Raises:
        ClusterConfigError: with the received value and the fix, for every inconsistency.
    """
    quoted = f"(Received: {source}={_shorten(received)})"
    spec = _checked_spec(cluster_spec, source, quoted)
    _check_roles(spec, source, quoted)
    _check_task(spec, task_type, task_index, source, quoted)
    return ClusterInfo(source=source, task_type=task_type, task_index=task_index, cluster_spec=spec)


def _checked_spec(cluster_spec: Any, source: str, quoted: str) -> dict[str, list[str]]:
    """The cluster spec as ``{task type: [host:port, ...]}``, or the error that says what is wrong."""
    if not isinstance(cluster_spec, Mapping) or not cluster_spec:
        raise ClusterConfigError(
            f"{source} defines an empty cluster {quoted}. Expected a mapping from task type to "
            'addresses, for example {"worker": ["host1:2222", "host2:2222"]}. Add the addresses '
            f"of every task, or unset {source} to train on this machine alone."
        )
    spec: dict[str, list[str]] = {}
    seen: dict[str, str] = {}
    for kind, addresses in cluster_spec.items():
        if kind not in KNOWN_TASK_TYPES:
            hint = " ('master' is the TF1 name: use 'chief')" if kind == "master" else ""
            raise ClusterConfigError(
                f"{source} names an unknown task type {kind!r}{hint} {quoted}. Expected task "
                f"types among {', '.join(KNOWN_TASK_TYPES)}. Rename it."
            )
        if isinstance(addresses, str) or not isinstance(addresses, (list, tuple)) or not addresses:
            raise ClusterConfigError(
                f"{source} gives task type {kind!r} the value {addresses!r} {quoted}. Expected a "
                f'non-empty list of "host:port" strings, for example ["host1:2222"]. Fix the list.'
            )
        for address in addresses:
            if not isinstance(address, str) or ":" not in address:
                raise ClusterConfigError(
                    f"{source} lists the address {address!r} for {kind!r} {quoted}. Expected "
                    '"host:port", for example "10.0.0.2:2222". Add the port.'
                )
            if address in seen:
                raise ClusterConfigError(
                    f"{source} uses the address {address!r} twice: for {seen[address]} and for "
                    f"{kind} {quoted}. Expected every task to have its own host:port. Give each "
                    "task a distinct port."
                )
            seen[address] = kind
        spec[str(kind)] = list(addresses)
    return spec


def _check_roles(spec: Mapping[str, list[str]], source: str, quoted: str) -> None:
    """At most one chief, and exactly one when there are ``ps`` tasks."""
    if spec.get("ps") and len(spec.get("chief", [])) != 1:
        raise ClusterConfigError(
            f"{source} has 'ps' tasks but no chief {quoted}. Expected exactly one chief: in "
            "parameter-server training the chief coordinates the workers. Add a \"chief\" "
            "address (python -m autodist launch --ps adds one)."
        )
    if len(spec.get("chief", [])) > 1:
        raise ClusterConfigError(
            f"{source} has {len(spec['chief'])} chief tasks {quoted}. Expected at most one. Make "
            "the others workers."
        )


def _check_task(spec: Mapping[str, list[str]], task_type: Any, task_index: Any, source: str, quoted: str) -> None:
    """This process's task: a known type present in the cluster, and an index in range."""
    if task_type is None or task_index is None:
        missing = "task type" if task_type is None else "task index"
        raise ClusterConfigError(
            f"{source} defines a cluster but no {missing} for this process {quoted}. Expected "
            'a task such as {"type": "worker", "index": 0}. Set the task on every machine; '
            "each machine gets its own type and index."
        )
    if task_type not in KNOWN_TASK_TYPES:
        hint = " ('master' is the TF1 name: use 'chief')" if task_type == "master" else ""
        raise ClusterConfigError(
            f"{source} gives this process the unknown task type {task_type!r}{hint} {quoted}. "
            f"Expected one of {', '.join(KNOWN_TASK_TYPES)}."
        )
    if task_type not in spec:
        raise ClusterConfigError(
            f"{source} gives this process task type {task_type!r}, but the cluster has no "
            f"{task_type!r} tasks {quoted}. Expected a type among {sorted(spec)}. Fix the task "
            "type, or add this process's address to the cluster."
        )
    if isinstance(task_index, bool) or not isinstance(task_index, int):
        raise ClusterConfigError(
            f"{source} gives the task index {task_index!r} ({type(task_index).__name__}) "
            f"{quoted}. Expected an integer. Write it without quotes, for example "
            '"index": 0.'
        )
    count = len(spec[task_type])
    if not 0 <= task_index < count:
        raise ClusterConfigError(
            f"{source} task index {task_index} is out of range: cluster {task_type!r} has "
            f"{count} address{'es' if count != 1 else ''} {quoted}. Set the task index to a value "
            f"from 0 to {count - 1} on this machine."
        )


def parse_tf_config(raw: str, *, source: str = "TF_CONFIG") -> ClusterInfo | None:
    """Parse and validate a TF_CONFIG string.

    ``{}`` (or an empty string) means no cluster, as in TensorFlow. Kubeflow's ``sparseCluster``
    form is read too.

    Args:
        raw: the JSON text of TF_CONFIG.
        source: the name used in error messages.

    Returns:
        The cluster, or ``None`` when the config defines none.

    Raises:
        ClusterConfigError: when the JSON is malformed or the cluster is inconsistent.

    Example:
        >>> parse_tf_config('{}') is None
        True
        >>> parse_tf_config('{"cluster": {"chief": ["a:1"], "worker": ["b:1"]},'
        ...                 ' "task": {"type": "chief", "index": 0}}').num_workers
        2
    """
    if not raw.strip():
        return None
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ClusterConfigError(
            f"{source} is not valid JSON: {err.msg} at line {err.lineno} column {err.colno} "
            f"(Received: {source}={_shorten(raw)}). Expected a JSON object such as "
            '{"cluster": {"worker": ["host1:2222", "host2:2222"]}, "task": {"type": "worker", '
            '"index": 0}}. Check the quoting in your launcher: JSON needs double quotes.'
        ) from None
    if not isinstance(config, dict):
        raise ClusterConfigError(
            f"{source} is JSON but not an object (Received: {source}={_shorten(raw)}). Expected "
            'an object with "cluster" and "task" keys.'
        )
    cluster = config.get("cluster")
    if config.get("sparseCluster") is not None and cluster is None:
        cluster = _from_sparse_cluster(config["sparseCluster"], source=source, raw=raw)
    task = config.get("task")
    if cluster is None and not task:
        return None
    if cluster is None:
        raise ClusterConfigError(
            f"{source} has a task but no cluster (Received: {source}={_shorten(raw)}). Expected "
            'a "cluster" key listing every task\'s address, for example {"worker": '
            '["host1:2222", "host2:2222"]}. Add it, or unset TF_CONFIG to train on one machine.'
        )
    if task is not None and not isinstance(task, Mapping):
        raise ClusterConfigError(
            f'{source} "task" is {task!r}, not an object (Received: {source}={_shorten(raw)}). '
            'Expected {"type": "worker", "index": 0}.'
        )
    task = task or {}
    info = validate_cluster(
        cluster, task.get("type"), task.get("index"), source=source, received=raw
    )
    rpc_layer = config.get("rpc_layer")
    if rpc_layer:
        info = ClusterInfo(info.source, info.task_type, info.task_index, info.cluster_spec, rpc_layer)
    return info


def _from_sparse_cluster(sparse: Any, *, source: str, raw: str) -> dict[str, list[str]]:
    """Kubeflow's ``sparseCluster``: ``{"worker": {"1": "host:port"}}`` with indices as keys."""
    if not isinstance(sparse, Mapping):
        raise ClusterConfigError(
            f'{source} "sparseCluster" is not an object (Received: {source}={_shorten(raw)}).'
        )
    dense: dict[str, list[str]] = {}
    for kind, entries in sparse.items():
        if isinstance(entries, Mapping):
            if not all(str(k).isdigit() for k in entries):
                raise ClusterConfigError(
                    f'{source} "sparseCluster" gives {kind!r} the keys {sorted(map(str, entries))} '
                    f"(Received: {source}={_shorten(raw)}). Expected task indices as keys, for "
                    'example {"worker": {"0": "host:2222"}}.'
                )
            dense[kind] = [entries[k] for k in sorted(entries, key=lambda k: int(k))]
        else:
            dense[kind] = entries
    return dense


class TFConfigEnvironment:
    """``TF_CONFIG``: set by Kubeflow's TFJob, Vertex AI for TF jobs, and by hand."""

    name = "TF_CONFIG"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return bool(environ.get("TF_CONFIG", "").strip())

    @staticmethod
    def read(environ: Mapping[str, str]) -> ClusterInfo | None:
        return parse_tf_config(environ["TF_CONFIG"])


class VertexAIEnvironment:
    """Vertex AI custom jobs: ``CLUSTER_SPEC`` with worker pools ``workerpool0..3``.

    Pool 0 is the chief, 1 the workers, 2 the parameter servers and 3 the evaluators.
    """

    name = "CLUSTER_SPEC"
    POOLS = {"workerpool0": "chief", "workerpool1": "worker", "workerpool2": "ps", "workerpool3": "evaluator"}

    @classmethod
    def detect(cls, environ: Mapping[str, str]) -> bool:
        return bool(environ.get("CLUSTER_SPEC", "").strip())

    @classmethod
    def read(cls, environ: Mapping[str, str]) -> ClusterInfo | None:
        raw = environ["CLUSTER_SPEC"]
        try:
            config = json.loads(raw)
        except json.JSONDecodeError as err:
            raise ClusterConfigError(
                f"CLUSTER_SPEC is not valid JSON: {err.msg} (Received: CLUSTER_SPEC={_shorten(raw)}). "
                "Expected the JSON that Vertex AI sets. Unset CLUSTER_SPEC if this is not a "
                "Vertex AI job."
            ) from None
        cluster = config.get("cluster") if isinstance(config, dict) else None
        task = config.get("task") if isinstance(config, dict) else None
        if not isinstance(cluster, dict) or not isinstance(task, dict):
            raise ClusterConfigError(
                f'CLUSTER_SPEC needs "cluster" and "task" objects (Received: CLUSTER_SPEC='
                f"{_shorten(raw)}). Expected the JSON that Vertex AI sets."
            )
        unknown = sorted(set(cluster) - set(cls.POOLS))
        if unknown or task.get("type") not in cls.POOLS:
            raise ClusterConfigError(
                f"CLUSTER_SPEC names worker pools {unknown or [task.get('type')]} that are not "
                f"Vertex AI pools (Received: CLUSTER_SPEC={_shorten(raw)}). Expected "
                f"{', '.join(cls.POOLS)}."
            )
        spec = {cls.POOLS[pool]: addresses for pool, addresses in cluster.items() if addresses}
        return validate_cluster(
            spec, cls.POOLS[task["type"]], task.get("index"), source="CLUSTER_SPEC", received=raw
        )


class SageMakerEnvironment:
    """SageMaker training: ``SM_HOSTS`` (JSON list) and ``SM_CURRENT_HOST``.

    Every host is a worker on ``AUTODIST_PORT`` (default 2222); the first host is the chief.
    """

    name = "SM_HOSTS"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return bool(environ.get("SM_HOSTS", "").strip())

    @staticmethod
    def read(environ: Mapping[str, str]) -> ClusterInfo | None:
        raw = environ["SM_HOSTS"]
        received = f"{raw}, SM_CURRENT_HOST={environ.get('SM_CURRENT_HOST')!r}"
        try:
            hosts = json.loads(raw)
        except json.JSONDecodeError:
            hosts = None
        if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) for h in hosts):
            raise ClusterConfigError(
                f"SM_HOSTS is not a JSON list of host names (Received: SM_HOSTS={_shorten(raw)}). "
                'Expected what SageMaker sets, for example ["algo-1", "algo-2"].'
            )
        current = environ.get("SM_CURRENT_HOST")
        if current not in hosts:
            raise ClusterConfigError(
                f"SM_CURRENT_HOST={current!r} is not among SM_HOSTS (Received: SM_HOSTS={received}). "
                "Expected this host's name to be in the list. Check the job's environment."
            )
        port = _port(environ, PORT_ENV, 2222)
        return validate_cluster(
            {"worker": [f"{host}:{port}" for host in hosts]},
            "worker",
            hosts.index(current),
            source="SM_HOSTS",
            received=received,
        )


class SlurmEnvironment:
    """SLURM steps started with ``srun``: one task per process, all of them workers.

    Host lists are expanded with TensorFlow's own SLURM parsers; tasks are assigned as
    ``SlurmClusterResolver`` assigns them (hosts sorted, ports ``port_base + local task``). The
    resolver itself is not called: on CPU-only nodes it pairs tasks with GPUs and returns no tasks.
    """

    name = "SLURM"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return "SLURM_PROCID" in environ and "SLURM_STEP_NODELIST" in environ

    @staticmethod
    def read(environ: Mapping[str, str]) -> ClusterInfo | None:
        from tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver import (
            expand_hostlist,
            expand_tasks_per_node,
        )

        received = ", ".join(
            f"{k}={environ.get(k)!r}"
            for k in ("SLURM_PROCID", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE", "SLURM_STEP_NUM_TASKS")
        )
        try:
            hosts = expand_hostlist(environ["SLURM_STEP_NODELIST"])
            per_node = expand_tasks_per_node(environ.get("SLURM_STEP_TASKS_PER_NODE", "1"))
            rank = int(environ["SLURM_PROCID"])
        except (ValueError, KeyError, IndexError) as err:
            raise ClusterConfigError(
                f"The SLURM variables could not be read: {err} (Received: {received}). Expected "
                "the variables srun sets. Start each task with srun."
            ) from None
        if len(per_node) == 1 and len(hosts) > 1:
            per_node = per_node * len(hosts)
        if len(per_node) != len(hosts):
            raise ClusterConfigError(
                f"SLURM lists {len(hosts)} nodes but {len(per_node)} task counts (Received: "
                f"{received}). Expected one count per node."
            )
        port_base = _port(environ, SLURM_PORT_BASE_ENV, 8888)
        tasks = [
            f"{host}:{port_base + offset}"
            for host, count in sorted(zip(hosts, per_node))
            for offset in range(count)
        ]
        return validate_cluster({"worker": tasks}, "worker", rank, source="SLURM", received=received)


def _port(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name, str(default))
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ClusterConfigError(
            f"{name} must be a port number (Received: {name}={raw!r}). Expected an integer from 1 "
            f"to 65535. Set it to a free port, or unset it for the default {default}."
        )
    return int(raw)


# The order matters where several managers' variables are present at once:
# 1. TF_CONFIG is the most explicit statement of the cluster, and Kubeflow's TFJob and Vertex AI's
#    prebuilt TensorFlow containers set it alongside their own variables.
# 2. Vertex AI's CLUSTER_SPEC describes the same job in Vertex's own terms.
# 3. SageMaker's SM_HOSTS lists the hosts of a SageMaker job.
# 4. SLURM last: its variables also leak into processes that an srun task starts for other
#    purposes, so any more specific definition above wins.
CLUSTER_ENVIRONMENTS: tuple[Any, ...] = (
    TFConfigEnvironment,
    VertexAIEnvironment,
    SageMakerEnvironment,
    SlurmEnvironment,
)


def detect_cluster(environ: Mapping[str, str]) -> ClusterInfo | None:
    """Return the cluster this process belongs to, or ``None`` for a single machine.

    Args:
        environ: the environment to read, usually ``os.environ``.

    Raises:
        ClusterConfigError: when a cluster manager's variables are present but malformed.
    """
    for environment in CLUSTER_ENVIRONMENTS:
        if environment.detect(environ):
            return environment.read(environ)
    return None


def is_chief(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process is the chief: the ``chief`` task, worker 0 when there is none, or the
    only process when there is no cluster. Use it to guard your own chief-only work.

    Example:
        >>> is_chief({})
        True
        >>> is_chief({"TF_CONFIG": '{"cluster": {"worker": ["a:1", "b:1"]}, '
        ...                         '"task": {"type": "worker", "index": 1}}'})
        False
    """
    import os

    info = detect_cluster(os.environ if environ is None else environ)
    return info is None or info.is_chief
