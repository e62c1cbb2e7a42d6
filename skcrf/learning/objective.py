"""The training objective: negative log-likelihood of any structure, plus the L2 term."""

import numpy as np


class NegativeLogLikelihood:
    """``sum_q -log p(y_q | x_q) + l2 / 2 * ||w||^2`` and its gradient, for one structure.

    ``-log p(y | x) = log Z(x) - w . Phi(x, y)``, so the gradient is
    ``E_p[Phi] - Phi(gold) + l2 * w``. The gold statistics do not depend on
    ``w`` and are computed once here; each evaluation asks the structure for
    log Z and the expected statistics (its fused kernel where it has one).
    The L1 term, which is not smooth, is the solver's business.

    Parameters
    ----------
    structure : object
        A structure (e.g. :class:`~skcrf.structures.chain.ChainStructure`)
        with ``n_parameters``, ``gold_statistics`` and ``expectation_terms``.
    features : FeatureArrays of shape (n_tokens, n_features)
    offsets : ndarray of shape (n_sequences + 1,)
    label_ids : ndarray of shape (n_tokens,)
    l2 : float
        Coefficient of the squared norm; the L2 part of the elastic net is
        ``0.5 * l2 * ||w||^2`` with ``l2 = alpha * (1 - l1_ratio)``.
    fused : bool, default=True
        Whether to use the structure's fused kernel, where it has one.
    """

    def __init__(self, structure, features, offsets, label_ids, l2, fused=True):
        offsets = np.asarray(offsets, dtype=np.int64)
        self.structure = structure
        self.l2 = l2
        self.empirical = structure.gold_statistics(features, offsets,
                                                   np.asarray(label_ids, dtype=np.int64))
        #: ``w -> (log_z, expected statistics)``, from the structure
        self.terms = structure.expectation_terms(features, offsets, fused=fused)

    @classmethod
    def of_terms(cls, structure, empirical, terms, l2):
        """The objective of gold statistics and expectations computed elsewhere.

        For training sets split into parts (on the workers of
        :func:`skcrf.dask.fit`): ``empirical`` is the sum of the parts' gold
        statistics, ``terms(w)`` returns ``(log_z, expected)`` summed over
        them, and the L2 term is added here once, as for one part.
        """
        objective = cls.__new__(cls)
        objective.structure = structure
        objective.l2 = l2
        objective.empirical = empirical
        objective.terms = terms
        return objective

    @property
    def n_parameters(self):
        return self.structure.n_parameters

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
