"""Order-2 chain kernels against brute-force enumeration, plus invariants."""

import numpy as np

from hypothesis import strategies as st

from skcrf.inference.chain.order1 import forward_backward, viterbi
from skcrf.inference.chain.order2 import forward_backward2, viterbi2
from tests._kernel_checks import (assert_decoded_scores_are_best, brute_force_tests,
                                  invariant_tests, kernel_settings)
from tests.naive_chain2 import enumerate_batch2, path_score2

SETTINGS = kernel_settings(100)


@st.composite
def problems(draw, scale=3.0, max_classes=3, max_length=5):
    """Random batches: 1-3 classes, lengths 0-5, sometimes -inf potentials."""
    n_classes = draw(st.integers(1, max_classes))
    lengths = draw(st.lists(st.one_of(st.integers(0, 2), st.integers(0, max_length)),
                            min_size=1, max_size=4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_tokens = sum(lengths)
    unary = rng.normal(scale=scale, size=(n_tokens, n_classes))
    transitions = rng.normal(scale=scale, size=(n_classes, n_classes))
    trigram = rng.normal(scale=scale, size=(n_classes, n_classes, n_classes))
    start = rng.normal(scale=scale, size=n_classes)
    end = rng.normal(scale=scale, size=n_classes)
    if draw(st.booleans()):
        transitions[rng.random((n_classes, n_classes)) < 0.3] = -np.inf
    if draw(st.booleans()):
        trigram[rng.random((n_classes, n_classes, n_classes)) < 0.3] = -np.inf
    if draw(st.booleans()):
        start[rng.random(n_classes) < 0.3] = -np.inf
    if draw(st.booleans()):
        end[rng.random(n_classes) < 0.2] = -np.inf
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return unary, transitions, trigram, start, end, offsets


def _check_against_brute_force(problem):
    unary, transitions, trigram, start, end, offsets = problem
    log_z, marginals, pairs, triples, _, best_scores = enumerate_batch2(*problem)
    got = forward_backward2(*problem, True)
    for array in got:
        assert not np.isnan(array).any()
    got_log_z, got_marginals, got_pairs, got_triples = got
    np.testing.assert_allclose(got_log_z, log_z, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got_marginals, marginals, atol=1e-8)
    np.testing.assert_allclose(got_pairs, pairs, atol=1e-8)
    np.testing.assert_allclose(got_triples, triples, atol=1e-8)
    # without counts: the same log Z and marginals, no counts allocated
    no_counts = forward_backward2(*problem, False)
    np.testing.assert_array_equal(no_counts[0], got_log_z)
    np.testing.assert_array_equal(no_counts[1], got_marginals)
    assert no_counts[2].shape == (0, 0) and no_counts[3].shape == (0, 0, 0)
    paths = viterbi2(*problem)
    assert_decoded_scores_are_best(offsets, log_z, best_scores, lambda q, lo, hi: path_score2(
        unary[lo:hi], transitions, trigram, start, end, paths[lo:hi]))


test_matches_brute_force, test_matches_brute_force_with_extreme_scores = brute_force_tests(
    SETTINGS, problems, _check_against_brute_force, extreme_scale=400.0)


def _random_batch(seed, n_sequences=200, n_classes=5, scale=2.0, max_length=30):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, max_length, size=n_sequences)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    unary = rng.normal(scale=scale, size=(offsets[-1], n_classes))
    transitions = rng.normal(scale=scale, size=(n_classes, n_classes))
    trigram = rng.normal(scale=scale, size=(n_classes, n_classes, n_classes))
    return (unary, transitions, trigram, rng.normal(size=n_classes),
            rng.normal(size=n_classes), offsets)


def test_without_trigram_equals_order_one():
    unary, transitions, trigram, start, end, offsets = _random_batch(1)
    # -inf transitions too, so that the bigram-only paths are exercised with zeros
    transitions[0, 1] = transitions[3, 3] = -np.inf
    zeros = np.zeros_like(trigram)
    log_z, marginals, pairs, triples = forward_backward2(unary, transitions, zeros, start,
                                                         end, offsets, True)
    log_z1, marginals1, counts1 = forward_backward(unary, transitions, start, end, offsets,
                                                   True)
    np.testing.assert_allclose(log_z, log_z1, rtol=1e-12)
    np.testing.assert_allclose(marginals, marginals1, atol=1e-12)
    np.testing.assert_allclose(pairs, counts1, rtol=1e-10, atol=1e-10)
    # the forbidden transition appears in no triple either
    assert np.isfinite(triples).all() and triples[:, 0, 1].sum() == 0.0

    paths = viterbi2(unary, transitions, zeros, start, end, offsets)
    paths1 = viterbi(unary, transitions, start, end, offsets)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if hi > lo:
            s2 = path_score2(unary[lo:hi], transitions, zeros, start, end, paths[lo:hi])
            s1 = path_score2(unary[lo:hi], transitions, zeros, start, end, paths1[lo:hi])
            np.testing.assert_allclose(s2, s1, rtol=1e-12)


def test_counts_are_consistent():
    unary, transitions, trigram, start, end, offsets = _random_batch(2)
    _, marginals, pairs, triples = forward_backward2(unary, transitions, trigram, start, end,
                                                     offsets, True)
    np.testing.assert_allclose(marginals.sum(axis=1), 1.0, atol=1e-12)
    lengths = np.diff(offsets)
    np.testing.assert_allclose(pairs.sum(), np.maximum(lengths - 1, 0).sum(), rtol=1e-12)
    np.testing.assert_allclose(triples.sum(), np.maximum(lengths - 2, 0).sum(), rtol=1e-12)


def test_lengths_zero_one_two():
    rng = np.random.default_rng(3)
    n_classes = 3
    unary = rng.normal(size=(3, n_classes))
    transitions = rng.normal(size=(n_classes, n_classes))
    trigram = rng.normal(size=(n_classes, n_classes, n_classes))
    start, end = rng.normal(size=n_classes), rng.normal(size=n_classes)
    offsets = np.array([0, 0, 1, 1, 3, 3], dtype=np.int64)
    log_z, marginals, pairs, triples = forward_backward2(unary, transitions, trigram, start,
                                                         end, offsets, True)
    assert log_z[0] == log_z[2] == log_z[4] == 0.0
    scores = unary[0] + start + end
    np.testing.assert_allclose(log_z[1], np.logaddexp.reduce(scores))
    np.testing.assert_allclose(marginals[0], np.exp(scores - log_z[1]))
    pair_scores = (start[:, None] + unary[1][:, None] + transitions + unary[2][None]
                   + end[None])
    np.testing.assert_allclose(log_z[3], np.logaddexp.reduce(pair_scores.ravel()))
    np.testing.assert_allclose(pairs, np.exp(pair_scores - log_z[3]), atol=1e-12)
    assert not triples.any()


def test_forbidden_potentials_get_zero_probability():
    unary, transitions, trigram, start, end, offsets = _random_batch(4, n_sequences=30)
    transitions[0, 1] = -np.inf
    trigram[2, 2, 2] = trigram[1, 0, 3] = -np.inf
    log_z, marginals, pairs, triples = forward_backward2(unary, transitions, trigram, start,
                                                         end, offsets, True)
    assert np.isfinite(log_z).all() and np.isfinite(marginals).all()
    assert pairs[0, 1] == 0.0 and not triples[:, 0, 1].any()
    assert triples[2, 2, 2] == 0.0 and triples[1, 0, 3] == 0.0
    path = viterbi2(unary, transitions, trigram, start, end, offsets)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        p = path[lo:hi].tolist()
        assert (0, 1) not in set(zip(p[:-1], p[1:]))
        triples_seen = set(zip(p[:-2], p[1:-1], p[2:]))
        assert (2, 2, 2) not in triples_seen and (1, 0, 3) not in triples_seen


def test_infeasible_sequence_gives_minus_inf_and_no_nan():
    n_classes = 2
    unary = np.zeros((7, n_classes))
    transitions = np.zeros((n_classes, n_classes))
    trigram = np.full((n_classes, n_classes, n_classes), -np.inf)  # no third label allowed
    zeros = np.zeros(n_classes)
    offsets = np.array([0, 1, 3, 7], dtype=np.int64)
    log_z, marginals, pairs, triples = forward_backward2(unary, transitions, trigram, zeros,
                                                         zeros, offsets, True)
    assert np.isfinite(log_z[:2]).all() and log_z[2] == -np.inf
    for array in (marginals, pairs, triples):
        assert not np.isnan(array).any()
    np.testing.assert_allclose(marginals[:3].sum(axis=1), 1.0)
    assert not marginals[3:].any()
    np.testing.assert_allclose(pairs.sum(), 1.0)
    assert not triples.any()
    viterbi2(unary, transitions, trigram, zeros, zeros, offsets)  # must not fail


def test_long_sequence_with_extreme_scores_stays_finite():
    rng = np.random.default_rng(5)
    n_classes = 4
    n = 20_000
    unary = rng.choice([-1e4, 1e4], size=(n, n_classes)) * rng.random((n, n_classes))
    transitions = rng.uniform(-1e3, 1e3, size=(n_classes, n_classes))
    trigram = rng.uniform(-1e3, 1e3, size=(n_classes, n_classes, n_classes))
    zeros = np.zeros(n_classes)
    offsets = np.array([0, n], dtype=np.int64)
    log_z, marginals, pairs, triples = forward_backward2(unary, transitions, trigram, zeros,
                                                         zeros, offsets, True)
    assert np.isfinite(log_z).all()
    np.testing.assert_allclose(marginals.sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(pairs.sum(), n - 1, rtol=1e-9)
    np.testing.assert_allclose(triples.sum(), n - 2, rtol=1e-9)


def _large_batch():
    batch = _random_batch(7, n_sequences=500)
    batch[0][:40] *= 300.0  # a few sequences through the log-space pass too
    return batch


test_inputs_are_not_mutated, test_bitwise_identical_for_one_and_two_threads = invariant_tests(
    lambda: _random_batch(6, n_sequences=10), _large_batch,
    lambda batch: (*forward_backward2(*batch, True), viterbi2(*batch)))
