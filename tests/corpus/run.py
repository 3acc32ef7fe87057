"""Run one corpus program one way, as its author wrote it but for its data, and record what it
trained: ``python tests/corpus/run.py PROGRAM WAY OUT.json``.

WAY is ``plain`` (``model.fit`` on one device, no autodist), ``hand-built`` (the same program
with everything it creates inside a ``MirroredStrategy`` over 2 logical CPUs, the guide's way),
or ``autodist`` (the adopted text: ``import autodist`` first and ``x.fit(`` turned into
``autodist.fit(x, ``; ``AUTODIST_CPU_DEVICES`` says on how many devices).

Around the program, never in it:
- stand-ins for its data (``keras.datasets.*.load_data``): arrays of the real shapes and dtypes,
  ``CORPUS_SAMPLES`` training samples (default 256), drawn from a fixed seed;
- its epochs capped at ``CORPUS_EPOCHS`` (default 2), in ``Model.fit``, the same in every way;
- a record of each ``fit`` (History, and the model's weights after it), ``evaluate`` and
  ``predict`` the program makes (not those Keras makes inside ``fit``), and every
  ``AutodistWarning``;
- ``keras.utils.set_random_seed(0)`` before the program, so its ways draw the same numbers.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import warnings
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
PROGRAM, WAY, OUT = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
SAMPLES, EPOCHS = int(os.environ.get("CORPUS_SAMPLES", "256")), int(os.environ.get("CORPUS_EPOCHS", "2"))
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

if WAY == "autodist":
    import autodist  # noqa: F401  (first, as the adopted text has it)
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

if WAY == "hand-built":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

RECORD: dict = {"way": WAY, "fits": [], "evaluates": [], "predicts": [], "warnings": []}
_DEPTH = [0]


def _images(shape, classes, dtype="uint8"):
    def load_data(*args, **kwargs):
        rng = np.random.default_rng(0)
        split = []
        for count in (SAMPLES, max(SAMPLES // 4, 8)):
            x = rng.integers(0, 256, size=(count, *shape)).astype(dtype)
            y = rng.integers(0, classes, size=(count,) if len(shape) == 2 else (count, 1)).astype("uint8")
            split.append((x, y))
        return tuple(split)

    return load_data


STAND_INS = {
    "mnist": _images((28, 28), 10),
    "fashion_mnist": _images((28, 28), 10),
    "cifar10": _images((32, 32, 3), 10),
}


def install_stand_ins() -> None:
    """Replace each dataset's ``load_data`` wherever Keras's public modules expose it."""
    originals = {name: getattr(__import__(f"keras.src.datasets.{name}", fromlist=["load_data"]), "load_data") for name in STAND_INS}
    for module in list(sys.modules.values()):
        for name, original in originals.items():
            if getattr(module, "load_data", None) is original:
                module.load_data = STAND_INS[name]


def _numbers(value) -> list:
    array = np.asarray(value, dtype="float64").ravel()
    return array.tolist()


def _summary(value) -> dict:
    leaves = [np.asarray(leaf, dtype="float64") for leaf in tf.nest.flatten(value)]
    return {"shapes": [list(leaf.shape) for leaf in leaves], "values": [leaf.ravel()[:64].tolist() for leaf in leaves],
            "means": [float(leaf.mean()) if leaf.size else 0.0 for leaf in leaves]}


def _recorded(name, record):
    original = getattr(keras.Model, name)

    def method(self, *args, **kwargs):
        if name == "fit" and kwargs.get("epochs", 1) > EPOCHS:
            kwargs["epochs"] = EPOCHS
        _DEPTH[0] += 1
        try:
            result = original(self, *args, **kwargs)
        finally:
            _DEPTH[0] -= 1
        if _DEPTH[0] == 0:
            record(self, result)
        return result

    setattr(keras.Model, name, method)


def _fit_record(model, history):
    weights = [np.asarray(w, dtype="float64") for w in model.get_weights()]
    RECORD["fits"].append({"history": {k: [float(v) for v in vs] for k, vs in history.history.items()},
                           "weights": [w.ravel()[:256].tolist() for w in weights],
                           "weight_norms": [float(np.sqrt((w ** 2).sum())) for w in weights],
                           "plan": str(getattr(getattr(history, "plan", None), "strategy", "") or "")})


_recorded("fit", _fit_record)
_recorded("evaluate", lambda model, result: RECORD["evaluates"].append(_numbers(result if not isinstance(result, dict) else list(result.values()))))
_recorded("predict", lambda model, result: RECORD["predicts"].append(_summary(result)))


def main() -> None:
    install_stand_ins()
    keras.utils.set_random_seed(0)
    text = PROGRAM.read_text()
    if WAY == "autodist":
        from tests.adoption import adopt

        text, _ = adopt(text)
    code = compile(text, str(PROGRAM), "exec")
    scope = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope() if WAY == "hand-built" else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if scope is not None:
                scope.__enter__()
            exec(code, {"__name__": "__main__", "__file__": str(PROGRAM)})
            RECORD["outcome"] = "ran"
        except Exception as err:  # the program's failure is what this way recorded
            name = type(err).__name__
            RECORD["outcome"] = f"{name}: {' '.join(str(err).split())[:300]}"
            RECORD["autodist_error"] = any(cls.__name__ == "AutodistError" for cls in type(err).__mro__)
            RECORD["traceback"] = traceback.format_exc()[-3000:]
    RECORD["warnings"] = sorted({str(w.message) for w in caught if type(w.message).__name__ == "AutodistWarning"})
    OUT.write_text(json.dumps(RECORD))


if __name__ == "__main__":
    main()
