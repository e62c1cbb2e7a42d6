"""predict_spans and predict_span_proba against enumeration of every labelling.

The oracle sums ``p(y | x)`` over every tag sequence of a short sequence whose
spans (as :func:`skcrf.tags.tags_to_segments` reads them) include the asked
span; for the chain ``p(y | x)`` is ``sequence_log_proba`` (itself checked
against enumeration in test_queries), for the semi-Markov model the score of
each labelled segmentation from the coefficients (tests/naive_semimarkov.py).
The models are trained little, with no tag constraints, so that malformed tag
sequences (an ``I-`` after ``O``) carry probability and the span-opening and
closing rules are all exercised.
"""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from skcrf import CRFClassifier, SemiMarkovCRF
from skcrf.tags import segments_to_tags, tags_to_segments
from tests.naive_semimarkov import labelled_segmentations, segmentation_score

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

WORDS = {"PER": ["ada", "bob"], "LOC": ["rome"], "O": ["the", "in"]}


def _corpus(scheme, n_sequences=40, seed=0):
    rng = np.random.default_rng(seed)
    X, y = [], []
    while len(X) < n_sequences:
        segments, n = [], 0
        for _ in range(rng.integers(1, 5)):
            kind = str(rng.choice(["O", "PER", "LOC"]))
            size = int(rng.integers(1, 3)) if kind == "PER" else 1
            segments.append((n, n + size, kind))
            n += size
        tokens = [{"w": str(rng.choice(WORDS[label] if rng.random() < 0.7
                                       else sum(WORDS.values(), [])))}
                  for a, b, label in segments for _ in range(b - a)]
        X.append(tokens)
        y.append(segments_to_tags([s for s in segments if s[2] != "O"], n, scheme))
    return X, y


def _test_sequences(seed=1, lengths=(1, 2, 3, 4, 3)):
    rng = np.random.default_rng(seed)
    words = sum(WORDS.values(), [])
    return [[{"w": str(rng.choice(words))} for _ in range(n)] for n in lengths]


def _chain_enumeration(crf, x, scheme):
    """Every tag sequence of ``x`` with its probability and the spans it reads as."""
    classes = crf.classes_.tolist()
    labellings = list(itertools.product(classes, repeat=len(x)))
    log_p = crf.sequence_log_proba([x] * len(labellings), [list(t) for t in labellings])
    assert np.isclose(logsumexp(log_p), 0.0, atol=1e-9)
    return [(set(tags_to_segments(list(t), scheme)), p) for t, p in zip(labellings,
                                                                         np.exp(log_p))]


def _span_oracle(enumerated, span):
    return sum(p for spans, p in enumerated if span in spans)


def _every_span(n, labels):
    return [(a, b, label) for a in range(n) for b in range(a + 1, n + 1) for label in labels]


CHAIN_CASES = [("IOB2", {}), ("IOB1", {}), ("IOE2", {}), ("BIOES", {}),
               ("IOB2", {"order": 2}), ("IOB2", {"transition_features": "all"}),
               ("IOB2", {"allowed_transitions": "IOB2"})]


@pytest.fixture(scope="module", params=range(len(CHAIN_CASES)),
                ids=[f"{s}-{o}" for s, o in CHAIN_CASES])
def chain(request):
    scheme, options = CHAIN_CASES[request.param]
    X, y = _corpus(scheme)
    return scheme, CRFClassifier(alpha=2.0, max_iter=15, **options).fit(X, y)


def test_chain_span_probabilities_are_the_enumerated_marginals(chain):
    scheme, crf = chain
    X = _test_sequences()
    asked = [_every_span(len(x), ["PER", "LOC"]) for x in X]
    proba = crf.predict_span_proba(X, asked)
    for x, spans, probabilities in zip(X, asked, proba):
        enumerated = _chain_enumeration(crf, x, scheme)
        expected = [_span_oracle(enumerated, span) for span in spans]
        np.testing.assert_allclose(probabilities, expected, rtol=0, atol=1e-9)


