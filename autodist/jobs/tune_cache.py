"""The tune cache: each ``strategy="tune"`` decision, kept in the user's private folder
(``<temp>/autodist-<uid>/tune``, mode 700; files 600) under its key, read back only from a folder
private to this user. ``python -m autodist inspect`` lists them.

Example:
    >>> cache_path("0123abcd").endswith("tune/0123abcd.json")
    True
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any

from autodist.jobs.private import is_private_folder, private_folder, private_root, private_root_path, write_privately
from autodist.planning.tune_rules import Timing

__all__ = ["cache_path", "cached_decisions", "read_cache", "write_cache"]


def _cache_folder() -> str:
    """``<temp>/autodist-<uid>/tune``, not created here."""
    return os.path.join(private_root_path(), "tune")


def cache_path(digest: str) -> str:
    return os.path.join(_cache_folder(), f"{digest}.json")


def read_cache(digest: str) -> dict[str, Any] | None:
    """A cached decision, from a folder private to this user only; ``None`` for anything else
    (no file, another format)."""
    try:
        if not is_private_folder(os.lstat(private_root_path())):
            return None
        with open(cache_path(digest), encoding="utf-8") as handle:
            record = json.load(handle)
        for timing in record["timings"]:
            Timing(**timing)  # a record of another format raises here
        return record
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write_cache(key: dict[str, Any], choice: str, timings: list[Timing], seconds: float) -> None:
    private_root()  # created private, or refused
    path = cache_path(key["digest"])
    private_folder(os.path.dirname(path))
    record = {
        "key": key,
        "choice": choice,
        "timings": [dataclasses.asdict(t) for t in timings],
        "tuning_seconds": round(seconds, 2),
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    write_privately(path, lambda handle: handle.write(json.dumps(record).encode()))


def cached_decisions() -> list[dict[str, Any]]:
    """Every cached ``tune`` decision (for ``python -m autodist inspect``), newest first."""
    folder = _cache_folder()
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    found = [read_cache(name[: -len(".json")]) for name in names if name.endswith(".json")]
    return sorted((r for r in found if r is not None), key=lambda r: r.get("date", ""), reverse=True)
