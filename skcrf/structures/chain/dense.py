"""A chain with a dense block: its unary scores and their gradient by BLAS.

Dense features (word vectors, sensor readings) give every token a value in
every column, so through CSR they cost 12 bytes a value and a sparse walk
per evaluation. Here they stay one C-contiguous array, and the gradient of
the dense weights is ``marginals.T @ X_dense``: two matrix products per
evaluation.

An order-1 chain without transition features (the common case) runs its
fused kernel (:mod:`._fused`) over the whole set: ``X_dense @ W.T`` enters
it as one (n_tokens, n_classes) array of added unary scores, which the
kernel overwrites with the token marginals; a block that repeats rows (word
vectors) has both products run over its distinct rows
(:class:`DenseProducts`). Other structures run chunk by
chunk of sequences: the unary scores are the sparse part's (the structure's
own kernel) plus ``X_dense @ W.T``, then inference on the chunk, never more
than a chunk's (n_tokens, n_classes) scores and marginals at once.
"""

import numpy as np
import scipy.sparse as sp

from ...features.arrays import FeatureArrays
from ._fused import FusedChainTerms
from .order1 import ChainStructure, chain_posteriors

#: Tokens per chunk of the dense route: each chunk holds its (tokens, n_classes)
#: unary scores and marginals (and the sparse part's), so memory stays
#: O(chunk) whatever the corpus; 64k tokens keep BLAS calls large enough to
#: run at full speed.
CHUNK_TOKENS = 1 << 16


def sequence_range(features, offsets, first, stop):
    """The FeatureArrays of sequences ``first:stop`` as views, with offsets from 0."""
    lo, hi = int(offsets[first]), int(offsets[stop])
    a, b = int(features.indptr[lo]), int(features.indptr[hi])
    part = FeatureArrays(None if features.data is None else features.data[a:b],
                         features.indices[a:b], features.indptr[lo:hi + 1] - a,
                         features.n_features)
    if features.dense is not None:
        part.dense = features.dense[lo:hi]
    if features.parents is not None:  # a tree's parents count within its sequence
        part.parents = features.parents[lo:hi]
    return part, offsets[first:stop + 1] - lo


def chunk_starts(offsets, budget=None):
    """Sequence indices that cut the sequences into chunks of about ``budget`` tokens
    (:data:`CHUNK_TOKENS` by default)."""
    budget = CHUNK_TOKENS if budget is None else budget
    n_sequences = offsets.shape[0] - 1
    cuts = np.searchsorted(offsets, np.arange(budget, int(offsets[-1]), budget))
    return np.unique(np.concatenate([[0], np.clip(cuts, 0, n_sequences), [n_sequences]]))


