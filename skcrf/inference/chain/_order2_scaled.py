"""The scaled probability-domain pass of :mod:`.order2`, and the triple counts it defers.

Label-pair states ``(b, c) = (y[t-1], y[t])``, normalized per token as in
:mod:`._order1`; a sequence whose scores under- or overflow this pass is
redone exactly by :mod:`._chain2_logspace`.
"""

import numpy as np

from .._runtime.batch import compiled
from .._logspace import FLOOR, HUGE, shifted_exp_rows
from .._products import add_vector_matrix


@compiled(inline=True)
def _normalized(block, total, norm, r):
    """Divide a token's forward block by its sum ``total``, kept in ``norm[r]``; False if 0."""
    if total == 0.0:
        return False
    norm[r] = total
    scale = 1.0 / total
    for b in range(block.shape[0]):
        for c in range(block.shape[1]):
            block[b, c] *= scale
    return True


@compiled()
def _add_vector_matrix_twice(weights0, weights1, matrix, out0, out1):
    """:func:`._products.add_vector_matrix` for two weight vectors and one matrix.

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
def scaled_sequence2(unary, transitions, start, end, lo, hi, potentials, with_counts,
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
    log_z, track = shifted_exp_rows(unary, lo, hi, emission, log_z, any_forbidden)
    if np.isnan(log_z):
        return log_z

    # token 0: single labels
    total = 0.0
    for c in range(n_classes):
        alpha[0, 0, c] = exp_start[c] * emission[0, c]
        reach_first[c] = start[c] > -np.inf and unary[lo, c] > -np.inf
        if alpha[0, 0, c] < FLOOR and (reach_first[c] or not track):
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
                if v < FLOOR:
                    if not track:
                        return np.nan
                    if (reach_first[b] and transitions[b, c] > -np.inf
                            and unary[t, c] > -np.inf):
                        return np.nan
                elif track:
                    _mark(reach[cur], b, c)
                total += v
        if not _normalized(alpha[1], total, norm, 1):
            return np.nan
        prev, cur = cur, prev

    # tokens 2..n-1:
    # alpha[r, b, c] = emission[r, c] * sum_a alpha[r-1, a, b] * exp_forward[b, a, c]
    for r in range(2, n):
        t = lo + r
        current = alpha[r]
        previous = alpha[r - 1]
        current[:, :] = 0.0
        for b in range(n_classes):
            add_vector_matrix(previous[:, b], exp_forward[b], current[b])
        if track:
            reach[cur] = 0
        total = 0.0
        for b in range(n_classes):
            for c in range(n_classes):
                v = current[b, c] * emission[r, c]
                current[b, c] = v
                if v < FLOOR:
                    if not track:
                        return np.nan
                    if unary[t, c] > -np.inf and _reaches(reach[prev], allowed, b, c):
                        return np.nan
                elif track:
                    _mark(reach[cur], b, c)
                total += v
        if not _normalized(current, total, norm, r):
            return np.nan
        prev, cur = cur, prev

    final = 0.0
    if n == 1:
        for c in range(n_classes):
            term = alpha[0, 0, c] * exp_end[c]
            if term < FLOOR and (not track or (reach_first[c] and end[c] > -np.inf)):
                return np.nan
            final += term
    else:
        one = np.uint64(1)
        for b in range(n_classes):
            for c in range(n_classes):
                term = alpha[n - 1, b, c] * exp_end[c]
                if term < FLOOR:
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
                if not v < HUGE:
                    return np.nan
                following[b, r, c] = v
        if r >= 2:
            # beta[r-1, a, b] = sum_c exp_backward[b, c, a] * following[b, r, c]
            for b in range(n_classes):
                vector[:] = 0.0
                add_vector_matrix(following[b, r], exp_backward[b], vector)
                for a in range(n_classes):
                    if not vector[a] < HUGE:
                        return np.nan
                    beta[r - 1, a, b] = vector[a]
        else:
            for b in range(n_classes):
                total = 0.0
                for c in range(n_classes):
                    total += exp_trans[b, c] * following[b, 1, c]
                if not total < HUGE:
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
                add_vector_matrix(gathered[a, :n - 2], products, weights[b, a])
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
