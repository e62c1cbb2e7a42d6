"""Calling the numba kernels: how many threads they use, safely from many threads, and
the exceptions they raise, as Python raises them."""

import sys
import threading
from contextlib import contextmanager

import numba
from threadpoolctl import threadpool_limits

from ..inference._runtime.batch import use_threads

def effective_n_threads(n_jobs):
    """Thread count for ``n_jobs``, following scikit-learn's conventions.

    ``None`` and ``-1`` mean every thread numba may use (inside a joblib worker
    that is already limited through ``NUMBA_NUM_THREADS``, inside a Dask
    worker its ``nthreads``); ``-2`` all but one, and so on; a positive value
    is capped at that maximum.
    """
    available = numba.config.NUMBA_NUM_THREADS
    worker_threads = _dask_worker_threads()
    if worker_threads is not None:
        available = max(1, min(available, worker_threads))
    if n_jobs is None:
        return available
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None, -1 or a positive int.")
    if n_jobs < 0:
        return max(1, available + 1 + n_jobs)
    return min(n_jobs, available)


def _dask_worker_threads():
    """The thread share of the Dask worker running the caller, or None outside one.

    A worker runs ``nthreads`` tasks at once on a machine it may share with
    other workers; numba, which sizes its pool by the machine's cores, would
    otherwise run that many threads per task. Dask's nanny limits BLAS and
    OpenMP through their variables, but not numba.
    """
    distributed = sys.modules.get("distributed")
    if distributed is None:  # Dask not imported: no worker here
        return None
    try:
        worker = distributed.get_worker()
    except ValueError:  # not in a worker's task
        return None
    return int(worker.state.nthreads)


#: Below this many tokens a call runs its kernels on one thread: waking the
#: other threads costs more than they save on a few sentences (a single
#: sentence took twice as long on two threads as on one). The kernels' chunks
#: are fixed by the data, so the results do not depend on it.
SMALL_BATCH_TOKENS = 2048


def kernel_threads(n_jobs, hold_blas=False, n_tokens=None):
    """Run the enclosed kernel calls on ``effective_n_threads(n_jobs)`` threads.

    With ``n_tokens`` (the size of the batch) below :data:`SMALL_BATCH_TOKENS`,
    on one thread.

    The thread count is local to the calling thread
    (:func:`~skcrf.inference._runtime.batch.use_threads`), so concurrent callers with
    different settings do not interfere, and ``predict`` may be called from
    several threads at once.

    With ``hold_blas``, BLAS is held to one thread meanwhile: the solver's BLAS
    calls are vector dot products too small to gain from threads, and idle
    BLAS threads spin on the cores the kernels' threads need (measured: 30 L-BFGS
    iterations on esp.train took 6.5-7.5 s with one BLAS thread, 12.8-13.5 s
    with two, same run). Prediction calls no BLAS, so it leaves the
    process-wide BLAS setting alone.

    Like :func:`kernel_exceptions`, it re-raises the exception numba wrapped
    in a SystemError.
    """
    small = n_tokens is not None and n_tokens < SMALL_BATCH_TOKENS
    n_threads = 1 if small else effective_n_threads(n_jobs)
    if hold_blas:
        return _threads_holding_blas(n_threads)
    return _KernelThreads(n_threads)


class _KernelThreads(use_threads):
    """:func:`use_threads` that also does :func:`kernel_exceptions`' work.

    A class, not nested generators: each prediction call, of one sentence
    too, enters one.
    """

    __slots__ = ()

    def __exit__(self, kind, error, traceback):
        super().__exit__(kind, error, traceback)
        if kind is not None and issubclass(kind, SystemError):
            _raise_pending(error)
        return False


@contextmanager
def _threads_holding_blas(n_threads):
    """:func:`kernel_threads` with ``hold_blas``: the training's."""
    with kernel_exceptions(), _blas_single_threaded(), use_threads(n_threads):
        yield


#: How CPython words the error of a C function that returned normally with an
#: exception pending.
_PENDING = "returned a result with an exception set"


class kernel_exceptions:
    """Re-raise the KeyboardInterrupt or MemoryError that numba wrapped in a SystemError.

    A Ctrl-C that arrives while a kernel runs is left pending, and a
    MemoryError inside a parallel region is set without stopping the
    kernel; when the kernel then returns (or calls back into Python), CPython
    reports ``SystemError: ... returned a result with an exception set``,
    chained (``__cause__``) to the pending exception, possibly through more
    such SystemErrors. The estimator's callers (the CLI's "interrupted"
    path, a notebook's interrupt button) expect the original exception.

    A context manager (``with kernel_exceptions():``); a class, not a
    generator, as one-sentence calls enter it.
    """

    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, kind, error, traceback):
        if kind is not None and issubclass(kind, SystemError):
            _raise_pending(error)
        return False


def _raise_pending(error):
    """Raise the exception ``error`` wraps (see :func:`kernel_exceptions`), if any."""
    pending = _pending_exception(error)
    if pending is not None:
        raise pending.with_traceback(pending.__traceback__) from None


def _pending_exception(error):
    """The exception at the end of a chain of "exception set" SystemErrors, or None."""
    seen = set()
    while (isinstance(error, SystemError) and _PENDING in str(error)
           and id(error) not in seen):
        seen.add(id(error))
        error = error.__cause__
    if error is None or isinstance(error, SystemError):
        return None
    return error


_blas_lock = threading.Lock()
_blas_users = 0
_blas_limits = None


@contextmanager
def _blas_single_threaded():
    """``threadpool_limits(1, "blas")`` shared by overlapping callers (fits in threads).

    The limit is process-wide: a caller restoring the original limits on its
    own would lift it under another one still running, and one that entered
    second would "restore" the limit of 1 for good when leaving last. So the
    first caller in sets it and the last one out restores it.
    """
    global _blas_users, _blas_limits
    with _blas_lock:
        if _blas_users == 0:
            _blas_limits = threadpool_limits(limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                _blas_limits.restore_original_limits()
                _blas_limits = None
