"""The transform's path by key reproduces the loop, and its tables follow the vocabulary."""

import math
import pickle
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skcrf import SequenceVectorizer
from skcrf.features import _columns_by_key
from skcrf.features._columns_by_key import ColumnsByKey, columns_by_key, vectorize_by_key
from skcrf.features._dict_arrays import FeatureValueError, _vectorize_loop, _vectorize_small

from .test_vectorizer import assert_compact_equals_loop, sequences, tutorial_dicts

# "w" + "x=y" and "w=x" + "y" make one name
strings = st.sampled_from(["a", "b", "é", "x=y", "y", "", "1", "=", "a=b"])
numbers = st.one_of(st.integers(-2, 2), st.booleans(),
                    st.sampled_from([0.0, -0.0, 1.0, 0.5, -2.5, math.nan]))
# each key keeps one kind of value, as feature functions do, except "mixed"
# "mixed" may also hold what the loop handles otherwise (lists, sets) or rejects
# (None, a mapping): the path by key must defer all of it, never raise
others = st.one_of(st.lists(strings, max_size=2), st.sets(strings, max_size=2), st.none(),
                   st.just({"a": 1}))
token_values = {"w": strings, "w=x": strings, "-1:w": strings, "": strings,
                "n": numbers, "bias": st.just(1.0),
                "mixed": st.one_of(strings, strings, numbers, others)}


@st.composite
def layouts_and_tokens(draw):
    """Sequences whose tokens share a few layouts (as feature functions make them)."""
    keys = list(token_values)
    layouts = draw(st.lists(st.lists(st.sampled_from(keys), unique=True, max_size=5),
                            min_size=1, max_size=3))
    sequences = []
    for _ in range(draw(st.integers(0, 4))):
        sequence = []
        for _ in range(draw(st.integers(0, 5))):
            layout = draw(st.sampled_from(layouts))
            sequence.append({key: draw(token_values[key]) for key in layout})
        sequences.append(sequence)
    return sequences


def assert_same_arrays(got, expected):
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


@settings(max_examples=200, deadline=None)
@given(X=layouts_and_tokens(), separator=st.sampled_from(["=", "", ":"]),
       keep=st.integers(1, 3))
def test_by_key_matches_loop(X, separator, keep):
    fitted = {}
    try:
        _vectorize_loop(X, fitted, True, separator)
    except FeatureValueError:
        fitted = {"w=a": 0, "n": 1, "mixed=b": 2}
    # a vocabulary that misses some names, with columns in another order
    known = {name: i for i, name in enumerate(sorted(fitted)[::keep])}
    with mock.patch.object(_columns_by_key, "_MIN_TOKENS_PER_LAYOUT", 0):
        got = vectorize_by_key(X, ColumnsByKey(known, separator))
    try:
        expected = _vectorize_loop(X, dict(known), False, separator)
    except FeatureValueError:
        assert got is None  # the loop names the bad value
        return
    if got is None:
        # only a key holding both str and numbers, or no token at all, defers
        assert not any(X) or any("mixed" in token for seq in X for token in seq)
    else:
        assert_same_arrays(got, expected)


@settings(max_examples=200, deadline=None)
@given(X=layouts_and_tokens(), separator=st.sampled_from(["=", "", ":"]))
def test_growing_by_key_finds_the_loops_names(X, separator):
    """Names come key by key, not in order of occurrence; each entry names the same feature."""
    vocabulary, loop_vocabulary = {}, {}
    with mock.patch.object(_columns_by_key, "_MIN_TOKENS_PER_LAYOUT", 0):
        got = vectorize_by_key(X, ColumnsByKey(vocabulary, separator, grow=True))
    try:
        expected = _vectorize_loop(X, loop_vocabulary, True, separator)
    except FeatureValueError:
        assert got is None
        return
    if got is None:
        assert not any(X) or any("mixed" in token for seq in X for token in seq)
        return
    assert set(vocabulary) == set(loop_vocabulary)
    assert sorted(vocabulary.values()) == list(range(len(vocabulary)))
    names, loop_names = list(vocabulary), list(loop_vocabulary)
    assert [names[i] for i in got[1]] == [loop_names[i] for i in expected[1]]
    for i in (0, 2, 3):
        np.testing.assert_array_equal(got[i], expected[i])


