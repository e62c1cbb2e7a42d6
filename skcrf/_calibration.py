"""CalibratedCRF: temperature scaling of a fitted CRF, fitted on held-out data."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar
from sklearn.base import BaseEstimator, _fit_context
from sklearn.pipeline import Pipeline
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._estimators.fitted_state import (FittedState, IfPresent, Integer, Real, Sparse, saved_as,
                                      weights)
from ._estimators.fitted_state import Array, _Spec, weights_or_neginf
from ._estimators.queries import given_label_ids
from ._utils.parallel import kernel_threads
from ._utils.tags import sequence_tags
from ._utils.type_aliases import FeatureSequences, LabelSequences
from ._utils.validation import check_label_type, check_labels

__all__ = ["CalibratedCRF"]

#: The temperatures the search may return: past them the model says "always
#: sure" or "never sure", which held-out data rarely supports.
TEMPERATURE_BOUNDS = (0.05, 20.0)


def _final_step(model):
    return model.steps[-1][1] if isinstance(model, Pipeline) else model


def _weight_names(model):
    """The fitted attributes of ``model`` that are weights of its potentials."""
    names = []
    for name, spec in type(model)._fitted_state.attributes.items():
        spec = spec.spec if isinstance(spec, IfPresent) else spec
        # the pruner of a pruned chain chooses candidates, it scores nothing
        if name.startswith("pruner_") or name not in vars(model):
            continue
        if isinstance(spec, Sparse) or (isinstance(spec, Array) and spec.values in
                                        (weights, weights_or_neginf)):
            names.append(name)
    return names


def scaled_model(model, factor):
    """A copy of the fitted ``model`` (a CRF or a Pipeline ending in one), weights times ``factor``.

    Every potential is linear in the weights, so this divides every
    potential by ``1 / factor``; ``-inf`` (forbidden) stays ``-inf``. The
    copy shares every other attribute with ``model``.
    """
    if isinstance(model, Pipeline):
        scaled = copy.copy(model)
        scaled.steps = [*model.steps[:-1], (model.steps[-1][0],
                                            scaled_model(model.steps[-1][1], factor))]
        return scaled
    scaled = object.__new__(type(model))
    scaled.__dict__ = model.__dict__.copy()
    for name in _weight_names(model):
        value = getattr(model, name)
        if isinstance(value, np.ndarray):
            setattr(scaled, name, value * factor)
        else:
            value = value.copy()
            value.data *= factor
            setattr(scaled, name, value)
    return scaled


class _FittedCRF(_Spec):
    """A fitted CRF estimator of skcrf's, or a Pipeline that ends in one."""

    def check(self, value, label, dims):
        from ._chain import CRFClassifier
        from ._semimarkov import SemiMarkovCRF
        from ._tree import TreeCRF

        final = _final_step(value)
        if not isinstance(final, (CRFClassifier, SemiMarkovCRF, TreeCRF)):
            raise ValueError(f"{label} is a {type(value).__name__}; expected a fitted CRF "
                             f"estimator of skcrf or a Pipeline that ends in one")
        if not type(final)._fitted_state.is_fitted(final):
            raise ValueError(f"{label} is not fitted")


def _temperature_is_positive(model):
    if not model.temperature_ > 0:
        raise ValueError(f"temperature_ must be > 0; it is {model.temperature_!r}")


def _has(method):
    return lambda self: hasattr(_final_step(self.estimator), method)


