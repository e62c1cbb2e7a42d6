"""CRFClassifier: validation, fit orchestration and the fitted attributes."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._kernels import forward_backward, viterbi
from ._loss import (FeatureArrays, NegativeLogLikelihood, StatePairs, csr_times_dense,
                    n_parameters, unpack)
from ._parallel import kernel_threads
from ._sequence_matrix import SequenceMatrix
from ._solvers import Stop, lbfgs
from ._validation import (check_feature_values, check_finite_features, check_labels,
                          check_sequences, describe_largest_value, encode_labels)
from ._vectorizer import SequenceVectorizer, _release_freed_memory


class CRFClassifier(BaseEstimator):
    """Linear-chain conditional random field trained by L-BFGS.

    The model scores a label sequence ``y`` of a token sequence ``x`` as
    ``p(y | x) = exp(w . Phi(x, y)) / Z(x)`` with state weights (label, feature),
    transition weights (previous label, label), and start and end weights.
    Training minimises, summed over the training sequences ``q``::

        L(w) = sum_q -log p(y_q | x_q)
               + alpha * l1_ratio * ||w||_1
               + 0.5 * alpha * (1 - l1_ratio) * ||w||_2^2

    The loss is summed, not averaged, so CRFsuite's settings map exactly:
    ``c1 = alpha * l1_ratio`` and ``c2 = 0.5 * alpha * (1 - l1_ratio)`` (CRFsuite
    adds ``c2 * ||w||^2``). Conversely ``alpha = c1 + 2 * c2`` and
    ``l1_ratio = c1 / (c1 + 2 * c2)``; sklearn-crfsuite's ``c1=0.1, c2=0.1`` is
    ``alpha=0.3, l1_ratio=1/3``.

    Parameters
    ----------
    alpha : float, default=1.0
        Regularization strength, the parameter to search over. 0 disables
        regularization.
    l1_ratio : float, default=0.0
        Elastic-net mixing: 0 is pure L2, 1 pure L1. With ``l1_ratio > 0`` many
        weights are exactly zero.
    max_iter : int, default=100
        Maximum number of L-BFGS iterations. Reaching it emits a
        :class:`~sklearn.exceptions.ConvergenceWarning`.
    tol : float, default=1e-5
        Stop once the objective improved by less than ``tol`` (relative) over
        the last 10 iterations, as CRFsuite's ``delta``.
    solver : {"lbfgs"}, default="lbfgs"
        L-BFGS; with ``l1_ratio > 0`` its orthant-wise variant OWL-QN (as in
        CRFsuite), which yields exact zeros.
    all_possible_states : bool, default=False
        Whether every (feature, label) pair gets a state weight. By default
        only the pairs that occur in the training data do, as in CRFsuite
        (sklearn-crfsuite's ``all_possible_states``): several times fewer
        parameters, so faster training and less memory, at no cost in
        accuracy on the benchmark corpora. Transitions always cover every pair
        of labels (CRFsuite's ``all_possible_transitions=True``).
    n_jobs : int, default=None
        Threads for the forward-backward, Viterbi and sparse-product kernels.
        ``None`` and ``-1`` use all cores (inside a joblib worker, the share
        joblib grants it); ``-2`` all but one. Results do not depend on it.
    verbose : int, default=0
        Print the objective, gradient norm and elapsed time every iteration.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels, sorted; columns of ``predict_marginals`` follow this order.
    coef_ : ndarray of shape (n_classes, n_features)
        State weights.
    transition_coef_ : ndarray of shape (n_classes, n_classes)
        Transition weights, indexed [from, to].
    start_coef_ : ndarray of shape (n_classes,)
        Weights of the first label of a sequence.
    end_coef_ : ndarray of shape (n_classes,)
        Weights of the last label of a sequence.
    n_features_in_ : int
        Number of token features.
    feature_names_ : ndarray of str of shape (n_features,)
        Name of every feature (column of ``coef_``).
    vectorizer_ : SequenceVectorizer or None
        The vectorizer fitted on dict input; None when ``fit`` received a
        :class:`SequenceMatrix`.
    n_iter_ : int
        Number of solver iterations.
    loss_curve_ : list of float
        Objective value after each iteration.

    See Also
    --------
    SequenceVectorizer : Turns per-token feature dicts into a SequenceMatrix.

    Examples
    --------
    >>> from skcrf import CRFClassifier
    >>> X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}, {"w": "ran"}]]
    >>> y = [["DET", "N"], ["DET", "N", "V"]]
    >>> crf = CRFClassifier(alpha=0.1).fit(X, y)
    >>> [labels.tolist() for labels in crf.predict([[{"w": "the"}, {"w": "dog"}]])]
    [['DET', 'N']]
    """

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

    def __init__(self, *, alpha=1.0, l1_ratio=0.0, max_iter=100, tol=1e-5, solver="lbfgs",
                 all_possible_states=False, n_jobs=None, verbose=0):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.all_possible_states = all_possible_states
        self.n_jobs = n_jobs
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the weights from labelled sequences.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
            Each sequence is a list of per-token feature dicts, as
            sklearn-crfsuite takes them (see :class:`SequenceVectorizer` for the
            value rules), or the output of a vectorizer.
        y : list of sequences of labels
            One label (str or int) per token.

        Returns
        -------
        self : CRFClassifier
            The fitted estimator.
        """
        X = check_sequences(X)
        if len(X) == 0:
            raise ValueError("X is empty: fit needs at least one sequence.")
        if isinstance(X, SequenceMatrix):
            vectorizer = None
            offsets, feature_names = X.offsets, X.feature_names
            features = None  # converted once the labels are checked
        else:
            # the vectorizer's arrays straight, with no float values for
            # indicator features and nothing else left alive while training
            vectorizer = SequenceVectorizer()
            data, indices, indptr, offsets = vectorizer._fit_arrays(X)
            feature_names = vectorizer.get_feature_names_out()
            features = FeatureArrays(data, indices, indptr, len(feature_names))
        lengths = np.diff(offsets)
        classes, label_ids = encode_labels(y, lengths)
        if offsets[-1] == 0:
            raise ValueError("X has no tokens: every sequence is empty.")
        if features is None:
            check_finite_features(X)
            features = FeatureArrays.of_sequences(X)
        else:
            check_feature_values(features.data, features.indices, features.indptr, lengths,
                                 feature_names)
        if classes.shape[0] < 2:
            raise ValueError(
                f"y holds a single class ({classes[0]!r}); a CRF needs at least two.")

        n_features = features.n_features
        n_classes = classes.shape[0]
        alpha, l1_ratio = float(self.alpha), float(self.l1_ratio)
        pairs = (StatePairs.every(n_features, n_classes) if self.all_possible_states
                 else StatePairs.observed(features, label_ids, n_classes))
        loss = NegativeLogLikelihood(features, offsets, label_ids, pairs,
                                     l2=alpha * (1.0 - l1_ratio))
        del label_ids
        _release_freed_memory()  # the setup's temporaries, before the solver's arrays
        # overflow warnings from the solver's arithmetic would only precede the
        # clearer errors of _check_training
        with kernel_threads(self.n_jobs, hold_blas=True), \
                np.errstate(over="ignore", invalid="ignore"):
            result = lbfgs(loss, np.zeros(n_parameters(pairs.n_pairs, n_classes)),
                           l1=alpha * l1_ratio, max_iter=self.max_iter, tol=self.tol,
                           verbose=self.verbose)
        self._check_training(result, features, lengths, feature_names)

        pair_weights, transitions, start, end = unpack(result.w, pairs.n_pairs, n_classes)
        self.classes_ = classes
        self.coef_ = pairs.to_dense(pair_weights)
        self.transition_coef_ = transitions.copy()
        self.start_coef_ = start.copy()
        self.end_coef_ = end.copy()
        self.n_features_in_ = n_features
        self.feature_names_ = (np.asarray(feature_names, dtype=object)
                               if feature_names is not None
                               else np.asarray([f"x{i}" for i in range(n_features)],
                                               dtype=object))
        self.vectorizer_ = vectorizer
        self.n_iter_ = result.n_iter
        self.loss_curve_ = result.loss_curve
        return self

    def _check_training(self, result, features, lengths, feature_names):
        """Raise or warn, saying what to do, if the solver did not really train.

        Warnings use ``stacklevel=4`` (here, fit, sklearn's ``_fit_context``
        wrapper) to point at the user's call of ``fit``.

        Huge feature values make the objective overflow (the loss reports
        ``inf`` there and the solver backs off) or the solver's own norms
        overflow, so that it either cannot move at all or takes steps of
        length zero: either way it would return the all-zero model as if
        converged.
        """
        def largest():
            return describe_largest_value(features.data, features.indices,
                                          features.indptr, lengths, feature_names)

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
                f"CRFClassifier stopped after {result.n_iter} iterations because the line "
                f"search could not decrease the objective, so the model may be poor; "
                f"{largest()}. {advice}", ConvergenceWarning, stacklevel=4)
        elif result.stop is Stop.MAX_ITER:
            warnings.warn(
                f"CRFClassifier did not converge in max_iter={self.max_iter} iterations; "
                f"increase max_iter or tol.", ConvergenceWarning, stacklevel=4)

    def _features(self, X):
        """Check fitted state and input; the FeatureArrays and offsets of ``X``."""
        check_is_fitted(self)
        X = check_sequences(X)
        if isinstance(X, SequenceMatrix):
            if X.n_features != self.n_features_in_:
                raise ValueError(
                    f"X has {X.n_features} features, but CRFClassifier was fitted with "
                    f"{self.n_features_in_}.")
            check_finite_features(X)
            return FeatureArrays.of_sequences(X), X.offsets
        if self.vectorizer_ is None:
            raise TypeError(
                "This CRFClassifier was fitted on a SequenceMatrix; pass one here too "
                "(or fit on feature dicts).")
        data, indices, indptr, offsets = self.vectorizer_._transform_arrays(X)
        check_feature_values(data, indices, indptr, np.diff(offsets),
                             self.vectorizer_.feature_names_)
        return FeatureArrays(data, indices, indptr, self.n_features_in_), offsets

    def _unary(self, features):
        return csr_times_dense(features, self.coef_.T)

    def _label_ids(self, features, offsets):
        with kernel_threads(self.n_jobs):
            return viterbi(self._unary(features), self.transition_coef_, self.start_coef_,
                           self.end_coef_, offsets)

    @staticmethod
    def _split(values, offsets):
        # np.split of no boundaries gives one piece, even for no sequences
        return np.split(values, offsets[1:-1]) if offsets.shape[0] > 1 else []

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
        features, offsets = self._features(X)
        return self._split(self.classes_[self._label_ids(features, offsets)], offsets)

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
        features, offsets = self._features(X)
        with kernel_threads(self.n_jobs):
            _, marginals, _ = forward_backward(
                self._unary(features), self.transition_coef_, self.start_coef_,
                self.end_coef_, offsets, False)
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
        features, offsets = self._features(X)
        labels = check_labels(y, np.diff(offsets))
        if labels.shape[0] == 0:
            raise ValueError("score needs at least one token.")
        predicted = self.classes_[self._label_ids(features, offsets)]
        return float(np.mean(predicted == labels))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        tags.target_tags.required = True
        return tags
