"""Exact inference for chains of any order over a lattice of candidate labels.

Each token keeps a few *candidate* labels (a pruned lattice, see
:mod:`skcrf.structures.patterns.pruned`). A *node* at token ``t`` is one
choice of candidates for the last ``min(order, t + 1)`` tokens, numbered in
mixed radix with the oldest token's candidate as the most significant digit;
an *edge* into a node adds the candidate of token ``t - order`` (one edge
only while the sequence is shorter than that). The lattice is enumerated,
never searched: the node a node at ``t`` comes from is
``oldest * (N[t - 1] // k[t - order]) + node // k[t]``, with ``k`` the
candidate counts and ``N`` the node counts.

The score of a labelling splits over nodes and edges: a node carries its
label's unary score, the label pair ending there (the start score at the
first token) and the weights of the patterns of 3 to ``order`` labels
ending there; an edge carries the weight of the pattern of all
``order + 1`` labels, when it is kept. So the passes cost the lattice's
edges, a few per token once pruned, whatever the number of patterns.

Each sequence runs first in the probability domain, scaled token by token
(:func:`scaled_sequence_pass`): node scores exponentiated once, shifted by
their token's largest, pattern weights exponentiated once per evaluation,
so an edge costs a multiply-add. The scaled pass gives up on a sequence
(and commits nothing of it) when a possible node's value falls below
FLOOR (its paths could be lost, as could a total's digits) or a value
grows past HUGE; that sequence, and every sequence while a pattern weight
exceeds :data:`THETA_GUARD` in magnitude, runs in log space
(:func:`sequence_pass`), which keeps the ``-inf`` of forbidden pairs and
the huge scores of a line search exact.
"""

import numpy as np

from .._logspace import FLOOR, HUGE
from .._runtime.batch import compiled, longest_sequence

#: Pattern weights beyond this magnitude send every sequence to the log-space
#: pass: the scaled pass multiplies their exponentials, unshifted.
THETA_GUARD = 30.0


def exp_pattern_weights(pattern_weights):
    """``(exp(pattern_weights), fast)``: what the scaled pass reads, and whether it may run."""
    pattern_weights = np.ascontiguousarray(pattern_weights, dtype=np.float64)
    fast = bool(pattern_weights.size == 0 or np.abs(pattern_weights).max() <= THETA_GUARD)
    return (np.exp(pattern_weights) if fast else np.ones_like(pattern_weights)), fast


@compiled()
def _capped_product(a, b, cap):
    """``min(a * b, cap)`` for ``0 <= a, b <= cap``, without the int64 product overflowing."""
    if a != 0 and b > cap // a:
        return cap
    return min(a * b, cap)


@compiled()
def lattice_sizes(offsets, cand_ptr, order, cap, node_count, edge_count):
    """Fill each token's node and edge counts, each at most ``cap``; return the largest node count.

    A token's count is a product of ``order`` candidate counts, which can
    exceed int64 (wrapping to a small or negative number) long before any
    sum of them is taken: each product stops at ``cap``, so a caller that
    refuses lattices larger than ``cap - 1`` sees a count past its limit, and
    a sum of ``n_tokens`` counts stays far below int64's range.
    """
    n_sequences = offsets.shape[0] - 1
    largest = 0
    for q in range(n_sequences):
        lo, hi = offsets[q], offsets[q + 1]
        for g in range(lo, hi):
            t = g - lo
            nodes = 1
            for i in range(max(lo, g - order + 1), g + 1):
                nodes = _capped_product(nodes, cand_ptr[i + 1] - cand_ptr[i], cap)
            node_count[g] = nodes
            largest = max(largest, nodes)
            if t == 0:
                edge_count[g] = 0
            elif t >= order:
                edge_count[g] = _capped_product(nodes, cand_ptr[g - order + 1]
                                                - cand_ptr[g - order], cap)
            else:
                edge_count[g] = nodes
    return largest


@compiled()
def _pattern_index(codes, length_ptr, length, code):
    """Index of the pattern of ``length`` labels with ``code`` among ``codes``, or -1."""
    lo = length_ptr[length]
    hi = length_ptr[length + 1]
    if lo == hi:
        return -1
    at = lo + np.searchsorted(codes[lo:hi], code)
    if at < hi and codes[at] == code:
        return at
    return -1


