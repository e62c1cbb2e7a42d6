"""The tree's fused training kernel: features x weights, belief propagation and scatter in one pass.

The tree counterpart of :mod:`._chain_fused`, sharing its per-sequence unary
scores, its scatter of marginals into expected pair counts, its chunk layout
and its memory bounds: training never holds a (n_tokens, n_classes) array.
Tested against the unfused path (potentials,
:func:`~skcrf.inference.tree.passes.tree_forward_backward`, scatter).
"""

import numpy as np

from ...inference._runtime.batch import (chunk_bounds, chunk_partials, chunk_totals, compiled,
                                         longest_sequence, run_chunks)
from ...inference._potentials import shifted_exp_by_column_and_row, tree_scaled_potentials
from ...inference.tree.passes import (exact_tree_sequence, read_only, scaled_tree_sequence,
                                      tree_workspace)
from ..chain._fused import FusedChainTerms
from .._fused_features import (clear_chunk_sums, hot_state_rows, scatter_expected,
                              sequence_unary, summed_pair_partials)


def tree_nll_terms(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                   cold_values, binary, max_entries, pair_ptr, pair_labels, pair_weights,
                   transitions, root, parents, offsets, hot_features, merged_parts, partial,
                   hot_partial):
    """Everything the tree CRF's loss needs from the features, in one pass over the tokens.

    Arguments as :func:`~._chain_fused.nll_terms`, with ``root`` scores
    instead of start and end, and each token's ``parents`` (within its
    sequence, -1 for a root).

    Returns
    -------
    log_z : (n_sequences,) float64
    expected_pairs : (n_pairs,) float64
    link_counts : (n_classes, n_classes) float64
        Expected number of links of each (parent label, child label).
    root_counts : (n_classes,) float64
        Expected number of roots of each label.
    """
    n_classes = transitions.shape[0]
    parents, offsets = read_only(parents, offsets)
    n_sequences = offsets.shape[0] - 1
    n_chunks = partial.shape[0]
    bounds = chunk_bounds(offsets, n_chunks)
    hot_state = hot_state_rows(hot_features, merged_parts, pair_ptr, pair_labels, pair_weights,
                               n_classes)
    scaled = tree_scaled_potentials(transitions, root)
    log_z = np.zeros(n_sequences)
    chunk_counts, chunk_root = chunk_partials(n_chunks, (n_classes, n_classes), (n_classes,))
    features = (values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                binary)
    exact = np.zeros(n_sequences, np.bool_)
    sums = (log_z, partial, hot_partial, chunk_counts, chunk_root)
    run_chunks(_tree_nll_chunks, n_chunks, bounds, features, hot_state, pair_weights,
               transitions, root, parents, offsets, scaled, exact, *sums)
    if exact.any():
        run_chunks(_exact_tree_nll_chunks, n_chunks, bounds, features, hot_state,
                   pair_weights, transitions, root, parents, offsets,
                   shifted_exp_by_column_and_row(transitions), exact, *sums)

    expected_pairs = summed_pair_partials(partial, hot_partial, hot_features, merged_parts,
                                          pair_ptr, pair_labels)
    return (log_z, expected_pairs, *chunk_totals(chunk_counts, chunk_root))


@compiled()
def _tree_nll_chunks(chunk_lo, chunk_hi, bounds, features, hot_state, pair_weights,
                     transitions, root, parents, offsets, scaled, exact, log_z, partial,
                     hot_partial, chunk_counts, chunk_root):
    """log Z and the chunks' partial sums of :func:`tree_nll_terms`, by the scaled pass.

    Clears the chunks' partial sums first. A tree the scaled pass gives up on
    is flagged in ``exact``, with nothing of it added.
    """
    n_classes = transitions.shape[0]
    for c in range(chunk_lo, chunk_hi):
        clear_chunk_sums(c, partial, hot_partial)
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        unary = np.empty((longest, n_classes))
        marginals = np.empty((longest, n_classes))
        work = tree_workspace(longest, n_classes, np.bool_(True))
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if hi == lo:
                continue
            _tree_unary(features, hot_state, pair_weights, lo, hi, unary)
            # typed like the prediction kernel's arguments (see _batch.compiled),
            # so that both share one compiled scaled_tree_sequence
            lz = scaled_tree_sequence(unary, parents[lo:hi], np.int64(0), hi - lo, scaled,
                                      np.bool_(True), marginals, chunk_counts[c], work)
            if np.isnan(lz):
                exact[q] = True
                continue
            _add_tree(c, lo, hi, lz, features, parents, marginals, log_z, q, partial,
                      hot_partial, chunk_root)


@compiled()
def _exact_tree_nll_chunks(chunk_lo, chunk_hi, bounds, features, hot_state, pair_weights,
                           transitions, root, parents, offsets, shifted, exact, log_z,
                           partial, hot_partial, chunk_counts, chunk_root):
    """The trees ``exact`` flags, by the exact log-space pass (added after the others)."""
    n_classes = transitions.shape[0]
    for c in range(chunk_lo, chunk_hi):
        if not exact[bounds[c]:bounds[c + 1]].any():
            continue
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        unary = np.empty((longest, n_classes))
        marginals = np.empty((longest, n_classes))
        work = tree_workspace(longest, n_classes, np.bool_(True))
        for q in range(bounds[c], bounds[c + 1]):
            if not exact[q]:
                continue
            lo, hi = offsets[q], offsets[q + 1]
            _tree_unary(features, hot_state, pair_weights, lo, hi, unary)
            lz = exact_tree_sequence(unary, transitions, root, parents[lo:hi], np.int64(0),
                                     hi - lo, shifted, np.bool_(True), marginals,
                                     chunk_counts[c], work)
            _add_tree(c, lo, hi, lz, features, parents, marginals, log_z, q, partial,
                      hot_partial, chunk_root)


@compiled(inline=True)
def _tree_unary(features, hot_state, pair_weights, lo, hi, unary):
    """The unary scores of tokens lo..hi-1 into ``unary``."""
    values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values, binary = features
    sequence_unary(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                   binary, hot_state, pair_weights, lo, hi, unary)


@compiled(inline=True)
def _add_tree(c, lo, hi, lz, features, parents, marginals, log_z, q, partial, hot_partial,
              chunk_root):
    """Record tree q's log Z; add its root marginals and pair counts to chunk c's sums."""
    values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values, binary = features
    log_z[q] = lz
    if not np.isfinite(lz):
        return  # no marginals were written (the loss is not finite anyway)
    for v in range(hi - lo):
        if parents[lo + v] < 0:
            for j in range(marginals.shape[1]):
                chunk_root[c, j] += marginals[v, j]
    scatter_expected(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                     binary, lo, hi, marginals, hot_partial[c], partial[c])


class FusedTreeTerms(FusedChainTerms):
    """:func:`tree_nll_terms` bound to one training set (its trees in ``features.parents``)."""

    def __call__(self, pair_weights, transitions, root):
        """(log_z, expected_pairs, link_counts, root_counts) at the weights."""
        return tree_nll_terms(*self.kernel_args(), self.pairs.feature_ptr, self.pairs.labels,
                              np.ascontiguousarray(pair_weights),
                              np.ascontiguousarray(transitions), np.ascontiguousarray(root),
                              self.features.parents, self.offsets, self.hot_features,
                              self.merged_parts, *self.workspace())
