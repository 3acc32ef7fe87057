"""Each Keras workaround's still-needed test, run on every Keras release installed beside this one:
the table of docs/keras-workarounds.md, "The releases measured to need each".

    python -m tests.keras_releases PYTHON [PYTHON ...]          # print the table
    python -m tests.keras_releases --write PYTHON [PYTHON ...]  # and write it into the page

Each ``PYTHON`` is the interpreter of an environment that holds one TensorFlow/Keras pair and this
checkout's autodist (``pip install -e . --no-deps``, with pytest and Hypothesis), as the matrix's
sessions make them (``noxfile.py``). In each, every workaround's still-needed test runs
(``Workaround.still_needed``): it reproduces the bug with plain Keras on that release, asserts
that the bug is there exactly where the registry's gate (``affected``) says, and that autodist's
patch gives one device's numbers. A cell is the gate's word for that release ("needed" or "not
needed") where its test passed there, and names the failure where it did not: the gate and the
bug then disagree, and the gate is what must change. A release's column is run in one pytest
process per environment, one environment at a time (they share 2 cores).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from autodist.upstream.keras_workarounds import WORKAROUNDS
from autodist.upstream.versions import version_tuple
from tests.conftest import ROOT

PAGE = ROOT / "docs" / "keras-workarounds.md"
HEADING = "## The releases measured to need each"
VERSIONS = "import sys; from autodist.upstream.versions import installed; print(installed()['tensorflow'], installed()['keras'])"


def measure(python: str) -> tuple[str, str, dict[str, str]]:
    """``(tensorflow, keras, {workaround: outcome})`` in the environment of ``python``; an outcome is
    ``passed``, ``skipped`` or ``failed: <first line of the failure>``."""
    tensorflow, keras_version = subprocess.run(
        [python, "-c", VERSIONS], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    ids = sorted({w.still_needed for w in WORKAROUNDS.values()})
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "junit.xml"
        subprocess.run(
            [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--junitxml={report}", *ids],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        cases = ET.parse(report).getroot().iter("testcase")
        outcomes = {}
        for case in cases:
            failure = case.find("failure") if case.find("failure") is not None else case.find("error")
            if failure is not None:
                outcomes[case.get("name", "")] = "failed: " + (failure.get("message") or "").splitlines()[0][:160]
            else:
                outcomes[case.get("name", "")] = "skipped" if case.find("skipped") is not None else "passed"
    return tensorflow, keras_version, {w.name: outcomes.get(w.still_needed.split("::")[1], "not run") for w in WORKAROUNDS.values()}


def cell(name: str, keras_version: str, outcome: str) -> str:
    """The gate's word for this release where the still-needed test agrees, else the failure."""
    if outcome == "passed":
        return "needed" if WORKAROUNDS[name].affects(keras_version) else "not needed"
    return outcome


def table(columns: list[tuple[str, str, dict[str, str]]]) -> list[str]:
    columns = sorted(columns, key=lambda column: version_tuple(column[1]))
    return [
        "| workaround | " + " | ".join(f"Keras {keras} (TF {tf})" for tf, keras, _ in columns) + " |",
        "|---|" + "---|" * len(columns),
        *(
            f"| `{name}` | " + " | ".join(cell(name, keras, outcomes[name]) for _, keras, outcomes in columns) + " |"
            for name in WORKAROUNDS
        ),
    ]


def write(rows: list[str]) -> None:
    """Put ``rows`` under the page's heading, in place of the table there."""
    text = PAGE.read_text(encoding="utf-8")
    before, after = text.split(HEADING, 1)
    lines = after.split("\n")
    start = next(index for index, line in enumerate(lines) if line.startswith("|"))
    end = next((index for index in range(start, len(lines)) if not lines[index].startswith("|")), len(lines))
    PAGE.write_text(before + HEADING + "\n".join([*lines[:start], *rows, *lines[end:]]), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.keras_releases", description=__doc__.split("\n\n")[0])
    parser.add_argument("pythons", nargs="+", help="the interpreter of each environment, one pair each")
    parser.add_argument("--write", action="store_true", help="write the table into docs/keras-workarounds.md")
    args = parser.parse_args(argv)
    columns = []
    for python in args.pythons:
        columns.append(measure(python))
        print(f"measured: TensorFlow {columns[-1][0]}, Keras {columns[-1][1]}", file=sys.stderr, flush=True)
    rows = table(columns)
    print("\n".join(rows))
    if args.write:
        write(rows)
    return 0 if all(outcome in ("passed", "skipped") for *_, outcomes in columns for outcome in outcomes.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
