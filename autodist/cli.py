"""Command line: ``python -m autodist {inspect,plan,demo,launch,manifest}`` (also the ``autodist`` script).

Each sub-command is ``<name>_parser(subparsers)`` + ``<name>_command(args) -> data``; :func:`main`
prints the data as text (for bug reports) or, with ``--json``, as JSON.

Example:
    >>> from autodist.cli import main
    >>> main(["plan", "--num-params", "1000", "--batch-size", "64", "--json"])  # doctest: +SKIP
    0
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
import warnings
from typing import Any, NoReturn

from autodist.detection.hardware import HardwareSnapshot, detect
from autodist.entry.at_import import uninstall as uninstall_activation
from autodist.detection.ray_train import ray_train_worker
from autodist.errors import ArgumentError, AutodistError
from autodist.fields import bounded, nearest
from autodist.files import parse_json, read_regular_file
from autodist.planning.arguments import MAX_BATCH_SIZE, MAX_NUM_PARAMS, STRATEGY_NAMES
from autodist.jobs import job_layout
from autodist.jobs.kubernetes import DEFAULT_USER, ManifestSpec, manifest_comments, manifest_objects, to_yaml
from autodist.jobs.tune_cache import cached_decisions
from autodist.core.detect_and_plan import plan_here
from autodist.planning.planner import check_strategy_setting, plan
from autodist.planning.plans import Plan, format_gib
from autodist.settings import check_settings
from autodist.process import replaced
from autodist.upstream.surface import status as upstream_status
from autodist.upstream.versions import MEASURED, check_versions, installed, is_prerelease

__all__ = ["main"]

STRATEGY_CHOICES = [name for name in STRATEGY_NAMES if name != "tune"]  # "tune" times a model: fit only
#: The demo trains a small model on 1,437 images: 20 epochs take seconds; a thousand, minutes.
MAX_DEMO_EPOCHS = 10_000


def _gib(num_bytes: int | None) -> str:
    return format_gib(num_bytes, unknown="unknown (could not be read)")


def _unknown(value: Any, why: str) -> str:
    return f"not checked ({why})" if value is None else str(value)


def snapshot_text(snap: HardwareSnapshot) -> list[str]:
    """The hardware report's lines for ``snap``: TensorFlow, Keras, CPUs, memory, GPUs, TPU, cluster.

    Example:
        >>> snapshot_text(HardwareSnapshot.cpu_only())[0].startswith("tensorflow:")
        True
    """
    unread = "--fast skips TensorFlow" if snap.keras_backend == "tensorflow" else f"Keras runs on {snap.keras_backend}"
    lines = [
        f"tensorflow: {snap.tensorflow_version or 'not installed'}"
        + ("" if snap.tensorflow_cuda_build is None else f" (CUDA build: {snap.tensorflow_cuda_build})"),
        f"keras: {snap.keras_version or 'not installed'} ({snap.keras_flavor})",
        f"platform: {snap.platform}",
        f"cpus: {snap.num_cpus}; logical CPU devices: {snap.num_cpu_devices}",
        f"host memory: {_gib(snap.host_memory_bytes)}",
        f"GPUs seen by the NVIDIA driver: {_unknown(snap.num_driver_gpus, 'no NVML driver')}",
        f"GPUs seen by TensorFlow: {_unknown(snap.num_tensorflow_gpus, unread)}",
    ]
    for index, gpu in enumerate(snap.gpus):
        lines.append(
            f"  gpu {index}: {gpu.name}, {_gib(gpu.memory_bytes)}, compute capability "
            f"{gpu.compute_capability or 'unknown'}"
        )
    if snap.keras_backend != "tensorflow":
        lines.append(
            f"keras backend: {snap.keras_backend}"
            + (f" (jax {snap.jax_version or 'not installed'})" if snap.keras_backend == "jax" else "")
        )
    if snap.keras_backend == "jax":
        lines.append(f"JAX devices of this process: {len(snap.jax_devices)}")
        lines += [f"  {index}: {device.describe()}" for index, device in enumerate(snap.jax_devices)]
    lines.append(f"TPU: {f'{snap.tpu.source}={snap.tpu.name}' if snap.tpu else 'no TPU'}")
    if snap.cluster:
        c = snap.cluster
        lines.append(
            f"cluster ({c.source}): task {c.task_type} {c.task_index}, {c.num_workers} worker(s), "
            f"{c.num_ps} ps, chief: {c.is_chief}"
        )
    else:
        lines.append("cluster: none (single machine)")
    lines += [f"diagnosis: {note}" for note in snap.diagnostics]
    return lines


# ----------------------------------------------------------------------------- inspect


def inspect_parser(subparsers: Any) -> None:
    """Add ``inspect`` (the hardware report and the plan for it) to ``subparsers``."""
    parser = subparsers.add_parser("inspect", help="print the hardware report and the plan")
    parser.add_argument("--json", action="store_true", help="print JSON: {snapshot, plan}")
    parser.add_argument("--fast", action="store_true", help="do not import TensorFlow")
    parser.set_defaults(command=inspect_command, render=render_inspect)


def inspect_command(args: argparse.Namespace) -> dict[str, Any]:
    """Detect this machine and plan for it: ``{"snapshot", "plan", "detect_seconds", "tuned",
    "ray_train", "replaced", ...}`` (``ray_train``: this process's place in a Ray Train worker
    group, or ``None``; ``replaced``: the attributes of TensorFlow and Keras that autodist replaced
    in this process, :func:`autodist.process.replaced`)."""
    start = time.perf_counter()
    snap = detect(fast=args.fast)
    the_plan = plan_here(os.environ, snapshot=snap)  # as fit plans: the AUTODIST_* settings included
    worker = ray_train_worker()
    return {
        "versions": _versions(),
        # probing imports TensorFlow and Keras's TensorFlow side: not with --fast, nor on JAX
        "upstream": None if args.fast or snap.keras_backend == "jax" else upstream_status(),
        "ray_train": worker.to_dict() if worker is not None else None,
        "snapshot": snap.to_dict(),
        "plan": the_plan.to_dict(),
        "detect_seconds": round(time.perf_counter() - start, 3),
        "tuned": cached_decisions(),
        "replaced": replaced(),
    }


def _versions() -> dict[str, Any]:
    """The installed TensorFlow, Keras and tf_keras, and what autodist says of them; for a pair
    newer than the support matrix's, what each Keras workaround does on it and the test that
    decides it (the touches' tests are in ``upstream``'s rows)."""
    found = installed()
    try:
        notes, error = check_versions(found), None
    except AutodistError as err:
        notes, error = [], str(err)
    untested = None
    if notes and found.get("keras"):
        from autodist.upstream.keras_workarounds import WORKAROUNDS

        untested = []
        for w in WORKAROUNDS.values():
            with warnings.catch_warnings():  # the untested-release warning: this report says as much
                warnings.simplefilter("ignore")
                try:  # the workaround's own decision, AUTODIST_KERAS_COMPAT read
                    applied: bool | str = w.is_active(found["keras"])
                except AutodistError as err:
                    applied = str(err)
            untested.append(
                {"workaround": w.name, "applied": applied, "releases": w.releases(), "still_needed": w.still_needed}
            )
    measured = any(found.get("tensorflow") == tf and found.get("keras") == keras for tf, keras, _ in MEASURED)
    return {"installed": found, "notes": notes, "error": error, "workarounds": untested, "measured": measured}


def _versions_text(data: dict[str, Any] | None) -> list[str]:
    if not data:
        return []
    named = ", ".join(f"{name} {version}" for name, version in data["installed"].items() if version) or "none installed"
    if data["error"]:
        verdict = "unsupported"
    elif data["notes"]:
        verdict = "newer than tested"
    elif data.get("measured") and any(is_prerelease(v) for v in data["installed"].values()):
        verdict = "pre-releases the support matrix measured (its next sessions, docs/support-matrix.md)"
    else:
        verdict = "supported (docs/support-matrix.md)"
    return [
        f"versions: {named}: {verdict}",
        *(f"  {line}" for line in ([data["error"]] if data["error"] else data["notes"])),
    ]


def _upstream_text(rows: list[dict[str, str]] | None) -> list[str]:
    if rows is None:
        return ["upstream surface: not probed (--fast, or Keras on JAX: TensorFlow is not imported)"]
    counts = {state: sum(row["state"] == state for row in rows) for state in ("on", "not needed", "off")}
    lines = [
        f"upstream surface (touches of private code, docs/upstream.md): {counts['on']} on, {counts['not needed']} not "
        f"needed, {counts['off']} off"
    ]
    for row in rows:
        if row["state"] != "on":
            lines.append(
                f"  {row['state']}: {row['touch']}: missing {row['missing']}"
                + (f"; {row['off']}" if row["state"] == "off" else "")
            )
    return lines


def _untested_text(versions: dict[str, Any] | None, rows: list[dict[str, str]] | None) -> list[str]:
    """For a pair newer than the support matrix's: every touch and Keras workaround, its state
    here, and the still-needed test that decides it (docs/support-matrix.md says how to run them)."""
    if not versions or not versions.get("notes"):
        return []
    lines = [
        "untested pair: each piece's state here, and the still-needed test that decides it "
        "(docs/support-matrix.md, 'Your own pair'):"
    ]
    lines += [f"  touch {row['touch']}: {row['state']}; {row['still_needed']}" for row in rows or []]
    for w in versions.get("workarounds") or []:
        state = {True: "applied where a plan needs it", False: "not applied"}.get(w["applied"], w["applied"])
        lines.append(f"  workaround {w['workaround']} (Keras {w['releases']}): {state}; {w['still_needed']}")
    return lines


def render_inspect(data: dict[str, Any]) -> str:
    """``inspect``'s data as the text report that bug reports quote."""
    snap = HardwareSnapshot.from_dict(data["snapshot"])
    lines = ["== autodist inspect =="] + snapshot_text(snap)
    lines.append(f"detection took {data['detect_seconds']} s")
    lines += _versions_text(data.get("versions"))
    if "upstream" in data:
        lines += _upstream_text(data["upstream"])
    lines += _untested_text(data.get("versions"), data.get("upstream"))
    worker = data.get("ray_train")
    if worker:  # asked of this process's Ray context: inspect called inside train_loop_per_worker
        lines.append(
            f"Ray Train: worker {worker['world_rank']} of {worker['world_size']} (local rank {worker['local_rank']})"
        )
    lines.append("")
    lines.append(_plan_text(data["plan"]))
    lines += _installed_text(data["plan"].get("keras_workarounds") or [], data.get("replaced") or [])
    lines += _tuned_text(data.get("tuned") or [])
    return "\n".join(lines)


