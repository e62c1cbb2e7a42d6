"""Column files for the command line: the layout a model was trained on, and
files read a batch of sequences at a time and written back with the predictions.

Nothing here holds a whole file: ``skcrf tag`` and ``skcrf evaluate`` take the
same memory for a file of any size (a file is read twice when its encoding is
guessed, once to check that it is UTF-8).
"""

import os
import shutil
import stat
import sys
import tempfile
import uuid
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from pathlib import Path

import numpy as np

from ..datasets import iter_conll
from ..datasets._conll import column_number
from ._encoding import guess_encoding, undecodable_at
from ._errors import CommandError, UsageError

# A batch ends with the sequence that brings it to this many tokens. Its
# rows, features and marginals are all the memory a command holds for the
# file: a few MB (see benchmarks/bench_cli_memory.py), and a batch this large
# already makes the per-call costs of the pipeline negligible.
BATCH_TOKENS = 5_000


@dataclass(frozen=True)
class Layout:
    """Where tokens and labels are in a labelled line; saved with the model."""

    n_columns: int
    token_columns: tuple
    label_column: int
    separator: str = None
    encoding: str = None
    #: columns read as numbers, the dense block of every token (``--numeric-columns``)
    numeric_columns: tuple = ()

    @classmethod
    def resolve(cls, n_columns, columns, label_column, separator, encoding, path,
                numeric_columns=None):
        """The layout the train options give for a file of ``n_columns`` columns."""
        def check(index, option):
            return column_number(index, n_columns, lambda: UsageError(
                f"{option} {index}: {path} has {n_columns} column(s), numbered 0 to "
                f"{n_columns - 1} (or -{n_columns} to -1 from the end)"))

        label = check(label_column, "--label-column")
        numbers = tuple(check(c, "--numeric-columns") for c in numeric_columns or ())
        if label in numbers:
            raise UsageError(f"column {label} is both a numeric column (--numeric-columns) "
                             f"and the label column (--label-column)")
        if columns is None:
            tokens = tuple(c for c in range(n_columns) if c != label and c not in numbers)
        else:
            tokens = tuple(check(c, "--columns") for c in columns)
        if label in tokens:
            raise UsageError(f"column {label} is both a token column (--columns) and the "
                              f"label column (--label-column)")
        if len(set(tokens)) != len(tokens):
            raise UsageError(f"--columns names a column twice: {list(columns)}")
        if len(set(numbers)) != len(numbers):
            raise UsageError(f"--numeric-columns names a column twice: "
                             f"{list(numeric_columns)}")
        both = sorted(set(tokens) & set(numbers))
        if both:
            raise UsageError(f"column {both[0]} is both a token column (--columns) and a "
                             f"numeric column (--numeric-columns)")
        if not tokens:
            raise UsageError(f"{path} has {n_columns} column(s) and column {label} is the "
                              f"label: no token columns left")
        return cls(n_columns, tokens, label, separator, encoding, numbers)

    @classmethod
    def from_metadata(cls, saved):
        """The layout ``skcrf train`` saved with a model (None if it saved none)."""
        if not saved:
            return None
        try:
            layout = cls(**{**saved, "token_columns": tuple(saved["token_columns"]),
                            "numeric_columns": tuple(saved.get("numeric_columns", ()))})
            columns = (layout.label_column, *layout.token_columns, *layout.numeric_columns)
            if not (type(layout.n_columns) is int and all(
                    type(c) is int and 0 <= c < layout.n_columns for c in columns)):
                raise ValueError("column numbers must be integers below n_columns")
            for text in (layout.separator, layout.encoding):
                if text is not None and not isinstance(text, str):
                    raise ValueError("separator and encoding must be str or null")
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"its column layout {saved!r:.100} is invalid "
                             f"({type(error).__name__}: {error})") from None
        return layout

    def for_file(self, n_columns, path, need_labels):
        """(token columns, label column or None) of a file with ``n_columns`` columns.

        A file with the training layout's columns has its labels where training
        read them; one with a column fewer is that layout without the label.
        """
        if n_columns == self.n_columns:
            return self.token_columns, self.label_column
        if n_columns == self.n_columns - 1 and not need_labels:
            return self._without_label(self.token_columns), None
        columns = ",".join(map(str, self.token_columns))
        expected = (f"{self.n_columns}" if need_labels
                    else f"{self.n_columns}, or {self.n_columns - 1} without the label")
        raise CommandError(
            f"{path} has {n_columns} column(s) per token line, but the model was trained "
            f"on {self.n_columns} (token columns {columns}, label column "
            f"{self.label_column}): expected {expected}")


    def _without_label(self, columns):
        return tuple(c - (c > self.label_column) for c in columns)

    def numeric_for_file(self, n_columns):
        """The numeric columns of a file with ``n_columns`` columns (checked by :meth:`for_file`)."""
        if n_columns == self.n_columns:
            return self.numeric_columns
        return self._without_label(self.numeric_columns)


