"""The CoNLL-U reader: tokens with 0-based heads, skipped lines, checked trees, UD EWT."""

import re

import pytest

from skcrf.datasets._fetch import corpus_file
from skcrf.datasets import fetch_ud, load_conllu
from tests._corpora import record_files, write_file
from tests.conftest import data_home


def word(i, form, head, upos="X", deprel="dep", lemma=None):
    """One CoNLL-U word line; XPOS is the form upper-cased so columns are told apart."""
    return (f"{i}\t{form}\t{lemma or form.lower()}\t{upos}\t{form.upper()}\t_\t{head}"
            f"\t{deprel}\t_\tSpaceAfter=No\n")


# Two sentences: the first with comments, a multiword token ("del" = "de" + "el")
# and an empty node, its heads pointing across the skipped lines.
TEXT = ("# sent_id = a\n# text = Voy del centro\n"
        + word(1, "Voy", 0, "VERB", "root")
        + "2-3\tdel\t_\t_\t_\t_\t_\t_\t_\t_\n"
        + word(2, "de", 4, "ADP", "case")
        + word(3, "el", 4, "DET", "det:def")
        + "3.1\tir\tir\tVERB\t_\t_\t_\t_\t1:conj\t_\n"
        + word(4, "centro", 1, "NOUN", "obl:arg")
        + "\n# sent_id = b\n"
        + word(1, "Hola", 0, "INTJ", "root")
        + "\n")


def write(tmp_path, text, name="ud.conllu", newline=None, encoding="utf-8"):
    return write_file(tmp_path, text, name, encoding, newline)


def test_tokens_are_the_columns_then_the_head_index(tmp_path):
    X, y = load_conllu(write(tmp_path, TEXT))
    # heads: 0-based word indices, -1 for the root; ranges and empty nodes skipped
    assert X == [[("Voy", -1), ("de", 3), ("el", 3), ("centro", 0)], [("Hola", -1)]]
    assert y == [["VERB", "ADP", "DET", "NOUN"], ["INTJ"]]


def test_columns_and_label_by_name_or_index(tmp_path):
    path = write(tmp_path, TEXT)
    X, y = load_conllu(path, columns=("lemma", "form", "xpos"), label="deprel")
    assert X[0][1] == ("de", "de", "DE", 3) and X[1] == [("hola", "Hola", "HOLA", -1)]
    assert y == [["root", "case", "det:def", "obl:arg"], ["root"]]
    assert load_conllu(path, columns=[1, 3], label=4) == load_conllu(
        path, columns=["form", "upos"], label="xpos")
    X, y = load_conllu(path, columns=("misc",), label=None)
    assert X[1] == [("SpaceAfter=No", -1)] and y is None


def test_deprel_subtypes_false_keeps_the_universal_relation(tmp_path):
    path = write(tmp_path, TEXT)
    X, y = load_conllu(path, columns=("form", "deprel"), label="deprel", deprel_subtypes=False)
    assert y[0] == ["root", "case", "det", "obl"]
    assert [token[1] for token in X[0]] == y[0]
    # other columns keep their colons
    assert load_conllu(path, label="misc", deprel_subtypes=False)[1][0][0] == "SpaceAfter=No"


def test_forest_is_allowed(tmp_path):
    text = word(1, "Yes", 0) + word(2, ",", 3) + word(3, "sure", 0) + "\n"
    assert load_conllu(write(tmp_path, text))[0] == [[("Yes", -1), (",", 2), ("sure", -1)]]


def test_windows_line_ends_byte_order_mark_and_loose_blank_lines(tmp_path):
    expected = load_conllu(write(tmp_path, TEXT))
    crlf = write(tmp_path, "\ufeff" + TEXT.replace("\n", "\r\n"), "crlf.conllu", newline="")
    assert load_conllu(crlf) == expected
    # several blank lines, a block of comments alone, no final newline
    loose = TEXT.replace("\n# sent_id = b", "\n\n\n# lone comment\n\n# sent_id = b").rstrip()
    assert load_conllu(write(tmp_path, loose, "loose.conllu")) == expected
    assert load_conllu(write(tmp_path, "# only a comment\n\n", "c.conllu")) == ([], [])
    assert load_conllu(write(tmp_path, "", "e.conllu"), label=None) == ([], None)


def test_spaces_inside_a_form_and_other_encodings(tmp_path):
    text = word(1, "New York", 0, "PROPN") + word(2, "año", 1) + "\n"
    assert load_conllu(write(tmp_path, text))[0] == [[("New York", -1), ("año", 0)]]
    latin = write(tmp_path, text, "latin.conllu", encoding="latin-1")
    with pytest.raises(UnicodeDecodeError):
        load_conllu(latin)
    assert load_conllu(latin, encoding="latin-1")[0][0][1] == ("año", 0)


SECOND = "# sent_id = b\n"  # the second sentence starts at line 10 of TEXT + this


