"""The online solvers' epoch over a plain order-1 chain, in one kernel call per epoch.

A plain order-1 chain (no transition features) keeps its weights as
:class:`~skcrf.structures.chain.order1.PlainChainLayout` says; these kernels read
``w`` through it directly: per visit, the unary scores of the sequence's
tokens from its sparse features (a feature that carries every label is a
contiguous row) and from its rows of the dense block, the potentials, then
forward-backward and the gradient step (:func:`sgd_chain_visits`) or Viterbi
and the margin step (:func:`margin_chain_visits`), with the update rules of
:mod:`._online_kernels`. The rare sequence whose scores the scaled pass
cannot take goes through :func:`exact_chain_visit`, a kernel of its own that
Python calls only then. Tested against the structures' token-form route.

A dense block (:class:`~skcrf.structures.chain.dense.DenseChainStructure`:
word vectors, numeric streams) is ``dense`` (n_tokens, n_dense), float32 or
float64, with its weights ``W`` (n_classes, n_dense) in C order from
``dense_at`` in ``w``. A visit adds ``X_q @ W.T`` to its unary scores, and
SGD moves ``W`` by ``R.T @ X_q`` (``R`` each token's step per label): two
BLAS products per visit, on the visit's rows read as float64, as the CSR
columns of the same values are. BLAS took a third to a half of the time of
short loops here, even at a visit's tens of tokens (busy machine). The
margin solvers' direction touches ``W`` only at the wrong tokens' gold and
predicted labels, as the sparse weights. Without a dense block the kernels
get ``dense=None`` and take the sparse route alone, bit for bit: numba prunes
the ``dense is None`` branches when it compiles them, so a sparse fit compiles
no BLAS code.
"""

import numpy as np

from ..inference._runtime.batch import compiled
from ..inference.chain.order1 import chain_workspace, log_space_sequence, scaled_from_emission
from ._online_dense import _dense_scratch, _dense_step, _dense_token_scores, _dense_width
from ._online_kernels import (AVERAGE_SCALE, FAILED, L1, L1_TOTAL, LOSS, MISTAKES, SCALE,
                              STEPS, _clip_l1, apply_direction, begin_step, end_step,
                              learning_rate, margin_loss)


