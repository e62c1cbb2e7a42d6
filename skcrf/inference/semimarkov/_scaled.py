"""The semi-Markov forward-backward in the probability domain, scaled per token.

The exact pass of :mod:`.semimarkov` works in log space and pays an
exponential for every (end token, label, length) term, three times over. This
pass pays a few exponentials per token and label instead, and the caller falls
back to the exact pass for any sequence whose numbers leave the range where
the scaled values keep full precision (extreme weights, near-forbidden
labels); the checks below decide when, as in :mod:`._order1`.

The scaling is Rabiner's, adapted to segments:

- every segmentation covers every token exactly once, so subtracting a
  per-token constant ``m[r] = max_y state[r, y]`` from the state scores shifts
  all segmentations alike; then ``es = exp(state - m) <= 1``;
- ``alpha[b]`` (segmentations of tokens ``:b`` whose last segment ends at b) is
  normalized to sum 1 by ``norm[b]``, and a segment over tokens ``a:b`` is
  divided by ``norm[a + 1] * ... * norm[b]``, which keeps every forward value on
  the scale of its end token; backward values use the same norms, so that
  ``enter[a] * segment * beta[b]`` is the segment's marginal and
  ``sum(start_marginals) == 1``, which the pass checks.

Arrays of one sequence are indexed by the local token ``r = t - lo``;
boundaries (``alpha``, ``beta``, ``enter``, ``leave``, ``norm``) by the
position ``b`` in ``0..n`` between tokens.
"""

import numpy as np

from .._runtime.batch import compiled
from ._roles import COVERED, FIRST, LAST, REPEAT, SINGLE

#: Largest exponentiated weight the pass accepts (a weight of about 23).
FACTOR_CAP = 1e10

#: A forward cell below this that some feasible segmentation reaches may have
#: lost its dominant terms to underflow: the exact pass takes over.
CELL_FLOOR = 1e-100

#: Normalizers above this make the exact pass take over (see :func:`norm_floor`
#: for the lower bound).
NORM_CEILING = 1e100

#: Backward values above this make the exact pass take over before they overflow.
HUGE = 1e250

#: How far the start marginals may sum from 1 before the pass is not trusted.
IDENTITY_TOLERANCE = 1e-9


def exp_factors(length, transitions, start, end):
    """``(ok, exponentials...)`` of the sequence-independent weights (numpy, per call).

    ``ok`` is False when one exceeds :data:`FACTOR_CAP` (or is NaN): the
    scaled pass is then not used.
    """
    with np.errstate(over="ignore"):  # a weight past ~709 is inf: refused below, not a warning
        factors = [np.exp(np.asarray(weights, dtype=np.float64))
                   for weights in (length, transitions, start, end)]
    ok = all(bool(np.max(factor, initial=0.0) <= FACTOR_CAP) for factor in factors)
    return (ok, *factors)


def norm_floor(max_length):
    """Smallest normalizer the pass accepts with segments of up to ``max_length`` tokens.

    A segment's running token product may underflow to 0 (a term below
    1e-308) and then be divided by up to ``max_length`` normalizers before it
    would have been added to a cell. With every normalizer above this floor
    and every exponentiated weight below FACTOR_CAP, such a lost term stays
    below 1e-308 * 1e146 * FACTOR_CAP ** 4 = 1e-122: with at most 1e6 terms
    per cell, 1e-16 of CELL_FLOOR, below rounding error.
    """
    return 10.0 ** (-146.0 / max(int(max_length), 1))


@compiled()
def scaled_workspace(rows, n_labels, max_length, span_length):
    """Scratch for sequences of up to ``rows - 1`` tokens (see :func:`scaled_sequence_posteriors`).

    ``span_length`` is that of the span scores (0 for none).
    """
    # es, scaled es, exp first, exp last, cover, entry factors, exit factors, closing
    tokens = np.empty((8, rows, n_labels))
    bounds = np.empty((4, rows, n_labels))  # alpha, enter, beta, leave
    reach = np.zeros((2, rows, n_labels), np.bool_)  # alpha, enter
    blocked = np.zeros((rows, n_labels), np.int64)
    norm = np.empty(rows)
    counts = np.empty((n_labels, max_length + 2 * n_labels + 2))
    exp_spans = np.empty((rows if span_length else 0, span_length, n_labels))
    labels = np.empty((2, n_labels))  # per label: the running product, the cell's sum
    return tokens, bounds, reach, blocked, norm, counts, exp_spans, labels


@compiled()
def _feasible_end(state, first, last, length, spans, longest, lo, b, y, blocked, enter_reach):
    """Whether some segment of label y ending at b has a finite score from a reached entry.

    ``blocked[r, y]`` counts the ``-inf`` state scores of label y before local token r.
    """
    if last[lo + b - 1, y] == -np.inf:
        return False
    for d in range(1, min(b, longest[y]) + 1):
        a = b - d
        if blocked[b, y] != blocked[a, y]:
            break  # a forbidden token lies inside every longer segment too
        if (enter_reach[a, y] and first[lo + a, y] > -np.inf and length[y, d - 1] > -np.inf
                and (d > spans.shape[1] or spans[lo + a, d - 1, y] > -np.inf)):
            return True
    return False


