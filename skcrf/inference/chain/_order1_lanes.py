"""The scaled order-1 pass run on several sequences of one length side by side.

With few labels, the loops of :func:`._order1.scaled_forward_backward` are
too short for the compiler to vectorize (nine labels fit no vector body),
and a token costs hundreds of scalar steps. Sequences of the same length
share every loop bound, so a group of them can be laid out as lanes,
``array[r, j, lane]``, and every inner loop runs over the lanes: long,
contiguous and branch-free, which vectorizes whatever the label count.

Each lane performs the operations of the one-sequence pass in the same
order, so its log Z, marginals and backward messages are bitwise those of
:func:`._order1.scaled_forward_backward`; only the transition counts are
summed in another order (lane by lane at the end of the group). The
precision checks become per-lane flags; a lane that fails them is
reported with a NaN log Z and nothing written, for the caller to redo
alone. Only potentials without ``-inf`` come here (no reachability to
track).
"""

import numpy as np

from .._runtime.batch import compiled
from .._logspace import FLOOR, HUGE

#: Lanes per group: the inner loops then hold whole vector bodies.
LANE_MAX = 32
#: Fewer sequences of one length than this run one by one.
LANE_MIN = 4
#: Past this many labels the one-sequence loops vectorize on their own and
#: the lanes' layout no longer pays for its copies.
LANE_MAX_CLASSES = 24
#: Longest sequence grouped: a group's three blocks hold at most this many
#: values each (n_tokens * n_classes * LANE_MAX).
LANE_BUDGET = 1 << 17
#: The lane loops vectorize this many doubles at a time (256-bit registers);
#: a group whose lane count is not a multiple of it would run the rest of
#: every loop one lane at a time, so it is padded with copies of its first lane.
LANE_VECTOR = 4

#: Sequences per chunk, at least, when a batch is cut into chunks for the
#: lanes: a chunk groups its own sequences by length, and with a few dozen
#: sequences most lengths would have too few to fill a group.
LANE_CHUNK_SEQUENCES = 256


