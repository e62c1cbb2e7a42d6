"""One sentence of dicts through remembered (key, value) pairs: the loop's output, its errors."""

import math
from decimal import Decimal
from fractions import Fraction
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings

from skcrf import SequenceVectorizer
from skcrf.features import _dict_arrays, _dict_pairs
from skcrf.features._columns_by_key import ColumnsByKey
from skcrf.features._dict_arrays import FeatureValueError, _vectorize_loop
from skcrf.features._dict_pairs import vectorize_pairs

from .test_vectorizer import assert_compact_equals_loop, sequences, tutorial_dicts


def known_half(X):
    """A fixed vocabulary holding every other name the loop finds in ``X``."""
    names = {}
    _vectorize_loop(X, names, True, "=")
    return {name: i for i, name in enumerate(sorted(names)[::2])}


@settings(max_examples=150, deadline=None)
@given(X=sequences, again=sequences)
def test_pairs_match_the_loop_cold_and_remembered(X, again):
    vocabulary = known_half(X + again)
    before = dict(vocabulary)
    tables = ColumnsByKey(vocabulary, "=")
    # X cold, X with every pair remembered, then another input meeting some of them
    for inputs in (X, X, again):
        got = vectorize_pairs(inputs, tables)
        if not any(inputs):
            assert got is None  # no token: left to the general path
            continue
        assert_compact_equals_loop(got, _vectorize_loop(inputs, dict(vocabulary), False, "="))
    assert vocabulary == before


@pytest.mark.parametrize("remembered", [1 << 16, 1])
def test_pairs_forget_past_their_bound_and_stay_exact(remembered):
    X = [[{"w": "a", "n": 1, "m": 0.0}, {"w": "b", "n": 2.5, "m": True}], [{"w": "a"}]]
    vocabulary = {"w=a": 0, "n": 1, "m": 2}
    tables = ColumnsByKey(vocabulary, "=")
    with mock.patch.object(_dict_pairs, "_REMEMBERED_PAIRS", remembered):
        for _ in range(3):
            assert_compact_equals_loop(vectorize_pairs(X, tables),
                                       _vectorize_loop(X, vocabulary, False, "="))
            assert len(tables.pairs) <= max(remembered + 1, 5)


class Text(str):
    """A str subclass naming itself otherwise: the loop formats it, a hit would not."""

    def __format__(self, spec):
        return "other"

    def __str__(self):
        return "other"


@pytest.mark.parametrize("token", [
    {"n": Decimal(1)},            # equal to a remembered 1, but unsupported
    {"n": complex(1, 0)},
    {"n": Fraction(1)},           # a number the loop converts
    {"n": np.float64(1.0)},
    {"n": np.bool_(True)},
    {"w": Text("a")},             # equal to a remembered "a"
    {Text("w"): "a"},             # a key equal to a remembered one
    {"w": ["a"]},
    {1: "a"},
])
def test_values_equal_to_remembered_pairs_go_the_general_way(token):
    tables = ColumnsByKey({"w=a": 0, "n": 1}, "=")
    warm = [[{"w": "a", "n": 1, "m": 0}]]
    assert vectorize_pairs(warm, tables) is not None
    assert ("w", "a") in tables.pairs and ("n", 1) in tables.pairs
    assert vectorize_pairs([[{"w": "a"}, token]], tables) is None
    assert vectorize_pairs([[], [object()]], tables) is None  # not a dict


def test_transform_of_one_sentence_keeps_its_errors_and_output():
    train = [tutorial_dicts([("El", "DA"), ("perro", "NC"), ("come", "VM")]),
             tutorial_dicts([("La", "DA"), ("casa", "NC")])]
    vectorizer = SequenceVectorizer().fit(train)
    reference = SequenceVectorizer().fit(train)
    for sentence in train * 2:  # the second time, every pair is remembered
        got = vectorizer.transform([sentence])
        with mock.patch.object(_dict_arrays, "vectorize_pairs", return_value=None):
            expected = reference.transform([sentence])
        assert (got.matrix != expected.matrix).nnz == 0
    bad = [dict(train[0][0], bias=Decimal(1))]
    with pytest.raises(FeatureValueError, match="unsupported type"):
        vectorizer.transform([bad])
    nan = [dict(train[0][0], bias=math.nan)]
    assert np.isnan(vectorizer.transform([nan]).matrix.data).any()
