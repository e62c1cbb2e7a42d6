"""CoNLL reader, the named corpus loaders and the embedded sample."""

import fnmatch
import sys
from pathlib import Path

import pytest

from skcrf.datasets import (
    get_data_home,
    iter_conll,
    load_conll,
    load_conll2000,
    load_conll2002,
    load_ud_sample,
)
from tests._corpora import record_files, write_file
from tests.conftest import data_home

TEXT = """-DOCSTART- -X- O

EU NNP B-ORG
rejects VBZ O
German JJ B-MISC


Peter NNP B-PER
-DOCSTART- -X- O
Año NC O
"""


def write(tmp_path, text, name="data.txt", encoding="utf-8", newline=None):
    return write_file(tmp_path, text, name, encoding, newline)


def test_sequences_labels_and_docstart(tmp_path):
    X, y = load_conll(write(tmp_path, TEXT))
    assert X == [[("EU", "NNP"), ("rejects", "VBZ"), ("German", "JJ")], [("Peter", "NNP")],
                 [("Año", "NC")]]
    assert y == [["B-ORG", "O", "B-MISC"], ["B-PER"], ["O"]]


def test_columns_and_label_column(tmp_path):
    path = write(tmp_path, TEXT)
    X, y = load_conll(path, columns=[0])
    assert X[0] == ["EU", "rejects", "German"] and y[0] == ["B-ORG", "O", "B-MISC"]
    X, y = load_conll(path, columns=[1, 0], label_column=None)
    assert X[1] == [("NNP", "Peter")] and y is None
    X, y = load_conll(path, label_column=1)
    assert X[0][0] == ("EU", "B-ORG") and y[0] == ["NNP", "VBZ", "JJ"]
    X, y = load_conll(path, columns=[-3], label_column=-2)
    assert X[2] == ["Año"] and y[2] == ["NC"]


def test_windows_line_ends_and_missing_final_newline(tmp_path):
    path = write(tmp_path, "a X B\r\nb Y O\r\n\r\nc Z O", newline="")
    assert load_conll(path) == ([[("a", "X"), ("b", "Y")], [("c", "Z")]], [["B", "O"], ["O"]])


def test_separator_keeps_spaces_inside_columns(tmp_path):
    path = write(tmp_path, "New York\tNNP\tB-LOC\ncity\tNN\tO\n \nx\tNN\tO\n")
    X, y = load_conll(path, separator="\t")
    assert X == [[("New York", "NNP"), ("city", "NN")], [("x", "NN")]]
    assert y == [["B-LOC", "O"], ["O"]]


def test_docstart_line_is_skipped_whatever_the_separator(tmp_path):
    path = tmp_path / "tabs.txt"
    path.write_text("-DOCSTART- -X- O\n\nNew York\tNNP\tB-LOC\nis\tVBZ\tO\n",
                    encoding="utf-8")
    X, y = load_conll(path, separator="\t")
    assert X == [[("New York", "NNP"), ("is", "VBZ")]]
    assert y == [["B-LOC", "O"]]


def test_other_encodings(tmp_path):
    path = write(tmp_path, "España NP B-LOC\n", encoding="latin-1")
    with pytest.raises(UnicodeDecodeError):
        load_conll(path)
    assert load_conll(path, encoding="latin-1")[0] == [[("España", "NP")]]


@pytest.mark.parametrize("encoding", ["utf-8", "UTF8", "utf_8"])
def test_a_utf8_byte_order_mark_is_skipped(tmp_path, encoding):
    """Not a token line made of -DOCSTART-, nor a first word starting with U+FEFF."""
    path = write(tmp_path, "\ufeff" + TEXT)
    assert load_conll(path, encoding=encoding) == load_conll(write(tmp_path, TEXT, "plain"))
    path = write(tmp_path, "\ufeffEU NNP B-ORG\n")
    assert load_conll(path, encoding=encoding) == ([[("EU", "NNP")]], [["B-ORG"]])
    # only at the start: elsewhere U+FEFF is a character of its word
    path = write(tmp_path, "EU NNP B-ORG\n\ufeffx NN O\n")
    assert load_conll(path)[0] == [[("EU", "NNP"), ("\ufeffx", "NN")]]


@pytest.mark.parametrize("space", ["\u00a0", "\u0085", "\x0c", "\x0b", "\u2028", "\u3000",
                                   "\x1f"])
def test_columns_split_on_spaces_and_tabs_only(tmp_path, space):
    """Other whitespace inside a word ("1 000" with a no-break space) is part of it."""
    word = f"1{space}000"
    path = write(tmp_path, f"{word} CD O\nb\tY  O\n")
    assert load_conll(path) == ([[(word, "CD"), ("b", "Y")]], [["O", "O"]])
    # a ragged line is blamed itself, not the line after it
    path = write(tmp_path, f"a X O\n{word} CD\nb Y O\n")
    with pytest.raises(ValueError, match=r"line 2: expected 3 columns as on line 1, found 2"):
        load_conll(path)


