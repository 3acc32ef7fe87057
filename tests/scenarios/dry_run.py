"""The dry run against the run (tests/test_dry_run.py): for each case (``AUTODIST_*`` settings and a
batch size), what ``autodist.plan()``, the command line (``python -m autodist inspect``'s JSON
plan without a batch size, ``python -m autodist plan --batch-size N`` with one; called in this
process) and ``autodist.fit`` (the plan it trained under) each give: the strategy, replicas and
global batch, or the error each raised.

Usage: dry_run.py CASES_JSON   (AUTODIST_CPU_DEVICES is this process's: it splits the CPU at start)
Prints ``RESULT`` and a JSON list, one entry per case: {"plan": ..., "cli": ..., "fit": ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import autodist  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

from autodist.cli import inspect_command, plan_command  # noqa: E402

KEPT = ("AUTODIST_CPU_DEVICES",)


def outcome(call) -> dict:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = call()
    except autodist.AutodistError as err:
        return {"refused": type(err).__name__, "message": str(err)[:300]}
    if isinstance(found, dict):  # the command line's JSON
        return {
            "strategy": found["strategy"],
            "replicas": found["num_replicas"],
            "global_batch": found["global_batch_size"],
        }
    return {"strategy": found.strategy.value, "replicas": found.num_replicas, "global_batch": found.global_batch_size}


def fitted(batch: int | None):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((48, 4), "float32"), np.ones((48, 1), "float32")
    return autodist.fit(model, x, y, batch_size=batch, epochs=1, verbose=0).plan


def main() -> None:
    cases = json.loads(sys.argv[1])
    results = []
    for case in cases:
        for name in [key for key in os.environ if key.startswith("AUTODIST_") and key not in KEPT]:
            del os.environ[name]
        os.environ.update(case["settings"])
        batch = case["batch_size"]
        results.append(
            {
                "plan": outcome(lambda: autodist.plan(**({"batch_size": batch} if batch is not None else {}))),
                "cli": outcome(lambda: command_line(batch)),
                "fit": outcome(lambda: fitted(batch)),
            }
        )
    print("RESULT " + json.dumps(results))


def command_line(batch: int | None) -> dict:
    if batch is None:
        return inspect_command(argparse.Namespace(fast=True))["plan"]
    return plan_command(argparse.Namespace(snapshot=None, num_params=None, batch_size=batch, strategy="auto"))


if __name__ == "__main__":
    main()
