"""The chain's fused training kernel: features x weights, inference and scatter in one pass.

Training never holds a (n_tokens, n_classes) array: per sequence, the unary
scores and then the marginals live in per-chunk scratch rows. Tested against
the unfused path (potentials, :func:`~skcrf.inference.chain.order1.forward_backward`,
scatter) on random problems.
"""

import numpy as np

from ...features._kernels import column_counts, remap_columns
from ...inference._runtime.batch import N_CHUNKS, chunk_bounds, compiled, longest_sequence, run_chunks
from ...inference.chain._order1_lanes import (LANE_MAX, LANE_MAX_CLASSES, LANE_VECTOR, LanePlans,
                                      lane_forward_backward, lane_workspace)
from ...inference._potentials import chain_scaled_potentials, shifted_exp_by_column_and_row
from ...inference.chain.order1 import (chain_workspace, log_space_sequence, scaled_from_emission,
                               scaled_sequence)
from .._fused_features import (clear_chunk_sums, cold_pairs_by_token, hot_state_rows,
                              product_factors, scatter_expected, sequence_emission,
                              sequence_unary, summed_pair_partials)
from .._merged_slots import merge_frequent_pairs

#: Memory bounds of :func:`nll_terms`, in float64 values. Each chunk of
#: sequences keeps a partial sum of the expected counts of every pair and of
#: every transition, so the number of chunks is LOSS_PAIR_BUDGET //
#: (n_pairs + n_classes ** 2) (2 MiB in all), but at
#: least MIN_LOSS_CHUNKS, for the threads to share, and at most N_CHUNKS and
#: the number of sequences (see :func:`fused_layout`): past 65k pairs the partial
#: sums take MIN_LOSS_CHUNKS * n_pairs values (32 bytes a pair), and at most 4
#: threads share the loss. There is also a dense (n_hot, n_classes) partial sum
#: for the most frequent features, with n_hot up to LOSS_HOT_BUDGET //
#: (n_chunks * n_classes) (1 MiB in all), and with binary features up to
#: MERGED_SLOTS_PER_HOT rows per frequent feature for merged pairs of them
#: (:mod:`._merged_slots`; 2 MiB more at most). On esp.train (96k pairs,
#: 9 labels): 4 chunks, 3640 frequent features carrying 92% of the non-zeros
#: and 7280 merged slots, 6 MiB, against 19 MiB for one (n_tokens, n_classes)
#: array.
LOSS_PAIR_BUDGET = 1 << 18
LOSS_HOT_BUDGET = 1 << 17
MIN_LOSS_CHUNKS = 4
MERGED_SLOTS_PER_HOT = 2


