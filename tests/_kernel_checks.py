"""Checks every kernel test file repeats: brute force at two scales, best scores, inputs kept."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._threads import assert_same_for_one_and_two_threads, needs_two_threads


def brute_force_tests(settings, problems, check, extreme_scale):
    """The pair of brute-force tests of a kernel file, as module-level test functions.

    ``check(problem)`` compares the kernels with enumeration; it runs on
    ``problems()`` and on ``problems(scale=extreme_scale)``, whose scores in
    the hundreds underflow the scaled passes so that the log-space ones take
    over.
    """

    @settings
    @given(problems())
    def test_matches_brute_force(problem):
        check(problem)

    @settings
    @given(problems(scale=extreme_scale))
    def test_matches_brute_force_with_extreme_scores(problem):
        check(problem)

    return test_matches_brute_force, test_matches_brute_force_with_extreme_scores


def assert_decoded_scores_are_best(offsets, log_z, best_scores, score_of):
    """Each feasible sequence's decoding scores the enumerated best score.

    ``score_of(q, lo, hi)`` is the brute-force score of what the kernel
    decoded for sequence ``q`` (tokens ``lo:hi``); a tie may pick another
    labelling than enumeration, so scores are compared, not labellings.
    """
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        if hi == lo or log_z[q] == -np.inf:
            continue
        score = score_of(q, lo, hi)
        assert np.isfinite(score), f"a forbidden score appeared in sequence {q}'s decoding"
        np.testing.assert_allclose(score, best_scores[q], rtol=1e-12, atol=1e-12)


def invariant_tests(small_batch, large_batch, run):
    """The inputs-kept and the one-vs-two-threads tests of a kernel file.

    ``run(batch)`` runs the kernels and returns their arrays; ``small_batch()``
    and ``large_batch()`` make the random batches of the two tests.
    """

    def test_inputs_are_not_mutated():
        batch = small_batch()
        assert_inputs_not_mutated(batch, lambda: run(batch))

    @needs_two_threads
    def test_bitwise_identical_for_one_and_two_threads():
        batch = large_batch()
        assert_same_for_one_and_two_threads(lambda: run(batch))

    return test_inputs_are_not_mutated, test_bitwise_identical_for_one_and_two_threads


def assert_inputs_not_mutated(arrays, *runs):
    """Each of ``runs`` (callables) leaves ``arrays`` as they were."""
    copies = [a.copy() for a in arrays]
    for run in runs:
        run()
    for original, copy in zip(arrays, copies):
        np.testing.assert_array_equal(original, copy)


@st.composite
def segment_problems(draw, scale=2.0, max_labels=3, max_length=4):
    """Random semi-Markov batches: 1-3 labels, segments up to 1-3 tokens, 0-4 tokens, -inf.

    Returns (state, first, last, length, transitions, start, end, offsets).
    """
    n_labels = draw(st.integers(1, max_labels))
    longest = draw(st.integers(1, 3))
    lengths = draw(st.lists(st.integers(0, max_length), min_size=1, max_size=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_tokens = sum(lengths)
    state, first, last = (rng.normal(scale=scale, size=(n_tokens, n_labels)) for _ in range(3))
    length = rng.normal(scale=scale, size=(n_labels, longest))
    transitions = rng.normal(scale=scale, size=(n_labels, n_labels))
    start = rng.normal(scale=scale, size=n_labels)
    end = rng.normal(scale=scale, size=n_labels)
    if draw(st.booleans()):
        for array in (transitions, length, state, first, last, start):
            array[rng.random(array.shape) < 0.2] = -np.inf
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return state, first, last, length, transitions, start, end, offsets


@st.composite
def forest_problems(draw, scale=3.0, max_classes=3, max_length=5, forbid=True, per_link=False):
    """Random batches of forests: 1-3 classes, 0-5 nodes each, some -inf scores.

    Returns (unary, links, root, parents, offsets): ``links`` is one
    (n_classes, n_classes) block, or with ``per_link`` a block per token.
    """
    from tests.naive_tree import SHAPES, batch_of_forests

    n_classes = draw(st.integers(1, max_classes))
    lengths = draw(st.lists(st.integers(0, max_length), min_size=1, max_size=4))
    shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=len(lengths),
                           max_size=len(lengths)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    parents, offsets = batch_of_forests(rng, lengths, shapes)
    n_tokens = int(offsets[-1])
    unary = rng.normal(scale=scale, size=(n_tokens, n_classes))
    links = rng.normal(scale=scale, size=((n_tokens,) if per_link else ()) + (n_classes,) * 2)
    root = rng.normal(scale=scale, size=n_classes)
    if forbid:
        # each kind of -inf independently: some sequences become infeasible
        for scores, rate in ((unary, 0.2), (links, 0.3), (root, 0.3)):
            if draw(st.booleans()):
                scores[rng.random(scores.shape) < rate] = -np.inf
    return unary, links, root, parents, offsets


def kernel_settings(max_examples):
    """Hypothesis settings of a kernel test: no deadline (numba compiles on first call)."""
    return settings(max_examples=max_examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
