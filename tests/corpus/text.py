"""A corpus program's Python text, whatever file its author published it as."""

from __future__ import annotations

import json
from pathlib import Path


def program_text(path: Path) -> str:
    """A ``.py`` program's text; a notebook's code cells in order, with its shell (``!``) and magic
    (``%``) lines, which are not Python, turned into ``pass``."""
    if path.suffix != ".ipynb":
        return path.read_text()
    lines = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            body = line.lstrip()
            lines.append(line[: len(line) - len(body)] + "pass  # " + body if body.startswith(("!", "%")) else line)
        lines.append("")
    return "\n".join(lines) + "\n"