@saved_as("skcrf.CalibratedCRF")
class CalibratedCRF(BaseEstimator):
    """A fitted CRF whose probabilities are calibrated by temperature scaling.

    A meta-estimator in the manner of scikit-learn's
    :class:`~sklearn.calibration.CalibratedClassifierCV` with a prefit
    estimator: ``fit`` leaves ``estimator`` as it is and learns one
    temperature ``T`` on held-out sequences, the one that minimises their
    negative log-likelihood; the calibrated model divides every potential
    (unary, transition, segment, pattern) by ``T``. ``T > 1`` softens
    probabilities that were too sure, ``T < 1`` sharpens them. Dividing all
    scores by one number keeps the best labelling: ``predict`` (and
    ``predict_spans`` without probabilities) gives the estimator's answers;
    marginals, n-best and span probabilities change (Guo et al., 2017).

    Parameters
    ----------
    estimator : fitted estimator
        A fitted :class:`~skcrf.CRFClassifier`, :class:`~skcrf.SemiMarkovCRF`
        or :class:`~skcrf.TreeCRF`, or a fitted Pipeline that ends in one
        (its featurizing steps are used as they are).
    objective : {"sequence", "token"}, default="sequence"
        What ``T`` fits: ``"sequence"`` the log-likelihood of the held-out
        labellings (what the model's span and sequence probabilities rest
        on), ``"token"`` the log-likelihood of the held-out tags under the
        token marginals.

    Attributes
    ----------
    temperature_ : float
        The temperature learnt, in [0.05, 20].
    estimator_ : estimator
        The calibrated model: a copy of ``estimator`` with its weights
        divided by ``temperature_``; the prediction methods call it.
    n_sequences_used_ : int
        Held-out sequences the fit used: a sequence whose gold labelling the
        model forbids (probability 0) is left out of the likelihood.

    See Also
    --------
    skcrf.metrics.expected_calibration_error : To measure the effect.

    Examples
    --------
    >>> from skcrf import CalibratedCRF, CRFClassifier
    >>> X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}]] * 5
    >>> y = [["A", "B"], ["B"]] * 5
    >>> crf = CRFClassifier(max_iter=20).fit(X[:6], y[:6])
    >>> calibrated = CalibratedCRF(crf).fit(X[6:], y[6:])
    >>> calibrated.predict([[{"w": "a"}, {"w": "b"}]])[0].tolist()
    ['A', 'B']
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["predict"])],
        "objective": [StrOptions({"sequence", "token"})],
    }

    _fitted_state = FittedState({
        "estimator_": _FittedCRF(),
        "temperature_": Real(low=0.0),
        "n_sequences_used_": Integer(low=1),
    }, rules=[_temperature_is_positive])

    def __init__(self, estimator: Any, *, objective: str = "sequence"):
        self.estimator = estimator
        self.objective = objective

    def __sklearn_tags__(self):
        tags = sequence_tags(super().__sklearn_tags__(), "string", y_required=True)
        tags.non_deterministic = False
        return tags

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X: FeatureSequences, y: LabelSequences) -> "CalibratedCRF":
        """Learn the temperature on held-out sequences.

        Parameters
        ----------
        X : list of sequences, or SequenceMatrix
            Held-out sequences, not those ``estimator`` was trained on (its
            probabilities on its training data are over-confident).
        y : list of sequences of labels

        Returns
        -------
        self : CalibratedCRF
        """
        _FittedCRF().check(self.estimator, "estimator", None)
        final = _final_step(self.estimator)
        if isinstance(self.estimator, Pipeline):
            X = self.estimator[:-1].transform(X)
        model = final._fitted_model()
        features, offsets = model._features(X)
        labels = check_labels(y, np.diff(offsets))
        check_label_type(labels, model.classes_)
        label_ids = given_label_ids(labels, offsets, model.classes_)
        with kernel_threads(model.n_jobs, n_tokens=offsets[-1]):
            potentials = model._potentials(features, offsets)
            gold = model._labelling_scores(potentials, offsets, label_ids)
            log_z = model._log_z(potentials, offsets)
        used = np.isfinite(gold) & (np.diff(offsets) > 0)
        if not used.any():
            raise ValueError("No held-out sequence has a labelling the model allows: "
                             "nothing to calibrate on.")

        def loss(log_t):
            scaled = scaled_model(model, math.exp(-log_t))
            with kernel_threads(model.n_jobs, n_tokens=offsets[-1]):
                potentials = scaled._potentials(features, offsets)
                if self.objective == "token":
                    marginals = scaled._posteriors(potentials, offsets)[1]
                    picked = marginals[np.arange(label_ids.shape[0]), label_ids]
                    with np.errstate(divide="ignore"):
                        return -float(np.sum(np.log(np.maximum(picked, 1e-300))))
                log_z = scaled._log_z(potentials, offsets)
            # the gold score is linear in the weights: no second pass for it
            return float(np.sum(log_z[used] - gold[used] * math.exp(-log_t)))

        low, high = (math.log(b) for b in TEMPERATURE_BOUNDS)
        result = minimize_scalar(loss, bounds=(low, high), method="bounded",
                                 options={"xatol": 1e-3})
        temperature = float(math.exp(result.x))
        self.estimator_ = scaled_model(self.estimator, 1.0 / temperature)
        self.temperature_ = temperature
        self.n_sequences_used_ = int(used.sum())
        return self

    def _call(self, method, X, *args, **kwargs):
        """``method`` of the calibrated CRF on ``X`` (through the pipeline's other steps)."""
        check_is_fitted(self, "estimator_")
        model = self.estimator_
        if isinstance(model, Pipeline):
            X = model[:-1].transform(X)
        return getattr(_final_step(model), method)(X, *args, **kwargs)

    def predict(self, X: FeatureSequences, **kwargs: Any):
        """The estimator's ``predict`` on the calibrated model (same best labellings)."""
        return self._call("predict", X, **kwargs)

    @available_if(_has("predict_marginals"))
    def predict_marginals(self, X: FeatureSequences, **kwargs: Any):
        """Calibrated token marginals (see the estimator's ``predict_marginals``)."""
        return self._call("predict_marginals", X, **kwargs)

    @available_if(_has("predict_proba"))
    def predict_proba(self, X: FeatureSequences):
        """Calibrated token marginals, per sequence (n_tokens_i, n_classes)."""
        return self._call("predict_proba", X)

    @available_if(_has("predict_nbest"))
    def predict_nbest(self, X: FeatureSequences, n: int = 5, **kwargs: Any):
        """The n best labellings with calibrated probabilities."""
        return self._call("predict_nbest", X, n, **kwargs)

    def sequence_log_proba(self, X: FeatureSequences, y: LabelSequences):
        """Calibrated ``log p(y | x)`` of given labellings."""
        return self._call("sequence_log_proba", X, y)

    @available_if(_has("predict_spans"))
    def predict_spans(self, X: FeatureSequences, return_proba: bool = False):
        """Predicted spans, with calibrated probabilities if ``return_proba``."""
        return self._call("predict_spans", X, return_proba=return_proba)

    @available_if(_has("predict_span_proba"))
    def predict_span_proba(self, X: FeatureSequences, spans):
        """Calibrated probabilities of given spans."""
        return self._call("predict_span_proba", X, spans)

    def score(self, X: FeatureSequences, y: LabelSequences, **kwargs: Any) -> float:
        """The estimator's ``score`` (its predictions do not change)."""
        return self._call("score", X, y, **kwargs)

    @property
    def classes_(self):
        check_is_fitted(self, "estimator_")
        return _final_step(self.estimator_).classes_
