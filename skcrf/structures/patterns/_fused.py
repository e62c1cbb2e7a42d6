"""The fused training kernel of chains of order 2 or more: features x weights, inference, scatter.

As the order-1 fused kernel (:mod:`._chain_fused`, whose feature layout and
per-sequence helpers this one reuses), training holds no (n_tokens,
n_classes) array: per chunk, the sequences of each length run side by side
through the scaled pass over the pattern automaton
(:func:`~skcrf.inference.patterns._scaled.scaled_lanes`), their emission
rows built from the features (products of exponentiated weights where the
features are binary and the weights moderate, else sums then
exponentials), and their marginals scattered into the chunk's partial sums
of the state weights' expectations. The few sequences the scaled pass gives
up on are redone by a second kernel, run only when some sequence needs it,
through the exact log-space pass. Tested against the unfused path
(:meth:`PatternChainStructure.scores`, :func:`~skcrf.inference.patterns.automaton.forward_backward_patterns`
and the scatter) on random problems.
"""

import numpy as np

from ...inference._runtime.batch import (chunk_bounds, chunk_totals, compiled, longest_sequence,
                                         run_chunks)
from ...inference._logspace import exp_underflowed, shifted_exp_rows
from ...inference.patterns._exact import exact_sequence, exact_workspace
from ...inference.patterns.automaton import (group_lanes, lane_buffers, lane_rows, run_group,
                                            scaled_potentials)
from ..chain._fused import FusedChainTerms
from .._fused_features import (hot_state_rows, product_factors, scatter_expected,
                              sequence_emission, sequence_unary, summed_pair_partials)


class FusedPatternTerms:
    """The fused kernel of one training set: ``(arc weights) -> (log_z, expected counts)``.

    Parameters
    ----------
    features : FeatureArrays
    offsets : ndarray of int64
    state_pairs : StatePairs
    automaton : PatternAutomaton
    """

    def __init__(self, features, offsets, state_pairs, automaton):
        self.offsets = offsets
        self.automaton = automaton
        self.layout = FusedChainTerms(features, offsets, state_pairs, automaton.n_classes)
        self.pairs = state_pairs
        self.graph = automaton.kernel_graph()
        self._counts = None

    def __call__(self, pair_weights, arc_weight, own, start, end, exact_tables):
        """``(log_z, expected_pairs, arc_counts, start_counts, end_counts)`` at the weights.

        ``arc_weight`` and ``own`` are the moves' log weights and their own
        parts (:meth:`~.pattern_automaton.PatternAutomaton.arc_weights`);
        ``exact_tables`` is what :func:`~skcrf.inference.patterns.automaton.forward_backward_patterns`
        takes.
        """
        layout = self.layout
        automaton = self.automaton
        n_classes = automaton.n_classes
        offsets = self.offsets
        n_sequences = offsets.shape[0] - 1
        partial, hot_partial = layout.workspace()
        n_chunks = partial.shape[0]
        if self._counts is None or self._counts.shape != (n_chunks, automaton.n_arcs):
            self._counts = np.empty((n_chunks, automaton.n_arcs))
        chunk_counts = self._counts
        bounds = chunk_bounds(offsets, n_chunks)
        pair_weights = np.ascontiguousarray(pair_weights)
        values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values, binary, \
            max_entries = layout.kernel_args()
        hot_state = hot_state_rows(layout.hot_features, layout.merged_parts,
                                   self.pairs.feature_ptr, self.pairs.labels, pair_weights,
                                   n_classes)
        by_products, exp_hot, exp_pairs = product_factors(binary, max_entries, pair_weights,
                                                          hot_state, layout.merged_parts)
        potentials, log_shift, move_shift, fast = scaled_potentials(
            arc_weight, own, self.graph, start, end)
        log_z = np.zeros(n_sequences)
        chunk_start = np.zeros((n_chunks, n_classes))
        chunk_end = np.zeros((n_chunks, n_classes))
        exact = np.diff(offsets) > 0
        if fast:
            exact[:] = False
        n_slots = automaton.n_slots
        run_chunks(_fused_chunks, n_chunks, bounds, values, entries, hot_ptr, cold_ptr,
                   cold_pairs, cold_labels, cold_values, binary, pair_weights, offsets,
                   hot_state, by_products, exp_hot, exp_pairs, self.graph, n_slots, potentials,
                   log_shift, move_shift, np.bool_(fast), log_z, partial, hot_partial,
                   chunk_counts, chunk_start, chunk_end, exact)
        if exact.any():
            moves, arc_dest, arc_parent, state_label = exact_tables()
            run_chunks(_fused_exact_chunks, n_chunks, bounds, values, entries, hot_ptr,
                       cold_ptr, cold_pairs, cold_labels, cold_values, binary, pair_weights,
                       offsets, hot_state, moves, arc_weight, arc_dest, arc_parent, state_label,
                       start, end, log_z, partial, hot_partial, chunk_counts, chunk_start,
                       chunk_end, exact)
        expected_pairs = summed_pair_partials(partial, hot_partial, layout.hot_features,
                                              layout.merged_parts, self.pairs.feature_ptr,
                                              self.pairs.labels)
        return (log_z, expected_pairs, *chunk_totals(chunk_counts, chunk_start, chunk_end))


