"""numba's on-disk cache of skcrf's kernels, made robust to what users' machines do to it.

A damaged cache file means "compile again", not an error in every process
(:func:`recover_damaged_cache`); saves and loads from several processes at
once do not mix one signature's machine code into another's (:func:`_locked`);
an install whose kernel cache was written ahead (``skcrf warmup`` in a
Docker build layer) but is read-only for the user who runs it is read from
where it is (:func:`read_only_in_tree_cache`) instead of compiled again into
the user's own cache directory; and a kernel cached before a kernel it calls
changed is compiled again, not run stale (:func:`key_by_kernel_sources`).
"""

import functools
import hashlib
import os
import re
import time
import warnings
from contextlib import contextmanager
from pathlib import Path


class CacheUnavailableWarning(RuntimeWarning):
    """numba found no writable directory for its cache: kernels compile per process."""


class CacheDamagedWarning(RuntimeWarning):
    """A file of numba's cache could not be read: its kernels were compiled again."""


_cache_warned = False
_damage_warned = False
_read_only_warned = False


def read_only_in_tree_cache(dispatcher):
    """Read ``dispatcher``'s kernels from a read-only cache directory that holds them.

    numba caches a kernel in ``NUMBA_CACHE_DIR`` when it is set, else in the
    ``__pycache__`` beside its source, only if it can write there; otherwise
    it falls back to the user's cache directory, empty for a user who did
    not compile. So an image whose build ran ``skcrf warmup`` as root (into
    ``__pycache__``, or into a ``NUMBA_CACHE_DIR`` shared read-only) and
    whose container runs as another user compiled every kernel again in
    every container. When numba did not pick the directory it was asked for
    (``NUMBA_CACHE_DIR``, else the in-tree one) and that directory holds an
    index for this kernel, the kernel's cache is pointed there instead,
    read-only: the kernels it holds load, and one it lacks (a new type of
    input) is compiled in each process, with one
    :class:`CacheUnavailableWarning` saying so.
    """
    cache = getattr(dispatcher, "_cache", None)
    impl = getattr(cache, "_impl", None)
    if impl is None:
        return
    try:
        from numba.core import caching, config
        wanted = (caching.UserProvidedCacheLocator if config.CACHE_DIR
                  else caching.InTreeCacheLocator)
        if isinstance(impl.locator, wanted):
            return
        source = dispatcher.py_func.__code__.co_filename
        directory = wanted(dispatcher.py_func, source).get_cache_path()
        index = os.path.join(directory, impl.filename_base + ".nbi")
        if not os.path.isfile(index):
            return
        read_only = _read_only_function_cache(caching, wanted)(dispatcher.py_func)
    except Exception:  # noqa: BLE001 - another numba: its own cache, as it chose
        return
    read_only.save_overload = _skipped_save(read_only._cache_path)
    dispatcher._cache = read_only


def _read_only_function_cache(caching, locator):
    """numba's FunctionCache, located by ``locator``'s class, its directory maybe unwritable."""

    class ReadOnlyLocator(locator):
        def ensure_cache_path(self):
            if not os.path.isdir(self.get_cache_path()):
                raise OSError(f"no directory {self.get_cache_path()}")

    class ReadOnlyImpl(caching.CompileResultCacheImpl):
        _locator_classes = [ReadOnlyLocator]

    class ReadOnlyFunctionCache(caching.FunctionCache):
        _impl_class = ReadOnlyImpl

    return ReadOnlyFunctionCache


def _skipped_save(path):
    """A ``save_overload`` for a read-only cache: nothing saved, one warning."""

    def save_overload(sig, data):
        global _read_only_warned
        if _read_only_warned:
            return
        _read_only_warned = True
        warnings.warn(
            f"skcrf's kernel cache in {path} is read-only, and lacks a kernel this input "
            f"needs: it is compiled in this process only. Set NUMBA_CACHE_DIR to a "
            f"writable directory to keep such kernels.", CacheUnavailableWarning,
            stacklevel=2)

    return save_overload


def index_path(dispatcher):
    """The path of numba's cache index (.nbi) of ``dispatcher``'s kernels, or None.

    None without an on-disk cache, or with a numba whose cache is laid out
    otherwise (the attributes are numba's, not public).
    """
    return _index_of(getattr(dispatcher, "_cache", None))


def _index_of(cache):
    return getattr(getattr(cache, "_cache_file", None), "_index_path", None)


