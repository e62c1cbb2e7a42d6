"""What every CRF estimator shares: input to features, the fit driver, predict and score."""

import functools
import sys
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._parallel import kernel_exceptions, kernel_threads
from ._validation import (check_feature_values, check_finite_features, check_label_type,
                          check_labels, check_sequences, describe_largest_value,
                          encode_labels)
from .features.arrays import FeatureArrays
from .features.sequence_matrix import SequenceMatrix
from .features.vectorizer import SequenceVectorizer
from .learning.lbfgs import Stop, lbfgs


def _user_stacklevel():
    """``stacklevel`` that makes a warning raised by the caller point at user code.

    Counts the frames of skcrf and of scikit-learn's ``_fit_context``
    wrapper (sklearn.base) between the caller and the first other frame, so
    that it stays right whatever wrappers ``fit`` has.
    """
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith(
            ("skcrf.", "sklearn.base")):
        frame = frame.f_back
        level += 1
    return level


def _is_fitted_attribute(name):
    """Whether ``name`` is a learned attribute (scikit-learn's rule: a trailing underscore)."""
    return name.endswith("_") and not name.startswith("__")


def atomic_fit(fit):
    """Make ``fit`` build the new state aside and swap it in at once at its end.

    ``fit`` runs on a shadow estimator: the same class and parameters, no
    fitted attributes. Only when it returns does the shadow's state replace
    the estimator's, in one assignment of ``__dict__``. So a concurrent
    ``predict`` (which reads a snapshot of that dict, see
    :meth:`CRFEstimator._fitted_model`) sees the old model or the new one,
    never a mix, and a fit that raises (bad input, divergence, Ctrl-C, out
    of memory) leaves the previous model as it was. Attributes a previous fit
    set and this one does not (``transition2_coef_`` after ``order=2``) go.
    A Ctrl-C or MemoryError inside a kernel comes out as itself, not as the
    SystemError numba wraps it in (:func:`~skcrf._parallel.kernel_exceptions`).
    """

    @functools.wraps(fit)
    def swapping_fit(self, *args, **kwargs):
        shadow = object.__new__(type(self))
        shadow.__dict__.update(
            (name, value) for name, value in vars(self).items()
            if not _is_fitted_attribute(name))
        with kernel_exceptions():
            fit(shadow, *args, **kwargs)
        # one reference assignment: a reader has the old dict or the new one
        self.__dict__ = shadow.__dict__
        return self

    return swapping_fit


class TrainingData:
    """A training set as the structures take it: features, offsets and label ids.

    Attributes
    ----------
    features : FeatureArrays of shape (n_tokens, n_features)
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    classes : ndarray of shape (n_classes,)
    label_ids : ndarray of int64 of shape (n_tokens,)
    feature_names : ndarray of object or None
    vectorizer : SequenceVectorizer or None
        The vectorizer fitted on dict input; None for a SequenceMatrix.
    """

    def __init__(self, features, offsets, classes, label_ids, feature_names, vectorizer):
        self.features = features
        self.offsets = offsets
        self.classes = classes
        self.label_ids = label_ids
        self.feature_names = feature_names
        self.vectorizer = vectorizer

    @property
    def lengths(self):
        return np.diff(self.offsets)


