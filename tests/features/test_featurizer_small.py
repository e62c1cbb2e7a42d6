"""TokenFeaturizer's small-input path gives exactly the general path's output."""

import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skcrf.features import _small
from skcrf.features._tokens import _Tokens
from skcrf.features._slot_matrix import _featurize
from skcrf.features.featurizer import TokenFeaturizer


def general(featurizer, X):
    """The general path's output for ``X`` (which has tokens)."""
    tokens = _Tokens(X, featurizer.head_column)
    return _featurize(featurizer._checked_plan(tokens.n_columns), tokens)


def assert_same(a, b):
    """Two SequenceMatrix equal in names, CSR arrays (not only values) and offsets."""
    assert a.feature_names.tolist() == b.feature_names.tolist()
    assert a.shape == b.shape
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.matrix.indptr, b.matrix.indptr)
    np.testing.assert_array_equal(a.matrix.indices, b.matrix.indices)
    np.testing.assert_array_equal(a.matrix.data, b.matrix.data)


@pytest.fixture
def small_calls(monkeypatch):
    """A list that records each call of the small path's builder."""
    calls = []
    build = _small.featurize_small

    def recorded(*args):
        calls.append(args)
        return build(*args)

    monkeypatch.setattr(_small, "featurize_small", recorded)
    return calls


SENTENCE = [("El", "DA"), ("Tribunal", "NC"), ("Supremo", "AQ"), ("de", "SP"),
            ("EE.UU.", "NP"), ("x-ray", "NC"), ("1990s", "Z"), ("ÉL", "PP"), ("el", "DA")]


@pytest.mark.parametrize("X", [
    [SENTENCE],
    [SENTENCE[:1]],  # one token: BOS and EOS, no context
    [SENTENCE[:2], [], SENTENCE[3:]],  # an empty sentence between others
    [[], SENTENCE[:3]],
    [[w for w, _ in SENTENCE]],  # str tokens
    [[("", ""), ("a=b", "=")]],  # empty values, and values holding "="
])
@pytest.mark.parametrize("params", [
    {},
    {"window": 3, "columns": {1: 2}},
    {"word_features": ("word", "lower", "prefix", "suffix", "shape", "isupper", "islower",
                       "istitle", "isdigit", "isalpha", "hasdigit", "hyphen"),
     "context_features": ("shape", "prefix", "hyphen"), "prefixes": (1, 4)},
    {"word_features": (), "context_features": (), "columns": None},
    {"bias": False, "boundary": False, "column_prefixes": (), "window": 2},
    # keys where "." and "-" sort before "=": names of "w" follow those of "w.lower"
    {"word_features": ("word", "lower"), "column_names": ("w", "w-pos")},
])
def test_small_path_equals_general_path(small_calls, X, params):
    if not isinstance(X[-1][0], tuple) and params.get("columns", "auto") != "auto":
        params = {**params, "columns": None}
    if isinstance(X[-1][0], str):
        params = {k: v for k, v in params.items() if k != "column_names"}
    featurizer = TokenFeaturizer(**params)
    assert_same(featurizer.transform(X), general(featurizer, X))
    assert len(small_calls) == 1


@pytest.mark.parametrize("params, X", [
    # a key holding "=": names of two groups may interleave
    ({"word_features": ("word",), "context_features": (), "column_names": ("w", "w=x")},
     [[("a", "b"), ("c", "d")]]),
    ({"custom": lambda token: {"n": len(token[0])}}, [SENTENCE]),
    ({"head_column": 2}, [[("a", "B", 1), ("b", "C", -1)]]),
    ({}, [[["a", "B"], ["b", "C"]]]),  # list tokens
    ({}, [[]]),  # no tokens
])
def test_inputs_the_small_path_leaves_to_the_general_one(small_calls, params, X):
    featurizer = TokenFeaturizer(**params)
    out = featurizer.transform(X)
    assert small_calls == []
    if out.n_tokens:
        assert_same(out, general(featurizer, X))


def test_threshold_boundary(small_calls):
    featurizer = TokenFeaturizer()
    words = [(f"w{i % 37}", f"P{i % 5}") for i in range(_small.SMALL_TOKENS + 1)]
    half = _small.SMALL_TOKENS // 2
    at = [words[:half], words[half:_small.SMALL_TOKENS]]
    past = [words[:half], words[half:]]
    assert_same(featurizer.transform(at), general(featurizer, at))
    assert len(small_calls) == 1
    assert_same(featurizer.transform(past), general(featurizer, past))
    assert len(small_calls) == 1


