"""Order-2 chain inference: forward-backward and Viterbi with label-trigram potentials.

The score of a labelling ``y`` of an ``n``-token sequence is::

    start[y[0]] + sum_t unary[t, y[t]] + sum_{t >= 1} transitions[y[t-1], y[t]]
                + sum_{t >= 2} trigram[y[t-2], y[t-1], y[t]] + end[y[n-1]]

Inference runs on the order-1 chain whose states are label pairs
``(b, c) = (y[t-1], y[t])``: a state at token t has C predecessors, one per
``a = y[t-2]``, so a token costs O(C**3) instead of the O(C**4) of a generic
C**2-state chain. The layout is that of :mod:`.chain`, plus

- ``trigram`` : (n_classes, n_classes, n_classes) float64, indexed
  [y[t-2], y[t-1], y[t]]; ``-inf`` forbids a label triple.

As in :mod:`.chain`, nothing here validates or mutates its inputs, every
sequence goes first through a probability-domain pass scaled per token, and
the few sequences whose scores under- or overflow it are redone exactly in
log space. The per-sequence routine :func:`sequence_posteriors2` (with
:func:`chain2_potentials`, :func:`chain2_workspace` and
:func:`flush_triple_counts`) is what a fused training kernel would call.
"""

import numpy as np
from numba import prange

from ._batch import chunk_bounds, compiled, default_n_chunks, longest_sequence

# The precision thresholds of .chain, for the same reasons (see there): below
# _TINY a log-space sum of shifted exponentials may have lost terms, so the cell
# is recomputed exactly; the scaled pass gives up when a value that a feasible
# path reaches falls below _FLOOR, or a backward value rises above _HUGE.
_TINY = 1e-280
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
def _logsumexp(values):
    top = -np.inf
    for v in values.flat:
        if v > top:
            top = v
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for v in values.flat:
        total += np.exp(v - top)
    return top + np.log(total)


@compiled()
def chain2_potentials(transitions, trigram, start, end):
    """Everything a batch shares: the combined pair-to-pair scores and their exponentials.

    ``score[a, b, c] = transitions[b, c] + trigram[a, b, c]`` is the log
    potential of moving from state (a, b) to state (b, c). The scaled pass uses
    ``exp(score - tri_max)`` (one shift for all, so that a token's rescaling is
    one number) in two layouts: ``exp_forward[b, a, c]`` and
    ``exp_backward[b, c, a]``, so that for each ``b`` the forward and backward
    recursions are a vector times a contiguous matrix. The log-space
    pass uses shifts per column (``col_max[b, c] = max_a score``) and per row
    (``row_max[a, b] = max_c score``) so that its factored sums rarely
    underflow. ``allowed[b, c, w]`` has bit ``a % 64`` of word ``a // 64`` set
    when ``score[a, b, c] > -inf``: it tells the scaled pass which zeros are
    structural rather than underflow.

    Returns
    -------
    tuple
        ``(score, tri_max, exp_forward, exp_backward, trans_max, exp_trans, start_max,
        exp_start, end_max, exp_end, col_max, exp_by_col, row_max, exp_by_row,
        allowed, any_forbidden)``.
    """
    n_classes = transitions.shape[0]
    score = np.empty((n_classes, n_classes, n_classes))
    for a in range(n_classes):
        for b in range(n_classes):
            for c in range(n_classes):
                score[a, b, c] = transitions[b, c] + trigram[a, b, c]
    tri_max, exp_tri = _shifted_exp(score)
    exp_forward = np.empty((n_classes, n_classes, n_classes))
    exp_backward = np.empty((n_classes, n_classes, n_classes))
    for a in range(n_classes):
        for b in range(n_classes):
            for c in range(n_classes):
                exp_forward[b, a, c] = exp_tri[a, b, c]
                exp_backward[b, c, a] = exp_tri[a, b, c]
    trans_max, exp_trans = _shifted_exp(transitions)
    start_max, exp_start = _shifted_exp(start)
    end_max, exp_end = _shifted_exp(end)

    col_max = np.full((n_classes, n_classes), -np.inf)
    row_max = np.full((n_classes, n_classes), -np.inf)
    for a in range(n_classes):
        for b in range(n_classes):
            for c in range(n_classes):
                v = score[a, b, c]
                if v > col_max[b, c]:
                    col_max[b, c] = v
                if v > row_max[a, b]:
                    row_max[a, b] = v
    for i in range(n_classes):
        for j in range(n_classes):
            if col_max[i, j] == -np.inf:
                col_max[i, j] = 0.0
            if row_max[i, j] == -np.inf:
                row_max[i, j] = 0.0
    exp_by_col = np.empty((n_classes, n_classes, n_classes))
    exp_by_row = np.empty((n_classes, n_classes, n_classes))
    for a in range(n_classes):
        for b in range(n_classes):
            for c in range(n_classes):
                exp_by_col[a, b, c] = np.exp(score[a, b, c] - col_max[b, c])
                exp_by_row[a, b, c] = np.exp(score[a, b, c] - row_max[a, b])

    n_words = (n_classes + 63) // 64
    allowed = np.zeros((n_classes, n_classes, n_words), np.uint64)
    one = np.uint64(1)
    for a in range(n_classes):
        bit = one << np.uint64(a & 63)
        for b in range(n_classes):
            for c in range(n_classes):
                if score[a, b, c] > -np.inf:
                    allowed[b, c, a >> 6] |= bit
    any_forbidden = (np.isneginf(score).any() or np.isneginf(transitions).any()
                     or np.isneginf(start).any() or np.isneginf(end).any())
    return (score, tri_max, exp_forward, exp_backward, trans_max, exp_trans, start_max,
            exp_start, end_max, exp_end, col_max, exp_by_col, row_max, exp_by_row, allowed,
            any_forbidden)


