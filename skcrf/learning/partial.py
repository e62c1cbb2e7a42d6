"""The training objective of partially labelled sequences (unknown tokens, label sets).

A sequence whose tokens are known only to take one of some allowed labels
is trained on the probability of all its labellings that keep to them
(Tsuboi et al., 2008, "Training conditional random fields using incomplete
annotations")::

    -log sum_{y consistent} p(y | x) = log Z(x) - log Z_allowed(x)

where ``Z_allowed`` sums over the consistent labellings only: a
forward-backward whose disallowed (token, label) unary scores are
``-inf``. Its gradient is ``E_p[Phi] - E_p[Phi | allowed]``. With one
allowed label per token it is the usual ``log Z - w . Phi(gold)``.
"""

import copy

import numpy as np

from ..features.arrays import take_sequences
from ..structures.chain._fused_masked import MaskedFusedChainTerms
from ..structures.chain.dense import (DenseChainStructure, DenseProducts, chunk_starts,
                                      dense_gradient, sequence_range)
from ..structures.chain.order1 import ChainPosteriors, ChainStructure, chain_posteriors
from .objective import NegativeLogLikelihood, _Objective, weight_groups


class ConstrainedTerms:
    """``w -> (sum_q v_q (log Z_q - log Z_allowed_q), its gradient)`` over some sequences.

    An order-1 chain takes :func:`fused_difference_terms` (the masked fused
    kernel), another chain :func:`chain_difference_terms`; a structure with a
    dense block (a chain of any order, a tree, a semi-Markov structure of any
    order) one pass over the dense unary scores that gives both terms
    (:func:`fused_dense_difference_terms`, :func:`dense_difference_terms`,
    :meth:`~skcrf.structures.semimarkov.dense.DenseSemiMarkovStructure.difference_terms`),
    so the block is multiplied by BLAS and never read as CSR columns. For another
    structure, the free ``log Z`` and expectations come from its own
    :meth:`expectation_terms` (its fused kernel where it has one) and the
    constrained ones from the unfused path (:meth:`scores`, inference,
    expected statistics) of a copy of the structure whose unary scores carry
    the mask, so any structure whose scores have a ``unary`` block of shape
    (n_tokens, n_classes) takes part (a tree), or a ``state`` block of shape
    (n_tokens, n_labels) (a semi-Markov structure, with a mask of segment
    labels: :mod:`skcrf.learning.partial_segments`).

    Parameters
    ----------
    structure : object
    features : FeatureArrays of shape (n_tokens, n_features)
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    allowed : ndarray of bool of shape (n_tokens, n_classes)
    sequence_weights : ndarray of shape (n_sequences,) or None
    sequence_names : ndarray of int of shape (n_sequences,) or None
        What to call each sequence in an error (its index in the caller's ``y``).
    """

    def __init__(self, structure, features, offsets, allowed, sequence_weights=None,
                 sequence_names=None):
        n_sequences = offsets.shape[0] - 1
        if sequence_weights is None:
            sequence_weights = np.ones(n_sequences)
        self.groups = []
        for value, ids, part, part_offsets, rows in weight_groups(features, offsets,
                                                                  sequence_weights):
            mask = np.where(allowed[rows], 0.0, -np.inf)
            if isinstance(structure, ChainStructure):
                terms = (fused_difference_terms if structure.order == 1
                         and structure.edge_pairs is None else chain_difference_terms)
                self.groups.append((value, ids, None,
                                    terms(structure, part, part_offsets, mask)))
            elif isinstance(structure, DenseChainStructure):
                terms = (fused_dense_difference_terms if structure.takes_fused
                         else dense_difference_terms)
                self.groups.append((value, ids, None,
                                    terms(structure, part, part_offsets, mask)))
            elif hasattr(structure, "difference_terms"):  # a semi-Markov dense block
                self.groups.append((value, ids, None,
                                    structure.difference_terms(part, part_offsets, mask)))
            else:
                self.groups.append((value, ids, structure.expectation_terms(part, part_offsets),
                                    masked_structure(structure, mask).expectation_terms(
                                        part, part_offsets, fused=False)))
        self.n_parameters = structure.n_parameters
        self._check_feasible(sequence_names)

    def _check_feasible(self, sequence_names):
        """Raise naming the first sequence whose allowed labels admit no labelling."""
        w = np.zeros(self.n_parameters)
        for _, ids, free, constrained in self.groups:
            log_z, _ = constrained(w)
            # log Z - log Z_allowed is +inf (or log Z_allowed -inf) where nothing is allowed
            infeasible = np.flatnonzero(np.isposinf(log_z) if free is None
                                        else np.isneginf(log_z))
            if infeasible.shape[0]:
                q = ids[infeasible[0]]
                name = q if sequence_names is None else sequence_names[q]
                raise ValueError(
                    f"The labels of sequence {name} admit no labelling: no sequence of "
                    f"its allowed labels keeps to the allowed transitions (first and "
                    f"last labels included); {infeasible.shape[0]} such sequence(s). "
                    f"Widen its label sets or fix its labels.")

    def __call__(self, w):
        loss = 0.0
        grad = np.zeros(self.n_parameters)
        for value, _, free, constrained in self.groups:
            if free is None:  # the difference in one go
                difference, expected_difference = constrained(w)
                loss += value * difference.sum()
                grad += value * expected_difference
                continue
            log_z, expected = free(w)
            log_z_allowed, expected_allowed = constrained(w)
            loss += value * (log_z.sum() - log_z_allowed.sum())
            grad += value * (expected - expected_allowed)
        return loss, grad


