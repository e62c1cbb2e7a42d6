"""What every CRF estimator shares: input to features, the fit driver, predict and score."""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .constraints import check_training_labels, resolve_constraints, scheme_constraints
from .partial_labels import encode_partial_labels, holds_partial_labels, partial_label_constraints
from .estimator_state import ESTIMATOR_STATE
# pruning's rules take forbidden_where_not_allowed from here, where it was first
from .estimator_state import forbidden_where_not_allowed  # noqa: F401
from .._utils.parallel import kernel_exceptions, kernel_threads
from .._utils.tags import sequence_tags
from .queries import StructureQueries, check_feasible, log_probabilities, plain_dict_features
from .training_checks import TrainingChecks
from .._utils.validation import (check_feature_values, check_finite_features, check_label_type,
                          check_labels, check_sequences,
                          encode_labels)
from .._utils.type_aliases import FeatureSequences, FixedLabels, LabelSequences, SequenceWeights
from ..features._dense import check_finite
from ..features.arrays import FeatureArrays, all_feature_names
from ..features.sequence_matrix import SequenceMatrix
from ..features.vectorizer import SequenceVectorizer
from .training import (TrainingData, _is_fitted_attribute_set, _same_values,
                        _user_stacklevel, atomic_fit, checked_settings)
from ..learning.lbfgs import lbfgs
from ..metrics._checks import _refuse_partial_labels
from . import online as _online
from .columns import column_names, compacted, used_columns
from .sample_weights import check_sample_weight, nonzero_weights

#: The solvers of every CRF estimator: batch L-BFGS and the online ones.
SOLVERS = ("lbfgs",) + _online.ONLINE_SOLVERS