@compiled()
def chain2_workspace(longest, n_classes, with_counts):
    """Scratch for the sequences of one chunk, none longer than ``longest``.

    O(longest * n_classes**2) memory, plus one n_classes**3 array of triple
    weights when ``with_counts``.

    Returns ``(alpha, beta, following, emission, norm, reach, reach_first,
    block, previous_block, vector, shifted, gathered, weights)``. ``following``
    is indexed [b, token, c]; ``weights`` accumulates the scaled pass's
    triple-count weights, indexed [b, a, c] (see :func:`flush_triple_counts`),
    and is zeroed here.
    """
    n_words = (n_classes + 63) // 64
    size = n_classes if with_counts else 1
    return (np.empty((longest, n_classes, n_classes)),
            np.empty((longest, n_classes, n_classes)),
            np.empty((n_classes, longest, n_classes)),
            np.empty((longest, n_classes)), np.empty(longest),
            np.zeros((2, n_classes, n_words), np.uint64), np.empty(n_classes, np.bool_),
            np.empty((n_classes, n_classes)), np.empty((n_classes, n_classes)),
            np.empty(n_classes), np.empty(n_classes), np.empty((n_classes, longest)),
            np.zeros((size, size, size)))


@compiled()
def _add_vector_matrix(weights, matrix, out):
    """out[j] += sum_k weights[k] * matrix[k, j], for (K,) weights and a (K, J) matrix.

    Rows go four at a time, so that ``out`` is loaded and stored once per four
    rows. Skipping four zero weights changes no bit, since every matrix passed
    here is finite; zeros come from forbidden moves.
    """
    n_rows, n_cols = matrix.shape
    full = n_rows - n_rows % 4
    for k in range(0, full, 4):
        w0 = weights[k]
        w1 = weights[k + 1]
        w2 = weights[k + 2]
        w3 = weights[k + 3]
        if w0 == 0.0 and w1 == 0.0 and w2 == 0.0 and w3 == 0.0:
            continue
        m0 = matrix[k]
        m1 = matrix[k + 1]
        m2 = matrix[k + 2]
        m3 = matrix[k + 3]
        for j in range(n_cols):
            out[j] += (w0 * m0[j] + w1 * m1[j]) + (w2 * m2[j] + w3 * m3[j])
    for k in range(full, n_rows):
        w = weights[k]
        if w != 0.0:
            m = matrix[k]
            for j in range(n_cols):
                out[j] += w * m[j]


@compiled()
def _add_vector_matrix_twice(weights0, weights1, matrix, out0, out1):
    """:func:`_add_vector_matrix` for two weight vectors and one matrix.

    Each row of ``matrix`` is loaded once for both outputs.
    """
    n_rows, n_cols = matrix.shape
    full = n_rows - n_rows % 4
    for k in range(0, full, 4):
        v0 = weights0[k]
        v1 = weights0[k + 1]
        v2 = weights0[k + 2]
        v3 = weights0[k + 3]
        w0 = weights1[k]
        w1 = weights1[k + 1]
        w2 = weights1[k + 2]
        w3 = weights1[k + 3]
        m0 = matrix[k]
        m1 = matrix[k + 1]
        m2 = matrix[k + 2]
        m3 = matrix[k + 3]
        for j in range(n_cols):
            x0 = m0[j]
            x1 = m1[j]
            x2 = m2[j]
            x3 = m3[j]
            out0[j] += (v0 * x0 + v1 * x1) + (v2 * x2 + v3 * x3)
            out1[j] += (w0 * x0 + w1 * x1) + (w2 * x2 + w3 * x3)
    for k in range(full, n_rows):
        v = weights0[k]
        w = weights1[k]
        m = matrix[k]
        for j in range(n_cols):
            out0[j] += v * m[j]
            out1[j] += w * m[j]


