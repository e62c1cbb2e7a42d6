"""The semi-Markov CRF's fused training kernel: features x weights, inference and scatter in one pass.

The segment counterpart of :mod:`._chain_fused`, built on its per-sequence
helpers and its layout of the token features (frequent features as dense
rows, merged pairs of them, the others as pair streams): per sequence, the
token scores of the three roles (every token, first token, last token of a
segment: ``3 * n_labels`` columns) and the span scores of its candidate
segments (read from the features of segments as they come, a CSR row per
candidate, each feature's few (feature, label) pairs in turn: no layout of
their own, which would cost pointers per candidate) are summed into
per-chunk scratch rows, the scaled semi-Markov forward-backward of
:mod:`~skcrf.inference.semimarkov._scaled` turns them into role and span
marginals (the exact log-space pass where the scaled one gives up), and those
are scattered into the chunk's expected counts. Training never holds the
(n_tokens, 3 * n_labels) token scores, the (n_tokens, N_ROLES, n_labels)
role marginals or the (n_tokens, L, n_labels) span scores and marginals of
the unfused path. Tested against that path on random problems.
"""

import numpy as np

from ...inference._runtime.batch import (chunk_bounds, chunk_partials, chunk_totals, compiled,
                                         longest_sequence, run_chunks)
from ...inference.semimarkov._scaled import (FACTOR_CAP, exp_factors, norm_floor,
                                            scaled_factor_posteriors,
                                            scaled_sequence_posteriors, scaled_workspace)
from ...inference.semimarkov._roles import COVERED, FIRST, LAST, N_ROLES
from ...inference.semimarkov.passes import _sequence_posteriors, exact_workspace, longest_segments
from ..chain._fused import FusedChainTerms
from .._fused_features import (exp_slot_rows, hot_state_rows, scatter_expected, sequence_unary,
                              summed_pair_partials)

#: The roles whose marginals the token weights' role labels read, in their order
#: (``TOKEN_ROLES`` of :mod:`.semimarkov`: state, first, last).
_WEIGHTED_ROLES = np.array([COVERED, FIRST, LAST], dtype=np.int64)

#: With binary features and every weight magnitude times the most entries of a
#: token (or segment) row below this, the exponentiated scores are products of
#: exponentiated weights, which no product of a row can take out of float64's
#: normal range (as the chain's kernel does).
PRODUCT_EXPONENT_BOUND = 600.0


