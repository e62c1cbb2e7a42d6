"""Reading CoNLL-style column files: one token per line, blank lines between sequences."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Optional

from .._utils.docstrings import fill_sections
from .._utils.type_aliases import Corpus, StrPath, Token

__all__ = ["iter_conll", "load_conll"]


#: The parameters load_conll and iter_conll share (their docstrings' ``<<file_parameters>>``)
_file_docs = fill_sections({"file_parameters": """\
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
        is part of its column, as in ``1\\u00a0000``.
"""})


@_file_docs
def load_conll(path: StrPath, *, columns: Optional[Sequence[int]] = None,
               label_column: Optional[int] = -1, encoding: str = "utf-8",
               separator: Optional[str] = None) -> Corpus:
    r"""Read a CoNLL-style column file into token and label sequences.

    One token per line, its columns split on runs of spaces and tabs (or on
    ``separator``); blank lines end sequences; ``-DOCSTART-`` lines are skipped
    (and end the current sequence). Every token line must have the same number
    of columns. The whole file is held in memory, about 18 times its size:
    :func:`iter_conll` reads one sequence at a time.

    Parameters
    ----------
    <<file_parameters>>

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


@_file_docs
def iter_conll(path: StrPath, *, columns: Optional[Sequence[int]] = None,
               label_column: Optional[int] = -1, encoding: str = "utf-8",
               separator: Optional[str] = None,
               ) -> Iterator[tuple[list[Token], Optional[list[str]]]]:
    r"""Read a CoNLL-style column file lazily, one sequence at a time.

    The file format and the parameters are those of :func:`load_conll`; only
    the current sequence is in memory, so files of any size can be streamed
    through a model in batches. The file is opened at the first ``next()`` and
    closed when the last sequence has been read (or the generator is closed);
    an error in the file is raised when the reading reaches its line.

    Parameters
    ----------
    <<file_parameters>>

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
        for line_number, line in enumerate(_decoded_lines(handle, path, encoding), start=1):
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


def _decoded_lines(handle, path, encoding):
    """The lines of the text file ``handle``; a byte it cannot decode is located, not just named."""
    try:
        yield from handle
    except UnicodeDecodeError as exc:
        raise decoding_error(path, encoding, exc) from None


def decoding_error(path, encoding, error):
    """``error``, a decoding error in the file ``path``, made to name its line and byte.

    Python's own message gives the byte's position in a chunk of the file read
    at once, which says nothing to the reader; this reads the file again line
    by line (only once decoding failed) to find the line.

    Returns
    -------
    error : UnicodeDecodeError
        The same kind of error, its message naming the file, the line and the
        byte's offset in the file, and saying how to give another encoding.
    """
    decoder = codecs.getincrementaldecoder(_reading_encoding(encoding))()
    offset = 0
    with open(path, "rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            try:
                decoder.decode(raw)
            except UnicodeDecodeError as exc:
                return UnicodeDecodeError(
                    exc.encoding, exc.object, exc.start, exc.end,
                    f"{exc.reason}; {path}, line {line_number} (byte {offset + exc.start} of "
                    f"the file) is not {encoding}: give the file's encoding, such as "
                    f"encoding='latin-1'")
            offset += len(raw)
    return error  # not found again (the file changed meanwhile): the original


def column_number(index, n_columns, error):
    """``index`` as a column of a line of ``n_columns`` (a negative one counts from the
    end); ``error()``, the caller's exception saying where, is raised if there is none."""
    if not -n_columns <= index < n_columns:
        raise error()
    return index % n_columns


class _ColumnReader:
    """Which fields of a line make the token and the label, checked once."""

    def __init__(self, path, line_number, n_columns, columns, label_column):
        self.n_columns = n_columns
        self.first_line = line_number

        def check(index, what):
            return column_number(index, n_columns, lambda: ValueError(
                f"{path}, line {line_number}: {what} {index} does not exist; the line has "
                f"{n_columns} columns."))

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
