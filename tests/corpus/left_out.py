"""Programs of a source left out of the corpus, each with a reason the runner checks
(``left_out.json``; their texts in ``programs/left_out/``, byte for byte, as taken).

A reason is a sentence for the reader (``why``) and a check (``check``) of one kind:

- ``{"fails": TEXT}``: the program fails on one device, plain ``model.fit`` as written, with an
  error holding TEXT. Measured again by every full run (``python -m tests.corpus``, or
  ``--left-out``): a program that then runs, or fails otherwise, is reported;
- ``{"imports": MODULE}``: it imports MODULE, which the test environment does not carry;
- ``{"downloads": URL}``: it loads a pretrained model or data from URL (its text holds it), which
  no stand-in gives;
- ``{"backend": NAME}``: it sets ``KERAS_BACKEND`` to NAME (torch), a backend autodist does not
  train on: the runner's ways are TensorFlow's, and JAX's for a program written for JAX;
- ``{"trains": false}``: it trains, evaluates and predicts nothing and keeps no model (its plain
  way's record holds nothing to compare). Measured again by every full run;
- ``{"over_seconds": N}``: on one device it runs past the runner's N s per way (measured again by
  every full run).

Only the measured kinds (``fails``, ``over_seconds``, ``trains``) run the program; the others read
its text. An entry's ``"backend": "jax"``, as in ``sources.json``, runs its measured reason on JAX.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from tests.corpus.text import program_text

HERE = Path(__file__).resolve().parent
LEFT_OUT = json.loads((HERE / "left_out.json").read_text())
KINDS = ("fails", "imports", "downloads", "backend", "trains", "over_seconds")
MEASURED = ("fails", "over_seconds", "trains")
#: The backends other than TensorFlow whose programs the runner runs (a program's ``"backend"``).
RUNNER_BACKENDS = ("jax",)


def program(name: str) -> Path:
    return HERE / "programs" / "left_out" / f"{name}{Path(LEFT_OUT[name]['path']).suffix}"


def kind(entry: dict) -> str:
    (found,) = entry["check"]
    return found


def read(name: str) -> str | None:
    """What is wrong with a left-out program's reason, read from its text (None: it holds)."""
    entry = LEFT_OUT[name]
    check, text = entry["check"], program_text(program(name))
    if "imports" in check:
        module = check["imports"]
        imported = re.search(rf"^\s*(?:import|from)\s+{re.escape(module)}\b", text, re.M)
        if not imported:
            return f"left out as importing {module}, which its text does not import"
        if importlib.util.find_spec(module) is not None:
            return f"left out as importing {module}, which the test environment now carries: run it"
    if "downloads" in check and check["downloads"] not in text:
        return f"left out as downloading {check['downloads']}, which its text does not name"
    if "backend" in check and not re.search(rf"KERAS_BACKEND\"\]\s*=\s*\"{check['backend']}\"", text):
        return f"left out as written for the {check['backend']} backend, which its text does not set"
    if check.get("backend") in RUNNER_BACKENDS:
        return f"left out as written for the {check['backend']} backend, which the runner runs: run it"
    return None


def measured(name: str, record: dict) -> str | None:
    """What is wrong with a measured reason, given the plain way's record (None: it holds)."""
    check, outcome = LEFT_OUT[name]["check"], record["outcome"]
    if "fails" in check and check["fails"] not in outcome:
        return f"left out as failing on one device with {check['fails']!r}, where it now gives: {outcome[:200]}"
    if "over_seconds" in check and "timed out" not in outcome:
        return f"left out as running past {check['over_seconds']} s, where it now gives: {outcome[:200]}"
    if "trains" in check:
        kept = [key for key in ("fits", "evaluates", "predicts", "finals") if record.get(key)]
        if outcome != "ran" or kept:
            return f"left out as giving nothing to compare, where it gives: {outcome[:120]}; {', '.join(kept) or 'nothing'}"
    return None
