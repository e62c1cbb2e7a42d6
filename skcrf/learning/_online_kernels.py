"""Numba kernels of the online solvers: one weight update per visit of a sequence.

The solver's state lives in arrays the Python side owns (see
:class:`skcrf.learning.online.OnlineState`):

- ``w`` (n_parameters,): the weights, scaled: the model's weights are
  ``counters[SCALE] * w``, so that the L2 weight decay of a step is one
  multiplication of the scale instead of a pass over every weight;
- ``counters`` (N_COUNTERS,): the scalars a step updates (scale, step count,
  the cumulative L1 penalty, the averaging sums, the epoch's loss);
- ``l1_applied`` (n_parameters,) or empty: the L1 penalty each weight has
  received so far (Tsuruoka, Tsujii & Ananiadou, 2009), in model units;
- ``average_sum`` (n_parameters,) or empty: with ``average_scale`` (a
  counter), the sum of the model's weights after every averaged step is
  ``average_scale * w + average_sum``;
- ``covariance`` (n_parameters,) or empty: AROW's diagonal confidence.

``settings`` (N_SETTINGS,) holds the solver and its constants. A *visit* is
one step on one sequence with a factor: 1, or the fractional part of a
sample weight (an integer weight is that many visits, see
:func:`skcrf.learning.online.visits_of_weights`).

Two ways to drive the steps:

- :func:`sgd_chain_visits` and :func:`margin_chain_visits` run all the visits
  of an epoch of a plain order-1 chain in one call: unary scores from the
  sparse features, forward-backward (or Viterbi), and the sparse update
  (:func:`exact_chain_visit` takes the rare visit whose scores the scaled
  pass cannot);
- the structures without such a kernel describe each visited sequence's
  statistics in token form (:class:`~skcrf.structures._parameters.TokenStatistics`):
  the Python driver gathers them into a sparse direction with
  :func:`collect_rows` and :func:`collect_dense`, then :func:`apply_direction`
  takes the step. Both routes apply the same update rules.

Nothing here validates its inputs; the Python side checks them once.
"""

import numpy as np

from ..inference._batch import compiled
from ..inference.chain import (chain_potentials, chain_workspace, emission_posteriors,
                               sequence_posteriors)

# --- the solvers -----------------------------------------------------------------------

SGD, PERCEPTRON, PASSIVE_AGGRESSIVE, AROW = 0, 1, 2, 3

# --- settings: the solver's constants ------------------------------------------------

#: Which solver (one of the ids above).
SOLVER = 0
#: L2 coefficient per unit of visit factor: ``alpha * (1 - l1_ratio) / n``, n the
#: epoch's total sample weight.
L2 = 1
#: L1 coefficient per unit of visit factor, likewise.
L1 = 2
#: Initial learning rate.
ETA0 = 3
#: Regularization per unit of visit factor that the "optimal" schedule divides by.
LAMBDA = 4
#: 0: ``eta0 / (1 + eta0 * lambda * t)`` ("optimal"); 1: ``eta0`` ("constant").
SCHEDULE = 5
#: The passive-aggressive solvers' aggressiveness ``C``.
AGGRESSIVENESS = 6
#: 0: PA (no slack), 1: PA-I (hinge), 2: PA-II (squared hinge).
PA_TYPE = 7
#: Whether the margin asks for ``sqrt(Hamming distance)`` (1) or 1 (0) (PA only).
ERROR_SENSITIVE = 8
#: AROW's ``r``: the larger, the smaller each update.
GAMMA = 9
#: The step count from which steps enter the average (a huge value: never).
AVERAGE_START = 10
N_SETTINGS = 11

# --- counters: the state's scalars -----------------------------------------------------

SCALE = 0
#: Steps taken (visits), all calls together: the learning-rate schedule's ``t``.
STEPS = 1
#: The L1 penalty a weight would have received if every step had touched it.
L1_TOTAL = 2
#: Coefficient of ``w`` in the sum of the averaged weights.
AVERAGE_SCALE = 3
#: Sum of the factors of the averaged steps: the average's denominator.
AVERAGE_WEIGHT = 4
#: The epoch's loss, summed over its visits (reset by the driver).
LOSS = 5
#: Visits of the epoch whose best labelling was wrong (margin solvers).
MISTAKES = 6
#: 1 once a step met a non-finite log Z or score: the driver stops and raises.
FAILED = 7
N_COUNTERS = 8

