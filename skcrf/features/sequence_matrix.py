"""SequenceMatrix: token features of many sequences in one CSR matrix."""

import numbers

import numpy as np
import scipy.sparse as sp

from ._dense import (as_dense_block, blocks_from_sequences, checked_dense_names,
                     default_dense_names)
from ._parents import checked_parents


def values_or_none(data):
    """None if every value is 1 (indicator features), else ``data`` as float64.

    None is how skcrf's arrays say "all ones": no array of values to keep.
    """
    if data is None or np.all(data == 1):
        return None
    return data.astype(np.float64, copy=False)


def _read_only(array):
    array.setflags(write=False)
    return array


def _checked_offsets(offsets):
    """``offsets`` as a new read-only int64 array, or raise saying what is wrong.

    Integers of any type are taken, and floats only when they are whole
    numbers: a fractional offset is a mistake, not something to truncate.
    The result is a copy, so the caller's array stays writable and later
    changes to it do not reach the SequenceMatrix.
    """
    raw = np.asarray(offsets)
    if raw.ndim != 1 or raw.shape[0] < 1:
        raise ValueError("offsets must be a 1-D array of n_sequences + 1 integers.")
    if raw.dtype.kind not in "iuf":
        raise TypeError(f"offsets must be integers; got an array of dtype {raw.dtype}.")
    if raw.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(raw) | (raw != np.round(raw)))
        if bad.size:
            raise ValueError(
                f"offsets must be integers; offsets[{bad[0]}] is {raw[bad[0]]}.")
    # 2 ** 63 as a float equals int64's maximum in a float comparison
    largest = np.abs(raw).max() if raw.dtype.kind == "f" else raw.max()
    if largest >= 2 ** 63:
        raise ValueError(
            f"offsets must be in the range of int64; got values up to {raw.max()}.")
    offsets = raw.astype(np.int64)
    if np.any(np.diff(offsets) < 0):
        raise ValueError("offsets must be non-decreasing.")
    return _read_only(offsets)


def _check_rows(offsets, n_rows):
    if offsets[0] != 0 or offsets[-1] != n_rows:
        raise ValueError(
            f"offsets must start at 0 and end at the number of rows "
            f"({n_rows}); got {offsets[0]} and {offsets[-1]}.")


