"""The fused order-1 kernel of partially labelled sequences: log Z - log Z_allowed in one pass.

A sequence some of whose tokens may take any of several labels is trained on
``log Z - log Z_allowed`` (:mod:`skcrf.learning.partial`), whose gradient is
the difference of the free and the constrained expected statistics. Both
are linear in the marginals, so per sequence this kernel builds the
emission rows once (from the features and weights, as
:func:`._fused.nll_terms` does), runs the scaled forward-backward on them,
then on them with the disallowed labels zeroed, and scatters the difference
of the two marginals once: no (n_tokens, n_classes) array, the sequences
batched in chunks and threaded like the fully labelled kernel's.

The lanes of :mod:`~skcrf.inference.chain._order1_lanes` do not serve here:
their precision checks refuse the exact zeros a mask puts in the emission
rows, where the one-sequence pass tracks which labels a path can reach. A
sequence either pass cannot do in scaled arithmetic is left to the caller
(``redo``), who runs the log-space route for it. Tested against the unfused
masked path and against enumeration (tests/learning/test_partial_fused.py).
"""

import numpy as np

from ...inference._potentials import chain_scaled_potentials
from ...inference._runtime.batch import chunk_bounds, compiled, run_chunks
from ...inference.chain.order1 import scaled_from_emission
from .._fused_features import (hot_state_rows, product_factors, sequence_emission,
                               summed_pair_partials)
from ._fused import (FusedChainTerms, _add_sequence, _chunk_workspace, add_dense_factors,
                     store_marginals, token_unary)


class MaskedFusedChainTerms(FusedChainTerms):
    """``(log Z - log Z_allowed, E[Phi] - E[Phi | allowed])`` of some sequences, fused.

    Parameters
    ----------
    features : FeatureArrays of shape (n_tokens, n_features)
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    pairs : the structure's state pairs
    n_classes : int
    log_mask : ndarray of shape (n_tokens, n_classes)
        0 where the token may take the label, ``-inf`` where not.
    """

    def __init__(self, features, offsets, pairs, n_classes, log_mask):
        super().__init__(features, offsets, pairs, n_classes)
        self.log_mask = np.ascontiguousarray(log_mask, dtype=np.float64)

    def __call__(self, pair_weights, transitions, start, end, dense_rows=None):
        """Return ``(difference, expected_pairs, transition_counts, start, end, redo)``.

        The sums are of the differences (free minus constrained) over the
        sequences done here; ``redo`` flags those left to the caller, whose
        ``difference`` entry is meaningless and which add nothing to the sums.
        ``dense_rows`` (see :func:`._fused.nll_terms`) adds its rows to the
        unary scores and takes the difference of the marginals of each
        sequence done here (a sequence left to the caller keeps its rows).
        """
        pair_weights = np.ascontiguousarray(pair_weights)
        transitions = np.ascontiguousarray(transitions)
        start = np.ascontiguousarray(start)
        end = np.ascontiguousarray(end)
        n_classes = self.n_classes
        n_sequences = self.offsets.shape[0] - 1
        bounds = chunk_bounds(self.offsets, self.n_chunks)
        partial, hot_partial = self.workspace()
        hot_state = hot_state_rows(self.hot_features, self.merged_parts, self.pairs.feature_ptr,
                                   self.pairs.labels, pair_weights, n_classes)
        values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values, binary, \
            max_entries = self.kernel_args()
        features = (values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                    binary)
        by_products, exp_hot, exp_pairs = product_factors(binary, max_entries, pair_weights,
                                                          hot_state, self.merged_parts)
        if dense_rows is None:
            dense_rows = np.empty((0, n_classes))
        difference = np.zeros(n_sequences)
        chunk_counts = np.zeros((self.n_chunks, n_classes, n_classes))
        chunk_start = np.zeros((self.n_chunks, n_classes))
        chunk_end = np.zeros((self.n_chunks, n_classes))
        redo = np.ones(n_sequences, np.bool_)
        run_chunks(_masked_chunks, self.n_chunks, bounds, self.offsets, features,
                   np.bool_(by_products), exp_hot, exp_pairs, hot_state, pair_weights,
                   dense_rows, self.log_mask, transitions, start, end,
                   chain_scaled_potentials(transitions, start, end), redo, difference,
                   partial, hot_partial, chunk_counts, chunk_start, chunk_end)
        expected_pairs = summed_pair_partials(partial, hot_partial, self.hot_features,
                                              self.merged_parts, self.pairs.feature_ptr,
                                              self.pairs.labels)
        return (difference, expected_pairs, chunk_counts.sum(axis=0), chunk_start.sum(axis=0),
                chunk_end.sum(axis=0), redo)