def chain_difference_terms(structure, features, offsets, mask):
    """``w -> (log Z - log Z_allowed per sequence, E_p[Phi] - E_p[Phi | allowed])`` of a chain.

    The chain's expected statistics are linear in its posteriors, so the two
    forward-backward passes share one product of features and weights
    (:meth:`~skcrf.structures.chain.order1.ChainStructure.scores`) and one
    scatter back to the weights (of the difference of the marginals), where
    the free fused kernel and the masked unfused path would take two of each.
    """

    def terms(w):
        log_z, difference = posterior_difference(structure.scores(features, w), offsets, mask)
        return log_z, structure.expected_statistics(features, offsets, difference)

    return terms


def posterior_difference(scores, offsets, mask):
    """``(log Z - log Z_allowed, free posteriors - allowed ones)`` of chain ``scores``.

    ``scores.unary`` takes ``mask`` in place. The difference of log Z is
    ``inf`` for a sequence whose allowed labels admit no labelling.
    """
    free = chain_posteriors(scores, offsets, True)
    scores.unary += mask
    allowed = chain_posteriors(scores, offsets, True)
    with np.errstate(invalid="ignore"):  # -inf - -inf: a sequence nothing allows
        difference = ChainPosteriors(*(
            None if a is None else a - b for a, b in zip(
                (free.log_z, free.marginals, free.transition_counts, free.trigram_counts,
                 free.pair_marginals),
                (allowed.log_z, allowed.marginals, allowed.transition_counts,
                 allowed.trigram_counts, allowed.pair_marginals))))
    difference.log_z[np.isneginf(allowed.log_z)] = np.inf
    return difference.log_z, difference


