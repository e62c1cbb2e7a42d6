"""Order-1 chain inference: forward-backward and Viterbi over potentials.

Potentials in, marginals out: these kernels never see a feature. Nothing here
validates or mutates its inputs; the Python callers check everything once. The
batch kernels take this layout:

- ``unary`` : (n_tokens, n_classes) float64, log-space state scores of all tokens
  of all sequences stacked;
- ``transitions`` : (n_classes, n_classes) float64, indexed [from, to]; ``-inf``
  forbids a transition;
- ``start``, ``end`` : (n_classes,) float64;
- ``offsets`` : (n_sequences + 1,) int64, sequence q owns tokens
  ``offsets[q]:offsets[q + 1]`` (CSR ``indptr`` semantics).

The per-sequence routines (:func:`sequence_posteriors` with
:func:`chain_potentials` and :func:`chain_workspace`) are also what the chain
structure's fused training kernel calls.
"""

import numpy as np
from numba import prange

from ._batch import chunk_bounds, compiled, default_n_chunks, longest_sequence

#: Below this, a sum of shifted exponentials may have lost terms to underflow,
#: so the cell is recomputed exactly in log space. Terms are products of factors
#: <= 1, so a term that underflowed is < 1e-308: relative to a sum above 1e-280
#: it is far below rounding error.
_TINY = 1e-280


@compiled()
def _shifted_exp_transitions(transitions):
    """exp(T) shifted per column and per row so that nothing overflows.

    Returns ``col_max[j] = max_i T[i, j]``, ``exp_by_col[i, j] = exp(T[i, j] - col_max[j])``,
    ``row_max[i] = max_j T[i, j]`` and ``exp_by_row[i, j] = exp(T[i, j] - row_max[i])``.
    A column or row that is entirely -inf gets a shift of 0 and exponentials of 0.
    """
    n_classes = transitions.shape[0]
    col_max = np.full(n_classes, -np.inf)
    row_max = np.full(n_classes, -np.inf)
    for i in range(n_classes):
        for j in range(n_classes):
            v = transitions[i, j]
            if v > col_max[j]:
                col_max[j] = v
            if v > row_max[i]:
                row_max[i] = v
    for k in range(n_classes):
        if col_max[k] == -np.inf:
            col_max[k] = 0.0
        if row_max[k] == -np.inf:
            row_max[k] = 0.0
    exp_by_col = np.empty((n_classes, n_classes))
    exp_by_row = np.empty((n_classes, n_classes))
    for i in range(n_classes):
        for j in range(n_classes):
            exp_by_col[i, j] = np.exp(transitions[i, j] - col_max[j])
            exp_by_row[i, j] = np.exp(transitions[i, j] - row_max[i])
    return col_max, exp_by_col, row_max, exp_by_row


@compiled()
def _logsumexp(values):
    top = -np.inf
    for v in values:
        if v > top:
            top = v
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for v in values:
        total += np.exp(v - top)
    return top + np.log(total)


@compiled()
def _forward(unary, transitions, start, col_max, exp_by_col, lo, hi, alpha, scaled, column):
    """Log forward scores of tokens lo..hi-1 into ``alpha[: hi - lo]``."""
    n_classes = unary.shape[1]
    for j in range(n_classes):
        alpha[0, j] = start[j] + unary[lo, j]
    for t in range(lo + 1, hi):
        r = t - lo
        shift = -np.inf
        for i in range(n_classes):
            if alpha[r - 1, i] > shift:
                shift = alpha[r - 1, i]
        if shift == -np.inf:
            for j in range(n_classes):
                alpha[r, j] = -np.inf
            continue
        # sums[j] = sum_i exp(alpha[i] - shift) * exp(T[i, j] - col_max[j]): i outer
        # keeps both arrays contiguous in the inner loop.
        sums = column  # reuse scratch
        for j in range(n_classes):
            sums[j] = 0.0
        for i in range(n_classes):
            a = np.exp(alpha[r - 1, i] - shift)
            scaled[i] = a
            for j in range(n_classes):
                sums[j] += a * exp_by_col[i, j]
        for j in range(n_classes):
            if sums[j] > _TINY:
                alpha[r, j] = unary[t, j] + shift + col_max[j] + np.log(sums[j])
            else:
                alpha[r, j] = unary[t, j] + _exact_into(alpha[r - 1], transitions, j)


