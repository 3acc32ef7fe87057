"""A custom training loop under the chosen strategy, with the loss averaged over the GLOBAL batch.

Run:  AUTODIST_CPU_DEVICES=2 python examples/custom_loop.py
"""

import autodist
import keras
import tensorflow as tf
from autodist.demo import load_digits


@autodist.distributed(batch_size=64)
def train(plan, strategy, epochs=5):
    x, y = load_digits()
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
    optimizer = keras.optimizers.Adam(1e-2)
    # Keras 3: create the optimizer's slots here, in the scope. Left to the first apply_gradients
    # inside strategy.run, Adam fails under Mirrored ("You must feed a value for placeholder").
    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(2048, seed=0).batch(plan.global_batch_size)
    batches = strategy.experimental_distribute_dataset(dataset)

    @tf.function
    def step(batch):
        def replica_step(inputs):
            features, labels = inputs
            with tf.GradientTape() as tape:
                # Divides by the step's global batch (this replica's share x 2), as tf.nn does.
                loss = autodist.compute_average_loss(loss_fn(labels, model(features, training=True)))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        return strategy.reduce("SUM", strategy.run(replica_step, args=(batch,)), axis=None)

    for epoch in range(epochs):
        losses = [float(step(batch)) for batch in batches]
        print(f"epoch {epoch + 1}: loss {sum(losses) / len(losses):.4f}")
    accuracy = float(tf.reduce_mean(tf.cast(tf.argmax(model(x), axis=1) == y, tf.float32)))
    print(f"{plan.strategy.value} x {plan.num_replicas}: train accuracy {accuracy:.3f}")
    return accuracy


if __name__ == "__main__":
    train()
