"""Numba kernels: forward-backward, Viterbi, the training loss and sparse helpers.

Potentials in, marginals out. Nothing here validates its inputs, and nothing
mutates them but :func:`sort_row_indices` (called on arrays the vectorizer
owns) and the workspace of :func:`nll_terms`; the Python callers check
everything once. The batch kernels take this
layout:

- ``unary`` : (n_tokens, n_classes) float64, log-space state scores of all tokens
  of all sequences stacked;
- ``transitions`` : (n_classes, n_classes) float64, indexed [from, to]; ``-inf``
  forbids a transition;
- ``start``, ``end`` : (n_classes,) float64;
- ``offsets`` : (n_sequences + 1,) int64, sequence q owns tokens
  ``offsets[q]:offsets[q + 1]`` (CSR ``indptr`` semantics).

Parallelism is over a fixed number of contiguous chunks of sequences, chosen from
the data alone, followed by a serial reduction in chunk order, so every result
is bitwise identical whatever the thread count. :func:`nll_terms`, the loss of
training, fuses the products with the features into that pass, so training
keeps no (n_tokens, n_classes) array.

``fastmath`` stays off everywhere: it lets LLVM assume no infinities, which turns
the ``-inf`` guards of log-space code into NaN.
"""

import warnings

import numpy as np
from numba import njit, prange


class CacheUnavailableWarning(RuntimeWarning):
    """numba found no writable directory for its cache: kernels compile per process."""


_cache_warned = False


def _jit(parallel=False):
    """``njit`` with the options every kernel shares, cached on disk when possible.

    error_model="numpy": a float division by zero gives inf/NaN instead of
    raising (the callers guard every division that matters), and loops skip
    zero checks. ``cache=True`` makes numba look for a writable directory at
    decoration time (NUMBA_CACHE_DIR, ``__pycache__`` beside this file, the
    user's cache directory) and raise a RuntimeError if there is none, which
    would make ``import skcrf`` fail on a read-only install. Then the kernels
    are compiled without a cache instead, with one warning.
    """
    options = dict(nogil=True, error_model="numpy", parallel=parallel)

    def decorate(func):
        try:
            return njit(cache=True, **options)(func)
        except RuntimeError as error:
            if "cannot cache" not in str(error):
                raise
            _warn_cache_unavailable()
            return njit(cache=False, **options)(func)

    return decorate


def _warn_cache_unavailable():
    global _cache_warned
    if _cache_warned:
        return
    _cache_warned = True
    warnings.warn(
        "numba cannot write a cache for skcrf's kernels (no writable NUMBA_CACHE_DIR, "
        "skcrf/__pycache__ or user cache directory), so they are compiled again in "
        "every process, which takes about a minute on first use. Set NUMBA_CACHE_DIR "
        "to a writable directory to cache them.", CacheUnavailableWarning, stacklevel=3)


#: Upper bound on the number of work chunks. It only has to exceed the thread
#: count comfortably for load balance; it must not depend on it.
N_CHUNKS = 64

#: Below this, a sum of shifted exponentials may have lost terms to underflow,
#: so the cell is recomputed exactly in log space. Terms are products of factors
#: <= 1, so a term that underflowed is < 1e-308: relative to a sum above 1e-280
#: it is far below rounding error.
_TINY = 1e-280



@_jit()
def chunk_bounds(offsets, n_chunks):
    """Split sequences into ``n_chunks`` contiguous groups of similar token counts.

    Returns (n_chunks + 1,) int64 sequence indices; chunk c holds sequences
    ``bounds[c]:bounds[c + 1]`` (possibly none).
    """
    n_sequences = offsets.shape[0] - 1
    n_tokens = offsets[n_sequences]
    bounds = np.empty(n_chunks + 1, np.int64)
    bounds[0] = 0
    q = 0
    for c in range(1, n_chunks):
        target = (n_tokens * c) // n_chunks
        while q < n_sequences and offsets[q] < target:
            q += 1
        bounds[c] = q
    bounds[n_chunks] = n_sequences
    return bounds


@_jit()
def _n_chunks(offsets):
    n_sequences = offsets.shape[0] - 1
    return max(1, min(N_CHUNKS, n_sequences))


@_jit()
def _max_length(offsets, lo, hi):
    longest = 0
    for q in range(lo, hi):
        longest = max(longest, offsets[q + 1] - offsets[q])
    return longest


