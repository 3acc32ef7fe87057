"""Copy a published program into the corpus, byte for byte, from a clone of its repository:
``python -m tests.corpus.take CLONE COMMIT PATH NAME "TITLE" LICENCE``, or leave it out with its
reason and that reason's check (tests/corpus/left_out.py):
``python -m tests.corpus.take --left-out CLONE COMMIT PATH NAME "TITLE" LICENCE "WHY" 'CHECK'``.

The text is read with ``git show COMMIT:PATH`` (never retyped), written to ``programs/NAME`` with
the source's extension, and recorded in ``sources.json`` with its repository (the clone's
``origin``, or the clone's folder name as ``owner+name``), path, commit, licence and SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _copy(clone: str, commit: str, path: str, folder: Path, name: str, title: str, licence: str) -> dict:
    """The program's text written to ``folder``, and its entry (repository, path, commit, SHA-256)."""
    text = subprocess.run(["git", "-C", clone, "show", f"{commit}:{path}"], check=True, capture_output=True).stdout
    full = subprocess.run(
        ["git", "-C", clone, "rev-parse", commit], check=True, capture_output=True, text=True
    ).stdout.strip()
    place = Path(clone).resolve()
    repository = (place.parent.name if place.name == "repo" else place.name).replace("+", "/")
    folder.mkdir(exist_ok=True)
    (folder / f"{name}{Path(path).suffix}").write_bytes(text)
    return {
        "title": title,
        "repository": repository,
        "path": path,
        "commit": full,
        "licence": licence,
        "sha256": hashlib.sha256(text).hexdigest(),
    }


def _record(file: str, name: str, entry: dict) -> None:
    entries = json.loads((HERE / file).read_text())
    entries[name] = {**entries.get(name, {}), **entry}
    (HERE / file).write_text(json.dumps(dict(sorted(entries.items())), indent=2) + "\n")


def take(clone: str, commit: str, path: str, name: str, title: str, licence: str) -> dict:
    entry = _copy(clone, commit, path, HERE / "programs", name, title, licence)
    _record("sources.json", name, entry)
    return entry


def leave_out(clone: str, commit: str, path: str, name: str, title: str, licence: str, why: str, check: str) -> dict:
    entry = _copy(clone, commit, path, HERE / "programs" / "left_out", name, title, licence)
    entry.update(why=why, check=json.loads(check))
    _record("left_out.json", name, entry)
    return entry


if __name__ == "__main__":
    if sys.argv[1:2] == ["--left-out"]:
        print(leave_out(*sys.argv[2:10]))
    else:
        print(take(*sys.argv[1:7]))
