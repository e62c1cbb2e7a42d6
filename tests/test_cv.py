"""CRFClassifierCV: the search it replaces and bad input.

The estimator contract is checked for every estimator in test_estimator_contract.py.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold

from skcrf import CRFClassifier, CRFClassifierCV, SequenceVectorizer, load_model, save_model
from skcrf._cv import _Names, _Solutions, _Training, default_scorer
from skcrf.metrics import span_f1_score, span_f1_scorer
from tests._ties import assert_same_predictions


def _features(sentence):
    """A few of the tutorial's features of (word, POS) tokens."""
    out = []
    for i, (word, pos) in enumerate(sentence):
        token = {"w": word.lower(), "suffix": word[-3:], "title": word.istitle(), "pos": pos}
        if i:
            token["-1:w"] = sentence[i - 1][0].lower()
        out.append(token)
    return out


@pytest.fixture(scope="module")
def spanish(tagged_small):
    X, y = tagged_small[0][:120], tagged_small[1][:120]
    return [_features(s) for s in X], y


ALPHAS = [0.03, 0.3, 3.0, 30.0]
SEARCH = {"l1_ratio": 0.0, "tol": 1e-4, "max_iter": 200}


@pytest.fixture(scope="module")
def searched(spanish):
    X, y = spanish
    folds = KFold(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cv = CRFClassifierCV(alphas=ALPHAS, cv=folds, scoring=span_f1_scorer,
                             **SEARCH).fit(X, y)
        grid = GridSearchCV(CRFClassifier(**SEARCH), {"alpha": ALPHAS}, cv=folds,
                            scoring=span_f1_scorer).fit(X, y)
    return cv, grid


def test_chooses_the_alpha_grid_search_chooses(searched):
    cv, grid = searched
    assert cv.alpha_ == grid.best_params_["alpha"]
    assert cv.best_score_ == pytest.approx(grid.best_score_, abs=0.02)


def test_fold_scores_are_close_to_grid_search_s(searched):
    cv, grid = searched
    grid_scores = np.array([grid.cv_results_[f"split{k}_test_score"] for k in range(3)])
    assert cv.scores_.shape == grid_scores.shape == (3, len(ALPHAS))
    # warm starts stop at tol from another point than a cold fit: the weights
    # differ by what tol allows, and a span or two of a fold's ~50 held-out
    # entities may flip (about 0.02 of F1 each); most scores are equal
    np.testing.assert_allclose(cv.scores_, grid_scores, atol=0.05)
    assert np.mean(np.abs(cv.scores_ - grid_scores)) < 0.01


@pytest.fixture(scope="module")
def spanish_test(tagged_small):
    return [_features(s) for s in tagged_small[2]], tagged_small[3]


def test_refit_reaches_grid_search_s_optimum(searched, spanish_test):
    cv, grid = searched
    best = grid.best_estimator_
    assert cv.n_iter_ < SEARCH["max_iter"] and best.n_iter_ < SEARCH["max_iter"]
    # both stop once 10 iterations gain less than tol (relative): the same
    # optimum, to what tol allows
    assert cv.loss_curve_[-1] == pytest.approx(best.loss_curve_[-1], rel=SEARCH["tol"])
    # the objective is strongly convex with modulus alpha * (1 - l1_ratio) at
    # least, so two points within tol * objective of the optimum are within
    # sqrt(2 * tol * objective / modulus) of it each
    modulus = cv.alpha_ * (1 - SEARCH["l1_ratio"])
    radius = np.sqrt(2 * SEARCH["tol"] * best.loss_curve_[-1] / modulus)
    difference = np.concatenate([(cv.coef_ - best.coef_).ravel(),
                                 (cv.transition_coef_ - best.transition_coef_).ravel(),
                                 cv.start_coef_ - best.start_coef_, cv.end_coef_ - best.end_coef_])
    assert np.linalg.norm(difference) <= 2 * radius
    X_test, y_test = spanish_test
    ours, theirs = cv.predict(X_test), best.predict(X_test)
    assert np.mean(np.concatenate(ours) != np.concatenate(theirs)) <= 0.005
    # within that radius a span or two of the test set's may flip (0.002 of F1 each)
    assert span_f1_score(y_test, [list(p) for p in ours]) == pytest.approx(
        span_f1_score(y_test, [list(p) for p in theirs]), abs=0.005)


def test_refit_starts_from_the_folds_solutions(searched):
    cv, grid = searched
    # from the folds' mean, not from zero as the grid search's refit
    assert cv.n_iter_ < grid.best_estimator_.n_iter_


def test_later_folds_and_the_refit_start_from_earlier_solutions(spanish, monkeypatch):
    X, y = spanish[0][:60], spanish[1][:60]
    starts = []  # (objective at the start, objective at zero) of each fit
    solve = _Training.solve

    def recording_solve(self, estimator, w0):
        self.objective.l2 = estimator._l2
        zero = self.objective(np.zeros_like(w0))[0]
        start = self.objective(w0)[0] + estimator._l1 * np.abs(w0).sum()
        starts.append((start, zero))
        return solve(self, estimator, w0)

    monkeypatch.setattr(_Training, "solve", recording_solve)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        CRFClassifierCV(alphas=[0.1, 1.0], cv=3, max_iter=30).fit(X, y)
    assert len(starts) == 3 * 2 + 1
    first_of_each_fold = [starts[0], starts[2], starts[4]]
    assert first_of_each_fold[0][0] == first_of_each_fold[0][1]  # the first: from zero
    for start, zero in first_of_each_fold[1:] + [starts[-1]]:  # later folds, the refit
        assert start < 0.5 * zero


def test_dicts_are_featurized_once_and_each_fold_fits_its_own_features(spanish,
                                                                        monkeypatch):
    X, y = spanish[0][:60], spanish[1][:60]
    calls = []
    for name in ("fit_transform", "transform"):
        method = getattr(SequenceVectorizer, name)
        monkeypatch.setattr(SequenceVectorizer, name,
                            lambda self, *args, _name=name, _method=method, **kwargs:
                            calls.append(_name) or _method(self, *args, **kwargs))
    folds = KFold(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cv = CRFClassifierCV(alphas=[0.3], cv=folds, scoring=span_f1_scorer,
                             max_iter=30).fit(X, y)
    assert calls == ["fit_transform"]  # all the dicts, once; no fold transforms them again
    monkeypatch.undo()
    # the first fold starts from zero: its fit is the one on its own dicts, bit for bit
    train, test = next(folds.split(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        own = CRFClassifier(alpha=0.3, max_iter=30).fit([X[i] for i in train],
                                                        [y[i] for i in train])
    assert cv.scores_[0, 0] == span_f1_scorer(own, [X[i] for i in test],
                                              [y[i] for i in test])
    assert cv.path_n_iter_[0, 0] == own.n_iter_
    # the refit keeps the vectorizer, to predict from dicts as a fit on them would
    assert cv.vectorizer_ is not None and len(cv.feature_names_) == cv.n_features_in_
    assert cv.n_features_in_ == len(cv.vectorizer_.feature_names_)
    assert [list(p) for p in cv.predict(X[:5])] == [
        list(p) for p in cv.predict(cv.vectorizer_.transform(X[:5]))]


def test_path_takes_fewer_iterations_than_cold_fits(searched, spanish):
    cv, _ = searched
    X, y = spanish
    train = next(KFold(3).split(X))[0]
    cold = [CRFClassifier(alpha=a, **SEARCH).fit([X[i] for i in train],
                                                 [y[i] for i in train]).n_iter_
            for a in ALPHAS]
    assert cv.path_n_iter_.shape == (3, len(ALPHAS))
    assert cv.path_n_iter_[0].sum() < sum(cold)


def test_alphas_in_any_order_give_the_same_columns(spanish):
    X, y = spanish[0][:40], spanish[1][:40]
    params = {"cv": 2, "max_iter": 20, "scoring": span_f1_scorer}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ordered = CRFClassifierCV(alphas=[0.1, 1.0, 10.0], **params).fit(X, y)
        shuffled = CRFClassifierCV(alphas=[1.0, 10.0, 0.1], **params).fit(X, y)
    np.testing.assert_array_equal(shuffled.scores_, ordered.scores_[:, [1, 2, 0]])
    np.testing.assert_array_equal(shuffled.alphas_, [1.0, 10.0, 0.1])
    assert shuffled.alpha_ == ordered.alpha_


# --- defaults, input forms, persistence ------------------------------------------

TOY_X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}, {"w": "ran"}],
         [{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "ran"}]] * 3
TOY_Y = [["DET", "N"], ["DET", "N", "V"], ["DET", "N"], ["DET", "N", "V"]] * 3


def test_default_scorer_is_span_f1_for_span_tags_else_accuracy():
    assert default_scorer(TOY_Y) is None  # plain labels: the estimator's score
    assert default_scorer([["O", "O"]]) is None  # no span at all
    scorer = default_scorer([["B-PER", "I-PER", "O"]])
    assert scorer._score_func.__name__ == "span_f1_score"
    assert scorer._kwargs == {"scheme": "IOB2"}
    assert default_scorer([["S-PER", "O", "B-LOC", "E-LOC"]])._kwargs == {"scheme": "BIOES"}


def test_default_scoring_of_plain_labels_is_token_accuracy():
    model = CRFClassifierCV(alphas=[0.1, 1.0], cv=2, max_iter=50).fit(TOY_X, TOY_Y)
    held_out = TOY_X[6:], TOY_Y[6:]
    fold = CRFClassifier(alpha=model.alpha_, max_iter=50).fit(TOY_X[:6], TOY_Y[:6])
    column = list(model.alphas_).index(model.alpha_)
    assert model.scores_[1, column] == pytest.approx(fold.score(*held_out), abs=0.1)
    assert 0 < model.best_score_ <= 1


def test_sequence_matrix_input_and_groups(spanish):
    X, y = spanish[0][:60], spanish[1][:60]
    matrix = SequenceVectorizer().fit_transform(X)
    groups = np.arange(60) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = CRFClassifierCV(alphas=[0.1, 1.0], cv=GroupKFold(3), max_iter=20).fit(
            matrix, y, groups=groups)
    assert model.scores_.shape == (3, 2)
    assert model.vectorizer_ is None and model.n_features_in_ == matrix.n_features
    assert len(model.predict(matrix[:5])) == 5


def test_save_model_round_trip(tmp_path):
    model = CRFClassifierCV(alphas=[0.1, 1.0], cv=2, max_iter=50).fit(TOY_X, TOY_Y)
    save_model(model, tmp_path / "cv.skcrf")
    loaded = load_model(tmp_path / "cv.skcrf")
    assert type(loaded) is CRFClassifierCV and loaded.alpha_ == model.alpha_
    np.testing.assert_array_equal(loaded.scores_, model.scores_)
    for a, b in zip(loaded.predict(TOY_X), model.predict(TOY_X)):
        np.testing.assert_array_equal(a, b)


# --- weights placed by name across training sets ----------------------------------

BLOCKS = {"coef": "coef_", "transitions": "transition_coef_", "start": "start_coef_",
          "end": "end_coef_", "trigram": "transition2_coef_",
          "edge_coef": "transition_feature_coef_"}


def _class_axes(block):
    return {"transitions": 2, "start": 1, "end": 1, "trigram": 3}[block]


def test_names_place_patterns_by_their_classes():
    rng = np.random.default_rng(0)
    y = [list(rng.choice(["A", "B", "C"], size=6)) for _ in range(20)]
    X = [[{"w": label.lower()} for label in labels] for labels in y]
    model = CRFClassifier(order=3, l1_ratio=0, max_iter=30).fit(X, y)
    named = {"label_patterns": model.label_patterns_, "pattern_coef": model.pattern_coef_}
    source = _Names(model.classes_, model.feature_names_)
    classes = np.array(["C", "X", "A"])  # reordered, one new, B dropped
    placed = source.reindex(named, _Names(classes, model.feature_names_))

    def by_labels(rows, weights, labels):
        return {tuple(labels[row[row >= 0]].tolist()): w for row, w in zip(rows, weights)}

    expected = {labels: w for labels, w in by_labels(
        model.label_patterns_, model.pattern_coef_, model.classes_).items() if "B" not in labels}
    assert model.label_patterns_.shape[0] > len(expected) > 0
    assert by_labels(placed["label_patterns"], placed["pattern_coef"], classes) == expected


@pytest.mark.parametrize("params", [{}, {"order": 2, "all_possible_transitions": True},
                                    {"transition_features": "all"}],
                         ids=["order1", "order2", "transition_features"])
def test_names_place_each_weight_by_feature_and_class(params):
    model = CRFClassifier(max_iter=30, **params).fit(TOY_X, TOY_Y)
    named = {block: np.array(getattr(model, attribute).toarray()
                             if block == "edge_coef" else getattr(model, attribute))
             for block, attribute in BLOCKS.items() if hasattr(model, attribute)}
    named["transitions"][0, 1] = -np.inf  # a forbidden pair
    source = _Names(model.classes_, model.feature_names_)
    features = np.array(list(np.random.default_rng(0).permutation(model.feature_names_)[1:])
                        + ["w=bird"], dtype=object)  # reordered, one dropped, one new
    classes = np.array(["V", "ADJ", "DET", "N"])  # reordered, one new
    placed = source.reindex(named, _Names(classes, features))
    assert set(placed) == set(named)
    class_of = {c: i for i, c in enumerate(model.classes_)}
    feature_of = {f: i for i, f in enumerate(model.feature_names_)}

    def source_value(block, index):
        value = named[block][index] if None not in index else 0.0
        return value if np.isfinite(value) else 0.0

    n_from, n_to = len(model.classes_), len(classes)
    for block, values in placed.items():
        values = values.toarray() if block == "edge_coef" else values
        for index in np.ndindex(values.shape):
            if block == "coef":
                where = (class_of.get(classes[index[0]]), feature_of.get(features[index[1]]))
            elif block == "edge_coef":
                a, b = class_of.get(classes[index[1] // n_to]), class_of.get(classes[index[1] % n_to])
                where = (feature_of.get(features[index[0]]),
                         None if None in (a, b) else a * n_from + b)
            else:
                assert values.ndim == _class_axes(block)
                where = tuple(class_of.get(classes[i]) for i in index)
            assert values[index] == source_value(block, where), (block, index)


def test_mean_of_solutions_counts_only_the_sets_that_have_a_weight():
    estimator = CRFClassifier(alpha=0.1, max_iter=30)
    X_a = TOY_X[:4] + [[{"w": "a"}, {"w": "bird"}, {"w": "ran"}]]
    y_a = TOY_Y[:4] + [["DET", "N", "V"]]
    X_b = TOY_X[4:8] + [[{"w": "a"}, {"w": "big"}, {"w": "fish"}]]
    y_b = TOY_Y[4:8] + [["DET", "ADJ", "N"]]
    solutions, pairs = [], []
    for X, y in ((X_a, y_a), (X_b, y_b)):
        training = _Training(estimator, X, y)
        solution = _Solutions(training)
        solution.w[0] = training.solve(estimator, np.zeros(training.problem.n_parameters)).w
        solutions.append(solution)
        pairs.append({(f"w={token['w']}", label) for sequence, labels in zip(X, y)
                      for token, label in zip(sequence, labels)})
    full = _Training(estimator, X_a + X_b, y_a + y_b)
    placed = full.problem.structure.coefficients(full.mean_weights(solutions, 0))
    assert list(full.names.classes) == ["ADJ", "DET", "N", "V"]
    for c, label in enumerate(full.names.classes):
        for f, feature in enumerate(full.names.feature_names):
            having = [solution.coefficients(solution.w[0])["coef"][
                          list(solution.names.classes).index(label),
                          list(solution.names.feature_names).index(feature)]
                      for solution, seen in zip(solutions, pairs) if (feature, label) in seen]
            expected = np.mean(having) if having else 0.0
            assert placed["coef"][c, f] == pytest.approx(expected, abs=1e-12), (label, feature)
        for d, other in enumerate(full.names.classes):
            having = [solution.coefficients(solution.w[0])["transitions"][
                          list(solution.names.classes).index(label),
                          list(solution.names.classes).index(other)]
                      for solution in solutions
                      if {label, other} <= set(solution.names.classes)]
            expected = np.mean(having) if having else 0.0
            assert placed["transitions"][c, d] == pytest.approx(expected, abs=1e-12)


def test_folds_with_different_classes():
    # ADJ only in the last third: the first two folds train without it
    X = TOY_X[:8] + [[{"w": "a"}, {"w": "big"}, {"w": "dog"}]] * 4
    y = TOY_Y[:8] + [["DET", "ADJ", "N"]] * 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = CRFClassifierCV(alphas=[0.1, 1.0], cv=KFold(3), max_iter=50).fit(X, y)
        reference = CRFClassifier(alpha=model.alpha_, max_iter=50).fit(X, y)
    assert list(model.classes_) == ["ADJ", "DET", "N", "V"]
    assert_same_predictions(model, reference, X)


# --- the scikit-learn contract, bad input ------------------------------------------

# The estimator contract, for every estimator: tests/test_estimator_contract.py.

def test_alpha_and_warm_start_are_not_parameters():
    """alphas replaces alpha, and each fit starts its path afresh."""
    params = CRFClassifierCV().get_params()
    assert "alphas" in params and "alpha" not in params and "warm_start" not in params


@pytest.mark.parametrize("alphas, message", [
    ([], "alphas is empty"),
    ([0.1, -1.0], r"alphas\[1\] is -1.0"),
    ([0.1, float("nan")], r"alphas\[1\] is nan"),
    ([[0.1, 1.0]], "1-D"),
    (["strong"], "non-negative numbers"),
])
def test_bad_alphas_raise_a_clear_error(alphas, message):
    with pytest.raises(ValueError, match=message):
        CRFClassifierCV(alphas=alphas, cv=2).fit(TOY_X, TOY_Y)


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="12 sequences but y has 11"):
        CRFClassifierCV(cv=2).fit(TOY_X, TOY_Y[:-1])


def test_an_alpha_scored_nan_is_never_chosen():
    """CRFClassifierCV chose the alpha whose score was NaN (best_score_=nan) where
    GridSearchCV ranks it last (issue 32, item 10)."""
    def nan_for_weak_alphas(estimator, X, y):
        return float("nan") if estimator.alpha < 0.5 else estimator.score(X, y)

    with pytest.warns(UserWarning, match=r"alphas \[0.01, 0.1\] is NaN; they are ranked last"):
        model = CRFClassifierCV(alphas=[0.01, 0.1, 1.0], cv=2, max_iter=50,
                                scoring=nan_for_weak_alphas).fit(TOY_X, TOY_Y)
    assert model.alpha_ == 1.0 and np.isfinite(model.best_score_)
    search = GridSearchCV(CRFClassifier(max_iter=50), {"alpha": [0.01, 0.1, 1.0]}, cv=2,
                          scoring=nan_for_weak_alphas)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert search.fit(TOY_X, TOY_Y).best_params_["alpha"] == model.alpha_
    with pytest.raises(ValueError, match="Every alpha's mean score over the folds is NaN"):
        CRFClassifierCV(alphas=[0.1, 1.0], cv=2, max_iter=50,
                        scoring=lambda estimator, X, y: float("nan")).fit(TOY_X, TOY_Y)


def test_a_cv_without_splits_is_refused():
    """cv=[] "succeeded" with no cross-validation at all; GridSearchCV raises (item 10)."""
    with pytest.raises(ValueError, match=r"cv=\[\] gives no \(train, test\) split"):
        CRFClassifierCV(cv=[]).fit(TOY_X, TOY_Y)


@pytest.mark.parametrize("scoring", ["accuracy", "f1_macro"])
def test_a_string_scorer_is_refused_naming_skcrf_s(scoring):
    """scikit-learn's string scorers fail on sequences: one error, not NaN scores."""
    with pytest.raises(ValueError, match=rf"scoring='{scoring}' names one of scikit-learn's "
                                         rf"scorers.*span_f1_scorer.*make_sequence_scorer"):
        CRFClassifierCV(scoring=scoring, cv=2).fit(TOY_X, TOY_Y)
