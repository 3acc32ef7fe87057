"""Ray Train, autodist's side of it: each epoch's metrics and checkpoints reported to Ray, with
autodist's saves inside, and a Ray Data shard read with the global batch. Whether this process is
a Ray Train worker is detection's (:mod:`autodist.detection.ray_train`, asked like every other
cluster manager); a JAX worker group joining is the JAX runtime's. Ray itself is imported only
inside a Ray Train worker, where it is imported already.
"""
