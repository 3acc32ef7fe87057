"""Plan: a snapshot, a model's facts and the settings in; a :class:`~autodist.planning.plans.Plan` out.

Pure: the planner reads no machine (:mod:`autodist.core.detect_and_plan` is the one edge that detects,
then plans). Nothing here imports TensorFlow, Keras or JAX at module level.
"""