def numbers(sequences, columns, path, first=0):
    """The ``columns`` of each sequence's rows as a float array (n_tokens, len(columns)).

    ``first`` is the file's number of the first of ``sequences``, for the
    errors, which name the sequence, the token and the column.
    """
    getter = itemgetter(*columns)
    try:  # the whole batch at once; cell by cell only to name a bad value
        arrays = [np.array([getter(row) for row in rows], dtype=np.float64).reshape(
            len(rows), len(columns)) for rows in sequences]
        if all(np.isfinite(block).all() for block in arrays):
            return arrays
    except ValueError:
        pass
    arrays = []
    for q, rows in enumerate(sequences):
        block = np.empty((len(rows), len(columns)))
        for t, row in enumerate(rows):
            for k, column in enumerate(columns):
                try:
                    block[t, k] = float(row[column])
                except ValueError:
                    raise CommandError(
                        f"{path}: sequence {first + q}, token {t}, column {column} "
                        f"(--numeric-columns) is {row[column]!r}, not a number") from None
                if not np.isfinite(block[t, k]):
                    raise CommandError(
                        f"{path}: sequence {first + q}, token {t}, column {column} "
                        f"(--numeric-columns) is {row[column]!r}; the numbers must be "
                        f"finite")
        arrays.append(block)
    return arrays


def numeric_names(columns):
    """The names of the numeric columns' features: ``col<N>``."""
    return [f"col{c}" for c in columns]


class ColumnFile:
    """A column file read a batch of sequences at a time, every column of every token.

    Opening it reads up to the first token line, to learn the number of
    columns. An error further down (a line with another number of columns, a
    byte the encoding cannot decode) is raised when the reading reaches it.

    Parameters
    ----------
    path : str
        The file; ``"-"`` reads standard input (spooled to a temporary file,
        since the encoding is guessed from the whole text before reading).
    separator : str or None
        Column separator; None for runs of spaces and tabs.
    encoding : str or None
        Its encoding; None to decide it from the file
        (:func:`~._encoding.guess_encoding`): UTF-8, or Latin-1 for 8-bit text
        with no UTF-8 character, as the original CoNLL-2002 release.
    """

    def __init__(self, path, separator, encoding):
        self.path = path
        if path == "-":
            path = _spool_stdin()
            # removed once the file has been read (or this object is gone)
            weakref.finalize(self, os.unlink, path)
        self._source = path
        self.encoding = encoding if encoding else guess_encoding(path)
        self._sequences = self._rows(separator)
        first = next(self._sequences, None)
        if first is None:
            raise CommandError(f"{path} holds no token lines")
        self.n_columns = len(first[0])
        self._sequences = chain([first], self._sequences)

    def _rows(self, separator):
        try:
            for tokens, _ in iter_conll(self._source, label_column=None, separator=separator,
                                        encoding=self.encoding):
                # iter_conll gives a str for one-column lines and a tuple otherwise
                yield tokens if isinstance(tokens[0], tuple) else [(t,) for t in tokens]
        except UnicodeDecodeError as error:
            where = undecodable_at(self._source, self.encoding)
            line, offset, byte = where if where is not None else (
                "?", "?", error.object[error.start])
            # the reader's reason goes on to say where and how (in Python's
            # terms); the command says that in its own
            reason = error.reason.split("; ", 1)[0]
            raise CommandError(
                f"{self.path}: line {line} is not valid {self.encoding} text ({reason}: "
                f"the byte 0x{byte:02x} at byte offset {offset}); give the file's encoding "
                f"with --encoding") from None
        except LookupError:
            raise UsageError(f"--encoding {self.encoding}: unknown encoding") from None
        except OSError as error:
            raise CommandError(f"cannot read {self.path}: {error.strerror or error}") from None

    def batches(self, max_tokens=None):
        """Lists of sequences of rows (tuples of str), about ``max_tokens`` tokens each.

        A sequence is never split. The file can be read through once.
        """
        max_tokens = BATCH_TOKENS if max_tokens is None else max_tokens
        batch, n_tokens = [], 0
        for rows in self._sequences:
            batch.append(rows)
            n_tokens += len(rows)
            if n_tokens >= max_tokens:
                yield batch
                batch, n_tokens = [], 0
        if batch:
            yield batch


