"""Brute-force references for semi-Markov CRFs: enumerate every labelled segmentation.

Exponential in the sequence length, so only for small problems; obviously right
by construction, which is what makes them oracles for the kernels. Segments are
``(start, stop, label)`` with ``stop`` exclusive. ``spans`` (optional) are the
scores of whole segments, ``spans[a, d - 1, y]`` for the segment of label y over
the ``d`` tokens from a (segments longer than ``spans.shape[1]`` get none), as the
kernels take them; :func:`segment_feature_counts` and :func:`brute_force_loss`
give the objective of a structure with segment features from the features
themselves.
"""

import itertools

import numpy as np
from scipy.special import logsumexp

ROLES = 5  # covered, first, last, single, repeat: the kernels' order


def segmentations(n, max_length):
    """Every split of ``range(n)`` into consecutive (start, stop) of at most max_length tokens."""
    if n == 0:
        yield ()
        return
    for d in range(1, min(n, max_length) + 1):
        for rest in segmentations(n - d, max_length):
            yield ((0, d),) + tuple((a + d, b + d) for a, b in rest)


def labelled_segmentations(n, n_labels, max_length):
    for split in segmentations(n, max_length):
        for labels in itertools.product(range(n_labels), repeat=len(split)):
            yield tuple((a, b, y) for (a, b), y in zip(split, labels))


def segmentation_score(state, first, last, length, transitions, start, end, segments,
                       spans=None):
    """Log score of one labelled segmentation of one sequence (state: (n, n_labels))."""
    score = start[segments[0][2]] + end[segments[-1][2]]
    for a, b, y in segments:
        if b - a > length.shape[1]:
            return -np.inf
        score += state[a:b, y].sum() + first[a, y] + last[b - 1, y] + length[y, b - a - 1]
        if spans is not None and b - a <= spans.shape[1]:
            score += spans[a, b - a - 1, y]
    for (_, _, x), (_, _, y) in zip(segments[:-1], segments[1:]):
        score += transitions[x, y]
    return score


def enumerate_sequence(state, first, last, length, transitions, start, end, spans=None):
    """(log Z, roles (n, 5, C), length counts, transition counts, start, end, best, best score).

    With ``spans``, the span marginals (as ``spans``) come last.
    """
    n, n_labels = state.shape
    max_length = length.shape[1]
    roles = np.zeros((n, ROLES, n_labels))
    scored = np.zeros((n,) + (() if spans is None else spans.shape[1:]))
    lengths = np.zeros_like(length)
    pairs = np.zeros((n_labels, n_labels))
    starts = np.zeros(n_labels)
    ends = np.zeros(n_labels)
    extra = () if spans is None else (scored,)
    if n == 0:
        return (0.0, roles, lengths, pairs, starts, ends, (), 0.0) + extra
    candidates = list(labelled_segmentations(n, n_labels, max_length))
    with np.errstate(invalid="ignore"):
        scores = np.array([segmentation_score(state, first, last, length, transitions, start,
                                              end, seg, spans) for seg in candidates])
    scores[np.isnan(scores)] = -np.inf
    log_z = logsumexp(scores)
    best = int(np.argmax(scores))
    if log_z == -np.inf:
        return (log_z, roles, lengths, pairs, starts, ends, candidates[best], -np.inf) + extra
    probs = np.exp(scores - log_z)
    for segments, p in zip(candidates, probs):
        starts[segments[0][2]] += p
        ends[segments[-1][2]] += p
        add_roles(roles, segments, p)
        for k, (a, b, y) in enumerate(segments):
            lengths[y, b - a - 1] += p
            if spans is not None and b - a <= spans.shape[1]:
                scored[a, b - a - 1, y] += p
            if k:
                pairs[segments[k - 1][2], y] += p
    return (log_z, roles, lengths, pairs, starts, ends, candidates[best], scores[best]) + extra


def add_roles(roles, segments, p):
    """Add a segmentation's probability ``p`` to ``roles[token, role, label]``.

    The roles of a token in its segment: inside, first, last, alone, and
    first of a segment whose label repeats the previous segment's.
    """
    for k, (a, b, y) in enumerate(segments):
        roles[a:b, 0, y] += p
        roles[a, 1, y] += p
        roles[b - 1, 2, y] += p
        if b - a == 1:
            roles[a, 3, y] += p
        if k and segments[k - 1][2] == y:
            roles[a, 4, y] += p


def enumerate_batch(state, first, last, length, transitions, start, end, offsets, spans=None):
    """Brute force over a batch in the kernels' layout.

    Returns log Z (n_sequences,), roles (n_tokens, 5, C), the summed length,
    transition, start and end counts, and each sequence's best score; with
    ``spans``, then the span marginals (as ``spans``).
    """
    n_labels = state.shape[1]
    log_z, roles, best_scores, scored = [], [], [], []
    totals = [np.zeros_like(length), np.zeros((n_labels, n_labels)), np.zeros(n_labels),
              np.zeros(n_labels)]
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        found = enumerate_sequence(state[lo:hi], first[lo:hi], last[lo:hi], length,
                                   transitions, start, end,
                                   None if spans is None else spans[lo:hi])
        lz, r, *counts, _, best_score = found[:8]
        log_z.append(lz)
        roles.append(r)
        best_scores.append(best_score)
        for total, count in zip(totals, counts):
            total += count
        scored.extend(found[8:])
    result = (np.array(log_z),
              np.concatenate(roles) if roles else np.zeros((0, ROLES, n_labels)),
              *totals, np.array(best_scores))
    if spans is None:
        return result
    return result + (np.concatenate(scored) if scored else np.zeros(spans.shape),)
