"""Inference for chains of any order: forward-backward, Viterbi and n-best over a pattern automaton.

The automaton comes from :class:`skcrf.structures.patterns.automaton.PatternAutomaton`
as arrays; its moves ("arcs") are numbered ``a * C + b`` for the dense moves
of single labels, then the explicit moves of longer states. The kernels take:

- ``unary`` : (n_tokens, n_classes) float64, log-space state scores;
- ``graph`` : the tuple ``(state_label, failure, state_arcs, state_owner,
  pair_state, arc_src, arc_label, arc_dest, arc_parent, arc_leaf)`` of the
  automaton's arrays (:func:`automaton_graph`);
- ``arc_weight`` : (n_arcs,) float64, each move's log weight (its label
  pair's, ``-inf`` where forbidden, plus its patterns'); ``own`` : (n_arcs,)
  the part of it a move adds to its parent's (its pattern's weight);
- ``start``, ``end`` : (n_classes,) float64; ``offsets`` as in :mod:`.chain`.

Every sequence goes through the scaled pass (:mod:`._patterns_scaled`, cost
per token of order ``C ** 2 + n_arcs + n_states``) first; the few it cannot
vouch for, and all of them when a weight is extreme, are redone by the exact
log-space pass (:mod:`._patterns_exact`, ``n_states * C`` per token). Paths
come from :mod:`._patterns_paths`. Nothing here validates or mutates its
inputs.
"""

import numpy as np

from .._runtime.batch import (chunk_bounds, compiled, default_n_chunks, least_chunk_count,
                              longest_sequence, run_chunks)
from .._logspace import exp_underflowed, shifted_exp, shifted_exp_rows
from ._exact import exact_sequence, exact_workspace
from ._paths import best_path, nbest_paths_of, path_workspace
from ._scaled import THETA_GUARD, scaled_lanes, scaled_workspace, workspace_size

#: The scaled pass exponentiates potentials shifted by their maximum; a finite
#: one further below it than this could underflow, so the exact pass runs.
_SPREAD_LIMIT = 600.0


def _spread(values):
    finite = values[np.isfinite(values)]
    return float(finite.max() - finite.min()) if finite.size else 0.0


def scaled_potentials(arc_weight, own, graph, start, end):
    """What the scaled pass needs from the potentials, and whether it may run at all.

    Returns ``(potentials, log_shift, move_shift, fast)``: ``potentials`` is
    the tuple ``(w_dense, w_root, plain_rho, plain_cm1, forward_cm1, w_move,
    rho, cm1, exp_start, exp_end)``: the dense moves' weights exponentiated
    after a shift (``w_root`` without the moves into label pairs), ``rho =
    exp(own)`` and ``cm1 = expm1(own)`` of the plain moves (``cm1`` also in
    the forward order), and the shifted
    weights, ``rho`` and ``cm1`` of the other explicit moves, in the order
    of ``graph`` (:meth:`~skcrf.structures.patterns.automaton.PatternAutomaton.kernel_graph`).
    log Z gains ``log_shift`` plus ``move_shift`` per move. ``fast`` is
    False when a pattern weight exceeds :data:`THETA_GUARD` in magnitude,
    or a finite potential lies too far below its maximum.
    """
    n_classes = start.shape[0]
    n_dense = n_classes * n_classes
    state_owner, plain_arc, forward_order, moves = graph[2], graph[5], graph[6], graph[13]
    dense = arc_weight[:n_dense]
    finite = dense[np.isfinite(dense)]
    move_shift = float(finite.max()) if finite.size else 0.0
    with np.errstate(over="ignore"):
        w_arc = np.exp(arc_weight - move_shift)
        rho = np.exp(own)
        cm1 = np.expm1(own)
    w_dense = np.ascontiguousarray(w_arc[:n_dense].reshape(n_classes, n_classes))
    w_root = w_dense.copy()
    pairs = state_owner[(state_owner >= 0) & (state_owner < n_dense)]
    w_root.ravel()[pairs] = 0.0
    start_max, exp_start = shifted_exp(start)
    end_max, exp_end = shifted_exp(end)
    fast = bool(np.abs(own).max(initial=0.0) <= THETA_GUARD
                and max(_spread(dense), _spread(start), _spread(end)) <= _SPREAD_LIMIT
                and np.isfinite(w_arc[np.isfinite(arc_weight)]).all())
    plain_cm1 = cm1[plain_arc]
    return ((w_dense, w_root, rho[plain_arc], plain_cm1, plain_cm1[forward_order], w_arc[moves],
             rho[moves], cm1[moves], exp_start, exp_end), float(start_max + end_max),
            move_shift, fast)