def test_remembered_values_do_not_change_the_output(monkeypatch):
    featurizer = TokenFeaturizer()
    expected = [general(featurizer, [SENTENCE[:k]]) for k in range(1, len(SENTENCE) + 1)]
    monkeypatch.setattr(_small, "_REMEMBERED_VALUES", 3)  # forgets all often
    for _ in range(2):
        for k in range(1, len(SENTENCE) + 1):
            assert_same(featurizer.transform([SENTENCE[:k]]), expected[k - 1])


def test_concurrent_calls_forgetting_values_agree(monkeypatch):
    featurizer = TokenFeaturizer()
    sentences = [SENTENCE[k:] + SENTENCE[:k] for k in range(len(SENTENCE))]
    expected = [general(featurizer, [s]) for s in sentences]
    monkeypatch.setattr(_small, "_REMEMBERED_VALUES", 4)  # forgets on most calls
    names = _small._Source.names

    def yielding_names(source, value):
        time.sleep(0)  # let another thread run between a call's inserts and reads
        return names(source, value)

    monkeypatch.setattr(_small._Source, "names", yielding_names)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads interleave inside the calls
    try:
        with ThreadPoolExecutor(4) as pool:
            outputs = list(pool.map(lambda s: featurizer.transform([s]), sentences * 30))
    finally:
        sys.setswitchinterval(previous)
    for k, out in enumerate(outputs):
        assert_same(out, expected[k % len(sentences)])


def test_set_params_after_transform_uses_the_new_parameters():
    featurizer = TokenFeaturizer()
    before = featurizer.transform([SENTENCE])
    featurizer.set_params(window=2, word_features=("shape",))
    after = featurizer.transform([SENTENCE])
    assert_same(after, general(TokenFeaturizer(window=2, word_features=("shape",)),
                               [SENTENCE]))
    assert after.feature_names.tolist() != before.feature_names.tolist()
    featurizer.set_params(window=1, word_features=("lower", "suffix", "isupper",
                                                   "istitle", "isdigit"))
    assert_same(featurizer.transform([SENTENCE]), before)


def test_bad_tokens_still_get_the_general_path_errors():
    with pytest.raises(TypeError, match=r"Sequence 1, token 1 has a int in column 1"):
        TokenFeaturizer().transform([[("a", "B")], [("c", "D"), ("e", 3)]])
    with pytest.raises(ValueError, match="word_column=2, but the tokens have 2"):
        TokenFeaturizer(word_column=2).transform([[("a", "B")]])


words = st.text(alphabet="aAzZ1-.'=éÉñ_ ", max_size=5)
str_sequences = st.lists(st.lists(words, max_size=6), min_size=1, max_size=4)
tuple_sequences = st.lists(st.lists(st.tuples(words, st.sampled_from(["NC", "NP", "V", ""]),
                                              words), max_size=6), min_size=1, max_size=4)
feature_sets = st.lists(st.sampled_from(["word", "lower", "prefix", "suffix", "shape",
                                         "isupper", "istitle", "isdigit", "hyphen",
                                         "hasdigit"]), unique=True, max_size=5).map(tuple)


@settings(max_examples=100, deadline=None)
@given(X=st.one_of(str_sequences, tuple_sequences), window=st.integers(0, 3),
       word_features=feature_sets, context_features=feature_sets,
       bias=st.booleans(), boundary=st.booleans(),
       column_prefixes=st.sampled_from([(), (1,), (1, 2)]))
def test_small_path_equals_general_path_on_random_input(X, window, word_features,
                                                        context_features, bias, boundary,
                                                        column_prefixes):
    featurizer = TokenFeaturizer(window=window, word_features=word_features,
                                 context_features=context_features, prefixes=(1, 3),
                                 bias=bias, boundary=boundary,
                                 column_prefixes=column_prefixes)
    out = featurizer.transform(X)
    if sum(map(len, X)):
        assert_same(out, general(featurizer, X))
    else:
        assert out.n_tokens == 0 and len(out) == len(X)


def test_generators_and_tuple_sequences(small_calls):
    featurizer = TokenFeaturizer()
    expected = general(featurizer, [SENTENCE, SENTENCE[:2]])
    assert_same(featurizer.transform(s for s in [SENTENCE, SENTENCE[:2]]), expected)
    assert_same(featurizer.transform((tuple(SENTENCE), tuple(SENTENCE[:2]))), expected)
    assert len(small_calls) == 2
