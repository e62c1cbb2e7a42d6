"""Vectors inside feature dicts: 1-D numpy arrays become a dense block."""

import io

import numpy as np
import pytest

from skcrf import CRFClassifier, SequenceVectorizer
from skcrf._persistence import load_model, save_model
from skcrf.compat import CRF
from skcrf.features._dict_arrays import FeatureValueError
from tests._ties import assert_same_predictions


def _corpus(seed=0, width=3, dtype=np.float64):
    rng = np.random.default_rng(seed)
    table = {w: rng.normal(size=width).astype(dtype) for w in "abcdef"}
    X = [[{"w": w, "vec": table[w]} for w in rng.choice(list("abcdef"), size=6)]
         for _ in range(25)]
    y = [["A" if t["w"] in "abc" else "B" for t in s] for s in X]
    return X, y, table


def test_vectors_become_named_dense_columns():
    X, _, table = _corpus()
    X[0][0] = {"w": "a"}  # no vector: zeros
    vectorizer = SequenceVectorizer()
    Xt = vectorizer.fit_transform(X)
    assert vectorizer.vector_widths_ == {"vec": 3}
    assert Xt.dense_names.tolist() == ["vec[0]", "vec[1]", "vec[2]"]
    assert Xt.feature_names.tolist() == [f"w={w}" for w in "abcdef"]
    np.testing.assert_array_equal(Xt.dense[0], 0.0)
    np.testing.assert_array_equal(Xt.dense[1], X[0][1]["vec"])
    again = vectorizer.transform(X)
    np.testing.assert_array_equal(again.dense, Xt.dense)
    assert vectorizer.fit_transform(_corpus(dtype=np.float32)[0]).dense.dtype == np.float32


def test_vectors_equal_the_same_numbers_as_float_features():
    X, y, _ = _corpus()
    as_floats = [[{"w": t["w"], **{f"vec[{j}]": float(v) for j, v in enumerate(t["vec"])}}
                  for t in s] for s in X]
    vectors = CRFClassifier().fit(X, y)
    floats = CRFClassifier().fit(as_floats, y)
    order = [floats.feature_names_.tolist().index(n) for n in vectors.feature_names_]
    np.testing.assert_allclose(vectors.coef_, floats.coef_[:, order], rtol=1e-5, atol=1e-7)
    assert_same_predictions(vectors, floats, X, X_b=as_floats)


def test_model_files_keep_vector_models():
    X, y, _ = _corpus()
    model = CRFClassifier().fit(X, y)
    buffer = io.BytesIO()
    save_model(model, buffer)
    buffer.seek(0)
    loaded = load_model(buffer)
    assert loaded.vectorizer_.vector_widths_ == {"vec": 3}
    np.testing.assert_array_equal(np.concatenate(loaded.predict(X)),
                                  np.concatenate(model.predict(X)))


def test_compat_crf_takes_vectors():
    X, y, _ = _corpus()
    crf = CRF(max_iterations=30).fit(X, y)
    assert len(crf.predict(X[:2])) == 2


def test_bad_vectors_are_named():
    X, y, _ = _corpus()
    model = CRFClassifier(max_iter=5).fit(X, y)
    X[3][2] = dict(X[3][2], vec=np.ones(4))
    with pytest.raises(ValueError, match="Sequence 3, token 2, feature 'vec': a vector of "
                                         "length 4, where 'vec' has length 3"):
        model.predict(X)
    with pytest.raises(ValueError, match="Sequence 3, token 2, feature 'vec': a vector of "
                                         "length 4, where 'vec' has length 3"):
        SequenceVectorizer().fit(X)
    X[3][2] = dict(X[3][2], vec=np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match=r"sequence 3, token 2, column 1 \('vec\[1\]'\)"):
        model.predict(X)
    X[3][2] = dict(X[3][2], vec=np.ones((3, 1)))
    with pytest.raises(FeatureValueError, match="1-D numpy array"):
        SequenceVectorizer().fit(X)
    X[3][2] = dict(X[3][2], vec=[1.0, 2.0, 3.0])
    with pytest.raises(FeatureValueError, match=r"np.asarray\(values\)"):
        SequenceVectorizer().fit(X)


def test_vectorizer_passes_a_dense_block_on():
    import scipy.sparse as sp

    from skcrf import SequenceMatrix

    dense = np.arange(6.0).reshape(3, 2)
    X = SequenceMatrix(sp.eye(3, format="csr"), [0, 1, 3], feature_names=["c", "a", "b"],
                       dense=dense, dense_names=["u", "v"])
    vectorizer = SequenceVectorizer()
    for Xt in (vectorizer.fit_transform(X), vectorizer.transform(X)):
        assert Xt.feature_names.tolist() == ["a", "b", "c"]
        np.testing.assert_array_equal(Xt.dense, dense)
        assert Xt.dense_names.tolist() == ["u", "v"]


def test_hasher_keeps_vectors_as_a_dense_block():
    from skcrf import SequenceHasher

    X, _, _ = _corpus()
    Xt = SequenceHasher(n_features=16).transform(X)
    assert Xt.n_features == 16 and Xt.dense_names.tolist() == ["vec[0]", "vec[1]", "vec[2]"]
    np.testing.assert_array_equal(Xt.dense[0], X[0][0]["vec"])
