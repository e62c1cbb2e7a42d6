"""The automaton of a set of label patterns: the states exact higher-order inference runs over.

A labelling read left to right is in the *state* given by the longest suffix
of its labels that is a state: the single labels, and every proper prefix of
two or more labels of a kept pattern (Ye, Lee, Chieu & Wu 2009; Cuong, Ye,
Lee & Chieu 2014). The patterns that end at a token are exactly the kept
suffixes of the state before it followed by the token's label, so the score
of a move depends on the state and the new label only.

Moves are stored sparsely, with failure links as in Aho-Corasick: the
*failure* of a state is its longest proper suffix that is a state. Every
single label has all ``C`` moves (the dense label pairs); a longer state
``s`` has an *explicit* move on label ``b`` only where ``s + b`` is a pattern
or a state, and otherwise moves as its failure does. So an automaton has
``C ** 2`` dense moves plus one per pattern (and per state that is not one),
and the kernels (:mod:`skcrf.inference.patterns.automaton`) cost that much per token,
not ``C ** (order + 1)``.

Each explicit move ``e`` of a longer state has a *parent*: the move on the
same label of the nearest state up its failure chain that has one, which
every state between them inherits. Its weight is the parent's plus the weight
of the pattern ``s + b`` (0 if it is not a pattern). A *leaf* move (``s + b``
is not a state) goes where its parent goes; an inner move goes to the state
``s + b``.

Arrays use one index space for the moves ("arcs"): ``a * C + b`` for the dense
move of label ``a`` on ``b``, then ``C ** 2 + i`` for the explicit moves of
longer states, sorted by source state, then label. States are numbered by
depth (number of labels): the ``C`` single labels first, so state ``a`` is
label ``a``, then each depth in the order of its labels.

Nothing here knows tokens: a semi-Markov model of order ``d`` runs the same
automaton over the labels of consecutive segments.
"""

import numpy as np

from .label_patterns import MIN_LENGTH


