"""Chains of any order: state weights, dense label pairs and weights of the label patterns kept.

The weights of a chain of order ``d >= 2`` over ``C`` classes, in the flat
vector ``w`` (see :attr:`PatternChainStructure.layout`):

- ``state`` : one weight per (feature, label) pair of :class:`StatePairs`;
- ``transitions`` : (C, C) [from, to], every label pair;
- ``patterns`` : one weight per kept label n-gram of 3 to ``d + 1`` labels
  (:class:`~.label_patterns.LabelPatterns`, in its order);
- ``start``, ``end`` : (C,).

Inference runs over the automaton of the patterns
(:mod:`skcrf.inference.patterns.automaton`), at a cost per token that grows with the
number of patterns. An order-2 model whose trigrams are (nearly) all kept
runs on the dense order-2 kernels (:mod:`skcrf.inference.chain.order2`) instead,
faster there; both give the same results.
"""

import weakref
from dataclasses import dataclass

import numpy as np

from ...features._kernels import pair_products
from ...features.arrays import csr_times_dense
from ...inference.chain.order2 import forward_backward2, viterbi2
from ...inference.chain.nbest import nbest_paths2
from ...inference.patterns.automaton import forward_backward_patterns, nbest_patterns, viterbi_patterns
from .._parameters import (ParameterLayout, StatePairs, TokenStatistics, same_shapes,
                          weights_of_blocks)
from ._fused import FusedPatternTerms
from ..chain.order1 import chain_labelling_scores, ChainScores, pin_labels
from .label_patterns import LabelPatterns, row_codes, row_lengths
from .automaton import PatternAutomaton

#: An order-2 model runs on the dense kernels (C ** 3 per token, vectorized)
#: when it keeps at least this fraction of the C ** 3 trigrams; below, the
#: automaton (about one visit per pattern per pass, not vectorized) is faster.
DENSE_TRIGRAM_FRACTION = 0.5

_automata = weakref.WeakKeyDictionary()

#: id of a fitted ``label_patterns_`` array -> (weak reference to it, its
#: patterns, each row's index among them): a model's first prediction builds
#: them, the next ones find them.
_fitted_patterns = {}


def automaton_of(patterns):
    """The :class:`PatternAutomaton` of ``patterns``, built once per pattern set."""
    automaton = _automata.get(patterns)
    if automaton is None:
        automaton = _automata[patterns] = PatternAutomaton(patterns)
    return automaton


def fitted_patterns(rows, n_classes, order):
    """The :class:`LabelPatterns` of a fitted model's rows, and each row's index among them.

    Checked (:meth:`LabelPatterns.from_rows` raises a ValueError naming a bad
    row) and kept while the array lives, so that a model's predictions
    build them, and their automaton, once.
    """
    key = id(rows)
    cached = _fitted_patterns.get(key)
    if cached is not None and cached[0]() is rows:
        return cached[1], cached[2]
    patterns, index = LabelPatterns.from_rows(rows, n_classes, order)
    try:
        reference = weakref.ref(rows, lambda _, key=key: _fitted_patterns.pop(key, None))
    except TypeError:  # an array-like that takes no weak reference: not cached
        return patterns, index
    _fitted_patterns[key] = (reference, patterns, index)
    return patterns, index


def uses_dense_order2(patterns):
    """Whether a model of these patterns runs on the dense order-2 kernels."""
    return (patterns.order == 2
            and patterns.n_patterns >= DENSE_TRIGRAM_FRACTION * patterns.n_classes ** 3)


