"""Semi-Markov queries: n-best segmentations, and inference with some segment boundaries fixed.

The potentials are those of :mod:`.semimarkov`, plus one code per token that
says what a segmentation must do at that token, beyond what ``-inf`` scores
can say:

- ``boundaries`` : (n_tokens,) int8, a sum of flags:
  :data:`CUT` (a segment starts at this token: no segment holds both it and
  the token before) and :data:`NO_REPEAT` (a segment that starts at this
  token does not take the label of the segment before it). 0 leaves the
  token free; on the first token of a sequence both flags are moot.

The rest of a fixed tag goes into the scores: a token's label is fixed by
``-inf`` state scores for the other labels, "no segment starts here" by a
``-inf`` row of ``first`` and "no segment ends here" by one of ``last``.
Together they fix the tags of every scheme (see
:meth:`skcrf.SemiMarkovCRF.predict`).

:func:`nbest_segmentations` is the segment Viterbi of :mod:`.semimarkov`
with a sorted list of the ``n`` best partial segmentations per (boundary,
label) (see :mod:`._topn`), exact, its best being the segment Viterbi's
segmentation (ties included: the lowest label, the shortest segment) when
no boundary is fixed. :func:`fixed_segment_posteriors` is the exact
log-space forward-backward of :mod:`.semimarkov` under the boundary codes,
for the token roles only. Nothing here validates or mutates its inputs.
"""

import numpy as np

from .._runtime.batch import compiled, longest_sequence, run_chunks
from ._roles import CUT, N_ROLES, NO_REPEAT
from .._topn import candidate_lists, merge_best, nbest_outputs
from .passes import _prefix_sums, _segment, _sequence_posteriors, batch_plan, exact_workspace

__all__ = ["CUT", "NO_REPEAT", "fixed_segment_posteriors", "nbest_segmentations"]


@compiled()
def _sequence_nbest(state, first, last, length, spans, transitions, start, end, boundaries,
                    longest, lo, hi, n, cum, blocked, alpha, alpha_from, alpha_rank, alpha_size,
                    enter, enter_from, enter_rank, enter_size, final, final_label, final_rank,
                    work):
    """The n best segmentations of tokens lo..hi-1 into the workspace; how many there are.

    Row ``b * n_labels + y`` of ``alpha``: the best segmentations of tokens
    ``:b`` whose last segment has label y, each with that segment's length
    minus 1 (``alpha_from``) and the rank of the entry it extends in the list
    of ``enter`` of (b - length, y); of ``enter``: the best of those of
    ``:b`` followed by a y-segment that starts at b, each with the previous
    label and its rank in the ``alpha`` list of (b, previous).
    """
    segment_scores, end_column, heads, positions = work
    n_labels = state.shape[1]
    m = hi - lo
    # typed, not literal, constants: merge_best compiles once (see _batch.compiled)
    zero, one, no_skip = np.int64(0), np.int64(1), np.int64(-1)
    _prefix_sums(state, lo, hi, cum, blocked)
    for y in range(n_labels):
        enter_size[y] = 0
        if start[y] > -np.inf:
            enter[y, 0] = start[y]
            enter_size[y] = 1
    for b in range(1, m + 1):
        for y in range(n_labels):
            # source d - 1: a y-segment of d tokens after the enter list of (b - d, y)
            n_lengths = 0
            for d in range(1, min(b, longest[y]) + 1):
                a = b - d
                if d > 1 and boundaries[lo + a + 1] & CUT:
                    break  # every longer segment also holds that fixed start
                segment_scores[d - 1, 0] = _segment(cum, blocked, first, last, length, spans,
                                                    lo, y, a, b)
                n_lengths = d
            row = b * n_labels + y
            alpha_size[row] = merge_best(enter, enter_size, (b - 1) * n_labels + y, -n_labels,
                                         segment_scores, zero, zero, n_lengths, no_skip, n,
                                         alpha, alpha_from, alpha_rank, row, heads, positions)
        if b < m:
            # a segment starting at a NO_REPEAT token may not follow one of its label
            no_repeat = boundaries[lo + b] & NO_REPEAT
            for y in range(n_labels):
                row = b * n_labels + y
                enter_size[row] = merge_best(alpha, alpha_size, b * n_labels, one, transitions,
                                             zero, y, n_labels, y if no_repeat else no_skip, n,
                                             enter, enter_from, enter_rank, row, heads,
                                             positions)
    return merge_best(alpha, alpha_size, m * n_labels, one, end_column, zero, zero, n_labels,
                      no_skip, n, final, final_label, final_rank, zero, heads, positions)