class SequenceMatrix:
    """Token features of many sequences: a CSR matrix and/or a dense block, plus offsets.

    This is what :class:`SequenceVectorizer` (and any transformer before a
    :class:`CRFClassifier` in a pipeline) produces. It behaves as a list of
    sequences for scikit-learn: ``len()`` is the number of sequences and
    indexing with an array of sequence indices returns another
    ``SequenceMatrix``, so cross-validation splits it without re-stacking
    per-sequence matrices.

    Parameters
    ----------
    matrix : sparse matrix of shape (n_tokens, n_features) or None
        Sparse features of all tokens of all sequences, stacked in order.
        Converted to CSR. None when there is only a dense block (then
        :attr:`matrix` reads as a CSR matrix with no columns).
    offsets : array-like of shape (n_sequences + 1,)
        Sequence ``q`` owns rows ``offsets[q]:offsets[q + 1]``; ``offsets[0]`` is
        0 and ``offsets[-1]`` is ``n_tokens``.
    feature_names : array-like of str of shape (n_features,), default=None
        Names of the columns, carried along for model inspection.
    parents : array-like of int of shape (n_tokens,), default=None
        For tree-structured sequences (:class:`TreeCRF`): each token's parent
        as an index within its own sequence (0 for the sequence's first
        token), -1 for a root. A sequence may hold several trees. Checked:
        every parent must be -1 or a token of the same sequence, and the
        links may not form a cycle.
    segments : SequenceMatrix, default=None
        Features of candidate segments, for :class:`SemiMarkovCRF` (what
        ``TokenFeaturizer(segment_features=...)`` emits): the same sequences,
        with ``L`` rows per token, row ``t * L + d - 1`` of the stacked rows
        holding the features of the segment of ``d`` tokens from token ``t``
        (``segments.offsets`` is ``offsets * L``). Other estimators ignore
        them.
    dense : array-like of shape (n_tokens, n_dense), default=None
        Dense numeric features of the same tokens (word vectors, sensor
        readings), kept beside the sparse matrix and never copied into it:
        the estimators multiply them by their weights with BLAS. float32 and
        float64 are kept as they are (not copied when already C-contiguous);
        other real numbers become float64. NaN and infinite values are an
        error naming their sequence, token and column.
    dense_names : list of str of shape (n_dense,), default=None
        Names of the dense columns; ``"x0"``, ``"x1"``, ... by default.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
        The stacked features. skcrf's transformers make it on first read (see
        below); assigning a new matrix is checked like the constructor's.
    offsets : ndarray of int64 of shape (n_sequences + 1,)
        Read-only; assigning new offsets is checked like the constructor's.
    feature_names : ndarray of str objects of shape (n_features,) or None
    parents : ndarray of int64 of shape (n_tokens,) or None
        Read-only; assigning new parents (or None) is checked like the
        constructor's. Splitting the sequences splits their parents too.
    segments : SequenceMatrix or None
        Checked like the constructor's; split with the sequences.
    segment_length : int
        ``L``, the longest candidate segment of :attr:`segments` (0 for none).
    dense : ndarray of float32 or float64 of shape (n_tokens, n_dense) or None
        A read-only view of the dense block; assigning a new one is checked
        like the constructor's.
    dense_names : ndarray of str objects of shape (n_dense,) or None
    n_dense : int
        Number of dense columns (0 for no dense block); :attr:`n_features`
        counts the sparse columns only.
    shape : tuple of (int,)
        ``(n_sequences,)``: scikit-learn reads the number of samples from it.

    Notes
    -----
    A SequenceMatrix made by :class:`TokenFeaturizer` or
    :class:`SequenceVectorizer` holds CSR arrays with no values when every
    value is 1, and builds :attr:`matrix` only when it is read: the next step
    of a pipeline reads the arrays, so no array of ones (8 bytes per non-zero)
    is ever made. Once read, the matrix is what every consumer uses, so
    changes made to it in place count.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skcrf import SequenceMatrix
    >>> X = SequenceMatrix(sp.eye(5, format="csr"), offsets=[0, 2, 5])
    >>> len(X), X.lengths.tolist()
    (2, [2, 3])
    >>> X[[1]].lengths.tolist()
    [3]

    Numeric sequences, one 2-D array per sequence, make a dense block:

    >>> X = SequenceMatrix.from_sequences([np.zeros((2, 3)), np.ones((4, 3))])
    >>> X.n_dense, X.lengths.tolist(), X.dense_names.tolist()
    (3, [2, 4], ['x0', 'x1', 'x2'])
    """

    def __init__(self, matrix, offsets, feature_names=None, parents=None, segments=None,
                 dense=None, dense_names=None):
        self._offsets = _checked_offsets(offsets)
        self._parents = None
        self._segments = None
        self._dense = None
        self._dense_names = None
        self.feature_names = None
        if matrix is None:
            if dense is None:
                raise ValueError("SequenceMatrix needs a sparse matrix, a dense block "
                                 "or both; got neither.")
            matrix = sp.csr_matrix((int(self._offsets[-1]), 0))
        self.matrix = matrix  # checked against the offsets
        if dense is not None:
            self._set_dense(dense, dense_names)
        elif dense_names is not None:
            raise ValueError("dense_names were given without a dense block.")
        self.parents = parents
        if feature_names is not None:
            feature_names = np.asarray(feature_names, dtype=object)
            if feature_names.shape != (self.n_features,):
                raise ValueError(
                    f"feature_names has {feature_names.shape[0]} entries for "
                    f"{self.n_features} feature columns.")
        self.feature_names = feature_names
        self.segments = segments

    @classmethod
    def _from_arrays(cls, data, indices, indptr, n_features, offsets, feature_names,
                     dtype=np.float64, parents=None, segments=None):
        """A SequenceMatrix of canonical CSR arrays, made by skcrf's own transformers.

        ``data`` is None when every value is 1; ``indices`` are int32 and
        ``indptr`` int64, rows sorted with no repeats. Nothing is checked but
        ``parents``, unless it is an already checked read-only int64 array.
        """
        self = cls.__new__(cls)
        self._matrix = None
        self._arrays = (None if data is None else data.astype(dtype, copy=False),
                        indices, indptr, np.dtype(dtype))
        self._shape = (indptr.shape[0] - 1, int(n_features))
        self._offsets = _read_only(np.array(offsets, dtype=np.int64))
        self.feature_names = (None if feature_names is None
                              else np.asarray(feature_names, dtype=object))
        self._parents = None
        if parents is not None:
            trusted = (isinstance(parents, np.ndarray) and parents.dtype == np.int64
                       and not parents.flags.writeable)
            self._parents = parents if trusted else checked_parents(parents, self._offsets)
        self._segments = None if segments is None else checked_segments(segments,
                                                                        self._offsets)
        self._dense = None
        self._dense_names = None
        return self

    @classmethod
    def from_sequences(cls, sequences, parents=None):
        """A SequenceMatrix of numeric sequences, one 2-D block per sequence.

        Parameters
        ----------
        sequences : list of array-like of shape (n_tokens_q, n_features)
            numpy arrays (float32 or float64; other real numbers become
            float64), scipy sparse matrices or pandas DataFrames, whose column
            names become the feature names. Every sequence has the same
            columns.
        parents : array-like of int of shape (n_tokens,), default=None
            Trees of the sequences (see :attr:`parents`), for :class:`TreeCRF`.

        Returns
        -------
        X : SequenceMatrix
            A dense block (copied once: the stacking) when any sequence is
            dense, float32 when every sequence is float32; a sparse matrix
            when all are sparse.
        """
        matrix, dense, offsets, names = blocks_from_sequences(sequences)
        if dense is None:
            return cls(matrix, offsets, names, parents=parents)
        return cls(None, offsets, parents=parents, dense=dense, dense_names=names)

    @property
    def offsets(self):
        """Sequence boundaries, (n_sequences + 1,) int64, read-only.

        A read-only view: the kernels index the features by these offsets, so
        they may not change after they were checked. Assign new offsets
        instead; they are checked like the constructor's.
        """
        return self._offsets.view()

    @offsets.setter
    def offsets(self, offsets):
        offsets = _checked_offsets(offsets)
        _check_rows(offsets, self._shape[0])
        if self._parents is not None:
            checked_parents(self._parents, offsets)  # the same links, new sequences
        if self._segments is not None:
            checked_segments(self._segments, offsets)
        self._offsets = offsets

    @property
    def parents(self):
        """Each token's parent within its sequence, -1 for a root; None for no trees.

        A read-only view of a checked copy; assign new parents instead.
        """
        return None if self._parents is None else self._parents.view()

    @parents.setter
    def parents(self, parents):
        self._parents = None if parents is None else checked_parents(parents, self._offsets)

    @property
    def segments(self):
        """Features of candidate segments (a SequenceMatrix), or None."""
        return self._segments

    @segments.setter
    def segments(self, segments):
        self._segments = None if segments is None else checked_segments(segments,
                                                                        self._offsets)

    @property
    def dense(self):
        """The dense block, (n_tokens, n_dense) float32 or float64, read-only; or None."""
        return None if self._dense is None else self._dense.view()

    @dense.setter
    def dense(self, dense):
        if dense is None:
            self._dense = self._dense_names = None
            return
        dense = as_dense_block(dense, self._offsets, self.n_tokens)
        if self._dense_names is None or self._dense_names.shape[0] != dense.shape[1]:
            self._dense_names = default_dense_names(dense.shape[1])
        self._dense = dense

    def _set_dense(self, dense, names=None):
        """Check and keep ``dense`` with its ``names`` (the defaults for None)."""
        width = np.shape(dense)[1] if np.ndim(dense) == 2 else 0
        names = checked_dense_names(names, width) if width or names is not None else None
        self._dense = as_dense_block(dense, self._offsets, self.n_tokens, names)
        self._dense_names = (names if names is not None
                             else default_dense_names(self._dense.shape[1]))

    @property
    def dense_names(self):
        """Names of the dense columns (object array of str), or None for no dense block."""
        return self._dense_names

    @property
    def n_dense(self):
        """Number of dense columns, 0 for no dense block."""
        return 0 if self._dense is None else self._dense.shape[1]

    @property
    def segment_length(self):
        """Rows of :attr:`segments` per token: the longest candidate segment (0 for none)."""
        return segment_length(self._segments, self._offsets)

    @property
    def matrix(self):
        """The stacked features, as a CSR matrix of shape (n_tokens, n_features)."""
        matrix = self._matrix
        if matrix is None:
            data, indices, indptr, dtype = self._arrays
            if data is None:
                data = np.ones(indices.shape[0], dtype=dtype)
            # two threads may both build it; either result is the same matrix
            matrix = self._matrix = sp.csr_matrix((data, indices, indptr),
                                                  shape=self._shape)
        return matrix

    @matrix.setter
    def matrix(self, matrix):
        matrix = sp.csr_matrix(matrix)
        _check_rows(self._offsets, matrix.shape[0])
        if self.__dict__.get("_dense") is not None and matrix.shape[0] != self.n_tokens:
            raise ValueError(f"The matrix has {matrix.shape[0]} rows; the dense block "
                             f"has {self.n_tokens}.")
        if self.feature_names is not None and self.feature_names.shape[0] != matrix.shape[1]:
            raise ValueError(
                f"The matrix has {matrix.shape[1]} feature columns for "
                f"{self.feature_names.shape[0]} feature_names.")
        self._matrix = matrix
        self._arrays = None
        self._shape = matrix.shape

    def _canonical_arrays(self):
        """(data or None if all ones, int32 indices, int64 indptr) of :meth:`_from_arrays`.

        None once :attr:`matrix` exists (it may have been changed in place),
        and for a SequenceMatrix made from a user's matrix, whose arrays may be
        of any type and order: consumers then read the matrix.
        """
        arrays = self._arrays
        if arrays is None or self._matrix is not None:
            return None
        return arrays[:3]

    def _indicator_pattern(self):
        """(int32 indices, int64 indptr) when every value is 1 with no array of
        values kept, else None: then consumers read :attr:`matrix`."""
        arrays = self._canonical_arrays()
        return None if arrays is None or arrays[0] is not None else arrays[1:]

    def __getstate__(self):
        # one of the two: the arrays while the matrix is unread (less space),
        # the matrix once read, since it may have been changed in place
        state = self.__dict__.copy()
        if state["_matrix"] is not None:
            state["_arrays"] = None
        return state

    def __setstate__(self, state):
        if "matrix" in state:  # pickled by an earlier skcrf, before the arrays
            matrix = state.pop("matrix")
            state.update(_matrix=matrix, _arrays=None, _shape=matrix.shape)
        # unpickled arrays are writable again; offsets from an earlier skcrf
        # were a public attribute
        offsets = state.pop("offsets", None)
        if offsets is None:
            offsets = state.pop("_offsets")
        state["_offsets"] = _read_only(np.array(offsets, dtype=np.int64))
        parents = state.get("_parents")  # absent before trees existed
        state["_parents"] = (None if parents is None
                             else _read_only(np.array(parents, dtype=np.int64)))
        state.setdefault("_segments", None)  # absent before segment features existed
        dense = state.get("_dense")  # absent before dense blocks existed
        if dense is not None:
            dense.flags.writeable = False  # the unpickled copy is the block's own
        state["_dense"] = dense
        state.setdefault("_dense_names", None)
        self.__dict__.update(state)

    def _check_consistency(self):
        """Raise unless the features still match the offsets, before a kernel reads them.

        :attr:`matrix` may be changed in place after it was checked (and such
        changes count), so consumers that index it in compiled code call this
        first: offsets against the number of rows, and the CSR structure
        (column indices in range, row pointers non-decreasing).
        """
        if self._segments is not None:
            self._segments._check_consistency()
        arrays = self._canonical_arrays()
        if arrays is not None:
            return  # skcrf's own arrays, never exposed for writing
        matrix = self._matrix
        _check_rows(self._offsets, matrix.shape[0])
        try:
            matrix.check_format(full_check=True)
        except ValueError as error:
            raise ValueError(
                f"X.matrix is no longer a valid CSR matrix (it was changed in place): "
                f"{error}") from None

    @property
    def shape(self):
        return (self._offsets.shape[0] - 1,)

    @property
    def lengths(self):
        """Number of tokens of each sequence."""
        return np.diff(self._offsets)

    @property
    def n_tokens(self):
        return self._shape[0]

    @property
    def n_features(self):
        return self._shape[1]

    def __len__(self):
        return self._offsets.shape[0] - 1

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
            start, stop = self._offsets[q], self._offsets[q + 1]
            if self._dense is None:
                return self._row_block(start, stop)
            if self.n_features == 0:
                return self._dense[start:stop]
            # one sequence's sparse columns then its dense ones, as one matrix
            return sp.hstack([self._row_block(start, stop),
                              sp.csr_matrix(self._dense[start:stop])], format="csr")
        return self.take(np.arange(len(self))[key])

    def _row_block(self, start, stop):
        """Rows ``start:stop`` as a new CSR matrix, without building :attr:`matrix`."""
        arrays = self._canonical_arrays()
        if arrays is None:
            return self.matrix[start:stop]
        data, indices, indptr = arrays
        lo, hi = indptr[start], indptr[stop]
        values = (np.ones(hi - lo, dtype=self._arrays[3]) if data is None
                  else data[lo:hi].copy())
        return sp.csr_matrix((values, indices[lo:hi].copy(), indptr[start:stop + 1] - lo),
                             shape=(stop - start, self.n_features))

    def take(self, sequence_ids):
        """A new ``SequenceMatrix`` of the given sequences, in the given order."""
        sequence_ids = np.asarray(sequence_ids, dtype=np.int64).ravel()
        starts = self._offsets[sequence_ids]
        lengths = self._offsets[sequence_ids + 1] - starts
        offsets = np.zeros(sequence_ids.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # row r of the result is row starts[q] + (r - offsets[q]) of self
        rows = np.arange(offsets[-1]) - np.repeat(offsets[:-1] - starts, lengths)
        # parent indices are local to each sequence: they move with it unchanged
        parents = None if self._parents is None else _read_only(self._parents[rows])
        segments = None if self._segments is None else self._segments.take(sequence_ids)
        taken = self._take_sparse(rows, offsets, parents, segments)
        if self._dense is not None:
            dense = self._dense[rows]  # the one copy: the taken rows
            dense.flags.writeable = False
            taken._dense = dense
            taken._dense_names = self._dense_names
        return taken

    def _take_sparse(self, rows, offsets, parents, segments):
        arrays = self._canonical_arrays()
        if arrays is None:
            taken = SequenceMatrix(self.matrix[rows], offsets, self.feature_names)
            taken._parents = parents
            taken._segments = segments
            return taken
        # the same gather on the arrays: cross-validation splits make no array of ones
        data, indices, indptr = arrays
        row_starts = indptr[rows]
        counts = indptr[rows + 1] - row_starts
        new_indptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=new_indptr[1:])
        entries = np.arange(new_indptr[-1]) - np.repeat(new_indptr[:-1] - row_starts, counts)
        taken = SequenceMatrix._from_arrays(
            None if data is None else data[entries], indices[entries], new_indptr,
            self.n_features, offsets, self.feature_names, self._arrays[3], parents)
        taken._segments = segments  # taken from checked segments: consistent
        return taken

    def __repr__(self):
        trees = "" if self._parents is None else ", parents=..."
        segments = ("" if self._segments is None else
                    f", segments=<{self._segments.n_features} features of segments of up "
                    f"to {self.segment_length} tokens>")
        dense = "" if self._dense is None else f", n_dense={self.n_dense}"
        return (f"SequenceMatrix(n_sequences={len(self)}, n_tokens={self.n_tokens}, "
                f"n_features={self.n_features}, nnz={self.nnz}{dense}{trees}{segments})")

    @property
    def nnz(self):
        """Number of stored feature values."""
        arrays = self._canonical_arrays()
        return self.matrix.nnz if arrays is None else arrays[1].shape[0]