def _installed_text(workarounds: list[str], replaced_now: list[str]) -> list[str]:
    """The Keras workarounds the plan installs, and what autodist has replaced in this process."""
    lines = [
        "",
        f"Keras workarounds this plan installs (docs/keras-workarounds.md): {len(workarounds)}"
        + (f": {', '.join(workarounds)}" if workarounds else ""),
    ]
    if not replaced_now:
        lines.append("replaced in this process: nothing (a fit installs them; autodist.process.reset() puts them back)")
    else:
        lines.append(f"replaced in this process: {len(replaced_now)} attributes of TensorFlow and Keras:")
        lines += [f"  {name}" for name in replaced_now]
    return lines


def _tuned_text(decisions: list[dict[str, Any]]) -> list[str]:
    """The cached ``strategy="tune"`` decisions, one line each: when, for what, and the pick."""
    if not decisions:
        return ["", "tuned decisions: none cached (strategy='tune' in autodist.fit makes them)"]
    lines = ["", f"tuned decisions (strategy='tune', cached; {len(decisions)}):"]
    for record in decisions:
        key, speeds = record.get("key", {}), {t["name"]: t.get("samples_per_second") for t in record.get("timings", [])}
        model = key.get("model") or ["?"]
        best = speeds.get(record.get("choice"))
        lines.append(
            f"  {record.get('date')}: {model[0]} ({len(model[2]) if len(model) > 2 else '?'} weights), global batch "
            f"{key.get('batch_size')}: {record.get('choice')} at {best or 0:,.0f} samples/s, of "
            f"{sum(v is not None for v in speeds.values())} timed in {record.get('tuning_seconds')} s"
        )
    return lines