@compiled()
def _reaches(reach, allowed, b, c):
    """Whether some reached state (a, b) may move to (b, c)."""
    for w in range(allowed.shape[2]):
        if reach[b, w] & allowed[b, c, w] != 0:
            return True
    return False


@compiled()
def _mark(reach, b, c):
    """Record that state (b, c) is reached: bit b of row c."""
    reach[c, b >> 6] |= np.uint64(1) << np.uint64(b & 63)


@compiled()
def _scaled_sequence(unary, transitions, start, end, lo, hi, potentials, with_counts,
                     marginals, pair_counts, work):
    """Forward-backward of one sequence in the probability domain, scaled per token.

    ``alpha[r, b, c]`` is the forward mass of state (y[r-1], y[r]) = (b, c)
    normalized to sum 1 over the token by ``norm[r]``; ``beta[r]`` is divided
    by the same norms from r + 1 on, so that ``alpha[r] * beta[r]`` is the
    pair marginal (Rabiner's scaling). Token 0 has single-label states, kept in
    ``alpha[0, 0]`` and ``beta[0, 0]``. Returns log Z, or NaN when the precision
    checks fail, in which case the outputs are untouched and the caller runs
    the exact pass.

    Expected triple counts are not formed here: their weights, the sums over
    r of ``alpha[r-1, a, b] * following[b, r, c]``, go into ``work``'s
    ``weights`` and :func:`flush_triple_counts` multiplies them by the
    exponentiated potentials once per chunk; a sequence then costs one pass
    over a C**3 array instead of one per token.
    """
    (score, tri_max, exp_forward, exp_backward, trans_max, exp_trans, start_max, exp_start,
     end_max, exp_end, col_max, exp_by_col, row_max, exp_by_row, allowed,
     any_forbidden) = potentials
    (alpha, beta, following, emission, norm, reach, reach_first, block, previous_block,
     vector, shifted, gathered, weights) = work
    n_classes = unary.shape[1]
    n = hi - lo
    log_z = start_max + end_max
    if n >= 2:
        log_z += trans_max + (n - 2) * tri_max
    track = any_forbidden
    for r in range(n):
        t = lo + r
        top = -np.inf
        for c in range(n_classes):
            if unary[t, c] > top:
                top = unary[t, c]
            elif unary[t, c] == -np.inf:
                track = True
        if top == -np.inf:
            return np.nan
        log_z += top
        for c in range(n_classes):
            emission[r, c] = np.exp(unary[t, c] - top)

    # token 0: single labels
    total = 0.0
    for c in range(n_classes):
        alpha[0, 0, c] = exp_start[c] * emission[0, c]
        reach_first[c] = start[c] > -np.inf and unary[lo, c] > -np.inf
        if alpha[0, 0, c] < _FLOOR and (reach_first[c] or not track):
            return np.nan
        total += alpha[0, 0, c]
    if total == 0.0:
        return np.nan  # no feasible first label: the exact pass returns -inf
    norm[0] = total
    for c in range(n_classes):
        alpha[0, 0, c] /= total

    # token 1: pairs (y[0], y[1]), bigram potentials only
    prev, cur = 0, 1
    if n >= 2:
        t = lo + 1
        if track:
            reach[cur] = 0
        total = 0.0
        for b in range(n_classes):
            a0 = alpha[0, 0, b]
            for c in range(n_classes):
                v = a0 * exp_trans[b, c] * emission[1, c]
                alpha[1, b, c] = v
                if v < _FLOOR:
                    if not track:
                        return np.nan
                    if (reach_first[b] and transitions[b, c] > -np.inf
                            and unary[t, c] > -np.inf):
                        return np.nan
                elif track:
                    _mark(reach[cur], b, c)
                total += v
        if total == 0.0:
            return np.nan
        norm[1] = total
        scale = 1.0 / total
        for b in range(n_classes):
            for c in range(n_classes):
                alpha[1, b, c] *= scale
        prev, cur = cur, prev

    # tokens 2..n-1:
    # alpha[r, b, c] = emission[r, c] * sum_a alpha[r-1, a, b] * exp_forward[b, a, c]
    for r in range(2, n):
        t = lo + r
        current = alpha[r]
        previous = alpha[r - 1]
        current[:, :] = 0.0
        for b in range(n_classes):
            _add_vector_matrix(previous[:, b], exp_forward[b], current[b])
        if track:
            reach[cur] = 0
        total = 0.0
        for b in range(n_classes):
            for c in range(n_classes):
                v = current[b, c] * emission[r, c]
                current[b, c] = v
                if v < _FLOOR:
                    if not track:
                        return np.nan
                    if unary[t, c] > -np.inf and _reaches(reach[prev], allowed, b, c):
                        return np.nan
                elif track:
                    _mark(reach[cur], b, c)
                total += v
        if total == 0.0:
            return np.nan
        norm[r] = total
        scale = 1.0 / total
        for b in range(n_classes):
            for c in range(n_classes):
                current[b, c] *= scale
        prev, cur = cur, prev

    final = 0.0
    if n == 1:
        for c in range(n_classes):
            term = alpha[0, 0, c] * exp_end[c]
            if term < _FLOOR and (not track or (reach_first[c] and end[c] > -np.inf)):
                return np.nan
            final += term
    else:
        one = np.uint64(1)
        for b in range(n_classes):
            for c in range(n_classes):
                term = alpha[n - 1, b, c] * exp_end[c]
                if term < _FLOOR:
                    if not track:
                        return np.nan
                    reached = reach[prev, c, b >> 6] & (one << np.uint64(b & 63)) != 0
                    if reached and end[c] > -np.inf:
                        return np.nan
                final += term
    if final == 0.0:
        return np.nan

    # backward: following[b, r, c] = emission[r, c] * beta[r, b, c] / norm[r]
    if n == 1:
        for c in range(n_classes):
            beta[0, 0, c] = exp_end[c] / final
    else:
        for b in range(n_classes):
            for c in range(n_classes):
                beta[n - 1, b, c] = exp_end[c] / final
    for r in range(n - 1, 0, -1):
        scale = 1.0 / norm[r]
        for b in range(n_classes):
            for c in range(n_classes):
                v = emission[r, c] * beta[r, b, c] * scale
                if not v < _HUGE:
                    return np.nan
                following[b, r, c] = v
        if r >= 2:
            # beta[r-1, a, b] = sum_c exp_backward[b, c, a] * following[b, r, c]
            for b in range(n_classes):
                vector[:] = 0.0
                _add_vector_matrix(following[b, r], exp_backward[b], vector)
                for a in range(n_classes):
                    if not vector[a] < _HUGE:
                        return np.nan
                    beta[r - 1, a, b] = vector[a]
        else:
            for b in range(n_classes):
                total = 0.0
                for c in range(n_classes):
                    total += exp_trans[b, c] * following[b, 1, c]
                if not total < _HUGE:
                    return np.nan
                beta[0, 0, b] = total

    # every check passed: write the outputs
    for r in range(n):
        log_z += np.log(norm[r])
    log_z += np.log(final)
    for c in range(n_classes):
        marginals[lo, c] = alpha[0, 0, c] * beta[0, 0, c]
    for r in range(1, n):
        t = lo + r
        for c in range(n_classes):
            marginals[t, c] = 0.0
        for b in range(n_classes):
            for c in range(n_classes):
                p = alpha[r, b, c] * beta[r, b, c]
                marginals[t, c] += p
                if with_counts:
                    pair_counts[b, c] += p
    if with_counts and n >= 3:
        # weights[b, a, c] += sum_{r >= 2} alpha[r-1, a, b] * following[b, r, c]:
        # for each b, a product of an (a, r) and an (r, c) matrix, the first
        # gathered contiguous, two rows of a at a time
        for b in range(n_classes):
            for a in range(n_classes):
                for r in range(2, n):
                    gathered[a, r - 2] = alpha[r - 1, a, b]
            products = following[b, 2:n]
            for a in range(0, n_classes - 1, 2):
                _add_vector_matrix_twice(gathered[a, :n - 2], gathered[a + 1, :n - 2],
                                         products, weights[b, a], weights[b, a + 1])
            if n_classes % 2 == 1:
                a = n_classes - 1
                _add_vector_matrix(gathered[a, :n - 2], products, weights[b, a])
    return log_z


