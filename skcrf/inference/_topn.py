"""Bounded, sorted lists of the best candidates: what the n-best Viterbi recursions keep.

An n-best recursion keeps, for every state of every position, the ``n`` best
partial paths that end there, as three parallel slices: their scores (sorted,
best first), and for each where it came from (a predecessor state and that
state's rank). A state's candidates are its predecessors' lists shifted by
the move's score; each such list is sorted, so its candidates come best
first and the scan of a predecessor stops at the first candidate that does
not beat the n-th kept (:func:`offer` says when).

Ties: a candidate replaces or passes a kept entry only if strictly better,
so among equal scores the candidate offered first stays first. The callers
offer in a fixed order (predecessor label, then its rank), which makes the
lists, and so the n-best paths, independent of the thread count, and makes
rank 0 the path the 1-best Viterbi of the same recursion picks.
"""


from ._batch import compiled


@compiled()
def offer(scores, froms, ranks, count, capacity, value, source, rank):
    """Insert ``(value, source, rank)`` into a list of ``count`` entries; the new count.

    ``scores[:count]`` is sorted in decreasing order. A list at ``capacity``
    drops its last entry for a strictly better candidate, and ignores any
    other. The caller offers only finite values.
    """
    if count == capacity:
        if not value > scores[capacity - 1]:
            return count
        p = capacity - 1
    else:
        p = count
        count += 1
    while p > 0 and scores[p - 1] < value:
        scores[p] = scores[p - 1]
        froms[p] = froms[p - 1]
        ranks[p] = ranks[p - 1]
        p -= 1
    scores[p] = value
    froms[p] = source
    ranks[p] = rank
    return count


@compiled()
def is_full_and_beaten(scores, count, capacity, value):
    """Whether a list is full and ``value`` does not beat its last entry (so the scan may stop)."""
    return count == capacity and not value > scores[capacity - 1]
