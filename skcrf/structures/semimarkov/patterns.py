"""Semi-Markov CRFs of order ``d``: weights of the label n-grams of consecutive segments.

A semi-Markov model of order ``d >= 2`` adds to the order-1 model (see
:mod:`.semimarkov`) a weight for each kept n-gram of 3 to ``d + 1``
consecutive *segment* labels (:class:`~.label_patterns.LabelPatterns`, the
chain's patterns, over the labels of a sequence's segments), in one more
block of ``w``, ``patterns``.

Inference runs the order-1 semi-Markov kernels unchanged over the states of
the patterns' automaton (:class:`~.pattern_automaton.PatternAutomaton`)
instead of the labels: a state is the labels of the last segments that
matter, and a segment of label ``b`` after a segment whose state is ``s``
moves to the state the automaton's move on ``b`` leads to, with the move's
weight (the label pair's transition plus the patterns it completes). So an
"expanded" label is an automaton state: its token, length and span scores are
those of its last label, its transitions are the automaton's moves (``-inf``
between states no move joins), its start score is its label's for a
single-label state (``-inf`` for the others), its end score its label's.
The automaton is deterministic, so the segmentations over states are the
segmentations over labels, one for one, with the same scores: log Z, the
Viterbi segmentation and the n best are the order-d model's. Marginals over
states add up to marginals over labels, and the expected count of each move
gives the expected counts of label pairs and patterns (the adjoint of the
move weights).

This costs ``n_states ** 2`` per segment boundary (the dense transitions of
the kernels) and the segment scores once per state rather than per label: it
reuses compiled kernels (no compile time of its own) at a price that grows
with the number of automaton states, which :data:`MAX_STATES` bounds.
Per-token arrays over states are made for blocks of sequences of at most
:data:`_BLOCK_VALUES` values each, so memory stays that of the order-1 model
plus one block.

One role marginal has no order-d counterpart here: ``REPEAT`` (a segment
starting right after one of the same label) is a transition between two
equal *states* in the kernels, and two segments of one label may sit in
different states. Its label-level value is not computed (zero), and neither
are the fixed ``NO_REPEAT`` boundaries; the estimator refuses the queries
that need them (the marginals of the IOB1 and IOE1 schemes, and fixing their
tags) with a ValueError.
"""

import weakref
from dataclasses import dataclass

import numpy as np

from ...inference.semimarkov.passes import N_ROLES, REPEAT, segment_posteriors, segment_viterbi
from ...inference.semimarkov.queries import (NO_REPEAT, fixed_segment_posteriors,
                                            nbest_segmentations)
from .._parameters import ParameterLayout, TokenStatistics
from ..patterns.label_patterns import LabelPatterns, row_codes, row_lengths
from ..patterns.chain import automaton_of, move_table_of
from .structure import SemiMarkovStructure
from .segment_scores import (SegmentPosteriors, SegmentScores, Segmentation, segment_codes,
                             segmentation_scores)

#: The most automaton states an order-d semi-Markov model may have: inference
#: visits every pair of states at every segment boundary.
MAX_STATES = 1024

#: Per-token values over automaton states (scores and marginals) made at once.
_BLOCK_VALUES = 1 << 22