def lane_groups(offsets, lo, hi, n_classes):
    """Sequences lo..hi-1 ordered for the lanes: groups of one length, then the rest.

    Returns ``(order, group_ends, longest)``: ``order`` lists the sequences
    by length (stable), cut into groups that end at ``group_ends`` (exclusive
    positions in ``order``). A run of at least :data:`LANE_MIN` sequences of
    one length (2 tokens or more, within :data:`LANE_BUDGET`) is cut into
    groups of at most :data:`LANE_MAX`, of near-equal sizes; every other
    sequence is a group of its own. ``longest`` is the length of the longest
    multi-sequence group (0 if none), for :func:`lane_workspace`. The order
    depends on the data only, never on the thread count. Plain numpy: a
    training set's chunks are ordered once per fit.
    """
    lengths = np.diff(np.asarray(offsets[lo:hi + 1], dtype=np.int64))
    if hi <= lo:
        return np.empty(0, np.int64), np.empty(0, np.int64), 0
    order = np.argsort(lengths, kind="stable").astype(np.int64)
    by_length = lengths[order]
    run_starts = np.flatnonzero(np.diff(by_length)) + 1
    group_ends = []
    longest = 0
    for at, run in zip([0, *run_starts.tolist()], [*run_starts.tolist(), hi - lo]):
        n = int(by_length[at])
        size = run - at
        if size >= LANE_MIN and n >= 2 and n * n_classes * LANE_MAX <= LANE_BUDGET:
            pieces = (size + LANE_MAX - 1) // LANE_MAX
            group_ends.extend(at + (size * p) // pieces for p in range(1, pieces + 1))
            longest = max(longest, n)
        else:
            group_ends.extend(range(at + 1, run + 1))
    return order + lo, np.asarray(group_ends, dtype=np.int64), longest


class LanePlan:
    """The order in which each chunk visits its sequences, cut into groups.

    ``order`` lists every sequence, chunk ``c``'s at positions
    ``bounds[c]:bounds[c + 1]``; group ``g`` ends at position
    ``group_ends[g]`` (exclusive) and chunk ``c``'s groups are
    ``chunk_groups[c]:chunk_groups[c + 1]``. A group of several sequences
    (all of one length) runs as lanes, in scratch rows of ``lane_longest[c]``
    tokens; a group of one runs in a narrower workspace of its own.
    """

    def __init__(self, order, group_ends, chunk_groups, lane_longest):
        self.order = order
        self.group_ends = group_ends
        self.chunk_groups = chunk_groups
        self.lane_longest = lane_longest

    def kernel_args(self):
        return self.order, self.group_ends, self.chunk_groups, self.lane_longest


class LanePlans:
    """The order in which a training set's chunks visit their sequences for the lanes.

    ``grouped()`` groups each chunk's sequences by length (:func:`lane_groups`;
    a sequence in no group is a group of its own), made on first use: it
    depends on the data alone (offsets, chunks, label count), so a fit makes
    it once, not per evaluation.
    """

    def __init__(self, offsets, bounds, n_classes):
        self.offsets = offsets
        self.bounds = bounds
        self.n_classes = n_classes
        self._grouped = None

    def grouped(self):
        if self._grouped is None:
            orders, ends, chunk_groups, longest = [], [], [0], []
            for c in range(self.bounds.shape[0] - 1):
                lo, hi = int(self.bounds[c]), int(self.bounds[c + 1])
                order, group_ends, lane_longest = lane_groups(self.offsets, lo, hi,
                                                              self.n_classes)
                orders.append(order)
                ends.append(group_ends + lo)
                chunk_groups.append(chunk_groups[-1] + group_ends.shape[0])
                longest.append(lane_longest)
            self._grouped = LanePlan(np.concatenate(orders).astype(np.int64),
                                     np.concatenate(ends).astype(np.int64),
                                     np.asarray(chunk_groups, np.int64),
                                     np.asarray(longest, np.int64))
        return self._grouped


@compiled()
def lane_workspace(longest, n_classes, n_lanes):
    """Scratch of :func:`lane_forward_backward` for groups of up to ``n_lanes`` sequences.

    Returns ``(emission, alpha, beta, norm, flags, sums, counts, log_z)``:
    three (longest, n_classes, n_lanes) blocks, norms (longest, n_lanes),
    three (n_lanes,) vectors (failure flags, running sums, log Z) and
    (n_classes, n_classes, n_lanes) transition counts. With ``longest`` 0 (no
    group in the chunk) every block is empty, the counts too: with many
    labels they would take n_classes ** 2 * n_lanes values per chunk for nothing.
    """
    size = n_classes if longest > 0 else 0
    return (np.empty((longest, n_classes, n_lanes)), np.empty((longest, n_classes, n_lanes)),
            np.empty((longest, n_classes, n_lanes)), np.empty((longest, n_lanes)),
            np.empty(n_lanes), np.empty(n_lanes),
            np.empty((size, size, n_lanes)), np.empty(n_lanes))


@compiled(contract=True)
def lane_forward_backward(exp_trans, exp_start, exp_end, n, n_lanes, lanes, with_counts):
    """Forward-backward of ``n_lanes`` sequences of ``n`` >= 2 tokens, scaled per token.

    Parameters
    ----------
    exp_trans, exp_start, exp_end : float64 arrays
        Shifted exponentials of the potentials (no ``-inf`` among them).
    n : int
        The sequences' common length.
    n_lanes : int
        How many lanes of the workspace are in use.
    lanes : tuple
        From :func:`lane_workspace`. On entry ``emission[r, :, lane]`` holds
        the scaled ``exp(unary)`` of token r of the lane's sequence and
        ``log_z[lane]`` the shift taken out of its exponentials. On return
        ``log_z`` holds each lane's log Z (NaN where the lane failed the
        precision checks), ``alpha * beta`` its marginals, ``emission``
        rows 1..n-1 its backward messages, and ``counts[i, j, lane]`` its
        expected transition counts (valid only where log Z is not NaN).
        Up to :data:`LANE_VECTOR` - 1 lanes past ``n_lanes`` are overwritten
        (the padding: copies of lane 0, computed and ignored).
    with_counts : bool
        Whether to compute ``counts`` (left as they were otherwise).
    """
    emission, alpha, beta, norm, flags, sums, counts, log_z = lanes
    n_classes = exp_trans.shape[0]
    m = min(-(-n_lanes // LANE_VECTOR) * LANE_VECTOR, emission.shape[2])
    # the padding lanes repeat lane 0, finite and in range like it: each
    # lane's arithmetic is its own, so the real lanes' results are unchanged
    for lane in range(n_lanes, m):
        log_z[lane] = log_z[0]
        for r in range(n):
            for j in range(n_classes):
                emission[r, j, lane] = emission[r, j, 0]
    for lane in range(m):
        flags[lane] = 0.0
        sums[lane] = 0.0
    for j in range(n_classes):
        a0 = alpha[0, j]
        e0 = emission[0, j]
        for lane in range(m):
            v = exp_start[j] * e0[lane]
            a0[lane] = v
            flags[lane] += 1.0 if v < FLOOR else 0.0
            sums[lane] += v
    _normalize(alpha[0], norm[0], sums, m)

    for r in range(1, n):
        current = alpha[r]
        previous = alpha[r - 1]
        for j in range(n_classes):
            row = current[j]
            for lane in range(m):
                row[lane] = 0.0
        # four source labels per pass over the rows: each row is loaded and
        # stored a quarter as often, and each cell still adds its terms in
        # label order, as the one-sequence pass does (bitwise the same)
        i = 0
        while i + 4 <= n_classes:
            a0 = previous[i]
            a1 = previous[i + 1]
            a2 = previous[i + 2]
            a3 = previous[i + 3]
            for j in range(n_classes):
                e0 = exp_trans[i, j]
                e1 = exp_trans[i + 1, j]
                e2 = exp_trans[i + 2, j]
                e3 = exp_trans[i + 3, j]
                row = current[j]
                for lane in range(m):
                    v = row[lane]
                    v += a0[lane] * e0
                    v += a1[lane] * e1
                    v += a2[lane] * e2
                    v += a3[lane] * e3
                    row[lane] = v
            i += 4
        while i < n_classes:
            a = previous[i]
            for j in range(n_classes):
                e = exp_trans[i, j]
                row = current[j]
                for lane in range(m):
                    row[lane] += a[lane] * e
            i += 1
        for lane in range(m):
            sums[lane] = 0.0
        for j in range(n_classes):
            row = current[j]
            em = emission[r, j]
            for lane in range(m):
                v = row[lane] * em[lane]
                row[lane] = v
                flags[lane] += 1.0 if v < FLOOR else 0.0
                sums[lane] += v
        _normalize(current, norm[r], sums, m)

    for lane in range(m):
        sums[lane] = 0.0
    last = alpha[n - 1]
    for j in range(n_classes):
        row = last[j]
        for lane in range(m):
            term = row[lane] * exp_end[j]
            flags[lane] += 1.0 if term < FLOOR else 0.0
            sums[lane] += term
    final = sums
    for j in range(n_classes):
        row = beta[n - 1, j]
        for lane in range(m):
            row[lane] = exp_end[j] / final[lane]

    for r in range(n - 2, -1, -1):
        following = emission[r + 1]
        scale = norm[r + 1]
        for j in range(n_classes):
            message = following[j]
            b = beta[r + 1, j]
            for lane in range(m):
                v = message[lane] * (b[lane] * (1.0 / scale[lane]))
                message[lane] = v
                flags[lane] += 0.0 if v < HUGE else 1.0
        backward = beta[r]
        for i in range(n_classes):
            row = backward[i]
            for lane in range(m):
                row[lane] = 0.0
        # four messages per pass, in label order (see the forward step)
        j = 0
        while j + 4 <= n_classes:
            m0 = following[j]
            m1 = following[j + 1]
            m2 = following[j + 2]
            m3 = following[j + 3]
            for i in range(n_classes):
                e0 = exp_trans[i, j]
                e1 = exp_trans[i, j + 1]
                e2 = exp_trans[i, j + 2]
                e3 = exp_trans[i, j + 3]
                row = backward[i]
                for lane in range(m):
                    v = row[lane]
                    v += e0 * m0[lane]
                    v += e1 * m1[lane]
                    v += e2 * m2[lane]
                    v += e3 * m3[lane]
                    row[lane] = v
            j += 4
        while j < n_classes:
            message = following[j]
            for i in range(n_classes):
                e = exp_trans[i, j]
                row = backward[i]
                for lane in range(m):
                    row[lane] += e * message[lane]
            j += 1
        for i in range(n_classes):
            row = backward[i]
            for lane in range(m):
                flags[lane] += 0.0 if row[lane] < HUGE else 1.0

    for r in range(n):
        scale = norm[r]
        for lane in range(m):
            log_z[lane] += np.log(scale[lane])
    for lane in range(m):
        log_z[lane] += np.log(final[lane])
        if flags[lane] != 0.0:
            log_z[lane] = np.nan
    if not with_counts:
        return

    for i in range(n_classes):
        for j in range(n_classes):
            row = counts[i, j]
            for lane in range(m):
                row[lane] = 0.0
    # four tokens per pass over the count rows, in token order
    r = 1
    while r + 4 <= n:
        for i in range(n_classes):
            p0 = alpha[r - 1, i]
            p1 = alpha[r, i]
            p2 = alpha[r + 1, i]
            p3 = alpha[r + 2, i]
            for j in range(n_classes):
                e = exp_trans[i, j]
                f0 = emission[r, j]
                f1 = emission[r + 1, j]
                f2 = emission[r + 2, j]
                f3 = emission[r + 3, j]
                row = counts[i, j]
                for lane in range(m):
                    v = row[lane]
                    v += p0[lane] * e * f0[lane]
                    v += p1[lane] * e * f1[lane]
                    v += p2[lane] * e * f2[lane]
                    v += p3[lane] * e * f3[lane]
                    row[lane] = v
        r += 4
    while r < n:
        following = emission[r]
        previous = alpha[r - 1]
        for i in range(n_classes):
            a = previous[i]
            for j in range(n_classes):
                e = exp_trans[i, j]
                message = following[j]
                row = counts[i, j]
                for lane in range(m):
                    row[lane] += a[lane] * e * message[lane]
        r += 1


@compiled(inline=True)
def _normalize(block, norm, sums, m):
    """Divide the lanes of ``block`` (n_classes, n_lanes) by ``sums``; keep the sums as norms."""
    for lane in range(m):
        norm[lane] = sums[lane]
        sums[lane] = 1.0 / sums[lane]
    for j in range(block.shape[0]):
        row = block[j]
        for lane in range(m):
            row[lane] *= sums[lane]
