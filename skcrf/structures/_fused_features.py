"""The per-token feature helpers every fused training kernel shares.

A fused kernel (the chain's, the pattern chain's, the semi-Markov CRF's, the
tree's) reads each token's features in two parts: its frequent features as
slots of dense rows of all labels, its other features through their (feature,
label) pairs (:func:`cold_pairs_by_token`). These helpers build a token's
unary scores or exponentiated factors from them, scatter its marginals back
onto the pairs, and sum the chunks' partial sums at the end, in an order fixed
by the data.
"""

import numpy as np

from ..inference._runtime.batch import compiled, row_chunk_count, run_chunks


#: The fused kernels' exponentiated-weight route (:func:`product_factors`) runs
#: while every weight magnitude times the most entries of a token stays below
#: this: no product of a token's factors then leaves float64's normal range
#: (exp(+-708)).
PRODUCT_EXPONENT_BOUND = 600.0


@compiled()
def cold_pairs_by_token(data, indices, indptr, binary, hot_slot, pair_ptr, pair_labels):
    """The (feature, label) pairs of each token's infrequent features, in token order.

    Returns ``(cold_ptr, cold_pairs, cold_labels, cold_values)``: token
    ``t``'s pairs are ``cold_pairs[cold_ptr[t]:cold_ptr[t + 1]]``, in the
    order of its row's infrequent features (``hot_slot[f] < 0``) and of each
    feature's pairs, with their labels and their entry's value
    (``cold_values`` is empty when ``binary``). Read by the kernels as one
    stream, they cost one gather per pair, where the feature's pair list
    cost two dependent ones (its bounds, then its pairs).
    """
    n_tokens = indptr.shape[0] - 1
    cold_ptr = np.empty(n_tokens + 1, np.int64)
    cold_ptr[0] = 0
    for t in range(n_tokens):
        count = 0
        for k in range(indptr[t], indptr[t + 1]):
            f = indices[k]
            if hot_slot[f] < 0:
                count += pair_ptr[f + 1] - pair_ptr[f]
        cold_ptr[t + 1] = cold_ptr[t] + count
    n_cold = cold_ptr[n_tokens]
    cold_pairs = np.empty(n_cold, np.int32)
    cold_labels = np.empty(n_cold, np.int32)
    cold_values = np.empty(0 if binary else n_cold)
    at = 0
    for k in range(indices.shape[0]):
        f = indices[k]
        if hot_slot[f] >= 0:
            continue
        for p in range(pair_ptr[f], pair_ptr[f + 1]):
            cold_pairs[at] = p
            cold_labels[at] = pair_labels[p]
            if not binary:
                cold_values[at] = data[k]
            at += 1
    return cold_ptr, cold_pairs, cold_labels, cold_values


@compiled()
def sequence_unary(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                   cold_values, binary, hot_state, pair_weights, lo, hi, unary):
    """Unary scores of tokens lo..hi-1 into ``unary[: hi - lo]``.

    The entries are slots (frequent features and merged slots of
    :mod:`._merged_slots`): each adds its row of the dense
    ``hot_state``, a loop that vectorizes; the infrequent features add their
    pairs' weights one by one (:func:`cold_pairs_by_token`).
    """
    n_classes = unary.shape[1]
    for r in range(hi - lo):
        t = lo + r
        row = unary[r]
        for j in range(n_classes):
            row[j] = 0.0
        for k in range(hot_ptr[t], hot_ptr[t + 1]):
            value = 1.0 if binary else values[k]
            hot = hot_state[entries[k]]
            for j in range(n_classes):
                row[j] += value * hot[j]
        for i in range(cold_ptr[t], cold_ptr[t + 1]):
            value = 1.0 if binary else cold_values[i]
            row[cold_labels[i]] += value * pair_weights[cold_pairs[i]]


