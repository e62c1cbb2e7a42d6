"""Order-1 chain inference with a transition score per token.

The transitions depend on the observations ("observation-conditioned
transitions"): the score of label ``a`` at token ``t - 1`` followed by label
``b`` at token ``t`` is ``edges[t, a, b]``, typically
``T[a, b] + sum_f x[t, f] * V[f, a, b]``. The layout is that of
:mod:`.chain` with ``transitions`` replaced by

- ``edges`` : (n_tokens, n_classes, n_classes) float64, indexed [token, from, to];
  ``edges[offsets[q]]`` (the first token of a sequence has no predecessor) is
  ignored; ``-inf`` forbids a transition at that token.

A labelling ``y`` of tokens ``lo..hi-1`` scores ::

    start[y_0] + sum_t unary[lo + t, y_t]
               + sum_{t >= 1} edges[lo + t, y_{t-1}, y_t] + end[y_{n-1}]

As in :mod:`.chain`, nothing here validates or mutates its inputs. The
per-sequence routine :func:`edge_sequence_posteriors` (with
:func:`edge_workspace`) is what a training kernel calls on its own scratch rows.
"""

import numpy as np
from numba import prange

from ._batch import chunk_bounds, compiled, default_n_chunks, longest_sequence

#: The thresholds of the scaled pass, with the same meaning as in .chain: it
#: gives up, and the exact log-space pass takes over, when a forward value that
#: a feasible path reaches falls below _FLOOR before normalization, or a
#: backward value rises above _HUGE.
_FLOOR = 1e-290
_HUGE = 1e250


@compiled()
def edge_workspace(longest, n_classes):
    """Scratch for the sequences of one chunk, none longer than ``longest`` (>= 1).

    Parameters
    ----------
    longest : int
        Number of tokens of the longest sequence the workspace will serve; at
        least 1.
    n_classes : int

    Returns
    -------
    work : tuple of arrays
        Opaque; pass it to :func:`edge_sequence_posteriors`. Holds
        ``longest * n_classes ** 2`` floats for the exponentiated edge blocks,
        plus a few ``longest * n_classes``.
    """
    return (np.empty((longest, n_classes)),               # alpha
            np.empty((longest, n_classes)),               # beta
            np.empty((longest, n_classes)),               # emission
            np.empty(longest),                            # norm
            np.empty((2, n_classes), np.bool_),           # reach
            np.empty((longest, n_classes, n_classes)),    # exp_edges
            np.empty(n_classes),                          # exp_start
            np.empty(n_classes),                          # exp_end
            np.empty(n_classes),                          # scratch
            np.empty(n_classes))                          # top