def test_iter_conll_yields_the_sequences_of_load_conll(tmp_path):
    path = write(tmp_path, TEXT)
    for kwargs in [{}, {"columns": [0]}, {"columns": [1, 0], "label_column": None},
                   {"label_column": 1}]:
        X, y = load_conll(path, **kwargs)
        pairs = list(iter_conll(path, **kwargs))
        assert [tokens for tokens, _ in pairs] == X
        assert [labels for _, labels in pairs] == (y or [None] * len(X))


def test_iter_conll_is_lazy(tmp_path):
    """It reads no further than asked: an error far down comes only when reached."""
    path = write(tmp_path, "a X O\n\nb Y O\n\nc Z\n")
    sequences = iter_conll(path)
    assert next(sequences) == ([("a", "X")], ["O"])
    assert next(sequences) == ([("b", "Y")], ["O"])
    with pytest.raises(ValueError, match=r"line 5: expected 3 columns"):
        next(sequences)
    # and it opens nothing until the first next()
    missing = iter_conll(tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError):
        next(missing)


def test_empty_file(tmp_path):
    assert load_conll(write(tmp_path, "\n\n")) == ([], [])
    assert load_conll(write(tmp_path, ""), label_column=None) == ([], None)


@pytest.mark.parametrize("text, kwargs, match", [
    ("a X O\nb Y\n", {}, r"data.txt, line 2: expected 3 columns as on line 1, found 2"),
    ("a X O\n\nb Y O extra\n", {}, r"line 3: expected 3 columns as on line 1, found 4"),
    ("a X O\n", {"label_column": 3}, r"line 1: label_column 3 does not exist; the line has 3"),
    ("a X O\n", {"columns": [0, 5]}, r"line 1: token column 5 does not exist"),
    ("a\n", {}, r"line 1: no token columns left"),
])
def test_malformed_files_name_the_file_and_line(tmp_path, text, kwargs, match):
    with pytest.raises(ValueError, match=match):
        load_conll(write(tmp_path, text), **kwargs)


def test_get_data_home(monkeypatch, tmp_path):
    assert get_data_home(tmp_path) == tmp_path
    monkeypatch.setenv("SKCRF_DATA", str(tmp_path / "env"))
    assert get_data_home() == tmp_path / "env"
    monkeypatch.delenv("SKCRF_DATA")
    assert get_data_home() == Path("~", "skcrf_data").expanduser()  # never cwd-relative


def test_named_loaders_read_the_data_home(monkeypatch, tmp_path):
    (tmp_path / "conll2000").mkdir()
    (tmp_path / "conll2002").mkdir()
    write(tmp_path / "conll2000", "He PRP B-NP\nran VBD B-VP\n", "test.txt")
    # the original Spanish release is Latin-1: the loader falls back to it
    write(tmp_path / "conll2002", "España NP B-LOC\n", "esp.testa", encoding="latin-1")
    record_files(monkeypatch, tmp_path)  # the loaders check a file's size against the table
    assert load_conll2000("test", data_home=tmp_path) == (
        [[("He", "PRP"), ("ran", "VBD")]], [["B-NP", "B-VP"]])
    monkeypatch.setenv("SKCRF_DATA", str(tmp_path))
    assert load_conll2002("testa") == ([[("España", "NP")]], [["B-LOC"]])


def test_named_loaders_errors(tmp_path):
    with pytest.raises(ValueError, match=r"subset must be one of \['test', 'train'\]"):
        load_conll2000("dev", data_home=tmp_path)
    with pytest.raises(ValueError, match=r"subset must be one of \['testa', 'testb', 'train'\]"):
        load_conll2002("test", data_home=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"esp.train not found: download it with "
                                                r"`python -m skcrf.datasets conll2002`"):
        load_conll2002("train", data_home=tmp_path)


def real_corpus(loader, subset):
    try:
        return loader(subset, data_home=data_home())
    except FileNotFoundError as exc:
        pytest.skip(f"corpus not available: {exc}")


@pytest.mark.parametrize("subset, n_sequences, n_tokens", [
    ("train", 8323, 264715), ("testa", 1915, 52923), ("testb", 1517, 51533)])
def test_conll2002_spanish(subset, n_sequences, n_tokens):
    X, y = real_corpus(load_conll2002, subset)
    assert len(X) == len(y) == n_sequences
    assert sum(map(len, X)) == n_tokens
    assert all(len(s) == len(labels) for s, labels in zip(X, y))
    if subset == "train":
        assert X[0][:3] == [("Melbourne", "NP"), ("(", "Fpa"), ("Australia", "NP")]
        assert y[0][:3] == ["B-LOC", "O", "B-LOC"]
    assert all(isinstance(t, tuple) and len(t) == 2 for s in X[:50] for t in s)
    labels = {label for labels in y for label in labels}
    assert labels == {"O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER",
                      "B-MISC", "I-MISC"}