@compiled(inline=True)
def _exp_rows(unary, n, emission):
    """``exp`` of unary rows 0..n-1, each shifted to max 1; the sum of the shifts (NaN if
    a row's maximum is not finite)."""
    log_scale = 0.0
    for r in range(n):
        top = unary[r, 0]
        for j in range(1, unary.shape[1]):
            top = max(top, unary[r, j])
        if not np.isfinite(top):
            return np.nan
        for j in range(unary.shape[1]):
            emission[r, j] = np.exp(unary[r, j] - top)
        log_scale += top
    return log_scale


@compiled(inline=True)
def _masked_rows(base, log_mask, lo, n, emission):
    """``base`` rows with the disallowed labels zeroed, each rescaled to max 1, into
    ``emission``; the sum of the logarithms of the scales (NaN if a row allows nothing)."""
    log_scale = 0.0
    for r in range(n):
        allowed = log_mask[lo + r]
        top = 0.0
        for j in range(base.shape[1]):
            v = base[r, j] if allowed[j] == 0.0 else 0.0
            emission[r, j] = v
            top = max(top, v)
        if not top > 0.0:
            return np.nan
        scale = 1.0 / top
        for j in range(base.shape[1]):
            emission[r, j] *= scale
        log_scale += np.log(top)
    return log_scale


@compiled()
def _masked_chunks(chunk_lo, chunk_hi, bounds, offsets, features, by_products, exp_hot,
                   exp_pairs, hot_state, pair_weights, dense_rows, log_mask, transitions, start,
                   end, scaled, redo, difference, partial, hot_partial, chunk_counts,
                   chunk_start, chunk_end):
    """The free and the constrained scaled pass of each of the chunks' sequences.

    Clears the chunks' partial sums first. A sequence either pass fails
    (precision, or no feasible labelling) keeps ``redo[q]`` True and adds
    nothing; the others get ``redo[q]`` False, their difference of log
    partition functions, and add the differences of their marginals and
    transition counts.
    """
    values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values, binary = features
    n_classes = transitions.shape[0]
    (trans_max, exp_trans, exp_trans_t, start_max, exp_start, end_max, exp_end,
     any_forbidden) = scaled
    for c in range(chunk_lo, chunk_hi):
        longest, marginals, workspace = _chunk_workspace(c, offsets, bounds, partial,
                                                         hot_partial, n_classes)
        alpha, beta, emission, norm, reach, scratch = workspace
        unary = np.empty((longest, n_classes))
        base = np.empty((longest, n_classes))
        free = np.empty((longest, n_classes))
        free_counts = np.empty((n_classes, n_classes))
        allowed_counts = np.empty((n_classes, n_classes))
        for q in range(bounds[c], bounds[c + 1]):
            lo = offsets[q]
            hi = offsets[q + 1]
            n = hi - lo
            if n == 0:
                redo[q] = False
                continue
            if by_products:
                log_scale = sequence_emission(entries, hot_ptr, cold_ptr, cold_pairs,
                                              cold_labels, exp_hot, exp_pairs, lo, hi, base)
                log_scale += add_dense_factors(dense_rows, lo, hi, base)
                if np.isnan(log_scale):
                    continue
            else:
                token_unary(features, hot_state, pair_weights, dense_rows, lo, hi, unary)
                log_scale = _exp_rows(unary, n, base)
                if np.isnan(log_scale):
                    continue
            shift = start_max + end_max + (n - 1) * trans_max
            emission[:n] = base[:n]
            free_counts[:] = 0.0
            # the emission rows stand in for the unary scores where the pass asks
            # whether a score is -inf: none is
            free_log_z = scaled_from_emission(
                emission, transitions, start, end, np.int64(0), n, exp_trans, exp_trans_t,
                exp_start, exp_end, any_forbidden, log_scale + shift, emission, alpha, beta,
                norm, reach, np.bool_(True), free, free_counts, scratch)
            if not np.isfinite(free_log_z):
                continue
            masked_scale = _masked_rows(base, log_mask, lo, n, emission)
            if np.isnan(masked_scale):
                continue
            allowed_counts[:] = 0.0
            # the mask's -inf are the scores the pass tracks reachability through
            allowed_log_z = scaled_from_emission(
                log_mask[lo:hi], transitions, start, end, np.int64(0), n, exp_trans,
                exp_trans_t, exp_start, exp_end, np.bool_(True), log_scale + masked_scale + shift, emission, alpha,
                beta, norm, reach, np.bool_(True), marginals, allowed_counts, scratch)
            if not np.isfinite(allowed_log_z):
                continue
            redo[q] = False
            difference[q] = free_log_z - allowed_log_z
            for r in range(n):
                for j in range(n_classes):
                    free[r, j] -= marginals[r, j]
            counts = chunk_counts[c]
            for i in range(n_classes):
                for j in range(n_classes):
                    counts[i, j] += free_counts[i, j] - allowed_counts[i, j]
            store_marginals(dense_rows, lo, hi, free, np.bool_(True))
            _add_sequence(c, lo, hi, free, features, partial, hot_partial, chunk_start,
                          chunk_end)
