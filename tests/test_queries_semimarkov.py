"""SemiMarkovCRF's queries against enumeration of every labelled segmentation of small sequences.

The oracle scores segmentations from the fitted coefficients
(``tests/naive_semimarkov.py``) and writes them as tags with
:func:`skcrf.tags.segments_to_tags`; a tag sequence no segmentation writes has
probability 0. Every tagging scheme, since fixed tags constrain segmentations
differently in each.
"""

import itertools
import pickle

import numpy as np
import pytest
from scipy.special import logsumexp

from skcrf import SemiMarkovCRF
from skcrf.tags import segments_to_tags, tags_to_segments
from tests.naive_semimarkov import labelled_segmentations, segmentation_score
from tests.test_queries import assert_no_labelling_fits

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

SCHEMES = ["IOB2", "IOB1", "IOE2", "IOE1", "BIOES", "BILOU", "plain"]
WORDS = {"X": ["ada", "bob"], "Y": ["rome"], "O": ["the", "in"]}


def _segments(rng):
    """Segments of one sequence: O tokens, X spans of 1-2 tokens (sometimes adjacent), Y tokens."""
    segments, n = [], 0
    for _ in range(rng.integers(1, 5)):
        kind = rng.choice(["O", "X", "Y"])
        size = int(rng.integers(1, 3)) if kind == "X" else 1
        segments.append((n, n + size, str(kind)))
        n += size
    return segments, n


def _tags(segments, n, scheme):
    if scheme == "plain":
        tags = ["O"] * n
        for a, b, label in segments:
            tags[a:b] = [label] * (b - a)
        return tags
    return segments_to_tags([s for s in segments if s[2] != "O"], n, scheme)


def _corpus(scheme, n_sequences=60, seed=0):
    rng = np.random.default_rng(seed)
    X, y = [], []
    while len(X) < n_sequences:
        segments, n = _segments(rng)
        if scheme == "plain" and any(s[2] == t[2] and s[1] == t[0]
                                     for s, t in zip(segments, segments[1:])):
            continue  # plain labels cannot show two adjacent segments of one label
        tokens = []
        for a, b, label in segments:
            for _ in range(b - a):
                word = rng.choice(WORDS[label] if rng.random() < 0.8 else sum(WORDS.values(),
                                                                               []))
                tokens.append({"w": str(word), "noise": float(rng.normal())})
        X.append(tokens)
        y.append(_tags(segments, n, scheme))
    return X, y


@pytest.fixture(scope="module", params=SCHEMES)
def fitted(request):
    X, y = _corpus(request.param)
    return SemiMarkovCRF(scheme=request.param, alpha=0.5, max_iter=40).fit(X, y)


def _test_sequences(seed=1):
    rng = np.random.default_rng(seed)
    words = sum(WORDS.values(), [])
    return [[{"w": str(rng.choice(words)), "noise": float(rng.normal())} for _ in range(n)]
            for n in [0, 1, 2, 3, 3, 2, 3]]


def _enumeration(crf, x):
    """Every tag sequence some segmentation of ``x`` writes, with its log probability."""
    if not x:
        return {(): 0.0}
    dense = crf.vectorizer_.transform([x]).matrix.toarray()
    state, first, last = (dense @ coef.T for coef in (crf.coef_, crf.first_coef_,
                                                      crf.last_coef_))
    labels = crf.segment_classes_.tolist()
    scored = {}
    with np.errstate(invalid="ignore"):
        for segments in labelled_segmentations(len(x), len(labels), crf.length_coef_.shape[1]):
            s = segmentation_score(state, first, last, crf.length_coef_, crf.transition_coef_,
                                   crf.start_coef_, crf.end_coef_, segments)
            if s > -np.inf:
                named = [(a, b, labels[y]) for a, b, y in segments]
                tags = tuple(_tags(named, len(x), crf.scheme_))
                assert tags not in scored, "two segmentations write the same tags"
                scored[tags] = s
    log_z = logsumexp(list(scored.values()))
    return {tags: s - log_z for tags, s in scored.items()}


def test_sequence_log_proba_is_the_probability_of_the_segmentation_the_tags_write(fitted):
    for x in _test_sequences():
        log_p = _enumeration(fitted, x)
        every = list(itertools.product(fitted.classes_.tolist(), repeat=len(x)))
        got = fitted.sequence_log_proba([x] * len(every), [list(t) for t in every])
        expected = [log_p.get(tags, -np.inf) for tags in every]
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(np.exp(got).sum(), 1.0, rtol=1e-9)