@compiled()
def _scatter_sequence(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                      cold_values, binary, lo, hi, rows, hot_partial, partial, starts, ends):
    """A sequence's marginals (``rows``) into the chunk's partial sums."""
    n_classes = rows.shape[1]
    for j in range(n_classes):
        starts[j] += rows[0, j]
        ends[j] += rows[hi - lo - 1, j]
    scatter_expected(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                     binary, lo, hi, rows, hot_partial, partial)


@compiled()
def _fused_chunks(chunk_lo, chunk_hi, bounds, values, entries, hot_ptr, cold_ptr, cold_pairs,
                  cold_labels, cold_values, binary, pair_weights, offsets, hot_state,
                  by_products, exp_hot, exp_pairs, graph, n_slots, potentials, log_shift,
                  move_shift, fast, log_z, partial, hot_partial, chunk_counts, chunk_start,
                  chunk_end, exact):
    """The chunks' partial sums from the scaled pass; ``exact`` flags what it leaves."""
    n_classes = hot_state.shape[1]
    n_arcs = chunk_counts.shape[1]
    for c in range(chunk_lo, chunk_hi):
        chunk_partial = partial[c]
        chunk_hot = hot_partial[c]
        counts = chunk_counts[c]
        starts = chunk_start[c]
        ends = chunk_end[c]
        chunk_partial[:] = 0.0
        chunk_hot[:] = 0.0
        counts[:] = 0.0
        if not fast:
            continue
        (order, group_ends, work, emission, lane_marginals, shift, lane_log_z,
         rows) = lane_buffers(offsets, bounds[c], bounds[c + 1], graph, n_classes, n_slots,
                              n_arcs, np.bool_(True))
        for g in range(group_ends.shape[0]):
            first, m, n, lanes = group_lanes(offsets, order, group_ends, g, emission, n_classes)
            for lane in range(m):
                lo = offsets[order[first + lane]]
                base = log_shift + (n - 1) * move_shift
                if by_products:
                    shift[lane] = base + sequence_emission(
                        entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, exp_hot,
                        exp_pairs, lo, lo + n, rows)
                else:
                    sequence_unary(values, entries, hot_ptr, cold_ptr, cold_pairs,
                                   cold_labels, cold_values, binary, hot_state,
                                   pair_weights, lo, lo + n, rows)
                    shift[lane], _ = shifted_exp_rows(rows, np.int64(0), n, rows, base,
                                                      False)
                if exp_underflowed(rows, np.int64(0), n, rows):
                    # a label's emission underflowed: the exact pass scores the sequence
                    shift[lane] = np.nan
                    rows[:n] = 1.0
                for r in range(n):
                    for j in range(n_classes):
                        lanes[r, j, lane] = rows[r, j]
            margins = run_group(lanes, n, m, shift, graph, potentials, np.bool_(True),
                                lane_marginals, counts, lane_log_z, work, order, first,
                                offsets, exact, log_z)
            for lane in range(m):
                q = order[first + lane]
                if exact[q]:
                    continue
                lane_rows(margins, lane, rows, np.int64(0))
                _scatter_sequence(values, entries, hot_ptr, cold_ptr, cold_pairs,
                                  cold_labels, cold_values, binary, offsets[q], offsets[q] + n,
                                  rows, chunk_hot, chunk_partial, starts, ends)


@compiled()
def _fused_exact_chunks(chunk_lo, chunk_hi, bounds, values, entries, hot_ptr, cold_ptr,
                        cold_pairs, cold_labels, cold_values, binary, pair_weights, offsets,
                        hot_state, moves, arc_weight, arc_dest, arc_parent, state_label, start,
                        end, log_z, partial, hot_partial, chunk_counts, chunk_start, chunk_end,
                        exact):
    """The exact log-space pass of the chunks' sequences that ``exact`` flags, added in."""
    n_states, n_classes = moves.shape
    for c in range(chunk_lo, chunk_hi):
        if not exact[bounds[c]:bounds[c + 1]].any():
            continue
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        work = exact_workspace(longest, n_states, n_classes, arc_weight.shape[0])
        unary = np.empty((longest, n_classes))
        marginals = np.empty((longest, n_classes))
        for q in range(bounds[c], bounds[c + 1]):
            if not exact[q]:
                continue
            lo, hi = offsets[q], offsets[q + 1]
            sequence_unary(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                           cold_values, binary, hot_state, pair_weights, lo, hi, unary)
            lz = exact_sequence(unary, np.int64(0), hi - lo, moves, arc_weight, arc_dest,
                                arc_parent, state_label, start, end, np.bool_(True), marginals,
                                np.int64(0), chunk_counts[c], work)
            log_z[q] = lz
            if np.isfinite(lz):
                _scatter_sequence(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                                  cold_values, binary, lo, hi, marginals, hot_partial[c],
                                  partial[c], chunk_start[c], chunk_end[c])