@compiled()
def flush_triple_counts(potentials, work, triple_counts):
    """Turn the triple weights the scaled pass left in ``work`` into expected counts.

    Adds ``exp(score - tri_max) * weights`` to ``triple_counts`` and zeroes the
    weights, so that ``work`` can serve further sequences.

    Parameters
    ----------
    potentials : tuple
        From :func:`chain2_potentials`.
    work : tuple
        From :func:`chain2_workspace`, after :func:`sequence_posteriors2` calls
        with counts.
    triple_counts : (n_classes, n_classes, n_classes) float64
        Accumulated into.
    """
    exp_forward = potentials[2]
    weights = work[12]
    n_classes = triple_counts.shape[0]
    for a in range(n_classes):
        for b in range(n_classes):
            for c in range(n_classes):
                triple_counts[a, b, c] += exp_forward[b, a, c] * weights[b, a, c]
                weights[b, a, c] = 0.0


@compiled()
def _exact_over_first(previous, score, b, c):
    """log sum_a exp(previous[a, b] + score[a, b, c]), computed without shortcuts."""
    n_classes = previous.shape[0]
    top = -np.inf
    for a in range(n_classes):
        v = previous[a, b] + score[a, b, c]
        if v > top:
            top = v
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for a in range(n_classes):
        total += np.exp(previous[a, b] + score[a, b, c] - top)
    return top + np.log(total)


