"""The corpus's own machinery, without TensorFlow: its programs are their sources' bytes, its
verdicts are the contract's, its table names every program, and its stand-ins give data of the
published formats. (Running the corpus itself is ``python -m tests.corpus``; CI runs a slice.)"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
import zipfile

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.corpus import __main__ as corpus
from tests.corpus import left_out
from tests.corpus import stand_ins
from tests.corpus.text import program_text

ROOT = corpus.ROOT


def test_every_program_is_its_sources_text_and_names_where_it_came_from():
    files = {path.name.split(".")[0]: path for path in (corpus.HERE / "programs").iterdir() if path.is_file()}
    assert sorted(files) == sorted(corpus.SOURCES)
    assert len(files) >= 40
    for name, source in corpus.SOURCES.items():
        assert {"title", "repository", "path", "commit", "licence", "sha256"} <= set(source), name
        assert len(source["commit"]) == 40 and source["repository"].count("/") == 1, name
        assert files[name] == corpus.program(name), name
        assert hashlib.sha256(files[name].read_bytes()).hexdigest() == source["sha256"], name


def test_the_table_names_every_program_and_every_left_out_one_says_why():
    written = corpus.table_rows((ROOT / "docs" / "corpus.md").read_text())
    assert sorted(written) == sorted(corpus.SOURCES)
    assert all(corpus.kind(said) for said in written.values())
    left_out = json.loads((corpus.HERE / "left_out.json").read_text())
    assert not set(left_out) & set(corpus.SOURCES)
    doc = (ROOT / "docs" / "corpus.md").read_text()
    assert all(f"`{name}`" in doc and entry["why"] in doc for name, entry in left_out.items())


def _way(fits=((1.0, 0.5),), weights=((0.1, 0.2),), outcome="ran", warnings=(), autodist_error=False):
    return {
        "outcome": outcome,
        "autodist_error": autodist_error,
        "warnings": list(warnings),
        "evaluates": [],
        "predicts": [],
        "fits": [{"history": {"loss": list(history)}, "weights": [list(w) for w in weights]} for history in fits],
    }


def _found(plain, one, two, hand):
    return dict(zip(corpus.WAYS, (plain, one, two, hand)))


RANDOM = f"AutodistWarning: Dropout draws {corpus.RANDOM_DRAWS}"


@pytest.mark.parametrize(
    "two, hand, expected",
    [
        (_way(), _way(), "equal"),
        (_way(fits=((1.0, 0.6),), warnings=["cause and size"]), _way(fits=((1.0, 0.6),)), "= hand-built, warned"),
        (_way(fits=((1.0, 0.6),)), _way(fits=((1.0, 0.6),)), "differs by 0.1"),  # the same as hand-built, but silent
        (_way(outcome="AutodistError: the fix", autodist_error=True), _way(), "AutodistError"),
        (_way(outcome="ReplicaContextError: the fix", autodist_error=True), _way(), "AutodistError (ReplicaContextError)"),
        (_way(outcome="InvalidArgumentError: placeholder"), _way(), "crash"),
    ],
)
def test_a_verdict_is_the_contracts(two, hand, expected):
    said = corpus.verdict(_found(_way(), _way(), two, hand))
    assert corpus.kind(said) == expected or said.startswith(expected), said
    assert said.startswith(corpus.WITHIN) == expected.startswith(corpus.WITHIN)


def test_independent_draws_are_within_only_where_fixing_the_draws_leaves_one_device_or_hand_built_warned():
    drew = _found(_way(), _way(), _way(fits=((1.0, 0.6),), warnings=[RANDOM]), _way(fits=((1.0, 0.55),)))
    assert corpus.drew_apart(drew) and not corpus.drew_apart(_found(_way(), _way(), _way(fits=((1.0, 0.6),)), _way()))
    fixed = dict(zip(corpus.DRAWS_OFF, (_way(), _way(), _way())))
    assert corpus.verdict({**drew, **fixed}).startswith(
        "warned: independent random draws (0.1 from one device; equal to it"
    )
    uneven = dict(zip(corpus.DRAWS_OFF, (_way(), _way(fits=((1.0, 0.52),)), _way(fits=((1.0, 0.52),)))))
    assert corpus.verdict({**drew, **uneven}).startswith("differs by 0.1 (warned)")  # only the draws' warning
    drew["autodist, 2 replicas"]["warnings"].append(RANDOM.replace("Dropout", "Dropout_1"))  # draws, once more
    assert corpus.verdict({**drew, **uneven}).startswith("differs by 0.1 (warned)")  # nothing else is warned
    drew["autodist, 2 replicas"]["warnings"].append("AutodistWarning: the last batch splits 45/44")
    assert corpus.verdict({**drew, **uneven}).startswith(
        "warned: independent random draws (0.1 from one device; with the draws fixed 0.02"
    )
    uneven["hand-built, draws fixed"] = _way(outcome="InvalidArgumentError: AddN")
    assert corpus.verdict({**drew, **uneven}).startswith(
        "differs by 0.1 (warned)"
    )  # nothing to measure the rest against
    assert corpus.verdict(drew).startswith("differs")  # the draws-fixed ways never ran


def test_a_gap_left_with_the_draws_fixed_is_rounding_only_where_one_device_moves_as_far_with_its_batches_reversed():
    """With the draws fixed, autodist 0.02 from one device, and the program does not run in
    float64: within where plain model.fit with each batch's samples in reverse order (the same
    steps, the sums in another order) moves at least half as far from itself
    (``ROUNDING_SPREAD``); outside where it moves less, or where that way failed or never ran."""
    drew = _found(_way(), _way(), _way(fits=((1.0, 0.6),), warnings=[RANDOM]), _way(fits=((1.0, 0.55),)))
    fixed = dict(zip(corpus.DRAWS_OFF, (_way(), _way(fits=((1.0, 0.52),)), _way(fits=((1.0, 0.52),)))))
    no64 = dict(zip(corpus.DRAWS_OFF_FLOAT64, (_way(outcome="ValueError: float32 concat"),) * 2))
    way = next(iter(corpus.DRAWS_OFF_REVERSED))
    assert corpus.reversed_rounding({**drew, **fixed, **no64}) is None
    said = corpus.verdict({**drew, **fixed, **no64, way: _way(fits=((1.0, 0.475),))})
    assert said.startswith("warned: independent random draws (0.1 from one device; with the draws fixed 0.02") and (
        "one device with each batch reversed is 0.025 from itself" in said and said.startswith(corpus.WITHIN)
    ), said
    closer = corpus.verdict({**drew, **fixed, **no64, way: _way(fits=((1.0, 0.505),))})  # 0.02 > 2 x 0.005
    assert closer.startswith("differs by 0.1 (warned)"), closer
    failed = corpus.verdict({**drew, **fixed, **no64, way: _way(outcome="ValueError: reversed")})
    assert failed.startswith("differs by 0.1 (warned)"), failed


def test_a_gap_that_dense_gradients_close_is_named_as_kerass_sparse_update_and_stays_outside():
    drew = _found(_way(), _way(), _way(fits=((1.0, 0.6),), warnings=[RANDOM]), _way(fits=((1.0, 0.55),)))
    fixed = dict(zip(corpus.DRAWS_OFF, (_way(), _way(fits=((1.0, 0.52),)), _way(fits=((1.0, 0.52),)))))
    dense = dict(zip(corpus.DENSE, (_way(), _way())))
    said = corpus.verdict({**drew, **fixed, **dense})
    assert said == f"differs by 0.1 (warned; {corpus.SPARSE_CAUSE})" and not said.startswith(corpus.WITHIN), said
    assert corpus.kind(said) == "differs by N"
    rounded = "equal but for float32's rounding (0.00012 from one device, = hand-built; equal to it in float64)"
    assert corpus.kind(rounded) == corpus.kind("equal") == "equal"  # which one a machine's sums give
    apart = dict(zip(corpus.DENSE, (_way(), _way(fits=((1.0, 0.52),)))))
    assert corpus.verdict({**drew, **fixed, **apart}) == "differs by 0.1 (warned)"


def test_an_unwarned_gap_is_within_only_where_float64_shows_it_is_float32_rounding():
    """autodist on 2 replicas = hand-built, apart from one device, nothing warned: within only when
    the same two ways in float64 agree; a gap that float64 keeps (a model that mixes its batch) is
    outside, and so is one the float64 ways never measured."""
    rounded = _found(_way(), _way(), _way(fits=((1.0, 0.6),)), _way(fits=((1.0, 0.6),)))
    assert corpus.rounded_apart(rounded)
    warned = _way(fits=((1.0, 0.6),), warnings=["w"])
    assert not corpus.rounded_apart(_found(_way(), _way(), warned, _way(fits=((1.0, 0.6),))))
    assert not corpus.rounded_apart(_found(_way(), _way(), _way(fits=((1.0, 0.6),)), _way(fits=((1.0, 0.7),))))
    equal64 = dict(zip(corpus.FLOAT64, (_way(), _way())))
    said = corpus.verdict({**rounded, **equal64})
    assert said.startswith("equal but for float32's rounding (0.1 from one device") and said.startswith(corpus.WITHIN)
    kept = dict(zip(corpus.FLOAT64, (_way(), _way(fits=((1.0, 0.6),)))))
    assert corpus.verdict({**rounded, **kept}) == "differs by 0.1 (not warned)"
    assert corpus.verdict(rounded) == "differs by 0.1 (not warned)"


def test_draws_fixed_and_still_apart_is_within_only_where_float64_with_the_draws_fixed_agrees():
    crashed = _way(outcome="RuntimeError: optimizer")
    drew = _found(_way(), _way(), _way(fits=((1.0, 0.6),), warnings=[RANDOM]), crashed)
    fixed = dict(zip(corpus.DRAWS_OFF, (_way(), _way(fits=((1.0, 0.501),)), crashed)))
    assert corpus.rounded_with_draws_fixed({**drew, **fixed})
    assert corpus.verdict({**drew, **fixed}).startswith("differs by 0.1 (warned)")
    agree = dict(zip(corpus.DRAWS_OFF_FLOAT64, (_way(), _way())))
    assert corpus.verdict({**drew, **fixed, **agree}).startswith(
        "warned: independent random draws (0.1 from one device; with the draws fixed 0.001 from it, float32's"
    )
    apart = dict(zip(corpus.DRAWS_OFF_FLOAT64, (_way(), _way(fits=((1.0, 0.501),)))))
    assert corpus.verdict({**drew, **fixed, **apart}).startswith("differs by 0.1 (warned)")


AVERAGED = f"AutodistWarning: BatchNormalization (bn) ... {corpus.AVERAGED_STATISTICS}, as tf.keras did"


def test_averaged_moving_statistics_are_within_only_where_keras_own_statistics_give_hand_built():
    """autodist on 2 replicas apart from the hand-built strategy, saying it averaged the moving
    statistics: within only when the same program with that one workaround left out
    (``KERAS_STATISTICS``) is the hand-built strategy's numbers; a gap that stays, or one never
    measured, is outside; without the warning there is nothing to judge."""
    averaged = _found(_way(), _way(), _way(fits=((1.0, 0.6),), warnings=[AVERAGED]), _way(fits=((1.0, 0.62),)))
    assert corpus.averaged_apart(averaged)
    assert not corpus.averaged_apart(_found(_way(), _way(), _way(fits=((1.0, 0.6),), warnings=["w"]), _way()))
    keras_own = dict(zip(corpus.KERAS_STATISTICS, (_way(fits=((1.0, 0.62),)),)))
    said = corpus.verdict({**averaged, **keras_own})
    assert said.startswith("= hand-built but for the averaged moving statistics, warned (0.1 from one device, 0.02")
    assert said.startswith(corpus.WITHIN)
    still_apart = dict(zip(corpus.KERAS_STATISTICS, (_way(fits=((1.0, 0.6),)),)))
    assert corpus.verdict({**averaged, **still_apart}) == "differs by 0.1 (warned)"
    # a program whose sums round apart in any two orders: within as far as one device moves with its batches reversed
    near = dict(zip(corpus.KERAS_STATISTICS, (_way(fits=((1.0, 0.625),)),)))
    reversed_far = dict(zip(corpus.REVERSED, (_way(fits=((1.0, 0.503),)),)))
    said = corpus.verdict({**averaged, **near, **reversed_far})
    assert said.startswith("= hand-built but for the averaged moving statistics, warned") and "reversed is 0.003" in said
    reversed_near = dict(zip(corpus.REVERSED, (_way(fits=((1.0, 0.501),)),)))
    assert corpus.verdict({**averaged, **near, **reversed_near}) == "differs by 0.1 (warned)"  # 0.005 > 2 x 0.001
    # with random draws the reversed way moves by its draws, not its rounding: no verdict from it
    averaged["autodist, 2 replicas"]["warnings"].append(RANDOM)
    assert not corpus.verdict({**averaged, **near, **reversed_far}).startswith(corpus.WITHIN)
    assert corpus.verdict(averaged) == "differs by 0.1 (warned)"
    left_out = corpus.EXTRA[id(corpus.KERAS_STATISTICS)][1]["AUTODIST_KERAS_COMPAT"]
    assert left_out == (
        "auto,-batchnorm_moving_statistics,-every_replica_fed,-symbolic_build_reads_input,-uneven_shares_weighted,-replica_slices_summed"
    )


SPENT = f"AutodistWarning: The script's own strategy trains a tf.data pipeline ... {corpus.SPENT_ORDER} ..."


def test_an_order_keras_spends_is_within_only_where_fixing_the_order_gives_plain_and_own_strategy():
    """autodist on one device apart from plain model.fit under the program's own strategy, saying
    Keras would have spent an order: within only when, with every shuffle keeping its order,
    autodist on one device is plain model.fit and on 2 replicas the program's own strategy."""
    spent = _found(_way(), _way(fits=((1.0, 0.6),), warnings=[SPENT]), _way(fits=((1.0, 0.7),)), _way(fits=((1.0, 0.8),)))
    assert corpus.ordered_apart(spent)
    assert not corpus.ordered_apart(_found(_way(), _way(fits=((1.0, 0.6),)), _way(), _way()))
    fixed = dict(zip(corpus.ORDER_FIXED, (_way(), _way(), _way(fits=((1.0, 0.7),)), _way(fits=((1.0, 0.7),)))))
    said = corpus.verdict({**spent, **fixed})
    assert said.startswith("= its own strategy but for the order Keras spends, warned (0.1 from plain") and said.startswith(corpus.WITHIN)
    one_apart = {**fixed, "autodist, 1 device, order fixed": _way(fits=((1.0, 0.6),))}
    assert corpus.verdict({**spent, **one_apart}).startswith("autodist on one device differs by 0.1")
    two_apart = {**fixed, "autodist, 2 replicas, order fixed": _way(fits=((1.0, 0.75),))}
    assert corpus.verdict({**spent, **two_apart}).startswith("autodist on one device differs by 0.1")
    assert corpus.verdict(spent).startswith("autodist on one device differs by 0.1")  # never measured
    assert corpus.EXTRA[id(corpus.ORDER_FIXED)][1] == {"CORPUS_ORDER": "fixed"}


