"""Run the corpus (tests/corpus/programs/, sources in sources.json) four ways and print its table:
``python -m tests.corpus [NAME ...]``.

Each program runs, each way in its own process (tests/corpus/run.py): plain ``model.fit`` on one
device; ``autodist.fit`` with its defaults on one device; on 2 replicas (``AUTODIST_CPU_DEVICES=2``);
and plain ``model.fit`` under a hand-built ``MirroredStrategy`` over 2 logical CPUs. The verdict is
the contract's: ``equal`` (to one device, within ``TOLERANCE``), ``= hand-built, warned``,
``warned: independent random draws`` (autodist's replicas draw their own numbers: equal to neither,
said by an AutodistWarning, and no farther from one device than ``RANDOM_FACTOR`` times the
hand-built strategy's own random draws are), an ``AutodistError``, or what differs. The exit
status is 1 when a program is outside the contract.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SOURCES = json.loads((HERE / "sources.json").read_text())
TOLERANCE = 1e-4
WAYS = {"plain": ("plain", None), "autodist, 1 device": ("autodist", "1"), "autodist, 2 replicas": ("autodist", "2"), "hand-built": ("hand-built", None)}
RANDOM_DRAWS = "each replica from its own stream"
#: How much farther from one device autodist's independent draws may take a program than the
#: hand-built strategy's shared ones do (both differ from one device by their randomness alone).
RANDOM_FACTOR = 3.0


def run(name: str, out: Path) -> dict:
    """Every way of one program, all four at once, each bounded at 600 s (killed past it)."""
    procs = {}
    for way, (kind, devices) in WAYS.items():
        env = {key: value for key, value in __import__("os").environ.items() if not key.startswith("AUTODIST_")}
        env.update(PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3", **({"AUTODIST_CPU_DEVICES": devices} if devices else {}))
        target = out / f"{name}-{kind}-{devices}.json"
        procs[way] = (subprocess.Popen([sys.executable, str(HERE / "run.py"), str(HERE / "programs" / f"{name}.py"), kind, str(target)],
                                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True), target)
    found = {}
    for way, (proc, target) in procs.items():
        try:
            _, err = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        found[way] = json.loads(target.read_text()) if target.exists() else {"outcome": f"no record (exit {proc.returncode}): {err[-300:]}"}
    return found


def gap(a: dict, b: dict) -> float:
    """The largest difference between two ways' fits (History, weights), evaluates and predicts;
    ``inf`` where they recorded different things."""
    pairs = []
    if len(a["fits"]) != len(b["fits"]) or len(a["evaluates"]) != len(b["evaluates"]) or len(a["predicts"]) != len(b["predicts"]):
        return float("inf")
    for one, two in zip(a["fits"], b["fits"]):
        if sorted(one["history"]) != sorted(two["history"]):
            return float("inf")
        pairs += [(one["history"][k], two["history"][k]) for k in one["history"]]
        pairs += list(zip(one["weights"], two["weights"]))
    pairs += list(zip(a["evaluates"], b["evaluates"]))
    pairs += [(x, y) for one, two in zip(a["predicts"], b["predicts"]) for x, y in zip(one["values"], two["values"])]
    biggest = 0.0
    for x, y in pairs:
        if len(x) != len(y):
            return float("inf")
        biggest = max([biggest, *(abs(p - q) for p, q in zip(x, y))])
    return biggest


def verdict(found: dict) -> str:
    plain, one, two, hand = (found[way] for way in WAYS)
    if plain["outcome"] != "ran":
        return f"the program fails on one device here: {plain['outcome'][:120]}"
    if one["outcome"] != "ran" or gap(plain, one) > TOLERANCE:
        return f"autodist on one device is not model.fit: {one['outcome'][:120]} (gap {gap(plain, one):.2g})" if one["outcome"] != "ran" else f"autodist on one device differs by {gap(plain, one):.2g}"
    if two["outcome"] != "ran":
        return two["outcome"].split(":")[0] if two.get("autodist_error") else f"crash: {two['outcome'][:160]}"
    apart = gap(plain, two)
    if apart <= TOLERANCE:
        return "equal"
    warned = two["warnings"]
    if hand["outcome"] == "ran" and gap(hand, two) <= TOLERANCE and warned:
        return f"= hand-built, warned ({apart:.2g} from one device)"
    hand_apart = gap(plain, hand) if hand["outcome"] == "ran" else float("inf")
    if warned and any(RANDOM_DRAWS in w for w in warned) and apart <= RANDOM_FACTOR * hand_apart:
        return f"warned: independent random draws ({apart:.2g} from one device; hand-built {hand_apart:.2g})"
    return f"differs by {apart:.2g}" + (" (warned)" if warned else " (not warned)")


def main(argv: list[str]) -> int:
    names = argv or sorted(SOURCES)
    rows = ["| program | source | verdict | hand-built | warnings |", "|---|---|---|---|---|"]
    outside = 0
    with tempfile.TemporaryDirectory() as out:
        for name in names:
            source = SOURCES[name]
            text = (HERE / "programs" / f"{name}.py").read_bytes()
            assert hashlib.sha256(text).hexdigest() == source["sha256"], f"{name}: the program is not its source's text"
            found = run(name, Path(out))
            said = verdict(found)
            outside += not said.startswith(("equal", "= hand-built", "warned"))
            hand = found["hand-built"]
            hand_said = "trains" if hand["outcome"] == "ran" else f"fails ({hand['outcome'].split(':')[0]})"
            warnings = "; ".join(w.split(":")[0][:80] for w in found["autodist, 2 replicas"].get("warnings", [])) or "-"
            rows.append(f"| {source['title']} | `{source['repository']}` `{source['path']}` @ `{source['commit'][:8]}` | {said} | {hand_said} | {warnings} |")
            print(rows[-1], flush=True)
    print("\n".join(rows))
    print(f"\n{len(names) - outside} of {len(names)} within the contract")
    return 1 if outside else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
