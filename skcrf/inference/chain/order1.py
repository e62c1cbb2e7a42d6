"""Order-1 chain inference: forward-backward and Viterbi over potentials.

Potentials in, marginals out: these kernels never see a feature. Nothing here
validates or mutates its inputs; the Python callers check everything once. The
batch kernels take this layout:

- ``unary`` : (n_tokens, n_classes) float64, log-space state scores of all tokens
  of all sequences stacked;
- ``transitions`` : (n_classes, n_classes) float64, indexed [from, to]; ``-inf``
  forbids a transition;
- ``start``, ``end`` : (n_classes,) float64;
- ``offsets`` : (n_sequences + 1,) int64, sequence q owns tokens
  ``offsets[q]:offsets[q + 1]`` (CSR ``indptr`` semantics).

The per-sequence routines (:func:`scaled_sequence`, :func:`scaled_from_emission`,
:func:`log_space_sequence` with :func:`chain_workspace`, on the potentials of
:mod:`._potentials`) are also what the chain structure's fused training
kernel calls.
"""

import numpy as np

from .._runtime.batch import (N_CHUNKS, chunk_bounds, chunk_totals, compiled, default_n_chunks,
                              least_chunk_count, longest_sequence, run_chunks)
from .._logspace import (add_pair_block, log_matrix_vector, log_vector_matrix, logsumexp_sum,
                        normalized_exp_sum, shifted_exp_rows, shifted_rows)
from ._order1_passes import best_paths, scaled_forward_backward
from ._order1_lanes import (LANE_CHUNK_SEQUENCES, LANE_MAX, LANE_MAX_CLASSES, LANE_VECTOR,
                            LanePlans, lane_forward_backward, lane_workspace)
from .._potentials import chain_scaled_potentials, shifted_exp_by_column_and_row


@compiled()
def _accumulate_transitions(unary, transitions, col_max, exp_by_col, lo, hi, alpha,
                            beta, counts, block, scaled, following):
    """Add the expected transition counts of one sequence to ``counts``.

    xi_t[i, j] is proportional to exp(alpha[t-1, i] + T[i, j] + unary[t, j] + beta[t, j])
    and sums to 1 over (i, j): each token's block of :func:`~.._logspace.add_pair_block`.
    """
    n_classes = unary.shape[1]
    for t in range(lo + 1, hi):
        r = t - lo
        for j in range(n_classes):
            following[j] = unary[t, j] + beta[r, j]
        add_pair_block(alpha[r - 1], transitions, col_max, exp_by_col, following, counts,
                       block, scaled)


@compiled()
def scaled_sequence(unary, transitions, start, end, lo, hi, exp_trans, exp_trans_t, trans_max,
                    exp_start, start_max, exp_end, end_max, any_forbidden, emission, alpha,
                    beta, norm, reach, with_transitions, marginals, counts, scratch):
    """The scaled pass of :mod:`._order1` with one transition matrix, plus its counts.

    Returns log Z, or NaN when the precision checks fail, in which case
    nothing was written and the caller runs the exact pass.
    """
    n = hi - lo
    log_z = start_max + end_max + (n - 1) * trans_max
    log_z, track = shifted_exp_rows(unary, lo, hi, emission, log_z, any_forbidden)
    if np.isnan(log_z):
        return log_z
    return scaled_from_emission(unary, transitions, start, end, lo, hi, exp_trans,
                                exp_trans_t, exp_start, exp_end, track, log_z, emission, alpha,
                                beta, norm, reach, with_transitions, marginals, counts, scratch)


