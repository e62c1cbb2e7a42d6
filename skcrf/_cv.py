"""CRFClassifierCV: a linear-chain CRF that picks its regularization by cross-validation."""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import StrOptions

from ._estimators import defaults as _defaults
from ._estimators.base import CRFEstimator
from ._estimators.training import _user_stacklevel
from ._chain import CRFClassifier
from ._estimators.chain_state import CHAIN_STATE
from ._estimators.fitted_state import (Array, Real, all_of, at_least, finite, saved_as)
from ._estimators.sample_weights import nonzero_weights
from ._utils.type_aliases import AllowedTransitions, FeatureSequences, LabelSequences, SequenceWeights
from ._utils.validation import check_sequences
from .features.sequence_matrix import SequenceMatrix
from .features.vectorizer import SequenceVectorizer
from .metrics import make_sequence_scorer, span_f1_score
from .metrics._scorer import check_sequence_scoring
from .tags import detect_scheme
from ._estimators.partial_labels import holds_partial_labels

#: The default grid: a decade on either side of CRFsuite's usual ``c1 = c2 = 0.1``
#: (``alpha = 0.3``), in steps of about 3.
DEFAULT_ALPHAS = (0.03, 0.1, 0.3, 1.0, 3.0)


def check_alphas(alphas):
    """``alphas`` as a 1-D float array, or a ValueError that says what is wrong."""
    try:
        values = np.asarray(alphas, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"alphas must be a list of non-negative numbers; got "
                         f"{alphas!r}.") from None
    if values.ndim != 1:
        raise ValueError(f"alphas must be a 1-D list of numbers; got an array of shape "
                         f"{values.shape}.")
    if values.shape[0] == 0:
        raise ValueError("alphas is empty; give at least one regularization strength, "
                         "e.g. alphas=[0.1, 1.0].")
    bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
    if bad.size:
        raise ValueError(f"alphas must be finite and >= 0; alphas[{bad[0]}] is "
                         f"{float(values[bad[0]])!r}.")
    return values


def default_scorer(y):
    """Span F1 in the scheme of ``y`` if it holds span tags, else token accuracy (None).

    Span tags: a scheme of prefixes (IOB2, BIOES...) that :func:`detect_scheme`
    recognises, and at least one tag other than ``"O"``.
    """
    try:
        scheme = detect_scheme(y)
    except ValueError:  # prefixes that fit no scheme: plain labels
        return None
    if scheme == "plain" or all(tag == "O" for sequence in y for tag in sequence):
        return None
    return make_sequence_scorer(span_f1_score, scheme=scheme)


def _fully_labelled(y):
    """Whether each sequence of ``y`` has one label per token (no None, no set).

    Raises a ValueError if none has: the folds could not be scored.
    """
    labelled = np.array([not holds_partial_labels([labels]) for labels in y], dtype=bool)
    if labelled.shape[0] and not labelled.any():
        raise ValueError(
            "Every sequence of y holds unknown (None) or ambiguous (set) labels: "
            "CRFClassifierCV scores each fold on its held-out sequences of one label per "
            "token, and there are none. Fit CRFClassifier for each alpha and score it on "
            "fully labelled validation data instead.")
    return labelled


def _unit_or_weights(weights):
    """``weights``, or None when every one is 1 (the unweighted, fused path)."""
    return None if np.all(weights == 1.0) else weights


def _path_start(w, last_alpha, before, alpha):
    """Where the fit of ``alpha`` starts: the last solution ``w``, moved along the path.

    With two solutions behind (``before`` is the ``(alpha, weights)`` of the
    one before ``w``, of ``last_alpha``), a secant step in log alpha
    extrapolates the path to ``alpha``, which starts closer to its optimum
    than ``w`` itself (fewer iterations, the same optimum).
    """
    if before is None or not (alpha > 0 and last_alpha > 0 and before[0] > 0) \
            or before[0] == last_alpha:
        return w
    t = np.log(alpha / last_alpha) / np.log(last_alpha / before[0])
    return w + t * (w - before[1])


def _positions(names, among):
    """Index in ``among`` of each of ``names``, -1 for a name ``among`` lacks."""
    index = {name: i for i, name in enumerate(np.asarray(among).tolist())}
    return np.fromiter((index.get(name, -1) for name in np.asarray(names).tolist()),
                       dtype=np.int64, count=len(names))