class CRFEstimator(StructureQueries, TrainingChecks, _online.OnlineTraining, BaseEstimator):
    """Base class of the CRF estimators: validation, the solver and the prediction methods.

    A subclass builds its structure in ``fit`` and answers the prediction
    methods through the hooks of :class:`~skcrf._estimators.queries.StructureQueries`.
    """

    #: ``fit`` of a subclass takes ``@CRFEstimator._atomic_fit`` (see :func:`atomic_fit`)
    _atomic_fit = staticmethod(atomic_fit)

    #: The fitted attributes every CRF estimator has; a subclass declares its
    #: own by extending this (see :mod:`skcrf._estimators.estimator_state`).
    _fitted_state = ESTIMATOR_STATE

    # predict's options, asked for by default: with scikit-learn's metadata
    # routing on, a Pipeline routes them to its CRF as it passes them without it
    # (set_predict_request can still decline one)
    __metadata_request__predict = {"fixed": True, "decoding": True, "return_proba": True}

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        "l1_ratio": [Interval(Real, 0, 1, closed="both")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "solver": [StrOptions(set(SOLVERS))],
        "learning_rate": [StrOptions({"optimal", "constant"})],
        "eta0": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "average": [StrOptions({"auto"}), "boolean", Interval(Integral, 1, None, closed="left")],
        "C": [Interval(Real, 0, None, closed="neither")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "all_possible_states": ["boolean"],
        "warm_start": ["boolean"],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
    }

    def _fit(self, X, y, sample_weight=None, settings=None):
        """The body of every ``fit``: data, problem, solver, checks, fitted attributes.

        Runs on the shadow estimator of :func:`atomic_fit`; a subclass's ``fit``
        checks what only it knows about its parameters, then calls this.
        Sequences of ``sample_weight`` 0 are dropped first: they train as if
        they were not there. ``settings`` are those of this fit that no
        parameter names (:attr:`TrainingData.settings`; None: none).
        """
        previous = vars(self).pop("_previous_model", None)
        X, y, weights = nonzero_weights(X, y, sample_weight)
        data = self._training_data(X, y)
        data.sequence_weights = weights
        data.settings = checked_settings(settings)
        problem = self._training_problem(data)
        w0 = self._initial_weights(problem, data, previous)
        if self.solver in _online.ONLINE_SOLVERS:
            result, self.solver_state_ = _online.fit_online(self, problem, data, w0, weights)
        else:
            objective = problem.objective(data, l2=self._l2, sequence_weights=weights)
            w0 = problem.starting_point(w0)
            data.label_ids = None  # the objective has what it needs from them
            result = self._solve(objective, w0)
        self._check_training(result, data, w0)
        for name, value in problem.fitted_attributes(result.w).items():
            setattr(self, name, value)
        self._store_training(data, result)
        return self

    def _training_problem(self, data):
        """The :class:`TrainingProblem` of ``data`` (a subclass's structure)."""
        raise NotImplementedError

    def _initial_weights(self, problem, data, previous):
        """The solver's starting point: zero, or the ``previous`` model's weights.

        With ``warm_start``, the previous model's weights when its parameter
        layout is this problem's: the same classes (and segment classes),
        the same feature names in the same order, and fitted attributes of
        the same shapes (same order, transition features, longest segment).
        Anything else starts from zero, as a fit without ``warm_start``.
        """
        zeros = np.zeros(problem.n_parameters)
        if previous is None or not self._same_layout(problem, data, previous):
            return zeros
        named = {block: getattr(previous, attribute)
                 for block, attribute in problem.coefficient_names.items()
                 if hasattr(previous, attribute)}
        w = problem.structure.weights(named)
        return zeros if w is None else w

    def _same_layout(self, problem, data, previous):
        """Whether ``previous`` was fitted with the classes and features of this problem."""
        for name in ("classes_", "segment_classes_"):
            if name in problem.attributes and not _same_values(
                    getattr(previous, name, None), problem.attributes[name]):
                return False
        return _same_values(getattr(previous, "feature_names_", None),
                            self._feature_names(data))

    @property
    def _l2(self):
        """The coefficient of the L2 term, ``alpha * (1 - l1_ratio)``."""
        return float(self.alpha) * (1.0 - float(self.l1_ratio))

    @property
    def _l1(self):
        """The coefficient of the L1 term, ``alpha * l1_ratio``."""
        return float(self.alpha) * float(self.l1_ratio)

    def _training_data(self, X, y):
        """Check ``X`` and ``y`` and turn them into :class:`TrainingData`."""
        X = check_sequences(X)
        if len(X) == 0:
            raise ValueError("X is empty: fit needs at least one sequence.")
        vectorizer = None
        columns, width = None, None
        if isinstance(X, SequenceMatrix):
            X._check_consistency()
            columns = used_columns(X)
            if columns is not None:
                width, X = X.n_features, compacted(X, columns)
        else:
            vectorizer = SequenceVectorizer()
            X = vectorizer.fit_transform(X)
        offsets, lengths = X.offsets, X.lengths
        partial = None
        if not hasattr(y, "__len__") and hasattr(y, "__iter__"):
            y = list(y)  # a generator can be read once: for the scan and the encoding
        if holds_partial_labels(y):
            refusal = self._partial_labels_refusal()
            if refusal is not None:
                raise ValueError(
                    f"y holds unknown (None) or ambiguous (set) labels, which "
                    f"{type(self).__name__} cannot train on {refusal}; give every token "
                    f"one label.")
            partial = encode_partial_labels(y, lengths)
            classes, label_ids = partial.classes, partial.label_ids
        else:
            classes, label_ids = encode_labels(y, lengths)
        if offsets[-1] == 0:
            raise ValueError("X has no tokens: every sequence is empty.")
        _check_finite_features(X)
        if X.dense is not None:
            check_finite(X.dense, offsets, X.dense_names)  # it may have changed in place
        if classes.shape[0] < 2:
            raise ValueError(
                f"y holds a single class ({classes[0]!r}); a CRF needs at least two.")
        data = TrainingData(FeatureArrays.of_sequences(X, self._reads_dense_block(True)),
                            offsets, classes, label_ids,
                            all_feature_names(X), vectorizer)
        data.n_dense = X.n_dense
        data.columns, data.input_width = columns, width
        data.partial = partial
        data.segment_feature_names = None if X.segments is None else X.segments.feature_names
        return data

    def _partial_labels_refusal(self):
        """Why this estimator cannot train on unknown or set labels, or None if it can.

        The words complete "cannot train on them ..."; see
        :mod:`skcrf._estimators.partial_labels`.
        """
        return "yet (CRFClassifier does)"

    def _label_constraints(self, data):
        """The :class:`~skcrf._estimators.constraints.TransitionConstraints` of ``allowed_transitions``.

        Training tags that break a scheme's rules are repaired in ``data``
        (``classes`` and ``label_ids`` replaced), with a warning; labels that
        break explicit pairs raise a ValueError naming them.
        """
        spec = self.allowed_transitions
        if data.partial is not None:
            return partial_label_constraints(spec, data, type(self).__name__)
        constraints = resolve_constraints(
            spec, data.classes,
            lambda: self._split(data.classes[data.label_ids], data.offsets))
        repaired = check_training_labels(constraints, data.classes, data.label_ids,
                                         data.offsets, spec, type(self).__name__)
        if repaired is None:
            return constraints
        tags, message = repaired
        warnings.warn(message, UserWarning, stacklevel=_user_stacklevel())
        data.classes, data.label_ids = encode_labels([tags], [len(tags)])
        if data.classes.shape[0] < 2:
            raise ValueError(f"y holds a single class ({data.classes[0]!r}) once its tags are "
                             f"well-formed; a CRF needs at least two.")
        return scheme_constraints(data.classes, constraints.scheme, spec)

    def _solve(self, objective, w0):
        """Run the solver on ``objective`` from ``w0``; raise or warn if it did not train."""
        # overflow warnings from the solver's arithmetic would only precede the
        # clearer errors of _check_training
        with kernel_threads(self.n_jobs, hold_blas=True), \
                np.errstate(over="ignore", invalid="ignore"):
            return lbfgs(objective, w0, l1=self._l1, max_iter=self.max_iter,
                         tol=self.tol, verbose=self.verbose)

    def _store_training(self, data, result):
        """Set the fitted attributes every estimator shares: the features, the vectorizer
        and the solver's record (called on the shadow estimator of ``fit``)."""
        n_dense = getattr(data.features, "n_dense", 0)  # a distributed fit's has none
        columns = getattr(data, "columns", None)
        self.n_features_in_ = (data.features.n_features + n_dense if columns is None
                               else data.input_width)
        self.n_dense_features_in_ = getattr(data, "n_dense", 0)
        self.feature_names_ = self._feature_names(data)
        if columns is None:
            self.__dict__.pop("feature_columns_", None)
        else:
            self.feature_columns_ = columns
        self.vectorizer_ = data.vectorizer
        self.n_iter_ = result.n_iter
        self.loss_curve_ = result.loss_curve

    @staticmethod
    def _feature_names(data):
        n_features = data.features.n_features + getattr(data.features, "n_dense", 0)
        if data.feature_names is not None:
            return np.asarray(data.feature_names, dtype=object)
        if getattr(data, "columns", None) is not None:
            return column_names(data.columns)
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
        # every fit sets n_features_in_, which makes sklearn's check pass; it
        # reads the estimator's tags first, a cost each one-sentence predict
        # would pay, so it runs only when that attribute is missing (to raise
        # its error, or to pass as it decides)
        if "n_features_in_" not in model.__dict__:
            check_is_fitted(model)
        return model

    def _features(self, X):
        """Check fitted state and input; the FeatureArrays and offsets of ``X``.

        Prediction methods call it on :meth:`_fitted_model`, not on ``self``.
        """
        if "n_features_in_" not in self.__dict__:  # as in _fitted_model
            check_is_fitted(self)
        plain = plain_dict_features(self.vectorizer_, X)
        if plain is not None:
            return plain
        X = check_sequences(X)
        if isinstance(X, SequenceMatrix):
            X._check_consistency()
            X = self._numeric_layout(X)
            if "feature_columns_" in self.__dict__:
                X = compacted(X, self.feature_columns_)
            _check_finite_features(X)
            return FeatureArrays.of_sequences(X, self._reads_dense_block(False)), X.offsets
        if self.vectorizer_ is None:
            raise TypeError(
                f"This {type(self).__name__} was fitted on a SequenceMatrix; pass one here "
                f"too (or fit on feature dicts).")
        with kernel_exceptions():  # its kernels may be interrupted too
            X = self.vectorizer_.transform(X)
        features = FeatureArrays.of_sequences(X, self._reads_dense_block(False))
        check_feature_values(features.data, features.indices, features.indptr, X.lengths,
                             all_feature_names(X))
        if X.dense is not None:
            check_finite(X.dense, X.offsets, X.dense_names)
        return features, X.offsets

    def _reads_dense_block(self, training):
        """Whether this model's structure multiplies a dense block by BLAS.

        ``training`` says whether for ``fit`` (the objective, with full or
        partial labels alike) or for prediction (the unary scores of
        :func:`~skcrf.features.arrays.csr_times_dense`). Otherwise a dense
        block reaches the kernels as CSR columns.
        """
        return False

    def _numeric_layout(self, X):
        """``X`` checked against the columns the model was fitted with.

        The weights see sparse columns, then dense ones, so what counts is
        the total width and that a model of dense columns is not given
        sparse-only columns of another width; numbers given as sparse to a
        model fitted on a dense block (or the reverse) are the same columns
        and are accepted.
        """
        name = type(self).__name__
        n_dense = getattr(self, "n_dense_features_in_", 0)
        width = X.n_features + X.n_dense
        if width != self.n_features_in_:
            hint = ""
            if self.vectorizer_ is None and X.feature_names is not None:
                # a TokenFeaturizer's output numbers each call's features afresh
                hint = (" A SequenceMatrix with feature names made by a call of its own "
                        "(TokenFeaturizer().fit_transform) has that call's vocabulary: "
                        "fit on feature dicts, or keep a SequenceVectorizer between the "
                        "featurizer and the model (make_pipeline(TokenFeaturizer(), "
                        "SequenceVectorizer(), model)), which maps new text onto the "
                        "training columns.")
            raise ValueError(
                f"X has {width} features ({X.n_features} sparse, {X.n_dense} dense "
                f"columns), but {name} was fitted with {self.n_features_in_} "
                f"({self.n_features_in_ - n_dense} sparse, {n_dense} dense).{hint}")
        if X.dense is not None:
            check_finite(X.dense, X.offsets, X.dense_names)  # it may have changed in place
        return X

    @staticmethod
    def _split(values, offsets):
        """``values`` cut into one view per sequence (np.split's pieces, with less overhead)."""
        bounds = offsets.tolist()
        return [values[start:stop] for start, stop in zip(bounds[:-1], bounds[1:])]

    def _label_ids(self, features, offsets):
        with kernel_threads(self.n_jobs, n_tokens=offsets[-1]):
            return self._decode(features, offsets)

    # --- prediction ----------------------------------------------------------------------

    def predict(
        self, X: FeatureSequences, *, fixed: FixedLabels = None,
        decoding: Literal["viterbi", "marginal"] = "viterbi", return_proba: bool = False,
    ) -> list[NDArray[Any]] | tuple[list[NDArray[Any]], NDArray[np.float64]]:
        """Most likely label sequence of each sequence.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
        fixed : list, default=None
            Labels known in advance (forced decoding): one entry per
            sequence, None or a sequence with one item per token, a label of
            ``classes_`` or None for a free token. The other tokens get the
            most likely completion, and ``return_proba`` gives its
            probability given the fixed labels. A sequence whose fixed labels
            the model allows no labelling with raises a ValueError naming it.
        decoding : {"viterbi", "marginal"}, default="viterbi"
            ``"viterbi"``: the labelling of highest probability. ``"marginal"``
            (posterior decoding): each token's most probable label (argmax of
            :meth:`predict_marginals`, ties to the first class), which
            maximises the expected number of correct tokens but may be a
            labelling of probability 0 (a forbidden transition).
        return_proba : bool, default=False
            Also return the probability ``p(y | x)`` of each returned
            labelling: one Viterbi (or marginal) pass plus one log Z.

        Returns
        -------
        y_pred : list of ndarray
            One 1-D array of labels from ``classes_`` per sequence.
        proba : ndarray of shape (n_sequences,)
            Only with ``return_proba``: the probability of each labelling (1
            for an empty sequence).
        """
        if decoding not in ("viterbi", "marginal"):
            raise ValueError(f"decoding must be 'viterbi' or 'marginal'; got {decoding!r}.")
        model = self._fitted_model()
        features, offsets = model._features(X)
        if fixed is None and decoding == "viterbi" and not return_proba:
            return self._split(model.classes_[model._label_ids(features, offsets)], offsets)
        if fixed is None and decoding == "marginal" and not return_proba:
            with kernel_threads(model.n_jobs, n_tokens=offsets[-1]):
                marginals = model._token_marginals(features, offsets)
            return self._split(model.classes_[np.argmax(marginals, axis=1)], offsets)
        potentials, fixed_ids = model._query_potentials(
            features, offsets, fixed, "fixed labels or probabilities of labellings",
            "predict and predict_marginals give the best labels and per-token "
            "probabilities.")
        log_z = None
        with kernel_threads(model.n_jobs, n_tokens=offsets[-1]):
            if decoding == "viterbi":
                label_ids = model._viterbi(potentials, offsets)
            else:
                log_z, marginals = model._posteriors(potentials, offsets)
                label_ids = np.argmax(marginals, axis=1)
            if return_proba or fixed_ids is not None:
                scores = model._labelling_scores(potentials, offsets, label_ids)
            if fixed_ids is not None:
                feasible = (scores > -np.inf if decoding == "viterbi" else log_z > -np.inf)
                check_feasible(feasible, fixed_ids, offsets, model.classes_)
            if return_proba and log_z is None:
                log_z = model._log_z(potentials, offsets)
        y_pred = self._split(model.classes_[label_ids], offsets)
        if not return_proba:
            return y_pred
        return y_pred, np.exp(log_probabilities(scores, log_z))

    def predict_marginals(self, X: FeatureSequences, *,
                          fixed: FixedLabels = None) -> list[NDArray[np.float64]]:
        """Probability of each label at each token (forward-backward).

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
        fixed : list, default=None
            Labels known in advance, as for :meth:`predict`: the marginals are
            then conditional on them (1 for the fixed label of a fixed token).

        Returns
        -------
        marginals : list of ndarray
            One (n_tokens_i, n_classes) array per sequence, columns in
            ``classes_`` order, rows summing to 1.
        """
        model = self._fitted_model()
        features, offsets = model._features(X)
        if fixed is None:
            with kernel_threads(model.n_jobs, n_tokens=offsets[-1]):
                marginals = model._token_marginals(features, offsets)
            return self._split(marginals, offsets)
        potentials, fixed_ids = model._query_potentials(
            features, offsets, fixed, "fixed labels",
            "predict_marginals without fixed gives the unconditional marginals.")
        with kernel_threads(model.n_jobs, n_tokens=offsets[-1]):
            log_z, marginals = model._posteriors(potentials, offsets)
        check_feasible(log_z > -np.inf, fixed_ids, offsets, model.classes_)
        return self._split(marginals, offsets)

    def predict_proba(self, X: FeatureSequences) -> list[NDArray[np.float64]]:
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

    def score(self, X: FeatureSequences, y: LabelSequences,
              sample_weight: SequenceWeights = None) -> float:
        """Token accuracy of ``predict(X)`` against ``y``.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
        y : list of sequences of labels
        sample_weight : array-like of shape (n_sequences,), default=None
            One weight per sequence, applied to each of its tokens, as in
            :func:`skcrf.metrics.flat_accuracy_score`.

        Returns
        -------
        score : float
            Fraction of tokens labelled correctly (weighted).
        """
        model = self._fitted_model()
        features, offsets = model._features(X)
        lengths = np.diff(offsets)
        if holds_partial_labels(y):
            _refuse_partial_labels([label for labels in y for label in labels], lengths)
        labels = check_labels(y, lengths)
        if labels.shape[0] == 0:
            raise ValueError("score needs at least one token.")
        check_label_type(labels, model.classes_)
        predicted = model.classes_[model._label_ids(features, offsets)]
        if sample_weight is None:
            return float(np.mean(predicted == labels))
        weights = np.repeat(check_sample_weight(sample_weight, lengths.shape[0]),
                            lengths)
        if not weights.any():
            raise ValueError("sample_weight gives no token a weight above 0.")
        # a weighted mean depends on the weights' ratios only: their sum must not
        # overflow (1e308 weights gave NaN)
        weights = weights / weights.max()
        return float(np.average(predicted == labels, weights=weights))

    def __sklearn_is_fitted__(self):
        """scikit-learn's rule, some learned attribute (trailing underscore) is set.

        Looked up first under the name every fit sets: check_is_fitted, which
        a Pipeline's predict calls on its last step, would otherwise scan the
        attributes on every one-sentence call.
        """
        return "n_features_in_" in self.__dict__ or _is_fitted_attribute_set(self)

    def __sklearn_tags__(self):
        return sequence_tags(super().__sklearn_tags__(), "dict", y_required=True)


def _check_finite_features(X):
    """:func:`check_finite_features` of ``X`` and of its features of segments."""
    check_finite_features(X)
    if X.segments is not None:
        try:
            check_finite_features(X.segments)
        except ValueError as error:
            raise ValueError(
                f"X.segments, the features of candidate segments (a sequence's row "
                f"t * L + d - 1 is its segment of d tokens from token t): {error}") from None