@compiled(contract=True)
def scaled_from_emission(unary, transitions, start, end, lo, hi, exp_trans, exp_trans_t,
                         exp_start, exp_end, track, log_z, emission, alpha, beta, norm, reach,
                         with_transitions, marginals, counts, scratch):
    """:func:`._order1.scaled_forward_backward` on ready emission rows, plus the counts."""
    n_classes = exp_trans.shape[0]
    n = hi - lo
    log_z = scaled_forward_backward(unary, transitions[np.newaxis], start, end, lo, hi, 0,
                                    exp_trans[np.newaxis], exp_trans_t[np.newaxis], exp_start,
                                    exp_end, track, log_z, emission, alpha, beta, norm, reach,
                                    scratch, marginals)
    if with_transitions and not np.isnan(log_z):
        # the rows 1..n-1 of emission now hold the backward messages (see
        # scaled_forward_backward); four tokens per pass over the count rows,
        # each cell still adding its terms in token order
        r = 1
        while r + 4 <= n:
            for i in range(n_classes):
                p0 = alpha[r - 1, i]
                p1 = alpha[r, i]
                p2 = alpha[r + 1, i]
                p3 = alpha[r + 2, i]
                f0 = emission[r]
                f1 = emission[r + 1]
                f2 = emission[r + 2]
                f3 = emission[r + 3]
                e = exp_trans[i]
                row = counts[i]
                for j in range(n_classes):
                    v = row[j]
                    v += p0 * e[j] * f0[j]
                    v += p1 * e[j] * f1[j]
                    v += p2 * e[j] * f2[j]
                    v += p3 * e[j] * f3[j]
                    row[j] = v
            r += 4
        while r < n:
            following = emission[r]
            for i in range(n_classes):
                a = alpha[r - 1, i]
                for j in range(n_classes):
                    counts[i, j] += a * exp_trans[i, j] * following[j]
            r += 1
    return log_z


@compiled()
def log_space_sequence(unary, transitions, start, end, lo, hi, col_max, exp_by_col,
                       row_max, exp_by_row, with_transitions, marginals, counts, alpha,
                       beta, shifted, block, scaled, scratch):
    """Forward-backward of one sequence in log space: slower, never under- or overflows.

    It runs on the unary scores shifted per token (into ``shifted``, see
    :func:`~._logspace.shifted_rows`), so that a huge score on one token
    leaves the digits of the others.
    """
    n_classes = unary.shape[1]
    n = hi - lo
    shift = shifted_rows(unary, lo, hi, shifted)
    for j in range(n_classes):
        alpha[0, j] = start[j] + shifted[0, j]
    for r in range(1, n):
        log_vector_matrix(shifted[r], alpha[r - 1], transitions, col_max, exp_by_col,
                          scratch, alpha[r])
    log_z = logsumexp_sum(alpha[n - 1], end)
    if log_z == -np.inf:
        return log_z
    for j in range(n_classes):
        beta[n - 1, j] = end[j]
    for r in range(n - 2, -1, -1):
        for j in range(n_classes):
            scratch[j] = shifted[r + 1, j] + beta[r + 1, j]
        log_matrix_vector(transitions, scratch, row_max, exp_by_row, scaled, beta[r])
    for r in range(n):
        normalized_exp_sum(alpha[r], beta[r], marginals[lo + r])
    if with_transitions:
        _accumulate_transitions(shifted, transitions, col_max, exp_by_col, 0, n, alpha,
                                beta, counts, block, scaled, scratch)
    return shift + log_z


@compiled()
def chain_workspace(longest, n_classes, with_transitions=True):
    """Scratch rows for the sequences of one chunk, none longer than ``longest``.

    The (n_classes, n_classes) block only serves the transition counts: without
    them it is empty.
    """
    size = n_classes if with_transitions else 0
    return (np.empty((longest, n_classes)), np.empty((longest, n_classes)),
            np.empty((longest, n_classes)), np.empty(longest),
            np.empty((2, n_classes), np.bool_), np.empty((size, size)),
            np.empty(n_classes), np.empty(n_classes))


