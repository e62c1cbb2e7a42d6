"""SequenceVectorizer: DictVectorizer parity, value rules, errors, both dict paths."""

import math
import pickle
from collections import OrderedDict
from fractions import Fraction
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction import DictVectorizer
from sklearn.utils import _safe_indexing

from skcrf import SequenceMatrix, SequenceVectorizer
from skcrf.features import _dict_arrays as _vectorizer
from skcrf.features import _numbering
from skcrf.features._kernels import sort_row_indices
from skcrf.features._dict_arrays import _vectorize_flat, _vectorize_loop, _vectorize_small
from tests._sklearn_checks import PARAMETER_CHECKS


def tutorial_dicts(sentence):
    """The sklearn-crfsuite tutorial features of a (word, POS) sentence."""
    dicts = []
    for i, (word, pos) in enumerate(sentence):
        features = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:],
                    "word.isupper()": word.isupper(), "word.istitle()": word.istitle(),
                    "word.isdigit()": word.isdigit(), "postag": pos}
        if i > 0:
            features["-1:word.lower()"] = sentence[i - 1][0].lower()
        else:
            features["BOS"] = True
        if i == len(sentence) - 1:
            features["EOS"] = True
        dicts.append(features)
    return dicts


MIXED = [
    [{"w": "Él", "len": 2, "upper": True, "score": 0.5, "tags": ["a", "b"]},
     {"w": "año", "len": 3, "upper": False, "score": -1.25, "tags": ("b",)}],
    [],
    [{"w": "日本", "len": 0, "tags": {"c"}, "n": np.float64(2.5), "m": np.int64(4)}],
]


def dense(matrix):
    return matrix.matrix.toarray() if isinstance(matrix, SequenceMatrix) else matrix.toarray()


def both_paths(X, vocabulary, grow, separator="="):
    """Outputs of the flat and the loop implementations on fresh vocabularies."""
    flat_vocabulary, loop_vocabulary = dict(vocabulary), dict(vocabulary)
    flat = _vectorize_flat(X, flat_vocabulary, grow, separator)
    loop = _vectorize_loop(X, loop_vocabulary, grow, separator)
    return flat, flat_vocabulary, loop, loop_vocabulary


# --- parity with DictVectorizer ---------------------------------------------


@pytest.mark.parametrize("sort", [True, False])
def test_parity_with_dict_vectorizer_on_real_sentences(tagged_small, sort):
    X_train, _, X_test, _ = tagged_small
    train = [tutorial_dicts(s) for s in X_train]
    test = [tutorial_dicts(s) for s in X_test]
    ours = SequenceVectorizer(sort=sort)
    theirs = DictVectorizer(sort=sort)
    Xt = ours.fit_transform(train)
    Dt = theirs.fit_transform([d for s in train for d in s])
    assert ours.feature_names_ == list(theirs.feature_names_)
    np.testing.assert_array_equal(dense(Xt), Dt.toarray())
    np.testing.assert_array_equal(dense(ours.transform(test)),
                                  theirs.transform([d for s in test for d in s]).toarray())
    assert Xt.lengths.tolist() == [len(s) for s in X_train]


def test_parity_with_dict_vectorizer_on_mixed_values():
    ours = SequenceVectorizer()
    theirs = DictVectorizer()
    Xt = ours.fit_transform(MIXED)
    Dt = theirs.fit_transform([d for s in MIXED for d in s])
    assert ours.feature_names_ == list(theirs.feature_names_)
    np.testing.assert_array_equal(dense(Xt), Dt.toarray())
    assert "w=日本" in ours.vocabulary_ and "tags=c" in ours.vocabulary_


def test_values_of_each_rule():
    vec = SequenceVectorizer()
    Xt = vec.fit_transform(MIXED)
    row = dict(zip(vec.feature_names_, Xt[0][0].toarray().ravel()))
    assert row["w=Él"] == 1.0 and row["len"] == 2.0 and row["upper"] == 1.0
    assert row["score"] == 0.5 and row["tags=a"] == 1.0 and row["tags=b"] == 1.0
    assert row["w=año"] == 0.0
    last = dict(zip(vec.feature_names_, Xt[2][0].toarray().ravel()))
    assert last["n"] == 2.5 and last["m"] == 4.0 and last["len"] == 0.0


