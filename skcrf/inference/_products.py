"""The vector-matrix product the scaled passes share, in a fixed order of sums."""

from ._runtime.batch import compiled


@compiled(contract=True, inline=True)
def add_vector_matrix(weights, matrix, out):
    """``out[j] += sum_k weights[k] * matrix[k, j]``, for (K,) weights and a (K, J) matrix.

    Rows go four at a time, so that ``out`` is loaded and stored once per
    four rows, and each cell still adds ``weights[0] * matrix[0, j]``, then
    ``weights[1] * matrix[1, j]``, ... one by one in that order: the result
    is bitwise that of the one-row loop, which the order-1 lanes
    (:mod:`._order1_lanes`) reproduce. Four zero weights are skipped (zeros
    come from forbidden moves): adding ``0 * m`` changes no bit, since every
    matrix passed here is finite and every ``out`` non-negative.

    Called once per token by the scaled passes, so it is inlined into them
    and reads ``matrix[k, j]`` directly: a row view per ``k`` would cost two
    reference-count calls (atomic) each.
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
        for j in range(n_cols):
            v = out[j]
            v += w0 * matrix[k, j]
            v += w1 * matrix[k + 1, j]
            v += w2 * matrix[k + 2, j]
            v += w3 * matrix[k + 3, j]
            out[j] = v
    for k in range(full, n_rows):
        w = weights[k]
        if w != 0.0:
            for j in range(n_cols):
                out[j] += w * matrix[k, j]
