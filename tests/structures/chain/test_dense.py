"""The dense route of the chain's objective against the same values as CSR and finite differences."""

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf import SequenceMatrix
from skcrf.features.arrays import FeatureArrays
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures.chain import dense as dense_module
from skcrf.structures.chain.dense import DenseChainStructure
from skcrf.structures.chain.order1 import ChainStructure


def _problem(seed, n_classes=3, n_sparse=5, n_dense=4, dtype=np.float64):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 7, size=12)
    lengths[0] = max(lengths[0], 1)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n_tokens = int(offsets[-1])
    matrix = sp.random(n_tokens, n_sparse, density=0.4, format="csr", random_state=seed)
    matrix.data = rng.normal(size=matrix.nnz)
    dense = rng.normal(size=(n_tokens, n_dense)).astype(dtype)
    labels = rng.integers(0, n_classes, size=n_tokens)
    X = SequenceMatrix(matrix, offsets, dense=dense)
    return X, offsets, labels, n_classes


def _objectives(X, offsets, labels, n_classes, l2=0.3, weights=None):
    blocks = FeatureArrays.of_sequences(X, keep_dense=True)
    chain = ChainStructure.for_training(blocks, offsets, labels, n_classes,
                                        all_possible_states=True)
    dense = DenseChainStructure(chain, X.n_dense)
    csr = FeatureArrays.of_sequences(X)  # the dense values as CSR columns
    plain = ChainStructure.for_training(csr, offsets, labels, n_classes,
                                        all_possible_states=True)
    return (NegativeLogLikelihood(dense, blocks, offsets, labels, l2,
                                  sequence_weights=weights),
            NegativeLogLikelihood(plain, csr, offsets, labels, l2, sequence_weights=weights))


def _random_coefficients(rng, n_classes, n_columns):
    return {"coef": rng.normal(size=(n_classes, n_columns)),
            "transitions": rng.normal(size=(n_classes, n_classes)),
            "start": rng.normal(size=n_classes), "end": rng.normal(size=n_classes)}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("chunk", [3, 1 << 16])
@pytest.mark.parametrize("weighted", [False, True])
def test_dense_route_equals_the_csr_route(seed, chunk, weighted, monkeypatch):
    monkeypatch.setattr(dense_module, "CHUNK_TOKENS", chunk)  # many chunks, or one
    X, offsets, labels, n_classes = _problem(seed)
    weights = (np.random.default_rng(seed).integers(0, 3, size=len(X)).astype(float)
               if weighted else None)
    dense, csr = _objectives(X, offsets, labels, n_classes, weights=weights)
    named = _random_coefficients(np.random.default_rng(seed + 100), n_classes,
                                 X.n_features + X.n_dense)
    w_dense, w_csr = dense.structure.weights(named), csr.structure.weights(named)
    loss_dense, grad_dense = dense(w_dense)
    loss_csr, grad_csr = csr(w_csr)
    assert loss_dense == pytest.approx(loss_csr, rel=1e-12, abs=1e-10)
    by_name_dense = dense.structure.coefficients(grad_dense)
    by_name_csr = csr.structure.coefficients(grad_csr)
    for name in ("coef", "transitions", "start", "end"):
        np.testing.assert_allclose(by_name_dense[name], by_name_csr[name], rtol=0, atol=1e-10)


def test_dense_gradient_against_finite_differences():
    X, offsets, labels, n_classes = _problem(7)
    dense, _ = _objectives(X, offsets, labels, n_classes)
    rng = np.random.default_rng(1)
    w = rng.normal(size=dense.n_parameters) * 0.5
    _, grad = dense(w)
    step = 1e-6
    for i in rng.choice(dense.n_parameters, size=25, replace=False):
        e = np.zeros_like(w)
        e[i] = step
        numeric = (dense(w + e)[0] - dense(w - e)[0]) / (2 * step)
        assert numeric == pytest.approx(grad[i], rel=1e-5, abs=1e-6)


def test_float32_block_is_close_to_float64():
    X64, offsets, labels, n_classes = _problem(3)
    X32 = SequenceMatrix(X64.matrix, offsets, dense=X64.dense.astype(np.float32))
    exact, _ = _objectives(X32.__class__(X64.matrix, offsets,
                                         dense=X32.dense.astype(np.float64)),
                           offsets, labels, n_classes)
    single, _ = _objectives(X32, offsets, labels, n_classes)
    w = np.random.default_rng(0).normal(size=exact.n_parameters)
    loss64, grad64 = exact(w)
    loss32, grad32 = single(w)
    # float32 products: relative error of float32's precision, not more
    assert loss32 == pytest.approx(loss64, rel=1e-5)
    np.testing.assert_allclose(grad32, grad64, rtol=1e-4, atol=1e-4)


