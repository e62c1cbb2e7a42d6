"""Run a computation under several kernel thread counts, for determinism tests."""

import numba
import numpy as np
import pytest

from skcrf.inference._runtime.batch import use_threads


def results_per_thread_count(compute, thread_counts=(1, 2)):
    """``compute()`` under each thread count of the kernels' driver.

    Returns a list of results in the order of ``thread_counts``.
    """
    results = []
    for n_threads in thread_counts:
        with use_threads(n_threads):
            results.append(compute())
    return results


#: Determinism across thread counts can only be seen with two threads to run
needs_two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                       reason="needs 2 threads")


def assert_same_fits_for_one_and_two_jobs(make, X, y, attributes):
    """``make(n_jobs=...)`` fitted on X, y: the same ``attributes`` and marginals, bit for bit."""
    one, two = (make(n_jobs=n_jobs).fit(X, y) for n_jobs in (1, 2))
    for name in attributes:
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))
    for a, b in zip(one.predict_marginals(X), two.predict_marginals(X)):
        np.testing.assert_array_equal(a, b)


def assert_same_for_one_and_two_threads(compute):
    """``compute()`` returns the same arrays, bit for bit, under one and two threads."""
    one, two = results_per_thread_count(compute)
    assert len(one) == len(two)
    for a, b in zip(one, two):
        assert np.array_equal(a, b)
