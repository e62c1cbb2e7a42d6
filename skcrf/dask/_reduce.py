"""Sums over partitions whose bits do not depend on which worker holds which partition.

The partitions' ``(log Z, expected statistics)`` are added along one tree
fixed by the partition indices alone: the sum over ``[lo, hi)`` is the sum
over ``[lo, mid)`` plus the sum over ``[mid, hi)``, ``mid = (lo + hi) // 2``
(pairwise summation, as :func:`numpy.sum` adds). Where all the partitions of
a subtree are on one worker, that worker adds them along the subtree (one
task) and sends one vector; the client adds those vectors along the rest of
the tree. Which subtrees are cut out depends on the placement, the sums do
not: each node of the tree adds the same two operands, wherever it runs. With
each worker holding a run of consecutive partitions, the client receives about
one vector per worker instead of one per partition.

The ``log Z`` of each partition (one float) still comes back on its own, so
that the client can sum them as before.
"""


def tree_sum(parts, lo, hi):
    """The sum of ``parts[lo:hi]`` along the tree (``parts`` maps an index to an array)."""
    if hi - lo == 1:
        return parts[lo]
    mid = (lo + hi) // 2
    return tree_sum(parts, lo, mid) + tree_sum(parts, mid, hi)


def cut_sum(sums, lo, hi):
    """The sum over ``[lo, hi)`` along the tree from the sums of the cut subtrees.

    ``sums`` maps ``(lo, hi)`` of every cut subtree (:func:`worker_subtrees`)
    to its :func:`tree_sum`.
    """
    if (lo, hi) in sums:
        return sums[lo, hi]
    mid = (lo + hi) // 2
    return cut_sum(sums, lo, mid) + cut_sum(sums, mid, hi)


def worker_subtrees(holders, lo=0, hi=None):
    """The largest subtrees ``(lo, hi)`` whose partitions one worker holds, in order.

    ``holders[i]`` is the worker holding partition ``i`` (None if unknown: a
    partition being rebuilt is a subtree of its own). The subtrees cover
    ``[lo, hi)``.
    """
    hi = len(holders) if hi is None else hi
    first = holders[lo]
    if hi - lo == 1 or (first is not None and all(h == first for h in holders[lo + 1:hi])):
        return [(lo, hi)]
    mid = (lo + hi) // 2
    return worker_subtrees(holders, lo, mid) + worker_subtrees(holders, mid, hi)


def subtree_terms(lo, *terms):
    """``(log Z of each partition, expected statistics summed along the tree)`` of a subtree.

    ``terms`` are the ``(log Z, expected)`` of partitions ``lo, lo + 1, ...``;
    runs on the worker holding them.
    """
    hi = lo + len(terms)
    expected = {lo + k: part for k, (_, part) in enumerate(terms)}
    return [log_z for log_z, _ in terms], tree_sum(expected, lo, hi)


def holders_of(client, futures):
    """The worker holding each future's data (the first if several), None if none yet."""
    where = client.who_has(futures)
    return [min(where.get(future.key, ()), default=None) for future in futures]


def contiguous_targets(holders, workers):
    """A worker for each partition, each worker taking one run of consecutive partitions.

    The partitions are cut into ``min(len(workers), n_partitions)`` runs of
    as many partitions (give or take one); each run goes to the worker that
    already holds most of it, runs that agree most choosing first, so that
    as few partitions move as can be. ``holders`` as in
    :func:`worker_subtrees`; ``workers`` are the workers' addresses.
    """
    n_parts = len(holders)
    n_runs = max(1, min(len(workers), n_parts))
    bounds = [k * n_parts // n_runs for k in range(n_runs + 1)]
    agreement = sorted(
        (-sum(holders[i] == worker for i in range(bounds[k], bounds[k + 1])), k, worker)
        for k in range(n_runs) for worker in workers)
    chosen, taken = {}, set()
    for _, k, worker in agreement:
        if k not in chosen and worker not in taken:
            chosen[k] = worker
            taken.add(worker)
    return [chosen[k] for k in range(n_runs) for _ in range(bounds[k], bounds[k + 1])]
