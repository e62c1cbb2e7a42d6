"""Exact n-best label paths of chains: order 1 (shared or per-token transitions) and order 2.

The Viterbi recursions of :mod:`._order1` and :mod:`.order2` with a sorted
list of the ``n`` best partial paths per state instead of one (see
:mod:`._topn`): a state's list is the best ``n`` of its predecessors' lists
shifted by the moves into it. No beam: the result is the exact ``n`` highest
scores, and the paths that have them. Layouts as in :mod:`.order1`,
:mod:`.edges` and :mod:`.order2`; nothing here validates or mutates its
inputs.

Each kernel repeats its Viterbi's arithmetic for the partial scores (the same
per-token shifts, in the same order), so its best path is the one the 1-best
kernel returns, ties included; equal scores keep the order of the labels
along the path, from the last token back (lowest first). The scores
returned are each path's exact unshifted score, recomputed from the
potentials, for the caller to turn into probabilities with log Z.

A path with a ``-inf`` potential is never returned: a sequence with fewer
than ``n`` feasible labellings gets fewer paths (an empty sequence has
one, empty, of score 0).
"""

import numpy as np

from .._runtime.batch import chunk_bounds, compiled, default_n_chunks, longest_sequence, run_chunks
from .._logspace import shift_of
from .._topn import candidate_lists, merge_best, nbest_outputs


@compiled()
def _subtract_top(score, size, first_row, n_rows):
    """Shift the lists of rows first_row.. by the best score among them, as Viterbi shifts its row."""
    top = -np.inf
    for row in range(first_row, first_row + n_rows):
        if size[row] > 0 and score[row, 0] > top:
            top = score[row, 0]
    if top == -np.inf:
        return
    for row in range(first_row, first_row + n_rows):
        for k in range(size[row]):
            score[row, k] -= top


@compiled()
def _order1_path_score(unary, moves, step, start, end, lo, hi, paths, k):
    """Unshifted score of path ``k`` (column k of ``paths``) over tokens lo..hi-1."""
    y = paths[lo, k]
    total = start[y] + unary[lo, y]
    for t in range(lo + 1, hi):
        x = y
        y = paths[t, k]
        total += moves[t * step][x, y] + unary[t, y]
    return total + end[y]


def nbest_paths(unary, moves, step, start, end, offsets, n):
    """The ``n`` best label paths of every sequence of an order-1 chain.

    Parameters
    ----------
    unary, start, end, offsets
        As in :mod:`.order1`.
    moves : (n_blocks, n_classes, n_classes) float64
        Transition scores; token ``t`` moves by ``moves[t * step]`` (see
        :mod:`._order1`): ``transitions[np.newaxis]`` with step 0, or the
        per-token ``edges`` with step 1.
    step : int
        0 or 1.
    n : int
        Paths per sequence, at least 1.

    Returns
    -------
    paths : (n_tokens, n) int64
        Column k holds the k-th best path's labels (rows of sequence q:
        ``offsets[q]:offsets[q + 1]``); columns past ``counts[q]`` are 0.
    scores : (n_sequences, n) float64
        Each path's score; ``-inf`` past ``counts[q]``.
    counts : (n_sequences,) int64
        Paths found: ``min(n, number of feasible labellings)``.
    """
    n_tokens, n_classes = unary.shape
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    paths = np.zeros((n_tokens, n), np.int64)
    scores, counts = nbest_outputs(offsets, n)
    end_column = np.ascontiguousarray(end.reshape(n_classes, 1))
    run_chunks(_nbest_chunks, n_chunks, bounds, unary, moves, step, start, end, offsets, n,
               end_column, paths, scores, counts)
    return paths, scores, counts


