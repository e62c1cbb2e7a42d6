"""Estimators on a dense block where it used to be read as CSR columns: trees and semi-Markov
models at prediction, with partial labels, semi-Markov orders >= 2, chains of order >= 2
with partial labels. Each fit and query equals the same values given as CSR."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from skcrf import CRFClassifier, SemiMarkovCRF, SequenceMatrix, TreeCRF
from skcrf.features import arrays as arrays_module
from tests._ties import assert_same_predictions
from tests.test_dense_input import numeric_corpus


def _assert_same_weights(a, b, rtol):
    """The same loss curve and weights, to ``rtol`` relative to the largest of each."""
    names = sorted(name for name in vars(b) if name.endswith("coef_"))
    assert names == sorted(name for name in vars(a) if name.endswith("coef_"))
    for name in names + ["loss_curve_"]:
        x, z = np.asarray(getattr(a, name), dtype=float), np.asarray(getattr(b, name),
                                                                    dtype=float)
        assert x.shape == z.shape, name
        finite = np.isfinite(z)
        assert np.array_equal(finite, np.isfinite(x)), name
        scale = np.abs(z[finite]).max(initial=1.0)
        assert np.abs(x[finite] - z[finite]).max(initial=0.0) <= rtol * scale, name
    if hasattr(b, "label_patterns_"):
        np.testing.assert_array_equal(a.label_patterns_, b.label_patterns_)


def _no_csr_copy(X):
    raise AssertionError("the dense block was copied into CSR columns")


def _inputs(estimator, X):
    """``(dense input, the same values as CSR)``: lists of arrays, or forests (paths) for
    a TreeCRF."""
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    if isinstance(estimator, TreeCRF):
        parents = np.concatenate([np.arange(len(x)) - 1 for x in X])
        return (SequenceMatrix(None, offsets, parents=parents, dense=np.vstack(X)),
                SequenceMatrix(sp.csr_matrix(np.vstack(X)), offsets, parents=parents))
    return X, SequenceMatrix(sp.csr_matrix(np.vstack(X)), offsets)


def _partly_labelled(y):
    """Every other sequence with its second token unknown and its third one of two labels."""
    partial = []
    for q, labels in enumerate(y):
        labels = list(labels)
        if q % 2:
            labels[1] = None
            if len(labels) > 2:
                labels[2] = {"A", "B"}
        partial.append(labels)
    return partial


def _fit_both(estimator, X, y, monkeypatch):
    from sklearn.base import clone

    dense_input, csr_input = _inputs(estimator, X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        csr = clone(estimator).fit(csr_input, y)
        with monkeypatch.context() as patch:
            patch.setattr(arrays_module, "with_dense_columns", _no_csr_copy)
            dense = clone(estimator).fit(dense_input, y)
    return dense, csr, dense_input, csr_input


_PARTIAL_ESTIMATORS = {
    "tree": TreeCRF(max_iter=15),
    "semi-markov": SemiMarkovCRF(max_iter=15),
    "semi-markov order 2": SemiMarkovCRF(order=2, max_iter=15),
    "chain order 2": CRFClassifier(order=2, max_iter=15),
    "chain order 2 pruned": CRFClassifier(order=2, prune_threshold=0.01, max_iter=15),
}


@pytest.mark.parametrize("name", list(_PARTIAL_ESTIMATORS))
def test_partial_labels_on_a_dense_block_fit_as_the_csr_columns(name, monkeypatch):
    X, y = numeric_corpus(n_sequences=40, width=5, seed=3)
    dense, csr, _, _ = _fit_both(_PARTIAL_ESTIMATORS[name], X, _partly_labelled(y),
                                 monkeypatch)
    assert dense.n_iter_ == csr.n_iter_
    _assert_same_weights(dense, csr, rtol=1e-7)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_semimarkov_of_order_2_fits_a_dense_block_as_the_csr_columns(dtype, monkeypatch):
    X, y = numeric_corpus(n_sequences=40, width=5, seed=5, dtype=dtype)
    dense, csr, dense_input, csr_input = _fit_both(SemiMarkovCRF(order=2, max_iter=20), X, y,
                                                   monkeypatch)
    # float32 products round at float32's precision: 20 L-BFGS steps carry that on
    _assert_same_weights(dense, csr, rtol=1e-7 if dtype == np.float64 else 1e-3)
    assert dense.label_patterns_.shape[0] > 0
    assert_same_predictions(dense, csr, dense_input, X_b=csr_input)


_PREDICTING = {
    "tree": TreeCRF(max_iter=20),
    "semi-markov": SemiMarkovCRF(max_iter=20),
    "semi-markov order 2": SemiMarkovCRF(order=2, max_iter=20),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(_PREDICTING))
def test_queries_read_a_dense_block_as_the_csr_columns(name, dtype, monkeypatch):
    X, y = numeric_corpus(n_sequences=30, width=5, seed=6, dtype=dtype)
    estimator = _PREDICTING[name]
    dense_input, csr_input = _inputs(estimator, X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = estimator.fit(csr_input, y)
    expected = model.predict(csr_input)
    expected_marginals = np.concatenate(model.predict_marginals(csr_input))
    expected_log_proba = model.sequence_log_proba(csr_input, expected)
    nbest = not isinstance(model, TreeCRF)  # trees offer no n-best decoding
    expected_nbest = model.predict_nbest(csr_input, n=3) if nbest else []
    fixed = [[None, labels[1]] + [None] * (len(labels) - 2) for labels in y]
    expected_fixed = np.concatenate(model.predict_marginals(csr_input, fixed=fixed))
    monkeypatch.setattr(arrays_module, "with_dense_columns", _no_csr_copy)
    # the scores' products add in float32 for a float32 block, in float64 through CSR
    atol = 1e-9 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(np.concatenate(model.predict_marginals(dense_input)),
                               expected_marginals, rtol=0, atol=atol)
    np.testing.assert_allclose(np.concatenate(model.predict_marginals(dense_input,
                                                                      fixed=fixed)),
                               expected_fixed, rtol=0, atol=atol)
    np.testing.assert_allclose(model.sequence_log_proba(dense_input, expected),
                               expected_log_proba, rtol=0, atol=atol)
    for got, want in zip(model.predict_nbest(dense_input, n=3) if nbest else [],
                         expected_nbest):
        # probabilities in order; tied labellings may come in either order
        np.testing.assert_allclose([p for _, p in got], [p for _, p in want], rtol=0,
                                   atol=atol)
    assert_same_predictions(model, model, dense_input, X_b=csr_input)
    predicted = np.concatenate(model.predict(dense_input))
    assert model.score(dense_input, y) == pytest.approx(
        np.mean(predicted == np.concatenate(y)), abs=1e-12)


@pytest.mark.parametrize("order", [1, 2])
def test_features_of_segments_beside_a_dense_block_in_small_chunks(order, monkeypatch):
    """Each chunk of the dense route takes its tokens' rows of the segments' features."""
    from skcrf.structures.chain import dense as dense_module

    monkeypatch.setattr(dense_module, "CHUNK_TOKENS", 7)  # chunks of one or two sequences
    X, y = numeric_corpus(n_sequences=24, width=4, seed=8)
    longest = max(max(len(run) for run in np.split(labels, np.flatnonzero(
        labels[1:] != labels[:-1]) + 1)) for labels in y)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    rows = sp.random(offsets[-1] * longest, 6, density=0.3, format="csr", random_state=1)
    segments = SequenceMatrix(rows, offsets * longest)
    dense_input = SequenceMatrix(None, offsets, dense=np.vstack(X), segments=segments)
    csr_input = SequenceMatrix(sp.csr_matrix(np.vstack(X)), offsets, segments=segments)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        csr = SemiMarkovCRF(order=order, max_segment_length=longest,
                            max_iter=15).fit(csr_input, y)
        with monkeypatch.context() as patch:
            patch.setattr(arrays_module, "with_dense_columns", _no_csr_copy)
            dense = SemiMarkovCRF(order=order, max_segment_length=longest,
                                  max_iter=15).fit(dense_input, y)
    assert dense.segment_coef_.shape[1] == 6
    _assert_same_weights(dense, csr, rtol=1e-7)
