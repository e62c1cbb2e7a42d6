"""Training a chain of order 2 or more on a pruned lattice of candidate labels.

Exact inference over the pattern automaton (:mod:`.pattern_chain`) visits
every label pair and every kept pattern at every token. Most of those
labellings are hopeless: an order-1 model already gives them a negligible
probability. Following Müller, Schmid & Schütze (2013, "Efficient
higher-order CRFs for morphological tagging"), the training objective here
keeps at each token only the labels whose order-1 marginal reaches a
threshold, plus the gold label (so that the gold labelling stays in the
lattice and the loss stays a negative log-probability), and sums over the
labellings of those candidates alone
(:mod:`skcrf.inference.patterns.lattice`). Its cost per token is the
lattice's edges, a handful once pruned, instead of ``C ** 2`` plus the
patterns.

The weights are those of :class:`~.pattern_chain.PatternChainStructure`:
only the objective they are trained on changes. The probability the pruned
labels lose (under the order-1 model, below the threshold for each label of
a token) is the error of its gradient. The estimator prunes the same way
when it predicts (:mod:`skcrf._estimators.pruning`).
"""

import numpy as np

from ...inference._runtime.batch import chunk_bounds, default_n_chunks, run_chunks
from ...inference.patterns.lattice import (exp_pattern_weights, fill_lattice, lattice_chunks,
                                           lattice_sizes)
from ._lattice_fused import FusedLatticeTerms, summed_in_chunk_order

#: The most nodes plus edges a pruned lattice may have: every evaluation
#: visits each of them; a node holds its label, the label before and
#: ``order - 2`` pattern indices (int64), and four float64 of workspace, an
#: edge one pattern index.
MAX_LATTICE_SIZE = 1 << 26


def candidate_labels(marginals, label_ids, threshold):
    """Each token's candidates: the labels of marginal ``>= threshold``, and its gold label.

    Returns ``(cand_ptr, cand_label)``: token ``g``'s candidates, in
    increasing order, are ``cand_label[cand_ptr[g]:cand_ptr[g + 1]]``.
    """
    keep = np.asarray(marginals) >= threshold  # NaN (a failed model) keeps only the gold
    keep[np.arange(label_ids.shape[0]), label_ids] = True
    return candidates_of_mask(keep)


def candidates_of_mask(keep):
    """``(cand_ptr, cand_label)`` of a boolean (n_tokens, n_classes) mask of the labels kept."""
    tokens, labels = np.nonzero(keep)
    cand_ptr = np.zeros(keep.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(tokens, minlength=keep.shape[0]), out=cand_ptr[1:])
    return cand_ptr, labels.astype(np.int64)


