"""Run a program as it is, on N logical CPUs (``python run_plain.py N PROGRAM ARGS...``): the
baseline the adopted forms are compared with. Nothing of autodist is imported."""

import runpy
import sys

import tensorflow as tf

count, program = int(sys.argv[1]), sys.argv[2]
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])
sys.argv = [program, *sys.argv[3:]]
runpy.run_path(program, run_name="__main__")