@compiled()
def _exact_into(previous, transitions, j):
    """log sum_i exp(previous[i] + T[i, j]), computed without shortcuts."""
    n_classes = previous.shape[0]
    top = -np.inf
    for i in range(n_classes):
        v = previous[i] + transitions[i, j]
        if v > top:
            top = v
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for i in range(n_classes):
        total += np.exp(previous[i] + transitions[i, j] - top)
    return top + np.log(total)


@compiled()
def _exact_from(following, transitions, i):
    """log sum_j exp(T[i, j] + following[j]), computed without shortcuts."""
    n_classes = following.shape[0]
    top = -np.inf
    for j in range(n_classes):
        v = transitions[i, j] + following[j]
        if v > top:
            top = v
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for j in range(n_classes):
        total += np.exp(transitions[i, j] + following[j] - top)
    return top + np.log(total)


@compiled()
def _backward(unary, transitions, end, row_max, exp_by_row, lo, hi, beta, scaled, following):
    """Log backward scores of tokens lo..hi-1 into ``beta[: hi - lo]``."""
    n_classes = unary.shape[1]
    last = hi - 1 - lo
    for i in range(n_classes):
        beta[last, i] = end[i]
    for t in range(hi - 2, lo - 1, -1):
        r = t - lo
        shift = -np.inf
        for j in range(n_classes):
            following[j] = unary[t + 1, j] + beta[r + 1, j]
            if following[j] > shift:
                shift = following[j]
        if shift == -np.inf:
            for i in range(n_classes):
                beta[r, i] = -np.inf
            continue
        for j in range(n_classes):
            scaled[j] = np.exp(following[j] - shift)
        for i in range(n_classes):
            total = 0.0
            for j in range(n_classes):
                total += exp_by_row[i, j] * scaled[j]
            if total > _TINY:
                beta[r, i] = shift + row_max[i] + np.log(total)
            else:
                beta[r, i] = _exact_from(following, transitions, i)


@compiled()
def _accumulate_transitions(unary, transitions, col_max, exp_by_col, lo, hi, alpha,
                            beta, counts, block, scaled, following):
    """Add the expected transition counts of one sequence to ``counts``.

    xi_t[i, j] is proportional to exp(alpha[t-1, i] + T[i, j] + unary[t, j] + beta[t, j])
    and sums to 1 over (i, j). Each token's block is normalized by its own sum
    rather than by exp(log Z): over long sequences alpha and beta grow large and
    subtracting log Z would cancel away digits. The block is factored as
    exp(alpha - A) * exp(T - col_max) * exp(w - W), with
    w[j] = unary[t, j] + beta[t, j] + col_max[j], so that it needs 2 * n_classes
    exponentials instead of n_classes ** 2, unless the product underflows.
    """
    n_classes = unary.shape[1]
    for t in range(lo + 1, hi):
        r = t - lo
        top_a = -np.inf
        for i in range(n_classes):
            if alpha[r - 1, i] > top_a:
                top_a = alpha[r - 1, i]
        top_w = -np.inf
        for j in range(n_classes):
            following[j] = unary[t, j] + beta[r, j]
            if following[j] + col_max[j] > top_w:
                top_w = following[j] + col_max[j]
        if top_a == -np.inf or top_w == -np.inf:
            continue
        for j in range(n_classes):
            scaled[j] = np.exp(following[j] + col_max[j] - top_w)
        total = 0.0
        for i in range(n_classes):
            a = np.exp(alpha[r - 1, i] - top_a)
            for j in range(n_classes):
                block[i, j] = a * exp_by_col[i, j] * scaled[j]
                total += block[i, j]
        if not total > _FLOOR:
            # the factored product underflowed: exponentiate each cell exactly
            top = -np.inf
            for i in range(n_classes):
                for j in range(n_classes):
                    block[i, j] = alpha[r - 1, i] + transitions[i, j] + following[j]
                    if block[i, j] > top:
                        top = block[i, j]
            if top == -np.inf:
                continue
            total = 0.0
            for i in range(n_classes):
                for j in range(n_classes):
                    block[i, j] = np.exp(block[i, j] - top)
                    total += block[i, j]
        for i in range(n_classes):
            for j in range(n_classes):
                counts[i, j] += block[i, j] / total


