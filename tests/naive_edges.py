"""Brute-force references for per-token transitions: enumerate every label path.

Exponential in the sequence length, so only for small problems; obviously right
by construction, which is what makes them oracles for
:mod:`skcrf.inference.chain.edges`.
"""


import numpy as np

from tests.naive import labelling_marginals


def edge_path_score(unary, edges, start, end, path):
    """Log score of one label path of one sequence (unary: (n, C), edges: (n, C, C))."""
    score = start[path[0]] + end[path[-1]]
    score += sum(unary[t, k] for t, k in enumerate(path))
    score += sum(edges[t, path[t - 1], path[t]] for t in range(1, len(path)))
    return score


def enumerate_edge_sequence(unary, edges, start, end):
    """(log Z, marginals, pair marginals, best path) of one sequence.

    ``pair[t, a, b] = P(y_{t-1} = a, y_t = b)``, zero for t = 0; marginals and
    pairs are all zeros when no path has a finite score.
    """
    n, n_classes = unary.shape
    pairs = np.zeros((n, n_classes, n_classes))
    if n == 0:
        return 0.0, np.zeros((0, n_classes)), pairs, np.zeros(0, dtype=np.int64)
    paths, log_z, best, probs, marginals = labelling_marginals(
        n, n_classes, lambda p: edge_path_score(unary, edges, start, end, p))
    for p, prob in zip(paths, () if probs is None else probs):
        for t in range(1, n):
            pairs[t, p[t - 1], p[t]] += prob
    return log_z, marginals, pairs, best


def enumerate_edge_batch(unary, edges, start, end, offsets):
    """Brute force over a batch in the kernels' layout.

    Returns (log_z, marginals, pair_marginals, best paths, best scores), the
    last 0 for an empty sequence.
    """
    n_classes = unary.shape[1]
    log_z, marginals, pairs, paths, best_scores = [], [], [], [], []
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        lz, m, pm, p = enumerate_edge_sequence(unary[lo:hi], edges[lo:hi], start, end)
        log_z.append(lz)
        marginals.append(m)
        pairs.append(pm)
        paths.append(p)
        best_scores.append(edge_path_score(unary[lo:hi], edges[lo:hi], start, end, p)
                           if hi > lo else 0.0)
    return (np.array(log_z), np.concatenate(marginals + [np.zeros((0, n_classes))]),
            np.concatenate(pairs + [np.zeros((0, n_classes, n_classes))]),
            np.concatenate(paths + [np.zeros(0, dtype=np.int64)]), np.array(best_scores))
