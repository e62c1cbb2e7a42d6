"""The online solvers' visits of constrained sequences of a plain order-1 chain, batched.

A *constrained* sequence (partial labels, :mod:`skcrf.learning.partial`)
steps on ``log Z - log Z_allowed`` (SGD) or toward the best labelling its
allowed labels admit (the margin solvers: constrained Viterbi as the
target). These kernels take a run of such visits in one call, as
:mod:`._online_chain` takes the fully labelled ones, reading ``w`` through
the plain chain's layout and the same helpers, with a log mask (0 or
``-inf`` per token and label) in place of the gold labels:

- :func:`sgd_constrained_visits`: the free and the masked scaled
  forward-backward on the same emission rows (the masked one with the
  disallowed labels zeroed, as :mod:`skcrf.structures.chain._fused_masked`
  does), then the step along the difference of their marginals and
  transition counts. A visit either pass cannot take in scaled arithmetic
  is returned to the caller begun, who finishes it by the token-form route;
- :func:`margin_constrained_visits`: Viterbi with and without the mask, then
  the margin step from the predicted path toward the constrained one.

Fully labelled sequences never come here: their steps stay those of
:mod:`._online_chain`, bit for bit. A dense block (``dense``, its weights
from ``dense_at``) is read and moved as :mod:`._online_chain` does. Tested
against the token-form route (tests/learning/test_partial_online.py,
tests/learning/test_online_dense.py).
"""

import numpy as np

from ..inference._runtime.batch import compiled
from ..inference.chain.order1 import chain_workspace, scaled_from_emission
from ._online_chain import (_best_path, _chain_scratch, _collect_path_difference,
                            _dense_scratch, _dense_step, _dense_width, _potential_buffers,
                            _scaled_chain_potentials, _sgd_chain_l1, _visit_potentials)
from ._online_kernels import (AVERAGE_SCALE, FAILED, L1, L1_TOTAL, LOSS, MISTAKES, SCALE,
                              apply_direction, begin_step, end_step, margin_loss)


@compiled()
def _free_and_allowed(unary, transitions, start, end, log_mask, lo, n, base, free,
                      free_counts, allowed, allowed_counts, work, buffers):
    """``log Z - log Z_allowed`` of one sequence and both posteriors, or NaN.

    NaN when either scaled pass fails its precision checks or the mask
    admits no labelling: the caller then takes the exact route.
    """
    n_classes = unary.shape[1]
    (_, _, _, _, trans_max, exp_trans, exp_trans_t, start_max, exp_start, end_max, exp_end,
     any_forbidden) = _scaled_chain_potentials(transitions, start, end, buffers)
    alpha, beta, emission, norm, reach, _, _, scratch = work
    log_scale = 0.0
    for r in range(n):
        top = unary[r, 0]
        for j in range(1, n_classes):
            if unary[r, j] > top:
                top = unary[r, j]
        if not np.isfinite(top):
            return np.nan
        log_scale += top
        for j in range(n_classes):
            base[r, j] = np.exp(unary[r, j] - top)
            emission[r, j] = base[r, j]
    shift = start_max + end_max + (n - 1) * trans_max
    for i in range(n_classes):
        for j in range(n_classes):
            free_counts[i, j] = 0.0
            allowed_counts[i, j] = 0.0
    # the emission rows stand in for the unary scores where the pass asks
    # whether a score is -inf: none is
    free_log_z = scaled_from_emission(
        emission, transitions, start, end, np.int64(0), n, exp_trans, exp_trans_t, exp_start,
        exp_end, any_forbidden, log_scale + shift, emission, alpha, beta, norm, reach,
        np.bool_(True), free, free_counts, scratch)
    if not np.isfinite(free_log_z):
        return np.nan
    masked_scale = 0.0
    for r in range(n):
        top = 0.0
        for j in range(n_classes):
            v = base[r, j] if log_mask[lo + r, j] == 0.0 else 0.0
            emission[r, j] = v
            top = max(top, v)
        if not top > 0.0:
            return np.nan
        for j in range(n_classes):
            emission[r, j] /= top
        masked_scale += np.log(top)
    # the mask's -inf are the scores the pass tracks reachability through
    allowed_log_z = scaled_from_emission(
        log_mask[lo:lo + n], transitions, start, end, np.int64(0), n, exp_trans, exp_trans_t,
        exp_start, exp_end, np.bool_(True), log_scale + masked_scale + shift, emission, alpha,
        beta, norm, reach, np.bool_(True), allowed, allowed_counts, scratch)
    if not np.isfinite(allowed_log_z):
        return np.nan
    return free_log_z - allowed_log_z


