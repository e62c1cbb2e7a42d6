"""The chain structure's objective against brute force, and the identities between chains.

Orders 1 and 2 and observation-conditioned transitions: the loss equals the
enumerated negative log-likelihood, the gradient equals finite differences,
the fused kernel equals the unfused path, and the simpler chain is the special
case of the richer one.
"""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import approx_fprime
from scipy.special import logsumexp

from skcrf.features.arrays import as_feature_arrays
from skcrf.structures._parameters import StatePairs
from skcrf.structures.chain.order1 import ChainStructure, edge_label_ids
from tests._chain_loss import chain_loss
from tests._structure_checks import (assert_fused_equals_unfused,
                                     assert_gradient_matches_finite_differences,
                                     assert_loss_same_for_one_and_two_threads,
                                     assert_zero_extra_weights_give_the_simpler, chain_problem)
from tests._threads import needs_two_threads


def _problem(seed, n_sequences=5, n_features=6, n_classes=3, max_length=4, binary=False):
    return chain_problem(seed, n_sequences, n_features, n_classes, max_length, binary)


def _structure(X, offsets, label_ids, n_classes, order=1, transition_columns=None,
               every=False):
    return ChainStructure.for_training(as_feature_arrays(X), offsets, label_ids, n_classes,
                                       order=order, all_possible_states=every,
                                       transition_columns=transition_columns)


def _dense_weights(structure, w, n_features):
    """Dense (state (C, F), edge (F, C, C) or None, transitions, trigram or None, start, end)."""
    blocks = structure.layout.views(w)
    C = structure.n_classes
    state = structure.state_pairs.to_dense(blocks["state"])
    edge = None
    if structure.edge_pairs is not None:
        edge = structure.edge_pairs.to_dense(blocks["edge"]).T.reshape(n_features, C, C)
    trigram = blocks["trigram"] if "trigram" in structure.layout else None
    return state, edge, blocks["transitions"], trigram, blocks["start"], blocks["end"]


def _path_score(x, path, state, edge, transitions, trigram, start, end):
    """Score of one labelling of one sequence (x: dense (n, F))."""
    score = start[path[0]] + end[path[-1]]
    for t, label in enumerate(path):
        score += x[t] @ state[label]
        if t >= 1:
            score += transitions[path[t - 1], label]
            if edge is not None:
                score += x[t] @ edge[:, path[t - 1], label]
        if t >= 2 and trigram is not None:
            score += trigram[path[t - 2], path[t - 1], label]
    return score


def _brute_force_loss(structure, X, offsets, label_ids, w, l2):
    weights = _dense_weights(structure, w, X.shape[1])
    dense = X.toarray()
    total = 0.5 * l2 * (w @ w)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if hi == lo:
            continue
        x = dense[lo:hi]
        paths = itertools.product(range(structure.n_classes), repeat=hi - lo)
        log_z = logsumexp([_path_score(x, p, *weights) for p in paths])
        total += log_z - _path_score(x, label_ids[lo:hi], *weights)
    return total


def _loss(structure, X, offsets, label_ids, l2, fused=True):
    from skcrf.learning.objective import NegativeLogLikelihood

    return NegativeLogLikelihood(structure, as_feature_arrays(X), offsets, label_ids, l2,
                                 fused=fused)


VARIANTS = {
    "order1": dict(order=1),
    "order2": dict(order=2),
    "edges": dict(transition_columns=np.array([True, False, True, True, False, False])),
    "edges-every": dict(transition_columns=np.array([True, True, False, False, False, True]),
                        every=True),
}


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_loss_equals_brute_force(variant, binary):
    X, offsets, label_ids, n_classes = _problem(0, binary=binary)
    structure = _structure(X, offsets, label_ids, n_classes, **VARIANTS[variant])
    loss = _loss(structure, X, offsets, label_ids, l2=0.3)
    w = np.random.default_rng(1).normal(size=loss.n_parameters)
    expected = _brute_force_loss(structure, X, offsets, label_ids, w, 0.3)
    np.testing.assert_allclose(loss(w)[0], expected, rtol=1e-10)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_gradient_matches_finite_differences(variant):
    X, offsets, label_ids, n_classes = _problem(2)
    structure = _structure(X, offsets, label_ids, n_classes, **VARIANTS[variant])
    loss = _loss(structure, X, offsets, label_ids, l2=0.2)
    assert_gradient_matches_finite_differences(loss, seed=3)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("edges", [False, True])