@compiled()
def fill_lattice(offsets, cand_ptr, cand_label, order, n_classes, codes, length_ptr,
                 node_ptr, edge_ptr, node_label, node_prev, node_patterns, edge_pattern):
    """Fill the nodes' labels and pattern indices and the edges' pattern indices.

    ``codes`` holds the patterns' codes, those of length ``n`` at
    ``codes[length_ptr[n]:length_ptr[n + 1]]`` in increasing order, so that
    a code's position is its pattern's index. ``node_patterns[v, n - 3]`` is
    the pattern of ``n`` labels (3 to ``order``) ending at node ``v``,
    ``edge_pattern[e]`` that of ``order + 1`` labels of edge ``e``; -1 where
    the n-gram is no pattern or the sequence is too short for it.
    """
    n_sequences = offsets.shape[0] - 1
    labels = np.empty(order + 1, np.int64)  # oldest first, the token's last
    for q in range(n_sequences):
        lo, hi = offsets[q], offsets[q + 1]
        for g in range(lo, hi):
            t = g - lo
            width = min(order, t + 1)
            n_nodes = node_ptr[g + 1] - node_ptr[g]
            n_old = 1
            if t >= order:
                n_old = cand_ptr[g - order + 1] - cand_ptr[g - order]
            for j in range(n_nodes):
                v = node_ptr[g] + j
                rest = j
                for back in range(width):
                    i = g - back
                    k = cand_ptr[i + 1] - cand_ptr[i]
                    labels[order - back] = cand_label[cand_ptr[i] + rest % k]
                    rest //= k
                node_label[v] = labels[order]
                node_prev[v] = labels[order - 1] if t >= 1 else -1
                for n in range(3, order + 1):
                    pattern = -1
                    if n <= width:
                        code = 0
                        for i in range(order + 1 - n, order + 1):
                            code = code * n_classes + labels[i]
                        pattern = _pattern_index(codes, length_ptr, n, code)
                    node_patterns[v, n - 3] = pattern
                if t == 0:
                    continue
                for old in range(n_old):
                    e = edge_ptr[g] + j * n_old + old
                    pattern = -1
                    if t >= order:
                        labels[0] = cand_label[cand_ptr[g - order] + old]
                        code = 0
                        for i in range(order + 1):
                            code = code * n_classes + labels[i]
                        pattern = _pattern_index(codes, length_ptr, order + 1, code)
                    edge_pattern[e] = pattern


@compiled()
def _node_scores(unary, row, transitions, pattern_weights, start, g, first, node_ptr,
                 node_label, node_prev, node_patterns, score):
    for v in range(node_ptr[g], node_ptr[g + 1]):
        y = node_label[v]
        s = unary[row, y]
        if first:
            s += start[y]
        else:
            s += transitions[node_prev[v], y]
        for c in range(node_patterns.shape[1]):
            p = node_patterns[v, c]
            if p >= 0:
                s += pattern_weights[p]
        score[v] = s


@compiled()
def _edge_source(node_ptr, g, j, old, n_old, k):
    """The node at token ``g - 1`` that edge ``old`` into node ``j`` of token ``g`` comes from."""
    span = (node_ptr[g] - node_ptr[g - 1]) // n_old
    return node_ptr[g - 1] + old * span + j // k


@compiled(inline=True)
def _into(alpha, node_ptr, g, j, old, n_old, k, pattern_weights, edge_pattern, e):
    """An edge's term in the forward sum of the node it enters: its source's alpha and pattern."""
    a = alpha[_edge_source(node_ptr, g, j, old, n_old, k)]
    if edge_pattern[e] >= 0:
        a += pattern_weights[edge_pattern[e]]
    return a


@compiled(inline=True)
def _out_of(score, beta, v, pattern_weights, edge_pattern, e):
    """An edge's term in the backward sum of its source: its pattern, plus score and beta of v."""
    b = score[v] + beta[v]
    if edge_pattern[e] >= 0:
        b += pattern_weights[edge_pattern[e]]
    return b


@compiled(inline=True)
def _add_node(p, v, g, lo, last, row0, node_label, node_prev, node_patterns, marginals,
              transition_counts, pattern_counts, start_counts, end_counts):
    """Add node v's probability ``p`` (at token g) to the marginals and counts it feeds."""
    y = node_label[v]
    marginals[g - row0, y] += p
    if g == lo:
        start_counts[y] += p
    else:
        transition_counts[node_prev[v], y] += p
    if g == last:
        end_counts[y] += p
    for c in range(node_patterns.shape[1]):
        if node_patterns[v, c] >= 0:
            pattern_counts[node_patterns[v, c]] += p