def forward_backward_patterns(unary, graph, arc_weight, own, start, end, offsets, with_counts,
                              exact_tables):
    """Log partition functions, token marginals and the expected count of every move.

    Parameters
    ----------
    unary, arc_weight, own, start, end, offsets
        See the module docstring.
    graph : tuple
        The automaton's arrays for the scaled pass
        (:meth:`~skcrf.structures.patterns.automaton.PatternAutomaton.kernel_graph`).
    with_counts : bool
        Whether to compute the expected counts (training needs them).
    exact_tables : callable
        Returns ``(moves, arc_dest, arc_parent, state_label)`` for the exact
        pass: the (n_states, n_classes) table of the move each state takes on
        each label, and the moves' destinations and parents (over all moves);
        called only if some sequence needs the exact pass.

    Returns
    -------
    log_z : (n_sequences,) float64
        0 for an empty sequence, ``-inf`` for one with no feasible labelling.
    marginals : (n_tokens, n_classes) float64
        Rows sum to 1; zeros for the tokens of an infeasible sequence.
    arc_counts : (n_arcs,) float64
        For a dense move ``a * C + b`` the expected number of label pairs
        ``(a, b)``; for an explicit move of state ``s`` on ``b``, of the
        n-gram ``s + b``. Summed over the sequences; empty without
        ``with_counts``.
    """
    n_tokens, n_classes = unary.shape
    n_sequences = offsets.shape[0] - 1
    n_arcs = arc_weight.shape[0]
    with_counts = bool(with_counts)
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    log_z = np.zeros(n_sequences)
    marginals = np.zeros((n_tokens, n_classes))
    chunk_counts = np.zeros((n_chunks if with_counts else 1, n_arcs if with_counts else 0))
    potentials, log_shift, move_shift, fast = scaled_potentials(
        arc_weight, own, graph, start, end)
    exact = np.diff(offsets) > 0
    if fast:
        exact[:] = False
        lane_chunks = least_chunk_count(offsets, LANE_CHUNK_SEQUENCES, LANE_CHUNKS)
        lane_bounds = chunk_bounds(offsets, lane_chunks)
        lane_counts = np.zeros((lane_chunks if with_counts else 1, n_arcs if with_counts else 0))
        n_slots = n_classes * n_classes + int((graph[10] >= 0).sum())
        run_chunks(_scaled_chunks, lane_chunks, lane_bounds, unary, offsets, graph, n_slots,
                   potentials, log_shift, move_shift, with_counts, log_z, marginals,
                   lane_counts, exact)
    if exact.any():
        moves, arc_dest, arc_parent, state_label = exact_tables()
        run_chunks(_exact_chunks, n_chunks, bounds, unary, offsets, moves, arc_weight,
                   arc_dest, arc_parent, state_label, start, end, with_counts, log_z,
                   marginals, chunk_counts, exact)
    arc_counts = np.zeros(n_arcs if with_counts else 0)
    if with_counts:
        if fast:
            for c in range(lane_counts.shape[0]):
                arc_counts += lane_counts[c]
        for c in range(n_chunks):
            arc_counts += chunk_counts[c]
    return log_z, marginals, arc_counts


#: Most sequences run side by side in the scaled pass.
LANE_MAX = 32
#: Values a group of lanes may keep, in float64 (its forward values, and with
#: counts the values the counts need), unless one sequence needs more.
LANE_BUDGET = 1 << 22
#: Sequences per chunk of the scaled pass, at least: a chunk groups its
#: sequences by length, and runs a group's side by side.
LANE_CHUNK_SEQUENCES = 2048
#: Chunks of the scaled pass, at most: enough for the threads to share.
LANE_CHUNKS = 16


