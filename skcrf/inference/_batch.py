"""The JIT policy and the chunked, deterministic batch driver every kernel shares.

Parallelism is over a fixed number of contiguous chunks of sequences, chosen from
the data alone, followed by a serial reduction in chunk order, so every result
is bitwise identical whatever the thread count.

The chunks run on Python threads (:func:`run_chunks`), each calling a
``nogil`` kernel on a range of chunks, not in numba ``prange`` loops: a
``parallel=True`` function is compiled through numba's parfor passes and an
outlined copy of every loop body, which made the first fit of a fresh
install spend most of its time compiling, and its thread pool (OpenMP,
TBB or numba's workqueue) brought its own spin-waits and launch rules. A
kernel of the batch takes ``(chunk_lo, chunk_hi, ...)`` and writes only its
chunks' rows of its outputs; the caller reduces them in chunk order.

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

import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
from numba import njit

from . import _compile_notice


class CacheUnavailableWarning(RuntimeWarning):
    """numba found no writable directory for its cache: kernels compile per process."""


class CacheDamagedWarning(RuntimeWarning):
    """A file of numba's cache could not be read: its kernels were compiled again."""


_cache_warned = False
_damage_warned = False


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
    warning, instead of failing every call (see :func:`_recover_damaged_cache`).

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
            _warn_cache_unavailable()
            return njit(cache=False, **options)(func)
        _recover_damaged_cache(dispatcher)
        return dispatcher

    return decorate


def _recover_damaged_cache(dispatcher):
    """Make a damaged cache file of ``dispatcher`` mean "compile again", not an error.

    numba unpickles the index (.nbi) and data (.nbc) files of a kernel's
    cache on its first call in a process; random bytes there raise
    UnpicklingError (or EOFError, ValueError...) from every call, in every
    process, until someone deletes the file. Here a failed load discards the
    kernel's index, so that numba compiles the kernel and writes a fresh
    cache, and a failed save only costs the cache. numba offers no hook for
    this: the dispatcher's cache object gets wrapped methods, and a numba
    without that object is left alone.
    """
    cache = getattr(dispatcher, "_cache", None)
    load = getattr(cache, "load_overload", None)
    save = getattr(cache, "save_overload", None)
    if load is None or save is None:
        return

    def load_overload(sig, target_context):
        try:
            with _locked(getattr(getattr(cache, "_cache_file", None), "_index_path", None),
                         shared=True):
                return load(sig, target_context)
        except Exception as error:  # noqa: BLE001 - anything unreadable: recompile
            index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
            _warn_cache_damaged(index, error)
            if index is not None:
                try:
                    os.remove(index)
                except OSError:
                    pass  # then saving fails too, and the kernel stays uncached
            return None

    def save_overload(sig, data):
        index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
        try:
            with _locked(index, shared=False):
                save(sig, data)
        except Exception as error:  # noqa: BLE001 - the compiled kernel works anyway
            _warn_cache_damaged(index, error)

    cache.load_overload = load_overload
    cache.save_overload = save_overload