@compiled()
def _exact_over_last(following, score, a, b):
    """log sum_c exp(score[a, b, c] + following[c]), computed without shortcuts."""
    n_classes = following.shape[0]
    top = -np.inf
    for c in range(n_classes):
        v = score[a, b, c] + following[c]
        if v > top:
            top = v
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for c in range(n_classes):
        total += np.exp(score[a, b, c] + following[c] - top)
    return top + np.log(total)


@compiled()
def _log_space_sequence(unary, transitions, start, end, lo, hi, potentials, with_counts,
                        marginals, pair_counts, triple_counts, work):
    """Forward-backward of one sequence in log space: slower, never under- or overflows.

    Sums over a predecessor or successor are factored into shifted
    exponentials (``exp_by_col``, ``exp_by_row``) and recomputed exactly when
    the factored sum is small enough to have lost terms. Pair marginals are
    normalized per token, and a triple's probability is the pair marginal of
    (a, b) times the conditional of c given (a, b), normalized over c by its
    own sum: as in :mod:`.chain`, subtracting a large log Z would cancel digits.
    """
    (score, tri_max, exp_forward, exp_backward, trans_max, exp_trans, start_max, exp_start,
     end_max, exp_end, col_max, exp_by_col, row_max, exp_by_row, allowed,
     any_forbidden) = potentials
    (alpha, beta, following, emission, norm, reach, reach_first, block, previous_block,
     vector, shifted, gathered, weights) = work
    n_classes = unary.shape[1]
    n = hi - lo

    for c in range(n_classes):
        alpha[0, 0, c] = start[c] + unary[lo, c]
    if n >= 2:
        for b in range(n_classes):
            for c in range(n_classes):
                alpha[1, b, c] = alpha[0, 0, b] + transitions[b, c] + unary[lo + 1, c]
    for r in range(2, n):
        t = lo + r
        previous = alpha[r - 1]
        for b in range(n_classes):
            shift = -np.inf
            for a in range(n_classes):
                if previous[a, b] > shift:
                    shift = previous[a, b]
            if shift == -np.inf:
                for c in range(n_classes):
                    alpha[r, b, c] = -np.inf
                continue
            for c in range(n_classes):
                vector[c] = 0.0
            for a in range(n_classes):
                s = np.exp(previous[a, b] - shift)
                if s != 0.0:
                    for c in range(n_classes):
                        vector[c] += s * exp_by_col[a, b, c]
            for c in range(n_classes):
                if vector[c] > _TINY:
                    alpha[r, b, c] = (unary[t, c] + shift + col_max[b, c]
                                      + np.log(vector[c]))
                else:
                    alpha[r, b, c] = unary[t, c] + _exact_over_first(previous, score, b, c)

    if n == 1:
        for c in range(n_classes):
            vector[c] = alpha[0, 0, c] + end[c]
        log_z = _logsumexp(vector)
    else:
        for b in range(n_classes):
            for c in range(n_classes):
                block[b, c] = alpha[n - 1, b, c] + end[c]
        log_z = _logsumexp(block)
    if log_z == -np.inf:
        return log_z

    if n == 1:
        for c in range(n_classes):
            beta[0, 0, c] = end[c]
    else:
        for b in range(n_classes):
            for c in range(n_classes):
                beta[n - 1, b, c] = end[c]
    for r in range(n - 2, 0, -1):
        t = lo + r
        for b in range(n_classes):
            shift = -np.inf
            for c in range(n_classes):
                vector[c] = unary[t + 1, c] + beta[r + 1, b, c]
                if vector[c] > shift:
                    shift = vector[c]
            if shift == -np.inf:
                for a in range(n_classes):
                    beta[r, a, b] = -np.inf
                continue
            for c in range(n_classes):
                shifted[c] = np.exp(vector[c] - shift)
            for a in range(n_classes):
                total = 0.0
                for c in range(n_classes):
                    total += exp_by_row[a, b, c] * shifted[c]
                if total > _TINY:
                    beta[r, a, b] = shift + row_max[a, b] + np.log(total)
                else:
                    beta[r, a, b] = _exact_over_last(vector, score, a, b)
    if n >= 2:
        for b in range(n_classes):
            for c in range(n_classes):
                vector[c] = transitions[b, c] + unary[lo + 1, c] + beta[1, b, c]
            beta[0, 0, b] = _logsumexp(vector)

    # token 0
    top = -np.inf
    for c in range(n_classes):
        if alpha[0, 0, c] + beta[0, 0, c] > top:
            top = alpha[0, 0, c] + beta[0, 0, c]
    total = 0.0
    for c in range(n_classes):
        marginals[lo, c] = np.exp(alpha[0, 0, c] + beta[0, 0, c] - top)
        total += marginals[lo, c]
    for c in range(n_classes):
        marginals[lo, c] /= total
    # tokens 1..n-1: pair marginals, normalized per token
    for r in range(1, n):
        t = lo + r
        top = -np.inf
        for b in range(n_classes):
            for c in range(n_classes):
                block[b, c] = alpha[r, b, c] + beta[r, b, c]
                if block[b, c] > top:
                    top = block[b, c]
        total = 0.0
        for b in range(n_classes):
            for c in range(n_classes):
                block[b, c] = np.exp(block[b, c] - top)
                total += block[b, c]
        for c in range(n_classes):
            marginals[t, c] = 0.0
        for b in range(n_classes):
            for c in range(n_classes):
                block[b, c] /= total
                marginals[t, c] += block[b, c]
        if with_counts:
            for b in range(n_classes):
                for c in range(n_classes):
                    pair_counts[b, c] += block[b, c]
            if r >= 2:
                _add_triples(unary, t, beta[r], score, exp_by_row, previous_block,
                             triple_counts, vector, shifted)
            previous_block[:, :] = block
    return log_z


