"""``skcrf train --numeric-columns``: columns of a column file read as a dense block."""

import numpy as np
import pytest

from skcrf._cli._commands import with_numbers
from skcrf._persistence import load_model
from tests.test_cli import _run


def _sentences(seed, n):
    """(word, number, label) rows: the label is the number's sign, the word says nothing."""
    rng = np.random.default_rng(seed)
    sentences = []
    for _ in range(n):
        values = rng.normal(size=int(rng.integers(3, 8)))
        sentences.append([(str(rng.choice(["a", "b", "c"])), f"{v:.6f}",
                           "B-POS" if v > 0 else "O") for v in values])
    return sentences


def _write(path, sentences, columns=(0, 1, 2)):
    path.write_text("\n\n".join("\n".join(" ".join(row[c] for c in columns) for row in s)
                                for s in sentences) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli_numeric")
    train, test = _sentences(0, 60), _sentences(1, 20)
    model = folder / "model.skcrf"
    status, out, err = _run("train", _write(folder / "train.txt", train), "--model", model,
                            "--numeric-columns", 1, "--max-iter", 100, "--n-jobs", 1)
    assert status == 0, err
    return {"folder": folder, "model": model, "out": out, "test_sentences": test,
            "test": _write(folder / "test.txt", test),
            "unlabelled": _write(folder / "unlabelled.txt", test, columns=(0, 1))}


def test_numeric_columns_become_the_dense_block(trained):
    model, metadata = load_model(trained["model"], return_metadata=True)
    assert metadata["layout"]["numeric_columns"] == [1]
    assert metadata["layout"]["token_columns"] == [0]
    crf = model[-1]
    assert crf.n_dense_features_in_ == 1 and crf.feature_names_[-1] == "col1"
    assert "numeric columns 1" in trained["out"]


def test_tag_reads_the_numbers_as_training_did(trained):
    test = trained["test_sentences"]
    model = load_model(trained["model"])
    tokens = [[row[0] for row in sentence] for sentence in test]
    values = [np.array([[float(row[1])] for row in sentence]) for sentence in test]
    expected = model[-1].predict(with_numbers(model[:-1].transform(tokens), values, ["col1"]))
    # the numbers are not made by the pipeline: its own predict without them says so
    with pytest.raises(ValueError, match="dense"):
        model.predict(tokens)
    for path in (trained["test"], trained["unlabelled"]):
        status, out, err = _run("tag", "--model", trained["model"], path)
        assert status == 0, err
        blocks = [[line.split() for line in block.splitlines()]
                  for block in out.strip("\n").split("\n\n")]
        assert [[fields[-1] for fields in block] for block in blocks] == \
            [list(labels) for labels in expected]
    # the numbers decide the labels here: the model learned them
    gold = np.concatenate([[row[2] for row in sentence] for sentence in test])
    assert np.mean(np.concatenate(expected) == gold) > 0.9
    status, out, _ = _run("evaluate", "--model", trained["model"], trained["test"])
    assert status == 0 and "token accuracy" in out


def test_bad_numbers_are_named(trained):
    bad = _sentences(2, 3)
    bad[1][2] = (bad[1][2][0], "n/a", bad[1][2][2])
    path = _write(trained["folder"] / "bad.txt", bad)
    status, _, err = _run("tag", "--model", trained["model"], path)
    assert status != 0
    assert "sequence 1, token 2, column 1" in err and "'n/a', not a number" in err
    bad[1][2] = (bad[1][2][0], "inf", bad[1][2][2])
    path = _write(trained["folder"] / "inf.txt", bad)
    status, _, err = _run("train", path, "--model", trained["folder"] / "m.skcrf",
                          "--numeric-columns", 1)
    assert status != 0 and "sequence 1, token 2, column 1" in err and "finite" in err


@pytest.mark.parametrize("options, message", [
    (["--columns", "0,1"], "both a token column"),
    (["--label-column", "1"], "both a numeric column"),
    (["--structure", "tree"], "--numeric-columns is for column files"),
])
def test_numeric_columns_clashes_are_usage_errors(trained, options, message):
    status, _, err = _run("train", trained["test"], "--model",
                          trained["folder"] / "clash.skcrf", "--numeric-columns", 1, *options)
    assert status != 0 and message in err
