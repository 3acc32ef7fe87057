"""Jobs: the processes around training: the local launcher, each task's layout and private
network, preemption and the agreement on the step to save, the saved state, private folders
and the launcher's heartbeat. Nothing here imports TensorFlow, Keras or JAX at module level.
"""
