"""CRFClassifier: the linear-chain CRF estimator (any order, transition features)."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ._estimators import defaults as _defaults
from ._estimators.spans import SpanQueries
from ._estimators.base import CRFEstimator
from ._estimators.doc_sections import SECTIONS
from ._estimators.chain_state import CHAIN_STATE
from ._estimators.compile_ahead import compile_ahead
from ._estimators.pruning import PrunedTrainingProblem, prune_unary
from ._estimators.fitted_state import saved_as
from ._estimators.training import TrainingProblem
from ._estimators.transition_columns import transition_columns
from ._estimators.partial_labels import pairs_with_sets
from ._estimators.constraints import SCHEME_NAMES
from ._utils.type_aliases import (AllowedTransitions, FeatureSequences, LabelSequences,
                     SequenceWeights, Solver)
from ._utils.docstrings import fill_sections
from ._utils.validation import check_finite_scores, reject_positional_weights
from .structures.chain.dense import DenseChainStructure
from .structures.chain.order1 import (ChainScores, ChainStructure, chain_decode,
                               chain_labelling_scores, chain_nbest, chain_posteriors)
from .structures.patterns.chain import PatternChainStructure, PatternScores, fitted_patterns


def _shift_tokens(unary, finite=False):
    """Take each token's largest finite unary score from its scores, in place.

    ``finite`` says the caller has checked that every score is finite (no
    fixed label's ``-inf``): the largest is then the plain maximum.

    Every labelling takes one unary score per token, so this takes the same
    amount from every labelling's score and from log Z: probabilities are
    unchanged. The kernels' passes shift alike inside, but the n-best and
    labelling scores were the unshifted sums, so that one huge feature value
    (1e16 to 1e20) rounded the other tokens' scores away in them: n-best
    lists of four labellings of probability 1, or ``return_proba``
    disagreeing with the best labelling's probability. Shifted, the best
    label of every token scores 0 and no sum holds a huge term.
    """
    if finite:
        top = unary.max(axis=1, initial=-np.inf)
    else:
        top = np.where(np.isfinite(unary), unary, -np.inf).max(axis=1, initial=-np.inf)
        top[~np.isfinite(top)] = 0.0
    unary -= top[:, np.newaxis]


@saved_as("skcrf.CRFClassifier")
@fill_sections(SECTIONS)
class CRFClassifier(SpanQueries, CRFEstimator):
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
    order : int, default=1
        Markov order of the label chain: ``d >= 2`` adds weights for label
        n-grams of 3 to ``d + 1`` consecutive labels, *patterns*
        (``label_patterns_``, ``pattern_coef_``): those seen in the training
        labels (at least ``min_pattern_freq`` times), or all of them with
        ``all_possible_transitions``. Inference stays exact; it runs over the
        automaton whose states are the prefixes of the patterns, so its cost
        per token grows with the number of patterns, not with
        ``n_classes ** d``. See :ref:`higher-order`.
    all_possible_transitions : bool, default=False
        With ``order >= 2``, whether every label n-gram of 3 to ``order + 1``
        labels gets a weight (except those with a pair ``allowed_transitions``
        forbids), rather than only those seen in training: ``n_classes ** 3``
        trigrams at order 2, which the dense order-2 kernels handle; beyond,
        fitting raises a ValueError when there would be more than 2,097,152
        patterns. Label pairs always all get a weight, at every order
        (CRFsuite's ``all_possible_transitions=True``).
    min_pattern_freq : int, default=1
        With ``order >= 2`` (and not ``all_possible_transitions``), the
        fewest times a label n-gram must occur in the training labels to get
        a weight. Raising it drops the rare patterns, which makes training
        and prediction faster (their cost is about proportional to the
        number of patterns) and may cost some accuracy.
    prune_threshold : float in [0, 1) or None, default=None
        With ``order >= 2``: train on a pruned lattice rather than over
        every labelling. The fit first trains the order-1 chain of the same
        settings, then keeps at each training token only the labels whose
        order-1 marginal is at least ``prune_threshold`` (and the gold
        label), and trains the higher-order weights, starting from the
        order-1 ones, on the labellings of those candidates alone (Müller,
        Schmid & Schütze, 2013). Each evaluation then costs a few lattice
        edges per token instead of every label pair and pattern, so the fit
        is many times faster with many labels. The model keeps the order-1
        chain (``pruner_coef_`` and the like) and prunes the same way when
        it predicts (with the threshold of the fit, ``pruner_threshold_``):
        every query is then exact over the labels the pruner keeps (given
        ``fixed`` labels), and gives the others probability 0. ``max_iter``
        and ``tol`` apply to each of the two fits; ``n_iter_`` and
        ``loss_curve_`` are the second's. ``1e-3`` is a good start; None
        trains and predicts exactly. Ignored at ``order=1``; only with
        ``solver="lbfgs"``. See :ref:`pruned-orders`.
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
    solver : {"lbfgs", "sgd", "perceptron", "passive_aggressive", "arow"}, default="lbfgs"
        ``"lbfgs"``: L-BFGS over all the data, with ``l1_ratio > 0`` its
        orthant-wise variant OWL-QN (as in CRFsuite), which yields exact
        zeros. The others are online, one step per sequence (CRFsuite's
        l2sgd, ap, pa and arow), and offer :meth:`partial_fit`:
        ``"sgd"`` minimises the same objective as L-BFGS by stochastic
        gradient descent (the L1 part by a cumulative penalty that keeps exact
        zeros); ``"perceptron"`` is the averaged structured perceptron,
        ``"passive_aggressive"`` PA-I with a Hamming-distance margin and
        ``"arow"`` adaptive regularization of weights, all three on the
        Viterbi labelling and ignoring ``alpha``: their
        :meth:`predict_marginals` are those of a CRF with their weights,
        not calibrated probabilities. ``max_iter`` counts epochs for them.
        See the user guide's page on solvers.
    learning_rate : {"optimal", "constant"}, default="optimal"
        SGD's step size at step ``t``: ``eta0 / (1 + eta0 * alpha / n * t)``
        (``n`` the number of training sequences), or ``eta0`` throughout.
    eta0 : float or "auto", default="auto"
        SGD's initial step size; ``"auto"`` tries rates on a sample of 1,000
        sequences and keeps the best, as CRFsuite's l2sgd calibrates.
    average : bool, int or "auto", default="auto"
        Average the weights over the steps (from the step given by an int):
        averaged SGD, and the averaged perceptron. ``"auto"``: True for
        ``"perceptron"`` and ``"passive_aggressive"`` (as CRFsuite's ap and
        pa), False for ``"sgd"`` and ``"arow"``.
    C : float, default=1.0
        Aggressiveness of ``"passive_aggressive"`` (the most a step may
        move) and of ``"arow"`` (whose ``r`` is ``1 / C``).
    shuffle : bool, default=True
        Online solvers: visit the sequences in a new random order every epoch.
    random_state : int, RandomState instance or None, default=None
        Seeds the online solvers' shuffles, calibration sample and validation
        split.
    n_iter_no_change : int, default=5
        Online solvers stop once this many epochs in a row improve the best
        loss (or validation score) by less than ``tol`` (relative); margin
        solvers also after an epoch without mistake.
    early_stopping : bool, default=False
        Online solvers: hold out ``validation_fraction`` of the sequences and
        stop on their token accuracy instead of the training loss.
    validation_fraction : float, default=0.1
        Share of the sequences held out by ``early_stopping``.
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
        same vocabulary) and the same ``order`` and ``transition_features``.
        Otherwise it starts from zero, as without ``warm_start`` (from the
        order-1 weights with ``prune_threshold``). Useful along a path of ``alpha`` values on the same
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
    label_patterns_ : ndarray of int64 of shape (n_patterns, order + 1)
        With ``order >= 2``: the label n-grams of 3 to ``order + 1`` labels
        that carry a weight, as class ids (indices into ``classes_``), oldest
        label first, left-padded with -1 (the trigram ``(a, b, c)`` of an
        order-3 model is ``[-1, a, b, c]``), sorted by length then labels.
        Only the patterns whose fitted weight is not 0 are kept: with
        ``l1_ratio > 0`` many are exactly 0, and leaving them out makes
        prediction faster with the same results. See
        :func:`skcrf.inspection.pattern_features`.
    pattern_coef_ : ndarray of shape (n_patterns,)
        With ``order >= 2``: the weight of each row of ``label_patterns_``,
        added to a labelling's score each time the n-gram occurs in it.
    pruner_coef_, pruner_transition_coef_, pruner_start_coef_, pruner_end_coef_ : ndarray
        With ``order >= 2`` and ``prune_threshold``: the order-1 chain that
        prunes the labels (shapes as ``coef_``, ``transition_coef_``,
        ``start_coef_`` and ``end_coef_``).
    pruner_threshold_ : float
        With ``order >= 2`` and ``prune_threshold``: the threshold the model
        was trained with, which its predictions prune with.
    transition_feature_coef_ : scipy.sparse.csr_matrix of shape (n_features, n_classes ** 2)
        Weights of the transition features: row ``f``, column ``a * n_classes + b``
        is ``V[f, a, b]``. Only with ``transition_features``; see
        :func:`skcrf.inspection.edge_features`.
    start_coef_ : ndarray of shape (n_classes,)
        Weights of the first label of a sequence (``-inf`` for a label the
        constraints forbid there).
    end_coef_ : ndarray of shape (n_classes,)
        Weights of the last label of a sequence (likewise).
    <<feature_attributes>>
    <<solver_attributes>>

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

    _fitted_state = CHAIN_STATE

    _parameter_constraints = {
        **CRFEstimator._parameter_constraints,
        "order": [Interval(Integral, 1, None, closed="left")],
        "all_possible_transitions": ["boolean"],
        "min_pattern_freq": [Interval(Integral, 1, None, closed="left")],
        # 1 keeps the gold label alone: nothing left to learn from
        "prune_threshold": [Interval(Real, 0, 1, closed="left"), None],
        "transition_features": [None, StrOptions({"all"}), list, tuple],
        "allowed_transitions": [None, StrOptions(set(SCHEME_NAMES)), set, frozenset, list,
                                tuple, dict, np.ndarray],
    }

    def __init__(self, *, alpha: float = _defaults.ALPHA,
                 l1_ratio: float = _defaults.L1_RATIO, max_iter: int = _defaults.MAX_ITER,
                 tol: float = _defaults.TOL, order: int = 1,
                 all_possible_transitions: bool = False, min_pattern_freq: int = 1,
                 prune_threshold: float | None = None,
                 transition_features: Literal["all"] | Sequence[str] | None = None,
                 allowed_transitions: AllowedTransitions = None,
                 solver: Solver = "lbfgs", learning_rate: str = "optimal",
                 eta0: float | str = "auto", average: bool | int | str = "auto",
                 C: float = 1.0, shuffle: bool = True, random_state: Any = None,
                 n_iter_no_change: int = 5, early_stopping: bool = False,
                 validation_fraction: float = 0.1, all_possible_states: bool = False,
                 warm_start: bool = False, n_jobs: int | None = None,
                 verbose: int = 0) -> None:
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.max_iter = max_iter
        self.tol = tol
        self.order = order
        self.all_possible_transitions = all_possible_transitions
        self.min_pattern_freq = min_pattern_freq
        self.prune_threshold = prune_threshold
        self.transition_features = transition_features
        self.allowed_transitions = allowed_transitions
        self.solver = solver
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.average = average
        self.C = C
        self.shuffle = shuffle
        self.random_state = random_state
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
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
        state.setdefault("all_possible_transitions", False)
        state.setdefault("min_pattern_freq", 1)
        state.setdefault("prune_threshold", None)
        super().__setstate__(state)

    @_fit_context(prefer_skip_nested_validation=True)
    @CRFEstimator._atomic_fit
    def fit(self, X: FeatureSequences, y: LabelSequences,
            *positional: Any, sample_weight: SequenceWeights = None) -> CRFClassifier:
        """Learn the weights from labelled sequences.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
            Each sequence is a list of per-token feature dicts, as
            sklearn-crfsuite takes them (see :class:`SequenceVectorizer` for the
            value rules), or the output of a vectorizer.
        y : list of sequences of labels
            One label (str or int) per token, or None (unknown) or a set of
            labels (one of them): each sequence is then trained on all its
            labellings consistent with them (any order and solver). See
            :ref:`incomplete-annotation`.
        sample_weight : array-like of shape (n_sequences,), default=None
            Keyword only: a third positional argument is a TypeError, since
            seqlearn's and hmmlearn's ``fit(X, y, lengths)`` would otherwise
            be read as weights (see :func:`skcrf.features.from_lengths`).
            Each sequence's weight: its term of the loss is multiplied by it.
            A weight of 0 trains as if the sequence were not there, an
            integer ``k`` as if it were there ``k`` times (for the online
            solvers: visited ``k`` times per epoch). In a
            :class:`~sklearn.model_selection.GridSearchCV` or
            :func:`~sklearn.model_selection.cross_validate` with metadata
            routing, request it with ``set_fit_request(sample_weight=True)``.

        Returns
        -------
        self : CRFClassifier
            The fitted estimator.
        """
        reject_positional_weights(self, positional)
        return self._checked_fit(X, y, sample_weight, None)

    @_fit_context(prefer_skip_nested_validation=True)
    @CRFEstimator._atomic_fit
    def _fit_with_settings(self, X, y, settings):
        """``fit`` with settings of this one fit that no parameter names.

        :class:`skcrf.compat.CRF` trains through this, as CRFsuite does
        (:attr:`~skcrf._estimators.training.TrainingData.settings`): the same
        checks and atomic swap as :meth:`fit`, and the settings reach the
        fit's data only, never the estimator.
        """
        return self._checked_fit(X, y, None, settings)

    def _checked_fit(self, X, y, sample_weight, settings):
        """The body of ``fit`` after its arguments: the parameters' checks, then ``_fit``."""
        if self.order > 1 and self.transition_features is not None:
            raise ValueError(f"transition_features needs order=1; got order={self.order}.")
        self._check_pruning_solver()
        if self.order == 1 and self.transition_features is None:
            compile_ahead("chain")  # on a fresh install: prediction's kernels, on another core
        return self._fit(X, y, sample_weight, settings)

    def _partial_training_problem(self, data, first):
        problem = super()._partial_training_problem(data, first)
        if not first:
            # the forbidden transitions of the first call stay forbidden, whatever
            # scheme a later batch's tags would make "auto" read
            structure = problem.structure
            structure.transition_mask, structure.start_mask, structure.end_mask = (
                np.where(np.isneginf(coef), -np.inf, 0.0) for coef in (
                    self.transition_coef_, self.start_coef_, self.end_coef_))
            problem.attributes["allowed_transitions_"] = self.allowed_transitions_
        return problem

    #: Fitted attribute of each block of a structure's coefficients.
    _coefficient_names = {"coef": "coef_", "transitions": "transition_coef_",
                          "trigram": "transition2_coef_",
                          "edge_coef": "transition_feature_coef_",
                          "label_patterns": "label_patterns_", "pattern_coef": "pattern_coef_",
                          "start": "start_coef_", "end": "end_coef_"}

    def _reads_dense_block(self, training):
        # transition features read CSR columns only. Every solver reads the
        # block: L-BFGS by BLAS (partial labels too: learning/partial.py), the
        # online ones per visit (learning/_online_chain.py, _online_dense.py)
        return self.transition_features is None

    def _training_problem(self, data):
        constraints = self._label_constraints(data)
        n_classes = data.classes.shape[0]
        # skcrf.compat's CRF trains as CRFsuite, without start and end weights
        boundary_weights = data.settings.get("boundary_weights", True)
        if self.order == 1:
            structure = ChainStructure.for_training(
                data.features, data.offsets, data.label_ids, n_classes,
                all_possible_states=self.all_possible_states,
                transition_columns=self._transition_columns(data.feature_names,
                                                            data.features.n_features),
                constraints=constraints, boundary_weights=boundary_weights)
            if data.partial is not None:
                # a class a token's set offers gets its features' weights too
                structure = ChainStructure(
                    n_classes, pairs_with_sets(structure.state_pairs, data.features,
                                               data.partial),
                    edge_pairs=structure.edge_pairs, constraints=constraints,
                    boundary_weights=boundary_weights)
            if data.features.dense is not None:
                structure = DenseChainStructure(structure, data.features.n_dense)
        else:
            structure = PatternChainStructure.for_training(
                data.features, data.offsets, data.label_ids, n_classes, self.order,
                all_possible_states=self.all_possible_states,
                all_possible_transitions=self.all_possible_transitions,
                min_pattern_freq=self.min_pattern_freq, constraints=constraints)
            if data.partial is not None:
                # patterns are the n-grams of known labels; a set's classes get state pairs
                structure = PatternChainStructure(
                    n_classes, pairs_with_sets(structure.state_pairs, data.features,
                                               data.partial),
                    structure.patterns, constraints=constraints)
            if data.features.dense is not None:
                structure = DenseChainStructure(structure, data.features.n_dense)
        problem = TrainingProblem(
            structure, data.label_ids,
            {"classes_": data.classes, "allowed_transitions_": constraints.allowed.copy()},
            self._coefficient_names)
        if self.order == 1 or self.prune_threshold is None:
            return problem
        self._check_pruning_solver()  # partial_fit comes here too
        lower = ChainStructure.for_training(
            data.features, data.offsets, data.label_ids, n_classes,
            all_possible_states=self.all_possible_states, constraints=constraints)
        if data.partial is not None:  # the same state pairs, a set's classes included
            lower = ChainStructure(n_classes, problem.structure.state_pairs,
                                   constraints=constraints)
        if data.features.dense is not None:  # the same dense weights as the patterns'
            lower = DenseChainStructure(lower, data.features.n_dense)
        return PrunedTrainingProblem(problem, lower, float(self.prune_threshold), self._solve,
                                     self._check_training)

    def _partial_labels_refusal(self):
        return None

    def _check_pruning_solver(self):
        if self.order > 1 and self.prune_threshold is not None and self.solver != "lbfgs":
            raise ValueError(f"prune_threshold needs solver='lbfgs'; got solver={self.solver!r} "
                             f"(set prune_threshold=None to train online).")

    def _transition_columns(self, feature_names, n_features):
        """Boolean mask of the features named by ``transition_features``, or None."""
        return transition_columns(self.transition_features, feature_names, n_features)

    def _potentials(self, features, offsets, fixed=None):
        if "label_patterns_" in self.__dict__:
            return self._pattern_potentials(features, offsets, fixed)
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
        # check_finite_scores has passed: only fixed labels bring -inf
        _shift_tokens(scores.unary, finite=fixed is None)
        return scores

    def _pattern_potentials(self, features, offsets, fixed):
        """The :class:`PatternScores` of a model of order 2 or more."""
        n_classes = self.classes_.shape[0]
        rows, weights = self.label_patterns_, self.pattern_coef_
        if np.ndim(rows) != 2 or np.shape(rows)[1] != self.order + 1:
            raise ValueError(
                f"label_patterns_ must have order + 1 = {self.order + 1} columns; it has "
                f"shape {np.shape(rows)}.")
        weights = np.asarray(weights)
        if weights.shape != (rows.shape[0],) or not np.isfinite(weights).all():
            raise ValueError(
                f"pattern_coef_ must hold one finite weight per row of label_patterns_ "
                f"({rows.shape[0]}); it has shape {weights.shape}"
                + ("" if weights.shape != (rows.shape[0],) else " and non-finite values")
                + ".")
        patterns, index = fitted_patterns(rows, n_classes, self.order)
        pattern_weights = np.zeros(patterns.n_patterns)
        pattern_weights[index] = weights
        scores = PatternScores.of_coefficients(
            features, self.coef_, self.transition_coef_, self.start_coef_, self.end_coef_,
            patterns, pattern_weights)
        check_finite_scores(scores.unary, offsets)
        prune_unary(self, features, offsets, scores, fixed)
        if fixed is not None:
            scores.fix_labels(fixed)
        _shift_tokens(scores.unary)
        return scores

    def _viterbi(self, potentials, offsets):
        if isinstance(potentials, PatternScores):
            return potentials.decode(offsets)
        return chain_decode(potentials, offsets)

    def _posteriors(self, potentials, offsets):
        if isinstance(potentials, PatternScores):
            return potentials.posteriors(offsets)[:2]
        posteriors = chain_posteriors(potentials, offsets)
        return posteriors.log_z, posteriors.marginals

    def _nbest(self, potentials, offsets, n):
        if isinstance(potentials, PatternScores):
            return potentials.nbest(offsets, n)
        return chain_nbest(potentials, offsets, n)

    def _nbest_states(self):
        # order 2 keeps a list per pair of labels
        return len(self.classes_) ** (2 if hasattr(self, "transition2_coef_") else 1)

    def _labelling_scores(self, potentials, offsets, label_ids):
        if isinstance(potentials, PatternScores):
            return potentials.labelling_scores(offsets, label_ids)
        return chain_labelling_scores(potentials, offsets, label_ids)
