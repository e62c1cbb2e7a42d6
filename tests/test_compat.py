"""skcrf.compat: sklearn-crfsuite's CRF and metrics, as tutorial code uses them."""

import numpy as np
import pytest
from sklearn.base import clone

import skcrf.compat as sklearn_crfsuite
from skcrf import CRFClassifier, load_model, save_model
from skcrf.compat import metrics
from skcrf.datasets import load_conll2002
from tests.conftest import data_home

# 50 iterations keep the fits short; convergence is not what these tests check
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def word2features(sent, i):
    """The sklearn-crfsuite tutorial's features (abridged)."""
    word, postag = sent[i][0], sent[i][1]
    features = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:],
                "word.isupper()": word.isupper(), "word.istitle()": word.istitle(),
                "postag": postag}
    if i > 0:
        features["-1:word.lower()"] = sent[i - 1][0].lower()
    else:
        features["BOS"] = True
    if i < len(sent) - 1:
        features["+1:word.lower()"] = sent[i + 1][0].lower()
    else:
        features["EOS"] = True
    return features


@pytest.fixture(scope="module")
def corpus():
    X, y = load_conll2002("train", data_home=data_home())
    X_test, y_test = load_conll2002("testa", data_home=data_home())
    features = [[word2features(s, i) for i in range(len(s))] for s in X[:600]]
    test = [[word2features(s, i) for i in range(len(s))] for s in X_test[:200]]
    return features, [list(t) for t in y[:600]], test, [list(t) for t in y_test[:200]]


@pytest.fixture(scope="module")
def crf(corpus):
    X, y, _, _ = corpus
    return sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=50,
                                all_possible_transitions=True).fit(X, y)


def test_tutorial_code_runs_unchanged(crf, corpus):
    _, _, X_test, y_test = corpus
    labels = list(crf.classes_)
    labels.remove("O")
    y_pred = crf.predict(X_test)
    assert isinstance(y_pred, list) and isinstance(y_pred[0], list)
    assert isinstance(y_pred[0][0], str)
    f1 = metrics.flat_f1_score(y_test, y_pred, average="weighted", labels=labels)
    assert 0.3 < f1 <= 1.0
    report = metrics.flat_classification_report(y_test, y_pred, labels=labels, digits=3)
    assert "B-PER" in report
    assert metrics.sequence_accuracy_score(y_test, y_pred) <= crf.score(X_test, y_test)
    assert crf.score(X_test, y_test) == metrics.flat_accuracy_score(y_test, y_pred)


def test_c1_c2_map_to_the_same_objective_as_crfclassifier(crf, corpus):
    """alpha = c1 + 2 c2, l1_ratio = c1 / alpha: the very model CRFClassifier trains."""
    X, y, X_test, _ = corpus
    from skcrf import SequenceVectorizer

    vectorizer = SequenceVectorizer(separator=":")
    c1, c2 = 0.1, 0.1
    direct = CRFClassifier(alpha=c1 + 2 * c2, l1_ratio=c1 / (c1 + 2 * c2), max_iter=50).fit(
        vectorizer.fit_transform(X), y)
    np.testing.assert_array_equal(crf.estimator_.coef_, direct.coef_)
    assert crf.predict(X_test) == [p.tolist() for p in direct.predict(
        vectorizer.transform(X_test))]


def test_attributes_have_sklearn_crfsuite_shapes(crf):
    assert crf.classes_ == sorted(crf.classes_) and "B-PER" in crf.classes_
    # string values become "key:value" attributes, as in CRFsuite
    assert "word.lower():madrid" in crf.attributes_ or "word.lower():el" in crf.attributes_
    (attribute, label), weight = next(iter(crf.state_features_.items()))
    assert attribute in crf.attributes_ and label in crf.classes_ and weight != 0.0
    k, j = crf.classes_.index(label), crf.attributes_.index(attribute)
    assert weight == crf.estimator_.coef_[k, j]
    assert len(crf.transition_features_) == len(crf.classes_) ** 2
    assert crf.transition_features_[("B-PER", "I-PER")] > crf.transition_features_[("O", "I-PER")]
    assert crf.size_ > 0 and crf.training_log_ is None


