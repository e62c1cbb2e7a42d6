"""The fused training kernel of a pruned lattice: features x weights, lattice pass, scatter.

As the other fused kernels (:mod:`._chain_fused`, :mod:`._pattern_fused`,
whose feature layout and per-sequence helpers this one reuses), training
holds no (n_tokens, n_classes) array: per sequence, the unary rows are
built from the features, the lattice pass
(:func:`~skcrf.inference.patterns.lattice.lattice_sequence`) turns them into
marginals and counts, and the marginals are scattered into the chunk's
partial sums of the state weights' expectations. Tested against
:meth:`~.pruned_chain.CandidateLattice.posteriors` and the scatter.
"""

import numpy as np

from ...inference._runtime.batch import chunk_bounds, compiled, longest_sequence, run_chunks
from ...inference.patterns.lattice import exp_pattern_weights, lattice_sequence
from ..chain._fused import FusedChainTerms
from .._fused_features import (hot_state_rows, scatter_expected, sequence_unary,
                              summed_pair_partials)


class FusedLatticeTerms:
    """The fused kernel of one training set over its lattice.

    ``(pair weights, transitions, pattern weights, start, end) -> (log_z,
    expected_pairs, transition_counts, pattern_counts, start_counts,
    end_counts)``, each sequence's terms times its weight.

    Parameters
    ----------
    features : FeatureArrays
    state_pairs : StatePairs
    lattice : CandidateLattice
        Of the same tokens as ``features`` (its ``offsets``).
    sequence_weights : ndarray of shape (n_sequences,), default=None
    """

    def __init__(self, features, state_pairs, lattice, sequence_weights=None):
        self.lattice = lattice
        offsets = lattice.offsets
        self.layout = FusedChainTerms(features, offsets, state_pairs, lattice.n_classes)
        self.pairs = state_pairs
        n_sequences = offsets.shape[0] - 1
        self.sequence_weights = np.ascontiguousarray(
            np.ones(n_sequences) if sequence_weights is None else sequence_weights,
            dtype=np.float64)
        self._nodes = [np.empty(lattice.n_nodes) for _ in range(4)]

    def __call__(self, pair_weights, transitions, pattern_weights, start, end):
        layout = self.layout
        lattice = self.lattice
        offsets = lattice.offsets
        n_classes = lattice.n_classes
        partial, hot_partial = layout.workspace()
        n_chunks = partial.shape[0]
        bounds = chunk_bounds(offsets, n_chunks)
        pair_weights = np.ascontiguousarray(pair_weights)
        values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values, binary, \
            _ = layout.kernel_args()
        hot_state = hot_state_rows(layout.hot_features, layout.merged_parts,
                                   self.pairs.feature_ptr, self.pairs.labels, pair_weights,
                                   n_classes)
        log_z = np.empty(offsets.shape[0] - 1)
        chunk_transitions = np.empty((n_chunks, n_classes, n_classes))
        chunk_patterns = np.empty((n_chunks, pattern_weights.shape[0]))
        chunk_start = np.empty((n_chunks, n_classes))
        chunk_end = np.empty((n_chunks, n_classes))
        score, alpha, beta, top = self._nodes
        exp_patterns, fast = exp_pattern_weights(pattern_weights)
        run_chunks(_lattice_chunks, n_chunks, bounds, values, entries, hot_ptr, cold_ptr,
                   cold_pairs, cold_labels, cold_values, binary, pair_weights, hot_state,
                   np.ascontiguousarray(transitions), np.ascontiguousarray(pattern_weights),
                   exp_patterns, np.bool_(fast), np.ascontiguousarray(start),
                   np.ascontiguousarray(end), offsets, np.int64(lattice.order),
                   lattice.cand_ptr, lattice.node_ptr, lattice.node_label, lattice.node_prev,
                   lattice.node_patterns, lattice.edge_ptr, lattice.edge_pattern,
                   self.sequence_weights, log_z, partial, hot_partial, chunk_transitions,
                   chunk_patterns, chunk_start, chunk_end, score, alpha, beta, top)
        expected_pairs = summed_pair_partials(partial, hot_partial, layout.hot_features,
                                              layout.merged_parts, self.pairs.feature_ptr,
                                              self.pairs.labels)
        return (log_z, expected_pairs, summed_in_chunk_order(chunk_transitions),
                summed_in_chunk_order(chunk_patterns), summed_in_chunk_order(chunk_start),
                summed_in_chunk_order(chunk_end))


def summed_in_chunk_order(chunk_rows):
    """The chunks' rows summed in chunk order (the same bits for any thread count)."""
    total = np.zeros(chunk_rows.shape[1:])
    for row in chunk_rows:
        total += row
    return total


@compiled()
def _lattice_chunks(chunk_lo, chunk_hi, bounds, values, entries, hot_ptr, cold_ptr,
                    cold_pairs, cold_labels, cold_values, binary, pair_weights, hot_state,
                    transitions, pattern_weights, exp_patterns, fast, start, end, offsets,
                    order, cand_ptr,
                    node_ptr, node_label, node_prev, node_patterns, edge_ptr, edge_pattern,
                    sequence_weights, log_z, partial, hot_partial, chunk_transitions,
                    chunk_patterns, chunk_start, chunk_end, score, alpha, beta, top):
    """The chunks' log Z (times the weights) and partial sums, sequence by sequence."""
    n_classes = hot_state.shape[1]
    for c in range(chunk_lo, chunk_hi):
        partial[c] = 0.0
        hot_partial[c] = 0.0
        chunk_transitions[c] = 0.0
        chunk_patterns[c] = 0.0
        chunk_start[c] = 0.0
        chunk_end[c] = 0.0
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        unary = np.empty((longest, n_classes))
        marginals = np.empty((longest, n_classes))
        scale = np.empty(longest)
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            log_z[q] = 0.0
            if hi == lo:
                continue
            sequence_unary(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                           cold_values, binary, hot_state, pair_weights, lo, hi, unary)
            for r in range(hi - lo):
                for j in range(n_classes):
                    marginals[r, j] = 0.0
            z = lattice_sequence(unary, lo, transitions, pattern_weights, exp_patterns, fast,
                                 start, end, lo, hi, order, cand_ptr, node_ptr, node_label,
                                 node_prev, node_patterns, edge_ptr, edge_pattern,
                                 sequence_weights[q], marginals, chunk_transitions[c],
                                 chunk_patterns[c], chunk_start[c], chunk_end[c], score, alpha,
                                 beta, top, scale)
            log_z[q] = sequence_weights[q] * z
            if np.isfinite(z):
                scatter_expected(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                                 cold_values, binary, lo, hi, marginals, hot_partial[c],
                                 partial[c])
