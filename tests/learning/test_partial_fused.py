"""The masked fused kernel of partially labelled chains against the unfused masked path.

``chain_difference_terms`` (two forward-backwards over the potentials, one
scatter) is itself checked against enumeration in tests/learning/test_partial.py;
here the fused kernel must give its numbers on both of its routes (products
of exponentiated weights for binary features, summed scores otherwise), hand
back what it cannot do in scaled arithmetic, and not depend on the threads.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf.features.arrays import as_feature_arrays
from skcrf.learning.partial import chain_difference_terms, fused_difference_terms
from skcrf.structures._parameters import StatePairs
from skcrf.structures.chain._fused_masked import MaskedFusedChainTerms
from skcrf.structures.chain.order1 import ChainStructure
from tests._threads import results_per_thread_count
from tests.learning.test_partial import _brute_force_loss


def _masked_problem(seed, binary, n_sequences=30, n_features=8, n_classes=4, max_length=7):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_length + 1, size=n_sequences)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    present = rng.random((n_tokens, n_features)) < 0.4
    X = sp.csr_matrix(present * (1.0 if binary else rng.normal(size=present.shape)))
    gold = rng.integers(0, n_classes, size=n_tokens)
    allowed = np.zeros((n_tokens, n_classes), dtype=bool)
    allowed[np.arange(n_tokens), gold] = True
    hidden = rng.random(n_tokens) < 0.5
    allowed[hidden] |= rng.random((int(hidden.sum()), n_classes)) < 0.5
    structure = ChainStructure(n_classes, StatePairs.every(n_features, n_classes))
    return X, offsets, gold, allowed, structure, rng


def _both(structure, X, offsets, allowed, w):
    features = as_feature_arrays(X)
    mask = np.where(allowed, 0.0, -np.inf)
    fused = fused_difference_terms(structure, features, offsets, mask)(w)
    unfused = chain_difference_terms(structure, features, offsets, mask)(w)
    return fused, unfused


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("forbid", [False, True])
def test_fused_difference_matches_the_unfused_masked_path(binary, forbid):
    X, offsets, gold, allowed, structure, rng = _masked_problem(int(binary) + 2 * forbid,
                                                                binary)
    if forbid:
        # -inf potentials the gold labels may break: some sequences become
        # infeasible (+inf difference), the others track reachability
        structure.transition_mask[0, 1] = -np.inf
        structure.start_mask[2] = -np.inf
    w = rng.normal(scale=0.5, size=structure.n_parameters)
    (fused_z, fused_grad), (unfused_z, unfused_grad) = _both(structure, X, offsets, allowed, w)
    np.testing.assert_allclose(fused_z, unfused_z, rtol=1e-10, atol=1e-12)
    feasible = np.isfinite(unfused_z)
    if not feasible.all():
        return  # the gradient is not finite either way (the loss is inf)
    np.testing.assert_allclose(fused_grad, unfused_grad, rtol=1e-9, atol=1e-10)


def test_fused_kernel_does_the_common_sequences_itself():
    X, offsets, gold, allowed, structure, rng = _masked_problem(4, True)
    w = rng.normal(scale=0.5, size=structure.n_parameters)
    blocks = structure.layout.views(w)
    fused = MaskedFusedChainTerms(as_feature_arrays(X), offsets, structure.state_pairs,
                                  structure.n_classes, np.where(allowed, 0.0, -np.inf))
    *_, redo = fused(blocks["state"], *structure.masked_transitions(blocks))
    assert not redo.any()


def test_sequences_out_of_scaled_range_go_to_the_log_space_route():
    # weights so large that the scaled passes underflow: the kernel hands the
    # sequences back and the log-space route gives the enumerated loss
    X, offsets, gold, allowed, structure, rng = _masked_problem(5, False, n_sequences=6,
                                                                max_length=4)
    w = rng.normal(scale=400.0, size=structure.n_parameters)
    blocks = structure.layout.views(w)
    fused = MaskedFusedChainTerms(as_feature_arrays(X), offsets, structure.state_pairs,
                                  structure.n_classes, np.where(allowed, 0.0, -np.inf))
    *_, redo = fused(blocks["state"], *structure.masked_transitions(blocks))
    assert redo.any()
    (fused_z, fused_grad), (unfused_z, unfused_grad) = _both(structure, X, offsets, allowed, w)
    np.testing.assert_allclose(fused_z, unfused_z, rtol=1e-10)
    np.testing.assert_allclose(fused_grad, unfused_grad, rtol=1e-9, atol=1e-9)
    informative = np.add.reduceat(~allowed.all(axis=1), offsets[:-1]) > 0
    np.testing.assert_allclose(fused_z[informative].sum(),
                               _brute_force_loss(structure, X, offsets, allowed, w, 0.0),
                               rtol=1e-10)


def test_fused_difference_does_not_depend_on_the_thread_count():
    X, offsets, gold, allowed, structure, rng = _masked_problem(6, True, n_sequences=200)
    w = rng.normal(scale=0.5, size=structure.n_parameters)
    terms = fused_difference_terms(structure, as_feature_arrays(X), offsets,
                                   np.where(allowed, 0.0, -np.inf))
    (z1, grad1), (z2, grad2) = results_per_thread_count(lambda: terms(w))
    np.testing.assert_array_equal(z1, z2)
    np.testing.assert_array_equal(grad1, grad2)


def test_fixed_boundary_blocks_get_no_gradient():
    X, offsets, gold, allowed, structure, rng = _masked_problem(7, True)
    structure.boundary_weights = False
    w = rng.normal(scale=0.5, size=structure.n_parameters)
    _, grad = fused_difference_terms(structure, as_feature_arrays(X), offsets,
                                     np.where(allowed, 0.0, -np.inf))(w)
    blocks = structure.layout.views(grad)
    assert (blocks["start"] == 0).all() and (blocks["end"] == 0).all()
    assert np.abs(blocks["state"]).max() > 0
