"""One corpus file downloaded into the data home: locked, bounded, verified, then installed.

The steps, for each source of the file in turn until one succeeds:

1. take the file's lock (``.<name>.lock`` beside it), so that concurrent
   fetches of one file, in threads or processes, run one after the other;
2. transfer the bytes into a partial file (``.<name>[.gz|.zip].part``), opened
   without following links, appending to what an interrupted call left there
   (an HTTP Range request) and stopping past the size recorded for the source;
3. unpack it (gzip, a zip member, or as it is) into a new temporary file,
   stopping past the size recorded for the stored file;
4. read the temporary file back, check its size and SHA-256, and rename it
   into place: what is checked is what is installed.

A transfer that breaks keeps the partial file for the next call to resume;
anything that fails its check is deleted.
"""

import errno
import gzip
import hashlib
import http.client
import os
import re
import stat
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path

from ._remote import served_limit

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None
    import msvcrt

__all__ = ["Interrupted", "Refused", "SourceFailed", "download", "locked", "partial_path"]

_TIMEOUT = 60  # seconds without data before a download is abandoned
_CHUNK = 1 << 16
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_SUFFIX = {"": "", "gzip": ".gz", "zip": ".zip"}


class SourceFailed(Exception):
    """One source could not give the file; the next is tried.

    Attributes
    ----------
    url : str
        The source.
    reason : str
        What went wrong, for the message.
    kind : {"unreachable", "http", "mismatch"}
        ``"unreachable"``: nothing came back (no network, a refused connection,
        a timeout); ``"http"``: the server answered with an error;
        ``"mismatch"``: what it served is not the recorded file.
    """

    def __init__(self, url, reason, kind="mismatch"):
        super().__init__(url, reason, kind)
        self.url, self.reason, self.kind = url, reason, kind

    def __str__(self):
        return f"{self.url}: {self.reason}"


class Interrupted(Exception):
    """The transfer stopped before the end of the file; the partial file is kept."""


class Refused(OSError):
    """A file in the data home that skcrf will not write through (a link, not a file)."""


def partial_path(path, archive=""):
    """Where the bytes of an unfinished download of ``path`` are kept, as served."""
    return path.with_name(f".{path.name}{_SUFFIX[archive]}.part")


@contextmanager
def locked(path):
    """Hold ``path``'s lock (``.<name>.lock`` beside it) while the block runs.

    The holder removes the lock file before releasing it; a waiter that then
    holds the lock of a removed file takes the lock of the current one instead,
    so that two processes never both hold "the" lock.
    """
    lock = path.with_name(f".{path.name}.lock")
    while True:
        fd = _open_no_link(lock, os.O_RDWR | os.O_CREAT)
        try:
            _lock(fd)
            current = os.lstat(lock)
            mine = os.fstat(fd)
            if (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino):
                break
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
    finally:
        if fcntl is not None:  # Windows cannot remove a file that is open
            lock.unlink(missing_ok=True)
        os.close(fd)


def _lock(fd):
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    while True:  # pragma: no cover - Windows: LK_LOCK gives up after 10 s
        try:
            msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
            return
        except OSError as exc:
            if exc.errno != errno.EDEADLK:
                raise


def _open_no_link(path, flags):
    """``os.open`` that refuses a symbolic link (or anything but a file) at ``path``."""
    try:
        fd = os.open(path, flags | _NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(path):
            raise _link_refused(path) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode) or os.path.islink(path):
        os.close(fd)
        raise _link_refused(path)
    return fd


def _link_refused(path):
    return Refused(f"{path} is a symbolic link or not a regular file: skcrf does not write "
                   f"through it; remove it and fetch again.")


def _partial_size(part):
    """The bytes a partial file holds, 0 if there is none; a link is refused."""
    try:
        info = os.lstat(part)
    except FileNotFoundError:
        return 0
    if not stat.S_ISREG(info.st_mode):
        raise _link_refused(part)
    return info.st_size


def download(path, remote, source):
    """Fetch ``remote`` from ``source`` and install it at ``path``; the caller holds the lock.

    A partial file kept by an interrupted call is resumed; if the file then
    fails its check, it is fetched once more from the start, since the kept
    bytes may be what is wrong.

    Raises
    ------
    SourceFailed
        If the source cannot be reached or answers with an error (a partial
        file is kept), serves more than its recorded size, or serves a file
        that fails its check (nothing is kept).
    Interrupted
        If the transfer broke; the bytes received are kept.
    Refused
        If the partial file is a link.
    """
    part = partial_path(path, source.archive)
    limit = served_limit(remote, source)
    resumed = _partial_size(part) > 0
    try:
        _transfer(source.url, part, limit)
        problem = _install(part, path, remote, source)
        if problem is not None and resumed:
            part.unlink()
            _transfer(source.url, part, limit)
            problem = _install(part, path, remote, source)
            if problem is not None:
                problem += ", also when downloaded anew after discarding a partial download"
    except BaseException:
        # a transfer that stopped (broken connection, no network, Ctrl-C) keeps
        # what arrived, for the next call to resume from
        if _partial_size(part) == 0:
            part.unlink(missing_ok=True)
        raise
    part.unlink(missing_ok=True)
    if problem is not None:
        raise SourceFailed(source.url, problem)