@compiled()
def length_groups(offsets, lo, hi, per_token):
    """Sequences lo..hi-1 by length (stable), in groups of one length run side by side.

    Returns ``(order, group_ends)``: the sequences in ``order`` are cut into
    groups ending at ``group_ends`` (exclusive); a group holds at most
    :func:`lanes_of` sequences, so that what it keeps (``per_token`` values
    per token and lane) fits :data:`LANE_BUDGET`. Empty sequences are left
    out (there is nothing to run). The grouping depends on the data only.
    """
    # a counting sort by length, stable (np.argsort would compile a merge sort)
    lengths = np.empty(hi - lo, np.int64)
    longest = 0
    for q in range(lo, hi):
        lengths[q - lo] = offsets[q + 1] - offsets[q]
        longest = max(longest, lengths[q - lo])
    starts = np.zeros(longest + 2, np.int64)
    for k in range(hi - lo):
        starts[lengths[k] + 1] += 1
    for n in range(longest + 1):
        starts[n + 1] += starts[n]
    order = np.empty(hi - lo, np.int64)
    for q in range(lo, hi):
        n = lengths[q - lo]
        order[starts[n]] = q
        starts[n] += 1
    group_ends = np.empty(hi - lo, np.int64)
    n_groups = 0
    # the empty sequences come first (sorted by length): leave them out
    n_empty = starts[0]
    grouped = order[n_empty:]
    at = 0
    while at < hi - lo - n_empty:
        n = lengths[grouped[at] - lo]
        run = at + 1
        while run < hi - lo - n_empty and lengths[grouped[run] - lo] == n:
            run += 1
        most = lanes_of(n, per_token)
        pieces = (run - at + most - 1) // most
        for p in range(1, pieces + 1):
            group_ends[n_groups] = at + ((run - at) * p) // pieces
            n_groups += 1
        at = run
    return grouped, group_ends[:n_groups]


