"""Semi-Markov (segment) inference: forward-backward and Viterbi over segmentations.

Potentials in, marginals and segmentations out: these kernels never see a
feature. Nothing here validates or mutates its inputs. A segmentation splits a
sequence into consecutive segments, each with one label; the score of a
segment with label ``y`` over the tokens ``a:b`` of a sequence is::

    s(y, a, b) = sum(state[a:b, y]) + first[a, y] + last[b - 1, y] + length[y, b - a - 1]
                 + spans[a, b - a - 1, y]

(the ``spans`` term only where a span score is given), and a segmentation
scores the sum of its segments, ``transitions[y', y]`` between consecutive
segments, ``start`` of the first label and ``end`` of the last. The batch kernels take this layout:

- ``state``, ``first``, ``last`` : (n_tokens, n_labels) float64, log-space token
  scores of all sequences stacked; the segment sums come from per-sequence
  prefix sums of ``state``, so a segment costs O(1);
- ``length`` : (n_labels, max_length) float64, ``length[y, d - 1]`` scores a
  segment of ``d`` tokens; ``-inf`` forbids that length, and a label's
  longest segment is its last finite column;
- ``spans`` : (n_tokens, span_length, n_labels) float64, or None for none:
  ``spans[t, d - 1, y]`` scores the segment of label y over the ``d`` tokens
  from t, for ``d <= span_length`` (the scores of segment features, which
  depend on the whole segment); longer segments get no span score, and rows
  past a sequence's end are never read. The batch kernels take an empty
  (0, 0, n_labels) array for None;
- ``transitions`` : (n_labels, n_labels) float64, [previous segment, next];
- ``start``, ``end`` : (n_labels,) float64;
- ``offsets`` : (n_sequences + 1,) int64, sequence q owns tokens
  ``offsets[q]:offsets[q + 1]``.

``-inf`` anywhere forbids what it scores. A sequence with no feasible
segmentation gets log Z = ``-inf`` and all-zero marginals. A forward pass costs
O(n L C + n C^2). Forward-backward runs the scaled probability-domain pass of
:mod:`._semimarkov_scaled` and, for the sequences whose numbers leave its
range, the exact pass here in log space with max-shifted sums; Viterbi runs in
log space, where it needs no exponentials.
"""

import numpy as np

from .._runtime.batch import (chunk_bounds, chunk_partials, chunk_totals, compiled,
                              default_n_chunks, longest_sequence, run_chunks)
from ._roles import COVERED, CUT, FIRST, LAST, N_ROLES, NO_REPEAT, REPEAT, SINGLE
from ._scaled import (exp_factors, norm_floor, scaled_sequence_posteriors,
                                 scaled_workspace)

__all__ = ["COVERED", "FIRST", "LAST", "N_ROLES", "REPEAT", "SINGLE", "longest_segments",
           "no_spans",
           "segment_posteriors", "segment_viterbi"]


@compiled()
def longest_segments(length):
    """(n_labels,) int64: for each label the longest segment with a finite length score."""
    n_labels, max_length = length.shape
    longest = np.zeros(n_labels, np.int64)
    for y in range(n_labels):
        for d in range(max_length, 0, -1):
            if length[y, d - 1] > -np.inf:
                longest[y] = d
                break
    return longest


@compiled()
def _prefix_sums(state, lo, hi, cum, blocked):
    """Prefix sums of the finite state scores of tokens lo..hi-1, and of their -inf count.

    ``cum[r, y]`` sums the finite ``state[lo:lo + r, y]``; ``blocked[r, y]``
    counts the ``-inf`` ones, so that a segment over a forbidden token is
    ``-inf`` rather than the NaN of ``-inf - -inf``.
    """
    n_labels = state.shape[1]
    for y in range(n_labels):
        cum[0, y] = 0.0
        blocked[0, y] = 0
    for r in range(hi - lo):
        for y in range(n_labels):
            v = state[lo + r, y]
            if v == -np.inf:
                cum[r + 1, y] = cum[r, y]
                blocked[r + 1, y] = blocked[r, y] + 1
            else:
                cum[r + 1, y] = cum[r, y] + v
                blocked[r + 1, y] = blocked[r, y]


def no_spans(n_labels):
    """The empty span scores the kernels take for "no span scores"."""
    return np.zeros((0, 0, n_labels))