@compiled()
def sequence_pass(unary, row0, transitions, pattern_weights, start, end, lo, hi, order,
                  cand_ptr, node_ptr, node_label, node_prev, node_patterns, edge_ptr,
                  edge_pattern, weight, marginals, transition_counts, pattern_counts,
                  start_counts, end_counts, score, alpha, beta, top):
    """log Z of tokens ``lo..hi-1``; their marginals and counts, times ``weight``, added in.

    Token ``g``'s unary scores are row ``g - row0`` of ``unary``, and its
    marginals go to that row of ``marginals`` (``row0`` is 0 for arrays of
    every token, ``lo`` for one sequence's rows). Returns a log Z that is
    not finite (and adds nothing) when the sequence has no labelling of the
    lattice left or its scores overflow.
    """
    for g in range(lo, hi):
        _node_scores(unary, g - row0, transitions, pattern_weights, start, g, g == lo,
                     node_ptr, node_label, node_prev, node_patterns, score)
    # forward: alpha[v] = score[v] + log sum over the edges into v of (alpha[u] + edge)
    for v in range(node_ptr[lo], node_ptr[lo + 1]):
        alpha[v] = score[v]
    for g in range(lo + 1, hi):
        k = cand_ptr[g + 1] - cand_ptr[g]
        n_old = 1
        if g - lo >= order:
            n_old = cand_ptr[g - order + 1] - cand_ptr[g - order]
        for j in range(node_ptr[g + 1] - node_ptr[g]):
            e0 = edge_ptr[g] + j * n_old
            v = node_ptr[g] + j
            if n_old == 1:  # one edge in (most tokens, once pruned): no sum to take
                alpha[v] = score[v] + _into(alpha, node_ptr, g, j, 0, 1, k, pattern_weights,
                                            edge_pattern, e0)
                continue
            best = -np.inf
            for old in range(n_old):
                best = max(best, _into(alpha, node_ptr, g, j, old, n_old, k, pattern_weights,
                                       edge_pattern, e0 + old))
            if best == -np.inf:
                alpha[v] = -np.inf
                continue
            total = 0.0
            for old in range(n_old):
                total += np.exp(_into(alpha, node_ptr, g, j, old, n_old, k, pattern_weights,
                                      edge_pattern, e0 + old) - best)
            alpha[v] = score[v] + best + np.log(total)
    last = hi - 1
    best = -np.inf
    for v in range(node_ptr[last], node_ptr[last + 1]):
        beta[v] = end[node_label[v]]
        best = max(best, alpha[v] + beta[v])
    if not np.isfinite(best):
        return best
    total = 0.0
    for v in range(node_ptr[last], node_ptr[last + 1]):
        total += np.exp(alpha[v] + beta[v] - best)
    log_z = best + np.log(total)
    if not np.isfinite(log_z):
        return log_z
    # backward: beta[u] = log sum over the edges out of u of (edge + score[v] + beta[v])
    for g in range(hi - 1, lo, -1):
        k = cand_ptr[g + 1] - cand_ptr[g]
        n_old = 1
        if g - lo >= order:
            n_old = cand_ptr[g - order + 1] - cand_ptr[g - order]
        if k == 1:  # one edge out of each node: no sum to take
            for j in range(node_ptr[g + 1] - node_ptr[g]):
                v = node_ptr[g] + j
                e0 = edge_ptr[g] + j * n_old
                for old in range(n_old):
                    beta[_edge_source(node_ptr, g, j, old, n_old, k)] = _out_of(
                        score, beta, v, pattern_weights, edge_pattern, e0 + old)
            continue
        for u in range(node_ptr[g - 1], node_ptr[g]):
            top[u] = -np.inf
            beta[u] = 0.0
        for sweep in range(2):  # the maxima, then the shifted sums
            for j in range(node_ptr[g + 1] - node_ptr[g]):
                v = node_ptr[g] + j
                e0 = edge_ptr[g] + j * n_old
                for old in range(n_old):
                    b = _out_of(score, beta, v, pattern_weights, edge_pattern, e0 + old)
                    u = _edge_source(node_ptr, g, j, old, n_old, k)
                    if sweep == 0:
                        top[u] = max(top[u], b)
                    elif top[u] > -np.inf:
                        beta[u] += np.exp(b - top[u])
        for u in range(node_ptr[g - 1], node_ptr[g]):
            beta[u] = top[u] + np.log(beta[u]) if top[u] > -np.inf else -np.inf
    # marginals of the nodes (labels, label pairs, shorter patterns) and of the edges
    for g in range(lo, hi):
        for v in range(node_ptr[g], node_ptr[g + 1]):
            if alpha[v] == -np.inf or beta[v] == -np.inf:
                continue
            _add_node(weight * np.exp(alpha[v] + beta[v] - log_z), v, g, lo, last, row0,
                      node_label, node_prev, node_patterns, marginals, transition_counts,
                      pattern_counts, start_counts, end_counts)
        if g == lo or g - lo < order:
            continue  # no edge of ``order + 1`` labels yet
        k = cand_ptr[g + 1] - cand_ptr[g]
        n_old = cand_ptr[g - order + 1] - cand_ptr[g - order]
        for j in range(node_ptr[g + 1] - node_ptr[g]):
            v = node_ptr[g] + j
            if beta[v] == -np.inf:
                continue
            e0 = edge_ptr[g] + j * n_old
            for old in range(n_old):
                p = edge_pattern[e0 + old]
                if p < 0:
                    continue
                a = alpha[_edge_source(node_ptr, g, j, old, n_old, k)]
                if a == -np.inf:
                    continue
                pattern_counts[p] += weight * np.exp(
                    a + pattern_weights[p] + score[v] + beta[v] - log_z)
    return log_z


