"""Run a computation under several numba thread counts, for determinism tests."""

import numba


def results_per_thread_count(compute, thread_counts=(1, 2)):
    """``compute()`` under each thread count, restoring numba's default afterwards.

    Returns a list of results in the order of ``thread_counts``.
    """
    results = []
    for n_threads in thread_counts:
        numba.set_num_threads(n_threads)
        try:
            results.append(compute())
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return results
