"""The exact log-space pass over a pattern automaton, for the sequences the scaled pass gives up on.

It expands every state's moves (``moves[s, b]``: the explicit move state
``s`` takes on label ``b``, its own or inherited; see
:meth:`~skcrf.structures.patterns.automaton.PatternAutomaton.move_table`),
``n_states * C`` per token, and sums in log space with no difference
anywhere: slower than :mod:`._patterns_scaled`, never imprecise. The unary
scores are shifted per token first (:func:`~._logspace.shifted_rows`), so
that a huge score on one token leaves the others' digits.

Its expected counts come out per move as the mass that takes it; the moves'
tree turns them into pattern counts (:func:`subtree_counts`), as the scaled
pass gives them.
"""

import numpy as np

from .._runtime.batch import compiled
from .._logspace import shifted_rows


@compiled()
def subtree_counts(owned, arc_parent, n_dense, counts):
    """Add to ``counts`` the sum of ``owned`` over each move's subtree of moves; zeroes ``owned``.

    A move's subtree is itself and the moves whose parent chain reaches it;
    children come after their parents.
    """
    for e in range(owned.shape[0] - 1, n_dense - 1, -1):
        owned[arc_parent[e]] += owned[e]
    for e in range(owned.shape[0]):
        counts[e] += owned[e]
        owned[e] = 0.0


@compiled()
def exact_sequence(unary, lo, hi, moves, arc_weight, arc_dest, arc_parent, state_label,
                   start, end, with_counts, marginals, out_lo, counts, work):
    """log Z of tokens lo..hi-1 (hi > lo) in log space; marginals and counts as the scaled pass.

    ``arc_weight`` holds the moves' log weights (``-inf`` forbids), ``start``
    and ``end`` the first and last labels'. Rows out_lo.. of ``marginals``
    are overwritten (zeros for an infeasible sequence, whose log Z is -inf);
    ``counts`` is added to. ``work`` is from :func:`exact_workspace`.
    """
    la, lb, shifted, top, acc, owned = work
    n_states, n_classes = moves.shape
    n = hi - lo
    shift = shifted_rows(unary, lo, hi, shifted)
    for s in range(n_states):
        la[0, s] = -np.inf
    for a in range(n_classes):
        la[0, a] = start[a] + shifted[0, a]
    for r in range(1, n):
        for s in range(n_states):
            top[s] = -np.inf
            acc[s] = 0.0
        # two sweeps over the moves: each destination's maximum, then its shifted sum
        for sweep in range(2):
            for s in range(n_states):
                previous = la[r - 1, s]
                if previous == -np.inf:
                    continue
                for b in range(n_classes):
                    e = moves[s, b]
                    v = previous + arc_weight[e] + shifted[r, b]
                    if sweep == 0:
                        if v > top[arc_dest[e]]:
                            top[arc_dest[e]] = v
                    elif v > -np.inf:
                        acc[arc_dest[e]] += np.exp(v - top[arc_dest[e]])
        for s in range(n_states):
            la[r, s] = top[s] + np.log(acc[s]) if acc[s] > 0.0 else -np.inf
    log_z = -np.inf
    best = -np.inf
    for s in range(n_states):
        best = max(best, la[n - 1, s] + end[state_label[s]])
    if best > -np.inf:
        total = 0.0
        for s in range(n_states):
            total += np.exp(la[n - 1, s] + end[state_label[s]] - best)
        log_z = best + np.log(total)
    for r in range(n):
        for b in range(n_classes):
            marginals[out_lo + r, b] = 0.0
    if log_z == -np.inf:
        return log_z
    cur = 0
    for s in range(n_states):
        lb[cur, s] = end[state_label[s]]
    for r in range(n - 1, -1, -1):
        # the token's marginals, normalized by their own sum rather than by
        # exp(log Z): over a long sequence, subtracting log Z cancels digits
        best = -np.inf
        for s in range(n_states):
            best = max(best, la[r, s] + lb[cur, s])
        total = 0.0
        for s in range(n_states):
            v = np.exp(la[r, s] + lb[cur, s] - best)
            marginals[out_lo + r, state_label[s]] += v
            total += v
        for b in range(n_classes):
            marginals[out_lo + r, b] /= total
        if r == 0:
            break
        nxt = cur
        cur = 1 - cur
        for s in range(n_states):
            best = -np.inf
            for b in range(n_classes):
                e = moves[s, b]
                best = max(best, arc_weight[e] + shifted[r, b] + lb[nxt, arc_dest[e]])
            total = 0.0
            if best > -np.inf:
                for b in range(n_classes):
                    e = moves[s, b]
                    total += np.exp(arc_weight[e] + shifted[r, b] + lb[nxt, arc_dest[e]] - best)
            lb[cur, s] = best + np.log(total) if total > 0.0 else -np.inf
        if with_counts:
            # the moves' masses between tokens r - 1 and r, normalized by their sum:
            # three sweeps over the moves, for the maximum, the sum, the masses
            best = -np.inf
            total = 0.0
            for sweep in range(3):
                for s in range(n_states):
                    if la[r - 1, s] == -np.inf:
                        continue
                    for b in range(n_classes):
                        e = moves[s, b]
                        v = la[r - 1, s] + arc_weight[e] + shifted[r, b] + lb[nxt, arc_dest[e]]
                        if sweep == 0:
                            best = max(best, v)
                        elif v > -np.inf:
                            if sweep == 1:
                                total += np.exp(v - best)
                            else:
                                owned[e] += np.exp(v - best) / total
    if with_counts:
        subtree_counts(owned, arc_parent, n_classes * n_classes, counts)
    return log_z + shift


@compiled()
def exact_workspace(longest, n_states, n_classes, n_arcs):
    """Scratch of :func:`exact_sequence`: ``(la, lb, shifted, top, acc, owned)``."""
    return (np.empty((longest, n_states)), np.empty((2, n_states)),
            np.empty((longest, n_classes)), np.empty(n_states), np.empty(n_states),
            np.zeros(n_arcs))