@compiled()
def _add_triples(unary, t, beta_r, score, exp_by_row, previous_block, triple_counts,
                 vector, shifted):
    """Add P(y[t-2] = a, y[t-1] = b) * P(y[t] = c | a, b) to ``triple_counts``.

    ``previous_block`` holds the pair marginals of token t - 1. The conditional
    is proportional to exp(score[a, b, c] + unary[t, c] + beta_r[b, c]) and is
    normalized over c by its own sum, factored as in the backward pass unless
    that sum is small enough to have lost terms.
    """
    n_classes = unary.shape[1]
    for b in range(n_classes):
        shift = -np.inf
        for c in range(n_classes):
            vector[c] = unary[t, c] + beta_r[b, c]
            if vector[c] > shift:
                shift = vector[c]
        if shift == -np.inf:
            continue  # then every pair (a, b) has probability 0
        for c in range(n_classes):
            shifted[c] = np.exp(vector[c] - shift)
        for a in range(n_classes):
            p = previous_block[a, b]
            if p == 0.0:
                continue
            total = 0.0
            for c in range(n_classes):
                total += exp_by_row[a, b, c] * shifted[c]
            if total > _FLOOR:
                p /= total
                for c in range(n_classes):
                    triple_counts[a, b, c] += p * exp_by_row[a, b, c] * shifted[c]
            else:
                top = -np.inf
                for c in range(n_classes):
                    if score[a, b, c] + vector[c] > top:
                        top = score[a, b, c] + vector[c]
                if top == -np.inf:
                    continue
                total = 0.0
                for c in range(n_classes):
                    total += np.exp(score[a, b, c] + vector[c] - top)
                p /= total
                for c in range(n_classes):
                    triple_counts[a, b, c] += p * np.exp(score[a, b, c] + vector[c] - top)


