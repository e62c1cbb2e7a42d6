"""The fast paths of word and vector featurizing against the loops they stand in for."""

import re
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skcrf.features import SequenceVectorizer, _columns_by_key, _dict_arrays, _vectors, _word_column
from skcrf.features import vectorizer as _vectors_in_vectorizer
from skcrf.features._vectors import split_vectors

KEYS = ["w", "vec", "emb", "n"]


@st.composite
def _dict_sequences(draw):
    """Token dicts whose keys hold str, numbers, vectors (float32 or float64) or a mix."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    # per key: what its values are, and each vector key's one length
    kinds = {key: draw(st.sampled_from(["str", "number", "vector32", "vector64", "mixed"]))
             for key in KEYS}
    lengths = {key: draw(st.integers(0, 3)) for key in KEYS}

    def value(key):
        kind = kinds[key]
        if kind == "mixed":
            kind = draw(st.sampled_from(["str", "vector64"]))
        if kind == "str":
            return draw(st.sampled_from(["a", "b", "c"]))
        if kind == "number":
            return float(rng.normal())
        dtype = np.float32 if kind == "vector32" else np.float64
        return rng.normal(size=lengths[key]).astype(dtype)

    sizes = draw(st.lists(st.integers(0, 5), min_size=1, max_size=6))
    return [[{key: value(key) for key in KEYS if rng.random() < 0.7} for _ in range(n)]
            for n in sizes]


def _by_the_loop(X, widths):
    with mock.patch.object(_vectors, "_split_by_layout", lambda X, widths: None):
        return split_vectors(X, widths)


def _assert_same(fast, slow):
    assert fast[0] == slow[0]  # dicts compare their arrays by identity: the same objects
    assert fast[2] == slow[2]
    assert fast[1].dtype == slow[1].dtype
    np.testing.assert_array_equal(fast[1], slow[1])


@settings(max_examples=150, deadline=None)
@given(X=_dict_sequences())
def test_split_by_layout_equals_the_loop(X):
    try:
        slow = _by_the_loop(X, None)
    except (ValueError, TypeError) as error:
        with pytest.raises(type(error), match=re.escape(str(error))):
            split_vectors(X)
        return
    _assert_same(split_vectors(X), slow)
    # transform: the fitted widths, with a key fit never met left out
    widths = dict(list(slow[2].items())[:1])
    _assert_same(split_vectors(X, widths), _by_the_loop(X, widths))


def test_split_by_layout_takes_the_tutorial_shape():
    rng = np.random.default_rng(0)
    X = [[{"bias": 1.0, "w": w, "vec": rng.normal(size=4)} for w in "abc"],
         [{"bias": 1.0, "w": "a", "BOS": True, "vec": rng.normal(size=4)}]]
    fast = _vectors._split_by_layout(X, None)
    assert fast is not None
    assert fast[0] == [[{"bias": 1.0, "w": w} for w in "abc"],
                       [{"bias": 1.0, "w": "a", "BOS": True}]]
    np.testing.assert_array_equal(fast[1], np.vstack([t["vec"] for s in X for t in s]))


@settings(max_examples=100, deadline=None)
@given(X=st.lists(st.lists(st.one_of(
    st.sampled_from(["la", "casa"]),
    st.tuples(st.sampled_from(["la", "casa"]), st.just("NC")),
    st.lists(st.sampled_from(["la", "casa", "DA"]), min_size=1, max_size=3),
    st.tuples(st.integers(0, 3))), max_size=4), max_size=4),
    word_column=st.integers(0, 2))
def test_plain_words_equal_the_loop(X, word_column):
    fast = _word_column._plain_words(X, word_column)
    try:
        words = [token if isinstance(token, str) else _word_column._word_of(
            token, word_column, 0, 0, "test") for sequence in X for token in sequence]
    except (ValueError, TypeError):
        assert fast is None
        return
    assert fast is None or fast == words
    if fast is None:  # the loop takes them, with the same words
        assert _word_column.sequence_words(X, word_column, "test")[0] == words


def _fit_and_transform(X, one_pass):
    """(vectorizer, fit_transform's output, transform's output, or the error raised).

    Every input takes the chunked, key-by-key route here (no small-input
    shortcut, chunks of 3 tokens, no minimum of tokens per layout); without
    ``one_pass`` the vector sink refuses every column, so that the vectorizer
    falls back on ``split_vectors`` and its stripped copies.
    """
    patches = [mock.patch.object(_dict_arrays, "_SMALL_VALUES", 0),
               mock.patch.object(_dict_arrays, "_CHUNK_TOKENS", 3),
               mock.patch.object(_columns_by_key, "_MIN_TOKENS_PER_LAYOUT", 1)]
    if not one_pass:
        patches.append(mock.patch.object(_vectors.VectorSink, "take",
                                         lambda self, key, rows, column: False))
    for patch in patches:
        patch.start()
    try:
        vectorizer = SequenceVectorizer()
        return vectorizer, vectorizer.fit_transform(X), vectorizer.transform(X)
    except (ValueError, TypeError) as error:
        return error
    finally:
        for patch in patches:
            patch.stop()


def _assert_same_matrix(fast, slow):
    assert fast.dense_names.tolist() == slow.dense_names.tolist()
    assert fast.dense.dtype == slow.dense.dtype
    np.testing.assert_array_equal(fast.dense, slow.dense)
    np.testing.assert_array_equal(fast.offsets, slow.offsets)
    assert (fast.matrix != slow.matrix).nnz == 0


@settings(max_examples=150, deadline=None)
@given(X=_dict_sequences())
def test_one_pass_vectors_equal_the_stripped_dicts(X):
    X = [sequence for sequence in X if sequence] or [[{"w": "a"}]]
    if not any(isinstance(value, np.ndarray) for sequence in X for token in sequence
               for value in token.values()):
        X[0][0] = {**X[0][0], "vec": np.ones(2)}
    fast, slow = _fit_and_transform(X, True), _fit_and_transform(X, False)
    if isinstance(slow, Exception):
        assert type(fast) is type(slow) and str(fast) == str(slow)
        return
    assert fast[0].feature_names_ == slow[0].feature_names_
    assert fast[0].vector_widths_ == slow[0].vector_widths_
    _assert_same_matrix(fast[1], slow[1])
    _assert_same_matrix(fast[2], slow[2])


def test_one_pass_vectors_copy_no_dict():
    """The tutorial's shape takes the one-pass route: ``split_vectors`` is never called."""
    rng = np.random.default_rng(0)
    X = [[{"bias": 1.0, "w": w, "vec": rng.normal(size=4).astype(np.float32)}
          for w in rng.choice(["la", "casa", "de"], size=40).tolist()] for _ in range(200)]
    with mock.patch.object(_vectors_in_vectorizer, "split_vectors",
                           side_effect=AssertionError("stripped copies made")):
        vectorizer = SequenceVectorizer()
        Xt = vectorizer.fit_transform(X)
        again = vectorizer.transform(X)
    stacked = np.vstack([token["vec"] for sequence in X for token in sequence])
    assert Xt.dense.dtype == np.float32
    np.testing.assert_array_equal(Xt.dense, stacked)
    np.testing.assert_array_equal(again.dense, stacked)
    assert vectorizer.feature_names_ == ["bias", "w=casa", "w=de", "w=la"]