def dense_difference_terms(structure, features, offsets, mask):
    """:func:`chain_difference_terms` of a structure with a dense block, chunk by chunk.

    As :meth:`~skcrf.structures.chain.dense.DenseChainStructure.expectation_terms`,
    one chunk of sequences at a time holds its unary scores (the sparse
    part's plus the dense block's), which both passes take, the constrained
    one with ``mask`` added; the dense weights' gradient is the difference of
    the marginals times the block. An order-1 chain scatters the difference
    of its posteriors once; a chain of order >= 2 or a tree (whose posteriors
    are no single object) scatters each pass's.
    """
    starts = chunk_starts(offsets)
    chunks = [(*sequence_range(features, offsets, a, b), int(offsets[a]), int(offsets[b]))
              for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]
    chain = structure.chain

    def terms(w):
        w_chain, W = structure._split(w)
        dense_weights = W.T.astype(features.dense.dtype)  # (n_dense, n_classes)
        log_z = []
        expected = np.zeros(chain.n_parameters)
        expected_dense = np.zeros((structure.n_classes, structure.n_dense))
        for part, part_offsets, lo, hi in chunks:
            scores = chain.scores(part, w_chain)
            scores.unary += part.dense @ dense_weights
            if isinstance(chain, ChainStructure):
                part_log_z, difference = posterior_difference(scores, part_offsets,
                                                              mask[lo:hi])
                expected += chain.expected_statistics(part, part_offsets, difference)
                marginals = difference.marginals
            else:
                part_log_z, marginals, part_expected = structure._posterior_terms(
                    part, part_offsets, scores)
                scores.unary += mask[lo:hi]
                log_z_allowed, marginals_allowed, expected_allowed = (
                    structure._posterior_terms(part, part_offsets, scores))
                with np.errstate(invalid="ignore"):  # -inf - -inf: nothing allowed
                    part_log_z = part_log_z - log_z_allowed
                part_log_z[np.isneginf(log_z_allowed)] = np.inf
                expected += part_expected - expected_allowed
                marginals = marginals - marginals_allowed
            log_z.append(part_log_z)
            expected_dense += dense_gradient(part.dense, marginals)
        return np.concatenate(log_z), structure._without_fixed_blocks(
            np.concatenate([expected, expected_dense.ravel()]))

    return terms


def fused_difference_terms(structure, features, offsets, mask):
    """:func:`chain_difference_terms` of an order-1 chain by the masked fused kernel.

    :class:`~skcrf.structures.chain._fused_masked.MaskedFusedChainTerms` runs
    both passes of each sequence batched and threaded as the fully labelled
    fit's kernel does; the few sequences it leaves (scaled arithmetic out of
    range, no feasible labelling) go through :func:`chain_difference_terms`.
    """
    fused = MaskedFusedChainTerms(features, offsets, structure.state_pairs,
                                  structure.n_classes, mask)

    def terms(w):
        blocks = structure.layout.views(w)
        difference, pairs, counts, start_counts, end_counts, redo = fused(
            blocks["state"], *structure.masked_transitions(blocks))
        expected = np.concatenate([pairs, counts.ravel(), start_counts, end_counts])
        if redo.any():
            ids = np.flatnonzero(redo)
            part, part_offsets, rows = take_sequences(features, offsets, ids)
            difference[ids], rest = chain_difference_terms(structure, part, part_offsets,
                                                           mask[rows])(w)
            expected += rest
        return difference, structure._without_fixed_blocks(expected)

    return terms


def fused_dense_difference_terms(structure, features, offsets, mask):
    """:func:`dense_difference_terms` of an order-1 chain by the masked fused kernel.

    The dense scores ``X_dense @ W.T`` enter the kernel as added unary
    scores, and come back as the difference of the marginals, which the
    dense weights' gradient multiplies by the block; the sequences the
    kernel leaves go through :func:`dense_difference_terms`.
    """
    chain = structure.chain
    fused = MaskedFusedChainTerms(features, offsets, chain.state_pairs, chain.n_classes, mask)
    products = DenseProducts(features.dense)
    rows = np.empty((features.dense.shape[0], chain.n_classes))  # kept between calls

    def terms(w):
        w_chain, W = structure._split(w)
        blocks = chain.layout.views(w_chain)
        difference, pairs, counts, start_counts, end_counts, redo = fused(
            blocks["state"], *chain.masked_transitions(blocks),
            dense_rows=products.scores(W, rows))
        ids = np.flatnonzero(redo)
        if ids.shape[0]:
            part, part_offsets, taken = take_sequences(features, offsets, ids)
            rows[taken] = 0.0  # still their scores: the kernel added nothing of them
        expected = np.concatenate([pairs, counts.ravel(), start_counts, end_counts,
                                   products.gradient(rows).ravel()])
        if ids.shape[0]:
            difference[ids], rest = dense_difference_terms(structure, part, part_offsets,
                                                           mask[taken])(w)
            expected += rest
        return difference, structure._without_fixed_blocks(expected)

    return terms