def test_nbest_is_the_ranked_enumeration_and_starts_with_predict(fitted):
    X = _test_sequences()
    predicted, proba = fitted.predict(X, return_proba=True)
    # 10**8: bounded by the tag sequences that exist (issue 32, item 8)
    for n in (1, 3, 500, 10**8):
        nbest = fitted.predict_nbest(X, n=n)
        for q, x in enumerate(X):
            ranked = sorted(((v, t) for t, v in _enumeration(fitted, x).items()),
                            reverse=True)[:n]
            assert [tuple(tags.tolist()) for tags, _ in nbest[q]] == [t for _, t in ranked]
            np.testing.assert_allclose([p for _, p in nbest[q]], np.exp([v for v, _ in ranked]),
                                       rtol=1e-9)
            np.testing.assert_array_equal(nbest[q][0][0], predicted[q])
            np.testing.assert_allclose(nbest[q][0][1], proba[q], rtol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_fixed_tags_give_the_conditional_argmax_and_marginals(fitted, seed):
    rng = np.random.default_rng(seed)
    classes = fitted.classes_.tolist()
    for x in _test_sequences(seed):
        fixed = [str(rng.choice(classes)) if rng.random() < 0.4 else None for _ in x]
        log_p = _enumeration(fitted, x)
        kept = {t: v for t, v in log_p.items()
                if all(f is None or f == tag for f, tag in zip(fixed, t))}
        if not kept:
            assert_no_labelling_fits(fitted, x, fixed)
            continue
        total = logsumexp(list(kept.values()))
        best = max(kept, key=kept.get)
        predicted, proba = fitted.predict([x], fixed=[fixed], return_proba=True)
        assert tuple(predicted[0].tolist()) == best
        np.testing.assert_allclose(proba[0], np.exp(kept[best] - total), rtol=1e-9)
        expected = np.zeros((len(x), len(classes)))
        for tags, v in kept.items():
            for t, tag in enumerate(tags):
                expected[t, classes.index(tag)] += np.exp(v - total)
        np.testing.assert_allclose(fitted.predict_marginals([x], fixed=[fixed])[0], expected,
                                   atol=1e-9)
        ranked = sorted(kept.items(), key=lambda item: -item[1])[:3]
        nbest = fitted.predict_nbest([x], n=3, fixed=[fixed])[0]
        assert [tuple(tags.tolist()) for tags, _ in nbest] == [t for t, _ in ranked]


def _label_pairs(tags):
    """The (previous, next) labels of consecutive segments of IOB2 tags, O tokens included."""
    segments = tags_to_segments(tags)
    covered = {t for a, b, _ in segments for t in range(a, b)}
    units = sorted(list(segments) + [(t, t + 1, "O") for t in range(len(tags))
                                     if t not in covered])
    return {(s[2], u[2]) for s, u in zip(units, units[1:])}


def test_allowed_segment_transitions_constrain_training_and_prediction():
    X, y = _corpus("IOB2")
    labels = ["O", "X", "Y"]
    every = {(a, b) for a in labels for b in labels}
    assert any(("O", "X") in _label_pairs(tags) for tags in y)
    with pytest.raises(ValueError, match=r"Sequence \d+: the segment 'X' at token \d+ follows "
                                         r"a segment 'O'"):
        SemiMarkovCRF(alpha=0.5, max_iter=5, allowed_transitions=every - {("O", "X")}).fit(X, y)

    keep = [q for q, tags in enumerate(y) if ("X", "Y") not in _label_pairs(tags)]
    X, y = [X[q] for q in keep], [y[q] for q in keep]
    crf = SemiMarkovCRF(alpha=0.5, max_iter=40,
                        allowed_transitions=every - {("X", "Y")}).fit(X, y)
    x_id, y_id = (crf.segment_classes_.tolist().index(k) for k in ("X", "Y"))
    assert crf.transition_coef_[x_id, y_id] == -np.inf
    assert not crf.allowed_transitions_[x_id, y_id] and crf.allowed_transitions_.sum() == 8
    seen = 0
    for labellings in crf.predict_nbest(_test_sequences(), n=50):
        for tags, p in labellings:
            assert ("X", "Y") not in _label_pairs(tags.tolist()) and p > 0
            seen += 1
    assert seen > 50
    with pytest.raises(ValueError, match="tag schemes do not apply"):
        SemiMarkovCRF(allowed_transitions="bio").fit(X, y)
    with pytest.raises(ValueError, match="names the label 'Z'"):
        SemiMarkovCRF(allowed_transitions={("X", "Z")}).fit(X, y)


def test_models_pickled_before_allowed_transitions_still_load():
    X, y = _corpus("IOB2", n_sequences=20)
    crf = SemiMarkovCRF(alpha=0.5, max_iter=5).fit(X, y)
    state = crf.__getstate__()
    del state["allowed_transitions"], state["allowed_transitions_"]
    old = SemiMarkovCRF.__new__(SemiMarkovCRF)
    old.__setstate__(state)
    restored = pickle.loads(pickle.dumps(old))
    assert restored.get_params()["allowed_transitions"] is None
    for a, b in zip(restored.predict_nbest(X, n=2), crf.predict_nbest(X, n=2)):
        assert [(t.tolist(), p) for t, p in a] == [(t.tolist(), p) for t, p in b]
