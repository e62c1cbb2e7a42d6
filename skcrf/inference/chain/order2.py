"""Order-2 chain inference: forward-backward and Viterbi with label-trigram potentials.

The score of a labelling ``y`` of an ``n``-token sequence is::

    start[y[0]] + sum_t unary[t, y[t]] + sum_{t >= 1} transitions[y[t-1], y[t]]
                + sum_{t >= 2} trigram[y[t-2], y[t-1], y[t]] + end[y[n-1]]

Inference runs on the order-1 chain whose states are label pairs
``(b, c) = (y[t-1], y[t])``: a state at token t has C predecessors, one per
``a = y[t-2]``, so a token costs O(C**3) instead of the O(C**4) of a generic
C**2-state chain. The layout is that of :mod:`.order1`, plus

- ``trigram`` : (n_classes, n_classes, n_classes) float64, indexed
  [y[t-2], y[t-1], y[t]]; ``-inf`` forbids a label triple.

As in :mod:`.order1`, nothing here validates or mutates its inputs, every
sequence goes first through a probability-domain pass scaled per token, and
the few sequences whose scores under- or overflow it are redone exactly in
log space. The per-sequence routine :func:`sequence_posteriors2` (with
:func:`chain2_potentials`, :func:`chain2_workspace` and
:func:`flush_triple_counts`) is what a fused training kernel would call.
"""

import numpy as np

from .._runtime.batch import chunk_bounds, compiled, default_n_chunks, longest_sequence, run_chunks
from ._order2_logspace import log_space_sequence2
from ._order2_scaled import flush_triple_counts, scaled_sequence2
from .._logspace import shift_of
from .._potentials import chain2_potentials

__all__ = ["chain2_potentials", "chain2_workspace", "flush_triple_counts",
           "forward_backward2", "sequence_posteriors2", "viterbi2"]


@compiled()
def chain2_workspace(longest, n_classes, with_counts):
    """Scratch for the sequences of one chunk, none longer than ``longest``.

    O(longest * n_classes**2) memory, plus one n_classes**3 array of triple
    weights when ``with_counts``.

    Returns ``(alpha, beta, following, emission, norm, reach, reach_first,
    block, previous_block, vector, shifted, gathered, weights)``. ``following``
    is indexed [b, token, c]; ``weights`` accumulates the scaled pass's
    triple-count weights, indexed [b, a, c] (see :func:`flush_triple_counts`),
    and is zeroed here.
    """
    n_words = (n_classes + 63) // 64
    size = n_classes if with_counts else 1
    return (np.empty((longest, n_classes, n_classes)),
            np.empty((longest, n_classes, n_classes)),
            np.empty((n_classes, longest, n_classes)),
            np.empty((longest, n_classes)), np.empty(longest),
            np.zeros((2, n_classes, n_words), np.uint64), np.empty(n_classes, np.bool_),
            np.empty((n_classes, n_classes)), np.empty((n_classes, n_classes)),
            np.empty(n_classes), np.empty(n_classes), np.empty((n_classes, longest)),
            np.zeros((size, size, size)))


@compiled()
def sequence_posteriors2(unary, transitions, start, end, lo, hi, potentials, with_counts,
                         marginals, pair_counts, triple_counts, work):
    """log Z of tokens lo..hi-1 (hi > lo); marginals and expected counts into the outputs.

    The fast scaled pass first; a sequence whose scores under- or overflow it
    (NaN) is redone exactly in log space. The triple counts of the scaled pass
    wait in ``work`` until :func:`flush_triple_counts` is called, once after
    the last sequence that uses ``work``; those of the log-space pass go
    straight to ``triple_counts``.

    Parameters
    ----------
    unary, transitions, start, end
        See the module docstring; the trigram potentials enter through
        ``potentials``, from :func:`chain2_potentials`.
    lo, hi : int
        The sequence's tokens.
    potentials : tuple
        From :func:`chain2_potentials`.
    with_counts : bool
        Whether to accumulate expected pair and triple counts.
    marginals : (n_tokens, n_classes) float64
        Rows lo..hi-1 are overwritten (left as they were if the sequence is infeasible).
    pair_counts : (n_classes, n_classes) float64
    triple_counts : (n_classes, n_classes, n_classes) float64
        Accumulated into when ``with_counts``.
    work : tuple
        From :func:`chain2_workspace`, with ``longest >= hi - lo``.

    Returns
    -------
    float
        log Z, ``-inf`` if the sequence has no feasible labelling.
    """
    lz = scaled_sequence2(unary, transitions, start, end, lo, hi, potentials, with_counts,
                          marginals, pair_counts, work)
    if np.isnan(lz):
        lz = log_space_sequence2(unary, transitions, start, end, lo, hi, potentials,
                                 with_counts, marginals, pair_counts, triple_counts, work)
    return lz


