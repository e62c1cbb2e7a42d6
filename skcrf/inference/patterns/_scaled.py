"""The scaled probability-domain pass over a pattern automaton, for sequences side by side.

The automaton (:mod:`skcrf.structures.patterns.automaton`) stores ``C ** 2``
dense moves and one explicit move per pattern; a longer state inherits the
moves it lacks from its failure state. The pass never expands them: per
token it costs the dense moves, the explicit moves and the states, so its
cost grows with the number of patterns, not with ``C ** (order + 1)``.

Forward, the mass a move carries is that of its source state's *subtree*
(the states whose failure chain passes through it) minus the subtrees of
its *holes*, the nearest states below with a move of their own on the
label. Rather than subtracting a hole's mass and adding it back with its
own weight, a leaf move ``e`` of weight ``w(parent) * rho_e`` adds
``mass * (rho_e - 1)`` to its parent, with ``rho_e - 1 = expm1(theta_e)``
exact for small pattern weights. Backward, a longer state's value is its
failure's plus, for each explicit move, the difference of the two moves'
values. The expected count of a move comes out as the count of the pattern
``s + b`` (the mass of ``s``'s whole subtree followed by ``b``); the pass
keeps each token's move values and subtree masses and forms the counts
once per group, as sums over its tokens of products
(:func:`group_counts`), rather than token by token. Only the
moves that have holes (and the dense ones) need a running sum, a *slot*:
``slot`` arrays are ``C ** 2`` dense moves, then the explicit moves with
holes. Most patterns are *plain* moves, leaves without holes, which only
hand a correction to their parent's slot: they get loops of their own.

The sequences of a group have one length and run as lanes: every array has
the lane last (``alpha[r, s, lane]``), so that the loops over lanes are
contiguous and vectorize, and the automaton's indices are read once for all
the lanes. One lane is the plain one-sequence pass.

Differences can cancel: one is exact only to the rounding of its larger
term. The pass flags a lane (and commits nothing of it) when a backward
value falls below ``GUARD`` times the one it was derived from, so rounding
stays below ``eps / GUARD`` of every marginal; the caller redoes it with the
exact log-space pass (:mod:`._patterns_exact`), as it does with every
sequence when a pattern weight exceeds :data:`THETA_GUARD` in magnitude (see
:func:`skcrf.inference.patterns.automaton.scaled_potentials`): the forward
corrections' rounding grows as ``exp(-theta)``. A ``-inf`` potential (a
forbidden label pair, a fixed label) gives exact zeros: every move on a
forbidden pair has weight 0, and a label's zero emission zeroes every state
that ends with it. Values below FLOOR are flushed to zero (they are far
below rounding of their token's total, and would be slow subnormals).

The layout of ``graph`` and ``potentials`` is that of :func:`kernel_graph`
and :func:`skcrf.inference.patterns.automaton.scaled_potentials`.
"""

import numpy as np

from .._runtime.batch import compiled
from .._logspace import FLOOR, HUGE

#: A backward value (a state's, or an inner move's) below GUARD times the
#: value it was derived from by a difference may have lost more than
#: ``eps / GUARD`` of its digits to rounding: the lane is redone exactly.
GUARD = 2.0 ** -26

#: How far a token's label marginals may sum from 1 before the lane is redone
#: exactly. The sum is 1 at every token only if the forward and backward
#: values are consistent, and differences that cancel break that: negative
#: pattern weights chained over a few tokens (``expm1(theta)`` near -1 at each
#: level) lost marginals up to 7% with weights of -7 and 5e-7 with -4, while
#: every value stayed above GUARD's bound.
IDENTITY_TOLERANCE = 1e-9

#: Pattern weights beyond this magnitude take every sequence to the exact
#: pass: a leaf move's forward correction loses ``eps * exp(theta)`` of its
#: source's mass to rounding.
THETA_GUARD = 16.0


@compiled(contract=True)
def _subtree_sums(values, failure, n_classes, agg):
    """agg[s] = the sum of ``values`` over the states whose failure chain passes through s."""
    n_states, m = values.shape
    for s in range(n_states):
        for lane in range(m):
            agg[s, lane] = values[s, lane]
    # deeper states come later, and a failure is always shallower
    for s in range(n_states - 1, n_classes - 1, -1):
        f = failure[s]
        for lane in range(m):
            agg[f, lane] += agg[s, lane]