def batch_plan(state, length, offsets, spans):
    """What every batch entry point sets up first: ``(n_chunks, bounds, longest, spans)``.

    The chunks of :mod:`.._runtime.batch`, each label's longest segment
    (:func:`longest_segments`) and the span scores, :func:`no_spans` for None.
    """
    n_chunks = default_n_chunks(offsets)
    return (n_chunks, chunk_bounds(offsets, n_chunks), longest_segments(length),
            no_spans(state.shape[1]) if spans is None else spans)


@compiled()
def _segment(cum, blocked, first, last, length, spans, lo, y, a, b):
    """Score of a segment of label ``y`` over local tokens a:b."""
    if blocked[b, y] != blocked[a, y]:
        return -np.inf
    score = ((cum[b, y] - cum[a, y]) + first[lo + a, y] + last[lo + b - 1, y]
             + length[y, b - a - 1])
    if b - a <= spans.shape[1]:
        score += spans[lo + a, b - a - 1, y]
    return score


@compiled()
def _lse_add(acc_max, acc_sum, v):
    """Add exp(v) to a running (max, scaled sum) pair; returns the new pair."""
    if v == -np.inf:
        return acc_max, acc_sum
    if v <= acc_max:
        return acc_max, acc_sum + np.exp(v - acc_max)
    return v, acc_sum * np.exp(acc_max - v) + 1.0


@compiled()
def _lse_value(acc_max, acc_sum):
    if acc_max == -np.inf:
        return -np.inf
    return acc_max + np.log(acc_sum)


@compiled()
def _cut_before(boundaries, t):
    """Whether token ``t`` starts a segment by a fixed boundary (:data:`CUT`)."""
    return boundaries.shape[0] > 0 and boundaries[t] & CUT != 0


@compiled()
def _no_repeat_at(boundaries, t):
    """Whether a segment starting at token ``t`` must change label (:data:`NO_REPEAT`)."""
    return boundaries.shape[0] > 0 and boundaries[t] & NO_REPEAT != 0


@compiled()
def _forward(cum, blocked, first, last, length, spans, transitions, start, boundaries, longest,
             lo, n, alpha, enter):
    """Forward log scores of one sequence, under the boundary codes (empty: none).

    ``enter[r, y]``: the prefixes ``:r`` followed by a y-segment starting at r;
    ``alpha[r, y]``: the prefixes ``:r`` whose last segment has label y.
    """
    n_labels = cum.shape[1]
    for y in range(n_labels):
        enter[0, y] = start[y]
        alpha[0, y] = -np.inf
    for b in range(1, n + 1):
        for y in range(n_labels):
            m, s = -np.inf, 0.0
            for d in range(1, min(b, longest[y]) + 1):
                a = b - d
                if d > 1 and _cut_before(boundaries, lo + a + 1):
                    break
                if enter[a, y] == -np.inf:
                    continue
                m, s = _lse_add(m, s, enter[a, y] + _segment(cum, blocked, first, last,
                                                             length, spans, lo, y, a, b))
            alpha[b, y] = _lse_value(m, s)
        if b < n:
            no_repeat = _no_repeat_at(boundaries, lo + b)
            for y in range(n_labels):
                m, s = -np.inf, 0.0
                for x in range(n_labels):
                    if alpha[b, x] > -np.inf and not (no_repeat and x == y):
                        m, s = _lse_add(m, s, alpha[b, x] + transitions[x, y])
                enter[b, y] = _lse_value(m, s)


@compiled()
def _backward(cum, blocked, first, last, length, spans, transitions, end, boundaries, longest,
              lo, n, beta, leave):
    """Backward log scores of one sequence, under the boundary codes (empty: none).

    ``leave[a, y]``: a y-segment starting at a and any suffix after it;
    ``beta[b, y]``: the suffixes ``b:`` after a y-segment that ends at b.
    """
    n_labels = cum.shape[1]
    for y in range(n_labels):
        beta[n, y] = end[y]
    for a in range(n - 1, -1, -1):
        for y in range(n_labels):
            m, s = -np.inf, 0.0
            for d in range(1, min(n - a, longest[y]) + 1):
                b = a + d
                if d > 1 and _cut_before(boundaries, lo + b - 1):
                    break
                if beta[b, y] == -np.inf:
                    continue
                m, s = _lse_add(m, s, beta[b, y] + _segment(cum, blocked, first, last,
                                                            length, spans, lo, y, a, b))
            leave[a, y] = _lse_value(m, s)
        if a > 0:
            no_repeat = _no_repeat_at(boundaries, lo + a)
            for x in range(n_labels):
                m, s = -np.inf, 0.0
                for y in range(n_labels):
                    if leave[a, y] > -np.inf and not (no_repeat and x == y):
                        m, s = _lse_add(m, s, transitions[x, y] + leave[a, y])
                beta[a, x] = _lse_value(m, s)


