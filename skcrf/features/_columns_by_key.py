"""Feature dicts to columns by key: the fast path for feature functions' dicts.

A one-hot name is ``key + separator + value``. Building that string for every
value (or for every distinct (key, value) pair, as the flat path does) and
hashing it again costs more than the lookup itself; with the vocabulary split
by key into ``value -> column`` tables, each value is one lookup of a string
whose hash Python already holds. Tokens that share a layout (the same keys in
the same order: nearly all of them, for feature functions that always emit the
same keys) are transposed so that each key's values are looked up in one
C-level pass. ``fit`` takes this path when it sorts the names afterwards (the
order in which they are found then does not matter), ``transform`` always.
"""

import operator
import weakref
from bisect import bisect_left
from itertools import chain, islice, repeat
from operator import itemgetter

import numpy as np

from ._numbering import factorize

# The tables of each fitted vectorizer, beside it rather than in its __dict__:
# pickles and model files carry the vocabulary already, and the tables are
# rebuilt from it on the first transform that needs them.
_TABLES = weakref.WeakKeyDictionary()

# Tokens must average at least this many per layout: below it, the per-key
# numpy calls of each layout cost more than the flat path's per-value work.
_MIN_TOKENS_PER_LAYOUT = 64

_NUMBER_TYPES = frozenset({float, int, bool})


class ColumnsByKey:
    """The one-hot columns of a vocabulary by key, then by value.

    ``of_key(key)`` is the dict ``value -> vocabulary[key + separator +
    value]`` over the names that start with ``key + separator``; it is built
    on first use, from the names in sorted order, where they are neighbours.

    With ``grow``, the vocabulary is being built (by :func:`vectorize_by_key`
    and possibly the flat path): each table starts empty, and a value it
    lacks is looked up by name, or added, when met.

    Parameters
    ----------
    vocabulary : dict of str to int
        Feature name to column; read, and with ``grow`` added to.
    separator : str
        Between a key and a str value in a name.
    grow : bool, default=False
        Whether names met and not in ``vocabulary`` are added to it.
    names : list of str, optional
        The vocabulary's names, used as its sorted order if they are in
        increasing order and all in it (a sorting vectorizer's ``feature_names_``).
    """

    def __init__(self, vocabulary, separator, grow=False, names=None):
        self.vocabulary = vocabulary
        self.separator = separator
        self.grow = grow
        # the fitted names, usually sorted already: then not sorted again (the
        # first transform of a model just loaded, or on each Dask task, pays it)
        self._names = names
        self._sorted_names = None
        self._tables = {}
        # (key, value) -> column of a fixed vocabulary, see _dict_pairs
        self.pairs = {}
        # a TokenFeaturizer layout -> its SmallColumns in this vocabulary, see _small_columns
        self.layouts = {}

    def of_key(self, key):
        """``value -> column`` of the one-hot names of ``key`` (a str)."""
        table = self._tables.get(key)
        if table is None and self.grow:
            table = self._tables[key] = {}
        elif table is None:
            if self._sorted_names is None:
                self._sorted_names = self._names_in_order()
            names = self._sorted_names
            head = key + self.separator
            start = bisect_left(names, head)
            end = _prefix_end(names, head, start)
            # in C: a model's first prediction builds the tables of all its keys
            own = names[start:end]
            table = self._tables[key] = dict(zip(map(itemgetter(slice(len(head), None)), own),
                                                 map(self.vocabulary.__getitem__, own)))
        return table

    def built(self, key):
        """The table of ``key`` if :meth:`of_key` has built it, else None."""
        return self._tables.get(key)

    def _names_in_order(self):
        """The vocabulary's names sorted: ``names`` if increasing and all in it."""
        names = self._names
        if (names is not None and len(names) == len(self.vocabulary)
                and all(map(operator.lt, names, islice(names, 1, None)))
                and all(map(self.vocabulary.__contains__, names))):
            return names
        return sorted(self.vocabulary)


def _prefix_end(names, head, start):
    """End of the run of sorted ``names`` from ``start`` that begin with ``head``."""
    if head and head[-1] < chr(0x10FFFF):
        # the first str after every str that begins with head
        return bisect_left(names, head[:-1] + chr(ord(head[-1]) + 1), start)
    end = start
    while end < len(names) and names[end].startswith(head):
        end += 1
    return end


def forget_tables(vectorizer):
    """Drop the tables kept for ``vectorizer`` (a refit replaces its vocabulary)."""
    _TABLES.pop(vectorizer, None)


def columns_by_key(vectorizer):
    """The :class:`ColumnsByKey` of a fitted vectorizer's vocabulary, kept for reuse."""
    tables = _TABLES.get(vectorizer)
    if (tables is None or tables.vocabulary is not vectorizer.vocabulary_
            or tables.separator != vectorizer.separator):
        tables = _TABLES[vectorizer] = ColumnsByKey(
            vectorizer.vocabulary_, vectorizer.separator,
            names=getattr(vectorizer, "feature_names_", None))
    return tables


