"""The semi-Markov CRF's fused training kernel: features x weights, inference and scatter in one pass.

The segment counterpart of :mod:`._chain_fused`, built on its per-sequence
helpers and its feature layout (frequent features as dense rows, merged
pairs of them, the others as pair streams): per sequence, the token scores of
the three roles (every token, first token, last token of a segment: ``3 *
n_labels`` columns) and the span scores of its candidate segments are summed
into per-chunk scratch rows, the scaled semi-Markov forward-backward of
:mod:`~skcrf.inference._semimarkov_scaled` turns them into role and span
marginals (the exact log-space pass where the scaled one gives up), and those
are scattered into the chunk's expected counts. Training never holds the
(n_tokens, 3 * n_labels) token scores, the (n_tokens, N_ROLES, n_labels)
role marginals or the (n_tokens, L, n_labels) span scores and marginals of
the unfused path. Tested against that path on random problems.
"""

import numpy as np

from ..inference._batch import chunk_bounds, compiled, longest_sequence, run_chunks
from ..inference._semimarkov_scaled import (FACTOR_CAP, exp_factors, norm_floor,
                                            scaled_factor_posteriors,
                                            scaled_sequence_posteriors, scaled_workspace)
from ..inference._segment_roles import COVERED, FIRST, LAST, N_ROLES
from ..inference.semimarkov import _sequence_posteriors, longest_segments
from ._chain_fused import (FusedChainTerms, hot_state_rows, scatter_expected, sequence_unary,
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
        n_chunks = self.tokens.n_chunks
        self.spans = None
        self.span_length = 0
        if segment_pairs is not None:
            self.span_length = int(features.segment_length)
            self.spans = FusedChainTerms(features.segments, offsets * self.span_length,
                                         segment_pairs, n_labels)
            # one chunking for both; with fewer chunks the dense rows of the other
            # take less memory than its budget allows
            n_chunks = min(n_chunks, self.spans.n_chunks)
            self.spans.n_chunks = n_chunks
        self.tokens.n_chunks = n_chunks
        self.n_chunks = n_chunks

    def __call__(self, token_weights, segment_weights, length, transitions, start, end):
        """``(log_z, expected_tokens, expected_segments, length_counts, transition_counts,
        start_counts, end_counts)`` at the weights; ``expected_segments`` is empty
        without segment features."""
        C = self.n_labels
        tokens, spans = self.tokens, self.spans
        token_weights = np.ascontiguousarray(token_weights)
        token_hot = hot_state_rows(tokens.hot_features, tokens.merged_parts,
                                   tokens.pairs.feature_ptr, tokens.pairs.labels,
                                   token_weights, 3 * C)
        token_partial, token_hot_partial = tokens.workspace()
        token_args = tokens.kernel_args()
        if spans is None:
            # the same types, never read: one compiled kernel serves both cases
            span_args = tuple(a[:0] if isinstance(a, np.ndarray) else a for a in token_args)
            segment_weights = np.zeros(0)
            span_hot = np.zeros((0, C))
            span_partial = np.zeros((self.n_chunks, 0))
            span_hot_partial = np.zeros((self.n_chunks, 0, C))
        else:
            span_args = spans.kernel_args()
            segment_weights = np.ascontiguousarray(segment_weights)
            span_hot = hot_state_rows(spans.hot_features, spans.merged_parts,
                                      spans.pairs.feature_ptr, spans.pairs.labels,
                                      segment_weights, C)
            span_partial, span_hot_partial = spans.workspace()
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
        chunk_lengths = np.zeros((n_chunks, C, max_length))
        chunk_transitions = np.zeros((n_chunks, C, C))
        chunk_start = np.zeros((n_chunks, C))
        chunk_end = np.zeros((n_chunks, C))
        scores = (*token_args, token_hot, token_weights, *span_args, span_hot,
                  segment_weights, np.bool_(spans is not None), np.int64(self.span_length),
                  _WEIGHTED_ROLES)
        products = self._product_factors(token_hot, token_weights, span_hot, segment_weights)
        partials = (token_partial, token_hot_partial, span_partial, span_hot_partial,
                    chunk_lengths, chunk_transitions, chunk_start, chunk_end)
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
        expected_segments = np.zeros(0)
        if spans is not None:
            expected_segments = summed_pair_partials(span_partial, span_hot_partial,
                                                     spans.hot_features, spans.merged_parts,
                                                     spans.pairs.feature_ptr,
                                                     spans.pairs.labels)
        # chunk partial sums added in chunk order: the thread count changes nothing
        length_counts = np.zeros((C, max_length))
        transition_counts = np.zeros((C, C))
        start_counts = np.zeros(C)
        end_counts = np.zeros(C)
        for c in range(n_chunks):
            length_counts += chunk_lengths[c]
            transition_counts += chunk_transitions[c]
            start_counts += chunk_start[c]
            end_counts += chunk_end[c]
        return (log_z, expected_tokens, expected_segments, length_counts, transition_counts,
                start_counts, end_counts)

    def _product_factors(self, token_hot, token_weights, span_hot, segment_weights):
        """``(by_products, exp rows and pairs of the tokens, of the spans)``.

        With binary features and moderate weights (:data:`PRODUCT_EXPONENT_BOUND`)
        the kernel multiplies these exponentials instead of exponentiating every
        token's and segment's scores; otherwise they are empty and unused.
        """
        tokens, spans = self.tokens, self.spans
        binary = tokens.features.binary and (spans is None or spans.features.binary)
        largest = max(np.abs(token_weights).max(initial=0.0),
                      np.abs(segment_weights).max(initial=0.0))
        most = max(tokens.max_entries, 0 if spans is None else spans.max_entries)
        # NaN weights fail the test: the other route then reports them
        by_products = bool(binary and largest * most < PRODUCT_EXPONENT_BOUND)
        if not by_products:
            return (np.bool_(False), token_hot[:0], token_weights[:0], span_hot[:0],
                    segment_weights[:0])
        span_rows = (span_hot if spans is None
                     else _exp_slot_rows(span_hot, spans.merged_parts))
        return (np.bool_(True), _exp_slot_rows(token_hot, tokens.merged_parts),
                np.exp(token_weights), span_rows, np.exp(segment_weights))


@compiled()
def _exp_slot_rows(hot_state, merged_parts):
    """``exp`` of the slots' rows; a merged slot's is the product of its parts' (no exp)."""
    n_hot = hot_state.shape[0] - merged_parts.shape[0]
    exp_hot = np.empty_like(hot_state)
    for slot in range(n_hot):
        for j in range(hot_state.shape[1]):
            exp_hot[slot, j] = np.exp(hot_state[slot, j])
    for m in range(merged_parts.shape[0]):
        row = exp_hot[n_hot + m]
        a = exp_hot[merged_parts[m, 0]]
        b = exp_hot[merged_parts[m, 1]]
        for j in range(row.shape[0]):
            row[j] = a[j] * b[j]
    return exp_hot


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


@compiled()
def _product_token_factors(entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, exp_hot,
                           exp_pairs, span_entries, span_hot_ptr, span_cold_ptr,
                           span_cold_pairs, span_cold_labels, exp_span_hot, exp_span_pairs,
                           with_spans, span_length, lo, hi, products, workspace):
    """The scaled pass's factors of tokens lo..hi-1, as products (see :func:`token_factors`).

    ``products`` is scratch of (at least) hi - lo rows of the token roles'
    width. Returns the log shift of the state factors, or NaN when a first,
    last or span factor exceeds FACTOR_CAP.
    """
    tokens, _, _, blocked, _, _, esp = workspace
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
                _row_products(span_entries, span_hot_ptr, span_cold_ptr, span_cold_pairs,
                              span_cold_labels, exp_span_hot, exp_span_pairs,
                              (lo + r) * span_length + d, factors)
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
                     binary, token_hot, token_weights, span_values, span_entries, span_hot_ptr,
                     span_cold_ptr, span_cold_pairs, span_cold_labels, span_cold_values,
                     span_binary, span_hot, segment_weights, with_spans, span_length, lo, hi,
                     scratch):
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
    sequence_unary(span_values, span_entries, span_hot_ptr, span_cold_ptr, span_cold_pairs,
                   span_cold_labels, span_cold_values, span_binary, span_hot, segment_weights,
                   lo * span_length, hi * span_length, span_rows)
    marginals = span_marginals[:n * span_length].reshape((n, span_length, C))
    marginals[:] = 0.0
    return span_rows[:n * span_length].reshape((n, span_length, C)), marginals


