"""The training objective: negative log-likelihood of any structure, plus the L2 term."""

import numpy as np

from ..features.arrays import take_sequences


class _Objective:
    """What the training objectives share: a structure, the L2 coefficient, and a
    constructor from parts built elsewhere (:meth:`_of_parts`)."""

    @classmethod
    def _of_parts(cls, structure, l2, **parts):
        """An objective of ``structure`` and ``l2`` whose other attributes are ``parts``."""
        objective = cls.__new__(cls)
        objective.structure = structure
        objective.l2 = l2
        vars(objective).update(parts)
        return objective

    @property
    def n_parameters(self):
        return self.structure.n_parameters


class NegativeLogLikelihood(_Objective):
    """``sum_q -log p(y_q | x_q) + l2 / 2 * ||w||^2`` and its gradient, for one structure.

    ``-log p(y | x) = log Z(x) - w . Phi(x, y)``, so the gradient is
    ``E_p[Phi] - Phi(gold) + l2 * w``. The gold statistics do not depend on
    ``w`` and are computed once here; each evaluation asks the structure for
    log Z and the expected statistics (its fused kernel where it has one).
    The L1 term, which is not smooth, is the solver's business.

    Parameters
    ----------
    structure : object
        A structure (e.g. :class:`~skcrf.structures.chain.order1.ChainStructure`)
        with ``n_parameters``, ``gold_statistics`` and ``expectation_terms``.
    features : FeatureArrays of shape (n_tokens, n_features)
    offsets : ndarray of shape (n_sequences + 1,)
    label_ids : ndarray of shape (n_tokens,)
    l2 : float
        Coefficient of the squared norm; the L2 part of the elastic net is
        ``0.5 * l2 * ||w||^2`` with ``l2 = alpha * (1 - l1_ratio)``.
    fused : bool, default=True
        Whether to use the structure's fused kernel, where it has one.
    sequence_weights : ndarray of shape (n_sequences,), default=None
        Each sequence's weight in the sum (``sample_weight``): its loss term
        is multiplied by it. None weighs every sequence 1. See
        :func:`sequence_weighted_terms`.
    """

    def __init__(self, structure, features, offsets, label_ids, l2, fused=True,
                 sequence_weights=None):
        offsets = np.asarray(offsets, dtype=np.int64)
        label_ids = np.asarray(label_ids, dtype=np.int64)
        self.structure = structure
        self.l2 = l2
        if sequence_weights is None:
            self.empirical = structure.gold_statistics(features, offsets, label_ids)
            #: ``w -> (log_z, expected statistics)``, from the structure
            self.terms = structure.expectation_terms(features, offsets, fused=fused)
        else:
            self.terms = sequence_weighted_terms(structure, features, offsets, label_ids,
                                                 sequence_weights)
            self.empirical = self.terms.empirical

    @classmethod
    def of_terms(cls, structure, empirical, terms, l2):
        """The objective of gold statistics and expectations computed elsewhere.

        For training sets split into parts (on the workers of
        :func:`skcrf.dask.fit`): ``empirical`` is the sum of the parts' gold
        statistics, ``terms(w)`` returns ``(log_z, expected)`` summed over
        them, and the L2 term is added here once, as for one part.
        """
        return cls._of_parts(structure, l2, empirical=empirical, terms=terms)

    def __call__(self, w):
        """Return ``(loss, gradient)`` at ``w``; the loss is ``inf`` where either overflows."""
        log_z, grad = self.terms(w)
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            grad -= self.empirical
            grad += self.l2 * w
            loss = log_z.sum() - w @ self.empirical + 0.5 * self.l2 * (w @ w)
        if not (np.isfinite(loss) and np.isfinite(grad).all()):
            # overflow (huge feature values or weights): the solver backs off
            return np.inf, grad
        return loss, grad


def sequence_weighted_terms(structure, features, offsets, label_ids, sequence_weights):
    """The terms of a weighted sum over sequences: the one place weights leave the fused path.

    The structures' fused kernels add every sequence's log Z and expected
    statistics alike, so weighted sequences go through the unfused path
    (potentials, inference, expectations) in groups of equal weight: each
    group's statistics are computed as one training set's and scaled by the
    group's weight. The cost over an unweighted fit is the unfused path's,
    plus one pass over the parameters per distinct weight per evaluation:
    cheap for a few distinct weights (class weights, repetition counts),
    slow for thousands of distinct ones.

    When the fused kernels take per-sequence weights, this is what to
    replace: ``structure.expectation_terms(features, offsets, fused=True,
    sequence_weights=w)`` returning ``w -> (w_q * log Z_q per sequence,
    sum_q w_q * E_q[Phi])``, and ``structure.gold_statistics(...,
    sequence_weights=w)`` returning ``sum_q w_q * Phi(x_q, y_q)``.

    Returns
    -------
    terms : callable
        ``w -> (weighted log Z per sequence, weighted expected statistics)``,
        with the attribute ``empirical``: the weighted gold statistics.
    """
    return _WeightedGroups(structure, features, offsets, label_ids, sequence_weights)


def weight_groups(features, offsets, sequence_weights):
    """The sequences grouped by weight: ``(weight, ids, features, offsets, token rows)`` each."""
    weights = np.asarray(sequence_weights, dtype=np.float64)
    n_sequences = offsets.shape[0] - 1
    values, group_of = np.unique(weights, return_inverse=True)
    for k, value in enumerate(values.tolist()):
        ids = np.flatnonzero(group_of == k)
        if ids.shape[0] == n_sequences:
            yield value, ids, features, offsets, slice(None)
        else:
            yield (value, ids, *take_sequences(features, offsets, ids))


def weighted_gold_statistics(structure, features, offsets, label_ids, sequence_weights):
    """``sum_q w_q * Phi(x_q, y_q)``: the gold statistics of weighted sequences."""
    empirical = np.zeros(structure.n_parameters)
    for value, _, part, part_offsets, rows in weight_groups(features, offsets,
                                                             sequence_weights):
        empirical += value * structure.gold_statistics(part, part_offsets, label_ids[rows])
    return empirical


class _WeightedGroups:
    """Sequences grouped by weight, each group's unfused terms scaled by its weight."""

    def __init__(self, structure, features, offsets, label_ids, sequence_weights):
        self.n_sequences = offsets.shape[0] - 1
        self.n_parameters = structure.n_parameters
        self.groups = []
        self.empirical = np.zeros(structure.n_parameters)
        for value, ids, part, part_offsets, rows in weight_groups(features, offsets,
                                                                  sequence_weights):
            self.empirical += value * structure.gold_statistics(part, part_offsets,
                                                                label_ids[rows])
            terms = structure.expectation_terms(part, part_offsets, fused=False)
            self.groups.append((value, ids, terms))

    def __call__(self, w):
        log_z = np.zeros(self.n_sequences)
        expected = np.zeros(self.n_parameters)
        for value, ids, terms in self.groups:
            part_log_z, part_expected = terms(w)
            log_z[ids] = value * part_log_z
            expected += value * part_expected
        return log_z, expected
