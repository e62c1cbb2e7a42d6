"""Brute-force references: enumerate every label path of every sequence.

Exponential in the sequence length, so only for small problems; obviously right
by construction, which is what makes them oracles for the kernels.
"""

import itertools

import numpy as np
from scipy.special import logsumexp


def path_score(unary, transitions, start, end, path):
    """Log score of one label path of one sequence (unary: (n, n_classes))."""
    score = start[path[0]] + end[path[-1]]
    score += sum(unary[t, k] for t, k in enumerate(path))
    score += sum(transitions[a, b] for a, b in zip(path[:-1], path[1:]))
    return score


def scored_labellings(n, n_classes, score):
    """Every labelling of ``n`` tokens scored by ``score(labelling)``.

    Returns ``(labellings, scores, log Z, best labelling, probabilities)``;
    the probabilities are None when no labelling has a finite score.
    """
    paths = list(itertools.product(range(n_classes), repeat=n))
    scores = np.array([score(p) for p in paths])
    log_z = logsumexp(scores)
    best = np.array(paths[int(np.argmax(scores))], dtype=np.int64)
    probs = None if log_z == -np.inf else np.exp(scores - log_z)
    return paths, scores, log_z, best, probs


def labelling_marginals(n, n_classes, score):
    """``(labellings, log Z, best labelling, probabilities, token marginals)`` of ``n`` > 0
    tokens by :func:`scored_labellings`; the marginals are all zeros and the
    probabilities None when no labelling has a finite score."""
    marginals = np.zeros((n, n_classes))
    paths, _, log_z, best, probs = scored_labellings(n, n_classes, score)
    for p, prob in zip(paths, () if probs is None else probs):
        for t, k in enumerate(p):
            marginals[t, k] += prob
    return paths, log_z, best, probs, marginals


def enumerate_sequence(unary, transitions, start, end):
    """(log Z, marginals, expected transition counts, best path) of one sequence."""
    n, n_classes = unary.shape
    counts = np.zeros((n_classes, n_classes))
    if n == 0:
        return 0.0, np.zeros((0, n_classes)), counts, np.zeros(0, dtype=np.int64)
    paths, log_z, best, probs, marginals = labelling_marginals(
        n, n_classes, lambda p: path_score(unary, transitions, start, end, p))
    for p, prob in zip(paths, () if probs is None else probs):
        for a, b in zip(p[:-1], p[1:]):
            counts[a, b] += prob
    return log_z, marginals, counts, best


def enumerate_batch(unary, transitions, start, end, offsets):
    """Brute force over a batch in the kernels' layout."""
    log_z, marginals, counts, paths, best_scores = [], [], 0.0, [], []
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        lz, m, c, p = enumerate_sequence(unary[lo:hi], transitions, start, end)
        log_z.append(lz)
        marginals.append(m)
        counts = counts + c
        paths.append(p)
        best_scores.append(path_score(unary[lo:hi], transitions, start, end, p)
                           if hi > lo else 0.0)
    n_classes = unary.shape[1]
    return (np.array(log_z), np.concatenate(marginals) if marginals else np.zeros((0, n_classes)),
            counts + np.zeros((n_classes, n_classes)), np.concatenate(paths), np.array(best_scores))
