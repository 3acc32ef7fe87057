"""Run, on Keras 3 with JAX: the processes joined, the plan's ``keras.distribution`` built, the
model placed on its mesh, each process's part of the input, and ``fit``. The JAX side of the
backend seam (:mod:`autodist.core.fit_call`).
"""