@compiled()
def sequence_posteriors2(unary, transitions, start, end, lo, hi, potentials, with_counts,
                         marginals, pair_counts, triple_counts, work):
    """log Z of tokens lo..hi-1 (hi > lo); marginals and expected counts into the outputs.

    The fast scaled pass first; a sequence whose scores under- or overflow it
    (NaN) is redone exactly in log space. The triple counts of the scaled pass
    wait in ``work`` until :func:`flush_triple_counts` is called, once after
    the last sequence that uses ``work``; those of the log-space pass go
    straight to ``triple_counts``.

    Parameters
    ----------
    unary, transitions, start, end
        See the module docstring; the trigram potentials enter through
        ``potentials``, from :func:`chain2_potentials`.
    lo, hi : int
        The sequence's tokens.
    potentials : tuple
        From :func:`chain2_potentials`.
    with_counts : bool
        Whether to accumulate expected pair and triple counts.
    marginals : (n_tokens, n_classes) float64
        Rows lo..hi-1 are overwritten (left as they were if the sequence is infeasible).
    pair_counts : (n_classes, n_classes) float64
    triple_counts : (n_classes, n_classes, n_classes) float64
        Accumulated into when ``with_counts``.
    work : tuple
        From :func:`chain2_workspace`, with ``longest >= hi - lo``.

    Returns
    -------
    float
        log Z, ``-inf`` if the sequence has no feasible labelling.
    """
    lz = _scaled_sequence(unary, transitions, start, end, lo, hi, potentials, with_counts,
                          marginals, pair_counts, work)
    if np.isnan(lz):
        lz = _log_space_sequence(unary, transitions, start, end, lo, hi, potentials,
                                 with_counts, marginals, pair_counts, triple_counts, work)
    return lz


@compiled(parallel=True)
def forward_backward2(unary, transitions, trigram, start, end, offsets, with_counts):
    """Log partition functions, token marginals and expected pair and triple counts.

    Exact, over label-pair states, in O(n_tokens * n_classes**3).

    Parameters
    ----------
    unary, transitions, trigram, start, end, offsets
        See the module docstring.
    with_counts : bool
        Whether to compute the expected counts (training needs them, marginal
        prediction does not); if not, they are returned as zeros.

    Returns
    -------
    log_z : (n_sequences,) float64
        0 for an empty sequence; ``-inf`` for a sequence with no feasible path.
    marginals : (n_tokens, n_classes) float64
        Rows sum to 1; all zeros for the tokens of an infeasible sequence.
    pair_counts : (n_classes, n_classes) float64
        Expected number of each (y[t-1], y[t]), summed over all sequences.
    triple_counts : (n_classes, n_classes, n_classes) float64
        Expected number of each (y[t-2], y[t-1], y[t]), summed over all sequences.
    """
    n_tokens, n_classes = unary.shape
    n_sequences = offsets.shape[0] - 1
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    potentials = chain2_potentials(transitions, trigram, start, end)

    log_z = np.zeros(n_sequences)
    marginals = np.zeros((n_tokens, n_classes))
    # without counts, every chunk shares one never-written dummy
    n_partials = n_chunks if with_counts else 1
    size = n_classes if with_counts else 1
    chunk_pairs = np.zeros((n_partials, size, size))
    chunk_triples = np.zeros((n_partials, size, size, size))

    for k in prange(n_chunks):
        longest = max(longest_sequence(offsets, bounds[k], bounds[k + 1]), 1)
        work = chain2_workspace(longest, n_classes, with_counts)
        partial = np.int64(k) if with_counts else np.int64(0)
        for q in range(bounds[k], bounds[k + 1]):
            lo = offsets[q]
            hi = offsets[q + 1]
            if hi == lo:
                continue
            log_z[q] = sequence_posteriors2(unary, transitions, start, end, lo, hi,
                                            potentials, with_counts, marginals,
                                            chunk_pairs[partial], chunk_triples[partial],
                                            work)
        if with_counts:
            flush_triple_counts(potentials, work, chunk_triples[partial])

    pair_counts = np.zeros((n_classes, n_classes))
    triple_counts = np.zeros((n_classes, n_classes, n_classes))
    if with_counts:
        for k in range(n_chunks):
            pair_counts += chunk_pairs[k]
            triple_counts += chunk_triples[k]
    return log_z, marginals, pair_counts, triple_counts