class DenseChainStructure:
    """A chain structure of any order, or a tree structure, plus dense weights.

    The chain is an order-1 :class:`~skcrf.structures.chain.order1.ChainStructure`,
    a :class:`~skcrf.structures.patterns.chain.PatternChainStructure` (orders
    >= 2, exact) or a :class:`~skcrf.structures.tree.structure.TreeStructure`
    (its node scores): each gives unary scores to add ``X_dense @ W.T`` to,
    token marginals to multiply the block by, and the expected statistics of
    their own parameters from those marginals.

    The weight vector is the chain's, then ``W`` (n_classes, n_dense) in C
    order. The features are :class:`~skcrf.features.arrays.FeatureArrays`
    whose ``dense`` block is read by matrix products; their sparse part goes
    to the chain's own kernels. The fitted ``coef`` is the chain's
    ``coef`` with ``W`` as its last columns: the layout the CSR route gives
    the same values.

    Parameters
    ----------
    chain : ChainStructure, PatternChainStructure or TreeStructure
        Over the sparse columns (a tree's without link features).
    n_dense : int
    """

    def __init__(self, chain, n_dense):
        self.chain = chain
        self.n_dense = n_dense
        self.n_classes = chain.n_classes

    @property
    def n_parameters(self):
        return self.chain.n_parameters + self.n_classes * self.n_dense

    @property
    def state_pairs(self):
        """The chain's state pairs: the dense weights add no state."""
        return self.chain.state_pairs

    def _split(self, w):
        n = self.chain.n_parameters
        return w[:n], w[n:].reshape(self.n_classes, self.n_dense)

    def gold_statistics(self, features, offsets, label_ids):
        """Phi(gold): the chain's, then the sum of each class's dense rows."""
        dense = features.dense
        gold = np.zeros((self.n_classes, self.n_dense))
        # sparse one-hot labels times the block, a chunk at a time (a float32
        # block read as float64 a chunk at a time): one pass over its rows;
        # a dense one-hot product took 5 to 35x longer (busy machine)
        for lo in range(0, dense.shape[0], CHUNK_TOKENS):
            hi = min(lo + CHUNK_TOKENS, dense.shape[0])
            onehot = sp.csr_matrix((np.ones(hi - lo), (label_ids[lo:hi], np.arange(hi - lo))),
                                   shape=(self.n_classes, hi - lo))
            gold += onehot @ dense[lo:hi].astype(np.float64, copy=False)
        return np.concatenate([self.chain.gold_statistics(features, offsets, label_ids),
                               gold.ravel()])

    @property
    def takes_fused(self):
        """Whether the chain's fused kernel takes the dense scores (order 1, no transition
        features)."""
        chain = self.chain
        return (isinstance(chain, ChainStructure) and chain.order == 1
                and chain.edge_pairs is None)

    def expectation_terms(self, features, offsets, fused=True):
        """``w -> (log_z, expected statistics)``.

        With ``fused`` and :attr:`takes_fused`, one pass of the chain's fused
        kernel with the dense scores added; else chunk by chunk of about
        CHUNK_TOKENS tokens on the chain's unfused kernels.
        """
        if fused and self.takes_fused:
            return self._fused_terms(features, offsets)
        starts = chunk_starts(offsets)
        chunks = [sequence_range(features, offsets, a, b)
                  for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]

        def terms(w):
            w_chain, W = self._split(w)
            dense_weights = W.T.astype(features.dense.dtype)  # (n_dense, n_classes)
            log_z = []
            expected = np.zeros(self.chain.n_parameters)
            expected_dense = np.zeros((self.n_classes, self.n_dense))
            for part, part_offsets in chunks:
                scores = self.chain.scores(part, w_chain)
                scores.unary += part.dense @ dense_weights
                part_log_z, marginals, part_expected = self._posterior_terms(
                    part, part_offsets, scores)
                log_z.append(part_log_z)
                expected += part_expected
                expected_dense += dense_gradient(part.dense, marginals)
            return np.concatenate(log_z), self._without_fixed_blocks(
                np.concatenate([expected, expected_dense.ravel()]))

        return terms

    def _without_fixed_blocks(self, statistics):
        """``statistics`` with the chain's blocks the solver must not move at zero (in place):
        a chain without start and end weights (CRFsuite's)."""
        if hasattr(self.chain, "_without_fixed_blocks"):
            self.chain._without_fixed_blocks(statistics[:self.chain.n_parameters])
        return statistics

    def _fused_terms(self, features, offsets):
        """:meth:`expectation_terms` by the fused order-1 kernel."""
        chain = self.chain
        kernel = FusedChainTerms(features, offsets, chain.state_pairs, self.n_classes)
        products = DenseProducts(features.dense)
        rows = np.empty((features.dense.shape[0], self.n_classes))  # kept between calls

        def terms(w):
            w_chain, W = self._split(w)
            blocks = chain.layout.views(w_chain)
            log_z, pairs, counts, start, end = kernel(
                blocks["state"], *chain.masked_transitions(blocks),
                dense_rows=products.scores(W, rows))
            return log_z, self._without_fixed_blocks(np.concatenate(
                [pairs, counts.ravel(), start, end, products.gradient(rows).ravel()]))

        return terms

    def _posterior_terms(self, part, part_offsets, scores):
        """``(log_z, token marginals, the chain's expected statistics)`` of a chunk's scores."""
        if hasattr(scores, "root"):  # TreeScores
            from ..tree.structure import tree_posteriors

            posteriors = tree_posteriors(scores, part.parents, part_offsets, True)
            return posteriors.log_z, posteriors.marginals, self.chain.expected_statistics(
                part, posteriors)
        if hasattr(scores, "posteriors"):  # PatternScores (orders >= 2)
            log_z, marginals, transition_counts, pattern_counts = scores.posteriors(
                part_offsets, with_counts=True)
            return log_z, marginals, self.chain.expected_statistics(
                part, part_offsets, marginals, transition_counts, pattern_counts)
        posteriors = chain_posteriors(scores, part_offsets, True)
        return posteriors.log_z, posteriors.marginals, self.chain.expected_statistics(
            part, part_offsets, posteriors)

    def scores(self, features, w):
        """:class:`ChainScores` of the features (sparse part and dense block) under ``w``."""
        w_chain, W = self._split(w)
        scores = self.chain.scores(features, w_chain)
        scores.unary += features.dense @ W.T.astype(features.dense.dtype)
        return scores

    def coefficients(self, w):
        """The chain's named coefficients, with the dense weights as ``coef``'s last columns."""
        w_chain, W = self._split(w)
        named = self.chain.coefficients(w_chain)
        named["coef"] = np.hstack([named["coef"], W])
        return named

    def weights(self, named):
        """The inverse of :meth:`coefficients`, or None for coefficients of another layout."""
        coef = named.get("coef")
        n_sparse = self.chain.state_pairs.n_features
        if coef is None or coef.shape != (self.n_classes, n_sparse + self.n_dense):
            return None
        w_chain = self.chain.weights(dict(named, coef=coef[:, :n_sparse]))
        if w_chain is None:
            return None
        return np.concatenate([w_chain, np.asarray(coef[:, n_sparse:], dtype=np.float64).ravel()])


