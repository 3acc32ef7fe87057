"""The corpus's census: every program of each source, and where it stands (docs/corpus.md opens with it).

A source is a repository's folder at a fixed commit, and its programs are every file there of the
source's kind (``census.json``, written from a clone by ``record``). Each program is in the corpus
(``sources.json``, with the verdict the table of docs/corpus.md gives it), left out with a reason
(``left_out.json``), or not triaged yet. The table counts them per source:

    python -m tests.corpus.census record NAME CLONE COMMIT FOLDER SUFFIX [TEXT]  # list a source's programs
    python -m tests.corpus.census                                               # print the census table
    python -m tests.corpus.census --write docs/corpus.md                        # and put it into the page

``TEXT``, where given, keeps only the programs whose text holds it (the TensorFlow documents that
train a Keras model: ``.fit(``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.corpus.__main__ import WITHIN, table_rows

HERE = Path(__file__).resolve().parent
CENSUS = HERE / "census.json"
START, END = "<!-- corpus census: python -m tests.corpus.census --write docs/corpus.md -->", "<!-- end of corpus census -->"
LEFT_START, LEFT_END = "<!-- left out: python -m tests.corpus.census --write docs/corpus.md -->", "<!-- end of left out -->"
#: A left-out reason's kind (its check's, tests/corpus/left_out.py), as the census names it.
KINDS = {
    "fails": "fails on one device",
    "imports": "needs a package the tests lack",
    "downloads": "fetches data or a model no stand-in gives",
    "backend": "written for another backend",
    "trains": "trains nothing",
    "over_seconds": "runs over the runner's 600 s",
}


def record(name: str, clone: str, commit: str, folder: str, suffix: str, text: str | None = None) -> dict:
    """List a source's programs (every ``*SUFFIX`` under ``FOLDER`` at ``COMMIT``, holding ``TEXT``)."""
    full = subprocess.run(["git", "-C", clone, "rev-parse", commit], check=True, capture_output=True, text=True)
    commit = full.stdout.strip()
    listed = subprocess.run(
        ["git", "-C", clone, "ls-tree", "-r", "--name-only", commit, folder], check=True, capture_output=True, text=True
    ).stdout.split()
    paths = [path for path in listed if path.endswith(suffix)]
    if text is not None:
        shown = lambda path: subprocess.run(  # noqa: E731
            ["git", "-C", clone, "show", f"{commit}:{path}"], check=True, capture_output=True
        ).stdout
        paths = [path for path in paths if text.encode() in shown(path)]
    place = Path(clone).resolve()
    repository = (place.parent.name if place.name == "repo" else place.name).replace("+", "/")
    entry = {"repository": repository, "commit": commit, "folder": folder, "suffix": suffix, "text": text, "programs": sorted(paths)}
    census = json.loads(CENSUS.read_text()) if CENSUS.exists() else {}
    census[name] = entry
    CENSUS.write_text(json.dumps(census, indent=2) + "\n")
    return entry


def kind_of(entry: dict) -> str:
    (check,) = entry["check"]
    return KINDS[check]


def verdicts(doc: Path) -> dict[str, str]:
    """Each program's verdict in the corpus table of ``doc``, by name."""
    return table_rows(doc.read_text())


def rows(doc: Path) -> list[str]:
    """The census table's lines."""
    census = json.loads(CENSUS.read_text())
    sources = json.loads((HERE / "sources.json").read_text())
    left_out = json.loads((HERE / "left_out.json").read_text())
    said = verdicts(doc)
    lines = [
        "| source | programs | in the corpus | run and judged | within the contract | left out, by reason | not triaged |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, source in census.items():
        mine = lambda entries: {  # noqa: E731
            key: entry
            for key, entry in entries.items()
            if entry["repository"] == source["repository"]
            and entry["commit"] == source["commit"]
            and entry["path"] in source["programs"]
        }
        taken, left = mine(sources), mine(left_out)
        judged = [said[key] for key in taken if key in said]
        within = sum(verdict.startswith(WITHIN) for verdict in judged)
        reasons = Counter(kind_of(entry) for entry in left.values())
        untriaged = len(source["programs"]) - len(taken) - len(left)
        where = f"`{source['repository']}` `{source['folder']}` @ `{source['commit'][:8]}`"
        lines.append(
            f"| {name}: {where} | {len(source['programs'])} | {len(taken)} | {len(judged)} | {within} | "
            + ("; ".join(f"{kind}: {count}" for kind, count in sorted(reasons.items())) or "-")
            + f" | {untriaged} |"
        )
    return lines


def left_out_rows() -> list[str]:
    """The left-out programs' table: each with its source, its reason and what the runner checks."""
    left_out = json.loads((HERE / "left_out.json").read_text())
    lines = ["| name | program and source | why | checked |", "|---|---|---|---|"]
    for name, entry in sorted(left_out.items(), key=lambda item: (kind_of(item[1]), item[0])):
        (check, value), = entry["check"].items()
        where = f"`{entry['repository']}` `{entry['path']}` @ `{entry['commit'][:8]}`"
        lines.append(f"| `{name}` | {entry['title']}: {where} | {entry['why']} | {check}: `{value}` |")
    return lines


def _put(text: str, start: str, end: str, lines: list[str]) -> str:
    head, tail = text.split(start, 1)[0], text.split(end, 1)[1]
    return f"{head}{start}\n" + "\n".join(lines) + f"\n{end}{tail}"


def main(argv: list[str]) -> int:
    if argv[:1] == ["record"]:
        print(json.dumps(record(*argv[1:7]), indent=2)[:2000])
        return 0
    doc = Path(argv[1]) if argv[:1] == ["--write"] else HERE.parents[1] / "docs" / "corpus.md"
    table = "\n".join(rows(doc))
    print(table)
    if argv[:1] == ["--write"]:
        text = _put(doc.read_text(), START, END, rows(doc))
        doc.write_text(_put(text, LEFT_START, LEFT_END, left_out_rows()))
    return 0


def written(doc: Path, start: str = START, end: str = END) -> str:
    """The census table (or another of the page's written tables) as ``doc`` has it."""
    return re.sub(r"\s+$", "", doc.read_text().split(start, 1)[1].split(end, 1)[0].strip())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