def test_single_and_marginal_predictions(crf, corpus):
    _, _, X_test, _ = corpus
    assert crf.predict_single(X_test[0]) == crf.predict(X_test[:1])[0]
    marginals = crf.predict_marginals(X_test[:2])
    assert marginals[0] == crf.predict_marginals_single(X_test[0])
    token = marginals[0][0]
    assert set(token) == set(crf.classes_)
    assert abs(sum(token.values()) - 1.0) < 1e-9
    best = [max(m, key=m.get) for m in marginals[0]]
    assert sum(a == b for a, b in zip(best, crf.predict_single(X_test[0]))) >= len(best) - 1


def test_tokens_as_lists_of_attribute_names():
    X = [[["w=the", "pos=DT"], ["w=cat", "pos=NN"]], [["w=a", "pos=DT"], ["w=dog", "pos=NN"]]]
    y = [["D", "N"], ["D", "N"]]
    crf = sklearn_crfsuite.CRF(c2=0.01, max_iterations=50).fit(X, y)
    assert crf.predict(X) == y
    assert ("pos=NN", "N") in crf.state_features_


def test_clone_save_and_load(crf, corpus, tmp_path):
    _, _, X_test, _ = corpus
    assert clone(crf).get_params() == crf.get_params()
    path = tmp_path / "crf.skcrf"
    save_model(crf, path)
    loaded = load_model(path)
    assert isinstance(loaded, sklearn_crfsuite.CRF)
    assert loaded.predict(X_test) == crf.predict(X_test)
    assert loaded.state_features_ == crf.state_features_


def test_model_filename_saves_the_fitted_model(tmp_path):
    path = tmp_path / "m.skcrf"
    X, y = [[{"w": "a"}, {"w": "b"}]], [["A", "B"]]
    crf = sklearn_crfsuite.CRF(max_iterations=20, model_filename=str(path)).fit(X, y)
    assert load_model(path).predict(X) == crf.predict(X)


@pytest.mark.parametrize("params, match", [
    ({"algorithm": "newton"}, "algorithm='newton' is not one of CRFsuite's trainers"),
    ({"pa_type": 1}, "pa_type is not an option of algorithm='lbfgs'"),
    ({"algorithm": "ap", "c2": 1.0}, "c2 is not an option of algorithm='ap'"),
    ({"algorithm": "l2sgd", "c2": 0.0}, "l2sgd needs c2 > 0"),
    ({"algorithm": "pa", "pa_type": 3}, "pa_type must be 0, 1 or 2"),
    ({"algorithm": "arow", "gamma": 0.0}, "arow needs gamma > 0"),
    ({"trainer_cls": object}, "trainer_cls is not supported"),
    ({"num_memories": 10}, "num_memories=10 is not supported"),
    ({"c1": -1.0}, "c1 and c2 must be >= 0"),
])
def test_unsupported_settings_are_named(params, match):
    X, y = [[{"w": "a"}]], [["A"]]
    with pytest.raises(ValueError, match=match):
        sklearn_crfsuite.CRF(**params).fit(X, y)


def test_crfsuite_defaults_are_accepted():
    X, y = [[{"w": "a"}, {"w": "b"}]], [["A", "B"]]
    crf = sklearn_crfsuite.CRF(num_memories=6, epsilon=1e-5, period=10, max_linesearch=20,
                               linesearch="MoreThuente", max_iterations=10)
    assert crf.fit(X, y).predict(X) == y


