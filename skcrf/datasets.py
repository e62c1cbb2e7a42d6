"""Readers for CoNLL-style column files and loaders for the benchmark corpora.

The corpora themselves are not shipped (their licences allow research use only).
The named loaders read them from a data home: the ``data_home`` argument, else
the ``SKCRF_DATA`` environment variable, else ``../shared/data`` next to the
current directory.
"""

import codecs
import os
import re
from operator import itemgetter
from pathlib import Path

__all__ = ["get_data_home", "iter_conll", "load_conll", "load_conll2000", "load_conll2002"]


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

    One token per line, its columns split on runs of spaces and tabs (or on
    ``separator``); blank lines end sequences; ``-DOCSTART-`` lines are skipped
    (and end the current sequence). Every token line must have the same number
    of columns. The whole file is held in memory, about 18 times its size:
    :func:`iter_conll` reads one sequence at a time.

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
        Text encoding of the file. A UTF-8 file may start with a byte-order
        mark, which is skipped (Python's ``utf-8-sig``).
    separator : str, default=None
        Column separator; None splits on any run of spaces and tabs. Other
        whitespace, such as a no-break space (U+00A0), U+0085 or a form feed,
        is part of its column, as in ``1\u00a0000``.

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

    See Also
    --------
    iter_conll : The same sequences, read lazily one at a time.

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
    X, y = [], []
    for tokens, labels in iter_conll(path, columns=columns, label_column=label_column,
                                     encoding=encoding, separator=separator):
        X.append(tokens)
        y.append(labels)
    return X, (y if label_column is not None else None)


def iter_conll(path, *, columns=None, label_column=-1, encoding="utf-8", separator=None):
    r"""Read a CoNLL-style column file lazily, one sequence at a time.

    The file format and the parameters are those of :func:`load_conll`; only
    the current sequence is in memory, so files of any size can be streamed
    through a model in batches. The file is opened at the first ``next()`` and
    closed when the last sequence has been read (or the generator is closed);
    an error in the file is raised when the reading reaches its line.

    Parameters
    ----------
    path : str or path-like
        The file to read.
    columns : list of int, default=None
        Which columns make up a token, in order. None means every column except
        the label column.
    label_column : int or None, default=-1
        Column holding the label (negative counts from the end); None for
        unlabelled files.
    encoding : str, default="utf-8"
        Text encoding of the file; a UTF-8 byte-order mark is skipped.
    separator : str, default=None
        Column separator; None splits on any run of spaces and tabs.

    Yields
    ------
    tokens : list of str or tuple of str
        The tokens of one sequence.
    labels : list of str or None
        Its labels; None when ``label_column`` is None.

    Raises
    ------
    ValueError
        As :func:`load_conll`, naming the file and the line.

    Examples
    --------
    >>> import tempfile, os
    >>> from itertools import islice
    >>> from skcrf.datasets import iter_conll
    >>> text = "EU NNP B-ORG\nrejects VBZ O\n\nPeter NNP B-PER\n\nIt PRP O\n"
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write(text)
    >>> sequences = iter_conll(f.name, columns=[0])
    >>> next(sequences)
    (['EU', 'rejects'], ['B-ORG', 'O'])
    >>> [tokens for tokens, _ in sequences]
    [['Peter'], ['It']]
    >>> os.remove(f.name)
    """
    path = Path(path)
    tokens, labels = [], []
    reader = None
    with open(path, encoding=_reading_encoding(encoding)) as handle:
        for line_number, line in enumerate(handle, start=1):
            if separator is None:
                # str.split() is twice as fast as the regex, and right unless the
                # line holds other whitespace, which nearly no line does
                fields = _FIELD.findall(line) if _OTHER_SPACE.search(line) else line.split()
            else:
                fields = line.rstrip(_EOL).split(separator) if line.strip(" \t\r\n") else []
            # startswith, not fields[0]: with a separator such as a tab, the usual
            # space-separated "-DOCSTART- -X- O" line is a single field
            if not fields or line.startswith("-DOCSTART-"):
                if tokens:
                    yield tokens, (labels if label_column is not None else None)
                    tokens, labels = [], []
                continue
            if reader is None:
                reader = _ColumnReader(path, line_number, len(fields), columns, label_column)
            if len(fields) != reader.n_columns:
                raise ValueError(
                    f"{path}, line {line_number}: expected {reader.n_columns} columns as "
                    f"on line {reader.first_line}, found {len(fields)}: {line.rstrip(_EOL)!r}")
            tokens.append(reader.token(fields))
            if reader.label is not None:
                labels.append(fields[reader.label])
    if tokens:
        yield tokens, (labels if label_column is not None else None)


_EOL = "\r\n"

# Columns are separated by spaces and tabs only. str.split() would also split
# on no-break spaces, U+0085, form feeds and the other Unicode and control
# whitespace inside a word ("1\u00a0000"), and the line after it would then be
# blamed for having the wrong number of columns.
_FIELD = re.compile(r"[^ \t\r\n]+")
# the whitespace str.split() splits on (the same set as re's \s) but columns do not
_OTHER_SPACE = re.compile(r"[^\S \t\r\n]")


def _reading_encoding(encoding):
    """``encoding``, or ``utf-8-sig`` for UTF-8 so a leading byte-order mark is skipped.

    Without it the mark (U+FEFF) sticks to the first word, or turns a first
    ``-DOCSTART-`` line into a token line.
    """
    return "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding


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
