"""What the order-1 chains of :mod:`.order1` and :mod:`.edges` share.

Both run the same scaled probability-domain pass and the same Viterbi; they
differ only in where a token's transition scores come from: one
``transitions`` matrix for every token, or ``edges[t]`` per token. The
routines here take a stack of (n_classes, n_classes) move blocks and a
``step``: token ``t`` uses block ``t * step``, so a step of 0 shares block 0
between all tokens and a step of 1 gives each token its own.
"""

import numpy as np

from .._runtime.batch import chunk_bounds, compiled, default_n_chunks, longest_sequence, run_chunks
from .._logspace import FLOOR, HUGE, shift_of
from .._products import add_vector_matrix


@compiled(contract=True)
def scaled_forward_backward(unary, moves, start, end, lo, hi, step, exp_moves, exp_moves_t,
                            exp_start, exp_end, track, log_z, emission, alpha, beta, norm,
                            reach, scratch, marginals):
    """Forward-backward of one sequence in the probability domain, scaled per token.

    Rabiner's scaling: alpha[r] is normalized to sum 1 by norm[r], and beta[r]
    is divided by the same norm[r + 1], so that alpha[r] * beta[r] is the
    marginal. It needs n_classes exponentials per token instead of the
    log-space pass's several n_classes.

    Parameters
    ----------
    unary, start, end, lo, hi
        As in :mod:`.order1`.
    moves : (n_blocks, n_classes, n_classes) float64
        Log transition scores: token ``t`` (absolute) moves by ``moves[t * step]``.
        Only read to tell a structural zero (``-inf``) from underflow.
    step : int
        0 or 1, see the module docstring.
    exp_moves : (n_blocks, n_classes, n_classes) float64
        Shifted exponentials of the moves, indexed by the token's position
        ``r = t - lo`` in the sequence: token ``lo + r`` uses ``exp_moves[r * step]``.
    exp_moves_t : (n_blocks, n_classes, n_classes) or (0, n_classes, n_classes) float64
        The blocks of ``exp_moves`` transposed, for the backward step to read
        their columns as contiguous rows; or an empty stack, and the columns are
        read in place (the per-token blocks of :mod:`.edges`, exponentiated
        per sequence: transposing them would add a pass over every block).
        Either way the results are bitwise the same.
    exp_start, exp_end : (n_classes,) float64
        Shifted exponentials of ``start`` and ``end``.
    track : bool
        Whether some score is -inf, so that reachability matters.
    log_z : float
        The sum of all the shifts taken out of the exponentials.
    emission : (>= n, n_classes) float64
        Row r holds the shifted ``exp(unary[lo + r])``. On success rows 1..n-1
        hold ``emission[r] * beta[r] / norm[r]`` instead, the backward message
        into token r, from which the callers make pair marginals.
    alpha, beta, norm, reach, scratch
        Scratch; ``reach`` (2, n_classes) tracks which states a path of finite
        score reaches (it only matters when ``track``). On success alpha, beta
        and norm hold the scaled forward and backward values.
    marginals : (n_tokens, n_classes) float64
        Output: rows lo..hi-1, written only on success.

    Returns
    -------
    float
        log Z, or NaN when the precision checks fail (or the sequence is
        infeasible), in which case nothing was written and the caller runs the
        exact pass.
    """
    n_classes = unary.shape[1]
    n = hi - lo
    prev, cur = 0, 1
    total = 0.0
    for j in range(n_classes):
        alpha[0, j] = exp_start[j] * emission[0, j]
        reach[prev, j] = start[j] > -np.inf and unary[lo, j] > -np.inf
        if alpha[0, j] < FLOOR and (reach[prev, j] or not track):
            return np.nan
        total += alpha[0, j]
    if total == 0.0:
        return np.nan  # no feasible first label: the exact pass returns -inf
    norm[0] = total
    inverse = 1.0 / total
    for j in range(n_classes):
        alpha[0, j] *= inverse
    for r in range(1, n):
        t = lo + r
        exp_block = exp_moves[r * step]
        block = moves[t * step]
        for j in range(n_classes):
            alpha[r, j] = 0.0
        add_vector_matrix(alpha[r - 1], exp_block, alpha[r])
        total = 0.0
        for j in range(n_classes):
            alpha[r, j] *= emission[r, j]
            if alpha[r, j] < FLOOR:
                if not track:
                    return np.nan
                # an unreached state has alpha exactly 0; a reached one that
                # fell below the floor may have lost its dominant terms
                reached = False
                if unary[t, j] > -np.inf:
                    for i in range(n_classes):
                        if reach[prev, i] and block[i, j] > -np.inf:
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
        inverse = 1.0 / total
        for j in range(n_classes):
            alpha[r, j] *= inverse
        prev, cur = cur, prev
    final = 0.0
    for j in range(n_classes):
        term = alpha[n - 1, j] * exp_end[j]
        if term < FLOOR and (not track or (reach[prev, j] and end[j] > -np.inf)):
            return np.nan
        final += term
    if final == 0.0:
        return np.nan

    for j in range(n_classes):
        beta[n - 1, j] = exp_end[j] / final
    for r in range(n - 2, -1, -1):
        exp_block = exp_moves[(r + 1) * step]
        # the message into token r + 1, kept in its emission row, which
        # nothing reads any more: the callers' pair marginals need it too
        following = emission[r + 1]
        inverse = 1.0 / norm[r + 1]
        for j in range(n_classes):
            following[j] *= beta[r + 1, j] * inverse
            if not following[j] < HUGE:
                return np.nan
        # j outer, i inner: each beta[r, i] is still summed over j in order, but
        # consecutive steps add to different cells instead of waiting on one sum
        backward = beta[r]
        for i in range(n_classes):
            backward[i] = 0.0
        if exp_moves_t.shape[0] > 0:
            add_vector_matrix(following, exp_moves_t[(r + 1) * step], backward)
        else:
            for j in range(n_classes):
                message = following[j]
                for i in range(n_classes):
                    backward[i] += exp_block[i, j] * message
        for i in range(n_classes):
            if not backward[i] < HUGE:
                return np.nan

    # every check passed: only now write the outputs
    for r in range(n):
        log_z += np.log(norm[r])
        for j in range(n_classes):
            marginals[lo + r, j] = alpha[r, j] * beta[r, j]
    log_z += np.log(final)
    return log_z