def test_chain_predicted_spans_are_those_of_predict(chain):
    scheme, crf = chain
    X = _test_sequences(seed=2, lengths=(0, 1, 3, 4, 5, 2))
    spans = crf.predict_spans(X, return_proba=True)
    for tags, found in zip(crf.predict(X), spans):
        assert [s[:3] for s in found] == [tuple(s) for s in tags_to_segments(list(tags),
                                                                               scheme)]
        assert all(0.0 < s[3] <= 1.0 for s in found)
    assert [[s[:3] for s in f] for f in spans] == crf.predict_spans(X)
    np.testing.assert_allclose(sum(crf.predict_span_proba(X, spans), []),
                               [s[3] for f in spans for s in f], rtol=0, atol=0)


def _semi_markov_enumeration(crf, x):
    dense = crf.vectorizer_.transform([x]).matrix.toarray()
    state, first, last = (dense @ coef.T for coef in (crf.coef_, crf.first_coef_,
                                                      crf.last_coef_))
    labels = crf.segment_classes_.tolist()
    scored = []
    with np.errstate(invalid="ignore"):
        for segments in labelled_segmentations(len(x), len(labels), crf.length_coef_.shape[1]):
            s = segmentation_score(state, first, last, crf.length_coef_, crf.transition_coef_,
                                   crf.start_coef_, crf.end_coef_, segments)
            if s > -np.inf:
                scored.append(({(a, b, labels[y]) for a, b, y in segments}, s))
    log_z = logsumexp([s for _, s in scored])
    return [(spans, np.exp(s - log_z)) for spans, s in scored]


@pytest.mark.parametrize("scheme", ["IOB2", "BIOES"])
def test_semi_markov_span_probabilities_are_the_enumerated_marginals(scheme):
    X, y = _corpus(scheme)
    crf = SemiMarkovCRF(scheme=scheme, alpha=2.0, max_iter=15).fit(X, y)
    X_test = _test_sequences()
    asked = [_every_span(len(x), ["PER", "LOC"]) for x in X_test]
    proba = crf.predict_span_proba(X_test, asked)
    for x, spans, probabilities in zip(X_test, asked, proba):
        enumerated = _semi_markov_enumeration(crf, x)
        expected = [_span_oracle(enumerated, span) for span in spans]
        np.testing.assert_allclose(probabilities, expected, rtol=0, atol=1e-9)
    found = crf.predict_spans(X_test, return_proba=True)
    assert [[s[:3] for s in f] for f in found] == [
        [tuple(s) for s in segments] for segments in crf.predict_segments(X_test)]


def test_bad_spans_name_what_is_wrong(chain):
    _, crf = chain
    X = _test_sequences(lengths=(2, 3))
    with pytest.raises(ValueError, match="2 entries but X has 3|X has 2 sequences"):
        crf.predict_span_proba(X, [[], [], []])
    with pytest.raises(ValueError, match=r"spans\[1\]\[0\].*sequence 1, which has 3 tokens"):
        crf.predict_span_proba(X, [[], [(2, 4, "PER")]])
    with pytest.raises(ValueError, match="'ORG' is not a span label"):
        crf.predict_span_proba(X, [[(0, 1, "ORG")], []])
    with pytest.raises(TypeError, match="integers"):
        crf.predict_span_proba(X, [[(0.0, 1, "PER")], []])


def test_huge_weights_stay_exact():
    # scores hundreds of nats apart: the scaled backward sums underflow and the
    # events they touch go through the exact log-space passes
    from skcrf._calibration import scaled_model

    X, y = _corpus("IOB2")
    crf = scaled_model(CRFClassifier(alpha=2.0, max_iter=15).fit(X, y), 400.0)
    X_test = _test_sequences(lengths=(3, 4))
    asked = [_every_span(len(x), ["PER", "LOC"]) for x in X_test]
    for x, spans, probabilities in zip(X_test, asked, crf.predict_span_proba(X_test, asked)):
        enumerated = _chain_enumeration(crf, x, "IOB2")
        expected = [_span_oracle(enumerated, span) for span in spans]
        np.testing.assert_allclose(probabilities, expected, rtol=0, atol=1e-9)
