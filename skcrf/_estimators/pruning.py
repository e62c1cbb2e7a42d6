"""Chains of order 2 or more on a pruned lattice (``prune_threshold``): fit and prediction.

The fit runs in two stages. First the order-1 chain of the same features and
settings is fitted, the *pruner*; its marginals on the training tokens pick
each token's candidate labels (those of marginal at least
``prune_threshold``, and the gold one). Then the higher-order weights are
fitted on the objective summed over the candidates' labellings alone
(:mod:`skcrf.structures.patterns.pruned`), starting from the order-1 weights
(label patterns at 0), unless a warm start gives a better start.

The model keeps its pruner (``pruner_coef_`` and the like) and prunes the
same way when it predicts: a label pruned at every training token where it
was wrong got no training signal there, so its weights drift toward 0, and
only pruning at prediction too keeps the model's probabilities those it was
trained for (as Müller, Schmid & Schütze, 2013, prune both).
"""

import numpy as np

from .base import forbidden_where_not_allowed
from .training import TrainingProblem
from ..learning.objective import NegativeLogLikelihood, weighted_gold_statistics
from ..learning.partial import PartialLabelObjective
from ..learning.partial_lattice import lattice_terms, pruned_partial_objective, pruner_candidates
from .._utils.validation import check_finite_scores
from ..structures.chain.dense import DenseChainStructure, chunk_starts, sequence_range
from ..structures.chain.order1 import ChainScores, chain_decode, chain_posteriors
from ..structures.patterns.pruned import (CandidateLattice, LatticeTerms, candidate_labels,
                                          candidates_of_mask)

#: The blocks an order-1 chain and a chain over label patterns share, in both layouts.
_SHARED_BLOCKS = ("state", "transitions", "start", "end")

#: The fitted attribute of each of the pruner's coefficients, by block name.
PRUNER_ATTRIBUTES = {"coef": "pruner_coef_", "transitions": "pruner_transition_coef_",
                     "start": "pruner_start_coef_", "end": "pruner_end_coef_"}

#: The fitted attribute of the threshold the model was trained with, which
#: prediction prunes with too.
PRUNER_THRESHOLD = "pruner_threshold_"


def pruner_comes_whole(model):
    """A model holds all of the pruner's attributes or none, and only with label patterns.

    The pruner's transitions are ``-inf`` exactly where the model's are: its
    best labelling, which prediction keeps, must be one the model allows.
    """
    state = vars(model)
    names = [*PRUNER_ATTRIBUTES.values(), PRUNER_THRESHOLD]
    present = [name for name in names if name in state]
    if not present:
        return
    if len(present) != len(names):
        missing = sorted(set(names) - set(present))
        raise ValueError(f"{present[0]} needs {missing[0]}: a pruned model holds every "
                         f"pruner_*_ attribute or none")
    if "label_patterns_" not in state:
        raise ValueError("pruner_coef_ belongs to a model of order 2 or more, which holds "
                         "label_patterns_")
    forbidden_where_not_allowed(model, PRUNER_ATTRIBUTES["transitions"])


def prune_unary(model, features, offsets, scores, fixed=None):
    """Leave out of :class:`PatternScores` ``scores`` the labels ``model``'s pruner prunes.

    A label is left out at a token when its marginal under the pruner (given
    the ``fixed`` labels) is below the threshold the model was trained with
    (``pruner_threshold_``): its unary score becomes ``-inf``, in place, and
    ``scores.lattice`` the lattice of the labels kept, which the posteriors
    then run over. The pruner's best labelling is always kept, so that every
    sequence keeps a labelling the constraints allow (labels kept token by
    token might not join up), and a sequence the pruner finds no labelling
    for keeps every label. Does nothing for a model without a pruner.
    """
    if PRUNER_THRESHOLD not in vars(model):
        return
    pruner = ChainScores.of_coefficients(
        features, model.pruner_coef_, model.pruner_transition_coef_, model.pruner_start_coef_,
        model.pruner_end_coef_)
    check_finite_scores(pruner.unary, offsets)
    if fixed is not None:
        pruner.fix_labels(fixed)
    marginals = chain_posteriors(pruner, offsets).marginals
    pruned = marginals < getattr(model, PRUNER_THRESHOLD)
    pruned[np.arange(marginals.shape[0]), chain_decode(pruner, offsets)] = False
    pruned[~(marginals.sum(axis=1) > 0)] = False
    scores.unary[pruned] = -np.inf
    try:
        scores.lattice = CandidateLattice(offsets, *candidates_of_mask(~pruned),
                                          scores.patterns)
    except ValueError:  # too large: the automaton's passes take it, at their cost
        scores.lattice = None