@dataclass
class PatternScores:
    """Log-space potentials of a batch of chains of any order.

    Attributes
    ----------
    unary : ndarray of shape (n_tokens, n_classes)
    transitions : ndarray of shape (n_classes, n_classes)
    pattern_weights : ndarray of shape (n_patterns,)
    start, end : ndarray of shape (n_classes,)
    patterns : LabelPatterns
    lattice : CandidateLattice or None, default=None
        With a model that prunes (``prune_threshold``): the lattice of the
        labels its pruner keeps, every other label's unary score being
        ``-inf``. :meth:`posteriors` then runs over it: the same results as
        over the automaton, at the lattice's cost.
    """

    unary: np.ndarray
    transitions: np.ndarray
    pattern_weights: np.ndarray
    start: np.ndarray
    end: np.ndarray
    patterns: LabelPatterns
    lattice: object = None

    @classmethod
    def of_coefficients(cls, features, coef, transitions, start, end, patterns, pattern_weights):
        """Potentials of a fitted chain's dense state weights ``coef`` (n_classes, n_features)."""
        return cls(csr_times_dense(features, coef.T), transitions,
                   np.ascontiguousarray(pattern_weights, dtype=np.float64), start, end,
                   patterns)

    def fix_labels(self, fixed_ids):
        """Leave only the fixed label possible at each fixed token (-1: free), in place."""
        pin_labels(self.unary, fixed_ids)

    @property
    def automaton(self):
        return automaton_of(self.patterns)

    def dense_trigram(self):
        """The (C, C, C) trigram weights of an order-2 model, 0 for a trigram not kept."""
        C = self.patterns.n_classes
        trigram = np.zeros(C ** 3)
        trigram[self.patterns.codes[3]] = self.pattern_weights
        return trigram.reshape(C, C, C)

    def arc_weights(self):
        automaton = self.automaton
        return (automaton.arc_weights(self.transitions, self.pattern_weights),
                automaton.own_weights(self.pattern_weights))

    def posteriors(self, offsets, with_counts=False):
        """``(log_z, marginals, transition_counts, pattern_counts)``; counts None without them."""
        if self.lattice is not None:
            if not np.array_equal(offsets, self.lattice.offsets):
                raise ValueError("these scores' lattice is of other sequences than offsets'")
            log_z, marginals, pairs, pattern_counts, _, _ = self.lattice.posteriors(
                self.unary, self.transitions, self.pattern_weights, self.start, self.end)
            if not with_counts:
                return log_z, marginals, None, None
            return log_z, marginals, pairs, pattern_counts
        if uses_dense_order2(self.patterns):
            log_z, marginals, pairs, triples = forward_backward2(
                self.unary, self.transitions, self.dense_trigram(), self.start, self.end,
                offsets, with_counts)
            if not with_counts:
                return log_z, marginals, None, None
            return log_z, marginals, pairs, triples.ravel()[self.patterns.codes[3]]
        automaton = self.automaton
        arc_weight, own = self.arc_weights()
        log_z, marginals, arc_counts = forward_backward_patterns(
            self.unary, automaton.kernel_graph(), arc_weight, own, self.start, self.end,
            offsets, with_counts, _ExactTables(automaton))
        if not with_counts:
            return log_z, marginals, None, None
        C = self.patterns.n_classes
        return (log_z, marginals, arc_counts[:C * C].reshape(C, C),
                automaton.pattern_counts(arc_counts))

    def decode(self, offsets):
        """Viterbi label ids (n_tokens,)."""
        if uses_dense_order2(self.patterns):
            return viterbi2(self.unary, self.transitions, self.dense_trigram(), self.start,
                            self.end, offsets)
        automaton = self.automaton
        return viterbi_patterns(self.unary, move_table_of(automaton), self.arc_weights()[0],
                                automaton.arc_dest, automaton.state_label, self.start,
                                self.end, offsets)

    def nbest(self, offsets, n):
        """The ``n`` best paths: (paths, scores, counts), as :func:`~skcrf.structures.chain.order1.chain_nbest`."""
        if uses_dense_order2(self.patterns):
            return nbest_paths2(self.unary, self.transitions, self.dense_trigram(), self.start,
                                self.end, offsets, n)
        automaton = self.automaton
        paths, counts = nbest_patterns(self.unary, move_table_of(automaton),
                                       self.arc_weights()[0], automaton.arc_dest,
                                       automaton.state_label, self.start, self.end, offsets,
                                       n)
        scores = np.full((offsets.shape[0] - 1, n), -np.inf)
        for k in range(n):
            scores[:, k] = self.labelling_scores(offsets, paths[:, k])
        scores[np.arange(n)[np.newaxis, :] >= counts[:, np.newaxis]] = -np.inf
        return paths, scores, counts

    def labelling_scores(self, offsets, label_ids):
        """The log score of one labelling of each sequence, ``-inf`` if it is forbidden."""
        pairs = ChainScores(self.unary, self.transitions, self.start, self.end)
        return (chain_labelling_scores(pairs, offsets, label_ids)
                + self.patterns.labelling_scores(label_ids, offsets, self.pattern_weights))


