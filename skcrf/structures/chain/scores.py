"""Potentials of a batch of chains and the inference over them: marginals, paths, scores.

:class:`ChainScores` holds the log-space potentials a :class:`~.order1.ChainStructure`
makes from features and weights (or a fitted model from its coefficients);
the functions here run the order-1, per-token-transition and order-2 kernels
over them.
"""

from dataclasses import dataclass

import numpy as np

from ...features._kernels import pair_products
from ...features.arrays import csr_times_dense
from ...inference.chain.order1 import forward_backward, viterbi
from ...inference.chain.order2 import forward_backward2, viterbi2
from ...inference.chain.edges import forward_backward_edges, viterbi_edges
from ...inference.chain.nbest import nbest_paths, nbest_paths2
from .._parameters import StatePairs


@dataclass
class ChainScores:
    """Log-space potentials of a batch of chains.

    Attributes
    ----------
    unary : ndarray of shape (n_tokens, n_classes)
    transitions : ndarray of shape (n_classes, n_classes)
    start, end : ndarray of shape (n_classes,)
    trigram : ndarray of shape (n_classes, n_classes, n_classes) or None
        Order-2 weights [y_{i-2}, y_{i-1}, y_i].
    edges : ndarray of shape (n_tokens, n_classes, n_classes) or None
        Per-token transition scores (transitions included) when transition
        features weight the transitions; ``edges[i]`` scores the labels of
        tokens i - 1 and i.
    """

    unary: np.ndarray
    transitions: np.ndarray
    start: np.ndarray
    end: np.ndarray
    trigram: np.ndarray = None
    edges: np.ndarray = None

    @classmethod
    def of_coefficients(cls, features, coef, transitions, start, end, trigram=None,
                        edge_coef=None):
        """Potentials of a fitted chain's dense state weights ``coef`` (n_classes, n_features).

        ``edge_coef`` is a CSR matrix (n_features, n_classes ** 2) of
        transition-feature weights, or None.
        """
        unary = csr_times_dense(features, coef.T)
        edges = None
        if edge_coef is not None:
            n_classes = transitions.shape[0]
            pairs = StatePairs(edge_coef.indptr, edge_coef.indices, n_classes * n_classes)
            edges = _edge_scores(features, pairs, edge_coef.data, transitions)
        return cls(unary, transitions, start, end, trigram, edges)

    def fix_labels(self, fixed_ids):
        """Leave only the fixed label possible at each fixed token, in place.

        ``fixed_ids`` holds a class id per token, -1 for a free token; the
        other labels of a fixed token get a ``-inf`` unary score.
        """
        pin_labels(self.unary, fixed_ids)


def pin_labels(unary, fixed_ids):
    """Give every label but the fixed one a ``-inf`` unary score, in place.

    ``fixed_ids`` holds a class id per token, -1 for a free token.
    """
    rows = np.flatnonzero(fixed_ids >= 0)
    kept = unary[rows, fixed_ids[rows]]
    unary[rows] = -np.inf
    unary[rows, fixed_ids[rows]] = kept


@dataclass
class ChainPosteriors:
    """What forward-backward returns for a batch of chains.

    Attributes
    ----------
    log_z : ndarray of shape (n_sequences,)
    marginals : ndarray of shape (n_tokens, n_classes)
    transition_counts : ndarray of shape (n_classes, n_classes) or None
        Expected number of each label pair, summed over the batch.
    trigram_counts : ndarray of shape (n_classes, n_classes, n_classes) or None
    pair_marginals : ndarray of shape (n_tokens, n_classes, n_classes) or None
        Per-token label-pair marginals (only with per-token edges).
    """

    log_z: np.ndarray
    marginals: np.ndarray
    transition_counts: np.ndarray = None
    trigram_counts: np.ndarray = None
    pair_marginals: np.ndarray = None


def chain_posteriors(scores, offsets, with_counts=False):
    """Forward-backward over :class:`ChainScores`, by the kernel their shape needs."""
    if scores.edges is not None:
        log_z, marginals, pairs = forward_backward_edges(
            scores.unary, scores.edges, scores.start, scores.end, offsets, with_counts)
        if not with_counts:
            return ChainPosteriors(log_z, marginals)
        return ChainPosteriors(log_z, marginals, pairs.sum(axis=0), pair_marginals=pairs)
    if scores.trigram is not None:
        log_z, marginals, pair_counts, trigram_counts = forward_backward2(
            scores.unary, scores.transitions, scores.trigram, scores.start, scores.end,
            offsets, with_counts)
        if not with_counts:
            return ChainPosteriors(log_z, marginals)
        return ChainPosteriors(log_z, marginals, pair_counts, trigram_counts)
    log_z, marginals, counts = forward_backward(scores.unary, scores.transitions,
                                                scores.start, scores.end, offsets,
                                                with_counts)
    return ChainPosteriors(log_z, marginals, counts if with_counts else None)


