"""The skcrf command line end to end: train, tag, evaluate, and its errors.

Runs ``main([...])`` in-process for speed, on small CoNLL files written here;
one subprocess run proves ``python -m skcrf`` works. Every training uses
``--n-jobs 1``: on a loaded 2-core machine extra kernel threads only add
waiting, and the tests do not depend on the thread count.
"""

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import skcrf
from skcrf import CRFClassifier
from skcrf._estimators import defaults as _defaults
from skcrf._cli import COMMANDS, main
from skcrf._persistence import FORMAT_VERSION, load_model, save_model
from skcrf.metrics import (
    flat_accuracy_score,
    flat_classification_report,
    span_classification_report,
)

NAMES = ["Pedro", "Ana", "Luis", "Marta", "Jorge"]
SURNAMES = ["García", "López", "Pérez"]
CITIES = ["Madrid", "Lima", "Quito", "Bogotá"]
VERBS = ["vive", "trabaja", "viaja", "llega"]


def _sentences(seed, n):
    """``n`` sentences of (word, POS, label) rows: a person goes to a city."""
    rng = np.random.default_rng(seed)
    sentences = []
    for _ in range(n):
        rows = [(rng.choice(NAMES), "NP", "B-PER")]
        if rng.random() < 0.5:
            rows.append((rng.choice(SURNAMES), "NP", "I-PER"))
        rows += [(rng.choice(VERBS), "VMI", "O"), ("en", "SP", "O"),
                 (rng.choice(CITIES), "NP", "B-LOC")]
        if rng.random() < 0.3:
            rows.append(("hoy", "RG", "O"))
        rows.append((".", "Fp", "O"))
        sentences.append([tuple(map(str, row)) for row in rows])
    return sentences


