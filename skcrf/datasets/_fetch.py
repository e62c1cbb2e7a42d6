"""The data home, and corpus files found there or downloaded into it.

The public fetchers live in :mod:`skcrf.datasets`; this module finds a corpus
file in the data home (``<corpus>/<name>``, the layout the ``load_*`` loaders
read), refusing one whose size is not the recorded one, and downloads a missing
one from the sources of :data:`~skcrf.datasets._remote.REMOTE_FILES`, tried in
order (``_download.py`` does one download).
"""

import os
from pathlib import Path

from ._download import Interrupted, SourceFailed, download, locked, partial_path
from ._remote import REMOTE_FILES, RemoteFile, Source

__all__ = ["REMOTE_FILES", "CorpusNotFoundError", "RemoteFile", "Source", "corpus_file",
           "data_home_path", "fetch_file", "partial_path"]

#: Environment variable naming the data home.
DATA_ENV = "SKCRF_DATA"
#: Environment variable naming a mirror: files are fetched from
#: ``$SKCRF_DATA_URL/<corpus>/<name>``, uncompressed, in the data-home layout.
URL_ENV = "SKCRF_DATA_URL"
#: The data home when neither ``data_home`` nor ``$SKCRF_DATA`` is given.
DEFAULT_DATA_HOME = os.path.join("~", "skcrf_data")

# the command that downloads a corpus folder, for the error messages
_FETCH_COMMAND = {"conll2000": "conll2000", "conll2002": "conll2002", "ud_english_ewt": "ud"}


class CorpusNotFoundError(FileNotFoundError):
    """A corpus file is not in the data home (and was not, or could not be, downloaded).

    Its message is one line saying what is missing and how to get it.
    """


def data_home_path(data_home=None):
    """``data_home``, else ``$SKCRF_DATA``, else ``~/skcrf_data``, with ``~`` expanded.

    Raises
    ------
    ValueError
        If ``data_home`` is an empty string, which would name the current
        directory.
    """
    if data_home is None:
        data_home = os.environ.get(DATA_ENV) or DEFAULT_DATA_HOME
    elif not os.fspath(data_home):
        raise ValueError(f"data_home is an empty string, which would be the current "
                         f"directory; give a folder, or None for ${DATA_ENV} (else "
                         f"{DEFAULT_DATA_HOME}).")
    return Path(os.path.expanduser(os.fspath(data_home)))


def _where_to_put_it(path, corpus, name):
    return (f"copy {name} into {path.parent}, or point {DATA_ENV} (or data_home) at a "
            f"folder holding {corpus}/{name}")


def corpus_file(corpus, name, data_home=None):
    """The path of a corpus file in the data home; raise if it is not there, or not it.

    Raises
    ------
    CorpusNotFoundError
        If the file does not exist; the message says how to get it.
    OSError
        If the file's size is not the recorded one (a damaged or other file).
    """
    path = data_home_path(data_home) / corpus / name
    if not path.is_file():
        raise CorpusNotFoundError(
            f"{path} not found: download it with `python -m skcrf.datasets "
            f"{_FETCH_COMMAND.get(corpus, corpus)}` (needs network access), or "
            f"{_where_to_put_it(path, corpus, name)}.")
    return _checked(path, corpus, name)


def _checked(path, corpus, name):
    """``path``, if its size is one the table records for ``(corpus, name)``."""
    remote = REMOTE_FILES.get((corpus, name))
    size = path.stat().st_size
    if remote is not None and not remote.accepts_size(size):
        raise OSError(
            f"{path} has {size} bytes where {corpus}/{name} has {remote.size}: it is "
            f"damaged (an interrupted copy?) or another version of the file; delete it "
            f"and fetch it again.")
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
        (the data-home layout), tried alone. None means ``$SKCRF_DATA_URL`` if
        set, else the file's sources, in order.

    Returns
    -------
    path : pathlib.Path
        The file in the data home.

    Raises
    ------
    CorpusNotFoundError
        If the file is missing and ``download_if_missing`` is False, or no
        source could be reached or had it (no network, HTTP errors), or a
        transfer broke; the message names the URLs and says where to put the
        file by hand.
    OSError
        If every source served a file that fails its checks (size, SHA-256),
        or the file in the data home has the wrong size, or the partial file
        is a link; nothing is installed.

    Notes
    -----
    Concurrent calls for one file, in threads or processes, wait for each
    other (a lock file beside it). A download that stops midway (a broken
    connection, Ctrl-C) keeps the bytes received in a hidden partial file
    beside the target (``.<name>.part``); the next call resumes from there
    with an HTTP Range request, or starts over when the server does not
    support ranges.
    """
    remote = REMOTE_FILES[corpus, name]
    path = data_home_path(data_home) / corpus / name
    if path.is_file():
        return _checked(path, corpus, name)
    if not download_if_missing:
        raise CorpusNotFoundError(
            f"{path} is missing and download_if_missing=False: download it with "
            f"download_if_missing=True, or {_where_to_put_it(path, corpus, name)}.")
    if base_url is None:
        base_url = os.environ.get(URL_ENV) or None
    sources = remote.sources
    if base_url is not None:
        sources = (Source(f"{base_url.rstrip('/')}/{corpus}/{name}"),)
    created = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with locked(path):
            if not path.is_file():  # else installed by another call while this one waited
                _download_from_any(path, remote, sources, corpus, name)
    except BaseException:
        for folder in created:  # innermost first; a kept partial file stops it
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    return _checked(path, corpus, name)


def _download_from_any(path, remote, sources, corpus, name):
    """Try each source in turn; raise one error naming every failure if none gives the file."""
    failures = []
    for source in sources:
        try:
            download(path, remote, source)
            return
        except SourceFailed as failure:
            failures.append(failure)
        except Interrupted as exc:
            raise CorpusNotFoundError(f"{path} is missing: {exc}.") from exc.__cause__
    tried = "; ".join(map(str, failures))
    kinds = {failure.kind for failure in failures}
    if kinds == {"unreachable"}:
        raise CorpusNotFoundError(
            f"{path} is missing and the network (or the server) is unreachable ({tried}): "
            f"{_where_to_put_it(path, corpus, name)}, or set {URL_ENV} to a mirror "
            f"serving {corpus}/{name} below it.")
    if "mismatch" not in kinds:
        raise CorpusNotFoundError(
            f"{path} is missing and downloading it failed ({tried}): "
            f"{_where_to_put_it(path, corpus, name)}.")
    raise OSError(f"{path}: no source gave the recorded file ({tried}); it may be "
                  f"corrupted or a different version; nothing was saved.")