class FusedSemiMarkovTerms:
    """The fused loss terms of a semi-Markov structure, bound to one training set.

    Parameters
    ----------
    features : FeatureArrays
        The token features, with ``segments`` when ``segment_pairs`` is given.
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    token_pairs : StatePairs
        (feature, role label) pairs, role labels in ``[0, 3 * n_labels)``.
    segment_pairs : StatePairs or None
        (segment feature, label) pairs.
    n_labels : int
    """

    def __init__(self, features, offsets, token_pairs, segment_pairs, n_labels):
        self.offsets = offsets
        self.n_labels = n_labels
        self.tokens = FusedChainTerms(features, offsets, token_pairs, 3 * n_labels)
        self.n_chunks = self.tokens.n_chunks
        self.segment_pairs = segment_pairs
        self.segments = features.segments if segment_pairs is not None else None
        self.span_length = 0 if segment_pairs is None else int(features.segment_length)
        self.span_max_entries = 0
        self._span_partial = None
        if segment_pairs is not None:
            self.span_max_entries = int(np.diff(self.segments.indptr).max(initial=0))

    def _span_args(self, token_args, segment_weights):
        """(data, indices, indptr, binary, pair_ptr, pair_labels, weights) of the segment
        features; empty arrays of the same types without them (one compiled kernel)."""
        if self.segments is None:
            empty = np.zeros(0)
            index = token_args[1][:0]
            return (empty, index, np.zeros(1, np.int64), np.bool_(True),
                    np.zeros(1, np.int32), np.zeros(0, np.int32), empty)
        data, indices, indptr, binary = self.segments.kernel_args()
        pairs = self.segment_pairs
        return (data, indices, indptr, np.bool_(binary), pairs.feature_ptr, pairs.labels,
                np.ascontiguousarray(segment_weights))

    def __call__(self, token_weights, segment_weights, length, transitions, start, end):
        """``(log_z, expected_tokens, expected_segments, length_counts, transition_counts,
        start_counts, end_counts)`` at the weights; ``expected_segments`` is empty
        without segment features."""
        C = self.n_labels
        tokens = self.tokens
        token_weights = np.ascontiguousarray(token_weights)
        token_hot = hot_state_rows(tokens.hot_features, tokens.merged_parts,
                                   tokens.pairs.feature_ptr, tokens.pairs.labels,
                                   token_weights, 3 * C)
        token_partial, token_hot_partial = tokens.workspace()
        token_args = tokens.kernel_args()
        span_args = self._span_args(token_args, segment_weights)
        n_segment_pairs = span_args[5].shape[0]
        if self._span_partial is None or self._span_partial.shape[1] != n_segment_pairs:
            # kept between calls, as the token partial sums (see FusedChainTerms)
            self._span_partial = np.empty((self.n_chunks, n_segment_pairs))
        span_partial = self._span_partial
        length = np.ascontiguousarray(length)
        transitions = np.ascontiguousarray(transitions)
        start = np.ascontiguousarray(start)
        end = np.ascontiguousarray(end)
        max_length = length.shape[1]
        offsets = self.offsets
        n_chunks = self.n_chunks
        bounds = chunk_bounds(offsets, n_chunks)
        longest = longest_segments(length)
        scalable, exp_length, exp_transitions, exp_start, exp_end = exp_factors(
            length, transitions, start, end)
        log_z = np.zeros(offsets.shape[0] - 1)
        chunk_lengths, chunk_transitions, chunk_start, chunk_end = chunk_partials(
            n_chunks, length.shape, transitions.shape, start.shape, end.shape)
        scores = (*token_args, token_hot, token_weights, *span_args,
                  np.bool_(self.segments is not None), np.int64(self.span_length),
                  _WEIGHTED_ROLES)
        products = self._product_factors(token_hot, token_weights, span_args)
        partials = (token_partial, token_hot_partial, span_partial, chunk_lengths,
                    chunk_transitions, chunk_start, chunk_end)
        exact = np.zeros(offsets.shape[0] - 1, np.bool_)
        run_chunks(_scaled_nll_chunks, n_chunks, bounds, offsets, *scores, *products, length,
                   transitions, start, end, longest, scalable, exp_length, exp_transitions,
                   exp_start, exp_end, norm_floor(max_length), log_z, exact, *partials)
        if exact.any():
            # the sequences whose numbers left the scaled pass's range: in log space
            run_chunks(_exact_nll_chunks, n_chunks, bounds, offsets, *scores, length,
                       transitions, start, end, longest, log_z, exact, *partials)

        expected_tokens = summed_pair_partials(token_partial, token_hot_partial,
                                               tokens.hot_features, tokens.merged_parts,
                                               tokens.pairs.feature_ptr, tokens.pairs.labels)
        return (log_z, expected_tokens, *chunk_totals(span_partial, chunk_lengths,
                                                      chunk_transitions, chunk_start, chunk_end))

    def _product_factors(self, token_hot, token_weights, span_args):
        """``(by_products, exp rows and pairs of the tokens, exp pairs of the segments)``.

        With binary features and moderate weights (:data:`PRODUCT_EXPONENT_BOUND`)
        the kernel multiplies these exponentials instead of exponentiating every
        token's and segment's scores; otherwise they are empty and unused.
        """
        tokens = self.tokens
        segment_weights = span_args[6]
        binary = tokens.features.binary and bool(span_args[3])
        largest = max(np.abs(token_weights).max(initial=0.0),
                      np.abs(segment_weights).max(initial=0.0))
        most = max(tokens.max_entries, self.span_max_entries)
        # NaN weights fail the test: the other route then reports them
        by_products = bool(binary and largest * most < PRODUCT_EXPONENT_BOUND)
        if not by_products:
            return (np.bool_(False), token_hot[:0], token_weights[:0], segment_weights[:0])
        return (np.bool_(True), exp_slot_rows(token_hot, tokens.merged_parts),
                np.exp(token_weights), np.exp(segment_weights))


@compiled()
def _row_products(entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, exp_hot, exp_pairs,
                  row_index, out):
    """``out[:] = exp(scores of row row_index)`` as the product of its weights' exponentials."""
    for j in range(out.shape[0]):
        out[j] = 1.0
    for k in range(hot_ptr[row_index], hot_ptr[row_index + 1]):
        hot = exp_hot[entries[k]]
        for j in range(out.shape[0]):
            out[j] *= hot[j]
    for i in range(cold_ptr[row_index], cold_ptr[row_index + 1]):
        out[cold_labels[i]] *= exp_pairs[cold_pairs[i]]


