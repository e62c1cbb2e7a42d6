"""CRFClassifier: the linear-chain CRF estimator (order 1 or 2, transition features)."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Literal

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from . import _defaults
from ._base import CRFEstimator
from ._training import TrainingProblem
from ._constraints import SCHEME_NAMES
from ._typing import AllowedTransitions, FeatureSequences, LabelSequences
from ._validation import check_finite_scores
from .structures.chain import (ChainScores, ChainStructure, chain_decode,
                               chain_labelling_scores, chain_nbest, chain_posteriors)


class CRFClassifier(CRFEstimator):
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
    alpha : float, default=0.3
        Regularization strength, the parameter to search over. 0 disables
        regularization. With the default ``l1_ratio``, CRFsuite's usual
        ``c1=0.1, c2=0.1``.
    l1_ratio : float, default=1/3
        Elastic-net mixing: 0 is pure L2, 1 pure L1. With ``l1_ratio > 0`` many
        weights are exactly zero.
    max_iter : int, default=300
        Maximum number of L-BFGS iterations. Reaching it emits a
        :class:`~sklearn.exceptions.ConvergenceWarning`.
    tol : float, default=1e-3
        Stop once the objective improved by less than ``tol`` (relative) over
        the last 10 iterations, as CRFsuite's ``delta`` (whose default is
        1e-5: the last digits of the objective take hundreds more iterations
        and do not change the predictions).
    order : {1, 2}, default=1
        Markov order of the label chain. 2 adds a weight for every label
        trigram ``(y[i-2], y[i-1], y[i])`` (``transition2_coef_``); exact
        inference then runs over label pairs and costs about ``n_classes``
        times as much per token.
    transition_features : None, "all" or list of str, default=None
        Features that also weight the transitions, making them depend on the
        token: the score of labels ``(a, b)`` at tokens ``(i - 1, i)`` becomes
        ``transition_coef_[a, b] + sum_f x[i, f] * V[f, a, b]``. ``"all"``
        takes every feature; a list takes the features whose names start with
        one of its strings (e.g. ``["pos=", "shape="]``; with
        :class:`TokenFeaturizer`, ``"-1:pos="`` names the previous token's).
        As for state weights, ``V`` has weights only for the (feature, label
        pair) combinations seen in training unless ``all_possible_states``.
        Only with ``order=1``.
    allowed_transitions : None, str, set, list, dict or ndarray, default=None
        Label transitions the model may use; the others (and, for a tagging
        scheme, forbidden first and last labels) get the score ``-inf`` in
        training and prediction, so that every predicted labelling keeps to
        them. ``"bio"`` (IOB2: ``I-X`` only after ``B-X`` or ``I-X``, never
        first), ``"bioes"`` (BIOES or BILOU, with the rules of ``E-``/``S-``
        and of the first and last tag), ``"auto"`` (the scheme
        :func:`skcrf.tags.detect_scheme` reads in ``y``; nothing for plain
        labels) or a scheme's name (``"IOB1"``, ``"IOE2"``...); a set or
        list of allowed ``(from, to)`` label pairs; a dict from a label to
        the labels allowed after it (a label it lacks may be followed by
        any); or a boolean array of shape (n_classes, n_classes) over the
        sorted labels. Forbidden weights are not trained: they are ``-inf``
        in ``transition_coef_`` (``start_coef_``, ``end_coef_``). Training
        sequences a scheme's rules reject are trained as conlleval reads
        them (same spans, well-formed tags), with a warning; explicit pairs
        they break raise a ValueError. See :ref:`queries`.
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
    warm_start : bool, default=False
        When set, ``fit`` starts the solver from the weights of the previous
        fit instead of zero, provided that fit had the same parameter layout:
        the same classes, the same features (names, in the same order: the
        same vocabulary) and the same ``order`` and ``transition_features``. Otherwise it starts from zero, as without
        ``warm_start``. Useful along a path of ``alpha`` values on the same
        data (:class:`CRFClassifierCV` does that internally); the optimum
        reached is the same (to the solver's ``tol``), in fewer iterations.
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
        Transition weights, indexed [from, to]; ``-inf`` where
        ``allowed_transitions`` forbids.
    allowed_transitions_ : ndarray of bool of shape (n_classes, n_classes)
        Which label may follow which, [from, to] (all True without
        ``allowed_transitions``).
    transition2_coef_ : ndarray of shape (n_classes, n_classes, n_classes)
        Trigram weights [y[i-2], y[i-1], y[i]]; only with ``order=2``.
    transition_feature_coef_ : scipy.sparse.csr_matrix of shape (n_features, n_classes ** 2)
        Weights of the transition features: row ``f``, column ``a * n_classes + b``
        is ``V[f, a, b]``. Only with ``transition_features``; see
        :func:`skcrf.inspection.edge_features`.
    start_coef_ : ndarray of shape (n_classes,)
        Weights of the first label of a sequence (``-inf`` for a label the
        constraints forbid there).
    end_coef_ : ndarray of shape (n_classes,)
        Weights of the last label of a sequence (likewise).
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

    Notes
    -----
    Real-valued features are best scaled to a moderate range; ``fit`` refuses
    values so large that the objective overflows. At prediction, a huge but
    finite value (say 1e17 on one token) is taken exactly as far as the other
    tokens go: it decides its own token's label, and every other token's
    labels and marginals are those of the same sequence with that token's
    label fixed, as in exact arithmetic (inference shifts each token's scores
    by their maximum, so no token's huge score rounds away another's digits).
    Only the rest of that token's own features, small next to the huge value,
    are lost to rounding. A value whose score overflows float64 (past about
    1e308) raises a ``ValueError`` naming its sequence and token.

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
        **CRFEstimator._parameter_constraints,
        "order": [Interval(Integral, 1, 2, closed="both")],
        "transition_features": [None, StrOptions({"all"}), list, tuple],
        "allowed_transitions": [None, StrOptions(set(SCHEME_NAMES)), set, frozenset, list,
                                tuple, dict, np.ndarray],
    }

    def __init__(self, *, alpha: float = _defaults.ALPHA,
                 l1_ratio: float = _defaults.L1_RATIO, max_iter: int = _defaults.MAX_ITER,
                 tol: float = _defaults.TOL, order: Literal[1, 2] = 1,
                 transition_features: Literal["all"] | Sequence[str] | None = None,
                 allowed_transitions: AllowedTransitions = None,
                 solver: Literal["lbfgs"] = "lbfgs", all_possible_states: bool = False,
                 warm_start: bool = False, n_jobs: int | None = None,
                 verbose: int = 0) -> None:
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.max_iter = max_iter
        self.tol = tol
        self.order = order
        self.transition_features = transition_features
        self.allowed_transitions = allowed_transitions
        self.solver = solver
        self.all_possible_states = all_possible_states
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose

    def __setstate__(self, state):
        # models pickled before order, transition_features, allowed_transitions and
        # warm_start existed were order-1 chains with plain, unconstrained transitions
        state.setdefault("order", 1)
        state.setdefault("transition_features", None)
        state.setdefault("allowed_transitions", None)
        state.setdefault("warm_start", False)
        super().__setstate__(state)

    @_fit_context(prefer_skip_nested_validation=True)
    @CRFEstimator._atomic_fit
    def fit(self, X: FeatureSequences, y: LabelSequences) -> CRFClassifier:
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
        if self.order == 2 and self.transition_features is not None:
            raise ValueError("transition_features needs order=1; got order=2.")
        return self._fit(X, y)

    def _training_problem(self, data):
        constraints = self._label_constraints(data)
        structure = ChainStructure.for_training(
            data.features, data.offsets, data.label_ids, data.classes.shape[0],
            order=self.order, all_possible_states=self.all_possible_states,
            transition_columns=self._transition_columns(data.feature_names,
                                                        data.features.n_features),
            constraints=constraints)
        return TrainingProblem(
            structure, data.label_ids,
            {"classes_": data.classes, "allowed_transitions_": constraints.allowed.copy()},
            {"coef": "coef_", "transitions": "transition_coef_",
             "trigram": "transition2_coef_", "edge_coef": "transition_feature_coef_",
             "start": "start_coef_", "end": "end_coef_"})

    def _transition_columns(self, feature_names, n_features):
        """Boolean mask of the features named by ``transition_features``, or None."""
        return transition_columns(self.transition_features, feature_names, n_features)

    def _potentials(self, features, offsets, fixed=None):
        scores = ChainScores.of_coefficients(
            features, self.coef_, self.transition_coef_, self.start_coef_, self.end_coef_,
            trigram=getattr(self, "transition2_coef_", None),
            edge_coef=getattr(self, "transition_feature_coef_", None))
        # finite but huge scores are fine (the kernels shift each token's by
        # their maximum); scores past float64 would silently decode to nothing
        check_finite_scores(scores.unary, offsets)
        if scores.edges is not None:
            # the -inf of forbidden transitions are in every token's block
            check_finite_scores(scores.edges, offsets,
                                allowed=np.isneginf(self.transition_coef_))
        if fixed is not None:
            scores.fix_labels(fixed)
        return scores

    def _viterbi(self, potentials, offsets):
        return chain_decode(potentials, offsets)

    def _posteriors(self, potentials, offsets):
        posteriors = chain_posteriors(potentials, offsets)
        return posteriors.log_z, posteriors.marginals

    def _nbest(self, potentials, offsets, n):
        return chain_nbest(potentials, offsets, n)

    def _labelling_scores(self, potentials, offsets, label_ids):
        return chain_labelling_scores(potentials, offsets, label_ids)


def transition_columns(chosen, feature_names, n_features):
    """Boolean mask of the features ``transition_features`` names, or None for None.

    ``chosen`` is None, ``"all"`` or a list of feature-name prefixes; shared
    by the estimators whose transitions (or links) take features.
    """
    if chosen is None:
        return None
    if chosen == "all":
        return np.ones(n_features, dtype=bool)
    prefixes = tuple(chosen)
    if not all(isinstance(p, str) for p in prefixes):
        raise ValueError(
            f"transition_features must be None, 'all' or a list of feature-name "
            f"prefixes (str); got {chosen!r}.")
    if feature_names is None:
        raise ValueError(
            "transition_features names feature prefixes, but X has no feature names "
            "(a SequenceMatrix without feature_names); pass 'all' or named features.")
    mask = np.fromiter((str(name).startswith(prefixes) for name in feature_names),
                       dtype=bool, count=n_features)
    if not mask.any():
        raise ValueError(
            f"No feature name starts with any of transition_features={list(prefixes)!r}; "
            f"feature names look like {list(map(str, feature_names[:5]))!r}.")
    return mask
