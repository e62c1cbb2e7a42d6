"""TokenFeaturizer: fast path against the per-token dicts, features, errors, pipelines."""

import pickle
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.utils import _safe_indexing

from skcrf import CRFClassifier, SequenceMatrix, SequenceVectorizer
from skcrf.features._words import word_shape
from skcrf.features.featurizer import TokenFeaturizer
from tests._sklearn_checks import PARAMETER_CHECKS

SENTENCES = [
    [("El", "DA"), ("Tribunal", "NC"), ("Supremo", "AQ"), ("de", "SP"), ("EE.UU.", "NP")],
    [("Año", "NC")],
    [],
    [("x-ray", "NC"), ("1990s", "Z"), ("ÉL", "PP"), ("el", "DA")],
]


def custom_features(token):
    """Module-level, so pipelines using it pickle."""
    word = token[0] if isinstance(token, tuple) else token
    return {"len": len(word), "first": word[:1], "chars": sorted(set(word.lower()))}


def vectorized(X):
    """(feature names, dense matrix) of SequenceVectorizer fitted on X."""
    vec = SequenceVectorizer()
    matrix = vec.fit_transform(X).matrix
    return vec.feature_names_, matrix


def assert_paths_agree(featurizer, X):
    """The fast path and the dict path give the same vectorized features."""
    fast = featurizer.fit_transform(X)
    assert isinstance(fast, SequenceMatrix)
    assert fast.lengths.tolist() == [len(s) for s in X]
    # sorted and unique: SequenceVectorizer then has nothing to reorder
    assert list(fast.feature_names) == sorted(set(fast.feature_names))
    names_fast, matrix_fast = vectorized(fast)
    names_dicts, matrix_dicts = vectorized(featurizer.transform_dicts(X))
    assert names_fast == names_dicts
    assert (matrix_fast != matrix_dicts).nnz == 0
    return fast


# --- the fast path equals the per-token definition ---------------------------


PARAMS = [
    {},
    {"window": 0},
    {"window": 3, "columns": {1: 2}},
    {"word_features": ("word", "lower", "prefix", "suffix", "shape", "isupper", "islower",
                       "istitle", "isdigit", "isalpha", "hasdigit", "hyphen"),
     "context_features": ("shape", "prefix", "hyphen"), "prefixes": (1, 4), "suffixes": (1,)},
    {"word_features": (), "context_features": (), "columns": None},
    {"bias": False, "boundary": False, "column_prefixes": (), "window": 2},
    {"column_names": ("w", "pos"), "column_prefixes": (1, 2)},
    {"custom": custom_features},
    # "w=x=..." sorts between "w=a" and "w=z": the slots interleave by name
    {"word_features": ("word",), "context_features": (), "column_names": ("w", "w=x")},
]


@pytest.mark.parametrize("params", PARAMS)
def test_fast_path_matches_dicts_on_small_sentences(params):
    assert_paths_agree(TokenFeaturizer(**params), SENTENCES)


@pytest.mark.parametrize("params", [{}, {"window": 2, "word_features": (
    "lower", "prefix", "suffix", "shape", "hyphen")}, {"custom": custom_features}])
def test_fast_path_matches_dicts_on_real_sentences(tagged_small, params):
    assert_paths_agree(TokenFeaturizer(**params), tagged_small[0][:150])


words = st.text(alphabet="aAzZ1-.'éÉñ_ ", max_size=5)
str_sequences = st.lists(st.lists(words, max_size=5), max_size=5)
tuple_sequences = st.lists(st.lists(st.tuples(words, st.sampled_from(["NC", "NP", "V"]),
                                              words), max_size=5), max_size=5)
feature_sets = st.lists(st.sampled_from(["word", "lower", "prefix", "suffix", "shape",
                                         "isupper", "istitle", "hyphen", "hasdigit"]),
                        unique=True, max_size=4).map(tuple)


@settings(max_examples=80, deadline=None)
@given(X=st.one_of(str_sequences, tuple_sequences), window=st.integers(0, 3),
       word_features=feature_sets, context_features=feature_sets,
       bias=st.booleans(), boundary=st.booleans(), custom=st.booleans())
