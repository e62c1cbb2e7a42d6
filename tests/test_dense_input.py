"""Numeric sequences (lists of 2-D arrays, dense blocks) through every estimator."""

import io

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf import CRFClassifier, CRFClassifierCV, SemiMarkovCRF, SequenceMatrix, TreeCRF
from skcrf._persistence import load_model, save_model
from skcrf.features import from_lengths
from tests._ties import assert_same_predictions


def numeric_corpus(n_sequences=30, width=4, seed=0, dtype=np.float64):
    """Sequences of Gaussian rows whose label depends on two columns and the previous label."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        n = int(rng.integers(2, 8))
        x = rng.normal(size=(n, width)).astype(dtype)
        labels = np.where(x[:, 0] + 0.5 * x[:, 1] > 0, "A", "B")
        X.append(x)
        y.append(labels)
    return X, y


def _as_csr_matrix(X):
    """The same values as a SequenceMatrix over CSR (the route before dense blocks)."""
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    return SequenceMatrix(sp.csr_matrix(np.vstack(X)), offsets)


@pytest.mark.parametrize("params", [{}, {"order": 2}, {"solver": "sgd", "max_iter": 5},
                                    {"solver": "passive_aggressive", "max_iter": 5}])
def test_list_of_arrays_and_csr_give_the_same_model(params):
    X, y = numeric_corpus()
    dense = CRFClassifier(**params, random_state=0).fit(X, y)
    csr = CRFClassifier(**params, random_state=0).fit(_as_csr_matrix(X), y)
    np.testing.assert_allclose(dense.coef_, csr.coef_, rtol=1e-6, atol=1e-8)
    assert dense.n_features_in_ == 4 and dense.n_dense_features_in_ == 4
    assert dense.feature_names_.tolist() == ["x0", "x1", "x2", "x3"]
    # every input form of the same values predicts alike
    expected = np.concatenate(dense.predict(X))
    for form in (SequenceMatrix.from_sequences(X), _as_csr_matrix(X),
                 [sp.csr_matrix(x) for x in X]):
        np.testing.assert_array_equal(np.concatenate(dense.predict(form)), expected)
    marginals = dense.predict_marginals(X)
    assert len(marginals) == len(X)
    assert dense.score(X, y) > 0.8


def test_float32_sequences_train():
    X, y = numeric_corpus(dtype=np.float32)
    model = CRFClassifier().fit(X, y)
    assert model.score(X, y) > 0.8


def test_partial_fit_takes_arrays():
    X, y = numeric_corpus()
    model = CRFClassifier(solver="sgd", random_state=0)
    model.partial_fit(X[:15], y[:15], classes=["A", "B"])
    model.partial_fit(X[15:], y[15:])
    assert model.n_dense_features_in_ == 4
    with pytest.raises(ValueError, match="X has 3 features"):
        model.partial_fit([x[:, :3] for x in X], y)


def test_semimarkov_and_tree_take_dense_blocks():
    X, y = numeric_corpus()
    semi = SemiMarkovCRF(max_iter=20).fit(X, y)
    assert len(semi.predict(X[:3])) == 3
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    parents = np.concatenate([np.arange(len(x)) - 1 for x in X])  # chains as trees
    trees = SequenceMatrix(None, offsets, parents=parents, dense=np.vstack(X))
    tree = TreeCRF(max_iter=20).fit(trees, y)
    assert tree.score(trees, y) > 0.8
    # the block multiplied by BLAS in training, the same values as CSR columns
    as_csr = SequenceMatrix(sp.csr_matrix(np.vstack(X)), offsets, parents=parents)
    csr_tree = TreeCRF(max_iter=20).fit(as_csr, y)
    np.testing.assert_allclose(tree.coef_, csr_tree.coef_, rtol=1e-6, atol=1e-8)
    assert_same_predictions(tree, csr_tree, trees, X_b=as_csr)


def test_cv_splits_lists_of_arrays():
    X, y = numeric_corpus(n_sequences=24)
    model = CRFClassifierCV(alphas=[0.1, 1.0], cv=2).fit(X, y)
    assert model.alpha_ in (0.1, 1.0)


def test_model_files_round_trip_dense_models():
    X, y = numeric_corpus()
    model = CRFClassifier().fit(SequenceMatrix.from_sequences(X), y)
    buffer = io.BytesIO()
    save_model(model, buffer)
    buffer.seek(0)
    loaded = load_model(buffer)
    assert loaded.n_dense_features_in_ == 4
    np.testing.assert_array_equal(np.concatenate(loaded.predict(X)),
                                  np.concatenate(model.predict(X)))


def test_model_files_refuse_feature_steps_that_hold_sklearn_transformers():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skcrf.features import PerTokenTransformer, SequenceUnion

    X, y = numeric_corpus()
    per_token = make_pipeline(PerTokenTransformer(StandardScaler()),
                              CRFClassifier(max_iter=5)).fit(X, y)
    union = SequenceUnion([("scaled", PerTokenTransformer(StandardScaler()))]).fit(X)
    for model, what in ((per_token, "Pipeline step 'pertokentransformer'"),
                        (union, "The model")):
        with pytest.raises(TypeError, match=f"{what} is a skcrf.*holds other.*"
                                            f"allow_pickle=True"):
            save_model(model, io.BytesIO())
    # the documented way out: pickled, loaded only with allow_pickle=True
    buffer = io.BytesIO()
    save_model(per_token, buffer, allow_pickle=True)
    buffer.seek(0)
    with pytest.warns(UserWarning):
        loaded = load_model(buffer, allow_pickle=True)
    np.testing.assert_array_equal(np.concatenate(loaded.predict(X)),
                                  np.concatenate(per_token.predict(X)))


def test_from_lengths_moves_hmmlearn_code_with_one_line():
    X, y = numeric_corpus()
    lengths = [len(x) for x in X]
    model = CRFClassifier().fit(from_lengths(np.vstack(X), lengths), y)
    np.testing.assert_array_equal(np.concatenate(model.predict(X)),
                                  np.concatenate(CRFClassifier().fit(X, y).predict(X)))


@pytest.mark.parametrize("estimator", [CRFClassifier(), SemiMarkovCRF()])
def test_lengths_given_positionally_are_an_error(estimator):
    X, y = numeric_corpus()
    stacked = from_lengths(np.vstack(X), [len(x) for x in X])
    with pytest.raises(TypeError, match="sample_weight by keyword only.*from_lengths"):
        estimator.fit(stacked, y, [len(x) for x in X])


def test_bad_numeric_input_is_named():
    X, y = numeric_corpus()
    model = CRFClassifier(max_iter=5).fit(X, y)
    with pytest.raises(ValueError, match=r"X has 3 features \(0 sparse, 3 dense columns\), "
                                         r"but CRFClassifier was fitted with 4 \(0 sparse, "
                                         r"4 dense\)"):
        model.predict([x[:, :3] for x in X])
    bad = [x.copy() for x in X]
    bad[2][1, 3] = np.nan
    with pytest.raises(ValueError, match="nan at sequence 2, token 1, column 3"):
        model.predict(bad)
    with pytest.raises(ValueError, match="nan at sequence 2, token 1, column 3"):
        CRFClassifier().fit(bad, y)
    with pytest.raises(ValueError, match="Sequence 1 of X has 3 columns; sequence 0 has 4"):
        CRFClassifier().fit([X[0], X[1][:, :3]], y[:2])
    with pytest.raises(TypeError, match="Sequence 0 of X is an array of dtype object"):
        CRFClassifier().fit([np.array([["a", 1.0]], dtype=object)], [["A"]])
    # a model of dicts is given numbers
    dicts = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}]]
    words = CRFClassifier(max_iter=5).fit(dicts, [["A", "B"], ["B"]])
    with pytest.raises(ValueError, match="X has 4 features"):
        words.predict(X)


def test_sparse_and_dense_blocks_side_by_side():
    X, y = numeric_corpus()
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    matrix = sp.random(int(offsets[-1]), 3, density=0.3, format="csr", random_state=0)
    both = SequenceMatrix(matrix, offsets, dense=np.vstack(X))
    model = CRFClassifier().fit(both, y)
    # unnamed columns: x0..x2 sparse, then x3..x6 dense, no name twice
    assert model.feature_names_.tolist() == [f"x{i}" for i in range(7)]
    stacked = SequenceMatrix(sp.hstack([matrix, sp.csr_matrix(np.vstack(X))]).tocsr(), offsets)
    np.testing.assert_allclose(model.coef_, CRFClassifier().fit(stacked, y).coef_,
                               rtol=1e-6, atol=1e-8)
    named = SequenceMatrix(matrix, offsets, feature_names=["a", "b", "c"],
                           dense=np.vstack(X), dense_names=["u", "v", "w", "z"])
    assert CRFClassifier(max_iter=3).fit(named, y).feature_names_.tolist() == [
        "a", "b", "c", "u", "v", "w", "z"]
    # the same numbers given as sparse columns to a model of a dense block: accepted
    np.testing.assert_array_equal(np.concatenate(model.predict(stacked)),
                                  np.concatenate(model.predict(both)))


def test_distributed_partitions_keep_dense_blocks_as_blocks():
    """skcrf.dask's partitions: numbers and dict vectors stay a dense block, not CSR."""
    from skcrf.dask._partitions import read_partition

    X, y = numeric_corpus(n_sequences=4)
    raw = read_partition(0, X, y)
    assert raw.positional and raw.matrix.n_features == 0
    np.testing.assert_array_equal(raw.matrix.dense, np.vstack(X))
    dicts = [[{"w": "a", "vec": row} for row in x] for x in X]
    raw = read_partition(0, dicts, y)
    assert not raw.positional and raw.vector_widths == {"vec": 4}
    assert raw.matrix.n_features == 1  # "w=a"; the vectors are the block
    np.testing.assert_array_equal(raw.matrix.dense, np.vstack(X))


def test_dataframes_train_with_their_column_names():
    pd = pytest.importorskip("pandas")
    X, y = numeric_corpus()
    frames = [pd.DataFrame(x, columns=["speed", "heading", "altitude", "load"]) for x in X]
    model = CRFClassifier().fit(frames, y)
    assert model.feature_names_.tolist() == ["speed", "heading", "altitude", "load"]
    np.testing.assert_array_equal(np.concatenate(model.predict(frames)),
                                  np.concatenate(model.predict(X)))
