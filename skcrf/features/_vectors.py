"""Vectors inside feature dicts: ``{"w": "casa", "vec": emb["casa"]}``.

A 1-D numpy array as a dict value is a vector: its numbers become the dense
columns ``key[0]..key[d-1]`` of the output's dense block, never CSR entries.
The marker is the array type itself: a list of floats stays what it was
(an error naming the value, with a hint), since a list value already means
several string features and guessing between the two would change models
silently. One key has one length in the whole corpus; a token without the
key has zeros there, as a token without a number feature has 0.
"""

from collections.abc import Mapping
from itertools import chain, repeat
from operator import attrgetter

import numpy as np

from ._dict_arrays import FeatureValueError, _collector_paused
from ._numbering import factorize

_SHAPE = attrgetter("shape")
_DTYPE = attrgetter("dtype")

#: Vectors stacked per copy into the dense block: bounds the temporary.
_STACKED_VECTORS = 8192


def is_vector(value):
    return isinstance(value, np.ndarray)


def _checked_vector(value, q, t, key):
    if value.ndim != 1 or value.dtype.kind not in "biuf":
        raise FeatureValueError(
            q, t, key, value,
            f"a vector value must be a 1-D numpy array of real numbers; got shape "
            f"{value.shape}, dtype {value.dtype}")
    return value


def split_vectors(X, widths=None):
    """(X without its vectors, dense block, widths by key) of feature dict sequences.

    Parameters
    ----------
    X : list of sequences of dict
    widths : dict of str to int, default=None
        The lengths fitted for each vector key (``transform``): keys outside it
        are ignored, as unseen features are. None learns them (``fit``), in
        sorted key order.

    Returns
    -------
    stripped : list of lists of dict
        The same tokens without their vector values (new dicts only for the
        tokens that had some).
    dense : ndarray of shape (n_tokens, sum of widths)
        float32 when every vector is float32, float64 otherwise.
    widths : dict of str to int
    """
    # one new dict per token while the caller holds them all: each collection
    # those allocations trigger would traverse every dict, for nothing
    with _collector_paused():
        fast = _split_by_layout(X, widths)
    if fast is not None:
        return fast
    found = []  # (row, key, vector)
    learned = {} if widths is None else None
    stripped = []
    row = 0
    single = True
    for q, sequence in enumerate(X):
        tokens = []
        for t, token in enumerate(sequence):
            if isinstance(token, Mapping) and any(map(is_vector, token.values())):
                kept = {}
                for key, value in token.items():
                    if not is_vector(value):
                        kept[key] = value
                        continue
                    key = str(key)
                    vector = _checked_vector(value, q, t, key)
                    expected = (learned if widths is None else widths).get(key)
                    if expected is None and widths is None:
                        expected = learned[key] = vector.shape[0]
                    if expected is None:
                        continue  # a vector key fit never met: ignored
                    if vector.shape[0] != expected:
                        raise ValueError(
                            f"Sequence {q}, token {t}, feature {key!r}: a vector of length "
                            f"{vector.shape[0]}, where {key!r} has length {expected} "
                            f"(every vector of one key needs the same length).")
                    single = single and vector.dtype == np.float32
                    found.append((row, key, vector))
                token = kept
            tokens.append(token)
            row += 1
        stripped.append(tokens)
    if widths is None:
        widths = {key: learned[key] for key in sorted(learned)}
    starts = _starts(widths)
    dense = np.zeros((row, sum(widths.values())),
                     dtype=np.float32 if single and found else np.float64)
    for r, key, vector in found:
        start = starts[key]
        dense[r, start:start + vector.shape[0]] = vector
    return stripped, dense, widths


def _starts(widths):
    """Each vector key's first dense column."""
    starts, total = {}, 0
    for key, width in widths.items():
        starts[key] = total
        total += width
    return starts


