"""Downloading the benchmark corpora once into the data home, checksum verified.

The public fetchers live in :mod:`skcrf.datasets`; this module holds the table
of remote files and the download itself. Each file is stored under the data
home as ``<corpus>/<name>`` (the layout the ``load_*`` loaders read), and its
SHA-256 is that of the stored file, after decompression. An interrupted
download leaves ``.<name>.part`` (the bytes as served) for the next call to
resume with an HTTP Range request.
"""

import gzip
import hashlib
import http.client
import os
import re
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

__all__ = ["REMOTE_FILES", "CorpusNotFoundError", "corpus_file", "data_home_path",
           "fetch_file", "partial_path"]

#: Environment variable naming the data home.
DATA_ENV = "SKCRF_DATA"
#: Environment variable naming a mirror: files are fetched from
#: ``$SKCRF_DATA_URL/<corpus>/<name>``, uncompressed, in the data-home layout.
URL_ENV = "SKCRF_DATA_URL"
#: The data home when neither ``data_home`` nor ``$SKCRF_DATA`` is given.
DEFAULT_DATA_HOME = os.path.join("~", "skcrf_data")

_TIMEOUT = 60  # seconds without data before a download is abandoned
_CHUNK = 1 << 16


@dataclass(frozen=True)
class RemoteFile:
    """Where one corpus file comes from and what it must hash to once stored.

    Attributes
    ----------
    url : str
        The public address of the file.
    sha256 : str
        Hex SHA-256 of the stored file (after decompression).
    gzip : bool
        Whether the URL serves the file gzip-compressed.
    """

    url: str
    sha256: str
    gzip: bool = False


_CLIPS_2000 = "https://www.clips.uantwerpen.be/conll2000/chunking/"
_CONLL2002 = "https://raw.githubusercontent.com/teropa/nlp/master/resources/corpora/conll2002/"
_UD_EWT = "https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/master/"

#: (corpus folder, file name) -> RemoteFile. The checksums are those of the
#: reference copies the test suite and benchmarks use (CoNLL-2000 decompressed;
#: CoNLL-2002 Spanish in UTF-8, as NLTK distributes it; UD English EWT r2.16).
REMOTE_FILES = {
    ("conll2000", "train.txt"): RemoteFile(
        _CLIPS_2000 + "train.txt.gz",
        "82033cd7a72b209923a98007793e8f9de3abc1c8b79d646c50648eb949b87cea", gzip=True),
    ("conll2000", "test.txt"): RemoteFile(
        _CLIPS_2000 + "test.txt.gz",
        "73b7b1e565fa75a1e22fe52ecdf41b6624d6f59dacb591d44252bf4d692b1628", gzip=True),
    ("conll2002", "esp.train"): RemoteFile(
        _CONLL2002 + "esp.train",
        "a20d95cab7d88a19a86f8c1ad6329325c99fbd9529ed978cbd7e31d4b01b4008"),
    ("conll2002", "esp.testa"): RemoteFile(
        _CONLL2002 + "esp.testa",
        "85c17793b77881c53d19017d9d0f1e6fb98b7ddcab54a5f24b05ed1793103c87"),
    ("conll2002", "esp.testb"): RemoteFile(
        _CONLL2002 + "esp.testb",
        "1f8f7a392c6d4979a5592a5794eed43d7869b46da6851bbcde99714149f1d016"),
    ("ud_english_ewt", "en_ewt-ud-train.conllu"): RemoteFile(
        _UD_EWT + "en_ewt-ud-train.conllu",
        "3fb78e2b55482c8ee00caa653af436c88c9e5bc9a73ce26e4ae3ddc79d2b7e7b"),
    ("ud_english_ewt", "en_ewt-ud-dev.conllu"): RemoteFile(
        _UD_EWT + "en_ewt-ud-dev.conllu",
        "531a54ff90d6ab12201c5a50c3e78e6ddac4de69abc4bce5d275d3cd29efe2b6"),
    ("ud_english_ewt", "en_ewt-ud-test.conllu"): RemoteFile(
        _UD_EWT + "en_ewt-ud-test.conllu",
        "e266e515a0a7547657ed3d90d9ba46487d6bd251f27ad4269d4e8a427c8555cd"),
}

# the command that downloads a corpus folder, for the error messages
_FETCH_COMMAND = {"conll2000": "conll2000", "conll2002": "conll2002", "ud_english_ewt": "ud"}


class CorpusNotFoundError(FileNotFoundError):
    """A corpus file is not in the data home (and was not, or could not be, downloaded).

    Its message is one line saying what is missing and how to get it.
    """