@contextmanager
def _locked(index_path, shared):
    """Hold a lock on ``index_path + ".lock"`` (POSIX; elsewhere, nothing).

    numba saves a kernel's new signature by reading the kernel's index,
    choosing the first free data-file number, then writing the index and
    the data file. Two processes saving two signatures of one kernel at once
    (``skcrf warmup``'s parallel workers, Dask workers sharing a cache) can
    pick the same number, and the index can then point one signature at the
    other's machine code; a process loading between the index and the data
    can read the data file an older source left under that number. A save
    holds the lock exclusively and a load shared, so neither happens.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        fcntl = None
    if fcntl is None or index_path is None:
        yield
        return
    try:
        handle = open(index_path + ".lock", "a+b")
    except OSError:  # an unwritable cache: numba's own save fails and is reported
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _warn_cache_damaged(path, error):
    global _damage_warned
    if _damage_warned:
        return
    _damage_warned = True
    where = f" ({path})" if path else ""
    warnings.warn(
        f"skcrf's numba cache could not be read or written{where}: "
        f"{type(error).__name__}: "
        f"{error}. The kernels concerned are being recompiled, which takes a while "
        f"once, and their cache rewritten.", CacheDamagedWarning, stacklevel=2)


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


#: One line on the ``skcrf`` logger when kernels take a while to compile (a cache miss).
_compile_notice.install(lambda: _compile_notice.NO_CACHE_MESSAGE if _cache_warned
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



# --- the thread driver ------------------------------------------------------------------

#: Threads the calling thread's kernels run on, set by :func:`use_threads`.
_local = threading.local()
_pool = None
_pool_lock = threading.Lock()


def available_threads():
    """The machine's thread budget: numba's ``NUMBA_NUM_THREADS`` (the cores, by default)."""
    from numba import config
    return max(1, int(config.NUMBA_NUM_THREADS))


def current_threads():
    """Threads :func:`run_chunks` uses on the calling thread (all, unless set)."""
    return getattr(_local, "n_threads", None) or available_threads()


@contextmanager
def use_threads(n_threads):
    """Run the enclosed :func:`run_chunks` calls of this thread on ``n_threads`` threads.

    Local to the calling thread, so concurrent callers with different
    settings do not interfere; nested uses restore the outer setting.
    """
    previous = getattr(_local, "n_threads", None)
    _local.n_threads = max(1, int(n_threads))
    try:
        yield
    finally:
        _local.n_threads = previous


def _shared_pool():
    """The process's worker threads (created on first parallel use)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=max(1, available_threads() - 1),
                                           thread_name_prefix="skcrf-kernel")
    return _pool


#: Tasks per thread: ranges of chunks handed out in turn, so that a thread
#: slowed by another process takes fewer of them.
TASKS_PER_THREAD = 4


def run_chunks(kernel, n_chunks, *args):
    """Call ``kernel(chunk_lo, chunk_hi, *args)`` over the chunks ``0..n_chunks - 1``.

    The chunks are cut into contiguous ranges, which the calling thread and
    up to ``current_threads() - 1`` pool threads take in turn, each calling
    the ``nogil`` kernel on its range. A kernel writes only the rows of its
    own chunks, so which thread ran which range does not change a bit of the
    result. The first exception a range raises is raised here once every
    range started has finished; a KeyboardInterrupt on the calling thread
    stops the handing out of ranges (the ones under way finish).
    """
    n_chunks = int(n_chunks)
    if n_chunks <= 0:
        return
    n_threads = min(current_threads(), n_chunks)
    if n_threads <= 1:
        kernel(0, n_chunks, *args)
        return
    n_tasks = min(n_chunks, TASKS_PER_THREAD * n_threads)
    edges = [n_chunks * k // n_tasks for k in range(n_tasks + 1)]
    tasks = iter(range(n_tasks))
    lock = threading.Lock()
    failures = []

    def work():
        while True:
            with lock:
                task = None if failures else next(tasks, None)
            if task is None:
                return
            try:
                kernel(edges[task], edges[task + 1], *args)
            except BaseException as error:  # noqa: BLE001 - raised by the caller below
                with lock:
                    failures.append(error)
                return

    helpers = [_shared_pool().submit(work) for _ in range(n_threads - 1)]
    try:
        work()
    except BaseException as error:  # a Ctrl-C on this thread, between two ranges
        with lock:
            failures.append(error)
    # the helpers write into arrays the caller owns: wait for them, even past a Ctrl-C
    for helper in helpers:
        while True:
            try:
                helper.result()
                break
            except KeyboardInterrupt as error:
                with lock:
                    failures.append(error)
    if failures:
        interrupts = [error for error in failures if isinstance(error, KeyboardInterrupt)]
        raise (interrupts or failures)[0]