def nbest_segmentations(state, first, last, length, transitions, start, end, offsets,
                        boundaries, n, spans=None):
    """The ``n`` best segmentations of every sequence, under the fixed boundaries.

    Parameters
    ----------
    state, first, last, length, transitions, start, end, offsets, spans
        As in :mod:`.semimarkov`.
    boundaries : (n_tokens,) int8
        Flags of :data:`CUT` and :data:`NO_REPEAT`; all 0 for none.
    n : int
        Segmentations per sequence, at least 1.

    Returns
    -------
    label_ids : (n_tokens, n) int64
        Column k: the label of the segment each token lies in, in the k-th
        best segmentation (0 past ``counts[q]``).
    starts : (n_tokens, n) bool
        Column k: whether a segment of the k-th best starts at the token.
    scores : (n_sequences, n) float64
        Each segmentation's score; ``-inf`` past ``counts[q]``.
    counts : (n_sequences,) int64
        Segmentations found: ``min(n, number of feasible ones)`` (1 for an
        empty sequence, of score 0).
    """
    n_tokens, n_labels = state.shape
    n_chunks, bounds, longest, spans = batch_plan(state, length, offsets, spans)
    label_ids = np.zeros((n_tokens, n), np.int64)
    starts = np.zeros((n_tokens, n), np.bool_)
    scores, counts = nbest_outputs(offsets, n)
    end_column = np.ascontiguousarray(end.reshape(n_labels, 1))
    run_chunks(_nbest_chunks, n_chunks, bounds, state, first, last, length, spans, transitions,
               start, end, offsets, boundaries, n, longest, end_column, label_ids, starts,
               scores, counts)
    return label_ids, starts, scores, counts


@compiled()
def _nbest_chunks(chunk_lo, chunk_hi, bounds, state, first, last, length, spans, transitions,
                  start, end, offsets, boundaries, n, longest, end_column, label_ids, starts,
                  scores, counts):
    """The n-best segmentations of the chunks' sequences into the outputs."""
    n_labels = state.shape[1]
    for c in range(chunk_lo, chunk_hi):
        rows = longest_sequence(offsets, bounds[c], bounds[c + 1]) + 1
        cum = np.empty((rows, n_labels))
        blocked = np.empty((rows, n_labels), np.int64)
        alpha, alpha_from, alpha_rank, alpha_size = candidate_lists(rows * n_labels, n)
        enter, enter_from, enter_rank, enter_size = candidate_lists(rows * n_labels, n)
        final, final_label, final_rank, _ = candidate_lists(np.int64(1), n)
        sources = max(n_labels, length.shape[1])
        work = (np.empty((length.shape[1], 1)), end_column, np.empty(sources),
                np.empty(sources, np.int64))
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if hi == lo:
                continue
            kept = _sequence_nbest(state, first, last, length, spans, transitions, start, end,
                                   boundaries, longest, lo, hi, n, cum, blocked, alpha,
                                   alpha_from, alpha_rank, alpha_size, enter, enter_from,
                                   enter_rank, enter_size, final, final_label, final_rank,
                                   work)
            counts[q] = kept
            for p in range(kept):
                scores[q, p] = final[0, p]
                y = final_label[0, p]
                k = final_rank[0, p]
                b = hi - lo
                while b > 0:
                    row = b * n_labels + y
                    d = alpha_from[row, k] + 1
                    k = alpha_rank[row, k]
                    a = b - d
                    for r in range(a, b):
                        label_ids[lo + r, p] = y
                    starts[lo + a, p] = True
                    if a == 0:
                        break
                    row = a * n_labels + y
                    y, k = enter_from[row, k], enter_rank[row, k]
                    b = a


def fixed_segment_posteriors(state, first, last, length, transitions, start, end, offsets,
                             boundaries, spans=None):
    """Log partition functions and token role marginals under fixed boundaries.

    Exact, in log space: the exact pass of :func:`.passes.segment_posteriors`
    under the boundary codes. The role marginals are those of
    :func:`.passes.segment_posteriors` (the expected counts are dropped: this
    serves prediction, not training).

    Parameters
    ----------
    state, first, last, length, transitions, start, end, offsets, spans
        As in :mod:`.semimarkov`.
    boundaries : (n_tokens,) int8
        Flags of :data:`CUT` and :data:`NO_REPEAT`.

    Returns
    -------
    log_z : (n_sequences,) float64
        0 for an empty sequence; ``-inf`` for one with no feasible segmentation.
    roles : (n_tokens, N_ROLES, n_labels) float64
        All zero on an infeasible sequence.
    """
    n_tokens, n_labels = state.shape
    n_sequences = offsets.shape[0] - 1
    n_chunks, bounds, longest, spans = batch_plan(state, length, offsets, spans)
    log_z = np.zeros(n_sequences)
    roles = np.zeros((n_tokens, N_ROLES, n_labels))
    run_chunks(_fixed_posterior_chunks, n_chunks, bounds, state, first, last, length,
               spans, transitions, start, end, offsets, boundaries, longest, log_z, roles)
    return log_z, roles


@compiled()
def _fixed_posterior_chunks(chunk_lo, chunk_hi, bounds, state, first, last, length,
                            spans, transitions, start, end, offsets, boundaries, longest, log_z,
                            roles):
    """log Z and role marginals of the chunks' sequences under fixed boundaries."""
    n_labels = state.shape[1]
    no_marginals = np.zeros((0, 0, n_labels))
    for c in range(chunk_lo, chunk_hi):
        rows = longest_sequence(offsets, bounds[c], bounds[c + 1]) + 1
        # the counts the pass adds up, which prediction does not need
        counts = (np.zeros(length.shape), np.zeros((n_labels, n_labels)), np.zeros(n_labels),
                  np.zeros(n_labels))
        cum, blocked, alpha, enter, beta, leave, cover = exact_workspace(rows, n_labels)
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if hi == lo:
                continue
            log_z[q] = _sequence_posteriors(
                state, first, last, length, spans, transitions, start, end, boundaries, longest,
                lo, hi, roles, no_marginals, counts[0], counts[1], counts[2], counts[3], cum,
                blocked, alpha, enter, beta, leave, cover)
