"""skcrf.compat: sklearn-crfsuite's CRF and metrics, as tutorial code uses them."""

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

import skcrf.compat as sklearn_crfsuite
from skcrf import CRFClassifier, load_model, save_model
from skcrf.compat import metrics, scorers
from tests._corpora import tagged_sentences

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
def corpus(corpus_or_sample):
    """The tutorial's features of CoNLL-2002 Spanish, else of the embedded sample's names."""
    X, y, X_test, y_test, _ = tagged_sentences(600, 200)
    features = [[word2features(s, i) for i in range(len(s))] for s in X]
    test = [[word2features(s, i) for i in range(len(s))] for s in X_test]
    return features, [list(t) for t in y], test, [list(t) for t in y_test]


def first_span_type(crf):
    """The type of the first ``B-`` label, such as ``LOC`` or ``NAME``."""
    return next(label[2:] for label in crf.classes_ if label.startswith("B-"))


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
    assert all(label in report for label in labels)
    assert metrics.sequence_accuracy_score(y_test, y_pred) <= crf.score(X_test, y_test)
    assert crf.score(X_test, y_test) == metrics.flat_accuracy_score(y_test, y_pred)


def test_c1_c2_map_to_the_same_objective_as_crfclassifier(crf, corpus):
    """alpha = c1 + 2 c2, l1_ratio = c1 / alpha: the very model CRFClassifier trains,
    without start and end weights (CRFsuite's chain has none)."""
    X, y, X_test, _ = corpus
    from skcrf import SequenceVectorizer

    vectorizer = SequenceVectorizer(separator=":")
    c1, c2 = 0.1, 0.1
    direct = CRFClassifier(alpha=c1 + 2 * c2, l1_ratio=c1 / (c1 + 2 * c2), max_iter=50, tol=1e-5)
    # the settings compat.CRF's fit gives
    direct._fit_with_settings(vectorizer.fit_transform(X), y, settings={"boundary_weights": False})
    assert not np.any(crf.estimator_.start_coef_) and not np.any(crf.estimator_.end_coef_)
    # a setting of that fit only: nothing of it stays on the estimator
    assert not [name for name in vars(crf.estimator_) if name.startswith("_")
                and not name.startswith("__")]
    np.testing.assert_array_equal(crf.estimator_.coef_, direct.coef_)
    assert crf.predict(X_test) == [p.tolist() for p in direct.predict(
        vectorizer.transform(X_test))]


def test_attributes_have_sklearn_crfsuite_shapes(crf):
    kind = first_span_type(crf)
    assert crf.classes_ == sorted(crf.classes_) and f"I-{kind}" in crf.classes_
    # string values become "key:value" attributes, as in CRFsuite
    assert any(attribute.startswith("word.lower():") for attribute in crf.attributes_)
    (attribute, label), weight = next(iter(crf.state_features_.items()))
    assert attribute in crf.attributes_ and label in crf.classes_ and weight != 0.0
    k, j = crf.classes_.index(label), list(crf.estimator_.feature_names_).index(attribute)
    assert weight == crf.estimator_.coef_[k, j]
    assert len(crf.transition_features_) == len(crf.classes_) ** 2
    transitions = crf.transition_features_
    assert transitions[(f"B-{kind}", f"I-{kind}")] > transitions[("O", f"I-{kind}")]
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
    # both keep the attributes that carry a weight (L1 sets many to zero), which
    # the two solvers' slightly different optima make almost the same ones
    assert {attribute for attribute, _ in ours.state_features_} == set(ours.attributes_)
    shared = set(ours.attributes_) & set(theirs.attributes_)
    assert len(shared) > 0.9 * max(len(ours.attributes_), len(theirs.attributes_))
    # CRFsuite's file adds hash tables of fixed size: on a small model it is the larger
    assert ours.size_ < 2 * theirs.size_
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


def test_reaching_max_iterations_is_silent_as_in_crfsuite():
    X, y = [[{"w": "a"}, {"w": "b"}]] * 3, [["A", "B"]] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        crf = sklearn_crfsuite.CRF(max_iterations=1).fit(X, y)
    assert crf.estimator_.n_iter_ == 1
    with pytest.warns(ConvergenceWarning):  # skcrf's own estimator says so
        CRFClassifier(max_iter=1).fit(X, y)