def recover_damaged_cache(dispatcher):
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
            with _locked(_index_of(cache), shared=True):
                return load(sig, target_context)
        except _LockTimeout as error:  # the cache is fine, only busy: compile, keep it
            _warn_lock_timeout(error)
            return None
        except Exception as error:  # noqa: BLE001 - anything unreadable: recompile
            index = _index_of(cache)
            _warn_cache_damaged(index, error)
            if index is not None:
                try:
                    os.remove(index)
                except OSError:
                    pass  # then saving fails too, and the kernel stays uncached
            return None

    def save_overload(sig, data):
        index = _index_of(cache)
        try:
            with _locked(index, shared=False):
                save(sig, data)
        except _LockTimeout as error:
            _warn_lock_timeout(error)
        except Exception as error:  # noqa: BLE001 - the compiled kernel works anyway
            _warn_cache_damaged(index, error)

    cache.load_overload = load_overload
    cache.save_overload = save_overload


def key_by_kernel_sources(dispatcher):
    """Key ``dispatcher``'s cached kernels by the sources of all of skcrf's kernels.

    numba keys a cached kernel by its own bytecode, and drops a file's cache
    index when that file changes; but a kernel compiles into itself the code
    of the kernels it calls, often defined in other files. A caller cached
    before a callee of another file changed (a development checkout after a
    pull, an editable install) kept running the callee's old code, or, were
    its arguments changed, reading memory it does not own. With the digest
    of every kernel source file (:func:`kernel_sources_digest`) in each
    entry's key, a change to any kernel file makes every cached kernel
    compile again, once.
    """
    cache = getattr(dispatcher, "_cache", None)
    own_key = getattr(cache, "_index_key", None)
    digest = kernel_sources_digest()
    if own_key is None or digest is None:
        return

    def index_key(sig, codegen):
        signature, machine, hashes = own_key(sig, codegen)
        return signature, machine, (*hashes, digest)

    cache._index_key = index_key


#: skcrf's source tree, whose kernel files :func:`kernel_sources_digest` reads.
_PACKAGE = Path(__file__).resolve().parents[2]


#: Folders of ``root`` every module of which counts, kernels or not: their
#: modules of constants (``inference/semimarkov/_roles.py``) compile into kernels.
KERNEL_FOLDERS = ("inference", "structures")

_RELATIVE_IMPORT = re.compile(rb"^\s*from\s+(\.+)([\w.]*)\s+import", re.MULTILINE)


def _is_kernel_file(text):
    return b"@compiled" in text or b"njit(" in text


def _imported_modules(path, text, root):
    """The files of ``root`` that ``path``'s relative imports name (modules or packages)."""
    found = set()
    for dots, dotted in _RELATIVE_IMPORT.findall(text):
        base = path.parent
        for _ in range(len(dots) - 1):
            base = base.parent
        target = base.joinpath(*dotted.decode().split(".")) if dotted else base
        for candidate in (target.with_suffix(".py"), target / "__init__.py"):
            if candidate.is_file() and root in candidate.parents:
                found.add(candidate)
    return found


@functools.lru_cache(maxsize=None)
def kernel_sources_digest(root=_PACKAGE):
    """SHA-256 of the path and text of every file under ``root`` a kernel may compile in.

    These are the files that decorate with ``@compiled`` (or numba's
    ``njit``), every module under :data:`KERNEL_FOLDERS`, and every module
    a kernel file imports from: numba compiles a module-level constant's
    value into each kernel that reads it, so an edit of a module of
    constants must make its kernels compile again as much as an edit of the
    kernels. Other files (estimators, documentation) may change without
    compiling anything again. None when the sources cannot be read (an
    install without them): numba's own keys then stand alone.
    """
    hasher = hashlib.sha256()
    try:
        paths = sorted(root.rglob("*.py"))
        texts = {path: path.read_bytes() for path in paths}
        counted = {path for path in paths
                   if path.relative_to(root).parts[0] in KERNEL_FOLDERS
                   or _is_kernel_file(texts[path])}
        for path in paths:
            if _is_kernel_file(texts[path]):
                counted |= _imported_modules(path, texts[path], root)
        for path in paths:
            if path in counted:
                hasher.update(path.relative_to(root).as_posix().encode() + b"\0")
                hasher.update(texts[path] + b"\0")
    except OSError:
        return None
    return hasher.hexdigest()


