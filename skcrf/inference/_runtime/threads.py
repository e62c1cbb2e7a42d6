"""The kernels' threads: a small pool of Python threads driving ``nogil`` kernels.

Parallelism is over a fixed number of chunks chosen from the data alone
(:mod:`._batch`); :func:`run_chunks` hands ranges of them to the calling
thread and up to ``current_threads() - 1`` pool threads, each calling the
kernel on its range. A kernel writes only the rows of its own chunks, so the
thread count never changes a bit of a result. numba's ``parallel=True``
(and its OpenMP / TBB / workqueue layers) is not used: its parfor passes
made a fresh install's first fit spend most of its time compiling, and its
thread pools brought their own spin-waits and launch rules.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

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


class use_threads:
    """Run the enclosed :func:`run_chunks` calls of this thread on ``n_threads`` threads.

    Local to the calling thread, so concurrent callers with different
    settings do not interfere; nested uses restore the outer setting. A
    class, not a generator: every prediction call enters one, and a
    sentence's call is short.
    """

    __slots__ = ("_n_threads", "_previous")

    def __init__(self, n_threads):
        self._n_threads = max(1, int(n_threads))

    def __enter__(self):
        self._previous = getattr(_local, "n_threads", None)
        _local.n_threads = self._n_threads

    def __exit__(self, kind, error, traceback):
        _local.n_threads = self._previous
        return False


def _shared_pool():
    """The process's worker threads (created on first parallel use)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=max(1, available_threads() - 1),
                                           thread_name_prefix="skcrf-kernel")
    return _pool


def _forget_pool_in_child():
    """Drop the parent's pool in a forked child, which inherits it without its threads.

    ``fork`` copies only the forking thread: the child's pool would be an
    object whose workers never run, and :func:`run_chunks` would wait for
    them forever. The child makes its own pool on its first parallel use.
    The lock is replaced too, as another thread may have held it at the fork.
    """
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


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
