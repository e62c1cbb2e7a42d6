"""The exact log-space pass of :mod:`.order2`: slower, never under- or overflows.

Only the sequences whose scores under- or overflow the scaled pass of
:mod:`._chain2_scaled` come here.
"""

import numpy as np

from .._runtime.batch import compiled
from .._logspace import (FLOOR, log_matrix_vector, log_vector_matrix, logsumexp,
                        normalize_log_block, normalized_exp_sum, shifted_rows)


@compiled()
def log_space_sequence2(unary, transitions, start, end, lo, hi, potentials, with_counts,
                        marginals, pair_counts, triple_counts, work):
    """Forward-backward of one sequence in log space: slower, never under- or overflows.

    Sums over a predecessor or successor are factored into shifted
    exponentials (``exp_by_col``, ``exp_by_row``) and recomputed exactly when
    the factored sum is small enough to have lost terms. Pair marginals are
    normalized per token, and a triple's probability is the pair marginal of
    (a, b) times the conditional of c given (a, b), normalized over c by its
    own sum: as in :mod:`.order1`, subtracting a large log Z would cancel digits.
    It runs on each token's unary scores shifted by their maximum (into the
    scaled pass's ``emission`` rows, free by now), so that a huge score on one
    token leaves the digits of the others (see :func:`~._logspace.shifted_rows`).
    """
    (score, tri_max, exp_forward, exp_backward, trans_max, exp_trans, start_max, exp_start,
     end_max, exp_end, col_max, exp_by_col, row_max, exp_by_row, allowed,
     any_forbidden) = potentials
    (alpha, beta, following, emission, norm, reach, reach_first, block, previous_block,
     vector, shifted, gathered, weights) = work
    n_classes = unary.shape[1]
    n = hi - lo
    rows = emission
    shift = shifted_rows(unary, lo, hi, rows)

    for c in range(n_classes):
        alpha[0, 0, c] = start[c] + rows[0, c]
    if n >= 2:
        for b in range(n_classes):
            for c in range(n_classes):
                alpha[1, b, c] = alpha[0, 0, b] + transitions[b, c] + rows[1, c]
    # the moves into (b, c) come from (a, b): for each b, a vector over a times
    # the (a, c) matrix score[:, b, :]
    for r in range(2, n):
        for b in range(n_classes):
            log_vector_matrix(rows[r], alpha[r - 1, :, b], score[:, b, :], col_max[b],
                              exp_by_col[:, b, :], vector, alpha[r, b])

    if n == 1:
        for c in range(n_classes):
            vector[c] = alpha[0, 0, c] + end[c]
        log_z = logsumexp(vector)
    else:
        for b in range(n_classes):
            for c in range(n_classes):
                block[b, c] = alpha[n - 1, b, c] + end[c]
        log_z = logsumexp(block)
    if log_z == -np.inf:
        return log_z
    log_z += shift

    if n == 1:
        for c in range(n_classes):
            beta[0, 0, c] = end[c]
    else:
        for b in range(n_classes):
            for c in range(n_classes):
                beta[n - 1, b, c] = end[c]
    for r in range(n - 2, 0, -1):
        for b in range(n_classes):
            for c in range(n_classes):
                vector[c] = rows[r + 1, c] + beta[r + 1, b, c]
            log_matrix_vector(score[:, b, :], vector, row_max[:, b], exp_by_row[:, b, :],
                              shifted, beta[r, :, b])
    if n >= 2:
        for b in range(n_classes):
            for c in range(n_classes):
                vector[c] = transitions[b, c] + rows[1, c] + beta[1, b, c]
            beta[0, 0, b] = logsumexp(vector)

    # token 0
    normalized_exp_sum(alpha[0, 0], beta[0, 0], marginals[lo])
    # tokens 1..n-1: pair marginals, normalized per token
    for r in range(1, n):
        t = lo + r
        for b in range(n_classes):
            for c in range(n_classes):
                block[b, c] = alpha[r, b, c] + beta[r, b, c]
        normalize_log_block(block)
        for c in range(n_classes):
            marginals[t, c] = 0.0
        for b in range(n_classes):
            for c in range(n_classes):
                marginals[t, c] += block[b, c]
        if with_counts:
            for b in range(n_classes):
                for c in range(n_classes):
                    pair_counts[b, c] += block[b, c]
            if r >= 2:
                _add_triples(rows, r, beta[r], score, exp_by_row, previous_block,
                             triple_counts, vector, shifted)
            for b in range(n_classes):
                for c in range(n_classes):
                    previous_block[b, c] = block[b, c]
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
            if total > FLOOR:
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