#: Seconds a process waits for another's lock on a kernel's cache entry before
#: going on without the cache. A load or save holds it for milliseconds; a
#: holder past this is stopped (Ctrl-Z, SIGSTOP, a debugger) or hung.
LOCK_TIMEOUT = 30.0

#: Lock files a wait ran out on in this process: not waited for again.
_stuck_locks = set()


class _LockTimeout(Exception):
    """Another process held a cache lock for more than :data:`LOCK_TIMEOUT` seconds."""


def _holder(handle):
    """Who holds the lock: "process <pid>" (or "processes ...") that hold it now.

    On Linux, /proc/locks lists the holders of each locked file by inode: a
    shared lock may have several, and the pid in the file is only the last
    taker's, who may have let go since. Elsewhere (or if it cannot be read),
    that last taker's pid, said as such.
    """
    try:
        holders = _lock_holders(os.fstat(handle.fileno()))
    except (OSError, ValueError):
        holders = []
    if holders:
        return f"process{'es' if len(holders) > 1 else ''} {', '.join(holders)}"
    try:
        handle.seek(0)
        text = handle.read(32).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return f"last taken by process {text if text.isdigit() else 'unknown'}"


def _lock_holders(status):
    """The pids /proc/locks lists as holding a FLOCK lock on the file of ``status``."""
    with open("/proc/locks", encoding="ascii", errors="replace") as table:
        lines = table.read(1 << 20).splitlines()
    device = f"{os.major(status.st_dev):02x}:{os.minor(status.st_dev):02x}"
    pids = []
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  READ 4242 08:01:1234 0 EOF"; waiters are marked "->"
        if len(fields) < 6 or fields[1] != "FLOCK" or "->" in fields[:2]:
            continue
        where = fields[5].rsplit(":", 1)
        if len(where) == 2 and where[1] == str(status.st_ino) and where[0] == device \
                and fields[4].isdigit() and fields[4] not in pids:
            pids.append(fields[4])
    return pids


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

    The wait is bounded by :data:`LOCK_TIMEOUT`: a process stopped while
    holding a lock (Ctrl-Z, a debugger) would otherwise block every other
    skcrf process forever. Past it, :class:`_LockTimeout` is raised, naming
    the holder's pid, which each holder writes into the lock file; the
    callers then go on without the cache (compile, do not save) rather than
    fail: the cache only saves time, and a kernel compiled without it gives
    the same results.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        fcntl = None
    if fcntl is None or index_path is None:
        yield
        return
    lock_path = index_path + ".lock"
    try:
        handle = open(lock_path, "a+b")
    except OSError:  # an unwritable cache: numba's own save fails and is reported
        yield
        return
    with handle:
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        deadline = time.monotonic() + (0.0 if lock_path in _stuck_locks else LOCK_TIMEOUT)
        delay = 0.001
        while True:
            try:
                fcntl.flock(handle, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    _stuck_locks.add(lock_path)
                    raise _LockTimeout(
                        f"the lock {lock_path} of skcrf's kernel cache has been held (by "
                        f"{_holder(handle)}) for more than {LOCK_TIMEOUT:g} s (a "
                        f"stopped process: Ctrl-Z, SIGSTOP or a debugger?); this process "
                        f"compiles the kernel without the cache instead") from None
                time.sleep(delay)
                delay = min(2 * delay, 0.1)
        try:
            _name_holder(handle)
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _name_holder(handle):
    """Write this process's pid into the lock file it holds, for whoever waits.

    "a+b" appends whatever the position, so the file is emptied first; of
    several shared holders, the last one's pid stays.
    """
    try:
        handle.truncate(0)
        handle.write(str(os.getpid()).encode())
        handle.flush()
    except OSError:
        pass


def _warn_lock_timeout(error):
    warnings.warn(str(error), CacheUnavailableWarning, stacklevel=3)


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


def cache_unavailable():
    """Whether some kernel found no writable cache (:func:`warn_cache_unavailable` warned)."""
    return _cache_warned


def warn_cache_unavailable():
    global _cache_warned
    if _cache_warned:
        return
    _cache_warned = True
    warnings.warn(
        "numba cannot write a cache for skcrf's kernels (no writable NUMBA_CACHE_DIR, "
        "skcrf/__pycache__ or user cache directory), so they are compiled again in "
        "every process, which takes about a minute on first use. Set NUMBA_CACHE_DIR "
        "to a writable directory to cache them.", CacheUnavailableWarning, stacklevel=3)
