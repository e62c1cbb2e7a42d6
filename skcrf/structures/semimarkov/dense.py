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
kernels; the fused one reads CSR only). Orders >= 2 run the same way: their
potentials over labels (:class:`~.patterns.PatternSegmentScores`) take the
dense scores, their automaton's passes give the role marginals.

Partially labelled sequences (:meth:`DenseSemiMarkovStructure.difference_terms`)
take the same dense scores into both passes, free and constrained, and the
dense gradient is the difference of their role marginals times the block.
"""

from dataclasses import fields

import numpy as np
import scipy.sparse as sp

from ...features.arrays import FeatureArrays
from ..chain.dense import CHUNK_TOKENS, chunk_starts, dense_gradient, sequence_range
from .segment_scores import TOKEN_ROLES, SegmentPosteriors, Segmentation


class DenseSemiMarkovStructure:
    """A :class:`~.structure.SemiMarkovStructure` (order 1) or a
    :class:`~.patterns.PatternSemiMarkovStructure` (orders >= 2) plus dense token weights.

    The weight vector is the structure's, then ``W`` (3 * n_labels,
    n_dense) in C order. The ``first`` and ``last`` rows of a label whose
    segments are one token long stay 0, as the structure has no such pairs
    (they would only add to its ``state`` weights). The fitted
    coefficients are the structure's with each role's ``W`` rows as their
    last columns: the layout the CSR route gives the same values.

    Parameters
    ----------
    structure : SemiMarkovStructure or PatternSemiMarkovStructure
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
        labels = getattr(scores, "labels", scores)  # order >= 2: the scores over labels
        for k, block in enumerate((labels.state, labels.first, labels.last)):
            block += token[:, k * C:(k + 1) * C]
        return scores

    def scores(self, features, w):
        """:class:`SegmentScores` of the features (sparse part and dense block) under ``w``
        (:class:`~.patterns.PatternSegmentScores` at orders >= 2)."""
        return self._scores(features, *self._split(w))

    @staticmethod
    def _posteriors(scores, offsets):
        if hasattr(scores, "posteriors"):  # PatternSegmentScores
            return scores.posteriors(offsets)
        return SegmentPosteriors.of_scores(scores, offsets)

    def _chunks(self, features, offsets):
        """``(part, part_offsets, first token, stop token)`` of chunks of about CHUNK_TOKENS."""
        starts = chunk_starts(offsets)
        chunks = []
        for a, b in zip(starts[:-1].tolist(), starts[1:].tolist()):
            part, part_offsets = sequence_range(features, offsets, a, b)
            lo, hi = int(offsets[a]), int(offsets[b])
            if features.segments is not None:  # segment_length rows per token
                part.segments = _rows(features.segments, lo * features.segment_length,
                                      hi * features.segment_length)
                part.segment_length = features.segment_length
            chunks.append((part, part_offsets, lo, hi))
        return chunks

    def expectation_terms(self, features, offsets, fused=True):
        """``w -> (log_z, expected statistics)``, chunk by chunk (``fused`` is ignored)."""
        return self._terms(features, offsets)

    def difference_terms(self, features, offsets, mask):
        """``w -> (log Z - log Z_allowed per sequence, E_p[Phi] - E_p[Phi | allowed])``.

        ``mask`` (n_tokens, n_labels) holds 0 or ``-inf`` for each token's
        segment labels (:mod:`skcrf.learning.partial_segments`). Each chunk's
        scores (sparse part plus ``X_dense @ W.T``) go through the free
        passes, then take the mask on their state block for the constrained
        ones; the expected statistics are linear in the posteriors, so one
        scatter and one BLAS product of their difference give the gradient.
        The difference of log Z is ``inf`` for a sequence nothing allows.
        """
        return self._terms(features, offsets, mask)

    def _terms(self, features, offsets, mask=None):
        """:meth:`expectation_terms`, or with ``mask`` :meth:`difference_terms`."""
        chunks = self._chunks(features, offsets)
        structure = self.structure

        def terms(w):
            w_structure, W = self._split(w)
            log_z = []
            expected = np.zeros(structure.n_parameters)
            expected_dense = np.zeros((self.n_rows, self.n_dense))
            for part, part_offsets, lo, hi in chunks:
                if part_offsets[-1] == 0:  # empty sequences: log Z 0, nothing expected
                    log_z.append(np.zeros(part_offsets.shape[0] - 1))
                    continue
                scores = self._scores(part, w_structure, W)
                posteriors = self._posteriors(scores, part_offsets)
                if mask is not None:
                    getattr(scores, "labels", scores).state += mask[lo:hi]
                    posteriors = _difference(posteriors,
                                             self._posteriors(scores, part_offsets))
                log_z.append(posteriors.log_z)
                expected += structure.expected_statistics(part, part_offsets, posteriors)
                expected_dense += self._dense_gradient(part, posteriors)
            return np.concatenate(log_z), self._joined(expected, expected_dense)

        return terms

    def _dense_gradient(self, part, posteriors):
        """``role_marginals.T @ X_dense`` (n_rows, n_dense), in the block's precision."""
        return dense_gradient(part.dense, self.structure._token_marginals(posteriors.roles))

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


def _difference(free, allowed):
    """The posteriors ``free - allowed`` field by field; log Z ``inf`` where nothing is allowed."""
    with np.errstate(invalid="ignore"):  # -inf - -inf: a sequence nothing allows
        difference = type(free)(*(
            None if getattr(free, f.name) is None
            else getattr(free, f.name) - getattr(allowed, f.name) for f in fields(free)))
    difference.log_z[np.isneginf(allowed.log_z)] = np.inf
    return difference


def _rows(arrays, lo, hi):
    """Rows ``lo:hi`` of FeatureArrays ``arrays`` (views, no dense block)."""
    a, b = int(arrays.indptr[lo]), int(arrays.indptr[hi])
    return FeatureArrays(None if arrays.data is None else arrays.data[a:b],
                         arrays.indices[a:b], arrays.indptr[lo:hi + 1] - a,
                         arrays.n_features)