def test_a_way_writes_to_a_tmp_of_its_own_and_its_records_reach_the_runs_folder(processes, tmp_path):
    """Where this machine can make one (a private mount namespace): two ways writing the same
    fixed /tmp path do not meet, and what a way writes to the run's folder stays there."""
    import os
    import subprocess

    if not corpus.private_tmp():
        pytest.skip("no private mount namespace here (unshare -rm)")
    out, checkout, hidden = tmp_path / "records", tmp_path / "checkout", tmp_path / "hidden"
    for folder in (out, checkout, hidden):
        folder.mkdir()
    (checkout / "run.py").write_text("")  # a checkout under /tmp (issue 59: every way exited 2 there)
    (hidden / "else").write_text("")
    script = (
        "test ! -e /tmp/shared-name && touch /tmp/shared-name && test -e $2/run.py && test ! -e $3/else "
        "&& echo $1 > $CORPUS_OUT/way-$1"
    )
    for way in ("one", "two"):
        env = {**os.environ, "CORPUS_OUT": str(out), "CORPUS_BIND": f"{out}:{checkout}"}
        command = [*corpus.private_tmp(), "sh", "-c", script, "sh", way, str(checkout), str(hidden)]
        proc = subprocess.run(command, env=env, capture_output=True)
        assert proc.returncode == 0, proc.stderr
    assert sorted(path.name for path in out.iterdir()) == ["way-one", "way-two"]
    assert not os.path.exists("/tmp/shared-name")


