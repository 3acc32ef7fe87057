"""The docs pages' tables, written from the registries: ``docs/upstream.md`` from the roles Keras's
private classes are found by (:func:`autodist.upstream.roles.table`) and the upstream surface's
touches (:func:`autodist.upstream.surface.table`), ``docs/keras-workarounds.md`` from the
workarounds (:func:`autodist.upstream.keras_workarounds.table`), with each in-step workaround's
measured cost from ``benchmarks/results-corpus.json`` (``python -m tests.corpus --speed
--workarounds --write docs/performance.md`` writes it). A page's prose is its own; only
each table, from its header row to the first line that is not a row, is written.

``python -m autodist.upstream.pages`` rewrites both tables (``--check``: exit 1, naming the page,
where a table differs from its registry; ``tests/test_upstream.py`` checks it).

Example:
    >>> replace_table(["intro", "", "| a |", "|---|", "| old |", "", "after"], ["| a |", "|---|", "| new |"])
    ['intro', '', '| a |', '|---|', '| new |', '', 'after']
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from autodist.errors import AutodistError
from autodist.upstream import keras_workarounds, roles, surface

__all__ = ["PAGES", "main", "replace_table", "stale"]

#: The corpus's speed figures, relative to the repository's root: the workarounds' step costs.
SPEED_RESULTS = "benchmarks/results-corpus.json"


def _workarounds_table(root: Path) -> list[str]:
    path = root / SPEED_RESULTS
    costs = json.loads(path.read_text(encoding="utf-8")).get("workaround costs") if path.exists() else None
    return keras_workarounds.table(costs)


#: Each page, relative to the repository's root, and what writes each of its tables (from the root).
PAGES: dict[str, tuple[Callable[[Path], list[str]], ...]] = {
    "docs/upstream.md": (lambda root: roles.table(), lambda root: surface.table()),
    "docs/keras-workarounds.md": (_workarounds_table,),
}


def replace_table(lines: Sequence[str], table: Sequence[str]) -> list[str]:
    """``lines`` with the table that starts at ``table``'s header row replaced by ``table``.

    Raises:
        AutodistError: no line of ``lines`` is the table's header row.
    """
    try:
        start = list(lines).index(table[0])
    except ValueError:
        raise AutodistError(
            f"the page has no table headed {table[0]!r}: put that header row where the table goes"
        ) from None
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return [*lines[:start], *table, *lines[end:]]


def stale(root: Path, write: bool = False) -> list[str]:
    """The pages under ``root`` whose table differs from its registry (each rewritten, with
    ``write``)."""
    found = []
    for page, tables in PAGES.items():
        path = root / page
        lines = path.read_text(encoding="utf-8").split("\n")
        new = lines
        for table in tables:
            new = replace_table(new, table(root))
        if new != lines:
            found.append(page)
            if write:
                path.write_text("\n".join(new), encoding="utf-8")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autodist.upstream.pages", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 where a table is stale")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository's root (default: here)")
    args = parser.parse_args(argv)
    found = stale(args.root, write=not args.check)
    for page in found:
        print(f"{page}: {'stale' if args.check else 'written'}")
    return 1 if found and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