def test_exotic_real_and_bool_types():
    X = [[{"f": Fraction(1, 4), "b": np.bool_(True), "z": np.bool_(False), "i": np.int32(3)}]]
    vec = SequenceVectorizer()
    row = dict(zip(vec.fit(X).feature_names_, vec.transform(X)[0].toarray().ravel()))
    assert row == {"b": 1.0, "f": 0.25, "i": 3.0, "z": 0.0}


# --- the flat path reproduces the loop exactly -------------------------------


scalars = st.one_of(
    st.sampled_from(["a", "b", "é", "x=y", "", "1"]),
    st.integers(-2, 2), st.booleans(),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, -2.5, math.nan]))
tokens = st.dictionaries(st.sampled_from(["k", "w", "w=x", "-1:w", "x", "n"]), scalars,
                         max_size=5)
sequences = st.lists(st.lists(tokens, max_size=6), max_size=6)


@settings(max_examples=150, deadline=None)
@given(X=sequences, sort=st.booleans())
def test_flat_path_matches_loop(X, sort):
    flat, flat_vocabulary, loop, loop_vocabulary = both_paths(X, {}, True)
    assert list(flat_vocabulary) == list(loop_vocabulary)  # same first-seen order
    for a, b in zip(flat, loop):
        np.testing.assert_array_equal(a, b)
    # and with a fixed vocabulary that misses some names
    known = {name: i for i, name in enumerate(sorted(loop_vocabulary, key=str)[::2])}
    flat, _, loop, _ = both_paths(X, known, False)
    for a, b in zip(flat, loop):
        np.testing.assert_array_equal(a, b)


def test_flat_path_handles_the_tutorial_features(tagged_small):
    X = [tutorial_dicts(s) for s in tagged_small[0]]
    flat, flat_vocabulary, loop, loop_vocabulary = both_paths(X, {}, True)
    assert flat is not None
    assert list(flat_vocabulary) == list(loop_vocabulary)
    for a, b in zip(flat, loop):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=60, deadline=None)
@given(X=sequences, with_list=st.booleans())
def test_chunks_join_like_one_pass(X, with_list):
    """Tiny chunks give the loop's output; a list value in a late chunk makes
    the whole input go through the loop, with the names of earlier chunks undone."""
    if with_list and X and X[-1]:
        X = X[:-1] + [X[-1] + [{"tags": ["z", "a"]}]]
    vocabulary, loop_vocabulary = {}, {}
    with mock.patch.object(_vectorizer, "_CHUNK_TOKENS", 2), \
            mock.patch.object(_vectorizer, "_SMALL_VALUES", 0):
        chunked = _vectorizer._vectorize(X, vocabulary, True, "=")
    loop = _vectorize_loop(X, loop_vocabulary, True, "=")
    assert list(vocabulary) == list(loop_vocabulary)
    for a, b in zip(chunked, loop):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


@pytest.mark.parametrize("X", [
    [[{"tags": ["a", "b"]}]],              # list values
    [[OrderedDict(w="a")]],                # a mapping that is not exactly a dict
    [[{"w": 1}, {"w": complex(1, 0)}]],    # equal to 1, but unsupported
    [[{"w": None}]],
])
def test_flat_path_defers_what_it_does_not_handle(X):
    assert _vectorize_flat(X, {}, True, "=") is None


# --- the small path (a few sentences) reproduces the loop exactly -------------


def assert_compact_equals_loop(compact, loop):
    """The small path's compact arrays hold the loop's (data None means all ones)."""
    data, indices, indptr = compact
    loop_data, loop_indices, loop_indptr, _ = loop
    assert indices.dtype == np.int32 and indptr.dtype == np.int64
    np.testing.assert_array_equal(indices, loop_indices)
    np.testing.assert_array_equal(indptr, loop_indptr)
    if data is None:
        assert np.all(loop_data == 1.0)
    else:
        assert data.dtype == np.float64
        np.testing.assert_array_equal(data, loop_data)


@settings(max_examples=150, deadline=None)
@given(X=sequences)
def test_small_path_matches_loop(X):
    vocabulary, loop_vocabulary = {}, {}
    small = _vectorize_small(X, vocabulary, True, "=")
    loop = _vectorize_loop(X, loop_vocabulary, True, "=")
    assert list(vocabulary) == list(loop_vocabulary)  # same first-seen order
    assert_compact_equals_loop(small, loop)
    # and with a fixed vocabulary that misses some names, left unchanged
    known = {name: i for i, name in enumerate(sorted(loop_vocabulary, key=str)[::2])}
    before = dict(known)
    small = _vectorize_small(X, known, False, "=")
    assert known == before
    assert_compact_equals_loop(small, _vectorize_loop(X, dict(known), False, "="))