def _transfer(url, part, limit):
    """Append the rest of ``url`` to ``part`` (or rewrite it when the server sends it all)."""
    offset = _partial_size(part)
    if offset > limit:
        offset = 0  # more than the source may serve: not a prefix of it
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                          timeout=_TIMEOUT)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # nothing after offset: ``part`` may be the whole file
            return
        raise SourceFailed(url, f"HTTP {exc.code} {exc.reason}", "http") from exc
    except (OSError, http.client.HTTPException) as exc:  # no network, refused, timeout
        raise SourceFailed(url, getattr(exc, "reason", None) or exc, "unreachable") from exc
    with response:
        if not (offset and response.status == 206 and _range_start(response) == offset):
            offset = 0  # a server without Range support sends the whole file: start over
        length = response.headers.get("Content-Length", "")
        expected = offset + int(length) if length.isdigit() else None
        if expected is not None and expected > limit:
            raise SourceFailed(url, f"it announces {expected} bytes, more than the {limit} "
                                    f"recorded for it")
        received = offset
        out = os.fdopen(_open_no_link(part, os.O_WRONLY | os.O_CREAT
                                      | (os.O_APPEND if offset else os.O_TRUNC)), "wb")
        with out:
            try:
                while chunk := response.read(_CHUNK):
                    received += len(chunk)
                    if received > limit:  # an endless or wrong file: not worth keeping
                        out.close()
                        part.unlink()
                        raise SourceFailed(url, f"it served more than the {limit} bytes "
                                                f"recorded for it")
                    out.write(chunk)
            except (OSError, http.client.HTTPException) as exc:  # reset, timeout
                raise Interrupted(_interrupted(url, part, received, expected, exc)) from exc
        if expected is not None and received < expected:  # closed early, nothing raised
            raise Interrupted(_interrupted(url, part, received, expected, "connection closed"))


def _range_start(response):
    """The first byte of a 206 response's ``Content-Range: bytes a-b/n``, or None."""
    match = re.fullmatch(r"bytes\s+(\d+)-\d+/(\d+|\*)",
                         response.headers.get("Content-Range", "").strip())
    return int(match.group(1)) if match else None


def _interrupted(url, part, received, expected, reason):
    of = f" of {expected}" if expected is not None else ""
    return (f"downloading {url} stopped after {received}{of} bytes ({reason}); the bytes "
            f"received are kept in {part} and the next call resumes from there")


def _install(part, path, remote, source):
    """Unpack the downloaded ``part`` into ``path`` once checked; None, else what is wrong."""
    if source.sha256 is not None:
        digest = _sha256(part)
        if digest != source.sha256:
            return f"SHA-256 {digest} where {source.sha256} was expected"
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.",
                                         suffix=".tmp", delete=False)
    temporary = Path(handle.name)
    try:
        with handle:
            problem = _unpack(part, source, handle, remote.size)
        if problem is None:
            # read back what will be installed, not what was meant to be written
            size, digest = temporary.stat().st_size, _sha256(temporary)
            if size != remote.size:
                problem = f"{size} bytes where {remote.size} were expected"
            elif digest != remote.sha256:
                problem = f"SHA-256 {digest} where {remote.sha256} was expected"
        if problem is None:
            os.replace(temporary, path)
            return None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    temporary.unlink()
    return problem


def _unpack(part, source, out, limit):
    """Write the file ``part`` holds into ``out``; None, else what is wrong.

    Stops past ``limit`` bytes: a compressed file that inflates beyond the
    recorded size is refused without being written out.
    """
    try:
        if source.archive == "zip":
            with zipfile.ZipFile(part) as archive:
                if source.member not in archive.namelist():
                    return f"the archive has no member {source.member}"
                with archive.open(source.member) as stream:
                    return _copy(stream, out, limit)
        opener = gzip.open if source.archive == "gzip" else open
        with opener(part, "rb") as stream:
            return _copy(stream, out, limit)
    except (gzip.BadGzipFile, EOFError, zlib.error, zipfile.BadZipFile) as exc:
        return f"not valid {source.archive} data ({exc})"  # or cut short


def _copy(stream, out, limit):
    written = 0
    while chunk := stream.read(_CHUNK):
        written += len(chunk)
        if written > limit:
            return f"more than the {limit} bytes recorded once unpacked"
        out.write(chunk)
    return None


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
