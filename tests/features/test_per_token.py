"""PerTokenTransformer: fit on every token, transform per sequence = transform of the stack."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.feature_selection import SelectKBest, f_classif
from sklearn.kernel_approximation import Nystroem
from sklearn.preprocessing import (KBinsDiscretizer, MaxAbsScaler, SplineTransformer,
                                   StandardScaler)

from skcrf import SequenceMatrix
from skcrf.datasets import make_sequence_classification
from skcrf.features import PerTokenTransformer

X, y = make_sequence_classification(12, n_features=3, length_range=(0, 9), random_state=0)
STACKED = np.vstack(X)

TRANSFORMERS = [
    StandardScaler(),
    PCA(n_components=2, random_state=0),
    KBinsDiscretizer(n_bins=3, encode="onehot", quantile_method="averaged_inverted_cdf"),
    SplineTransformer(n_knots=4),
    Nystroem(n_components=5, random_state=0),
]


@pytest.mark.parametrize("transformer", TRANSFORMERS, ids=lambda t: type(t).__name__)
def test_fit_on_all_tokens_transform_per_sequence(transformer):
    wrapper = PerTokenTransformer(transformer).fit(X)
    reference = clone(transformer).fit(STACKED)
    expected = reference.transform(STACKED)
    whole = wrapper.transform(X)
    assert whole.lengths.tolist() == [len(x) for x in X]
    got = whole.matrix if sp.issparse(expected) else whole.dense
    if sp.issparse(expected):
        assert whole.dense is None
        np.testing.assert_allclose(got.toarray(), expected.toarray())
    else:
        assert whole.n_features == 0 and whole.dense.flags.c_contiguous
        np.testing.assert_allclose(got, expected)
    for q in range(len(X)):
        one = wrapper.transform([X[q]])
        rows = slice(whole.offsets[q], whole.offsets[q + 1])
        part = one.matrix.toarray() if sp.issparse(expected) else one.dense
        full = whole.matrix[rows].toarray() if sp.issparse(expected) else whole.dense[rows]
        np.testing.assert_allclose(part, full)
    names = list(reference.get_feature_names_out(["x0", "x1", "x2"]))
    out_names = whole.feature_names if sp.issparse(expected) else whole.dense_names
    assert list(out_names) == names == list(wrapper.get_feature_names_out())


def test_sparse_block_passes_through_a_dense_transform():
    rows = STACKED.shape[0]
    matrix = sp.random(rows, 4, density=0.3, format="csr", random_state=0)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    both = SequenceMatrix(matrix, offsets, feature_names=["a", "b", "c", "d"],
                          dense=STACKED, dense_names=["u", "v", "w"])
    Xt = PerTokenTransformer(StandardScaler()).fit_transform(both)
    assert (Xt.matrix != matrix).nnz == 0 and Xt.feature_names.tolist() == ["a", "b", "c", "d"]
    np.testing.assert_allclose(Xt.dense, StandardScaler().fit_transform(STACKED))
    assert Xt.dense_names.tolist() == ["u", "v", "w"]
    binned = PerTokenTransformer(KBinsDiscretizer(
        n_bins=2, quantile_method="averaged_inverted_cdf")).fit_transform(both)
    assert binned.dense is None and binned.n_features == 4 + 6
    assert binned.feature_names[:4].tolist() == ["a", "b", "c", "d"]


def test_sparse_input_alone_is_transformed():
    offsets = np.array([0, 2, 5])
    matrix = sp.csr_matrix(np.array([[1.0, 0], [0, -4], [2, 0], [0, 2], [0, 0]]))
    Xt = PerTokenTransformer(MaxAbsScaler()).fit_transform(SequenceMatrix(matrix, offsets))
    np.testing.assert_allclose(Xt.matrix.toarray(), MaxAbsScaler().fit_transform(matrix).toarray())
    assert Xt.dense is None and Xt.lengths.tolist() == [2, 3]


def test_labels_are_stacked_for_supervised_transformers():
    wrapper = PerTokenTransformer(SelectKBest(f_classif, k=1)).fit(X, y)
    reference = SelectKBest(f_classif, k=1).fit(STACKED, np.concatenate(y))
    np.testing.assert_array_equal(wrapper.transformer_.get_support(), reference.get_support())
    with pytest.raises(ValueError, match="labels for"):
        PerTokenTransformer(StandardScaler()).fit(X, y[:-2])


def test_params_clone_and_width_check():
    wrapper = PerTokenTransformer(PCA(n_components=2))
    assert wrapper.get_params()["transformer__n_components"] == 2
    wrapper.set_params(transformer__n_components=1)
    fitted = wrapper.fit(X)
    assert fitted.transformer_ is not wrapper.transformer  # a fitted clone
    assert not hasattr(clone(fitted), "transformer_")
    assert fitted.transform(X).n_dense == 1
    with pytest.raises(ValueError, match="2 columns per token; PerTokenTransformer was "
                                         "fitted on 3"):
        fitted.transform([x[:, :2] for x in X])


def test_a_scaled_crf_beats_a_per_token_classifier_on_sticky_states():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from skcrf import CRFClassifier

    X_, y_ = make_sequence_classification(200, n_features=2, n_classes=3, random_state=0)
    train, test = slice(0, 100), slice(100, 200)
    crf = make_pipeline(PerTokenTransformer(StandardScaler()), CRFClassifier())
    crf.fit(X_[train], y_[train])
    crf_accuracy = np.mean(np.concatenate(crf.predict(X_[test])) == np.concatenate(y_[test]))
    logistic = LogisticRegression().fit(np.vstack(X_[train]), np.concatenate(y_[train]))
    logistic_accuracy = logistic.score(np.vstack(X_[test]), np.concatenate(y_[test]))
    # the neighbours tell overlapping emissions apart: far more than 5 points here
    assert crf_accuracy >= logistic_accuracy + 0.05
