"""Cluster detection: which cluster (if any) this process belongs to, and what its role is.

Each cluster manager is a small class that follows :class:`ClusterEnvironment`: ``name``,
``detect(environ) -> bool`` and ``read(environ) -> ClusterInfo | None``; every reader ends in
:func:`autodist.detection.cluster_spec.validate_cluster`. :func:`detect_cluster` tries them in the fixed order of
:data:`CLUSTER_ENVIRONMENTS`. Nothing here touches the network or the TensorFlow runtime; only the
SLURM reader imports TensorFlow (for its host-list parsers), and only under SLURM. The result
is validated data that ``tf.distribute`` can consume as it is (:meth:`ClusterInfo.tf_config`).

Example:
    >>> from autodist.detection.cluster import detect_cluster
    >>> info = detect_cluster({"TF_CONFIG": '{"cluster": {"worker": ["127.0.0.1:2222", '
    ...     '"127.0.0.1:2223"]}, "task": {"type": "worker", "index": 1}}'})
    >>> (info.task_type, info.task_index, info.num_workers, info.is_chief)
    ('worker', 1, 2, False)
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from typing import Protocol

from autodist.detection import ray_train  # ray_train.ray_train_worker: the one probe, looked up when called
from autodist.detection.cluster_spec import ClusterInfo, parse_tf_config, shorten, validate_cluster
from autodist.detection.kubernetes import KubernetesEnvironment
from autodist import fields, files
from autodist.errors import ClusterConfigError
from autodist.settings import PORT_ENV, SLURM_PORT_BASE_ENV, port_setting
from autodist.upstream.tf_runtime import slurm_hostlist

__all__ = [
    "CLUSTER_ENVIRONMENTS",
    "ClusterEnvironment",
    "ClusterInfo",
    "KubernetesEnvironment",
    "RayTrainEnvironment",
    "TFConfigEnvironment",
    "detect_cluster",
    "is_chief",
    "parse_tf_config",
    "validate_cluster",
]


class ClusterEnvironment(Protocol):
    """What every cluster manager's class provides (Lightning Fabric's ``ClusterEnvironment``, as
    data): its name, whether its variables are present, and the cluster they describe."""

    name: str

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        """Whether this manager's variables are present in ``environ``."""
        ...

    @staticmethod
    def read(environ: Mapping[str, str]) -> ClusterInfo | None:
        """The validated cluster the variables describe.

        Raises:
            ClusterConfigError: when they are present but malformed.
        """
        ...


class TFConfigEnvironment:
    """``TF_CONFIG``: set by Kubeflow's TFJob, Vertex AI for TF jobs, and by hand."""

    name = "TF_CONFIG"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return bool(environ.get("TF_CONFIG", "").strip())

    @staticmethod
    def read(environ: Mapping[str, str]) -> ClusterInfo | None:
        return parse_tf_config(environ["TF_CONFIG"])