#: Below this scale, the weights are multiplied out (one pass over ``w``) and the
#: scale reset to 1, before the products underflow.
RESCALE_BELOW = 1e-9


@compiled(inline=True)
def learning_rate(settings, steps):
    """The step size of step number ``steps`` (0 for the first)."""
    eta0 = settings[ETA0]
    if settings[SCHEDULE] == 0.0:
        return eta0 / (1.0 + eta0 * settings[LAMBDA] * steps)
    return eta0


@compiled()
def begin_step(settings, counters, factor):
    """Start a step: decay the scale by the step's L2 share; return the learning rate.

    The weights the step's statistics are computed at are the decayed ones
    (as in CRFsuite's l2sgd). Only SGD decays; the other solvers keep the
    scale at 1 and take a rate of 1.
    """
    if settings[SOLVER] != SGD:
        return 1.0
    eta = learning_rate(settings, counters[STEPS])
    counters[SCALE] *= 1.0 - eta * factor * settings[L2]
    return eta


@compiled(inline=True)
def _clip_l1(w, i, scale, inverse_scale, total, l1_applied, average_sum, average_scale,
             averaging):
    """Apply the L1 penalty weight ``i`` still owes (cumulative penalty), clipped at zero.

    The weight moves toward zero by what the steps so far would have taken
    from it (``total``) plus what it has already received (``l1_applied``,
    signed), and stops at zero. Applying it twice in a step changes nothing
    the second time.
    """
    z = w[i]
    if z > 0.0:
        w[i] = max(0.0, z - (total + l1_applied[i]) * inverse_scale)
    elif z < 0.0:
        w[i] = min(0.0, z + (total - l1_applied[i]) * inverse_scale)
    else:
        return
    change = w[i] - z
    if change != 0.0:
        l1_applied[i] += scale * change
        if averaging:
            average_sum[i] -= average_scale * change


@compiled()
def end_step(settings, counters, factor, w, average_sum):
    """Finish a step: count it, add it to the average, rescale tiny scales."""
    steps = counters[STEPS]
    if steps >= settings[AVERAGE_START]:
        counters[AVERAGE_SCALE] += factor * counters[SCALE]
        counters[AVERAGE_WEIGHT] += factor
    counters[STEPS] = steps + 1.0
    scale = counters[SCALE]
    if scale < RESCALE_BELOW:
        # sum of averaged weights = A * w + U: w times scale, A divided by it
        for i in range(w.shape[0]):
            w[i] *= scale
        counters[AVERAGE_SCALE] /= scale
        counters[SCALE] = 1.0


# --- the sparse direction of the generic route ----------------------------------------


@compiled()
def collect_rows(delta, mark, touched, n_touched, offset, pair_ptr, pair_labels, data,
                 indices, indptr, binary, lo, hi, rows, factor, keep_zeros):
    """Add ``factor`` times the statistics of tokens lo..hi-1 to the direction ``delta``.

    ``rows`` (hi - lo, n_labels) holds each token's coefficient per label of
    the pair block that starts at ``offset`` in ``w``: pair ``p`` of a token's
    feature gets ``value * rows[t - lo, pair_labels[p]]``. Every weight added
    to is listed once in ``touched`` (``mark`` remembers which are); with
    ``keep_zeros`` a zero coefficient lists its weight too (SGD's L1 penalty
    then reaches every weight of the sequence's features). Returns the new
    number of touched weights.
    """
    for t in range(lo, hi):
        r = t - lo
        for k in range(indptr[t], indptr[t + 1]):
            value = 1.0 if binary else data[k]
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                c = rows[r, pair_labels[p]]
                if c == 0.0 and not keep_zeros:
                    continue
                i = offset + p
                if not mark[i]:
                    mark[i] = True
                    touched[n_touched] = i
                    n_touched += 1
                delta[i] += factor * value * c
    return n_touched


@compiled()
def collect_dense(delta, mark, touched, n_touched, offset, values, factor, keep_zeros):
    """Add ``factor * values`` (a block of ``w`` from ``offset``, flattened) to ``delta``."""
    for k in range(values.shape[0]):
        c = values[k]
        if c == 0.0 and not keep_zeros:
            continue
        i = offset + k
        if not mark[i]:
            mark[i] = True
            touched[n_touched] = i
            n_touched += 1
        delta[i] += factor * c
    return n_touched