@compiled(contract=True)
def forward_step(previous, emission, graph, potentials, agg, slot, current, totals, failed):
    """current = the next token's forward values (unnormalized); their sums into ``totals``.

    ``previous`` (n_states, m) holds the forward values of the token before,
    ``emission`` (n_classes, m) the next token's ``exp(unary)``; ``agg`` and
    ``slot`` are scratch. Values below FLOOR (and the negative ones rounding
    may leave) become 0; a lane where mass that reached a state with a
    possible label fell below FLOOR is flagged in ``failed``: later potentials
    (a strong end weight, a forbidden move out of the states that kept their
    mass) could make it dominate log Z.
    """
    (state_label, failure, state_owner, plain_src, plain_parent, plain_arc, forward_order,
     src, label, dest, own_slot, parent, leaf, arc, inner) = graph
    w_dense, w_root = potentials[0], potentials[1]
    forward_cm1, w_move, rho, cm1 = potentials[4], potentials[5], potentials[6], potentials[7]
    n_classes = w_dense.shape[0]
    n_states, m = previous.shape
    n_dense = n_classes * n_classes
    _subtree_sums(previous, failure, n_classes, agg)
    # a dense move's slot starts at its source's mass, an explicit move's at 0
    for a in range(n_classes):
        for b in range(n_classes):
            for lane in range(m):
                slot[a * n_classes + b, lane] = agg[a, lane]
    for k in range(n_dense, slot.shape[0]):
        for lane in range(m):
            slot[k, lane] = 0.0
    # plain moves, by parent: their corrections to it
    for j in range(forward_order.shape[0]):
        i = forward_order[j]
        s = plain_src[i]
        p = plain_parent[i]
        c = forward_cm1[j]
        for lane in range(m):
            slot[p, lane] += agg[s, lane] * c
    # the other explicit moves, deepest first, once their holes have handed in
    for i in range(src.shape[0] - 1, -1, -1):
        s = src[i]
        p = parent[i]
        own = own_slot[i]
        if leaf[i]:  # a leaf with holes
            c = cm1[i]
            r = rho[i]
            for lane in range(m):
                slot[p, lane] += agg[s, lane] * c + r * slot[own, lane]
        else:
            d = dest[i]
            w = w_move[i]
            if own < 0:
                for lane in range(m):
                    current[d, lane] = w * agg[s, lane]
                    slot[p, lane] -= agg[s, lane]
            else:
                for lane in range(m):
                    current[d, lane] = w * (agg[s, lane] + slot[own, lane])
                    slot[p, lane] -= agg[s, lane]
    # dense moves into single labels
    for b in range(n_classes):
        for lane in range(m):
            current[b, lane] = 0.0
    for a in range(n_classes):
        for b in range(n_classes):
            w = w_root[a, b]
            if w != 0.0:
                k = a * n_classes + b
                for lane in range(m):
                    current[b, lane] += w * slot[k, lane]
    # dense moves into label pairs (the states right after the single labels)
    for s in range(n_classes, n_states):
        e = state_owner[s]
        if e >= n_dense:
            break
        w = w_dense[e // n_classes, e % n_classes]
        for lane in range(m):
            current[s, lane] = w * slot[e, lane]
    for lane in range(m):
        totals[lane] = 0.0
    for s in range(n_states):
        row = state_label[s]
        for lane in range(m):
            v = current[s, lane] * emission[row, lane]
            if not v > FLOOR:
                if current[s, lane] > 0.0 and emission[row, lane] > 0.0:
                    failed[lane] = True
                v = 0.0
            current[s, lane] = v
            totals[lane] += v


@compiled(contract=True)
def backward_step(following, beta_next, graph, potentials, arcv, inner_values, dsum, beta,
                  failed):
    """beta = the backward values of a token from the next one's.

    ``following`` (n_classes, m) is the next token's emission divided by its
    norm, ``beta_next`` (n_states, m) its backward values. Leaves in
    ``arcv`` (n_slots, m) the value of every move with a slot, in
    ``inner_values`` (n_inner, m) that of every inner move. A lane whose
    differences lost too many digits (see :data:`GUARD`), or whose values
    grew past HUGE, is flagged in ``failed``. ``dsum`` is scratch.
    """
    (state_label, failure, state_owner, plain_src, plain_parent, plain_arc, forward_order,
     src, label, dest, own_slot, parent, leaf, arc, inner) = graph
    w_dense, w_root, plain_rho, plain_cm1 = potentials[:4]
    w_move, rho, cm1 = potentials[5], potentials[6], potentials[7]
    n_classes = w_dense.shape[0]
    n_states, m = beta.shape
    n_dense = n_classes * n_classes
    for a in range(n_classes):
        for lane in range(m):
            beta[a, lane] = 0.0
    for a in range(n_classes):
        for b in range(n_classes):
            w = w_root[a, b]
            k = a * n_classes + b
            for lane in range(m):
                v = w * following[b, lane] * beta_next[b, lane]
                arcv[k, lane] = v
                beta[a, lane] += v
    for s in range(n_classes, n_states):
        e = state_owner[s]
        if e >= n_dense:
            break
        a = e // n_classes
        w = w_dense[a, e % n_classes]
        row = state_label[s]
        for lane in range(m):
            v = w * following[row, lane] * beta_next[s, lane]
            arcv[e, lane] = v
            beta[a, lane] += v
    for s in range(n_states):
        for lane in range(m):
            dsum[s, lane] = 0.0
    # the moves with slots or inner, parents first
    for i in range(src.shape[0]):
        s = src[i]
        p = parent[i]
        own = own_slot[i]
        if leaf[i]:  # a leaf with holes
            r = rho[i]
            c = cm1[i]
            for lane in range(m):
                arcv[own, lane] = arcv[p, lane] * r
                dsum[s, lane] += arcv[p, lane] * c
        else:
            w = w_move[i]
            row = label[i]
            d = dest[i]
            k = inner[i]
            for lane in range(m):
                v = w * following[row, lane] * beta_next[d, lane]
                if v < GUARD * arcv[p, lane]:
                    failed[lane] = True
                dsum[s, lane] += v - arcv[p, lane]
                inner_values[k, lane] = v
            if own >= 0:
                for lane in range(m):
                    arcv[own, lane] = inner_values[k, lane]
    # plain moves: a leaf's value is its parent's times rho
    for i in range(plain_src.shape[0]):
        s = plain_src[i]
        p = plain_parent[i]
        c = plain_cm1[i]
        for lane in range(m):
            dsum[s, lane] += arcv[p, lane] * c
    for s in range(n_classes, n_states):
        f = failure[s]
        for lane in range(m):
            v = beta[f, lane] + dsum[s, lane]
            if v < GUARD * beta[f, lane] or not v < HUGE:
                failed[lane] = True
            beta[s, lane] = v if v > FLOOR else 0.0
    for a in range(n_classes):
        for lane in range(m):
            if not beta[a, lane] < HUGE:
                failed[lane] = True


@compiled(contract=True)
def _lane_dot(x, y, out):
    """out[lane] = sum over the first axis of x[:, lane] * y[:, lane]."""
    n, m = x.shape
    for lane in range(m):
        out[lane] = 0.0
    for t in range(n):
        for lane in range(m):
            out[lane] += x[t, lane] * y[t, lane]


@compiled(contract=True)
def group_counts(graph, potentials, agg_t, arc_t, inner_t, counts, nk, dot, share):
    """Each lane's expected count of every move, summed over its transitions.

    ``agg_t`` (n_states, T, m) holds each transition's subtree masses of the
    token before, ``arc_t`` (n_slots, T, m) and ``inner_t`` (n_inner, T, m)
    the move values of the backward pass: each row's values over the
    transitions are contiguous, for the sums. A move ``e`` of state ``s``
    counts ``sum_t value_t(e) * agg_t(s)`` plus what its holes carry beyond
    their share of its value (``nk``, per slot); a leaf's value is its
    parent's times ``rho``. ``counts`` (n_arcs, m) is overwritten; ``nk``,
    ``dot`` and ``share`` (m,) are scratch.
    """
    (state_label, failure, state_owner, plain_src, plain_parent, plain_arc, forward_order,
     src, label, dest, own_slot, parent, leaf, arc, inner) = graph
    plain_rho, plain_cm1 = potentials[2], potentials[3]
    rho = potentials[6]
    n_classes = potentials[0].shape[0]
    m = counts.shape[1]
    for k in range(nk.shape[0]):
        for lane in range(m):
            nk[k, lane] = 0.0
    for i in range(plain_src.shape[0]):
        p = plain_parent[i]
        _lane_dot(arc_t[p], agg_t[plain_src[i]], dot)
        e = plain_arc[i]
        r = plain_rho[i]
        c = plain_cm1[i]
        for lane in range(m):
            counts[e, lane] = r * dot[lane]
            nk[p, lane] += c * dot[lane]
    # deepest first, once their holes have handed in
    for i in range(src.shape[0] - 1, -1, -1):
        s = src[i]
        p = parent[i]
        own = own_slot[i]
        e = arc[i]
        _lane_dot(arc_t[p], agg_t[s], share)  # the parent's value on the subtree
        if leaf[i]:
            for lane in range(m):
                dot[lane] = rho[i] * share[lane]
        else:
            _lane_dot(inner_t[inner[i]], agg_t[s], dot)
        for lane in range(m):
            total = dot[lane]
            if own >= 0:
                total += nk[own, lane]
            counts[e, lane] = total
            nk[p, lane] += total - share[lane]
    for a in range(n_classes):
        for b in range(n_classes):
            k = a * n_classes + b
            _lane_dot(arc_t[k], agg_t[a], dot)
            for lane in range(m):
                counts[k, lane] = dot[lane] + nk[k, lane]


@compiled(contract=True)
def scaled_lanes(emission, n, log_shift, graph, potentials, with_counts, marginals, counts,
                 log_z, work):
    """The scaled pass of ``m`` sequences of ``n`` tokens side by side.

    Parameters
    ----------
    emission : (n, n_classes, m) float64
        ``exp(unary - shift)`` of each lane's tokens, no value above 1.
    n : int
        The sequences' length, at least 1.
    log_shift : (m,) float64
        What to add to each lane's log Z: its rows' shifts and the
        potentials' (see :func:`skcrf.inference.patterns.automaton.scaled_potentials`).
    graph, potentials : tuple
    with_counts : bool
        Whether to compute the lanes' expected move counts.
    marginals : (n, n_classes, m) float64
        Each lane's label marginals.
    counts : (n_arcs,) float64
        With ``with_counts``, each lane's expected count of every move,
        summed over its tokens, is added in, lane after lane (but the lanes
        the pass gives up on).
    log_z : (m,) float64
        Each lane's log Z, NaN for a lane the pass gives up on (its marginals
        and counts are then meaningless).
    work : tuple
        From :func:`scaled_workspace`, with room for ``n`` tokens and ``m`` lanes.
        The slot count is read from it: its ``slot`` buffer over its lane count.
    """
    state_label = graph[0]
    exp_start, exp_end = potentials[8], potentials[9]
    n_classes = exp_start.shape[0]
    n_states = state_label.shape[0]
    n_inner = graph[14].shape[0] - (graph[14] < 0).sum()
    m = log_z.shape[0]
    n_slots = work[4].shape[0] // work[7].shape[0]
    # views of the flat buffers with this group's shape, contiguous
    alpha = work[0][:n * n_states * m].reshape(n, n_states, m)
    norm = work[1][:n * m].reshape(n, m)
    beta = work[2][:2 * n_states * m].reshape(2, n_states, m)
    agg = work[3][:n_states * m].reshape(n_states, m)
    slot = work[4][:n_slots * m].reshape(n_slots, m)
    arcv = work[5][:n_slots * m].reshape(n_slots, m)
    dsum = work[6][:n_states * m].reshape(n_states, m)
    failed = work[7][:m]
    following = work[8][:n_classes * m].reshape(n_classes, m)
    inner_values = work[9][:n_inner * m].reshape(n_inner, m)
    # with counts, each transition's subtree masses and move values are kept
    # where the passes compute them, for group_counts
    n_t = max(n - 1, 1) if with_counts else 0
    agg_t = work[10][:n_states * n_t * m].reshape(n_states, n_t, m)
    arc_t = work[11][:n_slots * n_t * m].reshape(n_slots, n_t, m)
    inner_t = work[12][:n_inner * n_t * m].reshape(n_inner, n_t, m)
    n_arcs = counts.shape[0] if with_counts else 0
    lane_counts = work[13][:n_arcs * m].reshape(n_arcs, m)
    for lane in range(m):
        failed[lane] = False
    # token 0: single labels
    for s in range(n_states):
        for lane in range(m):
            alpha[0, s, lane] = 0.0
    for lane in range(m):
        norm[0, lane] = 0.0
    for a in range(n_classes):
        for lane in range(m):
            v = exp_start[a] * emission[0, a, lane]
            if v < FLOOR and exp_start[a] > 0.0 and emission[0, a, lane] > 0.0:
                failed[lane] = True  # a possible first label lost its digits
            alpha[0, a, lane] = v
            norm[0, lane] += v
    for r in range(n):
        if r > 0:
            forward_step(alpha[r - 1], emission[r], graph, potentials, agg, slot, alpha[r],
                         norm[r], failed)
            if with_counts:
                for s in range(n_states):
                    for lane in range(m):
                        agg_t[s, r - 1, lane] = agg[s, lane]
        for lane in range(m):
            total = norm[r, lane]
            if not (total > FLOOR and total < HUGE):
                failed[lane] = True
                norm[r, lane] = 1.0
        for s in range(n_states):
            for lane in range(m):
                alpha[r, s, lane] /= norm[r, lane]
    cur = (n - 1) % 2
    for lane in range(m):
        final = 0.0
        for s in range(n_states):
            term = alpha[n - 1, s, lane] * exp_end[state_label[s]]
            if term < FLOOR and alpha[n - 1, s, lane] > 0.0 and exp_end[state_label[s]] > 0.0:
                failed[lane] = True
            final += term
        if not (final > FLOOR and final < HUGE):
            failed[lane] = True
            final = 1.0
        log_z[lane] = log_shift[lane] + np.log(final)
        for r in range(n):
            log_z[lane] += np.log(norm[r, lane])
        for s in range(n_states):
            beta[cur, s, lane] = exp_end[state_label[s]] / final
    for r in range(n - 1, -1, -1):
        row = marginals[r]
        for b in range(n_classes):
            for lane in range(m):
                row[b, lane] = 0.0
        for s in range(n_states):
            label = state_label[s]
            for lane in range(m):
                row[label, lane] += alpha[r, s, lane] * beta[cur, s, lane]
        for lane in range(m):
            total = 0.0
            for b in range(n_classes):
                total += row[b, lane]
            if not abs(total - 1.0) <= IDENTITY_TOLERANCE:
                failed[lane] = True
        if r == 0:
            break
        nxt = cur
        cur = 1 - cur
        for b in range(n_classes):
            for lane in range(m):
                following[b, lane] = emission[r, b, lane] / norm[r, lane]
        backward_step(following, beta[nxt], graph, potentials, arcv, inner_values, dsum,
                      beta[cur], failed)
        if with_counts:
            t = r - 1
            for k in range(n_slots):
                for lane in range(m):
                    arc_t[k, t, lane] = arcv[k, lane]
            for k in range(n_inner):
                for lane in range(m):
                    inner_t[k, t, lane] = inner_values[k, lane]
    for lane in range(m):
        if failed[lane]:
            log_z[lane] = np.nan
    if with_counts and n > 1:  # one token has no transition to count
        # scratch: the slots, and two (m,) rows of the backward values, done
        # with (``dsum`` has a single row when there is a single state)
        group_counts(graph, potentials, agg_t, arc_t, inner_t, lane_counts, slot, beta[0, 0],
                     beta[1, 0])
        # the lanes whose log Z is NaN (also through their log_shift) are
        # left to the caller; move by move, as a lane's counts are a column
        for e in range(n_arcs):
            for lane in range(m):
                if not np.isnan(log_z[lane]):
                    counts[e] += lane_counts[e, lane]


@compiled()
def workspace_size(n_states, n_slots, n_inner, with_counts):
    """Values :func:`scaled_lanes` keeps per token and lane: what bounds a group's lanes."""
    return n_states + (n_states + n_slots + n_inner if with_counts else 0)


@compiled()
def scaled_workspace(token_lanes, n_states, n_classes, n_slots, n_inner, n_arcs, m,
                     with_counts):
    """Scratch of :func:`scaled_lanes` for groups of up to ``m`` lanes and ``token_lanes`` tokens times lanes.

    Flat buffers (``alpha, norm, beta, agg, slot, arcv, dsum, failed,
    following, inner_values, agg_t, arc_t, inner_t, lane_counts``), which
    each group views in its own shape; the last four are empty without
    ``with_counts``.
    """
    t = token_lanes if with_counts else 0
    arcs = n_arcs * m if with_counts else 0
    return (np.empty(token_lanes * n_states), np.empty(token_lanes),
            np.empty(2 * n_states * m), np.empty(n_states * m), np.empty(n_slots * m),
            np.empty(n_slots * m), np.empty(n_states * m), np.zeros(m, np.bool_),
            np.empty(n_classes * m), np.empty(n_inner * m), np.empty(n_states * t),
            np.empty(n_slots * t), np.empty(n_inner * t), np.empty(arcs))
