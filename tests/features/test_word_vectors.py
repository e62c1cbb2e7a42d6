"""WordVectorizer: tables as mappings or arrays, lowercasing, OOV vectors, norms, errors."""

import numpy as np
import pytest
from sklearn.base import clone

from skcrf.features import WordVectorizer

TABLE = {"the": [1.0, 0.0, 0.0], "Cat": [0.0, 3.0, 4.0], "cat": [0.0, 1.0, 0.0],
         "sat": [2.0, 2.0, 1.0]}
X = [["the", "Cat", "sat"], [], ["dog", "cat"], ["THE"]]


def _rows(words, table, oov):
    return np.array([table.get(word, oov) for word in words], dtype=float)


def test_mapping_and_array_with_vocabulary_agree():
    by_mapping = WordVectorizer(TABLE).fit_transform(X)
    by_array = WordVectorizer(np.array(list(TABLE.values())),
                              vocabulary=list(TABLE)).fit_transform(X)
    expected = _rows([w for s in X for w in s], TABLE, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(by_mapping.dense, expected)
    np.testing.assert_array_equal(by_array.dense, expected)
    assert by_mapping.lengths.tolist() == [3, 0, 2, 1] and by_mapping.n_features == 0
    assert by_mapping.dense_names.tolist() == ["vec[0]", "vec[1]", "vec[2]"]


def test_lowercase_prefers_the_lowercase_entry():
    Xt = WordVectorizer(TABLE, lowercase=True).fit_transform(X)
    lowered = {"the": TABLE["the"], "cat": TABLE["cat"], "sat": TABLE["sat"]}
    expected = _rows([w.lower() for s in X for w in s], lowered, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(Xt.dense, expected)


@pytest.mark.parametrize("oov, expected", [
    ("zeros", [0.0, 0.0, 0.0]),
    ("mean", np.mean(list(TABLE.values()), axis=0)),
    ([7.0, 8.0, 9.0], [7.0, 8.0, 9.0]),
])
def test_out_of_vocabulary_vector(oov, expected):
    Xt = WordVectorizer(TABLE, oov=oov).fit_transform([["dog", "the"]])
    np.testing.assert_allclose(Xt.dense[0], expected)
    np.testing.assert_array_equal(Xt.dense[1], TABLE["the"])


def test_l2_norm_scales_the_table_and_the_oov_vector():
    Xt = WordVectorizer(TABLE, norm="l2", oov=[0.0, 0.0, 2.0]).fit_transform([["Cat", "dog"]])
    np.testing.assert_allclose(Xt.dense, [[0.0, 0.6, 0.8], [0.0, 0.0, 1.0]])
    zero = WordVectorizer({"a": [0.0, 0.0]}, norm="l2").fit_transform([["a"]])
    np.testing.assert_array_equal(zero.dense, [[0.0, 0.0]])  # stays zero, no NaN


def test_tuple_tokens_dtype_and_prefix():
    Xt = WordVectorizer(TABLE, word_column=1, dtype=np.float32, prefix="emb").fit_transform(
        [[("NC", "cat"), ("V", "sat")]])
    assert Xt.dense.dtype == np.float32
    np.testing.assert_array_equal(Xt.dense, [TABLE["cat"], TABLE["sat"]])
    assert Xt.dense_names.tolist() == ["emb[0]", "emb[1]", "emb[2]"]


def test_transform_per_sequence_equals_the_whole():
    vec = WordVectorizer(TABLE, lowercase=True, oov="mean").fit(X)
    whole = vec.transform(X)
    for q in range(len(X)):
        start, stop = whole.offsets[q], whole.offsets[q + 1]
        np.testing.assert_array_equal(vec.transform([X[q]]).dense, whole.dense[start:stop])


def test_clone_and_params():
    vec = WordVectorizer(TABLE, lowercase=True, norm="l2")
    copy = clone(vec)
    assert copy.get_params()["lowercase"] is True and copy.get_params()["norm"] == "l2"
    assert copy.vectors == TABLE  # clone deep-copies non-estimator parameters
    assert vec.fit(X).get_feature_names_out().tolist() == ["vec[0]", "vec[1]", "vec[2]"]


@pytest.mark.parametrize("kwargs, error, message", [
    ({"vectors": {"a": [1.0], "b": [1.0, 2.0]}}, ValueError, r"vectors\['b'\] has shape"),
    ({"vectors": np.ones((2, 3)), "vocabulary": ["a"]}, ValueError, "1 words for 2 rows"),
    ({"vectors": np.ones((2, 3)), "vocabulary": ["a", "a"]}, ValueError, "'a' twice"),
    ({"vectors": np.ones((2, 3))}, ValueError, "vocabulary"),
    ({"vectors": {"a": [1.0]}, "vocabulary": ["a"]}, ValueError, "vocabulary must be None"),
    ({"vectors": {"a": [np.nan]}}, ValueError, "'a' holds NaN"),
    ({"vectors": {"a": [1.0]}, "oov": "random"}, ValueError, "oov"),
    ({"vectors": {"a": [1.0]}, "oov": [1.0, 2.0]}, ValueError, "oov"),
    ({"vectors": {"a": [1.0]}, "norm": "l1"}, ValueError, "norm"),
    ({"vectors": {}}, ValueError, "no vector"),
])
def test_bad_tables_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        WordVectorizer(**kwargs).fit([["a"]])


def test_bad_tokens_name_sequence_and_token():
    vec = WordVectorizer(TABLE)
    with pytest.raises(TypeError, match="Sequence 1, token 0 of X is a int"):
        vec.fit([["the"], [3]])
    with pytest.raises(ValueError, match="Sequence 0, token 1 of X has 1 column"):
        WordVectorizer(TABLE, word_column=1).fit([[("a", "b"), ("c",)]])
    with pytest.raises(TypeError, match="column 0 of X is a float"):
        vec.fit([[(1.5, "b")]])