@compiled()
def scaled_sequence_pass(unary, row0, transitions, pattern_weights, exp_patterns, start, end,
                         lo, hi, order, cand_ptr, node_ptr, node_label, node_prev,
                         node_patterns, edge_ptr, edge_pattern, weight, marginals,
                         transition_counts, pattern_counts, start_counts, end_counts, score,
                         alpha, beta, scale):
    """:func:`sequence_pass` in the probability domain, scaled token by token.

    ``exp_patterns`` is ``exp(pattern_weights)``; ``scale`` holds a token's
    total (row ``g - lo``). Returns NaN, having added nothing, when a
    token's total is not above FLOOR or a backward value grows past HUGE,
    and when a node's factor or mass, or a last node's end term, falls below
    FLOOR though it is possible (later potentials could make paths through it
    the best, and a subnormal total would divide to inf): the caller runs the
    sequence in log space instead.
    """
    log_z = 0.0
    for g in range(lo, hi):
        _node_scores(unary, g - row0, transitions, pattern_weights, start, g, g == lo,
                     node_ptr, node_label, node_prev, node_patterns, score)
        top = -np.inf
        for v in range(node_ptr[g], node_ptr[g + 1]):
            top = max(top, score[v])
        if not np.isfinite(top):
            return np.nan
        # score[v] becomes the node's factor, exp(score - top): at most 1
        for v in range(node_ptr[g], node_ptr[g + 1]):
            possible = score[v] > -np.inf
            score[v] = np.exp(score[v] - top)
            if possible and score[v] < FLOOR:
                return np.nan
        k = cand_ptr[g + 1] - cand_ptr[g]
        n_old = 1
        if g - lo >= order:
            n_old = cand_ptr[g - order + 1] - cand_ptr[g - order]
        total = 0.0
        for j in range(node_ptr[g + 1] - node_ptr[g]):
            v = node_ptr[g] + j
            if g == lo:
                a = 1.0
            else:
                a = 0.0
                e0 = edge_ptr[g] + j * n_old
                for old in range(n_old):
                    p = edge_pattern[e0 + old]
                    u = _edge_source(node_ptr, g, j, old, n_old, k)
                    a += alpha[u] * exp_patterns[p] if p >= 0 else alpha[u]
            alpha[v] = score[v] * a
            if alpha[v] < FLOOR and score[v] > 0.0 and a > 0.0:
                return np.nan
            total += alpha[v]
        if not (total > FLOOR and np.isfinite(total)):
            return np.nan
        for v in range(node_ptr[g], node_ptr[g + 1]):
            alpha[v] /= total
        scale[g - lo] = total
        log_z += top + np.log(total)
    last = hi - 1
    top = -np.inf
    for v in range(node_ptr[last], node_ptr[last + 1]):
        top = max(top, end[node_label[v]])
    if not np.isfinite(top):
        return np.nan
    total = 0.0
    for v in range(node_ptr[last], node_ptr[last + 1]):
        beta[v] = np.exp(end[node_label[v]] - top)
        term = alpha[v] * beta[v]
        if term < FLOOR and alpha[v] > 0.0 and end[node_label[v]] > -np.inf:
            return np.nan
        total += term
    if not (total > FLOOR and np.isfinite(total)):
        return np.nan
    for v in range(node_ptr[last], node_ptr[last + 1]):
        beta[v] /= total
    log_z += top + np.log(total)
    # backward, scaled by the forward totals: alpha[v] * beta[v] is v's marginal
    for g in range(hi - 1, lo, -1):
        k = cand_ptr[g + 1] - cand_ptr[g]
        n_old = 1
        if g - lo >= order:
            n_old = cand_ptr[g - order + 1] - cand_ptr[g - order]
        for u in range(node_ptr[g - 1], node_ptr[g]):
            beta[u] = 0.0
        for j in range(node_ptr[g + 1] - node_ptr[g]):
            v = node_ptr[g] + j
            b = score[v] * beta[v] / scale[g - lo]
            e0 = edge_ptr[g] + j * n_old
            for old in range(n_old):
                p = edge_pattern[e0 + old]
                u = _edge_source(node_ptr, g, j, old, n_old, k)
                beta[u] += b * exp_patterns[p] if p >= 0 else b
        for u in range(node_ptr[g - 1], node_ptr[g]):
            if not beta[u] < HUGE:
                return np.nan
    for g in range(lo, hi):
        for v in range(node_ptr[g], node_ptr[g + 1]):
            _add_node(weight * alpha[v] * beta[v], v, g, lo, last, row0, node_label,
                      node_prev, node_patterns, marginals, transition_counts, pattern_counts,
                      start_counts, end_counts)
        if g - lo < order or g == lo:
            continue
        k = cand_ptr[g + 1] - cand_ptr[g]
        n_old = cand_ptr[g - order + 1] - cand_ptr[g - order]
        for j in range(node_ptr[g + 1] - node_ptr[g]):
            v = node_ptr[g] + j
            b = weight * score[v] * beta[v] / scale[g - lo]
            e0 = edge_ptr[g] + j * n_old
            for old in range(n_old):
                p = edge_pattern[e0 + old]
                if p >= 0:
                    pattern_counts[p] += (alpha[_edge_source(node_ptr, g, j, old, n_old, k)]
                                          * exp_patterns[p] * b)
    return log_z


