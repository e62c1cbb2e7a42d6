"""Brute-force references for chains of any order with label-pattern weights.

A labelling scores its start and end labels, its unary scores, its label
pairs (dense ``transitions``) and the weight of every kept pattern (label
n-gram of 3 or more labels) each time it occurs. Every labelling of every
sequence is enumerated: exponential in the length, so only for small
problems, and obviously right, which is what makes them oracles.
"""


import numpy as np

from tests.naive import scored_labellings


def pattern_table(rows, weights):
    """{labels tuple: weight} of pattern rows left-padded with -1."""
    return {tuple(int(v) for v in row if v >= 0): float(w) for row, w in zip(rows, weights)}


def path_score(unary, transitions, table, start, end, path):
    """Log score of one label path of one sequence (unary: (n, n_classes))."""
    n = len(path)
    score = start[path[0]] + end[path[-1]]
    score += sum(unary[t, k] for t, k in enumerate(path))
    score += sum(transitions[a, b] for a, b in zip(path[:-1], path[1:]))
    longest = max((len(p) for p in table), default=0)
    for t in range(n):
        for k in range(3, longest + 1):
            if t + 1 >= k:
                score += table.get(tuple(path[t + 1 - k:t + 1]), 0.0)
    return score


def enumerate_sequence(unary, transitions, rows, weights, start, end):
    """Everything about one sequence, by enumeration.

    Returns a dict: ``log_z``, ``marginals`` (n, C), ``pair_counts`` (C, C),
    ``pattern_counts`` (n_patterns,), ``best`` (the best path) and
    ``ranked`` (every feasible (score, path), best first, ties by path).
    """
    n, n_classes = unary.shape
    table = pattern_table(rows, weights)
    keys = [tuple(int(v) for v in row if v >= 0) for row in rows]
    result = {"marginals": np.zeros((n, n_classes)),
              "pair_counts": np.zeros((n_classes, n_classes)),
              "pattern_counts": np.zeros(len(keys))}
    if n == 0:
        result.update(log_z=0.0, best=np.zeros(0, dtype=np.int64), ranked=[(0.0, ())])
        return result
    paths, scores, result["log_z"], result["best"], probs = scored_labellings(
        n, n_classes, lambda p: path_score(unary, transitions, table, start, end, p))
    result["ranked"] = sorted(((s, p) for s, p in zip(scores, paths) if s > -np.inf),
                              key=lambda item: (-item[0], item[1]))
    if probs is None:
        return result
    for p, prob in zip(paths, probs):
        for t, k in enumerate(p):
            result["marginals"][t, k] += prob
        for a, b in zip(p[:-1], p[1:]):
            result["pair_counts"][a, b] += prob
        for i, key in enumerate(keys):
            k = len(key)
            result["pattern_counts"][i] += prob * sum(
                tuple(p[t:t + k]) == key for t in range(n - k + 1))
    return result


def enumerate_batch(unary, transitions, rows, weights, start, end, offsets):
    """:func:`enumerate_sequence` over a batch in the kernels' layout.

    Returns a dict: ``log_z`` (n_sequences,), ``marginals`` (n_tokens, C),
    ``pair_counts`` and ``pattern_counts`` summed over the batch, ``best``
    (n_tokens,) and ``ranked`` (one list per sequence).
    """
    n_classes = unary.shape[1]
    out = {"log_z": [], "marginals": [], "best": [], "ranked": [],
           "pair_counts": np.zeros((n_classes, n_classes)),
           "pattern_counts": np.zeros(len(rows))}
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        one = enumerate_sequence(unary[lo:hi], transitions, rows, weights, start, end)
        for key in ("log_z", "marginals", "best", "ranked"):
            out[key].append(one[key])
        out["pair_counts"] += one["pair_counts"]
        out["pattern_counts"] += one["pattern_counts"]
    out["log_z"] = np.array(out["log_z"])
    out["marginals"] = (np.concatenate(out["marginals"]) if out["marginals"]
                        else np.zeros((0, n_classes)))
    out["best"] = np.concatenate(out["best"]).astype(np.int64)
    return out