def forward_backward2(unary, transitions, trigram, start, end, offsets, with_counts):
    """Log partition functions, token marginals and expected pair and triple counts.

    Exact, over label-pair states, in O(n_tokens * n_classes**3).

    Parameters
    ----------
    unary, transitions, trigram, start, end, offsets
        See the module docstring.
    with_counts : bool
        Whether to compute the expected counts (training needs them, marginal
        prediction does not); if not, they are returned empty, of shapes
        (0, 0) and (0, 0, 0), and no n_classes ** 3 array is allocated for them.

    Returns
    -------
    log_z : (n_sequences,) float64
        0 for an empty sequence; ``-inf`` for a sequence with no feasible path.
    marginals : (n_tokens, n_classes) float64
        Rows sum to 1; all zeros for the tokens of an infeasible sequence.
    pair_counts : (n_classes, n_classes) float64
        Expected number of each (y[t-1], y[t]), summed over all sequences.
    triple_counts : (n_classes, n_classes, n_classes) float64
        Expected number of each (y[t-2], y[t-1], y[t]), summed over all sequences.
    """
    n_tokens, n_classes = unary.shape
    n_sequences = offsets.shape[0] - 1
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    potentials = chain2_potentials(transitions, trigram, start, end)

    log_z = np.zeros(n_sequences)
    marginals = np.zeros((n_tokens, n_classes))
    # without counts, every chunk shares one never-written dummy
    n_partials = n_chunks if with_counts else 1
    size = n_classes if with_counts else 1
    chunk_pairs = np.zeros((n_partials, size, size))
    chunk_triples = np.zeros((n_partials, size, size, size))
    with_counts = bool(with_counts)
    exact = np.zeros(n_sequences, np.bool_)
    sums = (log_z, marginals, chunk_pairs, chunk_triples)
    run_chunks(_posterior2_chunks, n_chunks, bounds, unary, transitions, start, end, offsets,
               potentials, with_counts, exact, *sums)
    if exact.any():
        run_chunks(_exact_posterior2_chunks, n_chunks, bounds, unary, transitions, start, end,
                   offsets, potentials, with_counts, exact, *sums)

    counted = n_classes if with_counts else 0
    pair_counts = np.zeros((counted, counted))
    triple_counts = np.zeros((counted, counted, counted))
    if with_counts:
        for k in range(n_chunks):
            pair_counts += chunk_pairs[k]
            triple_counts += chunk_triples[k]
    return log_z, marginals, pair_counts, triple_counts