def test_a_program_autodist_changes_on_one_device_or_one_that_records_less_is_outside():
    assert corpus.verdict(_found(_way(), _way(fits=((1.0, 0.6),)), _way(), _way())).startswith(
        "autodist on one device differs"
    )
    assert corpus.gap(_way(), _way(fits=())) == float("inf")
    # a way that kept no record is apart from every other, not a KeyError that ends the run (issue 59)
    lost = {"outcome": "no record (exit -9): killed"}
    assert corpus.gap(_way(), lost) == corpus.gap(lost, _way()) == float("inf")
    assert corpus.verdict(_found(_way(), _way(), lost, _way())).startswith("crash: no record")
    assert corpus.verdict(_found(_way(outcome="OSError: no file"), _way(), _way(), _way())).startswith(
        "the program fails on one device"
    )


def test_ways_run_side_by_side_as_far_as_the_programs_own_measured_memory_allows(monkeypatch):
    monkeypatch.setattr(corpus, "PEAKS", {})
    monkeypatch.setattr(corpus, "_available_memory", lambda: 20 * 2**30)
    monkeypatch.setattr(corpus.os, "cpu_count", lambda: 8)
    assert corpus.side_by_side("big", 4) == 2  # not measured yet: two, on any number of cores
    corpus.PEAKS["big"] = 9 * 2**30  # issue 59: four ways at about 9 GB each, and the kernel killed one
    assert corpus.side_by_side("big", 3) == 1
    corpus.PEAKS["small"] = 2**30
    assert corpus.side_by_side("small", 3) == 3  # never more than the ways waiting
    corpus.PEAKS["huge"] = 40 * 2**30
    assert corpus.side_by_side("huge", 3) == 1  # one at a time, whatever it needs


def test_a_notebook_runs_its_code_cells_with_shell_and_magic_lines_doing_nothing(tmp_path, monkeypatch):
    cells = [
        {"cell_type": "markdown", "source": ["x = 'not code'\n"]},
        {"cell_type": "code", "source": ["!pip install -q keras-tuner\n", "import math\n"]},
        {"cell_type": "code", "source": ["%%time\n", "if True:\n", "  !ls saved_model\n", "  y = math.pi\n"]},
        {"cell_type": "code", "source": ["%%bash\n", "echo ${GREETINGS}\n"]},
        {"cell_type": "code", "source": ["math.pi?\n", "v = 1\n"]},
        {"cell_type": "code", "source": [" for u in range(2):\n", "   v += u\n"]},
        {"cell_type": "code", "source": ["%%writefile mnist_setup.py\n", "z = 2\n"]},
        {"cell_type": "code", "source": ["import mnist_setup\n", "w = mnist_setup.z\n"]},
    ]
    notebook = tmp_path / "n.ipynb"
    notebook.write_text(json.dumps({"cells": cells}))
    scope: dict = {}
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    exec(compile(program_text(notebook), "n", "exec"), scope)
    assert scope["y"] == pytest.approx(3.14159, abs=1e-5) and "x" not in scope
    assert scope["w"] == 2 and scope["v"] == 2  # the module a %%writefile cell wrote, imported; help lines pass


@pytest.fixture
def data_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(stand_ins, "FOLDER", tmp_path / "corpus-data")
    return tmp_path