# ----------------------------------------------------------------------------- plan


def plan_parser(subparsers: Any) -> None:
    """Add ``plan`` (the planner on this machine or on a ``--snapshot`` of another) to ``subparsers``."""
    parser = subparsers.add_parser("plan", help="dry-run the planner on real or simulated hardware")
    parser.add_argument("--snapshot", help="a snapshot JSON file (as `inspect --json` writes it)")
    parser.add_argument("--num-params", type=bounded(MAX_NUM_PARAMS), help="the model's parameter count")
    parser.add_argument("--batch-size", type=bounded(MAX_BATCH_SIZE), help="the global batch size")
    parser.add_argument(
        "--strategy",
        default="auto",
        type=strategy_argument,
        help=f"one of {', '.join(STRATEGY_CHOICES)} (default auto)",
    )
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.set_defaults(command=plan_command, render=_plan_text)


def plan_command(args: argparse.Namespace) -> dict[str, Any]:
    """The plan for the snapshot file (or this machine), as :meth:`Plan.to_dict` writes it.

    Raises:
        AutodistError: when the snapshot file cannot be read as JSON.
    """
    # a dry run: a model that fits no GPU is a warning in the plan, not an error
    asked = dict(num_params=args.num_params, batch_size=args.batch_size, strategy=args.strategy)
    if args.snapshot is not None:
        raw = read_json_file(
            args.snapshot, "--snapshot", "a JSON file as `python -m autodist inspect --json > snap.json` writes it"
        )
        snap = HardwareSnapshot.from_dict(raw.get("snapshot", raw) if isinstance(raw, dict) else raw)
        # a snapshot file: what another machine would plan, with no setting of this one
        return plan(snap, **asked, refuse_when_nothing_fits=False).to_dict()
    # this machine, as fit plans it (its AUTODIST_* settings included)
    return plan_here(os.environ, snapshot=detect(fast=True), **asked, refuse_when_nothing_fits=False).to_dict()