@compiled()
def _posterior2_chunks(chunk_lo, chunk_hi, bounds, unary, transitions, start, end, offsets,
                       potentials, with_counts, exact, log_z, marginals, chunk_pairs,
                       chunk_triples):
    """The scaled pass of the chunks' sequences; ``exact`` flags those it cannot do."""
    n_classes = unary.shape[1]
    for k in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[k], bounds[k + 1]), 1)
        work = chain2_workspace(longest, n_classes, with_counts)
        partial = np.int64(k) if with_counts else np.int64(0)
        for q in range(bounds[k], bounds[k + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            if hi == lo:
                continue
            lz = scaled_sequence2(unary, transitions, start, end, lo, hi, potentials,
                                  with_counts, marginals, chunk_pairs[partial], work)
            if np.isnan(lz):
                exact[q] = True
            else:
                log_z[q] = lz
        if with_counts:
            flush_triple_counts(potentials, work, chunk_triples[partial])


@compiled()
def _exact_posterior2_chunks(chunk_lo, chunk_hi, bounds, unary, transitions, start, end,
                             offsets, potentials, with_counts, exact, log_z, marginals,
                             chunk_pairs, chunk_triples):
    """The exact log-space pass of the chunks' sequences that ``exact`` flags."""
    n_classes = unary.shape[1]
    for k in range(chunk_lo, chunk_hi):
        if not exact[bounds[k]:bounds[k + 1]].any():
            continue
        longest = max(longest_sequence(offsets, bounds[k], bounds[k + 1]), 1)
        work = chain2_workspace(longest, n_classes, with_counts)
        partial = np.int64(k) if with_counts else np.int64(0)
        for q in range(bounds[k], bounds[k + 1]):
            if exact[q]:
                log_z[q] = log_space_sequence2(unary, transitions, start, end, offsets[q],
                                               offsets[q + 1], potentials, with_counts,
                                               marginals, chunk_pairs[partial],
                                               chunk_triples[partial], work)


@compiled()
def _max_plus_vector_matrix(values, matrix, best, pointers):
    """Fold max_k values[k] + matrix[k, j] into best[j], its lowest argmax into pointers[j].

    ``best`` starts at -inf and ``pointers`` at 0; a candidate replaces the
    incumbent only if strictly greater, so ties keep the lowest k. Rows go
    four at a time, each cell's incumbent held in locals across them: the
    one-row form, ``if v > best[j]: best[j] = v``, compiles to masked stores,
    which are slow on some processors.
    """
    n_rows, n_cols = matrix.shape
    full = n_rows - n_rows % 4
    for k in range(0, full, 4):
        s0 = values[k]
        s1 = values[k + 1]
        s2 = values[k + 2]
        s3 = values[k + 3]
        m0 = matrix[k]
        m1 = matrix[k + 1]
        m2 = matrix[k + 2]
        m3 = matrix[k + 3]
        for j in range(n_cols):
            top = best[j]
            arg = pointers[j]
            v = s0 + m0[j]
            if v > top:
                top = v
                arg = k
            v = s1 + m1[j]
            if v > top:
                top = v
                arg = k + 1
            v = s2 + m2[j]
            if v > top:
                top = v
                arg = k + 2
            v = s3 + m3[j]
            if v > top:
                top = v
                arg = k + 3
            best[j] = top
            pointers[j] = arg
    for k in range(full, n_rows):
        s = values[k]
        m = matrix[k]
        for j in range(n_cols):
            v = s + m[j]
            if v > best[j]:
                best[j] = v
                pointers[j] = k


def viterbi2(unary, transitions, trigram, start, end, offsets):
    """Most likely label path of every sequence under the order-2 model.

    Ties go to the lowest label ids: the lowest y[t-2] for each pair state, and
    the lexicographically lowest final pair (y[n-2], y[n-1]). A ``-inf``
    potential never appears in a returned path unless the sequence has no
    feasible path at all.

    Parameters
    ----------
    unary, transitions, trigram, start, end, offsets
        See the module docstring.

    Returns
    -------
    label_ids : (n_tokens,) int64
    """
    n_tokens, n_classes = unary.shape
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    # score_by_b[b, a, c]: the move (a, b) -> (b, c), contiguous for each b
    score_by_b = np.ascontiguousarray((trigram + transitions[np.newaxis]).transpose(1, 0, 2))
    label_ids = np.zeros(n_tokens, np.int64)
    run_chunks(_viterbi2_chunks, n_chunks, bounds, unary, transitions, start, end, offsets,
               score_by_b, label_ids)
    return label_ids


@compiled()
def _viterbi2_chunks(chunk_lo, chunk_hi, bounds, unary, transitions, start, end, offsets,
                     score_by_b, label_ids):
    """The best paths of the chunks' sequences into ``label_ids``."""
    n_classes = unary.shape[1]
    for k in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[k], bounds[k + 1]), 1)
        # delta[cur, b, c]: best score of a path ending in (y[r-1], y[r]) = (b, c),
        # for the current and the previous token in turn
        delta = np.empty((2, n_classes, n_classes))
        backpointer = np.zeros((longest, n_classes, n_classes), np.int64)
        for q in range(bounds[k], bounds[k + 1]):
            lo, hi = offsets[q], offsets[q + 1]
            n = hi - lo
            if n == 0:
                continue
            if n == 1:
                best = -np.inf
                best_c = 0
                for c in range(n_classes):
                    v = start[c] + unary[lo, c] + end[c]
                    if v > best:
                        best = v
                        best_c = c
                label_ids[lo] = best_c
                continue
            # unary scores relative to each token's maximum: a huge one (a
            # feature value of 1e17) never enters the scores carried on
            first, second = shift_of(unary[lo]), shift_of(unary[lo + 1])
            for b in range(n_classes):
                for c in range(n_classes):
                    delta[1, b, c] = (start[b] + (unary[lo, b] - first) + transitions[b, c]
                                      + (unary[lo + 1, c] - second))
            cur = 1
            for r in range(2, n):
                t = lo + r
                previous = delta[cur]
                current = delta[1 - cur]
                current[:, :] = -np.inf
                backpointer[r, :, :] = 0
                for b in range(n_classes):
                    _max_plus_vector_matrix(previous[:, b], score_by_b[b], current[b],
                                            backpointer[r, b])
                top = shift_of(unary[t])
                for b in range(n_classes):
                    for c in range(n_classes):
                        current[b, c] += unary[t, c] - top
                cur = 1 - cur
            best = -np.inf
            best_b = 0
            best_c = 0
            for b in range(n_classes):
                for c in range(n_classes):
                    v = delta[cur, b, c] + end[c]
                    if v > best:
                        best = v
                        best_b = b
                        best_c = c
            label_ids[hi - 1] = best_c
            label_ids[hi - 2] = best_b
            for r in range(n - 1, 1, -1):
                label_ids[lo + r - 2] = backpointer[r, label_ids[lo + r - 1],
                                                    label_ids[lo + r]]
