"""Raw tokens (a sentence, a server's batch) straight to a fitted vocabulary's columns.

Tagging one sentence through ``TokenFeaturizer -> SequenceVectorizer`` named
every feature of every token (hundreds of strings), sorted and numbered the
names, and then looked each name up in the vocabulary: most of the time of
the whole prediction. The names of a token's features depend only on its
values (its word, its POS, ...) and on where its neighbours are, so here each
distinct value gets, once and for the calls that follow, the vocabulary
columns of its names (-1 for a name the vocabulary lacks), and one compiled
call (:func:`~._kernels.slot_columns`) gathers each token's row from those
tables by its neighbours' positions. The result is the vectorizer's output
of the featurizer's output, exactly (tested against it): every name of a
token is distinct (the layout's slots name disjoint ranges), so its columns
are distinct too, and sorting each row gives the canonical arrays.
"""

import threading
from itertools import accumulate, chain, repeat
from operator import itemgetter

import numpy as np

from ._columns_by_key import columns_by_key
from ._kernels import SLOT_AFTER, SLOT_ALWAYS, SLOT_BEFORE, SLOT_GATHER, slot_columns

#: The most values whose columns are kept per token column, forgotten all at
#: once past it (a call keeps all of its own): about 8 MiB with the tutorial's
#: features, and the distinct words of a few thousand sentences.
_REMEMBERED_VALUES = 1 << 15


class _Tables:
    """The columns of each distinct value of each token column the slots read.

    ``table`` holds one block of ``capacity`` entries per (source, entry) of
    the layout: entry ``e`` of the value in row ``r`` of source ``s`` is
    ``table[(first_block[s] + e) * capacity + r]``, and ``slot_starts`` is
    where each slot's block starts (0 for a marker). Rows are appended, never
    changed, and ``rows[s]`` names a value only once its row is in
    ``table``: a reader that takes its rows first and the table after needs
    no lock. A table that must grow is a new object (readers keep the old).
    """

    def __init__(self, columns, capacity=256):
        widths = columns.widths
        self.rows = [{} for _ in widths]
        self.first_block = np.concatenate([[0], np.cumsum(widths[:-1])]).astype(np.int64)
        self.n_blocks = int(sum(widths))
        self.capacity = capacity
        self.table = np.full(self.n_blocks * capacity, -1, dtype=np.int32)
        block = self.first_block[columns.slot_sources] + columns.entries
        self.slot_starts = np.where(columns.kinds == SLOT_GATHER, block * capacity, 0)


class SmallColumns:
    """A :class:`~._small.SmallLayout`'s features as the columns of one vocabulary.

    Parameters
    ----------
    layout : SmallLayout
    vocabulary : dict of str to int
        A fitted :class:`SequenceVectorizer`'s ``vocabulary_``.
    """

    def __init__(self, layout, vocabulary):
        self.sources = layout.sources
        self.widths = [source.n_entries for source in self.sources]
        self.vocabulary = vocabulary
        self.lock = threading.Lock()
        get = vocabulary.get
        kinds, shifts, slot_sources, entries, column_starts = [], [], [], [], []
        for kind, a, b in layout.slots:
            if isinstance(kind, str):  # bias or a boundary marker: its own column
                kinds.append({"always": SLOT_ALWAYS, "before": SLOT_BEFORE,
                              "after": SLOT_AFTER}[kind])
                shifts.append(b)
                slot_sources.append(0)
                entries.append(-1)
                column_starts.append(get(a, -1))
            else:  # entry b of source kind's values, a tokens away
                kinds.append(SLOT_GATHER)
                shifts.append(a)
                slot_sources.append(kind)
                entries.append(b)
                column_starts.append(0)
        self.kinds = np.array(kinds, dtype=np.int64)
        self.shifts = np.array(shifts, dtype=np.int64)
        self.slot_sources = np.array(slot_sources, dtype=np.int64)
        self.entries = np.array(entries, dtype=np.int64)
        self.column_starts = np.array(column_starts, dtype=np.int64)
        # only the sources some slot reads are looked up
        self.read = sorted({kind for kind, _, _ in layout.slots if not isinstance(kind, str)})
        self.tables = _Tables(self)

    def arrays(self, X, is_str):
        """The canonical CSR arrays of the vectorizer's output for the sequences ``X``.

        Returns ``(indices, indptr, offsets)``: int32 columns sorted within
        each row, and int64 row and sequence offsets; every value is 1.
        """
        offsets = np.fromiter(accumulate(map(len, X), initial=0), dtype=np.int64,
                              count=len(X) + 1)
        tokens = list(chain.from_iterable(X))
        n = len(tokens)
        columns = [tokens if is_str else list(map(itemgetter(self.sources[s].column), tokens))
                   for s in self.read]
        tables = self.tables
        rows = np.empty((len(self.sources), n), dtype=np.int64)
        for s, values in zip(self.read, columns):
            rows[s] = np.fromiter(map(tables.rows[s].get, values, repeat(-1)),
                                  dtype=np.int64, count=n)
        if self.read and rows[self.read].min() < 0:
            tables = self._add(columns)
            for s, values in zip(self.read, columns):
                rows[s] = np.fromiter(map(tables.rows[s].__getitem__, values),
                                      dtype=np.int64, count=n)
        # read after the rows: it holds every row they name
        indices, indptr = slot_columns(rows, offsets, self.kinds, self.shifts,
                                       self.slot_sources, tables.slot_starts, tables.table,
                                       self.column_starts)
        return indices, indptr, offsets

    def _add(self, columns):
        """Give every value of ``columns`` a row; returns the tables that hold them all."""
        with self.lock:
            tables = self.tables
            new = [list(set(values).difference(tables.rows[s]))
                   for s, values in zip(self.read, columns)]
            need = max(len(tables.rows[s]) + len(values) for s, values in zip(self.read, new))
            if need > _REMEMBERED_VALUES:
                # new tables, not cleared: a concurrent reader keeps its own
                tables = _Tables(self)
                new = [list(set(values)) for values in columns]
                need = max(map(len, new))
            if need > tables.capacity:
                tables = self._grown(tables, max(need, 2 * tables.capacity))
            get = self.vocabulary.get
            capacity = tables.capacity
            blocks = tables.table.reshape(tables.n_blocks, capacity)
            for s, values in zip(self.read, new):
                first = tables.first_block[s]
                used = len(tables.rows[s])
                for row, value in enumerate(values, start=used):
                    blocks[first:first + self.sources[s].n_entries, row] = [
                        -1 if name is None else get(name, -1)
                        for name in self.sources[s].names(value)]
                tables.rows[s].update(zip(values, range(used, used + len(values))))
            self.tables = tables
            return tables

    def _grown(self, tables, capacity):
        """A copy of ``tables`` with room for ``capacity`` rows per source."""
        grown = _Tables(self, capacity)
        grown.table.reshape(grown.n_blocks, capacity)[:, :tables.capacity] = (
            tables.table.reshape(tables.n_blocks, tables.capacity))
        grown.rows = [dict(rows) for rows in tables.rows]
        return grown


def small_columns(vectorizer, layout):
    """The :class:`SmallColumns` of ``layout`` in a fitted vectorizer's vocabulary, kept for reuse."""
    layouts = columns_by_key(vectorizer).layouts
    columns = layouts.get(layout)
    if columns is None:
        columns = layouts.setdefault(layout, SmallColumns(layout, vectorizer.vocabulary_))
    return columns
