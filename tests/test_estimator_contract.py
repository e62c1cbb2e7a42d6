"""The scikit-learn estimator contract, checked once for every estimator of skcrf.

Each estimator comes with a small task it learns (tags, spans or trees: the
corpora of ``tests/_toys.py``) and the parameters a search may vary. What is
particular to one estimator stays in its own test module.
"""

import io
import pickle

import numpy as np
import pytest
import sklearn
import sklearn.utils.estimator_checks as checks
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline

import skcrf.compat
from skcrf import (
    CRFClassifier,
    CRFClassifierCV,
    SemiMarkovCRF,
    SequenceVectorizer,
    TreeCRF,
    save_model,
)
from tests._toys import chain_corpus, span_corpus, tree_corpus

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

#: name -> (a short-training instance, its task, a grid whose last value must lose)
ESTIMATORS = {
    "CRFClassifier": (lambda: CRFClassifier(max_iter=50), chain_corpus,
                      {"alpha": [0.1, 1000.0]}),
    "SemiMarkovCRF": (lambda: SemiMarkovCRF(max_iter=50), span_corpus,
                      {"alpha": [0.1, 1000.0]}),
    "TreeCRF": (lambda: TreeCRF(max_iter=50, n_jobs=1), tree_corpus,
                {"alpha": [0.1, 1000.0]}),
    "CRFClassifierCV": (lambda: CRFClassifierCV(alphas=[0.1, 1.0], cv=2, max_iter=50),
                        chain_corpus, {"alphas": [[0.1, 1.0], [1000.0]]}),
    "compat.CRF": (lambda: skcrf.compat.CRF(max_iterations=50), span_corpus,
                   {"c2": [0.05, 500.0]}),
}
#: the estimators that take a SequenceMatrix, and so sit after a vectorizer in a pipeline
SEQUENCE_INPUT = ["CRFClassifier", "SemiMarkovCRF", "TreeCRF", "CRFClassifierCV"]
#: a big enough score on the toy tasks for a model that learned them
LEARNED = 0.9


@pytest.fixture(scope="module", params=sorted(ESTIMATORS))
def case(request):
    """(name, a maker of unfitted instances, X, y, a fitted instance)."""
    make, task, _ = ESTIMATORS[request.param]
    X, y = task()
    return request.param, make, X, y, make().fit(X, y)


def predictions(model, X):
    return [np.asarray(labels) for labels in model.predict(X)]


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
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_sklearn_checks_that_apply(name, check):
    """parametrize_with_checks makes nothing of non-tabular input: these apply as they are."""
    check(name, ESTIMATORS[name][0]())


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_tags_are_honest(name):
    tags = ESTIMATORS[name][0]().__sklearn_tags__()
    assert not tags.input_tags.two_d_array and tags.input_tags.dict
    assert tags.target_tags.required
    assert tags.estimator_type is None  # not a classifier: no stratified CV on ragged y


def test_fit_returns_self_keeps_the_parameters_and_adds_only_fitted_attributes(case):
    _, make, X, y, _ = case
    model = make()
    before = model.get_params()
    public = {name for name in vars(model) if not name.startswith("_")}
    assert model.fit(X, y) is model
    assert model.get_params() == before
    added = {name for name in vars(model) if not name.startswith("_")} - public
    assert added and all(name.endswith("_") for name in added)
    assert model.score(X, y) >= LEARNED


def test_pickle_round_trip_predicts_the_same(case):
    _, _, X, _, fitted = case
    restored = pickle.loads(pickle.dumps(fitted))
    for a, b in zip(predictions(fitted, X), predictions(restored, X), strict=True):
        np.testing.assert_array_equal(a, b)
    assert restored.predict_marginals(X[:3]) is not None
    for a, b in zip(fitted.predict_marginals(X), restored.predict_marginals(X), strict=True):
        np.testing.assert_array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))


def test_clone_is_unfitted_with_the_same_parameters(case):
    _, _, X, _, fitted = case
    copy = clone(fitted)
    assert copy.get_params() == fitted.get_params()
    assert not [name for name in vars(copy) if name.endswith("_") and not name.startswith("_")]
    with pytest.raises(NotFittedError):
        copy.predict(X)


