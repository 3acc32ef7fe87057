"""Helpers shared by the scenarios that compare autodist with plain Keras in one process."""

from __future__ import annotations

import contextlib

import tensorflow as tf


@contextlib.contextmanager
def plain():
    """No strategy current: what the same script does without autodist (autodist made one
    current at import). Reference models are built and trained in here."""
    current = tf.distribute.get_strategy()
    tf.distribute.experimental_set_strategy(None)
    try:
        yield
    finally:
        tf.distribute.experimental_set_strategy(current)
