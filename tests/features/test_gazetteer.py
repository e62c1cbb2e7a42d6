"""Gazetteer matches against a plain reading of the definitions, and the file format."""

import itertools
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skcrf import TokenFeaturizer
from skcrf.features._numbering import factorize
from skcrf.features.gazetteer import FUZZY_MIN_LENGTH, Gazetteer, token_features


def _fold(word):
    return "".join(c for c in unicodedata.normalize("NFKD", word.casefold())
                   if not unicodedata.combining(c))


def _edit_distance(a, b):
    """Damerau-Levenshtein (optimal string alignment) distance, by dynamic programming."""
    d = np.zeros((len(a) + 1, len(b) + 1), dtype=int)
    d[:, 0] = range(len(a) + 1)
    d[0, :] = range(len(b) + 1)
    for i, j in itertools.product(range(1, len(a) + 1), range(1, len(b) + 1)):
        d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
        if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
            d[i, j] = min(d[i, j], d[i - 2, j - 2] + 1)
    return d[len(a), len(b)]


def _word_matches(kind, word, entry_word):
    if kind == "exact":
        return word == entry_word
    if kind == "lower":
        return word.casefold() == entry_word.casefold()
    a, b = _fold(word), _fold(entry_word)
    return a == b or (min(len(a), len(b)) >= FUZZY_MIN_LENGTH and _edit_distance(a, b) <= 1)


def _naive_matches(entries, sequences, kind):
    """Every (start, length, type) by trying every span against every entry."""
    found = set()
    start = 0
    for words in sequences:
        for a in range(len(words)):
            for phrase, types in entries.items():
                parts = phrase.split()
                span = words[a:a + len(parts)]
                if len(span) == len(parts) and all(map(_word_matches, [kind] * len(parts),
                                                       span, parts)):
                    found.update((start + a, len(parts), t) for t in types)
        start += len(words)
    return found


def _matches(gazetteer, sequences, kind):
    tokens = [w for words in sequences for w in words]
    word_ids, words = factorize(tokens)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sequences])]).astype(np.int64)
    found = gazetteer.matches(words, word_ids, offsets, kind)
    types = gazetteer.types
    return {(int(s), int(d), types[t]) for s, d, t in zip(found.starts, found.lengths,
                                                         found.type_ids)}


WORDS = ["Madrid", "madrid", "Madrdi", "Bogotá", "bogota", "ONU", "ono", "de", "De", "la",
         "Real", "real", "Reál", "Club", "club"]


def _draw_entries_and_sequences(data, words, types, longest_phrase, longest_sequence,
                                most_sequences):
    """Random entries (phrase -> set of types, taken in turn) and sequences of ``words``."""
    vocabulary = st.sampled_from(words)
    phrases = data.draw(st.lists(st.lists(vocabulary, min_size=1, max_size=longest_phrase),
                                 min_size=1, max_size=6))
    entries = {}
    for k, phrase in enumerate(phrases):
        entries.setdefault(" ".join(phrase), set()).add(types[k % 2])
    sequences = data.draw(st.lists(st.lists(vocabulary, min_size=0, max_size=longest_sequence),
                                   min_size=1, max_size=most_sequences))
    return entries, sequences


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_matches_equal_a_plain_reading_of_the_definitions(data):
    entries, sequences = _draw_entries_and_sequences(data, WORDS, "AB", 3, 6, 4)
    gazetteer = Gazetteer.of({p: sorted(t) for p, t in entries.items()})
    for kind in ("exact", "lower", "fuzzy"):
        assert _matches(gazetteer, sequences, kind) == _naive_matches(entries, sequences, kind)


def test_each_kind_of_match():
    gazetteer = Gazetteer.of({"Nueva York": "LOC", "ONU": ["ORG", "LOC"]})
    sequences = [["Nueva", "York"], ["nueva", "york"], ["Nueba", "Yrok"], ["ONU", "onu", "ONO"]]
    exact = _matches(gazetteer, sequences, "exact")
    lower = _matches(gazetteer, sequences, "lower")
    fuzzy = _matches(gazetteer, sequences, "fuzzy")
    assert exact == {(0, 2, "LOC"), (6, 1, "ORG"), (6, 1, "LOC")}
    assert lower == exact | {(2, 2, "LOC"), (7, 1, "ORG"), (7, 1, "LOC")}
    # one edit in each word of four letters or more; "ONO" is too short to differ
    assert fuzzy == lower | {(4, 2, "LOC")}


def test_matches_never_cross_a_sequence_end():
    gazetteer = Gazetteer.of({"a b": "X"})
    assert _matches(gazetteer, [["a"], ["b"]], "exact") == set()
    assert _matches(gazetteer, [["a", "b"], ["a"]], "exact") == {(0, 2, "X")}


