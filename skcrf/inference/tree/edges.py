"""Tree inference with a score per link: belief propagation and max-product.

The links' scores depend on the observations ("link features", as the
chain's :mod:`.chain_edges`): the score of a link whose parent has label
``a`` and child label ``b`` is ``edges[v, a, b]`` for the child ``v``,
typically ``T[a, b] + sum_f x[v, f] * V[f, a, b]``. The layout is that of
:mod:`.tree` with ``transitions`` replaced by

- ``edges`` : (n_tokens, n_classes, n_classes) float64, [child token, parent
  label, child label]; the rows of roots are ignored; ``-inf`` forbids.

A labelling ``y`` of a forest scores ::

    sum_v unary[v, y_v] + sum_{roots r} root[y_r] + sum_{links p -> v} edges[v, y_p, y_v]

The per-sequence routines are what a training or prediction kernel calls on
its own scratch rows (``structures._tree_edges_fused``): the scaled pass
takes each link's block already exponentiated (:func:`scaled_tree_edge_posteriors`:
``exp(edges[v] - shift[v])``, computed by the caller as it likes, e.g. as
products of exponentiated weights), the exact pass and max-product take log
scores. As in :mod:`.tree`, the passes visit the nodes breadth-first from
the roots and back (:func:`~.tree.tree_layout`), the scaled pass gives up
(NaN, nothing written) where a value falls below FLOOR or a score is -inf,
and the exact pass shifts every message to a maximum of 0. Nothing here
validates or mutates its inputs.
"""

import numpy as np

from .._runtime.batch import chunk_bounds, compiled, default_n_chunks, longest_sequence, run_chunks
from .._logspace import shifted_exp
from .passes import exact_forest_posteriors, forest_viterbi, read_only, tree_layout
from ._scaled import scaled_forest_posteriors


@compiled()
def tree_edge_workspace(longest, n_classes):
    """Scratch for the forests of one chunk, none larger than ``longest`` nodes."""
    return (np.empty((longest, n_classes)), np.empty((longest, n_classes)),
            np.empty((longest, n_classes)), np.empty((longest, n_classes)),
            np.empty(longest + 1, np.int64), np.empty(longest, np.int64),
            np.empty(longest, np.int64), np.empty(longest, np.int64), np.empty(longest),
            np.empty(n_classes), np.empty(n_classes), np.empty((n_classes, n_classes)))


@compiled()
def scaled_tree_edge_posteriors(unary, exp_edges, edge_shift, exp_root, root_shift, parents,
                                lo, hi, with_pairs, marginals, pair_marginals, out_lo, work):
    """log Z of the forest of tokens lo..hi-1 in the probability domain, or NaN.

    ``exp_edges[v]`` (local node v) is ``exp(edges[lo + v] - edge_shift[v])``;
    ``exp_root`` is ``exp(root - root_shift)``. The forest's layout must be in
    ``work`` (:func:`~.tree.tree_layout`). Only when every check passed are the
    marginals (``marginals[out_lo + v]``) and, with ``with_pairs``, each link's
    (parent label, child label) marginals (``pair_marginals[out_lo + v]``,
    zero for a root) written; NaN leaves them as they were. The plain tree's
    pass with a block per link (:func:`._scaled.scaled_forest_posteriors`).
    """
    (up, message, rest, down, child_ptr, children, order, _, total, _, _, _) = work
    return scaled_forest_posteriors(
        unary, parents, lo, hi, (child_ptr, children, order), exp_edges,
        np.empty((0, 0, 0)), edge_shift, True, exp_root, root_shift, with_pairs, marginals,
        out_lo, np.empty((0, 0)), pair_marginals, (up, message, rest, down, total))


@compiled()
def exact_tree_edge_posteriors(unary, edges, edge_lo, root, parents, lo, hi, with_pairs,
                               marginals, pair_marginals, out_lo, work):
    """The log-space pass of the forest of tokens lo..hi-1; ``edges[edge_lo + v]`` scores v's link.

    The forest's layout must be in ``work``. Returns -inf, writing nothing,
    when no labelling has a finite score; else writes what
    :func:`scaled_tree_edge_posteriors` writes. The plain tree's pass with a
    block per link (:func:`~.passes.exact_forest_posteriors`).
    """
    (up, message, excluded, down, child_ptr, children, order, _, _, scratch, suffix,
     block) = work
    no_factors = (np.empty(0), np.empty((0, 0)), np.empty(0), np.empty((0, 0)))
    return exact_forest_posteriors(
        unary, edges, edge_lo, True, no_factors, root, parents, lo, hi, with_pairs, marginals,
        out_lo, np.empty((0, 0)), pair_marginals, (child_ptr, children, order),
        (up, message, excluded, down, scratch, suffix, block, suffix))