@compiled()
def _sgd_difference_update(w, gain, pair_ptr, pair_labels, data, indices, indptr, binary, lo,
                           hi, free, free_counts, allowed, allowed_counts, trans_at, start_at,
                           end_at, average_sum, average_scale, averaging, coefficients,
                           dense, dense_at, rows, coefficient_rows):
    """``w -= gain * (E_p[Phi] - E_p[Phi | allowed])`` for one sequence, in place."""
    n_classes = free.shape[1]
    n = hi - lo
    for t in range(lo, hi):
        r = t - lo
        for j in range(n_classes):
            coefficients[j] = -gain * (free[r, j] - allowed[r, j])
        for k in range(indptr[t], indptr[t + 1]):
            value = 1.0 if binary else data[k]
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                change = value * coefficients[pair_labels[p]]
                w[p] += change
                if averaging:
                    average_sum[p] -= average_scale * change
        if dense is not None:  # the dense step's coefficients
            coefficient_rows[r] = coefficients
    _dense_step(w, n, dense, rows, coefficient_rows, dense_at, average_sum, average_scale,
                averaging)
    for i in range(n_classes):
        for j in range(n_classes):
            change = -gain * (free_counts[i, j] - allowed_counts[i, j])
            w[trans_at + i * n_classes + j] += change
            if averaging:
                average_sum[trans_at + i * n_classes + j] -= average_scale * change
    if start_at < 0:  # no start and end weights to move
        return
    for j in range(n_classes):
        change = -gain * (free[0, j] - allowed[0, j])
        w[start_at + j] += change
        if averaging:
            average_sum[start_at + j] -= average_scale * change
        change = -gain * (free[n - 1, j] - allowed[n - 1, j])
        w[end_at + j] += change
        if averaging:
            average_sum[end_at + j] -= average_scale * change


@compiled()
def sgd_constrained_visits(settings, counters, w, l1_applied, average_sum, visit_sequences,
                           visit_factors, first_visit, data, indices, indptr, binary, offsets,
                           log_mask, pair_ptr, pair_labels, trans_at, start_at, end_at,
                           transition_mask, start_mask, end_mask, longest, dense, dense_at):
    """SGD's visits of constrained sequences from ``first_visit`` on, in order, in place.

    As :func:`~._online_chain.sgd_chain_visits`, on ``log Z - log Z_allowed``.
    Returns the number of visits (all done), or the index of a visit begun
    (its L2 decay applied) that the scaled passes cannot take: the caller
    finishes it. A non-finite loss sets ``counters[FAILED]`` and stops.
    """
    n_classes = start_mask.shape[0]
    unary, free, free_counts, transitions, start, end, coefficients = _chain_scratch(
        longest, n_classes)
    rows, coefficient_rows = _dense_scratch(longest, n_classes, dense)
    size = max(longest, 1)
    base = np.empty((size, n_classes))
    allowed = np.empty((size, n_classes))
    allowed_counts = np.empty((n_classes, n_classes))
    work = chain_workspace(size, n_classes, np.bool_(True))
    buffers = _potential_buffers(n_classes)
    for v in range(first_visit, visit_sequences.shape[0]):
        q = visit_sequences[v]
        factor = visit_factors[v]
        lo = offsets[q]
        hi = offsets[q + 1]
        eta = begin_step(settings, counters, factor)
        scale = counters[SCALE]
        _visit_potentials(w, scale, pair_ptr, pair_labels, data, indices, indptr, binary, lo,
                          hi, trans_at, start_at, end_at, transition_mask, start_mask,
                          end_mask, unary, transitions, start, end, dense, dense_at, rows)
        loss = _free_and_allowed(unary, transitions, start, end, log_mask, lo, hi - lo, base,
                                 free, free_counts, allowed, allowed_counts, work, buffers)
        if np.isnan(loss):
            return v
        counters[LOSS] += factor * loss
        averaging = average_sum.shape[0] > 0
        average_scale = counters[AVERAGE_SCALE]
        _sgd_difference_update(w, eta * factor / scale, pair_ptr, pair_labels, data, indices,
                               indptr, binary, lo, hi, free, free_counts, allowed,
                               allowed_counts, trans_at, start_at, end_at, average_sum,
                               average_scale, averaging, coefficients, dense, dense_at,
                               rows, coefficient_rows)
        if settings[L1] > 0.0:
            counters[L1_TOTAL] += eta * factor * settings[L1]
            dense_hi = end_at + n_classes if end_at >= 0 else trans_at + n_classes * n_classes
            _sgd_chain_l1(w, scale, counters[L1_TOTAL], l1_applied, pair_ptr, indices, indptr,
                          lo, hi, trans_at, dense_hi, average_sum, average_scale, averaging,
                          dense_at, n_classes * _dense_width(dense))
        end_step(settings, counters, factor, w, average_sum)
    return visit_sequences.shape[0]


