"""Partial labels with a dense block on every structure: the dense route (the block
multiplied by BLAS, one dense unary for the free and the constrained pass) against the
same values as CSR columns, which tests/learning/test_partial*.py check by enumeration."""

import numpy as np
import pytest

from skcrf import SequenceMatrix
from skcrf._estimators.partial_labels import PartialLabels
from skcrf.features.arrays import FeatureArrays
from skcrf.learning.partial import PartialLabelObjective
from skcrf.structures.chain import dense as dense_module
from skcrf.structures.chain.dense import DenseChainStructure
from skcrf.structures.patterns.chain import PatternChainStructure
from skcrf.structures.semimarkov.dense import DenseSemiMarkovStructure
from skcrf.structures.tree.structure import TreeStructure
from tests.learning.test_partial import _partial, _random_mask
from tests.structures.chain.test_dense import _problem
from tests.structures.test_semimarkov_dense import segment_codes_of, semimarkov_structure


def _with_parents(X, offsets, seed):
    """``X`` with random forests: each token's parent an earlier token of its sequence, or none."""
    rng = np.random.default_rng(seed + 50)
    parents = np.concatenate([[rng.integers(-1, t) if t else -1 for t in range(n)]
                              for n in np.diff(offsets)]).astype(np.int64)
    return SequenceMatrix(X.matrix, offsets, parents=parents, dense=X.dense)


def _chain_structure(kind, features, offsets, labels, n_classes):
    if kind == "tree":
        return TreeStructure.for_training(features, labels, n_classes, all_possible_states=True)
    return PatternChainStructure.for_training(features, offsets, labels, n_classes, kind,
                                              all_possible_states=True,
                                              all_possible_transitions=True)


def _assert_same_objective(dense, plain, dense_objective, csr_objective, w_dense, w_csr,
                           rtol=0.0, atol=1e-9):
    """Loss and each named block of the gradient alike (to ``atol`` + ``rtol``)."""
    loss_dense, grad_dense = dense_objective(w_dense)
    loss_csr, grad_csr = csr_objective(w_csr)
    assert np.isfinite(loss_csr)
    assert loss_dense == pytest.approx(loss_csr, rel=max(rtol, 1e-12), abs=1e-10)
    by_name_dense = dense.coefficients(grad_dense)
    by_name_csr = plain.coefficients(grad_csr)
    for name in by_name_csr:
        finite = np.isfinite(by_name_csr[name])
        np.testing.assert_allclose(by_name_dense[name][finite], by_name_csr[name][finite],
                                   rtol=rtol, atol=atol, err_msg=name)


def _sequence_weights(weighted, offsets, seed):
    if not weighted:
        return None
    return np.random.default_rng(seed + 7).uniform(0.2, 2.0, size=offsets.shape[0] - 1)


@pytest.mark.parametrize("kind", ["tree", 2, 3])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("chunk", [3, 1 << 16])
@pytest.mark.parametrize("weighted", [False, True])
def test_constrained_chains_and_trees_equal_the_csr_route(kind, seed, chunk, weighted,
                                                          monkeypatch):
    monkeypatch.setattr(dense_module, "CHUNK_TOKENS", chunk)  # many chunks, or one
    X, offsets, labels, n_classes = _problem(seed)
    if kind == "tree":
        X = _with_parents(X, offsets, seed)
    rng = np.random.default_rng(seed + 100)
    partial = _partial(labels, _random_mask(rng, labels, n_classes), offsets)
    blocks = FeatureArrays.of_sequences(X, keep_dense=True)
    csr = FeatureArrays.of_sequences(X)  # the dense values as CSR columns
    dense = DenseChainStructure(_chain_structure(kind, blocks, offsets, labels, n_classes),
                                X.n_dense)
    plain = _chain_structure(kind, csr, offsets, labels, n_classes)
    _assert_same_partial_objective(dense, plain, blocks, csr, offsets, partial,
                                   _sequence_weights(weighted, offsets, seed), rng)


