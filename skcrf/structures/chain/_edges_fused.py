"""Fused training kernel of a chain with transition features.

Per sequence: the unary scores and the per-token transition scores
``T + sum_f x[t, f] V[f]`` into per-chunk scratch rows, forward-backward with
per-token transitions, then the marginals and pair marginals scattered into
the expected counts of the pairs. Training never holds the
(n_tokens, n_classes ** 2) arrays of transition scores and pair marginals that
the unfused path builds. Tested against that path on random problems.
"""

import numpy as np

from ...inference._runtime.batch import (N_CHUNKS, chunk_bounds, chunk_partials, chunk_totals,
                                         compiled, longest_sequence, run_chunks)
from ...inference.chain.edges import edge_workspace, log_space_edge_sequence, scaled_edge_sequence

#: Per-chunk partial sums of the expected pair counts, in float64 values: the
#: chunk count is this budget over the number of pairs (at least
#: _MIN_CHUNKS, for the threads to share, and at most N_CHUNKS).
_PAIR_BUDGET = 1 << 19
_MIN_CHUNKS = 4


@compiled()
def _pair_rows(data, indices, indptr, binary, pair_ptr, pair_labels, pair_weights, lo, hi,
               rows):
    """``rows[r] += sum of token lo + r's features' pair weights`` for r < hi - lo."""
    for r in range(hi - lo):
        for k in range(indptr[lo + r], indptr[lo + r + 1]):
            value = 1.0 if binary else data[k]
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                rows[r, pair_labels[p]] += value * pair_weights[p]


@compiled()
def _scatter_pairs(data, indices, indptr, binary, pair_ptr, pair_labels, lo, hi, first,
                   rows, expected):
    """``expected[p] += value * rows[r, label of p]`` for the tokens r >= first."""
    for r in range(first, hi - lo):
        for k in range(indptr[lo + r], indptr[lo + r + 1]):
            value = 1.0 if binary else data[k]
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                expected[p] += value * rows[r, pair_labels[p]]


def edge_nll_terms(data, indices, indptr, binary, state_ptr, state_labels, state_weights,
                   edge_ptr, edge_labels, edge_weights, transitions, start, end, offsets,
                   n_chunks):
    """log Z and the expected counts of every block, in one pass over the tokens.

    State pairs are (feature, class); edge pairs (feature, label pair
    ``a * n_classes + b``), in the layout of
    :class:`~skcrf.structures._parameters.StatePairs`. Each chunk of sequences
    sums its counts on its own and the chunks are added in order, so the
    result does not depend on the thread count.

    Returns
    -------
    log_z : (n_sequences,) float64
    expected_state : (n_state_pairs,) float64
    expected_edge : (n_edge_pairs,) float64
    transition_counts : (n_classes, n_classes) float64
    start_counts, end_counts : (n_classes,) float64
    """
    n_classes = transitions.shape[0]
    n_sequences = offsets.shape[0] - 1
    bounds = chunk_bounds(offsets, n_chunks)
    log_z = np.zeros(n_sequences)
    state_partial, edge_partial, chunk_counts, chunk_start, chunk_end = chunk_partials(
        n_chunks, state_labels.shape, edge_labels.shape, (n_classes, n_classes), (n_classes,),
        (n_classes,))
    features = (data, indices, indptr, binary)
    state = (state_ptr, state_labels, state_weights)
    edge = (edge_ptr, edge_labels, edge_weights)
    exact = np.zeros(n_sequences, np.bool_)
    sums = (log_z, state_partial, edge_partial, chunk_counts, chunk_start, chunk_end)
    run_chunks(_edge_nll_chunks, n_chunks, bounds, features, state, edge, transitions, start,
               end, offsets, exact, *sums)
    if exact.any():
        run_chunks(_exact_edge_nll_chunks, n_chunks, bounds, features, state, edge,
                   transitions, start, end, offsets, exact, *sums)

    return (log_z, *chunk_totals(state_partial, edge_partial, chunk_counts, chunk_start,
                                 chunk_end))


@compiled()
def _edge_nll_chunks(chunk_lo, chunk_hi, bounds, features, state, edge, transitions, start,
                     end, offsets, exact, log_z, state_partial, edge_partial, chunk_counts,
                     chunk_start, chunk_end):
    """log Z and the chunks' partial counts of :func:`edge_nll_terms`, by the scaled pass.

    A sequence the scaled pass cannot do is flagged in ``exact``, with nothing
    of it added, for :func:`_exact_edge_nll_chunks`.
    """
    n_classes = transitions.shape[0]
    for c in range(chunk_lo, chunk_hi):
        rows = _sequence_rows(max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1),
                              n_classes)
        unary, edges, marginals, pair_marginals, work = rows
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            n = hi - lo
            if n == 0:
                continue
            _sequence_scores(features, state, edge, transitions, lo, hi, unary, edges)
            # np.int64(0), not 0: a typed value, so that the callees compile once,
            # shared with forward_backward_edges (see inference._batch.compiled)
            lz = scaled_edge_sequence(unary, edges, start, end, np.int64(0), n, np.bool_(True),
                                      marginals, pair_marginals, work)
            if np.isnan(lz):
                exact[q] = True
                continue
            _add_edge_sequence(c, lo, hi, lz, features, state, edge, rows, log_z, q,
                               state_partial, edge_partial, chunk_counts, chunk_start,
                               chunk_end)