@pytest.mark.parametrize("X", [
    [[{"tags": ["a", "b"]}]],              # list values
    [[OrderedDict(w="a")]],                # a mapping that is not exactly a dict
    [[{"w": 1}, {"w": complex(1, 0)}]],    # equal to 1, but unsupported
    [[{"w": None}]],
    [[{"w": np.float64(2.0)}]],            # a float subclass: the loop's conversion
    [[{"w": "a"}, {1: "a"}]],              # a key that is not a str
    [[{"w": "a"}, {1: 2.0}]],
])
def test_small_path_defers_what_it_does_not_handle(X):
    assert _vectorize_small(X, {}, True, "=") is None


@pytest.mark.parametrize("small_values", [0, 1 << 30])
def test_small_and_chunked_paths_give_the_same_vectorizer(tagged_small, small_values):
    """SequenceVectorizer is the same whichever path its inputs take."""
    X_train, _, X_test, _ = tagged_small
    train = [tutorial_dicts(s) for s in X_train[:20]]
    test = [tutorial_dicts(s) for s in X_test[:20]]
    reference = SequenceVectorizer(sort=False)
    expected_train = reference.fit_transform(train)
    expected_test = [reference.transform([s]) for s in test]
    vec = SequenceVectorizer(sort=False)
    with mock.patch.object(_vectorizer, "_SMALL_VALUES", small_values):
        got_train = vec.fit_transform(train)
        got_test = [vec.transform([s]) for s in test]
    assert vec.feature_names_ == reference.feature_names_
    for got, expected in zip([got_train, *got_test], [expected_train, *expected_test]):
        assert (got.matrix != expected.matrix).nnz == 0
        np.testing.assert_array_equal(got.offsets, expected.offsets)


@settings(max_examples=60, deadline=None)
@given(objects=st.lists(st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "", "1"]),
                                  st.booleans()), max_size=300))
def test_factorize_numbers_in_first_seen_order_on_both_paths(objects):
    first_seen = list(dict.fromkeys(objects))
    expected = [first_seen.index(obj) for obj in objects]  # equal objects share a code
    for small in (0, 1 << 30):
        with mock.patch.object(_numbering, "_SMALL_FACTORIZE", small):
            codes, distinct = _numbering.factorize(objects)
        assert codes.dtype == np.int64 and codes.tolist() == expected
        assert distinct == first_seen


def test_names_from_distinct_keys_merge_into_one_column():
    # "w=x" + "y" and "w" + "x=y" both make the name "w=x=y"
    X = [[{"w=x": "y", "w": "x=y"}, {"w": "x=y"}]]
    vec = SequenceVectorizer()
    Xt = vec.fit_transform(X)
    assert vec.feature_names_ == ["w=x=y"]
    assert dense(Xt).ravel().tolist() == [2.0, 1.0]


# --- non-str keys: named by their str() on every path ------------------------


def test_non_str_keys_are_named_by_their_str():
    """1, True and 1.0 are three keys ("1", "True", "1.0"); 1 and "1" are one."""
    X = [[{1: "a"}, {True: "a"}, {1.0: "a"}, {"1": "a"}, {1: 2.0}, {True: 3.0}, {1.0: 4.0}]]
    flat, flat_vocabulary, loop, loop_vocabulary = both_paths(X, {}, True)
    assert list(loop_vocabulary) == ["1=a", "True=a", "1.0=a", "1", "True", "1.0"]
    assert flat is None or list(flat_vocabulary) == list(loop_vocabulary)
    vec = SequenceVectorizer()
    Xt = vec.fit_transform(X)
    assert vec.feature_names_ == ["1", "1.0", "1.0=a", "1=a", "True", "True=a"]
    assert all(type(name) is str for name in vec.feature_names_)
    assert dense(Xt).tolist() == [[0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 0, 1], [0, 0, 1, 0, 0, 0],
                                  [0, 0, 0, 1, 0, 0], [2, 0, 0, 0, 0, 0], [0, 0, 0, 0, 3, 0],
                                  [0, 4, 0, 0, 0, 0]]