def segment_length(segments, offsets):
    """Rows of ``segments`` per token of ``offsets`` (0 for no segments or no tokens)."""
    n_tokens = int(offsets[-1])
    if segments is None or not n_tokens:
        return 0
    return segments.n_tokens // n_tokens


def checked_segments(segments, offsets):
    """``segments`` if they fit the sequences of ``offsets``, or raise saying why."""
    if not isinstance(segments, SequenceMatrix):
        raise TypeError(f"segments must be a SequenceMatrix (what TokenFeaturizer("
                        f"segment_features=...) emits); got a {type(segments).__name__}.")
    if segments._segments is not None or segments._parents is not None:
        raise ValueError("segments may not carry segments or parents of their own.")
    n_sequences = offsets.shape[0] - 1
    if len(segments) != n_sequences:
        raise ValueError(f"segments has {len(segments)} sequences for {n_sequences}.")
    n_tokens = int(offsets[-1])
    rows = segments.n_tokens
    if n_tokens == 0:
        if rows:
            raise ValueError(f"segments has {rows} rows for sequences with no tokens.")
        return segments
    if rows % n_tokens or not rows or not np.array_equal(
            segments.offsets, offsets * (rows // n_tokens)):
        raise ValueError(
            f"segments must have the same number of rows, L, for each token (one per "
            f"candidate length, segments.offsets = offsets * L); got {rows} rows for "
            f"{n_tokens} tokens, arranged otherwise.")
    return segments