class PrunedTrainingProblem(TrainingProblem):
    """A :class:`TrainingProblem` of a pattern chain whose objective is over a pruned lattice.

    Parameters
    ----------
    problem : TrainingProblem
        The exact problem: its structure is a
        :class:`~skcrf.structures.patterns.chain.PatternChainStructure`.
    lower : ChainStructure
        The order-1 chain of the same data, with the same state pairs.
    threshold : float
        The marginal a label needs to stay a candidate.
    solve : callable
        ``(objective, w0) -> result`` with the weights as ``result.w``: the
        estimator's solver, which fits the order-1 chain.
    check : callable
        ``(result, data) -> None``: raises or warns, as for any fit, if the
        order-1 fit did not train.
    """

    def __init__(self, problem, lower, threshold, solve, check):
        super().__init__(problem.structure, problem.targets, problem.attributes,
                         problem.coefficient_names)
        self.lower = lower
        self.threshold = threshold
        self.solve = solve
        self.check = check
        self.lattice = None
        self._start = None
        self._pruner = None

    def objective(self, data, l2, sequence_weights=None):
        """Fit the order-1 chain, prune, and return the objective over the candidates."""
        features, offsets = data.features, data.offsets
        if data.partial is not None:
            lower_objective = PartialLabelObjective(self.lower, features, offsets, data.partial,
                                                    l2=l2, sequence_weights=sequence_weights)
        else:
            lower_objective = NegativeLogLikelihood(self.lower, features, offsets, self.targets,
                                                    l2=l2, sequence_weights=sequence_weights)
        result = self.solve(lower_objective, np.zeros(self.lower.n_parameters))
        self.check(result, data)
        w1 = result.w
        if data.partial is not None:
            # the pruner keeps every label of a token's set (see partial_lattice)
            keep = pruner_candidates(self.lower, w1, features, offsets, data.partial,
                                     self.threshold)
            self.lattice = CandidateLattice(offsets, *candidates_of_mask(keep),
                                            _patterns(self.structure))
            self._start = self._lifted(w1)
            self._pruner = self.lower.coefficients(w1)
            return pruned_partial_objective(
                self.structure, features, offsets, data.partial, keep, l2, sequence_weights,
                terms=(_dense_lattice_terms if isinstance(self.structure, DenseChainStructure)
                       else lattice_terms))
        marginals = chain_posteriors(self.lower.scores(features, w1), offsets).marginals
        candidates = candidate_labels(marginals, self.targets, self.threshold)
        del marginals
        self.lattice = CandidateLattice(offsets, *candidates, _patterns(self.structure))
        self._start = self._lifted(w1)
        self._pruner = self.lower.coefficients(w1)
        if isinstance(self.structure, DenseChainStructure):
            terms = DenseLatticeTerms(self.structure, features, offsets, candidates,
                                      sequence_weights)
        else:
            terms = LatticeTerms(self.structure, features, self.lattice, sequence_weights)
        if sequence_weights is None:
            empirical = self.structure.gold_statistics(features, offsets, self.targets)
        else:
            empirical = weighted_gold_statistics(self.structure, features, offsets,
                                                 self.targets, sequence_weights)
        return NegativeLogLikelihood.of_terms(self.structure, empirical, terms, l2)

    def starting_point(self, w0):
        """The order-1 weights (patterns at 0), unless ``w0`` holds a warm start's."""
        if self._start is None or w0.any():
            return w0
        return self._start

    def fitted_attributes(self, w):
        """The exact problem's fitted attributes, and the pruner's (``pruner_coef_``, ...)."""
        attributes = super().fitted_attributes(w)
        attributes.update((attribute, self._pruner[block])
                          for block, attribute in PRUNER_ATTRIBUTES.items())
        attributes[PRUNER_THRESHOLD] = self.threshold
        return attributes

    def _lifted(self, w1):
        """The order-1 weights ``w1`` in the layout of the higher-order structure.

        With a dense block both structures end with the same dense weights.
        """
        dense = isinstance(self.structure, DenseChainStructure)
        structure = self.structure.chain if dense else self.structure
        lower = self.lower.chain if dense else self.lower
        w = structure.layout.zeros()
        mine = structure.layout.views(w)
        theirs = lower.layout.views(w1[:lower.n_parameters])
        for name in _SHARED_BLOCKS:
            mine[name][:] = theirs[name]
        if dense:
            w = np.concatenate([w, w1[lower.n_parameters:]])
        return w


