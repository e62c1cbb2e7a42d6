"""Readers for CoNLL-style column files and loaders for the benchmark corpora.

The corpora themselves are not shipped (their licences allow research use only).
The named loaders read them from a data home: the ``data_home`` argument, else
the ``SKCRF_DATA`` environment variable, else ``../shared/data`` next to the
current directory.
"""

import os
from pathlib import Path

__all__ = ["get_data_home", "load_conll", "load_conll2000", "load_conll2002"]


def get_data_home(data_home=None):
    """The folder the named loaders read from.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Returned as given when not None; otherwise ``$SKCRF_DATA``, otherwise
        ``../shared/data`` relative to the current directory.

    Returns
    -------
    path : pathlib.Path
    """
    if data_home is not None:
        return Path(data_home)
    return Path(os.environ.get("SKCRF_DATA", Path("..") / "shared" / "data"))


def load_conll(path, *, columns=None, label_column=-1, encoding="utf-8", separator=None):
    """Read a CoNLL-style column file into token and label sequences.

    One token per line, its columns split on whitespace (or ``separator``);
    blank lines end sequences; ``-DOCSTART-`` lines are skipped.

    Parameters
    ----------
    path : str or path-like
    columns : list of int, default=None
        Which columns make up a token, in order. None means every column except
        the label column. With one column, a token is a str; with several, a
        tuple of str (word, POS, ...).
    label_column : int or None, default=-1
        Column holding the label; None for unlabelled files.
    encoding : str, default="utf-8"
    separator : str, default=None
        Column separator; None splits on any whitespace.

    Returns
    -------
    X : list of list
        Token sequences.
    y : list of list of str, or None
        Label sequences; None when ``label_column`` is None.

    Raises
    ------
    ValueError
        If a line has fewer columns than requested, naming the file and line.
    """
    path = Path(path)
    X, y = [], []
    tokens, labels = [], []
    n_columns = None

    def close_sequence():
        nonlocal tokens, labels
        if tokens:
            X.append(tokens)
            y.append(labels)
        tokens, labels = [], []

    with open(path, encoding=encoding) as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = line.split(separator) if separator else line.split()
            if not fields or (separator and not line.strip()):
                close_sequence()
                continue
            if fields[0] == "-DOCSTART-":
                close_sequence()
                continue
            fields[-1] = fields[-1].rstrip("\r\n")
            if n_columns is None:
                n_columns = len(fields)
                label_index = None if label_column is None else label_column % n_columns
                token_columns = (columns if columns is not None
                                 else [i for i in range(n_columns) if i != label_index])
            try:
                token = [fields[i] for i in token_columns]
                if label_index is not None:
                    labels.append(fields[label_index])
            except IndexError:
                raise ValueError(
                    f"{path}, line {line_number}: expected {n_columns} columns, found "
                    f"{len(fields)}: {line.rstrip()!r}") from None
            tokens.append(token[0] if len(token) == 1 else tuple(token))
    close_sequence()
    return X, (y if label_column is not None else None)


def load_conll2000(subset="train", *, data_home=None):
    """CoNLL-2000 chunking: tokens are (word, POS) tuples, labels IOB2 chunks.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
    data_home : str or path-like, default=None
        See :func:`get_data_home`.

    Returns
    -------
    X : list of list of tuple of str
    y : list of list of str
    """
    files = {"train": "train.txt", "test": "test.txt"}
    if subset not in files:
        raise ValueError(f"subset must be one of {sorted(files)}; got {subset!r}.")
    return load_conll(_corpus_file("conll2000", files[subset], data_home))


def load_conll2002(subset="train", *, data_home=None):
    """CoNLL-2002 Spanish named entities: (word, POS) tuples, IOB2 labels.

    Parameters
    ----------
    subset : {"train", "testa", "testb"}, default="train"
        ``testa`` is the development set, ``testb`` the test set.
    data_home : str or path-like, default=None
        See :func:`get_data_home`.

    Returns
    -------
    X : list of list of tuple of str
    y : list of list of str
    """
    files = {"train": "esp.train", "testa": "esp.testa", "testb": "esp.testb"}
    if subset not in files:
        raise ValueError(f"subset must be one of {sorted(files)}; got {subset!r}.")
    # the Spanish files are Latin-1 in the original release, UTF-8 in some copies
    path = _corpus_file("conll2002", files[subset], data_home)
    try:
        return load_conll(path, encoding="utf-8")
    except UnicodeDecodeError:
        return load_conll(path, encoding="latin-1")


def _corpus_file(corpus, name, data_home):
    path = get_data_home(data_home) / corpus / name
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found. Point SKCRF_DATA (or data_home) at the folder that "
            f"holds {corpus}/{name}.")
    return path
