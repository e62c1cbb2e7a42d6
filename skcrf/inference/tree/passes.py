"""Tree inference: belief propagation and max-product over given parent links.

Potentials in, marginals and label ids out: these kernels never see a feature.
Nothing here validates or mutates its inputs; the Python callers check the
trees once (:func:`skcrf.features.check_parents`). The batch kernels take:

- ``unary`` : (n_tokens, n_classes) float64, log-space state scores of all tokens
  of all sequences stacked;
- ``transitions`` : (n_classes, n_classes) float64, the score of a link whose
  parent has label ``a`` and child label ``b`` at ``[a, b]``; ``-inf`` forbids it;
- ``root`` : (n_classes,) float64, the score of each label at a root;
- ``parents`` : (n_tokens,) int64, each token's parent as an index within its
  own sequence, -1 for a root (a sequence may hold several trees: a forest);
- ``offsets`` : (n_sequences + 1,) int64, sequence q owns tokens
  ``offsets[q]:offsets[q + 1]``.

A path whose parents are ``-1, 0, 1, ...`` is the order-1 chain with
``transitions`` and ``start = root`` (and no end scores).

The passes visit the nodes in breadth-first order from the roots (children
after their parent) and in its reverse, so they need no recursion and hold
for trees of any depth. Every tree goes through the fast scaled pass of
:mod:`._tree_scaled` first; the few whose values under- or overflow it, and
those with -inf scores, are redone exactly in log space, where every message
is shifted to a maximum of 0, with the shift added to log Z, and every
token's unary scores by their maximum, as the chain's exact pass does: no
score grows with the depth of the tree, and a huge score on one token rounds
away no other token's digits.
"""

import numpy as np

from .._runtime.batch import (chunk_bounds, chunk_totals, compiled, default_n_chunks,
                              longest_sequence, run_chunks)
from .._logspace import (add_pair_block, log_matrix_vector, log_vector_matrix, logsumexp_sum,
                        normalize_log_block, normalized_exp_sum, shift_of,
                        shifted_rows)
from .._potentials import shifted_exp_by_column_and_row, tree_scaled_potentials
from ._scaled import scaled_forest_posteriors


def read_only(parents, offsets):
    """Read-only views (no copies) of ``parents`` and ``offsets``, for the kernels.

    Prediction passes a SequenceMatrix's read-only arrays, training arrays it
    built, and numba compiles a kernel once per writability of an argument:
    every tree entry point passes both read-only, so each kernel has one
    specialization (the link-feature tree had four of its kernels twice).
    """
    views = parents.view(), offsets.view()
    for view in views:
        view.flags.writeable = False
    return views


@compiled()
def tree_layout(parents, lo, hi, child_ptr, children, order, cursor):
    """Children lists and a breadth-first order of the forest of tokens lo..hi-1.

    Writes ``children[child_ptr[v]:child_ptr[v + 1]]``, the children of node
    ``v`` (positions within the sequence) in increasing order, and ``order``,
    the roots in increasing order followed by the other nodes breadth-first:
    every node comes after its parent. Returns how many nodes ``order``
    holds, which is ``hi - lo`` for a valid forest (a cycle leaves its nodes
    out). ``cursor`` is scratch.
    """
    n = hi - lo
    for v in range(n + 1):
        child_ptr[v] = 0
    for v in range(n):
        p = parents[lo + v]
        if p >= 0:
            child_ptr[p + 1] += 1
    for v in range(n):
        child_ptr[v + 1] += child_ptr[v]
        cursor[v] = child_ptr[v]
    tail = 0
    for v in range(n):
        p = parents[lo + v]
        if p >= 0:
            children[cursor[p]] = v
            cursor[p] += 1
        else:
            order[tail] = v
            tail += 1
    head = 0
    while head < tail:
        v = order[head]
        head += 1
        for k in range(child_ptr[v], child_ptr[v + 1]):
            order[tail] = children[k]
            tail += 1
    return tail