def forward_backward(unary, transitions, start, end, offsets, with_transitions):
    """Log partition functions, token marginals and expected transition counts.

    Every sequence goes through the fast scaled pass first; then the few whose
    scores are extreme enough to under- or overflow it are redone exactly in
    log space, in a second pass that alone needs the potentials shifted by
    column and by row (two (n_classes, n_classes) arrays, made only if some
    sequence needs them). With few labels and no ``-inf`` potential, the
    scaled pass runs the sequences of one length side by side, as the
    training kernel does (:func:`~._order1_lanes.lane_forward_backward`,
    whose lanes are bitwise the one-sequence pass): the kernel a fit
    compiled serves ``predict_marginals`` too, and a token whose scores
    include ``-inf`` (a fixed label) sends its sequence to the one-sequence
    pass.

    Parameters
    ----------
    unary, transitions, start, end, offsets
        See the module docstring.
    with_transitions : bool
        Whether to compute the expected transition counts (training needs them,
        ``predict_marginals`` does not).

    Returns
    -------
    log_z : (n_sequences,) float64
        0 for an empty sequence; ``-inf`` for a sequence with no feasible path.
    marginals : (n_tokens, n_classes) float64
        Rows sum to 1; all zeros for the tokens of an infeasible sequence.
    transition_counts : (n_classes, n_classes) float64
        Expected number of each transition, summed over all sequences; (0, 0)
        without ``with_transitions``.

    Notes
    -----
    The counts take one (n_classes, n_classes) partial sum per chunk (up to
    64 chunks: 2 GiB for 2,000 classes), so without ``with_transitions``
    neither they nor the scratch block they need are allocated. Each chunk
    adds the counts of its scaled sequences, then of its exact ones, so the
    result still does not depend on the thread count.
    """
    n_tokens, n_classes = unary.shape
    n_sequences = offsets.shape[0] - 1
    with_transitions = bool(with_transitions)
    potentials = chain_scaled_potentials(transitions, start, end)
    by_lanes = not potentials[-1] and n_classes <= LANE_MAX_CLASSES
    n_chunks = (least_chunk_count(offsets, LANE_CHUNK_SEQUENCES, N_CHUNKS) if by_lanes
                else default_n_chunks(offsets))
    bounds = chunk_bounds(offsets, n_chunks)

    log_z = np.zeros(n_sequences)
    marginals = np.zeros((n_tokens, n_classes))
    size = n_classes if with_transitions else 0
    # without counts, every chunk gets the one empty partial sum, never written
    chunk_counts = np.zeros((n_chunks if with_transitions else 1, size, size))
    exact = np.zeros(n_sequences, np.bool_)
    todo = np.ones(n_sequences, np.bool_)
    if by_lanes:
        plan = LanePlans(offsets, bounds, n_classes).grouped()
        run_chunks(_lane_chunks, n_chunks, bounds, unary, offsets, *plan.kernel_args(),
                   potentials, with_transitions, log_z, marginals, chunk_counts, todo, exact)
    if todo.any():
        run_chunks(_scaled_chunks, n_chunks, bounds, unary, transitions, start, end, offsets,
                   potentials, with_transitions, log_z, marginals, chunk_counts, todo, exact)
    if exact.any():
        shifted = shifted_exp_by_column_and_row(transitions)
        run_chunks(_exact_chunks, n_chunks, bounds, unary, transitions, start, end, offsets,
                   shifted, with_transitions, log_z, marginals, chunk_counts, exact)

    transition_counts, = chunk_totals(chunk_counts)
    return log_z, marginals, transition_counts


@compiled()
def _lane_chunks(chunk_lo, chunk_hi, bounds, unary, offsets, order, group_ends, chunk_groups,
                 lane_longest, potentials, with_transitions, log_z, marginals, chunk_counts,
                 todo, exact):
    """The scaled pass of the chunks' sequences as lanes, in the groups of the plan.

    A sequence with a ``-inf`` score stays in ``todo`` (and out of its
    group's lanes), for the one-sequence pass; every other one leaves it,
    done or, if its lane failed the precision checks (as the one-sequence
    pass would, step for step), flagged ``exact``. ``order``,
    ``group_ends``, ``chunk_groups`` and ``lane_longest`` are those of
    :class:`~._order1_lanes.LanePlan`.
    """
    n_classes = unary.shape[1]
    trans_max, exp_trans, _, start_max, exp_start, end_max, exp_end, _ = potentials
    for c in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        groups = lane_workspace(lane_longest[c], n_classes, LANE_MAX)
        singles = lane_workspace(longest, n_classes, LANE_VECTOR)
        rows = np.empty((longest, n_classes))
        members = np.empty(LANE_MAX, np.int64)
        partial = chunk_counts[np.int64(c) if with_transitions else np.int64(0)]
        first = bounds[c]
        for g in range(chunk_groups[c], chunk_groups[c + 1]):
            last = group_ends[g]
            lanes = groups if last - first > 1 else singles
            emission, alpha, beta, _, _, _, counts, lane_log_z = lanes
            n = offsets[order[first] + 1] - offsets[order[first]]
            m = np.int64(0)  # typed, not literal: the fit's kernel calls the lanes with a variable
            for k in range(first, last):
                q = order[k]
                if n == 0:
                    todo[q] = False
                    continue
                lo = offsets[q]
                shift, forbidden = shifted_exp_rows(unary, lo, lo + n, rows,
                                                    start_max + end_max + (n - 1) * trans_max,
                                                    np.bool_(False))
                if forbidden:  # NaN too: the one-sequence pass tracks what -inf forbids
                    continue
                for r in range(n):
                    for j in range(n_classes):
                        emission[r, j, m] = rows[r, j]
                lane_log_z[m] = shift
                members[m] = q
                m += 1
            first = last
            if m == 0:
                continue
            lane_forward_backward(exp_trans, exp_start, exp_end, n, m, lanes, with_transitions)
            for lane in range(m):
                q = members[lane]
                todo[q] = False
                if np.isnan(lane_log_z[lane]):
                    exact[q] = True
                    continue
                log_z[q] = lane_log_z[lane]
                lo = offsets[q]
                for r in range(n):
                    for j in range(n_classes):
                        marginals[lo + r, j] = alpha[r, j, lane] * beta[r, j, lane]
                if with_transitions:
                    for i in range(n_classes):
                        for j in range(n_classes):
                            partial[i, j] += counts[i, j, lane]


