"""Belief propagation on a tree in the probability domain, scaled per node.

The fast pass of both tree models (:mod:`.passes`, :mod:`.edges`): the
exponentials of the links' and root scores come in (for the plain tree taken
once for all trees, shifted by their maxima), each token's unary
scores need ``n_classes`` exponentials, and messages are products and sums,
each message scaled to a maximum of 1 with the log of the scale added to
log Z. It gives up (returns NaN, writing nothing) whenever a value falls
below :data:`~._logspace.FLOOR`, where it might have lost its digits to
underflow, and whenever some score is -inf, where a zero might be exact or
underflow; the caller then runs the exact log-space pass.
"""

import numpy as np

from .._runtime.batch import compiled
from .._logspace import FLOOR
from .._products import add_vector_matrix


@compiled()
def _scale_to_max(row):
    """Divide ``row`` by its maximum and return that maximum, or 0 when precision is lost.

    0 when some value is below FLOOR, before or after the scaling (``row`` is
    then partly scaled: the caller gives up on the tree). Before: a sum of
    products can fall into the subnormal range, where it keeps a few bits,
    and the scaling would lift it back among normal values unnoticed.
    """
    top = 0.0
    for j in range(row.shape[0]):
        if row[j] > top:
            top = row[j]
    if not top > FLOOR:
        return 0.0
    for j in range(row.shape[0]):
        if row[j] < FLOOR:
            return 0.0
        row[j] /= top
        if row[j] < FLOOR:
            return 0.0
    return top


@compiled()
def scaled_forest_posteriors(unary, parents, lo, hi, layout, blocks, blocks_by_child, shifts,
                             per_link, exp_root, root_shift, with_pairs, marginals, out_lo,
                             counts, pair_marginals, work):
    """log Z of the forest of tokens lo..hi-1 and its marginals and link pair marginals, or NaN.

    One pass for both tree models: a link's block of exponentiated scores
    ``blocks[b]`` (shifted by ``shifts[b]``) is the link's own
    (``b = v`` for local node v, when ``per_link``: the link-feature tree) or
    the one every link shares (``b = 0``: the plain tree, whose caller has
    checked that no score is -inf). ``blocks_by_child[b]``, the transposed
    blocks, may be given (else it is empty): the upward messages are then sums
    of rows, contiguous in memory. ``layout`` is (child_ptr, children, order)
    of :func:`~.passes.tree_layout`; ``work`` is (up, message, rest, down,
    total). ``up[v]`` becomes the shifted exponentials of v's unary scores
    times its children's messages; ``rest[c]`` the same for c's parent
    without c's message, then times the parent's downward values; ``down[c]``
    the downward values of c. Only once every check has passed are the
    outputs written: the marginals into ``marginals[out_lo + v]`` and, with
    ``with_pairs``, each link's (parent label, child label) marginals into
    ``pair_marginals[out_lo + v]`` (zero for a root) when ``per_link``, else
    added up into ``counts``.
    """
    child_ptr, children, order = layout
    up, message, rest, down, total = work
    n_classes = unary.shape[1]
    n = hi - lo
    by_rows = blocks_by_child.shape[0] > 0
    log_z = 0.0
    for v in range(n):
        top = -np.inf
        for j in range(n_classes):
            if unary[lo + v, j] > top:
                top = unary[lo + v, j]
        if not top > -np.inf:
            return np.nan
        log_z += top
        for j in range(n_classes):
            if unary[lo + v, j] == -np.inf:
                return np.nan
            up[v, j] = np.exp(unary[lo + v, j] - top)

    # upward: children before their parent
    for m in range(n - 1, -1, -1):
        v = order[m]
        first, stop = child_ptr[v], child_ptr[v + 1]
        # each child's rest: the parent's emission times its siblings' messages,
        # from prefix then suffix products (no division, which 0 would break)
        for k in range(first, stop):
            c = children[k]
            for j in range(n_classes):
                rest[c, j] = up[v, j]
                up[v, j] *= message[c, j]
        if stop - first > 1:
            for j in range(n_classes):
                suffix = 1.0
                for k in range(stop - 1, first - 1, -1):
                    c = children[k]
                    rest[c, j] *= suffix
                    suffix *= message[c, j]
        for j in range(n_classes):
            if up[v, j] < FLOOR:
                return np.nan
        if parents[lo + v] < 0:
            z = 0.0
            for j in range(n_classes):
                z += exp_root[j] * up[v, j]
            if not z > FLOOR:
                return np.nan
            log_z += root_shift + np.log(z)
            continue
        b = v if per_link else 0
        # message[i] = sum_j block[i, j] up[v, j]
        if by_rows:
            for i in range(n_classes):
                message[v, i] = 0.0
            add_vector_matrix(up[v], blocks_by_child[b], message[v])
        else:
            block = blocks[b]
            for i in range(n_classes):
                s = 0.0
                for j in range(n_classes):
                    s += block[i, j] * up[v, j]
                message[v, i] = s
        top = _scale_to_max(message[v])
        if top == 0.0:
            return np.nan
        log_z += shifts[b] + np.log(top)

    # downward: parents before their children; rest[c] becomes the weights of
    # the parent's labels seen from c, down[c] c's downward values
    for m in range(n):
        v = order[m]
        p = parents[lo + v]
        if p < 0:
            for j in range(n_classes):
                down[v, j] = exp_root[j]
        else:
            for i in range(n_classes):
                rest[v, i] *= down[p, i]
            for j in range(n_classes):
                down[v, j] = 0.0
            add_vector_matrix(rest[v], blocks[v if per_link else 0], down[v])
            top = _scale_to_max(down[v])
            if top == 0.0:
                return np.nan
            for i in range(n_classes):
                rest[v, i] /= top
        s = 0.0
        for j in range(n_classes):
            s += down[v, j] * up[v, j]
        if not s > FLOOR:
            return np.nan
        total[v] = s

    # every check passed: only now write the outputs
    for v in range(n):
        inverse = 1.0 / total[v]
        for j in range(n_classes):
            marginals[out_lo + v, j] = down[v, j] * up[v, j] * inverse
        if not with_pairs:
            continue
        if parents[lo + v] < 0:
            if per_link:
                pair_marginals[out_lo + v] = 0.0
            continue
        # P(parent a, child b) = rest[v, a] block[a, b] up[v, b] / total[v], on
        # the scale of down[v] (rest was divided by the same maximum)
        block = blocks[v if per_link else 0]
        pairs = pair_marginals[out_lo + v] if per_link else counts
        for i in range(n_classes):
            a = rest[v, i] * inverse
            for j in range(n_classes):
                if per_link:
                    pairs[i, j] = a * block[i, j] * up[v, j]
                else:
                    pairs[i, j] += a * block[i, j] * up[v, j]
    return log_z
