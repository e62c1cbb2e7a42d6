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
from skcrf.structures.chain import dense as dense_module
from skcrf.structures.chain.dense import DenseChainStructure, DenseProducts, repeated_rows
from skcrf.structures.chain.order1 import ChainStructure
from tests._threads import assert_same_for_one_and_two_threads, needs_two_threads
from tests.learning.test_partial import _random_mask


def _problem(seed, n_sequences=30, n_classes=4, n_sparse=6, n_dense=5, binary=False,
             repeated=False):
    """Random sequences whose gold labels keep to :func:`_chain`'s forbidden moves.

    With ``repeated``, the dense rows are looked up in a table of 7 (as word
    vectors are), so the products run over the table's rows
    (:class:`~skcrf.structures.chain.dense.DenseProducts`).
    """
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 9, size=n_sequences)
    lengths[0] = max(lengths[0], 1)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    matrix = sp.random(n_tokens, n_sparse, density=0.4, format="csr", random_state=seed)
    matrix.data = np.ones(matrix.nnz) if binary else rng.normal(size=matrix.nnz)
    dense = rng.normal(size=(n_tokens, n_dense))
    if repeated:
        dense = dense[:7][rng.integers(0, 7, size=n_tokens)]
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
@pytest.mark.parametrize("repeated", [False, True])
def test_fused_dense_route_equals_the_chunked_and_csr_routes(seed, binary, forbid, boundary,
                                                             scale, repeated):
    X, offsets, labels, n_classes, rng = _problem(seed, binary=binary, repeated=repeated)
    structure, blocks, csr_chain, csr = _routes(X, n_classes, forbid, boundary)
    assert structure.takes_fused
    assert (DenseProducts(blocks.dense).table is not None) == repeated
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
@pytest.mark.parametrize("repeated", [False, True])
def test_fused_dense_partial_labels_equal_the_chunked_and_csr_routes(seed, forbid, boundary,
                                                                     scale, repeated,
                                                                     monkeypatch):
    X, offsets, labels, n_classes, rng = _problem(seed, repeated=repeated)
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
@pytest.mark.parametrize("repeated", [False, True])
def test_fused_dense_route_is_the_same_for_one_and_two_threads(partial, repeated):
    X, offsets, labels, n_classes, rng = _problem(11, n_sequences=1500, repeated=repeated)
    structure, blocks, _, _ = _routes(X, n_classes)
    w = rng.normal(size=structure.n_parameters)
    if partial:
        mask = np.where(_random_mask(rng, labels, n_classes), 0.0, -np.inf)
        terms = fused_dense_difference_terms(structure, blocks, offsets, mask)
    else:
        terms = structure.expectation_terms(blocks, offsets)
    assert_same_for_one_and_two_threads(lambda: terms(w))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_repeated_rows_are_a_table_and_row_ids(dtype):
    rng = np.random.default_rng(3)
    table = rng.normal(size=(6, 4)).astype(dtype)
    dense = table[rng.integers(0, 6, size=40)]
    found, row_ids = repeated_rows(dense)
    assert found.dtype == dtype and found.shape[0] <= 6
    np.testing.assert_array_equal(found[row_ids], dense)
    # the same products as the whole block's, to rounding
    W = rng.normal(size=(3, 4))
    marginals = rng.random((40, 3))
    products, plain = DenseProducts(dense), DenseProducts(dense)
    plain.table = None
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(products.scores(W, np.empty((40, 3))),
                               plain.scores(W, np.empty((40, 3))), rtol=rtol)
    np.testing.assert_allclose(products.gradient(marginals), plain.gradient(marginals),
                               rtol=rtol)


def test_many_distinct_float32_rows_are_found():
    # 20k distinct float32 rows: their float32 hashes would collide
    table = np.random.default_rng(6).normal(size=(20_000, 100)).astype(np.float32)
    table /= np.linalg.norm(table, axis=1, keepdims=True)
    dense = table[np.r_[np.arange(20_000), np.arange(20_000)]]
    found, row_ids = repeated_rows(dense)
    assert found.shape[0] == 20_000
    np.testing.assert_array_equal(found[row_ids], dense)


