"""The dry run is the run (issue 46): ``autodist.plan()`` (for this machine), the command line
(``inspect``, ``plan --batch-size``) and ``autodist.fit`` make one plan, through one function
(:func:`autodist.core.detect_and_plan.plan_here`), under every ``AUTODIST_*`` setting that
changes a plan: the same strategy, replicas and global batch, or the same refusal. Settings are
drawn from a fixed seed and run for real, ``fit`` included, in one process per
CPU split (tests/scenarios/dry_run.py). ``strategy="tune"`` is left out: ``fit`` times candidates
there, which a dry run cannot (the plan's reason says so).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict

from autodist.planning.planner import STRATEGY_NAMES
import pytest

from tests.conftest import scenario_result, start_scenario

pytestmark = pytest.mark.usefixtures("processes")  # every test here runs TensorFlow or starts processes: the tensorflow tier

NAMES = [name for name in STRATEGY_NAMES if name != "tune"]
#: What each setting is drawn from: every strategy name, in the case a user types, typos and
#: stray spaces; valid and invalid values of the other settings that change a plan.
SETTINGS = {
    "AUTODIST_STRATEGY": NAMES
    + [name.upper() for name in NAMES]
    + ["mirored", "onedevice", "gpu", "auto ", " mirrored"],
    "AUTODIST_STEPS_PER_EXECUTION": ["1", "4", "0", "many"],
    "AUTODIST_PEER_TIMEOUT": ["30", "-1", "soon"],
    "AUTODIST_KERAS_COMPAT": ["auto", "off", "force", "of"],
}
CASES, SEED = 36, 46


def drawn_cases(seed: int = SEED, count: int = CASES) -> list[dict]:
    """``count`` cases drawn from ``seed``: each setting set or not, a batch size or none, a CPU split."""
    rng = random.Random(seed)
    return [
        {
            "settings": {
                name: rng.choice(values)
                for name, values in SETTINGS.items()
                if rng.random() < (0.8 if name == "AUTODIST_STRATEGY" else 0.25)
            },
            "batch_size": rng.choice([None, rng.randint(1, 40)]),
            "cpu_devices": rng.choice(["1", "2", "3"]),
        }
        for _ in range(count)
    ]


def test_plan_inspect_and_fit_make_one_plan_under_every_setting(report):
    drawn = drawn_cases()
    by_split = defaultdict(list)
    for case in drawn:
        by_split[case["cpu_devices"]].append(case)
    started = {
        split: start_scenario("dry_run.py", json.dumps(group), AUTODIST_CPU_DEVICES=split)
        for split, group in by_split.items()
    }
    agreed = refused = 0
    for split, proc in started.items():
        for case, found in zip(by_split[split], scenario_result(proc, timeout=600), strict=True):
            assert found["plan"] == found["cli"] == found["fit"], (case, found)
            agreed += 1
            refused += "refused" in found["fit"]
    kinds = {found for case in drawn for found in [case["settings"].get("AUTODIST_STRATEGY")]}
    report(
        f"dry run: {len(drawn)} cases drawn (seed {SEED}; {len(kinds)} AUTODIST_STRATEGY values, 3 CPU splits): plan(), the command line and fit agree on {agreed}, {refused} of them refused alike"
    )
    assert agreed == len(drawn) and 0 < refused < len(drawn)
