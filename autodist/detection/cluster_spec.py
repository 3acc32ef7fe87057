"""A cluster as data: :class:`ClusterInfo`, validated from a cluster spec or ``TF_CONFIG``.

Detection layer. Every cluster manager's reader (:mod:`autodist.detection.cluster`) ends here, so one set
of checks gives every malformed cluster the same kind of :class:`~autodist.errors.ClusterConfigError`:
what was received, what was expected, and the fix.

Example:
    >>> info = parse_tf_config('{"cluster": {"chief": ["h0:1"], "worker": ["h1:1"], "ps": ["h2:1"]}, '
    ...     '"task": {"type": "chief", "index": 0}}')
    >>> (info.num_workers, info.num_ps, info.is_chief)
    (2, 1, True)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from autodist import files
from autodist.errors import ClusterConfigError

__all__ = ["KNOWN_TASK_TYPES", "ClusterInfo", "parse_tf_config", "shorten", "validate_cluster"]


#: Task types that tf.distribute understands. The TF1 name ``master`` is not among them.
KNOWN_TASK_TYPES = ("chief", "worker", "ps", "evaluator")
#: The ``rpc_layer`` values TensorFlow's distributed runtime accepts.
RPC_LAYERS = ("grpc", "grpc+verbs", "grpc+mpi")


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
        data = asdict(self) | {"cluster_spec": {k: list(v) for k, v in self.cluster_spec.items()}}
        return data | {"num_workers": self.num_workers, "num_ps": self.num_ps, "is_chief": self.is_chief}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterInfo:
        return cls(
            source=data["source"],
            task_type=data["task_type"],
            task_index=int(data["task_index"]),
            cluster_spec={k: list(v) for k, v in data["cluster_spec"].items()},
            rpc_layer=data.get("rpc_layer"),
        )


def shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate_cluster(cluster_spec: Any, task_type: Any, task_index: Any, *, source: str, received: str) -> ClusterInfo:
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
    quoted = f"(Received: {source}={shorten(received)})"
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
        if not isinstance(kind, str) or kind not in KNOWN_TASK_TYPES:
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
            host, _, port = address.rpartition(":")
            if not host or not re.fullmatch(r"[0-9]{1,5}", port) or not 0 < int(port) < 65536:
                raise ClusterConfigError(
                    f"{source} lists the address {address!r} for {kind!r}, whose port {port!r} is not "
                    f'a port number {quoted}. Expected "host:port" with a port from 1 to 65535, '
                    'for example "10.0.0.2:2222". Fix the port.'
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
            'parameter-server training the chief coordinates the workers. Add a "chief" '
            "address (python -m autodist launch --ps adds one)."
        )
    if len(spec.get("chief", [])) > 1:
        raise ClusterConfigError(
            f"{source} has {len(spec['chief'])} chief tasks {quoted}. Expected at most one. Make the others workers."
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
    if not isinstance(task_type, str) or task_type not in KNOWN_TASK_TYPES:
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
        config = files.parse_json(raw)
    except ValueError as err:
        raise ClusterConfigError(
            f"{source} is not valid JSON: {err} "
            f"(Received: {source}={shorten(raw)}). Expected a JSON object such as "
            '{"cluster": {"worker": ["host1:2222", "host2:2222"]}, "task": {"type": "worker", '
            '"index": 0}}. Check the quoting in your launcher: JSON needs double quotes.'
        ) from None
    if not isinstance(config, dict):
        raise ClusterConfigError(
            f"{source} is JSON but not an object (Received: {source}={shorten(raw)}). Expected "
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
            f"{source} has a task but no cluster (Received: {source}={shorten(raw)}). Expected "
            'a "cluster" key listing every task\'s address, for example {"worker": '
            '["host1:2222", "host2:2222"]}. Add it, or unset TF_CONFIG to train on one machine.'
        )
    if task is not None and not isinstance(task, Mapping):
        raise ClusterConfigError(
            f'{source} "task" is {task!r}, not an object (Received: {source}={shorten(raw)}). '
            'Expected {"type": "worker", "index": 0}.'
        )
    task = task or {}
    info = validate_cluster(cluster, task.get("type"), task.get("index"), source=source, received=raw)
    rpc_layer = config.get("rpc_layer")
    if rpc_layer is not None and rpc_layer not in RPC_LAYERS:
        raise ClusterConfigError(
            f'{source} "rpc_layer" is {rpc_layer!r} (Received: {source}={shorten(raw)}). Expected one of '
            f'{", ".join(RPC_LAYERS)} (TensorFlow\'s servers speak gRPC). Remove it, or set "grpc".'
        )
    return replace(info, rpc_layer=rpc_layer) if rpc_layer else info


def _from_sparse_cluster(sparse: Any, *, source: str, raw: str) -> dict[str, list[str]]:
    """Kubeflow's ``sparseCluster``: ``{"worker": {"1": "host:port"}}`` with indices as keys."""
    if not isinstance(sparse, Mapping):
        raise ClusterConfigError(f'{source} "sparseCluster" is not an object (Received: {source}={shorten(raw)}).')
    dense: dict[str, list[str]] = {}
    for kind, entries in sparse.items():
        if isinstance(entries, Mapping):
            if not all(re.fullmatch(r"[0-9]{1,6}", str(k)) for k in entries):
                raise ClusterConfigError(
                    f'{source} "sparseCluster" gives {kind!r} the keys {sorted(map(str, entries))} '
                    f"(Received: {source}={shorten(raw)}). Expected task indices as keys, for "
                    'example {"worker": {"0": "host:2222"}}.'
                )
            dense[kind] = [entries[k] for k in sorted(entries, key=lambda k: int(k))]
        else:
            dense[kind] = entries
    return dense