def nll_terms(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
              binary, max_entries, pair_ptr, pair_labels, pair_weights, transitions, start, end,
              offsets, hot_features, merged_parts, partial, hot_partial, plans=None,
              dense_rows=None):
    """Everything the CRF loss needs from the features, in one pass over the tokens.

    The features come in two parts. Token ``t``'s frequent features are
    slots ``entries[hot_ptr[t]:hot_ptr[t + 1]]`` (``hot_slot`` applied to its row)
    with their ``values`` (with ``binary`` every value is 1 and ``values`` is
    not read); slot ``s`` < n_hot is feature ``hot_features[s]``, and slot
    ``n_hot + m`` the merged slot that stands for the two slots
    ``merged_parts[m]`` (:mod:`._merged_slots`; binary features only). Its
    infrequent features are read as the pairs of :func:`cold_pairs_by_token`
    (``cold_ptr``...). A token has at most ``max_entries`` features. State weights exist
    for (feature, label) pairs only: feature ``f`` owns pairs
    ``pair_ptr[f]:pair_ptr[f + 1]``, pair ``p`` has label ``pair_labels[p]`` and
    weight ``pair_weights[p]``. The sequences are split into ``n_chunks``
    chunks of similar token counts, given by the workspace: ``partial``
    (n_chunks, n_pairs) and ``hot_partial`` (n_chunks, n_slots, n_classes) are
    overwritten with each chunk's partial sums. The caller allocates them once
    for all calls: reallocated per call, these few MiB left as many free
    between the solver's arrays for the allocator to keep.

    Per sequence, the unary scores and then the marginals live in per-chunk
    scratch rows, never in (n_tokens, n_classes) arrays. Each chunk sums the
    expected pair counts of its sequences on its own, so the result does not
    depend on the thread count. The frequent features carry most non-zeros;
    their slots are handled as dense rows of all labels, which vectorizes,
    and the others through their pair lists, which are compact but slower
    per non-zero. A merged slot's row is built once per call from its parts'
    (their sum, or the product of their exponentials), and its expected
    counts are added to its parts' at the end.

    Three routes, each a kernel of its own, compiled only when some call
    takes it:

    - the products route (:func:`_product_chunks`): with binary features and
      moderate weights, each token's ``exp(unary)`` is the product of its
      exponentiated weights (:func:`sequence_emission`): one exponential per
      weight per evaluation instead of one per token and label. With few
      labels and no ``-inf`` potential, the sequences of one length run side
      by side, as lanes
      (:func:`~skcrf.inference.chain._order1_lanes.lane_forward_backward`), in the
      order of ``plans`` (:class:`~skcrf.inference.chain._order1_lanes.LanePlan`, fixed by the data);
    - the summed route (:func:`_summed_chunks`): the unary scores summed and
      exponentiated, for every sequence when the products route does not
      hold, else for those whose products pass failed its precision checks;
    - the exact route (:func:`_exact_chunks`): log space, for the sequences
      the summed route could not do.

    Each chunk adds its sequences' sums route by route, in an order fixed by
    the data, so the result does not depend on the thread count.

    ``dense_rows``, a C-contiguous float64 (n_tokens, n_classes) array, adds
    its rows to the tokens' unary scores (a dense block's ``X_dense @ W.T``,
    :mod:`.dense`) and is overwritten with the token marginals, which the
    dense weights' gradient multiplies by the block (all zero for a
    sequence whose log Z is not finite). On the products route each token's
    row of products is multiplied by the exponentials of its dense scores
    (:func:`add_dense_factors`): one exponential per token and label, which
    the summed route pays anyway. Without it the kernels get an empty array
    of the same type, so no route compiles twice.

    Returns
    -------
    log_z : (n_sequences,) float64
        As :func:`forward_backward`; NaN or inf where the scores overflow.
    expected_pairs : (n_pairs,) float64
        Expected value of each pair feature (its feature value where the token
        has its label), summed over all tokens.
    transition_counts : (n_classes, n_classes) float64
    start_counts, end_counts : (n_classes,) float64
        Expected number of sequences that start / end with each label.
    """
    n_classes = transitions.shape[0]
    n_sequences = offsets.shape[0] - 1
    n_chunks = partial.shape[0]
    bounds = chunk_bounds(offsets, n_chunks)
    if plans is None:
        plans = LanePlans(offsets, bounds, n_classes)
    hot_state = hot_state_rows(hot_features, merged_parts, pair_ptr, pair_labels, pair_weights,
                               n_classes)
    scaled = chain_scaled_potentials(transitions, start, end)
    log_z = np.zeros(n_sequences)
    chunk_counts = np.zeros((n_chunks, n_classes, n_classes))
    chunk_start = np.zeros((n_chunks, n_classes))
    chunk_end = np.zeros((n_chunks, n_classes))
    sums = (log_z, partial, hot_partial, chunk_counts, chunk_start, chunk_end)
    features = (values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                binary)
    by_products, exp_hot, exp_pairs = product_factors(binary, max_entries, pair_weights,
                                                      hot_state, merged_parts)
    if dense_rows is None:
        dense_rows = np.empty((0, n_classes))
    redo = np.ones(n_sequences, np.bool_)
    if by_products:
        if not scaled[-1] and n_classes <= LANE_MAX_CLASSES:
            run_chunks(_lane_chunks, n_chunks, bounds, offsets, *plans.grouped().kernel_args(),
                       features, exp_hot, exp_pairs, dense_rows, scaled, redo, *sums)
        else:
            run_chunks(_product_chunks, n_chunks, bounds, offsets, features, exp_hot,
                       exp_pairs, dense_rows, transitions, start, end, scaled, redo, *sums)
    exact = np.zeros(n_sequences, np.bool_)
    if redo.any():
        run_chunks(_summed_chunks, n_chunks, bounds, offsets, features, hot_state,
                   pair_weights, dense_rows, transitions, start, end, scaled, redo,
                   not by_products, exact, *sums)
    if exact.any():
        run_chunks(_exact_chunks, n_chunks, bounds, offsets, features, hot_state,
                   pair_weights, dense_rows, transitions, start, end,
                   shifted_exp_by_column_and_row(transitions), exact, *sums)

    expected_pairs = summed_pair_partials(partial, hot_partial, hot_features, merged_parts,
                                          pair_ptr, pair_labels)
    transition_counts = np.zeros((n_classes, n_classes))
    start_counts = np.zeros(n_classes)
    end_counts = np.zeros(n_classes)
    for c in range(n_chunks):
        transition_counts += chunk_counts[c]
        start_counts += chunk_start[c]
        end_counts += chunk_end[c]
    return log_z, expected_pairs, transition_counts, start_counts, end_counts