@compiled()
def _scaled_chunks(chunk_lo, chunk_hi, bounds, unary, transitions, start, end, offsets,
                   potentials, with_transitions, log_z, marginals, chunk_counts, todo, exact):
    """The scaled pass of the chunks' sequences in ``todo``; ``exact`` flags those it cannot do."""
    n_classes = unary.shape[1]
    (trans_max, exp_trans, exp_trans_t, start_max, exp_start, end_max, exp_end,
     any_forbidden) = potentials
    for c in range(chunk_lo, chunk_hi):
        if not todo[bounds[c]:bounds[c + 1]].any():
            continue
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        alpha, beta, emission, norm, reach, _, _, scratch = chain_workspace(
            longest, n_classes, np.bool_(False))  # typed, not literal: see compiled()
        partial = chunk_counts[np.int64(c) if with_transitions else np.int64(0)]
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if hi == lo or not todo[q]:
                continue
            lz = scaled_sequence(unary, transitions, start, end, lo, hi, exp_trans,
                                 exp_trans_t, trans_max, exp_start, start_max, exp_end,
                                 end_max, any_forbidden, emission, alpha, beta, norm, reach,
                                 with_transitions, marginals, partial, scratch)
            if np.isnan(lz):
                exact[q] = True
            else:
                log_z[q] = lz


@compiled()
def _exact_chunks(chunk_lo, chunk_hi, bounds, unary, transitions, start, end, offsets,
                  shifted, with_transitions, log_z, marginals, chunk_counts, exact):
    """The exact log-space pass of the chunks' sequences that ``exact`` flags."""
    n_classes = unary.shape[1]
    col_max, exp_by_col, row_max, exp_by_row = shifted
    for c in range(chunk_lo, chunk_hi):
        if not exact[bounds[c]:bounds[c + 1]].any():
            continue
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        alpha, beta, shifted_rows, _, _, block, scaled, scratch = chain_workspace(
            longest, n_classes, with_transitions)
        partial = chunk_counts[np.int64(c) if with_transitions else np.int64(0)]
        for q in range(bounds[c], bounds[c + 1]):
            if exact[q]:
                log_z[q] = log_space_sequence(
                    unary, transitions, start, end, offsets[q], offsets[q + 1],
                    col_max, exp_by_col, row_max, exp_by_row, with_transitions,
                    marginals, partial, alpha, beta, shifted_rows, block, scaled, scratch)


def viterbi(unary, transitions, start, end, offsets):
    """Most likely label path of every sequence.

    Ties go to the lowest label id. A transition of ``-inf`` never appears in a
    returned path unless the sequence has no feasible path at all.

    Returns
    -------
    label_ids : (n_tokens,) int64
    """
    return best_paths(unary, transitions[np.newaxis], 0, start, end, offsets)
