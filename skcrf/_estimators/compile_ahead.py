"""A model's prediction kernels compiled in a second process while its first fit compiles.

numba compiles under a process-wide lock: a fresh install's first ``fit``,
``predict`` and ``predict_marginals`` compile their kernels one after the
other, on one core, while the machine usually has more. When the first fit
of a chain (order 1, no transition features), a semi-Markov CRF (order 1)
or a tree CRF (no link features) finds numba's cache without that
structure's prediction kernels, it starts ``python -m skcrf._estimators.compile_worker
KIND`` in the background, which compiles the kernels that fit reaches last
and prediction needs (the structure's Viterbi and forward-backward, whose
core the chain's training kernel shares, the unary scores, the L-BFGS
steps) and saves them in the same cache. The fit goes on meanwhile; a
kernel it reaches after the other process saved it is loaded instead of
compiled.

Nothing waits for the other process and nothing depends on it: if it fails,
or is slower, every kernel compiles here as before (a kernel both compile
is saved twice, under the cache's lock). It is not started with a single
usable CPU (it would only compete), without a writable cache (it could
hand nothing over), inside ``skcrf warmup`` (which runs its own worker
processes), or when the environment sets ``SKCRF_COMPILE_AHEAD=0``; at most
one is started per kind and process, and it runs at a lower priority, behind
the fit on a busy machine.
"""

import os
import subprocess
import sys
import threading

#: Set to "0" to never start the process (it is also set in the process itself).
ENVIRONMENT_SWITCH = "SKCRF_COMPILE_AHEAD"

#: The module the second process runs: it imports the estimators, which import
#: this module, so it lives apart (no import circle).
WORKER_MODULE = "skcrf._estimators.compile_worker"

#: The kinds of model, each with the module and name of a kernel only its
#: prediction compiles: its cache index is absent while the kernels are.
KINDS = {"chain": ("skcrf.inference.chain.order1", "_lane_chunks"),
         "semi-markov": ("skcrf.inference.semimarkov.passes", "_viterbi_chunks"),
         "tree": ("skcrf.inference.tree.passes", "_tree_viterbi_chunks")}

#: The kinds whose compiling process this process has considered (once each).
_started = set()
_lock = threading.Lock()
#: The process started, if any (a benchmark waits for it before its next measurement).
process = None


def compile_ahead(kind):
    """Start the background compilation of ``kind``'s prediction kernels, once per process.

    Parameters
    ----------
    kind : {"chain", "semi-markov", "tree"}

    Returns
    -------
    process : subprocess.Popen or None
        None when it was not needed or not wanted (see the module docstring).
    """
    global process
    with _lock:
        if kind in _started or os.environ.get(ENVIRONMENT_SWITCH) == "0":
            return None
        _started.add(kind)
    if _usable_cpus() < 2 or not _prediction_kernels_missing(kind):
        return None
    environment = dict(os.environ, **{ENVIRONMENT_SWITCH: "0"})
    try:
        process = subprocess.Popen(worker_command(kind),
                                   env=environment, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:  # no interpreter to start (an embedded Python): compile here
        return None
    return process


def worker_command(kind):
    """The command that starts the second process: isolated, on this process's paths.

    ``python -m`` would put the current directory first on the child's
    ``sys.path``, so a fit run from a folder holding a ``skcrf/`` (or any
    module the worker imports) would run that code. The child starts isolated
    (``-I``: no current directory, no ``PYTHON*`` variables, no user site) and
    takes this process's own ``sys.path``, made absolute, with the folder this
    skcrf was imported from first; a relative entry (``''``, the current
    directory of ``python -c`` and the REPL) is left out.
    """
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [package_parent]
    for entry in sys.path:
        if entry and os.path.isabs(entry) and entry not in paths:
            paths.append(entry)
    bootstrap = ("import sys; sys.path[:0] = sys.argv[2:]; "
                 f"from {WORKER_MODULE} import main; main(sys.argv[1])")
    return [sys.executable, "-I", "-c", bootstrap, kind, *paths]


def _usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _prediction_kernels_missing(kind):
    """Whether numba's cache lacks ``kind``'s prediction kernels, and could take them.

    The cache index of its sentinel kernel (:data:`KINDS`) is absent from a
    cache that never held it; without a writable cache, or with a numba
    whose cache is laid out otherwise, this says no (nothing to hand over,
    or no way to tell).
    """
    import importlib

    from ..inference._runtime import cache as _cache

    module, name = KINDS[kind]
    kernel = getattr(importlib.import_module(module), name)
    if _cache.cache_unavailable():
        return False
    index = _cache.index_path(kernel)
    return index is not None and not os.path.exists(index)