def read_json_file(path: str, flag: str, expected: str) -> Any:
    """The JSON value in the file at ``path``, whatever its bytes: UTF-8 (with or without a
    byte-order mark), or UTF-16/32 with one (what a Windows shell's ``>`` writes).

    Raises:
        ArgumentError: one line naming the file and what was expected, for an empty path, a
            missing file, a folder, a pipe or device, a file over 1 MiB, bytes in no such
            encoding, or text that is not JSON (nested too deeply, or numbers too long, included).
    """
    try:
        if not path:
            raise ValueError("empty")
        return parse_json(read_regular_file(path))
    except ValueError as err:
        raise ArgumentError(f"{flag} {path!r} is {err}. Expected {expected}. Pass that file's path.") from None


def _plan_text(data: dict[str, Any]) -> str:
    """A plan as ``Plan.summary`` renders it (the one rendering), from its JSON form."""
    return Plan.from_dict(data).summary(prefix="plan")


# ----------------------------------------------------------------------------- demo


def demo_parser(subparsers: Any) -> None:
    """Add ``demo`` (training on the bundled digits data) to ``subparsers``."""
    parser = subparsers.add_parser("demo", help="train on the bundled digits data set")
    parser.add_argument("--epochs", type=bounded(MAX_DEMO_EPOCHS), default=20)
    parser.add_argument("--batch-size", type=bounded(MAX_BATCH_SIZE), default=64)
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(command=demo_command, render=render_demo)