@compiled()
def lattice_sequence(unary, row0, transitions, pattern_weights, exp_patterns, fast, start,
                     end, lo, hi, order, cand_ptr, node_ptr, node_label, node_prev,
                     node_patterns, edge_ptr, edge_pattern, weight, marginals,
                     transition_counts, pattern_counts, start_counts, end_counts, score,
                     alpha, beta, top, scale):
    """One sequence by the scaled pass, or in log space where it gives up (see the module)."""
    if fast:
        z = scaled_sequence_pass(unary, row0, transitions, pattern_weights, exp_patterns, start,
                                 end, lo, hi, order, cand_ptr, node_ptr, node_label, node_prev,
                                 node_patterns, edge_ptr, edge_pattern, weight, marginals,
                                 transition_counts, pattern_counts, start_counts, end_counts,
                                 score, alpha, beta, scale)
        if not np.isnan(z):
            return z
    return sequence_pass(unary, row0, transitions, pattern_weights, start, end, lo, hi, order,
                         cand_ptr, node_ptr, node_label, node_prev, node_patterns, edge_ptr,
                         edge_pattern, weight, marginals, transition_counts, pattern_counts,
                         start_counts, end_counts, score, alpha, beta, top)


@compiled()
def lattice_chunks(chunk_lo, chunk_hi, bounds, unary, transitions, pattern_weights,
                   exp_patterns, fast, start, end, offsets, order, cand_ptr, node_ptr,
                   node_label, node_prev, node_patterns,
                   edge_ptr, edge_pattern, sequence_weights, log_z, marginals,
                   chunk_transitions, chunk_patterns, chunk_start, chunk_end, score, alpha,
                   beta, top):
    """The chunks' sequences: log Z (times their weights), marginals and each chunk's counts.

    A chunk's rows of ``marginals`` are zeroed first; the counts of chunk
    ``c`` go to row ``c`` of the ``chunk_*`` arrays, summed by the caller in
    chunk order.
    """
    n_classes = unary.shape[1]
    for c in range(chunk_lo, chunk_hi):
        chunk_transitions[c] = 0.0
        chunk_patterns[c] = 0.0
        chunk_start[c] = 0.0
        chunk_end[c] = 0.0
        scale = np.empty(max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1))
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            for g in range(lo, hi):
                for y in range(n_classes):
                    marginals[g, y] = 0.0
            if hi == lo:
                log_z[q] = 0.0
                continue
            z = lattice_sequence(unary, np.int64(0), transitions, pattern_weights, exp_patterns,
                                 fast, start, end, lo, hi, order, cand_ptr, node_ptr,
                                 node_label, node_prev, node_patterns, edge_ptr, edge_pattern,
                                 sequence_weights[q], marginals, chunk_transitions[c],
                                 chunk_patterns[c], chunk_start[c], chunk_end[c], score, alpha,
                                 beta, top, scale)
            log_z[q] = sequence_weights[q] * z
