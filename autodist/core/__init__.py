"""The backend-neutral core of ``fit``, which TensorFlow's folder and JAX's both use: the frozen
call and the backend seam, the one detect-then-plan, the global batch requested and applied to
the input, the compile settings for one ``fit``, the final callback list, and the watch that
calls a backend back once its framework is imported. Nothing here imports JAX.
"""