@compiled(inline=True)
def _add_sequence(c, lo, hi, rows, features, partial, hot_partial, chunk_start, chunk_end):
    """Add a sequence's boundary marginals and expected pair counts to chunk c's sums."""
    values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values, binary = features
    n = hi - lo
    starts = chunk_start[c]
    ends = chunk_end[c]
    for j in range(starts.shape[0]):
        starts[j] += rows[0, j]
        ends[j] += rows[n - 1, j]
    scatter_expected(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                     cold_values, binary, lo, hi, rows, hot_partial[c], partial[c])


@compiled(inline=True)
def _chunk_workspace(c, offsets, bounds, partial, hot_partial, n_classes):
    """Clear chunk c's partial sums; return its longest sequence's length, marginal
    rows, and the scaled pass's workspace ``(alpha, beta, emission, norm, reach,
    scratch)``."""
    clear_chunk_sums(c, partial, hot_partial)
    longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
    # typed constants (np.bool_), not literals: see inference._batch.compiled
    alpha, beta, emission, norm, reach, _, _, scratch = chain_workspace(
        longest, n_classes, np.bool_(False))
    return longest, np.empty((longest, n_classes)), (alpha, beta, emission, norm, reach,
                                                     scratch)


@compiled(inline=True)
def _sequence_done(c, q, lo, hi, lz, marginals, features, dense_rows, log_z, partial,
                   hot_partial, chunk_start, chunk_end):
    """Record sequence q's log Z and, when finite, add its marginals to chunk c's sums
    (and store them in ``dense_rows``); else no marginals were written (the loss is not
    finite anyway)."""
    log_z[q] = lz
    store_marginals(dense_rows, lo, hi, marginals, np.isfinite(lz))
    if np.isfinite(lz):
        _add_sequence(c, lo, hi, marginals, features, partial, hot_partial, chunk_start,
                      chunk_end)


@compiled(inline=True)
def token_unary(features, hot_state, pair_weights, dense_rows, lo, hi, unary):
    """Unary scores of tokens lo..hi-1 into ``unary``: the features' (:func:`sequence_unary`)
    plus, when ``dense_rows`` has rows, theirs (see :func:`nll_terms`)."""
    values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values, binary = features
    sequence_unary(values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values,
                   binary, hot_state, pair_weights, lo, hi, unary)
    if dense_rows.shape[0]:
        for r in range(hi - lo):
            for j in range(unary.shape[1]):
                unary[r, j] += dense_rows[lo + r, j]


