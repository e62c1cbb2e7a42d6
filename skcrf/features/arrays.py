"""FeatureArrays: token features as the kernels take them, CSR arrays and no object."""

import numpy as np
import scipy.sparse as sp

from ._kernels import csr_dot_dense
from .sequence_matrix import values_or_none


class FeatureArrays:
    """Token features as the training kernels take them: CSR arrays, no object.

    ``data`` is None when every value is 1, the usual case of indicator
    features: the kernels then never read values, and training holds 4 bytes
    per non-zero (``indices``) instead of 12.

    Parameters
    ----------
    data : ndarray of float64 of shape (nnz,) or None
    indices : ndarray of int32 of shape (nnz,)
    indptr : ndarray of int64 of shape (n_tokens + 1,)
    n_features : int
    parents : ndarray of int64 of shape (n_tokens,) or None, default=None
        The trees of the sequences, checked (see :attr:`SequenceMatrix.parents`):
        they travel with the features to the tree structure.
    segments : FeatureArrays or None, default=None
        The features of candidate segments (see :attr:`SequenceMatrix.segments`),
        ``n_tokens * segment_length`` rows: they travel with the features to
        the semi-Markov structure.
    segment_length : int, default=0
        Rows of ``segments`` per token.

    Attributes
    ----------
    dense : ndarray of shape (n_tokens, n_dense) or None
        A dense block (:attr:`SequenceMatrix.dense`) kept beside the CSR
        arrays, for the routes that multiply it by BLAS: its columns come
        after the ``n_features`` sparse ones. None otherwise (set after
        construction: only :meth:`of_sequences` with ``keep_dense`` makes it).
    """

    def __init__(self, data, indices, indptr, n_features, parents=None, segments=None,
                 segment_length=0):
        self.data = data
        self.indices = indices
        self.indptr = indptr
        self.n_features = n_features
        self.parents = parents
        self.segments = segments
        self.segment_length = segment_length
        self.dense = None

    @classmethod
    def from_sparse(cls, X):
        """The arrays of a scipy sparse matrix (shared where the types already fit)."""
        X = sp.csr_matrix(X)
        index_type = np.int32 if X.shape[1] <= np.iinfo(np.int32).max else np.int64
        data = values_or_none(X.data)
        return cls(data, X.indices.astype(index_type, copy=False),
                   X.indptr.astype(np.int64, copy=False), X.shape[1])

    @classmethod
    def of_sequences(cls, X, keep_dense=False):
        """The arrays of a SequenceMatrix, with no array of ones read or built.

        A dense block becomes columns ``n_features..n_features + n_dense - 1``
        after the sparse ones: the layout of the weights whatever route the
        values take. With ``keep_dense`` it stays a block (:attr:`dense`, not
        copied), for the consumers that read it; otherwise it is copied into
        CSR columns (:func:`with_dense_columns`), which every kernel reads.
        """
        if X.dense is not None and keep_dense:
            arrays = cls.of_sequences(_sparse_part(X))
            arrays.dense = X.dense
            return arrays
        if X.dense is not None:
            arrays = cls.from_sparse(with_dense_columns(X))
            arrays.parents = X.parents
            return arrays
        pattern = X._indicator_pattern()
        if pattern is not None:
            arrays = cls(None, *pattern, X.n_features, X.parents)
        else:
            arrays = cls.from_sparse(X.matrix)
            arrays.parents = X.parents
        if X.segments is not None:
            arrays.segments = cls.of_sequences(X.segments)
            arrays.segment_length = X.segment_length
        return arrays

    @property
    def n_dense(self):
        """Columns of the dense block (0 for none)."""
        return 0 if self.dense is None else self.dense.shape[1]

    @property
    def binary(self):
        return self.data is None

    @property
    def n_tokens(self):
        return self.indptr.shape[0] - 1

    def kernel_args(self):
        """(data, indices, indptr, binary) for a kernel; data is empty if binary."""
        data = np.empty(0) if self.data is None else self.data
        return data, self.indices, self.indptr, self.binary


def _sparse_part(X):
    """``X`` without its dense block (a shallow copy sharing the sparse arrays)."""
    part = X.__class__.__new__(X.__class__)
    part.__dict__.update(X.__dict__)
    part._dense = part._dense_names = None
    return part


def with_dense_columns(X):
    """The sparse matrix of a SequenceMatrix with its dense block as its last columns.

    The route for the structures that read CSR arrays only: the dense values
    are copied into CSR (12 bytes a value), which the chain's dense route
    avoids.
    """
    return sp.hstack([X.matrix, sp.csr_matrix(X.dense.astype(np.float64, copy=False))],
                     format="csr")


