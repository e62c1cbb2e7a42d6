"""Run a computation under several kernel thread counts, for determinism tests."""

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