@_jit()
def _shifted_exp_transitions(transitions):
    """exp(T) shifted per column and per row so that nothing overflows.

    Returns ``col_max[j] = max_i T[i, j]``, ``exp_by_col[i, j] = exp(T[i, j] - col_max[j])``,
    ``row_max[i] = max_j T[i, j]`` and ``exp_by_row[i, j] = exp(T[i, j] - row_max[i])``.
    A column or row that is entirely -inf gets a shift of 0 and exponentials of 0.
    """
    n_classes = transitions.shape[0]
    col_max = np.full(n_classes, -np.inf)
    row_max = np.full(n_classes, -np.inf)
    for i in range(n_classes):
        for j in range(n_classes):
            v = transitions[i, j]
            if v > col_max[j]:
                col_max[j] = v
            if v > row_max[i]:
                row_max[i] = v
    for k in range(n_classes):
        if col_max[k] == -np.inf:
            col_max[k] = 0.0
        if row_max[k] == -np.inf:
            row_max[k] = 0.0
    exp_by_col = np.empty((n_classes, n_classes))
    exp_by_row = np.empty((n_classes, n_classes))
    for i in range(n_classes):
        for j in range(n_classes):
            exp_by_col[i, j] = np.exp(transitions[i, j] - col_max[j])
            exp_by_row[i, j] = np.exp(transitions[i, j] - row_max[i])
    return col_max, exp_by_col, row_max, exp_by_row


@_jit()
def _logsumexp(values):
    top = -np.inf
    for v in values:
        if v > top:
            top = v
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for v in values:
        total += np.exp(v - top)
    return top + np.log(total)


@_jit()
def _forward(unary, transitions, start, col_max, exp_by_col, lo, hi, alpha, scaled, column):
    """Log forward scores of tokens lo..hi-1 into ``alpha[: hi - lo]``."""
    n_classes = unary.shape[1]
    for j in range(n_classes):
        alpha[0, j] = start[j] + unary[lo, j]
    for t in range(lo + 1, hi):
        r = t - lo
        shift = -np.inf
        for i in range(n_classes):
            if alpha[r - 1, i] > shift:
                shift = alpha[r - 1, i]
        if shift == -np.inf:
            for j in range(n_classes):
                alpha[r, j] = -np.inf
            continue
        # sums[j] = sum_i exp(alpha[i] - shift) * exp(T[i, j] - col_max[j]): i outer
        # keeps both arrays contiguous in the inner loop.
        sums = column  # reuse scratch
        for j in range(n_classes):
            sums[j] = 0.0
        for i in range(n_classes):
            a = np.exp(alpha[r - 1, i] - shift)
            scaled[i] = a
            for j in range(n_classes):
                sums[j] += a * exp_by_col[i, j]
        for j in range(n_classes):
            if sums[j] > _TINY:
                alpha[r, j] = unary[t, j] + shift + col_max[j] + np.log(sums[j])
            else:
                alpha[r, j] = unary[t, j] + _exact_into(alpha[r - 1], transitions, j)


@_jit()
def _exact_into(previous, transitions, j):
    """log sum_i exp(previous[i] + T[i, j]), computed without shortcuts."""
    n_classes = previous.shape[0]
    top = -np.inf
    for i in range(n_classes):
        v = previous[i] + transitions[i, j]
        if v > top:
            top = v
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for i in range(n_classes):
        total += np.exp(previous[i] + transitions[i, j] - top)
    return top + np.log(total)


@_jit()
def _exact_from(following, transitions, i):
    """log sum_j exp(T[i, j] + following[j]), computed without shortcuts."""
    n_classes = following.shape[0]
    top = -np.inf
    for j in range(n_classes):
        v = transitions[i, j] + following[j]
        if v > top:
            top = v
    if top == -np.inf:
        return -np.inf
    total = 0.0
    for j in range(n_classes):
        total += np.exp(transitions[i, j] + following[j] - top)
    return top + np.log(total)


