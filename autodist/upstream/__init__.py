"""The upstream surface: every place autodist reads or replaces TensorFlow's, Keras's or JAX's
private code, in one room.

:mod:`autodist.upstream.surface` is the table a reader starts from: each touch, what it touches,
why, the releases it was measured on, its probe and its still-needed test (``probes`` holds how a
probe looks; ``versions``, the releases supported). The other modules hold the touches
themselves, grouped by what they touch:

- ``tf_runtime``: the eager context (the runtime's start, the coordination service, its key-value
  store, the global seed), the default strategy, a strategy's internals, SLURM's host lists;
- ``tf_hooks``: the wrappers the activation at import puts around TensorFlow (its triggers, the
  watch on the script's own strategies);
- ``tf_scopes``: other strategies' scopes and plain SavedModel loads while autodist's is current;
- ``tf_data``: a dataset's graph, read and serialised;
- ``keras_trainer``: Keras 3's TensorFlow trainer (the symbolic build, the per-replica reduce);
- ``keras_variables``: Keras 3's variables (their updates, their aggregation, BatchNormalization's
  statistics, random layers' seeds);
- ``keras_optimizer``: Keras 3.3-3.7's gradients under a strategy;
- ``keras_models``: what autodist reads of a model, its callbacks and its optimizer;
- ``jax_runtime``: JAX's backends and distributed client, Keras's JAX variables' layouts.

Each touch checks once that what it needs exists (:func:`autodist.upstream.surface.available`);
where it does not, that piece is off and one :class:`~autodist.errors.AutodistWarning` says which
and what changes. Nothing here imports TensorFlow, Keras or JAX at module level.
"""
