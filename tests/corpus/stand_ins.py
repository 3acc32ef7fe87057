"""The corpus programs' data, made here: what each program downloads or loads is replaced, around
the program and never in it, by synthetic data of the same shapes, dtypes and formats.

Three kinds of places a published program reads its data from:
- ``keras.datasets.<name>.load_data``: arrays as Keras returns them (``DATASETS``);
- a file: a URL given to ``keras.utils.get_file``, ``pandas.read_csv``, ``numpy.loadtxt`` or
  ``urllib.request.urlretrieve``, or a path on its author's machine given to ``open`` (``FILES``,
  by the file's name; any photo by its suffix): a file of the real format written into the run's
  folder, and that path used instead; the shell commands that fetch and unpack it (``shell``);
- ``tensorflow_datasets.load``: a module of that name whose ``load`` builds ``tf.data`` datasets
  (``TFDS``);
- pretrained weights: a ``keras.applications`` model asked for its ImageNet weights is the same
  architecture with its own initial weights, drawn from the run's seed (``_untrained``), as if
  the weights file held them.

``SAMPLES`` (the runner's ``CORPUS_SAMPLES``) sets how many training samples each gives; test
splits hold a quarter of that. Everything is drawn from a fixed seed, so every way of running a
program reads the same numbers.
"""

from __future__ import annotations

import builtins
import csv
import functools
import inspect
import io
import os
import sys
import tarfile
import types
import urllib.request
import wave
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


def _petfinder_zip(path: Path) -> None:
    """PetFinder's mini table (the TensorFlow tutorials' structured data): its columns and their kinds of values."""
    rng = _rng("petfinder")
    words = {
        "Type": ["Cat", "Dog"],
        "Breed1": ["Tabby", "Domestic Medium Hair", "Mixed Breed", "Domestic Short Hair", "Terrier"],
        "Gender": ["Male", "Female"],
        "Color1": ["Black", "Brown", "Cream", "Gray", "Golden"],
        "Color2": ["White", "No Color", "Brown", "Cream"],
        "MaturitySize": ["Small", "Medium", "Large"],
        "FurLength": ["Short", "Medium", "Long"],
        "Vaccinated": ["Yes", "No", "Not Sure"],
        "Sterilized": ["Yes", "No", "Not Sure"],
        "Health": ["Healthy", "Minor Injury", "Serious Injury"],
    }
    header = ["Type", "Age", "Breed1", "Gender", "Color1", "Color2", "MaturitySize", "FurLength", "Vaccinated",
              "Sterilized", "Health", "Fee", "Description", "PhotoAmt", "AdoptionSpeed"]  # fmt: skip
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for _ in range(SAMPLES + 2 * TEST):
        row = {key: rng.choice(values) for key, values in words.items()}
        row.update(Age=int(rng.integers(1, 60)), Fee=int(rng.integers(0, 300)), PhotoAmt=int(rng.integers(0, 8)))
        row.update(Description="a friendly pet", AdoptionSpeed=int(rng.integers(0, 5)))
        writer.writerow([row[key] for key in header])
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("petfinder-mini/petfinder-mini.csv", out.getvalue())


def _flower_photos_tgz(path: Path) -> None:
    """The flowers photos, a folder per class of JPEG files, as ``image_dataset_from_directory`` reads them."""
    from PIL import Image

    rng = _rng("flower_photos")
    with tarfile.open(path, "w:gz") as archive:
        for i in range(SAMPLES + TEST):
            kind = ("daisy", "dandelion", "roses", "sunflowers", "tulips")[i % 5]
            image = io.BytesIO()
            Image.fromarray(rng.integers(0, 256, size=(120, 160, 3)).astype("uint8")).save(image, "JPEG")
            member = tarfile.TarInfo(f"flower_photos/{kind}/{i}.jpg")
            member.size = image.tell()
            image.seek(0)
            archive.addfile(member, image)
        licence = tarfile.TarInfo("flower_photos/LICENSE.txt")
        licence.size = 0
        archive.addfile(licence, io.BytesIO())


def _acl_imdb_tgz(path: Path) -> None:
    """The Large Movie Review Dataset: ``aclImdb/{train,test}/{pos,neg}/ID_STARS.txt``, a review a
    file, and the ``unsup`` folder the programs remove."""
    rng = _rng("aclImdb")
    words = np.array(["good", "bad", "film", "movie", "the", "a", "<br />"] + [f"word{i}" for i in range(4000)])
    with tarfile.open(path, "w:gz") as archive:
        for part, count in (("train", SAMPLES), ("test", TEST)):
            for i in range(count):
                label = ("pos", "neg")[i % 2]
                text = " ".join(rng.choice(words, size=int(rng.integers(60, 160)))).encode()  # a vocabulary of thousands
                member = tarfile.TarInfo(f"aclImdb/{part}/{label}/{i}_{7 if label == 'pos' else 2}.txt")
                member.size = len(text)
                archive.addfile(member, io.BytesIO(text))
        extra = tarfile.TarInfo("aclImdb/train/unsup/0_0.txt")
        extra.size = 4
        archive.addfile(extra, io.BytesIO(b"film"))
        for shown in ("6248_7", "1181_9"):  # the reviews the programs print
            extra = tarfile.TarInfo(f"aclImdb/train/pos/{shown}.txt")
            extra.size = 10
            archive.addfile(extra, io.BytesIO(b"great film"))