@_jit()
def _backward(unary, transitions, end, row_max, exp_by_row, lo, hi, beta, scaled, following):
    """Log backward scores of tokens lo..hi-1 into ``beta[: hi - lo]``."""
    n_classes = unary.shape[1]
    last = hi - 1 - lo
    for i in range(n_classes):
        beta[last, i] = end[i]
    for t in range(hi - 2, lo - 1, -1):
        r = t - lo
        shift = -np.inf
        for j in range(n_classes):
            following[j] = unary[t + 1, j] + beta[r + 1, j]
            if following[j] > shift:
                shift = following[j]
        if shift == -np.inf:
            for i in range(n_classes):
                beta[r, i] = -np.inf
            continue
        for j in range(n_classes):
            scaled[j] = np.exp(following[j] - shift)
        for i in range(n_classes):
            total = 0.0
            for j in range(n_classes):
                total += exp_by_row[i, j] * scaled[j]
            if total > _TINY:
                beta[r, i] = shift + row_max[i] + np.log(total)
            else:
                beta[r, i] = _exact_from(following, transitions, i)


@_jit()
def _accumulate_transitions(unary, transitions, col_max, exp_by_col, lo, hi, alpha,
                            beta, counts, block, scaled, following):
    """Add the expected transition counts of one sequence to ``counts``.

    xi_t[i, j] is proportional to exp(alpha[t-1, i] + T[i, j] + unary[t, j] + beta[t, j])
    and sums to 1 over (i, j). Each token's block is normalized by its own sum
    rather than by exp(log Z): over long sequences alpha and beta grow large and
    subtracting log Z would cancel away digits. The block is factored as
    exp(alpha - A) * exp(T - col_max) * exp(w - W), with
    w[j] = unary[t, j] + beta[t, j] + col_max[j], so that it needs 2 * n_classes
    exponentials instead of n_classes ** 2, unless the product underflows.
    """
    n_classes = unary.shape[1]
    for t in range(lo + 1, hi):
        r = t - lo
        top_a = -np.inf
        for i in range(n_classes):
            if alpha[r - 1, i] > top_a:
                top_a = alpha[r - 1, i]
        top_w = -np.inf
        for j in range(n_classes):
            following[j] = unary[t, j] + beta[r, j]
            if following[j] + col_max[j] > top_w:
                top_w = following[j] + col_max[j]
        if top_a == -np.inf or top_w == -np.inf:
            continue
        for j in range(n_classes):
            scaled[j] = np.exp(following[j] + col_max[j] - top_w)
        total = 0.0
        for i in range(n_classes):
            a = np.exp(alpha[r - 1, i] - top_a)
            for j in range(n_classes):
                block[i, j] = a * exp_by_col[i, j] * scaled[j]
                total += block[i, j]
        if not total > _FLOOR:
            # the factored product underflowed: exponentiate each cell exactly
            top = -np.inf
            for i in range(n_classes):
                for j in range(n_classes):
                    block[i, j] = alpha[r - 1, i] + transitions[i, j] + following[j]
                    if block[i, j] > top:
                        top = block[i, j]
            if top == -np.inf:
                continue
            total = 0.0
            for i in range(n_classes):
                for j in range(n_classes):
                    block[i, j] = np.exp(block[i, j] - top)
                    total += block[i, j]
        for i in range(n_classes):
            for j in range(n_classes):
                counts[i, j] += block[i, j] / total


#: The scaled pass gives up, and the exact log-space pass takes over, when a
#: forward value that a feasible path reaches falls below _FLOOR before
#: normalization, or a backward value rises above _HUGE. Above the floor, a
#: forward value carries full relative precision (a term lost to underflow is
#: < 1e-308, negligible next to it); below, it might be a term that later
#: dominates log Z. Lost backward terms are always negligible: a probability
#: mass through a state is at most its backward value.
_FLOOR = 1e-290
_HUGE = 1e250


@_jit()
def _shifted_exp(values):
    """(max, exp(values - max)); a max of -inf becomes 0 so the exponentials are 0."""
    top = -np.inf
    for v in values.flat:
        if v > top:
            top = v
    if top == -np.inf:
        top = 0.0
    return top, np.exp(values - top)


