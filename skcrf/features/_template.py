"""CRF++ feature templates for TokenFeaturizer(template=...): parsed once, applied with numpy.

A CRF++ template is a text of lines: ``#`` starts a comment; a ``U`` line
(``U01:%x[-1,0]/%x[0,0]``) makes one feature per token, the line with each
``%x[row,col]`` macro replaced by column ``col`` of the token ``row`` places
away (``_B-1``, ``_B-2``... before the sequence, ``_B+1``, ``_B+2``... after
it); a ``B`` line makes the same of the token, for the transition into it
(a bare ``B`` is the plain label-to-label transitions, which every chain
has).

Applying a line never builds a string per token: each macro is the codes of
its column's distinct values shifted within the sequences, a line's macros
are numbered together by distinct combination, and only the distinct
combinations are spelled out as feature names.
"""

import os
import re
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .sequence_matrix import SequenceMatrix

_MACRO = re.compile(r"%x\[\s*(-?\d+)\s*,\s*(\d+)\s*\]")


class TemplateLine(NamedTuple):
    """One line of a template: its kind, its text around the macros, its macros."""

    kind: str  # "U" or "B"
    pieces: tuple  # literal text: before the first macro, between them, after the last
    macros: tuple  # (row, column) of each %x[row,column]
    number: int  # line number in the template, for errors


def _template_text(template):
    """The text of ``template``: the text itself, or the file it names."""
    if isinstance(template, os.PathLike) or (
            isinstance(template, str) and "\n" not in template
            and (os.path.isfile(template) or "%x[" not in template
                 and not template.strip().startswith(("U", "B", "#")))):
        path = os.fspath(template)
        try:
            stat = os.stat(path)
        except OSError as error:
            raise ValueError(f"template={template!r} is neither a template's text nor a "
                             f"readable file: {error}.") from None
        return _read(path, stat.st_mtime_ns, stat.st_size), path
    return template, "template"


@lru_cache(maxsize=16)
def _read(path, mtime, size):
    # keyed by the file's time and size too: an edited file is read again
    with open(path, encoding="utf-8") as file:
        return file.read()


def template_lines(template):
    """The emitting lines of a CRF++ template (text or path); raises ValueError if malformed."""
    text, source = _template_text(template)
    return _parse(text, source)


@lru_cache(maxsize=16)
def _parse(text, source):
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line[0] not in "UB":
            raise ValueError(f"{source}, line {number}: {raw!r} is not a CRF++ template "
                             f"line (one starting with U, a unigram, or B, a bigram).")
        pieces, macros, at = [], [], 0
        for match in _MACRO.finditer(line):
            pieces.append(line[at:match.start()])
            macros.append((int(match.group(1)), int(match.group(2))))
            at = match.end()
        pieces.append(line[at:])
        if any("%" in piece for piece in pieces):
            raise ValueError(f"{source}, line {number}: {raw!r} holds a % that is not a "
                             f"%x[row,col] macro (CRF++'s only kind).")
        if line[0] == "B" and not macros:
            continue  # the plain transitions, which every chain has
        lines.append(TemplateLine(line[0], tuple(pieces), tuple(macros), number))
    if not lines and "B" not in (line.strip()[:1] for line in text.splitlines()):
        raise ValueError(f"{source} has no U or B line.")
    return tuple(lines)


def _shifted(codes, n_values, row, reach, positions, lengths, index):
    """Codes of the tokens ``row`` places away; boundary tokens numbered after the values.

    ``_B-k`` (k places before the first token) is ``n_values + k - 1``,
    ``_B+k`` (after the last) ``n_values + reach + k - 1``.
    """
    target = positions + row
    out = np.empty_like(codes)
    inside = (target >= 0) & (target < lengths)
    out[inside] = codes[index[inside] + row]
    before = target < 0
    out[before] = n_values - 1 - target[before]
    after = target >= lengths
    out[after] = n_values + reach - 1 + (target[after] - lengths[after] + 1)
    return out


def template_features(template, X):
    """The SequenceMatrix of a CRF++ template (text or path) over raw sequences ``X``."""
    from ._tokens import _Tokens

    lines = template_lines(template)
    if isinstance(X, list):
        small = _small_template_features(lines, X)
        if small is not None:
            return small
    tokens = _Tokens(X)
    if tokens.n_tokens == 0:
        return SequenceMatrix(sp.csr_matrix((0, 0)), tokens.offsets, [])
    return template_matrix(lines, tokens)


