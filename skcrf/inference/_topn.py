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


def nbest_outputs(offsets, n):
    """``(scores, counts)`` of an n-best query before the kernels fill them in.

    ``scores`` (n_sequences, n) is ``-inf`` (no labelling found yet) and
    ``counts`` (n_sequences,) 0, except that an empty sequence has its one
    labelling, the empty one, of score 0: the kernels skip it.
    """
    empty = offsets[1:] == offsets[:-1]
    scores = np.full((empty.shape[0], n), -np.inf)
    scores[empty, 0] = 0.0
    return scores, empty.astype(np.int64)


@compiled(inline=True)
def candidate_lists(n_rows, n):
    """Room for ``n_rows`` lists of at most ``n`` entries: (scores, sources, ranks, sizes).

    A row's entries are its scores, best first, each with its source and its
    rank in that source's list (int32: a label or a rank); ``sizes`` counts
    each row's entries.
    """
    return (np.empty((n_rows, n)), np.zeros((n_rows, n), np.int32),
            np.zeros((n_rows, n), np.int32), np.zeros(n_rows, np.int64))


@compiled(inline=True)
def best_head(heads, n_sources):
    """The best of ``heads[:n_sources]`` and its source, the lowest among ties; (-inf, -1) if none.

    The step of every merge of sorted lists (see the module docstring):
    ``-inf`` marks a source that is exhausted or left out.
    """
    best = -np.inf
    chosen = -1
    for s in range(n_sources):
        if heads[s] > best:
            best = heads[s]
            chosen = s
    return best, chosen


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
        best, chosen = best_head(heads, n_sources)
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
