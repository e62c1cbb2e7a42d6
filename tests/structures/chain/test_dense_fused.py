"""The fused order-1 kernel with dense unary scores against the chunked route and the CSR route.

An order-1 chain with a dense block adds ``X_dense @ W.T`` to the fused
kernel's unary scores and reads the token marginals back from it
(:mod:`skcrf.structures.chain.dense`). Same values, three ways: the fused
dense route, the chunked unfused dense route (``fused=False``) and the block
as CSR columns; fully labelled and with partial labels; large scores push
sequences onto the exact (log-space) route and, with partial labels, back to
the caller.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf import SequenceMatrix
from skcrf.features.arrays import FeatureArrays
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.learning import partial as partial_module
from skcrf.learning.partial import (ConstrainedTerms, dense_difference_terms,
                                    fused_dense_difference_terms)
from skcrf.structures._parameters import StatePairs
from skcrf.structures.chain.dense import DenseChainStructure
from skcrf.structures.chain.order1 import ChainStructure
from tests._threads import assert_same_for_one_and_two_threads, needs_two_threads
from tests.learning.test_partial import _random_mask


def _problem(seed, n_sequences=30, n_classes=4, n_sparse=6, n_dense=5, binary=False):
    """Random sequences whose gold labels keep to :func:`_chain`'s forbidden moves."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 9, size=n_sequences)
    lengths[0] = max(lengths[0], 1)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    matrix = sp.random(n_tokens, n_sparse, density=0.4, format="csr", random_state=seed)
    matrix.data = np.ones(matrix.nnz) if binary else rng.normal(size=matrix.nnz)
    dense = rng.normal(size=(n_tokens, n_dense))
    labels = rng.integers(0, n_classes, size=n_tokens)
    first = np.zeros(n_tokens, dtype=bool)
    first[offsets[:-1][lengths > 0]] = True
    for t in range(n_tokens):  # 3 may start and follow anything
        if (first[t] and labels[t] == 2) or (not first[t] and labels[t - 1] == 0
                                             and labels[t] == 1):
            labels[t] = 3
    return SequenceMatrix(matrix, offsets, dense=dense), offsets, labels, n_classes, rng


def _chain(n_sparse, n_classes, forbid, boundary):
    chain = ChainStructure(n_classes, StatePairs.every(n_sparse, n_classes),
                           boundary_weights=boundary)
    if forbid:  # -inf potentials: the kernels track which labels a path can reach
        chain.transition_mask[0, 1] = -np.inf
        chain.start_mask[2] = -np.inf
    return chain


def _csr_weights(structure, csr_chain, w):
    """``w`` of the dense structure as the weights of ``csr_chain`` (the block as columns)."""
    w_chain, W = structure._split(w)
    blocks = structure.chain.layout.views(w_chain)
    w_csr = csr_chain.layout.zeros()
    csr_blocks = csr_chain.layout.views(w_csr)
    state = np.hstack([structure.chain.state_pairs.to_dense(blocks["state"]), W])  # (C, F)
    csr_blocks["state"][:] = csr_chain.state_pairs.from_dense(state)
    for name in ("transitions", "start", "end"):
        csr_blocks[name][:] = blocks[name]
    return w_csr


def _as_dense_layout(structure, csr_chain, grad_csr):
    """A gradient of ``csr_chain`` in the dense structure's layout."""
    blocks = csr_chain.layout.views(grad_csr)
    state = csr_chain.state_pairs.to_dense(blocks["state"])
    n_sparse = structure.chain.state_pairs.n_features
    chain = structure.chain.layout.zeros()
    chain_blocks = structure.chain.layout.views(chain)
    chain_blocks["state"][:] = structure.chain.state_pairs.from_dense(state[:, :n_sparse])
    for name in ("transitions", "start", "end"):
        chain_blocks[name][:] = blocks[name]
    return np.concatenate([chain, state[:, n_sparse:].ravel()])


def _routes(X, n_classes, forbid=True, boundary=True):
    """The dense structure and its features; the same model with the block as CSR columns."""
    blocks = FeatureArrays.of_sequences(X, keep_dense=True)
    structure = DenseChainStructure(_chain(X.n_features, n_classes, forbid, boundary),
                                    X.n_dense)
    csr_chain = _chain(X.n_features + X.n_dense, n_classes, forbid, boundary)
    return structure, blocks, csr_chain, FeatureArrays.of_sequences(X)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("forbid", [False, True])
