"""Checks every kernel test file repeats: brute force at two scales, best scores, inputs kept."""

import numpy as np
from hypothesis import HealthCheck, given, settings


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


def assert_inputs_not_mutated(arrays, *runs):
    """Each of ``runs`` (callables) leaves ``arrays`` as they were."""
    copies = [a.copy() for a in arrays]
    for run in runs:
        run()
    for original, copy in zip(arrays, copies):
        np.testing.assert_array_equal(original, copy)


def kernel_settings(max_examples):
    """Hypothesis settings of a kernel test: no deadline (numba compiles on first call)."""
    return settings(max_examples=max_examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