@compiled()
def tree_workspace(longest, n_classes, with_counts):
    """Scratch for the trees of one chunk, none larger than ``longest`` nodes."""
    size = n_classes if with_counts else 0
    return (np.empty((longest, n_classes)), np.empty((longest, n_classes)),
            np.empty((longest, n_classes)), np.empty((longest, n_classes)),
            np.empty(longest + 1, np.int64), np.empty(longest, np.int64),
            np.empty(longest, np.int64), np.empty(longest, np.int64),
            np.empty((size, size)), np.empty(n_classes), np.empty(n_classes),
            np.zeros(n_classes), np.empty(longest))


@compiled()
def _shift_to_zero(row):
    """Subtract the maximum of ``row`` from it; returns the maximum (-inf if all are)."""
    top = -np.inf
    for j in range(row.shape[0]):
        if row[j] > top:
            top = row[j]
    if top > -np.inf:
        for j in range(row.shape[0]):
            row[j] -= top
    return top


@compiled()
def _combine_children(v, child_ptr, children, up, message, excluded, suffix):
    """Fold the children's messages into ``up[v]`` and give each child its parent's rest.

    ``up[v]`` holds v's shifted unary scores on entry and its upward
    (inside) scores on return. ``excluded[c]`` becomes ``up[v]`` without
    ``message[c]``, made from prefix and suffix sums over the children
    rather than by subtraction, which would give -inf - -inf = NaN where a
    child forbids a label and lose digits next to large messages.
    """
    n_classes = up.shape[1]
    for k in range(child_ptr[v], child_ptr[v + 1]):
        c = children[k]
        for j in range(n_classes):
            excluded[c, j] = up[v, j]
            up[v, j] += message[c, j]
    for j in range(n_classes):
        suffix[j] = 0.0
    for k in range(child_ptr[v + 1] - 1, child_ptr[v] - 1, -1):
        c = children[k]
        for j in range(n_classes):
            excluded[c, j] += suffix[j]
            suffix[j] += message[c, j]


@compiled()
def tree_sequence_posteriors(unary, transitions, root, parents, lo, hi, potentials,
                             with_counts, marginals, counts, work):
    """log Z of the forest of tokens lo..hi-1; its marginals and link counts into the outputs.

    The scaled pass first; a forest it gives up on is redone exactly in log
    space. Returns -inf, writing nothing, when no labelling has a finite score.
    The batch drivers call the two passes apart instead
    (:func:`scaled_tree_sequence`, then :func:`exact_tree_sequence` on the
    forests flagged), so that the exact one compiles only when needed.
    """
    scaled, exact = potentials
    log_z = scaled_tree_sequence(unary, parents, lo, hi, scaled, with_counts, marginals,
                                 counts, work)
    if np.isnan(log_z):
        log_z = exact_tree_sequence(unary, transitions, root, parents, lo, hi, exact,
                                    with_counts, marginals, counts, work)
    return log_z


@compiled()
def scaled_tree_sequence(unary, parents, lo, hi, scaled, with_counts, marginals, counts,
                         work):
    """The scaled pass of the forest of tokens lo..hi-1; NaN, writing nothing, if it gives up."""
    trans_max, root_max, exp_trans, exp_trans_by_child, exp_root, forbidden = scaled
    if forbidden:
        return np.nan
    (up, message, excluded, down, child_ptr, children, order, cursor, block, suffix,
     scratch, zero, total) = work
    tree_layout(parents, lo, hi, child_ptr, children, order, cursor)
    n_classes = exp_trans.shape[0]
    # every link shares the one block (see scaled_forest_posteriors)
    return scaled_forest_posteriors(
        unary, parents, lo, hi, (child_ptr, children, order),
        exp_trans.reshape((1, n_classes, n_classes)),
        exp_trans_by_child.reshape((1, n_classes, n_classes)), np.full(1, trans_max),
        False, exp_root, root_max, with_counts, marginals, lo, counts,
        np.empty((0, n_classes, n_classes)), (up, message, excluded, down, total))


@compiled()
def exact_tree_sequence(unary, transitions, root, parents, lo, hi, exact, with_counts,
                        marginals, counts, work):
    """The exact log-space pass of the forest of tokens lo..hi-1; -inf if infeasible."""
    (up, message, excluded, down, child_ptr, children, order, cursor, block, suffix,
     scratch, zero, total) = work
    tree_layout(parents, lo, hi, child_ptr, children, order, cursor)
    return _exact_tree_posteriors(unary, transitions, root, parents, lo, hi, exact,
                                  with_counts, marginals, counts, work)


