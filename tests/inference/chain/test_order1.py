"""Kernels against brute-force enumeration, plus invariants."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from unittest import mock

from skcrf.inference.chain import order1 as chain
from skcrf.inference.chain.order1 import forward_backward, viterbi
from tests._kernel_checks import (assert_decoded_scores_are_best, brute_force_tests,
                                  invariant_tests, kernel_settings)
from tests.naive import enumerate_batch, path_score

SETTINGS = kernel_settings(150)


@st.composite
def problems(draw, scale=3.0, max_classes=3, max_length=4):
    """Random batches: 1-3 classes, sequences of length 0-4, some -inf transitions."""
    n_classes = draw(st.integers(1, max_classes))
    lengths = draw(st.lists(st.integers(0, max_length), min_size=1, max_size=4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_tokens = sum(lengths)
    unary = rng.normal(scale=scale, size=(n_tokens, n_classes))
    transitions = rng.normal(scale=scale, size=(n_classes, n_classes))
    start = rng.normal(scale=scale, size=n_classes)
    end = rng.normal(scale=scale, size=n_classes)
    if draw(st.booleans()):
        forbidden = rng.random((n_classes, n_classes)) < 0.3
        transitions[forbidden] = -np.inf
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return unary, transitions, start, end, offsets


def _check_against_brute_force(problem):
    unary, transitions, start, end, offsets = problem
    log_z, marginals, counts, _, best_scores = enumerate_batch(*problem)
    got_log_z, got_marginals, got_counts = forward_backward(*problem, True)
    assert not np.isnan(got_log_z).any() and not np.isnan(got_marginals).any()
    np.testing.assert_allclose(got_log_z, log_z, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got_marginals, marginals, atol=1e-9)
    np.testing.assert_allclose(got_counts, counts, atol=1e-8)
    paths = viterbi(*problem)
    assert_decoded_scores_are_best(offsets, log_z, best_scores, lambda q, lo, hi: path_score(
        unary[lo:hi], transitions, start, end, paths[lo:hi]))


test_matches_brute_force, test_matches_brute_force_with_extreme_scores = brute_force_tests(
    SETTINGS, problems, _check_against_brute_force, extreme_scale=400.0)


@st.composite
def lane_problems(draw):
    """Batches whose sequences share a few lengths, so that they run as lanes; some
    tokens with a ``-inf`` score (a fixed label), some scores beyond the scaled pass."""
    n_classes = draw(st.integers(2, 3))
    lengths = draw(st.lists(st.sampled_from([0, 1, 2, 3]), min_size=8, max_size=14))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    unary = rng.normal(scale=3.0, size=(offsets[-1], n_classes))
    if draw(st.booleans()) and offsets[-1]:
        token = rng.integers(offsets[-1])
        unary[token, rng.integers(n_classes)] = -np.inf
    if draw(st.booleans()) and offsets[-1]:
        unary[rng.integers(offsets[-1])] *= 300.0
    transitions = rng.normal(scale=3.0, size=(n_classes, n_classes))
    return (unary, transitions, rng.normal(size=n_classes), rng.normal(size=n_classes),
            offsets)


@SETTINGS
@given(lane_problems())
def test_sequences_as_lanes_match_brute_force(problem):
    _check_against_brute_force(problem)


@SETTINGS
@given(lane_problems())
def test_lanes_are_bitwise_the_one_sequence_pass(problem):
    """predict_marginals may take either route: its marginals must not depend on which."""
    log_z, marginals, counts = forward_backward(*problem, True)
    with mock.patch.object(chain, "LANE_MAX_CLASSES", 0):
        one_log_z, one_marginals, one_counts = forward_backward(*problem, True)
    np.testing.assert_array_equal(log_z, one_log_z)
    np.testing.assert_array_equal(marginals, one_marginals)
    # the counts are summed lane by lane: the same terms in another order
    np.testing.assert_allclose(counts, one_counts, rtol=1e-13, atol=1e-300)


def test_length_zero_and_one():
    unary = np.array([[0.5, -1.0]])
    transitions = np.zeros((2, 2))
    start = np.array([0.2, 0.0])
    end = np.array([0.0, 0.3])
    offsets = np.array([0, 0, 1, 1], dtype=np.int64)
    log_z, marginals, counts = forward_backward(unary, transitions, start, end, offsets, True)
    assert log_z[0] == 0.0 and log_z[2] == 0.0
    scores = unary[0] + start + end
    np.testing.assert_allclose(log_z[1], np.logaddexp(*scores))
    np.testing.assert_allclose(marginals[0], np.exp(scores - log_z[1]))
    assert not counts.any()
    assert viterbi(unary, transitions, start, end, offsets).tolist() == [int(np.argmax(scores))]


def test_forbidden_transitions_get_zero_probability():
    rng = np.random.default_rng(0)
    unary = rng.normal(size=(50, 3))
    transitions = rng.normal(size=(3, 3))
    transitions[0, 1] = transitions[2, 2] = -np.inf
    zeros = np.zeros(3)
    offsets = np.array([0, 20, 50], dtype=np.int64)
    log_z, marginals, counts = forward_backward(unary, transitions, zeros, zeros, offsets, True)
    assert np.isfinite(log_z).all() and np.isfinite(marginals).all()
    assert counts[0, 1] == 0.0 and counts[2, 2] == 0.0
    path = viterbi(unary, transitions, zeros, zeros, offsets)
    for lo, hi in [(0, 20), (20, 50)]:
        pairs = set(zip(path[lo:hi - 1], path[lo + 1:hi]))
        assert (0, 1) not in pairs and (2, 2) not in pairs


def test_infeasible_sequence_gives_minus_inf_and_no_nan():
    unary = np.zeros((3, 2))
    transitions = np.full((2, 2), -np.inf)  # nothing may follow anything
    offsets = np.array([0, 1, 3], dtype=np.int64)
    log_z, marginals, _ = forward_backward(unary, transitions, np.zeros(2), np.zeros(2),
                                           offsets, True)
    assert np.isfinite(log_z[0]) and log_z[1] == -np.inf
    assert not np.isnan(marginals).any()
    np.testing.assert_allclose(marginals[0].sum(), 1.0)


def _random_batch(seed, n_sequences=200, n_classes=5, scale=2.0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 30, size=n_sequences)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    unary = rng.normal(scale=scale, size=(offsets[-1], n_classes))
    transitions = rng.normal(scale=scale, size=(n_classes, n_classes))
    return unary, transitions, rng.normal(size=n_classes), rng.normal(size=n_classes), offsets


def test_marginals_sum_to_one():
    unary, transitions, start, end, offsets = _random_batch(1)
    _, marginals, counts = forward_backward(unary, transitions, start, end, offsets, True)
    np.testing.assert_allclose(marginals.sum(axis=1), 1.0, atol=1e-12)
    # every non-first token is the target of exactly one transition
    n_targets = offsets[-1] - np.count_nonzero(np.diff(offsets))
    np.testing.assert_allclose(counts.sum(), n_targets, rtol=1e-12)


def test_shifting_a_tokens_unary_scores_shifts_log_z_only():
    unary, transitions, start, end, offsets = _random_batch(2, n_sequences=20)
    log_z, marginals, counts = forward_backward(unary, transitions, start, end, offsets, True)
    shifted = unary.copy()
    token = offsets[3] + 1
    shifted[token] += 7.5
    log_z2, marginals2, counts2 = forward_backward(shifted, transitions, start, end, offsets,
                                                   True)
    expected = log_z.copy()
    expected[3] += 7.5
    np.testing.assert_allclose(log_z2, expected, rtol=1e-12)
    np.testing.assert_allclose(marginals2, marginals, atol=1e-12)
    np.testing.assert_allclose(counts2, counts, rtol=1e-10)


def test_reversal_with_transposed_transitions_keeps_log_z():
    unary, transitions, start, end, offsets = _random_batch(3, n_sequences=30)
    log_z, _, _ = forward_backward(unary, transitions, start, end, offsets, True)
    reversed_unary = np.concatenate([unary[lo:hi][::-1]
                                     for lo, hi in zip(offsets[:-1], offsets[1:])])
    log_z_rev, _, _ = forward_backward(reversed_unary, np.ascontiguousarray(transitions.T),
                                       end, start, offsets, True)
    np.testing.assert_allclose(log_z_rev, log_z, rtol=1e-12)


def test_extreme_scores_stay_finite():
    # issue-6 numerics: a 100,000-token sequence, unary +-1e4, transitions +-1e3
    rng = np.random.default_rng(4)
    n_classes = 4
    unary = rng.choice([-1e4, 1e4], size=(100_000, n_classes)) * rng.random((100_000, n_classes))
    transitions = rng.uniform(-1e3, 1e3, size=(n_classes, n_classes))
    offsets = np.array([0, 100_000], dtype=np.int64)
    zeros = np.zeros(n_classes)
    log_z, marginals, counts = forward_backward(unary, transitions, zeros, zeros, offsets, True)
    assert np.isfinite(log_z).all()
    np.testing.assert_allclose(marginals.sum(axis=1), 1.0, atol=1e-9)
    assert np.isfinite(counts).all()


test_inputs_are_not_mutated, test_bitwise_identical_for_one_and_two_threads = invariant_tests(
    lambda: _random_batch(5, n_sequences=10), lambda: _random_batch(6, n_sequences=500),
    lambda batch: (*forward_backward(*batch, True), viterbi(*batch)))


def test_slot_features_reads_shifted_types_and_drops_unused_columns():
    from skcrf.features._kernels import (SLOT_AFTER, SLOT_ALWAYS, SLOT_BEFORE, SLOT_GATHER,
                                         slot_features)

    # two sequences, of 3 and 1 tokens; one token column with types 0, 1, 2
    sources = np.array([[0, 1, 0, 2]], dtype=np.int64)
    offsets = np.array([0, 3, 4], dtype=np.int64)
    # slots: bias | BOS | type of the next token, one-hot | EOS
    kinds = np.array([SLOT_ALWAYS, SLOT_BEFORE, SLOT_GATHER, SLOT_AFTER])
    shifts = np.array([0, 1, 1, 1])
    slot_sources = np.zeros(4, dtype=np.int64)
    table = np.array([0, 1, 2], dtype=np.int32)
    table_starts = np.zeros(4, dtype=np.int64)
    # columns: bias 0, BOS 1, +1:type0 2, +1:type1 3, +1:type2 4, EOS 5
    column_starts = np.array([0, 1, 2, 5])
    indices, indptr, used = slot_features(sources, offsets, kinds, shifts, slot_sources,
                                          table_starts, table, column_starts, 6)
    # no token is followed by type 2: its column goes and EOS becomes column 4
    assert used.tolist() == [True, True, True, True, False, True]
    rows = [indices[indptr[t]:indptr[t + 1]].tolist() for t in range(4)]
    assert rows == [[0, 1, 3], [0, 2], [0, 4], [0, 1, 4]]
