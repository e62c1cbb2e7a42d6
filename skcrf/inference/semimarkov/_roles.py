"""The per-token roles whose marginals the semi-Markov kernels return.

Rows of the second axis of ``roles`` (see :func:`.semimarkov.segment_posteriors`).
COVERED: the token lies in a segment of the label; FIRST / LAST: it is the
segment's first / last token; SINGLE: the segment is the token alone; REPEAT: a
segment of the label starts here right after one of the same label (what IOB1
writes as ``B-``).

And the flags of a token's boundary code, which fixes what a segmentation does
there (see :mod:`.queries`): CUT, a segment starts at the token; NO_REPEAT, a
segment that starts there does not take the label of the one before.
"""

COVERED, FIRST, LAST, SINGLE, REPEAT = 0, 1, 2, 3, 4
N_ROLES = 5

#: Boundary flags (see the module docstring and :mod:`.queries`).
CUT = 1
NO_REPEAT = 2
