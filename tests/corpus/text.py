"""A corpus program's Python text, whatever file its author published it as."""

from __future__ import annotations

import json
from pathlib import Path


#: Cell magics whose body is another language: the cell does nothing (``%%time``'s body is Python, and runs).
OTHER_LANGUAGES = ("%%bash", "%%sh", "%%script", "%%html", "%%javascript", "%%js", "%%latex", "%%markdown", "%%svg")


def _leading_indent_removed(source: str) -> str:
    """A cell whose first line is indented, dedented by that much, as IPython's ``leading_indent`` does."""
    first = next((line for line in source.splitlines() if line.strip()), "")
    prefix = first[: len(first) - len(first.lstrip())]
    if not prefix:
        return source
    return "\n".join(line[len(prefix) :] if line.startswith(prefix) else line for line in source.splitlines())


def _help(body: str) -> bool:
    """IPython's help line (``tf.keras.Input?``, ``x??``): not Python."""
    return body.endswith("?") and body.rstrip("?").replace(".", "").replace("_", "").isalnum()


def program_text(path: Path, shell: bool = False) -> str:
    """A ``.py`` program's text; a notebook's code cells in order, with its shell (``!``) and magic
    (``%``) lines, which are not Python, turned into ``pass``, and so is a cell in another language (``%%bash``). A ``%%writefile NAME`` cell writes its
    body to ``NAME``, as the notebook does (a module a later cell imports). With ``shell``, a ``!``
line calls ``__corpus_shell__(COMMAND)`` instead, which the runner defines."""
    if path.suffix != ".ipynb":
        return path.read_text()
    lines = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = _leading_indent_removed("".join(cell["source"]))
        if source.startswith("%%writefile "):
            target, _, body = source.partition("\n")
            lines += [f"open({target.split(maxsplit=1)[1].strip()!r}, 'w').write({body!r})", ""]
            continue
        if source.split(maxsplit=1)[:1] and source.split(maxsplit=1)[0] in OTHER_LANGUAGES:  # not Python either
            lines += ["pass  # " + line for line in source.splitlines()] + [""]
            continue
        for line in source.splitlines():
            body = line.lstrip()
            indent = line[: len(line) - len(body)]
            if shell and body.startswith("!"):  # the runner's: its data's commands run (stand_ins.shell)
                lines.append(f"{indent}__corpus_shell__({body[1:]!r})")
            else:
                lines.append(indent + "pass  # " + body if body.startswith(("!", "%")) or _help(body) else line)
        lines.append("")
    return "\n".join(lines) + "\n"


#: What a program that distributes its own training writes: a ``tf.distribute`` strategy, a JAX
#: mesh (``jax.sharding.Mesh``, Keras's ``DeviceMesh``), or a Keras distribution of its own.
OWN_DISTRIBUTION = ("Strategy(", "Mesh(", "set_distribution(")


def own_distribution(text: str) -> bool:
    """Whether the program distributes its own training: then that is its hand-built way."""
    return any(mark in text for mark in OWN_DISTRIBUTION)