@compiled()
def rows_score(w, offset, pair_ptr, pair_labels, data, indices, indptr, binary, lo, hi,
               rows):
    """``sum_t sum_p value * rows[t - lo, label(p)] * w[offset + p]``: a labelling's score part."""
    total = 0.0
    for t in range(lo, hi):
        r = t - lo
        for k in range(indptr[t], indptr[t + 1]):
            value = 1.0 if binary else data[k]
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                c = rows[r, pair_labels[p]]
                if c != 0.0:
                    total += value * c * w[offset + p]
    return total


@compiled()
def apply_direction(settings, counters, w, l1_applied, average_sum, covariance, delta,
                    mark, touched, n_touched, eta, factor, cost, hamming):
    """Take the step along the collected direction, then clear it.

    SGD: ``delta`` is the loss gradient of the visit (expected minus gold
    statistics, times the factor); the weights move by ``-eta * delta`` and
    then pay their L1 penalty. Margin solvers: ``delta`` is the gold minus
    the predicted statistics; ``cost`` is the predicted labelling's score
    minus the gold one's, ``hamming`` the number of wrong labels (0: no
    update).
    """
    solver = settings[SOLVER]
    scale = counters[SCALE]
    averaging = average_sum.shape[0] > 0
    average_scale = counters[AVERAGE_SCALE]
    if solver == SGD:
        gain = eta / scale
        for k in range(n_touched):
            i = touched[k]
            change = -gain * delta[i]
            w[i] += change
            if averaging:
                average_sum[i] -= average_scale * change
        if settings[L1] > 0.0:
            counters[L1_TOTAL] += eta * factor * settings[L1]
            total = counters[L1_TOTAL]
            inverse_scale = 1.0 / scale
            for k in range(n_touched):
                _clip_l1(w, touched[k], scale, inverse_scale, total, l1_applied,
                         average_sum, average_scale, averaging)
    elif hamming > 0:
        step = margin_step(settings, covariance, delta, touched, n_touched, cost, hamming)
        if step != 0.0:
            arow = solver == AROW
            beta = factor / settings[GAMMA]
            for k in range(n_touched):
                i = touched[k]
                d = delta[i]
                if arow:
                    change = factor * step * covariance[i] * d
                    covariance[i] = 1.0 / (1.0 / covariance[i] + beta * d * d)
                else:
                    change = factor * step * d
                w[i] += change
                if averaging:
                    average_sum[i] -= average_scale * change
    for k in range(n_touched):
        i = touched[k]
        delta[i] = 0.0
        mark[i] = False


@compiled()
def margin_step(settings, covariance, delta, touched, n_touched, cost, hamming):
    """The step length of a margin solver along ``delta`` (0: no update).

    The perceptron steps by 1. PA (Crammer et al., 2006) by ``loss / ||delta||^2``,
    capped at C (PA-I) or damped by ``1 / (2C)`` (PA-II), with the loss
    ``cost + sqrt(hamming)`` (``+ 1`` when not error-sensitive), as CRFsuite's
    pa. AROW (Crammer, Kulesza & Dredze, 2009) by ``(cost + hamming) / (r +
    delta' Sigma delta)``, as CRFsuite's arow.
    """
    solver = settings[SOLVER]
    if solver == PERCEPTRON:
        return 1.0
    if solver == PASSIVE_AGGRESSIVE:
        norm2 = 0.0
        for k in range(n_touched):
            d = delta[touched[k]]
            norm2 += d * d
        if norm2 == 0.0:
            return 0.0
        loss = cost + (np.sqrt(hamming) if settings[ERROR_SENSITIVE] != 0.0 else 1.0)
        kind = settings[PA_TYPE]
        if kind == 1.0:
            return min(settings[AGGRESSIVENESS], loss / norm2)
        if kind == 2.0:
            return loss / (norm2 + 0.5 / settings[AGGRESSIVENESS])
        return loss / norm2
    frac = settings[GAMMA]
    for k in range(n_touched):
        i = touched[k]
        d = delta[i]
        frac += d * d * covariance[i]
    return (cost + hamming) / frac


# --- the order-1 chain's epoch in one call --------------------------------------------