def test_non_str_keys_follow_the_same_rule_at_fit_and_transform():
    vec = SequenceVectorizer().fit([[{True: "a", 2: 2.0}]])
    assert vec.feature_names_ == ["2", "True=a"]
    Xt = vec.transform([[{1: "a"}, {"True": "a"}, {True: "a"}, {"2": 5.0}, {True: 1.0}]])
    # {1: "a"} is "1=a", unseen; the str key "True" is the bool key True
    assert dense(Xt).tolist() == [[0, 0], [0, 1], [0, 1], [5, 0], [0, 0]]


def test_non_str_names_of_a_matrix_follow_the_rule():
    X = named_matrix([[1, 2, 4]], [1, True, "1"], [0, 1])
    vec = SequenceVectorizer()
    assert dense(vec.fit_transform(X)).tolist() == [[5.0, 2.0]]
    assert vec.feature_names_ == ["1", "True"]
    assert dense(vec.transform(named_matrix([[3, 7]], [True, 1.0], [0, 1]))).tolist() \
        == [[0.0, 3.0]]


mixed_keys = st.sampled_from(["k", "1", 1, True, 1.0, 0, False, "True", "0"])
mixed_tokens = st.dictionaries(mixed_keys, scalars, max_size=5).filter(
    lambda token: len(set(map(str, token))) == len(token))


@settings(max_examples=100, deadline=None)
@given(X=st.lists(st.lists(mixed_tokens, max_size=5), max_size=5))
def test_non_str_keys_equal_their_str_on_both_paths(X):
    as_str = [[{str(key): value for key, value in token.items()} for token in sequence]
              for sequence in X]
    expected_vocabulary = {}
    expected = _vectorize_loop(as_str, expected_vocabulary, True, "=")
    small_path = mock.patch.object(_vectorizer, "_SMALL_VALUES", 1 << 30)
    flat_path = mock.patch.object(_vectorizer, "_SMALL_VALUES", 0)
    for vectorize, path in [(_vectorize_loop, flat_path), (_vectorizer._vectorize, flat_path),
                            (_vectorizer._vectorize, small_path)]:
        vocabulary = {}
        with path:
            got = vectorize(X, vocabulary, True, "=")
        assert list(vocabulary) == list(expected_vocabulary)
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b)


# --- sorting rows: stable, O(k log k) -----------------------------------------


def _sorted_rows_reference(indptr, indices, data):
    """Each row stably sorted by column, and whether any row repeats a column."""
    indices, data = indices.copy(), data.copy()
    repeated = False
    for lo, hi in zip(indptr[:-1], indptr[1:]):
        order = np.argsort(indices[lo:hi], kind="stable")
        indices[lo:hi], data[lo:hi] = indices[lo:hi][order], data[lo:hi][order]
        repeated |= bool(np.any(np.diff(indices[lo:hi]) == 0))
    return indices, data, repeated