@compiled()
def exact_workspace(rows, n_labels):
    """Scratch of :func:`_sequence_posteriors` for up to ``rows - 1`` tokens.

    (cum, blocked, alpha, enter, beta, leave, cover), each (rows, n_labels).
    """
    return (np.empty((rows, n_labels)), np.empty((rows, n_labels), np.int64),
            np.empty((rows, n_labels)), np.empty((rows, n_labels)), np.empty((rows, n_labels)),
            np.empty((rows, n_labels)), np.empty((rows, n_labels)))


@compiled()
def _sequence_posteriors(state, first, last, length, spans, transitions, start, end,
                         boundaries, longest, lo, hi, roles, span_marginals, length_counts,
                         transition_counts, start_counts, end_counts, cum, blocked, alpha,
                         enter, beta, leave, cover):
    """log Z of tokens lo..hi-1; adds their marginals and expected counts to the outputs.

    Under the boundary codes ``boundaries`` (empty for none: training; the
    fixed-boundary queries of :mod:`.queries` give some). ``span_marginals``
    (as ``spans``, or empty for none) gets the probability of each scored
    segment.
    """
    n_labels = state.shape[1]
    n = hi - lo
    _prefix_sums(state, lo, hi, cum, blocked)
    _forward(cum, blocked, first, last, length, spans, transitions, start, boundaries, longest,
             lo, n, alpha, enter)
    m, s = -np.inf, 0.0
    for y in range(n_labels):
        m, s = _lse_add(m, s, alpha[n, y] + end[y])
    log_z = _lse_value(m, s)
    if log_z == -np.inf:
        return log_z
    _backward(cum, blocked, first, last, length, spans, transitions, end, boundaries, longest,
              lo, n, beta, leave)
    n_scored = span_marginals.shape[1]
    for r in range(n + 1):
        for y in range(n_labels):
            cover[r, y] = 0.0
    for a in range(n):
        for y in range(n_labels):
            if enter[a, y] == -np.inf:
                continue
            for d in range(1, min(n - a, longest[y]) + 1):
                b = a + d
                if d > 1 and _cut_before(boundaries, lo + b - 1):
                    break
                v = (enter[a, y]
                     + _segment(cum, blocked, first, last, length, spans, lo, y, a, b)
                     + beta[b, y])
                if v == -np.inf:
                    continue
                p = np.exp(v - log_z)
                if d <= n_scored:
                    span_marginals[lo + a, d - 1, y] += p
                roles[lo + a, FIRST, y] += p
                roles[lo + b - 1, LAST, y] += p
                if d == 1:
                    roles[lo + a, SINGLE, y] += p
                # segment coverage as a difference array, summed below
                cover[a, y] += p
                cover[b, y] -= p
                length_counts[y, d - 1] += p
    for y in range(n_labels):
        total = 0.0
        for r in range(n):
            total += cover[r, y]
            roles[lo + r, COVERED, y] = total
        start_counts[y] += np.exp(start[y] + leave[0, y] - log_z)
        end_counts[y] += np.exp(alpha[n, y] + end[y] - log_z)
    for r in range(1, n):
        no_repeat = _no_repeat_at(boundaries, lo + r)
        for x in range(n_labels):
            if alpha[r, x] == -np.inf:
                continue
            for y in range(n_labels):
                if no_repeat and x == y:
                    continue
                v = alpha[r, x] + transitions[x, y] + leave[r, y]
                if v == -np.inf:
                    continue
                p = np.exp(v - log_z)
                transition_counts[x, y] += p
                if x == y:
                    roles[lo + r, REPEAT, y] += p
    return log_z