@compiled(inline=True)
def add_dense_factors(dense_rows, lo, hi, emission):
    """Multiply the products route's rows of tokens lo..hi-1 by ``exp(dense_rows)``.

    Each row is rescaled to max 1 again; returns the sum of the logarithms of
    the factors taken out, which the pass adds to log Z (0 without dense
    rows). A row that underflows entirely returns NaN: the sequence is then
    left to the summed route, as a failed precision check is.
    """
    if not dense_rows.shape[0]:
        return 0.0
    log_scale = 0.0
    for r in range(hi - lo):
        scores = dense_rows[lo + r]
        row = emission[r]
        shift = scores[0]
        for j in range(1, row.shape[0]):
            shift = max(shift, scores[j])
        top = 0.0
        for j in range(row.shape[0]):
            row[j] *= np.exp(scores[j] - shift)
            top = max(top, row[j])
        if not top > 0.0:
            return np.nan
        scale = 1.0 / top
        for j in range(row.shape[0]):
            row[j] *= scale
        log_scale += shift + np.log(top)
    return log_scale


@compiled(inline=True)
def store_marginals(dense_rows, lo, hi, marginals, found):
    """Tokens lo..hi-1's marginals into ``dense_rows`` (zeros unless ``found``), when it
    has rows: what the dense weights' gradient reads (see :func:`nll_terms`)."""
    if dense_rows.shape[0]:
        for r in range(hi - lo):
            for j in range(dense_rows.shape[1]):
                dense_rows[lo + r, j] = marginals[r, j] if found else 0.0


@compiled()
def _lane_chunks(chunk_lo, chunk_hi, bounds, offsets, order, group_ends, chunk_groups,
                 lane_longest, features, exp_hot, exp_pairs, dense_rows, scaled, redo, log_z,
                 partial, hot_partial, chunk_counts, chunk_start, chunk_end):
    """The products route of :func:`nll_terms` as lanes, for the chunks' sequences.

    Each group of sequences of one length runs as lanes (a group of one too,
    in a workspace of :data:`~skcrf.inference.chain._order1_lanes.LANE_VECTOR`
    lanes: the padding makes it about as costly as the one-sequence pass).
    Clears the chunks' partial sums first. A sequence whose lane fails the
    precision checks is left to the summed route: ``redo[q]`` stays True (it
    is set False for every sequence done here) and nothing of it is added.
    """
    n_classes = scaled[1].shape[0]
    for c in range(chunk_lo, chunk_hi):
        clear_chunk_sums(c, partial, hot_partial)
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        groups = _lane_scratch(lane_longest[c], n_classes, LANE_MAX)
        singles = _lane_scratch(longest, n_classes, LANE_VECTOR)
        first = bounds[c]
        for g in range(chunk_groups[c], chunk_groups[c + 1]):
            m = group_ends[g] - first
            _lane_group(c, order[first:first + m], offsets, features, exp_hot, exp_pairs,
                        dense_rows, scaled, groups if m > 1 else singles, redo, log_z,
                        partial, hot_partial, chunk_counts, chunk_start, chunk_end)
            first = group_ends[g]


@compiled(inline=True)
def _lane_scratch(n_rows, n_classes, n_lanes):
    """The lanes' workspace, and each lane's rows in the sequence's own layout."""
    return (lane_workspace(n_rows, n_classes, n_lanes),
            np.empty((n_lanes if n_rows else 0, n_rows, n_classes)))