def test_fast_path_matches_dicts_on_random_sequences(X, window, word_features,
                                                     context_features, bias, boundary,
                                                     custom):
    featurizer = TokenFeaturizer(window=window, word_features=word_features,
                                 context_features=context_features, prefixes=(1, 3),
                                 bias=bias, boundary=boundary,
                                 custom=custom_features if custom else None)
    if sum(map(len, X)) == 0:
        fast = featurizer.fit_transform(X)
        assert fast.n_tokens == 0 and len(fast) == len(X)
        assert featurizer.transform_dicts(X) == [[] for _ in X]
        return
    assert_paths_agree(featurizer, X)


# --- which features come out ---------------------------------------------------


def tutorial_word2features(sent, i):
    """sklearn-crfsuite's tutorial features, in its own names."""
    word, postag = sent[i]
    features = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:],
                "word[-2:]": word[-2:], "word.isupper()": word.isupper(),
                "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit(),
                "postag": postag, "postag[:2]": postag[:2]}
    for offset, prefix in ((-1, "-1:"), (1, "+1:")):
        if 0 <= i + offset < len(sent):
            word1, postag1 = sent[i + offset]
            features.update({prefix + "word.lower()": word1.lower(),
                             prefix + "word.istitle()": word1.istitle(),
                             prefix + "word.isupper()": word1.isupper(),
                             prefix + "postag": postag1, prefix + "postag[:2]": postag1[:2]})
    if i == 0:
        features["BOS"] = True
    if i == len(sent) - 1:
        features["EOS"] = True
    return features


def tutorial_in_our_names(features):
    renamed = {}
    for key, value in features.items():
        if value is False:  # a false flag is a zero: we leave it out
            continue
        key = key.replace("()", "").replace("postag", "col1")
        renamed[key] = value
    return renamed


def test_defaults_reproduce_the_tutorial_features(tagged_small):
    X = tagged_small[0][:100]
    dicts = TokenFeaturizer().transform_dicts(X)
    for sentence, ours in zip(X, dicts):
        for i, features in enumerate(ours):
            assert features == tutorial_in_our_names(tutorial_word2features(sentence, i))


def test_feature_names_of_one_token():
    featurizer = TokenFeaturizer(
        window=2, word_features=("word", "prefix", "shape", "hyphen", "hasdigit"),
        context_features=("lower",), prefixes=(2,), columns={1: 0}, column_prefixes=(1,))
    features = featurizer.transform_dicts([[("A-1", "NC"), ("b", "V"), ("c", "V")]])[0][0]
    assert features == {
        "bias": 1.0, "BOS": True, "-2:BOS": True,
        "word": "A-1", "word[:2]": "A-", "word.shape": "X-d", "word.hyphen": True,
        "word.hasdigit": True, "+1:word.lower": "b", "+2:word.lower": "c", "col1": "NC",
        "col1[:1]": "N"}


@pytest.mark.parametrize("path", ["general", "small", "dicts"])
def test_boundary_markers_only_where_they_tell_tokens_apart(path):
    """-k:BOS on every token of a sequence of k tokens or fewer says nothing about
    positions (issue 32, item 5): it is left out, and so the markers of a window far
    beyond the longest sequence cost nothing. BOS and EOS stay, even on one token."""
    X = [[("a",)], [("a",), ("b",)], [("a",), ("b",), ("c",)]]
    featurizer = TokenFeaturizer(window=3, word_features=(), context_features=("isupper",),
                                 columns=None, bias=False)

    def markers(names):
        return sorted(name for name in names if name.endswith(("BOS", "EOS")))

    if path == "dicts":
        rows = [[markers(k for k, v in token.items() if v) for token in sentence]
                for sentence in featurizer.transform_dicts(X)]
    else:
        if path == "general":  # more tokens than the small path takes
            X = X * 200
        Xt = featurizer.transform(X)
        rows = [[markers(Xt.feature_names[Xt[q][i].indices].tolist())
                 for i in range(len(sentence))] for q, sentence in enumerate(X[:3])]
    assert rows == [[["BOS", "EOS"]],
                    [["BOS"], ["EOS"]],
                    [["-2:BOS", "BOS"], ["+2:EOS", "-2:BOS"], ["+2:EOS", "EOS"]]]