def test_coefficients_round_trip():
    X, offsets, labels, n_classes = _problem(2)
    dense, _ = _objectives(X, offsets, labels, n_classes)
    w = np.random.default_rng(5).normal(size=dense.n_parameters)
    named = dense.structure.coefficients(w)
    assert named["coef"].shape == (n_classes, X.n_features + X.n_dense)
    np.testing.assert_array_equal(dense.structure.weights(named), w)


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("chunk", [3, 1 << 16])
def test_dense_route_of_higher_orders_equals_the_csr_route(order, seed, chunk, monkeypatch):
    from skcrf.structures.patterns.chain import PatternChainStructure

    monkeypatch.setattr(dense_module, "CHUNK_TOKENS", chunk)
    X, offsets, labels, n_classes = _problem(seed)
    blocks = FeatureArrays.of_sequences(X, keep_dense=True)
    csr = FeatureArrays.of_sequences(X)
    build = dict(all_possible_states=True, all_possible_transitions=True)
    dense = NegativeLogLikelihood(
        DenseChainStructure(PatternChainStructure.for_training(
            blocks, offsets, labels, n_classes, order, **build), X.n_dense),
        blocks, offsets, labels, 0.3)
    plain = NegativeLogLikelihood(
        PatternChainStructure.for_training(csr, offsets, labels, n_classes, order, **build),
        csr, offsets, labels, 0.3)
    rng = np.random.default_rng(seed + 100)
    w_csr = rng.normal(size=plain.n_parameters) * 0.5
    named = plain.structure.coefficients(w_csr)
    w_dense = dense.structure.weights(named)
    np.testing.assert_array_equal(dense.structure.coefficients(w_dense)["coef"],
                                  named["coef"])
    loss_dense, grad_dense = dense(w_dense)
    loss_csr, grad_csr = plain(w_csr)
    assert loss_dense == pytest.approx(loss_csr, rel=1e-12, abs=1e-10)
    by_name_dense = dense.structure.coefficients(grad_dense)
    by_name_csr = plain.structure.coefficients(grad_csr)
    for name in ("coef", "transitions", "start", "end", "pattern_coef"):
        np.testing.assert_allclose(by_name_dense[name], by_name_csr[name], rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("chunk", [3, 1 << 16])
def test_dense_route_of_trees_equals_the_csr_route(seed, chunk, monkeypatch):
    from skcrf.structures.tree.structure import TreeStructure

    monkeypatch.setattr(dense_module, "CHUNK_TOKENS", chunk)
    X, offsets, labels, n_classes = _problem(seed)
    rng = np.random.default_rng(seed + 50)
    # random forests: each token's parent an earlier token of its sequence, or none
    parents = np.concatenate([[rng.integers(-1, t) if t else -1 for t in range(n)]
                              for n in np.diff(offsets)]).astype(np.int64)
    X = SequenceMatrix(X.matrix, offsets, parents=parents, dense=X.dense)
    blocks = FeatureArrays.of_sequences(X, keep_dense=True)
    csr = FeatureArrays.of_sequences(X)
    dense = NegativeLogLikelihood(
        DenseChainStructure(TreeStructure.for_training(blocks, labels, n_classes,
                                                       all_possible_states=True), X.n_dense),
        blocks, offsets, labels, 0.3)
    plain = NegativeLogLikelihood(
        TreeStructure.for_training(csr, labels, n_classes, all_possible_states=True),
        csr, offsets, labels, 0.3)
    named = plain.structure.coefficients(
        np.random.default_rng(seed + 100).normal(size=plain.n_parameters))
    loss_dense, grad_dense = dense(dense.structure.weights(named))
    loss_csr, grad_csr = plain(plain.structure.weights(named))
    assert loss_dense == pytest.approx(loss_csr, rel=1e-12, abs=1e-10)
    by_name_dense = dense.structure.coefficients(grad_dense)
    by_name_csr = plain.structure.coefficients(grad_csr)
    for name in ("coef", "transitions", "root"):
        np.testing.assert_allclose(by_name_dense[name], by_name_csr[name], rtol=0, atol=1e-9)