def test_attributes_are_those_with_a_weight_and_size_counts_them(crf):
    """As CRFsuite's model: an attribute whose weights L1 set to zero is not in it."""
    estimator = crf.estimator_
    weighted = np.any(estimator.coef_ != 0, axis=0)
    assert not weighted.all()  # L1 (c1=0.1) dropped some
    assert crf.attributes_ == [name for name, kept in zip(estimator.feature_names_, weighted)
                               if kept]
    n_classes = len(crf.classes_)
    n_weights = len(crf.attributes_) * n_classes + n_classes ** 2 + 2 * n_classes
    assert crf.size_ == 8 * n_weights + sum(len(a.encode()) for a in crf.attributes_)


def test_scorers_are_sklearn_crfsuite_s(corpus):
    X, y, _, _ = corpus
    crf = sklearn_crfsuite.CRF(c1=0.1, c2=0.1, max_iterations=20).fit(X[:100], y[:100])
    y_pred = crf.predict(X[:100])
    assert scorers.flat_accuracy(crf, X[:100], y[:100]) == metrics.flat_accuracy_score(
        y[:100], y_pred)
    assert scorers.sequence_accuracy(crf, X[:100], y[:100]) == \
        metrics.sequence_accuracy_score(y[:100], y_pred)


# sklearn-crfsuite's tutorial (docs/CoNLL2002.ipynb), as a script: its code cells in
# order, verbatim but for the imports (what migrating changes) and the notebook's own
# lines (%matplotlib, %%time, and the plot of rs.grid_scores_, which scikit-learn
# removed in 0.20). nltk is a stand-in serving a small corpus (tests/_nltk_conll2002.py).
TUTORIAL = r'''
from itertools import chain

from tests._nltk_conll2002 import nltk
import sklearn
import scipy.stats
from sklearn.metrics import make_scorer
from sklearn.model_selection import cross_val_score
from sklearn.model_selection import RandomizedSearchCV

import skcrf.compat as sklearn_crfsuite
from skcrf.compat import scorers
from skcrf.compat import metrics

nltk.corpus.conll2002.fileids()

train_sents = list(nltk.corpus.conll2002.iob_sents('esp.train'))
test_sents = list(nltk.corpus.conll2002.iob_sents('esp.testb'))

train_sents[0]

def word2features(sent, i):
    word = sent[i][0]
    postag = sent[i][1]

    features = {
        'bias': 1.0,
        'word.lower()': word.lower(),
        'word[-3:]': word[-3:],
        'word[-2:]': word[-2:],
        'word.isupper()': word.isupper(),
        'word.istitle()': word.istitle(),
        'word.isdigit()': word.isdigit(),
        'postag': postag,
        'postag[:2]': postag[:2],
    }
    if i > 0:
        word1 = sent[i-1][0]
        postag1 = sent[i-1][1]
        features.update({
            '-1:word.lower()': word1.lower(),
            '-1:word.istitle()': word1.istitle(),
            '-1:word.isupper()': word1.isupper(),
            '-1:postag': postag1,
            '-1:postag[:2]': postag1[:2],
        })
    else:
        features['BOS'] = True

    if i < len(sent)-1:
        word1 = sent[i+1][0]
        postag1 = sent[i+1][1]
        features.update({
            '+1:word.lower()': word1.lower(),
            '+1:word.istitle()': word1.istitle(),
            '+1:word.isupper()': word1.isupper(),
            '+1:postag': postag1,
            '+1:postag[:2]': postag1[:2],
        })
    else:
        features['EOS'] = True

    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]

def sent2labels(sent):
    return [label for token, postag, label in sent]

def sent2tokens(sent):
    return [token for token, postag, label in sent]

sent2features(train_sents[0])[0]

X_train = [sent2features(s) for s in train_sents]
y_train = [sent2labels(s) for s in train_sents]

X_test = [sent2features(s) for s in test_sents]
y_test = [sent2labels(s) for s in test_sents]

crf = sklearn_crfsuite.CRF(
    algorithm='lbfgs',
    c1=0.1,
    c2=0.1,
    max_iterations=100,
    all_possible_transitions=True
)
crf.fit(X_train, y_train)

labels = list(crf.classes_)
labels.remove('O')
labels

y_pred = crf.predict(X_test)
metrics.flat_f1_score(y_test, y_pred,
                      average='weighted', labels=labels)

# group B and I results
sorted_labels = sorted(
    labels,
    key=lambda name: (name[1:], name[0])
)
print(metrics.flat_classification_report(
    y_test, y_pred, labels=sorted_labels, digits=3
))

# define fixed parameters and parameters to search
crf = sklearn_crfsuite.CRF(
    algorithm='lbfgs',
    max_iterations=100,
    all_possible_transitions=True
)
params_space = {
    'c1': scipy.stats.expon(scale=0.5),
    'c2': scipy.stats.expon(scale=0.05),
}

# use the same metric for evaluation
f1_scorer = make_scorer(metrics.flat_f1_score,
                        average='weighted', labels=labels)

# search
rs = RandomizedSearchCV(crf, params_space,
                        cv=3,
                        verbose=1,
                        n_jobs=-1,
                        n_iter=50,
                        scoring=f1_scorer)
rs.fit(X_train, y_train)

# crf = rs.best_estimator_
print('best params:', rs.best_params_)
print('best CV score:', rs.best_score_)
print('model size: {:0.2f}M'.format(rs.best_estimator_.size_ / 1000000))

crf = rs.best_estimator_
y_pred = crf.predict(X_test)
print(metrics.flat_classification_report(
    y_test, y_pred, labels=sorted_labels, digits=3
))

from collections import Counter

def print_transitions(trans_features):
    for (label_from, label_to), weight in trans_features:
        print("%-6s -> %-7s %0.6f" % (label_from, label_to, weight))

print("Top likely transitions:")
print_transitions(Counter(crf.transition_features_).most_common(20))

print("\nTop unlikely transitions:")
print_transitions(Counter(crf.transition_features_).most_common()[-20:])

def print_state_features(state_features):
    for (attr, label), weight in state_features:
        print("%0.6f %-8s %s" % (weight, label, attr))

print("Top positive:")
print_state_features(Counter(crf.state_features_).most_common(30))

print("\nTop negative:")
print_state_features(Counter(crf.state_features_).most_common()[-30:])
'''