def test_windows_past_every_sequence_cost_nothing_and_absurd_ones_are_refused():
    """A window of 100 on short sentences costs what the sentences allow; one of a
    million is refused with one line, before any work (issue 32, item 5)."""
    X = [[("w%d" % i,) for i in range(5)]] * 300
    wide = TokenFeaturizer(window=100).transform(X)
    narrow = TokenFeaturizer(window=4).transform(X)
    assert wide.feature_names.tolist() == narrow.feature_names.tolist()
    assert (wide.matrix != narrow.matrix).nnz == 0
    with pytest.raises(ValueError, match=r"TokenFeaturizer\(window=1000000\): a window of "
                                         r"more than 100 tokens on either side is refused"):
        TokenFeaturizer(window=1_000_000).fit_transform(X)
    with pytest.raises(ValueError, match=r"columns\[1\]=500"):
        TokenFeaturizer(columns={1: 500}).fit(X)


def test_matrix_names_and_values():
    Xt = TokenFeaturizer(word_features=("lower",), context_features=(), columns=None
                         ).transform([["The", "the"]])
    rows = [sorted(Xt.feature_names[Xt[0][i].indices]) for i in range(2)]
    assert rows == [["BOS", "bias", "word.lower=the"], ["EOS", "bias", "word.lower=the"]]
    assert np.all(Xt.matrix.data == 1.0)
    assert Xt.matrix.has_canonical_format


def test_interleaved_names_are_sorted_into_one_order():
    featurizer = TokenFeaturizer(word_features=("word",), context_features=(),
                                 column_names=("w", "w=x"), column_prefixes=(), bias=False,
                                 boundary=False, window=0)
    Xt = featurizer.fit_transform([[("a", "NC"), ("z", "NC")]])
    assert Xt.feature_names.tolist() == ["w=a", "w=x=NC", "w=z"]
    assert Xt.matrix.toarray().tolist() == [[1, 1, 0], [0, 1, 1]]
    assert Xt.matrix.has_sorted_indices


def test_output_arrays_are_canonical_and_built_lazily():
    Xt = TokenFeaturizer().fit_transform(SENTENCES)
    data, indices, indptr = Xt._canonical_arrays()
    assert data is None  # indicator features: no array of ones until asked
    assert Xt.nnz == indices.shape[0] and Xt._matrix is None
    matrix = Xt.matrix
    assert matrix.has_canonical_format and matrix.dtype == np.float64
    assert np.all(matrix.data == 1) and np.shares_memory(matrix.indices, indices)


def test_str_tokens_have_one_column():
    Xt = TokenFeaturizer().fit_transform([["Hola", "mundo"]])
    assert not any(name.startswith(("col", "-1:col", "+1:col")) for name in Xt.feature_names)
    assert "+1:word.lower=mundo" in set(Xt.feature_names)


def test_list_tokens_work_like_tuples():
    as_tuples = TokenFeaturizer(custom=custom_features).fit_transform(SENTENCES)
    as_lists = TokenFeaturizer(custom=custom_features).fit_transform(
        [[list(token) for token in s] for s in SENTENCES])
    assert as_tuples.feature_names.tolist() == as_lists.feature_names.tolist()
    assert (as_tuples.matrix != as_lists.matrix).nnz == 0


def test_word_column_and_column_names():
    X = [[("NC", "casa"), ("V", "es")]]
    featurizer = TokenFeaturizer(word_column=1, column_names=("tag", "w"),
                                 word_features=("lower",), context_features=())
    features = featurizer.transform_dicts(X)[0][0]
    assert features["w.lower"] == "casa" and features["tag"] == "NC"
    assert features["+1:tag"] == "V"


def test_boundary_markers_on_length_one_and_empty_sequences():
    Xt = TokenFeaturizer(window=2).fit_transform([["solo"], []])
    assert Xt.lengths.tolist() == [1, 0]
    names = set(Xt.feature_names[Xt[0][0].indices])
    # on the one token, -2:BOS and +2:EOS would tell nothing apart
    assert {"BOS", "EOS"} <= names and not {"-2:BOS", "+2:EOS"} & names
    assert not any(name.startswith(("-1:word", "+1:word")) for name in names)


def test_empty_input():
    featurizer = TokenFeaturizer()
    for X in ([], [[]], [[], []]):
        Xt = featurizer.fit_transform(X)
        assert len(Xt) == len(X) and Xt.n_tokens == 0 and Xt.n_features == 0
        assert featurizer.transform_dicts(X) == [[] for _ in X]


