"""autodist.fit inside Ray Train: a local Ray cluster, 2 workers, the result read back.

    pip install "autodist[ray]"
    python examples/ray_train.py

Ray starts the workers and sets each one's TF_CONFIG; in each worker, `autodist.fit` trains
MultiWorkerMirrored across them (the plan's reasons say "TF_CONFIG from Ray Train"), divides the
global batch over the workers, reports each epoch's metrics to Ray, and worker 0's model goes with
each report as a ray.train.Checkpoint. The driver reads them from Ray's Result. docs/ray.md says
what Ray opens on a real cluster, and how to keep it private.
"""

import argparse
import tempfile

import autodist  # first, in the driver as in the workers
import numpy as np
import ray
from ray.train import RunConfig, ScalingConfig
from ray.train.tensorflow import TensorflowTrainer


def train_loop(config):
    """Runs in each Ray Train worker."""
    import keras

    def build():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
        return model

    rng = np.random.default_rng(0)
    x = rng.normal(size=(1024, 4)).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [3.0], [0.5]], dtype="float32")
    autodist.fit(build, x, y, batch_size=config["batch_size"], epochs=config["epochs"], verbose=0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--storage-path", default=None, help="where Ray keeps the run (default: a new temporary folder)")
    args = parser.parse_args()
    if not ray.is_initialized():
        # A local cluster on this machine, on loopback only (docs/ray.md: on a real cluster, Ray's own settings).
        ray.init(num_cpus=args.workers, _node_ip_address="127.0.0.1", include_dashboard=False)
    trainer = TensorflowTrainer(
        train_loop,
        train_loop_config={"batch_size": 64, "epochs": args.epochs},
        scaling_config=ScalingConfig(num_workers=args.workers),
        run_config=RunConfig(storage_path=args.storage_path or tempfile.mkdtemp(prefix="ray-results-"), name="autodist-example"),
    )
    result = trainer.fit()
    print(f"ray_train: loss {result.metrics['loss']:.4f} after epoch {result.metrics['epoch'] + 1} of {args.epochs}; "
          f"worker 0's model in {result.checkpoint.path}")
    return result


if __name__ == "__main__":
    main()