def _speech_commands_zip(path: Path) -> None:
    """Mini Speech Commands: a folder per word of one-second 16 kHz mono WAV files, and its README;
    the file the TensorFlow tutorial plays (``no/01bb6a2a_nohash_0.wav``) among them."""
    rng = _rng("speech")
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(SAMPLES + TEST):
            word = ("down", "go", "left", "no", "right", "stop", "up", "yes")[i % 8]
            sound = io.BytesIO()
            with wave.open(sound, "wb") as out:
                out.setnchannels(1), out.setsampwidth(2), out.setframerate(16000)
                out.writeframes(rng.integers(-3000, 3000, size=int(rng.integers(12000, 16001))).astype("<i2").tobytes())
            stem = "01bb6a2a" if i == 3 else f"{i:08x}"  # i == 3: the first "no"
            archive.writestr(f"mini_speech_commands/{word}/{stem}_nohash_0.wav", sound.getvalue())
        archive.writestr("mini_speech_commands/README.md", "Mini Speech Commands\n")



def _wav(rng: np.random.Generator, frames: int, rate: int = 16000) -> bytes:
    """A mono 16-bit PCM WAV file of ``frames`` noise frames at ``rate`` Hz."""
    sound = io.BytesIO()
    with wave.open(sound, "wb") as out:
        out.setnchannels(1), out.setsampwidth(2), out.setframerate(rate)
        out.writeframes(rng.integers(-3000, 3000, size=frames).astype("<i2").tobytes())
    return sound.getvalue()


def _speakers_zip(path: Path) -> None:
    """The speaker recognition recordings (Kaggle's ``speaker-recognition-dataset.zip``):
    ``16000_pcm_speeches/SPEAKER/N.wav``, one-second 16 kHz clips of five speakers, and the
    background noise (``_background_noise_``, ``other``): longer 16 kHz recordings."""
    rng = _rng("speakers")
    speakers = ("Benjamin_Netanyau", "Jens_Stoltenberg", "Julia_Gillard", "Magaret_Tarcher", "Nelson_Mandela")
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(SAMPLES + TEST):
            archive.writestr(f"16000_pcm_speeches/{speakers[i % 5]}/{i // 5}.wav", _wav(rng, 16000))
        for folder, name in (("_background_noise_", "running_tap.wav"), ("_background_noise_", "pink_noise.wav"),
                             ("other", "exercise_bike.wav"), ("other", "doing_the_dishes.wav")):  # fmt: skip
            archive.writestr(f"16000_pcm_speeches/{folder}/{name}", _wav(rng, 16000 * 8))


def _ljspeech_tbz(path: Path) -> None:
    """LJSpeech (``LJSpeech-1.1.tar.bz2``): ``LJSpeech-1.1/wavs/LJ001-NNNN.wav``, 22.05 kHz mono
    clips, and ``metadata.csv``: a clip's ID, its transcript and the normalized one, ``|``-separated."""
    rng = _rng("ljspeech")
    words = ("the", "printing", "press", "in", "only", "sense", "with", "which", "we", "are", "at", "present", "concerned")
    rows, files = [], {}
    for i in range(SAMPLES + TEST):
        clip = f"LJ001-{i + 1:04d}"
        text = " ".join(rng.choice(words, size=int(rng.integers(3, 12)))).capitalize() + "."
        rows.append(f"{clip}|{text}|{text}")
        files[f"LJSpeech-1.1/wavs/{clip}.wav"] = _wav(rng, int(rng.integers(22050, 33075)), rate=22050)
    files["LJSpeech-1.1/metadata.csv"] = ("\n".join(rows) + "\n").encode()
    files["LJSpeech-1.1/README"] = b"LJ Speech Dataset\n"
    with tarfile.open(path, "w:bz2") as archive:
        for name, data in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))

def _jpeg(rng: np.random.Generator, shape=(120, 160, 3)) -> bytes:
    from PIL import Image

    image = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, size=shape).astype("uint8")).save(image, "JPEG")
    return image.getvalue()


def _image_folders_zip(folders: dict[str, int], shown: tuple[str, ...] = ()):
    """A zip of JPEG files, ``count`` in each of ``folders`` (``PetImages/Cat``: count), and the
    files a program opens by name (``shown``)."""

    def write(path: Path) -> None:
        rng = _rng(path.name)
        with zipfile.ZipFile(path, "w") as archive:
            for folder, count in folders.items():
                for i in range(count):
                    archive.writestr(f"{folder}/{i}.jpg", _jpeg(rng))
            for name in shown:
                archive.writestr(name, _jpeg(rng))

    return write