def _patterns(structure):
    return (structure.chain if isinstance(structure, DenseChainStructure)
            else structure).patterns


def _dense_lattice_terms(structure, features, offsets, keep, sequence_weights=None):
    """:func:`~skcrf.learning.partial_lattice.lattice_terms` of a structure with a dense block."""
    return DenseLatticeTerms(structure, features, offsets, candidates_of_mask(keep),
                             sequence_weights)


class DenseLatticeTerms:
    """The pruned objective's terms with a dense block: ``w -> (log_z, expected)``.

    As :class:`~skcrf.structures.chain.dense.DenseChainStructure` does for the
    exact chain, chunk by chunk: the pattern chain's unary scores of its
    sparse columns plus ``X_dense @ W.T`` (one matrix product), the lattice's
    forward-backward over the chunk's candidates (the unfused
    :meth:`CandidateLattice.posteriors`), the chain's expected statistics
    from the marginals and ``marginals.T @ X_dense`` for ``W``. The dense
    values are never copied into CSR; the fused lattice kernel, which reads
    CSR only, is not used.

    Parameters
    ----------
    structure : DenseChainStructure
        Over a :class:`~skcrf.structures.patterns.chain.PatternChainStructure`.
    features : FeatureArrays
        With the ``dense`` block.
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    candidates : tuple of (cand_ptr, cand_label)
        Each token's candidate labels (:func:`candidate_labels`).
    sequence_weights : ndarray of shape (n_sequences,), default=None
    """

    def __init__(self, structure, features, offsets, candidates, sequence_weights=None):
        self.structure = structure
        cand_ptr, cand_label = candidates
        patterns = structure.chain.patterns
        n_sequences = offsets.shape[0] - 1
        weights = (np.ones(n_sequences) if sequence_weights is None
                   else np.asarray(sequence_weights, dtype=np.float64))
        starts = chunk_starts(offsets)
        self.chunks = []
        for a, b in zip(starts[:-1].tolist(), starts[1:].tolist()):
            part, part_offsets = sequence_range(features, offsets, a, b)
            lo, hi = int(offsets[a]), int(offsets[b])
            first, last = int(cand_ptr[lo]), int(cand_ptr[hi])
            lattice = CandidateLattice(part_offsets, cand_ptr[lo:hi + 1] - first,
                                       cand_label[first:last], patterns)
            self.chunks.append((part, part_offsets, lattice, weights[a:b]))

    def __call__(self, w):
        structure = self.structure
        chain = structure.chain
        w_chain, W = structure._split(w)
        log_z = []
        expected = np.zeros(chain.n_parameters)
        expected_dense = np.zeros((structure.n_classes, structure.n_dense))
        for part, part_offsets, lattice, weights in self.chunks:
            scores = chain.scores(part, w_chain)
            scores.unary += part.dense @ W.T.astype(part.dense.dtype)
            part_log_z, marginals, transition_counts, pattern_counts, _, _ = (
                lattice.posteriors(scores.unary, scores.transitions, scores.pattern_weights,
                                   scores.start, scores.end, weights))
            log_z.append(part_log_z)
            expected += chain.expected_statistics(part, part_offsets, marginals,
                                                  transition_counts, pattern_counts)
            expected_dense += marginals.astype(part.dense.dtype, copy=False).T @ part.dense
        return np.concatenate(log_z), np.concatenate([expected, expected_dense.ravel()])