@compiled(inline=True)
def _token_scores(w, scale, pair_ptr, pair_labels, data, indices, indptr, binary, lo, hi,
                  unary):
    """``unary[r] = scale * (the token's features x their pair weights)`` for tokens lo..hi-1."""
    n_classes = unary.shape[1]
    for t in range(lo, hi):
        r = t - lo
        row = unary[r]
        for j in range(n_classes):
            row[j] = 0.0
        for k in range(indptr[t], indptr[t + 1]):
            value = 1.0 if binary else data[k]
            col = indices[k]
            first = pair_ptr[col]
            last = pair_ptr[col + 1]
            if last - first == n_classes:
                # a feature with every label (a frequent one): labels 0..C-1 in order
                for j in range(n_classes):
                    row[j] += value * w[first + j]
            else:
                for p in range(first, last):
                    row[pair_labels[p]] += value * w[p]
        for j in range(n_classes):
            row[j] *= scale


@compiled()
def _chain_potentials_of(w, scale, trans_at, start_at, end_at, transition_mask, start_mask,
                         end_mask, transitions, start, end):
    """The model's transition, start and end scores (``-inf`` where forbidden), in place."""
    n_classes = start.shape[0]
    for i in range(n_classes):
        for j in range(n_classes):
            transitions[i, j] = scale * w[trans_at + i * n_classes + j] + transition_mask[i, j]
        start[i] = scale * w[start_at + i] + start_mask[i]
        end[i] = scale * w[end_at + i] + end_mask[i]


@compiled()
def _path_score(unary, transitions, start, end, labels, lo, n):
    """Score of the labelling ``labels[lo:lo + n]`` under the potentials."""
    total = start[labels[lo]] + end[labels[lo + n - 1]] + unary[0, labels[lo]]
    for r in range(1, n):
        total += transitions[labels[lo + r - 1], labels[lo + r]] + unary[r, labels[lo + r]]
    return total


@compiled()
def _best_path(unary, transitions, start, end, n, score, backpointer, path):
    """Viterbi over one sequence's potentials into ``path[:n]``; returns the path's score.

    Ties go to the lowest label id, as :func:`skcrf.inference.chain.viterbi`.
    """
    n_classes = unary.shape[1]
    for j in range(n_classes):
        score[0, j] = start[j] + unary[0, j]
    for r in range(1, n):
        for j in range(n_classes):
            best = -np.inf
            best_i = 0
            for i in range(n_classes):
                v = score[r - 1, i] + transitions[i, j]
                if v > best:
                    best = v
                    best_i = i
            score[r, j] = best + unary[r, j]
            backpointer[r, j] = best_i
    best = -np.inf
    best_j = 0
    for j in range(n_classes):
        v = score[n - 1, j] + end[j]
        if v > best:
            best = v
            best_j = j
    path[n - 1] = best_j
    for r in range(n - 1, 0, -1):
        best_j = backpointer[r, best_j]
        path[r - 1] = best_j
    return best


@compiled(inline=True)
def _shifted_exp_into(values, out):
    """``out = exp(values - max)`` (any shape); returns the max (0 if all are ``-inf``)."""
    top = -np.inf
    flat_values = values.ravel()
    flat_out = out.ravel()
    for k in range(flat_values.shape[0]):
        if flat_values[k] > top:
            top = flat_values[k]
    if top == -np.inf:
        top = 0.0
    for k in range(flat_values.shape[0]):
        flat_out[k] = np.exp(flat_values[k] - top)
    return top


@compiled()
def _scaled_chain_potentials(transitions, start, end, buffers):
    """The potentials tuple of :func:`~skcrf.inference.chain.chain_potentials`, into ``buffers``.

    Only what the scaled pass reads is computed: the exact pass's shifted
    exponentials by column and by row (the first four items) are left as
    they are: only :func:`exact_chain_visit` needs them, for the rare
    sequence that the scaled pass cannot take.
    """
    (col_max, exp_by_col, row_max, exp_by_row, exp_trans, exp_trans_t, exp_start,
     exp_end) = buffers
    n_classes = start.shape[0]
    trans_max = _shifted_exp_into(transitions, exp_trans)
    for i in range(n_classes):
        for j in range(n_classes):
            exp_trans_t[j, i] = exp_trans[i, j]
    start_max = _shifted_exp_into(start, exp_start)
    end_max = _shifted_exp_into(end, exp_end)
    any_forbidden = False
    for i in range(n_classes):
        if start[i] == -np.inf or end[i] == -np.inf:
            any_forbidden = True
        for j in range(n_classes):
            if transitions[i, j] == -np.inf:
                any_forbidden = True
    return (col_max, exp_by_col, row_max, exp_by_row, trans_max, exp_trans, exp_trans_t,
            start_max, exp_start, end_max, exp_end, any_forbidden)


