"""Fused training kernel of a tree CRF with link features.

Per forest: the unary scores and each link's scores ``T + sum_f x[v, f] V[f]``
into per-chunk scratch rows, belief propagation with a score block per link
(:mod:`~skcrf.inference.tree.edges`), then the marginals and the links' pair
marginals scattered into the expected counts of the pairs. Training never
holds the (n_tokens, n_classes ** 2) arrays of link scores and pair marginals
that the unfused path builds. Tested against that path on random problems.
"""

import numpy as np

from ...inference._runtime.batch import (chunk_bounds, chunk_partials, chunk_totals, compiled,
                                         longest_sequence, run_chunks)
from ...inference.tree.passes import read_only, tree_layout
from ...inference.tree.edges import (exact_tree_edge_posteriors, exp_edge_blocks, root_factors,
                                    scaled_tree_edge_posteriors, tree_edge_workspace)
from ..chain._edges_fused import _pair_rows

# The chain's link-feature kernel sums a token's feature weights (_pair_rows) and
# sizes its chunks (edge_chunk_count) as this one does: both are shared.

#: The exponentiated link blocks are products of exponentiated weights while
#: every weight magnitude times the most link-feature entries of a token stays
#: below this: no product then leaves float64's normal range (as the chain's
#: PRODUCT_EXPONENT_BOUND).
PRODUCT_EXPONENT_BOUND = 600.0


@compiled()
def _scatter_pair_rows(data, indices, indptr, binary, pair_ptr, pair_labels, parents, lo, hi,
                       links_only, rows, expected):
    """``expected[p] += value * rows[r, label of p]`` over tokens lo + r (non-roots only if
    ``links_only``)."""
    for r in range(hi - lo):
        if links_only and parents[lo + r] < 0:
            continue
        for k in range(indptr[lo + r], indptr[lo + r + 1]):
            value = 1.0 if binary else data[k]
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                expected[p] += value * rows[r, pair_labels[p]]


@compiled()
def _multiply_pair_factors(data, indices, indptr, binary, pair_ptr, pair_labels, exp_pairs,
                           pair_weights, parents, lo, hi, rows):
    """``rows[r, label of p] *= exp(value * w_p)`` over the link features of the non-roots."""
    for r in range(hi - lo):
        if parents[lo + r] < 0:
            continue
        for k in range(indptr[lo + r], indptr[lo + r + 1]):
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                if binary:
                    rows[r, pair_labels[p]] *= exp_pairs[p]
                else:
                    rows[r, pair_labels[p]] *= np.exp(data[k] * pair_weights[p])


@compiled()
def _most_link_entries(indices, indptr, pair_ptr):
    """The most entries of features with link pairs any token has."""
    most = 0
    for t in range(indptr.shape[0] - 1):
        count = 0
        for k in range(indptr[t], indptr[t + 1]):
            if pair_ptr[indices[k] + 1] > pair_ptr[indices[k]]:
                count += 1
        most = max(most, count)
    return most


def tree_edge_nll_terms(data, indices, indptr, binary, state_ptr, state_labels, state_weights,
                        edge_ptr, edge_labels, edge_weights, transitions, root, parents, offsets,
                        n_chunks):
    """log Z and the expected counts of every block, in one pass over the tokens.

    State pairs are (feature, class); edge pairs (feature, label pair
    ``a * n_classes + b``) of the child's features, in the layout of
    :class:`~skcrf.structures._parameters.StatePairs`. Each chunk of forests
    sums its counts on its own and the chunks are added in order, so the
    result does not depend on the thread count.

    A link's block of exponentials is ``exp(T - max T)`` times the
    exponentials of its link features' weights (their products, computed
    once per call), not ``n_classes ** 2`` exponentials per link, unless
    some weight is large enough for the products to leave float64's range
    (:data:`PRODUCT_EXPONENT_BOUND`) or ``T`` forbids a pair.

    Returns
    -------
    log_z : (n_sequences,) float64
    expected_state : (n_state_pairs,) float64
    expected_edge : (n_edge_pairs,) float64
    link_counts : (n_classes, n_classes) float64
    root_counts : (n_classes,) float64
    """
    n_classes = transitions.shape[0]
    parents, offsets = read_only(parents, offsets)
    n_sequences = offsets.shape[0] - 1
    bounds = chunk_bounds(offsets, n_chunks)
    log_z = np.zeros(n_sequences)
    state_partial, edge_partial, chunk_counts, chunk_root = chunk_partials(
        n_chunks, state_labels.shape, edge_labels.shape, (n_classes, n_classes), (n_classes,))
    root_shift, exp_root, root_forbidden = root_factors(root)
    largest = float(np.abs(edge_weights).max(initial=0.0))
    trans_max = float(transitions.max())
    by_products = bool(np.isfinite(transitions).all() and largest * _most_link_entries(
        indices, indptr, edge_ptr) < PRODUCT_EXPONENT_BOUND)
    exp_trans = np.exp(transitions - trans_max) if by_products else transitions[:0]
    exp_pairs = np.exp(edge_weights) if by_products else edge_weights[:0]
    run_chunks(_tree_edge_nll_chunks, n_chunks, bounds, data, indices, indptr, binary,
               state_ptr, state_labels, state_weights, edge_ptr, edge_labels, edge_weights,
               transitions, root, root_shift, exp_root, root_forbidden, by_products, exp_trans,
               trans_max, exp_pairs, parents, offsets, log_z, state_partial, edge_partial,
               chunk_counts, chunk_root)
    return (log_z, *chunk_totals(state_partial, edge_partial, chunk_counts, chunk_root))