class SegmentAutomaton:
    """The automaton of some patterns, laid out as the semi-Markov kernels' labels.

    Parameters
    ----------
    patterns : LabelPatterns

    Attributes
    ----------
    n_states : int
    state_label : ndarray of int64 of shape (n_states,)
        The last label of each state: its scores are that label's.
    move_arc : ndarray of int64 of shape (n_states, n_labels)
        The automaton's move from each state on each label.
    move_dest : ndarray of int64 of shape (n_states, n_labels)
        The state that move leads to.
    """

    def __init__(self, patterns):
        automaton = automaton_of(patterns)
        if automaton.n_states > MAX_STATES:
            raise ValueError(
                f"order={patterns.order} over {patterns.n_classes} segment labels with "
                f"{patterns.n_patterns} label patterns makes {automaton.n_states} automaton "
                f"states, more than the {MAX_STATES} a semi-Markov CRF can afford (it visits "
                f"every pair of states at every segment boundary); raise min_pattern_freq, "
                f"use all_possible_transitions=False or a lower order.")
        self.automaton = automaton
        self.n_labels = patterns.n_classes
        self.n_states = automaton.n_states
        self.state_label = automaton.state_label
        self.move_arc = move_table_of(automaton)
        self.move_dest = automaton.arc_dest[self.move_arc]
        self._sources = np.repeat(np.arange(self.n_states), self.n_labels)
        # explicit moves of each source depth, deepest first: the order in which
        # a move's count is handed to its parent (see label_counts)
        n_dense = self.n_labels ** 2
        depth = automaton.state_depth[automaton.arc_src[n_dense:]]
        self._explicit_by_depth = [n_dense + np.flatnonzero(depth == k)
                                   for k in range(automaton.order, 1, -1)]

    def transitions(self, transitions, pattern_weights):
        """(n_states, n_states) log weights of the moves, ``-inf`` between states no move joins."""
        arc_weights = self.automaton.arc_weights(transitions, pattern_weights)
        expanded = np.full((self.n_states, self.n_states), -np.inf)
        expanded[self._sources, self.move_dest.ravel()] = arc_weights[self.move_arc.ravel()]
        return expanded

    def start(self, start):
        """(n_states,) a segmentation starts in the single-label states only."""
        expanded = np.full(self.n_states, -np.inf)
        expanded[:self.n_labels] = start  # states 0..C-1 are the single labels
        return expanded

    def to_labels(self, values, axis=-1):
        """Sum ``values`` over the states of each label, along ``axis``."""
        values = np.moveaxis(values, axis, -1)
        summed = np.zeros(values.shape[:-1] + (self.n_labels,))
        for y in range(self.n_labels):
            summed[..., y] = values[..., self.state_label == y].sum(axis=-1)
        return np.moveaxis(summed, -1, axis)

    def label_counts(self, move_counts):
        """(transition counts (C, C), pattern counts) of the expected counts of the moves.

        ``move_counts`` is (n_states, n_states), the expected number of each
        pair of consecutive states. A move's weight is its label pair's
        transition plus the own weights of the moves up its parent chain
        (:meth:`PatternAutomaton.arc_weights`), so each move's count goes to
        its label pair and to every move up that chain.
        """
        C = self.n_labels
        taken = move_counts[self._sources, self.move_dest.ravel()]
        transitions = np.zeros((C, C))
        np.add.at(transitions, (self.state_label[self._sources],
                                np.tile(np.arange(C), self.n_states)), taken)
        arc_counts = np.zeros(self.automaton.n_arcs)
        np.add.at(arc_counts, self.move_arc.ravel(), taken)
        parent = self.automaton.arc_parent
        for arcs in self._explicit_by_depth:  # children before their parents
            explicit = arcs[parent[arcs] >= C * C]
            np.add.at(arc_counts, parent[explicit], arc_counts[explicit])
        return transitions, self.automaton.pattern_counts(arc_counts)


_segment_automata = weakref.WeakKeyDictionary()


def segment_automaton_of(patterns):
    """The :class:`SegmentAutomaton` of ``patterns``, built once per pattern set."""
    automaton = _segment_automata.get(patterns)
    if automaton is None:
        automaton = _segment_automata[patterns] = SegmentAutomaton(patterns)
    return automaton


