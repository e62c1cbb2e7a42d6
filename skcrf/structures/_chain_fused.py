"""The chain's fused training kernel: features x weights, inference and scatter in one pass.

Training never holds a (n_tokens, n_classes) array: per sequence, the unary
scores and then the marginals live in per-chunk scratch rows. Tested against
the unfused path (potentials, :func:`~skcrf.inference.chain.forward_backward`,
scatter) on random problems.
"""

import numpy as np
from numba import prange

from ..features._kernels import column_counts
from ..inference._batch import N_CHUNKS, chunk_bounds, compiled, longest_sequence
from ..inference.chain import chain_potentials, chain_workspace, sequence_posteriors

#: Memory bounds of :func:`nll_terms`, in float64 values. Each chunk of
#: sequences keeps a partial sum of the expected counts of every pair and of
#: every transition, so the number of chunks is LOSS_PAIR_BUDGET //
#: (n_pairs + n_classes ** 2) (2 MiB in all), but at
#: least MIN_LOSS_CHUNKS, for the threads to share, and at most N_CHUNKS and
#: the number of sequences (see :func:`fused_layout`): past 65k pairs the partial
#: sums take MIN_LOSS_CHUNKS * n_pairs values (32 bytes a pair), and at most 4
#: threads share the loss. There is also a dense (n_hot, n_classes) partial sum
#: for the most frequent features, with n_hot up to LOSS_HOT_BUDGET //
#: (n_chunks * n_classes) (1 MiB in all). On esp.train (96k pairs, 9 labels):
#: 4 chunks and 3640 frequent features carrying 92% of the non-zeros, 4 MiB,
#: against 19 MiB for one (n_tokens, n_classes) array.
LOSS_PAIR_BUDGET = 1 << 18
LOSS_HOT_BUDGET = 1 << 17
MIN_LOSS_CHUNKS = 4


@compiled()
def sequence_unary(data, indices, indptr, binary, hot_slot, hot_state, pair_ptr,
                   pair_labels, pair_weights, lo, hi, unary):
    """Unary scores of tokens lo..hi-1 into ``unary[: hi - lo]``.

    A frequent feature adds its row of the dense ``hot_state``, a loop that
    vectorizes; any other adds its pairs' weights one by one.
    """
    n_classes = unary.shape[1]
    for r in range(hi - lo):
        for j in range(n_classes):
            unary[r, j] = 0.0
        for k in range(indptr[lo + r], indptr[lo + r + 1]):
            col = indices[k]
            value = 1.0 if binary else data[k]
            slot = hot_slot[col]
            if slot >= 0:
                for j in range(n_classes):
                    unary[r, j] += value * hot_state[slot, j]
            else:
                for p in range(pair_ptr[col], pair_ptr[col + 1]):
                    unary[r, pair_labels[p]] += value * pair_weights[p]


@compiled()
def scatter_expected(data, indices, indptr, binary, hot_slot, pair_ptr, pair_labels, lo,
                     hi, marginals, hot_expected, expected):
    """Add feature value times marginal over tokens lo..hi-1 to the expected counts.

    Frequent features go to their dense row of ``hot_expected`` (every label),
    the others to their pairs in ``expected``.
    """
    n_classes = marginals.shape[1]
    for r in range(hi - lo):
        for k in range(indptr[lo + r], indptr[lo + r + 1]):
            col = indices[k]
            value = 1.0 if binary else data[k]
            slot = hot_slot[col]
            if slot >= 0:
                for j in range(n_classes):
                    hot_expected[slot, j] += value * marginals[r, j]
            else:
                for p in range(pair_ptr[col], pair_ptr[col + 1]):
                    expected[p] += value * marginals[r, pair_labels[p]]


@compiled()
def hot_state_rows(hot_features, pair_ptr, pair_labels, pair_weights, n_classes):
    """(n_hot, n_classes) dense state weights of the frequent features, 0 for absent pairs."""
    hot_state = np.zeros((hot_features.shape[0], n_classes))
    for slot in range(hot_features.shape[0]):
        f = hot_features[slot]
        for p in range(pair_ptr[f], pair_ptr[f + 1]):
            hot_state[slot, pair_labels[p]] = pair_weights[p]
    return hot_state


@compiled(parallel=True)
def summed_pair_partials(partial, hot_partial, hot_features, pair_ptr, pair_labels):
    """(n_pairs,) expected pair counts: the chunks' partial sums, added in chunk order.

    ``partial`` (n_chunks, n_pairs) holds the sums of the other features'
    pairs, ``hot_partial`` (n_chunks, n_hot, n_classes) those of the frequent
    features as dense rows. Added in chunk order, whatever the thread count.
    """
    n_chunks, n_pairs = partial.shape
    expected_pairs = np.empty(n_pairs)
    for p in prange(n_pairs):
        total = partial[0, p]
        for c in range(1, n_chunks):
            total += partial[c, p]
        expected_pairs[p] = total
    for slot in prange(hot_features.shape[0]):
        f = hot_features[slot]
        for p in range(pair_ptr[f], pair_ptr[f + 1]):
            j = pair_labels[p]
            total = hot_partial[0, slot, j]
            for c in range(1, n_chunks):
                total += hot_partial[c, slot, j]
            expected_pairs[p] = total
    return expected_pairs