@pytest.mark.parametrize("subset, n_sequences, n_tokens", [
    ("train", 8936, 211727), ("test", 2012, 47377)])
def test_conll2000_chunking(subset, n_sequences, n_tokens):
    X, y = real_corpus(load_conll2000, subset)
    assert len(X) == len(y) == n_sequences
    assert sum(map(len, X)) == n_tokens
    assert all(len(s) == len(labels) for s, labels in zip(X, y))
    assert {label.split("-")[0] for labels in y for label in labels} == {"B", "I", "O"}
    assert "B-NP" in {label for labels in y for label in labels}


SAMPLE = Path(__file__).resolve().parents[1] / "skcrf" / "datasets" / "data" / \
    "ud_english_ewt_sample"
UPOS = {"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
        "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X"}


@pytest.mark.parametrize("subset, n_sentences, n_words", [("train", 419, 6637),
                                                          ("test", 70, 803)])
def test_the_embedded_sample_loads_offline_with_trees_and_labels(
        subset, n_sentences, n_words, tmp_path, monkeypatch):
    monkeypatch.setenv("SKCRF_DATA", str(tmp_path / "nothing-here"))
    X, y = load_ud_sample(subset)
    assert len(X) == len(y) == n_sentences and sum(map(len, X)) == n_words
    assert all(isinstance(form, str) for sentence in X for form in sentence)
    if subset == "train":
        assert {label for labels in y for label in labels} == UPOS
    trees, relations = load_ud_sample(subset, columns=("form", "xpos"), label="deprel",
                                      deprel_subtypes=False)
    assert [[token[0] for token in sentence] for sentence in trees] == X
    assert all(len(token) == 3 and -1 <= token[2] < len(sentence)
               for sentence in trees for token in sentence)
    assert all(":" not in label for labels in relations for label in labels)
    assert "root" in relations[0]
    assert not (tmp_path / "nothing-here").exists()  # no data home needed or made


def test_load_ud_sample_bad_arguments():
    with pytest.raises(ValueError, match=r"subset must be one of \['test', 'train'\]"):
        load_ud_sample("dev")
    with pytest.raises(ValueError, match=r"label must be one of \['deprel', 'upos', 'xpos'\]"):
        load_ud_sample(label="lemma")


def test_the_sample_is_small_licensed_and_shipped():
    files = sorted(path.name for path in SAMPLE.iterdir())
    assert files == ["LICENSE.txt", "README.md", "en_ewt-ud-sample-test.conllu",
                     "en_ewt-ud-sample-train.conllu"]
    assert sum(path.stat().st_size for path in SAMPLE.iterdir()) <= 400_000
    assert (SAMPLE / "LICENSE.txt").read_text("utf-8").startswith(
        "Attribution-ShareAlike 4.0 International")
    readme = (SAMPLE / "README.md").read_text("utf-8")
    assert "CC BY-SA 4.0" in readme and "Silveira" in readme and "r2.16" in readme
    if sys.version_info >= (3, 11):
        import tomllib

        pyproject = tomllib.loads((SAMPLE.parents[3] / "pyproject.toml").read_text("utf-8"))
        patterns = pyproject["tool"]["setuptools"]["package-data"]["skcrf.datasets"]
        assert all(any(fnmatch.fnmatch(f"data/ud_english_ewt_sample/{name}", pattern)
                       for pattern in patterns) for name in files)


def _conllu_sentences(path):
    return [block for block in path.read_text("utf-8").split("\n\n") if block.strip()]


@pytest.mark.parametrize("subset", ["train", "test"])
def test_the_sample_is_what_its_readme_says(subset):
    """Every 30th sentence, comments but sent_id and text dropped, FEATS, DEPS, MISC emptied."""
    full = data_home() / "ud_english_ewt" / f"en_ewt-ud-{subset}.conllu"
    if not full.is_file():
        pytest.skip(f"corpus not available: {full} (UD English EWT, to compare the sample)")
    expected = []
    for block in _conllu_sentences(full)[::30]:
        lines = []
        for line in block.split("\n"):
            if line.startswith("#"):
                if line.startswith(("# sent_id = ", "# text = ")):
                    lines.append(line)
                continue
            fields = line.split("\t")
            fields[5] = fields[8] = fields[9] = "_"
            lines.append("\t".join(fields))
        expected.append("\n".join(lines))
    assert _conllu_sentences(SAMPLE / f"en_ewt-ud-sample-{subset}.conllu") == expected


def test_a_byte_that_is_not_utf8_names_the_file_line_and_byte(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes(b"a X O\n\n" + "España NP B-LOC\n".encode("latin-1"))
    for read in (load_conll, lambda p: list(iter_conll(p))):
        with pytest.raises(UnicodeDecodeError, match=rf"{path}, line 3 \(byte 11 of the "
                                                     rf"file\) is not utf-8"):
            read(path)
