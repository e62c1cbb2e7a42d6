"""n-best and fixed-boundary kernels against brute-force ranking of every labelling."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import logsumexp

from skcrf.inference.chain.order1 import viterbi
from skcrf.inference.chain.order2 import viterbi2
from skcrf.inference.chain.edges import viterbi_edges
from skcrf.inference.chain.nbest import nbest_paths, nbest_paths2
from skcrf.inference.semimarkov.passes import segment_posteriors, segment_viterbi
from skcrf.inference.semimarkov.queries import (CUT, NO_REPEAT, fixed_segment_posteriors,
                                                nbest_segmentations)
from tests._kernel_checks import kernel_settings, segment_problems as random_segment_problems
from tests._threads import results_per_thread_count
from tests.naive import path_score
from tests.naive_chain2 import path_score2
from tests.naive_edges import edge_path_score
from tests.naive_nbest import ranked_labellings, ranked_segmentations
from tests.naive_semimarkov import add_roles

SETTINGS = kernel_settings(80)


def _forbid(rng, array, share):
    array[rng.random(array.shape) < share] = -np.inf


@st.composite
def chains(draw, order=1, edges=False, max_classes=3, max_length=3, integer=False):
    """Random batches of lengths 0-3, 1-3 classes, sometimes -inf potentials.

    ``integer`` draws small integer scores, so that many labellings tie
    exactly and the tie order is tested.
    """
    n_classes = draw(st.integers(1, max_classes))
    lengths = draw(st.lists(st.integers(0, max_length), min_size=1, max_size=4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_tokens = sum(lengths)

    def normal(*shape):
        if integer:
            return rng.integers(-2, 3, size=shape).astype(float)
        return rng.normal(scale=3.0, size=shape)

    unary = normal(n_tokens, n_classes)
    transitions = normal(n_classes, n_classes)
    start, end = normal(n_classes), normal(n_classes)
    if draw(st.booleans()):
        _forbid(rng, transitions, 0.3)
        _forbid(rng, start, 0.2)
        _forbid(rng, end, 0.2)
    if draw(st.booleans()):
        _forbid(rng, unary, 0.2)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    if order == 2:
        trigram = normal(n_classes, n_classes, n_classes)
        if draw(st.booleans()):
            _forbid(rng, trigram, 0.3)
        return unary, transitions, trigram, start, end, offsets
    if edges:
        moves = normal(n_tokens, n_classes, n_classes)
        if draw(st.booleans()):
            _forbid(rng, moves, 0.3)
        return unary, moves, start, end, offsets
    return unary, transitions, start, end, offsets


def _check_ranking(got_paths, got_scores, count, ranked, n, score):
    """The kernel's paths of one sequence against the ranked enumeration."""
    assert count == min(n, len(ranked))
    np.testing.assert_allclose(got_scores[:count], [s for s, _ in ranked[:count]],
                               rtol=1e-12, atol=1e-12)
    assert np.all(got_scores[count:] == -np.inf)
    seen = set()
    for k in range(count):
        path = tuple(got_paths[k])
        assert path not in seen, "a path came twice"
        seen.add(path)
        np.testing.assert_allclose(score(path), got_scores[k], rtol=1e-12, atol=1e-12)


def _check_chain(problem, n, kernel, best, score_of, extra=()):
    *potentials, offsets = problem
    paths, scores, counts = kernel(*potentials, *extra, offsets, n)
    viterbi_paths = best(*potentials, offsets)
    n_classes = potentials[0].shape[1]
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        def score(path, lo=lo, hi=hi):
            return score_of(lo, hi, path) if hi > lo else 0.0

        ranked = ranked_labellings(score, n_classes, hi - lo)
        _check_ranking([paths[lo:hi, k] for k in range(n)], scores[q], counts[q], ranked, n,
                       score)
        if counts[q] and hi > lo:
            np.testing.assert_array_equal(paths[lo:hi, 0], viterbi_paths[lo:hi])
    return paths, scores, counts


