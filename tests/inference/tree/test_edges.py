"""Tree kernels with a score per link against brute force, the plain tree, and invariants."""

import numpy as np
from hypothesis import given

from skcrf.inference.tree.passes import tree_forward_backward, tree_viterbi
from skcrf.inference.tree.edges import tree_edge_forward_backward, tree_edge_viterbi
from tests._kernel_checks import (assert_decoded_scores_are_best, brute_force_tests,
                                  forest_problems, invariant_tests, kernel_settings)
from tests.naive_tree import SHAPES, batch_of_forests, enumerate_forest_edges, labelling_score

SETTINGS = kernel_settings(150)


def problems(scale=3.0, max_classes=3, max_length=5, forbid=True):
    """Random batches of forests, a score block per link (tests._kernel_checks.forest_problems)."""
    return forest_problems(scale, max_classes, max_length, forbid, per_link=True)


def _check_against_brute_force(problem):
    unary, edges, root, parents, offsets = problem
    got_log_z, got_marginals, got_pairs = tree_edge_forward_backward(*problem, True)
    labels = tree_edge_viterbi(*problem)
    for got in (got_log_z, got_marginals, got_pairs):
        assert not np.isnan(got).any()
    best_scores = np.empty(len(offsets) - 1)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        log_z, marginals, pairs, _, best_scores[q] = enumerate_forest_edges(
            unary[lo:hi], edges[lo:hi], root, parents[lo:hi])
        np.testing.assert_allclose(got_log_z[q], log_z, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got_marginals[lo:hi], marginals, atol=1e-9)
        np.testing.assert_allclose(got_pairs[lo:hi], pairs, atol=1e-9)
    assert_decoded_scores_are_best(offsets, got_log_z, best_scores, lambda q, lo, hi: (
        labelling_score(unary[lo:hi], None, root, parents[lo:hi], labels[lo:hi],
                        edges=edges[lo:hi])))
    # without pairs: the same log Z and marginals, bit for bit
    again = tree_edge_forward_backward(*problem, False)
    assert np.array_equal(again[0], got_log_z) and np.array_equal(again[1], got_marginals)
    assert again[2].shape == (0,) + edges.shape[1:]


test_matches_brute_force, test_matches_brute_force_with_extreme_scores = brute_force_tests(
    SETTINGS, problems, _check_against_brute_force, extreme_scale=300.0)


@SETTINGS
@given(problems(forbid=False, max_length=12, max_classes=4))
def test_one_block_for_every_link_is_the_plain_tree(problem):
    unary, edges, root, parents, offsets = problem
    transitions = edges[0] if edges.shape[0] else np.zeros(edges.shape[1:])
    same = np.broadcast_to(transitions, edges.shape).copy()
    log_z, marginals, pairs = tree_edge_forward_backward(unary, same, root, parents, offsets,
                                                         True)
    expected = tree_forward_backward(unary, transitions, root, parents, offsets, True)
    np.testing.assert_allclose(log_z, expected[0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(marginals, expected[1], atol=1e-10)
    np.testing.assert_allclose(pairs.sum(axis=0), expected[2], atol=1e-9)
    np.testing.assert_array_equal(tree_edge_viterbi(unary, same, root, parents, offsets),
                                  tree_viterbi(unary, transitions, root, parents, offsets))


def _random_batch(seed, n_sequences=300, n_classes=4, scale=1.5):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 20, size=n_sequences)
    shapes = rng.choice(SHAPES, size=n_sequences)
    parents, offsets = batch_of_forests(rng, lengths, shapes)
    n_tokens = int(offsets[-1])
    return (rng.normal(scale=scale, size=(n_tokens, n_classes)),
            rng.normal(scale=scale, size=(n_tokens, n_classes, n_classes)),
            rng.normal(size=n_classes), parents, offsets)


def test_pair_marginals_add_up_to_the_marginals():
    unary, edges, root, parents, offsets = _random_batch(1)
    log_z, marginals, pairs = tree_edge_forward_backward(unary, edges, root, parents, offsets,
                                                         True)
    child = parents >= 0
    np.testing.assert_allclose(pairs[child].sum(axis=1), marginals[child], atol=1e-10)
    np.testing.assert_allclose(pairs[child].sum(axis=(1, 2)), 1.0, atol=1e-10)
    assert not pairs[~child].any()


test_inputs_are_not_mutated, test_bitwise_identical_for_one_and_two_threads = invariant_tests(
    lambda: _random_batch(2, n_sequences=30), lambda: _random_batch(3),
    lambda batch: (*tree_edge_forward_backward(*batch, True), tree_edge_viterbi(*batch)))