@settings(max_examples=150, deadline=None)
@given(X=sequences, separator=st.sampled_from(["=", "", ":"]))
def test_small_path_with_tables_matches_loop(X, separator):
    """A few sentences (one prediction) look their str values up in the key's table."""
    fitted = {}
    _vectorize_loop(X, fitted, True, separator)
    known = {name: i for i, name in enumerate(sorted(fitted, key=str)[::2])}
    small = _vectorize_small(X, dict(known), False, separator, ColumnsByKey(known, separator))
    if small is not None:
        assert_compact_equals_loop(small, _vectorize_loop(X, dict(known), False, separator))


def test_growing_tables_resolve_names_made_elsewhere():
    """A name already in the vocabulary (from another key, or the flat path) keeps its column."""
    vocabulary = {"w=x=y": 0}
    tables = ColumnsByKey(vocabulary, "=", grow=True)
    with mock.patch.object(_columns_by_key, "_MIN_TOKENS_PER_LAYOUT", 0):
        data, indices, _, _ = vectorize_by_key([[{"w": "x=y", "w=x": "y", "n": 0.0}]], tables)
    assert indices.tolist() == [0, 0]
    assert vocabulary == {"w=x=y": 0, "n": 1}  # a zero registers its name, as in the loop
    assert tables.of_key("w") == {"x=y": 0} and tables.of_key("w=x") == {"y": 0}


@pytest.mark.parametrize("X", [
    [[{"w": "a"}, {"w": 1.0}]],            # one key, str and a number
    [[{"w": 1.0}, {"w": "a"}]],
    [[{"w": ["a"]}]],                      # a list value
    [[{"w": None}]],
    [[{"w": np.float64(2.0)}]],            # a float subclass: the loop's conversion
    [[{1: "a"}]],                          # a key that is not a str
    [[{"w": "a"}], [("w", "a")]],          # a token that is no dict
    [[]],
])
def test_by_key_defers_what_it_does_not_handle(X):
    with mock.patch.object(_columns_by_key, "_MIN_TOKENS_PER_LAYOUT", 0):
        assert vectorize_by_key(X, ColumnsByKey({"w=a": 0, "w": 1}, "=")) is None


def test_by_key_defers_tokens_of_many_layouts():
    # every token its own layout: the flat path's per-value work is cheaper
    X = [[{f"k{i}": "a"} for i in range(200)]]
    assert vectorize_by_key(X, ColumnsByKey({"k0=a": 0}, "=")) is None


def no_short_path():
    """transform without the short path of a few sentences of plain dicts (``_dict_pairs``)."""
    return mock.patch.object(SequenceVectorizer, "_plain_transform", return_value=None)


def test_tutorial_features_take_the_path_by_key(tagged_small):
    X_train, _, X_test, _ = tagged_small
    train = [tutorial_dicts(s) for s in X_train]
    test = [tutorial_dicts(s) for s in X_test]
    vec = SequenceVectorizer().fit(train)
    got = vectorize_by_key(test, columns_by_key(vec))
    assert got is not None
    assert_same_arrays(got, _vectorize_loop(test, dict(vec.vocabulary_), False, "="))
    taken = []

    def recording(chunk, tables):
        arrays = vectorize_by_key(chunk, tables)
        taken.append(arrays is not None)
        return arrays

    with mock.patch("skcrf.features._dict_arrays.vectorize_by_key", recording), \
            no_short_path():
        Xt = vec.transform(test)
    assert taken and all(taken)
    reference = SequenceVectorizer().fit(train)
    with mock.patch("skcrf.features._dict_arrays.vectorize_by_key", lambda X, tables: None):
        expected = reference.transform(test)
    assert (Xt.matrix != expected.matrix).nnz == 0


