"""Copy a published program into the corpus, byte for byte, from a clone of its repository:
``python -m tests.corpus.take CLONE COMMIT PATH NAME "TITLE" LICENCE``.

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


def take(clone: str, commit: str, path: str, name: str, title: str, licence: str) -> dict:
    text = subprocess.run(["git", "-C", clone, "show", f"{commit}:{path}"], check=True, capture_output=True).stdout
    full = subprocess.run(
        ["git", "-C", clone, "rev-parse", commit], check=True, capture_output=True, text=True
    ).stdout.strip()
    folder = Path(clone).resolve()
    repository = (folder.parent.name if folder.name == "repo" else folder.name).replace("+", "/")
    (HERE / "programs" / f"{name}{Path(path).suffix}").write_bytes(text)
    entry = {
        "title": title,
        "repository": repository,
        "path": path,
        "commit": full,
        "licence": licence,
        "sha256": hashlib.sha256(text).hexdigest(),
    }
    sources = json.loads((HERE / "sources.json").read_text())
    sources[name] = {**sources.get(name, {}), **entry}
    (HERE / "sources.json").write_text(json.dumps(dict(sorted(sources.items())), indent=2) + "\n")
    return entry


if __name__ == "__main__":
    print(take(*sys.argv[1:7]))
