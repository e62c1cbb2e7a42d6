"""Inference over pattern automata (chains of any order) against brute-force enumeration."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skcrf.inference.patterns.automaton import (forward_backward_patterns, nbest_patterns,
                                      viterbi_patterns)
from skcrf.structures.patterns.label_patterns import LabelPatterns
from skcrf.structures.patterns.automaton import PatternAutomaton
from skcrf.structures.patterns.chain import _ExactTables, move_table_of
from tests._kernel_checks import kernel_settings
from tests._threads import results_per_thread_count
from tests.naive_patterns import enumerate_batch, path_score, pattern_table

SETTINGS = kernel_settings(60)


@st.composite
def problems(draw, orders=(3, 4), scale=2.0, max_classes=3, max_length=5):
    """Random batches: 1-3 classes, lengths 0-5, kept patterns of several kinds, -inf."""
    n_classes = draw(st.integers(1, max_classes))
    order = draw(st.sampled_from(orders))
    lengths = draw(st.lists(st.one_of(st.integers(0, 2), st.integers(0, max_length)),
                            min_size=1, max_size=6))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    kind = draw(st.sampled_from(["seen", "every", "some"]))
    if kind == "every":
        patterns = LabelPatterns.every(n_classes, order)
    else:
        # the patterns of a random labelling, and for "some" a random part of
        # them, prefixes and suffixes missing
        labels = rng.integers(0, n_classes, n_tokens)
        patterns = LabelPatterns.seen(labels, offsets, n_classes, order)
        if kind == "some" and patterns.n_patterns:
            kept = patterns.rows[rng.random(patterns.n_patterns) < 0.6]
            patterns, _ = LabelPatterns.from_rows(kept, n_classes, order)
    unary = rng.normal(scale=scale, size=(n_tokens, n_classes))
    transitions = rng.normal(scale=scale, size=(n_classes, n_classes))
    weights = rng.normal(scale=scale, size=patterns.n_patterns)
    start = rng.normal(scale=scale, size=n_classes)
    end = rng.normal(scale=scale, size=n_classes)
    if draw(st.booleans()):
        transitions[rng.random((n_classes, n_classes)) < 0.3] = -np.inf
    if draw(st.booleans()):
        unary[rng.random(unary.shape) < 0.2] = -np.inf  # fixed labels do this
    if draw(st.booleans()):
        start[rng.random(n_classes) < 0.3] = -np.inf
    if draw(st.booleans()):
        end[rng.random(n_classes) < 0.2] = -np.inf
    return unary, transitions, patterns, weights, start, end, offsets


def _run(problem, with_counts=True, exact=False):
    unary, transitions, patterns, weights, start, end, offsets = problem
    automaton = PatternAutomaton(patterns)
    arc_weight = automaton.arc_weights(transitions, weights)
    own = automaton.own_weights(weights)
    if exact:
        # a pattern weight past the scaled pass's guard sends every sequence
        # to the exact pass; the arc weights, which both read, are unchanged
        own = own.copy()
        own[patterns.n_classes ** 2:] = 1e3
        own[:patterns.n_classes ** 2] = 1e3
    log_z, marginals, arc_counts = forward_backward_patterns(
        unary, automaton.kernel_graph(), arc_weight, own, start, end, offsets, with_counts,
        _ExactTables(automaton))
    return automaton, log_z, marginals, arc_counts


def _check(problem, exact=False):
    unary, transitions, patterns, weights, start, end, offsets = problem
    n_classes = unary.shape[1]
    expected = enumerate_batch(unary, transitions, patterns.rows, weights, start, end, offsets)
    automaton, log_z, marginals, arc_counts = _run(problem, exact=exact)
    for array in (log_z, marginals, arc_counts):
        assert not np.isnan(array).any()
    np.testing.assert_allclose(log_z, expected["log_z"], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(marginals, expected["marginals"], atol=1e-8)
    np.testing.assert_allclose(arc_counts[:n_classes ** 2].reshape(n_classes, n_classes),
                               expected["pair_counts"], atol=1e-8)
    np.testing.assert_allclose(automaton.pattern_counts(arc_counts),
                               expected["pattern_counts"], atol=1e-8)
    # without counts: the same log Z and marginals, no counts
    _, no_log_z, no_marginals, no_counts = _run(problem, with_counts=False, exact=exact)
    np.testing.assert_array_equal(no_log_z, log_z)
    np.testing.assert_array_equal(no_marginals, marginals)
    assert no_counts.shape == (0,)
    return automaton, expected


def _check_paths(problem, automaton, expected, n=4):
    unary, transitions, patterns, weights, start, end, offsets = problem
    table = pattern_table(patterns.rows, weights)
    arc_weight = automaton.arc_weights(transitions, weights)
    moves = move_table_of(automaton)
    best = viterbi_patterns(unary, moves, arc_weight, automaton.arc_dest, automaton.state_label,
                            start, end, offsets)
    paths, counts = nbest_patterns(unary, moves, arc_weight, automaton.arc_dest,
                                   automaton.state_label, start, end, offsets, n)
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        ranked = expected["ranked"][q]
        assert counts[q] == min(n, len(ranked))
        if hi == lo or not ranked:
            continue
        score = path_score(unary[lo:hi], transitions, table, start, end, tuple(best[lo:hi]))
        assert np.isfinite(score), "a forbidden potential appeared in a Viterbi path"
        np.testing.assert_allclose(score, ranked[0][0], rtol=1e-12, atol=1e-12)
        for k in range(counts[q]):
            got = path_score(unary[lo:hi], transitions, table, start, end,
                             tuple(paths[lo:hi, k]))
            np.testing.assert_allclose(got, ranked[k][0], rtol=1e-10, atol=1e-10)
        # the n best are distinct labellings
        assert len({tuple(paths[lo:hi, k]) for k in range(counts[q])}) == counts[q]


@SETTINGS
@given(problems())
def test_orders_3_and_4_match_brute_force(problem):
    automaton, expected = _check(problem)
    _check_paths(problem, automaton, expected)


@SETTINGS
@given(problems(orders=(1, 2)))
def test_orders_1_and_2_match_brute_force(problem):
    automaton, expected = _check(problem)
    _check_paths(problem, automaton, expected)


@SETTINGS
@given(problems())
def test_the_exact_pass_matches_brute_force(problem):
    _check(problem, exact=True)


@SETTINGS
@given(problems(scale=400.0))
def test_extreme_scores_match_brute_force(problem):
    # scores in the hundreds underflow the scaled pass: the exact pass takes over
    automaton, expected = _check(problem)
    _check_paths(problem, automaton, expected)


@pytest.mark.parametrize("order", [1, 3])
def test_a_label_whose_emission_underflows_keeps_its_paths(order):
    # found by hypothesis: label 0 scores 883 below label 1 on the second
    # token, so exp underflows to 0, yet the end weights make (0, 0) the best
    # path; the scaled pass must hand the sequence to the exact pass
    unary = np.array([[328.6472574, 132.17483047], [-521.26289264, 362.14234667]])
    transitions = np.array([[178.54982895, -214.78129414], [232.44724168, -np.inf]])
    start = np.array([117.65299866, 11.36889653])
    end = np.array([218.68519464, -294.5816348])
    offsets = np.array([0, 2])
    patterns = LabelPatterns.seen(np.array([0, 1]), offsets, 2, order)
    problem = (unary, transitions, patterns, np.zeros(patterns.n_patterns), start, end,
               offsets)
    automaton, expected = _check(problem)
    _check_paths(problem, automaton, expected)


@SETTINGS
@given(problems(orders=(3,), scale=12.0))
def test_strong_pattern_weights_match_brute_force(problem):
    # large pattern weights make the scaled pass's differences cancel: what it
    # does not vouch for is redone exactly
    _check(problem)


def test_a_sequence_alone_gets_the_bits_it_gets_in_its_group():
    # lanes run the one-sequence operations side by side
    rng = np.random.default_rng(3)
    lengths = np.array([4] * 9 + [2, 7])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    labels = rng.integers(0, 3, offsets[-1])
    patterns = LabelPatterns.seen(labels, offsets, 3, 3)
    problem = (rng.normal(size=(offsets[-1], 3)), rng.normal(size=(3, 3)), patterns,
               rng.normal(size=patterns.n_patterns), rng.normal(size=3), rng.normal(size=3),
               offsets)
    _, log_z, marginals, _ = _run(problem)
    for q in range(lengths.shape[0]):
        lo, hi = offsets[q], offsets[q + 1]
        alone = (problem[0][lo:hi],) + problem[1:6] + (np.array([0, hi - lo]),)
        _, one_log_z, one_marginals, _ = _run(alone)
        assert one_log_z[0] == log_z[q]
        np.testing.assert_array_equal(one_marginals, marginals[lo:hi])


def test_results_do_not_depend_on_the_thread_count():
    # enough sequences for several chunks of the scaled pass
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 6, 9000)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    labels = rng.integers(0, 3, offsets[-1])
    patterns = LabelPatterns.seen(labels, offsets, 3, 3)
    unary = rng.normal(size=(offsets[-1], 3))
    unary[::97] = -np.inf  # some labels fixed, some sequences infeasible: both passes
    problem = (unary, rng.normal(size=(3, 3)), patterns, rng.normal(size=patterns.n_patterns),
               rng.normal(size=3), rng.normal(size=3), offsets)
    first, second = results_per_thread_count(lambda: _run(problem)[1:])
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert np.isneginf(first[0]).any() and np.isfinite(first[0]).any()


def test_viterbi_and_nbest_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(8)
    lengths = rng.integers(0, 6, 300)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    labels = rng.integers(0, 3, offsets[-1])
    automaton = PatternAutomaton(LabelPatterns.seen(labels, offsets, 3, 4))
    weights = rng.normal(size=automaton.patterns.n_patterns)
    arc_weight = automaton.arc_weights(rng.normal(size=(3, 3)), weights)
    unary = np.round(rng.normal(size=(offsets[-1], 3)))  # ties
    args = (unary, move_table_of(automaton), arc_weight, automaton.arc_dest,
            automaton.state_label, np.zeros(3), np.zeros(3), offsets)
    first, second = results_per_thread_count(lambda: (viterbi_patterns(*args),
                                                      *nbest_patterns(*args, 3)))
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_a_single_token_and_an_empty_sequence(order):
    patterns = LabelPatterns.every(2, order)
    unary = np.array([[0.5, -1.0]])
    offsets = np.array([0, 0, 1, 1], dtype=np.int64)
    problem = (unary, np.zeros((2, 2)), patterns, np.ones(patterns.n_patterns),
               np.array([0.0, 2.0]), np.array([1.0, 0.0]), offsets)
    _, log_z, marginals, counts = _run(problem)
    scores = np.array([0.5 + 0.0 + 1.0, -1.0 + 2.0 + 0.0])
    np.testing.assert_allclose(log_z, [0.0, np.logaddexp(*scores), 0.0])
    np.testing.assert_allclose(marginals[0], np.exp(scores - np.logaddexp(*scores)))
    assert not counts.any()


def test_a_strongly_negative_pattern_weight_keeps_the_marginals_exact():
    # found by a stress run: with one class every marginal is 1, but the
    # 4-gram's weight of -12.9 made expm1 near -1 cancel in the scaled pass,
    # which gave 1.0000022 on the longer sequence; its marginals no longer sum
    # to 1, so the lane goes to the exact pass
    unary = np.array([[0.07824565], [0.1437029], [-0.11745121], [-0.19402269],
                      [-0.26853557], [-0.1866721], [-0.07939514], [0.40312075],
                      [0.16812038]])
    patterns = LabelPatterns.every(1, 3)
    assert patterns.n_patterns == 2
    problem = (unary, np.array([[-0.29051634]]), patterns, np.array([1.53297021, -12.92352674]),
               np.array([0.58580888]), np.array([-0.52359259]), np.array([0, 4, 9]))
    automaton, expected = _check(problem)
    _check_paths(problem, automaton, expected)
