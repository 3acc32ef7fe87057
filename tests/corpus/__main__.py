"""Run the corpus (tests/corpus/programs/, sources in sources.json) and print its table:
``python -m tests.corpus [--check DOC | --write DOC] [NAME ... | ci]`` (docs/corpus.md). What
autodist costs the programs, in speed and memory: ``python -m tests.corpus --speed`` (speed.py).

Each program runs, each way in its own process and folder (tests/corpus/run.py): plain
``model.fit`` on one device; ``autodist.fit`` with its defaults on one device; on 2 replicas
(``AUTODIST_CPU_DEVICES=2``); and plain ``model.fit`` under a hand-built ``MirroredStrategy``
over 2 logical CPUs. The verdict is the contract's: ``equal`` (to one device, within
``TOLERANCE``), ``= hand-built, warned``, ``warned: independent random draws`` (autodist's
replicas draw their own numbers, an AutodistWarning says so, and with Keras's draws fixed,
``DRAWS_OFF``, the program equals one device, or the hand-built strategy with a warning for the
rest), an ``AutodistError``, or what differs. The exit status is 1 when a program is outside the
contract. ``CORPUS_KEEP=DIR`` keeps every way's record and folder there, and judges records
already there again instead of running them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

from tests.corpus import left_out
from tests.corpus.text import own_distribution, program_text

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SOURCES = json.loads((HERE / "sources.json").read_text())
#: Two numbers are equal within ``TOLERANCE`` of the larger of 1 and their size: float32 sums in
#: another order (a batch split over replicas) move a loss of 14227.30 by 0.001.
TOLERANCE = 1e-4
WAYS = {
    "plain": ("plain", None),
    "autodist, 1 device": ("autodist", "1"),
    "autodist, 2 replicas": ("autodist", "2"),
    "hand-built": ("hand-built", None),
}
#: Run after WAYS when autodist's replicas drew their own random numbers: the same two programs
#: with Keras's draws in a step fixed (``CORPUS_DRAWS=off``), which then must be equal.
#: Run when autodist on one device is not plain model.fit: plain once more, to tell a program that
#: does not repeat its own numbers (random ops in a parallel tf.data map) from autodist's doing.
AGAIN = {"plain again": ("plain", None)}
DRAWS_OFF = {
    "plain, draws fixed": ("plain", None),
    "autodist, 2 replicas, draws fixed": ("autodist", "2"),
    "hand-built, draws fixed": ("hand-built", None),
}
#: Run when autodist on 2 replicas is the hand-built strategy's numbers, apart from one device's,
#: and nothing is warned: the same two programs in float64 (``CORPUS_FLOATX``). Equal there, the
#: gap is float32's rounding of sums taken in another order (each replica's share, then the
#: replicas), grown over the program's steps: what any split of a batch gives, plain Keras's too.
FLOAT64 = {
    "plain, float64": ("plain", None),
    "autodist, 2 replicas, float64": ("autodist", "2"),
}
#: Run when, with the draws fixed, autodist on 2 replicas is still apart from one device: the
#: same two in float64 as well. Equal there, what was left is float32's rounding.
DRAWS_OFF_FLOAT64 = {
    "plain, draws fixed, float64": ("plain", None),
    "autodist, 2 replicas, draws fixed, float64": ("autodist", "2"),
}
#: Run when, with the draws fixed, autodist on 2 replicas is still apart from one device and float64
#: does not tell why (the program does not run in it): plain model.fit once more with the draws
#: fixed and each batch's samples in reverse order (``CORPUS_BATCH_ORDER=reversed``), the same
#: steps with their sums taken in another order. Where autodist is no further from one device
#: than one device is from itself so, what is left is float32's rounding.
DRAWS_OFF_REVERSED = {"plain, draws fixed, batches reversed": ("plain", None)}
#: The same without the draws fixed, for a program without random draws: run when autodist on 2
#: replicas with Keras's own moving statistics (``KERAS_STATISTICS``) is still apart from the
#: hand-built strategy, to tell float32's rounding (each way takes its sums in its own order) from
#: a cause.
REVERSED = {"plain, batches reversed": ("plain", None)}
#: How much further than that autodist may be: rounding grown over a program's steps is a draw of
#: the same size, not the same number, for any two orders of its sums (guide_custom_train_step:
#: 0.0010 reversed, 0.0012 on 2 replicas); a gap of another cause is orders of magnitude beyond
#: (eanet: 1.0e-6 reversed, 0.0019 on 2 replicas).
ROUNDING_SPREAD = 2.0
#: Run when, with the draws fixed, what is left is neither float32's rounding nor warned: plain and
#: autodist on 2 replicas once more with the draws fixed and every sparse gradient applied dense
#: (``CORPUS_GRADIENTS=dense``). Equal there, the gap is Keras's sparse optimizer update (it squares
#: each slice of a row apart, and the replicas' all-reduce gives a row one slice per replica where
#: one device has one): the verdict names that cause; the program stays outside the contract.
DENSE = {
    "plain, draws fixed, dense gradients": ("plain", None),
    "autodist, 2 replicas, draws fixed, dense gradients": ("autodist", "2"),
}
#: Run when autodist on 2 replicas averaged BatchNormalization's moving statistics over the
#: replicas (the workaround ``batchnorm_moving_statistics``: tf.keras's way, where Keras 3 keeps each
#: replica's own copy) and is apart from the hand-built strategy: the same program with that
#: workaround left out, which then must be the hand-built strategy's numbers. What else autodist does
#: apart from Keras is left out with it, each a change toward one device that moves samples onto
#: another replica's own statistics: ``every_replica_fed`` picks another ``predict`` batch where
#: Keras's would leave a replica an empty share; ``symbolic_build_reads_input`` spends no shuffled
#: order where Keras's build spends one (so each replica's share holds other samples);
#: ``uneven_shares_weighted`` weights an uneven batch's shares; ``replica_slices_summed`` sums the
#: replicas' slices of a position embedding.
KERAS_STATISTICS = {"autodist, 2 replicas, Keras's moving statistics": ("autodist", "2")}
KERAS_OWN_WAYS = (
    "auto,-batchnorm_moving_statistics,-every_replica_fed,-symbolic_build_reads_input,-uneven_shares_weighted,-replica_slices_summed"
)
#: Run when autodist on one device kept the program's own strategy, apart from plain model.fit
#: under it, and said Keras would have spent one of its input's shuffled orders: the four ways
#: again with every tf.data shuffle keeping its first order (``CORPUS_ORDER=fixed``), where autodist
#: must then be the program's numbers under its own strategy.
ORDER_FIXED = {f"{way}, order fixed": how for way, how in WAYS.items()}
#: What autodist's warnings say of the causes below: TensorFlow's distributed iterator read a repeated,
#: reshuffling shuffle ahead into passes one device never starts, so a later fit of it starts at other
#: orders (autodist.core.inputs.READ_AHEAD_NOTE); an initializer is a plain function, whose unseeded
#: draw depends on where Keras calls it (autodist.planning.global_batch.FUNCTION_INITIALIZERS);
#: BatchNormalization normalises each replica's share of the batch (autodist.planning.global_batch).
READ_AHEAD = "reads ahead of the step it trains"
FUNCTION_INITIALIZER = "is a plain function, not a Keras initializer"
REPLICA_STATISTICS = "normalises each replica's share of the batch"


class Cause(NamedTuple):
    """A cause of a gap autodist warns of, and how the runner takes it away to judge the rest: where
    autodist on 2 replicas is apart from one device and warned ``said``, plain and autodist on 2
    replicas run once more with ``settings`` (the cause removed, ``removed``), and with Keras's draws
    fixed as well where autodist warned its replicas' draws too (:meth:`ways`); equal there, the
    verdict is ``verdict``, within the contract. Still apart, :meth:`spread` runs: plain once more
    so, each batch's samples in reverse order (the program's own spread); no further than
    ``ROUNDING_SPREAD`` times that, within too. Beyond it, :meth:`in_float64` runs the two ways in
    float64: equal there, what was left is float32's rounding, grown where reversing one device's
    batches does not show it (two replicas' partial sums that cancel, where one device's sum is
    taken whole)."""

    said: str
    name: str
    settings: tuple[str, dict]
    verdict: str
    removed: str

    def ways(self, drawn: bool) -> dict:
        return _CAUSE_WAYS[(self.name, drawn, "")]

    def spread(self, drawn: bool) -> dict:
        return _CAUSE_WAYS[(self.name, drawn, "reversed")]

    def in_float64(self, drawn: bool) -> dict:
        return _CAUSE_WAYS[(self.name, drawn, "float64")]


#: The causes judged so, each by its own ways.
CAUSES_REMOVED = (
    Cause(
        FUNCTION_INITIALIZER,
        "initializers seeded",
        ("-seeded", {"CORPUS_INITIALIZERS": "seeded"}),
        "warned: a plain-function initializer",
        "with its draws seeded",
    ),
    Cause(
        REPLICA_STATISTICS,
        "batchnorm synchronized",
        ("-synchronized", {"CORPUS_BATCHNORM": "synchronized"}),
        "warned: each replica's batch statistics",
        "with every BatchNormalization synchronized",
    ),
    Cause(
        READ_AHEAD,
        "order fixed",
        ("-order", {"CORPUS_ORDER": "fixed"}),
        "warned: a shuffle read ahead",
        "with every shuffle keeping its order",
    ),
)
#: Each cause's ways, by (name, draws fixed, variant): plain and autodist on 2 replicas (variant
#: ""), plain alone with each batch reversed ("reversed"), the two in float64 ("float64").
_CAUSE_WAYS = {
    (cause.name, drawn, variant): (
        {f"plain, {cause.name}{', draws fixed' if drawn else ''}, batches reversed": ("plain", None)}
        if variant == "reversed"
        else {
            f"{way}, {cause.name}{', draws fixed' if drawn else ''}{', float64' if variant else ''}": (arm, devices)
            for way, (arm, devices) in (("plain", ("plain", None)), ("autodist, 2 replicas", ("autodist", "2")))
        }
    )
    for cause in CAUSES_REMOVED
    for drawn in (False, True)
    for variant in ("", "reversed", "float64")
}
#: What each variant of a cause's ways adds: its records' suffix, its settings.
_VARIANTS = {
    "": ("", {}),
    "reversed": ("-reversed", {"CORPUS_BATCH_ORDER": "reversed"}),
    "float64": ("-float64", {"CORPUS_FLOATX": "float64"}),
}
#: Run, in turn, when plain model.fit does not repeat its own numbers on one device: the program's
#: whole judgement again, every way with TensorFlow's op determinism (``CORPUS_DETERMINISM=on``:
#: ``tf.config.experimental.enable_op_determinism()`` before the program; random ops in a parallel
#: tf.data map), then with every shuffle keeping its order as well (a repeated, reshuffling pipeline
#: that several fits share: how far one fit's prefetch reads ahead, by load, decides the next fit's
#: orders). The first where plain model.fit repeats itself judges the program. The same settings in
#: every way: a measuring instrument, as the fixed seeds are.
REPEATABLE_WITH = (
    (("-deterministic", {"CORPUS_DETERMINISM": "on"}), "TensorFlow's op determinism"),
    (
        ("-deterministic-ordered", {"CORPUS_DETERMINISM": "on", "CORPUS_ORDER": "fixed"}),
        "TensorFlow's op determinism and every shuffle keeping its order",
    ),
)
#: The settings every way started now runs with besides its own (:func:`with_settings`).
_OVERLAY: list[tuple[str, dict]] = [("", {})]

#: Each extra set of ways: the suffix of its records' names and the settings it runs with.
EXTRA = {
    id(AGAIN): ("-again", {}),
    id(DRAWS_OFF): ("-fixed", {"CORPUS_DRAWS": "off"}),
    id(FLOAT64): ("-float64", {"CORPUS_FLOATX": "float64"}),
    id(DRAWS_OFF_FLOAT64): ("-fixed-float64", {"CORPUS_DRAWS": "off", "CORPUS_FLOATX": "float64"}),
    id(DRAWS_OFF_REVERSED): ("-fixed-reversed", {"CORPUS_DRAWS": "off", "CORPUS_BATCH_ORDER": "reversed"}),
    id(DENSE): ("-fixed-dense", {"CORPUS_DRAWS": "off", "CORPUS_GRADIENTS": "dense"}),
    id(REVERSED): ("-reversed", {"CORPUS_BATCH_ORDER": "reversed"}),
    id(KERAS_STATISTICS): (
        "-keras-statistics",
        {"AUTODIST_KERAS_COMPAT": KERAS_OWN_WAYS},
    ),
    id(ORDER_FIXED): ("-order-fixed", {"CORPUS_ORDER": "fixed"}),
}
EXTRA.update(
    {
        id(ways): (
            cause.settings[0] + ("-draws-fixed" if drawn else "") + _VARIANTS[variant][0],
            {**cause.settings[1], **({"CORPUS_DRAWS": "off"} if drawn else {}), **_VARIANTS[variant][1]},
        )
        for (name, drawn, variant), ways in _CAUSE_WAYS.items()
        for cause in CAUSES_REMOVED
        if cause.name == name
    }
)
RANDOM_DRAWS = "each replica from its own stream"
AVERAGED_STATISTICS = "averages each update of the moving statistics over the replicas"
SPENT_ORDER = "spends one of its shuffled orders"
#: The warnings that name what autodist's replicas do to a shuffle's orders.
ORDER_CAUSES = (SPENT_ORDER, READ_AHEAD)


#: Run as ``sh -c SCRIPT python ...`` in a private mount namespace: /tmp becomes a tmpfs of the way's
#: own, and what the way needs that lies under /tmp ($CORPUS_BIND: the run's folder of records, this
#: checkout, the Python environment) is bound back at its own path (through the old /tmp, held at
#: /mnt while the tmpfs goes on).
_PRIVATE_TMP_SCRIPT = (
    "mount --bind /tmp /mnt || exit 97; "
    "mount -t tmpfs tmpfs /tmp || exit 97; "
    'IFS=:; for p in $CORPUS_BIND; do case "$p" in /tmp/*) mkdir -p "$p" && '
    'mount --bind "/mnt${p#/tmp}" "$p" || exit 97;; esac; done; '
    'exec "$0" "$@"'
)


@functools.cache
def private_tmp() -> list[str]:
    """The command prefix that gives a way a /tmp of its own (a tmpfs in a private mount
    namespace): a program that writes to a fixed path there (``/tmp/checkpoint.weights.h5``) runs
    its ways side by side as it runs alone. None where this machine cannot make one."""
    prefix = ["unshare", "-rm", "sh", "-c", _PRIVATE_TMP_SCRIPT]
    with tempfile.TemporaryDirectory() as out:
        try:
            made = subprocess.run(
                [*prefix, "test", "-d", out], env={**os.environ, "CORPUS_BIND": out}, capture_output=True, timeout=30
            ).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            made = False
    return prefix if made else []




def program(name: str) -> Path:
    """The program's file: its source's name with that source's extension (``.py``, ``.ipynb``)."""
    if name in left_out.LEFT_OUT:
        return left_out.program(name)
    return HERE / "programs" / f"{name}{Path(SOURCES[name]['path']).suffix}"


