"""The JIT policy and the chunked, deterministic batch driver every kernel shares.

Parallelism is over a fixed number of contiguous chunks of sequences, chosen from
the data alone, followed by a serial reduction in chunk order, so every result
is bitwise identical whatever the thread count.

``fastmath`` stays off everywhere: it lets LLVM assume no infinities, which turns
the ``-inf`` guards of log-space code into NaN.
"""

import warnings

import numpy as np
from numba import njit


class CacheUnavailableWarning(RuntimeWarning):
    """numba found no writable directory for its cache: kernels compile per process."""


_cache_warned = False


def compiled(parallel=False):
    """``njit`` with the options every kernel shares, cached on disk when possible.

    error_model="numpy": a float division by zero gives inf/NaN instead of
    raising (the callers guard every division that matters), and loops skip
    zero checks. ``cache=True`` makes numba look for a writable directory at
    decoration time (NUMBA_CACHE_DIR, ``__pycache__`` beside this file, the
    user's cache directory) and raise a RuntimeError if there is none, which
    would make ``import skcrf`` fail on a read-only install. Then the kernels
    are compiled without a cache instead, with one warning.
    """
    options = dict(nogil=True, error_model="numpy", parallel=parallel)

    def decorate(func):
        try:
            return njit(cache=True, **options)(func)
        except RuntimeError as error:
            if "cannot cache" not in str(error):
                raise
            _warn_cache_unavailable()
            return njit(cache=False, **options)(func)

    return decorate


def _warn_cache_unavailable():
    global _cache_warned
    if _cache_warned:
        return
    _cache_warned = True
    warnings.warn(
        "numba cannot write a cache for skcrf's kernels (no writable NUMBA_CACHE_DIR, "
        "skcrf/__pycache__ or user cache directory), so they are compiled again in "
        "every process, which takes about a minute on first use. Set NUMBA_CACHE_DIR "
        "to a writable directory to cache them.", CacheUnavailableWarning, stacklevel=3)


#: Upper bound on the number of work chunks. It only has to exceed the thread
#: count comfortably for load balance; it must not depend on it.
N_CHUNKS = 64


@compiled()
def chunk_bounds(offsets, n_chunks):
    """Split sequences into ``n_chunks`` contiguous groups of similar token counts.

    Returns (n_chunks + 1,) int64 sequence indices; chunk c holds sequences
    ``bounds[c]:bounds[c + 1]`` (possibly none).
    """
    n_sequences = offsets.shape[0] - 1
    n_tokens = offsets[n_sequences]
    bounds = np.empty(n_chunks + 1, np.int64)
    bounds[0] = 0
    q = 0
    for c in range(1, n_chunks):
        target = (n_tokens * c) // n_chunks
        while q < n_sequences and offsets[q] < target:
            q += 1
        bounds[c] = q
    bounds[n_chunks] = n_sequences
    return bounds


@compiled()
def default_n_chunks(offsets):
    n_sequences = offsets.shape[0] - 1
    return max(1, min(N_CHUNKS, n_sequences))


@compiled()
def longest_sequence(offsets, lo, hi):
    longest = 0
    for q in range(lo, hi):
        longest = max(longest, offsets[q + 1] - offsets[q])
    return longest