def _take(values, positions, axis):
    """``values`` indexed along ``axis`` by ``positions``, 0 where a position is -1."""
    taken = np.take(values, np.maximum(positions, 0), axis=axis)
    missing = [slice(None)] * taken.ndim
    missing[axis] = positions < 0
    taken[tuple(missing)] = 0.0
    return taken


class _Names:
    """The class and feature names that place a layout's weights."""

    def __init__(self, classes, feature_names):
        self.classes = classes
        self.feature_names = feature_names

    def reindex(self, named, target):
        """Coefficients ``named`` (of these names) in the layout of ``target``'s names.

        A feature or class ``target`` has and these names lack gets 0 (a
        feature absent from a training set keeps weight 0 at its optimum);
        weights that are not finite (forbidden transitions) become 0, as
        :meth:`~skcrf.structures.chain.order1.ChainStructure.weights` makes them.
        """
        classes = _positions(target.classes, self.classes)
        features = _positions(target.feature_names, self.feature_names)
        reindexed = {}
        if "label_patterns" in named:
            reindexed["label_patterns"], reindexed["pattern_coef"] = self._reindex_patterns(
                named["label_patterns"], named["pattern_coef"], target)
        for block, values in named.items():
            if block in ("label_patterns", "pattern_coef"):
                continue
            if block == "edge_coef":
                values = self._reindex_edges(values, classes, features)
            elif block == "coef":
                values = _take(_take(values, classes, 0), features, 1)
            else:  # transitions, start, end, trigram: one class axis per dimension
                for axis in range(np.ndim(values)):
                    values = _take(values, classes, axis)
                values = np.where(np.isfinite(values), values, 0.0)
            reindexed[block] = values
        return reindexed

    def _reindex_patterns(self, rows, weights, target):
        """Pattern rows (class ids, -1 padding) in ``target``'s class ids, and their weights.

        A pattern with a class ``target`` lacks is dropped.
        """
        ids = np.append(_positions(self.classes, target.classes), -1)  # -1 stays -1
        rows = np.asarray(rows, dtype=np.int64)
        moved = ids[rows]
        kept = ((moved >= 0) | (rows < 0)).all(axis=1)
        return moved[kept], np.asarray(weights)[kept]

    def _reindex_edges(self, edge_coef, classes, features):
        """Transition-feature weights (n_features, n_classes ** 2) by feature and label pair."""
        n_from, n_to = len(self.classes), len(classes)
        rows = np.flatnonzero(features >= 0)
        pick_rows = sp.csr_matrix((np.ones(rows.shape[0]), (rows, features[rows])),
                                  shape=(len(features), edge_coef.shape[0]))
        source, target = np.repeat(classes, n_to), np.tile(classes, n_to)  # pair a * C + b
        pairs = np.where((source >= 0) & (target >= 0), source * n_from + target, -1)
        kept = np.flatnonzero(pairs >= 0)
        pick_columns = sp.csr_matrix((np.ones(kept.shape[0]), (pairs[kept], kept)),
                                     shape=(n_from * n_from, n_to * n_to))
        return (pick_rows @ sp.csr_matrix(edge_coef) @ pick_columns).tocsr()


class _Training:
    """One training set's problem and objective, built once for every fit on it.

    ``vectorizer`` is the one that featurized ``X`` from dicts, if any: a
    model stored from this set keeps it, to featurize what it predicts on.
    """

    def __init__(self, estimator, X, y, vectorizer=None, sample_weight=None):
        self.data = estimator._training_data(X, y)
        self.data.vectorizer = vectorizer
        self.problem = estimator._training_problem(self.data)
        self.objective = self.problem.objective(self.data, l2=estimator._l2,
                                                sequence_weights=sample_weight)
        self.data.label_ids = None  # the objective has what it needs from them
        self.names = _Names(self.problem.attributes["classes_"],
                            estimator._feature_names(self.data))

    def solve(self, estimator, w0):
        """The checked solver result of ``estimator``'s alpha from ``w0``."""
        self.objective.l2 = estimator._l2  # the L1 part goes to the solver
        result = estimator._solve(self.objective, w0)
        estimator._check_training(result, self.data, w0)
        return result

    def store(self, model, result):
        """Give ``model`` the fitted attributes of ``result``, as ``fit`` would; return it."""
        for name, value in self.problem.fitted_attributes(result.w).items():
            setattr(model, name, value)
        model._store_training(self.data, result)
        return model

    def mean_weights(self, solutions, alpha_index):
        """The mean of the ``solutions``' fits of an alpha, placed by name in this layout.

        Each weight is the mean over the solutions whose layout has it: a
        feature (or class) one fold's training part lacks has no weight there,
        rather than a weight of 0 that would pull the mean down. The weights
        are read back as ``warm_start`` reads a previous model's coefficients
        (:meth:`~skcrf.structures.chain.order1.ChainStructure.weights`), after
        moving them to this set's features and classes. Zero where no
        solution has the weight, or if the blocks do not fit (another order
        or transition features).
        """
        total = np.zeros(self.problem.n_parameters)
        count = np.zeros(self.problem.n_parameters)
        for solution in solutions:
            total += self._placed(solution, solution.coefficients(solution.w[alpha_index]))
            count += self._placed(solution, solution.coefficients(
                np.ones_like(solution.w[alpha_index])))
        return total / np.maximum(count, 1.0)

    def _placed(self, solution, named):
        """Coefficients ``named`` of ``solution``'s layout as weights of this one."""
        w = self.problem.structure.weights(solution.names.reindex(named, self.names))
        return np.zeros(self.problem.n_parameters) if w is None else w