@compiled()
def exp_edge_blocks(edges, edge_lo, parents, lo, hi, exp_edges, edge_shift):
    """``exp_edges[v] = exp(edges[edge_lo + v] - edge_shift[v])``, shifted by each block's maximum.

    Returns False when some block holds a ``-inf`` or is all ``-inf``: the
    scaled pass cannot tell forbidden from underflowed (the caller takes the
    exact pass).
    """
    n_classes = edges.shape[1]
    for v in range(hi - lo):
        if parents[lo + v] < 0:
            continue
        top = -np.inf
        for i in range(n_classes):
            for j in range(n_classes):
                value = edges[edge_lo + v, i, j]
                if value == -np.inf:
                    return False
                if value > top:
                    top = value
        edge_shift[v] = top
        for i in range(n_classes):
            for j in range(n_classes):
                exp_edges[v, i, j] = np.exp(edges[edge_lo + v, i, j] - top)
    return True


def root_factors(root):
    """(shift, exp(root - shift), whether some root score is -inf)."""
    shift, exp_root = shifted_exp(root)
    return shift, exp_root, bool(np.any(root == -np.inf))


def tree_edge_forward_backward(unary, edges, root, parents, offsets, with_pairs):
    """Log partition functions, token marginals and per-link pair marginals of a batch of forests.

    Parameters
    ----------
    unary, edges, root, parents, offsets
        See the module docstring.
    with_pairs : bool
        Whether to compute the links' pair marginals (training needs them).

    Returns
    -------
    log_z : (n_sequences,) float64
        0 for an empty sequence; ``-inf`` for one with no feasible labelling.
    marginals : (n_tokens, n_classes) float64
        Rows sum to 1; all zeros for the tokens of an infeasible sequence.
    pair_marginals : (n_tokens, n_classes, n_classes) float64
        ``[v, a, b]``: probability that v's parent has label a and v label b
        (zero for a root); (0, n_classes, n_classes) without ``with_pairs``.
    """
    n_tokens, n_classes = unary.shape
    parents, offsets = read_only(parents, offsets)
    n_sequences = offsets.shape[0] - 1
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    log_z = np.zeros(n_sequences)
    marginals = np.zeros((n_tokens, n_classes))
    pair_marginals = np.zeros((n_tokens if with_pairs else 0, n_classes, n_classes))
    root_shift, exp_root, root_forbidden = root_factors(root)
    run_chunks(_posterior_chunks, n_chunks, bounds, unary, edges, root, parents, offsets,
               root_shift, exp_root, root_forbidden, np.bool_(with_pairs), log_z, marginals,
               pair_marginals)
    return log_z, marginals, pair_marginals


@compiled()
def _posterior_chunks(chunk_lo, chunk_hi, bounds, unary, edges, root, parents, offsets,
                      root_shift, exp_root, root_forbidden, with_pairs, log_z, marginals,
                      pair_marginals):
    """log Z, marginals and pair marginals of the chunks' forests."""
    n_classes = unary.shape[1]
    for c in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        work = tree_edge_workspace(longest, n_classes)
        exp_edges = np.empty((longest, n_classes, n_classes))
        edge_shift = np.zeros(longest)
        child_ptr, children, order, cursor = work[4], work[5], work[6], work[7]
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if hi == lo:
                continue
            tree_layout(parents, lo, hi, child_ptr, children, order, cursor)
            value = np.nan
            if not root_forbidden and exp_edge_blocks(edges, lo, parents, lo, hi, exp_edges,
                                                      edge_shift):
                value = scaled_tree_edge_posteriors(
                    unary, exp_edges, edge_shift, exp_root, root_shift, parents, lo, hi,
                    with_pairs, marginals, pair_marginals, lo, work)
            if np.isnan(value):
                value = exact_tree_edge_posteriors(unary, edges, lo, root, parents, lo, hi,
                                                   with_pairs, marginals, pair_marginals, lo,
                                                   work)
            log_z[q] = value


def tree_edge_viterbi(unary, edges, root, parents, offsets):
    """Most likely labelling of every forest (max-product with back-pointers).

    Ties go to the lowest label id. A ``-inf`` score never appears in a
    returned labelling unless the sequence has no feasible labelling at all.
    The plain tree's pass with a block per link (:func:`~.passes.forest_viterbi`).

    Returns
    -------
    label_ids : (n_tokens,) int64
    """
    return forest_viterbi(unary, np.ascontiguousarray(edges, dtype=np.float64), True, root,
                          parents, offsets)