@compiled()
def _scaled_edge_sequence(unary, edges, start, end, lo, hi, with_pairs, marginals,
                          pair_marginals, work):
    """Forward-backward of one sequence in the probability domain, scaled per token.

    As ``_scaled_sequence`` in :mod:`.chain`, with each token's edge block
    exponentiated once, shifted by its own maximum, and shared by the forward
    pass, the backward pass and the pair marginals. Returns log Z, or NaN when
    the precision checks fail (or the sequence is infeasible), in which case
    no output was written and the caller runs the exact pass.
    """
    alpha, beta, emission, norm, reach, exp_edges, exp_start, exp_end, scratch, _ = work
    n_classes = unary.shape[1]
    n = hi - lo

    # start and end: shifted so that the largest finite score becomes exp(0)
    start_max = -np.inf
    end_max = -np.inf
    track = False  # whether some score is -inf, so that reachability matters
    for j in range(n_classes):
        if start[j] > start_max:
            start_max = start[j]
        elif start[j] == -np.inf:
            track = True
        if end[j] > end_max:
            end_max = end[j]
        elif end[j] == -np.inf:
            track = True
    if start_max == -np.inf or end_max == -np.inf:
        return np.nan
    for j in range(n_classes):
        exp_start[j] = np.exp(start[j] - start_max)
        exp_end[j] = np.exp(end[j] - end_max)
    log_z = start_max + end_max

    for r in range(n):
        t = lo + r
        top = -np.inf
        for j in range(n_classes):
            if unary[t, j] > top:
                top = unary[t, j]
            elif unary[t, j] == -np.inf:
                track = True
        if top == -np.inf:
            return np.nan
        log_z += top
        for j in range(n_classes):
            emission[r, j] = np.exp(unary[t, j] - top)
        if r == 0:
            continue
        top = -np.inf
        for i in range(n_classes):
            for j in range(n_classes):
                if edges[t, i, j] > top:
                    top = edges[t, i, j]
                elif edges[t, i, j] == -np.inf:
                    track = True
        if top == -np.inf:
            return np.nan
        log_z += top
        for i in range(n_classes):
            for j in range(n_classes):
                exp_edges[r, i, j] = np.exp(edges[t, i, j] - top)

    prev, cur = 0, 1
    total = 0.0
    for j in range(n_classes):
        alpha[0, j] = exp_start[j] * emission[0, j]
        reach[prev, j] = start[j] > -np.inf and unary[lo, j] > -np.inf
        if alpha[0, j] < _FLOOR and (reach[prev, j] or not track):
            return np.nan
        total += alpha[0, j]
    if total == 0.0:
        return np.nan
    norm[0] = total
    for j in range(n_classes):
        alpha[0, j] /= total
    for r in range(1, n):
        t = lo + r
        for j in range(n_classes):
            alpha[r, j] = 0.0
        for i in range(n_classes):
            a = alpha[r - 1, i]
            if a != 0.0:
                for j in range(n_classes):
                    alpha[r, j] += a * exp_edges[r, i, j]
        total = 0.0
        for j in range(n_classes):
            alpha[r, j] *= emission[r, j]
            if alpha[r, j] < _FLOOR:
                if not track:
                    return np.nan
                # an unreached state has alpha exactly 0; a reached one that
                # fell below the floor may have lost its dominant terms
                reached = False
                if unary[t, j] > -np.inf:
                    for i in range(n_classes):
                        if reach[prev, i] and edges[t, i, j] > -np.inf:
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
        for j in range(n_classes):
            alpha[r, j] /= total
        prev, cur = cur, prev
    final = 0.0
    for j in range(n_classes):
        term = alpha[n - 1, j] * exp_end[j]
        if term < _FLOOR and (not track or (reach[prev, j] and end[j] > -np.inf)):
            return np.nan
        final += term
    if final == 0.0:
        return np.nan

    for j in range(n_classes):
        beta[n - 1, j] = exp_end[j] / final
    for r in range(n - 2, -1, -1):
        for j in range(n_classes):
            scratch[j] = emission[r + 1, j] * beta[r + 1, j] / norm[r + 1]
            if not scratch[j] < _HUGE:
                return np.nan
        for i in range(n_classes):
            total = 0.0
            for j in range(n_classes):
                total += exp_edges[r + 1, i, j] * scratch[j]
            if not total < _HUGE:
                return np.nan
            beta[r, i] = total

    # every check passed: only now write the outputs
    for r in range(n):
        log_z += np.log(norm[r])
        for j in range(n_classes):
            marginals[lo + r, j] = alpha[r, j] * beta[r, j]
    log_z += np.log(final)
    if with_pairs:
        # alpha[r - 1] * exp_edges[r] * emission[r] * beta[r] / norm[r] is the
        # pair marginal itself: the scaling already normalizes it per token,
        # with no exp(log Z) to divide by
        for i in range(n_classes):
            for j in range(n_classes):
                pair_marginals[lo, i, j] = 0.0
        for r in range(1, n):
            for j in range(n_classes):
                scratch[j] = emission[r, j] * beta[r, j] / norm[r]
            for i in range(n_classes):
                a = alpha[r - 1, i]
                for j in range(n_classes):
                    pair_marginals[lo + r, i, j] = a * exp_edges[r, i, j] * scratch[j]
    return log_z


