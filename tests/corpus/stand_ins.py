"""The corpus programs' data, made here: what each program downloads or loads is replaced, around
the program and never in it, by synthetic data of the same shapes, dtypes and formats.

Three kinds of places a published program reads its data from:
- ``keras.datasets.<name>.load_data``: arrays as Keras returns them (``DATASETS``);
- a file: a URL given to ``keras.utils.get_file``, ``pandas.read_csv`` or ``numpy.loadtxt``, or a
  path on its author's machine given to ``open`` (``FILES``, by the file's name): a file of the
  real format written into the run's folder, and that path used instead;
- ``tensorflow_datasets.load``: a module of that name whose ``load`` builds ``tf.data`` datasets
  (``TFDS``).

``SAMPLES`` (the runner's ``CORPUS_SAMPLES``) sets how many training samples each gives; test
splits hold a quarter of that. Everything is drawn from a fixed seed, so every way of running a
program reads the same numbers.
"""

from __future__ import annotations

import builtins
import csv
import io
import os
import sys
import types
import zipfile
from pathlib import Path

import numpy as np

#: ``full``: each dataset's real sizes, for programs that write them into their text (a
#: ``reshape(60000, 784)``, a split at sample 30000).
FULL = os.environ.get("CORPUS_SAMPLES") == "full"
SAMPLES = 256 if FULL else int(os.environ.get("CORPUS_SAMPLES", "256"))
TEST = max(SAMPLES // 4, 8)
REAL = {
    "mnist": (60000, 10000),
    "fashion_mnist": (60000, 10000),
    "cifar10": (50000, 10000),
    "cifar100": (50000, 10000),
    "imdb": (25000, 25000),
    "boston_housing": (404, 102),
}


def _counts(name: str) -> tuple[int, int]:
    return REAL[name] if FULL else (SAMPLES, TEST)


FOLDER = Path("corpus-data").resolve()


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(sum(map(ord, name)))


# keras.datasets


def _images(name, shape, classes, label_shape=()):
    def load_data(*args, **kwargs):
        rng = _rng(name)
        return tuple(
            (
                rng.integers(0, 256, size=(count, *shape)).astype("uint8"),
                rng.integers(0, classes, size=(count, *label_shape)).astype("uint8"),
            )
            for count in _counts(name)
        )

    return load_data


def _imdb(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, **kwargs):
    rng, top = _rng("imdb"), num_words or 88587
    split = []
    for count in _counts("imdb"):
        lengths = rng.integers(10, min(maxlen or 400, 400), size=count)
        x = np.empty(count, dtype=object)
        x[:] = [[1] + rng.integers(max(skip_top, 2), top, size=n - 1).tolist() for n in lengths]
        split.append((x, rng.integers(0, 2, size=count).astype("int64")))
    return tuple(split)


def _boston_housing(path="boston_housing.npz", test_split=0.2, seed=113):
    rng = _rng("boston")
    return tuple(
        (rng.normal(10, 5, size=(count, 13)).astype("float64"), rng.uniform(5, 50, size=count).astype("float64"))
        for count in _counts("boston_housing")
    )


DATASETS = {
    "mnist": _images("mnist", (28, 28), 10),
    "fashion_mnist": _images("fashion_mnist", (28, 28), 10),
    "cifar10": _images("cifar10", (32, 32, 3), 10, (1,)),
    "cifar100": _images("cifar100", (32, 32, 3), 100, (1,)),
    "imdb": _imdb,
    "boston_housing": _boston_housing,
}


# Files, by name: each writer makes the file at the path it is given.


def _heart_csv(path: Path) -> None:
    rng = _rng("heart")
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(
            [
                "age",
                "sex",
                "cp",
                "trestbps",
                "chol",
                "fbs",
                "restecg",
                "thalach",
                "exang",
                "oldpeak",
                "slope",
                "ca",
                "thal",
                "target",
            ]
        )
        for _ in range(SAMPLES + TEST):
            writer.writerow(
                [
                    int(rng.integers(29, 78)),
                    int(rng.integers(0, 2)),
                    int(rng.integers(0, 5)),
                    int(rng.integers(94, 201)),
                    int(rng.integers(126, 565)),
                    int(rng.integers(0, 2)),
                    int(rng.integers(0, 3)),
                    int(rng.integers(71, 203)),
                    int(rng.integers(0, 2)),
                    round(float(rng.uniform(0, 6.2)), 1),
                    int(rng.integers(1, 4)),
                    int(rng.integers(0, 4)),
                    str(rng.choice(["fixed", "normal", "reversible"])),
                    int(rng.integers(0, 2)),
                ]
            )


def _ford_a(count: int):
    def write(path: Path) -> None:
        rng = _rng(path.name)
        rows = np.concatenate([rng.choice([-1.0, 1.0], size=(count, 1)), rng.normal(size=(count, 500))], axis=1)
        np.savetxt(path, rows, delimiter="\t", fmt="%.6f")

    return write


def _nab(path: Path) -> None:
    rng = _rng(path.name)
    steps = 4032  # the real files' 14 days of 5-minute steps: the program slides a day-long window
    stamps = np.datetime64("2014-04-01T00:00") + np.arange(steps) * np.timedelta64(5, "m")
    values = 20 + 60 * (np.sin(np.arange(steps) * 2 * np.pi / 288) > 0) + rng.normal(0, 2, size=steps)
    if "jumpsup" in path.name:  # the anomaly the program looks for: a day that jumps up
        values[1500:2500] += 400
    path.write_text(
        "timestamp,value\n" + "".join(f"{str(t).replace('T', ' ')}:00,{v:.6f}\n" for t, v in zip(stamps, values))
    )


def _text(path: Path) -> None:
    rng = _rng(path.name)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz   .,\n"))
    path.write_text("".join(rng.choice(letters, size=40 + 3 * SAMPLES)))


def _movielens_zip(path: Path) -> None:
    rng = _rng("movielens")
    rows = "".join(
        f"{int(rng.integers(1, 60))},{int(rng.integers(1, 200))},{float(rng.integers(1, 11)) / 2},{964982703 + i}\n"
        for i in range(SAMPLES)
    )
    movies = "".join(
        f'{i},"Movie {i} ({1950 + i % 70})",{"Comedy|Drama" if i % 2 else "Action"}\n' for i in range(1, 200)
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("ml-latest-small/ratings.csv", "userId,movieId,rating,timestamp\n" + rows)
        archive.writestr("ml-latest-small/movies.csv", "movieId,title,genres\n" + movies)


#: The Jena climate record's columns, as the file has them (keras.io's weather forecasting reads them by name).
JENA_COLUMNS = (
    "p (mbar)", "T (degC)", "Tpot (K)", "Tdew (degC)", "rh (%)", "VPmax (mbar)", "VPact (mbar)",
    "VPdef (mbar)", "sh (g/kg)", "H2OC (mmol/mol)", "rho (g/m**3)", "wv (m/s)", "max. wv (m/s)", "wd (deg)",
)  # fmt: skip


def _jena_zip(path: Path) -> None:
    """The Jena climate record, zipped: a row per 10 minutes. The program's validation part (28.5%
    of the rows) must hold 792 rows of offset and a 720-row window, so it needs over 5300 rows: 6000."""
    rng = _rng("jena")
    steps = 6000
    stamps = np.datetime64("2009-01-01T00:10") + np.arange(steps) * np.timedelta64(10, "m")
    day = np.sin(np.arange(steps) * 2 * np.pi / 144)
    base = np.array([990, 8, 280, 4, 75, 13, 9, 4, 6, 9, 1210, 2, 3, 175], dtype=float)
    values = base + np.outer(day, base * 0.05) + rng.normal(0, 0.5, size=(steps, len(base)))
    lines = ['"Date Time",' + ",".join(JENA_COLUMNS)]
    for stamp, row in zip(stamps, values):
        day_month_year = np.datetime_as_string(stamp, unit="s")
        date, clock = day_month_year.split("T")
        year, month, day_of = date.split("-")
        lines.append(f"{day_of}.{month}.{year} {clock}," + ",".join(f"{v:.2f}" for v in row))
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("jena_climate_2009_2016.csv", "\n".join(lines) + "\n")


def _mnist_npz(path: Path) -> None:
    (x_train, y_train), (x_test, y_test) = DATASETS["mnist"]()
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)


def _creditcard_csv(path: Path) -> None:
    rng = _rng("creditcard")
    lines = ['"Time","' + '","'.join(f"V{i}" for i in range(1, 29)) + '","Amount","Class"']
    for i in range(SAMPLES + TEST):
        fields = [float(i), *rng.normal(size=28), float(rng.uniform(0, 500))]
        lines.append(",".join(f"{v:.6f}" for v in fields) + f',"{int(rng.random() < 0.05)}"')
    path.write_text("\n".join(lines) + "\n")


def _adult(path: Path) -> None:
    """UCI Adult (census income): ``adult.data``, and ``adult.test`` with its odd first line and
    its labels ending in a dot, as the programs that read it expect."""
    rng, test = _rng(path.name), path.name == "adult.test"
    words = {
        "workclass": ["Private", "State-gov", "Self-emp-not-inc"],
        "education": ["Bachelors", "HS-grad", "Masters", "11th"],
        "marital_status": ["Never-married", "Divorced", "Married-civ-spouse"],
        "occupation": ["Adm-clerical", "Sales", "Exec-managerial"],
        "relationship": ["Husband", "Wife", "Not-in-family"],
        "race": ["White", "Black", "Other"],
        "gender": ["Male", "Female"],
        "native_country": ["United-States", "Cuba", "India"],
    }
    lines = ["|1x3 Cross validator"] if test else []
    for _ in range(TEST if test else SAMPLES):
        pick = {name: str(rng.choice(values)) for name, values in words.items()}
        label = str(rng.choice(["<=50K", ">50K"])) + ("." if test else "")
        fields = [
            int(rng.integers(17, 90)),
            pick["workclass"],
            int(rng.integers(12285, 1484705)),
            pick["education"],
            int(rng.integers(1, 17)),
            pick["marital_status"],
            pick["occupation"],
            pick["relationship"],
            pick["race"],
            pick["gender"],
            int(rng.integers(0, 5000)),
            int(rng.integers(0, 2000)),
            int(rng.integers(1, 99)),
            pick["native_country"],
            label,
        ]
        lines.append(", ".join(map(str, fields)))
    path.write_text("\n".join(lines) + "\n")


FILES = {
    "adult.data": _adult,
    "adult.test": _adult,
    "heart.csv": _heart_csv,
    "FordA_TRAIN.tsv": _ford_a(SAMPLES),
    "FordA_TEST.tsv": _ford_a(TEST),
    "art_daily_small_noise.csv": _nab,
    "art_daily_jumpsup.csv": _nab,
    "nietzsche.txt": _text,
    "ml-latest-small.zip": _movielens_zip,
    "mnist.npz": _mnist_npz,
    "creditcard.csv": _creditcard_csv,
    "jena_climate_2009_2016.csv.zip": _jena_zip,
}


def local(where) -> str | None:
    """The synthetic file that stands in for ``where`` (a URL, or a path that does not exist here),
    written on first use; ``None`` for anything else."""
    if not isinstance(where, (str, os.PathLike)):
        return None
    where = os.fspath(where)
    name = where.rstrip("/").rsplit("/", 1)[-1]
    remote = where.startswith(("http://", "https://"))
    mine = os.path.abspath(where).startswith(str(FOLDER))
    if name not in FILES or mine or not (remote or (os.path.isabs(where) and not os.path.exists(where))):
        return None
    FOLDER.mkdir(exist_ok=True)
    path = FOLDER / name
    if not path.exists():
        FILES[name](path)
    return str(path)


def _served(original, argument=0):
    def reader(*args, **kwargs):
        if len(args) > argument and (path := local(args[argument])):
            args = (*args[:argument], path, *args[argument + 1 :])
        return original(*args, **kwargs)

    return reader


def _get_file(fname=None, origin=None, *args, **kwargs):
    name = fname or (origin or "").rsplit("/", 1)[-1]
    if name in FILES:
        return local(f"https://stand-in/{name}")
    raise RuntimeError(
        f"the corpus has no stand-in for {origin or fname}: add its file to tests/corpus/stand_ins.py FILES"
    )


# tensorflow_datasets


class _Split:
    def __init__(self, count):
        self.num_examples = count


def _tfds_load(name, split=None, with_info=False, as_supervised=False, **kwargs):
    import tensorflow as tf

    if name not in ("mnist", "fashion_mnist"):
        raise RuntimeError(f"the corpus has no stand-in for tfds.load({name!r})")
    (x_train, y_train), (x_test, y_test) = DATASETS[name]()

    def dataset(x, y):
        x, y = x[..., None], y.astype("int64")
        return tf.data.Dataset.from_tensor_slices((x, y) if as_supervised else {"image": x, "label": y})

    splits = {"train": dataset(x_train, y_train), "test": dataset(x_test, y_test)}
    found = splits if split is None else (splits[split] if isinstance(split, str) else [splits[s] for s in split])
    info = types.SimpleNamespace(splits={"train": _Split(len(x_train)), "test": _Split(len(x_test))}, name=name)
    return (found, info) if with_info else found


TFDS = types.ModuleType("tensorflow_datasets")
TFDS.load = _tfds_load


def install() -> None:
    """Put every stand-in in place: the datasets' ``load_data`` wherever Keras's modules expose it,
    the file readers, and ``tensorflow_datasets``."""
    import keras
    import pandas

    originals = {name: __import__(f"keras.src.datasets.{name}", fromlist=["load_data"]).load_data for name in DATASETS}
    get_file = keras.utils.get_file
    for module in list(sys.modules.values()):
        for name, original in originals.items():
            if getattr(module, "load_data", None) is original:
                module.load_data = DATASETS[name]
        if getattr(module, "get_file", None) is get_file:
            module.get_file = _get_file
    pandas.read_csv = _served(pandas.read_csv)
    np.loadtxt = _served(np.loadtxt)
    builtins.open = _served(builtins.open)
    io.open = builtins.open
    sys.modules["tensorflow_datasets"] = TFDS
