"""Tree kernels with a score per link against brute force, the plain tree, and invariants."""

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skcrf.inference.tree.passes import tree_forward_backward, tree_viterbi
from skcrf.inference.tree.edges import tree_edge_forward_backward, tree_edge_viterbi
from tests._threads import results_per_thread_count
from tests.naive_tree import SHAPES, batch_of_forests, enumerate_forest_edges, labelling_score

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def problems(draw, scale=3.0, max_classes=3, max_length=5, forbid=True):
    """Random batches: 1-3 classes, forests of 0-5 nodes, a score block per link, some -inf.

    Returns (unary, edges, root, parents, offsets).
    """
    n_classes = draw(st.integers(1, max_classes))
    lengths = draw(st.lists(st.integers(0, max_length), min_size=1, max_size=4))
    shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=len(lengths),
                           max_size=len(lengths)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    parents, offsets = batch_of_forests(rng, lengths, shapes)
    n_tokens = int(offsets[-1])
    unary = rng.normal(scale=scale, size=(n_tokens, n_classes))
    edges = rng.normal(scale=scale, size=(n_tokens, n_classes, n_classes))
    root = rng.normal(scale=scale, size=n_classes)
    if forbid:
        for scores, rate in ((unary, 0.2), (edges, 0.3), (root, 0.3)):
            if draw(st.booleans()):
                scores[rng.random(scores.shape) < rate] = -np.inf
    return unary, edges, root, parents, offsets


def _check_against_brute_force(problem):
    unary, edges, root, parents, offsets = problem
    got_log_z, got_marginals, got_pairs = tree_edge_forward_backward(*problem, True)
    labels = tree_edge_viterbi(*problem)
    for got in (got_log_z, got_marginals, got_pairs):
        assert not np.isnan(got).any()
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        log_z, marginals, pairs, _, best = enumerate_forest_edges(
            unary[lo:hi], edges[lo:hi], root, parents[lo:hi])
        np.testing.assert_allclose(got_log_z[q], log_z, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got_marginals[lo:hi], marginals, atol=1e-9)
        np.testing.assert_allclose(got_pairs[lo:hi], pairs, atol=1e-9)
        if hi == lo or log_z == -np.inf:
            continue
        score = labelling_score(unary[lo:hi], None, root, parents[lo:hi], labels[lo:hi],
                                edges=edges[lo:hi])
        assert np.isfinite(score), "a forbidden score appeared in a Viterbi labelling"
        np.testing.assert_allclose(score, best, rtol=1e-12, atol=1e-12)
    # without pairs: the same log Z and marginals, bit for bit
    again = tree_edge_forward_backward(*problem, False)
    assert np.array_equal(again[0], got_log_z) and np.array_equal(again[1], got_marginals)
    assert again[2].shape == (0,) + edges.shape[1:]


@SETTINGS
@given(problems())
def test_matches_brute_force(problem):
    _check_against_brute_force(problem)


@SETTINGS
@given(problems(scale=300.0))
def test_matches_brute_force_with_extreme_scores(problem):
    _check_against_brute_force(problem)


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


def test_inputs_are_not_mutated():
    problem = _random_batch(2, n_sequences=30)
    copies = [a.copy() for a in problem]
    tree_edge_forward_backward(*problem, True)
    tree_edge_viterbi(*problem)
    for original, copy in zip(problem, copies):
        np.testing.assert_array_equal(original, copy)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 threads")
def test_bitwise_identical_for_one_and_two_threads():
    problem = _random_batch(3)
    one, two = results_per_thread_count(
        lambda: (*tree_edge_forward_backward(*problem, True), tree_edge_viterbi(*problem)))
    for a, b in zip(one, two):
        assert np.array_equal(a, b)
