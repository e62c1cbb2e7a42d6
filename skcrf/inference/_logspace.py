"""Log-space numerics the chain kernels share: precision thresholds, shifted exponentials
and exact log-sum-exp reductions.

The kernels run a fast pass in the probability domain, scaled per token, and
fall back to an exact pass in log space for the few sequences whose scores
under- or overflow it; the thresholds below decide when.
"""

import numpy as np

from ._runtime.batch import compiled

#: Below this, a log-space sum of shifted exponentials may have lost terms to
#: underflow, so the cell is recomputed exactly. Terms are products of factors
#: <= 1, so a term that underflowed is < 1e-308: relative to a sum above 1e-280
#: it is far below rounding error.
TINY = 1e-280

#: The scaled pass gives up, and the exact log-space pass takes over, when a
#: forward value that a feasible path reaches falls below FLOOR before
#: normalization. Above it, a value carries full relative precision (a term
#: lost to underflow is < 1e-308, negligible next to it); below, it might be a
#: term that later dominates log Z. For the same reason a factored block of
#: probabilities that sums to no more than FLOOR is exponentiated again cell by
#: cell.
FLOOR = 1e-290

#: The scaled pass also gives up when a backward value rises above HUGE, before
#: it can overflow. Backward terms lost to underflow are always negligible: the
#: probability mass through a state is at most its backward value.
HUGE = 1e250


@compiled(inline=True)
def flat_max(values):
    """The maximum over all elements of ``values`` (-inf when every one is)."""
    top = -np.inf
    for v in values.flat:
        if v > top:
            top = v
    return top


@compiled()
def shifted_exp(values):
    """(max, exp(values - max)); a max of -inf becomes 0 so the exponentials are 0."""
    top = flat_max(values)
    if top == -np.inf:
        top = 0.0
    return top, np.exp(values - top)


@compiled()
def shifted_exp_into(values, out):
    """out = exp(values - max) for a vector; returns (max, whether some value is -inf).

    A max of -inf is returned as is, with ``out`` unwritten: no state is feasible.
    """
    top = -np.inf
    forbidden = False
    for j in range(values.shape[0]):
        if values[j] > top:
            top = values[j]
        elif values[j] == -np.inf:
            forbidden = True
    if top == -np.inf:
        return top, True
    for j in range(values.shape[0]):
        out[j] = np.exp(values[j] - top)
    return top, forbidden


@compiled()
def shifted_exp_rows(values, lo, hi, out, log_z, forbidden):
    """out[r] = exp(values[lo + r] - its max) for rows lo..hi-1, each max added to ``log_z``.

    Returns ``(log_z, forbidden)``: ``log_z`` is NaN, and ``out`` partly
    written, when some row is entirely -inf; ``forbidden`` turns True when some
    value is -inf.
    """
    for r in range(hi - lo):
        top, row_forbidden = shifted_exp_into(values[lo + r], out[r])
        if top == -np.inf:
            return np.nan, True
        log_z += top
        forbidden = forbidden or row_forbidden
    return log_z, forbidden


@compiled(inline=True)
def exp_underflowed(values, lo, n, rows):
    """Whether some finite ``values[lo + r, j]`` (r < n) has ``rows[r, j]`` below FLOOR.

    ``rows`` holds the rows' shifted exponentials: a possible label whose
    emission underflowed (a score more than ~667 below its token's best)
    would silently lose every path through it, though later potentials may
    make such a path the best, so the caller takes the exact pass. Called
    with ``values`` = ``rows`` it flags any emission below FLOOR.
    """
    for r in range(n):
        for j in range(rows.shape[1]):
            if rows[r, j] < FLOOR and values[lo + r, j] > -np.inf:
                return True
    return False


@compiled()
def shifted_rows(values, lo, hi, out):
    """out[r] = values[lo + r] - max(values[lo + r]) for rows lo..hi-1; the sum of the maxima.

    Why the exact passes shift every token's scores by their maximum, as the
    scaled pass does: a huge score on one token (a feature value of 1e17)
    added to the running forward or backward scores would round away their
    low digits, and with them what the other tokens contribute. Shifted, a
    token's best label scores 0 and nothing huge is ever added. A row that is
    entirely -inf is copied with a shift of 0.
    """
    total = 0.0
    for r in range(hi - lo):
        row = values[lo + r]
        top = shift_of(row)
        total += top
        out_row = out[r]
        for j in range(row.shape[0]):
            out_row[j] = row[j] - top
    return total