@pytest.mark.corpus_or_sample
def test_the_sklearn_crfsuite_tutorial_runs_once_its_imports_change(capsys):
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # silent, as with CRFsuite
        exec(compile(TUTORIAL, "sklearn-crfsuite tutorial", "exec"), namespace)
    out = capsys.readouterr().out
    search = namespace["rs"]
    assert set(search.best_params_) == {"c1", "c2"} and 0 < search.best_score_ <= 1
    assert "best params:" in out and "model size: " in out
    assert "Top likely transitions:" in out and "Top negative:" in out
    assert all(label in out for label in namespace["sorted_labels"])
    assert isinstance(namespace["crf"], sklearn_crfsuite.CRF)


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
    classifier, _ = crf._classifier()
    assert classifier.solver == solver
    for name, value in expected.items():
        assert classifier.get_params()[name] == value, name


def test_crfsuite_only_options_reach_the_solver():
    """calibration_*, pa_type, error_sensitive, variance and epsilon: the solver reads them
    (given as settings of the fit, as compat.CRF.fit gives them)."""
    from skcrf._estimators.online import online_options

    def options_of(crf):
        classifier, online = crf._classifier()
        return online_options(classifier, {"online": online})

    options = options_of(sklearn_crfsuite.CRF(
        algorithm="l2sgd", calibration_eta=0.2, calibration_rate=3.0, calibration_samples=50,
        calibration_candidates=4, calibration_max_trials=6))
    calibration = options.calibration
    assert (calibration.eta, calibration.rate, calibration.samples, calibration.candidates,
            calibration.max_trials) == (0.2, 3.0, 50, 4, 6)
    options = options_of(sklearn_crfsuite.CRF(
        algorithm="pa", pa_type=2, error_sensitive=False, epsilon=0.5))
    assert (options.pa_type, options.error_sensitive, options.epsilon) == (2, False, 0.5)
    assert options_of(sklearn_crfsuite.CRF(algorithm="arow", variance=3.0)).variance == 3.0
    # without the fit's settings, CRFsuite's options are not there
    assert online_options(sklearn_crfsuite.CRF(algorithm="arow", variance=3.0)._classifier()[0]
                          ).variance == 1.0


