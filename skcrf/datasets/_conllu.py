"""Reading CoNLL-U treebanks: each word's columns, its head, and the tree checked.

CoNLL-U (https://universaldependencies.org/format.html) has one word per line
in ten tab-separated columns, ``ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS
MISC``, a blank line after each sentence and ``#`` comment lines before it. The
public entry point is :func:`skcrf.datasets.load_conllu`; ``fetch_ud`` reads
through :func:`read_conllu` too, so the code base has one CoNLL-U reader.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Union

from .._utils.type_aliases import Corpus, StrPath
from ._conll import _reading_encoding, decoding_error

__all__ = ["COLUMNS", "load_conllu", "read_conllu"]

#: The CoNLL-U column names, in file order.
COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
_INDEX = {name: index for index, name in enumerate(COLUMNS)}
_HEAD = _INDEX["head"]
_DEPREL = _INDEX["deprel"]
# a multiword token's range "1-2", an empty node's "1.1"
_SKIPPED_ID = re.compile(r"[0-9]+[-.][0-9]+")


def load_conllu(path: StrPath, *, label: Union[str, int, None] = "upos",
                columns: Sequence[Union[str, int]] = ("form",), deprel_subtypes: bool = True,
                encoding: str = "utf-8") -> Corpus:
    r"""Read a CoNLL-U treebank into sentences of tokens with their heads, and labels.

    Each sentence is its syntactic words, as Universal Dependencies defines
    them: a multiword-token line (ID ``1-2``, the surface form of words 1 and
    2, such as Spanish *del* for *de el*) and an empty node (ID ``1.1``, which
    belongs to the enhanced graph in DEPS, not to the basic tree) are skipped,
    as are ``#`` comment lines. Every word's HEAD must make a tree: an integer
    from 0 to the number of words, 0 for a root, with no cycle. A sentence may
    have several roots (a forest, which a tree CRF handles), not none. The
    whole file is read at once; Windows line ends and a UTF-8 byte-order mark
    are accepted.

    Parameters
    ----------
    path : str or path-like
        The CoNLL-U file.
    label : str or int or None, default="upos"
        The column returned as ``y``: a name among ``"form"``, ``"lemma"``,
        ``"upos"``, ``"xpos"``, ``"feats"``, ``"deprel"``, ``"deps"``,
        ``"misc"`` (also ``"id"`` and ``"head"``), or a column index from 0
        (ID) to 9 (MISC). None for no labels.
    columns : sequence of str or int, default=("form",)
        The columns that make up a token, in order, named or indexed as
        ``label``. At least one.
    deprel_subtypes : bool, default=True
        If False, the DEPREL column (as the label or a token column) keeps only
        its universal relation, the part before ``:``: ``nmod:poss`` becomes
        ``nmod``.
    encoding : str, default="utf-8"
        Text encoding of the file.

    Returns
    -------
    X : list of list of tuple
        The sentences. Each token is a tuple of the ``columns`` (str) followed
        by one int: the 0-based index, within the sentence, of the word's head,
        or -1 for a root (HEAD 0). ``("The", 1)`` is the form "The" whose head
        is the sentence's second word.
    y : list of list of str or None
        The ``label`` column of each word; None when ``label`` is None.

    Raises
    ------
    ValueError
        If ``label`` or ``columns`` names no CoNLL-U column, or the file is not
        valid CoNLL-U: a line without exactly 10 tab-separated columns, word IDs
        not 1, 2, ... in order, a HEAD that is not an integer (``_`` included)
        or points outside the sentence, a cycle, or a sentence without a root.
        The message names the file, the sentence (counted from 1) and the line.

    See Also
    --------
    fetch_ud : UD English EWT, downloaded into the data home on first use.

    Examples
    --------
    >>> import tempfile, os
    >>> from skcrf.datasets import load_conllu
    >>> text = ("# text = The dog barked.\n"
    ...         "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
    ...         "2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n"
    ...         "3\tbarked\tbark\tVERB\tVBD\t_\t0\troot\t_\t_\n"
    ...         "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n\n")
    >>> with tempfile.NamedTemporaryFile("w", suffix=".conllu", delete=False) as f:
    ...     _ = f.write(text)
    >>> X, y = load_conllu(f.name)
    >>> X
    [[('The', 1), ('dog', 2), ('barked', -1), ('.', 2)]]
    >>> y
    [['DET', 'NOUN', 'VERB', 'PUNCT']]
    >>> X, y = load_conllu(f.name, columns=("form", "upos"), label="deprel")
    >>> X[0][:2], y[0][:2]
    ([('The', 'DET', 1), ('dog', 'NOUN', 2)], ['det', 'nsubj'])
    >>> os.remove(f.name)
    """
    if isinstance(columns, (str, int)):
        raise TypeError(f"columns must be a sequence of column names or indices, such as "
                        f"('form',); got {columns!r}.")
    column_indices = [_column_index(column, "columns") for column in columns]
    if not column_indices:
        raise ValueError("columns must name at least one column, such as ('form',).")
    label_index = None if label is None else _column_index(label, "label")
    return read_conllu(path, column_indices, label_index, deprel_subtypes=deprel_subtypes,
                       encoding=encoding)


def _column_index(column, what):
    """The index (0 to 9) of a CoNLL-U column given by name or index."""
    if isinstance(column, str) and column in _INDEX:
        return _INDEX[column]
    # bool is an int, but True is no column
    if isinstance(column, int) and not isinstance(column, bool) and 0 <= column < 10:
        return column
    raise ValueError(f"{what}: {column!r} is no CoNLL-U column; use one of "
                     f"{', '.join(map(repr, COLUMNS))} or an index from 0 to 9.")


def read_conllu(path, column_indices, label_index, *, deprel_subtypes=True,
                encoding="utf-8", heads=True):
    """Sentences and labels of a CoNLL-U file, the columns given by index.

    The reader behind :func:`load_conllu` and ``fetch_ud``. With ``heads``
    False the tokens are the columns alone: a str for one column, a tuple of
    str for several (the trees are checked all the same).
    """
    path = Path(path)
    data = path.read_bytes()
    try:
        text = data.decode(_reading_encoding(encoding))
    except UnicodeDecodeError as exc:
        raise decoding_error(path, encoding, exc) from None
    reader = _Reader(path, column_indices, label_index, deprel_subtypes, heads)
    # no newline translation and splitting on "\n" alone: a stray "\r" or other
    # Unicode line break inside a field stays in its field instead of cutting the line
    first_line = 1
    for block in text.replace("\r\n", "\n").split("\n\n"):
        reader.add(block.split("\n"), first_line)
        first_line += block.count("\n") + 2
    return reader.X, reader.y


class _Reader:
    """The sentences read so far: each one checked, its tokens and labels built.

    A sentence is checked as a whole (cheap tests over all its lines); only
    when one fails are its lines walked one by one to name the culprit.
    """

    def __init__(self, path, column_indices, label_index, deprel_subtypes, heads):
        self.path = path
        self.columns = list(column_indices)
        self.used = sorted(set(self.columns) | ({label_index} - {None}))
        self.label = label_index
        self.deprel_subtypes = deprel_subtypes
        self.heads = heads
        self.X = []
        self.y = [] if label_index is not None else None
        self.ids = []  # "1", "2", ...: the IDs a sentence's words must have

    def add(self, lines, first_line):
        """Read the lines of one sentence (with its comments) starting at ``first_line``."""
        rows = [line.split("\t") for line in lines if line and line[0] != "#"]
        if not rows:
            return  # blank lines, or comments alone
        if any(len(fields) != 10 for fields in rows):
            number, line, found = next(
                (number, line, len(line.split("\t")))
                for number, line in self._lines(lines, first_line) if line.count("\t") != 9)
            self.fail(number, f"expected the 10 tab-separated columns of CoNLL-U, found "
                              f"{found}: {line!r}")
        ids = self._ids(len(rows))
        if [fields[0] for fields in rows] != ids:
            # multiword tokens and empty nodes are not words of the basic tree
            rows = [fields for fields in rows if not _SKIPPED_ID.fullmatch(fields[0])]
            if not rows:
                self.fail(next(self._lines(lines, first_line))[0],
                          "the sentence has no words, only multiword tokens or empty nodes")
            ids = self._ids(len(rows))
            for expected, fields, number in zip(ids, rows, self._word_lines(lines, first_line)):
                if fields[0] != expected:
                    self.fail(number, f"word ID {fields[0]!r} where {expected} was expected: "
                                      f"IDs must be 1, 2, ... in order")
        parents = self._parents([fields[_HEAD] for fields in rows], lines, first_line)
        columns = {index: [fields[index] for fields in rows] for index in self.used}
        if not self.deprel_subtypes and _DEPREL in columns:
            columns[_DEPREL] = [relation.partition(":")[0] for relation in columns[_DEPREL]]
        token_columns = [columns[index] for index in self.columns]
        if self.heads:
            tokens = list(zip(*token_columns, parents))
        elif len(token_columns) == 1:
            tokens = token_columns[0][:]  # a copy: the label may be the same column
        else:
            tokens = list(zip(*token_columns))
        self.X.append(tokens)
        if self.y is not None:
            self.y.append(columns[self.label])

    def _parents(self, heads, lines, first_line):
        """Each word's head as a 0-based index, -1 for a root; the tree checked."""
        n_words = len(heads)
        # one test for the sentence: isdigit alone would pass other scripts'
        # digits, and int() would take "1_0" and " 1"
        joined = "".join(heads)
        if "" in heads or not (joined.isdigit() and joined.isascii()):
            for head, number in zip(heads, self._word_lines(lines, first_line)):
                if not (head.isdigit() and head.isascii()):
                    why = " (the tree needs every word's head)" if head == "_" else ""
                    self.fail(number, f"HEAD {head!r} is not a word ID or 0{why}")
        longest = len(str(n_words))
        if max(map(len, heads)) > longest:
            # leading zeros aside, a longer HEAD is outside the sentence (and int()
            # refuses thousands of digits)
            heads = [head.lstrip("0") or "0" for head in heads]
            for head, number in zip(heads, self._word_lines(lines, first_line)):
                if len(head) > longest:
                    shown = head if len(head) <= 20 else f"{head[:10]}...({len(head)} digits)"
                    self.fail(number, f"HEAD {shown} is outside the sentence of {n_words} "
                                      f"words")
        parents = [int(head) - 1 for head in heads]
        if max(parents) >= n_words:
            number, parent = next((number, parent) for number, parent in zip(
                self._word_lines(lines, first_line), parents) if parent >= n_words)
            self.fail(number, f"HEAD {parent + 1} is outside the sentence of {n_words} words")
        if -1 not in parents:
            self.fail(next(self._word_lines(lines, first_line)),
                      "no word has HEAD 0: the sentence has no root")
        if not _reaches_a_root(parents):
            cycle = _find_cycle(parents)
            number = list(self._word_lines(lines, first_line))[cycle[0]]
            path = " -> ".join(str(word + 1) for word in cycle + [cycle[0]])
            self.fail(number, f"the heads form a cycle {path} (word IDs) with no path to "
                              f"a root")
        return parents

    def _ids(self, n_words):
        while len(self.ids) < n_words:
            self.ids.append(str(len(self.ids) + 1))
        return self.ids[:n_words]

    @staticmethod
    def _lines(lines, first_line):
        """(line number, line) of the token lines: words, multiword tokens, empty nodes."""
        return ((first_line + offset, line) for offset, line in enumerate(lines)
                if line and line[0] != "#")

    def _word_lines(self, lines, first_line):
        """The line numbers of the words, in order."""
        return (number for number, line in self._lines(lines, first_line)
                if not _SKIPPED_ID.fullmatch(line.split("\t", 1)[0]))

    def fail(self, line_number, message):
        raise ValueError(f"{self.path}, sentence {len(self.X) + 1}, line {line_number}: "
                         f"{message}")


def _reaches_a_root(parents):
    """Whether every word of ``parents`` (-1 for a root, all in range) has a root above it.

    Pointer jumping: after k rounds each word points 2**k steps up, the root
    sentinel n pointing to itself; depths are below n, so n.bit_length()
    rounds reach it from every word not on or under a cycle. Each round is one
    list comprehension, much faster in Python than walking word by word.
    """
    n_words = len(parents)
    up = [n_words if parent < 0 else parent for parent in parents]
    up.append(n_words)
    for _ in range(n_words.bit_length()):
        up = [up[word] for word in up]
    return up.count(n_words) == n_words + 1


def _find_cycle(parents):
    """The words on a cycle of ``parents`` (-1 = root), in order, or None for a forest."""
    # 0: not seen, 1: on the path being walked, 2: known to reach a root
    state = [0] * len(parents)
    for start in range(len(parents)):
        path = []
        word = start
        while word != -1 and state[word] == 0:
            state[word] = 1
            path.append(word)
            word = parents[word]
        if word != -1 and state[word] == 1:
            return path[path.index(word):]
        for seen in path:
            state[seen] = 2
    return None
