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
        self.matrix = matrix
        self.offsets = offsets
        self.feature_names = feature_names

    @property
    def shape(self):
        return (self.offsets.shape[0] - 1,)

    @property
    def lengths(self):
        """Number of tokens of each sequence."""
        return np.diff(self.offsets)

    @property
    def n_tokens(self):
        return self.matrix.shape[0]

    @property
    def n_features(self):
        return self.matrix.shape[1]

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
                f"n_features={self.n_features}, nnz={self.matrix.nnz})")