def test_a_plain_fit_during_or_beside_a_compat_fit_is_unaffected(corpus, monkeypatch):
    """compat.CRF's settings are an argument of its fit, not ambient state: a plain
    CRFClassifier fitted in the middle of a compat fit (same thread) or beside it (other
    threads) trains with its start and end weights and its own options, as alone."""
    X, y, _, _ = corpus
    X, y = X[:150], y[:150]

    def plain():
        return CRFClassifier(solver="arow", max_iter=3, random_state=0).fit(X, y)

    def compat():
        return sklearn_crfsuite.CRF(algorithm="arow", variance=3.0, max_iterations=3).fit(X, y)

    alone = plain()
    assert np.any(alone.start_coef_) and np.any(alone.end_coef_)
    nested = []
    training_problem = CRFClassifier._training_problem

    def nesting_training_problem(self, data):
        if data.settings and not nested:  # the compat fit, under way
            nested.append(plain())
        return training_problem(self, data)

    monkeypatch.setattr(CRFClassifier, "_training_problem", nesting_training_problem)
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(compat), pool.submit(plain), pool.submit(plain)]
        crf, *beside = [future.result(timeout=600) for future in futures]
    assert len(nested) == 1
    for model in nested + beside:
        for name in ("coef_", "transition_coef_", "start_coef_", "end_coef_"):
            # sums in another order under concurrent BLAS at most; zeroed start and end
            # weights or CRFsuite's variance would be far off
            np.testing.assert_allclose(getattr(model, name), getattr(alone, name),
                                       rtol=1e-7, atol=1e-9)
        assert model.get_params() == alone.get_params()
    # the compat fit had its settings, and kept nothing of them
    assert not np.any(crf.estimator_.start_coef_) and not np.any(crf.estimator_.end_coef_)
    assert crf.estimator_.get_params() == crf._classifier()[0].get_params()
    assert not [name for name in vars(crf.estimator_) if "setting" in name]


def test_fit_settings_are_checked_and_stay_off_the_model(corpus, tmp_path):
    """A misspelt setting is refused; a model fitted with settings saves and loads as
    any other (no setting in its file), and refits without them."""
    X, y, _, _ = corpus
    from skcrf import SequenceVectorizer

    matrix = SequenceVectorizer(separator=":").fit_transform(X[:60])
    classifier = CRFClassifier(max_iter=5)
    with pytest.raises(TypeError, match="unknown fit settings \\['boundary_weight'\\]"):
        classifier._fit_with_settings(matrix, y[:60], settings={"boundary_weight": False})
    classifier._fit_with_settings(matrix, y[:60], settings={"boundary_weights": False})
    assert not np.any(classifier.start_coef_)
    save_model(classifier, tmp_path / "model.skcrf")
    loaded = load_model(tmp_path / "model.skcrf")
    np.testing.assert_array_equal(loaded.coef_, classifier.coef_)
    assert loaded.get_params() == CRFClassifier(max_iter=5).get_params()
    # a later plain fit of the same estimator has its start and end weights again
    assert np.any(classifier.fit(matrix, y[:60]).start_coef_)


@pytest.mark.parametrize("algorithm", ["l2sgd", "ap", "pa", "arow"])
def test_online_algorithms_train(algorithm, corpus):
    X, y, _, _ = corpus
    crf = sklearn_crfsuite.CRF(algorithm=algorithm, max_iterations=5,
                               all_possible_transitions=True).fit(X[:200], y[:200])
    assert crf.estimator_.n_iter_ <= 5
    assert metrics.flat_accuracy_score(y[:200], crf.predict(X[:200])) > 0.9
    assert crf.training_log_ is None