@compiled()
def _exact_tree_posteriors(unary, transitions, root, parents, lo, hi, potentials,
                           with_counts, marginals, counts, work):
    """The log-space pass of :func:`tree_sequence_posteriors`, on the layout it made."""
    (up, message, excluded, down, child_ptr, children, order, cursor, block, suffix,
     scratch, zero, total) = work
    n_classes = transitions.shape[0]
    # every link shares the one block (see exact_forest_posteriors)
    return exact_forest_posteriors(
        unary, np.ascontiguousarray(transitions).reshape((1, n_classes, n_classes)),
        np.int64(0), False, potentials, root, parents, lo, hi, with_counts, marginals, lo,
        counts, np.empty((0, n_classes, n_classes)), (child_ptr, children, order),
        (up, message, excluded, down, scratch, suffix, block, zero))


@compiled()
def exact_forest_posteriors(unary, blocks, block_lo, per_link, factored, root, parents, lo, hi,
                            with_pairs, marginals, out_lo, counts, pair_marginals, layout,
                            work):
    """The log-space pass of the forest of tokens lo..hi-1, for both tree models.

    Returns -inf, writing nothing, when no labelling has a finite score. A
    link's log scores are ``blocks[block_lo + v]`` when ``per_link`` (the
    link-feature tree: each link's messages take one exponential per cell,
    and with ``with_pairs`` its normalized pair marginals go to
    ``pair_marginals[out_lo + v]``, zero for a root), else ``blocks[0]`` for
    every link (the plain tree: the messages are factored with ``factored``,
    :func:`~.._logspace.shifted_exp_by_column_and_row` of the block, and the
    pair marginals added up into ``counts``). Marginals go to
    ``marginals[out_lo + v]``. ``layout`` is (child_ptr, children, order) of
    :func:`tree_layout`; ``work`` is (up, message, excluded, down, scratch,
    suffix, block, zero), ``zero`` all zeros.
    """
    col_max, exp_by_col, row_max, exp_by_row = factored
    child_ptr, children, order = layout
    up, message, excluded, down, scratch, suffix, block, zero = work
    n_classes = unary.shape[1]
    n = hi - lo
    log_z = shifted_rows(unary, lo, hi, up)

    # upward: children before their parent
    for m in range(n - 1, -1, -1):
        v = order[m]
        _combine_children(v, child_ptr, children, up, message, excluded, suffix)
        if parents[lo + v] >= 0:
            if per_link:
                _log_block_product(blocks[block_lo + v], up[v], np.bool_(True), message[v])
            else:
                log_matrix_vector(blocks[0], up[v], row_max, exp_by_row, scratch, message[v])
            top = _shift_to_zero(message[v])
            if top == -np.inf:
                return -np.inf
            log_z += top
        else:
            top = logsumexp_sum(root, up[v])
            if top == -np.inf:
                return -np.inf
            log_z += top

    # downward: parents before their children
    for m in range(n):
        v = order[m]
        p = parents[lo + v]
        if p < 0:
            for j in range(n_classes):
                down[v, j] = root[j]
            if with_pairs and per_link:
                pair_marginals[out_lo + v] = 0.0
        else:
            for i in range(n_classes):
                scratch[i] = down[p, i] + excluded[v, i]
            links = blocks[block_lo + v if per_link else 0]
            if per_link:
                _log_block_product(links, scratch, np.bool_(False), down[v])
            else:
                log_vector_matrix(zero, scratch, links, col_max, exp_by_col, suffix, down[v])
            _shift_to_zero(down[v])
            if with_pairs and per_link:
                _link_pair_marginals(scratch, links, up[v], block, pair_marginals[out_lo + v])
            elif with_pairs:
                add_pair_block(scratch, links, col_max, exp_by_col, up[v], counts, block,
                               suffix)
        normalized_exp_sum(down[v], up[v], marginals[out_lo + v])
    return log_z


