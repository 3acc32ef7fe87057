"""Files, folders and JSON text that come from outside: read and checked without blocking or
unbounded sizes. A ``--snapshot`` file, ``TF_CONFIG``, ``CLUSTER_SPEC`` and ``SM_HOSTS`` go through
:func:`parse_json`; a file the command line reads through :func:`read_regular_file` (a FIFO or a
device is refused before it is read); a folder autodist will write in through
:func:`folder_problem`, which only looks.

Each raises ``ValueError`` (or returns a clause) in words the caller puts into its own
``AutodistError``, which names the variable, flag or argument.

Example:
    >>> parse_json('{"a": 1}'.encode("utf-16"))  # as a Windows shell's `>` writes it
    {'a': 1}
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

__all__ = ["MAX_JSON_BYTES", "folder_problem", "parse_json", "read_regular_file"]

#: The most bytes of JSON autodist reads from a file or a variable: a snapshot is about 2 KB, a
#: TF_CONFIG of a thousand workers about 30 KB.
MAX_JSON_BYTES = 1 << 20


def parse_json(raw: str | bytes, limit: int = MAX_JSON_BYTES) -> Any:
    """The JSON value of ``raw`` (bytes in UTF-8, or UTF-16/32 with a byte-order mark, as
    :func:`json.loads` reads them).

    Raises:
        ValueError: what the text is instead, as words that follow "is" (``not JSON (...)``),
            for text over ``limit`` bytes, bytes in no such encoding, text that is not JSON, JSON
            nested too deeply, or a number of more digits than Python reads.

    Example:
        >>> parse_json('{"a": [1, 2]}')
        {'a': [1, 2]}
        >>> parse_json("[" * 100_000)
        Traceback (most recent call last):
        ...
        ValueError: JSON nested too deeply to read
    """
    if len(raw) > limit:
        raise ValueError(f"larger than {limit} bytes, the most autodist reads")
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise ValueError("not text in UTF-8, UTF-16 or UTF-32 (binary data?)") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None
    except ValueError:  # an integer of more than 4300 digits
        raise ValueError("JSON with a number of more digits than Python reads") from None


def read_regular_file(path: str, limit: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them. It never blocks: a
    FIFO, a terminal or a device is refused before it is read.

    Raises:
        ValueError: what the path is instead, as words that follow "is": a folder, a missing or
            unreadable file, not a regular file, or over ``limit`` bytes.
    """
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise ValueError("a folder") from None
    except (OSError, ValueError) as err:  # missing, unreadable, a NUL byte in the name
        raise ValueError(f"a file that could not be read ({getattr(err, 'strerror', None) or err})") from None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise ValueError(
                "a folder"
                if stat.S_ISDIR(os.fstat(handle).st_mode)
                else "not a regular file (a pipe, a terminal or a device)"
            )
        with os.fdopen(handle, "rb", closefd=False) as stream:
            data = stream.read(limit + 1)
    except OSError as err:
        raise ValueError(f"a file that could not be read ({err.strerror or type(err).__name__})") from None
    finally:
        os.close(handle)
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes, the most autodist reads")
    return data


def folder_problem(path: str) -> str | None:
    """Why ``path`` cannot be a folder autodist writes in, as a clause (``"which is a file, not a
    folder"``), or ``None`` when it is a folder this user can write in, or a path whose nearest
    existing parent is one (autodist creates the rest). It only looks: nothing is created.

    Example:
        >>> folder_problem("/dev/null/backups")
        'which is under /dev/null, not a folder'
    """
    full = probe = os.path.abspath(path)
    while True:
        try:
            mode = os.stat(probe).st_mode
            break
        except (FileNotFoundError, NotADirectoryError):
            if os.path.islink(probe):
                return f"where {probe} is a broken link"
            parent = os.path.dirname(probe)
            if parent == probe:
                return "which has no existing parent folder"
            probe = parent
        except (OSError, ValueError) as err:  # not searchable, a loop of links, a name too long, a NUL byte
            return f"which cannot be read: {getattr(err, 'strerror', None) or err}"
    if not stat.S_ISDIR(mode):
        return "which is a file, not a folder" if probe == full else f"which is under {probe}, not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return (
            "a folder this user cannot write in"
            if probe == full
            else f"to be created in {probe}, a folder this user cannot write in"
        )
    return None