@SETTINGS
@given(chains(), st.integers(1, 6))
def test_order1_nbest_matches_ranking(problem, n):
    unary, transitions, start, end, offsets = problem

    def kernel(unary, transitions, start, end, offsets, n):
        return nbest_paths(unary, transitions[np.newaxis], 0, start, end, offsets, n)

    _check_chain(problem, n, kernel, viterbi,
                 lambda lo, hi, p: path_score(unary[lo:hi], transitions, start, end, p))


@SETTINGS
@given(chains(integer=True), st.integers(1, 30))
def test_order1_ties_rank_by_labels_from_the_last_token_back(problem, n):
    unary, transitions, start, end, offsets = problem
    paths, scores, counts = nbest_paths(unary, transitions[np.newaxis], 0, start, end,
                                        offsets, n)
    n_classes = unary.shape[1]
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        if hi == lo:
            continue
        ranked = ranked_labellings(
            lambda p, lo=lo, hi=hi: path_score(unary[lo:hi], transitions, start, end, p),
            n_classes, hi - lo)
        # integer scores add exactly: the documented order is the exact order
        expected = sorted(ranked, key=lambda item: (-item[0], item[1][::-1]))[:n]
        assert [tuple(paths[lo:hi, k]) for k in range(counts[q])] == [p for _, p in expected]


@SETTINGS
@given(chains(edges=True), st.integers(1, 6))
def test_edge_nbest_matches_ranking(problem, n):
    unary, edges, start, end, offsets = problem

    def kernel(unary, edges, start, end, offsets, n):
        return nbest_paths(unary, edges, 1, start, end, offsets, n)

    _check_chain(problem, n, kernel, viterbi_edges,
                 lambda lo, hi, p: edge_path_score(unary[lo:hi], edges[lo:hi], start, end, p))


@SETTINGS
@given(chains(order=2), st.integers(1, 6))
def test_order2_nbest_matches_ranking(problem, n):
    unary, transitions, trigram, start, end, offsets = problem
    _check_chain(problem, n, nbest_paths2, viterbi2,
                 lambda lo, hi, p: path_score2(unary[lo:hi], transitions, trigram, start,
                                               end, p))


@SETTINGS
@given(chains(order=2, integer=True), st.integers(1, 30))
def test_order2_first_is_viterbi_under_ties(problem, n):
    unary, transitions, trigram, start, end, offsets = problem
    _check_chain(problem, n, nbest_paths2, viterbi2,
                 lambda lo, hi, p: path_score2(unary[lo:hi], transitions, trigram, start,
                                               end, p))


def test_nbest_of_an_infeasible_sequence_is_empty():
    unary = np.zeros((2, 2))
    transitions = np.full((2, 2), -np.inf)
    offsets = np.array([0, 2], dtype=np.int64)
    paths, scores, counts = nbest_paths(unary, transitions[None], 0, np.zeros(2), np.zeros(2),
                                        offsets, 3)
    assert counts.tolist() == [0] and np.all(scores == -np.inf)
    assert nbest_paths2(unary, transitions, np.zeros((2, 2, 2)), np.zeros(2), np.zeros(2),
                        offsets, 3)[2].tolist() == [0]


def test_nbest_does_not_depend_on_the_thread_count():
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 30, size=200)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    unary = rng.normal(size=(int(offsets[-1]), 5))
    transitions = rng.normal(size=(5, 5))
    trigram = rng.normal(size=(5, 5, 5))
    start, end = rng.normal(size=5), rng.normal(size=5)
    one, two = results_per_thread_count(
        lambda: (nbest_paths(unary, transitions[None], 0, start, end, offsets, 7),
                 nbest_paths2(unary, transitions, trigram, start, end, offsets, 4)))
    for a, b in zip(one, two):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


# --- semi-Markov ---------------------------------------------------------------------------


@st.composite
def segment_problems(draw, scale=2.0, max_labels=3, max_length=4, with_boundaries=False):
    """Random semi-Markov batches as in the segment kernel tests, with boundary codes."""
    problem = draw(random_segment_problems(scale, max_labels, max_length))
    n_tokens = problem[-1][-1]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    boundaries = np.zeros(n_tokens, np.int8)
    if with_boundaries:
        boundaries = rng.integers(0, 4, size=n_tokens).astype(np.int8)
        boundaries[rng.random(n_tokens) < 0.4] = 0
    return problem, boundaries