def data_home_path(data_home=None):
    """``data_home``, else ``$SKCRF_DATA``, else ``~/skcrf_data``, with ``~`` expanded."""
    if data_home is None:
        data_home = os.environ.get(DATA_ENV) or DEFAULT_DATA_HOME
    return Path(os.path.expanduser(os.fspath(data_home)))


def _fetch_hint(corpus):
    return (f"get it with `python -m skcrf.datasets {_FETCH_COMMAND.get(corpus, corpus)}` "
            f"(needs network access)")


def _how_to_get(corpus, name):
    return f"{_fetch_hint(corpus)}, or set {DATA_ENV} to a folder holding {corpus}/{name}"


def corpus_file(corpus, name, data_home=None):
    """The path of a corpus file in the data home; raise if it is not there.

    Raises
    ------
    CorpusNotFoundError
        If the file does not exist; the message says how to get it.
    """
    path = data_home_path(data_home) / corpus / name
    if not path.is_file():
        raise CorpusNotFoundError(
            f"{path} not found. Point {DATA_ENV} (or data_home) at the folder that holds "
            f"{corpus}/{name}, or {_fetch_hint(corpus)}.")
    return path


def fetch_file(corpus, name, *, data_home=None, download_if_missing=True, base_url=None):
    """The path of a corpus file, downloading and verifying it first if missing.

    Parameters
    ----------
    corpus, name : str
        A key of :data:`REMOTE_FILES`: the folder under the data home and the
        file name.
    data_home : str or path-like, default=None
        See :func:`skcrf.datasets.get_data_home`.
    download_if_missing : bool, default=True
        If False, a missing file raises instead of being downloaded.
    base_url : str, default=None
        A mirror serving the files uncompressed as ``<base_url>/<corpus>/<name>``
        (the data-home layout). None means ``$SKCRF_DATA_URL`` if set, else
        the public URL of each file.

    Returns
    -------
    path : pathlib.Path
        The file in the data home.

    Raises
    ------
    CorpusNotFoundError
        If the file is missing and ``download_if_missing`` is False, or the
        download failed (no network, HTTP error); the message says how to get it.
    OSError
        If the downloaded bytes do not have the expected SHA-256 (after a
        resumed download: also when fetched anew from the start); nothing is
        left in the data home.

    Notes
    -----
    A download that stops midway (a broken connection, Ctrl-C) keeps the
    bytes received in a hidden partial file beside the target
    (``.<name>.part``); the next call resumes from there with an HTTP Range
    request, or starts over when the server does not support ranges.
    """
    remote = REMOTE_FILES[corpus, name]
    path = data_home_path(data_home) / corpus / name
    if path.is_file():
        return path
    if not download_if_missing:
        raise CorpusNotFoundError(
            f"{path} is missing and download_if_missing=False: {_how_to_get(corpus, name)}.")
    if base_url is None:
        base_url = os.environ.get(URL_ENV) or None
    if base_url is None:
        url, compressed = remote.url, remote.gzip
    else:
        url, compressed = f"{base_url.rstrip('/')}/{corpus}/{name}", False
    _download(url, path, remote.sha256, compressed, corpus, name)
    return path


def partial_path(path, compressed=False):
    """Where the bytes of an unfinished download of ``path`` are kept, as served."""
    return path.with_name(f".{path.name}{'.gz' if compressed else ''}.part")


class _Interrupted(Exception):
    """The transfer stopped before the end of the file; the partial file is kept."""


