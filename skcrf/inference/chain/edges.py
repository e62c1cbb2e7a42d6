"""Order-1 chain inference with a transition score per token.

The transitions depend on the observations ("observation-conditioned
transitions"): the score of label ``a`` at token ``t - 1`` followed by label
``b`` at token ``t`` is ``edges[t, a, b]``, typically
``T[a, b] + sum_f x[t, f] * V[f, a, b]``. The layout is that of
:mod:`.order1` with ``transitions`` replaced by

- ``edges`` : (n_tokens, n_classes, n_classes) float64, indexed [token, from, to];
  ``edges[offsets[q]]`` (the first token of a sequence has no predecessor) is
  ignored; ``-inf`` forbids a transition at that token.

A labelling ``y`` of tokens ``lo..hi-1`` scores ::

    start[y_0] + sum_t unary[lo + t, y_t]
               + sum_{t >= 1} edges[lo + t, y_{t-1}, y_t] + end[y_{n-1}]

As in :mod:`.order1`, nothing here validates or mutates its inputs. The
per-sequence routine :func:`edge_sequence_posteriors` (with
:func:`edge_workspace`) is what a training kernel calls on its own scratch rows.
"""

import numpy as np

from .._runtime.batch import chunk_bounds, compiled, default_n_chunks, longest_sequence, run_chunks
from .._logspace import (block_max, logsumexp_sum, normalize_log_block, normalized_exp_sum,
                        shifted_exp_into, shifted_rows)
from ._order1_passes import best_paths, scaled_forward_backward


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
def scaled_edge_sequence(unary, edges, start, end, lo, hi, with_pairs, marginals,
                         pair_marginals, work):
    """Forward-backward of one sequence in the probability domain, scaled per token.

    The pass of :mod:`._order1`, with each token's edge block exponentiated
    once, shifted by its own maximum, and shared by the forward pass, the
    backward pass and the pair marginals. Returns log Z, or NaN when
    the precision checks fail (or the sequence is infeasible), in which case
    no output was written and the caller runs the exact pass.
    """
    alpha, beta, emission, norm, reach, exp_edges, exp_start, exp_end, scratch, _ = work
    n_classes = unary.shape[1]
    n = hi - lo

    # every score shifted so that the largest finite one becomes exp(0); track
    # whether some score is -inf, so that reachability matters
    start_max, start_forbidden = shifted_exp_into(start, exp_start)
    end_max, end_forbidden = shifted_exp_into(end, exp_end)
    if start_max == -np.inf or end_max == -np.inf:
        return np.nan
    track = start_forbidden or end_forbidden
    log_z = start_max + end_max

    for r in range(n):
        t = lo + r
        top, forbidden = shifted_exp_into(unary[t], emission[r])
        if top == -np.inf:
            return np.nan
        log_z += top
        track = track or forbidden
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

    log_z = scaled_forward_backward(unary, edges, start, end, lo, hi, 1, exp_edges,
                                    exp_edges[:0], exp_start, exp_end, track, log_z, emission,
                                    alpha, beta, norm, reach, scratch, marginals)
    if np.isnan(log_z):
        return log_z
    if with_pairs:
        # alpha[r - 1] * exp_edges[r] * emission[r] * beta[r] / norm[r] is the
        # pair marginal itself: the scaling already normalizes it per token,
        # with no exp(log Z) to divide by
        for i in range(n_classes):
            for j in range(n_classes):
                pair_marginals[lo, i, j] = 0.0
        for r in range(1, n):
            following = emission[r]  # the backward message: see scaled_forward_backward
            for i in range(n_classes):
                a = alpha[r - 1, i]
                for j in range(n_classes):
                    pair_marginals[lo + r, i, j] = a * exp_edges[r, i, j] * following[j]
    return log_z


