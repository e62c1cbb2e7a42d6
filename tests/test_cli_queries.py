"""``skcrf tag --nbest`` and ``skcrf train --constraints``, end to end."""

import re

import pytest

from skcrf._persistence import load_model
from skcrf.tags import segments_to_tags, tags_to_segments
from tests.test_cli import _run, _sentences, _write


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The small CoNLL files of tests/test_cli.py."""
    folder = tmp_path_factory.mktemp("cli_queries")
    train, test = _sentences(0, 40), _sentences(1, 12)
    return {"train": _write(folder / "train.txt", train), "test_sentences": test,
            "unlabelled": _write(folder / "unlabelled.txt", test, columns=(0, 1)),
            "folder": folder}


@pytest.fixture(scope="module")
def trained(data):
    model = data["folder"] / "model.skcrf"
    status, _, err = _run("train", data["train"], "--model", model, "--max-iter", 50,
                          "--n-jobs", 1, "--quiet")
    assert status == 0, err
    return {"model": model}


def _nbest_blocks(text):
    """[(rank, probability, rows)] of the '# RANK PROBABILITY' blocks of ``tag --nbest``."""
    blocks = []
    for chunk in text.strip("\n").split("\n\n"):
        header, *rows = chunk.splitlines()
        match = re.fullmatch(r"# (\d+) (\d\.\d{6})", header)
        assert match, header
        blocks.append((int(match[1]), float(match[2]), [row.split() for row in rows]))
    return blocks


def test_tag_nbest_writes_each_labelling_after_its_rank_and_probability(data, trained):
    status, out, err = _run("tag", "--model", trained["model"], data["unlabelled"],
                            "--nbest", 3)
    assert status == 0 and err == ""
    model = load_model(trained["model"])
    X = [[row[:2] for row in sentence] for sentence in data["test_sentences"]]
    expected = model[-1].predict_nbest(model[:-1].transform(X), n=3)
    blocks = iter(_nbest_blocks(out))
    for sentence, labellings in zip(data["test_sentences"], expected, strict=True):
        for k, (labels, probability) in enumerate(labellings):
            rank, written, rows = next(blocks)
            assert rank == k and written == pytest.approx(probability, abs=5e-7)
            assert [tuple(row[:2]) for row in rows] == [row[:2] for row in sentence]
            assert [row[2] for row in rows] == labels.tolist()
    assert next(blocks, None) is None
    # the best of each is what plain tag writes, and --nbest 1 gives it with its probability
    _, best, _ = _run("tag", "--model", trained["model"], data["unlabelled"], "--nbest", 1)
    _, plain, _ = _run("tag", "--model", trained["model"], data["unlabelled"])
    assert [rows for _, _, rows in _nbest_blocks(best)] == [
        [line.split() for line in block.splitlines()]
        for block in plain.strip("\n").split("\n\n")]


def test_tag_nbest_with_marginals_adds_each_label_probability(data, trained):
    status, out, _ = _run("tag", "--model", trained["model"], data["unlabelled"],
                          "--nbest", 2, "--marginals")
    assert status == 0
    model = load_model(trained["model"])
    crf = model[-1]
    X = [[row[:2] for row in sentence] for sentence in data["test_sentences"]]
    marginals = crf.predict_marginals(model[:-1].transform(X))
    blocks = _nbest_blocks(out)
    q = -1
    for rank, _, rows in blocks:
        q += rank == 0
        for t, row in enumerate(rows):
            column = list(crf.classes_).index(row[2])
            assert float(row[3]) == pytest.approx(marginals[q][t, column], abs=5e-5)


def test_tag_nbest_refuses_zero(data, trained):
    status, _, err = _run("tag", "--model", trained["model"], data["unlabelled"], "--nbest", 0)
    assert status == 2 and "'0' is not an integer >= 1" in err


def test_train_constraints_bio_gives_well_formed_tags(data, tmp_path):
    # a training file with one malformed sequence: I-PER opening a span
    sentences = _sentences(0, 40)
    sentences[0] = [(w, pos, "I-PER" if k == 0 else tag)
                    for k, (w, pos, tag) in enumerate(sentences[0])]
    train = _write(tmp_path / "train.txt", sentences)
    model = tmp_path / "model.skcrf"
    status, out, err = _run("train", train, "--model", model, "--max-iter", 30, "--n-jobs", 1,
                            "--constraints", "bio", "--quiet")
    assert status == 0
    assert "not well-formed IOB2" in err
    crf = load_model(model)[-1]
    assert crf.allowed_transitions == "bio"
    assert not crf.allowed_transitions_.all()
    status, out, _ = _run("tag", "--model", model, data["unlabelled"], "--nbest", 4)
    for _, _, rows in _nbest_blocks(out):
        tags = [row[2] for row in rows]
        assert segments_to_tags(tags_to_segments(tags), len(tags)) == tags


def test_train_constraints_clash_with_semimarkov(data, tmp_path):
    status, _, err = _run("train", data["train"], "--model", tmp_path / "m.skcrf",
                          "--structure", "semimarkov", "--constraints", "bio")
    assert status == 1
    assert "--constraints apply to --structure chain, not semimarkov" in err