@compiled(inline=True)
def _lane_group(c, group, offsets, features, exp_hot, exp_pairs, dense_rows, scaled, scratch,
                redo, log_z, partial, hot_partial, chunk_counts, chunk_start, chunk_end):
    """The sequences ``group`` (of one length) side by side, each lane as the pass of one."""
    values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values, binary = features
    (trans_max, exp_trans, exp_trans_t, start_max, exp_start, end_max, exp_end,
     any_forbidden) = scaled
    lanes, lane_rows = scratch
    lane_emission, lane_alpha, lane_beta, _, _, _, lane_counts, lane_log_z = lanes
    n_classes = exp_trans.shape[0]
    m = group.shape[0]
    n = offsets[group[0] + 1] - offsets[group[0]]
    if n == 0:
        for lane in range(m):
            redo[group[lane]] = False
        return
    # each lane's rows, one sequence after another: its emission, then its
    # marginals; moved to and from the lanes' layout a whole group at a time,
    # with one side of every copy contiguous
    for lane in range(m):
        lo = offsets[group[lane]]
        log_scale = sequence_emission(entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                                      exp_hot, exp_pairs, lo, lo + n, lane_rows[lane])
        log_scale += add_dense_factors(dense_rows, lo, lo + n, lane_rows[lane])
        lane_log_z[lane] = log_scale + start_max + end_max + (n - 1) * trans_max
    for r in range(n):
        for j in range(n_classes):
            row = lane_emission[r, j]
            for lane in range(m):
                row[lane] = lane_rows[lane, r, j]
    lane_forward_backward(exp_trans, exp_start, exp_end, n, m, lanes, np.bool_(True))
    for r in range(n):
        for j in range(n_classes):
            a = lane_alpha[r, j]
            b = lane_beta[r, j]
            for lane in range(m):
                lane_rows[lane, r, j] = a[lane] * b[lane]
    counts = chunk_counts[c]
    for lane in range(m):
        q = group[lane]
        lz = lane_log_z[lane]
        if np.isnan(lz):
            continue
        redo[q] = False
        log_z[q] = lz
        store_marginals(dense_rows, offsets[q], offsets[q + 1], lane_rows[lane],
                        np.isfinite(lz))
        if not np.isfinite(lz):
            continue  # no marginals were written (the loss is not finite anyway)
        for i in range(n_classes):
            for j in range(n_classes):
                counts[i, j] += lane_counts[i, j, lane]
        _add_sequence(c, offsets[q], offsets[q + 1], lane_rows[lane], features, partial,
                      hot_partial, chunk_start, chunk_end)


@compiled()
def _product_chunks(chunk_lo, chunk_hi, bounds, offsets, features, exp_hot, exp_pairs,
                    dense_rows, transitions, start, end, scaled, redo, log_z, partial,
                    hot_partial, chunk_counts, chunk_start, chunk_end):
    """The products route of :func:`nll_terms` one sequence at a time (many labels, or
    ``-inf`` potentials, where the lanes do not apply).

    Clears the chunks' partial sums first. A sequence whose pass fails the
    precision checks is left to the summed route: ``redo[q]`` stays True (it
    is set False for every sequence done here) and nothing of it is added.
    """
    values, entries, hot_ptr, cold_ptr, cold_pairs, cold_labels, cold_values, binary = features
    n_classes = transitions.shape[0]
    (trans_max, exp_trans, exp_trans_t, start_max, exp_start, end_max, exp_end,
     any_forbidden) = scaled
    for c in range(chunk_lo, chunk_hi):
        _, marginals, workspace = _chunk_workspace(c, offsets, bounds, partial, hot_partial,
                                                   n_classes)
        alpha, beta, emission, norm, reach, scratch = workspace
        for q in range(bounds[c], bounds[c + 1]):
            lo = offsets[q]
            hi = offsets[q + 1]
            n = hi - lo
            if n == 0:
                redo[q] = False
                continue
            log_scale = sequence_emission(entries, hot_ptr, cold_ptr, cold_pairs, cold_labels,
                                          exp_hot, exp_pairs, lo, hi, emission)
            log_scale += add_dense_factors(dense_rows, lo, hi, emission)
            # the emission rows stand in for the unary scores where the pass asks
            # whether a score is -inf: none is
            lz = scaled_from_emission(
                emission, transitions, start, end, np.int64(0), n, exp_trans, exp_trans_t,
                exp_start, exp_end, any_forbidden,
                log_scale + start_max + end_max + (n - 1) * trans_max, emission, alpha, beta,
                norm, reach, np.bool_(True), marginals, chunk_counts[c], scratch)
            if np.isnan(lz):
                continue
            redo[q] = False
            _sequence_done(c, q, lo, hi, lz, marginals, features, dense_rows, log_z, partial,
                           hot_partial, chunk_start, chunk_end)