def masked_structure(structure, mask):
    """A shallow copy of ``structure`` whose scores add ``mask`` to the unary block.

    ``mask`` (n_tokens, n_classes) holds 0 or ``-inf`` (n_classes: the segment
    labels of a semi-Markov structure); the copy's
    :meth:`scores` must be called on the features of those tokens.
    """
    masked = copy.copy(structure)
    base_scores = structure.scores

    def scores(features, w):
        potentials = base_scores(features, w)
        # a chain's or a tree's unary block; a semi-Markov's token state block,
        # which every segment covering the token scores (skcrf.learning.partial_segments),
        # at order >= 2 that of its potentials over labels
        if hasattr(potentials, "unary"):
            potentials.unary += mask
        else:
            getattr(potentials, "labels", potentials).state += mask
        return potentials

    masked.scores = scores
    return masked


class PartialLabelObjective(_Objective):
    """The loss of a training set some of whose tokens are not labelled with one class.

    The fully labelled sequences go through
    :class:`~skcrf.learning.objective.NegativeLogLikelihood` exactly as in a
    fully labelled fit (the same fused kernels and gold statistics); those
    with constraints add the :class:`ConstrainedTerms`; those with no label
    at all (every token unknown) contribute nothing and are left out.

    Parameters
    ----------
    structure : object
    features : FeatureArrays
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    partial : PartialLabels
        See :class:`skcrf._estimators.partial_labels.PartialLabels`.
    l2 : float
    sequence_weights : ndarray of shape (n_sequences,) or None
    """

    def __init__(self, structure, features, offsets, partial, l2, sequence_weights=None):
        from .._estimators.partial_labels import CONSTRAINED, FULL

        self.structure = structure
        self.l2 = l2
        weights = None if sequence_weights is None else np.asarray(sequence_weights,
                                                                   dtype=np.float64)
        self.full = None
        full_ids = np.flatnonzero(partial.kinds == FULL)
        if full_ids.shape[0]:
            part, part_offsets, rows = take_sequences(features, offsets, full_ids)
            self.full = NegativeLogLikelihood(
                structure, part, part_offsets, partial.label_ids[rows], l2,
                sequence_weights=None if weights is None else weights[full_ids])
        self.constrained = None
        ids = np.flatnonzero(partial.kinds == CONSTRAINED)
        if ids.shape[0]:
            part, part_offsets, rows = take_sequences(features, offsets, ids)
            self.constrained = ConstrainedTerms(
                structure, part, part_offsets, partial.allowed[rows],
                None if weights is None else weights[ids], sequence_names=ids)

    @classmethod
    def of_parts(cls, structure, l2, full, constrained):
        """The objective of terms built elsewhere (a pruned lattice's, say).

        ``full`` returns ``(loss, gradient)`` of the fully labelled sequences
        with the L2 term, or is None; ``constrained`` returns the constrained
        sequences' ``(loss, gradient)`` without it, or is None.
        """
        return cls._of_parts(structure, l2, full=full, constrained=constrained)

    def __call__(self, w):
        """Return ``(loss, gradient)`` at ``w``; the loss is ``inf`` where either overflows."""
        if self.full is not None:
            loss, grad = self.full(w)
        else:
            loss, grad = 0.5 * self.l2 * (w @ w), self.l2 * w
        if self.constrained is not None and np.isfinite(loss):
            with np.errstate(over="ignore", invalid="ignore"):  # checked just below
                extra_loss, extra_grad = self.constrained(w)
                loss = loss + extra_loss
                grad = grad + extra_grad
            if not (np.isfinite(loss) and np.isfinite(grad).all()):
                return np.inf, grad
        return loss, grad