@pytest.mark.parametrize("lines, line, message", [
    # the failing sentence is the second one; its first line is line 10
    ([word(1, "A", 0), "2\tB\tb\tX\n"], 12,
     r"expected the 10 tab-separated columns of CoNLL-U, found 4: '2\\tB\\tb\\tX'"),
    ([word(1, "A", 0), word(2, "B", 1).replace("\n", "\t\n")], 12, r"found 11"),
    ([word(1, "A", 0), word(3, "B", 1)], 12,
     r"word ID '3' where 2 was expected: IDs must be 1, 2, ... in order"),
    ([word(2, "A", 0)], 11, r"word ID '2' where 1 was expected"),
    ([word(1, "A", 0), word(1, "B", 1)], 12, r"word ID '1' where 2 was expected"),
    ([word(1, "A", 0), word("2a", "B", 1)], 12, r"word ID '2a' where 2 was expected"),
    ([word(1, "A", 0), "1-x\tB\t_\t_\t_\t_\t_\t_\t_\t_\n"], 12, r"word ID '1-x' where 2"),
    ([word(1, "A", 0), word(2, "B", "_")], 12,
     r"HEAD '_' is not a word ID or 0 \(the tree needs every word's head\)"),
    ([word(1, "A", 0), word(2, "B", "")], 12, r"HEAD '' is not a word ID or 0$"),
    ([word(1, "A", 0), word(2, "B", "-1")], 12, r"HEAD '-1' is not a word ID or 0$"),
    ([word(1, "A", 0), word(2, "B", "1_0")], 12, r"HEAD '1_0' is not a word ID"),
    ([word(1, "A", 0), word(2, "B", "\u0661")], 12, r"HEAD '\u0661' is not a word ID"),
    ([word(1, "A", 0), word(2, "B", 3)], 12, r"HEAD 3 is outside the sentence of 2 words"),
    ([word(1, "A", 2), word(2, "B", 1)], 11, r"no word has HEAD 0: the sentence has no root"),
    ([word(1, "A", 0), word(2, "B", 3), word(3, "C", 2)], 12,
     r"the heads form a cycle 2 -> 3 -> 2 \(word IDs\) with no path to a root"),
    ([word(1, "A", 0), word(2, "B", 2)], 12, r"cycle 2 -> 2 \(word IDs\)"),
    (["1-2\tAB\t_\t_\t_\t_\t_\t_\t_\t_\n", "1.1\tE\t_\t_\t_\t_\t_\t_\t_\t_\n"], 11,
     r"the sentence has no words, only multiword tokens or empty nodes"),
    # the line is the word's, found across a multiword token and an empty node
    ([word(1, "A", 0), "2-3\tBC\t_\t_\t_\t_\t_\t_\t_\t_\n", "1.1\tE\t_\t_\t_\t_\t_\t_\t_\t_\n",
      word(2, "B", 1), word(3, "C", 4)], 15, r"HEAD 4 is outside the sentence of 3 words"),
])
def test_errors_name_the_file_sentence_and_line(tmp_path, lines, line, message):
    first = TEXT[:TEXT.index("# sent_id = b")]
    assert first.count("\n") == 9
    path = write(tmp_path, first + SECOND + "".join(lines) + "\n" + word(1, "Z", 0))
    with pytest.raises(ValueError) as info:
        load_conllu(path)
    assert str(info.value).startswith(f"{path}, sentence 2, line {line}: ")
    assert re.search(message, str(info.value)), str(info.value)


def test_an_error_in_the_first_sentence_and_a_cycle_under_a_root(tmp_path):
    path = write(tmp_path, word(1, "A", 0) + word(2, "B", 3) + word(3, "C", 4)
                 + word(4, "D", 2) + word(5, "E", 4) + "\n")
    with pytest.raises(ValueError, match=r"sentence 1, line 2: the heads form a cycle "
                                         r"2 -> 3 -> 4 -> 2"):
        load_conllu(path)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"label": "head_id"}, ValueError,
     r"label: 'head_id' is no CoNLL-U column; use one of 'id', 'form', .* or an index"),
    ({"label": 10}, ValueError, r"label: 10 is no CoNLL-U column"),
    ({"columns": ("form", -1)}, ValueError, r"columns: -1 is no CoNLL-U column"),
    ({"columns": (True,)}, ValueError, r"columns: True is no CoNLL-U column"),
    ({"columns": ()}, ValueError, r"columns must name at least one column"),
    ({"columns": "form"}, TypeError, r"columns must be a sequence .*; got 'form'"),
])
def test_bad_arguments(tmp_path, kwargs, error, match):
    with pytest.raises(error, match=match):
        load_conllu(write(tmp_path, TEXT), **kwargs)