@compiled()
def _summed_chunks(chunk_lo, chunk_hi, bounds, offsets, features, hot_state, pair_weights,
                   dense_rows, transitions, start, end, scaled, redo, first_route, exact, log_z,
                   partial, hot_partial, chunk_counts, chunk_start, chunk_end):
    """The summed route of :func:`nll_terms` for the chunks' sequences flagged in ``redo``.

    With ``first_route`` (no products route ran) it clears the chunks'
    partial sums first. A sequence whose scaled pass fails is flagged in
    ``exact`` for the exact route, with nothing of it added.
    """
    n_classes = transitions.shape[0]
    (trans_max, exp_trans, exp_trans_t, start_max, exp_start, end_max, exp_end,
     any_forbidden) = scaled
    for c in range(chunk_lo, chunk_hi):
        if first_route:
            clear_chunk_sums(c, partial, hot_partial)
        if not redo[bounds[c]:bounds[c + 1]].any():
            continue
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        unary = np.empty((longest, n_classes))
        marginals = np.empty((longest, n_classes))
        alpha, beta, emission, norm, reach, _, _, scratch = chain_workspace(
            longest, n_classes, np.bool_(False))
        for q in range(bounds[c], bounds[c + 1]):
            if not redo[q]:
                continue
            lo = offsets[q]
            hi = offsets[q + 1]
            n = hi - lo
            if n == 0:
                continue
            token_unary(features, hot_state, pair_weights, dense_rows, lo, hi, unary)
            lz = scaled_sequence(unary, transitions, start, end, np.int64(0), n, exp_trans,
                                 exp_trans_t, trans_max, exp_start, start_max, exp_end,
                                 end_max, any_forbidden, emission, alpha, beta, norm, reach,
                                 np.bool_(True), marginals, chunk_counts[c], scratch)
            if np.isnan(lz):
                exact[q] = True  # dense_rows keep its scores for the exact route
                continue
            _sequence_done(c, q, lo, hi, lz, marginals, features, dense_rows, log_z, partial,
                           hot_partial, chunk_start, chunk_end)


@compiled()
def _exact_chunks(chunk_lo, chunk_hi, bounds, offsets, features, hot_state, pair_weights,
                  dense_rows, transitions, start, end, shifted, exact, log_z, partial,
                  hot_partial, chunk_counts, chunk_start, chunk_end):
    """The exact (log-space) route of :func:`nll_terms` for the sequences flagged in ``exact``."""
    n_classes = transitions.shape[0]
    col_max, exp_by_col, row_max, exp_by_row = shifted
    for c in range(chunk_lo, chunk_hi):
        if not exact[bounds[c]:bounds[c + 1]].any():
            continue
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        unary = np.empty((longest, n_classes))
        marginals = np.empty((longest, n_classes))
        alpha, beta, shifted_rows, _, _, block, scaled, scratch = chain_workspace(
            longest, n_classes, np.bool_(True))
        for q in range(bounds[c], bounds[c + 1]):
            if not exact[q]:
                continue
            lo = offsets[q]
            hi = offsets[q + 1]
            n = hi - lo
            token_unary(features, hot_state, pair_weights, dense_rows, lo, hi, unary)
            lz = log_space_sequence(unary, transitions, start, end, np.int64(0), n, col_max,
                                    exp_by_col, row_max, exp_by_row, np.bool_(True), marginals,
                                    chunk_counts[c], alpha, beta, shifted_rows, block, scaled,
                                    scratch)
            _sequence_done(c, q, lo, hi, lz, marginals, features, dense_rows, log_z, partial,
                           hot_partial, chunk_start, chunk_end)