class RayTrainEnvironment:
    """A Ray Train worker (:mod:`autodist.detection.ray_train`): ``TensorflowTrainer``'s
    ``TF_CONFIG``, read as such and named after Ray Train in the plan's reasons. Ray's
    ``TF_CONFIG`` lists workers only, so worker 0 does the chief's duties."""

    name = "Ray Train"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return bool(environ.get("TF_CONFIG", "").strip()) and ray_train.ray_train_worker() is not None

    @staticmethod
    def read(environ: Mapping[str, str]) -> ClusterInfo | None:
        info = parse_tf_config(environ["TF_CONFIG"])
        return None if info is None else dataclasses.replace(info, source="TF_CONFIG from Ray Train")


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
            config = files.parse_json(raw)
        except ValueError as err:
            raise ClusterConfigError(
                f"CLUSTER_SPEC is not valid JSON: {err} (Received: CLUSTER_SPEC={shorten(raw)}). "
                "Expected the JSON that Vertex AI sets. Unset CLUSTER_SPEC if this is not a "
                "Vertex AI job."
            ) from None
        cluster = config.get("cluster") if isinstance(config, dict) else None
        task = config.get("task") if isinstance(config, dict) else None
        if not isinstance(cluster, dict) or not isinstance(task, dict):
            raise ClusterConfigError(
                f'CLUSTER_SPEC needs "cluster" and "task" objects (Received: CLUSTER_SPEC='
                f"{shorten(raw)}). Expected the JSON that Vertex AI sets."
            )
        unknown = sorted(set(cluster) - set(cls.POOLS))
        if unknown or not isinstance(task.get("type"), str) or task.get("type") not in cls.POOLS:
            raise ClusterConfigError(
                f"CLUSTER_SPEC names worker pools {unknown or [task.get('type')]} that are not "
                f"Vertex AI pools (Received: CLUSTER_SPEC={shorten(raw)}). Expected "
                f"{', '.join(cls.POOLS)}."
            )
        spec = {cls.POOLS[pool]: addresses for pool, addresses in cluster.items() if addresses}
        return validate_cluster(spec, cls.POOLS[task["type"]], task.get("index"), source="CLUSTER_SPEC", received=raw)


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
            hosts = files.parse_json(raw)
        except ValueError:
            hosts = None  # refused below, with what SageMaker sets
        if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) for h in hosts):
            raise ClusterConfigError(
                f"SM_HOSTS is not a JSON list of host names (Received: SM_HOSTS={shorten(raw)}). "
                'Expected what SageMaker sets, for example ["algo-1", "algo-2"].'
            )
        current = environ.get("SM_CURRENT_HOST")
        if current not in hosts:
            raise ClusterConfigError(
                f"SM_CURRENT_HOST={current!r} is not among SM_HOSTS (Received: SM_HOSTS={received}). "
                "Expected this host's name to be in the list. Check the job's environment."
            )
        port = port_setting(environ, PORT_ENV, 2222)
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
        received = ", ".join(
            f"{k}={environ.get(k)!r}"
            for k in ("SLURM_PROCID", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE", "SLURM_STEP_NUM_TASKS")
        )
        _check_slurm_size(environ["SLURM_STEP_NODELIST"], environ.get("SLURM_STEP_TASKS_PER_NODE", "1"), received)
        try:
            expanded = slurm_hostlist(environ["SLURM_STEP_NODELIST"], environ.get("SLURM_STEP_TASKS_PER_NODE", "1"))
            rank = int(environ["SLURM_PROCID"])
        except (ValueError, KeyError, IndexError) as err:
            raise ClusterConfigError(
                f"The SLURM variables could not be read: {err} (Received: {received}). Expected "
                "the variables srun sets. Start each task with srun."
            ) from None
        if expanded is None:
            return None  # the touch is off (warned once): not read as a SLURM job
        hosts, per_node = expanded
        if len(per_node) == 1 and len(hosts) > 1:
            per_node = per_node * len(hosts)
        if len(per_node) != len(hosts):
            raise ClusterConfigError(
                f"SLURM lists {len(hosts)} nodes but {len(per_node)} task counts (Received: "
                f"{received}). Expected one count per node."
            )
        port_base = port_setting(environ, SLURM_PORT_BASE_ENV, 8888)
        if port_base + max(per_node, default=1) - 1 > 65535:
            raise ClusterConfigError(
                f"{SLURM_PORT_BASE_ENV}={port_base} gives a node's {max(per_node)} tasks the ports "
                f"{port_base} to {port_base + max(per_node) - 1}, past 65535 (Received: {received}). "
                f"Expected ports from 1 to 65535. Set {SLURM_PORT_BASE_ENV} to at most {65536 - max(per_node)}."
            )
        tasks = [
            f"{host}:{port_base + offset}" for host, count in sorted(zip(hosts, per_node)) for offset in range(count)
        ]
        return validate_cluster({"worker": tasks}, "worker", rank, source="SLURM", received=received)


#: The most nodes, and tasks, a SLURM step may list: more than any cluster runs in one job, and
#: few enough that expanding the lists takes no time (``n[1-100000000]`` made 10^8 names).
MAX_SLURM_TASKS = 1 << 16


def _check_slurm_size(nodelist: str, tasks_per_node: str, received: str) -> None:
    """Refuse a node list or task counts that expand past :data:`MAX_SLURM_TASKS`, counted from
    the strings (``n[1-4]``: 4 nodes; ``2(x3)``: 3 nodes of 2 tasks) before anything is expanded.

    Example:
        >>> _check_slurm_size("n[1-100000000]", "1", "")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        autodist.errors.ClusterConfigError: SLURM lists more than 65536 nodes or tasks (Received: ). Expected the
        variables srun sets for one job of at most 65536 tasks. Check SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE.
    """
    nodes = sum(  # each top-level item ("n[1-3]", "m1"): the product of its groups' sizes
        math.prod(sum(map(_range_size, group.split(","))) for group in re.findall(r"\[([^\]]*)\]", item))
        for item in re.split(r",(?![^\[]*\])", nodelist)
    )
    tasks = sum(
        int(count[:9] or 0) * int(times[:9] or 1)
        for count, times in re.findall(r"(\d+)(?:\(x(\d+)\))?", tasks_per_node)
    )
    if max(nodes, tasks) > MAX_SLURM_TASKS:
        raise ClusterConfigError(
            f"SLURM lists more than {MAX_SLURM_TASKS} nodes or tasks (Received: {received}). Expected the variables "
            "srun "
            f"sets for one job of at most {MAX_SLURM_TASKS} tasks. Check SLURM_STEP_NODELIST and "
            "SLURM_STEP_TASKS_PER_NODE."
        )


def _range_size(part: str) -> int:
    """How many names a hostlist range stands for: ``"1-3"`` 3, ``"7"`` 1 (digits past nine count as the bound)."""
    low, _, high = part.partition("-")
    if not high:
        return 1
    try:
        return (
            max(1, int(high.strip()[:9]) - int(low.strip()[:9]) + 1) if len(high.strip()) <= 9 else MAX_SLURM_TASKS + 1
        )
    except ValueError:
        return 1  # not a range: TensorFlow's parser refuses it


# The order matters where several managers' variables are present at once:
# 0. Ray Train sets TF_CONFIG itself (TensorflowTrainer): read first, so the plan names Ray Train.
# 1. TF_CONFIG is the most explicit statement of the cluster, and Kubeflow's TFJob and Vertex AI's
#    prebuilt TensorFlow containers set it alongside their own variables.
# 2. Vertex AI's CLUSTER_SPEC describes the same job in Vertex's own terms.
# 3. SageMaker's SM_HOSTS lists the hosts of a SageMaker job.
# 4. Kubernetes: the pod of a job whose manifest passes AUTODIST_K8S_WORKERS (autodist's own
#    variable: a manifest that also sets TF_CONFIG meant TF_CONFIG).
# 5. SLURM last: its variables also leak into processes that an srun task starts for other
#    purposes, so any more specific definition above wins.
CLUSTER_ENVIRONMENTS: tuple[type[ClusterEnvironment], ...] = (
    RayTrainEnvironment,
    TFConfigEnvironment,
    VertexAIEnvironment,
    SageMakerEnvironment,
    KubernetesEnvironment,
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

    fields.check_environ("autodist.is_chief", environ)
    info = detect_cluster(os.environ if environ is None else environ)
    return info is None or info.is_chief
