"""Shared fixtures: an environment-leak guard, a snapshot factory and a subprocess runner."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from autodist.detection.cluster import parse_tf_config
from autodist.detection.hardware import GpuInfo, HardwareSnapshot, TpuInfo

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = Path(__file__).resolve().parent / "scenarios"
GIB = 2**30


_FIGURES: list[str] = []


@pytest.fixture
def report():
    """Record a measured figure; it is printed in the run's summary ("autodist figures")."""
    return _FIGURES.append


def pytest_terminal_summary(terminalreporter):
    if _FIGURES:
        terminalreporter.section("autodist figures")
        for line in _FIGURES:
            terminalreporter.write_line(line)


@pytest.fixture
def fresh_state():
    """autodist's process state as a fresh process has it (:func:`autodist.process.reset`, which
    also puts back what the workarounds replaced in Keras and TensorFlow), and this test's state
    dropped after: the one way tests reset what autodist keeps. The facts kept before come back;
    the workarounds do not (a later ``fit`` applies those it needs again)."""
    from autodist.process import STATE, reset

    kept = {key: value for key, value in vars(STATE).items() if key not in ("patched", "replaced", "symbolic_build")}
    reset()
    yield STATE
    reset()
    vars(STATE).update(kept)


#: The tiers, from the fixtures a test uses (:func:`pytest_collection_modifyitems` marks them): a
#: test that uses one of these (itself, or through a fixture of its) is marked ``tensorflow``: it
#: imports TensorFlow in this process, or starts processes of its own. Every other test is marked
#: ``unit`` (``python -m pytest -m unit``: no TensorFlow, no process; :func:`unit_tier` holds it to that).
TIER_FIXTURES = ("tensorflow_imported", "processes")
#: What a unit test may not import (seconds each, and TensorFlow's import sets process state).
FRAMEWORKS = ("tensorflow", "keras", "tf_keras", "jax", "ray")


@pytest.fixture(scope="session")
def tensorflow_imported():
    """TensorFlow and Keras imported in this process, for a test that runs them here (importing
    them also sets variables: TF2_BEHAVIOR, ...). The test is in the ``tensorflow`` tier."""
    import keras  # noqa: F401
    import tensorflow  # noqa: F401


@pytest.fixture(scope="session")
def processes():
    """For a test, or a fixture, that starts processes of its own (a scenario, a program, a job, a
    private network): the test is in the ``tensorflow`` tier. The runners are this module's
    functions (:func:`run_scenario`, :func:`start_python`, ...)."""


