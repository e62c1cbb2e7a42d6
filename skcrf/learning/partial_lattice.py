"""Partial labels on a pruned lattice: chains of order 2 or more with ``prune_threshold``.

The pruned objective (:mod:`skcrf.structures.patterns.pruned`) sums over
the labellings of each token's candidate labels. With partial labels, the
candidates are those the order-1 pruner's marginals keep, every label of a
token's set (as the gold label of a labelled token is kept), and the
pruner's best labelling consistent with the allowed labels, so that every
constrained sequence keeps one consistent labelling inside its lattice. An
unknown token keeps the labels its marginals keep: keeping all of them
would undo the pruning where most of the data is.

A constrained sequence's term is then ``log Z_lattice - log Z_lattice∩allowed``:
two passes of the lattice kernel, the second over the candidates its
allowed labels keep.
"""

import numpy as np

from ..features.arrays import take_sequences
from ..structures.chain.order1 import chain_decode, chain_posteriors
from ..structures.patterns.pruned import CandidateLattice, LatticeTerms, candidates_of_mask
from .objective import NegativeLogLikelihood, weighted_gold_statistics


def partial_candidates(marginals, pruner_scores, offsets, partial, threshold):
    """The (n_tokens, n_classes) mask of each token's candidate labels, partial labels given.

    ``pruner_scores`` are the order-1 pruner's :class:`ChainScores` of the
    same tokens (modified: their unary block takes the allowed-label mask).
    """
    keep = np.asarray(marginals) >= threshold  # NaN (a failed pruner) keeps none of these
    in_set = ~partial.allowed.all(axis=1)  # a labelled token or one with a set
    keep[in_set] |= partial.allowed[in_set]
    pruner_scores.unary += np.where(partial.allowed, 0.0, -np.inf)
    keep[np.arange(keep.shape[0]), chain_decode(pruner_scores, offsets)] = True
    return keep


class LatticeDifference:
    """``w -> (sum_q v_q (log Z_q - log Z_allowed_q), its gradient)`` over two lattices.

    Parameters
    ----------
    free, allowed : callable
        ``w -> (log_z, expected statistics)`` over the lattice of the
        candidates, and over that of the candidates each token's allowed
        labels keep, of the same tokens (:func:`lattice_terms`).
    """

    def __init__(self, free, allowed):
        self.free = free
        self.allowed = allowed

    def __call__(self, w):
        log_z, expected = self.free(w)
        log_z_allowed, expected_allowed = self.allowed(w)
        return log_z.sum() - log_z_allowed.sum(), expected - expected_allowed


def lattice_terms(structure, features, offsets, keep, sequence_weights=None):
    """``w -> (log_z, expected statistics)`` over the candidates ``keep`` (n_tokens, C).

    A :class:`~skcrf.structures.patterns.pruned.LatticeTerms` of ``structure``
    (a :class:`~skcrf.structures.patterns.chain.PatternChainStructure`).
    """
    lattice = CandidateLattice(offsets, *candidates_of_mask(keep), structure.patterns)
    return LatticeTerms(structure, features, lattice, sequence_weights)


def pruned_partial_objective(structure, features, offsets, partial, keep, l2,
                             sequence_weights=None, terms=lattice_terms):
    """The pruned objective of partially labelled data, candidates ``keep`` (n_tokens, C).

    Fully labelled sequences take the pruned objective of a fully labelled
    fit; constrained ones a :class:`LatticeDifference`; all-unknown ones
    nothing. ``terms`` makes the terms over some candidates, as
    :func:`lattice_terms` (a structure with a dense block passes its own).
    Returns a :class:`~.partial.PartialLabelObjective`.
    """
    from .._estimators.partial_labels import CONSTRAINED, FULL
    from .partial import PartialLabelObjective

    weights = None if sequence_weights is None else np.asarray(sequence_weights, dtype=float)
    full = constrained = None
    ids = np.flatnonzero(partial.kinds == FULL)
    if ids.shape[0]:
        part, part_offsets, rows = take_sequences(features, offsets, ids)
        part_weights = None if weights is None else weights[ids]
        label_ids = partial.label_ids[rows]
        empirical = (structure.gold_statistics(part, part_offsets, label_ids)
                     if part_weights is None else weighted_gold_statistics(
                         structure, part, part_offsets, label_ids, part_weights))
        full = NegativeLogLikelihood.of_terms(
            structure, empirical, terms(structure, part, part_offsets, keep[rows],
                                        part_weights), l2)
    ids = np.flatnonzero(partial.kinds == CONSTRAINED)
    if ids.shape[0]:
        part, part_offsets, rows = take_sequences(features, offsets, ids)
        part_weights = None if weights is None else weights[ids]
        constrained = LatticeDifference(
            terms(structure, part, part_offsets, keep[rows], part_weights),
            terms(structure, part, part_offsets, keep[rows] & partial.allowed[rows],
                  part_weights))
    return PartialLabelObjective.of_parts(structure, l2, full, constrained)


def pruner_candidates(lower, w1, features, offsets, partial, threshold):
    """:func:`partial_candidates` of the order-1 ``lower`` chain at its weights ``w1``."""
    scores = lower.scores(features, w1)
    marginals = chain_posteriors(scores, offsets).marginals
    return partial_candidates(marginals, scores, offsets, partial, threshold)