@compiled()
def _exact_edge_nll_chunks(chunk_lo, chunk_hi, bounds, features, state, edge, transitions,
                           start, end, offsets, exact, log_z, state_partial, edge_partial,
                           chunk_counts, chunk_start, chunk_end):
    """The sequences ``exact`` flags, by the exact log-space pass (added after the others)."""
    n_classes = transitions.shape[0]
    for c in range(chunk_lo, chunk_hi):
        if not exact[bounds[c]:bounds[c + 1]].any():
            continue
        rows = _sequence_rows(max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1),
                              n_classes)
        unary, edges, marginals, pair_marginals, work = rows
        for q in range(bounds[c], bounds[c + 1]):
            if not exact[q]:
                continue
            lo, hi = offsets[q], offsets[q + 1]
            _sequence_scores(features, state, edge, transitions, lo, hi, unary, edges)
            lz = log_space_edge_sequence(unary, edges, start, end, np.int64(0), hi - lo,
                                         np.bool_(True), marginals, pair_marginals, work)
            _add_edge_sequence(c, lo, hi, lz, features, state, edge, rows, log_z, q,
                               state_partial, edge_partial, chunk_counts, chunk_start,
                               chunk_end)


@compiled(inline=True)
def _sequence_rows(longest, n_classes):
    """A chunk's scratch: unary and edge scores, marginals, pair marginals, the workspace."""
    return (np.empty((longest, n_classes)), np.empty((longest, n_classes, n_classes)),
            np.empty((longest, n_classes)), np.empty((longest, n_classes, n_classes)),
            edge_workspace(longest, n_classes))


@compiled(inline=True)
def _sequence_scores(features, state, edge, transitions, lo, hi, unary, edges):
    """Unary and per-token transition scores of tokens lo..hi-1 into the scratch rows."""
    data, indices, indptr, binary = features
    state_ptr, state_labels, state_weights = state
    edge_ptr, edge_labels, edge_weights = edge
    n_classes = transitions.shape[0]
    for r in range(hi - lo):
        for a in range(n_classes):
            unary[r, a] = 0.0
            for b in range(n_classes):
                edges[r, a, b] = transitions[a, b]
    _pair_rows(data, indices, indptr, binary, state_ptr, state_labels, state_weights, lo, hi,
               unary)
    _pair_rows(data, indices, indptr, binary, edge_ptr, edge_labels, edge_weights, lo, hi,
               edges.reshape((edges.shape[0], n_classes * n_classes)))


@compiled(inline=True)
def _add_edge_sequence(c, lo, hi, lz, features, state, edge, rows, log_z, q, state_partial,
                       edge_partial, chunk_counts, chunk_start, chunk_end):
    """Record sequence q's log Z; add its expected counts to chunk c's sums if finite."""
    data, indices, indptr, binary = features
    state_ptr, state_labels, _ = state
    edge_ptr, edge_labels, _ = edge
    _, _, marginals, pair_marginals, _ = rows
    log_z[q] = lz
    if not np.isfinite(lz):
        return  # nothing was written; the loss is not finite anyway
    n = hi - lo
    n_classes = marginals.shape[1]
    for j in range(n_classes):
        chunk_start[c, j] += marginals[0, j]
        chunk_end[c, j] += marginals[n - 1, j]
    for r in range(1, n):
        for a in range(n_classes):
            for b in range(n_classes):
                chunk_counts[c, a, b] += pair_marginals[r, a, b]
    _scatter_pairs(data, indices, indptr, binary, state_ptr, state_labels, lo, hi,
                   np.int64(0), marginals, state_partial[c])
    _scatter_pairs(data, indices, indptr, binary, edge_ptr, edge_labels, lo, hi, np.int64(1),
                   pair_marginals.reshape((pair_marginals.shape[0], n_classes * n_classes)),
                   edge_partial[c])


def edge_chunk_count(offsets, n_pairs):
    """Number of sequence chunks of :func:`edge_nll_terms`: from the data alone."""
    n_sequences = offsets.shape[0] - 1
    by_memory = _PAIR_BUDGET // max(n_pairs, 1)
    return max(1, min(n_sequences, N_CHUNKS, max(_MIN_CHUNKS, by_memory)))