@compiled()
def _subtract_row_max(row):
    top = shift_of(row)
    for j in range(row.shape[0]):
        row[j] -= top


def best_paths(unary, moves, step, start, end, offsets):
    """Most likely label path of every sequence; token ``t`` moves by ``moves[t * step]``.

    Ties go to the lowest label id. A move of ``-inf`` never appears in a
    returned path unless the sequence has no feasible path at all.

    Each token's unary scores are taken relative to their maximum, and each
    row of path scores is shifted so that its best is 0 (neither changes the
    best path): a huge score on one token (a feature value of 1e17) then
    never enters the scores carried to the next tokens, which would round
    away their low digits and change their labels.

    Returns
    -------
    label_ids : (n_tokens,) int64
    """
    n_tokens, n_classes = unary.shape
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    label_ids = np.zeros(n_tokens, np.int64)
    run_chunks(_best_path_chunks, n_chunks, bounds, unary, moves, step, start, end, offsets,
               label_ids)
    return label_ids


@compiled()
def _best_path_chunks(chunk_lo, chunk_hi, bounds, unary, moves, step, start, end, offsets,
                      label_ids):
    """The best paths of the chunks' sequences into ``label_ids``."""
    n_classes = unary.shape[1]
    for c in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        # score[r, j]: best score of a path ending in label j at token lo + r;
        # backpointer[r, j]: that path's label at the token before
        score = np.empty((longest, n_classes))
        backpointer = np.zeros((longest, n_classes), np.int32)
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if hi == lo:
                continue
            top = shift_of(unary[lo])
            for j in range(n_classes):
                score[0, j] = start[j] + (unary[lo, j] - top)
            _subtract_row_max(score[0])
            for t in range(lo + 1, hi):
                r = t - lo
                block = moves[t * step]
                top = shift_of(unary[t])
                # j outer keeps each cell's running maximum in locals: with i
                # outer, every improvement is a store, and those compile to
                # masked stores, which are slow on some processors
                for j in range(n_classes):
                    best = -np.inf
                    best_i = 0
                    for i in range(n_classes):
                        v = score[r - 1, i] + block[i, j]
                        if v > best:
                            best = v
                            best_i = i
                    score[r, j] = best + (unary[t, j] - top)
                    backpointer[r, j] = best_i
                _subtract_row_max(score[r])
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
