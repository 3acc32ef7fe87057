"""Detect: what the machine, the cluster, the model and the data say.

Reads only: no ``os.environ`` write, no TPU connection, no TensorFlow runtime started. Nothing
here imports TensorFlow, Keras or JAX at module level.
"""