@pytest.mark.parametrize("boundary", [True, False])
@pytest.mark.parametrize("scale", [0.5, 300.0])
def test_fused_dense_route_equals_the_chunked_and_csr_routes(seed, binary, forbid, boundary,
                                                             scale):
    X, offsets, labels, n_classes, rng = _problem(seed, binary=binary)
    structure, blocks, csr_chain, csr = _routes(X, n_classes, forbid, boundary)
    assert structure.takes_fused
    # scale 300: scores past the scaled pass's range, so the exact route runs too
    w = rng.normal(size=structure.n_parameters) * scale
    fused = NegativeLogLikelihood(structure, blocks, offsets, labels, 0.3)
    chunked = NegativeLogLikelihood(structure, blocks, offsets, labels, 0.3, fused=False)
    plain = NegativeLogLikelihood(csr_chain, csr, offsets, labels, 0.3)
    loss, grad = fused(w)
    loss_chunked, grad_chunked = chunked(w)
    loss_csr, grad_csr = plain(_csr_weights(structure, csr_chain, w))
    tolerance = 1e-9 * max(1.0, abs(loss_csr))
    assert abs(loss - loss_chunked) <= tolerance
    assert abs(loss - loss_csr) <= tolerance
    np.testing.assert_allclose(grad, grad_chunked, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(grad, _as_dense_layout(structure, csr_chain, grad_csr),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("forbid", [False, True])
@pytest.mark.parametrize("boundary", [True, False])
@pytest.mark.parametrize("scale", [0.5, 300.0])
def test_fused_dense_partial_labels_equal_the_chunked_and_csr_routes(seed, forbid, boundary,
                                                                     scale, monkeypatch):
    X, offsets, labels, n_classes, rng = _problem(seed)
    structure, blocks, csr_chain, csr = _routes(X, n_classes, forbid, boundary)
    allowed = _random_mask(rng, labels, n_classes)
    mask = np.where(allowed, 0.0, -np.inf)
    w = rng.normal(size=structure.n_parameters) * scale
    chunked_difference, chunked = dense_difference_terms(structure, blocks, offsets, mask)(w)
    left = []  # the sequences the masked kernel leaves to the log-space route

    def spy(structure, features, offsets, mask):
        left.append(offsets.shape[0] - 1)
        return dense_difference_terms(structure, features, offsets, mask)

    monkeypatch.setattr(partial_module, "dense_difference_terms", spy)
    difference, expected = fused_dense_difference_terms(structure, blocks, offsets, mask)(w)
    # scale 300: scores past the scaled pass's range, so some sequences are left
    assert bool(left) == (scale > 1)
    np.testing.assert_allclose(difference, chunked_difference, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(expected, chunked, rtol=1e-9, atol=1e-9)
    loss, grad = ConstrainedTerms(structure, blocks, offsets, allowed)(w)
    loss_csr, grad_csr = ConstrainedTerms(csr_chain, csr, offsets, allowed)(
        _csr_weights(structure, csr_chain, w))
    assert abs(loss - loss_csr) <= 1e-9 * max(1.0, abs(loss_csr))
    np.testing.assert_allclose(grad, _as_dense_layout(structure, csr_chain, grad_csr),
                               rtol=1e-9, atol=1e-9)


@needs_two_threads
@pytest.mark.parametrize("partial", [False, True])
def test_fused_dense_route_is_the_same_for_one_and_two_threads(partial):
    X, offsets, labels, n_classes, rng = _problem(11, n_sequences=1500)
    structure, blocks, _, _ = _routes(X, n_classes)
    w = rng.normal(size=structure.n_parameters)
    if partial:
        mask = np.where(_random_mask(rng, labels, n_classes), 0.0, -np.inf)
        terms = fused_dense_difference_terms(structure, blocks, offsets, mask)
    else:
        terms = structure.expectation_terms(blocks, offsets)
    assert_same_for_one_and_two_threads(lambda: terms(w))
