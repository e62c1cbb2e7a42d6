"""CRFClassifierCV: the search it replaces, the scikit-learn contract, bad input."""

import warnings

import numpy as np
import pytest
import sklearn.utils.estimator_checks as checks
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold

from skcrf import CRFClassifier, CRFClassifierCV, SequenceVectorizer, load_model, save_model
from skcrf._cv import default_scorer
from skcrf.metrics import span_f1_scorer


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
def spanish(conll2002_small):
    X, y = conll2002_small[0][:120], conll2002_small[1][:120]
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


def test_refit_is_grid_search_s_best_estimator(searched):
    cv, grid = searched
    # the same cold fit of the chosen alpha on all the data
    np.testing.assert_array_equal(cv.coef_, grid.best_estimator_.coef_)
    np.testing.assert_array_equal(cv.transition_coef_, grid.best_estimator_.transition_coef_)
    assert cv.n_iter_ == grid.best_estimator_.n_iter_


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


# --- the scikit-learn contract, bad input ------------------------------------------

@pytest.mark.parametrize("check", [
    checks.check_estimator_cloneable,
    checks.check_estimator_repr,
    checks.check_no_attributes_set_in_init,
    checks.check_parameters_default_constructible,
    checks.check_get_params_invariance,
    checks.check_set_params,
    checks.check_do_not_raise_errors_in_init_or_set_params,
    checks.check_estimators_unfitted,
    checks.check_estimator_tags_renamed,
    checks.check_valid_tag_types,
    checks.check_mixin_order,
], ids=lambda check: check.__name__)
def test_sklearn_checks_that_apply(check):
    check("CRFClassifierCV", CRFClassifierCV())


def test_clone_and_params():
    model = CRFClassifierCV(alphas=[0.1, 1.0], cv=2, max_iter=50).fit(TOY_X, TOY_Y)
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    assert not hasattr(copy, "alpha_") and not hasattr(copy, "coef_")
    assert "alpha" not in copy.get_params() and "warm_start" not in copy.get_params()
    with pytest.raises(NotFittedError):
        copy.predict(TOY_X)


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