def _split_by_layout(X, widths):
    """:func:`split_vectors` key by key of each layout of keys, or None for the loop.

    Plain dicts of str keys whose values are, key by key within each layout
    (tuple of keys), either all vectors (1-D float or int arrays of one
    length per key) or none: as :func:`~._columns_by_key.vectorize_by_key`
    reads dicts, with no Python frame per value, and the vectors copied a
    slice of tokens at a time. Anything else (and every error) is left to
    the loop, which names the token.
    """
    tokens = list(chain.from_iterable(X))
    if not tokens or set(map(type, tokens)) != {dict}:
        return None
    layout_ids, layouts = factorize(list(map(tuple, tokens)))
    if not all(type(key) is str for key in chain.from_iterable(layouts)):
        return None
    by_layout = np.argsort(layout_ids, kind="stable")
    bounds = np.zeros(len(layouts) + 1, dtype=np.int64)
    np.cumsum(np.bincount(layout_ids, minlength=len(layouts)), out=bounds[1:])
    learned = {}
    moves = []  # (key, token rows, vectors)
    single = True
    for layout, first, last in zip(layouts, bounds[:-1].tolist(), bounds[1:].tolist()):
        members = by_layout[first:last]
        values = list(chain.from_iterable(map(dict.values, map(tokens.__getitem__,
                                                                members.tolist()))))
        width = len(layout)
        kept, vectors = [], []
        for j, key in enumerate(layout):
            column = values[j::width]
            types = set(map(type, column))
            if np.ndarray not in types:
                kept.append(j)
                continue
            if types != {np.ndarray}:
                return None
            shapes = set(map(_SHAPE, column))
            kinds = set(map(_DTYPE, column))
            if len(shapes) != 1 or len(next(iter(shapes))) != 1 or not all(
                    kind.kind in "biuf" for kind in kinds):
                return None
            length = next(iter(shapes))[0]
            expected = (learned if widths is None else widths).get(key)
            if widths is None and expected is None:
                expected = learned[key] = length
            if expected is None:
                continue  # a vector key fit never met: ignored
            if expected != length:
                return None
            single = single and kinds == {np.dtype(np.float32)}
            vectors.append((key, column))
        if len(kept) == width:
            continue
        names = [layout[j] for j in kept]
        columns = [values[j::width] for j in kept]
        for row, token in zip(members.tolist(), map(dict, map(zip, repeat(names),
                                                             zip(*columns)))
                              if columns else ({} for _ in members)):
            tokens[row] = token
        moves.extend((key, members, column) for key, column in vectors)
    if widths is None:
        widths = {key: learned[key] for key in sorted(learned)}
    starts = _starts(widths)
    dense = np.zeros((len(tokens), sum(widths.values())),
                     dtype=np.float32 if single and moves else np.float64)
    for key, rows, column in moves:
        start, stop = starts[key], starts[key] + widths[key]
        for lo in range(0, len(column), _STACKED_VECTORS):
            part = column[lo:lo + _STACKED_VECTORS]
            dense[rows[lo:lo + len(part)], start:stop] = np.stack(part)
    lengths = np.fromiter(map(len, X), dtype=np.int64, count=len(X))
    ends = np.cumsum(lengths).tolist()
    stripped = [tokens[end - n:end] for end, n in zip(ends, lengths.tolist())]
    return stripped, dense, widths


def vector_names(widths):
    """The dense columns' names: ``key[0]..key[d-1]`` for each vector key."""
    return [f"{key}[{j}]" for key, width in widths.items() for j in range(width)]


class VectorSink:
    """The vector columns met while :func:`~._columns_by_key.vectorize_by_key` reads dicts.

    The one-pass route of dicts with vectors: the reader hands each layout's
    column of vector values here (:meth:`take`) and leaves it out of the
    CSR arrays, so no token's dict is copied without its vectors. Only
    references are kept (a list of the arrays per column, 8 bytes per
    token); :meth:`dense` then copies every vector once into the block,
    allocated once. A column it cannot take (mixed types, lengths, dtypes)
    makes the reader give up, and the caller falls back to
    :func:`split_vectors`, whose loop names the error.

    Parameters
    ----------
    widths : dict of str to int, default=None
        As in :func:`split_vectors`: the fitted lengths, or None to learn them.
    """

    def __init__(self, widths=None):
        self.widths = widths
        self.learned = {}
        self.row0 = 0  # the first token of the chunk being read
        self.moves = []  # (key, global token rows, list of vectors)
        self.single = True

    def take(self, key, rows, column):
        """Record a layout's column of vectors at chunk ``rows``; False if it is no such column."""
        if set(map(type, column)) != {np.ndarray}:
            return False
        shapes = set(map(_SHAPE, column))
        kinds = set(map(_DTYPE, column))
        if len(shapes) != 1 or len(next(iter(shapes))) != 1 or not all(
                kind.kind in "biuf" for kind in kinds):
            return False
        length = next(iter(shapes))[0]
        if self.widths is None:
            expected = self.learned.setdefault(key, length)
        else:
            expected = self.widths.get(key)
            if expected is None:
                return True  # a vector key fit never met: ignored
        if expected != length:
            return False
        self.single = self.single and kinds == {np.dtype(np.float32)}
        self.moves.append((key, rows + self.row0, column))
        return True

    def dense(self, n_tokens):
        """(dense block of ``n_tokens`` rows, widths by key), as :func:`split_vectors` gives."""
        widths = self.widths
        if widths is None:
            widths = {key: self.learned[key] for key in sorted(self.learned)}
        starts = _starts(widths)
        dense = np.zeros((n_tokens, sum(widths.values())),
                         dtype=np.float32 if self.single and self.moves else np.float64)
        moves, self.moves = self.moves, []  # the references go with the copies
        for key, rows, column in moves:
            start, stop = starts[key], starts[key] + widths[key]
            for lo in range(0, len(column), _STACKED_VECTORS):
                part = column[lo:lo + _STACKED_VECTORS]
                dense[rows[lo:lo + len(part)], start:stop] = np.stack(part)
        return dense, widths