class CRFEstimator(BaseEstimator):
    """Base class of the CRF estimators: validation, the solver and the prediction methods.

    A subclass builds its structure in ``fit`` and implements
    ``_decode(features, offsets)`` (label ids) and
    ``_token_marginals(features, offsets)`` ((n_tokens, n_classes) array).
    """

    #: ``fit`` of a subclass takes ``@CRFEstimator._atomic_fit`` (see :func:`atomic_fit`)
    _atomic_fit = staticmethod(atomic_fit)

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        "l1_ratio": [Interval(Real, 0, 1, closed="both")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "solver": [StrOptions({"lbfgs"})],
        "all_possible_states": ["boolean"],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
    }

    def _training_data(self, X, y):
        """Check ``X`` and ``y`` and turn them into :class:`TrainingData`."""
        X = check_sequences(X)
        if len(X) == 0:
            raise ValueError("X is empty: fit needs at least one sequence.")
        vectorizer = None
        if isinstance(X, SequenceMatrix):
            X._check_consistency()
        else:
            vectorizer = SequenceVectorizer()
            X = vectorizer.fit_transform(X)
        offsets, lengths = X.offsets, X.lengths
        classes, label_ids = encode_labels(y, lengths)
        if offsets[-1] == 0:
            raise ValueError("X has no tokens: every sequence is empty.")
        check_finite_features(X)
        if classes.shape[0] < 2:
            raise ValueError(
                f"y holds a single class ({classes[0]!r}); a CRF needs at least two.")
        return TrainingData(FeatureArrays.of_sequences(X), offsets, classes, label_ids,
                            X.feature_names, vectorizer)

    def _solve(self, objective, w0):
        """Run the solver on ``objective`` from ``w0``; raise or warn if it did not train."""
        alpha, l1_ratio = float(self.alpha), float(self.l1_ratio)
        # overflow warnings from the solver's arithmetic would only precede the
        # clearer errors of _check_training
        with kernel_threads(self.n_jobs, hold_blas=True), \
                np.errstate(over="ignore", invalid="ignore"):
            return lbfgs(objective, w0, l1=alpha * l1_ratio, max_iter=self.max_iter,
                         tol=self.tol, verbose=self.verbose)

    def _check_training(self, result, data):
        """Raise or warn, saying what to do, if the solver did not really train.

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

        advice = ("Scale real-valued features to a moderate range (e.g. divide each by "
                  "its largest magnitude, or standardize it), or increase alpha.")
        if result.stop is Stop.NOT_FINITE:
            raise ValueError(
                f"Training cannot start: the objective or its gradient overflows at "
                f"zero weights; {largest()}. {advice}")
        if not np.isfinite(result.w).all() or not np.isfinite(result.loss_curve[-1:]).all():
            raise ValueError(
                f"Training diverged: the objective or the weights became non-finite; "
                f"{largest()}. {advice}")
        stuck = result.stop is Stop.LINE_SEARCH or result.n_iter > 0
        if stuck and not result.w.any():  # still the starting point, zero weights
            raise ValueError(
                f"Training made no progress: the solver could not decrease the "
                f"objective from zero weights ({result.message}); {largest()}. {advice}")
        if result.stop is Stop.LINE_SEARCH:
            warnings.warn(
                f"{name} stopped after {result.n_iter} iterations because the line "
                f"search could not decrease the objective, so the model may be poor; "
                f"{largest()}. {advice}", ConvergenceWarning, stacklevel=_user_stacklevel())
        elif result.stop is Stop.MAX_ITER:
            warnings.warn(
                f"{name} did not converge in max_iter={self.max_iter} iterations; "
                f"increase max_iter or tol.", ConvergenceWarning, stacklevel=_user_stacklevel())

    @staticmethod
    def _feature_names(data):
        n_features = data.features.n_features
        if data.feature_names is not None:
            return np.asarray(data.feature_names, dtype=object)
        return np.asarray([f"x{i}" for i in range(n_features)], dtype=object)

    def _fitted_model(self):
        """A frozen copy of this fitted estimator, for one prediction call to read.

        A prediction reads several fitted attributes (the vectorizer, the
        weights, ``classes_``) at different moments; a concurrent ``fit``
        that finished in between would mix two models. The copy shares the
        arrays but takes the attribute dict once, in one atomic copy, and
        ``fit`` replaces that dict at once (:func:`atomic_fit`).
        """
        model = object.__new__(type(self))
        model.__dict__ = self.__dict__.copy()
        check_is_fitted(model)
        return model

    def _features(self, X):
        """Check fitted state and input; the FeatureArrays and offsets of ``X``.

        Prediction methods call it on :meth:`_fitted_model`, not on ``self``.
        """
        check_is_fitted(self)
        X = check_sequences(X)
        if isinstance(X, SequenceMatrix):
            X._check_consistency()
            if X.n_features != self.n_features_in_:
                raise ValueError(
                    f"X has {X.n_features} features, but {type(self).__name__} was fitted "
                    f"with {self.n_features_in_}.")
            check_finite_features(X)
            return FeatureArrays.of_sequences(X), X.offsets
        if self.vectorizer_ is None:
            raise TypeError(
                f"This {type(self).__name__} was fitted on a SequenceMatrix; pass one here "
                f"too (or fit on feature dicts).")
        with kernel_exceptions():  # its kernels may be interrupted too
            X = self.vectorizer_.transform(X)
        features = FeatureArrays.of_sequences(X)
        check_feature_values(features.data, features.indices, features.indptr, X.lengths,
                             self.vectorizer_.feature_names_)
        return features, X.offsets

    @staticmethod
    def _split(values, offsets):
        # np.split of no boundaries gives one piece, even for no sequences
        return np.split(values, offsets[1:-1]) if offsets.shape[0] > 1 else []

    def _label_ids(self, features, offsets):
        with kernel_threads(self.n_jobs):
            return self._decode(features, offsets)

    def predict(self, X):
        """Most likely label sequence of each sequence (Viterbi decoding).

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix

        Returns
        -------
        y_pred : list of ndarray
            One 1-D array of labels from ``classes_`` per sequence.
        """
        model = self._fitted_model()
        features, offsets = model._features(X)
        return self._split(model.classes_[model._label_ids(features, offsets)], offsets)

    def predict_marginals(self, X):
        """Probability of each label at each token (forward-backward).

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix

        Returns
        -------
        marginals : list of ndarray
            One (n_tokens_i, n_classes) array per sequence, columns in
            ``classes_`` order, rows summing to 1.
        """
        model = self._fitted_model()
        features, offsets = model._features(X)
        with kernel_threads(model.n_jobs):
            marginals = model._token_marginals(features, offsets)
        return self._split(marginals, offsets)

    def predict_proba(self, X):
        """Token marginals under the name scikit-learn's meta-estimators pass on.

        The same as :meth:`predict_marginals`. :class:`~sklearn.pipeline.Pipeline`
        and :class:`~sklearn.model_selection.GridSearchCV` forward
        ``predict_proba`` but not other method names, so this is how a fitted
        pipeline or search gives marginals: ``pipe.predict_proba(X)``.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix

        Returns
        -------
        marginals : list of ndarray
            One (n_tokens_i, n_classes) array per sequence, columns in
            ``classes_`` order, rows summing to 1.
        """
        return self.predict_marginals(X)

    def score(self, X, y):
        """Token accuracy of ``predict(X)`` against ``y``.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
        y : list of sequences of labels

        Returns
        -------
        score : float
            Fraction of tokens labelled correctly.
        """
        model = self._fitted_model()
        features, offsets = model._features(X)
        labels = check_labels(y, np.diff(offsets))
        if labels.shape[0] == 0:
            raise ValueError("score needs at least one token.")
        check_label_type(labels, model.classes_)
        predicted = model.classes_[model._label_ids(features, offsets)]
        return float(np.mean(predicted == labels))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        tags.target_tags.required = True
        return tags
