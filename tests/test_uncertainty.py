"""uncertainty_scores against enumeration of every labelling of short sequences."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SemiMarkovCRF
from skcrf.features import SequenceVectorizer
from skcrf.uncertainty import UNCERTAINTY_SCORES, uncertainty_scores
from tests.test_spans import _corpus, _test_sequences

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _enumerated_scores(model, x, exact_entropy):
    classes = model.classes_
    labellings = [list(t) for t in itertools.product(classes.tolist(), repeat=len(x))]
    log_p = model.sequence_log_proba([x] * len(labellings), labellings)
    assert np.isclose(logsumexp(log_p), 0.0, atol=1e-9)
    p = np.exp(log_p)
    ranked = np.sort(p)[::-1]
    index = {c: k for k, c in enumerate(classes.tolist())}
    marginals = np.zeros((len(x), len(classes)))
    for labels, prob in zip(labellings, p):
        marginals[np.arange(len(x)), [index[c] for c in labels]] += prob
    best = [index[c] for c in labellings[int(np.argmax(p))]]
    with np.errstate(divide="ignore", invalid="ignore"):
        token_entropy = -np.where(marginals > 0, marginals * np.log(marginals), 0).sum(1)
        entropy = -np.sum(np.where(p > 0, p * np.log(p), 0))
    return {"least_confidence": 1 - ranked[0],
            "margin": ranked[0] - (ranked[1] if len(ranked) > 1 else 0.0),
            "token_entropy_sum": token_entropy.sum(),
            "token_entropy_mean": token_entropy.mean(),
            "expected_errors": np.sum(1 - marginals[np.arange(len(x)), best]),
            "sequence_entropy": entropy if exact_entropy else np.nan}


@pytest.mark.parametrize("make", [
    lambda: CRFClassifier(alpha=2.0, max_iter=15),
    lambda: CRFClassifier(alpha=2.0, max_iter=15, transition_features="all"),
    lambda: CRFClassifier(alpha=2.0, max_iter=15, order=2),
    lambda: SemiMarkovCRF(alpha=2.0, max_iter=15)], ids=["order1", "edges", "order2", "semi"])
def test_scores_are_those_of_the_enumerated_distribution(make):
    X, y = _corpus("IOB2")
    model = make().fit(X, y)
    X_test = _test_sequences(lengths=(1, 2, 3, 4))
    scores = uncertainty_scores(model, X_test)
    assert list(scores) == list(UNCERTAINTY_SCORES)
    exact = isinstance(model, CRFClassifier) and model.order == 1
    for q, x in enumerate(X_test):
        expected = _enumerated_scores(model, x, exact)
        for name in UNCERTAINTY_SCORES:
            np.testing.assert_allclose(scores[name][q], expected[name], rtol=0, atol=1e-9,
                                       err_msg=f"{name} of sequence {q}")


def test_pipelines_and_empty_sequences():
    X, y = _corpus("IOB2")
    pipe = make_pipeline(SequenceVectorizer(), CRFClassifier(alpha=2.0, max_iter=15)).fit(X, y)
    scores = uncertainty_scores(pipe, [[], X[0]])
    assert scores["least_confidence"][0] == 0 and scores["margin"][0] == 1
    assert scores["sequence_entropy"][0] == 0 and scores["token_entropy_mean"][0] == 0
    assert scores["least_confidence"][1] > 0
    with pytest.raises(TypeError, match="needs a fitted CRF estimator"):
        uncertainty_scores(SequenceVectorizer(), X)


def test_chosen_scores_and_entropy_in_several_token_chunks(monkeypatch):
    import skcrf.uncertainty as uncertainty

    X, y = _corpus("IOB2")
    crf = CRFClassifier(alpha=2.0, max_iter=15).fit(X, y)
    whole = uncertainty_scores(crf, X)
    monkeypatch.setattr(uncertainty, "_PAIR_TOKENS", 7)  # a few sequences per step
    chunked = uncertainty_scores(crf, X, scores=["sequence_entropy", "margin"])
    assert list(chunked) == ["margin", "sequence_entropy"]
    np.testing.assert_allclose(chunked["sequence_entropy"], whole["sequence_entropy"],
                               rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="scores must be a list of names"):
        uncertainty_scores(crf, X, scores=["entropy"])