def test_the_files_a_program_downloads_are_made_in_their_published_format(data_folder):
    heart = stand_ins.local("http://storage.googleapis.com/download.tensorflow.org/data/heart.csv")
    rows = list(csv.DictReader(open(heart)))
    assert len(rows) == stand_ins.SAMPLES + stand_ins.TEST and {r["thal"] for r in rows} <= {
        "fixed",
        "normal",
        "reversible",
    }
    ford = np.loadtxt(
        stand_ins.local("https://raw.githubusercontent.com/hfawaz/cd-diagram/master/FordA/FordA_TEST.tsv"),
        delimiter="\t",
    )
    assert ford.shape == (stand_ins.TEST, 501) and set(np.unique(ford[:, 0])) <= {-1.0, 1.0}
    with zipfile.ZipFile(stand_ins._get_file("ml-latest-small.zip", "http://files.grouplens.org/x.zip")) as archive:
        assert {"ml-latest-small/ratings.csv", "ml-latest-small/movies.csv"} <= set(archive.namelist())
    jena = stand_ins._get_file(origin="https://x/jena_climate_2009_2016.csv.zip", fname="jena_climate_2009_2016.csv.zip")
    with zipfile.ZipFile(jena) as archive:  # keras.io's weather forecasting: read by pandas, columns by name
        rows = list(csv.reader(archive.read("jena_climate_2009_2016.csv").decode().splitlines()))
    assert rows[0] == ["Date Time", *stand_ins.JENA_COLUMNS] and len(rows) - 1 > 792 / 0.285 + 720 / 0.285
    assert rows[1][0] == "01.01.2009 00:10:00" and all(len(row) == len(rows[0]) for row in rows)
    assert stand_ins.local("/Users/fchollet/Downloads/creditcard.csv").endswith(
        "creditcard.csv"
    )  # the author's own path
    assert stand_ins.local("https://example.com/unknown.csv") is None and stand_ins.local(str(data_folder)) is None
    with pytest.raises(RuntimeError, match="no stand-in for https://example.com/unknown.bin"):
        stand_ins._get_file("unknown.bin", "https://example.com/unknown.bin")


def test_the_datasets_have_keras_shapes_and_dtypes_at_either_size(monkeypatch):
    (x, y), (xt, yt) = stand_ins.DATASETS["cifar10"]()
    assert (x.shape, y.shape, x.dtype, xt.shape) == (
        (stand_ins.SAMPLES, 32, 32, 3),
        (stand_ins.SAMPLES, 1),
        np.uint8,
        (stand_ins.TEST, 32, 32, 3),
    )
    (x, y), _ = stand_ins.DATASETS["imdb"](num_words=100)
    assert x.dtype == object and max(max(seq) for seq in x) < 100 and y.shape == (stand_ins.SAMPLES,)
    monkeypatch.setattr(stand_ins, "FULL", True)
    (x, y), (xt, yt) = stand_ins.DATASETS["mnist"]()
    assert x.shape == (60000, 28, 28) and y.shape == (60000,) and xt.shape == (10000, 28, 28)


def test_large_numbers_are_equal_within_their_size_and_a_programs_own_strategy_is_its_reference():
    assert (
        corpus.verdict(
            _found(_way(fits=((14227.3017,),)), _way(fits=((14227.3017,),)), _way(fits=((14227.3027,),)), _way())
        )
        == "equal"
    )
    assert corpus.gap(_way(fits=((0.5,),)), _way(fits=((0.5002,),))) > corpus.TOLERANCE  # below 1, absolute
    scaled = _found(_way(), _way(), _way(fits=((1.0, 0.6),)), _way(fits=((1.0, 0.6),)))
    assert corpus.verdict(scaled).startswith("differs by 0.1 (not warned)")
    assert corpus.verdict({**scaled, "own_strategy": True}).startswith("= its own strategy (0.1 from one device")


def test_a_program_that_does_not_repeat_its_own_numbers_on_one_device_is_named_so():
    shaky = _found(_way(), _way(fits=((1.0, 0.7),)), _way(), _way())
    assert corpus.verdict(shaky).startswith("autodist on one device differs by 0.2")
    said = corpus.verdict({**shaky, "plain again": _way(fits=((1.0, 0.6),))})
    assert said.startswith("not repeatable on one device (plain twice: 0.1 apart") and not said.startswith(
        corpus.WITHIN
    )
    assert corpus.verdict({**shaky, "plain again": _way()}).startswith("autodist on one device differs by 0.2")


def test_a_program_judged_with_op_determinism_says_so_and_keeps_the_verdict_it_has_there(monkeypatch, tmp_path):
    """Plain model.fit apart from itself: the whole judgement again with op determinism in every way
    (records named ``-deterministic``), its verdict kept where plain then repeats itself, and named."""
    shaky = {**_found(_way(), _way(fits=((1.0, 0.7),)), _way(), _way()), "plain again": _way(fits=((1.0, 0.6),))}
    assert corpus.not_repeatable(shaky) == pytest.approx(0.1) and corpus.not_repeatable(_found(*[_way()] * 4)) is None
    overlay, settings = corpus.REPEATABLE_WITH[0]
    steady = {**_found(*[_way()] * 4), "judged with": settings, "apart without": 0.1}
    said = corpus.verdict(steady)
    assert said.startswith("equal (judged with TensorFlow's op determinism") and "0.1 from itself" in said
    assert corpus.kind(said) == "equal" and said.startswith(corpus.WITHIN)
    _overlay, ordered = corpus.REPEATABLE_WITH[1]  # every shuffle's order fixed: within only where orders were warned
    hidden = corpus.verdict({**steady, "judged with": ordered, "orders hidden": True})
    assert hidden.startswith("orders not judged: equal") and not hidden.startswith(corpus.WITHIN)
    started = []
    monkeypatch.setattr(corpus, "private_tmp", lambda: [])
    monkeypatch.setattr(corpus.subprocess, "Popen", lambda *args, env, **kwargs: started.append(env) or None)
    monkeypatch.setattr(corpus, "_first_done", lambda running: next(iter(running)))
    monkeypatch.setattr(corpus, "_finish_way", lambda proc, target, began: {"outcome": target.name})
    with corpus.with_settings(overlay):
        found = corpus.run("mnist_convnet", tmp_path, corpus.AGAIN)
    assert found["plain again"]["outcome"] == "mnist_convnet-plain-None-deterministic-again.json"
    assert started[0]["CORPUS_DETERMINISM"] == "on"
    assert "CORPUS_DETERMINISM" not in corpus._OVERLAY[-1][1]  # only inside


