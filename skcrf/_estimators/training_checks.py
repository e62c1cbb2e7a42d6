"""Whether a fit really trained: the errors and warnings that say what was observed.

A mixin of :class:`~skcrf._estimators.base.CRFEstimator`, apart from the fit
driver: the driver runs the solver, this reads its result and says, when it
did not train, what was seen and (only when one was seen) the likely cause.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._utils.validation import describe_largest_value
from ..learning.lbfgs import Stop
from .training import _user_stacklevel


class TrainingChecks:
    """``_check_training`` and its messages, for every CRF estimator."""

    def _check_training(self, result, data, w0=None):
        """Raise or warn, saying what to do, if the solver did not really train.

        ``w0`` is where the solver started (None: zero weights), for the
        messages: a warm start from huge weights is not "zero weights".

        Warnings point at the user's call of ``fit``, past the frames of
        skcrf and of scikit-learn's ``_fit_context`` wrapper
        (:func:`_user_stacklevel`).

        Huge feature values make the objective overflow (the loss reports
        ``inf`` there and the solver backs off) or the solver's own norms
        overflow, so that it either cannot move at all or takes steps of
        length zero: either way it would return the all-zero model as if
        converged.
        """
        name = type(self).__name__
        features = data.features

        def largest():
            return describe_largest_value(features.data, features.indices,
                                          features.indptr, data.lengths, data.feature_names)

        start = "zero weights"
        if w0 is not None and w0.any():
            start = (f"its starting weights (a previous fit's, up to "
                     f"{float(np.abs(w0).max()):.3g} in magnitude)")
        cause = self._likely_cause(data, w0, largest)
        if result.stop is Stop.NOT_FINITE:
            raise ValueError(
                f"Training cannot start: the objective or its gradient overflows at "
                f"{start}; {cause}")
        if not np.isfinite(result.w).all() or not np.isfinite(result.loss_curve[-1:]).all():
            raise ValueError(
                f"Training diverged: the objective or the weights became non-finite; "
                f"{cause}")
        stuck = result.stop is Stop.LINE_SEARCH or result.n_iter > 0
        # an online solver may rightly end at zero (a batch it already labels right)
        if stuck and self.solver == "lbfgs" and not result.w.any():  # still the start
            curve = [value for value in result.loss_curve if np.isfinite(value)]
            seen = (f"; the objective was {curve[0]:.6g} at the start and "
                    f"{curve[-1]:.6g} at the end" if curve else "")
            raise ValueError(
                f"Training made no progress: the weights are still zero after "
                f"{result.n_iter} iterations ({result.message}){seen}; {cause}")
        if result.stop is Stop.LINE_SEARCH:
            warnings.warn(
                f"{name} stopped after {result.n_iter} iterations because the line "
                f"search could not decrease the objective, so the model may be poor; "
                f"{cause}", ConvergenceWarning, stacklevel=_user_stacklevel())
        elif result.stop is Stop.MAX_ITER:
            warnings.warn(
                f"{name} did not converge in max_iter={self.max_iter} iterations; "
                f"increase max_iter or tol.", ConvergenceWarning, stacklevel=_user_stacklevel())

    #: Feature values and sample weights from this magnitude on are named as the
    #: likely cause of a failed fit (the objective's terms are their products).
    _LARGE_VALUE = 1e6

    def _likely_cause(self, data, w0, largest):
        """What a failed fit's message names as its likely cause, with advice; or says none is known.

        Only what was observed is blamed: huge feature values, huge sample
        weights, huge starting weights, a pruning threshold that keeps little
        besides the gold labels.
        """
        causes = []
        values = data.features.data
        if values is not None and values.shape[0] and float(np.abs(values).max()) >= self._LARGE_VALUE:
            causes.append(f"{largest()}. Scale real-valued features to a moderate range "
                          f"(e.g. divide each by its largest magnitude, or standardize it)")
        weights = getattr(data, "sequence_weights", None)
        if weights is not None and weights.shape[0] and weights.max() >= self._LARGE_VALUE:
            q = int(np.argmax(weights))
            causes.append(f"sample_weight reaches {float(weights[q]):.3g} (sequence {q}). "
                          f"Divide every weight by a common factor (with alpha divided "
                          f"alike, the model is the same)")
        if w0 is not None and w0.any() and float(np.abs(w0).max()) >= self._LARGE_VALUE:
            causes.append(f"the starting weights reach {float(np.abs(w0).max()):.3g}"
                          + (". Fit without warm_start" if getattr(self, "warm_start", False)
                             else ""))
        threshold = getattr(self, "prune_threshold", None)
        if threshold is not None and getattr(self, "order", 1) > 1 and threshold > 0.5:
            causes.append(f"prune_threshold={threshold:g} keeps at most one label per token "
                          f"besides the gold one, so the pruned lattice has little to learn "
                          f"from. Lower it (e.g. 1e-3)")
        if causes:
            return "likely cause: " + "; likely cause: ".join(causes) + ", or increase alpha."
        return (f"no likely cause was found ({largest()}, no sample weight or starting "
                f"weight is huge). Increasing alpha may help.")
