"""Every ``AUTODIST_*`` setting: its name, what it does (:data:`SETTINGS`), and its parser.

Each parser reads an explicit ``environ`` mapping (no implicit ``os.environ``, no cache), so the
import-time activation, ``fit``, ``init``, ``@distributed``, the launcher and the tests all read
the same values the same way. docs/settings.md lists the same names (a test checks).

Example:
    >>> strategy_setting({"AUTODIST_STRATEGY": "mirrored"}), strategy_setting({})
    ('mirrored', 'auto')
    >>> peer_timeout_setting({"AUTODIST_PEER_TIMEOUT": "5"})
    5.0
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from autodist.errors import AutodistError, ClusterConfigError
from autodist.fields import MAX_WAIT_SECONDS, shown
from autodist.files import folder_problem

__all__ = [
    "ACTIVATE_ENV",
    "VERBOSE_ENV",
    "BACKUP_DIR_ENV",
    "CPU_DEVICES_ENV",
    "GRACE_ENV",
    "HEARTBEAT_FILE_ENV",
    "KERAS_COMPAT_ENV",
    "LAUNCH_ATTEMPT_ENV",
    "PEER_TIMEOUT_ENV",
    "PORT_ENV",
    "SETTINGS",
    "SLURM_PORT_BASE_ENV",
    "STEPS_PER_EXECUTION_ENV",
    "STRATEGY_ENV",
    "TUNE_BUDGET_ENV",
    "K8S_NAME_ENV",
    "K8S_PS_ENV",
    "K8S_ROLE_ENV",
    "K8S_SERVICE_ENV",
    "K8S_WORKERS_ENV",
    "activation_enabled",
    "backup_dir_setting",
    "check_settings",
    "cpu_devices_setting",
    "grace_setting",
    "keras_compat_mode",
    "keras_compat_setting",
    "port_setting",
    "positive_int_setting",
    "steps_per_execution_setting",
    "peer_timeout_setting",
    "strategy_setting",
    "tune_budget_setting",
]

ACTIVATE_ENV = "AUTODIST_ACTIVATE"
VERBOSE_ENV = "AUTODIST_VERBOSE"
STRATEGY_ENV = "AUTODIST_STRATEGY"
PEER_TIMEOUT_ENV = "AUTODIST_PEER_TIMEOUT"
CPU_DEVICES_ENV = "AUTODIST_CPU_DEVICES"
STEPS_PER_EXECUTION_ENV = "AUTODIST_STEPS_PER_EXECUTION"
KERAS_COMPAT_ENV = "AUTODIST_KERAS_COMPAT"
BACKUP_DIR_ENV = "AUTODIST_BACKUP_DIR"
PORT_ENV = "AUTODIST_PORT"
SLURM_PORT_BASE_ENV = "AUTODIST_SLURM_PORT_BASE"
LAUNCH_ATTEMPT_ENV = "AUTODIST_LAUNCH_ATTEMPT"
HEARTBEAT_FILE_ENV = "AUTODIST_HEARTBEAT_FILE"
GRACE_ENV = "AUTODIST_GRACE"
TUNE_BUDGET_ENV = "AUTODIST_TUNE_BUDGET"
K8S_WORKERS_ENV = "AUTODIST_K8S_WORKERS"
K8S_PS_ENV = "AUTODIST_K8S_PS"
K8S_SERVICE_ENV = "AUTODIST_K8S_SERVICE"
K8S_NAME_ENV = "AUTODIST_K8S_NAME"
K8S_ROLE_ENV = "AUTODIST_K8S_ROLE"
_OFF = ("0", "off", "false", "no")

#: Every setting and what it does; docs/settings.md lists the same names.
SETTINGS: dict[str, str] = {
    ACTIVATE_ENV: "0 (or off, false, no) turns off making the strategy current when TensorFlow is imported",
    VERBOSE_ENV: "1 (or on, true, yes) logs the whole plan, its reasons included, at every fit; by default a fit "
    "logs it in one line, once per process for the same plan (history.plan and python -m autodist inspect have it "
    "whole)",
    STRATEGY_ENV: 'what strategy="auto" means (a strategy name)',
    PEER_TIMEOUT_ENV: "seconds a worker waits for its peers (default 300)",
    CPU_DEVICES_ENV: "split the CPU into N logical devices (mirrored over them)",
    STEPS_PER_EXECUTION_ENV: "steps per compiled call on default/one_device (1 turns it off)",
    KERAS_COMPAT_ENV: (
        "auto (the default): the workarounds the installed Keras needs; off: none; force: all of them, "
        "whatever the version; auto,-name (or force,-name): all those but the named ones"
    ),
    BACKUP_DIR_ENV: "folder of the epoch-end and preemption saves (the launcher sets it; turns them on for "
    "single-host runs)",
    PORT_ENV: "the port of every host of a host-list cluster (default 2222); on Kubernetes, the first task's (each "
    "task adds its place)",
    SLURM_PORT_BASE_ENV: "the first port of a SLURM job's tasks (default 8888)",
    LAUNCH_ATTEMPT_ENV: "set by the launcher for its tasks: the attempt number, from 0",
    HEARTBEAT_FILE_ENV: "set by the launcher for its tasks: the file a task touches as it trains",
    GRACE_ENV: "set by the launcher for its tasks: its --grace, the seconds between SIGTERM and SIGKILL (bounds the "
    "preemption agreement, and how long a process waits for another holder of its backup folder: 30 s when "
    "unset)",
    TUNE_BUDGET_ENV: 'the most seconds strategy="tune" spends timing candidates (default 60; never over 10% of the '
    "planned training)",
    K8S_WORKERS_ENV: "set by the Kubernetes manifest (python -m autodist manifest): the worker count; marks a pod of "
    "a training job",
    K8S_PS_ENV: "set by the Kubernetes manifest: the parameter-server count (default 0)",
    K8S_SERVICE_ENV: "set by the Kubernetes manifest: the headless Service, the pods' subdomain",
    K8S_NAME_ENV: "set by the Kubernetes manifest: the workers' indexed Job's name",
    K8S_ROLE_ENV: "set by the Kubernetes manifest: this pod's role, chief, worker or ps (default worker)",
}


#: The most any count setting may be (``AUTODIST_STEPS_PER_EXECUTION``, ...): a larger one is a typo.
MAX_COUNT_SETTING = 1 << 20


def positive_int_setting(environ: Mapping[str, str], name: str, default: int, meaning: str) -> int:
    """The integer in ``environ[name]``, from 1 to :data:`MAX_COUNT_SETTING`, or ``default`` when unset or empty.

    Raises:
        AutodistError: naming the variable, the value, and ``meaning`` (what it sets and how).

    Example:
        >>> positive_int_setting({"N": "4"}, "N", 1, "")
        4
    """
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:  # not a whole number, or one of more than 4300 digits
        value = 0
    if not 1 <= value <= MAX_COUNT_SETTING:
        raise AutodistError(
            f"{name} must be an integer from 1 to {MAX_COUNT_SETTING} (Received: {name}={shown(raw)}). {meaning}"
        )
    return value


#: Logical CPU devices per core ``AUTODIST_CPU_DEVICES`` may ask for (and never fewer than
#: :data:`MIN_CPU_DEVICES_BOUND`): each device runs a replica of every step, so past a few per core
#: the steps only queue (9999 devices kept a 32-sample fit running for minutes).
CPU_DEVICES_PER_CORE = 4
MIN_CPU_DEVICES_BOUND = 8


def cpu_devices_setting(environ: Mapping[str, str], num_cpus: int) -> int:
    """``AUTODIST_CPU_DEVICES`` (1 when unset), at most :data:`CPU_DEVICES_PER_CORE` per core of
    the ``num_cpus`` this process runs on (and at least :data:`MIN_CPU_DEVICES_BOUND` allowed).

    Raises:
        AutodistError: naming the value and the bound.

    Example:
        >>> cpu_devices_setting({"AUTODIST_CPU_DEVICES": "4"}, num_cpus=2), cpu_devices_setting({}, num_cpus=2)
        (4, 1)
    """
    meaning = (
        f"It splits the host CPU into that many logical devices, for example {CPU_DEVICES_ENV}=2; unset it to use one "
        "CPU device."
    )
    value = positive_int_setting(environ, CPU_DEVICES_ENV, 1, meaning)
    bound = max(MIN_CPU_DEVICES_BOUND, CPU_DEVICES_PER_CORE * num_cpus)
    if value > bound:
        raise AutodistError(
            f"{CPU_DEVICES_ENV} asks for more logical CPU devices than this machine runs (Received: "
            f"{CPU_DEVICES_ENV}={shown(environ.get(CPU_DEVICES_ENV))}). Expected at most {bound}: "
            f"{CPU_DEVICES_PER_CORE} per core "
            f"on its {num_cpus} core(s), and never fewer than {MIN_CPU_DEVICES_BOUND}; each device runs a replica of "
            "every "
            f"step, so more only queue. {meaning}"
        )
    return value


def port_setting(environ: Mapping[str, str], name: str, default: int) -> int:
    """The port number in ``environ[name]`` (``AUTODIST_PORT``, ``AUTODIST_SLURM_PORT_BASE``), or
    ``default`` when unset.

    Raises:
        ClusterConfigError: naming the variable and the value, when it is not a port number.

    Example:
        >>> port_setting({}, PORT_ENV, 2222), port_setting({PORT_ENV: "3000"}, PORT_ENV, 2222)
        (2222, 3000)
    """
    raw = environ.get(name, "").strip() or str(default)  # empty is unset, as for every setting
    if not re.fullmatch(r"[0-9]{1,5}", raw) or not 0 < int(raw) < 65536:
        raise ClusterConfigError(
            f"{name} must be a port number (Received: {name}={raw!r}). Expected an integer from 1 "
            f"to 65535. Set it to a free port, or unset it for the default {default}."
        )
    return int(raw)


def steps_per_execution_setting(environ: Mapping[str, str], default: int) -> int:
    """``AUTODIST_STEPS_PER_EXECUTION``, or ``default`` when unset.

    Raises:
        AutodistError: when it is not a positive integer.
    """
    return positive_int_setting(
        environ,
        STEPS_PER_EXECUTION_ENV,
        default,
        "It sets how many training steps each compiled call runs; 1 turns autodist's default off.",
    )


#: ``AUTODIST_KERAS_COMPAT``'s values: unset or ``auto`` (gated by version), ``off``, ``force``.
KERAS_COMPAT_MODES = ("auto", "off", "force")
_WORKAROUND_NAME = re.compile(r"[a-z][a-z0-9_]*")


def keras_compat_setting(environ: Mapping[str, str]) -> tuple[str, frozenset[str]]:
    """``AUTODIST_KERAS_COMPAT``, read once: its mode (``"off"``, ``"force"``, or ``""``: unset or
    ``auto``, gated by version) and the workarounds it leaves out (``auto,-name,...`` or
    ``-name,...``: each ``-name`` one workaround not applied, to see what it changes; the names are
    checked against the workarounds where they are known, by the planner).

    Raises:
        AutodistError: for any other value (a typo must not silently mean "gated by version").

    Example:
        >>> keras_compat_setting({"AUTODIST_KERAS_COMPAT": "auto, -batches_copied"})
        ('', frozenset({'batches_copied'}))
    """
    raw = environ.get(KERAS_COMPAT_ENV, "")
    words = [word.strip() for word in raw.strip().lower().split(",")]
    mode = "" if words[0].startswith("-") else words.pop(0)
    left_out = [word[1:].strip() for word in words]
    well_formed = all(word.startswith("-") and _WORKAROUND_NAME.fullmatch(name) for word, name in zip(words, left_out))
    if mode not in ("", *KERAS_COMPAT_MODES) or not well_formed or (left_out and mode == "off"):
        raise AutodistError(
            f"{KERAS_COMPAT_ENV} must be one of {', '.join(KERAS_COMPAT_MODES)}, optionally followed by workarounds "
            f"to leave out (auto,-name,...) (Received: {KERAS_COMPAT_ENV}={raw!r}). off turns every Keras "
            "workaround off, force applies them all, auto (or unset) applies those the installed Keras "
            "needs, and each -name leaves that one out (docs/keras-workarounds.md names them). Set one of "
            "these, or unset it."
        )
    return ("" if mode == "auto" else mode), frozenset(left_out)


def keras_compat_mode(environ: Mapping[str, str]) -> str:
    """``AUTODIST_KERAS_COMPAT``'s mode (:func:`keras_compat_setting`).

    Example:
        >>> keras_compat_mode({"AUTODIST_KERAS_COMPAT": "Off"}), keras_compat_mode({})
        ('off', '')
    """
    return keras_compat_setting(environ)[0]


def grace_setting(environ: Mapping[str, str]) -> float | None:
    """``AUTODIST_GRACE`` in seconds, or ``None`` when unset or empty.

    Raises:
        AutodistError: when it is not a finite positive number.

    Example:
        >>> grace_setting({"AUTODIST_GRACE": "6"}), grace_setting({})
        (6.0, None)
    """
    raw = environ.get(GRACE_ENV, "").strip()
    meaning = "It is the launcher's --grace: the seconds between SIGTERM and SIGKILL; for example 30."
    return _seconds(raw, GRACE_ENV, meaning) if raw else None


def check_settings(environ: Mapping[str, str]) -> None:
    """Parse every setting ``environ`` holds, once, where the plan is made: a typo is refused
    there, whether or not this plan reads that setting.

    Raises:
        AutodistError: (or ``ClusterConfigError`` for a port) naming the first bad setting.

    Example:
        >>> check_settings({"AUTODIST_KERAS_COMPAT": "off", "AUTODIST_PEER_TIMEOUT": "60"})
    """
    activation_enabled(environ)
    keras_compat_mode(environ)
    peer_timeout_setting(environ)
    grace_setting(environ)
    tune_budget_setting(environ, 60.0)
    steps_per_execution_setting(environ, 1)
    positive_int_setting(
        environ, CPU_DEVICES_ENV, 1, "It splits the CPU into that many logical devices; for example 2."
    )
    for name, default in ((PORT_ENV, 2222), (SLURM_PORT_BASE_ENV, 8888)):
        port_setting(environ, name, default)


def backup_dir_setting(environ: Mapping[str, str]) -> str | None:
    """``AUTODIST_BACKUP_DIR``, or ``None`` when unset or empty.

    Raises:
        AutodistError: when it is not, and cannot become, a folder this user writes in (a file,
            a path under a file, a folder of another user's).
    """
    raw = environ.get(BACKUP_DIR_ENV) or None
    problem = folder_problem(raw) if raw else None
    if problem:
        raise AutodistError(
            f"{BACKUP_DIR_ENV} must be a folder, or a path a folder can be created at (Received: "
            f"{BACKUP_DIR_ENV}={shown(raw)}, "
            f"{problem}). It is where the epoch-end and preemption saves go. Set it to a folder you can write in, or "
            "unset it."
        )
    return raw


def activation_enabled(environ: Mapping[str, str]) -> bool:
    """Whether ``AUTODIST_ACTIVATE`` leaves the activation at TensorFlow import on (the default)."""
    return _switch(
        environ, ACTIVATE_ENV, True, " (the default: the strategy made current when TensorFlow is imported)", ""
    )


def verbose_setting(environ: Mapping[str, str]) -> bool:
    """Whether ``AUTODIST_VERBOSE`` asks for the whole plan at every fit (off by default)."""
    return _switch(environ, VERBOSE_ENV, False, " (the whole plan at every fit)", " (the default: one line)")


def _switch(environ: Mapping[str, str], name: str, default: bool, on: str, off: str) -> bool:
    """An on/off setting: ``default`` unset; ``on`` and ``off`` say what each means in its error."""
    raw = environ.get(name, "")
    value = raw.strip().lower()
    if value == "":
        return default
    if value in _OFF:
        return False
    if value in ("1", "on", "true", "yes"):
        return True
    raise AutodistError(
        f"{name} must be on or off (Received: {name}={raw!r}). Expected 1, on, true or yes{on}, or 0, off, false "
        f"or no{off}. Set one of these, or unset it."
    )


def strategy_setting(environ: Mapping[str, str], requested: str | object = "auto") -> str | object:
    """What ``strategy="auto"`` means: ``AUTODIST_STRATEGY`` when set, else ``"auto"``. A
    strategy the caller names explicitly wins."""
    if requested != "auto" and requested is not None:
        return requested
    return environ.get(STRATEGY_ENV, "").strip() or "auto"


def strategy_source(environ: Mapping[str, str], requested: str | object = "auto") -> str:
    """Where a forced strategy came from, as a plan's reason names it: the caller's argument, or
    ``AUTODIST_STRATEGY`` (which only an argument left at ``"auto"`` reads).

    Example:
        >>> strategy_source({"AUTODIST_STRATEGY": "one_device"}), strategy_source({}, "mirrored")
        ("AUTODIST_STRATEGY='one_device'", "the caller's argument (strategy='mirrored')")
    """
    if requested != "auto" and requested is not None:
        return f"the caller's argument (strategy={getattr(requested, 'value', requested)!r})"
    raw = environ.get(STRATEGY_ENV, "").strip()
    return f"{STRATEGY_ENV}={raw!r}" if raw else "the caller"


def tune_budget_setting(environ: Mapping[str, str], default: float) -> float:
    """``AUTODIST_TUNE_BUDGET`` in seconds, or ``default`` when unset.

    Raises:
        AutodistError: when the value is not a number of seconds above 0 and at most a week.

    Example:
        >>> tune_budget_setting({"AUTODIST_TUNE_BUDGET": "30"}, 60.0), tune_budget_setting({}, 60.0)
        (30.0, 60.0)
    """
    raw = environ.get(TUNE_BUDGET_ENV, "").strip()
    meaning = 'It bounds how long strategy="tune" times candidates; for example 60.'
    return _seconds(raw, TUNE_BUDGET_ENV, meaning) if raw else default


def peer_timeout_setting(environ: Mapping[str, str], given: float | None = None) -> float | None:
    """``peer_timeout_seconds`` as given, else ``AUTODIST_PEER_TIMEOUT``, else ``None`` (the
    planner's default).

    Raises:
        AutodistError: when the value is not a number.
    """
    raw = given if given is not None else environ.get(PEER_TIMEOUT_ENV)
    if raw is None or raw == "":
        return None
    source = "peer_timeout_seconds" if given is not None else PEER_TIMEOUT_ENV
    return _seconds(raw, source, "It bounds how long a worker waits for its peers; pass a number such as 300.")


def _seconds(raw: Any, name: str, meaning: str) -> float:
    """``raw`` as a finite positive number of seconds.

    Raises:
        AutodistError: naming ``name``, what it got, and ``meaning``.
    """
    try:
        value = float(raw)
    except (TypeError, ValueError, OverflowError):
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_WAIT_SECONDS):
        raise AutodistError(
            f"{name} must be a number of seconds above 0 and at most {MAX_WAIT_SECONDS:g} (a week) (Received: "
            f"{name}={raw!r}). {meaning}"
        )
    return value