@compiled()
def log_space_edge_sequence(unary, edges, start, end, lo, hi, with_pairs, marginals,
                            pair_marginals, work):
    """Forward-backward of one sequence in log space: slower, never under- or overflows.

    Every cell is an exact log-sum-exp (n_classes ** 2 exponentials per token
    and pass); only the sequences the scaled pass gives up on come here.
    Returns ``-inf``, writing nothing, for an infeasible sequence.

    It runs on each token's unary scores and edge block shifted by their
    maximum (into the scaled pass's ``emission`` and ``exp_edges`` rows,
    free by now), so that a huge score on one token (a feature value of
    1e17, transition features included) leaves the digits of the others.
    """
    alpha, beta, unary_rows, _, _, edge_rows, _, _, scratch, top = work
    n_classes = unary.shape[1]
    n = hi - lo

    shift = shifted_rows(unary, lo, hi, unary_rows)
    for r in range(1, n):
        shift += _shifted_block(edges[lo + r], edge_rows[r])

    for j in range(n_classes):
        alpha[0, j] = start[j] + unary_rows[0, j]
    for r in range(1, n):
        moves = edge_rows[r]
        # i outer keeps the block contiguous in the inner loop
        for j in range(n_classes):
            top[j] = -np.inf
            scratch[j] = 0.0
        for i in range(n_classes):
            for j in range(n_classes):
                v = alpha[r - 1, i] + moves[i, j]
                if v > top[j]:
                    top[j] = v
        for i in range(n_classes):
            for j in range(n_classes):
                if top[j] > -np.inf:
                    scratch[j] += np.exp(alpha[r - 1, i] + moves[i, j] - top[j])
        for j in range(n_classes):
            if top[j] == -np.inf:
                alpha[r, j] = -np.inf
            else:
                alpha[r, j] = unary_rows[r, j] + top[j] + np.log(scratch[j])

    last = n - 1
    log_z = logsumexp_sum(alpha[last], end)
    if log_z == -np.inf:
        return log_z

    for i in range(n_classes):
        beta[last, i] = end[i]
    for r in range(n - 2, -1, -1):
        for j in range(n_classes):
            scratch[j] = unary_rows[r + 1, j] + beta[r + 1, j]
        for i in range(n_classes):
            beta[r, i] = logsumexp_sum(edge_rows[r + 1, i], scratch)

    for r in range(n):
        normalized_exp_sum(alpha[r], beta[r], marginals[lo + r])
    if with_pairs:
        for i in range(n_classes):
            for j in range(n_classes):
                pair_marginals[lo, i, j] = 0.0
        for r in range(1, n):
            block = pair_marginals[lo + r]
            for i in range(n_classes):
                for j in range(n_classes):
                    block[i, j] = (alpha[r - 1, i] + edge_rows[r, i, j] + unary_rows[r, j]
                                   + beta[r, j])
            # some score is finite: a feasible sequence crosses every token boundary
            normalize_log_block(block)
    return shift + log_z


@compiled()
def _shifted_block(block, out):
    """out = block - max(block) for a 2-D block; the max (0 when every score is -inf)."""
    n_rows, n_cols = block.shape
    top = block_max(block)
    if top == -np.inf:
        top = 0.0
    for i in range(n_rows):
        for j in range(n_cols):
            out[i, j] = block[i, j] - top
    return top


@compiled()
def _edge_posteriors(unary, edges, start, end, lo, hi, with_pairs, marginals,
                     pair_marginals, work):
    """The scaled pass, redone exactly in log space when it returns NaN."""
    lz = scaled_edge_sequence(unary, edges, start, end, lo, hi, with_pairs, marginals,
                              pair_marginals, work)
    if np.isnan(lz):
        lz = log_space_edge_sequence(unary, edges, start, end, lo, hi, with_pairs,
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
    # np.bool_: typed, not literal, as forward_backward_edges passes it
    return _edge_posteriors(unary, edges, start, end, lo, hi, np.bool_(True), marginals,
                            pair_marginals, work)


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
    exact = np.zeros(n_sequences, np.bool_)
    run_chunks(_scaled_edge_chunks, n_chunks, bounds, unary, edges, start, end, offsets,
               bool(with_pairs), log_z, marginals, pair_marginals, exact)
    if exact.any():
        run_chunks(_exact_edge_chunks, n_chunks, bounds, unary, edges, start, end, offsets,
                   bool(with_pairs), log_z, marginals, pair_marginals, exact)
    return log_z, marginals, pair_marginals


@compiled()
def _scaled_edge_chunks(chunk_lo, chunk_hi, bounds, unary, edges, start, end, offsets,
                        with_pairs, log_z, marginals, pair_marginals, exact):
    """The scaled pass of the chunks' sequences; ``exact`` flags those it cannot do."""
    n_classes = unary.shape[1]
    for c in range(chunk_lo, chunk_hi):
        work = edge_workspace(max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1),
                              n_classes)
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if hi == lo:
                continue
            lz = scaled_edge_sequence(unary, edges, start, end, lo, hi, with_pairs,
                                      marginals, pair_marginals, work)
            if np.isnan(lz):
                exact[q] = True
            else:
                log_z[q] = lz


@compiled()
def _exact_edge_chunks(chunk_lo, chunk_hi, bounds, unary, edges, start, end, offsets,
                       with_pairs, log_z, marginals, pair_marginals, exact):
    """The exact log-space pass of the chunks' sequences that ``exact`` flags.

    An infeasible sequence gets zero marginals.
    """
    n_classes = unary.shape[1]
    for c in range(chunk_lo, chunk_hi):
        if not exact[bounds[c]:bounds[c + 1]].any():
            continue
        work = edge_workspace(max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1),
                              n_classes)
        for q in range(bounds[c], bounds[c + 1]):
            if not exact[q]:
                continue
            lo, hi = offsets[q], offsets[q + 1]
            log_z[q] = log_space_edge_sequence(unary, edges, start, end, lo, hi, with_pairs,
                                               marginals, pair_marginals, work)
            if log_z[q] > -np.inf:
                continue
            for t in range(lo, hi):
                for i in range(n_classes):
                    marginals[t, i] = 0.0
                    if with_pairs:
                        for j in range(n_classes):
                            pair_marginals[t, i, j] = 0.0


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
    return best_paths(unary, edges, 1, start, end, offsets)