# the features of segments, as the kernels take them (see _span_args)
@compiled()
def _span_rows(data, indices, indptr, binary, pair_ptr, pair_labels, pair_weights, first_row,
               n_rows, rows):
    """``rows[r] = sum of row first_row + r's features' pair weights``, for r < n_rows."""
    for r in range(n_rows):
        row = rows[r]
        for j in range(row.shape[0]):
            row[j] = 0.0
        for k in range(indptr[first_row + r], indptr[first_row + r + 1]):
            value = 1.0 if binary else data[k]
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                row[pair_labels[p]] += value * pair_weights[p]


@compiled()
def _scatter_span_rows(data, indices, indptr, binary, pair_ptr, pair_labels, first_row, n_rows,
                       rows, expected):
    """``expected[p] += value * rows[r, label of p]`` over rows first_row + r, r < n_rows."""
    for r in range(n_rows):
        for k in range(indptr[first_row + r], indptr[first_row + r + 1]):
            value = 1.0 if binary else data[k]
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                expected[p] += value * rows[r, pair_labels[p]]


@compiled()
def _product_token_factors(entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, exp_hot,
                           exp_pairs, span_indices, span_indptr, span_pair_ptr,
                           span_pair_labels, exp_span_pairs, with_spans, span_length, lo, hi,
                           products, workspace):
    """The scaled pass's factors of tokens lo..hi-1, as products (see :func:`token_factors`).

    ``products`` is scratch of (at least) hi - lo rows of the token roles'
    width. Returns the log shift of the state factors, or NaN when a first,
    last or span factor exceeds FACTOR_CAP. Binary features only.
    """
    tokens, _, _, blocked, _, _, esp, _ = workspace
    es, ef, el = tokens[0], tokens[2], tokens[3]
    C = es.shape[1]
    n = hi - lo
    log_shift = 0.0
    for y in range(C):
        blocked[0, y] = 0
    for r in range(n):
        row = products[r]
        _row_products(entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, exp_hot, exp_pairs,
                      lo + r, row)
        top = row[0]
        for y in range(1, C):
            top = max(top, row[y])
        log_shift += np.log(top)
        scale = 1.0 / top
        for y in range(C):
            es[r, y] = row[y] * scale
            ef[r, y] = row[C + y]
            el[r, y] = row[2 * C + y]
            if ef[r, y] > FACTOR_CAP or el[r, y] > FACTOR_CAP:
                return np.nan
            blocked[r + 1, y] = 0
    if with_spans:
        for r in range(n):
            for d in range(min(span_length, n - r)):
                factors = esp[r, d]
                for y in range(C):
                    factors[y] = 1.0
                segment = (lo + r) * span_length + d
                for k in range(span_indptr[segment], span_indptr[segment + 1]):
                    col = span_indices[k]
                    for p in range(span_pair_ptr[col], span_pair_ptr[col + 1]):
                        factors[span_pair_labels[p]] *= exp_span_pairs[p]
                for y in range(C):
                    if factors[y] > FACTOR_CAP:
                        return np.nan
    return log_shift


@compiled()
def _chunk_scratch(rows, n_labels, n_roles, span_length, with_spans):
    """Scratch rows for the sequences of a chunk, none longer than ``rows - 1`` tokens."""
    span_rows = (rows - 1) * span_length if with_spans else 0
    return (np.empty((rows, n_roles * n_labels)), np.empty((rows, n_labels)),
            np.empty((rows, n_labels)), np.empty((rows, n_labels)),
            np.empty((rows, N_ROLES, n_labels)), np.empty((rows, n_roles * n_labels)),
            np.empty((span_rows, n_labels)), np.empty((span_rows, n_labels)),
            np.zeros((0, 0, n_labels)))


