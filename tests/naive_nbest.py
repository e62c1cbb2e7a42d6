"""Brute-force references for n-best and fixed-label queries: rank every labelling.

Exponential in the sequence length, so only for small problems; obviously right
by construction, which is what makes them oracles for the n-best kernels.
"""

import itertools

import numpy as np

from tests.naive_semimarkov import labelled_segmentations, segmentation_score


def ranked_labellings(score, n_classes, length):
    """Every feasible labelling of ``length`` tokens as (score, labels), best first.

    ``score(labels)`` gives a labelling's log score. Feasible means a finite
    score; an empty sequence has the one empty labelling, of score 0.
    """
    if length == 0:
        return [(0.0, ())]
    scored = [(score(path), path) for path in itertools.product(range(n_classes),
                                                                  repeat=length)]
    return sorted(((s, p) for s, p in scored if s > -np.inf), key=lambda item: -item[0])


def satisfies_boundaries(segments, boundaries, cut, no_repeat):
    """Whether a segmentation starts a segment at every CUT token and repeats no label at a NO_REPEAT one."""
    starts = {a: y for a, _, y in segments}
    for r, code in enumerate(boundaries):
        if r == 0:
            continue
        if code & cut and r not in starts:
            return False
        if code & no_repeat and r in starts:
            previous = next(y for a, b, y in segments if b == r)
            if previous == starts[r]:
                return False
    return True


def ranked_segmentations(state, first, last, length, transitions, start, end, boundaries=None,
                         cut=1, no_repeat=2):
    """Every feasible labelled segmentation of one sequence as (score, segments), best first."""
    n, n_labels = state.shape
    if n == 0:
        return [(0.0, ())]
    ranked = []
    with np.errstate(invalid="ignore"):
        for segments in labelled_segmentations(n, n_labels, length.shape[1]):
            if boundaries is not None and not satisfies_boundaries(segments, boundaries, cut,
                                                                   no_repeat):
                continue
            s = segmentation_score(state, first, last, length, transitions, start, end,
                                   segments)
            if s > -np.inf:
                ranked.append((s, segments))
    return sorted(ranked, key=lambda item: -item[0])
