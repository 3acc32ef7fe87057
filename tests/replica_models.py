"""Keras models and layers for tests/test_replica_differences.py: what autodist reads from a real model
(imported by the tests that run Keras, so that collecting that file imports no TensorFlow)."""

from __future__ import annotations

import keras


def compiled(model):
    model.compile(optimizer="sgd", loss="mse")
    return model


class Sampling(keras.layers.Layer):
    """keras.io's VAE sampling layer: it owns a SeedGenerator."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        return inputs + keras.random.normal(keras.ops.shape(inputs), seed=self.seed_generator)


class NoisyStep(keras.Model):
    """The guide's GAN pattern: the model itself owns a SeedGenerator, and its own test_step."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.seed_generator = keras.random.SeedGenerator(1)

    def call(self, inputs):
        return self.dense(inputs)

    def test_step(self, data):
        return {}


class OwnLoss(keras.Model):
    def compute_loss(self, *args, **kwargs):
        return super().compute_loss(*args, **kwargs)


class ScalesItself(keras.Model):
    """A step written for a strategy: it records its loss times the replicas, as autodist's
    earlier warning advised."""

    def train_step(self, data):
        return {"loss": 1.0 * self.distribute_strategy.num_replicas_in_sync}


class TensorFlowSampling(keras.layers.Layer):
    """keras.io's VAE sampling layer as the TensorFlow example writes it: ``tf.random.normal``."""

    def call(self, inputs):
        import tensorflow as tf

        z_mean, z_log_var = inputs
        epsilon = tf.random.normal(shape=(tf.shape(z_mean)[0], tf.shape(z_mean)[1]))
        return z_mean + tf.exp(0.5 * z_log_var) * epsilon


class TensorFlowNoiseStep(keras.Model):
    """A GAN's train_step drawing its noise with TensorFlow (wgan_gp's way)."""

    def train_step(self, data):
        import tensorflow as tf

        noise = tf.random.normal(shape=(4, 2))
        return {"noise": tf.reduce_mean(noise)}


class StatelessDraws(keras.layers.Layer):
    def call(self, inputs):
        import tensorflow as tf

        return inputs + tf.random.stateless_normal(tf.shape(inputs), seed=(1, 2))


class BatchDot(keras.Model):
    """keras.io's collaborative filtering model: ``ops.tensordot(users, movies, 2)`` sums over the
    whole batch, so each sample's output depends on the rest of its batch."""

    def __init__(self):
        super().__init__()
        self.users = keras.layers.Embedding(10, 4, embeddings_initializer="he_normal")
        self.movies = keras.layers.Embedding(10, 4, embeddings_initializer="he_normal")
        self.bias = keras.layers.Embedding(10, 1)

    def call(self, inputs):
        dot = keras.ops.tensordot(self.users(inputs[:, 0]), self.movies(inputs[:, 1]), 2)
        return keras.ops.sigmoid(dot + self.bias(inputs[:, 0]))