def test_same_attributes_and_shapes_as_sklearn_crfsuite(corpus):
    """On the tutorial's features both name attributes alike and give the same shapes."""
    real = pytest.importorskip("sklearn_crfsuite")
    X, y, X_test, _ = corpus
    theirs = real.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=50,
                      all_possible_transitions=True).fit(X[:200], y[:200])
    ours = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=50,
                                all_possible_transitions=True).fit(X[:200], y[:200])
    # CRFsuite drops from its model the attributes whose weights L1 set to zero
    assert set(theirs.attributes_) <= set(ours.attributes_)
    weighted = {attribute for attribute, _ in ours.state_features_}
    assert len(weighted & set(theirs.attributes_)) > 0.9 * len(weighted)
    assert sorted(ours.classes_) == sorted(theirs.classes_)
    assert set(theirs.transition_features_) <= set(ours.transition_features_)
    key, weight = next(iter(theirs.state_features_.items()))
    assert type(key) is tuple and type(key[0]) is str and type(weight) is float
    ours_key = next(iter(ours.state_features_))
    assert type(ours_key) is tuple and type(ours_key[0]) is str
    # the same (attribute, label) pairs carry weights, up to L1 zeros on either side
    shared = set(ours.state_features_) & set(theirs.state_features_)
    assert len(shared) > 0.8 * min(len(ours.state_features_), len(theirs.state_features_))
    assert type(ours.predict(X_test[:3])[0]) is type(theirs.predict(X_test[:3])[0])
    agree = np.mean([a == b for p, q in zip(ours.predict(X_test), theirs.predict(X_test))
                     for a, b in zip(p, q)])
    assert agree > 0.97
    m_ours = ours.predict_marginals_single(X_test[0])[0]
    m_theirs = theirs.predict_marginals_single(X_test[0])[0]
    assert set(m_ours) == set(m_theirs)


@pytest.mark.parametrize("options, solver, expected", [
    ({"algorithm": "l2sgd"}, "sgd", {"alpha": 2.0, "l1_ratio": 0.0, "max_iter": 1000,
                                     "tol": 1e-6, "n_iter_no_change": 10, "average": False}),
    ({"algorithm": "l2sgd", "c2": 0.25, "max_iterations": 7, "period": 3, "delta": 1e-4},
     "sgd", {"alpha": 0.5, "max_iter": 7, "n_iter_no_change": 3, "tol": 1e-4}),
    ({"algorithm": "ap"}, "perceptron", {"max_iter": 100, "average": True}),
    ({"algorithm": "pa"}, "passive_aggressive", {"C": 1.0, "average": True}),
    ({"algorithm": "pa", "c": 0.5, "averaging": False}, "passive_aggressive",
     {"C": 0.5, "average": False}),
    ({"algorithm": "arow", "gamma": 4.0}, "arow", {"C": 0.25, "max_iter": 100}),
])
def test_online_algorithms_map_to_skcrf_solvers(options, solver, expected):
    crf = sklearn_crfsuite.CRF(**options)
    classifier = crf._classifier()
    assert classifier.solver == solver
    for name, value in expected.items():
        assert classifier.get_params()[name] == value, name


def test_crfsuite_only_options_reach_the_solver():
    """calibration_*, pa_type, error_sensitive, variance and epsilon: the solver reads them."""
    from skcrf._online import online_options

    options = online_options(sklearn_crfsuite.CRF(
        algorithm="l2sgd", calibration_eta=0.2, calibration_rate=3.0, calibration_samples=50,
        calibration_candidates=4, calibration_max_trials=6)._classifier())
    calibration = options.calibration
    assert (calibration.eta, calibration.rate, calibration.samples, calibration.candidates,
            calibration.max_trials) == (0.2, 3.0, 50, 4, 6)
    options = online_options(sklearn_crfsuite.CRF(
        algorithm="pa", pa_type=2, error_sensitive=False, epsilon=0.5)._classifier())
    assert (options.pa_type, options.error_sensitive, options.epsilon) == (2, False, 0.5)
    assert online_options(sklearn_crfsuite.CRF(
        algorithm="arow", variance=3.0)._classifier()).variance == 3.0


@pytest.mark.parametrize("algorithm", ["l2sgd", "ap", "pa", "arow"])
def test_online_algorithms_train(algorithm, corpus):
    X, y, _, _ = corpus
    crf = sklearn_crfsuite.CRF(algorithm=algorithm, max_iterations=5,
                               all_possible_transitions=True).fit(X[:200], y[:200])
    assert crf.estimator_.n_iter_ <= 5
    assert metrics.flat_accuracy_score(y[:200], crf.predict(X[:200])) > 0.9
    assert crf.training_log_ is None
