"""Parameter layout and the CRF negative log-likelihood with its gradient.

State weights exist only for (feature, label) pairs, listed feature by feature
in a :class:`StatePairs`: by default the pairs seen in the training data, as
CRFsuite does, or every pair. The flat parameter vector holds, in order: the
pair weights, the (n_classes, n_classes) transition weights [from, to], then the
start and end weights (n_classes each).
"""

import numpy as np
import scipy.sparse as sp

from ._kernels import csr_dot_dense, csr_transpose_dot_dense, forward_backward

def is_binary(X):
    """Whether every stored value of sparse ``X`` is 1 (indicator features)."""
    return bool(np.all(X.data == 1.0))


def csr_times_dense(X, dense):
    """``X @ dense`` for a CSR matrix through the parallel kernel."""
    return csr_dot_dense(X.data, X.indices, X.indptr, np.ascontiguousarray(dense),
                         is_binary(X))


class StatePairs:
    """Which (feature, label) pairs carry a state weight, feature by feature.

    Pair ``p`` belongs to the feature ``f`` with
    ``feature_ptr[f] <= p < feature_ptr[f + 1]`` and has label ``labels[p]``
    (CSR layout of a (n_features, n_classes) pattern).
    """

    def __init__(self, feature_ptr, labels, n_classes):
        self.feature_ptr = np.ascontiguousarray(feature_ptr, dtype=np.int64)
        self.labels = np.ascontiguousarray(labels, dtype=np.int64)
        self.n_classes = n_classes

    @classmethod
    def observed(cls, X, label_ids, n_classes):
        """The pairs of a feature and a label that occur together in training."""
        pattern = cls._label_pattern(X, label_ids, n_classes, np.ones_like(X.data))
        return cls(pattern.indptr, pattern.indices, n_classes)

    @classmethod
    def every(cls, n_features, n_classes):
        """All n_features * n_classes pairs."""
        return cls(np.arange(n_features + 1) * n_classes,
                   np.tile(np.arange(n_classes), n_features), n_classes)

    @staticmethod
    def _label_pattern(X, label_ids, n_classes, values):
        """(n_features, n_classes) CSR of sum over tokens of ``values`` per pair."""
        rows = np.repeat(label_ids, np.diff(X.indptr))
        pattern = sp.csr_matrix((values, (X.indices, rows)),
                                shape=(X.shape[1], n_classes))
        pattern.sum_duplicates()
        return pattern

    @property
    def n_pairs(self):
        return self.labels.shape[0]

    @property
    def n_features(self):
        return self.feature_ptr.shape[0] - 1

    def feature_of_pairs(self):
        return np.repeat(np.arange(self.n_features), np.diff(self.feature_ptr))

    def empirical_counts(self, X, label_ids):
        """Sum of each pair feature's value over the training tokens."""
        counts = self._label_pattern(X, label_ids, self.n_classes, X.data)
        dense_rows = counts.tocsr()
        # align with the pair list: a pair whose values cancel out may be absent
        return np.asarray(dense_rows[self.feature_of_pairs(), self.labels]).ravel()

    def to_dense(self, pair_weights):
        """State weights as a (n_classes, n_features) array, 0 for absent pairs."""
        dense = np.zeros((self.n_classes, self.n_features))
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


class NegativeLogLikelihood:
    """Objective ``sum_q -log p(y_q | x_q) + l2 / 2 * ||w||^2`` and its gradient.

    Everything that does not depend on ``w`` (the empirical feature counts, the
    pair coordinates) is computed once here, not per evaluation.

    The pair weights are the parameters, but the products run on a dense
    (n_features, n_classes) copy: gathering a dense row per non-zero costs one
    cache line, against three scattered arrays for the pair lists (measured
    34 ms vs 88 ms for ``X @ W`` on esp.train, one thread).

    Parameters
    ----------
    X : scipy.sparse CSR matrix of shape (n_tokens, n_features)
    offsets : ndarray of shape (n_sequences + 1,)
    label_ids : ndarray of shape (n_tokens,)
    pairs : StatePairs
    l2 : float
        Coefficient of the squared norm; the L2 part of the elastic net is
        ``0.5 * l2 * ||w||^2`` with ``l2 = alpha * (1 - l1_ratio)``.
    """

    def __init__(self, X, offsets, label_ids, pairs, l2):
        self.X = X
        self.binary = is_binary(X)
        self.offsets = offsets
        self.pairs = pairs
        self.n_classes = pairs.n_classes
        self.l2 = l2
        self.pair_features = pairs.feature_of_pairs()
        self.first, self.last = boundary_tokens(offsets)
        self.empirical = self._empirical_counts(label_ids)
        self._dense_state = np.zeros((pairs.n_features, self.n_classes))

    @property
    def n_parameters(self):
        return n_parameters(self.pairs.n_pairs, self.n_classes)

    def _empirical_counts(self, label_ids):
        counts = np.zeros(self.n_parameters)
        state, transitions, start, end = unpack(counts, self.pairs.n_pairs, self.n_classes)
        state[:] = self.pairs.empirical_counts(self.X, label_ids)
        first, last = self.first, self.last
        # every token but the first of its sequence is the target of a transition
        opens_sequence = np.zeros(label_ids.shape[0], dtype=bool)
        opens_sequence[first] = True
        to_ids = np.flatnonzero(~opens_sequence)
        np.add.at(transitions, (label_ids[to_ids - 1], label_ids[to_ids]), 1.0)
        start[:] = np.bincount(label_ids[first], minlength=self.n_classes)
        end[:] = np.bincount(label_ids[last], minlength=self.n_classes)
        return counts

    def __call__(self, w):
        """Return ``(loss, gradient)`` at ``w``; the loss is ``inf`` where undefined."""
        pair_weights, transitions, start, end = unpack(w, self.pairs.n_pairs, self.n_classes)
        X = self.X
        state = self._dense_state
        state[self.pair_features, self.pairs.labels] = pair_weights
        unary = csr_dot_dense(X.data, X.indices, X.indptr, state, self.binary)
        log_z, marginals, transition_counts = forward_backward(
            unary, transitions, start, end, self.offsets, True)
        expected_state = csr_transpose_dot_dense(X.data, X.indices, X.indptr, marginals,
                                                 X.shape[1], self.binary)
        grad = np.concatenate([
            expected_state[self.pair_features, self.pairs.labels],
            transition_counts.ravel(),
            marginals[self.first].sum(axis=0),
            marginals[self.last].sum(axis=0),
        ])
        grad -= self.empirical
        grad += self.l2 * w
        loss = log_z.sum() - w @ self.empirical + 0.5 * self.l2 * (w @ w)
        if not np.isfinite(loss):
            return np.inf, grad
        return loss, grad
