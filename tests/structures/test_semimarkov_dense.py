"""The semi-Markov CRF's dense route (token scores by BLAS) against the same values as CSR."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skcrf import SemiMarkovCRF
from skcrf.features import arrays as arrays_module
from skcrf.features.arrays import FeatureArrays
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures.chain import dense as dense_module
from skcrf.structures.semimarkov.dense import DenseSemiMarkovStructure
from skcrf.structures.semimarkov.patterns import PatternSemiMarkovStructure
from skcrf.structures.semimarkov.structure import SemiMarkovStructure
from tests._ties import assert_same_predictions
from tests.structures.chain.test_dense import _problem
from tests.test_dense_input import _as_csr_matrix, numeric_corpus


def segment_codes_of(labels, offsets, n_labels, max_lengths):
    """Gold segment codes of ``labels``: runs cut into segments no longer than their label
    allows (a code of ``label + n_labels`` starts a segment)."""
    codes = np.empty_like(labels)
    for q in range(offsets.shape[0] - 1):
        run = 0
        for t in range(offsets[q], offsets[q + 1]):
            same = t > offsets[q] and labels[t] == labels[t - 1]
            run = run + 1 if same else 1
            if run > max_lengths[labels[t]]:
                run = 1
            codes[t] = labels[t] + (n_labels if run == 1 else 0)  # a start
    return codes


def semimarkov_structure(features, offsets, codes, max_lengths, order):
    """Every (feature, role label) pair weighted; every label n-gram at ``order`` >= 2."""
    options = dict(all_possible_states=True)
    if order == 1:
        return SemiMarkovStructure.for_training(features, offsets, codes, max_lengths,
                                                **options)
    return PatternSemiMarkovStructure.for_training(features, offsets, codes, max_lengths,
                                                   order=order, all_possible_transitions=True,
                                                   **options)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("chunk", [3, 1 << 16])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("max_lengths", [(3, 3, 3), (1, 3, 2)])
@pytest.mark.parametrize("order", [1, 2])
def test_dense_semimarkov_route_equals_the_csr_route(seed, chunk, weighted, max_lengths,
                                                     order, monkeypatch):
    """Loss and gradient, including labels of one-token segments (no first/last rows)."""
    monkeypatch.setattr(dense_module, "CHUNK_TOKENS", chunk)
    X, offsets, labels, n_labels = _problem(seed)
    max_lengths = np.asarray(max_lengths, dtype=np.int64)
    codes = segment_codes_of(labels, offsets, n_labels, max_lengths)
    rng = np.random.default_rng(seed + 11)
    weights = rng.uniform(0.2, 2.0, size=offsets.shape[0] - 1) if weighted else None
    blocks = FeatureArrays.of_sequences(X, keep_dense=True)
    csr = FeatureArrays.of_sequences(X)
    plain = semimarkov_structure(csr, offsets, codes, max_lengths, order)
    dense = DenseSemiMarkovStructure(semimarkov_structure(blocks, offsets, codes, max_lengths,
                                                          order), X.n_dense)
    # through the named coefficients: 0 where the structure forbids a length
    named = plain.coefficients(rng.normal(size=plain.n_parameters) * 0.5)
    w_csr = plain.weights(named)
    w_dense = dense.weights(named)
    for name, value in dense.coefficients(w_dense).items():
        np.testing.assert_array_equal(value, named[name], err_msg=name)
    a = NegativeLogLikelihood(dense, blocks, offsets, codes, 0.3, sequence_weights=weights)
    b = NegativeLogLikelihood(plain, csr, offsets, codes, 0.3, sequence_weights=weights)
    loss_dense, grad_dense = a(w_dense)
    loss_csr, grad_csr = b(w_csr)
    assert loss_dense == pytest.approx(loss_csr, rel=1e-12, abs=1e-10)
    by_name_dense = dense.coefficients(grad_dense)
    by_name_csr = plain.coefficients(grad_csr)
    for name in by_name_csr:
        finite = np.isfinite(by_name_csr[name])
        np.testing.assert_allclose(by_name_dense[name][finite], by_name_csr[name][finite],
                                   rtol=0, atol=1e-9, err_msg=name)


def test_semimarkov_fit_on_a_dense_block_equals_the_csr_fit(monkeypatch):
    X, y = numeric_corpus(n_sequences=40, width=5, seed=4)

    def no_csr_copy(X):
        raise AssertionError("the dense block was copied into CSR columns")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        csr = SemiMarkovCRF(max_iter=40).fit(_as_csr_matrix(X), y)
        with monkeypatch.context() as patch:
            patch.setattr(arrays_module, "with_dense_columns", no_csr_copy)
            dense = SemiMarkovCRF(max_iter=40).fit(X, y)
    assert dense.n_iter_ == csr.n_iter_
    for name in ("coef_", "first_coef_", "last_coef_", "length_coef_", "transition_coef_"):
        a, b = getattr(dense, name), getattr(csr, name)
        finite = np.isfinite(b)
        assert np.array_equal(finite, np.isfinite(a)), name
        scale = np.abs(b[finite]).max(initial=1.0)
        assert np.abs(a[finite] - b[finite]).max(initial=0.0) <= 1e-7 * scale, name
    np.testing.assert_allclose(dense.loss_curve_, csr.loss_curve_, rtol=1e-9)
    assert_same_predictions(dense, csr, X, X_b=_as_csr_matrix(X))