def segment_posteriors(state, first, last, length, transitions, start, end, offsets,
                       spans=None):
    """Log partition functions, per-token role marginals and expected segment counts.

    Parameters
    ----------
    state, first, last, length, transitions, start, end, offsets, spans
        See the module docstring.

    Returns
    -------
    log_z : (n_sequences,) float64
        0 for an empty sequence; ``-inf`` for one with no feasible segmentation.
    roles : (n_tokens, N_ROLES, n_labels) float64
        ``roles[i, COVERED, y]``: probability that token i lies in a segment
        labelled y (rows sum to 1 over y); ``FIRST``, ``LAST``, ``SINGLE``:
        that it is the first token, the last token, the whole of such a
        segment; ``REPEAT``: that a y-segment starts at i right after another
        y-segment. All zero on an infeasible sequence.
    length_counts : (n_labels, max_length) float64
        Expected number of segments of each label and length, summed.
    transition_counts : (n_labels, n_labels) float64
        Expected number of each pair of consecutive segment labels, summed.
    start_counts, end_counts : (n_labels,) float64
        Expected first and last segment labels, summed.
    span_marginals : (n_tokens, span_length, n_labels) float64
        Only when ``spans`` is given: the probability of each scored segment
        (0 past a sequence's end).
    """
    n_tokens, n_labels = state.shape
    max_length = length.shape[1]
    n_sequences = offsets.shape[0] - 1
    with_spans = spans is not None
    n_chunks, bounds, longest, spans = batch_plan(state, length, offsets, spans)

    log_z = np.zeros(n_sequences)
    roles = np.zeros((n_tokens, N_ROLES, n_labels))
    span_marginals = np.zeros(spans.shape)
    chunk_lengths, chunk_transitions, chunk_start, chunk_end = chunk_partials(
        n_chunks, length.shape, transitions.shape, start.shape, end.shape)

    sums = (log_z, roles, span_marginals, chunk_lengths, chunk_transitions, chunk_start,
            chunk_end)
    scalable, *factors = exp_factors(length, transitions, start, end)
    exact = np.ones(n_sequences, np.bool_)
    if scalable:
        run_chunks(_posterior_chunks, n_chunks, bounds, state, first, last, length, spans,
                   transitions, start, end, offsets, longest, tuple(factors),
                   norm_floor(max_length), exact, *sums)
    if exact.any():
        run_chunks(_exact_posterior_chunks, n_chunks, bounds, state, first, last, length,
                   spans, transitions, start, end, offsets, longest, exact, *sums)

    counts = (log_z, roles, *chunk_totals(chunk_lengths, chunk_transitions, chunk_start,
                                          chunk_end))
    return counts + (span_marginals,) if with_spans else counts


@compiled()
def _posterior_chunks(chunk_lo, chunk_hi, bounds, state, first, last, length, spans,
                      transitions, start, end, offsets, longest, factors, smallest_norm, exact,
                      log_z, roles, span_marginals, chunk_lengths, chunk_transitions,
                      chunk_start, chunk_end):
    """The scaled pass of the chunks' sequences; clears ``exact`` for those it did."""
    exp_length, exp_transitions, exp_start, exp_end = factors
    n_labels = state.shape[1]
    max_length = length.shape[1]
    for c in range(chunk_lo, chunk_hi):
        rows = longest_sequence(offsets, bounds[c], bounds[c + 1]) + 1
        workspace = scaled_workspace(rows, n_labels, max_length, spans.shape[1])
        sequence_counts = workspace[5]
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if hi == lo:
                exact[q] = False
                continue
            value = scaled_sequence_posteriors(
                state, first, last, length, spans, transitions, start, end, longest,
                exp_length, exp_transitions, exp_start, exp_end, smallest_norm, lo, hi,
                roles, span_marginals, workspace)
            if np.isnan(value):
                continue
            exact[q] = False
            log_z[q] = value
            for y in range(n_labels):
                counts = sequence_counts[y]
                for d in range(max_length):
                    chunk_lengths[c, y, d] += counts[d]
                for x in range(n_labels):
                    chunk_transitions[c, y, x] += counts[max_length + x]
                chunk_start[c, y] += counts[max_length + n_labels]
                chunk_end[c, y] += counts[max_length + n_labels + 1]