@compiled()
def _potential_buffers(n_classes):
    return (np.zeros(n_classes), np.zeros((n_classes, n_classes)), np.zeros(n_classes),
            np.zeros((n_classes, n_classes)), np.empty((n_classes, n_classes)),
            np.empty((n_classes, n_classes)), np.empty(n_classes), np.empty(n_classes))


@compiled()
def _scaled_chain_posteriors(unary, transitions, start, end, n, marginals, counts, work,
                             buffers):
    """log Z, marginals (rows 0..n-1) and transition counts of one sequence, or NaN.

    The scaled pass of :func:`~skcrf.inference.chain.emission_posteriors` on
    the exponentiated unary rows. NaN when its precision checks fail: the
    caller then runs the exact pass (:func:`exact_chain_visit`), a kernel of
    its own, compiled only by those whose data need it.
    """
    n_classes = unary.shape[1]
    potentials = _scaled_chain_potentials(transitions, start, end, buffers)
    emission = work[2]
    log_scale = 0.0
    for r in range(n):
        top = unary[r, 0]
        for j in range(1, n_classes):
            if unary[r, j] > top:
                top = unary[r, j]
        log_scale += top
        for j in range(n_classes):
            emission[r, j] = np.exp(unary[r, j] - top)
    for i in range(n_classes):
        for j in range(n_classes):
            counts[i, j] = 0.0
    return emission_posteriors(transitions, start, end, n, log_scale, potentials,
                               np.bool_(True), marginals, counts, work)


@compiled()
def _sgd_chain_update(w, gain, pair_ptr, pair_labels, data, indices, indptr, binary, lo, hi,
                      label_ids, marginals, counts, trans_at, start_at, end_at, average_sum,
                      average_scale, averaging, coefficients):
    """``w -= gain * (expected - gold statistics)`` for one sequence, in place.

    Each token's step per label, ``-gain * (marginal - gold indicator)``, is
    computed once into ``coefficients`` and then added to the pairs of each
    of its features.
    """
    n_classes = marginals.shape[1]
    n = hi - lo
    for t in range(lo, hi):
        r = t - lo
        for j in range(n_classes):
            coefficients[j] = -gain * marginals[r, j]
        coefficients[label_ids[t]] += gain
        for k in range(indptr[t], indptr[t + 1]):
            value = 1.0 if binary else data[k]
            col = indices[k]
            first = pair_ptr[col]
            last = pair_ptr[col + 1]
            if last - first == n_classes:
                if averaging:
                    for j in range(n_classes):
                        change = value * coefficients[j]
                        w[first + j] += change
                        average_sum[first + j] -= average_scale * change
                else:
                    for j in range(n_classes):
                        w[first + j] += value * coefficients[j]
            else:
                for p in range(first, last):
                    change = value * coefficients[pair_labels[p]]
                    w[p] += change
                    if averaging:
                        average_sum[p] -= average_scale * change
    # the gold transitions join the expected counts as -1s
    for t in range(lo + 1, hi):
        counts[label_ids[t - 1], label_ids[t]] -= 1.0
    for i in range(n_classes):
        for j in range(n_classes):
            change = -gain * counts[i, j]
            w[trans_at + i * n_classes + j] += change
            if averaging:
                average_sum[trans_at + i * n_classes + j] -= average_scale * change
    first = label_ids[lo]
    last = label_ids[hi - 1]
    for j in range(n_classes):
        g_start = marginals[0, j] - 1.0 if j == first else marginals[0, j]
        g_end = marginals[n - 1, j] - 1.0 if j == last else marginals[n - 1, j]
        change = -gain * g_start
        w[start_at + j] += change
        if averaging:
            average_sum[start_at + j] -= average_scale * change
        change = -gain * g_end
        w[end_at + j] += change
        if averaging:
            average_sum[end_at + j] -= average_scale * change


