"""The tables the docs show of what a test measures, read back so the test can check them: each
row's cells by its first, and the verdict category a cell states."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def table(page: str, heading: str) -> dict[str, list[str]]:
    """The first table under ``## heading`` of ``docs/<page>``: ``{first cell: [other cells]}``."""
    section = (ROOT / "docs" / page).read_text(encoding="utf-8").split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split(" | ") for line in section.splitlines() if line.startswith("| ") and not line.startswith("|---")]
    return {row[0].strip(): [cell.strip() for cell in row[1:]] for row in rows[1:]}  # rows[0]: the header


def category(cell: str, before: str | None = None) -> str:
    """What a cell says, in one word: ``equal``, ``hand-built`` (= the hand-built arm, warned),
    ``warned``, ``fails``, ``differs`` or an error's class name; ``the same`` is the cell before's."""
    text = cell.split(" [", 1)[0].strip()
    if text.startswith("the same"):
        assert before is not None, cell
        return before
    if text.startswith("= hand-built"):
        return "hand-built"
    if text.startswith("equal"):
        return "equal"
    if text.startswith(("warned", "warning")):
        return "warned"
    word = text.split()[0].rstrip(":,")
    return word if word.endswith("Error") else "differs"


def bracket(cell: str, before: frozenset[str] | None = None) -> frozenset[str]:
    """What a cell's ``[...]`` says of the hand-built arm: the outcomes it allows, of ``equal``,
    ``fails`` and ``differs``. One, as a rule; an arm whose outcome varies by machine and run
    (plain Keras on a replica's empty share crashes or trains to NaN) reads ``[hand-built varies
    ...: fails ... or differs ...]`` and allows each outcome it names."""
    inside = cell.split(" [", 1)[1].rstrip("]") if " [" in cell else ""
    if inside.startswith("the same"):
        assert before is not None, cell
        return before
    if inside.startswith("hand-built varies"):
        named = frozenset(word for word in ("equal", "fails", "differs") if re.search(rf"\b{word}\b", inside))
        assert len(named) >= 2, f"a varying outcome names two or more of equal, fails, differs: {cell}"
        return named
    if inside.startswith(("equal", "hand-built: equal")):
        return frozenset({"equal"})
    if "fails" in inside:
        return frozenset({"fails"})
    return frozenset({"differs"})