@pytest.mark.parametrize("name, method", [
    (name, method) for name in sorted(ESTIMATORS)
    for method in ("predict", "predict_marginals", "predict_proba", "score")
    if hasattr(ESTIMATORS[name][0](), method)])
def test_unfitted_methods_raise_not_fitted(name, method):
    make, task, _ = ESTIMATORS[name]
    X, y = task()
    with pytest.raises(NotFittedError):
        getattr(make(), method)(*((X, y) if method == "score" else (X,)))


def test_cross_validation_and_grid_search(case):
    name, make, X, y, _ = case
    model = make()
    result = cross_validate(model, X, y, cv=3, return_train_score=True)
    assert result["test_score"].shape == (3,) and np.all(result["train_score"] > LEARNED)
    grid = ESTIMATORS[name][2]
    search = GridSearchCV(model, grid, cv=3).fit(X, y)
    (parameter, values), = grid.items()
    # the last value flattens every weight: it cannot win
    assert search.best_params_[parameter] != values[-1]
    assert len(search.predict(X[:2])) == 2


@pytest.mark.parametrize("name", SEQUENCE_INPUT)
def test_a_pipeline_after_a_vectorizer_predicts_and_gives_marginals(name):
    make, task, grid = ESTIMATORS[name]
    X, y = task()
    pipe = make_pipeline(SequenceVectorizer(), make()).fit(X, y)
    assert pipe.score(X, y) >= LEARNED
    expected = pipe[-1].predict_marginals(pipe[:-1].transform(X))
    # a search whose only candidate is the pipeline's own setting refits the same model
    step, model = pipe.steps[-1]
    same = {f"{step}__{key}": [model.get_params()[key]] for key in grid}
    for got in (pipe.predict_proba(X), GridSearchCV(pipe, same, cv=2).fit(X, y).predict_proba(X)):
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)



@pytest.mark.parametrize("name", SEQUENCE_INPUT)
def test_metadata_routing_passes_predict_s_options_and_scores_a_pipeline(name):
    """With enable_metadata_routing=True, what works without it still works (issue 36, 8)."""
    make, task, grid = ESTIMATORS[name]
    X, y = task()
    plain = make_pipeline(SequenceVectorizer(), make()).fit(X, y)
    expected_labels, expected_proba = plain.predict(X, return_proba=True)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(SequenceVectorizer(), make()).fit(X, y)
        labels, proba = pipe.predict(X, return_proba=True)
        fixed = [[expected_labels[q][0]] + [None] * (len(x) - 1) for q, x in enumerate(X)]
        constrained = pipe.predict(X, fixed=fixed)
        assert pipe.score(X, y) >= LEARNED
        step = pipe.steps[-1][0]
        search = GridSearchCV(pipe, {f"{step}__{key}": values for key, values in grid.items()},
                              cv=3).fit(X, y)
        buffer = io.BytesIO()
        save_model(pipe, buffer)
    for got, want in zip(labels, expected_labels, strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(proba, expected_proba)
    assert all(tags[0] == expected_labels[q][0] for q, tags in enumerate(constrained))
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert buffer.tell() > 0  # the default requests are the class's: nothing to store


@pytest.mark.parametrize("name", SEQUENCE_INPUT)
def test_score_weighs_each_sequence_s_tokens(name):
    make, task, _ = ESTIMATORS[name]
    X, y = task()
    model = make().fit(X, y)
    weights = np.zeros(len(X))
    weights[0] = 1.0
    accuracy = np.mean(np.asarray(model.predict(X[:1])[0]) == np.asarray(y[0]))
    assert model.score(X, y, sample_weight=weights) == pytest.approx(accuracy)
    assert model.score(X, y, sample_weight=np.ones(len(X))) == model.score(X, y)
    with pytest.raises(ValueError, match="one weight per sequence"):
        model.score(X, y, sample_weight=[1.0])