class CandidateLattice:
    """The lattice of a training set's candidate labels, for a chain of ``patterns.order``.

    Parameters
    ----------
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    cand_ptr, cand_label : ndarray of int64
        Each token's candidate labels, as :func:`candidate_labels` returns them.
    patterns : LabelPatterns
        The patterns that carry a weight.

    Raises
    ------
    ValueError
        If the lattice has more than :data:`MAX_LATTICE_SIZE` nodes and
        edges, naming the sequence and token with the most.
    """

    def __init__(self, offsets, cand_ptr, cand_label, patterns):
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.cand_ptr = cand_ptr
        self.order = order = patterns.order
        self.n_classes = patterns.n_classes
        n_tokens = cand_ptr.shape[0] - 1
        node_count = np.empty(n_tokens, dtype=np.int64)
        edge_count = np.empty(n_tokens, dtype=np.int64)
        if np.any(np.diff(cand_ptr) < 0) or cand_ptr[-1] != cand_label.shape[0]:
            raise ValueError("cand_ptr must be non-decreasing and end at len(cand_label)")
        # counts stop at cap (one past the limit), so that no product or sum overflows int64
        # and every count past the limit still reads as one
        cap = MAX_LATTICE_SIZE + 1
        lattice_sizes(self.offsets, cand_ptr, np.int64(order), np.int64(cap), node_count,
                      edge_count)
        size = min(int(node_count.sum()) + int(edge_count.sum()), cap)
        if size > MAX_LATTICE_SIZE:
            widest = int(np.argmax(node_count))
            q = int(np.searchsorted(self.offsets, widest, side="right")) - 1
            nodes = int(node_count[widest])
            raise ValueError(
                f"the pruned lattice of order {order} has more nodes and edges than the "
                f"{MAX_LATTICE_SIZE} skcrf affords; the widest is at token "
                f"{widest - int(self.offsets[q])} of sequence {q} "
                f"({'more than ' + str(MAX_LATTICE_SIZE) if nodes >= cap else nodes} "
                f"nodes). Raise prune_threshold, or lower the order.")
        self.node_ptr = np.zeros(n_tokens + 1, dtype=np.int64)
        np.cumsum(node_count, out=self.node_ptr[1:])
        self.edge_ptr = np.zeros(n_tokens + 1, dtype=np.int64)
        np.cumsum(edge_count, out=self.edge_ptr[1:])
        n_nodes = int(self.node_ptr[-1])
        self.node_label = np.empty(n_nodes, dtype=np.int64)
        self.node_prev = np.empty(n_nodes, dtype=np.int64)
        self.node_patterns = np.empty((n_nodes, order - 2), dtype=np.int64)
        self.edge_pattern = np.empty(int(self.edge_ptr[-1]), dtype=np.int64)
        codes, length_ptr = _pattern_codes(patterns)
        fill_lattice(self.offsets, cand_ptr, cand_label, np.int64(order),
                     np.int64(patterns.n_classes), codes, length_ptr, self.node_ptr,
                     self.edge_ptr, self.node_label, self.node_prev, self.node_patterns,
                     self.edge_pattern)

    @classmethod
    def of_marginals(cls, offsets, marginals, label_ids, threshold, patterns):
        """The lattice of the labels whose ``marginals`` reach ``threshold``, and the gold ones."""
        cand_ptr, cand_label = candidate_labels(marginals, label_ids, threshold)
        return cls(offsets, cand_ptr, cand_label, patterns)

    @property
    def n_nodes(self):
        return self.node_label.shape[0]

    @property
    def n_edges(self):
        return self.edge_pattern.shape[0]

    def posteriors(self, unary, transitions, pattern_weights, start, end,
                   sequence_weights=None):
        """Log Z and expectations over the lattice, each sequence's times its weight.

        Returns ``(log_z, marginals, transition_counts, pattern_counts,
        start_counts, end_counts)``: ``log_z`` (n_sequences,), the token
        marginals (n_tokens, n_classes), zero outside the candidates, and
        the expected counts of the label pairs, patterns, first and last
        labels. A sequence whose log Z is not finite adds nothing.
        """
        offsets = self.offsets
        n_sequences = offsets.shape[0] - 1
        n_classes = unary.shape[1]
        if sequence_weights is None:
            sequence_weights = np.ones(n_sequences)
        n_chunks = int(default_n_chunks(offsets))
        bounds = chunk_bounds(offsets, n_chunks)
        log_z = np.empty(n_sequences)
        marginals = np.empty_like(unary)
        chunk_transitions = np.empty((n_chunks, n_classes, n_classes))
        chunk_patterns = np.empty((n_chunks, pattern_weights.shape[0]))
        chunk_start = np.empty((n_chunks, n_classes))
        chunk_end = np.empty((n_chunks, n_classes))
        score, alpha, beta, top = (np.empty(self.n_nodes) for _ in range(4))
        exp_patterns, fast = exp_pattern_weights(pattern_weights)
        run_chunks(lattice_chunks, n_chunks, bounds, unary, transitions,
                   np.ascontiguousarray(pattern_weights), exp_patterns, np.bool_(fast), start,
                   end, offsets,
                   np.int64(self.order), self.cand_ptr, self.node_ptr, self.node_label,
                   self.node_prev, self.node_patterns, self.edge_ptr, self.edge_pattern,
                   np.ascontiguousarray(sequence_weights, dtype=np.float64), log_z, marginals,
                   chunk_transitions, chunk_patterns, chunk_start, chunk_end, score, alpha,
                   beta, top)
        return (log_z, marginals, summed_in_chunk_order(chunk_transitions),
                summed_in_chunk_order(chunk_patterns), summed_in_chunk_order(chunk_start),
                summed_in_chunk_order(chunk_end))


def _pattern_codes(patterns):
    """All patterns' codes in index order, and where each length's start (see ``fill_lattice``)."""
    length_ptr = np.zeros(patterns.order + 3, dtype=np.int64)
    for n in patterns.lengths:
        length_ptr[n] = patterns.starts[n]
    length_ptr[patterns.order + 2] = patterns.n_patterns
    codes = [patterns.codes[n] for n in patterns.lengths]
    flat = np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64)
    return np.ascontiguousarray(flat, dtype=np.int64), length_ptr


class LatticeTerms:
    """``w -> (log_z, expected statistics)`` of a :class:`~.pattern_chain.PatternChainStructure`
    over a :class:`CandidateLattice`: the pruned objective's terms, by the fused
    kernel (:mod:`._lattice_fused`).

    Parameters
    ----------
    structure : PatternChainStructure
    features : FeatureArrays
    lattice : CandidateLattice
        Of the same tokens as ``features``.
    sequence_weights : ndarray of shape (n_sequences,), default=None
        Each sequence's weight in the sums; None weighs every sequence 1.
    """

    def __init__(self, structure, features, lattice, sequence_weights=None):
        self.structure = structure
        self.fused = FusedLatticeTerms(features, structure.state_pairs, lattice,
                                       sequence_weights)

    def __call__(self, w):
        structure = self.structure
        blocks = structure.layout.views(w)
        transitions, start, end = structure.masked_transitions(blocks)
        log_z, expected_pairs, transition_counts, pattern_counts, start_counts, end_counts = (
            self.fused(blocks["state"], transitions, blocks["patterns"], start, end))
        expected = structure.layout.zeros()
        named = structure.layout.views(expected)
        named["state"][:] = expected_pairs
        named["transitions"][:] = transition_counts
        named["patterns"][:] = pattern_counts
        named["start"][:] = start_counts
        named["end"][:] = end_counts
        return log_z, expected
