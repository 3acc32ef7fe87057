"""A new strategy, a new kind of input or a new workaround needs one file and its test: it
registers itself by being defined (a workaround by ``declare``), answers every question autodist
asks of it, and the planner (or ``classify``) takes it. Each of a test's own is taken away after
its test."""

from __future__ import annotations

import contextlib
import gc
import importlib
import sys

import pytest

from autodist.detection.snapshot import HardwareSnapshot
from autodist.errors import StrategyUnavailableError
from autodist.planning.memory_model import estimate
from autodist.planning.planner import plan
from autodist.planning.strategy_types import TYPES, Candidate, StrategyKind, StrategyType, strategy_type
from autodist.detection.model_info import ModelInfo


@contextlib.contextmanager
def own(name: str):
    """The module ``tests.extensions.<name>`` imported, then forgotten (its classes collected:
    what it registered is gone once the block ends)."""
    module = importlib.import_module(f"tests.extensions.{name}")
    try:
        yield module
    finally:
        del sys.modules[module.__name__], module
        delattr(sys.modules["tests.extensions"], name)
        gc.collect()


def answers(kind_type: StrategyType, snapshot: HardwareSnapshot) -> dict:
    """What autodist asks of a strategy, asked of ``kind_type``: each answer, or the refusal."""
    found = {}
    for flag in ("distributes", "shares_batches", "collective_workers", "asynchronous", "drops_remainder",
                 "single_device", "single_host", "on_tpu", "mirrors_variables", "one_device_when_unsplit", "splits_weights"):
        found[flag] = getattr(kind_type, flag)
        assert isinstance(found[flag], bool), (kind_type, flag)
    assert kind_type.backend in ("tensorflow", "jax") and kind_type.variables_home in (None, "host", "ps tasks")
    assert all(isinstance(name, str) for name in kind_type.adopts)
    assert kind_type.jax_equivalent is None or strategy_type(kind_type.jax_equivalent).on_jax
    try:
        kind_type.check_forced(snapshot, kind_type.backend)
        found["layout"] = kind_type.layout(snapshot)  # asked only where it can run
        found["batch_rule"] = kind_type.batch_rule(snapshot, 2, 64)
    except StrategyUnavailableError as refused:  # the check's own answer on this machine
        found["check_forced"] = str(refused)
    found["keras_refusal"] = kind_type.keras_refusal("keras3", "3.4.1")
    found["memory"] = estimate(kind_type.kind.value, ModelInfo(num_params=10, optimizer_slots=1), 8)
    found["tune"] = kind_type.tune_candidates(snapshot, 8)
    assert all(isinstance(c, Candidate) and c.strategy == kind_type.kind.value for c in found["tune"])
    return found


def test_every_strategy_type_answers_every_question_autodist_asks():
    snapshot = HardwareSnapshot.cpu_only(num_cpu_devices=2)
    assert [kind.value for kind in StrategyKind] == list(TYPES)[: len(StrategyKind)]
    for kind, kind_type in TYPES.items():
        assert kind_type.kind == kind and strategy_type(kind) is kind_type
        answers(kind_type, snapshot)


def test_a_strategy_of_its_own_is_one_file_that_registers_itself_and_the_planner_takes_it():
    snapshot = HardwareSnapshot.cpu_only(num_cpu_devices=2)
    with own("strategy") as module:
        pinned = module.Pinned.the
        assert TYPES["pinned"] is pinned and StrategyKind("pinned") == module.Pinned.kind == "pinned"
        found = answers(pinned, snapshot)
        assert found["single_device"] and not found["tune"] and found["keras_refusal"] is None
        made = plan(snapshot, strategy="pinned", batch_size=30)
        assert (made.strategy.value, made.devices, made.num_replicas, made.global_batch_size) == (
            "pinned", ("/cpu:0",), 1, 30
        )
        assert made.type is pinned and "pinned to the first CPU" in made.reasons
        assert made.to_dict()["strategy"] == "pinned" and pinned._builder is not None  # the act layer builds it so
    del module, pinned, made, found
    gc.collect()
    assert "pinned" not in TYPES
    with pytest.raises(Exception, match="pinned"):
        plan(snapshot, strategy="pinned")
    with pytest.raises(ValueError, match="pinned"):
        StrategyKind("pinned")  # a kind only while its type exists


def test_an_input_of_its_own_is_one_file_that_classify_takes_and_fit_makes_ready():
    import numpy as np

    from autodist.core.input_kinds import Arrays, classify
    from autodist.core.inputs import prepare_input

    pairs = [(np.ones((4, 2)), np.zeros(4)), (np.ones((4, 2)), np.ones(4))]
    assert isinstance(classify(pairs), Arrays)  # before its file, a list of arrays
    the_plan = plan(HardwareSnapshot.cpu_only(), batch_size=4)
    with own("input_kind") as module:
        data = classify(pairs)
        assert type(data) is module.Pairs and data.own_batch() == 4 and data.batches_per_epoch(None, {}) == 2
        made = prepare_input(data, the_plan, {"shuffle": False})
        assert type(made.data).__name__ == "Stream" and made.fit_kwargs == {"shuffle": False, "steps_per_epoch": 2}
        assert [y.tolist() for _, y in made.data.raw] == [[0, 0, 0, 0], [1, 1, 1, 1]]
        del data, made
    del module
    gc.collect()
    assert isinstance(classify(pairs), Arrays)  # its file forgotten, the list is arrays again


def test_a_workaround_of_its_own_is_one_file_that_plans_take_install_and_undo():
    from autodist.process import reset
    from autodist.tensorflow.keras_patches import apply_workarounds
    from autodist.upstream.keras_workarounds import PATCHES, WORKAROUNDS, declare

    snapshot = HardwareSnapshot.cpu_only(num_cpu_devices=2, keras_version="3.15.1")
    before = plan(snapshot, environ={}).keras_workarounds
    with own("workaround") as module:
        greeter, fixed = module.Greeter(), module.GREETING_FIXED
        assert WORKAROUNDS["greeting_fixed"] is fixed and list(PATCHES)[-1] == "greeting_fixed"
        made = plan(snapshot, environ={})
        assert made.keras_workarounds == (*before, "greeting_fixed")
        assert "greeting_fixed" not in plan(snapshot, environ={"AUTODIST_KERAS_COMPAT": "auto,-greeting_fixed"}).keras_workarounds
        assert plan(snapshot, strategy="default", environ={}).keras_workarounds == ()  # no strategy: none
        with pytest.raises(ValueError, match="greeting_fixed"):
            declare(fixed)  # one workaround per name
        assert greeter.greet() == "broken"
        try:
            assert apply_workarounds(["greeting_fixed"]) == ["greeting_fixed"] and greeter.greet() == "fixed"
            fixed.undo()
            assert greeter.greet() == "broken"
            apply_workarounds(["greeting_fixed"])
        finally:
            reset()  # each workaround's own undo; a fresh process's registry
        assert greeter.greet() == "broken" and "greeting_fixed" not in WORKAROUNDS
        declare(fixed)  # declared again, then forgotten with its file
        del greeter, fixed, made
    del module
    gc.collect()
    assert "greeting_fixed" not in WORKAROUNDS and plan(snapshot, environ={}).keras_workarounds == before