@pytest.mark.parametrize("drawn", [False, True], ids=["no draws warned", "draws warned"])
@pytest.mark.parametrize("cause", corpus.CAUSES_REMOVED, ids=lambda cause: cause.name)
def test_a_warned_cause_is_within_only_where_its_ways_without_it_give_one_device(cause, drawn):
    """A shuffle read ahead (its order fixed), a plain-function initializer (its draws seeded), each
    replica's batch statistics (synchronized); the draws fixed too only where they were warned."""
    warned = [f"AutodistWarning: ... {cause.said} ...", *([RANDOM] if drawn else [])]
    apart = _found(_way(), _way(), _way(fits=((1.0, 0.6),), warnings=warned), _way(outcome="ValueError: handle"))
    assert corpus.warned_apart(apart, cause.said) and corpus.verdict(apart).startswith("differs by 0.1 (warned)")
    removed = dict(zip(cause.ways(drawn), (_way(), _way())))
    other = dict(zip(cause.ways(not drawn), (_way(), _way())))  # the ways of the other case say nothing here
    assert not corpus.verdict({**apart, **other}).startswith(corpus.WITHIN)
    said = corpus.verdict({**apart, **removed})
    assert said.startswith(f"{cause.verdict} (0.1 from one device; {cause.removed}") and said.startswith(corpus.WITHIN)
    assert ("and the draws fixed" in said) == drawn
    settings = corpus.EXTRA[id(cause.ways(drawn))][1]
    assert (settings.get("CORPUS_DRAWS") == "off") == drawn and set(cause.settings[1].items()) <= set(settings.items())
    still = dict(zip(cause.ways(drawn), (_way(), _way(fits=((1.0, 0.55),)))))
    assert corpus.verdict({**apart, **still}).startswith("differs by 0.1 (warned)")
    rounding = dict(zip(cause.spread(drawn), [_way(fits=((1.0, 0.53),))]))  # one device reversed: 0.03 from itself
    said = corpus.verdict({**apart, **still, **rounding})
    assert "0.05 from it, within the program's own spread" in said and said.startswith(cause.verdict)
    assert corpus.EXTRA[id(cause.spread(drawn))][1]["CORPUS_BATCH_ORDER"] == "reversed"
    beyond = dict(zip(cause.spread(drawn), [_way(fits=((1.0, 0.51),))]))  # 0.01: the 0.05 left is more than rounding
    assert corpus.verdict({**apart, **still, **beyond}).startswith("differs by 0.1 (warned)")
    in_64 = dict(zip(cause.in_float64(drawn), (_way(), _way())))  # equal in float64: float32's rounding after all
    said = corpus.verdict({**apart, **still, **beyond, **in_64})
    assert said.startswith(cause.verdict) and said.endswith("0.05 from it, float32's rounding: equal to it in float64)")
    assert corpus.EXTRA[id(cause.in_float64(drawn))][1]["CORPUS_FLOATX"] == "float64"
    apart_in_64 = dict(zip(cause.in_float64(drawn), (_way(), _way(fits=((1.0, 0.55),)))))
    assert corpus.verdict({**apart, **still, **beyond, **apart_in_64}).startswith("differs by 0.1 (warned)")
    silent = _found(_way(), _way(), _way(fits=((1.0, 0.6),)), _way())
    assert not corpus.warned_apart(silent, cause.said) and not corpus.verdict({**silent, **removed}).startswith(corpus.WITHIN)


def test_every_extra_set_of_ways_keeps_its_records_under_a_name_of_its_own():
    """A kept record is judged again by its name (CORPUS_KEEP): two sets of settings under one name
    would judge one's records as the other's."""
    suffixes = [suffix for suffix, _settings in corpus.EXTRA.values()]
    assert len(suffixes) == len(set(suffixes)), sorted(suffixes)
    overlays = [suffix for (suffix, _settings), _what in corpus.REPEATABLE_WITH]
    assert not set(overlays) & set(suffixes) and len(overlays) == len(set(overlays))


def test_the_census_counts_every_program_of_each_source_as_the_page_says():
    """docs/corpus.md opens with the census (tests/corpus/census.py): each source's programs, in
    the corpus, judged, within the contract, left out by reason, not triaged; every program the
    corpus holds or leaves out and that a source lists is counted once."""
    import json

    from tests.corpus import census

    page = ROOT / "docs" / "corpus.md"
    assert census.written(page) == "\n".join(census.rows(page)), "python -m tests.corpus.census --write docs/corpus.md"
    left = census.written(page, census.LEFT_START, census.LEFT_END)
    assert left == "\n".join(census.left_out_rows()), "python -m tests.corpus.census --write docs/corpus.md"
    listed = json.loads(census.CENSUS.read_text())
    taken = json.loads((census.HERE / "sources.json").read_text())
    left = json.loads((census.HERE / "left_out.json").read_text())
    assert not set(taken) & set(left)
    for source in listed.values():
        assert source["programs"] == sorted(set(source["programs"])) and source["programs"], source
    assert census.kind_of({"check": {"imports": "torch"}}) == "needs a package the tests lack"
    assert set(census.KINDS) == set(left_out.KINDS)


def test_every_left_out_program_is_its_sources_text_and_its_reason_holds_in_it():
    """Each left-out program is kept byte for byte with one check of a known kind, and the reasons
    read from a text (an import the tests lack, a URL, a backend, no fit) hold; the measured ones
    (fails, over the limit) are checked by running: ``python -m tests.corpus --left-out``."""
    files = {path.name.split(".")[0]: path for path in (corpus.HERE / "programs" / "left_out").iterdir()}
    assert sorted(files) == sorted(left_out.LEFT_OUT)
    for name, entry in left_out.LEFT_OUT.items():
        assert hashlib.sha256(files[name].read_bytes()).hexdigest() == entry["sha256"], name
        assert len(entry["check"]) == 1 and left_out.kind(entry) in left_out.KINDS, name
        assert left_out.read(name) is None, (name, left_out.read(name))


def test_a_left_out_reason_that_no_longer_holds_is_reported(tmp_path, monkeypatch):
    """A reason is a claim about the program: one its text or its run contradicts is said."""
    (tmp_path / "left_out").mkdir()
    (tmp_path / "left_out" / "p.py").write_text("import json\nmodel.fit(x)\n")
    monkeypatch.setattr(left_out, "HERE", tmp_path.parent)
    monkeypatch.setattr(left_out, "program", lambda name: tmp_path / "left_out" / "p.py")

    def said(check):
        monkeypatch.setitem(left_out.LEFT_OUT, "p", {"path": "p.py", "check": check})
        return left_out.read("p")

    assert "now carries" in said({"imports": "json"})  # json is there: the program would run
    assert "does not import" in said({"imports": "torch"})
    assert "does not name" in said({"downloads": "https://x/w.h5"})
    assert "does not set" in said({"backend": "jax"})
    (tmp_path / "left_out" / "p.py").write_text('import os\nos.environ["KERAS_BACKEND"] = "torch"\nmodel.fit(x)\n')
    assert said({"backend": "torch"}) is None
    (tmp_path / "left_out" / "p.py").write_text('import os\nos.environ["KERAS_BACKEND"] = "jax"\nmodel.fit(x)\n')
    assert "which the runner runs: run it" in said({"backend": "jax"})  # its ways are JAX's too now
    (tmp_path / "left_out" / "p.py").write_text("import json\nmodel.fit(x)\n")
    assert said({"trains": False}) is None  # measured: by its run
    monkeypatch.setitem(left_out.LEFT_OUT, "p", {"path": "p.py", "check": {"fails": "no attribute 'shape'"}})
    assert left_out.measured("p", {"outcome": "AttributeError: no attribute 'shape'"}) is None
    assert "now gives: ran" in left_out.measured("p", {"outcome": "ran"})
    monkeypatch.setitem(left_out.LEFT_OUT, "p", {"path": "p.py", "check": {"trains": False}})
    assert left_out.measured("p", {"outcome": "ran", "fits": [], "finals": []}) is None
    assert "finals" in left_out.measured("p", {"outcome": "ran", "fits": [], "finals": [[1.0]]})