def chain_decode(scores, offsets):
    """Viterbi label ids (n_tokens,) over :class:`ChainScores`."""
    if scores.edges is not None:
        return viterbi_edges(scores.unary, scores.edges, scores.start, scores.end, offsets)
    if scores.trigram is not None:
        return viterbi2(scores.unary, scores.transitions, scores.trigram, scores.start,
                        scores.end, offsets)
    return viterbi(scores.unary, scores.transitions, scores.start, scores.end, offsets)


def chain_nbest(scores, offsets, n):
    """The ``n`` best label paths over :class:`ChainScores`: (paths, scores, counts).

    See :func:`~skcrf.inference.chain.nbest.nbest_paths`.
    """
    if scores.edges is not None:
        return nbest_paths(scores.unary, scores.edges, 1, scores.start, scores.end, offsets, n)
    if scores.trigram is not None:
        return nbest_paths2(scores.unary, scores.transitions, scores.trigram, scores.start,
                            scores.end, offsets, n)
    return nbest_paths(scores.unary, scores.transitions[np.newaxis], 0, scores.start,
                       scores.end, offsets, n)


def chain_labelling_scores(scores, offsets, label_ids):
    """The log score of one given labelling of each sequence, ``-inf`` if it is forbidden.

    Parameters
    ----------
    scores : ChainScores
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    label_ids : ndarray of int64 of shape (n_tokens,)
        The labelling, one class id per token of every sequence.

    Returns
    -------
    ndarray of shape (n_sequences,)
        0 for an empty sequence.
    """
    n_sequences = offsets.shape[0] - 1
    n_tokens = label_ids.shape[0]
    owner = np.repeat(np.arange(n_sequences), np.diff(offsets))
    # bincount of no tokens would be int64: add into floats
    total = np.zeros(n_sequences)
    total += np.bincount(owner, weights=scores.unary[np.arange(n_tokens), label_ids],
                         minlength=n_sequences)
    pair_ids = edge_label_ids(label_ids, offsets, scores.transitions.shape[0])
    to = np.flatnonzero(pair_ids >= 0)
    before = label_ids[to - 1]
    if scores.edges is not None:
        moves = scores.edges[to, before, label_ids[to]]
    else:
        moves = scores.transitions[before, label_ids[to]]
    total += np.bincount(owner[to], weights=moves, minlength=n_sequences)
    if scores.trigram is not None:
        third = to[pair_ids[to - 1] >= 0]
        total += np.bincount(owner[third], minlength=n_sequences, weights=scores.trigram[
            label_ids[third - 2], label_ids[third - 1], label_ids[third]])
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    total[nonempty] += (scores.start[label_ids[offsets[nonempty]]]
                        + scores.end[label_ids[offsets[nonempty + 1] - 1]])
    return total


def _edge_scores(features, edge_pairs, edge_weights, transitions):
    """(n_tokens, C, C) per-token transition scores: T plus the transition features' weights."""
    n_classes = transitions.shape[0]
    edges = pair_products(*features.kernel_args(), edge_pairs.feature_ptr, edge_pairs.labels,
                          np.ascontiguousarray(edge_weights), n_classes * n_classes)
    edges = edges.reshape(-1, n_classes, n_classes)
    edges += transitions
    return edges


def edge_label_ids(label_ids, offsets, n_classes):
    """Label-pair id ``y[i-1] * C + y[i]`` of every token, -1 on the first of a sequence.

    Also -1 where either label is -1 (a token without one known label).
    """
    pair_ids = np.full(label_ids.shape[0], -1, dtype=np.int64)
    follows = label_ids >= 0
    follows[1:] &= label_ids[:-1] >= 0
    follows[offsets[:-1][np.diff(offsets) > 0]] = False
    to = np.flatnonzero(follows)
    pair_ids[to] = label_ids[to - 1] * n_classes + label_ids[to]
    return pair_ids