class _Solutions:
    """A fold's solutions along its path, with the names to place them elsewhere."""

    def __init__(self, training):
        self.structure = training.problem.structure
        self.names = training.names
        self.w = {}  # alpha index -> weights in the fold's layout

    def coefficients(self, w):
        """The named coefficients of weights ``w`` of this fold's layout."""
        return self.structure.coefficients(w)


def _alpha_is_one_tried(model):
    if model.alpha_ not in model.alphas_.tolist():
        raise ValueError(f"alpha_ {model.alpha_!r} is not one of alphas_")


def _best_alpha(scores, alphas):
    """Index of the alpha of best mean score, NaN means left out, as in GridSearchCV.

    A scorer can give NaN (a fold where it is undefined); such an alpha is
    ranked last, with a warning, rather than chosen. Ties go to the first.
    """
    means = scores.mean(axis=0)
    undefined = np.isnan(means)
    if undefined.all():
        raise ValueError(
            f"Every alpha's mean score over the folds is NaN (scores_: {scores.tolist()!r:.200}): "
            f"the scorer gives no score to compare them by.")
    if undefined.any():
        warnings.warn(
            f"The mean score of alphas {alphas[undefined].tolist()} is NaN; they are ranked "
            f"last.", UserWarning, stacklevel=_user_stacklevel())
    return int(np.argmax(np.where(undefined, -np.inf, means)))