def demo_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run the demo (:func:`autodist.demo.run_demo`) and return its figures."""
    from autodist.demo import run_demo

    return run_demo(epochs=args.epochs, batch_size=args.batch_size)


def render_demo(data: dict[str, Any]) -> str:
    """The demo's figures as one paragraph of text."""
    return (
        f"demo: trained on {data['num_train']} bundled digit images for {data['epochs']} epochs "
        f"under the {data['strategy']} strategy ({data['num_replicas']} replica(s))\n"
        f"demo: test accuracy {data['test_accuracy']:.3f} on {data['num_test']} held-out images "
        f"(test loss {data['test_loss']:.3f})"
    )


# ----------------------------------------------------------------------------- launch


def launch_parser(subparsers: Any) -> None:
    """Add ``launch`` (a local multi-worker job on 127.0.0.1) to ``subparsers``."""
    from autodist.jobs.exit_codes import PREEMPTED_EXIT_CODE
    from autodist.jobs.launch import DEFAULT_GRACE, DEFAULT_STALL_TIMEOUT, FAILURE_GRACE

    parser = subparsers.add_parser(
        "launch",
        help="run a training script as a local cluster on 127.0.0.1",
        description="Start the workers (and ps) of one job on 127.0.0.1, each with its own TF_CONFIG.",
    )
    # The values stay text here: JobSpec and launch_flags check them all, before anything starts,
    # each refused in one line that names it (argparse would print its usage and a second line).
    parser.add_argument(
        "--workers",
        required=True,
        help="worker processes (at most what this machine can run: its open-file and process limits, and memory)",
    )
    parser.add_argument("--ps", default=0, help="parameter-server processes (adds a chief)")
    parser.add_argument(
        "--max-restarts",
        default=0,
        help="restarts of the whole job after a failure, 1 s apart, then 2, 4, ... up to 30 s",
    )
    parser.add_argument("--timeout", default=None, help="seconds the whole job may run (at most a week)")
    parser.add_argument(
        "--grace",
        default=DEFAULT_GRACE,
        help="seconds a task gets after SIGTERM (forwarded when the launcher is told to stop) to "
        f"finish its step and save it, before SIGKILL (default {DEFAULT_GRACE:g}; at most "
        f"{FAILURE_GRACE:g} after a task failed); saved tasks exit {PREEMPTED_EXIT_CODE} and the next start resumes",
    )
    parser.add_argument(
        "--stall-timeout",
        default=DEFAULT_STALL_TIMEOUT,
        help="stop the job (exit code 125) when a training task makes no progress for this many "
        "seconds (default 1800: 30 minutes; 0 turns the watchdog off)",
    )
    parser.add_argument(
        "--no-isolate",
        action="store_true",
        help="run the tasks in this machine's network instead of a private one (Linux); needed "
        "when the script downloads data or talks to other hosts",
    )
    parser.add_argument("--backup-dir", default=None, help="backup directory shared by restarts")
    parser.add_argument("--dry-run", action="store_true", help="print each task's TF_CONFIG and command")
    parser.add_argument("--hosts", default=None, help="comma-separated hosts: print a per-host plan")
    parser.add_argument("--json", action="store_true", help="with --dry-run or --hosts, print JSON")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    parser.set_defaults(command=launch_command, render=render_launch)