@_jit()
def _scaled_sequence(unary, transitions, start, end, lo, hi, exp_trans, trans_max, exp_start,
                     start_max, exp_end, end_max, any_forbidden, emission, alpha, beta, norm,
                     reach, with_transitions, marginals, counts, scratch):
    """Forward-backward of one sequence in the probability domain, scaled per token.

    Rabiner's scaling: alpha[t] is normalized to sum 1 by norm[t], and beta[t]
    is divided by the same norm[t + 1], so that alpha[t] * beta[t] is the
    marginal. It needs n_classes exponentials per token instead of the
    log-space pass's several n_classes. Returns log Z, or NaN when the
    precision checks fail, in which case nothing was written and the caller
    runs the exact pass.

    ``reach`` (2, n_classes) tracks which states a path of finite score reaches;
    it only matters when some score is -inf (otherwise every state is reached).
    """
    n_classes = unary.shape[1]
    n = hi - lo
    log_z = start_max + end_max + (n - 1) * trans_max
    track = any_forbidden
    for r in range(n):
        t = lo + r
        top = -np.inf
        for j in range(n_classes):
            if unary[t, j] > top:
                top = unary[t, j]
            elif unary[t, j] == -np.inf:
                track = True
        if top == -np.inf:
            return np.nan
        log_z += top
        for j in range(n_classes):
            emission[r, j] = np.exp(unary[t, j] - top)

    prev, cur = 0, 1
    total = 0.0
    for j in range(n_classes):
        alpha[0, j] = exp_start[j] * emission[0, j]
        reach[prev, j] = start[j] > -np.inf and unary[lo, j] > -np.inf
        if alpha[0, j] < _FLOOR and (reach[prev, j] or not track):
            return np.nan
        total += alpha[0, j]
    if total == 0.0:
        return np.nan  # no feasible first label: the exact pass returns -inf
    norm[0] = total
    for j in range(n_classes):
        alpha[0, j] /= total
    for r in range(1, n):
        t = lo + r
        for j in range(n_classes):
            alpha[r, j] = 0.0
        for i in range(n_classes):
            a = alpha[r - 1, i]
            if a != 0.0:
                for j in range(n_classes):
                    alpha[r, j] += a * exp_trans[i, j]
        total = 0.0
        for j in range(n_classes):
            alpha[r, j] *= emission[r, j]
            if alpha[r, j] < _FLOOR:
                if not track:
                    return np.nan
                reached = False
                if unary[t, j] > -np.inf:
                    for i in range(n_classes):
                        if reach[prev, i] and transitions[i, j] > -np.inf:
                            reached = True
                            break
                if reached:
                    return np.nan
                reach[cur, j] = False
            else:
                reach[cur, j] = True
            total += alpha[r, j]
        if total == 0.0:
            return np.nan
        norm[r] = total
        for j in range(n_classes):
            alpha[r, j] /= total
        prev, cur = cur, prev
    final = 0.0
    for j in range(n_classes):
        term = alpha[n - 1, j] * exp_end[j]
        if term < _FLOOR and (not track or (reach[prev, j] and end[j] > -np.inf)):
            return np.nan
        final += term
    if final == 0.0:
        return np.nan

    for j in range(n_classes):
        beta[n - 1, j] = exp_end[j] / final
    for r in range(n - 2, -1, -1):
        for j in range(n_classes):
            scratch[j] = emission[r + 1, j] * beta[r + 1, j] / norm[r + 1]
            if not scratch[j] < _HUGE:
                return np.nan
        for i in range(n_classes):
            total = 0.0
            for j in range(n_classes):
                total += exp_trans[i, j] * scratch[j]
            if not total < _HUGE:
                return np.nan
            beta[r, i] = total

    for r in range(n):
        log_z += np.log(norm[r])
        for j in range(n_classes):
            marginals[lo + r, j] = alpha[r, j] * beta[r, j]
    log_z += np.log(final)
    if with_transitions:
        for r in range(1, n):
            for j in range(n_classes):
                scratch[j] = emission[r, j] * beta[r, j] / norm[r]
            for i in range(n_classes):
                a = alpha[r - 1, i]
                if a != 0.0:
                    for j in range(n_classes):
                        counts[i, j] += a * exp_trans[i, j] * scratch[j]
    return log_z


@_jit()
def _log_space_sequence(unary, transitions, start, end, lo, hi, col_max, exp_by_col,
                        row_max, exp_by_row, with_transitions, marginals, counts, alpha,
                        beta, block, scaled, scratch):
    """Forward-backward of one sequence in log space: slower, never under- or overflows."""
    n_classes = unary.shape[1]
    _forward(unary, transitions, start, col_max, exp_by_col, lo, hi, alpha, scaled, scratch)
    last = hi - 1 - lo
    for j in range(n_classes):
        scratch[j] = alpha[last, j] + end[j]
    log_z = _logsumexp(scratch)
    if log_z == -np.inf:
        return log_z
    _backward(unary, transitions, end, row_max, exp_by_row, lo, hi, beta, scaled, scratch)
    # normalized per token, for the reason given in _accumulate_transitions
    for t in range(lo, hi):
        r = t - lo
        top = -np.inf
        for j in range(n_classes):
            if alpha[r, j] + beta[r, j] > top:
                top = alpha[r, j] + beta[r, j]
        total = 0.0
        for j in range(n_classes):
            marginals[t, j] = np.exp(alpha[r, j] + beta[r, j] - top)
            total += marginals[t, j]
        for j in range(n_classes):
            marginals[t, j] /= total
    if with_transitions:
        _accumulate_transitions(unary, transitions, col_max, exp_by_col, lo, hi, alpha,
                                beta, counts, block, scaled, scratch)
    return log_z


