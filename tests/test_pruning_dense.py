"""Pruned chains (order >= 2 on the candidate lattice) with a dense block: the BLAS route
against the same values as CSR columns, at the objective and for whole fits."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skcrf import CRFClassifier
from skcrf._estimators.pruning import DenseLatticeTerms
from skcrf.features import arrays as arrays_module
from skcrf.features.arrays import FeatureArrays
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures.chain import dense as dense_module
from skcrf.structures.chain.dense import DenseChainStructure
from skcrf.structures.patterns.chain import PatternChainStructure
from skcrf.structures.patterns.pruned import CandidateLattice, LatticeTerms, candidate_labels
from tests._ties import assert_same_predictions
from tests.structures.chain.test_dense import _problem
from tests.test_dense_input import _as_csr_matrix, numeric_corpus


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("chunk", [3, 1 << 16])
@pytest.mark.parametrize("weighted", [False, True])
def test_dense_lattice_terms_equal_the_csr_lattice_terms(order, seed, chunk, weighted,
                                                         monkeypatch):
    monkeypatch.setattr(dense_module, "CHUNK_TOKENS", chunk)  # many chunks, or one
    X, offsets, labels, n_classes = _problem(seed, n_classes=4)
    rng = np.random.default_rng(seed + 7)
    weights = rng.uniform(0.2, 2.0, size=offsets.shape[0] - 1) if weighted else None
    blocks = FeatureArrays.of_sequences(X, keep_dense=True)
    csr = FeatureArrays.of_sequences(X)
    build = dict(all_possible_states=True, all_possible_transitions=True)
    plain = PatternChainStructure.for_training(csr, offsets, labels, n_classes, order, **build)
    dense = DenseChainStructure(PatternChainStructure.for_training(
        blocks, offsets, labels, n_classes, order, **build), X.n_dense)
    # random candidates (the gold label always among them)
    candidates = candidate_labels(rng.uniform(size=(labels.shape[0], n_classes)), labels, 0.5)
    lattice = CandidateLattice(offsets, *candidates, plain.patterns)
    w_csr = rng.normal(size=plain.n_parameters) * 0.5
    w_dense = dense.weights(plain.coefficients(w_csr))
    log_z_csr, expected_csr = LatticeTerms(plain, csr, lattice, weights)(w_csr)
    log_z_dense, expected_dense = DenseLatticeTerms(dense, blocks, offsets, candidates,
                                                    weights)(w_dense)
    np.testing.assert_allclose(log_z_dense, log_z_csr, rtol=1e-12, atol=1e-10)
    by_name_dense = dense.coefficients(expected_dense)
    by_name_csr = plain.coefficients(expected_csr)
    for name in ("coef", "transitions", "start", "end", "pattern_coef"):
        np.testing.assert_allclose(by_name_dense[name], by_name_csr[name], rtol=0, atol=1e-9)


def _fit(estimator, X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator.fit(X, y, **kwargs)


@pytest.mark.parametrize("weighted", [False, True])
def test_pruned_fit_on_a_dense_block_equals_the_csr_fit(weighted, monkeypatch):
    X, y = numeric_corpus(n_sequences=40, width=5, seed=3)
    kwargs = {}
    if weighted:
        kwargs["sample_weight"] = np.random.default_rng(0).uniform(0.5, 2.0, size=len(X))
    params = dict(order=2, prune_threshold=0.05, max_iter=40, all_possible_transitions=True)
    csr = _fit(CRFClassifier(**params), _as_csr_matrix(X), y, **kwargs)

    def no_csr_copy(X):
        raise AssertionError("the dense block was copied into CSR columns")

    with monkeypatch.context() as patch:
        patch.setattr(arrays_module, "with_dense_columns", no_csr_copy)
        dense = _fit(CRFClassifier(**params), X, y, **kwargs)
    assert dense.n_iter_ == csr.n_iter_
    for name in ("coef_", "transition_coef_", "pattern_coef_", "pruner_coef_",
                 "pruner_transition_coef_", "start_coef_", "end_coef_"):
        a, b = getattr(dense, name), getattr(csr, name)
        scale = np.abs(b).max(initial=1.0)
        assert np.abs(a - b).max(initial=0.0) <= 1e-7 * scale, name
    np.testing.assert_allclose(dense.loss_curve_, csr.loss_curve_, rtol=1e-9)
    assert_same_predictions(dense, csr, X, X_b=_as_csr_matrix(X))