#: The scaled pass gives up, and the exact log-space pass takes over, when a
#: forward value that a feasible path reaches falls below _FLOOR before
#: normalization, or a backward value rises above _HUGE. Above the floor, a
#: forward value carries full relative precision (a term lost to underflow is
#: < 1e-308, negligible next to it); below, it might be a term that later
#: dominates log Z. Lost backward terms are always negligible: a probability
#: mass through a state is at most its backward value.
_FLOOR = 1e-290
_HUGE = 1e250


@compiled()
def _shifted_exp(values):
    """(max, exp(values - max)); a max of -inf becomes 0 so the exponentials are 0."""
    top = -np.inf
    for v in values.flat:
        if v > top:
            top = v
    if top == -np.inf:
        top = 0.0
    return top, np.exp(values - top)


@compiled()
def _scaled_sequence(unary, transitions, start, end, lo, hi, exp_trans, trans_max, exp_start,
                     start_max, exp_end, end_max, any_forbidden, emission, alpha, beta, norm,
                     reach, with_transitions, marginals, counts, scratch):
    """Forward-backward of one sequence in the probability domain, scaled per token.

    Rabiner's scaling: alpha[t] is normalized to sum 1 by norm[t], and beta[t]
    is divided by the same norm[t + 1], so that alpha[t] * beta[t] is the
    marginal. It needs n_classes exponentials per token instead of the
    log-space pass's several n_classes. Returns log Z, or NaN when the
    precision checks fail, in which case nothing was written and the caller
    runs the exact pass.

    ``reach`` (2, n_classes) tracks which states a path of finite score reaches;
    it only matters when some score is -inf (otherwise every state is reached).
    """
    n_classes = unary.shape[1]
    n = hi - lo
    log_z = start_max + end_max + (n - 1) * trans_max
    track = any_forbidden
    for r in range(n):
        t = lo + r
        top = -np.inf
        for j in range(n_classes):
            if unary[t, j] > top:
                top = unary[t, j]
            elif unary[t, j] == -np.inf:
                track = True
        if top == -np.inf:
            return np.nan
        log_z += top
        for j in range(n_classes):
            emission[r, j] = np.exp(unary[t, j] - top)

    prev, cur = 0, 1
    total = 0.0
    for j in range(n_classes):
        alpha[0, j] = exp_start[j] * emission[0, j]
        reach[prev, j] = start[j] > -np.inf and unary[lo, j] > -np.inf
        if alpha[0, j] < _FLOOR and (reach[prev, j] or not track):
            return np.nan
        total += alpha[0, j]
    if total == 0.0:
        return np.nan  # no feasible first label: the exact pass returns -inf
    norm[0] = total
    for j in range(n_classes):
        alpha[0, j] /= total
    for r in range(1, n):
        t = lo + r
        for j in range(n_classes):
            alpha[r, j] = 0.0
        for i in range(n_classes):
            a = alpha[r - 1, i]
            if a != 0.0:
                for j in range(n_classes):
                    alpha[r, j] += a * exp_trans[i, j]
        total = 0.0
        for j in range(n_classes):
            alpha[r, j] *= emission[r, j]
            if alpha[r, j] < _FLOOR:
                if not track:
                    return np.nan
                reached = False
                if unary[t, j] > -np.inf:
                    for i in range(n_classes):
                        if reach[prev, i] and transitions[i, j] > -np.inf:
                            reached = True
                            break
                if reached:
                    return np.nan
                reach[cur, j] = False
            else:
                reach[cur, j] = True
            total += alpha[r, j]
        if total == 0.0:
            return np.nan
        norm[r] = total
        for j in range(n_classes):
            alpha[r, j] /= total
        prev, cur = cur, prev
    final = 0.0
    for j in range(n_classes):
        term = alpha[n - 1, j] * exp_end[j]
        if term < _FLOOR and (not track or (reach[prev, j] and end[j] > -np.inf)):
            return np.nan
        final += term
    if final == 0.0:
        return np.nan

    for j in range(n_classes):
        beta[n - 1, j] = exp_end[j] / final
    for r in range(n - 2, -1, -1):
        for j in range(n_classes):
            scratch[j] = emission[r + 1, j] * beta[r + 1, j] / norm[r + 1]
            if not scratch[j] < _HUGE:
                return np.nan
        for i in range(n_classes):
            total = 0.0
            for j in range(n_classes):
                total += exp_trans[i, j] * scratch[j]
            if not total < _HUGE:
                return np.nan
            beta[r, i] = total

    for r in range(n):
        log_z += np.log(norm[r])
        for j in range(n_classes):
            marginals[lo + r, j] = alpha[r, j] * beta[r, j]
    log_z += np.log(final)
    if with_transitions:
        for r in range(1, n):
            for j in range(n_classes):
                scratch[j] = emission[r, j] * beta[r, j] / norm[r]
            for i in range(n_classes):
                a = alpha[r - 1, i]
                if a != 0.0:
                    for j in range(n_classes):
                        counts[i, j] += a * exp_trans[i, j] * scratch[j]
    return log_z