def _write(path, sentences, columns=(0, 1, 2), separator=" "):
    """A CoNLL file of the given columns of each row, with a -DOCSTART- line."""
    lines = [separator.join(["-DOCSTART-", "-X-", "O"][:len(columns)]), ""]
    for sentence in sentences:
        lines += [separator.join(row[c] for c in columns) for row in sentence] + [""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _run(*argv):
    """(status, stdout, stderr) of ``main(argv)``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(arg) for arg in argv])
    return status, out.getvalue(), err.getvalue()


def _trained(train, model_path, *options, model_flag="--model"):
    """The model ``train --quiet`` with ``options`` saves at ``model_path`` (it succeeds)."""
    status, _, err = _run("train", train, model_flag, model_path, "--quiet", *options)
    assert status == 0, err
    return load_model(model_path)[-1]


def _blocks(text):
    """Sequences of split lines of a CoNLL text."""
    return [[line.split() for line in block.splitlines()]
            for block in text.strip("\n").split("\n\n")]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    train, test = _sentences(0, 40), _sentences(1, 12)
    return {
        "folder": folder, "train_sentences": train, "test_sentences": test,
        "train": _write(folder / "train.txt", train),
        "test": _write(folder / "test.txt", test),
        "unlabelled": _write(folder / "unlabelled.txt", test, columns=(0, 1)),
    }


@pytest.fixture(scope="module")
def trained(data):
    """A model trained once by the CLI, with its output."""
    model = data["folder"] / "model.skcrf"
    status, out, err = _run("train", data["train"], "--model", model, "--max-iter", 50,
                            "--n-jobs", 1)
    assert status == 0, err
    return {"model": model, "out": out, "err": err}


def test_train_reports_progress_then_a_summary(trained):
    model = load_model(trained["model"])
    crf = model[-1]
    lines = trained["out"].splitlines()
    assert "\r" not in trained["out"]
    header = lines.index(next(line for line in lines if line.split()[:1] == ["iteration"]))
    assert lines[header].split() == ["iteration", "objective", "gradient", "norm",
                                     "elapsed", "(s)"]
    rows = [line.split() for line in lines[header + 1:-1]]
    assert [int(row[0]) for row in rows] == list(range(1, crf.n_iter_ + 1))
    np.testing.assert_allclose([float(row[1]) for row in rows], crf.loss_curve_, rtol=1e-7)
    # aligned: every iteration line as wide as the header
    assert {len(line) for line in lines[header:-1]} == {len(lines[header])}
    summary = lines[-1]
    assert f"{crf.n_iter_} iterations" in summary
    assert f"{crf.n_features_in_} features, {len(crf.classes_)} labels" in summary
    assert summary.endswith(str(trained["model"]))
    assert "40 sequences" in trained["out"]


def test_train_saves_the_pipeline_and_the_layout(trained):
    model, metadata = load_model(trained["model"], return_metadata=True)
    assert [name for name, _ in model.steps] == ["tokenfeaturizer", "sequencevectorizer",
                                                 "crfclassifier"]
    assert metadata["layout"] == {"n_columns": 3, "token_columns": [0, 1],
                                  "label_column": 2, "separator": None, "encoding": None}
    crf = model[-1]
    # the command line's defaults are the estimators' (skcrf._estimators.defaults)
    defaults = CRFClassifier().get_params()
    assert (crf.alpha, crf.l1_ratio, crf.tol) == (defaults["alpha"], defaults["l1_ratio"],
                                                  defaults["tol"])
    assert crf.max_iter == 50 and crf.n_jobs == 1 and crf.verbose == 0
    assert list(crf.classes_) == ["B-LOC", "B-PER", "I-PER", "O"]


def test_tag_writes_the_input_columns_and_the_prediction(data, trained):
    status, out, err = _run("tag", "--model", trained["model"], data["test"])
    assert status == 0 and err == ""
    blocks = _blocks(out)
    model = load_model(trained["model"])
    X = [[row[:2] for row in sentence] for sentence in data["test_sentences"]]
    expected = model.predict(X)
    assert len(blocks) == len(data["test_sentences"])
    for block, sentence, labels in zip(blocks, data["test_sentences"], expected, strict=True):
        assert [tuple(fields[:3]) for fields in block] == sentence
        assert [fields[3] for fields in block] == list(labels)
    assert out.endswith("\n") and not out.endswith("\n\n\n")


def test_tag_accepts_a_file_without_the_label_column(data, trained):
    _, labelled, _ = _run("tag", "--model", trained["model"], data["test"])
    status, unlabelled, _ = _run("tag", "--model", trained["model"], data["unlabelled"])
    assert status == 0
    # same tokens, same predictions; only the gold column is missing
    assert [[fields[:2] + fields[3:] for fields in block] for block in _blocks(labelled)] \
        == _blocks(unlabelled)


def test_tag_marginals_and_output_file(data, trained):
    output = data["folder"] / "tagged.txt"
    status, out, _ = _run("tag", "--model", trained["model"], data["unlabelled"],
                          "--marginals", "--output", output)
    assert status == 0 and out == ""
    blocks = _blocks(output.read_text(encoding="utf-8"))
    model = load_model(trained["model"])
    crf = model[-1]
    X = [[row[:2] for row in sentence] for sentence in data["test_sentences"]]
    marginals = crf.predict_marginals(model[:-1].transform(X))
    for block, probabilities in zip(blocks, marginals, strict=True):
        for fields, row in zip(block, probabilities, strict=True):
            assert re.fullmatch(r"\d\.\d{4}", fields[3])
            column = list(crf.classes_).index(fields[2])
            assert float(fields[3]) == pytest.approx(row[column], abs=5e-5)


def test_evaluate_prints_accuracy_and_both_reports(data, trained):
    status, out, err = _run("evaluate", "--model", trained["model"], data["test"])
    assert status == 0, err
    model = load_model(trained["model"])
    X = [[row[:2] for row in sentence] for sentence in data["test_sentences"]]
    y = [[row[2] for row in sentence] for sentence in data["test_sentences"]]
    y_pred = model.predict(X)
    assert f"token accuracy: {flat_accuracy_score(y, y_pred):.4f}\n" in out
    spans, tokens = out.split("Spans", 1)[1].split("Tokens", 1)
    assert span_classification_report(y, y_pred, digits=4, zero_division=0.0) in spans
    # the token report leaves out O, which would dominate it
    labels = ["B-LOC", "B-PER", "I-PER"]
    assert flat_classification_report(y, y_pred, labels=labels, digits=4,
                                      zero_division=0.0) in tokens


def test_evaluate_counts_a_missed_type_as_zero_without_warnings(data, trained, tmp_path):
    """A span type the model never predicts scores 0, as in conlleval."""
    sentences = [[(*row[:2], "B-MISC") if row[0] == "hoy" else row for row in sentence]
                 for sentence in data["test_sentences"]]
    test = _write(tmp_path / "misc.txt", sentences)
    status, out, err = _run("evaluate", "--model", trained["model"], test)
    assert status == 0 and err == ""
    misc = next(line.split() for line in out.splitlines() if line.split()[:1] == ["MISC"])
    assert misc[1:4] == ["0.0000"] * 3


def test_quiet_and_convergence_warning_as_one_line(data, tmp_path):
    model = tmp_path / "m.skcrf"
    status, out, err = _run("train", data["train"], "--model", model, "--max-iter", 2,
                            "--n-jobs", 1, "--quiet")
    assert status == 0 and model.exists()
    assert out.splitlines() == [out.strip()] and out.startswith("trained 2 iterations")
    assert err.splitlines() == [err.strip()]
    assert err.startswith("skcrf train: warning: stopped at --max-iter 2")
    assert "ConvergenceWarning" not in err and "warn(" not in err


def test_train_options_reach_the_estimators(data, tmp_path):
    model_path = tmp_path / "m.skcrf"
    status, _, err = _run(
        "train", data["train"], "--model", model_path, "--quiet", "--window", 0,
        "--word-features", "word,prefix", "--context-features", "", "--prefixes", "1",
        "--suffixes", "2", "--min-freq", 2, "--no-bias", "--no-boundary", "--alpha", 0.5,
        "--l1-ratio", 0, "--max-iter", 40, "--tol", 1e-3, "--n-jobs", 1)
    assert status == 0, err
    featurizer, vectorizer, crf = load_model(model_path)
    assert featurizer.get_params()["window"] == 0
    assert featurizer.word_features == ("word", "prefix")
    assert featurizer.context_features == ()
    assert featurizer.prefixes == (1,) and featurizer.suffixes == (2,)
    assert not featurizer.bias and not featurizer.boundary
    assert vectorizer.min_freq == 2
    assert (crf.alpha, crf.l1_ratio, crf.max_iter, crf.tol) == (0.5, 0.0, 40, 1e-3)
    names = set(crf.feature_names_)
    assert "bias" not in names and "BOS" not in names
    assert "word=Pedro" in names and "word[:1]=P" in names
    assert not any(name.startswith(("-1:", "+1:")) for name in names)


@pytest.mark.parametrize("solver", ["sgd", "perceptron", "passive_aggressive", "arow"])
def test_train_with_an_online_solver(data, tmp_path, solver):
    model_path = tmp_path / "m.skcrf"
    status, out, err = _run("train", data["train"], "--model", model_path, "--solver",
                            solver, "--max-iter", 4, "--random-state", 3, "--n-jobs", 1)
    assert status == 0, err
    crf = load_model(model_path)[-1]
    assert (crf.solver, crf.random_state) == (solver, 3)
    header = next(line for line in out.splitlines() if line.split()[:2] == ["epoch", "loss"])
    assert "validation" not in header
    assert out.splitlines()[-1].startswith(f"trained {crf.n_iter_} epochs in ")
    if crf.n_iter_ == 4:  # the margin solvers may stop early, without mistakes
        assert "stopped at --max-iter 4 epochs" in err
    status, out, _ = _run("evaluate", "--model", model_path, data["test"])
    assert status == 0
    accuracy = float(next(line for line in out.splitlines()
                          if line.startswith("token accuracy")).split()[-1])
    assert accuracy > 0.8


def test_structure_options_reach_the_estimator(data, tmp_path):
    model_path = tmp_path / "m.skcrf"
    crf = _trained(data["train"], model_path, "--max-iter", 10, "--order", 3,
                   "--min-pattern-freq", 2)
    assert crf.order == 3 and crf.min_pattern_freq == 2
    assert crf.label_patterns_.shape[1] == 4
    crf = _trained(data["train"], model_path, "--max-iter", 10, "--order", 2,
                   "--prune-threshold", "1e-3")
    assert crf.prune_threshold == 1e-3 and crf.pruner_coef_.shape == crf.coef_.shape
    status, _, err = _run("train", data["train"], "--model", model_path, "--structure",
                          "semimarkov", "--prune-threshold", "1e-3")
    assert status != 0 and "--prune-threshold apply to --structure chain" in err
    status, _, err = _run("train", data["train"], "--model", model_path, "--prune-threshold",
                          "1e-3")
    assert status != 0 and "--prune-threshold applies to --order 2 or more" in err
    crf = _trained(data["train"], model_path, "--max-iter", 10, "--transition-features",
                   "word=,bias")
    assert crf.transition_features == ["word=", "bias"]
    names = crf.feature_names_[crf.transition_feature_coef_.tocoo().row]
    assert all(name.startswith(("word=", "bias")) for name in names)
    status, _, err = _run("evaluate", "--model", model_path, data["test"])
    assert status == 0, err
    status, _, err = _run("train", data["train"], "--model", model_path, "--order", 0)
    assert status == 2 and "--order" in err and "'0' is not an integer >= 1" in err


def test_semimarkov_structure_trains_tags_and_evaluates(data, tmp_path):
    from skcrf import SemiMarkovCRF

    model_path = tmp_path / "semi.skcrf"
    crf = _trained(data["train"], model_path, "--max-iter", 10, "--structure", "semimarkov",
                   "--max-segment-length", 6)
    assert isinstance(crf, SemiMarkovCRF) and crf.max_segment_length == 6
    status, out, err = _run("tag", "--model", model_path, data["unlabelled"])
    assert status == 0 and out, err
    assert all(line.split()[-1] in crf.classes_ for line in out.splitlines() if line)
    status, out, err = _run("evaluate", "--model", model_path, data["test"])
    assert status == 0 and "accuracy" in out, err
    crf = _trained(data["train"], model_path, "--max-iter", 5, "--structure", "semimarkov",
                   "--order", 2, "--min-pattern-freq", 2)
    assert crf.order == 2 and crf.min_pattern_freq == 2 and crf.label_patterns_.shape[1] == 3
    for clash in (["--structure", "semimarkov", "--transition-features", "word="],
                  ["--max-segment-length", 4]):
        status, _, err = _run("train", data["train"], "--model", model_path, *clash)
        assert status != 0 and err.count("\n") == 1
        assert clash[-2] in err


def test_crfsuite_habits_m_and_c1_c2(data, tmp_path):
    """-m for --model and CRFsuite's --c1/--c2 (alpha = c1 + 2 c2, l1_ratio = c1 / alpha)."""
    model_path = tmp_path / "c.skcrf"
    crf = _trained(data["train"], model_path, "--max-iter", 5, "--c1", 0.5, "--c2", 0.25,
                   model_flag="-m")
    assert crf.alpha == 0.5 + 2 * 0.25 and crf.l1_ratio == 0.5 / (0.5 + 2 * 0.25)
    status, out, err = _run("tag", "-m", model_path, data["unlabelled"])
    assert status == 0 and out, err
    status, _, err = _run("train", data["train"], "-m", model_path, "--c1", 0.1,
                          "--alpha", 1.0)
    assert status != 0 and err.count("\n") == 1 and "--c1/--c2" in err


def test_custom_layout_round_trip(data, tmp_path):
    """Tab-separated, label in the middle, POS after it: word, label, POS."""
    train = _write(tmp_path / "train.tsv", data["train_sentences"], (0, 2, 1), "\t")
    test = _write(tmp_path / "test.tsv", data["test_sentences"], (0, 2, 1), "\t")
    bare = _write(tmp_path / "bare.tsv", data["test_sentences"], (0, 1), "\t")
    model_path = tmp_path / "m.skcrf"
    status, _, err = _run("train", train, "--model", model_path, "--quiet", "--n-jobs", 1,
                          "--separator", "\\t", "--columns", "0,2", "--label-column", 1)
    assert status == 0, err
    model, metadata = load_model(model_path, return_metadata=True)
    assert metadata["layout"]["token_columns"] == [0, 2]
    assert metadata["layout"]["separator"] == "\t"
    # the POS column reached the featurizer as the second token column
    assert "col1=VMI" in set(model[-1].feature_names_)
    status, labelled, _ = _run("tag", "--model", model_path, test)
    assert status == 0
    assert "\t" in labelled
    status, unlabelled, _ = _run("tag", "--model", model_path, bare)
    assert status == 0
    predicted = [[fields[-1] for fields in block] for block in _blocks(labelled)]
    assert predicted == [[fields[-1] for fields in block] for block in _blocks(unlabelled)]
    X = [[(row[0], row[1]) for row in sentence] for sentence in data["test_sentences"]]
    assert predicted == [list(labels) for labels in model.predict(X)]


def test_model_saved_from_python_tags_every_column(data, trained, tmp_path):
    """Without a stored layout every column is a token column."""
    path = tmp_path / "python.skcrf"
    save_model(load_model(trained["model"]), path)
    status, out, _ = _run("tag", "--model", path, data["unlabelled"])
    _, expected, _ = _run("tag", "--model", trained["model"], data["unlabelled"])
    assert status == 0 and out == expected


def test_model_from_another_version_warns_in_one_line(trained, data, tmp_path):
    magic, header, payload = trained["model"].read_bytes().split(b"\n", 2)
    fields = json.loads(header)
    path = tmp_path / "old.skcrf"
    path.write_bytes(b"\n".join([magic, json.dumps({**fields, "skcrf": "0.0.1"}).encode(),
                                 payload]))
    status, out, err = _run("tag", "--model", path, data["unlabelled"])
    assert status == 0 and out
    assert err.splitlines() == [err.strip()]
    assert err.startswith("skcrf tag: warning:") and "0.0.1" in err
    assert skcrf.__version__ in err


@pytest.mark.parametrize("command", ["tag", "evaluate"])
def test_a_pickled_model_loads_only_with_allow_pickle(data, trained, tmp_path, command):
    """A model file of skcrf 0.1 (a pickle) is refused unless --allow-pickle is given."""
    import pickle

    model = load_model(trained["model"])
    fields = {"format": 1, "skcrf": "0.1.0", "model": type(model).__name__, "metadata": {}}
    path = tmp_path / "old.skcrf"
    path.write_bytes(b"skcrf-model\n" + json.dumps(fields).encode() + b"\n"
                     + pickle.dumps(model))
    target = data["unlabelled"] if command == "tag" else data["test"]
    status, out, err = _run(command, "--model", path, target)
    assert status != 0 and not out and err.count("\n") == 1
    assert "cannot load model" in err and "allow_pickle" in err
    status, out, err = _run(command, "--model", path, "--allow-pickle", target)
    _, expected, _ = _run(command, "--model", trained["model"], target)
    assert status == 0 and out == expected
    assert err.startswith(f"skcrf {command}: warning:")


def _future_model(trained, tmp_path):
    magic, header, payload = trained["model"].read_bytes().split(b"\n", 2)
    fields = {**json.loads(header), "format": FORMAT_VERSION + 1}
    path = tmp_path / "future.skcrf"
    path.write_bytes(b"\n".join([magic, json.dumps(fields).encode(), payload]))
    return path


@pytest.mark.parametrize("argv, status, expected", [
    (["train", "{folder}/missing.txt", "--model", "{tmp}/m.skcrf"], 1,
     "skcrf train: error: cannot read .*missing.txt: No such file"),
    (["train", "{train}", "--model", "{tmp}/no/such/folder/m.skcrf"], 1,
     "skcrf train: error: cannot write --model .*no folder"),
    (["train", "{train}", "--model", "{tmp}/m.skcrf", "--columns", "0,x"], 2,
     "skcrf train: error: argument --columns: '0,x' is not a comma-separated list"),
    (["train", "{train}", "--model", "{tmp}/m.skcrf", "--columns", "0,5"], 2,
     "skcrf train: error: --columns 5: .*train.txt has 3 column"),
    (["train", "{train}", "--model", "{tmp}/m.skcrf", "--columns", "0,2"], 2,
     "column 2 is both a token column"),
    (["train", "{train}", "--model", "{tmp}/m.skcrf", "--word-features", "colour"], 2,
     "unknown feature.* colour"),
    (["train", "{train}", "--model", "{tmp}/m.skcrf", "--l1-ratio", "2"], 2,
     "argument --l1-ratio: '2' is not a number in"),
    (["train", "{ragged}", "--model", "{tmp}/m.skcrf"], 1,
     "skcrf train: error: .*ragged.txt, line 4: expected 3 columns as on line 2, found 2"),
    (["train", "{train}"], 2, "the following arguments are required: -m/--model"),
    ([], 2, "skcrf: error: the following arguments are required: COMMAND"),
    (["tag", "--model", "{train}", "{test}"], 1,
     "skcrf tag: error: cannot load model .*train.txt: it is not an skcrf model file"),
    (["tag", "--model", "{future}", "{test}"], 1,
     f"cannot load model .*future.skcrf: it was saved by skcrf .* in model format "
     f"{FORMAT_VERSION + 1}"),
    (["tag", "--model", "{model}", "{one_column}"], 1,
     "one_column.txt has 1 column.* expected 3, or 2 without the label"),
    (["tag", "--model", "{model}", "{test}", "--output", "{folder}"], 1,
     "cannot write --output .*: it is a directory"),
    (["evaluate", "--model", "{model}", "{unlabelled}"], 1,
     "unlabelled.txt has 2 column.* expected 3$"),
    (["evaluate", "--model", "{model}", "{test}", "--scheme", "XYZ"], 2,
     "argument --scheme: invalid choice"),
])
def test_errors_are_one_line_with_a_status(data, trained, tmp_path, argv, status, expected):
    ragged = data["folder"] / "ragged.txt"
    ragged.write_text("\nEU NNP B-ORG\nrejects VBZ O\nGerman JJ\n")
    one_column = _write(data["folder"] / "one_column.txt", data["test_sentences"][:2], (0,))
    paths = {**{key: value for key, value in data.items() if key != "train_sentences"},
             "tmp": tmp_path, "model": trained["model"], "ragged": ragged,
             "one_column": one_column, "future": _future_model(trained, tmp_path)}
    code, out, err = _run(*[arg.format(**paths) for arg in argv])
    assert code == status
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    assert re.search(expected, err.strip()), err
    assert not (tmp_path / "m.skcrf").exists()


def _rewritten_model(source, target, change=None, change_header=None):
    """A copy of a model file whose zip members and header went through ``change``
    and ``change_header``, checksummed anew.

    What a damaged file with a valid checksum looks like: a file written by
    hand, or by another program, rather than by save_model.
    """
    from skcrf._persistence._file import _checksum

    magic, header, payload = source.read_bytes().split(b"\n", 2)
    header = json.loads(header)
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    members = change(members) if change else members
    header = change_header(header) if change_header else header
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    payload = buffer.getvalue()
    header["payload"]["size"] = len(payload)
    header["sha256"] = _checksum(header, payload)
    target.write_bytes(b"\n".join([magic, json.dumps(header).encode(), payload]))
    return target


def _huge_array(members):
    """Claim a shape of 10^12 columns for the largest float array: 10^13 bytes to allocate."""
    name = max((name for name, data in members.items()
                if name.endswith(".npy") and b"'<f8'" in data[:128]),
               key=lambda name: len(members[name]))
    data = members[name]
    header_length = 10 + int.from_bytes(data[8:10], "little")
    header = re.sub(rb"'shape': \([^)]*\)", b"'shape': (3, 1000000000000)",
                    data[:header_length].rstrip()).ljust(header_length - 1) + b"\n"
    return {**members, name: header + data[header_length:]}


def _damaged_models(trained, folder):
    """Model files damaged in the ways a file can be: {name: path}."""
    data = trained["model"].read_bytes()
    files = {
        "truncated": data[:len(data) // 2],
        "header only": data[:data.index(b"\n", 12) + 1],
        "garbage": np.random.default_rng(0).bytes(5000),
        "empty": b"",
        "flipped byte": data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:],
    }
    paths = {}
    for name, content in files.items():
        paths[name] = folder / f"{name.replace(' ', '_')}.skcrf"
        paths[name].write_bytes(content)
    paths["huge array"] = _rewritten_model(trained["model"], folder / "huge.skcrf",
                                           _huge_array)
    paths["bad layout"] = _rewritten_model(
        trained["model"], folder / "layout.skcrf",
        change_header=lambda header: {**header, "metadata": {"layout": {"columns": 3}}})
    return paths


@pytest.mark.parametrize("command", ["tag", "evaluate"])
def test_a_damaged_model_is_one_line_error(data, trained, tmp_path, command):
    """Whatever the damage, one line naming the file, never a traceback."""
    for name, path in _damaged_models(trained, tmp_path).items():
        status, out, err = _run(command, "--model", path, data["test"])
        assert status == 1, (name, err)
        assert out == "", name
        assert len(err.splitlines()) == 1 and "Traceback" not in err, (name, err)
        assert err.startswith(f"skcrf {command}: error: cannot load model {path}: "), err
        assert str(path) not in err.split(f"{path}: ", 1)[1], err  # named once


@pytest.mark.parametrize("command", ["train", "tag", "evaluate"])
def test_help_of_each_command(command):
    status, out, _ = _run(command, "--help")
    assert status == 0
    words = " ".join(out.split())
    assert out.startswith(f"usage: skcrf {command}")
    assert "examples:" in out and f"skcrf {command} " in out.split("examples:")[1]
    assert "--model MODEL" in out
    if command == "train":
        c1, c2 = _defaults.crfsuite_c1_c2()
        assert f"(default: {_defaults.ALPHA:g})" in words
        assert f"c1={c1:g}, c2={c2:g}" in words
        assert f"(default: {_defaults.MAX_ITER})" in words
        assert f"(default: {_defaults.TOL:g})" in words


def test_python_dash_m_entry_point(data, tmp_path):
    model = tmp_path / "m.skcrf"
    result = subprocess.run(
        [sys.executable, "-m", "skcrf", "train", str(data["train"]), "--model", str(model),
         "--max-iter", "3", "--n-jobs", "1"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("trained 3 iterations")
    assert result.stderr.startswith("skcrf train: warning:")
    assert load_model(model)[-1].n_iter_ == 3


def test_only_the_max_iter_warning_gets_the_max_iter_advice(capsys):
    from sklearn.exceptions import ConvergenceWarning

    from skcrf._cli._commands import warnings_as_lines as _warnings_as_lines

    with _warnings_as_lines("skcrf train", "raise --max-iter"):
        warnings.warn("CRFClassifier did not converge in max_iter=5 iterations",
                      ConvergenceWarning)
        warnings.warn("CRFClassifier stopped after 3 iterations because the line search "
                      "could not decrease the objective; scale the features",
                      ConvergenceWarning)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "skcrf train: warning: raise --max-iter",
        "skcrf train: warning: CRFClassifier stopped after 3 iterations because the line "
        "search could not decrease the objective; scale the features",
    ]


def test_dash_reads_standard_input(data, trained, tmp_path):
    """'-' for the input file, as CRFsuite takes it: the same output as the file's path."""
    text = data["unlabelled"].read_bytes()
    result = subprocess.run(
        [sys.executable, "-m", "skcrf", "tag", "-m", str(trained["model"]), "-"],
        input=text, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    _, expected, _ = _run("tag", "--model", trained["model"], data["unlabelled"])
    assert result.stdout.decode() == expected
    # the spooled copy of standard input is gone
    assert not list(Path(tempfile.gettempdir()).glob("skcrf-stdin-*"))


def test_evaluate_warns_when_the_gold_labels_are_not_the_models(data, trained, tmp_path):
    """A model of another task scores near 0: evaluate says why instead of exiting quietly."""
    text = data["test"].read_text()
    other = tmp_path / "other_task.txt"
    lines = [" ".join([*line.split()[:-1], "X-" + line.split()[-1]]) if line.strip() else line
             for line in text.splitlines()]
    other.write_text("\n".join(lines) + "\n")
    status, out, err = _run("evaluate", "-m", trained["model"], other, "--scheme", "plain")
    assert status == 0 and "token accuracy: 0.0000" in out
    assert "none of the gold labels" in err and "another task" in err
    status, _, err = _run("evaluate", "-m", trained["model"], data["test"])
    assert "gold label" not in err


def test_warmup_readies_every_structure():
    status, out, err = _run("warmup")
    assert status == 0, err
    lines = out.splitlines()
    from skcrf._cli._warmup import KINDS

    assert [line.split(":")[0] for line in lines[:-1]] == [
        label for label, *_ in KINDS.values()]
    assert {"chain", "order2", "order3", "transition-features", "semi-markov", "tree",
            "online"} <= set(KINDS)
    assert lines[-1].startswith("kernels ready in")
    status, out, _ = _run("warmup", "--quiet")
    assert status == 0 and len(out.splitlines()) == 1


def test_c1_alone_takes_c2_from_the_defaults(data, tmp_path):
    model_path = tmp_path / "c.skcrf"
    status, _, err = _run("train", data["train"], "-m", model_path, "--quiet",
                          "--max-iter", 2, "--c1", 0.5)
    crf = load_model(model_path)[-1]
    _, c2 = _defaults.crfsuite_c1_c2()
    assert crf.alpha == pytest.approx(0.5 + 2 * c2)
    assert crf.alpha * crf.l1_ratio == pytest.approx(0.5)


@pytest.mark.parametrize("command", ["train", "tag", "evaluate", "warmup"])
def test_every_command_takes_quiet(command):
    status, out, _ = _run(command, "--help")
    assert status == 0 and "-q, --quiet" in out


def test_quiet_tag_and_evaluate_print_only_their_results(data, trained):
    for argv in (["tag", "-m", trained["model"], data["unlabelled"]],
                 ["evaluate", "-m", trained["model"], data["test"]]):
        status, out, err = _run(*argv)
        quiet_status, quiet_out, quiet_err = _run(*argv, "--quiet")
        assert status == quiet_status == 0, err
        assert quiet_out == out and out
        assert quiet_err == err == ""


def test_notes_and_warnings_are_one_line_and_quiet_keeps_only_warnings(monkeypatch):
    """A note on the skcrf logger (kernels compiling) and a warning, as one line each."""
    import logging

    def command(args):
        logging.getLogger("skcrf").warning("compiling skcrf's kernels")
        warnings.warn("something\n   to say", UserWarning)
        logging.getLogger("skcrf").error("a failure")
        print("result")
        return 0

    monkeypatch.setitem(COMMANDS, "warmup", command)
    status, out, err = _run("warmup")
    assert status == 0 and out == "result\n"
    assert err.splitlines() == ["skcrf warmup: compiling skcrf's kernels",
                                "skcrf warmup: warning: something to say",
                                "skcrf warmup: a failure"]
    status, out, err = _run("warmup", "-q")
    assert status == 0 and out == "result\n"
    assert err.splitlines() == ["skcrf warmup: warning: something to say",
                                "skcrf warmup: a failure"]
    # the command line's handler is gone afterwards
    assert not logging.getLogger("skcrf").handlers


# --- issue 32: the command line's own faults ----------------------------------------------


def _latin1_and_utf8(sentences):
    """The bytes of a UTF-8 file with accents, and one stray Latin-1 byte on line 9."""
    rows = [" ".join(row) for sentence in sentences for row in sentence + [("",)]]
    rows[0] = "Bogotá NP B-LOC"
    text = "\n".join(rows).encode("utf-8")
    stray = text.index(b"\n".join(rows[8].encode("utf-8").split(b"\n")))
    return text[:stray] + b"\xe9" + text[stray:]


def test_one_stray_byte_is_an_error_naming_its_line_not_a_latin1_file(data, trained,
                                                                      tmp_path):
    """One non-UTF-8 byte made the whole file Latin-1: every accented letter garbled
    (213 of 2,000 output lines changed, accuracy 0.940 -> 0.916) (issue 32, item 4)."""
    path = tmp_path / "mixed.txt"
    path.write_bytes(_latin1_and_utf8(data["test_sentences"]))
    offset = path.read_bytes().index(b"\xe9")
    for argv in (["tag", "--model", trained["model"], path],
                 ["evaluate", "--model", trained["model"], path],
                 ["train", path, "--model", tmp_path / "m.skcrf"]):
        status, out, err = _run(*argv)
        assert status == 1 and out == "" and len(err.splitlines()) == 1, err
        assert (f"mixed.txt: line 9 has the byte 0xe9 (at byte offset {offset}), which is "
                f"not UTF-8, though the file's other characters are") in err
    # the file's encoding, given, is taken as it is
    status, out, err = _run("tag", "--model", trained["model"], path, "--encoding", "latin-1")
    assert status == 0 and "BogotÃ¡" in out
    # and a file that is all 8-bit text is still Latin-1, as the CoNLL-2002 release
    latin = tmp_path / "latin.txt"
    latin.write_bytes(path.read_bytes().replace(b"\xe9", b"").decode("utf-8").encode("latin-1"))
    status, out, _ = _run("tag", "--model", trained["model"], latin)
    assert status == 0 and out.startswith("Bogotá NP")


def test_an_undecodable_byte_in_the_given_encoding_is_named_by_line(data, trained, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"Ana NP\nva VMI\n\nLuis NP\nvi\xff VMI\n")
    status, _, err = _run("tag", "--model", trained["model"], path, "--encoding", "utf-8")
    assert status == 1 and len(err.splitlines()) == 1
    assert "bad.txt: line 5 is not valid utf-8 text (invalid start byte: the byte 0xff at " \
           "byte offset 25)" in err


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])
def test_utf16_is_named_not_read_as_nul_bytes(data, trained, tmp_path, encoding):
    """UTF-16 input was reported as "expected 3 columns ... '\\x00'" (issue 32, item 18)."""
    path = tmp_path / "wide.txt"
    path.write_bytes(data["test"].read_text(encoding="utf-8").encode(encoding))
    status, _, err = _run("tag", "--model", trained["model"], path)
    assert status == 1 and len(err.splitlines()) == 1
    assert "wide.txt is UTF-16 text" in err and "--encoding utf-16" in err
    status, out, _ = _run("tag", "--model", trained["model"], path, "--encoding", encoding)
    _, expected, _ = _run("tag", "--model", trained["model"], data["test"])
    assert status == 0 and out == expected


def test_an_output_that_is_an_input_is_refused(data, trained, tmp_path):
    """``skcrf tag ... --output MODEL`` replaced the model, ``skcrf train F -m F`` the
    training file, both with exit 0 (issue 32, item 17)."""
    model_copy = tmp_path / "model.skcrf"
    model_copy.write_bytes(trained["model"].read_bytes())
    train_copy = tmp_path / "train.txt"
    train_copy.write_bytes(data["train"].read_bytes())
    before = model_copy.read_bytes(), train_copy.read_bytes()
    for argv, what in (
            (["tag", "--model", model_copy, data["test"], "--output", model_copy], "model"),
            (["tag", "--model", model_copy, train_copy, "--output", train_copy],
             "file to label"),
            (["train", train_copy, "-m", train_copy], "training file"),
            (["train", train_copy, "-m", tmp_path / "." / "train.txt"], "training file")):
        status, _, err = _run(*argv)
        assert status == 1 and len(err.splitlines()) == 1, err
        assert f"is the {what}: writing it would replace the {what}" in err
    assert (model_copy.read_bytes(), train_copy.read_bytes()) == before


def test_huge_nbest_and_window_are_one_line_errors(data, trained, tmp_path):
    """--nbest 100000000 raised MemoryError and --window 1000000 was killed at 23.5 GB,
    both as tracebacks (issue 32, item 12)."""
    long = _write(tmp_path / "long.txt", [sum(data["test_sentences"][:8], [])] * 3)
    status, out, err = _run("tag", "--model", trained["model"], long, "--nbest", 100_000_000)
    assert status == 1 and out == "" and len(err.splitlines()) == 1, err
    assert "predict_nbest(n=100000000) would take about" in err and "ask for n <=" in err
    status, _, err = _run("train", data["train"], "--model", tmp_path / "m.skcrf",
                          "--window", 1_000_000)
    assert status == 2 and len(err.splitlines()) == 1
    assert "argument --window: '1000000' is not an integer in [0, 100]" in err


def test_a_closed_standard_output_is_one_line(data, trained):
    """With stdout closed (``>&-``) Python has no sys.stdout: "AttributeError: 'NoneType'
    object has no attribute 'write'" (issue 32, item 12)."""
    for argv in (["tag", "--model", str(trained["model"]), str(data["test"])],
                 ["evaluate", "--model", str(trained["model"]), str(data["test"])]):
        result = subprocess.run([sys.executable, "-m", "skcrf", *argv], stdout=None,
                                stderr=subprocess.PIPE, text=True, timeout=600,
                                preexec_fn=lambda: os.close(1))
        assert result.returncode == 1, result.stderr
        assert result.stderr.strip().endswith("error: standard output is closed; give "
                                              "--output FILE, or redirect it"), result.stderr
        assert "Traceback" not in result.stderr


def test_out_of_memory_is_one_line(data, trained, monkeypatch):
    from skcrf._cli import _commands

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(_commands._Labeller, "__call__", exhausted)
    status, out, err = _run("tag", "--model", trained["model"], data["test"])
    assert status == 1 and err == "skcrf tag: error: out of memory; try a smaller input or " \
                                  "model\n"


def test_warmup_help_lists_every_kind():
    # issue 43, item 29: the help listed 5 of the 7 kinds
    from skcrf._cli._warmup import KINDS

    status, out, _ = _run("warmup", "--help")
    assert status == 0
    help_text = " ".join(out.split())
    for kind in KINDS:
        assert kind in help_text


def test_warmup_says_which_worker_died(monkeypatch):
    # issue 43, item 26: a killed worker gave a BrokenProcessPool traceback
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from skcrf._cli import _warmup

    class KilledPool:
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, function, kind):
            future = Future()
            future.set_exception(BrokenProcessPool("A process in the pool was terminated"))
            return future

    monkeypatch.setattr(_warmup, "ProcessPoolExecutor", KilledPool)
    status, _, err = _run("warmup", "--only", "chain,tree", "--jobs", "2")
    assert status != 0
    assert "'chain'" in err and "ended abruptly" in err and "--jobs 1" in err
    assert "Traceback" not in err


def test_evaluate_on_an_empty_file_says_so(data, trained):
    # issue 43, item 25 (the CoNLL side; test_cli_trees.py has CoNLL-U)
    empty = data["folder"] / "empty.txt"
    empty.write_text("", encoding="utf-8")
    status, _, err = _run("evaluate", "--model", trained["model"], empty)
    assert status != 0
    assert "empty.txt" in err and "no token" in err and "Traceback" not in err