def test_the_left_out_programs_plain_ways_run_two_at_a_time_each_with_its_own_record(tmp_path, monkeypatch):
    """A full run measures its left-out programs as it runs a program's first ways: two at once on
    2 cores, each bounded as any way is, each judged by its own record."""
    running, at_once = [], []

    def start(name, out, ways, how):
        assert ways == {"plain": corpus.WAYS["plain"]} and how == corpus.WAYS["plain"]
        running.append(name)
        at_once.append(len(running))
        return name, out / f"{name}.json", 0.0

    def finish(proc, target, began):
        running.remove(proc)
        return {"outcome": target.name}

    monkeypatch.setattr(corpus.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(corpus, "_start_way", start)
    monkeypatch.setattr(corpus, "_first_done", lambda started: next(iter(started)))
    monkeypatch.setattr(corpus, "_finish_way", finish)
    names = ["a", "b", "c", "d", "e"]
    found = corpus.plain_ways(names, tmp_path)
    assert {name: record["outcome"] for name, record in found.items()} == {n: f"{n}.json" for n in names}
    assert max(at_once) == 2 and not running


def test_a_program_written_for_jax_runs_every_way_on_jax_its_2_devices_xlas(tmp_path, monkeypatch):
    """Its entry's ``"backend": "jax"``: each way's Keras is on JAX, and the ways on 2 devices (autodist's,
    and the hand-built one, Keras's DataParallel) get XLA's 2 CPU devices; one device stays one."""
    started = {}
    monkeypatch.setattr(corpus, "private_tmp", lambda: [])
    monkeypatch.setattr(corpus.subprocess, "Popen", lambda args, env, **kwargs: started.setdefault(args[-1], env))
    assert corpus.SOURCES["guide_custom_train_step_in_jax"]["backend"] == "jax"
    for way, how in corpus.WAYS.items():
        corpus._start_way("guide_custom_train_step_in_jax", tmp_path, corpus.WAYS, how)
    envs = {target.rsplit("jax-", 1)[1].removesuffix(".json"): env for target, env in started.items()}
    assert sorted(envs) == ["autodist-1", "autodist-2", "hand-built-None", "plain-None"]
    assert all(env["KERAS_BACKEND"] == "jax" for env in envs.values())
    two = "--xla_force_host_platform_device_count=2"
    assert {way: env.get("XLA_FLAGS") for way, env in envs.items()} == {
        "autodist-1": None, "autodist-2": two, "hand-built-None": two, "plain-None": None
    }
    started.clear()
    corpus._start_way("mnist_convnet", tmp_path, corpus.WAYS, corpus.WAYS["hand-built"])
    assert next(iter(started.values())).get("KERAS_BACKEND") != "jax", "a TensorFlow program's ways stay TensorFlow's"


def test_a_program_without_fit_is_compared_by_its_models_weights_at_its_end():
    """Its own loop (or none): the weights of the models it made, at its end, as any way's record
    holds them (``finals``); a program that records nothing at all is not judged equal."""
    mine = {**_way(fits=()), "fits": [], "finals": [[0.5, 0.25]]}
    other = {**mine, "finals": [[0.5, 0.75]]}
    assert corpus.gap(mine, mine) == 0.0 and corpus.gap(mine, other) == pytest.approx(0.5)
    assert corpus.gap(mine, {**mine, "finals": []}) == float("inf")
    found = {way: mine for way in corpus.WAYS}
    assert corpus.verdict(found) == "equal"
    empty = {**mine, "finals": []}
    assert corpus.verdict({way: empty for way in corpus.WAYS}).startswith("nothing to compare")


def test_an_unwarned_gap_is_judged_against_the_programs_own_spread_whatever_hand_built_gives():
    """A gap nothing warns of, where the hand-built strategy trains other numbers too: float64, and
    one device with each batch reversed (the program's own float32 spread), are both measured; the
    gap is rounding only within that spread."""
    found = _found(_way(), _way(), _way(fits=((1.0, 0.5012),)), _way(fits=((1.0, 0.57),)))
    assert corpus.unwarned_apart(found)
    spread = {next(iter(corpus.REVERSED)): _way(fits=((1.0, 0.5009),))}
    said = corpus.verdict({**found, **spread})
    assert said.startswith("equal but for float32's rounding") and "reversed is 0.0009" in said, said
    narrow = {next(iter(corpus.REVERSED)): _way(fits=((1.0, 0.50001),))}
    assert corpus.verdict({**found, **narrow}) == "differs by 0.0012 (not warned)"
    in64 = dict(zip(corpus.FLOAT64, (_way(), _way())))
    assert "equal to it in float64" in corpus.verdict({**found, **in64})


def test_a_way_that_ran_past_its_limit_leaves_the_program_not_measured_whichever_way_it_was():
    """A draws-fixed way killed at 600 s (a loaded machine) left the VAE judged "differs by 1.7":
    a verdict that depended on the run. Any way that timed out makes the program not measured."""
    drew = _found(_way(), _way(), _way(fits=((1.0, 0.6),), warnings=[RANDOM]), _way(fits=((1.0, 0.55),)))
    late = {"outcome": "no record (exit -9): timed out: over 600 s. ..."}
    fixed = dict(zip(corpus.DRAWS_OFF, (_way(), late, _way())))
    assert corpus.verdict({**drew, **fixed}).startswith("not measured")


def _timed(walls=(3.0, 1.0, 1.0), steps=50, first_step=9.0, rss=1000, outcome="ran"):
    """A speed-mode record (tests/corpus/run.py's ``Timing``): one fit, its epochs' seconds."""
    epochs = [{"wall": wall, "cpu": 2 * wall, "steps": steps} for wall in walls]
    return {"outcome": outcome, "peak_rss_bytes": rss, "speed": {"fits": [{"epochs": epochs}], "first_step": first_step}}


def test_the_speed_mode_times_the_epochs_after_each_fits_first_and_compares_pair_by_pair():
    from tests.corpus import speed

    figures = speed.figures(_timed())
    assert figures == {
        "wall": 2.0, "cpu": 4.0, "first_step": 9.0, "peak_rss": 1000, "steady_steps": 100, "epoch_steps": 50
    }
    eight = _timed()
    eight["speed"]["fits"][0]["steps_per_execution"] = 8  # the first call ran 8 steps, each 0.02 s steady
    assert speed.figures(eight)["first_step"] == pytest.approx(9.0 - 7 * 0.02)
    assert speed.figures(_timed(outcome="OSError: no file")) is None
    assert speed.figures(_timed(walls=(3.0,))) is None, "a fit of one epoch has no steady state"
    # each pair's ratio is autodist's over the other way's; a pair where one way failed counts for nothing
    pairs = [
        (speed.figures(_timed(walls=(5, 1, 1))), speed.figures(_timed(walls=(5, 0.9, 0.9), rss=1100))),
        (speed.figures(_timed(walls=(5, 1, 1))), speed.figures(_timed(walls=(5, 1.2, 1.2), rss=1000))),
        (speed.figures(_timed(walls=(5, 1, 1))), speed.figures(_timed(walls=(5, 1.0, 1.0), rss=1000))),
        (speed.figures(_timed(walls=(5, 1, 1))), None),
    ]
    found = speed.ratios(pairs)
    assert found["wall"]["median"] == pytest.approx(1.0) and found["wall"]["pairs"] == pytest.approx([0.9, 1.2, 1.0])
    assert (found["wall"]["min"], found["wall"]["max"]) == pytest.approx((0.9, 1.2))
    assert found["peak_rss"]["median"] == pytest.approx(1.0) and found["peak_rss"]["max"] == pytest.approx(1.1)
    assert speed.ratios([(None, None)]) is None
    # the two ways of a comparison take turns at going first
    assert [speed.order(pair) for pair in range(4)] == [(0, 1), (1, 0), (0, 1), (1, 0)]


def test_every_program_the_speed_mode_measures_trains_with_fit_and_every_kind_is_there():
    """A program that never calls ``fit`` has no epoch to time: its warm-up trains nothing."""
    from tests.corpus import speed

    for name in speed.SPEED_SET:
        assert ".fit(" in corpus.program(name).read_text(), f"{name} calls no fit"
    kinds = {"convnet", "RNN", "transformer", "GAN or VAE with its own step", "structured data through tf.data"}
    assert kinds <= set(speed.SPEED_SET.values()) and len(speed.SPEED_SET) >= 20


def test_a_program_too_small_for_a_steady_epoch_gets_the_samples_that_give_it_one():
    from tests.corpus import speed

    sizing = {"epoch_steps": 8}  # 256 samples in batches of 32
    assert speed.sized_samples({}, sizing, "256") == "1600"  # 50 steps of 32, in whole batches of 32
    assert int(speed.sized_samples({"samples": 64}, {"epoch_steps": 1}, "64")) >= 64 * speed.MIN_STEPS
    assert speed.sized_samples({}, {"epoch_steps": 60}, "256") == "256"
    assert speed.sized_samples({"samples": "full"}, sizing, "full") == "full"
    assert speed.sized_samples({"speed": {"samples": 4096}}, sizing, "256") == "4096"


def test_the_speed_summary_holds_each_ratio_to_its_goal_and_names_the_programs_past_it():
    from tests.corpus import speed

    def program(one, two):
        comparisons = {}
        for comparison, wall in (("one device", one), ("2 replicas", two)):
            if wall is not None:
                cells = {f: {"median": 1.0, "min": 1.0, "max": 1.0} for f in speed.FIGURES}
                comparisons[comparison] = {"ratios": {**cells, "wall": {"median": wall, "min": wall, "max": wall}}}
        return {"kind": "convnet", "samples": "256", "comparisons": comparisons}

    fast = speed.summary({"a": program(0.9, 1.0), "b": program(0.8, 0.95), "c": program(0.93, None)})
    assert fast["one device, wall"]["median"] == pytest.approx(0.9) and fast["one device, wall"]["result"] == "pass"
    assert fast["2 replicas, wall"]["programs"] == 2, "a program the hand-built strategy cannot train has no (b)"
    slow = speed.summary({"a": program(0.9, 1.0), "b": program(0.8, 1.2), "c": program(1.06, 0.97)})
    assert slow["one device, wall"]["result"] == "short" and slow["one device, wall"]["past"] == ["c"]
    assert slow["2 replicas, wall"]["past"] == ["b"] and slow["2 replicas, wall"]["result"] == "short"
    assert slow["one device, cpu"]["result"] == "report"


def test_the_speed_mode_runs_one_way_at_a_time_sized_and_in_turns(tmp_path, monkeypatch):
    """A warm-up sizes the program; then each comparison's pairs, one process at a time, with the
    speed mode's settings and the sized samples, the two ways taking turns at going first."""
    from tests.corpus import speed

    started = []

    def run(name, out, ways):
        ((label, how),) = ways.items()
        overlay = corpus._OVERLAY[-1]
        started.append((label, how, overlay[0], overlay[1].get("CORPUS_SAMPLES")))
        assert overlay[1]["CORPUS_SPEED"] == "1" and overlay[1]["CORPUS_EPOCHS"] == str(speed.EPOCHS)
        samples = int(overlay[1].get("CORPUS_SAMPLES", 64))
        return {label: _timed(steps=max(1, (samples - 2000) // 32))}  # windows of 2000 samples, batches of 32

    monkeypatch.setattr(corpus, "run", run)
    monkeypatch.setitem(corpus.SOURCES, "p", {"samples": 64})
    found = speed.measure("p", tmp_path)
    # 64 samples: 1 step; sized to 3200 for 50, which windows of 2000 leave 37; sized again to 4352,
    # which gives 73: timed so.
    assert started[:3] == [
        ("warm-up", corpus.WAYS["plain"], "-speed-warm-up", "64"),
        ("warm-up", corpus.WAYS["plain"], "-speed-warm-up-1", "3200"),
        ("warm-up", corpus.WAYS["plain"], "-speed-warm-up-2", "4352"),
    ]
    assert {samples for *_, samples in started[3:]} == {"4352"} and found["samples"] == "4352"
    one = [(how, suffix) for _, how, suffix, _ in started[3:] if how in speed.COMPARISONS["one device"]]
    assert one == [
        (("plain", None), "-speed0"), (("autodist", "1"), "-speed0"),
        (("autodist", "1"), "-speed1"), (("plain", None), "-speed1"),
        (("plain", None), "-speed2"), (("autodist", "1"), "-speed2"),
    ]
    assert len(started) == 3 + 2 * 2 * speed.PAIRS
    assert found["comparisons"]["2 replicas"]["ratios"]["wall"]["median"] == pytest.approx(1.0)


def test_a_speed_run_times_each_epoch_and_the_first_step_and_autodist_plans_the_epochs_it_runs(processes, tmp_path):
    """A real run (tests/corpus/run.py, ``CORPUS_SPEED=1``) of a program that asks for one epoch of
    100 steps: it trains ``CORPUS_EPOCHS`` (3), each timed with its steps, and autodist plans for
    those 3 (300 steps: 8 steps per call; for 100 it keeps 1, and so would a batch-level hook)."""
    import os
    import subprocess
    import time

    program = tmp_path / "program.py"
    program.write_text(
        "import numpy as np\nimport keras\n"
        "x = np.random.rand(100, 4).astype('float32'); y = x.sum(axis=1)\n"
        "model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])\n"
        "model.compile(optimizer='adam', loss='mse')\n"
        "model.fit(x, y, batch_size=1, epochs=1, verbose=0)\n"
    )
    target = tmp_path / "record.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTODIST_")}
    env.update(CORPUS_SPEED="1", CORPUS_EPOCHS="3", CORPUS_LAUNCHED=repr(time.time()), AUTODIST_CPU_DEVICES="1")
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(corpus.HERE / "run.py"), str(program), "autodist", str(target)],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300,
    )
    took = time.monotonic() - began
    record = json.loads(target.read_text())
    assert record["outcome"] == "ran", (proc.stderr[-2000:], record.get("traceback"))
    (fit,) = record["speed"]["fits"]
    assert [epoch["steps"] for epoch in fit["epochs"]] == [100, 100, 100]
    assert fit["steps_per_execution"] == 8
    assert all(0 < epoch["wall"] and 0 <= epoch["cpu"] for epoch in fit["epochs"])
    assert 0 < record["speed"]["first_step"] < took
    assert len(record["fits"][0]["history"]["loss"]) == 3