@saved_as("skcrf.CRFClassifierCV")
class CRFClassifierCV(CRFClassifier):
    """Linear-chain CRF whose ``alpha`` is chosen by cross-validation along a path.

    The equivalent of ``GridSearchCV(CRFClassifier(), {"alpha": alphas},
    cv=cv, scoring=scoring)``, as :class:`~sklearn.linear_model.LogisticRegressionCV`
    is of a search over ``C``, but faster: feature dicts are featurized once,
    for every fold and the refit, and each fold's training problem is built
    once. A fold's model has weights for the features of its training part
    only, exactly those its own vectorizer fitted on that part would give it
    (as in a :class:`~sklearn.pipeline.Pipeline`: nothing leaks from the
    held-out part, whose other features weigh nothing). The alphas are then fitted
    from the strongest to the weakest, each starting from the previous
    solution (a warm start), and scored on the fold's held-out part. Every
    fold after the first starts its strongest alpha from the earlier folds'
    solutions for it. The alpha of best mean score is refitted on all the
    data starting from the mean of the folds' solutions for it, as
    ``LogisticRegressionCV(refit=True)`` does. Each fold has its own
    vocabulary (and may lack a class): weights move between folds and to the
    refit by feature and class name, a weight no earlier fold has starting
    at 0, and the mean of a weight is over the folds that have it.

    A warm-started fit stops at the solver's ``tol`` from another point than
    a cold one, so its weights (and the fold scores) differ from a search's
    by about what ``tol`` allows; the optimum they approach is the same. So
    does the refit: it reaches the optimum of ``GridSearchCV(...).best_estimator_``
    to within ``tol``, not bit for bit, and nearer that optimum than the
    search's model when ``max_iter`` stops the search's cold refit first. For the grid search's model
    exactly, refit it yourself: ``CRFClassifier(alpha=search.alpha_, ...).fit(X, y)``
    with the same other parameters.

    The fitted estimator predicts as a :class:`CRFClassifier` (it is one), and
    :func:`skcrf.save_model` stores it.

    Parameters
    ----------
    alphas : array-like of float, default=(0.03, 0.1, 0.3, 1.0, 3.0)
        The regularization strengths to try, each >= 0 (see
        :class:`CRFClassifier`'s ``alpha``), in any order; ties in mean
        score go to the first in this order, as in ``GridSearchCV``.
    l1_ratio : float, default=1/3
        Elastic-net mixing, the same for every alpha: 0 is pure L2, 1 pure L1.
    cv : int, cross-validation generator or iterable, default=None
        As ``GridSearchCV``'s ``cv`` (:func:`sklearn.model_selection.check_cv`):
        None for 5-fold, an int for that many folds (:class:`~sklearn.model_selection.KFold`,
        not stratified: ``y`` is ragged), a splitter, or (train, test) index pairs.
    scoring : callable or None, default=None
        A scorer ``scorer(estimator, X, y)``, such as
        :data:`skcrf.metrics.span_f1_scorer`; a string (one of scikit-learn's
        scorers, which cannot score sequences) raises a ValueError naming
        skcrf's. It receives each fold's held-out part already featurized (a
        :class:`SequenceMatrix`) when ``X`` holds feature dicts. None: span F1
        (micro, CoNLL) in the scheme :func:`skcrf.tags.detect_scheme` reads
        in ``y`` when ``y`` holds span tags (IOB2, BIOES...), else token
        accuracy (:meth:`score`).
    max_iter : int, default=300
        Maximum number of L-BFGS iterations of each fit.
    tol : float, default=1e-3
        Stopping tolerance of each fit, as in :class:`CRFClassifier`.
    order : int, default=1
        Markov order of the label chain, as in :class:`CRFClassifier`.
    all_possible_transitions : bool, default=False
        As in :class:`CRFClassifier`.
    min_pattern_freq : int, default=1
        As in :class:`CRFClassifier`.
    transition_features : None, "all" or list of str, default=None
        As in :class:`CRFClassifier`.
    allowed_transitions : None, str, set, list, dict or ndarray, default=None
        As in :class:`CRFClassifier`.
    solver : {"lbfgs"}, default="lbfgs"
        L-BFGS; OWL-QN with ``l1_ratio > 0``.
    all_possible_states : bool, default=False
        As in :class:`CRFClassifier`.
    n_jobs : int, default=None
        Threads for the kernels of every fit, as in :class:`CRFClassifier`
        (the folds run one after the other, each fit on all the threads).
    verbose : int, default=0
        1 prints one line per fold and alpha (score, iterations, time); 2
        also every solver iteration.

    Attributes
    ----------
    alpha_ : float
        The chosen alpha: best mean score over the folds.
    alphas_ : ndarray of shape (n_alphas,)
        The alphas tried, in the order given.
    scores_ : ndarray of shape (n_folds, n_alphas)
        Score of each alpha (columns, in ``alphas_`` order) on each fold's
        held-out part.
    best_score_ : float
        Mean over the folds of the chosen alpha's scores.
    path_n_iter_ : ndarray of int of shape (n_folds, n_alphas)
        Solver iterations of each fit along the folds' paths.
    classes_, coef_, transition_coef_, start_coef_, end_coef_, n_iter_, ...
        The model refitted on all the data with ``alpha_``: every fitted
        attribute of :class:`CRFClassifier` (``n_iter_``: the refit's
        iterations, from the folds' mean).

    See Also
    --------
    CRFClassifier : The estimator fitted for each alpha.
    sklearn.model_selection.GridSearchCV : The general search this specializes.

    Examples
    --------
    >>> from skcrf import CRFClassifierCV
    >>> X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}, {"w": "ran"}],
    ...      [{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "ran"}]]
    >>> y = [["DET", "N"], ["DET", "N", "V"], ["DET", "N"], ["DET", "N", "V"]]
    >>> crf = CRFClassifierCV(alphas=[0.01, 0.1, 1.0], cv=2).fit(X, y)
    >>> crf.scores_.shape
    (2, 3)
    >>> [labels.tolist() for labels in crf.predict([[{"w": "a"}, {"w": "dog"}]])]
    [['DET', 'N']]
    """

    _fitted_state = CHAIN_STATE.extended(
        {"alphas_": Array(("n_alphas",), values=all_of(finite, at_least(0))),
         # a fold's score may be NaN (a scorer that cannot score it)
         "scores_": Array(("n_folds", "n_alphas")),
         "path_n_iter_": Array(("n_folds", "n_alphas"), np.int64, values=at_least(0)),
         "alpha_": Real(low=0),
         "best_score_": Real(nan_ok=True)},
        rules=[_alpha_is_one_tried])

    _parameter_constraints = {
        **{name: constraint for name, constraint in CRFClassifier._parameter_constraints.items()
           if name not in ("alpha", "warm_start")},
        # the path's warm starts are L-BFGS's
        "solver": [StrOptions({"lbfgs"})],
        "alphas": ["array-like"],
        "cv": ["cv_object"],
        "scoring": [str, callable, None],
    }

    def __init__(self, *, alphas: Sequence[float] = DEFAULT_ALPHAS,
                 l1_ratio: float = _defaults.L1_RATIO, cv: Any = None,
                 scoring: str | Any | None = None, max_iter: int = _defaults.MAX_ITER,
                 tol: float = _defaults.TOL, order: int = 1,
                 all_possible_transitions: bool = False, min_pattern_freq: int = 1,
                 transition_features: Literal["all"] | Sequence[str] | None = None,
                 allowed_transitions: AllowedTransitions = None,
                 solver: Literal["lbfgs"] = "lbfgs", all_possible_states: bool = False,
                 n_jobs: int | None = None, verbose: int = 0) -> None:
        self.alphas = alphas
        self.l1_ratio = l1_ratio
        self.cv = cv
        self.scoring = scoring
        self.max_iter = max_iter
        self.tol = tol
        self.order = order
        self.all_possible_transitions = all_possible_transitions
        self.min_pattern_freq = min_pattern_freq
        self.transition_features = transition_features
        self.allowed_transitions = allowed_transitions
        self.solver = solver
        self.all_possible_states = all_possible_states
        self.n_jobs = n_jobs
        self.verbose = verbose

    def __setstate__(self, state):
        # CRFClassifier's defaults for its older pickles do not apply here
        CRFEstimator.__setstate__(self, state)

    def _estimator(self, alpha):
        """The :class:`CRFClassifier` of these parameters and ``alpha``."""
        params = {name: value for name, value in self.get_params().items()
                  if name not in ("alphas", "cv", "scoring")}
        if self.verbose < 2:
            params["verbose"] = 0
        return CRFClassifier(alpha=float(alpha), **params)

    @_fit_context(prefer_skip_nested_validation=True)
    @CRFEstimator._atomic_fit
    def fit(self, X: FeatureSequences, y: LabelSequences, *, groups: Any = None,
            sample_weight: SequenceWeights = None) -> CRFClassifierCV:
        """Fit each alpha's path on every fold, pick the best alpha, refit on all data.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
            As for :meth:`CRFClassifier.fit`.
        y : list of sequences of labels
            One label per token, or None (unknown) or a set of labels, as
            for :meth:`CRFClassifier.fit`: every fit trains on them, and
            each fold is scored on its held-out sequences of one label per
            token alone (a fold with none scores NaN).
        groups : array-like of shape (n_sequences,), default=None
            Group labels of the sequences, for a group splitter in ``cv``
            (:class:`~sklearn.model_selection.GroupKFold`...).
        sample_weight : array-like of shape (n_sequences,), default=None
            Each sequence's weight in every fit (the folds' and the refit), as
            for :meth:`CRFClassifier.fit`; sequences of weight 0 are left out
            before the folds are cut. The held-out scores are not weighted.

        Returns
        -------
        self : CRFClassifierCV
            The fitted estimator.
        """
        alphas = check_alphas(self.alphas)
        if self.order > 1 and self.transition_features is not None:
            raise ValueError(f"transition_features needs order=1; got order={self.order}.")
        X = check_sequences(X)
        if isinstance(X, SequenceMatrix):
            X._check_consistency()
        if len(X) != len(y):
            raise ValueError(f"X has {len(X)} sequences but y has {len(y)}.")
        if groups is None:
            X, y, weights = nonzero_weights(X, y, sample_weight)
        else:
            X, y, weights, groups = nonzero_weights(X, y, sample_weight, groups)
        vectorizer = None
        if not isinstance(X, SequenceMatrix):
            # once for every fold and the refit: a fold's features without a
            # token in its training part get no (feature, label) pair, no weight
            vectorizer = SequenceVectorizer()
            X = vectorizer.fit_transform(X)
        # a fold is scored on its held-out sequences of one label per token
        labelled = _fully_labelled(y)
        scorer = check_scoring(self._estimator(alphas[0]),
                               default_scorer(_safe_indexing(y, np.flatnonzero(labelled)))
                               if self.scoring is None
                               else check_sequence_scoring(self.scoring))
        splits = list(check_cv(self.cv).split(X, y, groups))
        if not splits:
            raise ValueError(f"cv={self.cv!r} gives no (train, test) split: "
                             f"CRFClassifierCV needs at least one to choose alpha.")
        # strongest first: a weaker alpha starts from a smoother solution
        path = np.argsort(-alphas, kind="stable")
        scores = np.empty((len(splits), alphas.shape[0]))
        n_iter = np.zeros((len(splits), alphas.shape[0]), dtype=np.int64)
        solutions = []
        for k, (train, test) in enumerate(splits):
            scores[k], n_iter[k], solution = self._fold_path(
                X, y, train, test[labelled[test]], alphas, path, scorer, k, solutions,
                weights)
            solutions.append(solution)
        best = _best_alpha(scores, alphas)
        self._refit(X, y, float(alphas[best]), best, solutions, vectorizer, weights)
        self.alpha_ = float(alphas[best])
        self.alphas_ = alphas
        self.scores_ = scores
        self.best_score_ = float(scores[:, best].mean())
        self.path_n_iter_ = n_iter
        return self

    def _refit(self, X, y, alpha, best, solutions, vectorizer, weights=None):
        """Fit ``alpha`` on all the data from the mean of the folds' solutions, as ``fit``.

        Each fold's weights are placed by feature and class name in the
        layout of all the data, and each weight is the mean over the folds
        that have it (:meth:`_Training.mean_weights`), as
        :class:`~sklearn.linear_model.LogisticRegressionCV` starts its refit
        from the folds' mean coefficients. ``X`` is featurized already, by
        ``vectorizer`` when the user's ``X`` held dicts: the model keeps it to
        featurize the dicts it predicts on, as a fit on them would.
        """
        started = time.perf_counter()
        estimator = self._estimator(alpha)
        training = _Training(estimator, X, y, vectorizer, weights)
        w0 = training.mean_weights(solutions, best)
        result = training.solve(estimator, w0)
        training.store(self, result)
        if self.verbose:
            print(f"[CRFClassifierCV] refit: alpha={alpha:.6g} iterations={result.n_iter} "
                  f"({time.perf_counter() - started:.1f} s)", flush=True)

    def _fold_path(self, X, y, train, test, alphas, path, scorer, k, earlier, weights=None):
        """Scores, iterations and solutions of every alpha on fold ``k``, in ``alphas`` order.

        The strongest alpha starts from the mean of the ``earlier`` folds'
        solutions for it, placed by name, or from zero on the first fold.
        """
        estimator = self._estimator(alphas[path[0]])
        fold_weights = None if weights is None else _unit_or_weights(weights[train])
        fold = _Training(estimator, _safe_indexing(X, train), _safe_indexing(y, train),
                         sample_weight=fold_weights)
        X_test = _safe_indexing(X, test)
        y_test = _safe_indexing(y, test)
        solution = _Solutions(fold)
        scores = np.empty(alphas.shape[0])
        n_iter = np.zeros(alphas.shape[0], dtype=np.int64)
        w = fold.mean_weights(earlier, path[0])
        before = None  # (alpha, weights) of the fit before the last one
        for step, j in enumerate(path):
            started = time.perf_counter()
            estimator.set_params(alpha=float(alphas[j]))
            last = float(alphas[path[step - 1]]) if step else None
            result = fold.solve(estimator, _path_start(w, last, before, float(alphas[j])))
            before = None if last is None else (last, w)
            w = solution.w[j] = result.w
            model = fold.store(CRFClassifier(**estimator.get_params()), result)
            # NaN: no held-out sequence is fully labelled (the alpha's mean leaves it out)
            scores[j] = scorer(model, X_test, y_test) if len(test) else np.nan
            n_iter[j] = result.n_iter
            if self.verbose:
                print(f"[CRFClassifierCV] fold {k}: alpha={alphas[j]:.6g} "
                      f"score={scores[j]:.4f} iterations={result.n_iter} "
                      f"({time.perf_counter() - started:.1f} s)", flush=True)
        return scores, n_iter, solution
