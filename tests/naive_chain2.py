"""Brute-force references for the order-2 (label-trigram) chain: enumerate every labelling.

Exponential in the sequence length, so only for small problems; obviously right
by construction, which is what makes them oracles for the kernels.
"""


import numpy as np

from tests.naive import scored_labellings


def path_score2(unary, transitions, trigram, start, end, path):
    """Log score of one label path of one sequence (unary: (n, n_classes))."""
    score = start[path[0]] + end[path[-1]]
    score += sum(unary[t, k] for t, k in enumerate(path))
    score += sum(transitions[a, b] for a, b in zip(path[:-1], path[1:]))
    score += sum(trigram[a, b, c] for a, b, c in zip(path[:-2], path[1:-1], path[2:]))
    return score


def enumerate_sequence2(unary, transitions, trigram, start, end):
    """(log Z, marginals, pair counts, triple counts, best path) of one sequence."""
    n, n_classes = unary.shape
    marginals = np.zeros((n, n_classes))
    pairs = np.zeros((n_classes, n_classes))
    triples = np.zeros((n_classes, n_classes, n_classes))
    if n == 0:
        return 0.0, marginals, pairs, triples, np.zeros(0, dtype=np.int64)
    paths, _, log_z, best, probs = scored_labellings(
        n, n_classes, lambda p: path_score2(unary, transitions, trigram, start, end, p))
    if probs is None:
        return log_z, marginals, pairs, triples, best
    for p, prob in zip(paths, probs):
        for t, k in enumerate(p):
            marginals[t, k] += prob
        for a, b in zip(p[:-1], p[1:]):
            pairs[a, b] += prob
        for a, b, c in zip(p[:-2], p[1:-1], p[2:]):
            triples[a, b, c] += prob
    return log_z, marginals, pairs, triples, best


def enumerate_batch2(unary, transitions, trigram, start, end, offsets):
    """Brute force over a batch in the kernels' layout.

    Returns (log_z, marginals, pair_counts, triple_counts, paths, best_scores).
    """
    n_classes = unary.shape[1]
    log_z, marginals, paths, best_scores = [], [], [], []
    pairs = np.zeros((n_classes, n_classes))
    triples = np.zeros((n_classes, n_classes, n_classes))
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        lz, m, pc, tc, p = enumerate_sequence2(unary[lo:hi], transitions, trigram, start, end)
        log_z.append(lz)
        marginals.append(m)
        pairs += pc
        triples += tc
        paths.append(p)
        best_scores.append(path_score2(unary[lo:hi], transitions, trigram, start, end, p)
                           if hi > lo else 0.0)
    return (np.array(log_z),
            np.concatenate(marginals) if marginals else np.zeros((0, n_classes)),
            pairs, triples, np.concatenate(paths), np.array(best_scores))