@_jit()
def _potentials(transitions, start, end):
    """Shifted exponentials of the potentials, shared by all sequences of a batch."""
    col_max, exp_by_col, row_max, exp_by_row = _shifted_exp_transitions(transitions)
    trans_max, exp_trans = _shifted_exp(transitions)
    start_max, exp_start = _shifted_exp(start)
    end_max, exp_end = _shifted_exp(end)
    any_forbidden = (np.isneginf(transitions).any() or np.isneginf(start).any()
                     or np.isneginf(end).any())
    return (col_max, exp_by_col, row_max, exp_by_row, trans_max, exp_trans, start_max,
            exp_start, end_max, exp_end, any_forbidden)


@_jit()
def _workspace(longest, n_classes):
    """Scratch rows for the sequences of one chunk, none longer than ``longest``."""
    return (np.empty((longest, n_classes)), np.empty((longest, n_classes)),
            np.empty((longest, n_classes)), np.empty(longest),
            np.empty((2, n_classes), np.bool_), np.empty((n_classes, n_classes)),
            np.empty(n_classes), np.empty(n_classes))


@_jit()
def _sequence_posteriors(unary, transitions, start, end, lo, hi, potentials,
                         with_transitions, marginals, counts, work):
    """log Z of tokens lo..hi-1, their marginals and transition counts into the outputs.

    The fast scaled pass first; a sequence whose scores under- or overflow it
    (NaN) is redone exactly in log space.
    """
    (col_max, exp_by_col, row_max, exp_by_row, trans_max, exp_trans, start_max, exp_start,
     end_max, exp_end, any_forbidden) = potentials
    alpha, beta, emission, norm, reach, block, scaled, scratch = work
    lz = _scaled_sequence(unary, transitions, start, end, lo, hi, exp_trans, trans_max,
                          exp_start, start_max, exp_end, end_max, any_forbidden, emission,
                          alpha, beta, norm, reach, with_transitions, marginals, counts,
                          scratch)
    if np.isnan(lz):
        lz = _log_space_sequence(unary, transitions, start, end, lo, hi, col_max,
                                 exp_by_col, row_max, exp_by_row, with_transitions,
                                 marginals, counts, alpha, beta, block, scaled, scratch)
    return lz


@_jit(parallel=True)
def forward_backward(unary, transitions, start, end, offsets, with_transitions):
    """Log partition functions, token marginals and expected transition counts.

    Each sequence goes through the fast scaled pass; the few whose scores are
    extreme enough to under- or overflow it are redone exactly in log space.

    Parameters
    ----------
    unary, transitions, start, end, offsets
        See the module docstring.
    with_transitions : bool
        Whether to compute the expected transition counts (training needs them,
        ``predict_marginals`` does not).

    Returns
    -------
    log_z : (n_sequences,) float64
        0 for an empty sequence; ``-inf`` for a sequence with no feasible path.
    marginals : (n_tokens, n_classes) float64
        Rows sum to 1; all zeros for the tokens of an infeasible sequence.
    transition_counts : (n_classes, n_classes) float64
        Expected number of each transition, summed over all sequences.
    """
    n_tokens, n_classes = unary.shape
    n_sequences = offsets.shape[0] - 1
    n_chunks = _n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    potentials = _potentials(transitions, start, end)

    log_z = np.zeros(n_sequences)
    marginals = np.zeros((n_tokens, n_classes))
    chunk_counts = np.zeros((n_chunks, n_classes, n_classes))

    for c in prange(n_chunks):
        work = _workspace(max(_max_length(offsets, bounds[c], bounds[c + 1]), 1), n_classes)
        for q in range(bounds[c], bounds[c + 1]):
            lo = offsets[q]
            hi = offsets[q + 1]
            if hi == lo:
                continue
            log_z[q] = _sequence_posteriors(unary, transitions, start, end, lo, hi,
                                            potentials, with_transitions, marginals,
                                            chunk_counts[c], work)

    transition_counts = np.zeros((n_classes, n_classes))
    for c in range(n_chunks):
        transition_counts += chunk_counts[c]
    return log_z, marginals, transition_counts