@compiled()
def _tree_edge_nll_chunks(chunk_lo, chunk_hi, bounds, data, indices, indptr, binary,
                          state_ptr, state_labels, state_weights, edge_ptr, edge_labels,
                          edge_weights, transitions, root, root_shift, exp_root,
                          root_forbidden, by_products, exp_trans, trans_max, exp_pairs, parents,
                          offsets, log_z, state_partial, edge_partial, chunk_counts,
                          chunk_root):
    """log Z and the chunks' partial counts of :func:`tree_edge_nll_terms`."""
    n_classes = transitions.shape[0]
    n_label_pairs = n_classes * n_classes
    for c in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        unary = np.empty((longest, n_classes))
        edges = np.empty((longest, n_classes, n_classes))
        exp_edges = np.empty((longest, n_classes, n_classes))
        edge_shift = np.zeros(longest)
        marginals = np.empty((longest, n_classes))
        pair_marginals = np.empty((longest, n_classes, n_classes))
        edge_rows = edges.reshape((longest, n_label_pairs))
        exp_rows = exp_edges.reshape((longest, n_label_pairs))
        pair_rows = pair_marginals.reshape((longest, n_label_pairs))
        work = tree_edge_workspace(longest, n_classes)
        child_ptr, children, order, cursor = work[4], work[5], work[6], work[7]
        counts = chunk_counts[c]
        for q in range(bounds[c], bounds[c + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            n = hi - lo
            if n == 0:
                continue
            local_parents = parents[lo:hi]
            for r in range(n):
                for a in range(n_classes):
                    unary[r, a] = 0.0
            _pair_rows(data, indices, indptr, binary, state_ptr, state_labels,
                           state_weights, lo, hi, unary)
            tree_layout(local_parents, np.int64(0), n, child_ptr, children, order, cursor)
            with_log_blocks = not by_products
            if by_products:
                for r in range(n):
                    edge_shift[r] = trans_max
                    for a in range(n_classes):
                        for b in range(n_classes):
                            exp_edges[r, a, b] = exp_trans[a, b]
                _multiply_pair_factors(data, indices, indptr, binary, edge_ptr, edge_labels,
                                       exp_pairs, edge_weights, parents, lo, hi, exp_rows)
            else:
                _link_log_blocks(data, indices, indptr, binary, edge_ptr, edge_labels,
                                 edge_weights, transitions, lo, hi, edges, edge_rows)
            value = np.nan
            if not root_forbidden and (by_products or exp_edge_blocks(
                    edges, np.int64(0), local_parents, np.int64(0), n, exp_edges,
                    edge_shift)):
                value = scaled_tree_edge_posteriors(
                    unary, exp_edges, edge_shift, exp_root, root_shift, local_parents,
                    np.int64(0), n, np.bool_(True), marginals, pair_marginals, np.int64(0),
                    work)
            if np.isnan(value):
                if not with_log_blocks:
                    _link_log_blocks(data, indices, indptr, binary, edge_ptr, edge_labels,
                                     edge_weights, transitions, lo, hi, edges, edge_rows)
                value = exact_tree_edge_posteriors(
                    unary, edges, np.int64(0), root, local_parents, np.int64(0), n,
                    np.bool_(True), marginals, pair_marginals, np.int64(0), work)
            log_z[q] = value
            if not np.isfinite(value):
                continue  # nothing was written; the loss is not finite anyway
            for v in range(n):
                if local_parents[v] < 0:
                    for j in range(n_classes):
                        chunk_root[c, j] += marginals[v, j]
                else:
                    for a in range(n_classes):
                        for b in range(n_classes):
                            counts[a, b] += pair_marginals[v, a, b]
            _scatter_pair_rows(data, indices, indptr, binary, state_ptr, state_labels, parents,
                               lo, hi, np.bool_(False), marginals, state_partial[c])
            _scatter_pair_rows(data, indices, indptr, binary, edge_ptr, edge_labels, parents,
                               lo, hi, np.bool_(True), pair_rows, edge_partial[c])


@compiled()
def _link_log_blocks(data, indices, indptr, binary, edge_ptr, edge_labels, edge_weights,
                     transitions, lo, hi, edges, edge_rows):
    """``edges[r] = T + the link features' weights`` of tokens lo + r (log space)."""
    n_classes = transitions.shape[0]
    for r in range(hi - lo):
        for a in range(n_classes):
            for b in range(n_classes):
                edges[r, a, b] = transitions[a, b]
    _pair_rows(data, indices, indptr, binary, edge_ptr, edge_labels, edge_weights, lo, hi,
                   edge_rows)
