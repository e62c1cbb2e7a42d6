"""Merging sorted lists of candidates: what the n-best Viterbi recursions keep per state.

An n-best recursion keeps, for every state of every position, the ``n`` best
partial paths that end there: their scores, sorted best first, and for each
where it came from (a predecessor, the *source*, and the rank of the entry
it extends in that source's list). A state's candidates are its
predecessors' lists, each shifted by the score of the move from that
predecessor; each shifted list is still sorted, so the ``n`` best come out of
a merge that keeps one head per source: ``n`` times, take the best head and
advance its source. That costs O(n_sources * n) per state, and in practice
less than a heap's O(n_sources + n log n_sources) for the label counts of
tagging tasks: a scan of a few heads is cheap, a heap's branches are not.

Ties: among equal scores the lower source comes first, and within a source
the lower rank (its list's own order). That is the order in which a 1-best
Viterbi that keeps the first strict maximum scans its predecessors, so
rank 0 is that Viterbi's choice, and the lists never depend on the thread
count.
"""

import numpy as np

from ._runtime.batch import compiled


@compiled()
def merge_best(lists, sizes, first_row, row_step, table, first_table_row, column, n_sources,
               skip, capacity, out_scores, out_sources, out_ranks, out_row, heads, positions):
    """Merge the best ``capacity`` entries of shifted sorted lists into row ``out_row``; how many.

    Source ``s < n_sources`` is the list in row ``first_row + s * row_step``
    of ``lists`` (its first ``sizes[row]`` entries, best first), each entry
    plus the shift ``table[first_table_row + s, column]``. A shift of
    ``-inf``, and the source ``skip`` (-1 for none), leave a source out. The
    p-th best value goes to ``out_scores[out_row, p]``, its source ``s`` to
    ``out_sources[out_row, p]`` and its index in that list to
    ``out_ranks[out_row, p]``. Rows are passed as numbers, not as views of
    the arrays, because making views in the innermost loop costs more than
    the merge. ``heads`` (float64) and ``positions`` (int64) are scratch of
    at least ``n_sources`` entries.
    """
    for s in range(n_sources):
        row = first_row + s * row_step
        shift = table[first_table_row + s, column]
        positions[s] = 0
        if shift == -np.inf or sizes[row] == 0 or s == skip:
            heads[s] = -np.inf
        else:
            heads[s] = lists[row, 0] + shift
    count = 0
    while count < capacity:
        best = -np.inf
        chosen = -1
        for s in range(n_sources):
            if heads[s] > best:
                best = heads[s]
                chosen = s
        if chosen < 0:
            break
        k = positions[chosen]
        out_scores[out_row, count] = best
        out_sources[out_row, count] = chosen
        out_ranks[out_row, count] = k
        count += 1
        row = first_row + chosen * row_step
        if k + 1 < sizes[row]:
            positions[chosen] = k + 1
            heads[chosen] = lists[row, k + 1] + table[first_table_row + chosen, column]
        else:
            heads[chosen] = -np.inf
    return count