@compiled()
def _nbest_chunks(chunk_lo, chunk_hi, bounds, unary, moves, step, start, end, offsets, n,
                  end_column, paths, scores, counts):
    """The n-best paths of the chunks' sequences into ``paths``, ``scores``, ``counts``."""
    n_classes = unary.shape[1]
    # typed, not literal, constants: merge_best compiles once (see _batch.compiled)
    zero, one, no_skip = np.int64(0), np.int64(1), np.int64(-1)
    for c in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        # row r * n_classes + j: the best partial paths ending in label j at
        # token lo + r, shifted (score, size), each with its previous label and
        # that label's rank in its list at token lo + r - 1 (came_from, came_rank)
        score, came_from, came_rank, size = candidate_lists(longest * n_classes, n)
        final, final_label, final_rank, _ = candidate_lists(one, n)
        heads = np.empty(n_classes)
        positions = np.empty(n_classes, np.int64)
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if hi == lo:
                continue
            top = shift_of(unary[lo])
            for j in range(n_classes):
                v = start[j] + (unary[lo, j] - top)
                size[j] = 0
                if v > -np.inf:
                    score[j, 0] = v
                    size[j] = 1
            _subtract_top(score, size, 0, n_classes)
            for t in range(lo + 1, hi):
                r = t - lo
                block = moves[t * step]
                top = shift_of(unary[t])
                for j in range(n_classes):
                    row = r * n_classes + j
                    kept = 0
                    u = unary[t, j] - top
                    if u > -np.inf:
                        kept = merge_best(score, size, (r - 1) * n_classes, one, block, zero,
                                          j, n_classes, no_skip, n, score, came_from,
                                          came_rank, row, heads, positions)
                        for k in range(kept):
                            score[row, k] = score[row, k] + u
                    size[row] = kept
                _subtract_top(score, size, r * n_classes, n_classes)
            last = hi - 1 - lo
            kept = merge_best(score, size, last * n_classes, one, end_column, zero, zero,
                              n_classes, no_skip, n, final, final_label, final_rank, zero,
                              heads, positions)
            counts[q] = kept
            for p in range(kept):
                j = final_label[0, p]
                k = final_rank[0, p]
                for r in range(last, -1, -1):
                    paths[lo + r, p] = j
                    row = r * n_classes + j
                    j, k = came_from[row, k], came_rank[row, k]
                scores[q, p] = _order1_path_score(unary, moves, step, start, end, lo, hi,
                                                  paths, p)


@compiled()
def _order2_path_score(unary, transitions, trigram, start, end, lo, hi, paths, k):
    """Unshifted score of path ``k`` of an order-2 chain over tokens lo..hi-1."""
    total = start[paths[lo, k]] + end[paths[hi - 1, k]]
    for t in range(lo, hi):
        total += unary[t, paths[t, k]]
        if t > lo:
            total += transitions[paths[t - 1, k], paths[t, k]]
        if t > lo + 1:
            total += trigram[paths[t - 2, k], paths[t - 1, k], paths[t, k]]
    return total


def nbest_paths2(unary, transitions, trigram, start, end, offsets, n):
    """The ``n`` best label paths of every sequence of an order-2 chain.

    States are label pairs (y[t-1], y[t]), as in :func:`.chain2.viterbi2`,
    each with a list of the ``n`` best partial paths: a token costs
    O(n_classes ** 2 * (n_classes + n log n_classes)).

    Parameters
    ----------
    unary, transitions, trigram, start, end, offsets
        As in :mod:`.order2`.
    n : int
        Paths per sequence, at least 1.

    Returns
    -------
    paths, scores, counts
        As :func:`nbest_paths`.
    """
    n_tokens, n_classes = unary.shape
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    n_pairs = n_classes * n_classes
    # moves[b * n_classes + a, c]: the move (a, b) -> (b, c), as viterbi2 adds it
    moves = np.ascontiguousarray((trigram + transitions[np.newaxis]).transpose(1, 0, 2)
                                 .reshape(n_pairs, n_classes))
    # the end score of each pair state (b, c), numbered b * n_classes + c
    pair_end = np.ascontiguousarray(np.tile(end, n_classes).reshape(n_pairs, 1))
    no_shift = np.zeros((n_classes, 1))
    paths = np.zeros((n_tokens, n), np.int64)
    scores, counts = nbest_outputs(offsets, n)
    run_chunks(_nbest2_chunks, n_chunks, bounds, unary, transitions, trigram, start, end,
               offsets, n, moves, pair_end, no_shift, paths, scores, counts)
    return paths, scores, counts