@compiled()
def _sequence_scores(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                     binary, token_hot, token_weights, span_data, span_indices, span_indptr,
                     span_binary, span_pair_ptr, span_pair_labels, segment_weights, with_spans,
                     span_length, lo, hi, scratch):
    """The token and span scores of tokens lo..hi-1 in the scratch; roles and span marginals zeroed.

    Returns ``(spans, span_marginals)``: views of the scratch as (n, L, C)
    arrays, or empty ones without segment features.
    """
    unary, state, first, last, roles, _, span_rows, span_marginals, no_spans = scratch
    C = state.shape[1]
    n = hi - lo
    sequence_unary(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                   binary, token_hot, token_weights, lo, hi, unary)
    for r in range(n):
        for y in range(C):
            state[r, y] = unary[r, y]
            first[r, y] = unary[r, C + y]
            last[r, y] = unary[r, 2 * C + y]
        for k in range(N_ROLES):
            for y in range(C):
                roles[r, k, y] = 0.0
    if not with_spans:
        return no_spans, no_spans
    _span_rows(span_data, span_indices, span_indptr, span_binary, span_pair_ptr,
               span_pair_labels, segment_weights, lo * span_length, n * span_length, span_rows)
    marginals = span_marginals[:n * span_length].reshape((n, span_length, C))
    marginals[:] = 0.0
    return span_rows[:n * span_length].reshape((n, span_length, C)), marginals


@compiled()
def _scatter_sequence(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                      binary, span_data, span_indices, span_indptr, span_binary, span_pair_ptr,
                      span_pair_labels, with_spans, span_length, weighted_roles, lo, hi,
                      scratch, token_partial, token_hot_partial, span_partial):
    """Add the sequence's role and span marginals, times its features, to the partial sums."""
    _, state, _, _, roles, role_rows, _, span_marginals, _ = scratch
    C = state.shape[1]
    n_roles = weighted_roles.shape[0]
    for r in range(hi - lo):
        for k in range(n_roles):
            role = weighted_roles[k]
            for y in range(C):
                role_rows[r, k * C + y] = roles[r, role, y]
    scatter_expected(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                     binary, lo, hi, role_rows, token_hot_partial, token_partial)
    if with_spans:
        _scatter_span_rows(span_data, span_indices, span_indptr, span_binary, span_pair_ptr,
                           span_pair_labels, lo * span_length, (hi - lo) * span_length,
                           span_marginals, span_partial)


@compiled()
def _scaled_nll_chunks(chunk_lo, chunk_hi, bounds, offsets, values, entries, hot_ptr,
                       cold_ptr, cold_pairs, cold_labels, cold_values, binary, max_entries,
                       token_hot, token_weights, span_data, span_indices, span_indptr,
                       span_binary, span_pair_ptr, span_pair_labels, segment_weights,
                       with_spans, span_length, weighted_roles, by_products, exp_token_hot,
                       exp_token_pairs, exp_span_pairs, length, transitions, start, end,
                       longest, scalable, exp_length, exp_transitions, exp_start, exp_end,
                       smallest_norm, log_z, exact, token_partial, token_hot_partial,
                       span_partial, chunk_lengths, chunk_transitions, chunk_start, chunk_end):
    """The scaled pass of the chunks' sequences and their partial sums (see
    :meth:`FusedSemiMarkovTerms.__call__`); ``exact`` flags the sequences it cannot do."""
    C = transitions.shape[0]
    max_length = length.shape[1]
    for c in range(chunk_lo, chunk_hi):
        # the chunk's rows of the partial sums, taken once (see _chain_fused)
        partial = token_partial[c]
        hot_partial = token_hot_partial[c]
        spans_partial = span_partial[c]
        partial[:] = 0.0
        hot_partial[:] = 0.0
        spans_partial[:] = 0.0
        rows = longest_sequence(offsets, bounds[c], bounds[c + 1]) + 1
        workspace = scaled_workspace(rows, C, max_length, span_length)
        sequence_counts = workspace[5]
        scratch = _chunk_scratch(rows, C, weighted_roles.shape[0], span_length, with_spans)
        unary, state, first, last, roles = (scratch[0], scratch[1], scratch[2], scratch[3],
                                            scratch[4])
        if by_products:
            # never written on this route: finite scores for the pass's -inf tests
            state[:] = 0.0
            first[:] = 0.0
            last[:] = 0.0
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            n = hi - lo
            if n == 0:
                continue
            if not scalable:
                exact[q] = True
                continue
            if by_products:
                for r in range(n):
                    for k in range(N_ROLES):
                        for y in range(C):
                            roles[r, k, y] = 0.0
                log_shift = _product_token_factors(
                    entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, exp_token_hot,
                    exp_token_pairs, span_indices, span_indptr, span_pair_ptr,
                    span_pair_labels, exp_span_pairs, with_spans, span_length, lo, hi, unary,
                    workspace)
                if log_shift != log_shift:
                    exact[q] = True
                    continue
                spans = scratch[8]
                marginals = scratch[8]
                if with_spans:
                    # the factors stand in for the span scores where the pass asks
                    # whether one is -inf: none is
                    spans = workspace[6][:n]
                    marginals = scratch[7][:n * span_length].reshape((n, span_length, C))
                    marginals[:] = 0.0
                value = scaled_factor_posteriors(
                    state, first, last, length, spans, transitions, start, longest,
                    exp_length, exp_transitions, exp_start, exp_end, smallest_norm,
                    np.int64(0), n, log_shift, roles, marginals, workspace)
            else:
                spans, marginals = _sequence_scores(
                    values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                    binary, token_hot, token_weights, span_data, span_indices, span_indptr,
                    span_binary, span_pair_ptr, span_pair_labels, segment_weights,
                    with_spans, span_length, lo, hi, scratch)
                value = scaled_sequence_posteriors(
                    state, first, last, length, spans, transitions, start, end, longest,
                    exp_length, exp_transitions, exp_start, exp_end, smallest_norm,
                    np.int64(0), n, roles, marginals, workspace)
            if value != value:
                exact[q] = True
                continue
            log_z[q] = value
            for y in range(C):
                for d in range(max_length):
                    chunk_lengths[c, y, d] += sequence_counts[y, d]
                for x in range(C):
                    chunk_transitions[c, y, x] += sequence_counts[y, max_length + x]
                chunk_start[c, y] += sequence_counts[y, max_length + C]
                chunk_end[c, y] += sequence_counts[y, max_length + C + 1]
            _scatter_sequence(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                              cold_values, binary, span_data, span_indices, span_indptr,
                              span_binary, span_pair_ptr, span_pair_labels, with_spans,
                              span_length, weighted_roles, lo, hi, scratch, partial,
                              hot_partial, spans_partial)