@pytest.mark.parametrize("seed", range(4))
def test_row_sort_is_stable_on_short_and_long_rows(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.choice([0, 1, 5, 31, 32, 33, 200, 3000], size=12)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_columns = int(rng.choice([8, 10_000]))  # few columns: many repeats
    indices = rng.integers(0, n_columns, indptr[-1]).astype(np.int32)
    data = np.arange(indptr[-1], dtype=np.float64)  # distinct: shows the order of repeats
    expected = _sorted_rows_reference(indptr, indices, data)
    got_indices, got_data = indices.copy(), data.copy()
    repeated = sort_row_indices(indptr, got_indices, got_data, False)
    np.testing.assert_array_equal(got_indices, expected[0])
    np.testing.assert_array_equal(got_data, expected[1])
    assert repeated == expected[2]
    binary_indices = indices.copy()
    assert sort_row_indices(indptr, binary_indices, np.empty(0), True) == expected[2]
    np.testing.assert_array_equal(binary_indices, expected[0])


class _CountingArray(np.ndarray):
    """An array that counts the elements read or written through indexing."""

    touched = 0

    def __getitem__(self, key):
        result = super().__getitem__(key)
        _CountingArray.touched += np.size(result)
        return result

    def __setitem__(self, key, value):
        _CountingArray.touched += np.size(super().__getitem__(key))
        super().__setitem__(key, value)


def test_row_sort_touches_k_log_k_elements_not_k_squared():
    """Counted, not timed: one reversed row of k entries (a long row: numpy's sort).

    An insertion sort moves every entry past all the others, k^2 / 2 element
    moves (10^5 features on one token took 2.3 s per token).
    """
    k = 1000
    indptr = np.array([0, k], dtype=np.int64)
    for binary in (True, False):
        indices = np.arange(k, 0, -1, dtype=np.int32).view(_CountingArray)
        data = (np.empty(0) if binary else np.arange(k, dtype=np.float64)).view(
            _CountingArray)
        _CountingArray.touched = 0
        sort_row_indices(indptr, indices, data, binary)
        assert np.asarray(indices).tolist() == list(range(1, k + 1))
        assert _CountingArray.touched <= 20 * k * math.log2(k), _CountingArray.touched


def test_one_token_with_a_hundred_thousand_features():
    token = {f"f{j:06d}": 1.0 for j in range(100_000, 0, -1)}  # reverse name order
    vec = SequenceVectorizer()
    Xt = vec.fit_transform([[token]])
    theirs = DictVectorizer().fit([token])
    assert vec.feature_names_ == list(theirs.feature_names_)
    assert Xt.matrix.has_canonical_format and Xt.matrix.nnz == 100_000


# --- shapes, options, fitted attributes --------------------------------------


def test_empty_and_length_one_sequences():
    vec = SequenceVectorizer()
    Xt = vec.fit_transform([[], [{"a": "x"}], [], [{"a": "y"}, {"b": 1}]])
    assert len(Xt) == 4 and Xt.lengths.tolist() == [0, 1, 0, 2]
    assert Xt[0].shape == (0, 3) and Xt[1].toarray().tolist() == [[1.0, 0.0, 0.0]]
    empty = vec.transform([])
    assert len(empty) == 0 and empty.matrix.shape == (0, 3)
    assert vec.transform([[]]).lengths.tolist() == [0]


def test_fit_on_no_tokens_gives_no_features():
    vec = SequenceVectorizer().fit([[], []])
    assert vec.feature_names_ == [] and vec.transform([[{"a": 1}]]).matrix.nnz == 0


def test_unseen_features_are_ignored_at_transform():
    vec = SequenceVectorizer().fit([[{"w": "a", "n": 1.0}]])
    Xt = vec.transform([[{"w": "b", "n": 2.0, "new": 3.0, "other": ["z"]}]])
    assert dense(Xt).tolist() == [[2.0, 0.0]]


def test_min_freq_counts_tokens():
    X = [[{"w": "a", "t": ["r", "r"]}, {"w": "a"}], [{"w": "b", "t": ["r"]}]]
    vec = SequenceVectorizer(min_freq=2).fit(X)
    # t=r appears twice in the first token (counted once) and once later: 2 tokens
    assert vec.feature_names_ == ["t=r", "w=a"]
    Xt = vec.transform(X)
    assert dense(Xt).tolist() == [[2.0, 1.0], [0.0, 1.0], [1.0, 0.0]]
    assert SequenceVectorizer(min_freq=3).fit(X).feature_names_ == []


def test_min_freq_keeps_the_fit_transform_and_transform_outputs_equal(tagged_small):
    X = [tutorial_dicts(s) for s in tagged_small[0]]
    vec = SequenceVectorizer(min_freq=3)
    Xt = vec.fit_transform(X)
    assert len(vec.feature_names_) < len(SequenceVectorizer().fit(X).feature_names_)
    assert (Xt.matrix != vec.transform(X).matrix).nnz == 0


def test_sort_false_keeps_first_seen_order():
    vec = SequenceVectorizer(sort=False).fit([[{"z": 1, "a": "q"}], [{"m": 1, "z": 2}]])
    assert vec.feature_names_ == ["z", "a=q", "m"]


def test_dtype_and_separator():
    vec = SequenceVectorizer(dtype=np.float32, separator=":")
    Xt = vec.fit_transform([[{"w": "a", "n": 0.5}]])
    assert Xt.matrix.dtype == np.float32 and vec.feature_names_ == ["n", "w:a"]


def test_fitted_attributes_agree():
    vec = SequenceVectorizer().fit(MIXED)
    names = vec.get_feature_names_out()
    assert names.dtype == object and names.tolist() == vec.feature_names_
    assert all(vec.vocabulary_[name] == i for i, name in enumerate(vec.feature_names_))
    assert vec.feature_names_ == sorted(vec.feature_names_)
    assert vec.transform(MIXED).feature_names.tolist() == vec.feature_names_


def test_output_is_canonical_and_splittable():
    Xt = SequenceVectorizer().fit_transform(MIXED)
    assert Xt.matrix.has_canonical_format
    part = _safe_indexing(Xt, [2, 0])
    assert isinstance(part, SequenceMatrix) and part.lengths.tolist() == [1, 2]
    np.testing.assert_array_equal(part[0].toarray(), Xt[2].toarray())


def test_not_fitted():
    with pytest.raises(NotFittedError):
        SequenceVectorizer().transform(MIXED)
    with pytest.raises(NotFittedError):
        SequenceVectorizer().get_feature_names_out()


@pytest.mark.parametrize("params", [{"min_freq": 0}, {"separator": 1}, {"sort": "yes"}])
def test_invalid_params(params):
    with pytest.raises(ValueError):
        SequenceVectorizer(**params).fit(MIXED)


# --- errors name the sequence, token and key -----------------------------------


@pytest.mark.parametrize("value, why", [
    (None, "unsupported type"),
    ({"nested": 1}, "nested mappings are not supported"),
    (["a", 3], "a list/tuple/set value may hold only str"),
    (complex(1, 0), "unsupported type"),
])
def test_unsupported_values_name_sequence_token_and_key(value, why):
    X = [[{"w": "a"}], [{"w": "b"}, {"w": "c", "n": 1, "bad": value}]]
    with pytest.raises(TypeError, match=rf"Sequence 1, token 1, feature 'bad': {why}"):
        SequenceVectorizer().fit(X)
    vec = SequenceVectorizer().fit(X[:1])
    with pytest.raises(TypeError, match=r"Sequence 1, token 1, feature 'bad'"):
        vec.transform(X)


def test_an_unsupported_value_equal_to_a_supported_one_still_raises():
    # complex(1, 0) == 1: the flat path must not let it hide behind the int
    X = [[{"w": 1}], [{"w": complex(1, 0)}]]
    with pytest.raises(TypeError, match=r"Sequence 1, token 0, feature 'w'"):
        SequenceVectorizer().fit(X)


@pytest.mark.parametrize("X, match", [
    ([[{"a": 1}, "word"]], r"Sequence 0, token 1 is a str; expected a mapping"),
    ([{"a": 1}], r"Sequence 0 of X is a dict"),
    ("abc", r"X must be a list of sequences"),
    (np.zeros((2, 2)), r"X must be a list of sequences"),
])
def test_malformed_input(X, match):
    with pytest.raises(TypeError, match=match):
        SequenceVectorizer().fit(X)


# --- named SequenceMatrix input -----------------------------------------------


def named_matrix(rows, names, offsets):
    return SequenceMatrix(sp.csr_matrix(np.asarray(rows, dtype=float)), offsets, names)


def test_named_matrix_fit_matches_dict_fit():
    X_dicts = [[{"b": 1.0}, {"a": 2.0, "c": 1.0}], [{"c": 1.0}]]
    X_matrix = named_matrix([[0, 1, 0], [1, 0, 2], [1, 0, 0]], ["c", "b", "a"], [0, 2, 3])
    from_dicts, from_matrix = SequenceVectorizer(), SequenceVectorizer()
    A = from_dicts.fit_transform(X_dicts)
    B = from_matrix.fit_transform(X_matrix)
    assert from_dicts.feature_names_ == from_matrix.feature_names_ == ["a", "b", "c"]
    np.testing.assert_array_equal(dense(A), dense(B))


def test_named_matrix_transform_matches_columns_by_name():
    vec = SequenceVectorizer().fit([[{"a": 1.0, "b": 1.0}]])
    Xt = vec.transform(named_matrix([[5, 0, 7]], ["b", "new", "a"], [0, 1]))
    assert dense(Xt).tolist() == [[7.0, 5.0]]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, None])