@compiled(inline=True)
def _token_scores(w, scale, pair_ptr, pair_labels, data, indices, indptr, binary, lo, hi,
                  unary, dense, dense_at, rows):
    """``unary[r] = scale * (the token's features x their pair weights, + X[t] @ W.T)``
    for tokens lo..hi-1."""
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
    _dense_token_scores(w, dense, dense_at, lo, hi, rows, unary)
    for t in range(lo, hi):
        row = unary[t - lo]
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
        # start_at -1: a chain without start and end weights (CRFsuite's)
        start[i] = start_mask[i] + (scale * w[start_at + i] if start_at >= 0 else 0.0)
        end[i] = end_mask[i] + (scale * w[end_at + i] if end_at >= 0 else 0.0)


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

    Ties go to the lowest label id, as :func:`skcrf.inference.chain.order1.viterbi`.
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
    """The scaled pass's potentials, into ``buffers``.

    What :func:`~skcrf.inference._potentials.chain_scaled_potentials` makes in
    numpy, inside the epoch kernel: the weights change at every visit.

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

    The scaled pass (:func:`~skcrf.inference.chain.order1.scaled_from_emission`) on
    the exponentiated unary rows. NaN when its precision checks fail: the
    caller then runs the exact pass (:func:`exact_chain_visit`), a kernel of
    its own, compiled only by those whose data need it.
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
        log_scale += top
        for j in range(n_classes):
            emission[r, j] = np.exp(unary[r, j] - top)
    for i in range(n_classes):
        for j in range(n_classes):
            counts[i, j] = 0.0
    # the emission rows stand in for the unary scores where the pass asks
    # whether a score is -inf: none is
    return scaled_from_emission(
        emission, transitions, start, end, np.int64(0), n, exp_trans, exp_trans_t, exp_start,
        exp_end, any_forbidden, log_scale + start_max + end_max + (n - 1) * trans_max,
        emission, alpha, beta, norm, reach, np.bool_(True), marginals, counts, scratch)


@compiled()
def _exact_chain_posteriors(unary, transitions, start, end, n, marginals, counts, work):
    """log Z, marginals and transition counts of one sequence by the exact log-space pass.

    The transitions' exponentials shifted per column and per row, as
    :func:`~skcrf.inference._potentials.shifted_exp_by_column_and_row` makes
    them (a column or row entirely ``-inf`` shifted by 0).
    """
    n_classes = start.shape[0]
    col_max = np.full(n_classes, -np.inf)
    row_max = np.full(n_classes, -np.inf)
    exp_by_col = np.empty((n_classes, n_classes))
    exp_by_row = np.empty((n_classes, n_classes))
    for i in range(n_classes):  # both maxima in one sweep
        for j in range(n_classes):
            if transitions[i, j] > col_max[j]:
                col_max[j] = transitions[i, j]
            if transitions[i, j] > row_max[i]:
                row_max[i] = transitions[i, j]
    for k in range(n_classes):  # an all -inf column or row is shifted by 0
        if col_max[k] == -np.inf:
            col_max[k] = 0.0
        if row_max[k] == -np.inf:
            row_max[k] = 0.0
    for i in range(n_classes):
        for j in range(n_classes):
            exp_by_col[i, j] = np.exp(transitions[i, j] - col_max[j])
            exp_by_row[i, j] = np.exp(transitions[i, j] - row_max[i])
            counts[i, j] = 0.0
    alpha, beta, shifted, _, _, block, scaled, scratch = work
    return log_space_sequence(unary, transitions, start, end, np.int64(0), n, col_max,
                              exp_by_col, row_max, exp_by_row, np.bool_(True), marginals,
                              counts, alpha, beta, shifted, block, scaled, scratch)


@compiled()
def _sgd_chain_update(w, gain, pair_ptr, pair_labels, data, indices, indptr, binary, lo, hi,
                      label_ids, marginals, counts, trans_at, start_at, end_at, average_sum,
                      average_scale, averaging, coefficients, dense, dense_at, rows,
                      coefficient_rows):
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
        if dense is not None:  # the dense step's coefficients
            coefficient_rows[r] = coefficients
    _dense_step(w, n, dense, rows, coefficient_rows, dense_at, average_sum, average_scale,
                averaging)
    # the gold transitions join the expected counts as -1s
    for t in range(lo + 1, hi):
        counts[label_ids[t - 1], label_ids[t]] -= 1.0
    for i in range(n_classes):
        for j in range(n_classes):
            change = -gain * counts[i, j]
            w[trans_at + i * n_classes + j] += change
            if averaging:
                average_sum[trans_at + i * n_classes + j] -= average_scale * change
    if start_at < 0:  # no start and end weights to move
        return
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
                  dense_hi, average_sum, average_scale, averaging, block_at, block_size):
    """The L1 penalty every weight the sequence touched owes (see :func:`_clip_l1`).

    ``dense_lo:dense_hi``: the transition (and start and end) weights;
    ``block_at``, ``block_size``: the dense block's weights, all of which a
    visit moves (none without a dense block).
    """
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
    for i in range(block_at, block_at + block_size):
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
                             end_at, n_classes, factor, dense, dense_at):
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
        if dense is None:
            continue
        n_dense = dense.shape[1]
        gold_at = dense_at + gold * n_dense
        guess_at = dense_at + guess * n_dense
        for d in range(n_dense):
            value = dense[t, d]
            if value != 0.0:  # as CSR, which holds no zero, touches no weight for it
                n_touched = _touch(delta, mark, touched, n_touched, gold_at + d, factor * value)
                n_touched = _touch(delta, mark, touched, n_touched, guess_at + d,
                                   -factor * value)
    for t in range(lo + 1, hi):
        r = t - lo
        a = trans_at + label_ids[t - 1] * n_classes + label_ids[t]
        b = trans_at + path[r - 1] * n_classes + path[r]
        if a == b:
            continue
        n_touched = _touch(delta, mark, touched, n_touched, a, factor)
        n_touched = _touch(delta, mark, touched, n_touched, b, -factor)
    if start_at < 0:  # no start and end weights to move
        return n_touched
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
                      unary, transitions, start, end, dense, dense_at, rows):
    _token_scores(w, scale, pair_ptr, pair_labels, data, indices, indptr, binary, lo, hi,
                  unary, dense, dense_at, rows)
    _chain_potentials_of(w, scale, trans_at, start_at, end_at, transition_mask, start_mask,
                         end_mask, transitions, start, end)


@compiled(inline=True)
def _sgd_chain_step(settings, counters, w, l1_applied, average_sum, eta, factor, log_z,
                    gold_score, pair_ptr, pair_labels, data, indices, indptr, binary, lo, hi,
                    label_ids, marginals, counts, trans_at, start_at, end_at, coefficients,
                    dense, dense_at, rows, coefficient_rows):
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
                      average_sum, average_scale, averaging, coefficients, dense, dense_at,
                      rows, coefficient_rows)
    if settings[L1] > 0.0:
        counters[L1_TOTAL] += eta * factor * settings[L1]
        # the dense blocks: transitions, then start and end if the chain has them
        n_classes = coefficients.shape[0]
        dense_hi = end_at + n_classes if end_at >= 0 else trans_at + n_classes * n_classes
        _sgd_chain_l1(w, scale, counters[L1_TOTAL], l1_applied, pair_ptr, indices, indptr,
                      lo, hi, trans_at, dense_hi, average_sum, average_scale, averaging,
                      dense_at, n_classes * _dense_width(dense))
    end_step(settings, counters, factor, w, average_sum)


@compiled()
def sgd_chain_visits(settings, counters, w, l1_applied, average_sum, visit_sequences,
                     visit_factors, first_visit, data, indices, indptr, binary, offsets,
                     label_ids, pair_ptr, pair_labels, trans_at, start_at, end_at,
                     transition_mask, start_mask, end_mask, longest, dense, dense_at):
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
    rows, coefficient_rows = _dense_scratch(longest, n_classes, dense)
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
                          start_mask, end_mask, unary, transitions, start, end, dense, dense_at,
                          rows)
        log_z = _scaled_chain_posteriors(unary, transitions, start, end, n, marginals, counts,
                                         work, buffers)
        if np.isnan(log_z):
            return v
        gold_score = _path_score(unary, transitions, start, end, label_ids, lo, n)
        _sgd_chain_step(settings, counters, w, l1_applied, average_sum, eta, factor, log_z,
                        gold_score, pair_ptr, pair_labels, data, indices, indptr, binary, lo,
                        hi, label_ids, marginals, counts, trans_at, start_at, end_at,
                        coefficients, dense, dense_at, rows, coefficient_rows)
        if counters[FAILED]:
            return visit_sequences.shape[0]
    return visit_sequences.shape[0]


@compiled()
def exact_chain_visit(settings, counters, w, l1_applied, average_sum, visit_sequences,
                      visit_factors, visit, data, indices, indptr, binary, offsets, label_ids,
                      pair_ptr, pair_labels, trans_at, start_at, end_at, transition_mask,
                      start_mask, end_mask, longest, dense, dense_at):
    """Finish visit ``visit`` begun by :func:`sgd_chain_visits`, by the exact log-space pass.

    For the rare sequence whose scores under- or overflow the scaled pass
    (:func:`_exact_chain_posteriors`).
    """
    n_classes = start_mask.shape[0]
    unary, marginals, counts, transitions, start, end, coefficients = _chain_scratch(
        longest, n_classes)
    rows, coefficient_rows = _dense_scratch(longest, n_classes, dense)
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
                      start_mask, end_mask, unary, transitions, start, end, dense, dense_at,
                      rows)
    log_z = _exact_chain_posteriors(unary, transitions, start, end, n, marginals, counts,
                                    work)
    gold_score = _path_score(unary, transitions, start, end, label_ids, lo, n)
    _sgd_chain_step(settings, counters, w, l1_applied, average_sum, eta, factor, log_z,
                    gold_score, pair_ptr, pair_labels, data, indices, indptr, binary, lo, hi,
                    label_ids, marginals, counts, trans_at, start_at, end_at, coefficients,
                    dense, dense_at, rows, coefficient_rows)


@compiled()
def margin_chain_visits(settings, counters, w, average_sum, covariance, delta, mark, touched,
                        visit_sequences, visit_factors, data, indices, indptr, binary, offsets,
                        label_ids, pair_ptr, pair_labels, trans_at, start_at, end_at,
                        transition_mask, start_mask, end_mask, longest, dense, dense_at):
    """The perceptron's, PA's or AROW's visits of a plain order-1 chain, in order, in place.

    Per visit: the unary scores, Viterbi, and when its labelling is wrong the
    step along gold minus predicted statistics (:func:`apply_direction`).
    """
    n_classes = start_mask.shape[0]
    size = max(longest, 1)
    unary, _, _, transitions, start, end, _ = _chain_scratch(longest, n_classes)
    rows, _ = _dense_scratch(longest, n_classes, dense)
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
                              end_mask, unary, transitions, start, end, dense, dense_at, rows)
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
                    1.0, dense, dense_at)
                counters[LOSS] += factor * margin_loss(settings, cost, hamming, n)
                apply_direction(settings, counters, w, no_l1, average_sum, covariance, delta,
                                mark, touched, n_touched, 1.0, factor, cost, np.int64(hamming))
        end_step(settings, counters, factor, w, average_sum)