def launch_command(args: argparse.Namespace) -> dict[str, Any]:
    """Print the tasks (``--dry-run``, ``--hosts``) or run the job: ``{"tasks"}`` or
    ``{"exit_code", "attempts", "failed_task"}``. Every flag is checked first, the same way for a
    dry run as for a launch (:class:`~autodist.jobs.launch.JobSpec`, :meth:`~autodist.jobs.launch.Launcher.check`)."""
    from autodist.jobs import launch

    names = ("max_restarts", "timeout", "grace", "backup_dir", "stall_timeout")
    launcher = launch.Launcher(  # checks the counts and the limits
        args.workers, args.ps, isolate=not args.no_isolate, **{name: getattr(args, name) for name in names}
    )
    spec = launcher.spec
    if args.hosts is not None:  # a plan for other machines: their script, their limits
        return {
            "tasks": job_layout.host_plan(args.hosts.split(","), spec.num_workers, spec.num_ps, args.script, args.args)
        }
    if args.dry_run:
        launcher.check(args.script)  # what a launch checks before it starts anything
        cluster = job_layout.local_cluster(spec.num_workers, spec.num_ps)
        hosts = [job_layout.LOOPBACK] * job_layout.num_tasks(spec.num_workers, spec.num_ps)
        gpus = job_layout.local_gpu_env(spec.num_workers, spec.num_ps, job_layout.visible_gpus(os.environ))
        return {
            "tasks": job_layout.task_table(cluster, hosts, " ".join([sys.executable, args.script, *args.args]), gpus)
        }
    try:
        result = launcher.run(args.script, args.args)
    except launch.Terminated as stop:  # every task is stopped already
        return {"exit_code": 128 + stop.signum, "attempts": 0, "failed_task": f"the launcher got signal {stop.signum}"}
    return {"exit_code": result.exit_code, "attempts": result.attempts, "failed_task": result.failed_task}


def render_launch(data: dict[str, Any]) -> str:
    """The tasks as copyable ``TF_CONFIG=... command`` lines, or the job's ending in one line."""
    if "tasks" in data:
        lines = []
        for task in data["tasks"]:
            lines.append(f"# {task['task']} on {task['host']}")
            env = "".join(f"{name}={shlex.quote(value)} " for name, value in task.get("env", {}).items())
            lines.append(f"{env}TF_CONFIG='{json.dumps(task['tf_config'])}' {task['command']}")
        return "\n".join(lines)
    if data["exit_code"] == 0:
        return f"[launcher] job finished: every task exited 0 ({data['attempts']} attempt(s))"
    return f"[launcher] job failed: {data['failed_task'] or 'timeout'} (exit code {data['exit_code']})"


def manifest_parser(subparsers: Any) -> None:
    """Add ``manifest`` (the Kubernetes manifest of a training job) to ``subparsers``."""
    parser = subparsers.add_parser(
        "manifest", help="print the Kubernetes manifest that runs a script on N workers (docs/kubernetes.md)"
    )
    for flag, default, text in (  # text, as for launch: ManifestSpec checks every value and names the flag
        ("--name", None, "the job's name: its Jobs, Service and pods are named after it (required)"),
        ("--workers", None, "worker pods (required)"),
        ("--image", None, "the container image, with TensorFlow, autodist and the script (required)"),
        ("--ps", 0, "parameter-server pods (adds a chief)"),
        ("--gpus", 0, "GPUs per worker pod (nvidia.com/gpu)"),
        ("--cpu", None, "CPU each pod requests (a quantity: 4, 500m)"),
        ("--memory", None, "memory each pod requests (a quantity: 16Gi)"),
        ("--cpu-limit", None, "CPU each pod may use at most (a quantity)"),
        ("--memory-limit", None, "memory each pod may use at most (a quantity)"),
        ("--user", None, f"the user id the pods run as (default {DEFAULT_USER}; not root)"),
        ("--egress", "open", "the pods' egress: open, or job (the job's own pods and DNS, port 53, only)"),
        ("--port", 2222, "the first task's port; each task adds its place (default 2222)"),
        ("--namespace", None, "the namespace (default: kubectl's)"),
        ("--backup-claim", None, "a PersistentVolumeClaim for the saves, so a restarted pod resumes"),
        ("--timeout", None, "seconds the job may run (activeDeadlineSeconds)"),
        ("--jobset", False, "a JobSet instead of indexed Jobs (the JobSet controller must be installed)"),
        (
            "--allow-root",
            False,
            "run as the image's user, root included, for images that need it (the restricted Pod Security "
            "Standard then rejects the pods: docs/kubernetes.md)",
        ),
        ("--writable-root", False, "a writable root file system, for scripts that write beside themselves"),
        ("--json", False, "print the objects as JSON"),
    ):  # a default of False: a switch
        taken = {"action": "store_true"} if default is False else {"default": default}
        parser.add_argument(flag, required=text.endswith("(required)"), help=text, **taken)
    parser.add_argument("pod_command", nargs=argparse.REMAINDER, metavar="-- command", help="the command each pod runs")
    parser.set_defaults(
        command=manifest_command, render=lambda objects: (manifest_comments(objects) + to_yaml(objects)).rstrip("\n")
    )