def test_named_matrix_transform_drops_unknown_names_and_leaves_the_input(dtype):
    # None: an indicator matrix whose values are never stored (TokenFeaturizer's)
    vec = SequenceVectorizer().fit([[{"a": 1.0, "c": 1.0, "d": 1.0}]])
    rows = [[1, 0, 3, 0], [0, 0, 0, 0], [0, 2, 0, 0], [5, 1, 0, 4]]
    if dtype is None:
        rows = (np.asarray(rows) > 0).astype(int)
        X = SequenceMatrix._from_arrays(None, sp.csr_matrix(rows).indices.astype(np.int32),
                                        sp.csr_matrix(rows).indptr.astype(np.int64), 4,
                                        [0, 1, 4], ["d", "new", "a", "c"])
    else:
        X = SequenceMatrix(sp.csr_matrix(np.asarray(rows, dtype=dtype)), [0, 1, 4],
                           ["d", "new", "a", "c"])
    before = X.matrix.copy()
    Xt = vec.transform(X)
    expected = np.asarray(rows, dtype=float)[:, [2, 3, 0]]  # a, c, d; "new" dropped
    np.testing.assert_array_equal(dense(Xt), expected)
    assert Xt.matrix.has_canonical_format
    np.testing.assert_array_equal(Xt.offsets, [0, 1, 4])
    assert (X.matrix != before).nnz == 0