@compiled()
def _exact_posterior_chunks(chunk_lo, chunk_hi, bounds, state, first, last, length, spans,
                            transitions, start, end, offsets, longest, exact, log_z, roles,
                            span_marginals, chunk_lengths, chunk_transitions, chunk_start,
                            chunk_end):
    """The exact log-space pass of the chunks' sequences that ``exact`` flags."""
    n_labels = state.shape[1]
    no_boundaries = np.zeros(0, np.int8)
    for c in range(chunk_lo, chunk_hi):
        if not exact[bounds[c]:bounds[c + 1]].any():
            continue
        rows = longest_sequence(offsets, bounds[c], bounds[c + 1]) + 1
        cum, blocked, alpha, enter, beta, leave, cover = exact_workspace(rows, n_labels)
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if not exact[q] or hi == lo:
                continue
            # the scaled pass may have written some rows before giving up
            for t in range(lo, hi):
                for role in range(roles.shape[1]):
                    for y in range(n_labels):
                        roles[t, role, y] = 0.0
                if span_marginals.shape[0] > 0:
                    for d in range(span_marginals.shape[1]):
                        for y in range(n_labels):
                            span_marginals[t, d, y] = 0.0
            log_z[q] = _sequence_posteriors(
                state, first, last, length, spans, transitions, start, end, no_boundaries,
                longest, lo, hi, roles, span_marginals, chunk_lengths[c], chunk_transitions[c], chunk_start[c],
                chunk_end[c], cum, blocked, alpha, enter, beta, leave, cover)


@compiled()
def _sequence_viterbi(state, first, last, length, spans, transitions, start, end, longest, lo,
                      hi, label_ids, starts, cum, blocked, score, enter, best_length,
                      best_previous):
    """Best segmentation of tokens lo..hi-1 into ``label_ids`` and ``starts``."""
    n_labels = state.shape[1]
    n = hi - lo
    _prefix_sums(state, lo, hi, cum, blocked)
    for y in range(n_labels):
        enter[0, y] = start[y]
    for b in range(1, n + 1):
        for y in range(n_labels):
            best = -np.inf
            # a length of 1 whatever happens, so that the traceback always advances
            best_d = 1
            for d in range(1, min(b, longest[y]) + 1):
                a = b - d
                v = enter[a, y] + _segment(cum, blocked, first, last, length, spans, lo, y,
                                           a, b)
                if v > best:
                    best = v
                    best_d = d
            score[b, y] = best
            best_length[b, y] = best_d
        if b < n:
            for y in range(n_labels):
                best = -np.inf
                best_x = 0
                for x in range(n_labels):
                    v = score[b, x] + transitions[x, y]
                    if v > best:
                        best = v
                        best_x = x
                enter[b, y] = best
                best_previous[b, y] = best_x
    best = -np.inf
    y = 0
    for x in range(n_labels):
        v = score[n, x] + end[x]
        if v > best:
            best = v
            y = x
    b = n
    while b > 0:
        a = b - best_length[b, y]
        for r in range(a, b):
            label_ids[lo + r] = y
        starts[lo + a] = True
        if a == 0:
            break
        y = best_previous[a, y]
        b = a


def segment_viterbi(state, first, last, length, transitions, start, end, offsets, spans=None):
    """Most likely segmentation of every sequence.

    Ties go to the lowest label and the shortest segment. Nothing of score
    ``-inf`` appears in a returned segmentation unless the sequence has no
    feasible one at all.

    Returns
    -------
    label_ids : (n_tokens,) int64
        The label of the segment each token lies in.
    starts : (n_tokens,) bool
        Whether a segment starts at the token.
    """
    n_tokens = state.shape[0]
    n_chunks, bounds, longest, spans = batch_plan(state, length, offsets, spans)
    label_ids = np.zeros(n_tokens, np.int64)
    starts = np.zeros(n_tokens, np.bool_)
    run_chunks(_viterbi_chunks, n_chunks, bounds, state, first, last, length, spans,
               transitions, start, end, offsets, longest, label_ids, starts)
    return label_ids, starts


@compiled()
def _viterbi_chunks(chunk_lo, chunk_hi, bounds, state, first, last, length, spans, transitions,
                    start, end, offsets, longest, label_ids, starts):
    """The best segmentations of the chunks' sequences into ``label_ids`` and ``starts``."""
    n_labels = state.shape[1]
    for c in range(chunk_lo, chunk_hi):
        rows = longest_sequence(offsets, bounds[c], bounds[c + 1]) + 1
        cum = np.empty((rows, n_labels))
        blocked = np.empty((rows, n_labels), np.int64)
        score = np.empty((rows, n_labels))
        enter = np.empty((rows, n_labels))
        best_length = np.ones((rows, n_labels), np.int64)
        best_previous = np.zeros((rows, n_labels), np.int64)
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if hi == lo:
                continue
            _sequence_viterbi(state, first, last, length, spans, transitions, start, end,
                              longest, lo, hi, label_ids, starts, cum, blocked, score, enter,
                              best_length, best_previous)