@compiled()
def _scatter_sequence(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                      binary, span_values, span_entries, span_hot_ptr, span_cold_ptr,
                      span_cold_pairs, span_cold_labels, span_cold_values, span_binary,
                      with_spans, span_length, weighted_roles, lo, hi, scratch, token_partial,
                      token_hot_partial, span_partial, span_hot_partial):
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
        scatter_expected(span_values, span_entries, span_hot_ptr, span_cold_ptr,
                         span_cold_pairs, span_cold_labels, span_cold_values, span_binary,
                         lo * span_length, hi * span_length, span_marginals, span_hot_partial,
                         span_partial)


@compiled()
def _scaled_nll_chunks(chunk_lo, chunk_hi, bounds, offsets, values, entries, hot_ptr,
                       cold_ptr, cold_pairs, cold_labels, cold_values, binary, max_entries,
                       token_hot, token_weights, span_values, span_entries, span_hot_ptr,
                       span_cold_ptr, span_cold_pairs, span_cold_labels, span_cold_values,
                       span_binary, span_max_entries, span_hot, segment_weights, with_spans,
                       span_length, weighted_roles, by_products, exp_token_hot,
                       exp_token_pairs, exp_span_hot, exp_span_pairs, length, transitions,
                       start, end, longest, scalable, exp_length, exp_transitions, exp_start,
                       exp_end, smallest_norm, log_z, exact, token_partial, token_hot_partial,
                       span_partial, span_hot_partial, chunk_lengths, chunk_transitions,
                       chunk_start, chunk_end):
    """The scaled pass of the chunks' sequences and their partial sums (see
    :meth:`FusedSemiMarkovTerms.__call__`); ``exact`` flags the sequences it cannot do."""
    C = transitions.shape[0]
    max_length = length.shape[1]
    for c in range(chunk_lo, chunk_hi):
        # the chunk's rows of the partial sums, taken once (see _chain_fused)
        partial = token_partial[c]
        hot_partial = token_hot_partial[c]
        partial[:] = 0.0
        hot_partial[:] = 0.0
        if with_spans:
            span_partial[c] = 0.0
            span_hot_partial[c] = 0.0
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
            lo = offsets[q]
            hi = offsets[q + 1]
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
                    exp_token_pairs, span_entries, span_hot_ptr, span_cold_ptr,
                    span_cold_pairs, span_cold_labels, exp_span_hot, exp_span_pairs,
                    with_spans, span_length, lo, hi, unary, workspace)
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
                    binary, token_hot, token_weights, span_values, span_entries, span_hot_ptr,
                    span_cold_ptr, span_cold_pairs, span_cold_labels, span_cold_values,
                    span_binary, span_hot, segment_weights, with_spans, span_length, lo, hi,
                    scratch)
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
                              cold_values, binary, span_values, span_entries, span_hot_ptr,
                              span_cold_ptr, span_cold_pairs, span_cold_labels,
                              span_cold_values, span_binary, with_spans, span_length,
                              weighted_roles, lo, hi, scratch, partial, hot_partial,
                              span_partial[c], span_hot_partial[c])