def test_bio_token_features():
    gazetteer = Gazetteer.of({"a b c": "X", "b c": "X", "c": "Y"})
    sequences = [["a", "b", "c"]]
    word_ids, words = factorize(sequences[0])
    rows, columns, names = token_features(gazetteer, words, word_ids,
                                          np.array([0, 3], dtype=np.int64))
    flags = {(int(r), names[c]) for r, c in zip(rows, columns)}
    exact = {(r, n) for r, n in flags if n.startswith("gaz:")}
    assert exact == {(0, "gaz:B-X"), (1, "gaz:I-X"), (2, "gaz:I-X"), (1, "gaz:B-X"),
                     (2, "gaz:B-Y")}
    # every kind that holds: an exact match is a case-folded and a fuzzy one too
    assert {n.split(":", 1)[1] for _, n in flags} == {"B-X", "I-X", "B-Y"}
    assert {n.split(":")[0] for _, n in flags} == {"gaz", "gaz.lower", "gaz~"}


def test_file_of_entries(tmp_path):
    path = tmp_path / "gazetteer.tsv"
    path.write_text("# places\nNueva  York\tLOC\nNueva York\tORG\n\nONU\tORG\n",
                    encoding="utf-8")
    gazetteer = Gazetteer.of(str(path))
    assert gazetteer.types == ["LOC", "ORG"]
    assert _matches(gazetteer, [["Nueva", "York"]], "exact") == {(0, 2, "LOC"), (0, 2, "ORG")}
    bad = tmp_path / "bad.tsv"
    bad.write_text("ONU\tORG\nno tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv, line 2: expected 'phrase<TAB>type'"):
        Gazetteer.of(str(bad))
    latin = tmp_path / "latin.tsv"
    latin.write_bytes("Bogotá\tLOC\n".encode("latin-1"))
    with pytest.raises(ValueError, match="not UTF-8"):
        Gazetteer.of(str(latin))
    with pytest.raises(ValueError, match="cannot read"):
        Gazetteer.of(str(tmp_path / "missing.tsv"))


@pytest.mark.parametrize("spec, error, match", [
    (["a"], TypeError, "mapping from phrases to types"),
    ({"": "X"}, ValueError, "phrases must be non-empty"),
    ({"a": 3}, TypeError, r"gazetteer\['a'\] is a int"),
    ({"a": []}, ValueError, "one or more non-empty str types"),
    ({"a": ["X", 1]}, ValueError, "one or more non-empty str types"),
])
def test_bad_entries_are_named(spec, error, match):
    with pytest.raises(error, match=match):
        Gazetteer.of(spec)
    # the featurizer's own check names the parameter
    with pytest.raises(error, match="gazetteer"):
        TokenFeaturizer(gazetteer=spec).fit_transform([["a"]])


def _naive_token_flags(entries, sequences):
    """Each token's exact BIO flags from the plain matches: B at a start, I after it."""
    flags = set()
    for start, length, kind in _naive_matches(entries, sequences, "exact"):
        flags.add((start, f"gaz:B-{kind}"))
        flags.update((start + i, f"gaz:I-{kind}") for i in range(1, length))
    return flags


def test_nested_entries_on_repetitive_text_cost_tokens_times_the_longest_entry():
    """Entries "a", "a a", ... on "a a a ...": ``L`` matches per token, spread over ``L`` tokens
    each, were ``n * L**2`` entries; the longest match per start covers all (issue 43, item 18)."""
    longest, n_tokens = 40, 200
    entries = {" ".join(["a"] * k): ["X"] for k in range(1, longest + 1)}
    gazetteer = Gazetteer.of(entries)
    sequences = [["a"] * n_tokens]
    word_ids, words = factorize(sequences[0])
    rows, columns, names = token_features(gazetteer, words, word_ids,
                                          np.array([0, n_tokens], dtype=np.int64))
    n_kinds = 3
    assert rows.shape[0] <= n_kinds * n_tokens * longest
    flags = {(int(r), names[c]) for r, c in zip(rows, columns)}
    assert {f for f in flags if f[1].startswith("gaz:")} == _naive_token_flags(entries,
                                                                               sequences)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_token_flags_equal_a_plain_reading_of_the_matches(data):
    entries, sequences = _draw_entries_and_sequences(data, ["a", "b", "c"], "XY", 4, 8, 3)
    tokens = [w for words in sequences for w in words]
    word_ids, words = factorize(tokens)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sequences])]).astype(np.int64)
    gazetteer = Gazetteer.of({p: sorted(t) for p, t in entries.items()})
    rows, columns, names = token_features(gazetteer, words, word_ids, offsets)
    flags = {(int(r), names[c]) for r, c in zip(rows, columns) if names[c].startswith("gaz:")}
    assert flags == _naive_token_flags(entries, sequences)
