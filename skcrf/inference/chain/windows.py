"""Probabilities of label windows of order-1 chains: the events behind span probabilities.

An event constrains the tokens ``first[k] : first[k] + width[k]`` of one
sequence to the labels where ``masks[k, j]`` is True; its probability is the
posterior mass of the labellings that keep to it. The posterior of an
order-1 chain is a Markov chain, so ``p(y_a..y_b) = p(y_a) prod_t
p(y_{t+1} | y_t)``, with ``p(y_{t+1} = b | y_t = a)`` proportional to
``exp(T[a, b] + u_{t+1}[b]) beta_{t+1}(b)``: one backward pass per sequence
that has events, then a walk along each window, instead of one constrained
forward pass per event.

The pass runs in the probability domain on shifted exponentials (each
token's unary scores less their maximum, the moves less theirs), each
backward vector scaled to a largest entry of 1: shifts and scales cancel in
the ratios. A ratio whose denominator falls under :data:`TINY` where the
event still has mass may have lost digits to underflow: the event is flagged
not exact, for the caller to compute in log space. Nothing here validates or
mutates its inputs.
"""

import numpy as np

from .._runtime.batch import compiled

__all__ = ["TINY", "window_probabilities"]

#: Below this a ratio's denominator may have lost digits to underflow.
TINY = 1e-280


@compiled(contract=True)
def _window_kernel(unary, exp_moves, step, final, offsets, marginals, event_bounds, first,
                   width, masks, probability, exact, weights, beta, value, ahead, moved):
    n_classes = unary.shape[1]
    for q in range(offsets.shape[0] - 1):
        e_lo, e_hi = event_bounds[q], event_bounds[q + 1]
        if e_lo == e_hi:
            continue
        lo, hi = offsets[q], offsets[q + 1]
        n = hi - lo
        # exp of each token's unary scores less their maximum, rows by position r
        for r in range(n):
            top = -np.inf
            for b in range(n_classes):
                if unary[lo + r, b] > top:
                    top = unary[lo + r, b]
            for b in range(n_classes):
                weights[r, b] = np.exp(unary[lo + r, b] - top) if top > -np.inf else 0.0
        for a in range(n_classes):
            beta[n - 1, a] = final[a]
        for r in range(n - 2, -1, -1):
            t = lo + r + 1
            block = t * step
            top = 0.0
            for a in range(n_classes):
                s = 0.0
                for b in range(n_classes):
                    s += exp_moves[block, a, b] * weights[r + 1, b] * beta[r + 1, b]
                beta[r, a] = s
                if s > top:
                    top = s
            for a in range(n_classes):
                beta[r, a] = beta[r, a] / top if top > 0.0 else 0.0
        for k in range(e_lo, e_hi):
            f = first[k]
            for a in range(n_classes):
                value[a] = marginals[f, a] if masks[k, 0, a] else 0.0
            exact[k] = True
            for j in range(1, width[k]):
                t = f + j
                r = t - lo
                block = t * step
                for b in range(n_classes):
                    ahead[b] = weights[r, b] * beta[r, b]
                    moved[b] = 0.0
                for a in range(n_classes):
                    if value[a] == 0.0:
                        continue
                    total = 0.0
                    for b in range(n_classes):
                        total += exp_moves[block, a, b] * ahead[b]
                    if total < TINY:
                        exact[k] = False
                    if total > 0.0:
                        scale = value[a] / total
                        for b in range(n_classes):
                            moved[b] += scale * exp_moves[block, a, b] * ahead[b]
                for b in range(n_classes):
                    value[b] = moved[b] if masks[k, j, b] else 0.0
            s = 0.0
            for a in range(n_classes):
                s += value[a]
            probability[k] = s


def window_probabilities(unary, moves, end, offsets, marginals, owner, first, width, masks):
    """Probability of each event, and whether it is exact (see the module docstring).

    Parameters
    ----------
    unary : ndarray of shape (n_tokens, n_classes)
    moves : ndarray of shape (n_classes, n_classes) or (n_tokens, n_classes, n_classes)
        The transition scores, or each token's edge scores (``moves[t]``
        scores tokens t - 1 and t).
    end : ndarray of shape (n_classes,)
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    marginals : ndarray of shape (n_tokens, n_classes)
        The token marginals of the same potentials.
    owner : ndarray of int64 of shape (n_events,)
        The sequence of each event, in increasing order.
    first, width : ndarray of int64 of shape (n_events,)
        The event's first token (over all tokens) and its number of tokens.
    masks : ndarray of bool of shape (n_events, max_width, n_classes)

    Returns
    -------
    probability : ndarray of shape (n_events,)
    exact : ndarray of bool of shape (n_events,)
    """
    n_classes = unary.shape[1]
    with np.errstate(invalid="ignore", over="ignore"):
        if moves.ndim == 2:
            exp_moves = np.exp(moves - np.max(moves))[np.newaxis]
            step = np.int64(0)
        else:
            shift = np.max(moves, axis=(1, 2), keepdims=True)
            shift[~np.isfinite(shift)] = 0.0
            exp_moves = np.exp(moves - shift)
            step = np.int64(1)
        final = np.exp(end - np.max(end))
    exp_moves[~np.isfinite(exp_moves)] = 0.0
    final[~np.isfinite(final)] = 0.0
    n_sequences = offsets.shape[0] - 1
    event_bounds = np.searchsorted(owner, np.arange(n_sequences + 1)).astype(np.int64)
    longest = int(np.diff(offsets).max(initial=1))
    probability = np.zeros(first.shape[0])
    exact = np.ones(first.shape[0], dtype=np.bool_)
    _window_kernel(np.ascontiguousarray(unary), np.ascontiguousarray(exp_moves), step, final,
                   np.ascontiguousarray(offsets, dtype=np.int64),
                   np.ascontiguousarray(marginals), event_bounds,
                   np.ascontiguousarray(first, dtype=np.int64),
                   np.ascontiguousarray(width, dtype=np.int64), np.ascontiguousarray(masks),
                   probability, exact, np.zeros((max(longest, 1), n_classes)),
                   np.zeros((max(longest, 1), n_classes)), np.zeros(n_classes),
                   np.zeros(n_classes), np.zeros(n_classes))
    return probability, exact
