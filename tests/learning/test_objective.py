"""The negative log-likelihood against brute force, its gradient against finite differences."""

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf.structures._parameters import StatePairs
from tests._chain_loss import chain_loss, unpack
from tests._structure_checks import (assert_gradient_matches_finite_differences,
                                     assert_loss_same_for_one_and_two_threads, chain_problem)
from tests._threads import needs_two_threads
from tests.naive import enumerate_sequence, path_score


def _problem(seed, n_sequences=6, n_features=7, n_classes=3, binary=False, max_length=4):
    """Random sparse features (lengths 0..max_length), labels and offsets."""
    return chain_problem(seed, n_sequences, n_features, n_classes, max_length, binary,
                         density=0.4)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("every_pair", [False, True])
def test_loss_equals_brute_force_negative_log_likelihood(binary, every_pair):
    X, offsets, label_ids, n_classes = _problem(0, binary=binary)
    pairs = (StatePairs.every(X.shape[1], n_classes) if every_pair
             else StatePairs.observed(X, label_ids, n_classes))
    l2 = 0.7
    loss = chain_loss(X, offsets, label_ids, pairs, l2)
    w = np.random.default_rng(1).normal(size=loss.n_parameters)
    pair_weights, transitions, start, end = unpack(w, loss.structure)
    unary = X @ pairs.to_dense(pair_weights).T
    expected = 0.5 * l2 * (w @ w)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if hi == lo:
            continue
        log_z = enumerate_sequence(unary[lo:hi], transitions, start, end)[0]
        expected += log_z - path_score(unary[lo:hi], transitions, start, end, label_ids[lo:hi])
    value, _ = loss(w)
    np.testing.assert_allclose(value, expected, rtol=1e-10)


@pytest.mark.parametrize("binary", [False, True])
def test_gradient_matches_finite_differences(binary):
    X, offsets, label_ids, n_classes = _problem(2, binary=binary)
    loss = chain_loss(X, offsets, label_ids,
                                 StatePairs.observed(X, label_ids, n_classes), l2=0.3)
    assert_gradient_matches_finite_differences(loss, seed=3)


def test_observed_pairs_are_the_feature_label_cooccurrences():
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
    label_ids = np.array([0, 1, 2])
    pairs = StatePairs.observed(X, label_ids, 3)
    found = set(zip(pairs.feature_of_pairs().tolist(), pairs.labels.tolist()))
    assert found == {(0, 0), (2, 0), (1, 1), (0, 2)}
    # summed feature values per (label, feature): the one-hot product Y.T @ X
    one_hot = np.eye(3)[label_ids]
    np.testing.assert_array_equal(pairs.to_dense(pairs.empirical_counts(X, label_ids)),
                                  one_hot.T @ X.toarray())


def test_at_zero_weights_gradient_is_uniform_expectation_minus_counts():
    # with w = 0 every label path is equally likely: marginals are 1 / n_classes
    X, offsets, label_ids, n_classes = _problem(4, binary=True)
    pairs = StatePairs.every(X.shape[1], n_classes)
    loss = chain_loss(X, offsets, label_ids, pairs, l2=0.0)
    _, grad = loss(np.zeros(loss.n_parameters))
    g_pairs = unpack(grad, loss.structure)[0]
    uniform = np.asarray(X.sum(axis=0)).ravel()[pairs.feature_of_pairs()] / n_classes
    counts = unpack(loss.empirical, loss.structure)[0]
    np.testing.assert_allclose(g_pairs, uniform - counts, atol=1e-12)


@needs_two_threads
def test_loss_bitwise_identical_for_one_and_two_threads():
    X, offsets, label_ids, n_classes = _problem(5, n_sequences=300, n_features=40,
                                                n_classes=5, max_length=20)
    loss = chain_loss(X, offsets, label_ids,
                                 StatePairs.observed(X, label_ids, n_classes), l2=0.1)
    assert_loss_same_for_one_and_two_threads(loss, seed=6)