def _auto_mpg(path: Path) -> None:
    """UCI Auto MPG: whitespace-separated columns, ``?`` for a missing horsepower, a tab, then the car's name."""
    rng = _rng("auto-mpg")
    lines = []
    for i in range(SAMPLES + TEST):
        horsepower = "?" if i % 50 == 7 else f"{rng.uniform(46, 230):.1f}"
        fields = (f"{rng.uniform(9, 46):.1f}", str(rng.choice([4, 6, 8])), f"{rng.uniform(68, 455):.1f}", horsepower,
                  f"{rng.uniform(1613, 5140):.1f}", f"{rng.uniform(8, 25):.1f}", str(rng.integers(70, 83)),
                  str(rng.integers(1, 4)))  # fmt: skip
        lines.append("   ".join(fields) + f'\t"car {i}"')
    path.write_text("\n".join(lines) + "\n")


def _higgs_gz(path: Path) -> None:
    """HIGGS: a label and 28 features a row, gzipped CSV. The tutorial keeps its first 1000 rows for
    validation and trains on the next rows: 1000 and the training samples."""
    import gzip

    rng = _rng("higgs")
    rows = rng.normal(size=(1000 + SAMPLES, 29))
    rows[:, 0] = rng.integers(0, 2, size=len(rows))
    with gzip.open(path, "wt") as out:
        out.writelines(",".join(f"{v:.6e}" for v in row) + "\n" for row in rows)


def _fra_eng_zip(path: Path) -> None:
    """The Anki English-French pairs: ``fra.txt``, a line per pair, tab-separated, with its attribution."""
    rng = _rng("fra-eng")
    english, french = ["Go", "Run", "Help", "Stop", "Wait", "I see", "Hello"], ["Va", "Cours", "Aide", "Arrete", "Attends", "Je vois", "Salut"]
    lines = []
    for i in range(SAMPLES):
        a, b = rng.integers(0, len(english), size=2)
        lines.append(f"{english[a]} {english[b].lower()}.\t{french[a]} {french[b].lower()} !\tCC-BY 2.0 (France) #{i}")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("fra.txt", "\n".join(lines) + "\n")
        archive.writestr("_about.txt", "Tatoeba\n")


def _png(array: np.ndarray) -> bytes:
    from PIL import Image

    image = io.BytesIO()
    Image.fromarray(array).save(image, "PNG")
    return image.getvalue()


def _tar_of(path: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))


def _pet_names() -> list[str]:
    """keras.io's segmentation keeps its last 1000 images for validation: 1000 more than it trains on."""
    return [f"{('Abyssinian', 'beagle', 'Bengal', 'boxer')[i % 4]}_{i}" for i in range(SAMPLES + 1000)]


def _pets_images(path: Path) -> None:
    """The Oxford-IIIT Pet images: ``images/BREED_N.jpg``."""
    rng = _rng("pets-images")
    _tar_of(path, {f"images/{name}.jpg": _jpeg(rng, (60, 80, 3)) for name in _pet_names()})


def _pets_annotations(path: Path) -> None:
    """Their trimaps: ``annotations/trimaps/BREED_N.png``, each pixel 1 (pet), 2 (background) or 3 (border)."""
    rng = _rng("pets-annotations")
    trimap = lambda: _png(rng.integers(1, 4, size=(60, 80)).astype("uint8"))  # noqa: E731
    _tar_of(path, {f"annotations/trimaps/{name}.png": trimap() for name in _pet_names()})


def _captcha_zip(path: Path) -> None:
    """Captcha images: ``captcha_images_v2/TEXT.png``, 200x50, each named by its five characters."""
    rng, characters = _rng("captcha"), np.array(list("2345678bcdefgmnpwxy"))
    with zipfile.ZipFile(path, "w") as archive:
        for _ in range(SAMPLES + TEST):
            text = "".join(rng.choice(characters, size=5))
            image = rng.integers(0, 256, size=(50, 200, 4)).astype("uint8")
            archive.writestr(f"captcha_images_v2/{text}.png", _png(image))


def _bsds500_tgz(path: Path) -> None:
    """The Berkeley Segmentation Dataset's images: ``BSR/BSDS500/data/images/{train,val,test}/N.jpg``."""
    rng = _rng("bsds500")
    parts = {"train": SAMPLES, "val": TEST, "test": TEST}
    _tar_of(path, {f"BSR/BSDS500/data/images/{part}/{i}.jpg": _jpeg(rng) for part, n in parts.items() for i in range(n)})


