"""Detection: probes replaced one at a time; the runtime never started; the environment never written."""

from __future__ import annotations

import json
import sys
import types

import pytest

import autodist
from autodist.detection import hardware
from autodist.detection.hardware import GpuInfo, HardwareSnapshot, detect
from tests.conftest import run_python, subprocess_env

H100 = GpuInfo("NVIDIA H100 80GB HBM3", 85_520_809_984, "9.0")


def test_snapshot_round_trips_through_json():
    snap = detect(fast=True)
    assert HardwareSnapshot.from_dict(json.loads(json.dumps(snap.to_dict()))) == snap
    for key in ("tensorflow_version", "keras_version", "keras_flavor", "num_cpus", "host_memory_bytes", "gpus", "tpu", "cluster"):
        assert key in snap.to_dict()


def test_detect_reads_real_cpu_and_memory():
    snap = detect(fast=True)
    assert snap.num_cpus >= 1
    assert snap.host_memory_bytes and snap.host_memory_bytes > 2**28
    assert snap.tensorflow_version and snap.keras_version


def test_detect_with_cluster_and_cpu_devices_from_given_environ():
    env = {
        "TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}}),
        "AUTODIST_CPU_DEVICES": "3",
    }
    snap = detect(env, fast=True)
    assert snap.cluster.num_workers == 2 and not snap.cluster.is_chief
    assert snap.num_cpu_devices == 3


def test_nvml_gpus_merged_with_what_tensorflow_sees(monkeypatch):
    monkeypatch.setattr(hardware, "nvml_gpus", lambda: [H100, H100])
    monkeypatch.setattr(hardware, "tensorflow_gpus", lambda: [GpuInfo("/physical_device:GPU:0", None, "9.0")] * 2)
    monkeypatch.setattr(hardware, "tensorflow_cuda_build", lambda: True)
    snap = detect({})
    assert [g.memory_bytes for g in snap.gpus] == [H100.memory_bytes] * 2
    assert snap.gpus[0].name == H100.name and snap.num_driver_gpus == 2 and snap.num_tensorflow_gpus == 2
    assert autodist.plan(snap, num_params=1000).strategy.value == "mirrored"
    assert not snap.diagnostics


def test_cuda_visible_devices_applies_to_driver_list(monkeypatch):
    small = GpuInfo("NVIDIA T4", 16 * 2**30, "7.5")
    monkeypatch.setattr(hardware, "nvml_gpus", lambda: [H100, small])
    snap = detect({"CUDA_VISIBLE_DEVICES": "1"}, fast=True)
    assert snap.gpus == (small,)


@pytest.mark.parametrize(
    "cuda_build, phrase",
    [(False, "pip uninstall tensorflow-cpu"), (True, "tensorflow[and-cuda]")],
)
def test_driver_sees_gpus_but_tensorflow_does_not(monkeypatch, cuda_build, phrase):
    monkeypatch.setattr(hardware, "nvml_gpus", lambda: [H100])
    monkeypatch.setattr(hardware, "tensorflow_gpus", lambda: [])
    monkeypatch.setattr(hardware, "tensorflow_cuda_build", lambda: cuda_build)
    snap = detect({})
    assert snap.gpus == ()
    assert any("sees 1 GPU(s) but TensorFlow sees none" in d and phrase in d for d in snap.diagnostics)


def test_nvml_probe_reads_the_driver(monkeypatch):
    """The probe's parsing, against a stand-in pynvml module (there is no driver here)."""
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=150_000_000_000),
        nvmlDeviceGetCudaComputeCapability=lambda h: (9, 0),
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert hardware.nvml_gpus() == [GpuInfo("NVIDIA H200", 150_000_000_000, "9.0")]


