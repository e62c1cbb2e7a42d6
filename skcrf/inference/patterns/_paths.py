"""Best and n-best label paths over a pattern automaton, one sequence at a time.

Max-product has no differences to take, so the failure links save nothing
here: both recursions expand every state's moves (``moves[s, b]``, see
:mod:`._patterns_exact`), ``n_states * C`` per token. Scores are kept
relative to each token's best unary score (:func:`~._logspace.shifted_rows`),
as :func:`~.chain2.viterbi2` does, so a huge score never enters the sums.

Ties go to the lowest source state, then (for n-best) to the lowest rank in
its list, scanning sources in increasing order with a strict comparison: the
paths and their order never depend on the thread count.
"""

import numpy as np

from .._runtime.batch import compiled
from .._logspace import shifted_rows
from .._topn import best_head


@compiled()
def best_path(unary, lo, hi, moves, arc_weight, arc_dest, state_label, start, end,
              label_ids, work):
    """The best labelling of tokens lo..hi-1 (hi > lo) into ``label_ids[lo:hi]``.

    ``work`` is from :func:`path_workspace` (n = 1). A sequence with no
    feasible labelling gets label 0 throughout... whatever the lowest ids
    give: the caller checks feasibility with the labelling's score.
    """
    scores, pointers, shifted = work[0], work[1], work[2]
    n_states, n_classes = moves.shape
    n = hi - lo
    shifted_rows(unary, lo, hi, shifted)
    for s in range(n_states):
        scores[0, s] = -np.inf
    for a in range(n_classes):
        scores[0, a] = start[a] + shifted[0, a]
    cur = 0
    for r in range(1, n):
        nxt = 1 - cur
        for s in range(n_states):
            scores[nxt, s] = -np.inf
            pointers[r, s] = 0
        for s in range(n_states):
            previous = scores[cur, s]
            if previous == -np.inf:
                continue
            for b in range(n_classes):
                e = moves[s, b]
                v = previous + arc_weight[e] + shifted[r, b]
                d = arc_dest[e]
                if v > scores[nxt, d]:
                    scores[nxt, d] = v
                    pointers[r, d] = s
        cur = nxt
    best = -np.inf
    state = 0
    for s in range(n_states):
        v = scores[cur, s] + end[state_label[s]]
        if v > best:
            best = v
            state = s
    for r in range(n - 1, -1, -1):
        label_ids[lo + r] = state_label[state]
        state = pointers[r, state]


@compiled()
def path_workspace(longest, n_states, n_classes, n):
    """Scratch of :func:`best_path` (n = 1) and :func:`nbest_paths_of`.

    ``(scores, pointers, shifted, ranks, sizes, heads, positions)``: for the
    best path, two rows of scores and a pointer per token and state; for
    n-best, a list of ``n`` per token and state (rows ``r * n_states + s``).
    """
    if n == 1:
        return (np.empty((2, n_states)), np.zeros((longest, n_states), np.int64),
                np.empty((longest, n_classes)), np.zeros((0, 0), np.int64),
                np.zeros(0, np.int64), np.empty(0), np.zeros(0, np.int64))
    rows = longest * n_states
    return (np.empty((rows, n)), np.zeros((rows, n), np.int64),
            np.empty((longest, n_classes)), np.zeros((rows, n), np.int64),
            np.zeros(rows, np.int64), np.empty(n_states), np.zeros(n_states, np.int64))


@compiled()
def _merge_into(scores, sources, ranks, sizes, first_row, in_ptr, in_src, in_arc, d,
                arc_weight, extra, capacity, out_row, heads, positions):
    """The best ``capacity`` entries of the lists of ``d``'s incoming moves into row ``out_row``.

    Source ``k`` of ``d`` is state ``in_src[k]``, whose list is row
    ``first_row + in_src[k]``, each entry plus ``arc_weight[in_arc[k]] +
    extra``. Returns how many entries were kept.
    """
    n_in = in_ptr[d + 1] - in_ptr[d]
    for k in range(n_in):
        i = in_ptr[d] + k
        row = first_row + in_src[i]
        positions[k] = 0
        shift = arc_weight[in_arc[i]] + extra
        heads[k] = scores[row, 0] + shift if sizes[row] > 0 and shift > -np.inf else -np.inf
    count = 0
    while count < capacity:
        best, chosen = best_head(heads, n_in)
        if chosen < 0:
            break
        i = in_ptr[d] + chosen
        row = first_row + in_src[i]
        scores[out_row, count] = best
        sources[out_row, count] = in_src[i]
        ranks[out_row, count] = positions[chosen]
        count += 1
        positions[chosen] += 1
        if positions[chosen] < sizes[row]:
            heads[chosen] = scores[row, positions[chosen]] + arc_weight[in_arc[i]] + extra
        else:
            heads[chosen] = -np.inf
    return count


@compiled()
def nbest_paths_of(unary, lo, hi, in_ptr, in_src, in_arc, arc_weight, state_label, start,
                   end, n, paths, q, counts, work):
    """The ``n`` best labellings of tokens lo..hi-1 (hi > lo) into columns of ``paths``.

    ``in_ptr``, ``in_src``, ``in_arc`` list each state's incoming moves (its
    sources and the moves they take), by state, sources increasing. Writes
    ``counts[q]``, the number of feasible paths found (at most ``n``).
    """
    scores, sources, shifted, ranks, sizes, heads, positions = work
    n_states = state_label.shape[0]
    n_classes = start.shape[0]
    m = hi - lo
    shifted_rows(unary, lo, hi, shifted)
    for s in range(n_states):
        sizes[s] = 0
    for a in range(n_classes):
        v = start[a] + shifted[0, a]
        if v > -np.inf:
            scores[a, 0] = v
            sizes[a] = 1
    for r in range(1, m):
        first_row = (r - 1) * n_states
        for d in range(n_states):
            row = r * n_states + d
            u = shifted[r, state_label[d]]
            sizes[row] = 0 if u == -np.inf else _merge_into(
                scores, sources, ranks, sizes, first_row, in_ptr, in_src, in_arc, d,
                arc_weight, u, n, row, heads, positions)
    # the final lists: every state's, plus its last label's end score
    last = (m - 1) * n_states
    count = 0
    for s in range(n_states):
        positions[s] = 0
        shift = end[state_label[s]]
        heads[s] = (scores[last + s, 0] + shift
                    if sizes[last + s] > 0 and shift > -np.inf else -np.inf)
    while count < n:
        best, chosen = best_head(heads, n_states)
        if chosen < 0:
            break
        state, rank = chosen, positions[chosen]
        for r in range(m - 1, -1, -1):
            paths[lo + r, count] = state_label[state]
            row = r * n_states + state
            if r > 0:
                state, rank = sources[row, rank], ranks[row, rank]
        count += 1
        positions[chosen] += 1
        row = last + chosen
        heads[chosen] = (scores[row, positions[chosen]] + end[state_label[chosen]]
                         if positions[chosen] < sizes[row] else -np.inf)
    counts[q] = count
