"""The user's own folders for what autodist writes: backups, other workers' files, the
launcher's state, the tune cache. Private to the user (mode 0700, never a link), with a stable
fallback when the usual one is blocked; and the short digests that name a job's folders.

Example:
    >>> from autodist.jobs.private import backup_folder
    >>> backup_folder("/tmp/job", "worker", 1)
    '/tmp/job/worker-1'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Mapping
from typing import Any

from autodist.detection.cluster import ClusterInfo
from autodist.log import get_logger
from autodist.settings import BACKUP_DIR_ENV, backup_dir_setting
from autodist.process import STATE

__all__ = [
    "backup_folder",
    "command_line",
    "default_backup_root",
    "digest",
    "is_private_folder",
    "private_root",
    "private_folder",
    "private_root_path",
    "release_private_root",
    "write_privately",
]


def backup_folder(root: str, task_type: str, task_index: int) -> str:
    """This worker's own backup folder under ``root``."""
    return os.path.join(root, f"{task_type}-{task_index}")


def private_root_path() -> str:
    """:func:`private_root`'s path, not created (nor chosen) here: ``<temp>/autodist-<uid>``, or
    the fallback once this process's :func:`private_root` found that path blocked. A reader
    (the tune cache) checks the folder is private before trusting it."""
    return STATE.private_root or os.path.join(tempfile.gettempdir(), f"autodist-{os.getuid()}")


def is_private_folder(info: os.stat_result) -> bool:
    """Whether ``os.lstat`` found a folder this user owns and nobody else may read."""
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def private_root() -> str:
    """This user's own folder for what autodist writes (backups, other workers' files, launcher
    state): ``<temp>/autodist-<uid>``, created with mode 0700. When that path exists and is not
    a folder private to this user (another user made it first, or a link), autodist uses
    ``$XDG_RUNTIME_DIR/autodist`` or ``~/.cache/autodist`` (private to the user, stable across
    restarts) or, failing both, a fresh temporary folder, and says so once. It never fails."""
    if STATE.private_root is not None:  # the folder used when <temp>/autodist-<uid> is not ours
        return _usable(STATE.private_root) or _fresh_fallback()
    root = os.path.join(tempfile.gettempdir(), f"autodist-{os.getuid()}")
    found = _usable(root)
    if found:
        return found
    info = os.lstat(root)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    fallbacks = [os.path.join(folder, "autodist") for folder in (os.environ.get("XDG_RUNTIME_DIR"), cache) if folder]
    STATE.private_root = next(filter(_usable, fallbacks), None) or _fresh_fallback()
    get_logger().warning(
        f"autodist: {root} is not a folder private to you (owner uid {info.st_uid}, mode "
        f"{stat.S_IMODE(info.st_mode):o}); autodist keeps its files in {STATE.private_root} instead. "
        "Remove that path, or point TMPDIR elsewhere, to use the usual folder."
    )
    return STATE.private_root


def _usable(path: str) -> str | None:
    """``path`` as a folder private to this user (created, mode 0700, if missing), or ``None``."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path if is_private_folder(os.lstat(path)) else None
    except OSError:
        return None


def _fresh_fallback() -> str:
    STATE.private_root = tempfile.mkdtemp(prefix=f"autodist-{os.getuid()}-")  # mode 0700
    return STATE.private_root


def release_private_root() -> None:
    """Remove :func:`private_root` when nothing is left in it (autodist leaves no empty folder)."""
    with contextlib.suppress(OSError):  # in use by another job or run, or already gone
        os.rmdir(private_root_path())


def default_backup_root(cluster: ClusterInfo, environ: Mapping[str, str]) -> str:
    """``AUTODIST_BACKUP_DIR`` (the launcher sets it), else a folder named after the cluster,
    inside :func:`private_root`."""
    if backup_dir_setting(environ):
        return environ[BACKUP_DIR_ENV]
    # The cluster and the command line: another script, or the same one with other arguments,
    # on the same hosts and ports must not resume this run's backup.
    return os.path.join(private_root(), f"backup-{digest({'cluster': cluster.cluster_spec, 'argv': command_line()})}")


def command_line() -> list[str]:
    """This process's command line, its script as an absolute path (what names its backups)."""
    return [os.path.abspath(sys.argv[0]), *sys.argv[1:]]


def digest(value: Any) -> str:
    """A short, stable name for a JSON-able value (a folder name for a job's backups).

    Example:
        >>> digest({"b": 1, "a": [2]}) == digest({"a": [2], "b": 1})
        True
    """
    return hashlib.sha1(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def write_privately(path: str, write: Any) -> None:
    """Write ``path`` (mode 0600) through a partial file and an atomic rename. A write that fails
    (a full disk, a quota, a folder gone read-only) removes its partial file and raises: ``path``
    is as it was."""
    partial = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.partial")
    try:
        with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())  # a host that crashes next leaves the old save, not half a new one
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(partial)
        raise


def private_folder(folder: str) -> None:
    """Create ``folder`` and any missing parent with mode 0700 (``os.makedirs`` gives the parents
    the default mode)."""
    missing = []
    while folder and not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another worker made it meanwhile
            os.mkdir(path, 0o700)