@pytest.mark.parametrize("failure", ["no library", "no driver"])
def test_nvml_probe_without_a_driver_is_none(monkeypatch, failure):
    """pynvml missing, or its nvmlInit failing as it does without a driver: no GPUs from the driver."""
    if failure == "no library":
        monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    else:
        class DriverNotLoaded(Exception):
            pass

        def init():
            raise DriverNotLoaded("NVML Shared Library Not Found")

        monkeypatch.setitem(sys.modules, "pynvml", types.SimpleNamespace(nvmlInit=init))
    assert hardware.nvml_gpus() is None


@pytest.mark.parametrize(
    "environ, source",
    [
        ({"TPU_NAME": "my-tpu"}, "TPU_NAME"),
        ({"COLAB_TPU_ADDR": "10.0.0.2:8470"}, "COLAB_TPU_ADDR"),
        ({"PJRT_DEVICE": "TPU"}, "PJRT_DEVICE"),
        ({"TPU_WORKER_ID": "0"}, "TPU_WORKER_ID"),
    ],
)
def test_tpu_from_environment(environ, source):
    tpu = hardware.tpu_environment(environ)
    assert tpu is not None and tpu.source == source


def test_tpu_from_device_files(monkeypatch):
    monkeypatch.setattr(hardware.glob, "glob", lambda pattern: ["/dev/accel0", "/dev/accel1"])
    assert hardware.tpu_environment({}).source == "/dev/accel0"


def test_no_tpu_here():
    assert hardware.tpu_environment({}) is None
    assert hardware.tpu_environment({"PJRT_DEVICE": "CPU"}) is None


def test_bad_cpu_devices_value():
    with pytest.raises(autodist.AutodistError, match="an integer from 1.*AUTODIST_CPU_DEVICES='two'"):
        detect({"AUTODIST_CPU_DEVICES": "two"}, fast=True)


def test_full_detect_starts_no_runtime_and_writes_no_environment(processes):
    """After detect(), logical devices can still be configured: the runtime has not started."""
    code = (
        "import os, json, autodist, tensorflow as tf\n"
        "before = dict(os.environ)\n"
        "snap = autodist.detect()\n"
        "from tensorflow.python.eager import context\n"
        "started = context.context()._context_handle is not None\n"
        "cpu = tf.config.list_physical_devices('CPU')[0]\n"
        "tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)\n"
        "print(json.dumps({'started': started, 'env_same': before == dict(os.environ),"
        " 'tf_gpus': snap.num_tensorflow_gpus, 'devices': len(tf.config.list_logical_devices('CPU'))}))\n"
    )
    proc = run_python(["-c", code], env=subprocess_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"started": False, "env_same": True, "tf_gpus": 0, "devices": 2}


def test_import_and_fast_detect_do_not_import_tensorflow(processes):
    code = "import sys, autodist; autodist.detect(fast=True); print('tensorflow' in sys.modules, 'keras' in sys.modules)"
    proc = run_python(["-c", code], env=subprocess_env(), timeout=60)
    assert proc.stdout.strip() == "False False", proc.stderr


@pytest.mark.parametrize("visible, expected", [("-1", 0), ("0,-1", 1), ("", 0), ("1,0", 2), ("GPU-8a3f", 2), ("5", 0)])
def test_cuda_visible_devices_as_cuda_reads_it(monkeypatch, visible, expected):
    monkeypatch.setattr(hardware, "nvml_gpus", lambda: [H100, H100])
    monkeypatch.setattr(hardware, "tensorflow_gpus", lambda: [])
    monkeypatch.setattr(hardware, "tensorflow_cuda_build", lambda: True)
    snap = detect({"CUDA_VISIBLE_DEVICES": visible}, fast=True)
    assert len(snap.gpus) == expected
    if expected == 0:  # GPUs hidden on purpose: no "reinstall TensorFlow" diagnosis
        assert not detect({"CUDA_VISIBLE_DEVICES": visible}).diagnostics


def test_snapshot_file_that_is_not_a_snapshot():
    with pytest.raises(autodist.AutodistError, match="missing keras_flavor, platform, num_cpus.*inspect --json"):
        HardwareSnapshot.from_dict({"gpus": []})