@compiled()
def shift_of(row):
    """The maximum of a vector, or 0 when every value is -inf: what to subtract from it."""
    top = -np.inf
    for j in range(row.shape[0]):
        if row[j] > top:
            top = row[j]
    return 0.0 if top == -np.inf else top


@compiled()
def shifted_exp_by_column_and_row(matrix):
    """exp(matrix) shifted per column and per row so that nothing overflows.

    Returns ``col_max[j] = max_i M[i, j]``, ``exp_by_col[i, j] = exp(M[i, j] - col_max[j])``,
    ``row_max[i] = max_j M[i, j]`` and ``exp_by_row[i, j] = exp(M[i, j] - row_max[i])``.
    A column or row that is entirely -inf gets a shift of 0 and exponentials of 0.
    """
    n_rows, n_cols = matrix.shape
    col_max = np.full(n_cols, -np.inf)
    row_max = np.full(n_rows, -np.inf)
    for i in range(n_rows):
        for j in range(n_cols):
            v = matrix[i, j]
            if v > col_max[j]:
                col_max[j] = v
            if v > row_max[i]:
                row_max[i] = v
    for j in range(n_cols):
        if col_max[j] == -np.inf:
            col_max[j] = 0.0
    for i in range(n_rows):
        if row_max[i] == -np.inf:
            row_max[i] = 0.0
    exp_by_col = np.empty((n_rows, n_cols))
    exp_by_row = np.empty((n_rows, n_cols))
    for i in range(n_rows):
        for j in range(n_cols):
            exp_by_col[i, j] = np.exp(matrix[i, j] - col_max[j])
            exp_by_row[i, j] = np.exp(matrix[i, j] - row_max[i])
    return col_max, exp_by_col, row_max, exp_by_row


@compiled()
def logsumexp(values):
    """log sum exp(values), over all elements; -inf if all are -inf."""
    top = flat_max(values)
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for v in values.flat:
        total += np.exp(v - top)
    return top + np.log(total)


@compiled()
def logsumexp_sum(a, b):
    """log sum_j exp(a[j] + b[j]), computed without shortcuts."""
    top = -np.inf
    for j in range(a.shape[0]):
        v = a[j] + b[j]
        if v > top:
            top = v
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for j in range(a.shape[0]):
        total += np.exp(a[j] + b[j] - top)
    return top + np.log(total)


@compiled()
def normalized_exp_sum(a, b, out):
    """out[j] = exp(a[j] + b[j]) / sum_k exp(a[k] + b[k]), for log-space vectors.

    Marginals from forward and backward scores are normalized this way, per
    token, rather than by exp(log Z): over long sequences the scores grow
    large and subtracting log Z would cancel away digits. Some a[j] + b[j]
    must be finite.
    """
    top = -np.inf
    for j in range(a.shape[0]):
        if a[j] + b[j] > top:
            top = a[j] + b[j]
    total = 0.0
    for j in range(a.shape[0]):
        out[j] = np.exp(a[j] + b[j] - top)
        total += out[j]
    for j in range(a.shape[0]):
        out[j] /= total


@compiled(inline=True)
def block_max(block):
    """The maximum of a 2-D block (-inf when every score is)."""
    top = -np.inf
    for i in range(block.shape[0]):
        for j in range(block.shape[1]):
            if block[i, j] > top:
                top = block[i, j]
    return top


@compiled(inline=True)
def _max_else_forbid(values, n_values, out, n_out):
    """The maximum of ``values[:n_values]``; if it is -inf, ``out[:n_out]`` becomes -inf."""
    shift = -np.inf
    for k in range(n_values):
        if values[k] > shift:
            shift = values[k]
    if shift == -np.inf:
        for k in range(n_out):
            out[k] = -np.inf
    return shift


@compiled()
def normalize_log_block(block):
    """block = exp(block) / sum exp(block) in place, for a 2-D block of log scores.

    Returns False, leaving ``block`` as it was, when every score is -inf.
    """
    n_rows, n_cols = block.shape
    top = block_max(block)
    if top == -np.inf:
        return False
    total = 0.0
    for i in range(n_rows):
        for j in range(n_cols):
            block[i, j] = np.exp(block[i, j] - top)
            total += block[i, j]
    for i in range(n_rows):
        for j in range(n_cols):
            block[i, j] /= total
    return True