def _lol_zip(path: Path) -> None:
    """The LoL low-light pairs: ``lol_dataset/{our485,eval15}/{low,high}/N.png``. Its programs split
    ``our485`` at image 300 or 400, so it holds its real 485 pairs: smooth pictures, small as PNG."""
    rng = _rng("lol")
    smooth = lambda: np.kron(rng.integers(0, 256, size=(17, 17, 3)), np.ones((8, 8, 1))).astype("uint8")  # noqa: E731
    with zipfile.ZipFile(path, "w") as archive:
        for part, count in (("our485", 485), ("eval15", 15)):
            for i in range(count):
                archive.writestr(f"lol_dataset/{part}/high/{i}.png", _png(smooth()))
                archive.writestr(f"lol_dataset/{part}/low/{i}.png", _png(smooth() // 4))


def _movielens_1m_zip(path: Path) -> None:
    """MovieLens 1M: ``ml-1m/{users,movies,ratings}.dat``, fields separated by ``::``."""
    rng = _rng("ml-1m")
    genres = ["Action", "Adventure", "Animation", "Children's", "Comedy", "Crime", "Documentary", "Drama", "Fantasy",
              "Film-Noir", "Horror", "Musical", "Mystery", "Romance", "Sci-Fi", "Thriller", "War", "Western"]  # fmt: skip
    users = [f"{u}::{rng.choice(['F', 'M'])}::{rng.choice([1, 18, 25, 35, 45, 50, 56])}::{rng.integers(0, 21)}::{10000 + u}"
             for u in range(1, 101)]  # fmt: skip
    movies = [f"{m}::Movie {m} ({1950 + m % 50})::{'|'.join(rng.choice(genres, size=2, replace=False))}" for m in range(1, 201)]
    ratings = [f"{u}::{m}::{rng.integers(1, 6)}::{978300000 + 60 * i}"
               for i, (u, m) in enumerate((u, m) for u in range(1, 101) for m in rng.choice(range(1, 201), size=20, replace=False))]  # fmt: skip
    with zipfile.ZipFile(path, "w") as archive:
        for name, lines in (("users", users), ("movies", movies), ("ratings", ratings)):
            archive.writestr(f"ml-1m/{name}.dat", "\n".join(lines) + "\n")


def _imagenet_class_index(path: Path) -> None:
    """``keras.applications``' class index (what ``decode_predictions`` reads): 1000 classes."""
    import json

    path.write_text(json.dumps({str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}))


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


def _ecg_csv(path: Path) -> None:
    """The ECG5000 heartbeats (``ecg.csv``, no header): 140 readings and a label (1.0 normal, 0.0
    abnormal), in the file's ``%.7e`` floats."""
    rng = _rng("ecg")
    beat = np.sin(np.linspace(0, 6 * np.pi, 140))
    lines = []
    for _ in range(SAMPLES + TEST):
        normal = rng.random() < 0.6
        readings = beat * (1.0 if normal else -0.5) + rng.normal(scale=0.3, size=140)
        lines.append(",".join(f"{v:.7e}" for v in [*readings, float(normal)]))
    path.write_text("\n".join(lines) + "\n")


#: The EEG recordings' labels (the NeuroSky "synchronized brainwave" table): the tasks and their
#: numbered parts, which keras.io's classifier collates, and the two it removes.
EEG_LABELS = (
    "relax", "music", "blink1", "blink4", "math1", "math7", "math12", "video-ver1", "video-ver2",
    "thinkOfItems-ver1", "thinkOfItemsInstruction-ver2", "colorRound1-1", "colorRound3-6",
    "colorInstruction1", "readyRound2", "colorRound5-4", "instruction",
)


def _eeg_csv(path: Path) -> None:
    """The EEG recordings (``eeg-data.csv``): a row per second of one subject's task, its 512 raw
    readings as a JSON list, the sensor's signal quality (0 best, 200 worst), its label, and the
    table's other columns (pandas' index column ``Unnamed: 0`` among them)."""
    rng = _rng("eeg")
    columns = (
        "id", "indra_time", "browser_latency", "reading_time", "attention_esense", "meditation_esense",
        "eeg_power", "raw_values", "signal_quality", "createdAt", "updatedAt", "label",
    )
    with path.open("w", newline="") as out:
        rows = csv.writer(out)
        rows.writerow(["", *columns])
        count = SAMPLES + TEST
        for i in range(count + count // 8):
            label = "unlabeled" if i % 17 == 5 else "everyone paired" if i % 29 == 7 else EEG_LABELS[i % len(EEG_LABELS)]
            readings = (rng.normal(0, 40, size=512) + 30 * np.sin(np.arange(512) * (1 + i % 5) / 20)).astype(int)
            stamp = f"2015-05-09 23:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000:03d}"
            rows.writerow([
                i, int(rng.integers(1, 31)), stamp, int(rng.integers(1, 3000)), int(rng.integers(10, 2000)),
                int(rng.integers(0, 100)), int(rng.integers(0, 100)),
                str([int(v) for v in rng.integers(1000, 1_000_000, size=8)]), str([int(v) for v in readings]),
                200 if i % 23 == 3 else 0, stamp, stamp, label,
            ])  # fmt: skip


def _newsgroups_tgz(path: Path) -> None:
    """The 20 Newsgroups posts (``news20.tar.gz``): ``20_newsgroup/GROUP/NUMBER``, a post a file, its
    headers in its first lines; the post keras.io prints (``comp.graphics/38987``) among them."""
    rng = _rng("news20")
    groups = (
        "alt.atheism", "comp.graphics", "comp.os.ms-windows.misc", "comp.sys.ibm.pc.hardware",
        "comp.sys.mac.hardware", "comp.windows.x", "misc.forsale", "rec.autos", "rec.motorcycles",
        "rec.sport.baseball", "rec.sport.hockey", "sci.crypt", "sci.electronics", "sci.med", "sci.space",
        "soc.religion.christian", "talk.politics.guns", "talk.politics.mideast", "talk.politics.misc",
        "talk.religion.misc",
    )
    words = np.array([*GLOVE_WORDS[:3000], *(f"token{i}" for i in range(1000))])  # most of them in GloVe's
    files = {}
    for i in range(SAMPLES + TEST):
        group = groups[i % len(groups)]
        number = 38987 if (group, i // len(groups)) == ("comp.graphics", 0) else 37000 + i
        headers = [f"Newsgroups: {group}", "Path: cantaloupe.srv.cs.cmu.edu", f"From: user{i}@example.edu",
                   "Subject: Re: a question", f"Message-ID: <{i}@example.edu>", "Sender: news@example.edu",
                   "Organization: Example University", "Lines: 12", "References: <1@example.edu>", ""]  # fmt: skip
        body = " ".join(rng.choice(words, size=int(rng.integers(40, 400))))
        files[f"20_newsgroup/{group}/{number}"] = "\n".join([*headers, body]).encode("latin-1")
    _tar_of(path, files)


#: GloVe's words, as many as the stand-ins' texts use: its vectors are looked up by them.
GLOVE_WORDS = ("the", ",", ".", "of", "to", "and", "in", "a", *(f"w{i}" for i in range(3992)))


def _glove_zip(path: Path) -> None:
    """GloVe's 6B vectors (``glove.6B.zip``): ``glove.6B.{50,100,200,300}d.txt``, a word and its
    vector's numbers a line, separated by spaces."""
    rng = _rng("glove")
    with zipfile.ZipFile(path, "w") as archive:
        for size in (50, 100, 200, 300):
            vectors = rng.normal(0, 0.4, size=(len(GLOVE_WORDS), size))
            archive.writestr(
                f"glove.6B.{size}d.txt",
                "".join(f"{w} {' '.join(f'{v:.5f}' for v in row)}\n" for w, row in zip(GLOVE_WORDS, vectors)),
            )


def _pemsd7_zip(path: Path) -> None:
    """PeMSD7's traffic speeds (``PeMSD7_Full.zip``): ``PeMSD7_V_228.csv``, a row per 5 minutes of
    228 roads' speeds in mph, and ``PeMSD7_W_228.csv``, the 228 roads' distances in metres; no
    header, as the real files."""
    rng = _rng("pemsd7")
    steps = 2 * SAMPLES + 120  # the program trains on half of the steps, in windows of 15
    daily = 60 - 15 * (np.sin(np.arange(steps) * 2 * np.pi / 288) > 0.5)
    speeds = daily[:, None] + rng.normal(0, 3, size=(steps, 228))
    places = rng.uniform(0, 30000, size=228)
    distances = np.abs(places[:, None] - places[None, :])
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("PeMSD7_V_228.csv", "".join(",".join(f"{v:.1f}" for v in row) + "\n" for row in speeds))
        archive.writestr("PeMSD7_W_228.csv", "".join(",".join(f"{v:.4f}" for v in row) + "\n" for row in distances))


FILES = {
    "ecg.csv": _ecg_csv,
    "eeg-data.csv": _eeg_csv,
    "news20.tar.gz": _newsgroups_tgz,
    "glove.6B.zip": _glove_zip,
    "PeMSD7_Full.zip": _pemsd7_zip,
    "speaker-recognition-dataset.zip": _speakers_zip,
    "LJSpeech-1.1.tar.bz2": _ljspeech_tbz,
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
    "petfinder-mini.zip": _petfinder_zip,
    "flower_photos.tgz": _flower_photos_tgz,
    "aclImdb_v1.tar.gz": _acl_imdb_tgz,
    "mini_speech_commands.zip": _speech_commands_zip,
    "auto-mpg.data": _auto_mpg,
    "HIGGS.csv.gz": _higgs_gz,
    "fra-eng.zip": _fra_eng_zip,
    "cats_and_dogs_filtered.zip": _image_folders_zip(
        {f"cats_and_dogs_filtered/{part}/{kind}": (SAMPLES if part == "train" else TEST) // 2
         for part in ("train", "validation") for kind in ("cats", "dogs")}  # fmt: skip
    ),
    "BSR_bsds500.tgz": _bsds500_tgz,
    "lol_dataset.zip": _lol_zip,
    "imagenet_class_index.json": _imagenet_class_index,
    "ml-1m.zip": _movielens_1m_zip,
    "images.tar.gz": _pets_images,
    "annotations.tar.gz": _pets_annotations,
    "captcha_images_v2.zip": _captcha_zip,
    "kagglecatsanddogs_5340.zip": _image_folders_zip(
        {"PetImages/Cat": SAMPLES // 2, "PetImages/Dog": SAMPLES // 2}, shown=("PetImages/Cat/6779.jpg",)
    ),
}


def _picture(path: Path) -> None:
    """Any photo a program fetches by URL (``https://i.imgur.com/x.jpg``): a 240x320 one of its format."""
    from PIL import Image

    rng = _rng(path.name)
    Image.fromarray(rng.integers(0, 256, size=(240, 320, 3)).astype("uint8")).save(path, "PNG" if path.suffix == ".png" else "JPEG")


def writer(name: str):
    """What writes the stand-in file of that name: by its name, or for a photo by its suffix."""
    return FILES.get(name) or (_picture if name.lower().endswith((".jpg", ".jpeg", ".png")) else None)


def local(where) -> str | None:
    """The synthetic file that stands in for ``where`` (a URL, or a path that does not exist here),
    written on first use; ``None`` for anything else."""
    if not isinstance(where, (str, os.PathLike)):
        return None
    where = os.fspath(where)
    name = where.rstrip("/").rsplit("/", 1)[-1]
    remote = where.startswith(("http://", "https://"))
    mine = os.path.abspath(where).startswith(str(FOLDER))
    if writer(name) is None or mine or not (remote or (os.path.isabs(where) and not os.path.exists(where))):
        return None
    FOLDER.mkdir(exist_ok=True)
    path = FOLDER / name
    if not path.exists():
        writer(name)(path)
    return str(path)


def _served(original, argument=0):
    def reader(*args, **kwargs):
        if len(args) > argument and (path := local(args[argument])):
            args = (*args[:argument], path, *args[argument + 1 :])
        return original(*args, **kwargs)

    return reader


#: Keras's own ``get_file``: an archive to extract is handed to it (as a ``file://`` URL), so the
#: program finds what that Keras release's extraction gives.
KERAS_GET_FILE = []


def _retrieved(original):
    """``urllib.request.urlretrieve(URL, NAME)`` of a URL with a stand-in: that file, copied to NAME."""

    def retrieve(url, filename=None, *args, **kwargs):
        if (path := local(url)) is None:
            return original(url, filename, *args, **kwargs)
        import shutil

        return shutil.copy(path, filename or Path(path).name), {}

    return retrieve


def _get_file(fname=None, origin=None, *args, **kwargs):
    named = [os.fspath(fname or ""), (origin or "").rsplit("/", 1)[-1]]  # by its own name, or the URL's
    name = next((candidate for candidate in named if writer(candidate)), named[0] or named[1])
    if writer(name):
        path = local(f"https://stand-in/{name}")
        if not (kwargs.get("extract") or kwargs.get("untar") or (args and args[0])):
            return path
        kwargs.pop("file_hash", None), kwargs.pop("md5_hash", None)
        (FOLDER / "keras").mkdir(exist_ok=True)
        kwargs.setdefault("cache_dir", str(FOLDER / "keras"))
        return KERAS_GET_FILE[0](fname, f"file://{path}", *args, **kwargs)
    raise RuntimeError(
        f"the corpus has no stand-in for {origin or fname}: add its file to tests/corpus/stand_ins.py FILES"
    )


# tensorflow_datasets

#: Each dataset's features as ``tfds.load`` gives them: name -> (shape, dtype, classes); a string
#: feature has dtype ``str``. Its splits (the first is the training one, SAMPLES long; the others
#: TEST long), and its supervised keys. Images have one size per dataset: the real ones vary, and
#: the programs resize them.
TFDS_SETS = {
    "mnist": ({"image": ((28, 28, 1), "uint8", 256), "label": ((), "int64", 10)}, ("train", "test"), ("image", "label")),
    "fashion_mnist": ({"image": ((28, 28, 1), "uint8", 256), "label": ((), "int64", 10)}, ("train", "test"), ("image", "label")),
    "tf_flowers": ({"image": ((240, 320, 3), "uint8", 256), "label": ((), "int64", 5)}, ("train",), ("image", "label")),
    "cats_vs_dogs": ({"image": ((120, 160, 3), "uint8", 256), "label": ((), "int64", 2)}, ("train",), ("image", "label")),
    "caltech101": ({"image": ((120, 160, 3), "uint8", 256), "label": ((), "int64", 102)}, ("train", "test"), ("image", "label")),
    "stl10": ({"image": ((96, 96, 3), "uint8", 256), "label": ((), "int64", 10)}, ("train", "test", "unlabelled"), ("image", "label")),
    "omniglot": (
        {"image": ((105, 105, 3), "uint8", 256), "alphabet": ((), "int64", 50), "label": ((), "int64", 1623)},
        ("train", "test", "small1", "small2"),
        ("image", "label"),
    ),
    "cycle_gan/horse2zebra": (
        {"image": ((256, 256, 3), "uint8", 256), "label": ((), "int64", 2)},
        ("trainA", "trainB", "testA", "testB"),
        ("image", "label"),
    ),
    "oxford_iiit_pet": (
        {
            "image": ((128, 160, 3), "uint8", 256),
            "segmentation_mask": ((128, 160, 1), "uint8", 3),
            "label": ((), "int64", 37),
            "species": ((), "int64", 2),
        },
        ("train", "test"),
        ("image", "label"),
    ),
    "imdb_reviews": ({"text": ((), str, 2000), "label": ((), "int64", 2)}, ("train", "test", "unsupervised"), ("text", "label")),
    "stanford_dogs": ({"image": ((120, 160, 3), "uint8", 256), "label": ((), "int64", 120)}, ("train", "test"), ("image", "label")),
    "oxford_flowers102": ({"image": ((120, 160, 3), "uint8", 256), "label": ((), "int64", 102)}, ("train", "validation", "test"), ("image", "label")),
    "horses_or_humans": ({"image": ((300, 300, 3), "uint8", 256), "label": ((), "int64", 2)}, ("train", "test"), ("image", "label")),
    "penguins/simple": (
        {"island": ((), str, 3), "bill_length_mm": ((), "float32", 0), "bill_depth_mm": ((), "float32", 0),
         "flipper_length_mm": ((), "float32", 0), "body_mass_g": ((), "float32", 0), "sex": ((), str, 2),
         "species": ((), "int64", 3)},  # fmt: skip
        ("train",),
        ("features", "species"),
    ),
    "penguins/processed": ({"features": ((4,), "float32", 0), "species": ((), "int64", 3)}, ("train",), ("features", "species")),
}


class _Split:
    def __init__(self, count):
        self.num_examples = count


#: Classes that come in runs of samples, as the real data holds them: each Omniglot character is
#: drawn by 20 people (keras.io's Reptile samples several drawings of a character), and its test
#: split's characters are others than its training split's.
TFDS_RUNS = {("omniglot", "label"): 20}
#: Class names as a dataset writes them, where a program reads them (stanford_dogs: WordNet id, breed).
TFDS_NAMES = {"stanford_dogs": lambda i: f"n{2085620 + i:08d}-breed_{i}"}


class _Feature:
    def __init__(self, shape, dtype, classes, dataset=""):
        self.shape, self.dtype, self.num_classes = shape, dtype, classes
        self.names = [TFDS_NAMES.get(dataset, lambda i: f"class_{i}")(i) for i in range(classes)]

    def int2str(self, index):
        return self.names[int(index)]


def _tfds_split(name: str, split: str) -> tuple[str, int, int]:
    """A split's name and its samples ``[start, end)``: ``train``, ``train[:80%]``, ``test[10:20]``."""
    features, splits, _ = TFDS_SETS[name]
    base, _, part = split.partition("[")
    count = SAMPLES if base == splits[0] else TEST
    if not part:
        return base, 0, count
    edges = []
    for edge, default in zip(part.rstrip("]").split(":"), (0, count)):
        edges.append(default if not edge else round(count * float(edge[:-1]) / 100) if edge.endswith("%") else int(edge))
    return base, max(0, edges[0] if edges[0] >= 0 else count + edges[0]), min(count, edges[1] if edges[1] >= 0 else count + edges[1])


def _tfds_data(name: str, split: str, as_supervised: bool):
    import tensorflow as tf

    if "+" in split:  # "train[:80%]+validation[:80%]": the parts, one after the other
        parts = [_tfds_data(name, part, as_supervised) for part in split.split("+")]
        joined = parts[0]
        for part in parts[1:]:
            joined = joined.concatenate(part)
        return joined

    features, _, keys = TFDS_SETS[name]
    base, start, end = _tfds_split(name, split)
    rng = _rng(f"{name}/{base}")
    count = SAMPLES if base == TFDS_SETS[name][1][0] else TEST
    columns = {}
    for feature, (shape, dtype, classes) in features.items():
        if dtype is str:
            words = np.array([f"w{i}" for i in range(classes)])
            columns[feature] = np.array([" ".join(rng.choice(words, size=rng.integers(5, 40))) for _ in range(count)])
        elif dtype == "float32":
            columns[feature] = rng.normal(size=(count, *shape)).astype("float32")
        elif (name, feature) in TFDS_RUNS:  # the split's own classes, each a run of samples
            first = 0 if base == TFDS_SETS[name][1][0] else classes // 2
            columns[feature] = ((first + np.arange(count) // TFDS_RUNS[name, feature]) % classes).astype(dtype)
        else:
            columns[feature] = rng.integers(0, classes, size=(count, *shape)).astype(dtype)
    columns = {feature: column[start:end] for feature, column in columns.items()}
    found = tuple(columns[key] for key in keys) if as_supervised else columns
    return tf.data.Dataset.from_tensor_slices(found)


def _tfds_load(name, split=None, with_info=False, as_supervised=False, **kwargs):
    name = name.split(":")[0]
    if name not in TFDS_SETS:
        raise RuntimeError(f"the corpus has no stand-in for tfds.load({name!r})")
    features, splits, keys = TFDS_SETS[name]
    split = splits if split is None else split
    if isinstance(split, str):
        found = _tfds_data(name, split, as_supervised)
    else:
        found = [_tfds_data(name, part, as_supervised) for part in split]
        found = dict(zip(split, found)) if split is splits else found
    info = types.SimpleNamespace(
        name=name,
        splits={part: _Split(SAMPLES if part == splits[0] else TEST) for part in splits},
        features={feature: _Feature(*spec, dataset=name) for feature, spec in features.items()},
        supervised_keys=keys,
    )
    return (found, info) if with_info else found


TFDS = types.ModuleType("tensorflow_datasets")
TFDS.__version__ = "stand-in"
TFDS.load = _tfds_load
TFDS.as_numpy = lambda dataset: dataset.as_numpy_iterator()
TFDS.disable_progress_bar = lambda: None
TFDS.show_examples = lambda *args, **kwargs: None
TFDS.as_dataframe = lambda dataset, info=None: __import__("pandas").DataFrame(list(dataset.as_numpy_iterator()))
TFDS.Split = types.SimpleNamespace(TRAIN="train", TEST="test", VALIDATION="validation")


# pretrained weights


def _untrained(application):
    """A ``keras.applications`` constructor whose ImageNet weights (the default) are the
    architecture's own initial weights: the same model, its weights drawn from the run's seed."""

    signature = inspect.signature(application)

    @functools.wraps(application)
    def build(*args, **kwargs):
        called = signature.bind(*args, **kwargs)
        called.apply_defaults()
        if isinstance(called.arguments["weights"], str) and called.arguments["weights"] == "imagenet":
            called.arguments["weights"] = None
        return application(*called.args, **called.kwargs)

    return build


def _applications(package: str = "keras") -> dict:
    """Each ``keras.applications`` constructor that takes ``weights``, with its stand-in."""
    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith(f"{package}.src.applications.") or module is None:
            continue
        for attribute, value in vars(module).items():
            if inspect.isfunction(value) and attribute[:1].isupper() and value.__module__ == name:
                if "weights" in inspect.signature(value).parameters:
                    found[value] = _untrained(value)
    return found


# The shell commands a program's text gives its reader to fetch its data (a keras.io example's
# ``"""shell`` blocks, a notebook's ``!`` lines).

#: The commands run as written (the data's own unpacking and moving); curl and wget fetch stand-ins.
SHELL_COMMANDS = ("unzip", "tar", "mkdir", "mv", "cp", "rm", "gunzip")
#: The files a program fetches from Google Drive with ``gdown ID``, by their ID: gdown saves each
#: under its name on the Drive.
DRIVE = {"1V5B7Bt6aJm0UHbR7cRKBEK8jx7lYPVuX": "eeg-data.csv"}


def shell(command: str) -> None:
    """Run one of the program's shell lines for its data, in the current folder: ``curl``/``wget``
    of a URL with a stand-in, ``gdown`` of a Drive file with one (``DRIVE``), or ``kaggle
    datasets download`` of a dataset with one, writes that stand-in where the command would; the
    data's unpacking (``SHELL_COMMANDS``) runs as written; anything else (``pip``, ``ls``) does
    nothing."""
    import shlex
    import shutil
    import subprocess

    try:
        words = shlex.split(command)
    except ValueError:
        return
    if not words:
        return
    if words[0] in ("curl", "wget"):
        output = "-o" if words[0] == "curl" else "-O"  # curl's -O, wget's default: the URL's own name
        named = [words[j + 1] for j in range(len(words) - 1) if words[j] in (output, "--output", "--output-document")]
        for word in words:
            if word.startswith(("http://", "https://")) and (path := local(word)):
                shutil.copy(path, named[0] if named else Path(path).name)
    elif words[0] == "gdown":
        named = [words[j + 1] for j in range(len(words) - 1) if words[j] in ("-O", "--output")]
        for word in words[1:]:
            if (name := DRIVE.get(word.split("&")[0])) and (path := local(f"https://drive.google.com/{name}")):
                shutil.copy(path, named[0] if named else name)
    elif words[:3] == ["kaggle", "datasets", "download"] and "-d" in words[:-1]:  # Kaggle's OWNER/NAME: NAME.zip
        name = words[words.index("-d") + 1].rsplit("/", 1)[-1] + ".zip"
        if path := local(f"https://www.kaggle.com/{name}"):
            shutil.copy(path, name)
    elif words[0] in SHELL_COMMANDS:
        subprocess.run(command, shell=True, check=False)


def shell_blocks(text: str) -> list[str]:
    """The commands of a keras.io example's ``\"\"\"shell`` blocks, in order."""
    import re

    return [
        line.strip()
        for block in re.findall(r'^"""shell\n(.*?)^"""', text, re.S | re.M)
        for line in block.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def install(package: str = "keras") -> None:
    """Put every stand-in in place: the datasets' ``load_data`` wherever Keras's modules expose it,
    the file readers, and ``tensorflow_datasets``. ``package`` is the Keras the program is written
    for: ``keras`` (Keras 3), or ``tf_keras`` (Keras 2, ``tf.keras`` with ``TF_USE_LEGACY_KERAS=1``),
    whose own ``get_file`` then extracts an archive as Keras 2 does."""
    import importlib

    import pandas

    keras = importlib.import_module(package)
    originals = {
        name: importlib.import_module(f"{package}.src.datasets.{name}").load_data for name in DATASETS
    }
    get_file = keras.utils.get_file
    KERAS_GET_FILE[:] = [get_file]
    applications = _applications(package)
    for module in list(sys.modules.values()):
        for attribute, value in list(getattr(module, "__dict__", {}).items()):
            if inspect.isfunction(value) and value in applications:
                setattr(module, attribute, applications[value])
        for name, original in originals.items():
            if getattr(module, "load_data", None) is original:
                module.load_data = DATASETS[name]
        if getattr(module, "get_file", None) is get_file:
            module.get_file = _get_file
    pandas.read_csv = _served(pandas.read_csv)
    np.loadtxt = _served(np.loadtxt)
    builtins.open = _served(builtins.open)
    urllib.request.urlretrieve = _retrieved(urllib.request.urlretrieve)
    io.open = builtins.open
    sys.modules["tensorflow_datasets"] = TFDS