@compiled()
def margin_constrained_visits(settings, counters, w, average_sum, covariance, delta, mark,
                              touched, visit_sequences, visit_factors, data, indices, indptr,
                              binary, offsets, log_mask, pair_ptr, pair_labels, trans_at,
                              start_at, end_at, transition_mask, start_mask, end_mask,
                              longest, dense, dense_at):
    """The margin solvers' visits of constrained sequences, in order, in place.

    As :func:`~._online_chain.margin_chain_visits`, the gold labelling being
    the best one the mask allows (constrained Viterbi, ties to the lowest
    label id). A sequence the mask admits no labelling of sets
    ``counters[FAILED]``.
    """
    n_classes = start_mask.shape[0]
    size = max(longest, 1)
    unary, masked, _, transitions, start, end, _ = _chain_scratch(longest, n_classes)
    rows, _ = _dense_scratch(longest, n_classes, dense)
    score = np.empty((size, n_classes))
    backpointer = np.zeros((size, n_classes), np.int64)
    path = np.empty(size, np.int64)
    target_path = np.empty(size, np.int64)
    # the target labels at the tokens' own positions, as the gold labels are read
    targets = np.zeros(offsets[offsets.shape[0] - 1], np.int64)
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
                              end_mask, unary, transitions, start, end, dense, dense_at, rows)
            for r in range(n):
                for j in range(n_classes):
                    masked[r, j] = unary[r, j] + log_mask[lo + r, j]
            target_score = _best_path(masked, transitions, start, end, n, score, backpointer,
                                      target_path)
            for r in range(n):
                targets[lo + r] = target_path[r]
            best = _best_path(unary, transitions, start, end, n, score, backpointer, path)
            cost = best - target_score
            if not np.isfinite(cost):
                counters[FAILED] = 1.0
                return
            hamming = 0
            for r in range(n):
                if path[r] != target_path[r]:
                    hamming += 1
            if hamming > 0:
                counters[MISTAKES] += 1.0
                n_touched = _collect_path_difference(
                    delta, mark, touched, pair_ptr, pair_labels, data, indices, indptr,
                    binary, lo, hi, targets, path, trans_at, start_at, end_at, n_classes, 1.0,
                    dense, dense_at)
                counters[LOSS] += factor * margin_loss(settings, cost, hamming, n)
                apply_direction(settings, counters, w, no_l1, average_sum, covariance, delta,
                                mark, touched, n_touched, 1.0, factor, cost, np.int64(hamming))
        end_step(settings, counters, factor, w, average_sum)
