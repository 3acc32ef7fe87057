"""Shared pieces: the machine record, figures, and bounded subprocess runs.

Absolute times on a shared 2-core machine are noise; every figure is a ratio of things measured
alternately in the same run (A B A B ..., or with more arms an order that rotates every round),
after a warm-up.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Figure:
    """One row of the results table."""

    name: str
    goal: str
    ratios: list[float]
    passed: bool
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def result(self) -> str:
        """``pass`` or ``short`` against the goal; ``report`` for a figure that has none."""
        if self.goal == "report":
            return "report"
        return "pass" if self.passed else "short"

    @property
    def median(self) -> float:
        return statistics.median(self.ratios) if self.ratios else float("nan")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(median=self.median, min=min(self.ratios, default=None), max=max(self.ratios, default=None), result=self.result)
        return data


def machine() -> dict[str, Any]:
    from autodist.detection.hardware import detect

    snap = detect(fast=True)
    return {
        "date": time.strftime("%Y-%m-%d"),
        "cpus": snap.num_cpus,
        "memory_gib": round((snap.host_memory_bytes or 0) / 2**30, 1),
        "python": platform.python_version(),
        "tensorflow": snap.tensorflow_version,
        "keras": snap.keras_version,
        "gpus": [g.name for g in snap.gpus] or None,
        "platform": platform.platform(),
    }


def env(**overrides: str | None) -> dict[str, str]:
    """A benchmark process's environment: no autodist settings or cluster, and Python's bytecode
    cache on, as for an installed package (``PYTHONDONTWRITEBYTECODE`` would compile autodist's
    source at every start, and count that as autodist's start-up)."""
    result = {k: v for k, v in os.environ.items() if not k.startswith(("AUTODIST_", "TF_CONFIG", "PYTHONDONTWRITEBYTECODE"))}
    result.update(TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT) + os.pathsep + result.get("PYTHONPATH", ""))
    for key, value in overrides.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def run_json(args: list[str], *, timeout: float, **overrides: str | None) -> dict[str, Any]:
    """Run ``python ARGS`` (bounded) and return the JSON of its last ``RESULT`` line."""
    proc = subprocess.run(
        [sys.executable, *args], env=env(**overrides), capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    # "RESULT {...}", or "[worker 0] RESULT {...}" when the launcher prefixes it
    lines = [line.split("RESULT ", 1)[1] for line in proc.stdout.splitlines() if "RESULT " in line]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{args} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1])


def wall(args: list[str], *, timeout: float = 120, **overrides: str | None) -> float:
    """Wall-clock seconds of ``python ARGS`` in a new process."""
    return timed(args, timeout=timeout, **overrides)[0]


def timed(args: list[str], *, timeout: float = 120, **overrides: str | None) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user and system, all its threads) of ``python ARGS`` in a new
    process. CPU seconds count what the process itself did: another process on the shared cores
    delays it (wall) but adds no CPU time to it."""
    start = time.perf_counter()
    stderr = tempfile.TemporaryFile()  # a file, not a pipe: the child never waits on a full pipe
    proc = subprocess.Popen([sys.executable, *args], env=env(**overrides), stdout=subprocess.DEVNULL, stderr=stderr, cwd=ROOT)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - start > timeout:
            proc.kill()
            proc.wait()
            raise subprocess.TimeoutExpired(args, timeout)
        time.sleep(0.005)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    with stderr:
        stderr.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{args} failed ({proc.returncode}):\n{stderr.read().decode(errors='replace')[-3000:]}")
    return seconds, usage.ru_utime + usage.ru_stime