def all_feature_names(X):
    """Names of the sparse columns, then the dense columns'; None when all are unnamed.

    Unnamed sparse columns are ``x<i>``; so are default-named dense columns,
    numbered on after them, so that no two columns share a default name.
    """
    if X.dense is None:
        return X.feature_names
    n = X.n_features
    dense = X.dense_names
    if X.feature_names is None and dense.tolist() == [f"x{j}" for j in range(X.n_dense)]:
        return None if n == 0 else np.asarray(
            [f"x{i}" for i in range(n + X.n_dense)], dtype=object)
    sparse = X.feature_names
    if sparse is None:
        sparse = [f"x{i}" for i in range(n)]
    return np.concatenate([np.asarray(sparse, dtype=object), dense])


def as_feature_arrays(X):
    """``X`` if it is FeatureArrays, else the arrays of the sparse matrix ``X``."""
    return X if isinstance(X, FeatureArrays) else FeatureArrays.from_sparse(X)


def csr_times_dense(X, dense):
    """``X @ dense`` for a sparse matrix or FeatureArrays, through the parallel kernel.

    FeatureArrays with a dense block take ``dense``'s rows past their
    sparse columns as its weights: one BLAS product, added to the sparse
    part's.
    """
    arrays = as_feature_arrays(X)
    data, indices, indptr, binary = arrays.kernel_args()
    if arrays.dense is None:
        return csr_dot_dense(data, indices, indptr,
                             np.ascontiguousarray(dense, dtype=np.float64), binary)
    n = arrays.n_features
    product = csr_dot_dense(data, indices, indptr,
                            np.ascontiguousarray(dense[:n], dtype=np.float64), binary)
    product += arrays.dense @ np.asarray(dense[n:], dtype=arrays.dense.dtype)
    return product


def take_sequences(features, offsets, sequence_ids):
    """The FeatureArrays and offsets of the given sequences, in the given order (copies).

    Parameters
    ----------
    features : FeatureArrays
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    sequence_ids : array-like of int

    Returns
    -------
    taken : FeatureArrays
        The sequences' rows, with their trees' parents (local to each
        sequence, so unchanged) when ``features`` has them.
    taken_offsets : ndarray of int64 of shape (len(sequence_ids) + 1,)
    rows : ndarray of int64 of shape (n_taken_tokens,)
        The row of ``features`` each taken row comes from.
    """
    sequence_ids = np.asarray(sequence_ids, dtype=np.int64).ravel()
    starts = offsets[sequence_ids]
    lengths = offsets[sequence_ids + 1] - starts
    taken_offsets = np.zeros(sequence_ids.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=taken_offsets[1:])
    rows = np.arange(taken_offsets[-1]) - np.repeat(taken_offsets[:-1] - starts, lengths)
    row_starts = features.indptr[rows]
    counts = features.indptr[rows + 1] - row_starts
    indptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    entries = np.arange(indptr[-1]) - np.repeat(indptr[:-1] - row_starts, counts)
    parents = None
    if features.parents is not None:
        # read-only, as checked parents are: the tree kernels compile once for those
        parents = features.parents[rows]
        parents.flags.writeable = False
    taken = FeatureArrays(None if features.data is None else features.data[entries],
                          features.indices[entries], indptr, features.n_features, parents)
    if features.dense is not None:
        taken.dense = features.dense[rows]
    if features.segments is not None:
        # the candidate segments of each taken token: its segment_length rows
        L = features.segment_length
        segment_rows = (rows[:, np.newaxis] * L + np.arange(L)).ravel()
        every_row = np.arange(features.segments.indptr.shape[0], dtype=np.int64)
        taken.segments, _, _ = take_sequences(features.segments, every_row, segment_rows)
        taken.segment_length = L
    return taken, taken_offsets, rows


def sequence_view(features, offsets, q):
    """The FeatureArrays of sequence ``q`` alone and its offsets ``[0, n]``, as views."""
    lo, hi = int(offsets[q]), int(offsets[q + 1])
    a, b = int(features.indptr[lo]), int(features.indptr[hi])
    indptr = features.indptr[lo:hi + 1] - a
    parents = None if features.parents is None else features.parents[lo:hi]
    view = FeatureArrays(None if features.data is None else features.data[a:b],
                         features.indices[a:b], indptr, features.n_features, parents)
    if features.dense is not None:
        view.dense = features.dense[lo:hi]
    return view, np.array([0, hi - lo], dtype=np.int64)
