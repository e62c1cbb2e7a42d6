"""Compact CSR arrays of named columns: what the vectorizer and the hasher build matrices from.

``data`` None stands for all ones (indicator features, as TokenFeaturizer makes
them); indices are int32 and indptr int64, as the kernels read them.
"""

import operator
from itertools import islice

import numpy as np
import scipy.sparse as sp

from ._kernels import sort_row_indices
from .sequence_matrix import values_or_none


def _csr(data, indices, indptr, n_columns, dtype):
    """A canonical CSR matrix: sorted column indices, repeats summed."""
    matrix = sp.csr_matrix(
        (data.astype(dtype, copy=False), indices.astype(np.int32, copy=False), indptr),
        shape=(indptr.shape[0] - 1, n_columns))
    # a list value may repeat an item, and two keys may make the same name
    matrix.sum_duplicates()
    return matrix


def _named_matrix_arrays(X, copy=True):
    """Compact CSR arrays and offsets of a SequenceMatrix with names.

    Owned copies, unless not ``copy``: then possibly the matrix's own arrays,
    for a caller that only reads them.
    """
    if X.feature_names is None:
        raise ValueError(
            "SequenceVectorizer needs a SequenceMatrix with feature_names to match "
            "its columns by name; this one has none.")
    pattern = X._indicator_pattern()
    if pattern is not None:
        # all ones, as TokenFeaturizer's: no array of ones to read
        indices, indptr = pattern
        if copy:
            indices, indptr = indices.copy(), indptr.copy()
        return None, indices, indptr, X.offsets
    matrix = X.matrix
    data = values_or_none(matrix.data)
    if data is matrix.data and copy:
        data = data.copy()  # ours to change
    return (data, matrix.indices.astype(np.int32, copy=copy),
            matrix.indptr.astype(np.int64, copy=copy), X.offsets)


def _as_names(feature_names):
    """The names of a matrix's columns under the key rule: ``str(name)`` unless a str."""
    names = feature_names.tolist()
    if set(map(type, names)) <= {str}:
        return names  # TokenFeaturizer's, and most others
    return [name if type(name) is str else str(name) for name in names]


def _strictly_increasing(names):
    """Whether ``names`` are str in strictly increasing order: sorted and unique."""
    return (set(map(type, names)) <= {str}
            and all(map(operator.lt, names, islice(names, 1, None))))


def _remap_in_place(indices, remap, block=1 << 20):
    """``indices[:] = remap[indices]`` a block at a time, with no full-size temporary."""
    for start in range(0, indices.shape[0], block):
        view = indices[start:start + block]
        view[...] = remap[view]


def _drop_columns(data, indices, indptr):
    """Remove the entries whose column index is -1 from CSR arrays (data may be None)."""
    kept = indices >= 0
    if kept.all():
        return data, indices, indptr
    kept_before = np.zeros(kept.shape[0] + 1, dtype=np.int64)
    np.cumsum(kept, out=kept_before[1:])
    return (None if data is None else data[kept]), indices[kept], kept_before[indptr]


def _canonical(data, indices, indptr, n_columns):
    """Sort the columns of every row and sum repeated ones, in the compact form.

    Rows are sorted in place (stable, so repeats are summed in input order
    whatever path built them); repeats, rare (two keys making one name, a list
    repeating an item), go through scipy.
    """
    values = np.empty(0) if data is None else data
    if not sort_row_indices(indptr, indices, values, data is None):
        return data, indices, indptr
    if data is None:
        data = np.ones(indices.shape[0])
    matrix = sp.csr_matrix((data, indices, indptr), shape=(indptr.shape[0] - 1, n_columns))
    matrix.sum_duplicates()  # rows are sorted: this only adds up neighbours
    return (values_or_none(matrix.data), matrix.indices.astype(np.int32, copy=False),
            matrix.indptr.astype(np.int64, copy=False))