@compiled()
def _log_space_sequence(unary, transitions, start, end, lo, hi, col_max, exp_by_col,
                        row_max, exp_by_row, with_transitions, marginals, counts, alpha,
                        beta, block, scaled, scratch):
    """Forward-backward of one sequence in log space: slower, never under- or overflows."""
    n_classes = unary.shape[1]
    _forward(unary, transitions, start, col_max, exp_by_col, lo, hi, alpha, scaled, scratch)
    last = hi - 1 - lo
    for j in range(n_classes):
        scratch[j] = alpha[last, j] + end[j]
    log_z = _logsumexp(scratch)
    if log_z == -np.inf:
        return log_z
    _backward(unary, transitions, end, row_max, exp_by_row, lo, hi, beta, scaled, scratch)
    # normalized per token, for the reason given in _accumulate_transitions
    for t in range(lo, hi):
        r = t - lo
        top = -np.inf
        for j in range(n_classes):
            if alpha[r, j] + beta[r, j] > top:
                top = alpha[r, j] + beta[r, j]
        total = 0.0
        for j in range(n_classes):
            marginals[t, j] = np.exp(alpha[r, j] + beta[r, j] - top)
            total += marginals[t, j]
        for j in range(n_classes):
            marginals[t, j] /= total
    if with_transitions:
        _accumulate_transitions(unary, transitions, col_max, exp_by_col, lo, hi, alpha,
                                beta, counts, block, scaled, scratch)
    return log_z


@compiled()
def chain_potentials(transitions, start, end):
    """Shifted exponentials of the potentials, shared by all sequences of a batch."""
    col_max, exp_by_col, row_max, exp_by_row = _shifted_exp_transitions(transitions)
    trans_max, exp_trans = _shifted_exp(transitions)
    start_max, exp_start = _shifted_exp(start)
    end_max, exp_end = _shifted_exp(end)
    any_forbidden = (np.isneginf(transitions).any() or np.isneginf(start).any()
                     or np.isneginf(end).any())
    return (col_max, exp_by_col, row_max, exp_by_row, trans_max, exp_trans, start_max,
            exp_start, end_max, exp_end, any_forbidden)


@compiled()
def chain_workspace(longest, n_classes):
    """Scratch rows for the sequences of one chunk, none longer than ``longest``."""
    return (np.empty((longest, n_classes)), np.empty((longest, n_classes)),
            np.empty((longest, n_classes)), np.empty(longest),
            np.empty((2, n_classes), np.bool_), np.empty((n_classes, n_classes)),
            np.empty(n_classes), np.empty(n_classes))