def _small_template_features(lines, X):
    """:func:`template_matrix`'s output for a sentence or a few, spelled token by token.

    The general path's fixed cost (dozens of numpy calls, a vectorizer) is most
    of the time of one sentence; here each feature is spelled directly, which
    costs more per token and nothing fixed. None if ``X`` is not small and
    plain (exactly str or tuples of str of one width): the general path takes
    it, and names any malformed token.
    """
    from ._small import SMALL_TOKENS, plain_width

    if not all(type(sequence) in (list, tuple) for sequence in X):
        return None
    tokens = [token for sequence in X for token in sequence]
    if not 0 < len(tokens) <= SMALL_TOKENS:
        return None
    width = plain_width(tokens)
    if width is None:
        return None
    for line in lines:
        for row, column in line.macros:
            if column >= width:
                return None  # the general path raises, naming the line
    rows = []
    for sequence in X:
        columns = ([list(sequence)] if width == 1 and type(sequence[0]) is str
                   else [[token[c] for token in sequence] for c in range(width)]) \
            if sequence else []
        n = len(sequence)
        for i in range(n):
            names = []
            for line in lines:
                text = line.pieces[0]
                for (row, column), piece in zip(line.macros, line.pieces[1:]):
                    j = i + row
                    value = (columns[column][j] if 0 <= j < n
                             else f"_B-{-j}" if j < 0 else f"_B+{j - n + 1}")
                    text = text + value + piece
                names.append(text)
            rows.append(names)
    vocabulary = sorted({name for names in rows for name in names})
    index = dict(zip(vocabulary, range(len(vocabulary))))
    indices, indptr, data = [], [0], []
    for names in rows:
        counts = {}
        for name in names:
            counts[index[name]] = counts.get(index[name], 0) + 1
        for column in sorted(counts):
            indices.append(column)
            data.append(float(counts[column]))
        indptr.append(len(indices))
    lengths = [len(sequence) for sequence in X]
    offsets = np.cumsum([0] + lengths, dtype=np.int64)
    values = None if all(value == 1.0 for value in data) else np.array(data)
    return SequenceMatrix._from_arrays(values, np.array(indices, dtype=np.int32),
                                       np.array(indptr, dtype=np.int64), len(vocabulary),
                                       offsets, vocabulary)


def template_dicts(template, X):
    """:func:`template_features` as one dict per token, for inspection."""
    features = template_features(template, X)
    names, matrix = features.feature_names, features.matrix
    offsets = features.offsets.tolist()
    return [[dict(zip(names[matrix.indices[matrix.indptr[i]:matrix.indptr[i + 1]]].tolist(),
                      matrix.data[matrix.indptr[i]:matrix.indptr[i + 1]].tolist()))
             for i in range(start, stop)]
            for start, stop in zip(offsets[:-1], offsets[1:])]


def _numbered(per_macro, n):
    """Each token's combination of its macros' codes, numbered 0.. by distinct combination.

    Returns the numbers and, per combination, a token that has it. The codes
    make one mixed-radix key while it fits in an int64 (a combination of
    three word columns does); past that, the partial key is renumbered first.
    """
    key = np.zeros(n, dtype=np.int64)
    radix = 1
    for shifted, values in per_macro:
        if radix * len(values) >= 1 << 62:
            _, key = np.unique(key, return_inverse=True)
            radix = int(key.max(initial=0)) + 1
        key = key * len(values) + shifted
        radix *= len(values)
    if radix <= 4 * n + 1024:
        # a small key range (one column's codes): counting beats sorting
        used = np.bincount(key, minlength=radix) > 0
        number = np.cumsum(used) - 1
        first = np.zeros(radix, dtype=np.int64)
        first[key] = np.arange(n, dtype=np.int64)  # any token of the combination will do
        return number[key], first[used]
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return inverse.reshape(-1), first


def template_matrix(lines, tokens, source="template"):
    """The SequenceMatrix of the template ``lines`` over ``tokens`` (a ``_Tokens``).

    Every line gives each token one feature; columns are named by the
    features' text, sorted (two lines spelling the same name share a column,
    its value the count).
    """
    from .vectorizer import SequenceVectorizer

    n = tokens.n_tokens
    lengths = np.repeat(tokens.lengths, tokens.lengths)
    index = np.arange(n, dtype=np.int64)
    positions = index - np.repeat(tokens.offsets[:-1], tokens.lengths)
    reach = max([abs(row) for line in lines for row, _ in line.macros] + [0])
    boundary = ([f"_B-{k}" for k in range(1, reach + 1)]
                + [f"_B+{k}" for k in range(1, reach + 1)])
    values_of, columns, names = {}, [], []
    for line in lines:
        per_macro = []
        for row, column in line.macros:
            if column >= tokens.n_columns:
                raise ValueError(f"{source}, line {line.number}: %x[{row},{column}] reads "
                                 f"column {column}, but the tokens have {tokens.n_columns} "
                                 f"column(s).")
            if column not in values_of:
                codes, values = tokens.column_codes(column)
                values_of[column] = (codes, np.asarray(list(values) + boundary,
                                                       dtype=object))
            codes, values = values_of[column]
            per_macro.append((_shifted(codes, len(values) - len(boundary), row, reach,
                                       positions, lengths, index), values))
        combined, first = _numbered(per_macro, n)
        spelled = np.full(first.shape[0], line.pieces[0], dtype=object)
        for (shifted, values), piece in zip(per_macro, line.pieces[1:]):
            # object arrays add their str items in one C loop, not a Python one
            spelled = spelled + values[shifted[first]] + piece
        spelled = spelled.tolist()
        columns.append(combined.reshape(-1) + len(names))
        names += spelled
    width = len(columns)
    indices = (np.stack(columns, axis=1).reshape(-1) if columns
               else np.zeros(0, dtype=np.int64))
    matrix = sp.csr_matrix((np.ones(n * width), indices, np.arange(n + 1) * width),
                           shape=(n, len(names)))
    return SequenceVectorizer().fit_transform(SequenceMatrix(matrix, tokens.offsets, names))
