"""Probabilities of label windows of order-1 chains: the events behind span probabilities.

An event constrains the tokens ``first[k] : first[k] + width[k]`` of one
sequence to the labels where ``masks[k, j]`` is True; its probability is the
posterior mass of the labellings that keep to it. The posterior of an
order-1 chain is a Markov chain, so ``p(y_a..y_b) = p(y_a) prod_t
p(y_{t+1} | y_t)``, with ``p(y_{t+1} = b | y_t = a)`` proportional to
``exp(T[a, b] + u_{t+1}[b]) beta_{t+1}(b)`` and ``p(y_a)`` proportional to
``alpha_a beta_a``: per sequence that has events, one backward pass (from its
end back to its first event's first token) and one forward pass (up to its
last event's first token, the events taken in order of position), then a
walk along each window, instead of one constrained forward pass per event.
The sequences run in chunks of similar token counts on skcrf's threads, as
the forward-backward pass of ``predict_marginals`` does.

The passes run in the probability domain on shifted exponentials (each
token's unary scores less their maximum, the moves less theirs), each
forward and backward vector scaled to a largest entry of 1: shifts and
scales cancel in the ratios. A ratio whose denominator falls under :data:`TINY` where the
event still has mass may have lost digits to underflow: the event is flagged
not exact, for the caller to compute in log space. Nothing here validates or
mutates its inputs.
"""

import numpy as np

from .._runtime.batch import (chunk_bounds, compiled, default_n_chunks, longest_sequence,
                              run_chunks)

__all__ = ["TINY", "window_probabilities"]

#: Below this a ratio's denominator may have lost digits to underflow.
TINY = 1e-280


@compiled(contract=True)
def _window_chunks(chunk_lo, chunk_hi, bounds, unary, exp_moves, step, initial, final, offsets,
                   event_bounds, first, width, masks, probability, exact):
    """The events of the sequences of chunks ``chunk_lo:chunk_hi`` (``bounds`` of sequences)."""
    n_classes = unary.shape[1]
    for c in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        weights = np.empty((longest, n_classes))
        beta = np.empty((longest, n_classes))
        alpha = np.empty(n_classes)
        value = np.empty(n_classes)
        ahead = np.empty(n_classes)
        moved = np.empty(n_classes)
        for q in range(bounds[c], bounds[c + 1]):
            # one sequence: its backward pass, then a walk along each of its events
            e_lo, e_hi = event_bounds[q], event_bounds[q + 1]
            if e_lo == e_hi:
                continue
            lo, hi = offsets[q], offsets[q + 1]
            n = hi - lo
            # the walks read the tokens from each event's first: the passes stop there
            earliest = n - 1
            for k in range(e_lo, e_hi):
                earliest = min(earliest, first[k] - lo)
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
            for r in range(n - 2, earliest - 1, -1):
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
            # a scaled forward pass up to the last event's first token; its row at
            # an event's first token, times beta's, is that token's marginal
            for a in range(n_classes):
                alpha[a] = initial[a] * weights[0, a]
            at = 0
            for k in range(e_lo, e_hi):
                f = first[k] - lo
                if f < at:
                    at = 0  # an event before the previous one's first token: start over
                    for a in range(n_classes):
                        alpha[a] = initial[a] * weights[0, a]
                while at < f:
                    at += 1
                    block = (lo + at) * step
                    top = 0.0
                    for b in range(n_classes):
                        value[b] = 0.0
                    for a in range(n_classes):
                        if alpha[a] == 0.0:
                            continue
                        for b in range(n_classes):
                            value[b] += alpha[a] * exp_moves[block, a, b]
                    for b in range(n_classes):
                        value[b] *= weights[at, b]
                        if value[b] > top:
                            top = value[b]
                    for b in range(n_classes):
                        alpha[b] = value[b] / top if top > 0.0 else 0.0
                total = 0.0
                for a in range(n_classes):
                    total += alpha[a] * beta[f, a]
                exact[k] = total >= TINY
                for a in range(n_classes):
                    value[a] = (alpha[a] * beta[f, a] / total
                                if masks[k, 0, a] and total > 0.0 else 0.0)
                f = first[k]
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


def window_probabilities(unary, moves, start, end, offsets, owner, first, width, masks):
    """Probability of each event, and whether it is exact (see the module docstring).

    Parameters
    ----------
    unary : ndarray of shape (n_tokens, n_classes)
    moves : ndarray of shape (n_classes, n_classes) or (n_tokens, n_classes, n_classes)
        The transition scores, or each token's edge scores (``moves[t]``
        scores tokens t - 1 and t).
    start, end : ndarray of shape (n_classes,)
    offsets : ndarray of int64 of shape (n_sequences + 1,)
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
    with np.errstate(invalid="ignore", over="ignore"):
        if moves.ndim == 2:
            exp_moves = np.exp(moves - np.max(moves))[np.newaxis]
            step = np.int64(0)
        else:
            shift = np.max(moves, axis=(1, 2), keepdims=True)
            shift[~np.isfinite(shift)] = 0.0
            exp_moves = np.exp(moves - shift)
            step = np.int64(1)
        initial = np.exp(start - np.max(start))
        final = np.exp(end - np.max(end))
    exp_moves[~np.isfinite(exp_moves)] = 0.0
    initial[~np.isfinite(initial)] = 0.0
    final[~np.isfinite(final)] = 0.0
    n_sequences = offsets.shape[0] - 1
    event_bounds = np.searchsorted(owner, np.arange(n_sequences + 1)).astype(np.int64)
    probability = np.zeros(first.shape[0])
    exact = np.ones(first.shape[0], dtype=np.bool_)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    # the sequences split by their tokens, the chunks on skcrf's threads
    n_chunks = default_n_chunks(offsets)
    run_chunks(_window_chunks, n_chunks, chunk_bounds(offsets, n_chunks),
               np.ascontiguousarray(unary), np.ascontiguousarray(exp_moves), step, initial,
               final, offsets, event_bounds,
               np.ascontiguousarray(first, dtype=np.int64),
               np.ascontiguousarray(width, dtype=np.int64), np.ascontiguousarray(masks),
               probability, exact)
    return probability, exact