def test_tables_follow_a_refit_and_stay_out_of_the_estimator():
    vec = SequenceVectorizer()
    first = [[{"w": "a"}] * 70]
    second = [[{"w": "b"}] * 70]
    vec.fit(first)
    assert vec.transform(first).matrix.nnz == 70
    tables = columns_by_key(vec)
    assert columns_by_key(vec) is tables  # kept between transforms
    vec.fit(second)
    assert columns_by_key(vec) is not tables
    assert vec.transform(second).matrix.nnz == 70
    assert vec.transform(first).matrix.nnz == 0
    # nothing of the tables in the estimator: pickles and model files hold the vocabulary only
    assert not any(isinstance(value, ColumnsByKey) for value in vars(vec).values())
    copy = pickle.loads(pickle.dumps(vec))
    assert copy.transform(second).matrix.nnz == 70


@pytest.mark.parametrize("names", [None, ["w=a", "w=b", "x"], ["x", "w=b", "w=a"], ["w=a"]])
def test_tables_take_the_names_order_only_when_it_holds(names):
    """Given names serve as the sorted order only if increasing and complete."""
    vocabulary = {"x": 0, "w=b": 1, "w=a": 2}
    tables = ColumnsByKey(vocabulary, "=", names=names)
    assert tables.of_key("w") == {"a": 2, "b": 1}
    assert tables.of_key("x") == {} and tables.of_key("v") == {}


def test_tables_of_keys_at_the_ends_of_the_str_order():
    top = "\U0010ffff"  # no str follows it: the run of its names is scanned
    vocabulary = {"": 0, "a": 1, top + "b": 2, top + top: 3, top + "=c": 4}
    assert ColumnsByKey(vocabulary, "").of_key(top) == {"b": 2, top: 3, "=c": 4}
    assert ColumnsByKey(vocabulary, "").of_key("") == {"": 0, "a": 1, top + "b": 2,
                                                       top + top: 3, top + "=c": 4}
    assert ColumnsByKey(vocabulary, "=").of_key(top) == {"c": 4}


class _Renamed(str):
    """A str whose str() is another text (the loop names the feature by the latter)."""

    def __str__(self):
        return "zzz"


@pytest.mark.parametrize("late", [["a", "b"], {"a"}, _Renamed("a")])
def test_a_late_unusual_value_in_a_str_column_is_the_loops(late):
    """Past the first token of a layout: the whole column's types are checked first,
    and the column goes the flat path's way, as before the path by key."""
    X = [[{"w": "a"}] * 4999 + [{"w": late}], [{"w": "zzz"}] * 70]
    expected_vec = SequenceVectorizer()
    with mock.patch("skcrf.features._dict_arrays.vectorize_by_key", lambda X, tables: None):
        expected = expected_vec.fit_transform(X)
    vec = SequenceVectorizer()
    got = vec.fit_transform(X)
    assert vec.feature_names_ == expected_vec.feature_names_
    assert (got.matrix != expected.matrix).nnz == 0
    assert (vec.transform(X).matrix != expected.matrix).nnz == 0


def test_a_late_mapping_value_raises_the_loops_error():
    X = [[{"w": "a"}] * 4999 + [{"w": {"nested": 1}}]]
    with pytest.raises(FeatureValueError, match="Sequence 0, token 4999, feature 'w'"):
        SequenceVectorizer().fit_transform(X)
    vec = SequenceVectorizer().fit([[{"w": "a"}] * 5000])
    with pytest.raises(FeatureValueError, match="token 4999"):
        vec.transform(X)


def test_a_model_just_loaded_builds_no_table_for_one_sentence():
    vec = SequenceVectorizer().fit([[{"w": str(i)} for i in range(5000)]])
    copy = pickle.loads(pickle.dumps(vec))
    with no_short_path():  # the remembered pairs of a few sentences' path build none
        copy.transform([[{"w": "7"}]])
        assert columns_by_key(copy).built("w") is None  # one sentence reads no table
        copy.transform([[{"w": str(i)} for i in range(5000)]])
        assert columns_by_key(copy).built("w")["7"] == vec.vocabulary_["w=7"]
    assert copy.transform([[{"w": "7"}]]).matrix.indices.tolist() == [vec.vocabulary_["w=7"]]


def test_a_refit_forgets_the_old_tables():
    vec = SequenceVectorizer().fit([[{"w": "a"}] * 5000])
    vec.transform([[{"w": "a"}] * 5000])
    assert _columns_by_key._TABLES.get(vec) is not None
    vec.fit([[{"w": "b"}] * 10])
    assert _columns_by_key._TABLES.get(vec) is None