@compiled()
def _log_space_edge_sequence(unary, edges, start, end, lo, hi, with_pairs, marginals,
                             pair_marginals, work):
    """Forward-backward of one sequence in log space: slower, never under- or overflows.

    Every cell is an exact log-sum-exp (n_classes ** 2 exponentials per token
    and pass); only the sequences the scaled pass gives up on come here.
    Returns ``-inf``, writing nothing, for an infeasible sequence.
    """
    alpha, beta, _, _, _, _, _, _, scratch, top = work
    n_classes = unary.shape[1]
    n = hi - lo

    for j in range(n_classes):
        alpha[0, j] = start[j] + unary[lo, j]
    for r in range(1, n):
        t = lo + r
        # i outer keeps edges[t] contiguous in the inner loop
        for j in range(n_classes):
            top[j] = -np.inf
            scratch[j] = 0.0
        for i in range(n_classes):
            for j in range(n_classes):
                v = alpha[r - 1, i] + edges[t, i, j]
                if v > top[j]:
                    top[j] = v
        for i in range(n_classes):
            for j in range(n_classes):
                if top[j] > -np.inf:
                    scratch[j] += np.exp(alpha[r - 1, i] + edges[t, i, j] - top[j])
        for j in range(n_classes):
            if top[j] == -np.inf:
                alpha[r, j] = -np.inf
            else:
                alpha[r, j] = unary[t, j] + top[j] + np.log(scratch[j])

    last = n - 1
    log_z = _logsumexp_sum(alpha[last], end)
    if log_z == -np.inf:
        return log_z

    for i in range(n_classes):
        beta[last, i] = end[i]
    for r in range(n - 2, -1, -1):
        t = lo + r + 1
        for j in range(n_classes):
            scratch[j] = unary[t, j] + beta[r + 1, j]
        for i in range(n_classes):
            beta[r, i] = _logsumexp_sum(edges[t, i], scratch)

    # normalized per token, for the reason given in .chain's _accumulate_transitions
    for r in range(n):
        t = lo + r
        best = -np.inf
        for j in range(n_classes):
            if alpha[r, j] + beta[r, j] > best:
                best = alpha[r, j] + beta[r, j]
        total = 0.0
        for j in range(n_classes):
            marginals[t, j] = np.exp(alpha[r, j] + beta[r, j] - best)
            total += marginals[t, j]
        for j in range(n_classes):
            marginals[t, j] /= total
    if with_pairs:
        for i in range(n_classes):
            for j in range(n_classes):
                pair_marginals[lo, i, j] = 0.0
        for r in range(1, n):
            t = lo + r
            block = pair_marginals[t]
            best = -np.inf
            for i in range(n_classes):
                for j in range(n_classes):
                    block[i, j] = alpha[r - 1, i] + edges[t, i, j] + unary[t, j] + beta[r, j]
                    if block[i, j] > best:
                        best = block[i, j]
            # best is finite: a feasible sequence crosses every token boundary
            total = 0.0
            for i in range(n_classes):
                for j in range(n_classes):
                    block[i, j] = np.exp(block[i, j] - best)
                    total += block[i, j]
            for i in range(n_classes):
                for j in range(n_classes):
                    block[i, j] /= total
    return log_z


@compiled()
def _logsumexp_sum(a, b):
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
def _edge_posteriors(unary, edges, start, end, lo, hi, with_pairs, marginals,
                     pair_marginals, work):
    """The scaled pass, redone exactly in log space when it returns NaN."""
    lz = _scaled_edge_sequence(unary, edges, start, end, lo, hi, with_pairs, marginals,
                               pair_marginals, work)
    if np.isnan(lz):
        lz = _log_space_edge_sequence(unary, edges, start, end, lo, hi, with_pairs,
                                      marginals, pair_marginals, work)
    return lz


@compiled()
def edge_sequence_posteriors(unary, edges, start, end, lo, hi, marginals, pair_marginals,
                             work):
    """log Z, token marginals and pair marginals of the sequence of tokens lo..hi-1.

    The fast scaled pass first (n_classes ** 2 exponentials per token); a
    sequence whose scores under- or overflow it is redone exactly in log space.

    Parameters
    ----------
    unary : (n_rows, n_classes) float64
    edges : (n_rows, n_classes, n_classes) float64
        ``edges[t, a, b]``: log score of label ``a`` at token ``t - 1`` followed
        by ``b`` at token ``t``; ``edges[lo]`` is ignored.
    start, end : (n_classes,) float64
    lo, hi : int
        The sequence's rows, ``lo < hi``.
    marginals : (n_rows, n_classes) float64
        Output: rows lo..hi-1 receive P(y_t = b), each summing to 1.
    pair_marginals : (n_rows, n_classes, n_classes) float64
        Output: ``pair_marginals[t, a, b]`` receives P(y_{t-1} = a, y_t = b) for
        t in lo+1..hi-1, each block summing to 1 (normalized per token, not by
        exp(log Z), which would cancel digits on long sequences);
        ``pair_marginals[lo]`` receives zeros.
    work : tuple
        From :func:`edge_workspace` with ``longest >= hi - lo``.

    Returns
    -------
    log_z : float
        ``-inf`` when no labelling has a finite score; then rows lo..hi-1 of
        ``marginals`` and ``pair_marginals`` are left as they were (unwritten),
        and the caller must not read them.
    """
    return _edge_posteriors(unary, edges, start, end, lo, hi, True, marginals,
                            pair_marginals, work)