def manifest_command(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The manifest's objects, every flag checked first (:class:`~autodist.jobs.kubernetes.ManifestSpec`)."""
    command = args.pod_command[1:] if args.pod_command[:1] == ["--"] else args.pod_command
    flags = {name: getattr(args, name) for name in _MANIFEST_FLAGS}
    return manifest_objects(ManifestSpec.checked(command=command, **flags))


#: The flags of ``manifest`` that :meth:`ManifestSpec.checked` takes as they are (the command aside).
_MANIFEST_FLAGS = tuple(
    "name workers ps image gpus cpu memory port namespace backup_claim timeout jobset user allow_root writable_root "
    "egress cpu_limit memory_limit".split()
)


# ----------------------------------------------------------------------------- main


def strategy_argument(raw: str) -> str:
    """An ``argparse`` type: a strategy name (any case), or the error with the nearest one.

    Example:
        >>> strategy_argument("Mirrored")
        'mirrored'
    """
    name = raw.strip().lower()
    if name not in STRATEGY_CHOICES:
        raise argparse.ArgumentTypeError(
            f"{raw!r} is not a strategy; expected one of {', '.join(STRATEGY_CHOICES)}.{nearest(raw, STRATEGY_CHOICES)}"
        )
    return name


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose refusals are one line, as autodist's own errors are: what was
    wrong, and where the options are (the usage block is ``--help``'s)."""

    def error(self, message: str) -> NoReturn:
        end = "" if message.endswith((".", "?")) else "."
        self.exit(2, f"{self.prog}: error: {message}{end} See `{self.prog} --help`.\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``autodist`` argument parser, with its five sub-commands."""
    parser = _Parser(prog="autodist", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="name", required=True, parser_class=_Parser)
    for add in (inspect_parser, plan_parser, demo_parser, launch_parser, manifest_parser):
        add(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command; returns the exit code (2 for an :class:`AutodistError`, the job's
    own code for ``launch``).

    Example:
        >>> main(["plan", "--num-params", "1000", "--batch-size", "64"])  # doctest: +SKIP
        0
    """
    for stream in (sys.stdout, sys.stderr):  # a path or host in bytes of no encoding prints escaped, not as a traceback
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    if args.name in ("inspect", "plan"):
        uninstall_activation()  # they report; this process trains nothing
    try:
        check_settings(os.environ)  # a typo in any AUTODIST_* setting is refused, whatever the command
        check_strategy_setting(os.environ)
        data = args.command(args)
    except AutodistError as err:
        print(f"autodist: error: {err}", file=sys.stderr)
        return 2
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2))
    else:
        print(args.render(data))
    return int(data.get("exit_code", 0)) if isinstance(data, dict) else 0