@_jit(parallel=True)
def viterbi(unary, transitions, start, end, offsets):
    """Most likely label path of every sequence.

    Ties go to the lowest label id. A transition of ``-inf`` never appears in a
    returned path unless the sequence has no feasible path at all.

    Returns
    -------
    label_ids : (n_tokens,) int64
    """
    n_tokens, n_classes = unary.shape
    n_chunks = _n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    label_ids = np.zeros(n_tokens, np.int64)

    for c in prange(n_chunks):
        longest = max(_max_length(offsets, bounds[c], bounds[c + 1]), 1)
        score = np.empty((longest, n_classes))
        backpointer = np.zeros((longest, n_classes), np.int32)
        for q in range(bounds[c], bounds[c + 1]):
            lo = offsets[q]
            hi = offsets[q + 1]
            if hi == lo:
                continue
            for j in range(n_classes):
                score[0, j] = start[j] + unary[lo, j]
            for t in range(lo + 1, hi):
                r = t - lo
                for j in range(n_classes):
                    best = -np.inf
                    best_i = 0
                    for i in range(n_classes):
                        v = score[r - 1, i] + transitions[i, j]
                        if v > best:
                            best = v
                            best_i = i
                    score[r, j] = best + unary[t, j]
                    backpointer[r, j] = best_i
            last = hi - 1 - lo
            best = -np.inf
            best_j = 0
            for j in range(n_classes):
                v = score[last, j] + end[j]
                if v > best:
                    best = v
                    best_j = j
            label_ids[hi - 1] = best_j
            for r in range(last, 0, -1):
                best_j = backpointer[r, best_j]
                label_ids[lo + r - 1] = best_j
    return label_ids


@_jit(parallel=True)
def csr_dot_dense(data, indices, indptr, dense, binary):
    """``X @ dense`` for a CSR ``X``; rows are independent, so parallel and exact.

    With ``binary`` true every stored value is taken to be 1 and ``data`` is
    not read: most token features are indicators, and skipping a third of the
    memory traffic is most of this kernel's cost.
    """
    n_rows = indptr.shape[0] - 1
    n_cols = dense.shape[1]
    out = np.zeros((n_rows, n_cols))
    for row in prange(n_rows):
        if binary:
            for k in range(indptr[row], indptr[row + 1]):
                col = indices[k]
                for j in range(n_cols):
                    out[row, j] += dense[col, j]
        else:
            for k in range(indptr[row], indptr[row + 1]):
                value = data[k]
                col = indices[k]
                for j in range(n_cols):
                    out[row, j] += value * dense[col, j]
    return out


#: Memory bounds of :func:`nll_terms`, in float64 values. Each chunk of
#: sequences keeps a partial sum of the expected counts of every pair, so the
#: number of chunks is LOSS_PAIR_BUDGET // n_pairs (2 MiB in all), but at
#: least MIN_LOSS_CHUNKS, for the threads to share, and at most N_CHUNKS and
#: the number of sequences (see ``_loss.loss_layout``): past 65k pairs the partial
#: sums take MIN_LOSS_CHUNKS * n_pairs values (32 bytes a pair), and at most 4
#: threads share the loss. There is also a dense (n_hot, n_classes) partial sum
#: for the most frequent features, with n_hot up to LOSS_HOT_BUDGET //
#: (n_chunks * n_classes) (1 MiB in all). On esp.train (96k pairs, 9 labels):
#: 4 chunks and 3640 frequent features carrying 92% of the non-zeros, 4 MiB,
#: against 19 MiB for one (n_tokens, n_classes) array.
LOSS_PAIR_BUDGET = 1 << 18
LOSS_HOT_BUDGET = 1 << 17
MIN_LOSS_CHUNKS = 4


