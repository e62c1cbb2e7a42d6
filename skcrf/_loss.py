"""Parameter packing and the CRF negative log-likelihood with its gradient.

The flat parameter vector holds, in order: the state weights as an
(n_features, n_classes) block (feature-major, so ``X @ state`` and ``X.T @ residual``
read it contiguously), the (n_classes, n_classes) transition weights [from, to],
then the start and end weights (n_classes each).
"""

import numpy as np

from ._kernels import csr_dot_dense, csr_transpose_dot_dense, forward_backward


def n_parameters(n_features, n_classes):
    """Length of the flat parameter vector."""
    return n_features * n_classes + n_classes * n_classes + 2 * n_classes


def unpack(w, n_features, n_classes):
    """Views of ``w`` as (state (n_features, n_classes), transitions, start, end)."""
    n_state = n_features * n_classes
    n_trans = n_classes * n_classes
    state = w[:n_state].reshape(n_features, n_classes)
    transitions = w[n_state:n_state + n_trans].reshape(n_classes, n_classes)
    start = w[n_state + n_trans:n_state + n_trans + n_classes]
    end = w[n_state + n_trans + n_classes:]
    return state, transitions, start, end


def boundary_tokens(offsets):
    """Indices of the first and last token of every non-empty sequence."""
    lengths = np.diff(offsets)
    nonempty = lengths > 0
    return offsets[:-1][nonempty], offsets[1:][nonempty] - 1


def is_binary(X):
    """Whether every stored value of sparse ``X`` is 1 (indicator features)."""
    return bool(np.all(X.data == 1.0))


def csr_times_dense(X, dense, binary=None):
    """``X @ dense`` for a CSR matrix through the parallel kernel."""
    if binary is None:
        binary = is_binary(X)
    return csr_dot_dense(X.data, X.indices, X.indptr, np.ascontiguousarray(dense), binary)


def csr_transpose_times_dense(X, dense, binary=None):
    """``X.T @ dense`` for a CSR matrix through the parallel kernel."""
    if binary is None:
        binary = is_binary(X)
    return csr_transpose_dot_dense(X.data, X.indices, X.indptr, np.ascontiguousarray(dense),
                                   X.shape[1], binary)


class NegativeLogLikelihood:
    """Objective ``sum_q -log p(y_q | x_q) + l2 / 2 * ||w||^2`` and its gradient.

    Everything that does not depend on ``w`` (the transposed design matrix, the
    empirical feature counts) is computed once here, not per evaluation.

    Parameters
    ----------
    X : scipy.sparse CSR matrix of shape (n_tokens, n_features)
    offsets : ndarray of shape (n_sequences + 1,)
    label_ids : ndarray of shape (n_tokens,)
    n_classes : int
    l2 : float
        Coefficient of the squared norm; the L2 part of the elastic net is
        ``0.5 * l2 * ||w||^2`` with ``l2 = alpha * (1 - l1_ratio)``.
    """

    def __init__(self, X, offsets, label_ids, n_classes, l2):
        self.X = X
        self.binary = is_binary(X)
        self.offsets = offsets
        self.n_features = X.shape[1]
        self.n_classes = n_classes
        self.l2 = l2
        self.first, self.last = boundary_tokens(offsets)
        self.empirical = self._empirical_counts(label_ids)

    @property
    def n_parameters(self):
        return n_parameters(self.n_features, self.n_classes)

    def _empirical_counts(self, label_ids):
        counts = np.zeros(self.n_parameters)
        state, transitions, start, end = unpack(counts, self.n_features, self.n_classes)
        one_hot = np.zeros((label_ids.shape[0], self.n_classes))
        one_hot[np.arange(label_ids.shape[0]), label_ids] = 1.0
        state[:] = csr_transpose_times_dense(self.X, one_hot, self.binary)
        # every token but the first of its sequence is the target of a transition
        opens_sequence = np.zeros(label_ids.shape[0], dtype=bool)
        opens_sequence[self.first] = True
        to_ids = np.flatnonzero(~opens_sequence)
        np.add.at(transitions, (label_ids[to_ids - 1], label_ids[to_ids]), 1.0)
        start[:] = np.bincount(label_ids[self.first], minlength=self.n_classes)
        end[:] = np.bincount(label_ids[self.last], minlength=self.n_classes)
        return counts

    def __call__(self, w):
        """Return ``(loss, gradient)`` at ``w``."""
        state, transitions, start, end = unpack(w, self.n_features, self.n_classes)
        unary = csr_times_dense(self.X, state, self.binary)
        log_z, marginals, transition_counts = forward_backward(
            unary, transitions, start, end, self.offsets, True)
        loss = log_z.sum() - w @ self.empirical + 0.5 * self.l2 * (w @ w)

        grad = np.empty_like(w)
        g_state, g_transitions, g_start, g_end = unpack(grad, self.n_features, self.n_classes)
        g_state[:] = csr_transpose_times_dense(self.X, marginals, self.binary)
        g_transitions[:] = transition_counts
        g_start[:] = marginals[self.first].sum(axis=0)
        g_end[:] = marginals[self.last].sum(axis=0)
        grad -= self.empirical
        grad += self.l2 * w
        return loss, grad