@compiled()
def _max_plus_vector_matrix(values, matrix, best, pointers):
    """Fold max_k values[k] + matrix[k, j] into best[j], its lowest argmax into pointers[j].

    ``best`` starts at -inf and ``pointers`` at 0; a candidate replaces the
    incumbent only if strictly greater, so ties keep the lowest k. Rows go
    four at a time, each cell's incumbent held in locals across them: the
    one-row form, ``if v > best[j]: best[j] = v``, compiles to masked stores,
    which are slow on some processors.
    """
    n_rows, n_cols = matrix.shape
    full = n_rows - n_rows % 4
    for k in range(0, full, 4):
        s0 = values[k]
        s1 = values[k + 1]
        s2 = values[k + 2]
        s3 = values[k + 3]
        m0 = matrix[k]
        m1 = matrix[k + 1]
        m2 = matrix[k + 2]
        m3 = matrix[k + 3]
        for j in range(n_cols):
            top = best[j]
            arg = pointers[j]
            v = s0 + m0[j]
            if v > top:
                top = v
                arg = k
            v = s1 + m1[j]
            if v > top:
                top = v
                arg = k + 1
            v = s2 + m2[j]
            if v > top:
                top = v
                arg = k + 2
            v = s3 + m3[j]
            if v > top:
                top = v
                arg = k + 3
            best[j] = top
            pointers[j] = arg
    for k in range(full, n_rows):
        s = values[k]
        m = matrix[k]
        for j in range(n_cols):
            v = s + m[j]
            if v > best[j]:
                best[j] = v
                pointers[j] = k


@compiled(parallel=True)
def viterbi2(unary, transitions, trigram, start, end, offsets):
    """Most likely label path of every sequence under the order-2 model.

    Ties go to the lowest label ids: the lowest y[t-2] for each pair state, and
    the lexicographically lowest final pair (y[n-2], y[n-1]). A ``-inf``
    potential never appears in a returned path unless the sequence has no
    feasible path at all.

    Parameters
    ----------
    unary, transitions, trigram, start, end, offsets
        See the module docstring.

    Returns
    -------
    label_ids : (n_tokens,) int64
    """
    n_tokens, n_classes = unary.shape
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    # score_by_b[b, a, c]: the move (a, b) -> (b, c), contiguous for each b
    score_by_b = np.empty((n_classes, n_classes, n_classes))
    for a in range(n_classes):
        for b in range(n_classes):
            for c in range(n_classes):
                score_by_b[b, a, c] = transitions[b, c] + trigram[a, b, c]
    label_ids = np.zeros(n_tokens, np.int64)

    for k in prange(n_chunks):
        longest = max(longest_sequence(offsets, bounds[k], bounds[k + 1]), 1)
        # delta[cur, b, c]: best score of a path ending in (y[r-1], y[r]) = (b, c),
        # for the current and the previous token in turn
        delta = np.empty((2, n_classes, n_classes))
        backpointer = np.zeros((longest, n_classes, n_classes), np.int64)
        for q in range(bounds[k], bounds[k + 1]):
            lo = offsets[q]
            hi = offsets[q + 1]
            n = hi - lo
            if n == 0:
                continue
            if n == 1:
                best = -np.inf
                best_c = 0
                for c in range(n_classes):
                    v = start[c] + unary[lo, c] + end[c]
                    if v > best:
                        best = v
                        best_c = c
                label_ids[lo] = best_c
                continue
            for b in range(n_classes):
                for c in range(n_classes):
                    delta[1, b, c] = (start[b] + unary[lo, b] + transitions[b, c]
                                      + unary[lo + 1, c])
            cur = 1
            for r in range(2, n):
                t = lo + r
                previous = delta[cur]
                current = delta[1 - cur]
                current[:, :] = -np.inf
                backpointer[r, :, :] = 0
                for b in range(n_classes):
                    _max_plus_vector_matrix(previous[:, b], score_by_b[b], current[b],
                                            backpointer[r, b])
                for b in range(n_classes):
                    for c in range(n_classes):
                        current[b, c] += unary[t, c]
                cur = 1 - cur
            best = -np.inf
            best_b = 0
            best_c = 0
            for b in range(n_classes):
                for c in range(n_classes):
                    v = delta[cur, b, c] + end[c]
                    if v > best:
                        best = v
                        best_b = b
                        best_c = c
            label_ids[hi - 1] = best_c
            label_ids[hi - 2] = best_b
            for r in range(n - 1, 1, -1):
                label_ids[lo + r - 2] = backpointer[r, label_ids[lo + r - 1],
                                                    label_ids[lo + r]]
    return label_ids
