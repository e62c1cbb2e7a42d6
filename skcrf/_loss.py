"""Parameter layout and the CRF negative log-likelihood with its gradient.

State weights exist only for (feature, label) pairs, listed feature by feature
in a :class:`StatePairs`: by default the pairs seen in the training data, as
CRFsuite does, or every pair. The flat parameter vector holds, in order: the
pair weights, the (n_classes, n_classes) transition weights [from, to], then the
start and end weights (n_classes each).
"""

import numpy as np
import scipy.sparse as sp

from ._kernels import (LOSS_HOT_BUDGET, LOSS_PAIR_BUDGET, MIN_LOSS_CHUNKS, N_CHUNKS,
                       column_counts, csr_dot_dense, nll_terms, pair_pattern,
                       pair_sums)
from ._sequence_matrix import values_or_none


def csr_times_dense(X, dense):
    """``X @ dense`` for a sparse matrix or FeatureArrays, through the parallel kernel."""
    data, indices, indptr, binary = as_feature_arrays(X).kernel_args()
    return csr_dot_dense(data, indices, indptr,
                         np.ascontiguousarray(dense, dtype=np.float64), binary)


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
    """

    def __init__(self, data, indices, indptr, n_features):
        self.data = data
        self.indices = indices
        self.indptr = indptr
        self.n_features = n_features

    @classmethod
    def from_sparse(cls, X):
        """The arrays of a scipy sparse matrix (shared where the types already fit)."""
        X = sp.csr_matrix(X)
        index_type = np.int32 if X.shape[1] <= np.iinfo(np.int32).max else np.int64
        data = values_or_none(X.data)
        return cls(data, X.indices.astype(index_type, copy=False),
                   X.indptr.astype(np.int64, copy=False), X.shape[1])

    @classmethod
    def of_sequences(cls, X):
        """The arrays of a SequenceMatrix, with no array of ones read or built."""
        pattern = X._indicator_pattern()
        if pattern is not None:
            return cls(None, *pattern, X.n_features)
        return cls.from_sparse(X.matrix)

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


def as_feature_arrays(X):
    return X if isinstance(X, FeatureArrays) else FeatureArrays.from_sparse(X)


class StatePairs:
    """Which (feature, label) pairs carry a state weight, feature by feature.

    Pair ``p`` belongs to the feature ``f`` with
    ``feature_ptr[f] <= p < feature_ptr[f + 1]`` and has label ``labels[p]``
    (CSR layout of a (n_features, n_classes) pattern).
    """

    def __init__(self, feature_ptr, labels, n_classes):
        # int32 where it fits: half the memory the kernels read per non-zero
        index_type = np.int32 if len(labels) <= np.iinfo(np.int32).max else np.int64
        self.feature_ptr = np.ascontiguousarray(feature_ptr, dtype=index_type)
        self.labels = np.ascontiguousarray(labels, dtype=np.int32)
        self.n_classes = n_classes

    @classmethod
    def observed(cls, X, label_ids, n_classes):
        """The pairs of a feature and a label that occur together in training.

        ``X`` is a sparse matrix or :class:`FeatureArrays`; an explicitly
        stored zero counts as an occurrence.
        """
        X = as_feature_arrays(X)
        seen = pair_pattern(X.indices, X.indptr, np.asarray(label_ids, dtype=np.int64),
                            X.n_features, n_classes)
        features, labels = np.nonzero(seen)
        feature_ptr = np.zeros(X.n_features + 1, dtype=np.int64)
        np.cumsum(np.bincount(features, minlength=X.n_features), out=feature_ptr[1:])
        return cls(feature_ptr, labels, n_classes)

    @classmethod
    def every(cls, n_features, n_classes):
        """All n_features * n_classes pairs."""
        return cls(np.arange(n_features + 1) * n_classes,
                   np.tile(np.arange(n_classes), n_features), n_classes)

    @property
    def n_pairs(self):
        return self.labels.shape[0]

    @property
    def n_features(self):
        return self.feature_ptr.shape[0] - 1

    def feature_of_pairs(self):
        return np.repeat(np.arange(self.n_features), np.diff(self.feature_ptr))

    def empirical_counts(self, X, label_ids):
        """Sum of each pair feature's value over the training tokens.

        Every (feature, label) of ``X`` and ``label_ids`` must have a pair, as
        with the pairs :meth:`observed` finds or :meth:`every` pair.
        """
        X = as_feature_arrays(X)
        return pair_sums(*X.kernel_args(), np.asarray(label_ids, dtype=np.int64),
                         self.feature_ptr, self.labels)

    def to_dense(self, pair_weights):
        """State weights as a (n_classes, n_features) array, 0 for absent pairs.

        Feature-major in memory (Fortran order): predict multiplies by its
        transpose, which is then C-contiguous, with no copy per call.
        """
        dense = np.zeros((self.n_features, self.n_classes)).T
        dense[self.labels, self.feature_of_pairs()] = pair_weights
        return dense


def n_parameters(n_pairs, n_classes):
    """Length of the flat parameter vector."""
    return n_pairs + n_classes * n_classes + 2 * n_classes


def unpack(w, n_pairs, n_classes):
    """Views of ``w`` as (pair weights, transitions, start, end)."""
    n_trans = n_classes * n_classes
    transitions = w[n_pairs:n_pairs + n_trans].reshape(n_classes, n_classes)
    start = w[n_pairs + n_trans:n_pairs + n_trans + n_classes]
    end = w[n_pairs + n_trans + n_classes:]
    return w[:n_pairs], transitions, start, end


def boundary_tokens(offsets):
    """Indices of the first and last token of every non-empty sequence."""
    lengths = np.diff(offsets)
    nonempty = lengths > 0
    return offsets[:-1][nonempty], offsets[1:][nonempty] - 1


def loss_layout(X, offsets, n_pairs, n_classes):
    """How :func:`~skcrf._kernels.nll_terms` splits its work: data only, no threads.

    Returns the number of sequence chunks, the most frequent features (which
    get dense per-chunk rows) and each feature's slot among them (-1 if none),
    within the memory bounds set in ``_kernels``.
    """
    n_sequences = offsets.shape[0] - 1
    by_memory = LOSS_PAIR_BUDGET // max(n_pairs, 1)
    n_chunks = max(1, min(n_sequences, N_CHUNKS, max(MIN_LOSS_CHUNKS, by_memory)))
    n_hot = min(X.n_features, LOSS_HOT_BUDGET // (n_chunks * n_classes))
    frequency = column_counts(X.indices, X.n_features)
    hot_features = np.argsort(-frequency, kind="stable")[:n_hot]
    hot_slot = np.full(X.n_features, -1, dtype=np.int32)
    hot_slot[hot_features] = np.arange(n_hot, dtype=np.int32)
    return n_chunks, hot_features.astype(np.int64), hot_slot


class NegativeLogLikelihood:
    """Objective ``sum_q -log p(y_q | x_q) + l2 / 2 * ||w||^2`` and its gradient.

    Everything that does not depend on ``w`` (the empirical feature counts, the
    pair coordinates) is computed once here, not per evaluation. One
    evaluation is one call of :func:`~skcrf._kernels.nll_terms`, which works
    on the pair weights directly and keeps no (n_tokens, n_classes) array, so
    training needs little memory beyond the features themselves.

    Parameters
    ----------
    X : scipy.sparse matrix or FeatureArrays of shape (n_tokens, n_features)
    offsets : ndarray of shape (n_sequences + 1,)
    label_ids : ndarray of shape (n_tokens,)
    pairs : StatePairs
    l2 : float
        Coefficient of the squared norm; the L2 part of the elastic net is
        ``0.5 * l2 * ||w||^2`` with ``l2 = alpha * (1 - l1_ratio)``.
    """

    def __init__(self, X, offsets, label_ids, pairs, l2):
        self.X = as_feature_arrays(X)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.pairs = pairs
        self.n_classes = pairs.n_classes
        self.l2 = l2
        self.empirical = self._empirical_counts(label_ids)
        self.n_chunks, self.hot_features, self.hot_slot = loss_layout(
            self.X, self.offsets, pairs.n_pairs, self.n_classes)
        self._workspace = None

    @property
    def n_parameters(self):
        return n_parameters(self.pairs.n_pairs, self.n_classes)

    def _empirical_counts(self, label_ids):
        counts = np.zeros(self.n_parameters)
        state, transitions, start, end = unpack(counts, self.pairs.n_pairs, self.n_classes)
        state[:] = self.pairs.empirical_counts(self.X, label_ids)
        first, last = boundary_tokens(self.offsets)
        # every token but the first of its sequence is the target of a transition
        opens_sequence = np.zeros(label_ids.shape[0], dtype=bool)
        opens_sequence[first] = True
        to_ids = np.flatnonzero(~opens_sequence)
        np.add.at(transitions, (label_ids[to_ids - 1], label_ids[to_ids]), 1.0)
        start[:] = np.bincount(label_ids[first], minlength=self.n_classes)
        end[:] = np.bincount(label_ids[last], minlength=self.n_classes)
        return counts

    def _kernel_workspace(self):
        """nll_terms' partial sums, allocated once for every evaluation."""
        shapes = ((self.n_chunks, self.pairs.n_pairs),
                  (self.n_chunks, self.hot_features.shape[0], self.n_classes))
        if self._workspace is None or [a.shape for a in self._workspace] != list(shapes):
            self._workspace = [np.empty(shape) for shape in shapes]
        return self._workspace

    def __call__(self, w):
        """Return ``(loss, gradient)`` at ``w``; the loss is ``inf`` where either overflows."""
        pair_weights, transitions, start, end = unpack(w, self.pairs.n_pairs, self.n_classes)
        log_z, expected_pairs, transition_counts, start_counts, end_counts = nll_terms(
            *self.X.kernel_args(), self.pairs.feature_ptr, self.pairs.labels,
            np.ascontiguousarray(pair_weights), np.ascontiguousarray(transitions),
            np.ascontiguousarray(start), np.ascontiguousarray(end), self.offsets,
            self.hot_features, self.hot_slot, *self._kernel_workspace())
        grad = np.concatenate([expected_pairs, transition_counts.ravel(), start_counts,
                               end_counts])
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            grad -= self.empirical
            grad += self.l2 * w
            loss = log_z.sum() - w @ self.empirical + 0.5 * self.l2 * (w @ w)
        if not (np.isfinite(loss) and np.isfinite(grad).all()):
            # overflow (huge feature values or weights): the solver backs off
            return np.inf, grad
        return loss, grad