def test_fused_kernel_equals_unfused_path(binary, edges):
    X, offsets, label_ids, n_classes = _problem(4, n_sequences=40, n_features=12,
                                                n_classes=4, max_length=9, binary=binary)
    columns = (np.arange(12) % 3 == 0) if edges else None
    structure = _structure(X, offsets, label_ids, n_classes, transition_columns=columns)
    fused = _loss(structure, X, offsets, label_ids, l2=0.1)
    unfused = _loss(structure, X, offsets, label_ids, l2=0.1, fused=False)
    # 40: extreme enough for the log-space fallback; 400: past the bound of the
    # exponentiated-weight route for binary features (PRODUCT_EXPONENT_BOUND)
    assert_fused_equals_unfused(fused, unfused, scales=(0.5, 40.0, 400.0), seed=5)


@pytest.mark.parametrize("seed, order, edges", [(6, 2, False), (8, 1, True)],
                         ids=["zero trigram weights", "zero edge weights"])
def test_zero_extra_weights_give_the_order_1_chain(seed, order, edges):
    X, offsets, label_ids, n_classes = _problem(seed, n_sequences=30, max_length=8)
    columns = np.ones(X.shape[1], dtype=bool) if edges else None
    assert_zero_extra_weights_give_the_simpler(
        _structure(X, offsets, label_ids, n_classes),
        _structure(X, offsets, label_ids, n_classes, order=order, transition_columns=columns),
        as_feature_arrays(X), as_feature_arrays(X), offsets, label_ids, seed=seed + 1)


def test_transition_features_with_all_zero_values_equal_plain_transitions():
    # the transition columns are stored but zero: whatever their weights, the
    # edge scores are the plain transitions, and their gradient is zero
    X, offsets, label_ids, n_classes = _problem(10, n_sequences=30, max_length=8)
    zero_column = sp.csr_matrix((np.zeros(X.shape[0]), np.zeros(X.shape[0], dtype=np.int32),
                                 np.arange(X.shape[0] + 1)), shape=(X.shape[0], 1))
    X_zero = sp.hstack([X, zero_column], format="csr")
    mask = np.zeros(X_zero.shape[1], dtype=bool)
    mask[-1] = True
    plain = _structure(X, offsets, label_ids, n_classes)
    edged = _structure(X_zero, offsets, label_ids, n_classes, transition_columns=mask)
    assert edged.edge_pairs.n_pairs > 0  # stored zeros count as occurrences
    loss_plain = _loss(plain, X, offsets, label_ids, l2=0.0)
    loss_edged = _loss(edged, X_zero, offsets, label_ids, l2=0.0)
    rng = np.random.default_rng(11)
    w_edged = rng.normal(size=loss_edged.n_parameters)
    w = plain.layout.zeros()
    for name in ("transitions", "start", "end"):
        plain.layout.view(w, name)[...] = edged.layout.view(w_edged, name)
    # the zero column has state pairs too (stored zeros are occurrences): the
    # plain chain takes the weights of the other columns' pairs
    dense_state = edged.state_pairs.to_dense(edged.layout.view(w_edged, "state"))
    pairs = plain.state_pairs
    plain.layout.view(w, "state")[:] = dense_state[pairs.labels, pairs.feature_of_pairs()]
    value, grad = loss_plain(w)
    value_e, grad_e = loss_edged(w_edged)
    np.testing.assert_allclose(value_e, value, rtol=1e-12)
    assert not edged.layout.view(grad_e, "edge").any()
    np.testing.assert_allclose(edged.layout.view(grad_e, "transitions"),
                               plain.layout.view(grad, "transitions"), rtol=1e-9, atol=1e-10)


