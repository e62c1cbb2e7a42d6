"""Readers for CoNLL-style column files and loaders for the benchmark corpora.

The corpora themselves are not shipped (their licences allow research use only).
The named loaders read them from a data home: the ``data_home`` argument, else
the ``SKCRF_DATA`` environment variable, else ``../shared/data`` next to the
current directory.
"""

import os
from operator import itemgetter
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
        The data home; it need not exist.
    """
    if data_home is not None:
        return Path(data_home)
    return Path(os.environ.get("SKCRF_DATA", Path("..") / "shared" / "data"))


def load_conll(path, *, columns=None, label_column=-1, encoding="utf-8", separator=None):
    r"""Read a CoNLL-style column file into token and label sequences.

    One token per line, its columns split on whitespace (or ``separator``);
    blank lines end sequences; ``-DOCSTART-`` lines are skipped (and end the
    current sequence). Every token line must have the same number of columns.

    Parameters
    ----------
    path : str or path-like
        The file to read.
    columns : list of int, default=None
        Which columns make up a token, in order. None means every column except
        the label column. With one column, a token is a str; with several, a
        tuple of str (word, POS, ...).
    label_column : int or None, default=-1
        Column holding the label (negative counts from the end); None for
        unlabelled files.
    encoding : str, default="utf-8"
        Text encoding of the file.
    separator : str, default=None
        Column separator; None splits on any run of whitespace.

    Returns
    -------
    X : list of list of str or tuple of str
        Token sequences.
    y : list of list of str or None
        Label sequences; None when ``label_column`` is None.

    Raises
    ------
    ValueError
        If a line has a different number of columns than the first token line,
        or ``columns`` / ``label_column`` name a column the file lacks; the
        message names the file and the line.

    Examples
    --------
    >>> import tempfile, os
    >>> from skcrf.datasets import load_conll
    >>> text = "-DOCSTART- -X- O\n\nEU NNP B-ORG\nrejects VBZ O\n\nPeter NNP B-PER\n"
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write(text)
    >>> X, y = load_conll(f.name)
    >>> X
    [[('EU', 'NNP'), ('rejects', 'VBZ')], [('Peter', 'NNP')]]
    >>> y
    [['B-ORG', 'O'], ['B-PER']]
    >>> load_conll(f.name, columns=[0], label_column=None)
    ([['EU', 'rejects'], ['Peter']], None)
    >>> os.remove(f.name)
    """
    path = Path(path)
    X, y = [], []
    tokens, labels = [], []
    reader = None
    with open(path, encoding=encoding) as handle:
        for line_number, line in enumerate(handle, start=1):
            if separator is None:
                fields = line.split()
            else:
                fields = line.rstrip("\r\n").split(separator) if line.strip() else []
            # startswith, not fields[0]: with a separator such as a tab, the usual
            # space-separated "-DOCSTART- -X- O" line is a single field
            if not fields or line.startswith("-DOCSTART-"):
                if tokens:
                    X.append(tokens)
                    y.append(labels)
                    tokens, labels = [], []
                continue
            if reader is None:
                reader = _ColumnReader(path, line_number, len(fields), columns, label_column)
            if len(fields) != reader.n_columns:
                raise ValueError(
                    f"{path}, line {line_number}: expected {reader.n_columns} columns as "
                    f"on line {reader.first_line}, found {len(fields)}: {line.rstrip()!r}")
            tokens.append(reader.token(fields))
            if reader.label is not None:
                labels.append(fields[reader.label])
    if tokens:
        X.append(tokens)
        y.append(labels)
    return X, (y if label_column is not None else None)


class _ColumnReader:
    """Which fields of a line make the token and the label, checked once."""

    def __init__(self, path, line_number, n_columns, columns, label_column):
        self.n_columns = n_columns
        self.first_line = line_number

        def check(index, what):
            if not -n_columns <= index < n_columns:
                raise ValueError(
                    f"{path}, line {line_number}: {what} {index} does not exist; the "
                    f"line has {n_columns} columns.")
            return index % n_columns

        self.label = None if label_column is None else check(label_column, "label_column")
        if columns is None:
            token_columns = [c for c in range(n_columns) if c != self.label]
        else:
            token_columns = [check(c, "token column") for c in columns]
        if not token_columns:
            raise ValueError(
                f"{path}, line {line_number}: no token columns left: the line has "
                f"{n_columns} column(s) and column {self.label} is the label.")
        # itemgetter gives a str for one column and a tuple for several
        self.token = itemgetter(*token_columns)


def load_conll2000(subset="train", *, data_home=None):
    """CoNLL-2000 chunking: tokens are (word, POS) tuples, labels IOB2 chunks.

    Reads ``conll2000/train.txt`` or ``conll2000/test.txt`` under the data home.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        Which part of the corpus to read.
    data_home : str or path-like, default=None
        See :func:`get_data_home`.

    Returns
    -------
    X : list of list of tuple of str
        Sentences of (word, POS) tokens.
    y : list of list of str
        Chunk labels such as ``B-NP``, ``I-VP`` and ``O``.

    Examples
    --------
    >>> from skcrf.datasets import load_conll2000
    >>> X, y = load_conll2000("test")  # doctest: +SKIP
    >>> X[0][:2], y[0][:2]  # doctest: +SKIP
    ([('Rockwell', 'NNP'), ('International', 'NNP')], ['B-NP', 'I-NP'])
    """
    files = {"train": "train.txt", "test": "test.txt"}
    if subset not in files:
        raise ValueError(f"subset must be one of {sorted(files)}; got {subset!r}.")
    return load_conll(_corpus_file("conll2000", files[subset], data_home))


def load_conll2002(subset="train", *, data_home=None):
    """CoNLL-2002 Spanish named entities: (word, POS) tuples, IOB2 labels.

    Reads ``conll2002/esp.train``, ``esp.testa`` or ``esp.testb`` under the data
    home, as UTF-8 or, failing that, as Latin-1 (the original release).

    Parameters
    ----------
    subset : {"train", "testa", "testb"}, default="train"
        ``testa`` is the development set, ``testb`` the test set.
    data_home : str or path-like, default=None
        See :func:`get_data_home`.

    Returns
    -------
    X : list of list of tuple of str
        Sentences of (word, POS) tokens.
    y : list of list of str
        Entity labels: ``B-``/``I-`` with ``PER``, ``LOC``, ``ORG``, ``MISC``,
        and ``O``.

    Examples
    --------
    >>> from skcrf.datasets import load_conll2002
    >>> X, y = load_conll2002("train")  # doctest: +SKIP
    >>> X[0][:3], y[0][:3]  # doctest: +SKIP
    ([('Melbourne', 'NP'), ('(', 'Fpa'), ('Australia', 'NP')], ['B-LOC', 'O', 'B-LOC'])
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