class PatternAutomaton:
    """States, failure links and explicit moves of :class:`~.label_patterns.LabelPatterns`.

    Parameters
    ----------
    patterns : LabelPatterns

    Attributes
    ----------
    n_classes, order, n_states, n_arcs : int
    state_label, state_depth, failure : ndarray of int64 of shape (n_states,)
        The last label, number of labels and failure state of each state
        (-1 for a single label).
    depth_start : ndarray of int64 of shape (order + 1,)
        States of depth ``k`` are ``depth_start[k - 1]:depth_start[k]``.
    state_arcs : ndarray of int64 of shape (n_states + 1,)
        The explicit moves of a longer state ``s`` are arcs
        ``C ** 2 + state_arcs[s]`` to ``C ** 2 + state_arcs[s + 1]`` (none for
        a single label, whose moves are the dense ones).
    state_owner : ndarray of int64 of shape (n_states,)
        The inner move into each longer state (-1 for a single label).
    pair_state : ndarray of int64 of shape (C ** 2,)
        The state of the label pair ``(a, b)`` at ``a * C + b``, -1 if it is
        none.
    arc_src, arc_label, arc_dest, arc_parent, arc_pattern : ndarray of int64 of shape (n_arcs,)
        Each move's source and destination states, label, parent (-1 for a
        dense move) and pattern (index into ``patterns.rows``, -1 if none).
    arc_leaf : ndarray of bool of shape (n_arcs,)
        Whether the move goes where its parent goes (always False for a
        dense move).
    n_slots : int
        The moves that need a running sum in the kernels: the dense ones
        and the explicit ones that are some move's parent, numbered ``a * C +
        b`` for a dense move, then ``C ** 2 + j`` for ``slot_arcs[j]``.
    slot_arcs : ndarray of int64
        The explicit moves with a slot, as indices ``e - C ** 2``, increasing.
    arc_slot, parent_slot : ndarray of int64 of shape (n_arcs - C ** 2,)
        For each explicit move (index ``e - C ** 2``), its slot (-1 if none)
        and its parent's.
    """

    def __init__(self, patterns):
        C = patterns.n_classes
        order = patterns.order
        self.n_classes = C
        self.order = order
        self.patterns = patterns
        pattern_codes = patterns.codes
        # states of each depth: codes of the proper prefixes of the patterns
        state_codes = {1: np.arange(C, dtype=np.int64)}
        for k in range(2, order + 1):
            prefixes = [pattern_codes[length] // C ** (length - k)
                        for length in range(max(k + 1, MIN_LENGTH), order + 2)]
            state_codes[k] = np.unique(np.concatenate(prefixes)) if prefixes else \
                np.zeros(0, dtype=np.int64)
        sizes = [state_codes[k].shape[0] for k in range(1, order + 1)]
        self.depth_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.n_states = int(self.depth_start[-1])
        self._state_codes = state_codes
        # within a depth, states are numbered in the order of their labels read
        # backwards: states that share their last labels (and so the slots
        # their moves update) are neighbours
        self._id_of_code = {}
        codes_by_id = []
        for k in range(1, order + 1):
            backwards = _reversed_codes(state_codes[k], C, k)
            by_id = np.argsort(backwards, kind="stable")
            self._id_of_code[k] = np.empty(by_id.shape[0], dtype=np.int64)
            self._id_of_code[k][by_id] = self.depth_start[k - 1] + np.arange(by_id.shape[0])
            codes_by_id.append(state_codes[k][by_id])
        self.state_label = np.concatenate([codes % C for codes in codes_by_id])
        self.state_depth = np.repeat(np.arange(1, order + 1, dtype=np.int64), sizes)
        self.failure = np.full(self.n_states, -1, dtype=np.int64)
        for k in range(2, order + 1):
            ids = self._ids(k)
            codes = codes_by_id[k - 1]
            unresolved = np.ones(ids.shape[0], dtype=bool)
            for j in range(k - 1, 0, -1):  # the longest proper suffix that is a state
                found = self.state_of(j, codes % C ** j)
                take = unresolved & (found >= 0)
                self.failure[ids[take]] = found[take]
                unresolved &= ~take
        self.pair_state = np.full(C * C, -1, dtype=np.int64)
        if order >= 2:
            self.pair_state[state_codes[2]] = self.state_of(2, state_codes[2])
        self._build_arcs(pattern_codes)

    def _ids(self, depth):
        """The state ids of ``depth`` labels."""
        return np.arange(self.depth_start[depth - 1], self.depth_start[depth], dtype=np.int64)

    def state_of(self, depth, codes):
        """State id of each code of ``depth`` labels, -1 where it is not a state."""
        codes = np.asarray(codes, dtype=np.int64)
        if depth < 1 or depth > self.order:
            return np.full(codes.shape, -1, dtype=np.int64)
        known = self._state_codes[depth]
        if not known.size:
            return np.full(codes.shape, -1, dtype=np.int64)
        found = np.minimum(np.searchsorted(known, codes), known.size - 1)
        return np.where(known[found] == codes, self._id_of_code[depth][found], -1)

    def _build_arcs(self, pattern_codes):
        C = self.n_classes
        n_dense = C * C
        srcs, labels, patterns, dests, parents, leaves = [], [], [], [], [], []
        # dense moves
        dense_dest = np.where(self.pair_state >= 0, self.pair_state, np.tile(np.arange(C), C))
        srcs.append(np.repeat(np.arange(C, dtype=np.int64), C))
        labels.append(np.tile(np.arange(C, dtype=np.int64), C))
        patterns.append(np.full(n_dense, -1, dtype=np.int64))
        dests.append(dense_dest)
        parents.append(np.full(n_dense, -1, dtype=np.int64))
        leaves.append(np.zeros(n_dense, dtype=bool))
        arc_dest = dense_dest
        first_arc = n_dense
        keys = np.zeros(0, dtype=np.int64)  # src * C + label of the explicit moves so far
        for k in range(2, self.order + 1):  # source depth
            codes = np.union1d(pattern_codes.get(k + 1, np.zeros(0, dtype=np.int64)),
                               self._state_codes.get(k + 1, np.zeros(0, dtype=np.int64)))
            src = self.state_of(k, codes // C)
            by_source = np.lexsort((codes % C, src))
            codes, src = codes[by_source], src[by_source]
            label = codes % C
            inner = self.state_of(k + 1, codes)
            # parent: the nearest state up the failure chain with a move on the label
            parent = np.full(codes.shape[0], -1, dtype=np.int64)
            up = self.failure[src]
            unresolved = np.ones(codes.shape[0], dtype=bool)
            while unresolved.any():
                single = unresolved & (self.state_depth[np.maximum(up, 0)] == 1)
                parent[single] = up[single] * C + label[single]
                unresolved &= ~single
                if not unresolved.any():
                    break
                at = np.flatnonzero(unresolved)
                key = up[at] * C + label[at]
                found = np.minimum(np.searchsorted(keys, key), max(keys.size - 1, 0))
                hit = keys.size > 0
                hit = (keys[found] == key) if hit else np.zeros(at.shape[0], dtype=bool)
                parent[at[hit]] = n_dense + found[hit]
                unresolved[at[hit]] = False
                up[at[~hit]] = self.failure[up[at[~hit]]]
            dest = np.where(inner >= 0, inner, arc_dest[np.maximum(parent, 0)])
            srcs.append(src)
            labels.append(label)
            patterns.append(self.patterns.index_of(np.full(codes.shape, k + 1), codes))
            dests.append(dest)
            parents.append(parent)
            leaves.append(inner < 0)
            keys = np.concatenate([keys, src * C + label])
            arc_dest = np.concatenate([arc_dest, dest])
            first_arc += codes.shape[0]
        self.arc_src = np.concatenate(srcs)
        self.arc_label = np.concatenate(labels)
        self.arc_pattern = np.concatenate(patterns)
        self.arc_dest = np.concatenate(dests)
        self.arc_parent = np.concatenate(parents)
        self.arc_leaf = np.concatenate(leaves)
        self.n_arcs = int(self.arc_src.shape[0])
        explicit_src = self.arc_src[n_dense:]
        self.state_arcs = np.searchsorted(explicit_src, np.arange(self.n_states + 1)).astype(
            np.int64)
        # running sums ("slots") for the dense moves and the explicit moves with holes
        parents = self.arc_parent[n_dense:]
        has_holes = np.zeros(self.n_arcs, dtype=bool)
        has_holes[parents] = True
        self.slot_arcs = np.flatnonzero(has_holes[n_dense:]).astype(np.int64)
        slot_of = np.full(self.n_arcs, -1, dtype=np.int64)
        slot_of[:n_dense] = np.arange(n_dense)
        slot_of[n_dense + self.slot_arcs] = n_dense + np.arange(self.slot_arcs.shape[0])
        self.n_slots = n_dense + int(self.slot_arcs.shape[0])
        self.arc_slot = slot_of[n_dense:]
        self.parent_slot = slot_of[parents]
        self.state_owner = np.full(self.n_states, -1, dtype=np.int64)
        pairs = np.flatnonzero(self.pair_state >= 0)
        self.state_owner[self.pair_state[pairs]] = pairs
        inner_arcs = n_dense + np.flatnonzero(~self.arc_leaf[n_dense:])
        self.state_owner[self.arc_dest[inner_arcs]] = inner_arcs

    def arc_weights(self, transitions, pattern_weights):
        """(n_arcs,) the log weight of every move: its label pair's plus its patterns'.

        ``transitions`` is (C, C) [from, to] (``-inf`` forbids a pair and every
        move on it); ``pattern_weights`` is (n_patterns,).
        """
        C = self.n_classes
        weights = np.empty(self.n_arcs)
        weights[:C * C] = np.asarray(transitions, dtype=np.float64).ravel()
        own = self.own_weights(pattern_weights)
        for k in range(2, self.order + 1):  # parents first: they come from shallower states
            lo = C * C + self.state_arcs[self.depth_start[k - 1]]
            hi = C * C + self.state_arcs[self.depth_start[k]]
            weights[lo:hi] = weights[self.arc_parent[lo:hi]] + own[lo:hi]
        return weights

    def own_weights(self, pattern_weights):
        """(n_arcs,) the weight each move adds to its parent's: its pattern's, else 0."""
        own = np.zeros(self.n_arcs)
        has = self.arc_pattern >= 0
        own[has] = np.asarray(pattern_weights, dtype=np.float64)[self.arc_pattern[has]]
        return own

    def move_table(self):
        """(n_states, C) the explicit move each state takes on each label.

        Its own where it has one, else its failure's: what the exact
        log-space passes read, ``C`` entries per state.
        """
        C = self.n_classes
        table = np.empty((self.n_states, C), dtype=np.int64)
        table[:C] = np.arange(C * C, dtype=np.int64).reshape(C, C)
        for k in range(2, self.order + 1):
            ids = self._ids(k)
            table[ids] = table[self.failure[ids]]
            lo = C * C + self.state_arcs[self.depth_start[k - 1]]
            hi = C * C + self.state_arcs[self.depth_start[k]]
            table[self.arc_src[lo:hi], self.arc_label[lo:hi]] = np.arange(lo, hi)
        return table

    def pattern_counts(self, arc_counts):
        """(n_patterns,) the expected count of each pattern from the moves' counts.

        ``arc_counts`` (n_arcs,) holds, for each explicit move of a longer
        state, the expected number of times its state or a state that
        inherits the move is followed by its label: the count of ``s + b``.
        """
        counts = np.zeros(self.patterns.n_patterns)
        has = self.arc_pattern >= 0
        counts[self.arc_pattern[has]] = arc_counts[has]
        return counts

    def kernel_graph(self):
        """The arrays the scaled pass reads (:mod:`skcrf.inference.patterns._scaled`).

        ``(state_label, failure, state_owner, plain_src, plain_parent, plain_arc,
        forward_order, src, label, dest, slot, parent, leaf, arc, inner)``.
        The explicit moves come in two lists, each sorted by source state:
        the *plain* ones (leaves without holes: most patterns), of which the
        pass needs the source, the parent's slot and the move (index into
        all moves), with ``forward_order`` the order of their parents'
        slots; and the others, with their label, destination, own slot (-1
        if none), parent's slot, whether they are leaves, the move, and
        their rank among the inner moves (-1 for a leaf).
        """
        n_dense = self.n_classes ** 2
        explicit = np.arange(n_dense, self.n_arcs)
        local = explicit - n_dense
        plain = self.arc_leaf[explicit] & (self.arc_slot < 0)
        other = local[~plain]
        plain_parent = self.parent_slot[local[plain]]
        inner = np.full(other.shape[0], -1, dtype=np.int64)
        is_inner = ~self.arc_leaf[n_dense + other]
        inner[is_inner] = np.arange(int(is_inner.sum()))
        return (self.state_label, self.failure, self.state_owner,
                self.arc_src[explicit[plain]], plain_parent, explicit[plain],
                np.argsort(plain_parent, kind="stable").astype(np.int64),
                self.arc_src[n_dense + other], self.arc_label[n_dense + other],
                self.arc_dest[n_dense + other], self.arc_slot[other], self.parent_slot[other],
                self.arc_leaf[n_dense + other], n_dense + other, inner)


def _reversed_codes(codes, n_classes, length):
    """The codes of ``length``-label sequences read backwards."""
    rest = np.asarray(codes, dtype=np.int64).copy()
    backwards = np.zeros_like(rest)
    for _ in range(length):
        backwards = backwards * n_classes + rest % n_classes
        rest //= n_classes
    return backwards