@compiled()
def _link_pair_marginals(above, links, below, block, pairs):
    """pairs[a, b] = P(parent a, child b) of one link, from exp(above[a] + links[a, b] + below[b])."""
    n_classes = links.shape[0]
    for i in range(n_classes):
        for j in range(n_classes):
            block[i, j] = above[i] + links[i, j] + below[j]
    if normalize_log_block(block):
        for i in range(n_classes):
            for j in range(n_classes):
                pairs[i, j] = block[i, j]
    else:
        for i in range(n_classes):
            for j in range(n_classes):
                pairs[i, j] = 0.0


@compiled()
def _log_block_product(block, values, by_rows, out):
    """A link's message in log space: ``block`` times ``values``, -inf where every term is.

    By rows (upward, to the parent): out[i] = log sum_j exp(block[i, j] + values[j]);
    else (downward, to the child): out[j] = log sum_i exp(values[i] + block[i, j]).
    """
    n_out = block.shape[0] if by_rows else block.shape[1]
    n_sum = block.shape[1] if by_rows else block.shape[0]
    for o in range(n_out):
        top = -np.inf
        for k in range(n_sum):
            v = (block[o, k] if by_rows else block[k, o]) + values[k]
            if v > top:
                top = v
        if top == -np.inf:
            out[o] = -np.inf
            continue
        s = 0.0
        for k in range(n_sum):
            s += np.exp((block[o, k] if by_rows else block[k, o]) + values[k] - top)
        out[o] = top + np.log(s)


def tree_forward_backward(unary, transitions, root, parents, offsets, with_counts):
    """Log partition functions, token marginals and expected link counts of a batch of forests.

    Parameters
    ----------
    unary, transitions, root, parents, offsets
        See the module docstring.
    with_counts : bool
        Whether to compute the expected link counts (training needs them).

    Returns
    -------
    log_z : (n_sequences,) float64
        0 for an empty sequence; ``-inf`` for one with no feasible labelling.
    marginals : (n_tokens, n_classes) float64
        Rows sum to 1; all zeros for the tokens of an infeasible sequence.
    link_counts : (n_classes, n_classes) float64
        Expected number of links with parent label ``a`` and child label
        ``b``, summed over all sequences; (0, 0) without ``with_counts``.
    """
    n_tokens, n_classes = unary.shape
    parents, offsets = read_only(parents, offsets)
    n_sequences = offsets.shape[0] - 1
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    scaled = tree_scaled_potentials(transitions, root)
    log_z = np.zeros(n_sequences)
    marginals = np.zeros((n_tokens, n_classes))
    size = n_classes if with_counts else 0
    chunk_counts = np.zeros((n_chunks if with_counts else 1, size, size))
    with_counts = bool(with_counts)
    exact = np.zeros(n_sequences, np.bool_)
    run_chunks(_tree_posterior_chunks, n_chunks, bounds, unary, transitions, root, parents,
               offsets, scaled, with_counts, log_z, marginals, chunk_counts, exact)
    if exact.any():
        run_chunks(_exact_tree_posterior_chunks, n_chunks, bounds, unary, transitions, root,
                   parents, offsets, shifted_exp_by_column_and_row(transitions), with_counts,
                   log_z, marginals, chunk_counts, exact)
    link_counts, = chunk_totals(chunk_counts)
    return log_z, marginals, link_counts


@compiled()
def _tree_posterior_chunks(chunk_lo, chunk_hi, bounds, unary, transitions, root, parents,
                           offsets, scaled, with_counts, log_z, marginals, chunk_counts, exact):
    """The scaled pass of the chunks' trees; ``exact`` flags those it gives up on."""
    n_classes = unary.shape[1]
    for c in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        work = tree_workspace(longest, n_classes, with_counts)
        partial = chunk_counts[np.int64(c) if with_counts else np.int64(0)]
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if hi == lo:
                continue
            lz = scaled_tree_sequence(unary, parents, lo, hi, scaled, with_counts, marginals,
                                      partial, work)
            if np.isnan(lz):
                exact[q] = True
            else:
                log_z[q] = lz