@compiled()
def _sgd_chain_l1(w, scale, total, l1_applied, pair_ptr, indices, indptr, lo, hi, dense_lo,
                  dense_hi, average_sum, average_scale, averaging):
    """The L1 penalty every weight the sequence touched owes (see :func:`_clip_l1`)."""
    inverse_scale = 1.0 / scale
    for t in range(lo, hi):
        for k in range(indptr[t], indptr[t + 1]):
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                _clip_l1(w, p, scale, inverse_scale, total, l1_applied, average_sum,
                         average_scale, averaging)
    for i in range(dense_lo, dense_hi):
        _clip_l1(w, i, scale, inverse_scale, total, l1_applied, average_sum, average_scale,
                 averaging)


@compiled(inline=True)
def _touch(delta, mark, touched, n_touched, i, change):
    """``delta[i] += change``, listing ``i`` in ``touched`` if new; the new count."""
    if not mark[i]:
        mark[i] = True
        touched[n_touched] = i
        n_touched += 1
    delta[i] += change
    return n_touched


@compiled()
def _collect_path_difference(delta, mark, touched, pair_ptr, pair_labels, data, indices,
                             indptr, binary, lo, hi, label_ids, path, trans_at, start_at,
                             end_at, n_classes, factor):
    """The direction gold minus predicted path of one chain, into ``delta``; its size.

    Only tokens whose predicted label is wrong add state statistics: the
    others' cancel. A (feature, label) pair without a weight adds nothing.
    """
    n_touched = 0
    n = hi - lo
    for t in range(lo, hi):
        gold = label_ids[t]
        guess = path[t - lo]
        if gold == guess:
            continue
        for k in range(indptr[t], indptr[t + 1]):
            value = 1.0 if binary else data[k]
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                j = pair_labels[p]
                if j == gold:
                    c = value
                elif j == guess:
                    c = -value
                else:
                    continue
                n_touched = _touch(delta, mark, touched, n_touched, p, factor * c)
    for t in range(lo + 1, hi):
        r = t - lo
        a = trans_at + label_ids[t - 1] * n_classes + label_ids[t]
        b = trans_at + path[r - 1] * n_classes + path[r]
        if a == b:
            continue
        n_touched = _touch(delta, mark, touched, n_touched, a, factor)
        n_touched = _touch(delta, mark, touched, n_touched, b, -factor)
    n_touched = _touch(delta, mark, touched, n_touched, start_at + label_ids[lo], factor)
    n_touched = _touch(delta, mark, touched, n_touched, start_at + path[0], -factor)
    n_touched = _touch(delta, mark, touched, n_touched, end_at + label_ids[hi - 1], factor)
    n_touched = _touch(delta, mark, touched, n_touched, end_at + path[n - 1], -factor)
    return n_touched


@compiled()
def _chain_scratch(longest, n_classes):
    """The per-visit buffers of the chain's epoch kernels, for sequences up to ``longest``."""
    size = max(longest, 1)
    return (np.empty((size, n_classes)), np.empty((size, n_classes)),
            np.empty((n_classes, n_classes)), np.empty((n_classes, n_classes)),
            np.empty(n_classes), np.empty(n_classes), np.empty(n_classes))


@compiled(inline=True)
def _visit_potentials(w, scale, pair_ptr, pair_labels, data, indices, indptr, binary, lo, hi,
                      trans_at, start_at, end_at, transition_mask, start_mask, end_mask,
                      unary, transitions, start, end):
    _token_scores(w, scale, pair_ptr, pair_labels, data, indices, indptr, binary, lo, hi,
                  unary)
    _chain_potentials_of(w, scale, trans_at, start_at, end_at, transition_mask, start_mask,
                         end_mask, transitions, start, end)


@compiled(inline=True)
def _sgd_chain_step(settings, counters, w, l1_applied, average_sum, eta, factor, log_z,
                    gold_score, pair_ptr, pair_labels, data, indices, indptr, binary, lo, hi,
                    label_ids, marginals, counts, trans_at, start_at, end_at, coefficients):
    """The rest of an SGD visit once its posteriors are known: loss, update, L1, end."""
    loss = log_z - gold_score
    if not np.isfinite(loss):
        counters[FAILED] = 1.0
        return
    counters[LOSS] += factor * loss
    scale = counters[SCALE]
    averaging = average_sum.shape[0] > 0
    average_scale = counters[AVERAGE_SCALE]
    _sgd_chain_update(w, eta * factor / scale, pair_ptr, pair_labels, data, indices, indptr,
                      binary, lo, hi, label_ids, marginals, counts, trans_at, start_at, end_at,
                      average_sum, average_scale, averaging, coefficients)
    if settings[L1] > 0.0:
        counters[L1_TOTAL] += eta * factor * settings[L1]
        _sgd_chain_l1(w, scale, counters[L1_TOTAL], l1_applied, pair_ptr, indices, indptr,
                      lo, hi, trans_at, end_at + coefficients.shape[0], average_sum,
                      average_scale, averaging)
    end_step(settings, counters, factor, w, average_sum)