def dense_scores(dense, W, out):
    """``dense @ W.T`` into ``out`` (float64, C order), in the block's precision; ``out``."""
    weights = W.T.astype(dense.dtype)  # (n_dense, n_classes)
    if dense.dtype == np.float64:
        np.matmul(dense, weights, out=out)
    else:  # a float32 product, read as float64
        out[:] = dense @ weights
    return out


def dense_gradient(dense, marginals):
    """``marginals.T @ dense`` as float64 (n_classes, n_dense), in the block's precision.

    Computed as ``(dense.T @ marginals).T``: OpenBLAS splits that product's
    long inner dimension well, where ``marginals.T @ dense`` ran 4 to 15x
    slower with two threads on a shared machine (264k x 100 by 9 classes).
    """
    return np.asarray((dense.T @ marginals.astype(dense.dtype, copy=False)).T,
                      dtype=np.float64)


#: The largest share of distinct rows for which :class:`DenseProducts` multiplies
#: the distinct rows only: above it, the factoring saves too little to pay for
#: the gather and the sparse sum.
REPEATED_ROWS = 0.5


class DenseProducts:
    """A training block's two products per evaluation, over its distinct rows when it repeats.

    Word vectors are a table lookup: a corpus of 264k tokens holds about 14k
    distinct vectors, so ``X_dense @ W.T`` is ``(table @ W.T)[row_ids]`` and
    ``marginals.T @ X_dense`` is ``(S.T @ table)`` with ``S`` the marginals
    summed by row id (a sparse product over the tokens). Both then read the
    table instead of the whole block, which at 100-d is two passes over
    200 MB per evaluation: memory-bound, and what cost most of a fit with
    vectors (issue 42).

    The distinct rows are found once, at setup, by a hash (the block times a
    fixed vector, one matrix-vector product) and verified exactly; a block
    without enough repeats (sensor readings), or whose hash misleads, keeps
    the plain products (:func:`dense_scores`, :func:`dense_gradient`). The
    sums are the same terms in another order: results agree with the plain
    products to rounding (1e-15 relative), not bit for bit.

    Parameters
    ----------
    dense : ndarray of shape (n_tokens, n_dense)
        The block (float32 or float64, C order), not copied.
    """

    def __init__(self, dense):
        self.dense = dense
        self.table = self.row_ids = self.sums = None
        factored = repeated_rows(dense)
        if factored is not None:
            self.table, self.row_ids = factored
            n_tokens = dense.shape[0]
            # (n_distinct, n_tokens) one-hot: the marginals summed by row id
            self.sums = sp.csr_matrix(
                (np.ones(n_tokens), self.row_ids, np.arange(n_tokens + 1)),
                shape=(n_tokens, self.table.shape[0])).T.tocsr()

    def scores(self, W, out):
        """``dense @ W.T`` into ``out`` (float64, C order); ``out``."""
        if self.table is None:
            return dense_scores(self.dense, W, out)
        table_scores = np.asarray(self.table @ W.T.astype(self.table.dtype), dtype=np.float64)
        return np.take(table_scores, self.row_ids, axis=0, out=out)

    def gradient(self, marginals):
        """``marginals.T @ dense`` as float64 (n_classes, n_dense)."""
        if self.table is None:
            return dense_gradient(self.dense, marginals)
        return dense_gradient(self.table, self.sums @ marginals)


def repeated_rows(dense, max_share=None):
    """``(table, row_ids)`` with ``table[row_ids] == dense``, or None.

    None when the distinct rows are more than ``max_share`` (default
    :data:`REPEATED_ROWS`) of the rows, or when two distinct rows share a
    hash (then the block is taken as it is: slower, never wrong).
    """
    max_share = REPEATED_ROWS if max_share is None else max_share
    n_tokens, n_dense = dense.shape
    if n_tokens < 2 or not n_dense:
        return None
    keys, first, row_ids = np.unique(row_hash(dense), return_index=True, return_inverse=True)
    if keys.shape[0] > max_share * n_tokens:
        return None
    table = dense[first]
    for lo in range(0, n_tokens, CHUNK_TOKENS // 4):  # the check holds a chunk's copy at once
        hi = min(lo + CHUNK_TOKENS // 4, n_tokens)
        if not np.array_equal(dense[lo:hi], table[row_ids[lo:hi]]):
            return None
    return table, row_ids.reshape(-1).astype(np.intp, copy=False)


def row_hash(dense):
    """A number per row, equal for equal rows: the rows times a fixed random vector.

    In float64 whatever the block's type, a chunk of rows at a time: in
    float32, some of the 14k distinct word vectors of CoNLL-2002 shared a
    hash, which sent the whole block down the slow route.
    """
    probe = np.random.default_rng(0).standard_normal(dense.shape[1])
    keys = np.empty(dense.shape[0])
    for lo in range(0, dense.shape[0], CHUNK_TOKENS):
        keys[lo:lo + CHUNK_TOKENS] = dense[lo:lo + CHUNK_TOKENS].astype(np.float64,
                                                                         copy=False) @ probe
    return keys