@compiled()
def _exact_tree_posterior_chunks(chunk_lo, chunk_hi, bounds, unary, transitions, root,
                                 parents, offsets, shifted, with_counts, log_z, marginals,
                                 chunk_counts, exact):
    """The exact log-space pass of the chunks' trees that ``exact`` flags."""
    n_classes = unary.shape[1]
    for c in range(chunk_lo, chunk_hi):
        if not exact[bounds[c]:bounds[c + 1]].any():
            continue
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        work = tree_workspace(longest, n_classes, with_counts)
        partial = chunk_counts[np.int64(c) if with_counts else np.int64(0)]
        for q in range(bounds[c], bounds[c + 1]):
            if exact[q]:
                log_z[q] = exact_tree_sequence(unary, transitions, root, parents, offsets[q],
                                               offsets[q + 1], shifted, with_counts,
                                               marginals, partial, work)


def tree_viterbi(unary, transitions, root, parents, offsets):
    """Most likely labelling of every forest (max-product with back-pointers).

    Ties go to the lowest label id. A ``-inf`` score never appears in a
    returned labelling unless the sequence has no feasible labelling at all.
    Unary scores are shifted per token and messages to a maximum of 0, which
    changes no argmax.

    Returns
    -------
    label_ids : (n_tokens,) int64
    """
    n_classes = unary.shape[1]
    # every link shares the one block (see forest_viterbi)
    blocks = np.ascontiguousarray(transitions, dtype=np.float64).reshape(1, n_classes,
                                                                         n_classes)
    return forest_viterbi(unary, blocks, False, root, parents, offsets)


def forest_viterbi(unary, blocks, per_link, root, parents, offsets):
    """The best labelling of every forest, each link scored by its block (:func:`tree_viterbi`).

    ``blocks[v]`` scores the link of token v (its rows the parent's labels) when
    ``per_link`` (the link-feature tree), else ``blocks[0]`` every link.
    """
    n_tokens = unary.shape[0]
    parents, offsets = read_only(parents, offsets)
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    label_ids = np.zeros(n_tokens, np.int64)
    run_chunks(_tree_viterbi_chunks, n_chunks, bounds, unary, blocks, bool(per_link), root,
               parents, offsets, label_ids)
    return label_ids


@compiled()
def _tree_viterbi_chunks(chunk_lo, chunk_hi, bounds, unary, blocks, per_link, root, parents,
                         offsets, label_ids):
    """The best labellings of the chunks' trees into ``label_ids``."""
    n_classes = unary.shape[1]
    for c in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        best = np.empty((longest, n_classes))
        message = np.empty(n_classes)
        backpointer = np.zeros((longest, n_classes), np.int32)
        child_ptr = np.empty(longest + 1, np.int64)
        children = np.empty(longest, np.int64)
        order = np.empty(longest, np.int64)
        cursor = np.empty(longest, np.int64)
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            n = hi - lo
            if n == 0:
                continue
            tree_layout(parents, lo, hi, child_ptr, children, order, cursor)
            shifted_rows(unary, lo, hi, best)
            # upward: best[v] gathers the best scores of v's subtree per label
            for m in range(n - 1, -1, -1):
                v = order[m]
                p = parents[lo + v]
                if p < 0:
                    continue
                block = blocks[lo + v if per_link else 0]
                for i in range(n_classes):
                    top = -np.inf
                    top_j = 0
                    for j in range(n_classes):
                        s = block[i, j] + best[v, j]
                        if s > top:
                            top = s
                            top_j = j
                    message[i] = top
                    backpointer[v, i] = top_j
                shift = shift_of(message)
                for i in range(n_classes):
                    best[p, i] += message[i] - shift
            # downward: each root's best label, then each child's given its parent's
            for m in range(n):
                v = order[m]
                p = parents[lo + v]
                if p >= 0:
                    label_ids[lo + v] = backpointer[v, label_ids[lo + p]]
                    continue
                top = -np.inf
                top_j = 0
                for j in range(n_classes):
                    s = root[j] + best[v, j]
                    if s > top:
                        top = s
                        top_j = j
                label_ids[lo + v] = top_j