@compiled()
def sequence_emission(entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, exp_hot,
                      exp_pairs, lo, hi, emission):
    """``exp(unary)`` of binary tokens lo..hi-1, each row scaled to max 1, into ``emission``.

    Each row is the product of the exponentiated weights of the token's pairs
    (``exp_hot`` and ``exp_pairs``): a binary token's score is a sum of
    weights, so its exponential is their product, with no exponential per
    token and label. The caller keeps every product in float64's normal range
    (:data:`PRODUCT_EXPONENT_BOUND`). Returns the sum of the logarithms of
    the rows' maxima, the shift the scaled pass adds to log Z.
    """
    n_classes = emission.shape[1]
    log_scale = 0.0
    for r in range(hi - lo):
        t = lo + r
        row = emission[r]
        for j in range(n_classes):
            row[j] = 1.0
        for k in range(hot_ptr[t], hot_ptr[t + 1]):
            hot = exp_hot[entries[k]]
            for j in range(n_classes):
                row[j] *= hot[j]
        for i in range(cold_ptr[t], cold_ptr[t + 1]):
            row[cold_labels[i]] *= exp_pairs[cold_pairs[i]]
        top = row[0]
        for j in range(1, n_classes):
            top = max(top, row[j])
        scale = 1.0 / top
        for j in range(n_classes):
            row[j] *= scale
        log_scale += np.log(top)
    return log_scale


@compiled()
def scatter_expected(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                     cold_values, binary, lo, hi, marginals, hot_expected, expected):
    """Add feature value times marginal over tokens lo..hi-1 to the expected counts.

    The entries are slots (frequent features and merged slots): each goes
    to its dense row of ``hot_expected`` (every label), and the infrequent
    features to their pairs in ``expected`` (:func:`cold_pairs_by_token`). A
    merged slot's row is spread over its parts afterwards
    (:func:`summed_pair_partials`).
    """
    n_classes = marginals.shape[1]
    for r in range(hi - lo):
        t = lo + r
        row = marginals[r]
        for k in range(hot_ptr[t], hot_ptr[t + 1]):
            value = 1.0 if binary else values[k]
            hot = hot_expected[entries[k]]
            for j in range(n_classes):
                hot[j] += value * row[j]
        for i in range(cold_ptr[t], cold_ptr[t + 1]):
            value = 1.0 if binary else cold_values[i]
            expected[cold_pairs[i]] += value * row[cold_labels[i]]


@compiled()
def hot_state_rows(hot_features, merged_parts, pair_ptr, pair_labels, pair_weights, n_classes):
    """(n_slots, n_classes) dense state weights of the slots, 0 for absent pairs.

    The first rows are those of the frequent features ``hot_features``; each
    merged slot's row is the sum of its parts' rows (``merged_parts``, in
    order of creation, so the parts' rows are ready).
    """
    n_hot = hot_features.shape[0]
    hot_state = np.zeros((n_hot + merged_parts.shape[0], n_classes))
    for slot in range(n_hot):
        f = hot_features[slot]
        for p in range(pair_ptr[f], pair_ptr[f + 1]):
            hot_state[slot, pair_labels[p]] = pair_weights[p]
    for m in range(merged_parts.shape[0]):
        row = hot_state[n_hot + m]
        a = hot_state[merged_parts[m, 0]]
        b = hot_state[merged_parts[m, 1]]
        for j in range(n_classes):
            row[j] = a[j] + b[j]
    return hot_state


def product_factors(binary, max_entries, pair_weights, hot_state, merged_parts):
    """Whether the products route holds, and its exponentiated weights if it does.

    Returns ``(by_products, exp_hot, exp_pairs)``: with binary features and
    every weight magnitude times the most entries of a token below
    :data:`PRODUCT_EXPONENT_BOUND` (no product of a token's factors can then
    leave float64's normal range), the exponentials of the slots' rows and of
    the pairs' weights; else False and empty arrays. NaN weights fail the
    test: the summed route then reports them.
    """
    largest = float(np.max(np.abs(pair_weights), initial=0.0))
    if not (bool(binary) and largest * max_entries < PRODUCT_EXPONENT_BOUND):
        return False, hot_state[:0], pair_weights[:0]
    return True, exp_slot_rows(hot_state, merged_parts), np.exp(pair_weights)


