"""One huge token feature value (1e16 to 1e20) leaves labelling probabilities exact
(issue 43, item 7): the n-best and labelling scores take each token's shift, as the
passes do, instead of summing the huge score with the small ones. Orders 1 and 2 and
the pruned lattice are compared with enumeration of every labelling."""

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from skcrf import CRFClassifier
from tests import naive, naive_patterns

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


def _longer_sentence(value):
    """Five tokens: the pruner of ``MODELS`` leaves labels out after the huge token too."""
    return [[{"w": "Ada", "title": value}, {"w": "Lovelace", "title": 1.0}, {"w": "wrote"},
             {"w": "in"}, {"w": "Paris", "title": 1.0}]]


def _unary(coef, features):
    """Each token's unary scores, the huge token's exactly: 0 for its best label, ``-inf``
    (a score ``huge`` less: probability 0 in float64) for the others."""
    n_tokens = features.indptr.shape[0] - 1
    matrix = sp.csr_matrix((features.data, features.indices, features.indptr),
                           shape=(n_tokens, features.n_features))
    unary = np.asarray(matrix @ coef.T)
    best = int(np.argmax(unary[0]))
    unary[0] = np.where(np.arange(unary.shape[1]) == best, 0.0, -np.inf)
    return unary


def _scores(unary, transitions, start, end, table=None):
    """Every labelling's log score: an order-1 chain, or with ``table`` (label patterns of
    :func:`tests.naive_patterns.pattern_table`) an order-2 one."""
    n_tokens, n_classes = unary.shape
    labellings = itertools.product(range(n_classes), repeat=n_tokens)
    if table is not None:
        return {labels: naive_patterns.path_score(unary, transitions, table, start, end,
                                                  labels) for labels in labellings}
    return {labels: naive.path_score(unary, transitions, start, end, labels)
            for labels in labellings}


def _probabilities(model, scores):
    finite = np.array([s for s in scores.values() if np.isfinite(s)])
    log_z = np.log(np.exp(finite - finite.max()).sum()) + finite.max()
    return {tuple(model.classes_[list(k)]): float(np.exp(s - log_z))
            for k, s in scores.items()}


def _pruned(model, features):
    """The labels the pruner leaves out (True), by enumeration of the order-1 pruner: below
    the threshold, except its best labelling's (:func:`skcrf._estimators.pruning.prune_unary`)."""
    unary = _unary(model.pruner_coef_, features)
    scores = _scores(unary, model.pruner_transition_coef_, model.pruner_start_coef_,
                     model.pruner_end_coef_)
    finite = np.array([s for s in scores.values() if np.isfinite(s)])
    log_z = np.log(np.exp(finite - finite.max()).sum()) + finite.max()
    marginals = np.zeros(unary.shape)
    for labels, score in scores.items():
        marginals[np.arange(len(labels)), labels] += np.exp(score - log_z)
    best = max(scores, key=scores.get)
    pruned = marginals < model.pruner_threshold_
    pruned[np.arange(len(best)), best] = False
    return pruned


def _brute_force(model, sentence):
    """Every labelling's probability, exactly: a label of the huge token that is not its
    best scores ``-huge`` less, probability 0; the others are enumerated in small numbers.
    An order-2 model adds its label patterns; a pruned one leaves out, with probability 0,
    the labellings through a label its pruner prunes."""
    features, _ = model._features(sentence)
    unary = _unary(model.coef_, features)
    table = None
    if "label_patterns_" in vars(model):
        table = naive_patterns.pattern_table(model.label_patterns_, model.pattern_coef_)
    if "pruner_threshold_" in vars(model):
        unary[_pruned(model, features)] = -np.inf
    return _probabilities(model, _scores(unary, model.transition_coef_, model.start_coef_,
                                         model.end_coef_, table))


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("value", [1e16, 1e18, 1e20])
def test_nbest_return_proba_and_log_proba_equal_brute_force(name, value):
    model = _fitted(MODELS[name])
    sentence = _longer_sentence(value)
    truth = _brute_force(model, sentence)
    assert "label_patterns_" in vars(model) or name == "order 1"
    if "pruner_threshold_" in vars(model):  # the lattice is not every labelling
        assert _pruned(model, model._features(sentence)[0])[1:].any()
    nbest = model.predict_nbest(sentence, n=4)[0]
    possible = sorted((p for p in truth.values() if p > 0), reverse=True)
    expected = possible[:4]
    np.testing.assert_allclose([p for _, p in nbest], expected, rtol=1e-9)
    for labels, probability in nbest:
        np.testing.assert_allclose(probability, truth[tuple(labels)], rtol=1e-9)
    labels, proba = model.predict(sentence, return_proba=True)
    np.testing.assert_allclose(proba[0], truth[tuple(labels[0])], rtol=1e-9)
    for labels, _ in nbest[1:]:
        log_proba = model.sequence_log_proba(sentence, [list(labels)])
        np.testing.assert_allclose(np.exp(log_proba[0]), truth[tuple(labels)], rtol=1e-9)
    marginals = model.predict_marginals(sentence)[0]
    expected = np.zeros(marginals.shape)
    index = {c: k for k, c in enumerate(model.classes_.tolist())}
    for labels, probability in truth.items():
        expected[np.arange(len(labels)), [index[c] for c in labels]] += probability
    np.testing.assert_allclose(marginals, expected, rtol=1e-9, atol=1e-12)


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
