"""Semi-Markov kernels against brute-force enumeration of segmentations, plus identities."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from skcrf.inference.chain.order1 import forward_backward, viterbi
from skcrf.inference.semimarkov._scaled import (exp_factors, norm_floor,
                                                scaled_sequence_posteriors, scaled_workspace)
from skcrf.inference.semimarkov.passes import (COVERED, FIRST, LAST, longest_segments,
                                        no_spans, segment_posteriors, segment_viterbi)
from tests._kernel_checks import (assert_decoded_scores_are_best, brute_force_tests,
                                  invariant_tests, kernel_settings, segment_problems)
from tests._threads import assert_same_for_one_and_two_threads, needs_two_threads
from tests.naive_semimarkov import enumerate_batch, segmentation_score

SETTINGS = kernel_settings(120)


def problems(scale=2.0):
    """Random batches (tests._kernel_checks.segment_problems)."""
    return segment_problems(scale=scale)


def _segments(label_ids, starts, lo, hi):
    bounds = [r for r in range(lo, hi) if starts[r]] + [hi]
    return tuple((a - lo, b - lo, int(label_ids[a])) for a, b in zip(bounds[:-1], bounds[1:]))


def _check_against_brute_force(problem):
    state, first, last, length, transitions, start, end, offsets = problem
    log_z, roles, length_counts, pairs, starts_, ends_, best_scores = enumerate_batch(*problem)
    got = segment_posteriors(*problem)
    for array in got:
        assert not np.isnan(array).any()
    np.testing.assert_allclose(got[0], log_z, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got[1], roles, atol=1e-9)
    for value, expected in zip(got[2:], (length_counts, pairs, starts_, ends_)):
        np.testing.assert_allclose(value, expected, atol=1e-8)
    label_ids, starts = segment_viterbi(*problem)

    def score_of(q, lo, hi):
        assert starts[lo]
        return segmentation_score(state[lo:hi], first[lo:hi], last[lo:hi], length,
                                  transitions, start, end, _segments(label_ids, starts, lo, hi))

    assert_decoded_scores_are_best(offsets, log_z, best_scores, score_of)


test_matches_brute_force, test_matches_brute_force_with_extreme_scores = brute_force_tests(
    SETTINGS, problems, _check_against_brute_force, extreme_scale=300.0)


def _scaled_pass(problem, spans=None):
    """The scaled pass alone, sequence by sequence: (log_z, roles, span marginals), NaN
    where it gives up."""
    state, first, last, length, transitions, start, end, offsets = problem
    n_labels, max_length = length.shape
    spans = no_spans(n_labels) if spans is None else spans
    ok, *factors = exp_factors(length, transitions, start, end)
    assert ok
    rows = int(np.diff(offsets).max(initial=0)) + 1
    workspace = scaled_workspace(rows, n_labels, max_length, spans.shape[1])
    roles = np.zeros((state.shape[0], 5, n_labels))
    span_marginals = np.zeros(spans.shape)
    log_z = np.zeros(offsets.shape[0] - 1)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        if hi > lo:
            log_z[q] = scaled_sequence_posteriors(
                state, first, last, length, spans, transitions, start, end,
                longest_segments(length), *factors, norm_floor(max_length), lo, hi, roles,
                span_marginals, workspace)
    return log_z, roles, span_marginals


@SETTINGS
@given(problems(scale=1.0))
def test_scaled_pass_alone_matches_brute_force(problem):
    """On moderate scores the scaled pass succeeds wherever a segmentation is feasible."""
    log_z, roles, *_ = enumerate_batch(*problem)
    got_log_z, got_roles, _ = _scaled_pass(problem)
    feasible = log_z > -np.inf
    assert not np.isnan(got_log_z[feasible]).any(), "the scaled pass gave up needlessly"
    assert np.isnan(got_log_z[~feasible]).all()
    np.testing.assert_allclose(got_log_z[feasible], log_z[feasible], rtol=1e-9, atol=1e-9)
    tokens = np.repeat(feasible, np.diff(problem[-1]))
    np.testing.assert_allclose(got_roles[tokens], roles[tokens], atol=1e-9)


def test_scaled_pass_gives_up_on_extreme_scores():
    """Scores that underflow its products hand the sequence to the exact pass."""
    problem = _random_batch(7, n_sequences=5, scale=400.0)
    log_z, _, _ = _scaled_pass(problem)
    assert np.isnan(log_z[np.diff(problem[-1]) > 1]).any()
    exact_log_z, roles, *_ = segment_posteriors(*problem)
    assert np.isfinite(exact_log_z).all()
    np.testing.assert_allclose(roles[:, COVERED].sum(axis=1), 1.0, atol=1e-9)


def test_a_weight_whose_exponential_overflows_is_refused_without_a_warning():
    """Found by a stress run: a transition weight of 800 made numpy warn of an overflow
    from inside fit; the scaled pass refuses it (the exact pass runs), silently."""
    import warnings

    length, transitions = np.zeros((2, 2)), np.array([[800.0, 0.0], [0.0, -np.inf]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok, *_ = exp_factors(length, transitions, np.zeros(2), np.zeros(2))
    assert not ok


def test_length_zero_and_one():
    state = np.array([[0.5, -1.0]])
    first = np.array([[0.1, 0.2]])
    last = np.array([[-0.3, 0.4]])
    length = np.array([[0.0, 1.0], [0.5, -np.inf]])
    transitions = np.zeros((2, 2))
    start, end = np.array([0.2, 0.0]), np.array([0.0, 0.3])
    offsets = np.array([0, 0, 1, 1], dtype=np.int64)
    problem = (state, first, last, length, transitions, start, end, offsets)
    log_z, roles, lengths, pairs, _, _ = segment_posteriors(*problem)
    assert log_z[0] == 0.0 and log_z[2] == 0.0
    scores = state[0] + first[0] + last[0] + length[:, 0] + start + end
    np.testing.assert_allclose(log_z[1], np.logaddexp(*scores))
    for role in (COVERED, FIRST, LAST):
        np.testing.assert_allclose(roles[0, role], np.exp(scores - log_z[1]))
    assert not pairs.any() and not lengths[:, 1].any()
    label_ids, starts = segment_viterbi(*problem)
    assert label_ids.tolist() == [int(np.argmax(scores))] and starts.tolist() == [True]


def test_longest_segments_is_the_last_finite_length():
    length = np.array([[0.0, -np.inf, 1.0, -np.inf], [-np.inf] * 4, [0.0] * 4])
    assert longest_segments(length).tolist() == [3, 0, 4]


def test_infeasible_sequence_gives_minus_inf_and_no_nan():
    state = np.zeros((4, 2))
    length = np.array([[0.0, -np.inf], [-np.inf, -np.inf]])  # only 1-token segments of 0
    transitions = np.array([[-np.inf, 0.0], [0.0, 0.0]])  # which may not follow each other
    offsets = np.array([0, 1, 4], dtype=np.int64)
    problem = (state, state, state, length, transitions, np.zeros(2), np.zeros(2), offsets)
    log_z, roles, *_ = segment_posteriors(*problem)
    assert log_z[0] == 0.0 and log_z[1] == -np.inf
    assert not np.isnan(roles).any() and not roles[1:].any()
    segment_viterbi(*problem)  # terminates


def _random_batch(seed, n_sequences=200, n_labels=4, max_length=5, scale=1.5):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 25, size=n_sequences)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    state, first, last = (rng.normal(scale=scale, size=(n_tokens, n_labels)) for _ in range(3))
    length = rng.normal(size=(n_labels, max_length))
    transitions = rng.normal(size=(n_labels, n_labels))
    return (state, first, last, length, transitions, rng.normal(size=n_labels),
            rng.normal(size=n_labels), offsets)


def test_marginals_sum_to_one_and_counts_add_up():
    problem = _random_batch(1)
    offsets = problem[-1]
    _, roles, length_counts, pairs, start_counts, end_counts = segment_posteriors(*problem)
    np.testing.assert_allclose(roles[:, COVERED].sum(axis=1), 1.0, atol=1e-10)
    # as many first tokens as segments, and one fewer transition per sequence
    n_segments = roles[:, FIRST].sum()
    np.testing.assert_allclose(length_counts.sum(), n_segments, rtol=1e-10)
    np.testing.assert_allclose(roles[:, LAST].sum(), n_segments, rtol=1e-10)
    n_nonempty = np.count_nonzero(np.diff(offsets))
    np.testing.assert_allclose(pairs.sum(), n_segments - n_nonempty, rtol=1e-10)
    np.testing.assert_allclose(start_counts.sum(), n_nonempty, rtol=1e-12)
    np.testing.assert_allclose(end_counts.sum(), n_nonempty, rtol=1e-12)
    lengths = np.arange(1, problem[3].shape[1] + 1)
    np.testing.assert_allclose((length_counts @ lengths).sum(), offsets[-1], rtol=1e-10)


def test_segments_of_one_token_are_the_order_1_chain():
    state, first, last, length, transitions, start, end, offsets = _random_batch(2)
    zeros = np.zeros_like(state)
    one = np.zeros((state.shape[1], 1))
    log_z, roles, _, pairs, _, _ = segment_posteriors(state, zeros, zeros, one, transitions,
                                                      start, end, offsets)
    chain_log_z, marginals, counts = forward_backward(state, transitions, start, end, offsets,
                                                      True)
    np.testing.assert_allclose(log_z, chain_log_z, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(roles[:, COVERED], marginals, atol=1e-10)
    np.testing.assert_allclose(pairs, counts, rtol=1e-9)
    label_ids, starts = segment_viterbi(state, zeros, zeros, one, transitions, start, end,
                                        offsets)
    np.testing.assert_array_equal(label_ids, viterbi(state, transitions, start, end, offsets))
    assert starts.all()


def test_long_sequence_with_extreme_scores_stays_finite():
    rng = np.random.default_rng(4)
    n_labels = 3
    state = rng.uniform(-1e3, 1e3, size=(20_000, n_labels))
    length = rng.uniform(-1e2, 1e2, size=(n_labels, 6))
    offsets = np.array([0, 20_000], dtype=np.int64)
    zeros = np.zeros_like(state)
    log_z, roles, *counts = segment_posteriors(state, zeros, zeros, length,
                                               rng.uniform(-1e2, 1e2, (n_labels, n_labels)),
                                               np.zeros(n_labels), np.zeros(n_labels), offsets)
    assert np.isfinite(log_z).all()
    np.testing.assert_allclose(roles[:, COVERED].sum(axis=1), 1.0, atol=1e-6)
    assert all(np.isfinite(c).all() for c in counts)


test_inputs_are_not_mutated, test_bitwise_identical_for_one_and_two_threads = invariant_tests(
    lambda: _random_batch(5, n_sequences=10), lambda: _random_batch(6, n_sequences=400),
    lambda batch: (*segment_posteriors(*batch), *segment_viterbi(*batch)))


# --- span scores: segment features' scores of whole segments -----------------------------


@st.composite
def problems_with_spans(draw, scale=2.0):
    """:func:`problems` plus span scores for segments of up to 1-3 tokens (some -inf)."""
    problem = draw(problems(scale=scale))
    n_tokens, n_labels = problem[0].shape
    span_length = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    spans = rng.normal(scale=scale, size=(n_tokens, span_length, n_labels))
    if draw(st.booleans()):
        spans[rng.random(spans.shape) < 0.2] = -np.inf
    return problem, spans


def _check_spans_against_brute_force(problem, spans):
    state, first, last, length, transitions, start, end, offsets = problem
    (log_z, roles, length_counts, pairs, starts_, ends_, best_scores,
     span_marginals) = enumerate_batch(*problem, spans=spans)
    got = segment_posteriors(*problem, spans=spans)
    assert len(got) == 7
    for array in got:
        assert not np.isnan(array).any()
    np.testing.assert_allclose(got[0], log_z, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got[1], roles, atol=1e-9)
    for value, expected in zip(got[2:6], (length_counts, pairs, starts_, ends_)):
        np.testing.assert_allclose(value, expected, atol=1e-8)
    np.testing.assert_allclose(got[6], span_marginals, atol=1e-9)
    label_ids, starts = segment_viterbi(*problem, spans=spans)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        if hi == lo or log_z[q] == -np.inf:
            continue
        segments = _segments(label_ids, starts, lo, hi)
        score = segmentation_score(state[lo:hi], first[lo:hi], last[lo:hi], length,
                                   transitions, start, end, segments, spans[lo:hi])
        assert np.isfinite(score), "a forbidden score appeared in a Viterbi segmentation"
        np.testing.assert_allclose(score, best_scores[q], rtol=1e-12, atol=1e-12)


@SETTINGS
@given(problems_with_spans())
def test_span_scores_match_brute_force(case):
    _check_spans_against_brute_force(*case)


@SETTINGS
@given(problems_with_spans(scale=300.0))
def test_span_scores_match_brute_force_with_extreme_scores(case):
    _check_spans_against_brute_force(*case)


@SETTINGS
@given(problems_with_spans(scale=1.0))
def test_scaled_pass_with_span_scores_matches_brute_force(case):
    """The scaled pass reads span scores too, and gives up only where it should."""
    problem, spans = case
    log_z, roles, *_, span_marginals = enumerate_batch(*problem, spans=spans)
    got_log_z, got_roles, got_spans = _scaled_pass(problem, spans)
    feasible = log_z > -np.inf
    finite = np.isfinite(spans).all()
    if finite:
        assert not np.isnan(got_log_z[feasible]).any(), "the scaled pass gave up needlessly"
    done = ~np.isnan(got_log_z)
    np.testing.assert_allclose(got_log_z[done], log_z[done], rtol=1e-9, atol=1e-9)
    tokens = np.repeat(done & feasible, np.diff(problem[-1]))
    np.testing.assert_allclose(got_roles[tokens], roles[tokens], atol=1e-9)
    np.testing.assert_allclose(got_spans[tokens], span_marginals[tokens], atol=1e-9)


def test_zero_span_scores_change_nothing():
    problem = _random_batch(3, n_sequences=30)
    n_tokens, n_labels = problem[0].shape
    plain = segment_posteriors(*problem)
    spans = np.zeros((n_tokens, 2, n_labels))
    scored = segment_posteriors(*problem, spans=spans)
    for a, b in zip(plain, scored):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # the span marginals are those of the segments of 1 and 2 tokens, whatever their
    # number: their sum over lengths 1 and 2 is what the length counts say
    lengths = plain[2]
    np.testing.assert_allclose(scored[6].sum(axis=0).T, lengths[:, :2], atol=1e-9)
    for a, b in zip(segment_viterbi(*problem), segment_viterbi(*problem, spans=spans)):
        np.testing.assert_array_equal(a, b)


@needs_two_threads
def test_span_scores_bitwise_identical_for_one_and_two_threads():
    problem = _random_batch(8, n_sequences=300)
    n_tokens, n_labels = problem[0].shape
    spans = np.random.default_rng(1).normal(size=(n_tokens, 3, n_labels))
    assert_same_for_one_and_two_threads(
        lambda: (*segment_posteriors(*problem, spans=spans),
                 *segment_viterbi(*problem, spans=spans)))