@compiled()
def log_vector_matrix(base, values, matrix, col_max, exp_by_col, sums, out):
    """out[j] = base[j] + log sum_i exp(values[i] + matrix[i, j]).

    The sum is factored into exp(values - max(values)) and ``exp_by_col``,
    ``matrix`` exponentiated with its column maxima ``col_max`` taken out (see
    :func:`shifted_exp_by_column_and_row`), so that it needs one exponential
    per value instead of one per cell; a cell whose factored sum is below TINY
    is recomputed exactly. ``sums`` is scratch. ``i`` outer keeps
    ``exp_by_col`` and ``sums`` contiguous in the inner loop.
    """
    n_rows, n_cols = matrix.shape
    shift = _max_else_forbid(values, n_rows, out, n_cols)
    if shift == -np.inf:
        return
    for j in range(n_cols):
        sums[j] = 0.0
    for i in range(n_rows):
        s = np.exp(values[i] - shift)
        if s != 0.0:
            for j in range(n_cols):
                sums[j] += s * exp_by_col[i, j]
    for j in range(n_cols):
        if sums[j] > TINY:
            out[j] = base[j] + shift + col_max[j] + np.log(sums[j])
        else:
            out[j] = base[j] + logsumexp_sum(values, matrix[:, j])


@compiled()
def log_matrix_vector(matrix, values, row_max, exp_by_row, scaled, out):
    """out[i] = log sum_j exp(matrix[i, j] + values[j]).

    Factored as in :func:`log_vector_matrix`, with the row maxima ``row_max``
    taken out of ``exp_by_row``; ``scaled`` is scratch.
    """
    n_rows, n_cols = matrix.shape
    shift = _max_else_forbid(values, n_cols, out, n_rows)
    if shift == -np.inf:
        return
    for j in range(n_cols):
        scaled[j] = np.exp(values[j] - shift)
    for i in range(n_rows):
        total = 0.0
        for j in range(n_cols):
            total += exp_by_row[i, j] * scaled[j]
        if total > TINY:
            out[i] = shift + row_max[i] + np.log(total)
        else:
            out[i] = logsumexp_sum(matrix[i], values)


@compiled()
def add_pair_block(above, transitions, col_max, exp_by_col, below, counts, block, scaled):
    """Add the label-pair marginals of one link (a chain's step, a tree's edge) to ``counts``.

    The pair (a, b) has probability proportional to
    exp(above[a] + T[a, b] + below[b]) and the block sums to 1 over (a, b).
    It is normalized by its own sum rather than by exp(log Z): over long
    sequences the forward and backward scores grow large and subtracting log Z
    would cancel away digits. It is factored as
    exp(above - A) * exp(T - col_max) * exp(w - W), with
    w[b] = below[b] + col_max[b] (``col_max``, ``exp_by_col``:
    :func:`shifted_exp_by_column_and_row`), so that it needs
    2 * n_classes exponentials instead of n_classes ** 2, and exponentiated
    cell by cell where the factored product underflows. ``block`` and
    ``scaled`` are scratch. Nothing is added when every pair is infeasible.
    """
    n_classes = transitions.shape[0]
    top_a = -np.inf
    for i in range(n_classes):
        if above[i] > top_a:
            top_a = above[i]
    top_w = -np.inf
    for j in range(n_classes):
        if below[j] + col_max[j] > top_w:
            top_w = below[j] + col_max[j]
    if top_a == -np.inf or top_w == -np.inf:
        return
    for j in range(n_classes):
        scaled[j] = np.exp(below[j] + col_max[j] - top_w)
    total = 0.0
    for i in range(n_classes):
        a = np.exp(above[i] - top_a)
        for j in range(n_classes):
            block[i, j] = a * exp_by_col[i, j] * scaled[j]
            total += block[i, j]
    if not total > FLOOR:
        # the factored product underflowed: exponentiate each cell exactly
        for i in range(n_classes):
            for j in range(n_classes):
                block[i, j] = above[i] + transitions[i, j] + below[j]
        if not normalize_log_block(block):
            return
        total = 1.0
    for i in range(n_classes):
        for j in range(n_classes):
            counts[i, j] += block[i, j] / total