@compiled()
def _exact_nll_chunks(chunk_lo, chunk_hi, bounds, offsets, values, entries, hot_ptr, cold_ptr,
                      cold_pairs, cold_labels, cold_values, binary, max_entries, token_hot,
                      token_weights, span_data, span_indices, span_indptr, span_binary,
                      span_pair_ptr, span_pair_labels, segment_weights, with_spans,
                      span_length, weighted_roles, length, transitions, start, end, longest,
                      log_z, exact, token_partial, token_hot_partial, span_partial,
                      chunk_lengths, chunk_transitions, chunk_start, chunk_end):
    """The exact log-space pass of the sequences ``exact`` flags, added to their chunks' sums."""
    C = transitions.shape[0]
    no_boundaries = np.zeros(0, np.int8)  # training fixes no boundary
    for c in range(chunk_lo, chunk_hi):
        if not exact[bounds[c]:bounds[c + 1]].any():
            continue
        rows = longest_sequence(offsets, bounds[c], bounds[c + 1]) + 1
        scratch = _chunk_scratch(rows, C, weighted_roles.shape[0], span_length, with_spans)
        state, first, last, roles = scratch[1], scratch[2], scratch[3], scratch[4]
        cum, blocked, alpha, enter, beta, leave, cover = exact_workspace(rows, C)
        for q in range(bounds[c], bounds[c + 1]):
            if not exact[q]:
                continue
            lo, hi = offsets[q], offsets[q + 1]
            spans, marginals = _sequence_scores(
                values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                binary, token_hot, token_weights, span_data, span_indices, span_indptr,
                span_binary, span_pair_ptr, span_pair_labels, segment_weights, with_spans,
                span_length, lo, hi, scratch)
            value = _sequence_posteriors(
                state, first, last, length, spans, transitions, start, end, no_boundaries,
                longest, np.int64(0), hi - lo, roles, marginals, chunk_lengths[c], chunk_transitions[c],
                chunk_start[c], chunk_end[c], cum, blocked, alpha, enter, beta, leave, cover)
            log_z[q] = value
            if not np.isfinite(value):
                continue  # no marginals (the loss is not finite anyway)
            _scatter_sequence(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                              cold_values, binary, span_data, span_indices, span_indptr,
                              span_binary, span_pair_ptr, span_pair_labels, with_spans,
                              span_length, weighted_roles, lo, hi, scratch, token_partial[c],
                              token_hot_partial[c], span_partial[c])