def entry(name: str) -> dict:
    """The program's entry: in the corpus (sources.json) or left out (left_out.json)."""
    return SOURCES.get(name) or left_out.LEFT_OUT[name]


def _bound_back(out: Path) -> str:
    """What a way's private /tmp must show as it is: the records' folder, this checkout, Python's."""
    return ":".join(dict.fromkeys(str(Path(p).resolve()) for p in (out, ROOT, sys.prefix, sys.base_prefix)))


#: Each program's largest peak resident memory of one way, measured by its runs so far.
PEAKS: dict[str, int] = {}
#: Of the memory free when ways start, the share they may take together.
MEMORY_SHARE = 0.8


def _available_memory() -> int:
    with open("/proc/meminfo") as meminfo:
        fields = dict(line.split(":", 1) for line in meminfo)
    return int(fields["MemAvailable"].split()[0]) * 1024


def side_by_side(name: str, waiting: int) -> int:
    """How many of a program's ways run at once: two (or one core's one) while its memory is unknown
    (its first ways), then as many as fit in the memory free now, measured by its own runs."""
    peak = PEAKS.get(name)
    if peak is None:
        return max(1, min(waiting, os.cpu_count() or 1, 2))
    return max(1, min(waiting, int(_available_memory() * MEMORY_SHARE // max(peak, 1))))


def run(name: str, out: Path, ways: dict = WAYS) -> dict:
    """Each of ``ways`` of one program, side by side as far as memory allows (:func:`side_by_side`),
    each bounded at 600 s (killed past it)."""
    if name not in SOURCES and name not in left_out.LEFT_OUT:
        raise SystemExit(f"tests.corpus: no program {name!r} in sources.json (names: python -m tests.corpus --list)")
    out.mkdir(parents=True, exist_ok=True)
    started, found = {}, {}
    pending = list(ways.items())
    while pending or started:
        while pending and len(started) < side_by_side(name, len(pending) + len(started)):
            way, how = pending.pop(0)
            started[way] = _start_way(name, out, ways, how)
        way = _first_done(started)
        found[way] = _finish_way(*started.pop(way))
        peak = found[way].get("peak_rss_bytes")
        if peak:
            PEAKS[name] = max(PEAKS.get(name, 0), peak)
    return {way: found[way] for way in ways}


#: How long one way may run before it is killed.
WAY_LIMIT_SECONDS = 600


def _first_done(started: dict) -> str:
    """The first of the started ways to end (or to run past its limit)."""
    while True:
        for way, (proc, _target, began) in started.items():
            if proc is None or proc.poll() is not None or time.monotonic() - began > WAY_LIMIT_SECONDS:
                return way
        time.sleep(0.5)


def _start_way(name: str, out: Path, ways: dict, how: tuple[str, str | None]) -> tuple[Any, Path, float]:
    """One way's process started (``None`` where its record is kept already), its record's path, and when."""
    kind, devices = how
    env = {key: value for key, value in os.environ.items() if not key.startswith("AUTODIST_")}
    env.update(
        PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3", **({"AUTODIST_CPU_DEVICES": devices} if devices else {})
    )
    env.update(MPLBACKEND="Agg", CORPUS_SAMPLES=str(entry(name).get("samples", env.get("CORPUS_SAMPLES", 256))))
    env.update(CORPUS_EPOCHS=str(entry(name).get("epochs", env.get("CORPUS_EPOCHS", 2))))
    suffix, settings = EXTRA.get(id(ways), ("", {}))
    suffix = _OVERLAY[-1][0] + suffix
    env.update(_OVERLAY[-1][1])  # after the sizes: the speed mode's own (tests/corpus/speed.py)
    env.update(settings)
    env.update(CORPUS_OUT=str(out.resolve()), CORPUS_BIND=_bound_back(out))
    if entry(name).get("keras") == "tf_keras":  # written for Keras 2: tf.keras is tf_keras, as before TF 2.16
        env.update(TF_USE_LEGACY_KERAS="1")
    if entry(name).get("backend") == "jax":  # written for JAX: its 2 devices are XLA's, split from the CPU
        env.update(KERAS_BACKEND="jax")
        if devices == "2" or kind == "hand-built":
            env.update(XLA_FLAGS="--xla_force_host_platform_device_count=2")
    label = f"{name}-{kind}-{devices}{suffix}"
    target, folder = out / f"{label}.json", out / label
    if target.exists() or os.environ.get("CORPUS_JUDGE_ONLY"):  # kept (CORPUS_KEEP): judged again, not run again
        return None, target, time.monotonic()
    shutil.rmtree(folder, ignore_errors=True)  # a run that kept no record (killed): run again
    folder.mkdir()
    env.update(CORPUS_LAUNCHED=repr(time.time()))  # the speed mode's start-up: from here to the first step
    with open(folder / "stderr.txt", "w") as stderr:  # a file, not a pipe: nothing blocks while ways are polled
        proc = subprocess.Popen(
            [*private_tmp(), sys.executable, str(HERE / "run.py"), str(program(name)), kind, str(target)],
            cwd=folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    return proc, target, time.monotonic()


def _finish_way(proc: Any, target: Path, began: float) -> dict:
    """The way's record, once its process ends (killed past its limit); what went wrong where it kept none."""
    if proc is None:
        return json.loads(target.read_text()) if target.exists() else {"outcome": "not measured: no record kept"}
    late = ""
    try:
        proc.wait(timeout=max(1.0, WAY_LIMIT_SECONDS - (time.monotonic() - began)))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        late = f"timed out: over {WAY_LIMIT_SECONDS} s. "
    err = (target.with_suffix("") / "stderr.txt").read_text(errors="replace")
    if target.exists():
        return json.loads(target.read_text())
    return {"outcome": f"no record (exit {proc.returncode}): {late}{err[-300:]}"}  # "timed out" first, whatever stderr says


def gap(a: dict, b: dict) -> float:
    """The largest difference between two ways' fits (History, weights), evaluates and predicts
    (and, for a program without ``fit``, its models' weights at its end), relative to the numbers'
    size where they are above 1; ``inf`` where they recorded different things."""
    pairs = []
    if a["outcome"] != "ran" or b["outcome"] != "ran":
        return float("inf")  # a way that failed or kept no record is apart from any other
    if (
        len(a["fits"]) != len(b["fits"])
        or len(a["evaluates"]) != len(b["evaluates"])
        or len(a["predicts"]) != len(b["predicts"])
    ):
        return float("inf")
    for one, two in zip(a["fits"], b["fits"]):
        if sorted(one["history"]) != sorted(two["history"]):
            return float("inf")
        pairs += [(one["history"][k], two["history"][k]) for k in one["history"]]
        pairs += list(zip(one["weights"], two["weights"]))
    if ("finals" in a) != ("finals" in b) or len(a.get("finals", [])) != len(b.get("finals", [])):
        return float("inf")
    pairs += list(zip(a.get("finals", []), b.get("finals", [])))  # a program without fit: its models at its end
    pairs += list(zip(a["evaluates"], b["evaluates"]))
    pairs += [(x, y) for one, two in zip(a["predicts"], b["predicts"]) for x, y in zip(one["values"], two["values"])]
    biggest = 0.0
    for x, y in pairs:
        if len(x) != len(y):
            return float("inf")
        biggest = max([biggest, *(abs(p - q) / max(1.0, abs(p), abs(q)) for p, q in zip(x, y))])
    return biggest


def own_strategy(found: dict) -> bool:
    """Whether the program makes its own strategy (its hand-built way is itself): what it then
    does on 2 replicas (a global batch it scales by the replicas) is the program's, not autodist's."""
    return bool(found.get("own_strategy"))


def warned_apart(found: dict, said: str, reference: str = "plain", way: str = "autodist, 2 replicas") -> bool:
    """Whether ``way`` trained apart from ``reference`` (which trained) and warned with ``said``:
    the case an extra set of ways judges."""
    one, two = found[reference], found[way]
    return (
        one["outcome"] == two["outcome"] == "ran"
        and gap(one, two) > TOLERANCE
        and any(said in w for w in two.get("warnings", []))
    )


def drew_apart(found: dict) -> bool:
    """Whether autodist on 2 replicas trained, apart from one device, and said its replicas drew
    their own random numbers: the case the draws-fixed ways judge."""
    return warned_apart(found, RANDOM_DRAWS)


def rounded_apart(found: dict) -> bool:
    """Whether autodist on 2 replicas trained to the hand-built strategy's numbers, apart from one
    device's, with nothing warned: the case the float64 ways judge."""
    plain, two, hand = found["plain"], found["autodist, 2 replicas"], found["hand-built"]
    return (
        plain["outcome"] == two["outcome"] == hand["outcome"] == "ran"
        and gap(plain, two) > TOLERANCE
        and gap(hand, two) <= TOLERANCE
        and not two.get("warnings")
    )


def unwarned_apart(found: dict) -> bool:
    """Whether autodist on 2 replicas trained apart from one device with nothing warned (and the
    program made no strategy of its own): the case the float64 ways and the program's own spread
    (``REVERSED``) judge, whether or not the hand-built strategy trained to the same numbers."""
    plain, two = found["plain"], found["autodist, 2 replicas"]
    return (
        plain["outcome"] == two["outcome"] == "ran"
        and gap(plain, two) > TOLERANCE
        and not two.get("warnings")
        and not own_strategy(found)
    )


def rounded_with_draws_fixed(found: dict) -> bool:
    """Whether, with the draws fixed, autodist on 2 replicas trained apart from one device: the
    case the draws-fixed float64 ways judge."""
    plain_off, two_off = (found.get(way, {"outcome": "not run"}) for way in list(DRAWS_OFF)[:2])
    return plain_off["outcome"] == two_off["outcome"] == "ran" and gap(plain_off, two_off) > TOLERANCE


def reversed_rounding(found: dict) -> float | None:
    """How far plain model.fit with the draws fixed moves when each batch's samples come in
    reverse order (the ``DRAWS_OFF_REVERSED`` way): the program's own float32 rounding; ``None``
    where that was not measured."""
    plain_off, backwards = found.get("plain, draws fixed", {"outcome": "not run"}), found.get(
        next(iter(DRAWS_OFF_REVERSED)), {"outcome": "not run"}
    )
    if not plain_off["outcome"] == backwards["outcome"] == "ran":
        return None
    return gap(plain_off, backwards)


def averaged_apart(found: dict) -> bool:
    """Whether autodist on 2 replicas trained apart from the hand-built strategy (which trained)
    and said it averaged BatchNormalization's moving statistics over the replicas: the case the
    ``KERAS_STATISTICS`` way judges."""
    return warned_apart(found, AVERAGED_STATISTICS, reference="hand-built")


def ordered_apart(found: dict) -> bool:
    """Whether autodist on one device trained apart from plain model.fit under the program's own
    strategy and said Keras's build there would have spent an order of its input: the case the
    ``ORDER_FIXED`` ways judge."""
    return warned_apart(found, SPENT_ORDER, way="autodist, 1 device")


def order_verdict(found: dict) -> str | None:
    """The verdict of a program whose own strategy autodist kept, apart from plain model.fit
    only by the order Keras spends (:func:`ordered_apart`): with every shuffle keeping its order,
    autodist on one device must be plain model.fit and on 2 replicas the program's own strategy's
    numbers. ``None`` where that is not shown."""
    if not ordered_apart(found):
        return None
    plain, one, two, hand = (found.get(way, {"outcome": "not run"}) for way in ORDER_FIXED)
    if not plain["outcome"] == one["outcome"] == two["outcome"] == hand["outcome"] == "ran":
        return None
    if gap(plain, one) > TOLERANCE or gap(hand, two) > TOLERANCE:
        return None
    spent = gap(found["plain"], found["autodist, 1 device"])
    return (
        f"= its own strategy but for the order Keras spends, warned ({spent:.2g} from plain model.fit "
        "under it on one device; with the order fixed, equal to it and on 2 replicas to its own strategy)"
    )


@contextlib.contextmanager
def with_settings(overlay: tuple[str, dict]):
    """Every way started inside runs with ``overlay``'s settings too, its records named with its suffix."""
    _OVERLAY.append(overlay)
    try:
        yield
    finally:
        _OVERLAY.pop()


def not_repeatable(found: dict) -> float | None:
    """How far plain model.fit on one device is from itself, run twice, where that is past
    ``TOLERANCE``; ``None`` where it repeats (or was not run twice)."""
    plain, again = found["plain"], found.get("plain again")
    if again is None or plain["outcome"] != "ran":
        return None
    apart = gap(plain, again)
    return apart if apart > TOLERANCE else None


def one_device_apart(found: dict) -> float | None:
    """How far autodist on one device is from a plain model.fit that repeated itself (and warned of
    no order it spends, which the ``ORDER_FIXED`` ways judge), where that is past ``TOLERANCE``;
    ``None`` otherwise. Two plain runs that agree can still both be one of the numbers a program
    trains from run to run (keras.io's ConvMixer: 1.973 in one full run, 1.982 twice in the next,
    where autodist gave 1.973): judged again with ``REPEATABLE_WITH`` before it is autodist's."""
    plain, one, again = found["plain"], found["autodist, 1 device"], found.get("plain again")
    if again is None or not plain["outcome"] == one["outcome"] == again["outcome"] == "ran":
        return None
    if gap(plain, again) > TOLERANCE or ordered_apart(found):
        return None
    apart = gap(plain, one)
    return apart if apart > TOLERANCE else None


def verdict(found: dict) -> str:
    """The contract's verdict of one program's ways (:data:`WITHIN` lists the kinds within it).
    Judged with the settings of ``REPEATABLE_WITH`` where that is what the records are."""
    settings = found.get("judged with")
    if settings is None:
        return _verdict(found)
    if found.get("one device apart without") is not None:
        equal = "equal to it with them" if gap(found["plain"], found["autodist, 1 device"]) <= TOLERANCE else "apart"
        why = (
            f"autodist on one device is {found['one device apart without']:.2g} from plain model.fit, which "
            f"repeated itself in that run; {equal}"
        )
    else:
        why = f"plain model.fit on one device is {found['apart without']:.2g} from itself"
    said = f"{_verdict(found)} (judged with {settings} in every way: without, {why})"
    # fixed orders hide what autodist does to them: judged so, a program is within only where it warned of them
    return f"orders not judged: {said}" if found.get("orders hidden") else said


def _verdict(found: dict) -> str:
    plain, one, two, hand = (found[way] for way in WAYS)
    ran = [way for way in found.values() if isinstance(way, dict) and "outcome" in way]  # the extra ways too
    if any(way["outcome"].startswith(("not measured", "no record (exit -9): timed out")) for way in ran):
        return "not measured: a way ran over 600 s or kept no record"
    if plain["outcome"] != "ran":
        return f"the program fails on one device here: {plain['outcome'][:120]}"
    if not (plain["fits"] or plain["evaluates"] or plain["predicts"] or plain.get("finals")):
        return "nothing to compare: it trains, evaluates and predicts nothing, and keeps no model's weights"
    again = found.get("plain again")
    if again is not None and (again["outcome"] != "ran" or gap(plain, again) > TOLERANCE):
        return f"not repeatable on one device (plain twice: {gap(plain, again):.2g} apart; autodist on one device {gap(plain, one):.2g})"
    ordered = order_verdict(found)
    if ordered is not None:
        return ordered
    if one["outcome"] != "ran" or gap(plain, one) > TOLERANCE:
        return (
            f"autodist on one device is not model.fit: {one['outcome'][:120]} (gap {gap(plain, one):.2g})"
            if one["outcome"] != "ran"
            else f"autodist on one device differs by {gap(plain, one):.2g}"
        )
    if two["outcome"] != "ran":
        named = two["outcome"].split(":")[0]  # an AutodistError of its own class: named as one
        if two.get("autodist_error"):
            return named if named == "AutodistError" else f"AutodistError ({named})"
        return f"crash: {two['outcome'][:160]}"
    apart = gap(plain, two)
    if apart <= TOLERANCE:
        return "equal"
    warned = two["warnings"]
    if hand["outcome"] == "ran" and gap(hand, two) <= TOLERANCE and warned:
        return f"= hand-built, warned ({apart:.2g} from one device)"
    plain64, two64 = (found.get(way, {"outcome": "not run"}) for way in FLOAT64)
    if rounded_apart(found) and plain64["outcome"] == two64["outcome"] == "ran" and gap(plain64, two64) <= TOLERANCE:
        return f"equal but for float32's rounding ({apart:.2g} from one device, = hand-built; equal to it in float64)"
    if unwarned_apart(found):
        if plain64["outcome"] == two64["outcome"] == "ran" and gap(plain64, two64) <= TOLERANCE:
            return f"equal but for float32's rounding ({apart:.2g} from one device; equal to it in float64)"
        backwards = found.get(next(iter(REVERSED)), {"outcome": "not run"})
        spread = gap(plain, backwards) if backwards["outcome"] == "ran" else None
        if spread is not None and apart <= ROUNDING_SPREAD * spread:
            return (
                f"equal but for float32's rounding ({apart:.2g} from one device; one device with each batch "
                f"reversed is {spread:.2g} from itself)"
            )
    keras_statistics = found.get(next(iter(KERAS_STATISTICS)), {"outcome": "not run"})
    if averaged_apart(found) and keras_statistics["outcome"] == "ran":
        if gap(hand, keras_statistics) <= TOLERANCE:
            return (
                f"= hand-built but for the averaged moving statistics, warned ({apart:.2g} from one device, "
                f"{gap(hand, two):.2g} from hand-built; = hand-built with Keras's own)"
            )
        backwards = found.get(next(iter(REVERSED)), {"outcome": "not run"})
        drawn = any(RANDOM_DRAWS in w for w in two["warnings"])  # then the gaps are the draws': judged below
        rounding = gap(plain, backwards) if backwards["outcome"] == "ran" else None
        if not drawn and rounding is not None and gap(hand, keras_statistics) <= ROUNDING_SPREAD * rounding:
            return (
                f"= hand-built but for the averaged moving statistics, warned ({apart:.2g} from one device, "
                f"{gap(hand, two):.2g} from hand-built; with Keras's own {gap(hand, keras_statistics):.2g} from it, "
                f"float32's rounding: one device with each batch reversed is {gap(plain, backwards):.2g} from itself)"
            )
    if hand["outcome"] == "ran" and gap(hand, two) <= TOLERANCE and own_strategy(found):
        return f"= its own strategy ({apart:.2g} from one device, as the program trains without autodist)"
    if drew_apart(found):
        plain_off, two_off, hand_off = (found.get(way, {"outcome": "not run"}) for way in DRAWS_OFF)
        if plain_off["outcome"] == two_off["outcome"] == "ran" and gap(plain_off, two_off) <= TOLERANCE:
            return f"warned: independent random draws ({apart:.2g} from one device; equal to it with the draws fixed)"
        plain_64, two_64 = (found.get(way, {"outcome": "not run"}) for way in DRAWS_OFF_FLOAT64)
        if plain_64["outcome"] == two_64["outcome"] == "ran" and gap(plain_64, two_64) <= TOLERANCE:
            return (
                f"warned: independent random draws ({apart:.2g} from one device; with the draws fixed "
                f"{gap(plain_off, two_off):.2g} from it, float32's rounding: equal to it in float64)"
            )
        own_rounding = reversed_rounding(found)
        if own_rounding is not None and gap(plain_off, two_off) <= ROUNDING_SPREAD * own_rounding:
            return (
                f"warned: independent random draws ({apart:.2g} from one device; with the draws fixed "
                f"{gap(plain_off, two_off):.2g} from it, float32's rounding: one device with each batch "
                f"reversed is {own_rounding:.2g} from itself)"
            )
        if (
            hand_off["outcome"] == two_off["outcome"] == "ran"
            and gap(hand_off, two_off) <= TOLERANCE
            and any(RANDOM_DRAWS not in w for w in warned)  # a cause besides the draws is warned
        ):
            return (
                f"warned: independent random draws ({apart:.2g} from one device; with the draws fixed "
                f"{gap(plain_off, two_off):.2g} from it, = hand-built, warned)"
            )
    drawn = any(RANDOM_DRAWS in w for w in warned)
    for cause in CAUSES_REMOVED:
        if warned_apart(found, cause.said):
            removed_plain, removed_two = (found.get(way, {"outcome": "not run"}) for way in cause.ways(drawn))
            if not removed_plain["outcome"] == removed_two["outcome"] == "ran":
                continue
            removed = cause.removed + (" and the draws fixed" if drawn else "")
            left = gap(removed_plain, removed_two)
            if left <= TOLERANCE:
                return f"{cause.verdict} ({apart:.2g} from one device; {removed}, equal to it)"
            backwards = found.get(next(iter(cause.spread(drawn))), {"outcome": "not run"})
            spread = gap(removed_plain, backwards) if backwards["outcome"] == "ran" else None
            if spread is not None and left <= ROUNDING_SPREAD * spread:
                return (
                    f"{cause.verdict} ({apart:.2g} from one device; {removed}, {left:.2g} from it, within the "
                    f"program's own spread: one device so with each batch reversed is {spread:.2g} from itself)"
                )
            plain_64, two_64 = (found.get(way, {"outcome": "not run"}) for way in cause.in_float64(drawn))
            if plain_64["outcome"] == two_64["outcome"] == "ran" and gap(plain_64, two_64) <= TOLERANCE:
                return (
                    f"{cause.verdict} ({apart:.2g} from one device; {removed}, {left:.2g} from it, float32's "
                    f"rounding: equal to it in float64)"
                )
    plain_dense, two_dense = (found.get(way, {"outcome": "not run"}) for way in DENSE)
    if plain_dense["outcome"] == two_dense["outcome"] == "ran" and gap(plain_dense, two_dense) <= TOLERANCE:
        return f"differs by {apart:.2g} (warned; {SPARSE_CAUSE})"
    return f"differs by {apart:.2g}" + (" (warned)" if warned else " (not warned)")


#: The cause a ``DENSE`` run shows, as the verdict names it.
SPARSE_CAUSE = (
    "with the draws fixed, equal to one device once every sparse gradient is applied dense: Keras's sparse "
    "optimizer update, which squares each replica's slice of an embedding row apart"
)


WITHIN = (
    "equal",
    "equal but for float32's rounding",
    "= hand-built, warned",
    "= hand-built but for the averaged moving statistics, warned",
    "= its own strategy",
    "= its own strategy but for the order Keras spends, warned",
    "warned: independent random draws",
    *(cause.verdict for cause in CAUSES_REMOVED),
    "AutodistError",
)
#: The programs CI runs (``.ci/run``): one of each kind of source and verdict, and one of each kind
#: of failure an unpicked program showed (issue 59): raw TensorFlow beside Keras (``tf_basics``), a
#: batch smaller than the replicas with a layer Keras cannot save (``attention_mil``), a zip of CSV
#: fetched by ``get_file`` (``weather_forecasting``), a notebook's cells (``tf_quickstart_beginner``,
#: ``tf_regression``), independent draws judged with the draws fixed (``mnist_convnet_k3``).
CI_SLICE = [
    "mnist_convnet",
    "autoencoder",
    "knowledge_distillation",
    "collaborative_filtering",
    "guide_layers_and_models_via_subclassing",
    "tf_quickstart_beginner",
    "tf_basics",
    "attention_mil",
    "weather_forecasting",
    "mnist_convnet_k3",
    "guide_understanding_masking_and_padding",
    "tf_regression",
]
TABLE_START, TABLE_END = (
    "<!-- corpus table: python -m tests.corpus --write docs/corpus.md -->",
    "<!-- end of corpus table -->",
)


def kind(said: str) -> str:
    """A verdict without its figures: what ``--check`` compares (``differs by 0.12 (not
    warned)`` reads ``differs by N``). Equal within 1e-4, and equal once float32's rounding is
    measured out, are one kind: which of the two a run gives depends on the machine's sums, not
    on the program."""
    head = said.split(" (")[0]
    return "equal" if head == "equal but for float32's rounding" else re.sub(r"\d[\d.e+-]*", "N", head)


def row(name: str, found: dict) -> tuple[str, str]:
    source, said = SOURCES[name], verdict(found)
    hand = found["hand-built"]
    hand_said = "trains" if hand["outcome"] == "ran" else f"fails ({hand['outcome'].split(':')[0]})"
    warnings = "; ".join(w.split(":")[0][:80] for w in found["autodist, 2 replicas"].get("warnings", [])) or "-"
    sizes = (
        f"{source.get('samples', os.environ.get('CORPUS_SAMPLES', 256))} samples, "
        f"{source.get('epochs', os.environ.get('CORPUS_EPOCHS', 2))} epochs"
        + (", tf_keras" if source.get("keras") == "tf_keras" else "")
        + (", JAX" if source.get("backend") == "jax" else "")
    )
    where = f"`{source['repository']}` `{source['path']}` @ `{source['commit'][:8]}`"
    return said, f"| `{name}` | {source['title']}: {where} | {said} | {hand_said} | {sizes} | {warnings} |"


def table_rows(text: str) -> dict[str, str]:
    """The verdict of each program in a written table, by name."""
    body = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0]
    return {
        cells[0].strip("|` "): cells[2].strip()
        for line in body.splitlines()
        if line.startswith("| `")
        for cells in [line.split(" | ")]
        if len(cells) > 3
    }


def written_table(text: str, rows: list[str], full: bool) -> str:
    """``text`` with its corpus table made of ``rows`` (its header first): the whole table after a
    full run; after a run of some programs, their rows put in place (in the order of their
    names) and the others' kept as written, with its summary counted from the merged table."""
    head, rest = text.split(TABLE_START, 1)
    body, tail = rest.split(TABLE_END, 1)
    if not full:
        ran = {line.split(" | ")[0].strip("|` "): line for line in rows[2:]}
        kept = {
            line.split(" | ")[0].strip("|` "): line
            for line in body.splitlines()
            if line.startswith("| `") and line.split(" | ")[0].strip("|` ") in SOURCES
        }
        rows = rows[:2] + [line for _name, line in sorted({**kept, **ran}.items())]
    said = [line.split(" | ")[2].strip() for line in rows[2:]]
    summary = f"{sum(s.startswith(WITHIN) for s in said)} of {len(said)} within the contract"
    return f"{head}{TABLE_START}\n{chr(10).join(rows)}\n\n{summary}.\n{TABLE_END}{tail}"


def check_left_out(names: list[str], out: Path) -> list[str]:
    """Each left-out program's reason checked (tests/corpus/left_out.py): read from its text, and
    for a measured one, its plain way run again (:func:`plain_ways`). What no longer holds, one
    line each."""
    for name in names:
        text = program(name).read_bytes()
        assert hashlib.sha256(text).hexdigest() == entry(name)["sha256"], f"{name}: the program is not its source's text"
    said = {name: left_out.read(name) for name in names}
    measured = [n for n in names if said[n] is None and left_out.kind(left_out.LEFT_OUT[n]) in left_out.MEASURED]
    said.update({name: left_out.measured(name, record) for name, record in plain_ways(measured, out).items()})
    wrong = []
    for name in names:
        print(f"left out: {name}: {said[name] or 'the reason holds'}", flush=True)
        if said[name]:
            wrong.append(f"{name}: {said[name]}")
    return wrong


def plain_ways(names: list[str], out: Path) -> dict[str, dict]:
    """The plain way of each of ``names``, side by side as a program's first ways run (two, or one
    core's one: their memory is not known), each bounded at 600 s as any way is. A program left out
    as running past 600 s is so measured under the runner's own conditions."""
    out.mkdir(parents=True, exist_ok=True)
    plain = {"plain": WAYS["plain"]}
    pending, started, found = list(names), {}, {}
    while pending or started:
        while pending and len(started) < max(1, min(os.cpu_count() or 1, 2)):
            name = pending.pop(0)
            started[name] = _start_way(name, out, plain, plain["plain"])
        name = _first_done(started)
        found[name] = _finish_way(*started.pop(name))
    return found


def judge(name: str, out: Path) -> dict:
    """One program's ways, and the extra ways its first records call for, run (or read, where kept)."""
    found = run(name, out)
    found["own_strategy"] = own_distribution(program_text(program(name)))  # as run.py decides it
    if found["plain"]["outcome"] == "ran" and gap(found["plain"], found["autodist, 1 device"]) > TOLERANCE:
        found.update(run(name, out, AGAIN))
        if not_repeatable(found) is not None or one_device_apart(found) is not None:  # judged again, steadily
            return found
    if ordered_apart(found):
        found.update(run(name, out, ORDER_FIXED))
    if drew_apart(found):
        found.update(run(name, out, DRAWS_OFF))
        if rounded_with_draws_fixed(found):  # float64, and the program's own spread: always both
            found.update(run(name, out, DRAWS_OFF_FLOAT64))
            found.update(run(name, out, DRAWS_OFF_REVERSED))
            if not verdict(found).startswith(WITHIN):  # neither tells: Keras's sparse updates
                found.update(run(name, out, DENSE))
    if averaged_apart(found):
        found.update(run(name, out, KERAS_STATISTICS))
        drawn = any(RANDOM_DRAWS in w for w in found["autodist, 2 replicas"]["warnings"])
        if not drawn and not verdict(found).startswith(WITHIN):  # apart from hand-built: rounding, or why
            found.update(run(name, out, REVERSED))
    drawn = any(RANDOM_DRAWS in w for w in found["autodist, 2 replicas"].get("warnings", []))
    for cause in CAUSES_REMOVED:
        if warned_apart(found, cause.said) and not verdict(found).startswith(WITHIN):
            found.update(run(name, out, cause.ways(drawn)))
            if not verdict(found).startswith(WITHIN):  # still apart: the program's own rounding, measured
                found.update(run(name, out, cause.spread(drawn)))
            if not verdict(found).startswith(WITHIN):  # beyond it: rounding one device's order does not show
                found.update(run(name, out, cause.in_float64(drawn)))
    if unwarned_apart(found):  # float64, and the program's own spread: both measured
        found.update(run(name, out, FLOAT64))
        found.update(run(name, out, REVERSED))
    return found


def judged_steadily(name: str, out: Path, found: dict) -> dict:
    """``found`` as it is, or, where plain model.fit does not repeat itself on one device (or
    autodist there is apart from it: :func:`one_device_apart`), the judgement again with the first
    settings of ``REPEATABLE_WITH`` under which plain repeats itself, named in the verdict."""
    apart, one_apart = not_repeatable(found), one_device_apart(found)
    for overlay, settings in REPEATABLE_WITH if apart is not None or one_apart is not None else ():
        with with_settings(overlay):
            steady = judge(name, out)
            steady.update(run(name, out, AGAIN) if "plain again" not in steady else {})
        if not_repeatable(steady) is None:
            said = found["autodist, 2 replicas"].get("warnings", [])
            hidden = "CORPUS_ORDER" in overlay[1] and not any(o in w for w in said for o in ORDER_CAUSES)
            return {
                **steady,
                "judged with": settings,
                "apart without": apart,
                "one device apart without": one_apart,
                "orders hidden": hidden,
            }
    return found


def main(argv: list[str]) -> int:
    """``[--check DOC | --write DOC] [NAME ...]``: run the programs (all by default; ``ci``: the
    CI slice) and print their table; ``--check`` fails when a verdict's kind is not the one DOC's
    table gives; ``--write`` puts the table into DOC. A full run (no names) also checks every
    left-out program's reason; ``--left-out [NAME ...]`` checks only those."""
    if argv == ["--list"]:
        print(*sorted(SOURCES), sep="\n")
        return 0
    if argv[:1] == ["--speed"]:  # what autodist costs (tests/corpus/speed.py)
        from tests.corpus import speed

        return speed.main(argv[1:])
    if argv[:1] == ["--left-out"]:
        with tempfile.TemporaryDirectory() as out:
            wrong = check_left_out(argv[1:] or sorted(left_out.LEFT_OUT), Path(os.environ.get("CORPUS_KEEP") or out))
        print(*wrong, sep="\n")
        return 1 if wrong else 0
    mode, doc = (argv[0], Path(argv[1])) if argv[:1] in (["--check"], ["--write"]) else (None, None)
    names = argv[2:] if mode else argv
    full = not names
    names = CI_SLICE if names == ["ci"] else names or sorted(SOURCES)
    rows = ["| name | program and source | verdict | hand-built | sizes | warnings |", "|---|---|---|---|---|---|"]
    outside, verdicts = [], {}
    keep = os.environ.get("CORPUS_KEEP")  # a folder to keep each way's record and files in
    with contextlib.nullcontext(keep) if keep else tempfile.TemporaryDirectory() as out:
        began = time.monotonic()
        for name in names:
            program_began = time.monotonic()
            text = program(name).read_bytes()
            assert hashlib.sha256(text).hexdigest() == SOURCES[name]["sha256"], (
                f"{name}: the program is not its source's text"
            )
            found = judged_steadily(name, Path(out), judge(name, Path(out)))
            said, line = row(name, found)
            verdicts[name] = said
            rows.append(line)
            print(line, flush=True)
            print(f"time: {name} {time.monotonic() - program_began:.0f} s (records kept before are read, not run)", file=sys.stderr, flush=True)
            if not said.startswith(WITHIN):
                outside.append(f"{name}: {said}")
        wrong_reasons = check_left_out(sorted(left_out.LEFT_OUT), Path(out)) if full else []
    print(f"time: the run {time.monotonic() - began:.0f} s on {os.cpu_count()} cores", file=sys.stderr, flush=True)
    summary = f"{len(names) - len(outside)} of {len(names)} within the contract"
    print("\n".join(rows), f"\n{summary}", *(f"outside: {o}" for o in outside), sep="\n")
    print(*(f"left out, reason wrong: {w}" for w in wrong_reasons), sep="\n")
    if mode == "--write":
        doc.write_text(written_table(doc.read_text(), rows, full))
    if mode == "--check":
        written = table_rows(doc.read_text())
        wrong = [
            f"{n}: measured {kind(verdicts[n])!r}, {doc} says {kind(written.get(n, 'nothing'))!r}"
            for n in names
            if kind(verdicts[n]) != kind(written.get(n, ""))
        ]
        print(*wrong, sep="\n")
        return 1 if wrong or wrong_reasons else 0
    return 1 if outside or wrong_reasons else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