class _ExactTables:
    """What the exact pass reads of an automaton, its move table built on the first call."""

    def __init__(self, automaton):
        self.automaton = automaton

    def __call__(self):
        automaton = self.automaton
        return (move_table_of(automaton), automaton.arc_dest, automaton.arc_parent,
                automaton.state_label)


def move_table_of(automaton):
    """:meth:`PatternAutomaton.move_table`, kept on the automaton once built."""
    table = getattr(automaton, "_move_table", None)
    if table is None:
        table = automaton._move_table = automaton.move_table()
    return table


class PatternChainStructure:
    """Parameter layout, potentials and gradient of a chain of order 2 or more.

    Parameters
    ----------
    n_classes : int
    state_pairs : StatePairs
        The (feature, class) pairs that carry a state weight.
    patterns : LabelPatterns
        The label n-grams (3 to ``order + 1`` labels) that carry a weight.
    constraints : TransitionConstraints or None, default=None
        Forbidden label pairs, first and last labels: ``-inf`` in every
        potential, so a zero gradient (as for :class:`~.chain.ChainStructure`).
    """

    def __init__(self, n_classes, state_pairs, patterns, *, constraints=None):
        self.n_classes = n_classes
        self.order = patterns.order
        self.state_pairs = state_pairs
        self.patterns = patterns
        C = n_classes
        self.layout = ParameterLayout([
            ("state", (state_pairs.n_pairs,)), ("transitions", (C, C)),
            ("patterns", (patterns.n_patterns,)), ("start", (C,)), ("end", (C,))])
        if constraints is None:
            self.transition_mask, self.start_mask, self.end_mask = (
                np.zeros((C, C)), np.zeros(C), np.zeros(C))
        else:
            self.transition_mask, self.start_mask, self.end_mask = constraints.masks()

    @classmethod
    def for_training(cls, features, offsets, label_ids, n_classes, order, *,
                     all_possible_states=False, all_possible_transitions=False,
                     min_pattern_freq=1, constraints=None):
        """The structure of a training set: which (feature, label) pairs and patterns get weights."""
        state_pairs = (StatePairs.every(features.n_features, n_classes) if all_possible_states
                       else StatePairs.observed(features, label_ids, n_classes))
        if all_possible_transitions:
            patterns = LabelPatterns.every(
                n_classes, order, None if constraints is None else constraints.allowed)
        else:
            patterns = LabelPatterns.seen(label_ids, offsets, n_classes, order,
                                          min_pattern_freq)
        return cls(n_classes, state_pairs, patterns, constraints=constraints)

    @property
    def n_parameters(self):
        return self.layout.n_parameters

    def masked_transitions(self, blocks):
        """The transition, start and end blocks with the forbidden ones at ``-inf`` (copies)."""
        return (blocks["transitions"] + self.transition_mask,
                blocks["start"] + self.start_mask, blocks["end"] + self.end_mask)

    def gold_statistics(self, features, offsets, label_ids):
        """Phi(gold) summed over the training sequences, in the layout of ``w``."""
        counts = self.layout.zeros()
        blocks = self.layout.views(counts)
        blocks["state"][:] = self.state_pairs.empirical_counts(features, label_ids)
        follows = np.ones(label_ids.shape[0], dtype=bool)
        follows[offsets[:-1][np.diff(offsets) > 0]] = False
        to = np.flatnonzero(follows)
        np.add.at(blocks["transitions"], (label_ids[to - 1], label_ids[to]), 1.0)
        blocks["patterns"][:] = self.patterns.counts(label_ids, offsets)
        nonempty = np.diff(offsets) > 0
        first, last = offsets[:-1][nonempty], offsets[1:][nonempty] - 1
        blocks["start"][:] = np.bincount(label_ids[first], minlength=self.n_classes)
        blocks["end"][:] = np.bincount(label_ids[last], minlength=self.n_classes)
        return counts

    def scores(self, features, w):
        """:class:`PatternScores` of the features under the weights ``w``."""
        blocks = self.layout.views(w)
        unary = pair_products(*features.kernel_args(), self.state_pairs.feature_ptr,
                              self.state_pairs.labels, np.ascontiguousarray(blocks["state"]),
                              self.n_classes)
        transitions, start, end = self.masked_transitions(blocks)
        return PatternScores(unary, transitions, np.ascontiguousarray(blocks["patterns"]),
                             start, end, self.patterns)

    def expected_statistics(self, features, offsets, marginals, transition_counts,
                            pattern_counts):
        """E_p[Phi] in the layout of ``w``, from the token marginals and the expected counts."""
        expected = self.layout.zeros()
        blocks = self.layout.views(expected)
        blocks["state"][:] = self.state_pairs.expectations(features, marginals)
        blocks["transitions"][:] = transition_counts
        blocks["patterns"][:] = pattern_counts
        nonempty = np.diff(offsets) > 0
        blocks["start"][:] = marginals[offsets[:-1][nonempty]].sum(axis=0)
        blocks["end"][:] = marginals[offsets[1:][nonempty] - 1].sum(axis=0)
        return expected

    def expectation_terms(self, features, offsets, fused=True):
        """A function ``w -> (log_z, expected statistics)`` over one training set.

        The fused kernel (:mod:`._pattern_fused`) unless ``fused=False`` or the
        model runs on the dense order-2 kernels; otherwise through
        :meth:`scores`, the inference kernels and :meth:`expected_statistics`.
        """
        if fused and not uses_dense_order2(self.patterns):
            return _FusedExpectations(self, features, offsets)

        def unfused(w):
            log_z, marginals, transition_counts, pattern_counts = self.scores(
                features, w).posteriors(offsets, with_counts=True)
            return log_z, self.expected_statistics(features, offsets, marginals,
                                                   transition_counts, pattern_counts)

        return unfused

    def coefficients(self, w):
        """Named fitted weights, copied.

        ``coef`` (n_classes, n_features), ``transitions``, ``start``, ``end``
        (``-inf`` where the constraints forbid), and the patterns whose weight
        is not zero: ``label_patterns`` (their rows, see
        :class:`~.label_patterns.LabelPatterns`) and ``pattern_coef``. A
        pattern of weight 0 (L1 regularization makes many) changes no score,
        so the fitted model leaves it out of its automaton.
        """
        blocks = self.layout.views(w)
        transitions, start, end = self.masked_transitions(blocks)
        kept = np.flatnonzero(blocks["patterns"] != 0.0)
        return {"coef": self.state_pairs.to_dense(blocks["state"]),
                "transitions": transitions, "start": start, "end": end,
                "label_patterns": self.patterns.rows[kept].copy(),
                "pattern_coef": blocks["patterns"][kept].copy()}

    def weights(self, named):
        """The weight vector of named coefficients: the inverse of :meth:`coefficients`.

        Patterns are placed by their labels: one this structure does not
        keep is dropped, one ``named`` lacks gets 0. Returns None if a block
        is missing or has another shape.
        """
        C = self.n_classes
        shapes = {"coef": (C, self.state_pairs.n_features), "transitions": (C, C),
                  "start": (C,), "end": (C,)}
        if not same_shapes(named, shapes):
            return None
        rows = named.get("label_patterns")
        values = named.get("pattern_coef")
        if (rows is None or values is None or np.ndim(rows) != 2
                or np.shape(rows)[1] != self.order + 1 or np.shape(values) != (len(rows),)):
            return None
        pattern_weights = np.zeros(self.patterns.n_patterns)
        if len(rows):
            LabelPatterns.from_rows(rows, C, self.order)  # refuses rows that are no patterns
            mine = self.patterns.index_of(row_lengths(rows), row_codes(rows, C))
            found = mine >= 0
            pattern_weights[mine[found]] = np.asarray(values, dtype=np.float64)[found]
        blocks = {"state": self.state_pairs.from_dense(named["coef"]),
                  "transitions": named["transitions"], "start": named["start"],
                  "end": named["end"], "patterns": pattern_weights}
        return weights_of_blocks(self.layout, blocks, {
            "transitions": self.transition_mask, "start": self.start_mask,
            "end": self.end_mask})


    # --- online learning: one sequence's statistics in token form ---------------------

    def pair_blocks(self):
        """The blocks of ``w`` laid out by :class:`StatePairs`, by name."""
        return {"state": self.state_pairs}

    def with_pairs(self, pairs):
        """The same chain with other state pairs (see :meth:`pair_blocks`).

        For a model trained in parts (``partial_fit``), whose later parts bring
        (feature, label) pairs the first did not; the patterns stay those of
        the first part.
        """
        structure = PatternChainStructure(self.n_classes, pairs["state"], self.patterns)
        structure.transition_mask, structure.start_mask, structure.end_mask = (
            self.transition_mask, self.start_mask, self.end_mask)
        return structure

    def statistics_rows(self, features, offsets, label_ids):
        """``Phi(x, y)`` of the labellings ``label_ids`` as :class:`TokenStatistics`.

        Flattened, the same as :meth:`gold_statistics` of those labels.
        """
        C = self.n_classes
        n_tokens = label_ids.shape[0]
        state = np.zeros((n_tokens, C))
        state[np.arange(n_tokens), label_ids] = 1.0
        gold = self.layout.views(self.gold_statistics(features, offsets, label_ids))
        return TokenStatistics({"state": state}, {
            name: gold[name] for name in ("transitions", "patterns", "start", "end")})

    def expected_rows(self, features, offsets, w, scale=1.0):
        """``(log_z, E_p[Phi])`` under the weights ``scale * w``, in token form.

        Flattened, the expected statistics are :meth:`expected_statistics`.
        """
        scores = self.scores(features, w)
        if scale != 1.0:
            scores = PatternScores(scores.unary * scale, scores.transitions * scale,
                                   scores.pattern_weights * scale, scores.start * scale,
                                   scores.end * scale, scores.patterns)
        log_z, marginals, transition_counts, pattern_counts = scores.posteriors(
            offsets, with_counts=True)
        nonempty = np.diff(offsets) > 0
        return log_z, TokenStatistics({"state": marginals}, {
            "transitions": transition_counts, "patterns": pattern_counts,
            "start": marginals[offsets[:-1][nonempty]].sum(axis=0),
            "end": marginals[offsets[1:][nonempty] - 1].sum(axis=0)})

    def decode_targets(self, features, offsets, w):
        """The best labelling under the weights ``w``: label ids (n_tokens,)."""
        return self.scores(features, w).decode(offsets)


class _FusedExpectations:
    """The fused kernel behind the ``w -> (log_z, expected)`` interface."""

    def __init__(self, structure, features, offsets):
        self.structure = structure
        self.automaton = automaton_of(structure.patterns)
        self.fused = FusedPatternTerms(features, offsets, structure.state_pairs, self.automaton)

    def __call__(self, w):
        structure = self.structure
        automaton = self.automaton
        blocks = structure.layout.views(w)
        transitions, start, end = structure.masked_transitions(blocks)
        patterns = np.ascontiguousarray(blocks["patterns"])
        log_z, expected_pairs, arc_counts, start_counts, end_counts = self.fused(
            blocks["state"], automaton.arc_weights(transitions, patterns),
            automaton.own_weights(patterns), start, end, _ExactTables(automaton))
        C = structure.n_classes
        return log_z, np.concatenate([expected_pairs, arc_counts[:C * C],
                                      automaton.pattern_counts(arc_counts), start_counts,
                                      end_counts])