def test_edge_pairs_are_the_feature_label_pair_cooccurrences():
    X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0]]))
    offsets = np.array([0, 3, 4], dtype=np.int64)
    label_ids = np.array([0, 1, 1, 0])
    pair_ids = edge_label_ids(label_ids, offsets, 2)
    assert pair_ids.tolist() == [-1, 1, 3, -1]
    structure = _structure(X, offsets, label_ids, 2, transition_columns=np.ones(2, bool))
    edge = structure.edge_pairs
    found = set(zip(edge.feature_of_pairs().tolist(), edge.labels.tolist()))
    # token 1 (feature 1) follows label 0 with label 1: pair 0*2+1; token 2
    # (features 0 and 1) is pair 1*2+1; the first tokens of sequences have none
    assert found == {(1, 1), (0, 3), (1, 3)}


def test_gold_statistics_count_trigrams_within_sequences_only():
    X = sp.csr_matrix(np.ones((5, 1)))
    offsets = np.array([0, 3, 5], dtype=np.int64)
    label_ids = np.array([0, 1, 0, 1, 1])
    structure = _structure(X, offsets, label_ids, 2, order=2)
    gold = structure.layout.views(structure.gold_statistics(as_feature_arrays(X), offsets,
                                                            label_ids))
    expected = np.zeros((2, 2, 2))
    expected[0, 1, 0] = 1  # only the first sequence has three tokens
    np.testing.assert_array_equal(gold["trigram"], expected)
    np.testing.assert_array_equal(gold["transitions"], [[0, 1], [1, 1]])


@needs_two_threads
@pytest.mark.parametrize("variant", ["order2", "edges"])
def test_loss_bitwise_identical_for_one_and_two_threads(variant):
    X, offsets, label_ids, n_classes = _problem(12, n_sequences=300, n_features=6,
                                                n_classes=4, max_length=15)
    structure = _structure(X, offsets, label_ids, n_classes, **VARIANTS[variant])
    loss = _loss(structure, X, offsets, label_ids, l2=0.1)
    assert_loss_same_for_one_and_two_threads(loss, seed=13)


def test_state_pairs_observed_by_codes_equals_dense_pattern():
    X, offsets, label_ids, _ = _problem(14, n_sequences=50, n_features=9, max_length=7)
    dense = StatePairs.observed(X, label_ids, 3)
    by_codes = StatePairs.observed(X, label_ids, 3, columns=np.ones(9, dtype=bool))
    np.testing.assert_array_equal(dense.feature_ptr, by_codes.feature_ptr)
    np.testing.assert_array_equal(dense.labels, by_codes.labels)


def test_chain_loss_helper_is_the_plain_structure():
    X, offsets, label_ids, n_classes = _problem(15)
    pairs = StatePairs.observed(X, label_ids, n_classes)
    helper = chain_loss(X, offsets, label_ids, pairs, l2=0.1)
    direct = _loss(_structure(X, offsets, label_ids, n_classes), X, offsets, label_ids, 0.1)
    w = np.random.default_rng(16).normal(size=helper.n_parameters)
    assert helper(w)[0] == direct(w)[0]


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("variant", ["order1", "edges"])
def test_without_boundary_weights_start_and_end_never_move(variant, fused):
    """CRFsuite's chain (skcrf.compat): with start and end at zero, the loss is the brute
    force's, and its gradient is the finite differences' but zero on start and end."""
    X, offsets, label_ids, n_classes = _problem(6)
    structure = _structure(X, offsets, label_ids, n_classes, **VARIANTS[variant])
    structure.boundary_weights = False
    loss = _loss(structure, X, offsets, label_ids, l2=0.2, fused=fused)
    w = np.random.default_rng(7).normal(scale=0.5, size=loss.n_parameters)
    blocks = structure.layout.views(w)
    blocks["start"][:] = 0.0
    blocks["end"][:] = 0.0
    value, grad = loss(w)
    np.testing.assert_allclose(value, _brute_force_loss(structure, X, offsets, label_ids, w,
                                                        0.2), rtol=1e-10)
    gradient = structure.layout.views(grad)
    assert not np.any(gradient["start"]) and not np.any(gradient["end"])
    numeric = structure.layout.views(approx_fprime(w, lambda v: loss(v)[0], 1e-6))
    for name in ("state", "transitions"):
        np.testing.assert_allclose(gradient[name], numeric[name], rtol=1e-4, atol=1e-5)