def test_named_matrix_with_sorted_names_and_unsorted_rows():
    # sorted unique names skip the renaming, but rows are still put in order
    matrix = sp.csr_matrix((np.array([2.0, 1.0, 3.0]), np.array([2, 0, 1]),
                            np.array([0, 2, 3])), shape=(2, 3))
    assert not matrix.has_sorted_indices
    vec = SequenceVectorizer()
    Xt = vec.fit_transform(SequenceMatrix(matrix, [0, 2], ["a", "b", "c"]))
    assert vec.feature_names_ == ["a", "b", "c"]
    assert Xt.matrix.has_canonical_format
    assert dense(Xt).tolist() == [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]


def test_indicator_output_builds_no_values_until_read():
    Xt = SequenceVectorizer().fit_transform([[{"w": "a"}, {"w": "b", "x": True}]])
    assert Xt._canonical_arrays()[0] is None
    assert dense(Xt).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]


def test_outputs_share_one_read_only_names_array():
    vec = SequenceVectorizer().fit([[{"w": "a"}, {"w": "b"}]])
    first, second = vec.transform([[{"w": "a"}]]), vec.transform([[{"w": "b"}]])
    assert first.feature_names is second.feature_names  # no copy per call
    with pytest.raises(ValueError, match="read-only"):
        first.feature_names[0] = "changed"
    # a vectorizer fitted before the shared array existed still transforms
    del vec._names_out
    assert vec.transform([[{"w": "b"}]]).feature_names.tolist() == ["w=a", "w=b"]


def test_named_matrix_duplicate_names_are_merged():
    vec = SequenceVectorizer()
    Xt = vec.fit_transform(named_matrix([[1, 2, 4]], ["x", "y", "x"], [0, 1]))
    assert vec.feature_names_ == ["x", "y"] and dense(Xt).tolist() == [[5.0, 2.0]]


def test_named_matrix_min_freq():
    X = named_matrix([[1, 1], [1, 0]], ["x", "y"], [0, 2])
    assert SequenceVectorizer(min_freq=2).fit(X).feature_names_ == ["x"]


def test_matrix_without_names_is_refused():
    X = SequenceMatrix(sp.eye(2, format="csr"), [0, 2])
    with pytest.raises(ValueError, match="feature_names"):
        SequenceVectorizer().fit(X)


# --- sklearn contract and pickling --------------------------------------------


@pytest.mark.parametrize("check", PARAMETER_CHECKS)
def test_sklearn_checks(check):
    check("SequenceVectorizer", SequenceVectorizer())


def test_fit_returns_self_and_does_not_change_params():
    vec = SequenceVectorizer(min_freq=2, sort=False)
    params = vec.get_params()
    assert vec.fit(MIXED) is vec
    assert vec.get_params() == params
    assert clone(vec).get_params() == params


def test_pickle_round_trip(tagged_small):
    X = [tutorial_dicts(s) for s in tagged_small[0][:50]]
    vec = SequenceVectorizer().fit(X)
    restored = pickle.loads(pickle.dumps(vec))
    assert restored.vocabulary_ == vec.vocabulary_
    assert (restored.transform(X).matrix != vec.transform(X).matrix).nnz == 0


def test_tags():
    tags = SequenceVectorizer().__sklearn_tags__()
    assert not tags.input_tags.two_d_array and tags.input_tags.dict
