"""How many threads the numba kernels use for one call."""

from contextlib import contextmanager

import numba
from threadpoolctl import threadpool_limits


def effective_n_threads(n_jobs):
    """Thread count for ``n_jobs``, following scikit-learn's conventions.

    ``None`` and ``-1`` mean every thread numba may use (inside a joblib worker
    that is already limited through ``NUMBA_NUM_THREADS``); ``-2`` all but one,
    and so on; a positive value is capped at that maximum.
    """
    available = numba.config.NUMBA_NUM_THREADS
    if n_jobs is None:
        return available
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None, -1 or a positive int.")
    if n_jobs < 0:
        return max(1, available + 1 + n_jobs)
    return min(n_jobs, available)


@contextmanager
def kernel_threads(n_jobs):
    """Run the enclosed kernel calls on ``effective_n_threads(n_jobs)`` threads.

    numba's thread count is local to the calling thread, so concurrent callers
    with different settings do not interfere. BLAS is held to one thread
    meanwhile: the solver's BLAS calls are vector dot products too small to
    gain from threads, and idle BLAS threads spin on the cores numba's threads
    need (measured: 30 L-BFGS iterations on esp.train took 6.5-7.5 s with one
    BLAS thread, 12.8-13.5 s with two, same run).
    """
    previous = numba.get_num_threads()
    numba.set_num_threads(effective_n_threads(n_jobs))
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            yield
    finally:
        numba.set_num_threads(previous)
