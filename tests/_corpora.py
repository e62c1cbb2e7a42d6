"""Stand-ins for corpus files in a test's data home."""

import hashlib


def record_files(monkeypatch, home):
    """Make skcrf's table of corpus files record the files under ``home`` as they are.

    The loaders refuse a file of the data home whose size is not the one the
    table records; a test that writes a small stand-in for a corpus file
    records the stand-in instead (its size and SHA-256), for the test's duration.
    """
    from skcrf.datasets._remote import REMOTE_FILES, RemoteFile

    for (corpus, name), remote in list(REMOTE_FILES.items()):
        path = home / corpus / name
        if path.is_file():
            data = path.read_bytes()
            monkeypatch.setitem(REMOTE_FILES, (corpus, name), RemoteFile(
                hashlib.sha256(data).hexdigest(), len(data), remote.sources))
