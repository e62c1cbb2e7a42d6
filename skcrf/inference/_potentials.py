"""Shifted exponentials of the shared potentials, in numpy, for the Python drivers.

What a batch needs of its ``(n_classes, n_classes)`` transitions and its
start and end scores is computed once per call by the driver, before the
kernels run: numpy does it in microseconds, and numba would compile one more
function per structure for it. Semantics are those of the numba helpers of
:mod:`._logspace` (a maximum ignores NaN; a maximum of ``-inf`` shifts by 0,
so that an all ``-inf`` row has exponentials of 0).
"""

import numpy as np


def shifted_exp(values):
    """``(max, exp(values - max))``; a max of -inf becomes 0, so its exponentials are 0."""
    values = np.asarray(values, dtype=np.float64)
    top = float(np.fmax.reduce(values, axis=None, initial=-np.inf))
    if top == -np.inf:
        top = 0.0
    return top, np.exp(values - top)


def _shift(maxima):
    """Maxima with -inf (an all -inf line) replaced by 0."""
    return np.where(maxima == -np.inf, 0.0, maxima)


def shifted_exp_by_column_and_row(matrix):
    """exp(matrix) shifted per column and per row so that nothing overflows.

    Returns ``col_max[j] = max_i M[i, j]``, ``exp_by_col[i, j] = exp(M[i, j] -
    col_max[j])``, ``row_max[i] = max_j M[i, j]`` and ``exp_by_row[i, j] =
    exp(M[i, j] - row_max[i])``. A column or row that is entirely -inf gets a
    shift of 0 and exponentials of 0.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    col_max = _shift(np.fmax.reduce(matrix, axis=0, initial=-np.inf))
    row_max = _shift(np.fmax.reduce(matrix, axis=1, initial=-np.inf))
    return (col_max, np.exp(matrix - col_max[np.newaxis, :]), row_max,
            np.exp(matrix - row_max[:, np.newaxis]))


def chain_scaled_potentials(transitions, start, end):
    """What the order-1 scaled pass needs: exponentials shifted by the overall maxima.

    Returns ``(trans_max, exp_trans, exp_trans_t, start_max, exp_start,
    end_max, exp_end, any_forbidden)``; the transitions' exponentials also
    transposed, for the backward step (see
    :func:`._order1.scaled_forward_backward`).
    """
    trans_max, exp_trans = shifted_exp(transitions)
    start_max, exp_start = shifted_exp(start)
    end_max, exp_end = shifted_exp(end)
    any_forbidden = bool(np.isneginf(transitions).any() or np.isneginf(start).any()
                         or np.isneginf(end).any())
    return (trans_max, exp_trans, np.ascontiguousarray(exp_trans.T), start_max, exp_start,
            end_max, exp_end, any_forbidden)


def chain2_potentials(transitions, trigram, start, end):
    """Everything an order-2 batch shares: the pair-to-pair scores and their exponentials.

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
    transitions = np.asarray(transitions, dtype=np.float64)
    n_classes = transitions.shape[0]
    score = np.ascontiguousarray(trigram + transitions[np.newaxis])
    tri_max, exp_tri = shifted_exp(score)
    exp_forward = np.ascontiguousarray(exp_tri.transpose(1, 0, 2))
    exp_backward = np.ascontiguousarray(exp_tri.transpose(1, 2, 0))
    trans_max, exp_trans = shifted_exp(transitions)
    start_max, exp_start = shifted_exp(start)
    end_max, exp_end = shifted_exp(end)
    # for each b, score[:, b, :] is the (a, c) matrix of the moves through b
    col_max = _shift(np.fmax.reduce(score, axis=0, initial=-np.inf))  # [b, c]
    row_max = _shift(np.fmax.reduce(score, axis=2, initial=-np.inf))  # [a, b]
    exp_by_col = np.exp(score - col_max[np.newaxis])
    exp_by_row = np.exp(score - row_max[:, :, np.newaxis])
    # allowed[b, c, w]: the bits of the feasible a, 64 a word, lowest a first
    n_words = (n_classes + 63) // 64
    feasible = np.zeros((n_classes, n_classes, n_words * 64), np.bool_)
    feasible[:, :, :n_classes] = (score > -np.inf).transpose(1, 2, 0)
    allowed = np.ascontiguousarray(
        np.packbits(feasible, axis=2, bitorder="little").view("<u8").astype(np.uint64))
    any_forbidden = bool(np.isneginf(score).any() or np.isneginf(transitions).any()
                         or np.isneginf(start).any() or np.isneginf(end).any())
    return (score, tri_max, exp_forward, exp_backward, trans_max, exp_trans, start_max,
            exp_start, end_max, exp_end, col_max, exp_by_col, row_max, exp_by_row, allowed,
            any_forbidden)


def tree_scaled_potentials(transitions, root):
    """(shifts, exp(transitions), its transpose, exp(root), whether some score is -inf).

    The exponentials are shifted by the maxima of the transitions and of the
    root scores; the shifts come first. A maximum of -inf (all forbidden)
    shifts by 0.
    """
    transitions = np.asarray(transitions, dtype=np.float64)
    root = np.asarray(root, dtype=np.float64)
    trans_max = float(np.fmax.reduce(transitions, axis=None, initial=-np.inf))
    root_max = float(np.fmax.reduce(root, axis=None, initial=-np.inf))
    forbidden = bool(not (trans_max > -np.inf and root_max > -np.inf)
                     or np.isneginf(transitions).any() or np.isneginf(root).any())
    if forbidden:
        trans_max = 0.0 if trans_max == -np.inf else trans_max
        root_max = 0.0 if root_max == -np.inf else root_max
    # the upward pass reads the exponentials by child label first
    return (trans_max, root_max, np.exp(transitions - trans_max),
            np.ascontiguousarray(np.exp(transitions.T - trans_max)), np.exp(root - root_max),
            forbidden)


def tree_potentials(transitions, root):
    """What both tree passes need, shared by every tree of a batch.

    The scaled pass's exponentials shifted by the overall maxima
    (:func:`tree_scaled_potentials`), and the exact pass's shifted by column
    and by row (:func:`shifted_exp_by_column_and_row`).
    """
    return (tree_scaled_potentials(transitions, root),
            shifted_exp_by_column_and_row(transitions))
