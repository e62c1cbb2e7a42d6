"""Say once, on the ``skcrf`` logger, that the kernels are compiling, when it takes a while.

numba compiles a kernel on its first call in a process unless its on-disk
cache has it (a cache miss: a fresh install, a new kind of input, a cache
that could not be written). A fresh install's first fit spends most of its
time there, and without a word it looks hung. numba announces every
compilation it does not load from the cache (its ``numba:compile`` event);
this listener counts those of skcrf's kernels, and when one is still under
way a couple of seconds after the first began, logs one line. A process
whose kernels all come from the cache says nothing, and short compilations
(a small kernel for a new argument type) say nothing either.

A logger, not a warning: the line comes from a timer thread, while the
caller's thread is busy compiling, and it is information, not a problem
with the caller's code. Python prints WARNING records of a logger without
handlers to stderr (``logging.lastResort``), so it shows by default;
``logging.getLogger("skcrf").setLevel(logging.ERROR)`` silences it, and the
command line's ``--quiet`` does so.
"""

import logging
import threading

logger = logging.getLogger("skcrf")

#: Seconds a compilation must have been under way before the notice is logged.
NOTICE_DELAY = 2.0

#: The estimate is what benchmarks/bench_compile.py measures on a 2-core machine:
#: 13 to 35 s for a kind of model's first fit, predict and predict_marginals.
MESSAGE = ("compiling skcrf's kernels, once per installation (numba caches them on disk; "
           "'python -m skcrf warmup' does it ahead): about half a minute for each kind "
           "of model")
NO_CACHE_MESSAGE = ("compiling skcrf's kernels; with no writable cache (see "
                    "CacheUnavailableWarning) this happens in every process")

try:  # numba's event API; without it (an older numba) there is no notice
    from numba.core.event import Listener, register
except ImportError:  # pragma: no cover - numba >= 0.53 has it
    Listener, register = object, None


class CompileNotice(Listener):
    """Listener of numba's ``numba:compile`` events that logs :data:`MESSAGE` once.

    Parameters
    ----------
    prefix : str
        Module-name prefix of the kernels it watches.
    delay : float
        Seconds a compilation must have been under way before the notice.
    message : callable
        Returns the line to log.
    """

    def __init__(self, prefix="skcrf.", delay=NOTICE_DELAY, message=lambda: MESSAGE):
        self.prefix = prefix
        self.delay = delay
        self.message = message
        self.announced = False
        self._depth = 0  # compilations of watched kernels under way (they nest)
        self._timer = None
        self._lock = threading.Lock()

    def _watched(self, event):
        dispatcher = (event.data or {}).get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", None) or ""
        return module.startswith(self.prefix)

    def on_start(self, event):
        if not self._watched(event):
            return
        with self._lock:
            self._depth += 1
            if self.announced or self._timer is not None:
                return
            self._timer = threading.Timer(self.delay, self._announce)
            # a process that ends while compiling must not wait for the timer
            self._timer.daemon = True
            self._timer.start()

    def on_end(self, event):
        if not self._watched(event):
            return
        with self._lock:
            self._depth -= 1

    def _announce(self):
        with self._lock:
            self._timer = None
            # compilations that ended within the delay were short: nothing to say
            if self.announced or self._depth <= 0:
                return
            self.announced = True
        logger.warning(self.message())


def install(message):
    """Register the notice for skcrf's kernels with numba (once, at import)."""
    if register is None:
        return None
    notice = CompileNotice(message=message)
    register("numba:compile", notice)
    return notice
