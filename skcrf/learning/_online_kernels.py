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

- :mod:`._online_chain` runs all the visits of an epoch of a plain order-1
  chain in one call: unary scores from the sparse features, forward-backward
  (or Viterbi), and the sparse update;
- the structures without such a kernel describe each visited sequence's
  statistics in token form (:class:`~skcrf.structures._parameters.TokenStatistics`):
  the Python driver gathers them into a sparse direction with
  :func:`collect_rows` and :func:`collect_dense`, then :func:`apply_direction`
  takes the step. Both routes apply the same update rules.

Nothing here validates its inputs; the Python side checks them once.
"""

import numpy as np

from ..inference._runtime.batch import compiled

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