def test_fetch_ud_reads_with_the_same_reader(tmp_path, monkeypatch):
    # a file already in the data home is read without any download
    (tmp_path / "ud_english_ewt").mkdir()
    write(tmp_path / "ud_english_ewt", TEXT, "en_ewt-ud-dev.conllu")
    record_files(monkeypatch, tmp_path)  # the loaders check a file's size against the table
    X, y = fetch_ud("en_ewt", "dev", data_home=tmp_path, download_if_missing=False)
    assert X == [["Voy", "de", "el", "centro"], ["Hola"]]  # the forms alone by default
    assert y == [["VERB", "ADP", "DET", "NOUN"], ["INTJ"]]
    X, y = fetch_ud(subset="dev", columns=("form", "upos"), label="deprel",
                    deprel_subtypes=False, data_home=tmp_path)
    assert (X, y) == load_conllu(tmp_path / "ud_english_ewt" / "en_ewt-ud-dev.conllu",
                                 columns=("form", "upos"), label="deprel",
                                 deprel_subtypes=False)
    assert X[0][3] == ("centro", "NOUN", 0) and y[0][3] == "obl"
    # the tree is checked on the default path too
    write(tmp_path / "ud_english_ewt", word(1, "A", "_") + "\n", "en_ewt-ud-dev.conllu")
    record_files(monkeypatch, tmp_path)
    with pytest.raises(ValueError, match=r"sentence 1, line 1: HEAD '_'"):
        fetch_ud(subset="dev", data_home=tmp_path)


UPOS = {"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
        "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X"}


@pytest.mark.parametrize("subset, n_sentences, n_words", [
    ("train", 12544, 204577), ("dev", 2001, 25147), ("test", 2077, 25094)])
def test_ud_english_ewt(subset, n_sentences, n_words):
    path = corpus_file("ud_english_ewt", f"en_ewt-ud-{subset}.conllu", data_home())
    X, y = load_conllu(path, columns=("form", "deprel"), label="upos")
    assert len(X) == len(y) == n_sentences
    assert sum(map(len, X)) == n_words
    assert all(len(tokens) == len(labels) for tokens, labels in zip(X, y))
    assert {label for labels in y for label in labels} == UPOS
    for tokens in X:
        n = len(tokens)
        parents = [token[-1] for token in tokens]
        assert all(type(parent) is int and -1 <= parent < n for parent in parents)
        # acyclic: from every word, the root is reached in fewer than n steps
        for start in range(n):
            node, steps = start, 0
            while node != -1 and steps <= n:
                node, steps = parents[node], steps + 1
            assert node == -1
    # EWT follows UD to the letter: exactly one root per sentence, labelled root
    assert all([token[-1] for token in tokens].count(-1) == 1 for tokens in X)
    assert all(token[1] == "root" for tokens in X for token in tokens if token[-1] == -1)
    # the syntactic words: "don't" is the words "do" and "n't", not one token
    forms = {token[0] for tokens in X for token in tokens}
    assert "n't" in forms and "don't" not in forms


def test_ud_english_ewt_relations_and_fetch_ud_agree():
    path = corpus_file("ud_english_ewt", "en_ewt-ud-dev.conllu", data_home())
    X, y = load_conllu(path, label="deprel")
    _, y_base = load_conllu(path, label="deprel", deprel_subtypes=False)
    assert any(":" in label for labels in y for label in labels)
    assert y_base == [[label.split(":")[0] for label in labels] for labels in y]
    forms, labels = fetch_ud("en_ewt", "dev", label="deprel", data_home=data_home(),
                             download_if_missing=False)
    assert labels == y
    assert forms == [[token[0] for token in tokens] for tokens in X]


# Issue 32, fault 18: errors that named no file or line
def test_a_head_of_thousands_of_digits_is_outside_the_sentence_naming_the_line(tmp_path):
    path = write(tmp_path, word(1, "A", 0) + word(2, "B", "9" * 5000) + "\n")
    with pytest.raises(ValueError, match=r"sentence 1, line 2: HEAD 9999999999\.\.\.\(5000 "
                                         r"digits\) is outside the sentence of 2 words"):
        load_conllu(path)
    # leading zeros are still read as the number they spell
    path = write(tmp_path, word(1, "A", 0) + word(2, "B", "0" * 5000 + "1") + "\n")
    assert load_conllu(path)[0] == [[("A", -1), ("B", 0)]]


def test_a_byte_that_is_not_utf8_names_the_file_line_and_byte(tmp_path):
    first = word(1, "A", 0) + "\n"
    path = tmp_path / "latin.conllu"
    path.write_bytes(first.encode() + word(1, "año", 0).encode("latin-1") + b"\n")
    with pytest.raises(UnicodeDecodeError) as info:
        load_conllu(path)
    message = str(info.value)
    offset = len(first.encode()) + 3  # "1\ta" then the byte of "ñ"
    assert f"{path}, line 3 (byte {offset} of the file) is not utf-8" in message
    assert "encoding='latin-1'" in message and "\n" not in message
    assert load_conllu(path, encoding="latin-1")[0][1] == [("año", -1)]