def _spool_stdin():
    """Standard input's bytes copied into a temporary file; returns its path."""
    with tempfile.NamedTemporaryFile(prefix="skcrf-stdin-", delete=False) as handle:
        shutil.copyfileobj(sys.stdin.buffer, handle)
    return handle.name


def pick(sequences, columns):
    """Tokens made of ``columns`` of each row: a str for one column, a tuple for several."""
    getter = itemgetter(*columns)
    return [list(map(getter, rows)) for rows in sequences]


def tagged_text(sequences, labels, probabilities, separator):
    """The rows of ``sequences`` with their predicted labels (and probabilities) appended.

    A blank line follows every sequence, so the texts of consecutive batches
    join into the text of the whole file.
    """
    lines = []
    for q, (rows, predicted) in enumerate(zip(sequences, labels, strict=True)):
        if probabilities is None:
            lines += [separator.join((*row, label))
                      for row, label in zip(rows, predicted, strict=True)]
        else:
            lines += [separator.join((*row, label, f"{p:.4f}"))
                      for row, label, p in zip(rows, predicted, probabilities[q], strict=True)]
        lines.append("")
    return "\n".join(lines) + "\n"


def nbest_text(sequences, nbest, probabilities, separator):
    """Each sequence once per labelling of ``nbest``, after a line ``# RANK PROBABILITY``.

    CRF++'s ``-n`` layout: ``nbest[q]`` holds ``(labels, probability)``
    pairs, best first; ``probabilities`` (or None) the per-token probability
    of each labelling's labels, written as with :func:`tagged_text`. A blank
    line follows every labelling.
    """
    lines = []
    for q, (rows, labellings) in enumerate(zip(sequences, nbest, strict=True)):
        for k, (labels, probability) in enumerate(labellings):
            lines.append(f"# {k} {probability:.6f}")
            token_probabilities = None if probabilities is None else [probabilities[q][k]]
            lines.append(tagged_text([rows], [labels], token_probabilities, separator))
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@contextmanager
def output_file(path, encoding):
    """A text file to write ``path`` through, or standard output for None.

    A regular file is written beside ``path`` and moved over it at the end, so
    a command that fails half-way (a malformed line far down the input)
    leaves no half-written output and an older ``path`` as it was.
    """
    if path is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    if Path(path).exists() and not Path(path).is_file():  # /dev/stdout, a named pipe
        with open(path, "w", encoding=encoding, newline="\n") as handle:
            yield handle
        return
    # replace the file a link points to, not the link
    target = Path(os.path.realpath(path))
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        # 0o666 lets the umask set the mode, as open(path, "w") would
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with open(descriptor, "w", encoding=encoding, newline="\n") as handle:
            yield handle
        if target.exists():
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temporary, target)
    except OSError as error:
        raise CommandError(f"cannot write {path}: {error.strerror or error}") from None
    finally:
        temporary.unlink(missing_ok=True)