@compiled()
def lanes_of(n, per_token):
    """How many sequences of ``n`` tokens run side by side."""
    return max(1, min(LANE_MAX, LANE_BUDGET // max(1, n * per_token)))


@compiled()
def lane_buffers(offsets, lo, hi, graph, n_classes, n_slots, n_arcs, with_counts):
    """The groups of lanes of sequences lo..hi-1 (one chunk), and the arrays they run in.

    The scaled pass's group driver, shared by prediction (:func:`_scaled_chunks`)
    and training (:mod:`skcrf.structures.patterns._fused`), which differ only
    in how a group's emission rows are made and where its marginals go.
    Returns ``(order, group_ends, work, emission, lane_marginals, shift,
    lane_log_z, rows)``: the groups of :func:`length_groups`, the workspace
    of :func:`~._scaled.scaled_lanes`, room for a group's emission and
    marginals (see :func:`group_lanes`, :func:`run_group`), its lanes' shifts
    and log Z, and (longest, n_classes) scratch rows.
    """
    n_states = graph[0].shape[0]
    n_inner = graph[14].shape[0] - (graph[14] < 0).sum()
    per_token = workspace_size(n_states, n_slots, n_inner, with_counts)
    longest = max(longest_sequence(offsets, lo, hi), 1)
    # a group's tokens times lanes: at most the budget's, and the chunk's tokens
    token_lanes = max(longest, min(LANE_BUDGET // per_token, offsets[hi] - offsets[lo]))
    work = scaled_workspace(token_lanes, n_states, n_classes, n_slots, n_inner, n_arcs,
                            LANE_MAX, with_counts)
    order, group_ends = length_groups(offsets, lo, hi, per_token)
    return (order, group_ends, work, np.empty(longest * n_classes * LANE_MAX),
            np.empty(longest * n_classes * LANE_MAX), np.empty(LANE_MAX), np.empty(LANE_MAX),
            np.empty((longest, n_classes)))


@compiled(inline=True)
def group_lanes(offsets, order, group_ends, g, emission, n_classes):
    """Group g of :func:`lane_buffers`: ``(first, m, n, lanes)``.

    Its sequences are ``order[first:first + m]``, all of ``n`` tokens;
    ``lanes`` (n, n_classes, m), a view of ``emission``, is for their
    emission rows, lane by lane.
    """
    first = group_ends[g - 1] if g > 0 else 0
    m = group_ends[g] - first
    n = offsets[order[first] + 1] - offsets[order[first]]
    return first, m, n, emission[:n * n_classes * m].reshape(n, n_classes, m)


@compiled()
def run_group(lanes, n, m, shift, graph, potentials, with_counts, lane_marginals, counts,
              lane_log_z, work, order, first, offsets, exact, log_z):
    """The scaled pass of a group of :func:`group_lanes` whose emission is in ``lanes``.

    Writes each sequence's log Z, or flags it in ``exact`` where the pass
    gives up; with ``with_counts`` adds the group's expected counts to
    ``counts``. Returns the lanes' marginals, (n, n_classes, m), a view of
    ``lane_marginals`` (see :func:`lane_rows`).
    """
    n_classes = lanes.shape[1]
    lane_z = lane_log_z[:m]
    margins = lane_marginals[:n * n_classes * m].reshape(n, n_classes, m)
    scaled_lanes(lanes, n, shift[:m], graph, potentials, with_counts, margins, counts, lane_z,
                 work)
    for lane in range(m):
        q = order[first + lane]
        if np.isnan(lane_z[lane]):
            exact[q] = True
        else:
            log_z[q] = lane_z[lane]
    return margins


@compiled(inline=True)
def lane_rows(lanes, lane, out, out_lo):
    """``out[out_lo + r] = lanes[r, :, lane]`` for every token r of the group."""
    for r in range(lanes.shape[0]):
        for b in range(lanes.shape[1]):
            out[out_lo + r, b] = lanes[r, b, lane]


@compiled()
def group_emission(unary, offsets, order, first, m, n, shift, lanes, rows):
    """Emission lanes of the group ``order[first:first + m]`` of ``n``-token sequences.

    ``lanes`` (n, n_classes, m) gets each token's ``exp(unary - max)``;
    ``shift`` (m,) each lane's sum of maxima added to it, NaN for a sequence
    with a token of no possible label (the exact pass then says it is
    infeasible) or a possible label whose emission underflowed (the exact
    pass scores it), whose lane gets ones. ``rows`` (n, n_classes) is scratch.
    """
    n_classes = unary.shape[1]
    for lane in range(m):
        lo = offsets[order[first + lane]]
        total, _ = shifted_exp_rows(unary, lo, lo + n, rows, shift[lane], False)
        if np.isnan(total) or exp_underflowed(unary, lo, n, rows):
            total = np.nan
            for r in range(n):
                for b in range(n_classes):
                    rows[r, b] = 1.0
        shift[lane] = total
        for r in range(n):
            for b in range(n_classes):
                lanes[r, b, lane] = rows[r, b]


@compiled()
def _scaled_chunks(chunk_lo, chunk_hi, bounds, unary, offsets, graph, n_slots, potentials,
                   log_shift, move_shift, with_counts, log_z, marginals, chunk_counts, exact):
    """The scaled pass of the chunks' sequences; ``exact`` flags those it gives up on."""
    n_classes = unary.shape[1]
    for c in range(chunk_lo, chunk_hi):
        (order, group_ends, work, emission, lane_marginals, shift, lane_log_z,
         rows) = lane_buffers(offsets, bounds[c], bounds[c + 1], graph, n_classes, n_slots,
                              chunk_counts.shape[1], with_counts)
        partial = chunk_counts[np.int64(c) if with_counts else np.int64(0)]
        for g in range(group_ends.shape[0]):
            first, m, n, lanes = group_lanes(offsets, order, group_ends, g, emission, n_classes)
            for lane in range(m):
                shift[lane] = log_shift + (n - 1) * move_shift
            group_emission(unary, offsets, order, first, m, n, shift, lanes, rows)
            margins = run_group(lanes, n, m, shift, graph, potentials, with_counts,
                                lane_marginals, partial, lane_log_z, work, order, first,
                                offsets, exact, log_z)
            for lane in range(m):
                q = order[first + lane]
                if not exact[q]:
                    lane_rows(margins, lane, marginals, offsets[q])


@compiled()
def _exact_chunks(chunk_lo, chunk_hi, bounds, unary, offsets, moves, arc_weight, arc_dest,
                  arc_parent, state_label, start, end, with_counts, log_z, marginals,
                  chunk_counts, exact):
    """The exact log-space pass of the chunks' sequences that ``exact`` flags."""
    n_states, n_classes = moves.shape
    for c in range(chunk_lo, chunk_hi):
        if not exact[bounds[c]:bounds[c + 1]].any():
            continue
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        work = exact_workspace(longest, n_states, n_classes,
                               arc_weight.shape[0] if with_counts else 0)
        partial = chunk_counts[np.int64(c) if with_counts else np.int64(0)]
        for q in range(bounds[c], bounds[c + 1]):
            if exact[q]:
                log_z[q] = exact_sequence(unary, offsets[q], offsets[q + 1], moves, arc_weight,
                                          arc_dest, arc_parent, state_label, start, end,
                                          with_counts, marginals, offsets[q], partial, work)


def viterbi_patterns(unary, moves, arc_weight, arc_dest, state_label, start, end, offsets):
    """Most likely label path of every sequence: (n_tokens,) int64 label ids.

    Ties go to the lowest source state. A ``-inf`` potential never appears in
    a returned path unless the sequence has no feasible labelling at all.
    """
    n_tokens, n_classes = unary.shape
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    label_ids = np.zeros(n_tokens, np.int64)
    run_chunks(_viterbi_chunks, n_chunks, bounds, unary, offsets, moves, arc_weight, arc_dest,
               state_label, start, end, label_ids)
    return label_ids


@compiled()
def _viterbi_chunks(chunk_lo, chunk_hi, bounds, unary, offsets, moves, arc_weight, arc_dest,
                    state_label, start, end, label_ids):
    n_states, n_classes = moves.shape
    for c in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        work = path_workspace(longest, n_states, n_classes, np.int64(1))
        for q in range(bounds[c], bounds[c + 1]):
            if offsets[q + 1] > offsets[q]:
                best_path(unary, offsets[q], offsets[q + 1], moves, arc_weight, arc_dest,
                          state_label, start, end, label_ids, work)


def incoming_moves(moves, arc_dest):
    """Each state's incoming moves, by state: ``(in_ptr, in_src, in_arc)``, sources increasing."""
    n_states, n_classes = moves.shape
    src = np.repeat(np.arange(n_states, dtype=np.int64), n_classes)
    arc = moves.ravel()
    dest = arc_dest[arc]
    order = np.lexsort((src, dest))
    in_ptr = np.zeros(n_states + 1, dtype=np.int64)
    np.cumsum(np.bincount(dest, minlength=n_states), out=in_ptr[1:])
    return in_ptr, np.ascontiguousarray(src[order]), np.ascontiguousarray(arc[order])


def nbest_patterns(unary, moves, arc_weight, arc_dest, state_label, start, end, offsets, n):
    """The ``n`` best label paths of every sequence: (paths, counts).

    ``paths`` (n_tokens, n) holds the k-th best path of each sequence in
    column k (0 past ``counts[q]``); ``counts`` (n_sequences,) how many
    feasible paths each has (at most ``n``; 1 for an empty sequence). The
    paths' scores are for the caller to compute.
    """
    n_tokens, n_classes = unary.shape
    n_sequences = offsets.shape[0] - 1
    n_chunks = default_n_chunks(offsets)
    bounds = chunk_bounds(offsets, n_chunks)
    in_ptr, in_src, in_arc = incoming_moves(moves, arc_dest)
    paths = np.zeros((n_tokens, n), np.int64)
    counts = np.zeros(n_sequences, np.int64)
    run_chunks(_nbest_chunks, n_chunks, bounds, unary, offsets, in_ptr, in_src, in_arc,
               arc_weight, state_label, start, end, np.int64(n), paths, counts)
    return paths, counts


@compiled()
def _nbest_chunks(chunk_lo, chunk_hi, bounds, unary, offsets, in_ptr, in_src, in_arc,
                  arc_weight, state_label, start, end, n, paths, counts):
    n_states = state_label.shape[0]
    n_classes = unary.shape[1]
    for c in range(chunk_lo, chunk_hi):
        longest = max(longest_sequence(offsets, bounds[c], bounds[c + 1]), 1)
        work = path_workspace(longest, n_states, n_classes, max(n, np.int64(2)))
        for q in range(bounds[c], bounds[c + 1]):
            if offsets[q + 1] == offsets[q]:
                counts[q] = 1
                continue
            nbest_paths_of(unary, offsets[q], offsets[q + 1], in_ptr, in_src, in_arc,
                           arc_weight, state_label, start, end, n, paths, q, counts, work)