@_jit()
def _sequence_unary(data, indices, indptr, binary, hot_slot, hot_state, pair_ptr,
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


@_jit()
def _scatter_expected(data, indices, indptr, binary, hot_slot, pair_ptr, pair_labels, lo,
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


@_jit(parallel=True)
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
    n_pairs = pair_labels.shape[0]
    n_hot = hot_features.shape[0]
    n_chunks = partial.shape[0]
    bounds = chunk_bounds(offsets, n_chunks)
    hot_state = np.zeros((n_hot, n_classes))
    for slot in range(n_hot):
        f = hot_features[slot]
        for p in range(pair_ptr[f], pair_ptr[f + 1]):
            hot_state[slot, pair_labels[p]] = pair_weights[p]
    potentials = _potentials(transitions, start, end)

    log_z = np.zeros(n_sequences)
    chunk_counts = np.zeros((n_chunks, n_classes, n_classes))
    chunk_start = np.zeros((n_chunks, n_classes))
    chunk_end = np.zeros((n_chunks, n_classes))

    for c in prange(n_chunks):
        partial[c] = 0.0
        hot_partial[c] = 0.0
        longest = max(_max_length(offsets, bounds[c], bounds[c + 1]), 1)
        unary = np.empty((longest, n_classes))
        marginals = np.empty((longest, n_classes))
        work = _workspace(longest, n_classes)
        for q in range(bounds[c], bounds[c + 1]):
            lo = offsets[q]
            hi = offsets[q + 1]
            n = hi - lo
            if n == 0:
                continue
            _sequence_unary(data, indices, indptr, binary, hot_slot, hot_state, pair_ptr,
                            pair_labels, pair_weights, lo, hi, unary)
            lz = _sequence_posteriors(unary, transitions, start, end, 0, n, potentials,
                                      True, marginals, chunk_counts[c], work)
            log_z[q] = lz
            if not np.isfinite(lz):
                # no marginals were written (the loss is not finite anyway)
                continue
            for j in range(n_classes):
                chunk_start[c, j] += marginals[0, j]
                chunk_end[c, j] += marginals[n - 1, j]
            _scatter_expected(data, indices, indptr, binary, hot_slot, pair_ptr, pair_labels,
                              lo, hi, marginals, hot_partial[c], partial[c])

    # chunk partial sums added in chunk order: the thread count changes nothing
    expected_pairs = np.empty(n_pairs)
    for p in prange(n_pairs):
        total = partial[0, p]
        for c in range(1, n_chunks):
            total += partial[c, p]
        expected_pairs[p] = total
    for slot in prange(n_hot):
        f = hot_features[slot]
        for p in range(pair_ptr[f], pair_ptr[f + 1]):
            j = pair_labels[p]
            total = hot_partial[0, slot, j]
            for c in range(1, n_chunks):
                total += hot_partial[c, slot, j]
            expected_pairs[p] = total
    transition_counts = np.zeros((n_classes, n_classes))
    start_counts = np.zeros(n_classes)
    end_counts = np.zeros(n_classes)
    for c in range(n_chunks):
        transition_counts += chunk_counts[c]
        start_counts += chunk_start[c]
        end_counts += chunk_end[c]
    return log_z, expected_pairs, transition_counts, start_counts, end_counts


@_jit()
def pair_pattern(indices, indptr, label_ids, n_features, n_classes):
    """(n_features, n_classes) bool: which (feature, label) pairs occur in the data.

    An explicitly stored zero counts as an occurrence.
    """
    seen = np.zeros((n_features, n_classes), np.bool_)
    for row in range(indptr.shape[0] - 1):
        j = label_ids[row]
        for k in range(indptr[row], indptr[row + 1]):
            seen[indices[k], j] = True
    return seen


@_jit()
def pair_sums(data, indices, indptr, binary, label_ids, pair_ptr, pair_labels):
    """(n_pairs,) sum over tokens of each pair feature's value: the empirical counts.

    Every (feature, label) of the data must have a pair. Serial, in token
    order: the sums do not depend on the thread count.
    """
    sums = np.zeros(pair_labels.shape[0])
    for row in range(indptr.shape[0] - 1):
        j = label_ids[row]
        for k in range(indptr[row], indptr[row + 1]):
            col = indices[k]
            for p in range(pair_ptr[col], pair_ptr[col + 1]):
                if pair_labels[p] == j:
                    sums[p] += 1.0 if binary else data[k]
                    break
    return sums


@_jit()
def column_counts(indices, n_columns):
    """Number of stored entries of each column (``np.bincount`` without its int64 copy)."""
    counts = np.zeros(n_columns, np.int64)
    for k in range(indices.shape[0]):
        counts[indices[k]] += 1
    return counts


@_jit()
def sort_row_indices(indptr, indices, data, binary):
    """Sort the column indices of each row of a CSR matrix, in place.

    The one kernel that writes into its arguments: the vectorizer calls it on
    arrays it has just built and owns. Rows hold a few tens of entries, so an
    insertion sort, which is stable, is fast; ``data`` moves along unless
    ``binary``. Returns whether any row holds a column twice.
    """
    repeated = False
    for row in range(indptr.shape[0] - 1):
        lo = indptr[row]
        for k in range(lo + 1, indptr[row + 1]):
            col = indices[k]
            value = 0.0 if binary else data[k]
            m = k - 1
            while m >= lo and indices[m] > col:
                indices[m + 1] = indices[m]
                if not binary:
                    data[m + 1] = data[m]
                m -= 1
            indices[m + 1] = col
            if not binary:
                data[m + 1] = value
            if m >= lo and indices[m] == col:
                repeated = True
    return repeated


#: Kinds of featurizer slots (see :func:`slot_features`).
SLOT_GATHER, SLOT_ALWAYS, SLOT_BEFORE, SLOT_AFTER = 0, 1, 2, 3


@_jit()
def _slot_column(kind, shift, source, table_start, sources, table, t, start, stop):
    """Column of token ``t`` (of a sequence ``start:stop``) within one slot, or -1."""
    if kind == SLOT_GATHER:
        u = t + shift
        if u < start or u >= stop:
            return -1
        return table[table_start + sources[source, u]]
    if kind == SLOT_ALWAYS:
        return 0
    if kind == SLOT_BEFORE:
        return 0 if t - start < shift else -1
    return 0 if t >= stop - shift else -1  # SLOT_AFTER


@_jit()
def slot_features(sources, offsets, kinds, shifts, slot_sources, table_starts, table,
                  column_starts, n_columns):
    """CSR pattern of the featurizer's slots, keeping only the columns in use.

    A slot puts at most one entry in each token's row, in a column range of its
    own (``column_starts[s]`` on) placed after the previous slot's, so the rows
    come out with sorted column indices and no repeats. Slot ``s`` is one of:

    - ``SLOT_GATHER``: a feature of the token ``shifts[s]`` places away, none
      outside the sequence: local column
      ``table[table_starts[s] + sources[slot_sources[s], t + shifts[s]]]``
      (-1: none), where ``sources`` holds one type id per token of each token
      column;
    - ``SLOT_ALWAYS``: local column 0 on every token (the bias);
    - ``SLOT_BEFORE`` / ``SLOT_AFTER``: local column 0 on the tokens fewer than
      ``shifts[s]`` places from the start / end of their sequence (BOS, EOS and
      the markers of offsets beyond the sequence).

    One pass to count and one to fill, straight from the per-type tables: a
    (slot, token) grid gathered with numpy was 32 MiB on esp.train. Columns no
    token uses are dropped and the rest renumbered in order.

    Returns
    -------
    indices : (nnz,) int32
    indptr : (n_tokens + 1,) int64
    used : (n_columns,) bool
        Which of the columns some token uses.
    """
    n_slots = kinds.shape[0]
    n_tokens = offsets[offsets.shape[0] - 1]
    indptr = np.empty(n_tokens + 1, np.int64)
    indptr[0] = 0
    total = 0
    for q in range(offsets.shape[0] - 1):
        start, stop = offsets[q], offsets[q + 1]
        for t in range(start, stop):
            for s in range(n_slots):
                if _slot_column(kinds[s], shifts[s], slot_sources[s], table_starts[s],
                                sources, table, t, start, stop) >= 0:
                    total += 1
            indptr[t + 1] = total
    indices = np.empty(total, np.int32)
    used = np.zeros(n_columns, np.bool_)
    k = 0
    for q in range(offsets.shape[0] - 1):
        start, stop = offsets[q], offsets[q + 1]
        for t in range(start, stop):
            for s in range(n_slots):
                local = _slot_column(kinds[s], shifts[s], slot_sources[s], table_starts[s],
                                     sources, table, t, start, stop)
                if local >= 0:
                    column = column_starts[s] + local
                    indices[k] = column
                    used[column] = True
                    k += 1
    new_index = np.empty(n_columns, np.int32)
    n_used = 0
    for column in range(n_columns):
        new_index[column] = n_used
        if used[column]:
            n_used += 1
    for k in range(total):
        indices[k] = new_index[indices[k]]
    return indices, indptr, used
