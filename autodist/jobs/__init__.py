"""Jobs: the processes around training: the local launcher and its flags, each task's layout and
private network, the exit codes a task and its launcher agree on, the launcher's heartbeat, the
user's private folders, and the ``tune`` decisions kept there. Nothing here imports TensorFlow,
Keras or JAX at module level.
"""