@compiled()
def scaled_sequence_posteriors(state, first, last, length, spans, transitions, start, end,
                               longest, exp_length, exp_transitions, exp_start, exp_end,
                               smallest_norm, lo, hi, roles, span_marginals, workspace):
    """Scaled forward-backward of tokens lo..hi-1.

    Returns log Z and adds the role marginals of the tokens to ``roles``, the
    probability of each scored segment to ``span_marginals`` (unless it is
    empty) and the sequence's expected counts to the counts block of
    ``workspace`` (``counts[:, :L]`` lengths, then transitions, then start and
    end as columns), or returns NaN when a precision check fails or the
    sequence may be infeasible. After NaN, ``roles[lo:hi]`` and
    ``span_marginals[lo:hi]`` may be partly written: the caller zeroes them
    and runs the exact pass. A span score's exponential must stay below
    FACTOR_CAP, as those of the first and last scores.
    """
    log_shift = token_factors(state, first, last, spans, lo, hi, workspace)
    if log_shift != log_shift:
        return np.nan
    return scaled_factor_posteriors(state, first, last, length, spans, transitions, start,
                                    longest, exp_length, exp_transitions, exp_start, exp_end,
                                    smallest_norm, lo, hi, log_shift, roles, span_marginals,
                                    workspace)


@compiled()
def token_factors(state, first, last, spans, lo, hi, workspace):
    """The exponentiated scores of tokens lo..hi-1 into ``workspace``; their log shift.

    ``es[r] = exp(state[lo + r] - max)``, ``ef`` and ``el`` the exponentials
    of ``first`` and ``last``, ``esp`` those of the span scores, and
    ``blocked`` the running count of ``-inf`` state scores per label. Returns
    the sum of the per-token maxima (what the scaled pass adds to log Z), or
    NaN when some token has no finite state score or a factor exceeds
    FACTOR_CAP.
    """
    tokens, _, _, blocked, _, _, esp, _ = workspace
    es, ef, el = tokens[0], tokens[2], tokens[3]
    n_labels = state.shape[1]
    n = hi - lo
    log_shift = 0.0
    for y in range(n_labels):
        blocked[0, y] = 0
    for r in range(n):
        top = -np.inf
        for y in range(n_labels):
            if state[lo + r, y] > top:
                top = state[lo + r, y]
        if top == -np.inf:
            return np.nan
        log_shift += top
        for y in range(n_labels):
            es[r, y] = np.exp(state[lo + r, y] - top)
            ef[r, y] = np.exp(first[lo + r, y])
            el[r, y] = np.exp(last[lo + r, y])
            if ef[r, y] > FACTOR_CAP or el[r, y] > FACTOR_CAP:
                return np.nan
            blocked[r + 1, y] = blocked[r, y] + (state[lo + r, y] == -np.inf)
    n_scored = spans.shape[1]
    for r in range(n):
        for d in range(min(n_scored, n - r)):
            for y in range(n_labels):
                v = np.exp(spans[lo + r, d, y])
                if v > FACTOR_CAP:
                    return np.nan
                esp[r, d, y] = v
    return log_shift


