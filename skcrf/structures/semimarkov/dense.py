"""A semi-Markov CRF with a dense block: its token scores and their gradient by BLAS.

The token part of a segment's score is the sum, over its tokens, of their
``state`` scores, plus the ``first`` score of its first token and the
``last`` score of its last (:data:`~.segment_scores.TOKEN_ROLES`): three
(n_tokens, n_labels) blocks that come from the token features. With a
dense block they get ``X_dense @ W.T`` added, ``W`` (3 * n_labels,
n_dense) in the role-major order of the token pairs' labels, and the
gradient of ``W`` is ``role_marginals.T @ X_dense``: two matrix products
per chunk of sequences, never the dense values copied into CSR. The
segment forward-backward then runs on the chunk's scores (the unfused
kernels; the fused one reads CSR only).
"""

import numpy as np
import scipy.sparse as sp

from ..chain.dense import CHUNK_TOKENS, chunk_starts, sequence_range
from .segment_scores import TOKEN_ROLES, SegmentPosteriors, Segmentation


class DenseSemiMarkovStructure:
    """A :class:`~.structure.SemiMarkovStructure` (order 1) plus dense token weights.

    The weight vector is the structure's, then ``W`` (3 * n_labels,
    n_dense) in C order. The ``first`` and ``last`` rows of a label whose
    segments are one token long stay 0, as the structure has no such pairs
    (they would only add to its ``state`` weights). The fitted
    coefficients are the structure's with each role's ``W`` rows as their
    last columns: the layout the CSR route gives the same values.

    Parameters
    ----------
    structure : SemiMarkovStructure
        Over the sparse columns.
    n_dense : int
    """

    def __init__(self, structure, n_dense):
        self.structure = structure
        self.n_dense = n_dense
        C = structure.n_labels
        self.n_rows = len(TOKEN_ROLES) * C
        role, label = np.divmod(np.arange(self.n_rows), C)
        #: rows of W that exist (the others are held at 0)
        self.rows = (role == 0) | (structure.max_lengths[label] > 1)

    @property
    def transition_mask(self):
        return self.structure.transition_mask

    @property
    def n_parameters(self):
        return self.structure.n_parameters + self.n_rows * self.n_dense

    def _split(self, w):
        n = self.structure.n_parameters
        W = w[n:].reshape(self.n_rows, self.n_dense)
        if not self.rows.all():
            W = W * self.rows[:, None]
        return w[:n], W

    def _joined(self, expected, expected_dense):
        expected_dense[~self.rows] = 0.0
        return np.concatenate([expected, expected_dense.ravel()])

    def gold_statistics(self, features, offsets, codes):
        """Phi(gold): the structure's, then each role label's sum of dense rows."""
        C = self.structure.n_labels
        dense = features.dense
        gold = np.zeros((self.n_rows, self.n_dense))
        segmentation = Segmentation.of_codes(codes, offsets, C)
        for role_labels in segmentation.token_role_labels(offsets, C):
            tokens = np.flatnonzero(role_labels >= 0)
            for lo in range(0, tokens.shape[0], CHUNK_TOKENS):
                chunk = tokens[lo:lo + CHUNK_TOKENS]
                onehot = sp.csr_matrix(
                    (np.ones(chunk.shape[0]), (role_labels[chunk], np.arange(chunk.shape[0]))),
                    shape=(self.n_rows, chunk.shape[0]))
                gold += onehot @ dense[chunk].astype(np.float64, copy=False)
        return self._joined(self.structure.gold_statistics(features, offsets, codes), gold)

    def _scores(self, features, w_structure, W):
        scores = self.structure.scores(features, w_structure)
        token = features.dense @ W.T.astype(features.dense.dtype)
        C = self.structure.n_labels
        for k, block in enumerate((scores.state, scores.first, scores.last)):
            block += token[:, k * C:(k + 1) * C]
        return scores

    def scores(self, features, w):
        """:class:`SegmentScores` of the features (sparse part and dense block) under ``w``."""
        return self._scores(features, *self._split(w))

    def expectation_terms(self, features, offsets, fused=True):
        """``w -> (log_z, expected statistics)``, chunk by chunk (``fused`` is ignored)."""
        starts = chunk_starts(offsets)
        chunks = [sequence_range(features, offsets, a, b)
                  for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]
        structure = self.structure

        def terms(w):
            w_structure, W = self._split(w)
            log_z = []
            expected = np.zeros(structure.n_parameters)
            expected_dense = np.zeros((self.n_rows, self.n_dense))
            for part, part_offsets in chunks:
                if part_offsets[-1] == 0:  # empty sequences: log Z 0, nothing expected
                    log_z.append(np.zeros(part_offsets.shape[0] - 1))
                    continue
                posteriors = SegmentPosteriors.of_scores(
                    self._scores(part, w_structure, W), part_offsets)
                log_z.append(posteriors.log_z)
                expected += structure.expected_statistics(part, part_offsets, posteriors)
                marginals = structure._token_marginals(posteriors.roles)
                expected_dense += marginals.astype(part.dense.dtype, copy=False).T @ part.dense
            return np.concatenate(log_z), self._joined(expected, expected_dense)

        return terms

    def coefficients(self, w):
        """The structure's named coefficients, each role's with its dense columns last."""
        w_structure, W = self._split(w)
        named = self.structure.coefficients(w_structure)
        C = self.structure.n_labels
        for k, role in enumerate(TOKEN_ROLES):
            name = "coef" if role == "state" else f"{role}_coef"
            named[name] = np.hstack([named[name], W[k * C:(k + 1) * C]])
        return named

    def weights(self, named):
        """The inverse of :meth:`coefficients`, or None for coefficients of another layout."""
        C = self.structure.n_labels
        n_sparse = self.structure.token_pairs.n_features
        names = ["coef" if role == "state" else f"{role}_coef" for role in TOKEN_ROLES]
        if any(named.get(name) is None
               or named[name].shape != (C, n_sparse + self.n_dense) for name in names):
            return None
        w_structure = self.structure.weights(
            dict(named, **{name: named[name][:, :n_sparse] for name in names}))
        if w_structure is None:
            return None
        W = np.concatenate([np.asarray(named[name][:, n_sparse:], dtype=np.float64)
                            for name in names])
        W[~self.rows] = 0.0
        return np.concatenate([w_structure, W.ravel()])