def _assert_same_partial_objective(dense, plain, blocks, csr, offsets, partial, weights, rng):
    """The partial-label objective of the dense route equals the CSR route's at random weights."""
    named = plain.coefficients(rng.normal(size=plain.n_parameters) * 0.5)
    _assert_same_objective(
        dense, plain,
        PartialLabelObjective(dense, blocks, offsets, partial, 0.3, weights),
        PartialLabelObjective(plain, csr, offsets, partial, 0.3, weights),
        dense.weights(named), plain.weights(named))


def _segment_partial(labels, offsets, n_labels, max_lengths, rng):
    """Segment codes of the gold labels, and PartialLabels of a random mask of segment labels."""
    codes = segment_codes_of(labels, offsets, n_labels, max_lengths)
    partial = _partial(labels, _random_mask(rng, labels, n_labels), offsets)
    # the fully labelled sequences' targets are their segment codes
    return codes, PartialLabels(partial.classes, codes, partial.allowed, partial.kinds)


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("chunk", [3, 1 << 16])
@pytest.mark.parametrize("weighted", [False, True])
def test_constrained_semimarkov_equals_the_csr_route(order, seed, chunk, weighted,
                                                     monkeypatch):
    monkeypatch.setattr(dense_module, "CHUNK_TOKENS", chunk)
    X, offsets, labels, n_labels = _problem(seed)
    max_lengths = np.array([3, 1, 2], dtype=np.int64)
    rng = np.random.default_rng(seed + 100)
    codes, partial = _segment_partial(labels, offsets, n_labels, max_lengths, rng)
    blocks = FeatureArrays.of_sequences(X, keep_dense=True)
    csr = FeatureArrays.of_sequences(X)
    plain = semimarkov_structure(csr, offsets, codes, max_lengths, order)
    dense = DenseSemiMarkovStructure(semimarkov_structure(blocks, offsets, codes, max_lengths,
                                                          order), X.n_dense)
    _assert_same_partial_objective(dense, plain, blocks, csr, offsets, partial,
                                   _sequence_weights(weighted, offsets, seed), rng)


@pytest.mark.parametrize("kind", ["tree", 2, "semi-markov 2"])
def test_a_float32_block_is_close_to_the_float64_csr_route(kind):
    """float32 products: the relative error of float32's precision, not more."""
    X, offsets, labels, n_classes = _problem(4, dtype=np.float32)
    rng = np.random.default_rng(9)
    blocks = FeatureArrays.of_sequences(X, keep_dense=True)
    csr = FeatureArrays.of_sequences(X)  # float32 values read exactly as float64
    if kind == "semi-markov 2":
        max_lengths = np.array([3, 2, 2], dtype=np.int64)
        labels, partial = _segment_partial(labels, offsets, n_classes, max_lengths, rng)
        plain = semimarkov_structure(csr, offsets, labels, max_lengths, 2)
        dense = DenseSemiMarkovStructure(
            semimarkov_structure(blocks, offsets, labels, max_lengths, 2), X.n_dense)
    else:
        if kind == "tree":
            X = _with_parents(X, offsets, 4)
            blocks = FeatureArrays.of_sequences(X, keep_dense=True)
            csr = FeatureArrays.of_sequences(X)
        partial = _partial(labels, _random_mask(rng, labels, n_classes), offsets)
        plain = _chain_structure(kind, csr, offsets, labels, n_classes)
        dense = DenseChainStructure(_chain_structure(kind, blocks, offsets, labels, n_classes),
                                    X.n_dense)
    assert blocks.dense.dtype == np.float32
    named = plain.coefficients(rng.normal(size=plain.n_parameters) * 0.5)
    _assert_same_objective(
        dense, plain, PartialLabelObjective(dense, blocks, offsets, partial, 0.3),
        PartialLabelObjective(plain, csr, offsets, partial, 0.3),
        dense.weights(named), plain.weights(named), rtol=1e-5, atol=1e-5)