def vectorize_by_key(X, tables, vectors=None):
    """CSR arrays of ``X`` by the tables of a vocabulary, or None to leave it to the flat path.

    Plain dicts of str keys whose values are, key by key within each layout,
    either all str or all exactly float, int or bool; anything else returns
    None (the flat path and the loop handle it, and name the errors). The
    output is the flat path's exactly: entries in token order, then in the
    order of each dict's keys; unknown names and zero numbers dropped. With
    ``tables.grow`` new names are added to the vocabulary key by key, not in
    the order of their first occurrence: only for a caller that sorts them.
    Returns ``(data, indices, indptr, offsets)`` as
    :func:`~._dict_arrays._vectorize` does, or None.

    ``vectors``, a :class:`~._vectors.VectorSink` if given, takes the
    columns of numpy vectors: they are left out of the CSR arrays (as if the
    dicts lacked those keys) and gathered for the dense block, with ``X``'s
    tokens numbered from ``vectors.row0``.
    """
    tokens = list(chain.from_iterable(X))
    if not tokens or set(map(type, tokens)) != {dict}:
        return None
    layout_ids, layouts = factorize(list(map(tuple, tokens)))
    if len(layouts) * _MIN_TOKENS_PER_LAYOUT > len(tokens):
        return None
    if not all(type(key) is str for key in chain.from_iterable(layouts)):
        return None
    layout_lengths = np.fromiter(map(len, layouts), dtype=np.int64, count=len(layouts))
    token_starts = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(layout_lengths[layout_ids], out=token_starts[1:])
    indices = np.empty(token_starts[-1], dtype=np.int64)
    data = None  # all ones until a number says otherwise
    by_layout = np.argsort(layout_ids, kind="stable")
    layout_bounds = np.zeros(len(layouts) + 1, dtype=np.int64)
    np.cumsum(np.bincount(layout_ids, minlength=len(layouts)), out=layout_bounds[1:])
    for layout, first, last in zip(layouts, layout_bounds[:-1].tolist(),
                                   layout_bounds[1:].tolist()):
        members = by_layout[first:last]
        starts = token_starts[members]
        values = list(chain.from_iterable(map(dict.values, map(tokens.__getitem__,
                                                                members.tolist()))))
        width = len(layout)
        for j, key in enumerate(layout):
            column = values[j::width]
            if vectors is not None and type(column[0]) is np.ndarray:
                if not vectors.take(key, members, column):
                    return None
                indices[starts + j] = -1
                continue
            if type(column[0]) is str:
                columns = _str_columns(column, key, tables)
                if columns is None:
                    return None
            else:
                numbers = _numbers(column)
                if numbers is None:
                    return None
                column_of_key = tables.vocabulary.get(key, -1)
                if column_of_key < 0 and tables.grow:
                    column_of_key = tables.vocabulary[key] = len(tables.vocabulary)
                # a zero stores nothing; NaN is no zero, as in the loop
                stored = numbers != 0
                # flags and a bias of 1 keep the output free of values
                if data is None and not np.all(numbers[stored] == 1.0):
                    data = np.ones(indices.shape[0])
                if data is not None:
                    data[starts + j] = numbers
                columns = np.where(stored, column_of_key, -1)
            indices[starts + j] = columns
    kept = indices >= 0
    kept_before = np.zeros(kept.shape[0] + 1, dtype=np.int64)
    np.cumsum(kept, out=kept_before[1:])
    data = np.ones(int(kept_before[-1])) if data is None else data[kept]
    offsets = np.zeros(len(X) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, X), dtype=np.int64, count=len(X)), out=offsets[1:])
    return data, indices[kept], kept_before[token_starts], offsets


def _str_columns(column, key, tables):
    """Columns of a key's str values (-1 if unknown), or None if some value is not a str.

    Every value's type is checked before any lookup: a list cannot be hashed,
    and a str subclass may name itself otherwise than its text; the flat path
    and the loop handle both. With ``tables.grow`` the values not found get
    their columns, in the order first met.
    """
    if set(map(type, column)) != {str}:
        return None
    table = tables.of_key(key)
    columns = np.fromiter(map(table.get, column, repeat(-1)), dtype=np.int64,
                          count=len(column))
    if tables.grow:
        missing = np.flatnonzero(columns < 0).tolist()
        values = list(map(column.__getitem__, missing))
        vocabulary = tables.vocabulary
        head = key + tables.separator
        for value in dict.fromkeys(values):
            # another key may have made the same name ("w=x" + "y", "w" + "x=y")
            name = head + value
            column_of_name = vocabulary.get(name)
            if column_of_name is None:
                column_of_name = vocabulary[name] = len(vocabulary)
            table[value] = column_of_name
        columns[missing] = np.fromiter(map(table.__getitem__, values), dtype=np.int64,
                                       count=len(values))
    return columns


def _numbers(column):
    """The float64 values of a key's numbers, or None if some value is not float, int or bool."""
    if not set(map(type, column)) <= _NUMBER_TYPES:
        return None
    try:
        return np.fromiter(column, dtype=np.float64, count=len(column))
    except OverflowError:  # an int beyond float64: the loop raises its own error
        return None