@compiled()
def scaled_factor_posteriors(state, first, last, length, spans, transitions, start, longest,
                             exp_length, exp_transitions, exp_start, exp_end, smallest_norm,
                             lo, hi, log_shift, roles, span_marginals, workspace):
    """The scaled pass of :func:`scaled_sequence_posteriors` on factors ready in ``workspace``.

    ``es``, ``ef``, ``el``, ``esp`` and ``blocked`` as :func:`token_factors`
    makes them (a caller may compute them otherwise, e.g. as products of
    exponentiated weights), ``log_shift`` what the scaling of ``es`` took
    out. ``state``, ``first``, ``last`` and ``spans`` are read only to tell
    a ``-inf`` score (forbidden) from an underflow.
    """
    tokens, bounds, reach, blocked, norm, counts, esp, labels = workspace
    product, cell = labels[0], labels[1]
    longest_of_all = 0
    for y in range(longest.shape[0]):
        longest_of_all = max(longest_of_all, longest[y])
    es, esc, ef, el, cover = tokens[0], tokens[1], tokens[2], tokens[3], tokens[4]
    # opening[a, y] = enter[a, y] * ef[a, y], the weight of a y-segment opening at a;
    # exit[b, y] = el[b - 1, y] * beta[b, y], that of one closing at b; closing[b, y]
    # sums the segments that close at b (taken once per segment, both are per token)
    opening, exit_, closing = tokens[5], tokens[6], tokens[7]
    alpha, enter, beta, leave = bounds[0], bounds[1], bounds[2], bounds[3]
    alpha_reach, enter_reach = reach[0], reach[1]
    n_labels = state.shape[1]
    max_length = length.shape[1]
    n = hi - lo
    n_scored = spans.shape[1]
    with_marginals = span_marginals.shape[0] > 0
    log_z = log_shift

    # forward: alpha[b] normalized, enter[b] on the same scale
    for y in range(n_labels):
        enter[0, y] = exp_start[y]
        enter_reach[0, y] = start[y] > -np.inf
        opening[0, y] = enter[0, y] * ef[0, y]
    for b in range(1, n + 1):
        total = 0.0
        # every label's cell at once, the lengths outermost: the labels' running
        # products (the segment's tokens a..b-2 divided by norm[a+1..b-1]) are
        # independent chains of multiplies, which the processor overlaps
        for y in range(n_labels):
            product[y] = es[b - 1, y]
            cell[y] = 0.0
        for d in range(1, min(b, longest_of_all) + 1):
            a = b - d
            for y in range(n_labels):
                if d > longest[y]:
                    continue
                if d > 1:
                    product[y] *= esc[a, y]
                term = opening[a, y] * exp_length[y, d - 1] * product[y]
                if d <= n_scored:
                    term *= esp[a, d - 1, y]
                cell[y] += term
        for y in range(n_labels):
            acc = cell[y] * el[b - 1, y]
            if acc < CELL_FLOOR:
                if _feasible_end(state, first, last, length, spans, longest, lo, b, y,
                                 blocked, enter_reach):
                    return np.nan
                alpha_reach[b, y] = False
            else:
                alpha_reach[b, y] = True
            alpha[b, y] = acc
            total += acc
        if total == 0.0:
            # no segment may end here (the cell checks ruled out underflow):
            # nothing to scale
            total = 1.0
        elif not (smallest_norm <= total <= NORM_CEILING):
            return np.nan
        norm[b] = total
        log_z += np.log(total)
        for y in range(n_labels):
            alpha[b, y] /= total
            esc[b - 1, y] = es[b - 1, y] / total
        if b < n:
            for y in range(n_labels):
                acc = 0.0
                entered = False
                for x in range(n_labels):
                    acc += alpha[b, x] * exp_transitions[x, y]
                    entered = entered or (alpha_reach[b, x] and transitions[x, y] > -np.inf)
                enter[b, y] = acc
                enter_reach[b, y] = entered
                opening[b, y] = acc * ef[b, y]
    final = 0.0
    for y in range(n_labels):
        final += alpha[n, y] * exp_end[y]
    if not (CELL_FLOOR <= final <= NORM_CEILING):
        return np.nan
    log_z += np.log(final)

    # backward, with the segment and role marginals on the way
    lengths_ = counts[:, :max_length]
    pairs = counts[:, max_length:max_length + n_labels]
    counts[:, :] = 0.0
    for r in range(n + 1):
        for y in range(n_labels):
            cover[r, y] = 0.0
            closing[r, y] = 0.0
    for y in range(n_labels):
        beta[n, y] = exp_end[y] / final
        exit_[n, y] = el[n - 1, y] * beta[n, y]
    for a in range(n - 1, -1, -1):
        # as in the forward pass: every label at once, the lengths outermost
        for y in range(n_labels):
            product[y] = 1.0
            cell[y] = 0.0
        for d in range(1, min(n - a, longest_of_all) + 1):
            b = a + d
            for y in range(n_labels):
                if d > longest[y]:
                    continue
                product[y] *= esc[b - 1, y]
                term = exp_length[y, d - 1] * product[y] * exit_[b, y]
                if d <= n_scored:
                    term *= esp[a, d - 1, y]
                cell[y] += term
                # the segment's marginal; a NaN from an overflow here is caught
                # below by the check of leave, and the caller discards the pass
                segment = opening[a, y] * term
                if with_marginals and d <= n_scored:
                    span_marginals[lo + a, d - 1, y] += segment
                if d == 1:
                    roles[lo + a, SINGLE, y] += segment
                closing[b, y] += segment
                lengths_[y, d - 1] += segment
        for y in range(n_labels):
            value = ef[a, y] * cell[y]
            if not value < HUGE:
                return np.nan
            leave[a, y] = value
            opened = opening[a, y] * cell[y]
            roles[lo + a, FIRST, y] += opened
            # coverage as a difference array, summed below
            cover[a, y] += opened
        if a > 0:
            for x in range(n_labels):
                acc = 0.0
                for y in range(n_labels):
                    acc += exp_transitions[x, y] * leave[a, y]
                if not acc < HUGE:
                    return np.nan
                beta[a, x] = acc
                exit_[a, x] = el[a - 1, x] * acc
                for y in range(n_labels):
                    pair = alpha[a, x] * exp_transitions[x, y] * leave[a, y]
                    pairs[x, y] += pair
                    if x == y:
                        roles[lo + a, REPEAT, y] += pair
    first_labels = 0.0
    for y in range(n_labels):
        counts[y, max_length + n_labels] = exp_start[y] * leave[0, y]
        counts[y, max_length + n_labels + 1] = alpha[n, y] * exp_end[y] / final
        first_labels += counts[y, max_length + n_labels]
    if not abs(first_labels - 1.0) <= IDENTITY_TOLERANCE:
        return np.nan
    for y in range(n_labels):
        covered = 0.0
        for r in range(n):
            covered += cover[r, y] - closing[r, y]
            roles[lo + r, COVERED, y] = covered
            roles[lo + r, LAST, y] += closing[r + 1, y]
    return log_z