def _segments(label_ids, starts, lo, hi):
    bounds = [r for r in range(lo, hi) if starts[r]] + [hi]
    return tuple((a - lo, b - lo, int(label_ids[a])) for a, b in zip(bounds[:-1], bounds[1:]))


@SETTINGS
@given(segment_problems(with_boundaries=True), st.integers(1, 6), st.booleans())
def test_segment_nbest_matches_ranking(drawn, n, use_boundaries):
    problem, boundaries = drawn
    if not use_boundaries:
        boundaries[:] = 0
    state, first, last, length, transitions, start, end, offsets = problem
    label_ids, starts, scores, counts = nbest_segmentations(*problem, boundaries, n)
    best_labels, best_starts = segment_viterbi(*problem)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        ranked = ranked_segmentations(state[lo:hi], first[lo:hi], last[lo:hi], length,
                                      transitions, start, end, boundaries[lo:hi], CUT,
                                      NO_REPEAT)
        assert counts[q] == min(n, len(ranked))
        np.testing.assert_allclose(scores[q, :counts[q]], [s for s, _ in ranked[:counts[q]]],
                                   rtol=1e-10, atol=1e-10)
        if hi == lo:
            continue
        found = [_segments(label_ids[:, k], starts[:, k], lo, hi) for k in range(counts[q])]
        assert len(set(found)) == len(found)
        by_segments = dict((seg, s) for s, seg in ranked)
        for k, segments in enumerate(found):
            np.testing.assert_allclose(by_segments[segments], scores[q, k], rtol=1e-10,
                                       atol=1e-10)
        if counts[q] and not use_boundaries:
            assert found[0] == _segments(best_labels, best_starts, lo, hi)


@SETTINGS
@given(segment_problems(with_boundaries=True))
def test_fixed_segment_posteriors_match_brute_force(drawn):
    problem, boundaries = drawn
    state, first, last, length, transitions, start, end, offsets = problem
    log_z, roles = fixed_segment_posteriors(*problem, boundaries)
    assert not np.isnan(roles).any()
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        ranked = ranked_segmentations(state[lo:hi], first[lo:hi], last[lo:hi], length,
                                      transitions, start, end, boundaries[lo:hi], CUT,
                                      NO_REPEAT)
        if hi == lo:
            assert log_z[q] == 0.0
            continue
        expected_log_z = logsumexp([s for s, _ in ranked]) if ranked else -np.inf
        np.testing.assert_allclose(log_z[q], expected_log_z, rtol=1e-9, atol=1e-9)
        expected = np.zeros((hi - lo, 5, state.shape[1]))
        for s, segments in ranked:
            add_roles(expected, segments, np.exp(s - expected_log_z))
        np.testing.assert_allclose(roles[lo:hi], expected, atol=1e-9)


@SETTINGS
@given(segment_problems())
def test_fixed_posteriors_without_boundaries_are_the_segment_posteriors(drawn):
    problem, boundaries = drawn
    log_z, roles = fixed_segment_posteriors(*problem, boundaries)
    expected = segment_posteriors(*problem)
    np.testing.assert_allclose(log_z, expected[0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(roles, expected[1], atol=1e-9)


def test_segment_nbest_does_not_depend_on_the_thread_count():
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 20, size=150)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens, n_labels = int(offsets[-1]), 4
    problem = (*(rng.normal(size=(n_tokens, n_labels)) for _ in range(3)),
               rng.normal(size=(n_labels, 3)), rng.normal(size=(n_labels, n_labels)),
               rng.normal(size=n_labels), rng.normal(size=n_labels), offsets)
    boundaries = rng.integers(0, 4, size=n_tokens).astype(np.int8)
    one, two = results_per_thread_count(
        lambda: (nbest_segmentations(*problem, boundaries, 5),
                 fixed_segment_posteriors(*problem, boundaries)))
    for a, b in zip(one, two):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
