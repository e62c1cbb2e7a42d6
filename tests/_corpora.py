"""Stand-ins for corpus files in a test's data home."""

import hashlib


def write_file(tmp_path, text, name, encoding="utf-8", newline=None):
    """Write ``text`` to ``tmp_path / name`` as ``encoding``; returns the path."""
    path = tmp_path / name
    with open(path, "w", encoding=encoding, newline=newline) as handle:
        handle.write(text)
    return path


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


def name_tags(upos):
    """IOB2 tags of a sentence's names, from its UPOS tags: each run of PROPN is one name."""
    tags = []
    for i, tag in enumerate(upos):
        if tag != "PROPN":
            tags.append("O")
        else:
            tags.append("I-NAME" if i and upos[i - 1] == "PROPN" else "B-NAME")
    return tags


def tagged_sentences(n_train, n_test=None):
    """Sentences of ``(word, POS)`` tokens with IOB2 span tags, for tests that need *a* corpus.

    CoNLL-2002 Spanish (its entities) when the data home has it; otherwise the
    sample of UD English EWT that ships with skcrf, with its Penn tags as the
    POS and its names (runs of PROPN) tagged ``B-NAME`` / ``I-NAME``: the same
    shapes, offline.

    Returns
    -------
    X_train, y_train, X_test, y_test : lists
        The first ``n_train`` training and ``n_test`` test sentences.
    source : {"conll2002", "sample"}
        Which corpus they come from.
    """
    from skcrf.datasets import load_conll2002, load_ud_sample
    from tests.conftest import data_home

    try:
        X_train, y_train = load_conll2002("train", data_home=data_home())
        X_test, y_test = load_conll2002("testb", data_home=data_home())
        source = "conll2002"
    except FileNotFoundError:
        parts = []
        for subset in ("train", "test"):
            X, upos = load_ud_sample(subset, columns=("form", "xpos"))
            parts += [[[token[:2] for token in sentence] for sentence in X],
                      [name_tags(tags) for tags in upos]]
        X_train, y_train, X_test, y_test = parts
        source = "sample"
    return X_train[:n_train], y_train[:n_train], X_test[:n_test], y_test[:n_test], source
