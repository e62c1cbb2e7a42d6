"""SequenceMatrix: token features of many sequences in one CSR matrix."""

import numbers

import numpy as np
import scipy.sparse as sp


class SequenceMatrix:
    """Token features of many sequences: one CSR matrix plus sequence offsets.

    This is what :class:`SequenceVectorizer` (and any transformer before a
    :class:`CRFClassifier` in a pipeline) produces. It behaves as a list of
    sequences for scikit-learn: ``len()`` is the number of sequences and
    indexing with an array of sequence indices returns another
    ``SequenceMatrix``, so cross-validation splits it without re-stacking
    per-sequence matrices.

    Parameters
    ----------
    matrix : sparse matrix of shape (n_tokens, n_features)
        Features of all tokens of all sequences, stacked in order. Converted to
        CSR.
    offsets : array-like of shape (n_sequences + 1,)
        Sequence ``q`` owns rows ``offsets[q]:offsets[q + 1]``; ``offsets[0]`` is
        0 and ``offsets[-1]`` is ``n_tokens``.
    feature_names : array-like of str of shape (n_features,), default=None
        Names of the columns, carried along for model inspection.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
        The stacked features.
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    feature_names : ndarray of str objects of shape (n_features,) or None
    shape : tuple of (int,)
        ``(n_sequences,)``: scikit-learn reads the number of samples from it.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skcrf import SequenceMatrix
    >>> X = SequenceMatrix(sp.eye(5, format="csr"), offsets=[0, 2, 5])
    >>> len(X), X.lengths.tolist()
    (2, [2, 3])
    >>> X[[1]].lengths.tolist()
    [3]
    """

    def __init__(self, matrix, offsets, feature_names=None):
        matrix = sp.csr_matrix(matrix)
        offsets = np.asarray(offsets, dtype=np.int64)
        if offsets.ndim != 1 or offsets.shape[0] < 1:
            raise ValueError("offsets must be a 1-D array of n_sequences + 1 integers.")
        if offsets[0] != 0 or offsets[-1] != matrix.shape[0]:
            raise ValueError(
                f"offsets must start at 0 and end at the number of rows "
                f"({matrix.shape[0]}); got {offsets[0]} and {offsets[-1]}.")
        if np.any(np.diff(offsets) < 0):
            raise ValueError("offsets must be non-decreasing.")
        if feature_names is not None:
            feature_names = np.asarray(feature_names, dtype=object)
            if feature_names.shape != (matrix.shape[1],):
                raise ValueError(
                    f"feature_names has {feature_names.shape[0]} entries for "
                    f"{matrix.shape[1]} feature columns.")
        self._matrix = matrix
        self._arrays = None
        self._shape = matrix.shape
        self.offsets = offsets
        self.feature_names = feature_names

    @classmethod
    def _from_arrays(cls, data, indices, indptr, n_features, offsets, feature_names,
                     dtype=np.float64):
        """A SequenceMatrix of canonical CSR arrays, made by skcrf's own transformers.

        ``data`` is None when every value is 1. The scipy matrix, and with it
        an array of ones as large as ``indices`` twice over, is built only when
        someone reads :attr:`matrix`: a pipeline's next step reads the arrays
        (:meth:`_canonical_arrays`) and never needs it.
        """
        self = cls.__new__(cls)
        self._matrix = None
        self._arrays = (None if data is None else data.astype(dtype, copy=False),
                        indices, indptr, np.dtype(dtype))
        self._shape = (indptr.shape[0] - 1, int(n_features))
        self.offsets = offsets
        self.feature_names = (None if feature_names is None
                              else np.asarray(feature_names, dtype=object))
        return self

    @property
    def matrix(self):
        """The stacked features, as a CSR matrix of shape (n_tokens, n_features)."""
        if self._matrix is None:
            data, indices, indptr, dtype = self._arrays
            if data is None:
                data = np.ones(indices.shape[0], dtype=dtype)
            self._matrix = sp.csr_matrix((data, indices, indptr), shape=self._shape)
        return self._matrix

    def _canonical_arrays(self):
        """(data or None if all ones, int32 indices, int64 indptr) of :meth:`_from_arrays`.

        None for a SequenceMatrix made from a user's matrix, whose arrays may
        be of any type and order.
        """
        return None if self._arrays is None else self._arrays[:3]

    @property
    def shape(self):
        return (self.offsets.shape[0] - 1,)

    @property
    def lengths(self):
        """Number of tokens of each sequence."""
        return np.diff(self.offsets)

    @property
    def n_tokens(self):
        return self._shape[0]

    @property
    def n_features(self):
        return self._shape[1]

    def __len__(self):
        return self.offsets.shape[0] - 1

    def __iter__(self):
        for q in range(len(self)):
            yield self[q]

    def __getitem__(self, key):
        # sklearn's _safe_indexing calls X[key, ...] on objects with a shape
        if isinstance(key, tuple):
            if len(key) == 2 and key[1] is Ellipsis:
                key = key[0]
            else:
                raise IndexError("SequenceMatrix supports one index: the sequences.")
        if isinstance(key, numbers.Integral):
            q = int(key)
            n = len(self)
            if not -n <= q < n:
                raise IndexError(f"sequence index {q} out of range for {n} sequences.")
            q %= n
            return self.matrix[self.offsets[q]:self.offsets[q + 1]]
        return self.take(np.arange(len(self))[key])

    def take(self, sequence_ids):
        """A new ``SequenceMatrix`` of the given sequences, in the given order."""
        sequence_ids = np.asarray(sequence_ids, dtype=np.int64).ravel()
        starts = self.offsets[sequence_ids]
        lengths = self.offsets[sequence_ids + 1] - starts
        offsets = np.zeros(sequence_ids.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # row r of the result is row starts[q] + (r - offsets[q]) of self
        rows = np.arange(offsets[-1]) - np.repeat(offsets[:-1] - starts, lengths)
        return SequenceMatrix(self.matrix[rows], offsets, self.feature_names)

    def __repr__(self):
        return (f"SequenceMatrix(n_sequences={len(self)}, n_tokens={self.n_tokens}, "
                f"n_features={self.n_features}, nnz={self.nnz})")

    @property
    def nnz(self):
        """Number of stored feature values."""
        return self.matrix.nnz if self._arrays is None else self._arrays[1].shape[0]