def test_unicode_words():
    features = TokenFeaturizer(word_features=("lower", "shape", "suffix"), suffixes=(2,)
                               ).transform_dicts([["ÑANDÚ", "日本語"]])[0]
    assert features[0]["word.lower"] == "ñandú" and features[0]["word.shape"] == "X"
    assert features[0]["word[-2:]"] == "DÚ" and features[1]["word.shape"] == "x"


def test_word_shape():
    assert word_shape("McDonald's") == "XxXx'x"
    assert word_shape("EE.UU.") == "X.X."
    assert word_shape("1,000.5") == "d,d.d"
    assert word_shape("") == ""


def test_custom_is_called_once_per_distinct_token():
    calls = []

    def custom(token):
        calls.append(token)
        return {"n": 1.0}

    X = [["a", "b", "a"], ["b", "a", "c"]]
    Xt = TokenFeaturizer(custom=custom).transform(X)
    assert sorted(calls) == ["a", "b", "c"]
    assert Xt.matrix[:, list(Xt.feature_names).index("n")].toarray().ravel().tolist() == [1.0] * 6


def test_output_splits_without_restacking():
    Xt = TokenFeaturizer().fit_transform(SENTENCES)
    part = _safe_indexing(Xt, np.array([3, 0]))
    assert isinstance(part, SequenceMatrix) and part.lengths.tolist() == [4, 5]
    assert part.feature_names is Xt.feature_names


# --- errors name the sequence and token ----------------------------------------


@pytest.mark.parametrize("X, error, match", [
    ([[("a", "B")], [("c", "D"), ("e",)]], TypeError,
     r"Sequence 1, token 1 has 1 columns, but the first token has 2"),
    ([[("a", "B"), ("c", 3)]], TypeError,
     r"Sequence 0, token 1 has a int in column 1 \(3\); token columns must be str"),
    ([["a", ("b", "c")]], TypeError,
     r"Sequence 0, token 1 is a tuple, but the first token is a str"),
    ([["a"], [None]], TypeError, r"Sequence 1, token 0 is a NoneType; expected a str"),
    ([[()]], TypeError, r"Sequence 0, token 0 has no columns"),
    ("some text", TypeError, r"X must be a list of sequences"),
    ([["a"], "bc"], TypeError, r"Sequence 1 of X is a str"),
    (SequenceMatrix(sp.eye(2, format="csr"), [0, 2]), TypeError, r"not a SequenceMatrix"),
])
def test_bad_input(X, error, match):
    with pytest.raises(error, match=match):
        TokenFeaturizer().fit_transform(X)
    with pytest.raises(error, match=match):
        TokenFeaturizer().transform_dicts(X)


def test_every_column_must_be_str_even_unused():
    with pytest.raises(TypeError, match=r"Sequence 0, token 1 has a int in column 1"):
        TokenFeaturizer(columns=None).fit_transform([[("a", "b"), ("c", 3)]])


@pytest.mark.parametrize("X, match", [
    ([[["a", "b"], ["c", ["d"]]]], r"Sequence 0, token 1 has a list in column 1"),
    ([["a"], [{"w": "b"}]], r"Sequence 1, token 0 is a dict; expected a str"),
    ([[["a", "b"]], [["c"]]], r"Sequence 1, token 0 has 1 columns, but the first token has 2"),
])
def test_unhashable_tokens(X, match):
    with pytest.raises(TypeError, match=match):
        TokenFeaturizer().fit_transform(X)


@pytest.mark.parametrize("params, match", [
    ({"word_features": ("nope",)}, r"word_features holds unknown feature\(s\) \['nope'\]"),
    ({"context_features": ("lower", "lower")}, "names a feature twice"),
    ({"prefixes": (0,)}, "prefixes must hold distinct positive ints"),
    ({"suffixes": (2, 2)}, "suffixes must hold distinct positive ints"),
    ({"columns": {0: 1}}, "holds the word column 0"),
    ({"columns": {1: -1}}, "columns maps column indices to windows"),
    ({"columns": {5: 1}}, "columns asks for column 5, but the tokens have 2"),
    ({"word_column": 2}, "word_column=2, but the tokens have 2"),
    ({"column_names": ("w",)}, "column_names has 1 names, but the tokens have 2"),
    ({"column_names": ("w", "w")}, "column_names must be distinct str"),
    ({"column_names": ("w", "w.lower"), "word_features": ("lower",)},
     "share the key '-1:w.lower'"),
    ({"window": -1}, "window"),
    ({"columns": "all"}, "columns"),
])
def test_invalid_params(params, match):
    X = [[("a", "B"), ("c", "D")]]
    with pytest.raises(ValueError, match=match):
        TokenFeaturizer(**params).fit_transform(X)