@compiled()
def _nbest2_chunks(chunk_lo, chunk_hi, bounds, unary, transitions, trigram, start, end,
                   offsets, n, moves, pair_end, no_shift, paths, scores, counts):
    """The n-best paths of the chunks' sequences into ``paths``, ``scores``, ``counts``."""
    n_classes = unary.shape[1]
    # typed, not literal, constants: merge_best compiles once (see _batch.compiled)
    zero, one, no_skip = np.int64(0), np.int64(1), np.int64(-1)
    n_pairs = n_classes * n_classes
    for k_chunk in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[k_chunk], bounds[k_chunk + 1]), 2)
        # row (r * n_classes + b) * n_classes + c: the lists of the pair state
        # (b, c) = (y[r-1], y[r]) at token lo + r; came_from: y[r-2] of each
        # entry, came_rank: its rank in the list of (y[r-2], b)
        score, came_from, came_rank, size = candidate_lists(longest * n_pairs, n)
        final, final_state, final_rank, _ = candidate_lists(one, n)
        heads = np.empty(n_pairs)
        positions = np.empty(n_pairs, np.int64)
        for q in range(bounds[k_chunk], bounds[k_chunk + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            m = hi - lo
            if m == 0:
                continue
            if m == 1:
                # viterbi2 scores a single token unshifted: one-entry lists in rows 0..C-1
                for c in range(n_classes):
                    v = start[c] + unary[lo, c] + end[c]
                    size[c] = 0
                    if v > -np.inf:
                        score[c, 0] = v
                        size[c] = 1
                kept = merge_best(score, size, zero, one, no_shift, zero, zero, n_classes,
                                  no_skip, n, final, final_state, final_rank, zero, heads,
                                  positions)
                counts[q] = kept
                for p in range(kept):
                    paths[lo, p] = final_state[0, p]
                    scores[q, p] = _order2_path_score(unary, transitions, trigram, start,
                                                      end, lo, hi, paths, p)
                continue
            first, second = shift_of(unary[lo]), shift_of(unary[lo + 1])
            for b in range(n_classes):
                for c in range(n_classes):
                    row = n_pairs + b * n_classes + c
                    v = (start[b] + (unary[lo, b] - first) + transitions[b, c]
                         + (unary[lo + 1, c] - second))
                    size[row] = 0
                    if v > -np.inf:
                        score[row, 0] = v
                        size[row] = 1
            for r in range(2, m):
                t = lo + r
                top = shift_of(unary[t])
                for b in range(n_classes):
                    for c in range(n_classes):
                        row = (r * n_classes + b) * n_classes + c
                        held = 0
                        u = unary[t, c] - top
                        if u > -np.inf:
                            # sources a: the states (a, b) at r - 1
                            held = merge_best(score, size, (r - 1) * n_pairs + b, n_classes,
                                              moves, b * n_classes, c, n_classes, no_skip, n,
                                              score, came_from, came_rank, row, heads, positions)
                            for k in range(held):
                                score[row, k] = score[row, k] + u
                        size[row] = held
            last = m - 1
            kept = merge_best(score, size, last * n_pairs, one, pair_end, zero, zero, n_pairs,
                              no_skip, n, final, final_state, final_rank, zero, heads,
                              positions)
            counts[q] = kept
            for p in range(kept):
                b = final_state[0, p] // n_classes
                c = final_state[0, p] % n_classes
                k = final_rank[0, p]
                for r in range(last, 1, -1):
                    paths[lo + r, p] = c
                    row = (r * n_classes + b) * n_classes + c
                    a = came_from[row, k]
                    k = came_rank[row, k]
                    b, c = a, b
                paths[lo + 1, p] = c
                paths[lo, p] = b
                scores[q, p] = _order2_path_score(unary, transitions, trigram, start, end,
                                                  lo, hi, paths, p)
