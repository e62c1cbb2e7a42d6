"""Numba kernels of the feature layer: sparse products, pair patterns, the featurizer's gather.

Nothing here validates its inputs, and nothing mutates them but
:func:`sort_row_indices` (called on arrays the vectorizer owns).
"""

import numpy as np

from ..inference._runtime.batch import compiled, row_chunk_count, run_chunks

def csr_dot_dense(data, indices, indptr, dense, binary):
    """``X @ dense`` for a CSR ``X``; rows are independent, so parallel and exact.

    With ``binary`` true every stored value is taken to be 1 and ``data`` is
    not read: most token features are indicators, and skipping a third of the
    memory traffic is most of this kernel's cost.
    """
    n_rows = indptr.shape[0] - 1
    out = np.zeros((n_rows, dense.shape[1]))
    n_chunks = row_chunk_count(n_rows)
    run_chunks(_csr_dot_dense_rows, n_chunks, n_chunks, data, indices, indptr, dense,
               binary, out)
    return out


@compiled()
def _csr_dot_dense_rows(chunk_lo, chunk_hi, n_chunks, data, indices, indptr, dense, binary,
                        out):
    """The rows of chunks ``chunk_lo..chunk_hi - 1`` of :func:`csr_dot_dense` into ``out``."""
    n_rows = indptr.shape[0] - 1
    n_cols = dense.shape[1]
    for row in range((n_rows * chunk_lo) // n_chunks, (n_rows * chunk_hi) // n_chunks):
        if binary:
            for k in range(indptr[row], indptr[row + 1]):
                col = indices[k]
                for j in range(n_cols):
                    out[row, j] += dense[col, j]
        else:
            for k in range(indptr[row], indptr[row + 1]):
                value = data[k]
                col = indices[k]
                for j in range(n_cols):
                    out[row, j] += value * dense[col, j]


@compiled()
def pair_pattern(indices, indptr, label_ids, n_features, n_classes):
    """(n_features, n_classes) bool: which (feature, label) pairs occur in the data.

    An explicitly stored zero counts as an occurrence; a row labelled -1 takes
    no part.
    """
    seen = np.zeros((n_features, n_classes), np.bool_)
    for row in range(indptr.shape[0] - 1):
        j = label_ids[row]
        if j < 0:
            continue
        for k in range(indptr[row], indptr[row + 1]):
            seen[indices[k], j] = True
    return seen


@compiled()
def pair_sums(data, indices, indptr, binary, label_ids, pair_ptr, pair_labels):
    """(n_pairs,) sum over tokens of each pair feature's value: the empirical counts.

    Every (feature, label) of the data must have a pair; a feature without
    pairs, or a row labelled -1, counts for nothing. Serial, in token order:
    the sums do not depend on the thread count.
    """
    sums = np.zeros(pair_labels.shape[0])
    for row in range(indptr.shape[0] - 1):
        j = label_ids[row]
        if j < 0:
            continue
        for k in range(indptr[row], indptr[row + 1]):
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                if pair_labels[p] == j:
                    sums[p] += 1.0 if binary else data[k]
                    break
    return sums


@compiled()
def column_counts(indices, n_columns):
    """Number of stored entries of each column (``np.bincount`` without its int64 copy)."""
    counts = np.zeros(n_columns, np.int64)
    for k in range(indices.shape[0]):
        counts[indices[k]] += 1
    return counts


#: Rows up to this long are sorted by insertion (fast on the few tens of
#: entries a token usually has); longer ones by a merge sort, O(k log k).
INSERTION_SORT_MAX = 32


def sort_row_indices(indptr, indices, data, binary):
    """Sort the column indices of each row of a CSR matrix, in place.

    The one kernel that writes into its arguments: the vectorizer calls it on
    arrays it has just built and owns. Both sorts are stable, so repeated
    columns keep their input order (and later sum in it); ``data`` moves along
    unless ``binary``. Short rows go by insertion, in numba; longer ones by
    numpy's stable sort, here: a token with 10^5 features would cost 10^10
    steps of insertion, and such rows are rare enough that a compiled merge
    sort is not worth its compile time. Returns whether any row holds a
    column twice.
    """
    lengths = np.diff(indptr)
    repeated = _sort_short_rows(indptr, indices, data, binary)
    for row in np.flatnonzero(lengths > INSERTION_SORT_MAX).tolist():
        lo, hi = int(indptr[row]), int(indptr[row + 1])
        order = np.argsort(indices[lo:hi], kind="stable")
        indices[lo:hi] = indices[lo:hi][order]
        if not binary:
            data[lo:hi] = data[lo:hi][order]
        repeated = repeated or bool((indices[lo + 1:hi] == indices[lo:hi - 1]).any())
    return bool(repeated)


@compiled()
def _sort_short_rows(indptr, indices, data, binary):
    """Insertion-sort the rows of at most :data:`INSERTION_SORT_MAX` entries, in place.

    Returns whether any of them holds a column twice; longer rows are left as
    they are.
    """
    repeated = False
    for row in range(indptr.shape[0] - 1):
        lo, hi = indptr[row], indptr[row + 1]
        if hi - lo > INSERTION_SORT_MAX:
            continue
        for k in range(lo + 1, hi):
            col = indices[k]
            value = 0.0 if binary else data[k]
            m = k - 1
            while m >= lo and indices[m] > col:
                indices[m + 1] = indices[m]
                if not binary:
                    data[m + 1] = data[m]
                m -= 1
            indices[m + 1] = col
            if not binary:
                data[m + 1] = value
        for k in range(lo + 1, hi):
            if indices[k] == indices[k - 1]:
                repeated = True
    return repeated


@compiled()
def remap_columns(data, indices, indptr, remap, binary):
    """CSR arrays with column ``c`` renamed ``remap[c]``, the entries mapped to -1 dropped.

    New arrays, in one pass: the vectorizer matches a named matrix's columns
    to its vocabulary with it. An empty ``remap`` keeps every column's name
    and drops only the negative ones (the one-sentence dict path's unknown
    names). Rows keep their entries' order (they may then need sorting).
    ``data`` is not read, and an empty array returned, when ``binary``.
    """
    n_rows = indptr.shape[0] - 1
    keep_names = remap.shape[0] == 0
    new_indptr = np.empty(n_rows + 1, np.int64)
    new_indices = np.empty(indices.shape[0], np.int32)
    new_data = np.empty(0 if binary else indices.shape[0], data.dtype)
    new_indptr[0] = 0
    k = 0
    for row in range(n_rows):
        for m in range(indptr[row], indptr[row + 1]):
            column = indices[m] if keep_names else remap[indices[m]]
            if column >= 0:
                new_indices[k] = column
                if not binary:
                    new_data[k] = data[m]
                k += 1
        new_indptr[row + 1] = k
    return new_data[:k], new_indices[:k], new_indptr


#: Kinds of featurizer slots (see :func:`slot_features`).
SLOT_GATHER, SLOT_ALWAYS, SLOT_BEFORE, SLOT_AFTER = 0, 1, 2, 3


@compiled()
def _slot_column(kind, shift, source, table_start, sources, table, t, start, stop):
    """Column of token ``t`` (of a sequence ``start:stop``) within one slot, or -1."""
    if kind == SLOT_GATHER:
        u = t + shift
        if u < start or u >= stop:
            return -1
        return table[table_start + sources[source, u]]
    if kind == SLOT_ALWAYS:
        return 0
    # BOS and EOS (shift 1) always; a marker of a farther offset only where it
    # tells the sequence's tokens apart (it would be on all of them otherwise)
    if shift > 1 and shift >= stop - start:
        return -1
    if kind == SLOT_BEFORE:
        return 0 if t - start < shift else -1
    return 0 if t >= stop - shift else -1  # SLOT_AFTER


@compiled()
def slot_features(sources, offsets, kinds, shifts, slot_sources, table_starts, table,
                  column_starts, n_columns):
    """CSR pattern of the featurizer's slots, keeping only the columns in use.

    A slot puts at most one entry in each token's row, in a column range of its
    own (``column_starts[s]`` on) placed after the previous slot's, so the rows
    come out with sorted column indices and no repeats. Slot ``s`` is one of:

    - ``SLOT_GATHER``: a feature of the token ``shifts[s]`` places away, none
      outside the sequence: local column
      ``table[table_starts[s] + sources[slot_sources[s], t + shifts[s]]]``
      (-1: none), where ``sources`` holds one type id per token of each token
      column;
    - ``SLOT_ALWAYS``: local column 0 on every token (the bias);
    - ``SLOT_BEFORE`` / ``SLOT_AFTER``: local column 0 on the tokens fewer than
      ``shifts[s]`` places from the start / end of their sequence (BOS, EOS and
      the markers of offsets beyond the sequence); a marker (shift > 1) only in
      a sequence longer than its shift, where some token lacks it.

    One pass to count and one to fill, straight from the per-type tables: a
    (slot, token) grid gathered with numpy was 32 MiB on esp.train. Columns no
    token uses are dropped and the rest renumbered in order.

    Returns
    -------
    indices : (nnz,) int32
    indptr : (n_tokens + 1,) int64
    used : (n_columns,) bool
        Which of the columns some token uses.
    """
    n_slots = kinds.shape[0]
    n_tokens = offsets[offsets.shape[0] - 1]
    indptr = np.empty(n_tokens + 1, np.int64)
    indptr[0] = 0
    total = 0
    for q in range(offsets.shape[0] - 1):
        start, stop = offsets[q], offsets[q + 1]
        for t in range(start, stop):
            for s in range(n_slots):
                if _slot_column(kinds[s], shifts[s], slot_sources[s], table_starts[s],
                                sources, table, t, start, stop) >= 0:
                    total += 1
            indptr[t + 1] = total
    indices = np.empty(total, np.int32)
    used = np.zeros(n_columns, np.bool_)
    k = 0
    for q in range(offsets.shape[0] - 1):
        start, stop = offsets[q], offsets[q + 1]
        for t in range(start, stop):
            for s in range(n_slots):
                local = _slot_column(kinds[s], shifts[s], slot_sources[s], table_starts[s],
                                     sources, table, t, start, stop)
                if local >= 0:
                    column = column_starts[s] + local
                    indices[k] = column
                    used[column] = True
                    k += 1
    new_index = np.empty(n_columns, np.int32)
    n_used = 0
    for column in range(n_columns):
        new_index[column] = n_used
        if used[column]:
            n_used += 1
    for k in range(total):
        indices[k] = new_index[indices[k]]
    return indices, indptr, used


@compiled()
def slot_columns(sources, offsets, kinds, shifts, slot_sources, table_starts, table,
                 column_starts):
    """CSR pattern of the featurizer's slots in a fitted vocabulary's columns.

    The slots of :func:`slot_features`, read into the columns of a
    vocabulary (see ``_small_columns``): a gather slot's table holds the
    vocabulary's column of each value's name, -1 for a name it lacks; a
    marker's column (bias, BOS, ...) is ``column_starts[s]``, -1 likewise,
    and a gather's ``column_starts[s]`` is 0. Columns are kept as they are and
    each row is sorted (a vocabulary need not follow the slots' name order).

    Returns
    -------
    indices : (nnz,) int32
    indptr : (n_tokens + 1,) int64
    """
    n_slots = kinds.shape[0]
    n_tokens = offsets[offsets.shape[0] - 1]
    indptr = np.empty(n_tokens + 1, np.int64)
    indptr[0] = 0
    indices = np.empty(n_tokens * n_slots, np.int32)
    k = 0
    for q in range(offsets.shape[0] - 1):
        start, stop = offsets[q], offsets[q + 1]
        for t in range(start, stop):
            row_start = k
            for s in range(n_slots):
                local = _slot_column(kinds[s], shifts[s], slot_sources[s], table_starts[s],
                                     sources, table, t, start, stop)
                if local < 0 or column_starts[s] + local < 0:
                    continue
                column = column_starts[s] + local
                # insertion into the sorted row: rows are a few dozen columns
                j = k
                while j > row_start and indices[j - 1] > column:
                    indices[j] = indices[j - 1]
                    j -= 1
                indices[j] = column
                k += 1
            indptr[t + 1] = k
    return indices[:k].copy(), indptr


def pair_products(data, indices, indptr, binary, pair_ptr, pair_labels, pair_weights,
                  n_labels):
    """(n_tokens, n_labels) scores: each token's sum of its features' pair weights.

    Weights exist for (feature, label) pairs only, in the layout of
    :class:`~skcrf.structures.StatePairs`: feature ``f`` owns pairs
    ``pair_ptr[f]:pair_ptr[f + 1]`` with labels ``pair_labels`` and weights
    ``pair_weights``. The same as ``X @ W`` for the sparse ``W`` those pairs
    make; rows are independent, so parallel and exact.
    """
    n_tokens = indptr.shape[0] - 1
    out = np.zeros((n_tokens, n_labels))
    n_chunks = row_chunk_count(n_tokens)
    run_chunks(_pair_products_rows, n_chunks, n_chunks, data, indices, indptr, binary,
               pair_ptr, pair_labels, pair_weights, out)
    return out


@compiled()
def _pair_products_rows(chunk_lo, chunk_hi, n_chunks, data, indices, indptr, binary,
                        pair_ptr, pair_labels, pair_weights, out):
    """The rows of chunks ``chunk_lo..chunk_hi - 1`` of :func:`pair_products` into ``out``."""
    n_tokens = indptr.shape[0] - 1
    for row in range((n_tokens * chunk_lo) // n_chunks, (n_tokens * chunk_hi) // n_chunks):
        for k in range(indptr[row], indptr[row + 1]):
            value = 1.0 if binary else data[k]
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                out[row, pair_labels[p]] += value * pair_weights[p]


def pair_expectations(data, indices, indptr, binary, pair_ptr, pair_labels, marginals,
                      n_chunks):
    """(n_pairs,) sum over tokens of feature value times the marginal of the pair's label.

    The adjoint of :func:`pair_products`. Tokens are split into ``n_chunks``
    contiguous chunks summed on their own and then added in chunk order, so
    the result does not depend on the thread count.
    """
    n_pairs = pair_labels.shape[0]
    partial = np.zeros((n_chunks, n_pairs))
    run_chunks(_pair_expectation_chunks, n_chunks, data, indices, indptr, binary, pair_ptr,
               pair_labels, marginals, partial)
    expected = np.zeros(n_pairs)
    for c in range(n_chunks):
        expected += partial[c]
    return expected


@compiled()
def _pair_expectation_chunks(chunk_lo, chunk_hi, data, indices, indptr, binary, pair_ptr,
                             pair_labels, marginals, partial):
    """The partial sums of chunks ``chunk_lo..chunk_hi - 1`` of :func:`pair_expectations`."""
    n_tokens = indptr.shape[0] - 1
    n_chunks = partial.shape[0]
    for c in range(chunk_lo, chunk_hi):
        lo = (n_tokens * c) // n_chunks
        hi = (n_tokens * (c + 1)) // n_chunks
        for row in range(lo, hi):
            for k in range(indptr[row], indptr[row + 1]):
                value = 1.0 if binary else data[k]
                col = indices[k]
                for p in range(pair_ptr[col], pair_ptr[col + 1]):
                    partial[c, p] += value * marginals[row, pair_labels[p]]