@compiled(parallel=True)
def forward_backward_edges(unary, edges, start, end, offsets, with_pairs):
    """Log partition functions, token marginals and per-token pair marginals.

    Parallel over a fixed, data-determined set of chunks of sequences; every
    output row belongs to one sequence, so results are bitwise identical for
    any thread count.

    Parameters
    ----------
    unary, edges, start, end, offsets
        See the module docstring.
    with_pairs : bool
        Whether to compute the pair marginals (training needs them,
        ``predict_marginals`` does not).

    Returns
    -------
    log_z : (n_sequences,) float64
        0 for an empty sequence; ``-inf`` for a sequence with no feasible path.
    marginals : (n_tokens, n_classes) float64
        Rows sum to 1; all zeros for the tokens of an infeasible sequence.
    pair_marginals : (n_tokens, n_classes, n_classes) or (0, n_classes, n_classes) float64
        ``pair_marginals[t, a, b] = P(y_{t-1} = a, y_t = b)``, each block summing
        to 1; zeros for the first token of each sequence and for the tokens of
        an infeasible sequence. Empty unless ``with_pairs``.
    """
    n_tokens, n_classes = unary.shape
    n_sequences = offsets.shape[0] - 1
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)

    log_z = np.zeros(n_sequences)
    # every row is written below (zeros for infeasible sequences): np.zeros
    # would add a serial pass over n_tokens * n_classes ** 2 floats
    marginals = np.empty((n_tokens, n_classes))
    pair_marginals = np.empty((n_tokens if with_pairs else 0, n_classes, n_classes))

    for c in prange(n_chunks):
        work = edge_workspace(max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1),
                              n_classes)
        for q in range(bounds[c], bounds[c + 1]):
            lo = offsets[q]
            hi = offsets[q + 1]
            if hi == lo:
                continue
            log_z[q] = _edge_posteriors(unary, edges, start, end, lo, hi, with_pairs,
                                        marginals, pair_marginals, work)
            if log_z[q] == -np.inf:
                marginals[lo:hi] = 0.0
                if with_pairs:
                    pair_marginals[lo:hi] = 0.0
    return log_z, marginals, pair_marginals


@compiled(parallel=True)
def viterbi_edges(unary, edges, start, end, offsets):
    """Most likely label path of every sequence, under per-token transitions.

    Ties go to the lowest label id. An edge of ``-inf`` never appears in a
    returned path unless the sequence has no feasible path at all.

    Parameters
    ----------
    unary, edges, start, end, offsets
        See the module docstring.

    Returns
    -------
    label_ids : (n_tokens,) int64
    """
    n_tokens, n_classes = unary.shape
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    label_ids = np.zeros(n_tokens, np.int64)

    for c in prange(n_chunks):
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        score = np.empty((longest, n_classes))
        backpointer = np.zeros((longest, n_classes), np.int32)
        for q in range(bounds[c], bounds[c + 1]):
            lo = offsets[q]
            hi = offsets[q + 1]
            if hi == lo:
                continue
            for j in range(n_classes):
                score[0, j] = start[j] + unary[lo, j]
            for t in range(lo + 1, hi):
                r = t - lo
                # i outer keeps edges[t] contiguous; a strict > over ascending i
                # still keeps the lowest i among ties
                for j in range(n_classes):
                    score[r, j] = -np.inf
                    backpointer[r, j] = 0
                for i in range(n_classes):
                    s = score[r - 1, i]
                    for j in range(n_classes):
                        v = s + edges[t, i, j]
                        if v > score[r, j]:
                            score[r, j] = v
                            backpointer[r, j] = i
                for j in range(n_classes):
                    score[r, j] += unary[t, j]
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
    return label_ids