def test_custom_errors_name_the_first_token_of_the_type():
    def custom(token):
        return {"x": None} if token == "bad" else {"x": 1.0}

    X = [["a", "b"], ["c", "bad", "bad"]]
    with pytest.raises(TypeError, match=r"Sequence 1, token 1, feature 'x': unsupported"):
        TokenFeaturizer(custom=custom).fit_transform(X)
    # the dict path reports the same token once the dicts are vectorized
    with pytest.raises(TypeError, match=r"Sequence 1, token 1, feature 'x': unsupported"):
        SequenceVectorizer().fit(TokenFeaturizer(custom=custom).transform_dicts(X))


class _NamedKey:
    """A key that is not a str but is named like a built-in key."""

    def __str__(self):
        return "bias"


def test_custom_non_str_keys_are_named_by_their_str():
    """1 and True are two keys, "1" and "True", in the featurizer as in the vectorizer."""
    def custom(token):
        return {1: "x"} if token == "a" else {True: "x"}

    X = [["a", "b"], ["b", "a"]]
    featurizer = TokenFeaturizer(custom=custom, word_features=(), context_features=(),
                                 bias=False, boundary=False)
    Xt = featurizer.fit_transform(X)
    assert Xt.feature_names.tolist() == ["1=x", "True=x"]
    assert Xt.matrix.toarray().tolist() == [[1, 0], [0, 1], [0, 1], [1, 0]]
    vec = SequenceVectorizer()
    assert vec.fit_transform(featurizer.transform_dicts(X)).matrix.toarray().tolist() \
        == Xt.matrix.toarray().tolist()
    assert vec.feature_names_ == ["1=x", "True=x"]


@pytest.mark.parametrize("returned, error, match", [
    ([("x", 1)], TypeError, r"Sequence 1, token 0: custom returned a list"),
    ({"bias": 2.0}, ValueError, r"Sequence 1, token 0: custom returned the built-in"),
    ({"+1:word.lower": "q"}, ValueError, r"built-in feature key\(s\) \['\+1:word.lower'\]"),
    ({_NamedKey(): 2.0}, ValueError, r"built-in feature key\(s\) \['bias'\]"),
])
def test_custom_must_return_new_keys_in_a_dict(returned, error, match):
    def custom(token):
        return returned if token == "z" else {}

    X = [["a"], ["z", "a"]]
    with pytest.raises(error, match=match):
        TokenFeaturizer(custom=custom).fit_transform(X)
    with pytest.raises(error, match=match):
        TokenFeaturizer(custom=custom).transform_dicts(X)


# --- sklearn contract, pickling, pipelines ---------------------------------------


@pytest.mark.parametrize("check", PARAMETER_CHECKS)
def test_sklearn_checks(check):
    check("TokenFeaturizer", TokenFeaturizer())


def test_fit_returns_self_and_sets_only_the_token_width():
    featurizer = TokenFeaturizer(window=2)
    params = featurizer.get_params()
    before = dict(vars(featurizer))
    assert featurizer.fit(SENTENCES) is featurizer
    # the width of the tokens, which transform then holds them to (issue 43, item 16b)
    width = 1 if isinstance(SENTENCES[0][0], str) else len(SENTENCES[0][0])
    assert vars(featurizer) == {**before, "n_columns_": width}
    assert featurizer.get_params() == params
    # stateless: transform needs no fit
    assert TokenFeaturizer().transform(SENTENCES).n_tokens == 10


def test_tags():
    tags = TokenFeaturizer().__sklearn_tags__()
    assert not tags.input_tags.two_d_array and tags.input_tags.string
    assert not tags.requires_fit


def test_pickle_round_trip():
    featurizer = TokenFeaturizer(window=2, custom=custom_features)
    restored = pickle.loads(pickle.dumps(featurizer))
    a, b = featurizer.transform(SENTENCES), restored.transform(SENTENCES)
    assert a.feature_names.tolist() == b.feature_names.tolist()
    assert (a.matrix != b.matrix).nnz == 0