def fused_layout(features, offsets, n_pairs, n_classes):
    """How :func:`nll_terms` splits its work: data only, no threads.

    Returns the number of sequence chunks and the most frequent features
    (which get dense per-chunk rows), within the memory bounds set above.
    """
    n_sequences = offsets.shape[0] - 1
    # each chunk also keeps (n_classes, n_classes) transition counts: with many
    # classes they, not the pairs, bound the chunk count
    by_memory = LOSS_PAIR_BUDGET // max(n_pairs + n_classes * n_classes, 1)
    n_chunks = max(1, min(n_sequences, N_CHUNKS, max(MIN_LOSS_CHUNKS, by_memory)))
    n_hot = min(features.n_features, LOSS_HOT_BUDGET // (n_chunks * n_classes))
    frequency = column_counts(features.indices, features.n_features)
    hot_features = np.argsort(-frequency, kind="stable")[:n_hot]
    return n_chunks, hot_features.astype(np.int64)


class FusedChainTerms:
    """:func:`nll_terms` bound to one training set, with its workspace kept between calls.

    The partial sums are allocated once for all evaluations: reallocated per
    call, these few MiB left as many free between the solver's arrays for the
    allocator to keep.
    """

    def __init__(self, features, offsets, pairs, n_classes):
        self.features = features
        self.offsets = offsets
        self.pairs = pairs
        self.n_classes = n_classes
        self.n_chunks, hot_features = fused_layout(features, offsets, pairs.n_pairs,
                                                   n_classes)
        self.max_entries = int(np.diff(features.indptr).max(initial=0))
        self.plans = LanePlans(offsets, chunk_bounds(offsets, self.n_chunks), n_classes)
        self.use_hot_features(hot_features)
        self._workspace = None

    def use_hot_features(self, hot_features):
        """Give the features ``hot_features`` dense rows; arrange the entries for them.

        With binary features, the pairs of them many tokens share are merged
        (:func:`~._merged_slots.merge_frequent_pairs`), into at most
        :data:`MERGED_SLOTS_PER_HOT` merged slots per frequent feature.
        """
        features = self.features
        hot_slot = np.full(features.n_features, -1, dtype=np.int32)
        hot_slot[hot_features] = np.arange(hot_features.shape[0], dtype=np.int32)
        self.hot_features = np.asarray(hot_features, dtype=np.int64)
        # each token's frequent features alone, as slots, with their values
        data, indices, indptr, binary = features.kernel_args()
        self.values, hot_entries, hot_ptr = remap_columns(data, indices, indptr, hot_slot, binary)
        n_hot = self.hot_features.shape[0]
        if features.binary:
            hot_ptr, hot_entries, self.merged_parts = merge_frequent_pairs(
                hot_ptr, hot_entries, n_hot, MERGED_SLOTS_PER_HOT * n_hot)
        else:
            self.merged_parts = np.empty((0, 2), np.int64)
        self.hot_ptr, self.entries = hot_ptr, hot_entries
        self.cold = cold_pairs_by_token(*features.kernel_args(), hot_slot,
                                        self.pairs.feature_ptr, self.pairs.labels)

    @property
    def n_slots(self):
        """Dense rows per chunk: the frequent features and the merged slots."""
        return self.hot_features.shape[0] + self.merged_parts.shape[0]

    def kernel_args(self):
        """The features as the fused kernels read them (see :func:`nll_terms`)."""
        return (self.values, self.entries, self.hot_ptr, *self.cold, self.features.binary,
                np.float64(self.max_entries))

    def workspace(self):
        """The partial sums for the current layout, allocated on first use."""
        shapes = ((self.n_chunks, self.pairs.n_pairs),
                  (self.n_chunks, self.n_slots, self.n_classes))
        if self._workspace is None or [a.shape for a in self._workspace] != list(shapes):
            self._workspace = [np.empty(shape) for shape in shapes]
        return self._workspace

    def __call__(self, pair_weights, transitions, start, end, dense_rows=None):
        """(log_z, expected_pairs, transition_counts, start_counts, end_counts) at the weights.

        ``dense_rows`` as in :func:`nll_terms`: added unary scores, overwritten
        with the token marginals.
        """
        return nll_terms(*self.kernel_args(), self.pairs.feature_ptr, self.pairs.labels,
                         np.ascontiguousarray(pair_weights), np.ascontiguousarray(transitions),
                         np.ascontiguousarray(start), np.ascontiguousarray(end), self.offsets,
                         self.hot_features, self.merged_parts, *self.workspace(),
                         plans=self.plans, dense_rows=dense_rows)
