"""Brute force for semi-Markov CRFs of order d: every labelled segmentation, scored with patterns.

A segmentation scores as in :mod:`tests.naive_semimarkov` (order 1) plus the
weight of every pattern (a row of label ids, left-padded with -1) that occurs
among the labels of consecutive segments. Exponential in the sequence length:
small problems only, obviously right by construction.
"""

import numpy as np
from scipy.special import logsumexp

from tests.naive_semimarkov import ROLES, labelled_segmentations, segmentation_score


def pattern_occurrences(labels, rows):
    """(n_patterns,) how often each pattern row occurs in the label sequence ``labels``."""
    counts = np.zeros(len(rows))
    for p, row in enumerate(rows):
        pattern = [int(y) for y in row if y >= 0]
        k = len(pattern)
        for i in range(len(labels) - k + 1):
            if list(labels[i:i + k]) == pattern:
                counts[p] += 1
    return counts


def ordered_score(potentials, rows, weights, segments, spans=None):
    """Log score of one labelled segmentation under order-1 potentials and pattern weights."""
    with np.errstate(invalid="ignore"):
        score = segmentation_score(*potentials, segments, spans)
    if np.isnan(score):
        return -np.inf
    labels = [y for _, _, y in segments]
    return score + pattern_occurrences(labels, rows) @ np.asarray(weights, dtype=float)


def enumerate_ordered(potentials, rows, weights, spans=None, cuts=()):
    """Everything inference computes for one sequence, by enumeration.

    ``potentials`` is ``(state, first, last, length, transitions, start, end)``
    of one sequence (state: (n, C)); ``cuts`` are the tokens where a segment
    must start (fixed boundaries).

    Returns a dict: ``log_z``, ``roles`` (n, 5, C; REPEAT is the label-level
    one), ``lengths``, ``pairs``, ``starts``, ``ends``, ``patterns`` (expected
    counts), ``scores`` (every candidate's, sorted decreasing) and
    ``candidates`` (in the same order).
    """
    state, first, last, length, transitions, start, end = potentials
    n, C = state.shape
    result = dict(roles=np.zeros((n, ROLES, C)), lengths=np.zeros_like(length),
                  pairs=np.zeros((C, C)), starts=np.zeros(C), ends=np.zeros(C),
                  patterns=np.zeros(len(rows)))
    if n == 0:
        return dict(result, log_z=0.0, scores=np.zeros(1), candidates=[()])
    candidates = [segments for segments in labelled_segmentations(n, C, length.shape[1])
                  if all(any(a == cut for a, _, _ in segments) for cut in cuts)]
    scores = np.array([ordered_score(potentials, rows, weights, segments, spans)
                       for segments in candidates])
    order = np.argsort(-scores, kind="stable")
    result.update(scores=scores[order], candidates=[candidates[i] for i in order])
    log_z = logsumexp(scores) if scores.size else -np.inf
    result["log_z"] = log_z
    if log_z == -np.inf:
        return result
    for segments, p in zip(candidates, np.exp(scores - log_z)):
        labels = [y for _, _, y in segments]
        result["starts"][labels[0]] += p
        result["ends"][labels[-1]] += p
        result["patterns"] += p * pattern_occurrences(labels, rows)
        for k, (a, b, y) in enumerate(segments):
            roles = result["roles"]
            roles[a:b, 0, y] += p
            roles[a, 1, y] += p
            roles[b - 1, 2, y] += p
            if b - a == 1:
                roles[a, 3, y] += p
            result["lengths"][y, b - a - 1] += p
            if k:
                x = segments[k - 1][2]
                result["pairs"][x, y] += p
                if x == y:
                    roles[a, 4, y] += p
    return result
