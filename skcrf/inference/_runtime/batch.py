"""The JIT policy and the chunked, deterministic batch driver every kernel shares.

Parallelism is over a fixed number of contiguous chunks of sequences, chosen from
the data alone, followed by a serial reduction in chunk order, so every result
is bitwise identical whatever the thread count.

The chunks run on skcrf's own threads (:func:`._threads.run_chunks`, re-exported
here), each calling a ``nogil`` kernel on a range of chunks. A kernel of the
batch takes ``(chunk_lo, chunk_hi, ...)`` and writes only its chunks' rows of
its outputs; the caller reduces them in chunk order. The on-disk cache's
robustness is :mod:`._cache`'s.

``fastmath`` stays off: it lets LLVM assume no infinities, which turns the
``-inf`` guards of log-space code into NaN. Only its ``contract`` flag is on,
and only in the multiply-add loops of the probability-domain passes
(``compiled(contract=True)``: the order-1 pass, its lanes, and the
vector-matrix product the tree and order-2 passes share with it). A fused
multiply-add rounds once where a multiply then an add round twice; on the
finite, non-negative operands of these passes it changes no inf or NaN.
It must be on in all or none of the loops whose results are compared bit
for bit (the one-sequence pass and its lanes). The processor decides: one
without fused multiply-adds keeps the two roundings, so results are
bitwise reproducible on one family of processors, not across them.
"""

import numpy as np
from numba import njit

from . import cache as _cache
from . import compile_notice as _compile_notice
from .cache import CacheDamagedWarning, CacheUnavailableWarning
from .threads import current_threads, run_chunks, use_threads

__all__ = ["CacheDamagedWarning", "CacheUnavailableWarning", "N_CHUNKS", "chunk_bounds",
           "chunk_partials", "chunk_totals", "compiled", "current_threads", "default_n_chunks", "least_chunk_count",
           "longest_sequence", "row_chunk_count", "run_chunks", "use_threads"]


def compiled(contract=False, inline=False):
    """``njit`` with the options every kernel shares, cached on disk when possible.

    ``contract=True`` lets LLVM fuse a multiply and an add into one
    instruction (see the module docstring). ``inline=True`` inlines a small
    helper into its callers at numba's level: a call that passes arrays
    costs two reference-count calls (atomic) per array, which matters for a
    helper called once per token or per sequence.

    error_model="numpy": a float division by zero gives inf/NaN instead of
    raising (the callers guard every division that matters), and loops skip
    zero checks. ``cache=True`` makes numba look for a writable directory at
    decoration time (NUMBA_CACHE_DIR, ``__pycache__`` beside this file, the
    user's cache directory) and raise a RuntimeError if there is none, which
    would make ``import skcrf`` fail on a read-only install. Then the kernels
    are compiled without a cache instead, with one warning. A cache file that
    cannot be read (truncated, overwritten) is recompiled over, with one
    warning, instead of failing every call (see :func:`._cache.recover_damaged_cache`).

    numba compiles a kernel once per distinct tuple of argument types, and a
    constant passed from another kernel (``0``, ``True``) has a type of its
    own, ``Literal[int](0)``: a callee reached with ``0`` from a training
    kernel and with a variable from a prediction kernel compiles twice. Pass
    ``np.int64(0)`` and ``np.bool_(True)`` instead where a kernel is shared.
    """
    options = dict(nogil=True, error_model="numpy")
    if inline:
        options["inline"] = "always"
    if contract:
        options["fastmath"] = {"contract"}

    def decorate(func):
        try:
            dispatcher = njit(cache=True, **options)(func)
        except RuntimeError as error:
            if "cannot cache" not in str(error):
                raise
            _cache.warn_cache_unavailable()
            return njit(cache=False, **options)(func)
        _cache.read_only_in_tree_cache(dispatcher)
        _cache.recover_damaged_cache(dispatcher)
        _cache.key_by_kernel_sources(dispatcher)
        return dispatcher

    return decorate


#: One line on the ``skcrf`` logger when kernels take a while to compile (a cache miss).
_compile_notice.install(lambda: _compile_notice.NO_CACHE_MESSAGE if _cache._cache_warned
                        else _compile_notice.MESSAGE)


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


def chunk_partials(n_chunks, *shapes):
    """Zeroed per-chunk partial sums: one (n_chunks, *shape) float64 array per shape (a tuple).

    Each chunk adds into its own row, and :func:`chunk_totals` adds the rows up.
    """
    return tuple(np.zeros((n_chunks, *shape)) for shape in shapes)


def chunk_totals(*partials):
    """Each array of per-chunk partial sums, (n_chunks, ...), added up in chunk order.

    The serial reduction every batch driver ends with: whatever the thread
    count, the chunks' sums are added in the same order, so the totals are
    bitwise the same. Returns a tuple, one total per argument.
    """
    totals = []
    for partial in partials:
        total = np.zeros(partial.shape[1:])
        for part in partial:
            total += part
        totals.append(total)
    return tuple(totals)


def least_chunk_count(offsets, least_sequences, most_chunks):
    """Chunks of a batch whose chunks want ``least_sequences`` sequences at least.

    From the data alone, at most ``most_chunks`` and at least 1: what the
    kernels that run a chunk's sequences side by side (lanes) cut a batch into.
    """
    n_sequences = offsets.shape[0] - 1
    return max(1, min(most_chunks, n_sequences // least_sequences))


def row_chunk_count(n_rows):
    """Chunks of a batch of independent rows: :data:`N_CHUNKS`, fewer for fewer rows."""
    return max(1, min(N_CHUNKS, int(n_rows)))


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