@compiled()
def sgd_chain_visits(settings, counters, w, l1_applied, average_sum, visit_sequences,
                     visit_factors, first_visit, data, indices, indptr, binary, offsets,
                     label_ids, pair_ptr, pair_labels, trans_at, start_at, end_at,
                     transition_mask, start_mask, end_mask, longest):
    """SGD's visits of a plain order-1 chain from ``first_visit`` on, in order, in place.

    Per visit: the learning rate and the L2 decay, the unary scores of the
    sequence's tokens from its sparse features, forward-backward (the scaled
    pass) and the gradient step with its L1 penalty, as
    :func:`apply_direction` takes them. Returns the number of visits done
    (all of them), or the index of a visit whose scores the scaled pass
    cannot take: that visit has begun (its L2 decay applied), and
    :func:`exact_chain_visit` finishes it. A non-finite loss sets
    ``counters[FAILED]`` and stops.
    """
    n_classes = start_mask.shape[0]
    unary, marginals, counts, transitions, start, end, coefficients = _chain_scratch(
        longest, n_classes)
    work = chain_workspace(max(longest, 1), n_classes, np.bool_(True))
    buffers = _potential_buffers(n_classes)
    for v in range(first_visit, visit_sequences.shape[0]):
        q = visit_sequences[v]
        factor = visit_factors[v]
        lo = offsets[q]
        hi = offsets[q + 1]
        n = hi - lo
        eta = begin_step(settings, counters, factor)
        if n == 0:
            # an empty sequence has loss 0 and no statistics, but is a step
            if settings[L1] > 0.0:
                counters[L1_TOTAL] += eta * factor * settings[L1]
            end_step(settings, counters, factor, w, average_sum)
            continue
        _visit_potentials(w, counters[SCALE], pair_ptr, pair_labels, data, indices, indptr,
                          binary, lo, hi, trans_at, start_at, end_at, transition_mask,
                          start_mask, end_mask, unary, transitions, start, end)
        log_z = _scaled_chain_posteriors(unary, transitions, start, end, n, marginals, counts,
                                         work, buffers)
        if np.isnan(log_z):
            return v
        gold_score = _path_score(unary, transitions, start, end, label_ids, lo, n)
        _sgd_chain_step(settings, counters, w, l1_applied, average_sum, eta, factor, log_z,
                        gold_score, pair_ptr, pair_labels, data, indices, indptr, binary, lo,
                        hi, label_ids, marginals, counts, trans_at, start_at, end_at,
                        coefficients)
        if counters[FAILED]:
            return visit_sequences.shape[0]
    return visit_sequences.shape[0]


@compiled()
def exact_chain_visit(settings, counters, w, l1_applied, average_sum, visit_sequences,
                      visit_factors, visit, data, indices, indptr, binary, offsets, label_ids,
                      pair_ptr, pair_labels, trans_at, start_at, end_at, transition_mask,
                      start_mask, end_mask, longest):
    """Finish visit ``visit`` begun by :func:`sgd_chain_visits`, by the exact log-space pass.

    For the rare sequence whose scores under- or overflow the scaled pass
    (:func:`~skcrf.inference.chain.sequence_posteriors`).
    """
    n_classes = start_mask.shape[0]
    unary, marginals, counts, transitions, start, end, coefficients = _chain_scratch(
        longest, n_classes)
    work = chain_workspace(max(longest, 1), n_classes, np.bool_(True))
    q = visit_sequences[visit]
    factor = visit_factors[visit]
    lo = offsets[q]
    hi = offsets[q + 1]
    n = hi - lo
    # the visit's rate, as begin_step computed it: its step is not counted yet
    eta = learning_rate(settings, counters[STEPS])
    _visit_potentials(w, counters[SCALE], pair_ptr, pair_labels, data, indices, indptr,
                      binary, lo, hi, trans_at, start_at, end_at, transition_mask,
                      start_mask, end_mask, unary, transitions, start, end)
    for i in range(n_classes):
        for j in range(n_classes):
            counts[i, j] = 0.0
    log_z = sequence_posteriors(unary, transitions, start, end, np.int64(0), n,
                                chain_potentials(transitions, start, end), np.bool_(True),
                                marginals, counts, work)
    gold_score = _path_score(unary, transitions, start, end, label_ids, lo, n)
    _sgd_chain_step(settings, counters, w, l1_applied, average_sum, eta, factor, log_z,
                    gold_score, pair_ptr, pair_labels, data, indices, indptr, binary, lo, hi,
                    label_ids, marginals, counts, trans_at, start_at, end_at, coefficients)