@pytest.fixture
def small_corpus(tagged_small):
    X_train, y_train, X_test, y_test = tagged_small
    return X_train[:120], y_train[:120], X_test[:40], y_test[:40]


def make_pipe(**crf_params):
    return make_pipeline(TokenFeaturizer(custom=custom_features), SequenceVectorizer(),
                         CRFClassifier(max_iter=8, n_jobs=1, **crf_params))


@pytest.fixture
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def test_pipeline_fit_predict_and_pickle(small_corpus, quiet):
    X_train, y_train, X_test, y_test = small_corpus
    pipe = make_pipe(alpha=0.1).fit(X_train, y_train)
    predicted = pipe.predict(X_test)
    assert [len(p) for p in predicted] == [len(s) for s in X_test]
    assert 0.5 < pipe.score(X_test, y_test) <= 1.0
    restored = pickle.loads(pickle.dumps(pipe))
    for a, b in zip(predicted, restored.predict(X_test)):
        np.testing.assert_array_equal(a, b)
    # the classifier sees the vectorizer's columns, whatever the test tokens hold
    assert pipe[-1].n_features_in_ == len(pipe[1].feature_names_)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_pipeline_in_grid_search(small_corpus, quiet, n_jobs):
    X_train, y_train, X_test, y_test = small_corpus
    grid = {"crfclassifier__alpha": [0.1, 10.0], "tokenfeaturizer__window": [0, 2]}
    if n_jobs is not None:
        grid["tokenfeaturizer__window"] = [1]
    search = GridSearchCV(make_pipe(), grid, cv=2, n_jobs=n_jobs, error_score="raise")
    search.fit(X_train, y_train)
    scores = search.cv_results_["mean_test_score"]
    assert len(scores) == len(grid["crfclassifier__alpha"]) * len(
        grid["tokenfeaturizer__window"])
    assert np.all((scores > 0.3) & (scores <= 1.0))
    best = search.best_estimator_
    assert best[0].window == search.best_params_["tokenfeaturizer__window"]
    window_names = [n for n in best[1].feature_names_ if n.startswith("+2:word")]
    assert bool(window_names) == (best[0].window == 2)
    assert len(search.predict(X_test)) == len(X_test)


def test_pipeline_in_cross_validate(small_corpus, quiet):
    X_train, y_train, _, _ = small_corpus
    result = cross_validate(make_pipe(alpha=0.1), X_train, y_train, cv=3,
                            return_estimator=True, error_score="raise")
    assert result["test_score"].shape == (3,)
    assert np.all((result["test_score"] > 0.3) & (result["test_score"] <= 1.0))
    # each fold learned its own vocabulary
    sizes = {len(estimator[1].feature_names_) for estimator in result["estimator"]}
    assert len(sizes) > 1


def test_clone_of_a_fitted_pipeline_is_unfitted(small_corpus, quiet):
    X_train, y_train, _, _ = small_corpus
    pipe = make_pipe().fit(X_train, y_train)
    cloned = clone(pipe)
    assert not hasattr(cloned[1], "vocabulary_")
    assert cloned[0].get_params() == pipe[0].get_params()


@pytest.mark.parametrize("tokens", [["The", "cat"], [("The", "DT", "x"), ("cat", "NN", "y")]])
def test_a_pipeline_fitted_on_word_pos_tuples_refuses_other_widths(tokens):
    # issue 43, item 16b: bare words or 3-tuples were featurized silently
    from sklearn.pipeline import make_pipeline

    from skcrf import CRFClassifier, SequenceVectorizer

    X = [[("The", "DT"), ("cat", "NN")], [("A", "DT"), ("dog", "NN")]]
    pipe = make_pipeline(TokenFeaturizer(), SequenceVectorizer(), CRFClassifier(max_iter=20))
    pipe.fit(X, [["D", "N"]] * 2)
    assert pipe[0].n_columns_ == 2
    width = "bare words (1 column)" if isinstance(tokens[0], str) else "tuples of 3 columns"
    with pytest.raises(ValueError, match=rf"X's tokens are {re.escape(width)}, but this "
                                         rf"TokenFeaturizer was fitted on tuples of 2 columns"):
        pipe.predict([tokens])
    assert [p.tolist() for p in pipe.predict(X)] == [["D", "N"]] * 2