def test_a_workarounds_cost_is_with_it_over_without_it_where_it_acted(tmp_path, monkeypatch):
    """Without it (its ``-name`` opt-out) and with it, in turns: the ratio is with ÷ without; it
    acted where the two arms train further apart than one arm's runs from each other."""
    from tests.corpus import speed

    compat = []

    def run(name, out, ways):
        ((label, how),) = ways.items()
        settings = corpus._OVERLAY[-1][1]
        compat.append(settings.get("AUTODIST_KERAS_COMPAT"))
        without = "AUTODIST_KERAS_COMPAT" in settings
        timed = _timed(walls=(5, 1.0, 1.0) if without or label == "warm-up" else (5, 1.1, 1.1))
        record = {**timed, **_way(fits=((1.0, 0.6 if acts and not without else 0.5),))}
        return {label: record}

    monkeypatch.setattr(corpus, "run", run)
    monkeypatch.setitem(corpus.SOURCES, "p", {"samples": 256})
    acts = True
    found = speed.cost("p", "replica_random_streams", tmp_path)
    assert found["acted"] and found["ratios"]["wall"]["median"] == pytest.approx(1.1)
    assert compat.count("auto,-replica_random_streams") == speed.PAIRS and compat.count(None) == 1 + speed.PAIRS
    acts = False
    assert not speed.cost("p", "replica_random_streams", tmp_path)["acted"]
    summary = speed.workaround_costs({"replica_random_streams": {"p": found, "q": {**found, "acted": False}}})
    assert summary["replica_random_streams"] == {"median": pytest.approx(1.1), "acted on": {"p": pytest.approx(1.1)}, "did not act on": ["q"]}


