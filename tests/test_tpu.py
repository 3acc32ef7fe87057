"""The TPU path: cheap detection, the batch rule, initialisation order, and a resolver that hangs."""

from __future__ import annotations

import threading

import pytest

import autodist
from autodist.tensorflow import strategies
from autodist.errors import StrategyUnavailableError
from tests.conftest import make_snapshot, run_python, run_scenario, subprocess_env


@pytest.fixture(scope="module")
def fake_tpu(processes):
    return run_scenario("tpu_fake.py", TPU_NAME="my-tpu", timeout=120)


def test_initialisation_order(fake_tpu):
    assert fake_tpu["calls"] == [
        "resolve(my-tpu, runtime_started=False)",
        "connect_to_cluster",
        "initialize_tpu_system",
        "TPUStrategy(my-tpu)",
    ], "resolve, connect and initialise once, before any other TensorFlow work"


def test_batch_rule_before_and_after_connecting(fake_tpu):
    before, after = fake_tpu["init_plan"], fake_tpu["fit_plan"]
    # 8 cores assumed before connecting: 100 -> 128 (16 per core, a multiple of 8)
    assert (before["num_replicas"], before["global_batch_size"], before["per_replica_batch_size"]) == (8, 128, 16)
    assert any("assumed" in r for r in before["reasons"])
    # connected: 4 cores -> 100 becomes 96 (24 per core), planned again
    assert (after["num_replicas"], after["global_batch_size"], after["per_replica_batch_size"]) == (4, 96, 24)
    assert any("multiple of 8" in r for r in after["reasons"]) and any("bf16" in r for r in after["reasons"])


def test_static_shapes_drop_the_remainder_and_say_how_many(fake_tpu):
    assert fake_tpu["steps"] == 1000 // 96  # 10 full batches; the last 40 samples are dropped
    assert any("40 of 1000 samples" in w for w in fake_tpu["warnings"]), fake_tpu["warnings"]
    assert fake_tpu["policy"] == "float32"  # bf16 only when the user opts in
    # pandas DataFrames take the same path as arrays: static shapes, the same count dropped
    assert fake_tpu["pandas_steps"] == 1000 // 96
    assert any("40 of 1000 samples" in w for w in fake_tpu["pandas_warnings"]), fake_tpu["pandas_warnings"]


@pytest.mark.parametrize(
    "requested, cores, expected",
    [(100, 8, 128), (64, 8, 64), (1024, 32, 1024), (1000, 32, 1024), (12, 8, 16), (3, 8, 8)],
)
def test_tpu_batch_table(requested, cores, expected):
    snapshot = make_snapshot(tpu=True)
    snapshot = snapshot.__class__(**{**snapshot.__dict__, "tpu": autodist.TpuInfo("TPU_NAME", "t", cores)})
    result = autodist.plan(snapshot, batch_size=requested)
    assert (result.strategy.value, result.num_replicas, result.global_batch_size) == ("tpu", cores, expected)
    assert result.drop_remainder


def test_hanging_resolver_times_out(tensorflow_imported, monkeypatch):
    import tensorflow as tf

    entered, release, returned = threading.Event(), threading.Event(), threading.Event()

    class Hanging:
        def __init__(self, tpu=None):
            entered.set()
            release.wait(30)  # an endpoint that accepts connections and never answers
            returned.set()

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", Hanging)
    with pytest.raises(StrategyUnavailableError, match="did not finish in 0.5 s.*TPU_NAME"):
        strategies.tpu_cluster_resolver("my-tpu", timeout=0.5)
    assert entered.is_set() and not returned.is_set(), "the error came while the resolver still hung"
    release.set()
    assert returned.wait(10)


def test_a_tpu_address_nothing_listens_on_is_refused_within_the_limit():
    """TensorFlow's connect waited forever on ``TPU_NAME=grpc://127.0.0.1:<closed port>``;
    autodist opens a TCP connection first, bounded, and names the address."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens there

    class Resolver:
        def master(self):
            return f"grpc://127.0.0.1:{port}"

    with pytest.raises(StrategyUnavailableError, match=rf"grpc://127.0.0.1:{port} could not be reached.*limit is 5 s.*TPU_NAME"):
        strategies._check_reachable(Resolver(), 5.0)


def test_a_connect_that_hangs_is_stopped_at_the_limit():
    entered, release = threading.Event(), threading.Event()

    def connect():
        entered.set()
        release.wait(30)  # TensorFlow's connect to an address that accepts and never answers

    with pytest.raises(StrategyUnavailableError, match="Connecting to the TPU 't' did not finish in 0.5 s"):
        strategies._bounded("Connecting to the TPU 't'", connect, 0.5)
    assert entered.is_set()
    release.set()
    assert strategies._bounded("a step", lambda: 7, 5.0) == 7, "a step that finishes gives its value"


def test_real_resolver_without_a_tpu_fails_with_its_own_error_not_the_timeout(tensorflow_imported):
    with pytest.raises(StrategyUnavailableError, match="Please provide a TPU Name") as raised:
        strategies.tpu_cluster_resolver(None, timeout=60)
    assert "did not finish" not in str(raised.value)


def test_inspect_reads_a_tpu_from_the_environment_without_connecting(processes):
    """``inspect --fast`` with ``TPU_NAME`` naming a TPU that does not exist: detection reads the
    environment only, so it reports that TPU (no resolver: it would fail here, "Please provide a
    TPU Name" or a lookup of the name) and exits 0 (its time is a benchmark: benchmarks/detection.py)."""
    proc = run_python(["-m", "autodist", "inspect", "--fast"], env=subprocess_env(TPU_NAME="no-such-tpu-here"), timeout=60)
    assert proc.returncode == 0 and "no-such-tpu-here" in proc.stdout and "TPU_NAME" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Please provide a TPU Name" not in proc.stdout + proc.stderr