class _FrameworkImport:
    """A meta path finder that refuses a framework of :data:`FRAMEWORKS` not yet imported, in the
    test's own thread (a module's runs ahead, in threads of their own, go on beside a unit test of
    that module), and records each refusal in ``broken``."""

    def __init__(self, broken: list[str]) -> None:
        self.broken = broken

    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in FRAMEWORKS and top not in sys.modules and threading.current_thread() is threading.main_thread():
            self.broken.append(
                f"a unit test imports {name}: request the fixture tensorflow_imported (or processes, "
                "for a test that starts processes) to move it to the tensorflow tier"
            )
            raise ImportError(self.broken[-1])
        return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test marked ``unit`` (its fixtures' setup and teardown included) imports no framework not
    yet imported and starts no process: where it does, it fails, naming the fixture to request
    (also where the code under test caught the refusal: :func:`pytest_runtest_makereport`)."""
    if item.get_closest_marker("unit") is None:
        yield
        return
    item.unit_tier_broken = broken = []

    def refused(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread():  # a module's runs ahead (Ahead)
            return started(*args, **kwargs)
        broken.append(
            f"a unit test starts a process ({args[1] if len(args) > 1 else kwargs.get('args')}): "
            "request the fixture processes to move it to the tensorflow tier"
        )
        raise AssertionError(broken[-1])

    finder, started = _FrameworkImport(broken), subprocess.Popen.__init__
    subprocess.Popen.__init__ = refused  # type: ignore[method-assign]
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        subprocess.Popen.__init__ = started  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A unit test whose code caught a refusal of :func:`pytest_runtest_protocol` fails all the same."""
    outcome = yield
    report = outcome.get_result()
    broken = getattr(item, "unit_tier_broken", [])
    new, item.unit_tier_reported = broken[getattr(item, "unit_tier_reported", 0):], len(broken)  # this phase's
    if new and report.passed:
        report.outcome, report.longrepr = "failed", "\n".join(dict.fromkeys(new))


#: What importing each package sets in os.environ (measured on TF 2.21): a test that
#: imports it first is not blamed for these.
_SET_BY_IMPORT = {
    "tensorflow": (
        "TF2_BEHAVIOR", "TF_CPP_MIN_LOG_LEVEL", "TPU_ML_PLATFORM", "TPU_ML_PLATFORM_VERSION", "TPU_SKIP_MDS_QUERY",
        "HDF5_PLUGIN_PATH", "ENABLE_RUNTIME_UPTIME_TELEMETRY",
    ),
    "sklearn": ("KMP_DUPLICATE_LIB_OK", "KMP_INIT_AT_FORK"),  # what Keras imports unasked (tf_keras too)
}


@pytest.fixture(autouse=True)
def no_environment_leaks():
    """Fail any test that changes os.environ (TF_CONFIG leaking between tests is our bug class)."""
    imported = {package for package in _SET_BY_IMPORT if package in sys.modules}
    before = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    yield
    after = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    for package, names in _SET_BY_IMPORT.items():
        if package not in imported and package in sys.modules:  # this test imported it first
            before.update({k: after[k] for k in names if k in after and k not in before})
    if before != after:
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        for key in changed:
            if key in before:
                os.environ[key] = before[key]
            else:
                os.environ.pop(key, None)
        pytest.fail(f"test leaked environment variables: {changed}")


def make_snapshot(
    *,
    num_gpus: int = 0,
    gpu_memory_gib: float | None = 16,
    gpu_names: list[str] | None = None,
    num_cpu_devices: int = 1,
    tf_config: dict[str, Any] | None = None,
    tpu: bool = False,
    platform: str = "linux",
    keras_version: str = "3.15.1",
) -> HardwareSnapshot:
    """A synthetic snapshot for planner tests: no hardware, no TensorFlow."""
    names = gpu_names or ["NVIDIA A100-SXM4-40GB"] * num_gpus
    memory = None if gpu_memory_gib is None else int(gpu_memory_gib * GIB)
    return HardwareSnapshot(
        tensorflow_version="2.21.0",
        keras_version=keras_version,
        keras_flavor="keras3",
        platform=platform,
        num_cpus=8,
        host_memory_bytes=64 * GIB,
        num_cpu_devices=num_cpu_devices,
        gpus=tuple(GpuInfo(names[i], memory, "8.0") for i in range(num_gpus)),
        num_driver_gpus=num_gpus,
        num_tensorflow_gpus=num_gpus,
        tpu=TpuInfo(source="TPU_NAME", name="my-tpu", num_cores=8) if tpu else None,
        cluster=parse_tf_config(json.dumps(tf_config)) if tf_config else None,
    )


#: The packages a child of the suite cannot import (tests/child_site/sitecustomize.py): Keras imports
#: them when they are installed, at about 2.3 CPU seconds a process, and no child of the suite uses
#: them. The differential tier's children, which run published programs that plot, see them all.
HIDDEN_IN_CHILDREN = "sklearn,IPython,matplotlib"
_CHILD_SITE = Path(__file__).resolve().parent / "child_site"
_HIDING = [True]  # False while a test of the differential tier runs (pytest_runtest_setup)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _HIDING[0] = item.get_closest_marker("differential") is None


def subprocess_env(**overrides: str | None) -> dict[str, str]:
    """A clean environment for a child process: no inherited cluster or autodist settings, and the
    packages of :data:`HIDDEN_IN_CHILDREN` hidden outside the differential tier
    (``TESTS_HIDDEN_MODULES=None`` shows them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTODIST_", "TF_CONFIG", "TF_USE_LEGACY", "TESTS_HIDDEN"))}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["PYTHONFAULTHANDLER"] = "1"  # a crash inside TensorFlow prints every thread's Python stack
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(_CHILD_SITE), env.get("PYTHONPATH", "")])
    if _HIDING[0]:
        env["TESTS_HIDDEN_MODULES"] = HIDDEN_IN_CHILDREN
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_python(args: list[str], *, env: dict[str, str], timeout: float = 300, cwd: Path | str = ROOT) -> subprocess.CompletedProcess:
    """Run ``python ARGS`` in ``cwd`` with a hard timeout; the child is killed if it overruns."""
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


def start_python(args: list[str], *, env: dict[str, str], cwd: Path | str = ROOT) -> subprocess.Popen:
    """Start ``python ARGS`` now; :func:`finished` collects it. Independent real-TF (or JAX)
    processes overlap this way on the 2 cores. Its output goes to unnamed temporary files, not
    pipes: a process whose pipe filled up while another was collected would stop until its turn."""
    outputs = (tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+"))
    proc = subprocess.Popen([sys.executable, *args], env=env, stdout=outputs[0], stderr=outputs[1], text=True, cwd=cwd)
    proc.outputs = outputs  # type: ignore[attr-defined]
    return proc


def finished(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    """``(returncode, stdout, stderr)`` of a started process; killed when it overruns ``timeout``."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    texts = []
    for output in proc.outputs:  # type: ignore[attr-defined]
        output.seek(0)
        texts.append(output.read())
        output.close()
    return proc.returncode, texts[0], texts[1]


def arm_results(program: str, arms: tuple[Any, ...]) -> dict[Any, Any]:
    """Each arm of ``program`` (``python -c PROGRAM ARM``, an arm a string or a tuple of them) in its
    own process, side by side, with 2 logical CPUs: the JSON of its last ``RESULT`` line."""
    started = {
        arm: start_python(["-c", program, *([arm] if isinstance(arm, str) else arm)], env=subprocess_env(AUTODIST_CPU_DEVICES="2"))
        for arm in arms
    }
    found = {}
    for arm, proc in started.items():
        code, stdout, stderr = finished(proc, timeout=300)
        lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
        assert code == 0 and lines, (arm, stderr[-3000:])
        found[arm] = json.loads(lines[-1][len("RESULT ") :])
    return found


def start_scenario(script: str, *args: str, **env: str | None) -> subprocess.Popen:
    """Start tests/scenarios/SCRIPT in a fresh process; :func:`scenario_result` reads it."""
    proc = start_python([str(SCENARIOS / script), *args], env=subprocess_env(**env))
    proc.label = f"{script} {' '.join(args)}"  # type: ignore[attr-defined]
    return proc


def scenario_result(proc: subprocess.Popen, timeout: float = 300) -> dict[str, Any]:
    """The ``RESULT`` JSON of a started scenario, or the error with its output."""
    code, out, err = finished(proc, timeout)
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    if code != 0 or not lines:
        raise AssertionError(f"{getattr(proc, 'label', proc.args)} failed (exit {code}):\nstdout:\n{out[-3000:]}\nstderr:\n{err[-6000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def run_scenario(script: str, *args: str, timeout: float = 300, **env: str | None) -> dict[str, Any]:
    """Run tests/scenarios/SCRIPT in a fresh process and return its ``RESULT`` JSON."""
    return scenario_result(start_scenario(script, *args, **env), timeout)


class Ahead:
    """A module's independent program runs, started together at the module's first test, at most
    ``lanes`` at a time, each collected by key. On 2 cores a run spends much of its time importing
    TensorFlow or waiting on its peers, which leaves a core idle: three at a time fill it. Only
    runs whose results do not depend on time belong here; a test that bounds a time calls
    :meth:`settle` first. A run is submitted only when a selected test of the module is named
    ``needed_by`` or uses a fixture of that name."""

    def __init__(self, request: pytest.FixtureRequest, lanes: int = 3) -> None:
        import concurrent.futures

        mine = [item for item in request.session.items if getattr(item, "module", None) is request.module]
        self._wanted = {name for item in mine for name in (*item.fixturenames, getattr(item, "originalname", item.name))}
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="ahead")
        self._runs: dict[str, Any] = {}

    def submit(self, needed_by: str, call: Any, key: str | None = None) -> None:
        """Queue ``call()`` (a bounded run) under ``key`` (default: ``needed_by``) if it is wanted."""
        if needed_by in self._wanted:
            self._runs[key or needed_by] = self._pool.submit(call)

    def __getitem__(self, key: str) -> Any:
        return self._runs[key].result()

    def settle(self) -> None:
        """Wait until every queued run has ended (each within its own time limit)."""
        import concurrent.futures

        concurrent.futures.wait(list(self._runs.values()))

    def close(self) -> None:
        """Queued runs are dropped; running ones end within their own time limits."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def listening(ports: list[int]) -> dict[int, list[str]]:
    """The addresses on which ``ports`` listen in this process's network namespace."""
    import socket

    found: dict[int, list[str]] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port = local.rsplit(":", 1)
            if state == "0A" and int(port, 16) in ports:  # 0A: LISTEN
                raw = bytes.fromhex(address)
                four = [raw[i : i + 4][::-1] for i in range(0, len(raw), 4)]
                name = socket.inet_ntoa(four[0]) if len(raw) == 4 else socket.inet_ntop(socket.AF_INET6, b"".join(four))
                found.setdefault(int(port, 16), []).append(name)
    return found


#: The Ray Train scenario (tests/test_ray.py), started when the session's collection holds its
#: tests: Ray spends most of its minutes waiting (actors starting, polling), so it runs beside the
#: rest of the suite. It runs inside a private network with only loopback, as the launcher's jobs.
#: (Measured: started instead with the modules that run one process at a time, it made the suite
#: 53 s longer.)
RAY_CASES = ("keras3", "tf_keras", "doc", "example", "data", "jax", "restart")  # restart last: its worker errors are expected
_RAY: dict[str, Any] = {}


@pytest.hookimpl(tryfirst=True)  # before -m reads the markers
def pytest_collection_modifyitems(config, items):
    """Each test is marked ``tensorflow`` where it uses a fixture of :data:`TIER_FIXTURES`, and
    ``unit`` otherwise. ``python -m pytest`` alone (no test paths, no ``-m``) leaves out the
    differential tier (the ``differential`` marker; ``python -m pytest -m differential`` runs it):
    the suite stays under 25 minutes. Named files or test ids run whatever their markers."""
    for item in items:
        heavy = set(TIER_FIXTURES) & set(getattr(item, "fixturenames", ()))
        item.add_marker(pytest.mark.tensorflow if heavy else pytest.mark.unit)
    given = [arg for arg in config.invocation_params.args if not str(arg).startswith("-")]
    if config.option.markexpr or any(Path(str(arg).split("::")[0]).exists() for arg in given):
        return
    kept = [item for item in items if item.get_closest_marker("differential") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


#: Scenario runs that start when the session's tests are collected, each for the module fixture that
#: would otherwise wait on it alone (``keras_bugs.py``: about 150 s of the suite's wall time, measured
#: with ``--durations``; the suite keeps the 2 cores about 60% busy, and these fill the rest): the
#: script, the test module, and the fixture of that module that reads it (:func:`early_scenario`).
EARLY_SCENARIOS = (("keras_bugs.py", "test_keras_compat.py", "upstream"),)
_EARLY: dict[str, subprocess.Popen] = {}


def early_scenario(script: str, timeout: float) -> dict[str, Any]:
    """The ``RESULT`` of ``script`` (:data:`EARLY_SCENARIOS`): the run started at collection, or one
    started now where the session started none (a test run alone)."""
    proc = _EARLY.pop(script, None) or start_scenario(script)
    return scenario_result(proc, timeout)


def pytest_collection_finish(session):
    """The background runs start for the tests selected that use them: the Ray scenario and the
    :data:`EARLY_SCENARIOS` now (their tests use the fixture ``ray_run``, or the module's fixture),
    the Kubernetes pods at the first test that mostly waits (:func:`mostly_waits`; their test uses
    :func:`kubernetes_pods`)."""
    if any("ray_run" in item.fixturenames for item in session.items):
        start_ray_scenario()
    for script, module, fixture in EARLY_SCENARIOS:
        if any(item.path.name == module and fixture in item.fixturenames for item in session.items):
            _EARLY[script] = start_scenario(script)
    _PODS_WANTED.extend(item for item in session.items if "kubernetes_pods" in item.fixturenames)


@pytest.fixture
def mostly_waits(processes):
    """For a test that mostly waits (failures, peer and stall timeouts, with bounds far above what it
    waits for): when the session runs the Kubernetes pods' test, the pods start at the first such
    test and run in its idle time; the pods' own test collects them later (or starts them, when
    no such test runs)."""
    if _PODS_WANTED:
        start_kubernetes_pods()


#: The Kubernetes pod-side run (tests/test_pods_on_kubernetes.py): four jobs' pods (2 workers, one
#: of them SIGTERMed and restarted; 3 workers; a JobSet of 2 workers; a chief, 2 workers and a
#: parameter server), each under the security context its manifest sets, and one process alone,
#: beside the suite.
_PODS_WANTED: list[Any] = []
KUBERNETES_CASES = [
    {"name": "k2", "workers": 2, "port": 2222, "kill_at": {"1": 9}},
    {"name": "k3", "workers": 3, "port": 2300},
    {"name": "kj", "workers": 2, "port": 2400, "jobset": True},
    {"name": "kp", "workers": 2, "ps": 1, "port": 2500},
]
_PODS: dict[str, Any] = {}


@pytest.fixture
def kubernetes_pods(processes) -> dict[str, Any]:
    """The pod-side run (:func:`start_kubernetes_pods`), started now unless a test that mostly waits
    started it already."""
    return start_kubernetes_pods()


def start_kubernetes_pods() -> dict[str, Any]:
    """The running pod-side run (started once): ``{"proc", "folder"}``."""
    if not _PODS:
        folder = tempfile.mkdtemp(prefix="kubernetes-pods-")
        args = [sys.executable, str(SCENARIOS / "kubernetes_pods.py"), folder, json.dumps(KUBERNETES_CASES)]
        outputs = (tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+"))
        # its own session: the pods go with it (os.killpg) when the session ends first
        proc = subprocess.Popen(args, env=subprocess_env(PODS_TIMEOUT="420"), stdout=outputs[0], stderr=outputs[1], text=True, cwd=ROOT, start_new_session=True)
        proc.outputs, proc.label = outputs, "kubernetes_pods.py"  # type: ignore[attr-defined]
        _PODS.update(folder=folder, proc=proc)
    return _PODS


def pytest_sessionfinish(session):
    """The Ray scenario, the early scenarios and the pods never outlive the session (a run stopped
    before its tests waited for them)."""
    for proc in _EARLY.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    proc = _RAY.get("proc")
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, 9)
        proc.wait()
    if _RAY.get("network") is not None:
        _RAY["network"].close()
    if _PODS:
        try:
            os.killpg(_PODS["proc"].pid, 9)  # the driver and any pod left (the driver may have been killed alone)
        except ProcessLookupError:
            pass
        _PODS["proc"].wait()
        shutil.rmtree(_PODS["folder"], ignore_errors=True)


def start_ray_scenario() -> dict[str, Any]:
    """The running Ray scenario (started once): ``{"proc", "network", "why"}``."""
    if not _RAY:
        import time

        from autodist.jobs.netns import PrivateNetwork

        network, why = PrivateNetwork.create(timeout=30)
        _RAY.update(network=network, why=why, started=time.monotonic(), proc=None)
        if network is not None:
            import tempfile

            argv, fds = network.command([sys.executable, str(SCENARIOS / "ray_train.py"), *RAY_CASES])
            _RAY["log"] = tempfile.TemporaryFile(mode="w+")  # Ray's worker logs outgrow a pipe nobody reads yet
            _RAY["proc"] = subprocess.Popen(argv, pass_fds=fds, env=subprocess_env(), stdout=_RAY["log"], stderr=subprocess.STDOUT, text=True, cwd=ROOT, start_new_session=True)
    return _RAY


def ray_scenario_output(timeout: float) -> tuple[int, str]:
    """Wait for the Ray scenario (killed when it overruns ``timeout``): its exit code and output."""
    proc = _RAY["proc"]
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the driver and the Ray processes it started
        proc.wait()
    _RAY["log"].seek(0)
    return proc.returncode, _RAY["log"].read()