def test_blocks_without_enough_repeats_are_taken_whole():
    rng = np.random.default_rng(4)
    assert repeated_rows(rng.normal(size=(40, 4))) is None
    half = rng.normal(size=(20, 4))[np.r_[np.arange(20), np.arange(20)]]  # 20 distinct of 40
    assert repeated_rows(half) is not None
    assert repeated_rows(half, max_share=0.4) is None
    assert repeated_rows(np.empty((0, 4))) is None and repeated_rows(np.empty((5, 0))) is None


def test_rows_that_share_a_hash_are_taken_whole(monkeypatch):
    rng = np.random.default_rng(5)
    dense = rng.normal(size=(3, 4))[rng.integers(0, 3, size=30)]
    monkeypatch.setattr(dense_module, "row_hash", lambda block: np.zeros(block.shape[0]))
    assert repeated_rows(dense) is None
    assert DenseProducts(dense).table is None


@pytest.mark.parametrize("forbid", [False, True])
@pytest.mark.parametrize("dense_scale", [0.5, 300.0])
def test_dense_scores_ride_the_products_route(forbid, dense_scale, monkeypatch):
    """Binary features and moderate weights: every sequence takes the products route
    (lanes, or one at a time with forbidden moves), dense scores multiplied in; with
    large dense weights the products pass fails its checks and the summed and exact
    routes take over."""
    from skcrf.structures.chain import _fused

    X, offsets, labels, n_classes, rng = _problem(7, binary=True)
    structure, blocks, csr_chain, csr = _routes(X, n_classes, forbid, True)
    w = rng.normal(size=structure.n_parameters) * 0.5
    w[structure.chain.n_parameters:] *= dense_scale / 0.5
    ran = []
    run_chunks = _fused.run_chunks

    def spy(kernel, *args):
        ran.append(kernel.__name__ if hasattr(kernel, "__name__") else kernel.py_func.__name__)
        return run_chunks(kernel, *args)

    monkeypatch.setattr(_fused, "run_chunks", spy)
    loss, grad = NegativeLogLikelihood(structure, blocks, offsets, labels, 0.3)(w)
    first = "_product_chunks" if forbid else "_lane_chunks"
    assert ran == [first] if dense_scale < 1 else ran[0] == first and len(ran) > 1
    monkeypatch.setattr(_fused, "run_chunks", run_chunks)
    loss_csr, grad_csr = NegativeLogLikelihood(csr_chain, csr, offsets, labels, 0.3)(
        _csr_weights(structure, csr_chain, w))
    assert abs(loss - loss_csr) <= 1e-9 * max(1.0, abs(loss_csr))
    np.testing.assert_allclose(grad, _as_dense_layout(structure, csr_chain, grad_csr),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dense_scale", [0.5, 300.0])
def test_dense_scores_ride_the_products_route_with_partial_labels(dense_scale, monkeypatch):
    """The masked kernel's products route takes the dense scores too; with large dense
    weights the sequences it cannot do are left to the log-space route."""
    X, offsets, labels, n_classes, rng = _problem(8, binary=True)
    structure, blocks, _, _ = _routes(X, n_classes, forbid=True, boundary=True)
    mask = np.where(_random_mask(rng, labels, n_classes), 0.0, -np.inf)
    w = rng.normal(size=structure.n_parameters) * 0.5
    w[structure.chain.n_parameters:] *= dense_scale / 0.5
    chunked_difference, chunked = dense_difference_terms(structure, blocks, offsets, mask)(w)
    left = []

    def spy(structure, features, offsets, mask):
        left.append(offsets.shape[0] - 1)
        return dense_difference_terms(structure, features, offsets, mask)

    monkeypatch.setattr(partial_module, "dense_difference_terms", spy)
    difference, expected = fused_dense_difference_terms(structure, blocks, offsets, mask)(w)
    assert bool(left) == (dense_scale > 1)
    np.testing.assert_allclose(difference, chunked_difference, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(expected, chunked, rtol=1e-9, atol=1e-9)
