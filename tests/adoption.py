"""Adopt autodist in a program the way a user does, and nothing more: ``import autodist`` first,
and ``<name>.fit(`` becomes ``autodist.fit(<name>, `` (``keep_fit``: only the import). The same
rule as the adoption tool the project's reviewers use on programs nobody here wrote."""

from __future__ import annotations

import ast
import re
from pathlib import Path

FIT = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\.fit\(")


def _import_line(text: str) -> int:
    """The 0-based line after a module docstring and ``from __future__`` imports."""
    line = 0
    for i, node in enumerate(ast.parse(text).body):
        docstring = i == 0 and isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant)
        if docstring or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            line = node.end_lineno or line
            continue
        break
    return line


def adopt(text: str, *, keep_fit: bool = False) -> tuple[str, int]:
    """The adopted text, and how many ``fit`` calls changed."""
    lines, changed = text.splitlines(keepends=True), 0
    if not keep_fit:
        out = []
        for line in lines:
            new, count = (line, 0) if line.lstrip().startswith("#") else FIT.subn(lambda m: f"autodist.fit({m.group(1)}, ", line)
            out.append(new)
            changed += count
        lines = out
    lines.insert(_import_line(text), "import autodist  # adopted: the one import a user adds\n")
    return "".join(lines), changed


def write_adopted(source: Path, target: Path, *, keep_fit: bool = False) -> int:
    """Write ``source``'s adopted form to ``target`` (beside it, so its imports resolve)."""
    text, changed = adopt(source.read_text(), keep_fit=keep_fit)
    target.write_text(text)
    return changed
