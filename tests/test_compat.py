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


def test_a_loaded_crf_does_not_write_where_the_file_says(tmp_path):
    """model_filename is where fit saves, not part of the model: a file naming a path
    made a loaded CRF write there on refit (issue 32, item 16)."""
    path, elsewhere = tmp_path / "m.skcrf", tmp_path / "not-yours.skcrf"
    X, y = [[{"w": "a"}, {"w": "b"}]], [["A", "B"]]
    crf = sklearn_crfsuite.CRF(max_iterations=20, model_filename=str(elsewhere)).fit(X, y)
    elsewhere.unlink()
    save_model(crf, path)
    loaded = load_model(path)
    assert loaded.model_filename is None
    loaded.fit(X, y)
    assert not elsewhere.exists()


@pytest.mark.parametrize("min_freq, kept", [(None, 3), (0, 3), (0.5, 3), (1, 3), (2.0, 2),
                                            (2.5, 1), (3, 1)])
def test_min_freq_takes_floats_as_documented(min_freq, kept):
    """min_freq=0.5 and 2.0 were refused with an error naming SequenceVectorizer,
    which the user never made (issue 32, item 13)."""
    X = [[{"a": 1.0, "b": 1.0, "c": 1.0}], [{"a": 1.0, "b": 1.0}], [{"a": 1.0}]]
    y = [["A"], ["B"], ["A"]]
    crf = sklearn_crfsuite.CRF(max_iterations=5, min_freq=min_freq).fit(X, y)
    assert len(crf.attributes_) == kept


@pytest.mark.parametrize("min_freq", [-1, float("nan"), "2", True])
def test_invalid_min_freq_is_named_as_the_crfs(min_freq):
    with pytest.raises(ValueError, match=r"CRF\(min_freq=.*\): min_freq must be a number >= 0"):
        sklearn_crfsuite.CRF(min_freq=min_freq).fit([[{"a": 1.0}]], [["A"]])


def test_nested_feature_dicts_as_python_crfsuite_takes_them():
    """python-crfsuite reads {"w": {"a": 1.0}} as the attribute "w:a" (item 13)."""
    nested = [[{"w": {"the": 1.0, "x": {"y": 2.0}}, "pos": "DT"}, {"w": {"cat": 0.5}}]]
    flat = [[{"w:the": 1.0, "w:x:y": 2.0, "pos": "DT"}, {"w:cat": 0.5}]]
    y = [["D", "N"]]
    a = sklearn_crfsuite.CRF(max_iterations=20).fit(nested, y)
    b = sklearn_crfsuite.CRF(max_iterations=20).fit(flat, y)
    assert a.attributes_ == b.attributes_ == ["pos:DT", "w:cat", "w:the", "w:x:y"]
    assert a.state_features_ == b.state_features_
    assert a.predict(nested) == b.predict(flat)
    with pytest.raises(ValueError, match=r"Sequence 0, token 1: the attribute 'w:a' is "
                                         r"given twice, once nested"):
        a.predict([[{"w": "x"}, {"w:a": "b", "w": {"a": 1.0}}]])


def test_tokens_of_another_kind_are_named_by_position():
    with pytest.raises(TypeError, match="Sequence 0, token 1: a token must be a dict"):
        sklearn_crfsuite.CRF().fit([[{"a": 1.0}, 3]], [["A", "B"]])


@pytest.mark.parametrize("params, match", [
    ({"algorithm": "pa"}, "algorithm='pa' is not available"),
    ({"pa_type": 1}, "pa_type belong to CRFsuite's other training algorithms"),
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