@compiled()
def sequence_posteriors(unary, transitions, start, end, lo, hi, potentials,
                         with_transitions, marginals, counts, work):
    """log Z of tokens lo..hi-1, their marginals and transition counts into the outputs.

    The fast scaled pass first; a sequence whose scores under- or overflow it
    (NaN) is redone exactly in log space.
    """
    (col_max, exp_by_col, row_max, exp_by_row, trans_max, exp_trans, start_max, exp_start,
     end_max, exp_end, any_forbidden) = potentials
    alpha, beta, emission, norm, reach, block, scaled, scratch = work
    lz = _scaled_sequence(unary, transitions, start, end, lo, hi, exp_trans, trans_max,
                          exp_start, start_max, exp_end, end_max, any_forbidden, emission,
                          alpha, beta, norm, reach, with_transitions, marginals, counts,
                          scratch)
    if np.isnan(lz):
        lz = _log_space_sequence(unary, transitions, start, end, lo, hi, col_max,
                                 exp_by_col, row_max, exp_by_row, with_transitions,
                                 marginals, counts, alpha, beta, block, scaled, scratch)
    return lz


@compiled(parallel=True)
def forward_backward(unary, transitions, start, end, offsets, with_transitions):
    """Log partition functions, token marginals and expected transition counts.

    Each sequence goes through the fast scaled pass; the few whose scores are
    extreme enough to under- or overflow it are redone exactly in log space.

    Parameters
    ----------
    unary, transitions, start, end, offsets
        See the module docstring.
    with_transitions : bool
        Whether to compute the expected transition counts (training needs them,
        ``predict_marginals`` does not).

    Returns
    -------
    log_z : (n_sequences,) float64
        0 for an empty sequence; ``-inf`` for a sequence with no feasible path.
    marginals : (n_tokens, n_classes) float64
        Rows sum to 1; all zeros for the tokens of an infeasible sequence.
    transition_counts : (n_classes, n_classes) float64
        Expected number of each transition, summed over all sequences.
    """
    n_tokens, n_classes = unary.shape
    n_sequences = offsets.shape[0] - 1
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    potentials = chain_potentials(transitions, start, end)

    log_z = np.zeros(n_sequences)
    marginals = np.zeros((n_tokens, n_classes))
    chunk_counts = np.zeros((n_chunks, n_classes, n_classes))

    for c in prange(n_chunks):
        work = chain_workspace(max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1), n_classes)
        for q in range(bounds[c], bounds[c + 1]):
            lo = offsets[q]
            hi = offsets[q + 1]
            if hi == lo:
                continue
            log_z[q] = sequence_posteriors(unary, transitions, start, end, lo, hi,
                                            potentials, with_transitions, marginals,
                                            chunk_counts[c], work)

    transition_counts = np.zeros((n_classes, n_classes))
    for c in range(n_chunks):
        transition_counts += chunk_counts[c]
    return log_z, marginals, transition_counts


@compiled(parallel=True)
def viterbi(unary, transitions, start, end, offsets):
    """Most likely label path of every sequence.

    Ties go to the lowest label id. A transition of ``-inf`` never appears in a
    returned path unless the sequence has no feasible path at all.

    Returns
    -------
    label_ids : (n_tokens,) int64
    """
    n_tokens, n_classes = unary.shape
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    label_ids = np.zeros(n_tokens, np.int64)

    for c in prange(n_chunks):
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        score = np.empty((longest, n_classes))
        backpointer = np.zeros((longest, n_classes), np.int32)
        for q in range(bounds[c], bounds[c + 1]):
            lo = offsets[q]
            hi = offsets[q + 1]
            if hi == lo:
                continue
            for j in range(n_classes):
                score[0, j] = start[j] + unary[lo, j]
            for t in range(lo + 1, hi):
                r = t - lo
                for j in range(n_classes):
                    best = -np.inf
                    best_i = 0
                    for i in range(n_classes):
                        v = score[r - 1, i] + transitions[i, j]
                        if v > best:
                            best = v
                            best_i = i
                    score[r, j] = best + unary[t, j]
                    backpointer[r, j] = best_i
            last = hi - 1 - lo
            best = -np.inf
            best_j = 0
            for j in range(n_classes):
                v = score[last, j] + end[j]
                if v > best:
                    best = v
                    best_j = j
            label_ids[hi - 1] = best_j
            for r in range(last, 0, -1):
                best_j = backpointer[r, best_j]
                label_ids[lo + r - 1] = best_j
    return label_ids