@compiled()
def exp_slot_rows(hot_state, merged_parts):
    """``exp`` of the slots' rows; a merged slot's is the product of its parts' (no exp)."""
    n_hot = hot_state.shape[0] - merged_parts.shape[0]
    exp_hot = np.empty_like(hot_state)
    for slot in range(n_hot):
        for j in range(hot_state.shape[1]):
            exp_hot[slot, j] = np.exp(hot_state[slot, j])
    for m in range(merged_parts.shape[0]):
        row = exp_hot[n_hot + m]
        a = exp_hot[merged_parts[m, 0]]
        b = exp_hot[merged_parts[m, 1]]
        for j in range(row.shape[0]):
            row[j] = a[j] * b[j]
    return exp_hot


def summed_pair_partials(partial, hot_partial, hot_features, merged_parts, pair_ptr,
                         pair_labels):
    """(n_pairs,) expected pair counts: the chunks' partial sums, added in chunk order.

    ``partial`` (n_chunks, n_pairs) holds the sums of the other features'
    pairs, ``hot_partial`` (n_chunks, n_slots, n_classes) those of the slots
    as dense rows; each chunk's merged rows are first added to their parts',
    newest first (``hot_partial`` is overwritten). Added in chunk order,
    whatever the thread count.
    """
    n_chunks, n_pairs = partial.shape
    run_chunks(_spread_merged_rows, n_chunks, hot_partial, hot_features.shape[0], merged_parts)
    expected_pairs = np.empty(n_pairs)
    # the frequent features' pairs are overwritten by their dense rows' sums:
    # that pass starts once the first has finished
    for rows, hot in ((n_pairs, False), (hot_features.shape[0], True)):
        n_row_chunks = row_chunk_count(rows)
        run_chunks(_summed_pair_rows, n_row_chunks, n_row_chunks, hot, partial, hot_partial,
                   hot_features, pair_ptr, pair_labels, expected_pairs)
    return expected_pairs


@compiled()
def _spread_merged_rows(chunk_lo, chunk_hi, hot_partial, n_hot, merged_parts):
    """Add each chunk's merged rows to their parts' rows, newest first."""
    for c in range(chunk_lo, chunk_hi):
        for m in range(merged_parts.shape[0] - 1, -1, -1):
            row = hot_partial[c, n_hot + m]
            a = hot_partial[c, merged_parts[m, 0]]
            b = hot_partial[c, merged_parts[m, 1]]
            for j in range(row.shape[0]):
                a[j] += row[j]
                b[j] += row[j]


@compiled()
def _summed_pair_rows(chunk_lo, chunk_hi, n_row_chunks, hot, partial, hot_partial,
                      hot_features, pair_ptr, pair_labels, expected_pairs):
    """The chunk sums of the pairs (``hot`` false) or of the frequent features' pairs.

    Row chunk ``k`` covers its share of the pairs, or of the frequent
    features, whose pairs get the sums of their dense rows.
    """
    n_chunks, n_pairs = partial.shape
    n_hot = hot_features.shape[0]
    for k in range(chunk_lo, chunk_hi):
        if not hot:
            for p in range((n_pairs * k) // n_row_chunks,
                           (n_pairs * (k + 1)) // n_row_chunks):
                total = partial[0, p]
                for c in range(1, n_chunks):
                    total += partial[c, p]
                expected_pairs[p] = total
            continue
        for slot in range((n_hot * k) // n_row_chunks, (n_hot * (k + 1)) // n_row_chunks):
            f = hot_features[slot]
            for p in range(pair_ptr[f], pair_ptr[f + 1]):
                j = pair_labels[p]
                total = hot_partial[0, slot, j]
                for c in range(1, n_chunks):
                    total += hot_partial[c, slot, j]
                expected_pairs[p] = total



@compiled()
def clear_chunk_sums(c, partial, hot_partial):
    """Zero chunk ``c``'s rows of the partial sums (the first route of a call does)."""
    chunk_partial = partial[c]
    for p in range(chunk_partial.shape[0]):
        chunk_partial[p] = 0.0
    chunk_hot_partial = hot_partial[c]
    for s in range(chunk_hot_partial.shape[0]):
        row = chunk_hot_partial[s]
        for j in range(row.shape[0]):
            row[j] = 0.0