def _download(url, path, sha256, compressed, corpus, name):
    """Fetch ``url`` into a partial file beside ``path``, verify it, then rename.

    A partial file left by an interrupted call is resumed with an HTTP Range
    request (a server that ignores Range answers 200, and the file starts
    over); an interrupted transfer keeps it for the next call. A file that
    fails the checksum after a resume is fetched once more from the start,
    since the kept bytes may be what is wrong.
    """
    created = [folder for folder in (path.parent.parent, path.parent) if not folder.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    part = partial_path(path, compressed)
    resumed = part.is_file() and part.stat().st_size > 0
    try:
        _transfer(url, part, path, corpus, name)
        digest = _install(part, path, sha256, compressed)
        if digest is not None and resumed:
            part.unlink()
            _transfer(url, part, path, corpus, name)
            digest = _install(part, path, sha256, compressed)
            if digest is not None:
                part.unlink()
                raise OSError(
                    f"The file downloaded from {url} has SHA-256 {digest}, expected {sha256}, "
                    f"also when downloaded anew after discarding a partial download: it may be "
                    f"corrupted or a different version; nothing was saved.")
        elif digest is not None:
            part.unlink()
            raise OSError(
                f"The file downloaded from {url} has SHA-256 {digest}, expected "
                f"{sha256}: it may be corrupted or a different version; nothing was saved.")
    except BaseException as exc:
        # A transfer that stopped (broken connection, no network, Ctrl-C) keeps
        # the bytes that arrived, for the next call to resume from; a file that
        # failed verification is gone already.
        if part.is_file() and part.stat().st_size > 0:
            if isinstance(exc, _Interrupted):
                raise CorpusNotFoundError(str(exc)) from exc.__cause__
            raise
        part.unlink(missing_ok=True)
        for folder in reversed(created):
            try:
                folder.rmdir()
            except OSError:  # not empty: another download put a file there meanwhile
                break
        if isinstance(exc, _Interrupted):  # cut before the first byte
            raise CorpusNotFoundError(str(exc)) from exc.__cause__
        raise


def _transfer(url, part, path, corpus, name):
    """Append the rest of ``url`` to ``part`` (or rewrite it when the server sends it all).

    Raises
    ------
    _Interrupted
        If the connection broke or closed before the announced length arrived;
        ``part`` keeps the bytes received.
    CorpusNotFoundError
        If nothing could be fetched (no network, HTTP error).
    """
    offset = part.stat().st_size if part.is_file() else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                          timeout=_TIMEOUT)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # nothing after offset: ``part`` may be the whole file
            return
        raise _failed(url, path, corpus, name, f"HTTP {exc.code} {exc.reason}") from exc
    except OSError as exc:  # URLError, refused connections, timeouts
        raise _failed(url, path, corpus, name, getattr(exc, "reason", None) or exc) from exc
    with response:
        if not (offset and response.status == 206 and _range_start(response) == offset):
            offset = 0  # a server without Range support sends the whole file: start over
        length = response.headers.get("Content-Length", "")
        expected = offset + int(length) if length.isdigit() else None
        received = offset
        try:
            with open(part, "ab" if offset else "wb") as out:
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    received += len(chunk)
        except (OSError, http.client.HTTPException) as exc:  # reset, timeout, IncompleteRead
            raise _interrupted(url, part, path, received, expected, exc) from exc
        if expected is not None and received < expected:  # closed early, nothing raised
            raise _interrupted(url, part, path, received, expected, "connection closed")


def _range_start(response):
    """The first byte of a 206 response's ``Content-Range: bytes a-b/n``, or None."""
    match = re.fullmatch(r"bytes\s+(\d+)-\d+/(\d+|\*)",
                         response.headers.get("Content-Range", "").strip())
    return int(match.group(1)) if match else None


def _failed(url, path, corpus, name, reason):
    return CorpusNotFoundError(f"{path} is missing and downloading {url} failed ({reason}): "
                               f"{_how_to_get(corpus, name)}.")


def _interrupted(url, part, path, received, expected, reason):
    of = f" of {expected}" if expected is not None else ""
    return _Interrupted(
        f"{path} is missing: downloading {url} stopped after {received}{of} bytes ({reason}); "
        f"the bytes received are kept in {part} and the next call resumes from there.")


def _install(part, path, sha256, compressed):
    """Verify the downloaded ``part`` and move it to ``path``; None, else the wrong digest.

    A part that is not gzip data when it should be counts as a wrong digest.
    On a mismatch ``part`` is left in place for the caller to discard.
    """
    digest = hashlib.sha256()
    if not compressed:
        with open(part, "rb") as source:
            while chunk := source.read(_CHUNK):
                digest.update(chunk)
        if digest.hexdigest() != sha256:
            return digest.hexdigest()
        os.replace(part, path)
        return None
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.",
                                         suffix=".tmp", delete=False)
    try:
        with handle, gzip.open(part, "rb") as source:
            while chunk := source.read(_CHUNK):
                digest.update(chunk)
                handle.write(chunk)
    except (OSError, EOFError):  # not gzip data, or cut short
        Path(handle.name).unlink()
        return hashlib.sha256(part.read_bytes()).hexdigest() + " (not valid gzip data)"
    except BaseException:
        Path(handle.name).unlink()
        raise
    if digest.hexdigest() != sha256:
        Path(handle.name).unlink()
        return digest.hexdigest()
    os.replace(handle.name, path)
    part.unlink()
    return None
