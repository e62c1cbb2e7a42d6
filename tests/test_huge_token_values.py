"""One huge token feature value (1e16 to 1e20) leaves labelling probabilities exact
(issue 43, item 7): the n-best and labelling scores take each token's shift, as the
passes do, instead of summing the huge score with the small ones."""

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from skcrf import CRFClassifier

X = [[{"w": "Ada", "title": 1.0}, {"w": "Lovelace", "title": 1.0}, {"w": "wrote"}],
     [{"w": "in"}, {"w": "Paris", "title": 1.0}]] * 8
Y = [["PER", "PER", "O"], ["O", "LOC"]] * 8

MODELS = {"order 1": dict(order=1), "order 2": dict(order=2),
          "order 2, pruned": dict(order=2, prune_threshold=0.01)}


def _fitted(params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return CRFClassifier(max_iter=30, **params).fit(X, Y)


def _sentence(value):
    return [[{"w": "Ada", "title": value}, {"w": "Lovelace"}, {"w": "wrote"}]]


def _brute_force_order1(model, sentence):
    """Every labelling's probability, exactly: a label of the huge token that is not its
    best scores ``-huge`` less, probability 0; the others are enumerated in small numbers."""
    features, _ = model._features(sentence)
    n_tokens = features.indptr.shape[0] - 1
    matrix = sp.csr_matrix((features.data, features.indices, features.indptr),
                           shape=(n_tokens, features.n_features))
    unary = np.asarray(matrix @ model.coef_.T)
    best = int(np.argmax(unary[0]))
    unary[0] = np.where(np.arange(unary.shape[1]) == best, 0.0, -np.inf)
    n_classes = unary.shape[1]
    scores = {}
    for labels in itertools.product(range(n_classes), repeat=unary.shape[0]):
        score = model.start_coef_[labels[0]] + model.end_coef_[labels[-1]]
        score += sum(unary[t, label] for t, label in enumerate(labels))
        score += sum(model.transition_coef_[a, b] for a, b in zip(labels[:-1], labels[1:]))
        scores[labels] = score
    finite = np.array([s for s in scores.values() if np.isfinite(s)])
    log_z = np.log(np.exp(finite - finite.max()).sum()) + finite.max()
    return {tuple(model.classes_[list(k)]): float(np.exp(s - log_z))
            for k, s in scores.items()}


@pytest.mark.parametrize("value", [1e16, 1e18, 1e20])
def test_order1_nbest_and_return_proba_equal_brute_force(value):
    model = _fitted(MODELS["order 1"])
    sentence = _sentence(value)
    truth = _brute_force_order1(model, sentence)
    nbest = model.predict_nbest(sentence, n=4)[0]
    expected = sorted(truth.values(), reverse=True)[:4]
    np.testing.assert_allclose([p for _, p in nbest], expected, rtol=1e-9)
    for labels, probability in nbest:
        np.testing.assert_allclose(probability, truth[tuple(labels)], rtol=1e-9)
    labels, proba = model.predict(sentence, return_proba=True)
    np.testing.assert_allclose(proba[0], truth[tuple(labels[0])], rtol=1e-9)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("value", [1e16, 1e20])
def test_probabilities_are_those_of_a_moderate_deciding_value(name, value):
    """At 1e3 the huge token's best label is as certain (the others have probability
    below 1e-100) and every score is exact: the same n-best and probabilities."""
    model = _fitted(MODELS[name])
    moderate = model.predict_nbest(_sentence(1e3), n=4)[0]
    huge = model.predict_nbest(_sentence(value), n=4)[0]
    assert [list(a) for a, _ in huge] == [list(a) for a, _ in moderate]
    np.testing.assert_allclose([p for _, p in huge], [p for _, p in moderate], rtol=1e-9)
    assert sum(p for _, p in huge) <= 1.0 + 1e-9
    labels, proba = model.predict(_sentence(value), return_proba=True)
    assert list(labels[0]) == list(huge[0][0])
    np.testing.assert_allclose(proba[0], huge[0][1], rtol=1e-9)
    log_proba = model.sequence_log_proba(_sentence(value), [list(huge[1][0])])
    np.testing.assert_allclose(np.exp(log_proba[0]), huge[1][1], rtol=1e-9)