@compiled()
def margin_chain_visits(settings, counters, w, average_sum, covariance, delta, mark, touched,
                        visit_sequences, visit_factors, data, indices, indptr, binary, offsets,
                        label_ids, pair_ptr, pair_labels, trans_at, start_at, end_at,
                        transition_mask, start_mask, end_mask, longest):
    """The perceptron's, PA's or AROW's visits of a plain order-1 chain, in order, in place.

    Per visit: the unary scores, Viterbi, and when its labelling is wrong the
    step along gold minus predicted statistics (:func:`apply_direction`).
    """
    n_classes = start_mask.shape[0]
    size = max(longest, 1)
    unary, _, _, transitions, start, end, _ = _chain_scratch(longest, n_classes)
    score = np.empty((size, n_classes))
    backpointer = np.zeros((size, n_classes), np.int64)
    path = np.empty(size, np.int64)
    no_l1 = np.empty(0)
    for v in range(visit_sequences.shape[0]):
        q = visit_sequences[v]
        factor = visit_factors[v]
        lo = offsets[q]
        hi = offsets[q + 1]
        n = hi - lo
        if n > 0:
            _visit_potentials(w, 1.0, pair_ptr, pair_labels, data, indices, indptr, binary,
                              lo, hi, trans_at, start_at, end_at, transition_mask, start_mask,
                              end_mask, unary, transitions, start, end)
            best = _best_path(unary, transitions, start, end, n, score, backpointer, path)
            cost = best - _path_score(unary, transitions, start, end, label_ids, lo, n)
            if not np.isfinite(cost):
                counters[FAILED] = 1.0
                return
            hamming = 0
            for r in range(n):
                if path[r] != label_ids[lo + r]:
                    hamming += 1
            if hamming > 0:
                counters[MISTAKES] += 1.0
                n_touched = _collect_path_difference(
                    delta, mark, touched, pair_ptr, pair_labels, data, indices, indptr,
                    binary, lo, hi, label_ids, path, trans_at, start_at, end_at, n_classes,
                    1.0)
                counters[LOSS] += factor * margin_loss(settings, cost, hamming, n)
                apply_direction(settings, counters, w, no_l1, average_sum, covariance, delta,
                                mark, touched, n_touched, 1.0, factor, cost, np.int64(hamming))
        end_step(settings, counters, factor, w, average_sum)


@compiled()
def margin_loss(settings, cost, hamming, n):
    """What a margin solver's visit adds to the epoch's loss (as CRFsuite reports it).

    The perceptron: the share of wrong labels; PA and AROW: the cost their
    step length reads.
    """
    solver = settings[SOLVER]
    if solver == PERCEPTRON:
        return hamming / n
    if solver == PASSIVE_AGGRESSIVE:
        return cost + (np.sqrt(hamming) if settings[ERROR_SENSITIVE] != 0.0 else 1.0)
    return cost + hamming


@compiled()
def average_weights(w, average_sum, average_scale, average_weight, out):
    """The averaged model weights ``(A * w + U) / W`` into ``out``."""
    for i in range(w.shape[0]):
        out[i] = (average_scale * w[i] + average_sum[i]) / average_weight


@compiled()
def settle_l1(w, scale, total, l1_applied, out):
    """The model weights ``scale * w`` once every weight has paid the L1 penalty it owes.

    Weights the recent steps did not touch have not paid theirs yet (the
    cumulative penalty is applied lazily): the model takes them as if they
    had, without changing the state, so that a later ``partial_fit``
    continues exactly where this one stopped.
    """
    for i in range(w.shape[0]):
        z = scale * w[i]
        if z > 0.0:
            out[i] = max(0.0, z - (total + l1_applied[i]))
        elif z < 0.0:
            out[i] = min(0.0, z + (total - l1_applied[i]))
        else:
            out[i] = 0.0
