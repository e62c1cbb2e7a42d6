"""Partial labels on a chain with a dense block: the constrained objective against brute force."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import approx_fprime

from skcrf import SequenceMatrix
from skcrf.features.arrays import FeatureArrays
from skcrf.learning.partial import PartialLabelObjective
from skcrf.structures._parameters import StatePairs
from skcrf.structures.chain.dense import DenseChainStructure
from skcrf.structures.chain.order1 import ChainStructure
from tests.learning.test_partial import _partial, _problem, _random_mask, _brute_force_loss


@pytest.mark.parametrize("seed", [0, 1])
def test_loss_and_gradient_match_the_chain_of_the_same_columns(seed):
    X, offsets, gold, n_classes, rng = _problem(seed)
    n_dense = 3
    block = rng.normal(size=(X.shape[0], n_dense))
    allowed = _random_mask(rng, gold, n_classes)
    partial = _partial(gold, allowed, offsets)
    features = FeatureArrays.of_sequences(SequenceMatrix(X, offsets, dense=block),
                                          keep_dense=True)
    chain = ChainStructure(n_classes, StatePairs.every(X.shape[1], n_classes))
    chain.transition_mask[0, 1] = -np.inf
    structure = DenseChainStructure(chain, n_dense)
    objective = PartialLabelObjective(structure, features, offsets, partial, l2=0.3)
    w = rng.normal(scale=0.7, size=structure.n_parameters)
    loss, grad = objective(w)
    # the same model with the block as CSR columns, every (column, class) pair weighted
    wide = sp.hstack([X, sp.csr_matrix(block)]).tocsr()
    csr_chain = ChainStructure(n_classes, StatePairs.every(wide.shape[1], n_classes))
    csr_chain.transition_mask[0, 1] = -np.inf
    w_chain, W = structure._split(w)
    blocks = chain.layout.views(w_chain)
    pair_weights = np.hstack([chain.state_pairs.to_dense(blocks["state"]), W])  # (C, F)
    w_csr = csr_chain.layout.zeros()
    csr_blocks = csr_chain.layout.views(w_csr)
    csr_blocks["state"][:] = pair_weights.T.ravel()
    for name in ("transitions", "start", "end"):
        csr_blocks[name][:] = blocks[name]
    expected = _brute_force_loss(csr_chain, wide, offsets, allowed, w_csr, 0.0)
    np.testing.assert_allclose(loss - 0.5 * 0.3 * (w @ w), expected, rtol=1e-10)
    numeric = approx_fprime(w, lambda v: objective(v)[0], 1e-6)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)