def _blocks(offsets, n_states):
    """(first sequence, stop sequence) of consecutive sequences, :data:`_BLOCK_VALUES` each.

    A block holds at least one sequence; its tokens times ``n_states`` stay
    under the budget otherwise.
    """
    budget = max(1, _BLOCK_VALUES // (8 * n_states))
    n_sequences = offsets.shape[0] - 1
    q = 0
    while q < n_sequences:
        stop = int(np.searchsorted(offsets, offsets[q] + budget, side="right")) - 1
        stop = min(max(stop, q + 1), n_sequences)
        yield q, stop
        q = stop


@dataclass
class PatternSegmentPosteriors(SegmentPosteriors):
    """:class:`SegmentPosteriors` over labels, with the expected count of each pattern."""

    pattern_counts: np.ndarray = None


@dataclass
class PatternSegmentScores:
    """Potentials of an order-d semi-Markov model: over labels, plus pattern weights.

    Attributes
    ----------
    labels : SegmentScores
        The order-1 potentials over segment labels (fixed tags act on them).
    patterns : LabelPatterns
    pattern_weights : ndarray of shape (n_patterns,)
    """

    labels: SegmentScores
    patterns: LabelPatterns
    pattern_weights: np.ndarray

    @property
    def automaton(self):
        return segment_automaton_of(self.patterns)

    def _fixes_boundaries(self):
        boundaries = self.labels.boundaries
        return boundaries is not None and boundaries.any()

    def expanded(self, lo=0, hi=None):
        """The :class:`SegmentScores` over automaton states of tokens ``lo:hi``."""
        automaton = self.automaton
        labels = self.labels
        states = automaton.state_label
        hi = labels.state.shape[0] if hi is None else hi
        expanded = SegmentScores(
            *(np.ascontiguousarray(block[lo:hi][:, states])
              for block in (labels.state, labels.first, labels.last)),
            np.ascontiguousarray(labels.length[states]),
            automaton.transitions(labels.transitions, self.pattern_weights),
            automaton.start(labels.start), np.ascontiguousarray(labels.end[states]))
        if labels.spans is not None:
            expanded.spans = np.ascontiguousarray(labels.spans[lo:hi][:, :, states])
        if labels.boundaries is not None:
            expanded.boundaries = np.ascontiguousarray(labels.boundaries[lo:hi])
        return expanded

    def _each_block(self, offsets):
        """(first sequence, stop sequence, first token, stop token, local offsets, scores)."""
        for q0, q1 in _blocks(offsets, self.automaton.n_states):
            lo, hi = int(offsets[q0]), int(offsets[q1])
            local = offsets[q0:q1 + 1] - lo
            # read-only, as the estimators' checked offsets are: the kernels compile
            # once for both (numba types a read-only array apart)
            local.flags.writeable = False
            yield q0, q1, lo, hi, local, self.expanded(lo, hi)

    def posteriors(self, offsets):
        """:class:`PatternSegmentPosteriors` of every sequence (no fixed boundaries).

        ``REPEAT`` role marginals are not computed (zero): see the module
        docstring.
        """
        automaton = self.automaton
        labels = self.labels
        n_tokens, C = labels.state.shape
        log_z = np.zeros(offsets.shape[0] - 1)
        roles = np.zeros((n_tokens, N_ROLES, C))
        length_counts = np.zeros(labels.length.shape)
        move_counts = np.zeros((automaton.n_states, automaton.n_states))
        start_counts, end_counts = np.zeros(C), np.zeros(C)
        span_marginals = None if labels.spans is None else np.zeros(labels.spans.shape)
        for q0, q1, lo, hi, local, scores in self._each_block(offsets):
            part = SegmentPosteriors(*segment_posteriors(*scores.kernel_args(), local,
                                                         spans=scores.spans))
            log_z[q0:q1] = part.log_z
            roles[lo:hi] = automaton.to_labels(part.roles)
            length_counts += automaton.to_labels(part.length_counts, axis=0)
            move_counts += part.transition_counts
            start_counts += automaton.to_labels(part.start_counts)
            end_counts += automaton.to_labels(part.end_counts)
            if span_marginals is not None:
                span_marginals[lo:hi] = automaton.to_labels(part.span_marginals)
        roles[:, REPEAT] = 0.0
        transition_counts, pattern_counts = automaton.label_counts(move_counts)
        return PatternSegmentPosteriors(log_z, roles, length_counts, transition_counts,
                                        start_counts, end_counts, span_marginals,
                                        pattern_counts)

    def check_no_repeat_flags(self):
        """Raise a ValueError if fixed tags need ``NO_REPEAT`` boundaries (module docstring)."""
        boundaries = self.labels.boundaries
        if boundaries is not None and (boundaries & NO_REPEAT).any():
            raise ValueError(
                "Fixed tags that say whether the segment before has the same label (the I- "
                "and B- of IOB1, the I- and E- of IOE1) are not supported by a SemiMarkovCRF "
                "of order >= 2; fix the tags of other tokens, or use order=1.")

    def role_posteriors(self, offsets):
        """(log_z, role marginals over labels), fixed boundaries included; no ``REPEAT``."""
        if not self._fixes_boundaries():
            posteriors = self.posteriors(offsets)
            return posteriors.log_z, posteriors.roles
        self.check_no_repeat_flags()
        automaton = self.automaton
        log_z = np.zeros(offsets.shape[0] - 1)
        roles = np.zeros((self.labels.state.shape[0], N_ROLES, automaton.n_labels))
        for q0, q1, lo, hi, local, scores in self._each_block(offsets):
            log_z[q0:q1], part = fixed_segment_posteriors(
                *scores.kernel_args(), local, scores.boundaries, spans=scores.spans)
            roles[lo:hi] = automaton.to_labels(part)
        roles[:, REPEAT] = 0.0
        return log_z, roles

    def decode(self, offsets):
        """The most likely :class:`Segmentation` over labels of each sequence."""
        if self._fixes_boundaries():
            return self.nbest(offsets, 1)[0][0]
        n_tokens = self.labels.state.shape[0]
        state_ids = np.zeros(n_tokens, dtype=np.int64)
        starts = np.zeros(n_tokens, dtype=bool)
        for _, _, lo, hi, local, scores in self._each_block(offsets):
            state_ids[lo:hi], starts[lo:hi] = segment_viterbi(*scores.kernel_args(), local,
                                                              spans=scores.spans)
        return Segmentation(self.automaton.state_label[state_ids], starts)

    def nbest(self, offsets, n):
        """The ``n`` best segmentations over labels, as :func:`~.semimarkov.segment_nbest`."""
        self.check_no_repeat_flags()
        n_tokens = self.labels.state.shape[0]
        state_ids = np.zeros((n_tokens, n), dtype=np.int64)
        starts = np.zeros((n_tokens, n), dtype=bool)
        path_scores = np.full((offsets.shape[0] - 1, n), -np.inf)
        counts = np.zeros(offsets.shape[0] - 1, dtype=np.int64)
        for q0, q1, lo, hi, local, scores in self._each_block(offsets):
            boundaries = scores.boundaries
            if boundaries is None:
                boundaries = np.zeros(hi - lo, dtype=np.int8)
            (state_ids[lo:hi], starts[lo:hi], path_scores[q0:q1],
             counts[q0:q1]) = nbest_segmentations(*scores.kernel_args(), local, boundaries, n,
                                                  spans=scores.spans)
        label_ids = self.automaton.state_label[state_ids]
        segmentations = []
        for k in range(n):
            missing = np.repeat(counts <= k, np.diff(offsets))
            segmentations.append(Segmentation(label_ids[:, k], starts[:, k] | missing))
        return segmentations, path_scores, counts

    def segmentation_scores(self, offsets, segmentation):
        """The log score of one segmentation of each sequence, ``-inf`` if forbidden."""
        scores = segmentation_scores(self.labels, offsets, segmentation)
        _, _, labels, sequence = segmentation.bounds(offsets)
        segment_offsets = np.searchsorted(sequence, np.arange(offsets.shape[0]))
        return scores + self.patterns.labelling_scores(labels, segment_offsets,
                                                       self.pattern_weights)

    def scaled(self, scale):
        """These potentials times ``scale`` (what the online solvers' scaled weights give)."""
        return PatternSegmentScores(SegmentScores(*(block * scale for block in
                                                    self.labels.kernel_args())),
                                    self.patterns, self.pattern_weights * scale)


def segment_label_sequences(codes, offsets, n_labels):
    """The labels of each sequence's segments, in order, and their offsets."""
    segmentation = Segmentation.of_codes(codes, offsets, n_labels)
    _, _, labels, sequence = segmentation.bounds(offsets)
    return labels, np.searchsorted(sequence, np.arange(offsets.shape[0])).astype(np.int64)


class PatternSemiMarkovStructure(SemiMarkovStructure):
    """A :class:`SemiMarkovStructure` of order 2 or more: a weight per kept pattern too.

    Parameters
    ----------
    token_pairs, max_lengths, allow_repeats, allowed_transitions, label_names, segment_pairs
        As for :class:`SemiMarkovStructure`.
    patterns : LabelPatterns
        The n-grams of 3 to ``order + 1`` consecutive segment labels that
        carry a weight (the last block of ``w``, ``patterns``).
    """

    def __init__(self, token_pairs, max_lengths, patterns, **options):
        super().__init__(token_pairs, max_lengths, **options)
        self.patterns = patterns
        self.order = patterns.order
        segment_automaton_of(patterns)  # refuses too many states before training starts
        self.layout = ParameterLayout([*self.layout.shapes.items(),
                                       ("patterns", (patterns.n_patterns,))])

    @classmethod
    def for_training(cls, features, offsets, codes, max_lengths, *, order=2,
                     all_possible_transitions=False, min_pattern_freq=1, **options):
        """The structure of a training set: its pairs (as order 1's) and the patterns it keeps.

        The patterns are the n-grams of consecutive gold segment labels seen
        at least ``min_pattern_freq`` times, or with
        ``all_possible_transitions`` every n-gram whose consecutive pairs the
        structure allows (no repeats where repeats are forbidden).
        """
        base = SemiMarkovStructure.for_training(features, offsets, codes, max_lengths,
                                                **options)
        C = base.n_labels
        if all_possible_transitions:
            patterns = LabelPatterns.every(C, order, base.transition_mask == 0)
        else:
            labels, segment_offsets = segment_label_sequences(codes, offsets, C)
            patterns = LabelPatterns.seen(labels, segment_offsets, C, order, min_pattern_freq)
        structure = cls(base.token_pairs, max_lengths, patterns,
                        allow_repeats=base.allow_repeats, label_names=base.label_names,
                        segment_pairs=base.segment_pairs)
        structure.transition_mask = base.transition_mask
        return structure

    def gold_statistics(self, features, offsets, codes):
        counts = super().gold_statistics(features, offsets, codes)
        labels, segment_offsets = segment_label_sequences(codes, offsets, self.n_labels)
        self.layout.view(counts, "patterns")[:] = self.patterns.counts(labels, segment_offsets)
        return counts

    def scores(self, features, w):
        """:class:`PatternSegmentScores` of the features under the weights ``w``."""
        return PatternSegmentScores(super().scores(features, w), self.patterns,
                                    np.ascontiguousarray(self.layout.view(w, "patterns")))

    def expected_statistics(self, features, offsets, posteriors):
        expected = super().expected_statistics(features, offsets, posteriors)
        self.layout.view(expected, "patterns")[:] = posteriors.pattern_counts
        return expected

    def expectation_terms(self, features, offsets, fused=True):
        """A function ``w -> (log_z, expected statistics)`` (always the unfused path)."""

        def terms(w):
            posteriors = self.scores(features, w).posteriors(offsets)
            return posteriors.log_z, self.expected_statistics(features, offsets, posteriors)

        return terms

    def coefficients(self, w):
        """Named fitted weights: order 1's, plus ``label_patterns`` and ``pattern_coef``.

        Only the patterns whose weight is not 0 are kept, as for a chain
        (:meth:`~.pattern_chain.PatternChainStructure.coefficients`).
        """
        named = super().coefficients(w)
        weights = self.layout.view(w, "patterns")
        kept = np.flatnonzero(weights != 0.0)
        named.update(label_patterns=self.patterns.rows[kept].copy(),
                     pattern_coef=weights[kept].copy())
        return named

    def weights(self, named):
        """The inverse of :meth:`coefficients`, patterns placed by labels; None if unusable."""
        base = super().weights(named)
        rows, values = named.get("label_patterns"), named.get("pattern_coef")
        if (base is None or rows is None or values is None or np.ndim(rows) != 2
                or np.shape(rows)[1] != self.order + 1 or np.shape(values) != (len(rows),)):
            return None
        w = base  # laid out by this structure, its patterns at 0
        if len(rows):
            LabelPatterns.from_rows(rows, self.n_labels, self.order)
            mine = self.patterns.index_of(row_lengths(rows), row_codes(rows, self.n_labels))
            found = mine >= 0
            self.layout.view(w, "patterns")[mine[found]] = np.asarray(
                values, dtype=np.float64)[found]
        return w

    # --- online learning: the patterns are one more dense block ----------------------

    def with_pairs(self, pairs):
        structure = PatternSemiMarkovStructure(pairs["token"], self.max_lengths, self.patterns,
                                               allow_repeats=self.allow_repeats)
        structure.transition_mask = self.transition_mask
        return structure

    def statistics_rows(self, features, offsets, codes):
        statistics = super().statistics_rows(features, offsets, codes)
        labels, segment_offsets = segment_label_sequences(codes, offsets, self.n_labels)
        statistics.dense["patterns"] = self.patterns.counts(labels, segment_offsets)
        return statistics

    def expected_rows(self, features, offsets, w, scale=1.0):
        scores = self.scores(features, w)
        if scale != 1.0:
            scores = scores.scaled(scale)
        posteriors = scores.posteriors(offsets)
        return posteriors.log_z, TokenStatistics(
            {"token": self._token_marginals(posteriors.roles)},
            {"length": posteriors.length_counts, "transitions": posteriors.transition_counts,
             "start": posteriors.start_counts, "end": posteriors.end_counts,
             "patterns": posteriors.pattern_counts})

    def decode_targets(self, features, offsets, w):
        segmentation = self.scores(features, w).decode(offsets)
        return segment_codes(segmentation.label_ids, segmentation.starts, self.n_labels)


__all__ = ["MAX_STATES", "PatternSegmentPosteriors", "PatternSegmentScores",
           "PatternSemiMarkovStructure", "SegmentAutomaton", "segment_automaton_of"]