@compiled(parallel=True)
def nll_terms(data, indices, indptr, binary, pair_ptr, pair_labels, pair_weights,
              transitions, start, end, offsets, hot_features, hot_slot, partial, hot_partial):
    """Everything the CRF loss needs from the features, in one pass over the tokens.

    The features are a CSR matrix (``data``, ``indices``, ``indptr``; with
    ``binary`` every value is 1 and ``data`` is not read). State weights exist
    for (feature, label) pairs only: feature ``f`` owns pairs
    ``pair_ptr[f]:pair_ptr[f + 1]``, pair ``p`` has label ``pair_labels[p]`` and
    weight ``pair_weights[p]``. The sequences are split into ``n_chunks``
    chunks of similar token counts, given by the workspace: ``partial``
    (n_chunks, n_pairs) and ``hot_partial`` (n_chunks, n_hot, n_classes) are
    overwritten with each chunk's partial sums. The caller allocates them once
    for all calls: reallocated per call, these few MiB left as many free
    between the solver's arrays for the allocator to keep.

    Per sequence, the unary scores and then the marginals live in per-chunk
    scratch rows, never in (n_tokens, n_classes) arrays. Each chunk sums the
    expected pair counts of its sequences on its own, so the result does not
    depend on the thread count. The frequent features ``hot_features``
    (``hot_slot[f]`` is the position of ``f`` among them, -1 for the others)
    carry most non-zeros; they are handled as dense rows of all labels, which
    vectorizes, and the others through their pair lists, which are compact
    but twice as slow per non-zero (measured on esp.train, one thread: 16 ms
    against 41 ms for all unary scores through the pair lists).

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
    hot_state = hot_state_rows(hot_features, pair_ptr, pair_labels, pair_weights, n_classes)
    potentials = chain_potentials(transitions, start, end)

    log_z = np.zeros(n_sequences)
    chunk_counts = np.zeros((n_chunks, n_classes, n_classes))
    chunk_start = np.zeros((n_chunks, n_classes))
    chunk_end = np.zeros((n_chunks, n_classes))

    for c in prange(n_chunks):
        partial[c] = 0.0
        hot_partial[c] = 0.0
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        unary = np.empty((longest, n_classes))
        marginals = np.empty((longest, n_classes))
        # typed constants (np.int64, np.bool_), not literals: the callees then
        # compile once, shared with forward_backward (see inference._batch.compiled)
        work = chain_workspace(longest, n_classes, np.bool_(True))
        for q in range(bounds[c], bounds[c + 1]):
            lo = offsets[q]
            hi = offsets[q + 1]
            n = hi - lo
            if n == 0:
                continue
            sequence_unary(data, indices, indptr, binary, hot_slot, hot_state, pair_ptr,
                            pair_labels, pair_weights, lo, hi, unary)
            lz = sequence_posteriors(unary, transitions, start, end, np.int64(0), n,
                                      potentials, np.bool_(True), marginals, chunk_counts[c], work)
            log_z[q] = lz
            if not np.isfinite(lz):
                # no marginals were written (the loss is not finite anyway)
                continue
            for j in range(n_classes):
                chunk_start[c, j] += marginals[0, j]
                chunk_end[c, j] += marginals[n - 1, j]
            scatter_expected(data, indices, indptr, binary, hot_slot, pair_ptr, pair_labels,
                              lo, hi, marginals, hot_partial[c], partial[c])

    expected_pairs = summed_pair_partials(partial, hot_partial, hot_features, pair_ptr,
                                          pair_labels)
    transition_counts = np.zeros((n_classes, n_classes))
    start_counts = np.zeros(n_classes)
    end_counts = np.zeros(n_classes)
    for c in range(n_chunks):
        transition_counts += chunk_counts[c]
        start_counts += chunk_start[c]
        end_counts += chunk_end[c]
    return log_z, expected_pairs, transition_counts, start_counts, end_counts



def fused_layout(features, offsets, n_pairs, n_classes):
    """How :func:`nll_terms` splits its work: data only, no threads.

    Returns the number of sequence chunks, the most frequent features (which
    get dense per-chunk rows) and each feature's slot among them (-1 if none),
    within the memory bounds set above.
    """
    n_sequences = offsets.shape[0] - 1
    # each chunk also keeps (n_classes, n_classes) transition counts: with many
    # classes they, not the pairs, bound the chunk count
    by_memory = LOSS_PAIR_BUDGET // max(n_pairs + n_classes * n_classes, 1)
    n_chunks = max(1, min(n_sequences, N_CHUNKS, max(MIN_LOSS_CHUNKS, by_memory)))
    n_hot = min(features.n_features, LOSS_HOT_BUDGET // (n_chunks * n_classes))
    frequency = column_counts(features.indices, features.n_features)
    hot_features = np.argsort(-frequency, kind="stable")[:n_hot]
    hot_slot = np.full(features.n_features, -1, dtype=np.int32)
    hot_slot[hot_features] = np.arange(n_hot, dtype=np.int32)
    return n_chunks, hot_features.astype(np.int64), hot_slot


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
        self.n_chunks, self.hot_features, self.hot_slot = fused_layout(
            features, offsets, pairs.n_pairs, n_classes)
        self._workspace = None

    def workspace(self):
        """The partial sums for the current layout, allocated on first use."""
        shapes = ((self.n_chunks, self.pairs.n_pairs),
                  (self.n_chunks, self.hot_features.shape[0], self.n_classes))
        if self._workspace is None or [a.shape for a in self._workspace] != list(shapes):
            self._workspace = [np.empty(shape) for shape in shapes]
        return self._workspace

    def __call__(self, pair_weights, transitions, start, end):
        """(log_z, expected_pairs, transition_counts, start_counts, end_counts) at the weights."""
        return nll_terms(*self.features.kernel_args(), self.pairs.feature_ptr,
                         self.pairs.labels, np.ascontiguousarray(pair_weights),
                         np.ascontiguousarray(transitions), np.ascontiguousarray(start),
                         np.ascontiguousarray(end), self.offsets, self.hot_features,
                         self.hot_slot, *self.workspace())
