"""Per-token-transition kernels against brute-force enumeration, plus invariants."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skcrf.inference.chain import order1 as chain
from skcrf.inference.chain.edges import (edge_sequence_posteriors, edge_workspace,
                                         forward_backward_edges, viterbi_edges)
from tests._kernel_checks import (assert_decoded_scores_are_best, assert_inputs_not_mutated,
                                  brute_force_tests, kernel_settings)
from tests._threads import assert_same_for_one_and_two_threads, needs_two_threads
from tests.naive_edges import edge_path_score, enumerate_edge_batch

SETTINGS = kernel_settings(100)


def _random_scores(rng, n_tokens, n_classes, scale, forbid_edges, forbid_ends=False):
    unary = rng.normal(scale=scale, size=(n_tokens, n_classes))
    edges = rng.normal(scale=scale, size=(n_tokens, n_classes, n_classes))
    start = rng.normal(scale=scale, size=n_classes)
    end = rng.normal(scale=scale, size=n_classes)
    if forbid_edges:
        edges[rng.random(edges.shape) < 0.3] = -np.inf
    if forbid_ends:
        start[rng.random(n_classes) < 0.3] = -np.inf
        end[rng.random(n_classes) < 0.3] = -np.inf
    return unary, edges, start, end


@st.composite
def problems(draw, scale=3.0, max_classes=3, max_length=5):
    """Random batches: 1-3 classes, sequences of length 0-5, sometimes -inf scores."""
    n_classes = draw(st.integers(1, max_classes))
    lengths = draw(st.lists(st.integers(0, max_length), min_size=1, max_size=4))
    seed = draw(st.integers(0, 2**32 - 1))
    forbid_edges = draw(st.booleans())
    forbid_ends = draw(st.booleans()) and draw(st.booleans())
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return (*_random_scores(rng, int(offsets[-1]), n_classes, scale, forbid_edges,
                            forbid_ends), offsets)


def _check_against_brute_force(problem):
    unary, edges, start, end, offsets = problem
    n_tokens, n_classes = unary.shape
    log_z, marginals, pairs, _, best_scores = enumerate_edge_batch(*problem)

    got_log_z, got_marginals, got_pairs = forward_backward_edges(*problem, True)
    for got in (got_log_z, got_marginals, got_pairs):
        assert not np.isnan(got).any()
    np.testing.assert_allclose(got_log_z, log_z, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got_marginals, marginals, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got_pairs, pairs, rtol=1e-9, atol=1e-9)

    no_log_z, no_marginals, no_pairs = forward_backward_edges(*problem, False)
    assert np.array_equal(no_log_z, got_log_z)
    assert np.array_equal(no_marginals, got_marginals)
    assert no_pairs.shape == (0, n_classes, n_classes)

    paths = viterbi_edges(*problem)
    assert paths.shape == (n_tokens,) and paths.dtype == np.int64
    assert_decoded_scores_are_best(offsets, log_z, best_scores, lambda q, lo, hi: (
        edge_path_score(unary[lo:hi], edges[lo:hi], start, end, paths[lo:hi])))


test_matches_brute_force, test_matches_brute_force_with_extreme_scores = brute_force_tests(
    SETTINGS, problems, _check_against_brute_force, extreme_scale=400.0)


@SETTINGS
@given(problems(), st.sampled_from([3.0, 400.0]))
def test_sequence_routine_on_scratch_rows(problem, scale):
    # the training kernel's use: one sequence in rows 0..n-1 of reused scratch
    unary, edges, start, end, offsets = problem
    unary, edges, start, end = (a * (scale / 3.0) for a in (unary, edges, start, end))
    n_classes = unary.shape[1]
    longest = max(int(np.diff(offsets).max()), 1)
    work = edge_workspace(longest, n_classes)
    expected = enumerate_edge_batch(unary, edges, start, end, offsets)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        if hi == lo:
            continue
        n = hi - lo
        scratch_unary = np.full((longest + 1, n_classes), np.nan)
        scratch_edges = np.full((longest + 1, n_classes, n_classes), np.nan)
        scratch_unary[:n] = unary[lo:hi]
        scratch_edges[1:n] = edges[lo + 1:hi]  # the first token's block is never read
        marginals = np.full((longest + 1, n_classes), 7.0)
        pairs = np.full((longest + 1, n_classes, n_classes), 7.0)
        lz = edge_sequence_posteriors(scratch_unary, scratch_edges, start, end, 0, n,
                                      marginals, pairs, work)
        np.testing.assert_allclose(lz, expected[0][q], rtol=1e-9, atol=1e-9)
        assert (marginals[n:] == 7.0).all() and (pairs[n:] == 7.0).all()
        if lz == -np.inf:
            continue  # the rows may be left unwritten
        np.testing.assert_allclose(marginals[:n], expected[1][lo:hi], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(pairs[:n], expected[2][lo:hi], rtol=1e-9, atol=1e-9)
        assert (pairs[0] == 0.0).all()


@SETTINGS
@given(problems(), st.sampled_from([3.0, 400.0]), st.booleans())
def test_shared_transitions_match_the_order_1_kernels(problem, scale, integral):
    unary, edges, start, end, offsets = problem
    if integral:  # many ties
        unary, edges, start, end = (np.round(a) for a in (unary, edges, start, end))
    unary, start, end = (a * (scale / 3.0) for a in (unary, start, end))
    transitions = edges[0] * (scale / 3.0) if len(edges) else np.zeros((unary.shape[1],) * 2)
    shared = np.broadcast_to(transitions, (len(unary),) + transitions.shape).copy()

    log_z, marginals, counts = chain.forward_backward(unary, transitions, start, end,
                                                      offsets, True)
    got_log_z, got_marginals, got_pairs = forward_backward_edges(unary, shared, start, end,
                                                                 offsets, True)
    np.testing.assert_allclose(got_log_z, log_z, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got_marginals, marginals, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got_pairs.sum(axis=0), counts, rtol=1e-9, atol=1e-9)

    # the same additions in the same order and the same tie rule: the same paths
    path = chain.viterbi(unary, transitions, start, end, offsets)
    np.testing.assert_array_equal(viterbi_edges(unary, shared, start, end, offsets), path)


def _random_batch(scale, n_sequences, n_classes=4, max_length=30, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, max_length + 1, size=n_sequences)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return (*_random_scores(rng, int(offsets[-1]), n_classes, scale, True), offsets)


@pytest.mark.parametrize("scale", [1.0, 40.0, 400.0])
def test_long_sequences_are_consistent_and_finite(scale):
    # no brute force here: marginals sum to 1 and are the pair marginals' margins
    unary, edges, start, end, offsets = _random_batch(scale, 40, max_length=300, seed=1)
    edges[edges == -np.inf] = -5.0 * scale  # keep every sequence feasible
    log_z, marginals, pairs = forward_backward_edges(unary, edges, start, end, offsets, True)
    assert np.isfinite(log_z).all() and np.isfinite(marginals).all()
    assert np.isfinite(pairs).all()
    np.testing.assert_allclose(marginals.sum(axis=1), 1.0, atol=1e-9)
    firsts = offsets[:-1][np.diff(offsets) > 0]
    rest = np.setdiff1d(np.arange(len(unary)), firsts)
    assert (pairs[firsts] == 0.0).all()
    np.testing.assert_allclose(pairs[rest].sum(axis=1), marginals[rest], atol=1e-9)
    np.testing.assert_allclose(pairs[rest].sum(axis=2), marginals[rest - 1], atol=1e-9)


def test_infeasible_sequence_gives_minus_inf_and_zeros():
    unary = np.zeros((5, 2))
    edges = np.zeros((5, 2, 2))
    edges[3] = -np.inf  # nothing crosses from token 2 to token 3 of the second sequence
    offsets = np.array([0, 1, 5], dtype=np.int64)
    start = end = np.zeros(2)
    log_z, marginals, pairs = forward_backward_edges(unary, edges, start, end, offsets, True)
    assert log_z[0] == np.log(2.0) and log_z[1] == -np.inf
    assert (marginals[1:] == 0.0).all() and (pairs == 0.0).all()
    np.testing.assert_allclose(marginals[0], 0.5)
    assert not np.isnan(viterbi_edges(unary, edges, start, end, offsets)).any()


def test_only_the_first_tokens_edges_are_ignored():
    unary = np.zeros((2, 2))
    edges = np.zeros((2, 2, 2))
    edges[0] = -np.inf  # the first token has no predecessor: ignored
    edges[1, 0, 1] = -np.inf
    offsets = np.array([0, 2], dtype=np.int64)
    start = end = np.zeros(2)
    log_z, marginals, pairs = forward_backward_edges(unary, edges, start, end, offsets, True)
    np.testing.assert_allclose(log_z, [np.log(3.0)])
    np.testing.assert_allclose(pairs[1], [[1 / 3, 0.0], [1 / 3, 1 / 3]])
    np.testing.assert_array_equal(viterbi_edges(unary, edges, start, end, offsets), [0, 0])


def test_inputs_are_not_mutated():
    batch = _random_batch(300.0, n_sequences=20)
    unary, edges, start, end, offsets = batch
    assert_inputs_not_mutated(
        batch, lambda: forward_backward_edges(*batch, True), lambda: viterbi_edges(*batch),
        lambda: edge_sequence_posteriors(unary, edges, start, end, offsets[1], offsets[2],
                                         np.empty_like(unary), np.empty_like(edges),
                                         edge_workspace(30, 4)))


@needs_two_threads
@pytest.mark.parametrize("scale", [2.0, 400.0])
def test_bitwise_identical_for_one_and_two_threads(scale):
    batch = _random_batch(scale, n_sequences=500, seed=2)
    assert_same_for_one_and_two_threads(
        lambda: (*forward_backward_edges(*batch, True), viterbi_edges(*batch)))