def test_autodist_apart_on_one_device_from_a_plain_run_that_repeated_is_judged_again_with_op_determinism(monkeypatch, tmp_path):
    """Two plain runs that agree can both be one of the numbers a program trains from run to run
    (keras.io's ConvMixer: autodist on one device 0.0043 from plain, whose two runs agreed, and equal
    to plain's number of the run before). Judged again with op determinism: equal there, within,
    and the verdict says what was apart without it; still apart there, autodist's."""
    apart = {**_found(_way(), _way(fits=((1.0, 0.7),)), _way(), _way()), "plain again": _way()}
    assert corpus.one_device_apart(apart) == pytest.approx(0.2)
    assert corpus.one_device_apart({**apart, "plain again": _way(fits=((1.0, 0.6),))}) is None  # not repeatable: named so
    assert corpus.one_device_apart(_found(*[_way()] * 4)) is None
    judged = []

    def judge(name, out):
        judged.append(corpus._OVERLAY[-1][0])
        return {**_found(*[_way()] * 4), "plain again": _way()} if steady_equal else apart

    monkeypatch.setattr(corpus, "judge", judge)
    steady_equal = True
    found = corpus.judged_steadily("p", tmp_path, apart)
    assert judged == ["-deterministic"]
    said = corpus.verdict(found)
    assert said.startswith("equal (judged with TensorFlow's op determinism in every way: without, autodist on one device is 0.2")
    assert "equal to it with them" in said and said.startswith(corpus.WITHIN) and corpus.kind(said) == "equal"
    steady_equal = False
    still = corpus.verdict(corpus.judged_steadily("p", tmp_path, apart))
    assert still.startswith("autodist on one device differs by 0.2 (judged with") and not still.startswith(corpus.WITHIN)
    assert corpus.judged_steadily("p", tmp_path, _found(*[_way()] * 4)) == _found(*[_way()] * 4)  # steady: as it is


def test_the_speed_table_and_plot_are_written_from_the_measured_results(tmp_path):
    """``--write DOC``: the summary and each program's row between the page's markers, the plot
    beside it, and the workarounds' costs; what was on the page around them stays."""
    from tests.corpus import speed

    pairs = [(speed.figures(_timed()), speed.figures(_timed(walls=(5, 0.9, 0.9), rss=1010)))] * speed.PAIRS
    program = {
        "kind": "convnet", "samples": "1600", "loads": [0.1],
        "comparisons": {c: {"ratios": speed.ratios(pairs), "epoch_steps": 50, "runs": [], "not trained": []} for c in speed.COMPARISONS},
    }
    cost = {"ratios": speed.ratios(pairs), "acted": True, "loads": [0.2]}
    results = {"date": "2026-12-07", "machine": "2 cores", "loads": [0.1, 0.2], "programs": {"p": program}}
    results["summary"] = speed.summary(results["programs"])
    results["workaround costs"] = speed.workaround_costs({"replica_random_streams": {"p": cost}})
    lines = speed.table(results)
    assert any(line.startswith("| steady epochs, wall: plain model.fit, one device | median <= 0.95") and "0.900" in line for line in lines)
    assert any(line.startswith("| `p` | convnet | 1600 | 50 | 0.90 (0.90-0.90)") for line in lines)
    assert any(line.startswith("| `replica_random_streams` | 0.900 | `p` 0.900") for line in lines)
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Performance\n\nbefore\n\n{speed.TABLE_START}\nold\n{speed.TABLE_END}\n\nafter\n")
    doc.write_text(speed.written(doc.read_text(), lines))
    text = doc.read_text()
    assert "old" not in text and text.startswith("# Performance\n\nbefore") and text.endswith("after\n")
    speed.plot(results, doc.with_suffix(".png"))
    assert doc.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_workarounds_timed_are_those_the_registry_says_act_in_the_step_and_their_cost_is_its_column():
    """``--workarounds`` times each workaround the registry marks ``in_step``, on programs of the
    corpus; docs/keras-workarounds.md's last column is written from what it measured."""
    from autodist.upstream.keras_workarounds import WORKAROUNDS, step_cost, table
    from tests.corpus import speed

    assert set(speed.IN_STEP) == {name for name, w in WORKAROUNDS.items() if w.in_step}
    assert all(name in corpus.SOURCES for names in speed.IN_STEP.values() for name in names)
    pairs = [(speed.figures(_timed()), speed.figures(_timed(walls=(5, 1.1, 1.1))))] * speed.PAIRS
    measured = {"acted": {"ratios": speed.ratios(pairs), "acted": True}, "idle": {"ratios": speed.ratios(pairs), "acted": False}}
    costs = speed.workaround_costs({"replica_random_streams": measured})
    assert step_cost(WORKAROUNDS["replica_random_streams"], costs["replica_random_streams"]) == "1.10 (acted; did not act on idle)"
    rows = {row.split(" | ")[0]: row for row in table(costs)}
    assert rows["| `replica_random_streams`"].endswith("| 1.10 (acted; did not act on idle) |")
    assert rows["| `own_step_replica_mean`"].endswith("| not measured yet |")
    assert rows["| `mirrored_jit_compile`"].endswith("| none: outside the step |")