@compiled()
def _exact_nll_chunks(chunk_lo, chunk_hi, bounds, offsets, values, entries, hot_ptr, cold_ptr,
                      cold_pairs, cold_labels, cold_values, binary, max_entries, token_hot,
                      token_weights, span_values, span_entries, span_hot_ptr, span_cold_ptr,
                      span_cold_pairs, span_cold_labels, span_cold_values, span_binary,
                      span_max_entries, span_hot, segment_weights, with_spans, span_length,
                      weighted_roles, length, transitions, start, end, longest, log_z, exact,
                      token_partial, token_hot_partial, span_partial, span_hot_partial,
                      chunk_lengths, chunk_transitions, chunk_start, chunk_end):
    """The exact log-space pass of the sequences ``exact`` flags, added to their chunks' sums."""
    C = transitions.shape[0]
    for c in range(chunk_lo, chunk_hi):
        if not exact[bounds[c]:bounds[c + 1]].any():
            continue
        rows = longest_sequence(offsets, bounds[c], bounds[c + 1]) + 1
        scratch = _chunk_scratch(rows, C, weighted_roles.shape[0], span_length, with_spans)
        state, first, last, roles = scratch[1], scratch[2], scratch[3], scratch[4]
        cum = np.empty((rows, C))
        blocked = np.empty((rows, C), np.int64)
        alpha = np.empty((rows, C))
        enter = np.empty((rows, C))
        beta = np.empty((rows, C))
        leave = np.empty((rows, C))
        cover = np.empty((rows, C))
        for q in range(bounds[c], bounds[c + 1]):
            if not exact[q]:
                continue
            lo = offsets[q]
            hi = offsets[q + 1]
            spans, marginals = _sequence_scores(
                values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                binary, token_hot, token_weights, span_values, span_entries, span_hot_ptr,
                span_cold_ptr, span_cold_pairs, span_cold_labels, span_cold_values,
                span_binary, span_hot, segment_weights, with_spans, span_length, lo, hi,
                scratch)
            value = _sequence_posteriors(
                state, first, last, length, spans, transitions, start, end, longest,
                np.int64(0), hi - lo, roles, marginals, chunk_lengths[c], chunk_transitions[c],
                chunk_start[c], chunk_end[c], cum, blocked, alpha, enter, beta, leave, cover)
            log_z[q] = value
            if not np.isfinite(value):
                continue  # no marginals (the loss is not finite anyway)
            _scatter_sequence(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                              cold_values, binary, span_values, span_entries, span_hot_ptr,
                              span_cold_ptr, span_cold_pairs, span_cold_labels,
                              span_cold_values, span_binary, with_spans, span_length,
                              weighted_roles, lo, hi, scratch, token_partial[c],
                              token_hot_partial[c], span_partial[c], span_hot_partial[c])
