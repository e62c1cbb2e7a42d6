"""SemiMarkovCRF: tags <-> segments, training behaviour, bad input.

The estimator contract is checked for every estimator in test_estimator_contract.py.
"""

import numba
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline

from skcrf import SemiMarkovCRF, SequenceVectorizer
from skcrf._semimarkov import _SegmentTags
from skcrf.metrics import span_f1_scorer
from skcrf.structures.semimarkov.segment_scores import Segmentation
from skcrf.tags import segments_to_tags, tags_to_segments
from tests._threads import results_per_thread_count
from tests._toys import toy_fixtures
from tests.conftest import data_home

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _toy_corpus(n_sequences=60, seed=0):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        words, tags = [], []
        for _ in range(rng.integers(1, 4)):
            kind = rng.integers(3)
            filler = list(rng.choice(["the", "met", "in", "and"], size=rng.integers(0, 3)))
            words += filler
            tags += ["O"] * len(filler)
            if kind == 0:
                words += [rng.choice(["Ada", "Alan", "Grace"]), "Smith"]
                tags += ["B-PER", "I-PER"]
            elif kind == 1:
                words += ["Bank", "of", rng.choice(["Paris", "Rome"])]
                tags += ["B-ORG", "I-ORG", "I-ORG"]
            else:
                words += [rng.choice(["Paris", "Rome"])]
                tags += ["B-LOC"]
        X.append([{"w": w, "cap": w[0].isupper()} for w in words])
        y.append(tags)
    return X, y


toy, fitted = toy_fixtures(_toy_corpus, lambda: SemiMarkovCRF(alpha=0.1, max_iter=200))


# --- tags <-> segments -------------------------------------------------------------

def _round_trip(y, scheme):
    """Tags -> segment codes -> segmentation -> tags, through the estimator's codec."""
    lengths = np.array([len(tags) for tags in y])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    flat = [tag for tags in y for tag in tags]
    codec, codes = _SegmentTags.fit(flat, offsets, scheme)
    segmentation = Segmentation.of_codes(codes, offsets, len(codec.segment_classes))
    tags = codec.classes[codec.tag_ids(segmentation, offsets)]
    return codec, np.split(tags, offsets[1:-1]), segmentation, offsets


def _check_round_trip(y, scheme):
    codec, back, segmentation, offsets = _round_trip(y, scheme)
    predicted = codec.segments(segmentation, offsets)
    for tags, again, segments in zip(y, back, predicted, strict=True):
        expected = tags_to_segments(tags, scheme)
        assert segments == expected
        assert tags_to_segments(again, scheme) == expected
        if segments_to_tags(expected, len(tags), scheme) == list(tags):  # well formed
            assert again.tolist() == list(tags)


@pytest.mark.parametrize("corpus", ["conll2000", "conll2002", "sample"])
@pytest.mark.parametrize("scheme", ["IOB2", "IOE1", "BIOES"])
def test_round_trip_on_real_training_files(corpus, scheme):
    """The CoNLL files when the data home has them; the embedded sample's names always."""
    from skcrf.datasets import load_conll2000, load_conll2002, load_ud_sample
    from tests._corpora import name_tags

    if corpus == "sample":
        y = [name_tags(upos) for upos in load_ud_sample("train")[1]]
    else:
        loader = load_conll2000 if corpus == "conll2000" else load_conll2002
        _, y = loader("train", data_home=data_home())  # missing: skipped, saying so
    if scheme != "IOB2":  # re-encode the corpus's segments in the scheme
        y = [segments_to_tags(tags_to_segments(tags), len(tags), scheme) for tags in y]
    _check_round_trip(y, scheme)


def test_plain_labels_are_runs():
    y = [["N", "N", "V", "O", "O", "N"], ["V"], []]
    codec, back, segmentation, offsets = _round_trip(y, "plain")
    assert [t.tolist() for t in back] == [list(t) for t in y]
    assert codec.segments(segmentation, offsets)[0] == [(0, 2, "N"), (2, 3, "V"), (5, 6, "N")]


def test_malformed_tags_are_read_as_conlleval_reads_them():
    y = [["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"]]
    codec, back, _, _ = _round_trip(y, "IOB2")
    assert back[0].tolist() == ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "B-ORG"]
    assert codec.classes.tolist() == ["B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER",
                                      "O"]


# --- behaviour -----------------------------------------------------------------

def test_fit_learns_the_toy_task(fitted, toy):
    X, y = toy
    assert fitted.score(X, y) == 1.0
    assert fitted.scheme_ == "IOB2"
    assert fitted.segment_classes_.tolist() == ["LOC", "ORG", "PER", "O"]
    assert fitted.classes_.tolist() == ["B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER",
                                        "O"]
    assert fitted.max_segment_length_ == 3
    n_labels, n_features = 4, fitted.n_features_in_
    for coef in (fitted.coef_, fitted.first_coef_, fitted.last_coef_):
        assert coef.shape == (n_labels, n_features)
    assert fitted.length_coef_.shape == (n_labels, 3)
    # each label up to its longest training segment (LOC 1, ORG 3, PER 2 tokens);
    # "O" segments are single tokens
    assert np.isfinite(fitted.length_coef_).sum(axis=1).tolist() == [1, 3, 2, 1]
    assert fitted.transition_coef_.shape == (4, 4)
    assert fitted.n_iter_ == len(fitted.loss_curve_) > 0


def test_predict_segments_are_the_predicted_tags_segments(fitted, toy):
    X, _ = toy
    segments = fitted.predict_segments(X)
    for tags, segs in zip(fitted.predict(X), segments, strict=True):
        assert segs == tags_to_segments(tags, fitted.scheme_)
    assert segments[0] and all(isinstance(s.label, str) for s in segments[0])


def test_marginals_are_tag_probabilities(fitted, toy):
    X, y = toy
    marginals = fitted.predict_marginals(X)
    assert len(marginals) == len(X)
    for m, x, labels in zip(marginals, X, fitted.predict(X)):
        assert m.shape == (len(x), len(fitted.classes_))
        np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-9)
        assert (m >= 0).all()
        # a confident model puts most mass on the decoded tags
        assert (fitted.classes_[m.argmax(axis=1)] == labels).all()
    for a, b in zip(fitted.predict_proba(X), marginals):
        np.testing.assert_array_equal(a, b)


def test_marginals_match_enumeration_in_every_scheme(toy):
    X, y = toy
    X, y = X[:12], y[:12]
    for scheme in ("IOB1", "IOE1", "BIOES"):
        y_scheme = [segments_to_tags(tags_to_segments(t), len(t), scheme) for t in y]
        crf = SemiMarkovCRF(alpha=5.0, scheme=scheme, max_iter=5).fit(X, y_scheme)
        x = [X[0][:4]]
        got = crf.predict_marginals(x)[0]
        # enumerate tag sequences through segmentations of the fitted potentials
        features, offsets = crf._features(x)
        scores = crf._scores(features)
        from tests.naive_semimarkov import labelled_segmentations, segmentation_score

        n = offsets[-1]
        expected = np.zeros_like(got)
        total = 0.0
        codec = crf._codec()
        for segs in labelled_segmentations(n, len(crf.segment_classes_),
                                           crf.max_segment_length_):
            s = segmentation_score(scores.state, scores.first, scores.last, scores.length,
                                   scores.transitions, scores.start, scores.end, segs)
            if s == -np.inf:
                continue
            labels = np.concatenate([[y_] * (b - a) for a, b, y_ in segs])
            starts = np.zeros(n, dtype=bool)
            starts[[a for a, _, _ in segs]] = True
            tag_ids = codec.tag_ids(Segmentation(labels.astype(np.int64), starts), offsets)
            expected[np.arange(n), tag_ids] += np.exp(s)
            total += np.exp(s)
        np.testing.assert_allclose(got, expected / total, atol=1e-10)


def test_plain_integer_labels_make_runs(toy):
    X, _ = toy
    y = [[1 if x["cap"] else 0 for x in seq] for seq in X]
    crf = SemiMarkovCRF(alpha=0.1).fit(X, y)
    assert crf.scheme_ == "plain" and crf.classes_.tolist() == [0, 1]
    assert np.isneginf(np.diag(crf.transition_coef_)).all()
    assert crf.score(X, y) == 1.0
    segments = crf.predict_segments(X[:1])[0]
    assert all(a.stop <= b.start for a, b in zip(segments, segments[1:]))


def test_max_segment_length_caps_or_fails(toy):
    X, y = toy
    crf = SemiMarkovCRF(max_segment_length=4, max_iter=5).fit(X, y)
    assert crf.max_segment_length_ == 4 and crf.length_coef_.shape == (4, 4)
    with pytest.raises(ValueError, match=r"Sequence \d+ has a segment 'ORG' of 3 tokens "
                                         r"\(tokens \d+:\d+\), longer than "
                                         r"max_segment_length=2"):
        SemiMarkovCRF(max_segment_length=2).fit(X, y)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 threads")
def test_fit_bitwise_identical_for_thread_counts(toy):
    X, y = toy

    def fit():
        crf = SemiMarkovCRF(alpha=0.1, max_iter=20).fit(X, y)
        return crf.coef_, crf.length_coef_, crf.predict_marginals(X)[3]

    one, two = results_per_thread_count(fit)
    for a, b in zip(one, two):
        assert np.array_equal(a, b)


# --- scikit-learn -----------------------------------------------------------------
# The estimator contract, for every estimator: tests/test_estimator_contract.py.

def test_predict_segments_unfitted_raises_not_fitted(toy):
    with pytest.raises(NotFittedError):
        SemiMarkovCRF().predict_segments(toy[0])


def test_pipeline_grid_search_with_span_scorer(toy):
    X, y = toy
    pipe = make_pipeline(SequenceVectorizer(), SemiMarkovCRF(max_iter=30))
    search = GridSearchCV(pipe, {"semimarkovcrf__alpha": [0.1, 1000.0]}, cv=3,
                          scoring=span_f1_scorer).fit(X, y)
    assert search.best_params_["semimarkovcrf__alpha"] == 0.1
    assert search.best_score_ > 0.9
    assert len(search.predict_proba(X[:2])) == 2
    assert cross_val_score(SemiMarkovCRF(max_iter=20), X, y, cv=3).min() > 0.5


# --- bad input -------------------------------------------------------------------

@pytest.mark.parametrize("make_input, params, error, match", [
    (lambda X, y: (X, y[:-1]), {}, ValueError, r"60 sequences but y has 59"),
    (lambda X, y: (X, y[:3] + [y[3][:-1]] + y[4:]), {}, ValueError,
     r"Sequence 3 has \d+ tokens but \d+ labels"),
    (lambda X, y: (X, y[:2] + [["S-PER"] * len(y[2])] + y[3:]), {"scheme": "IOB2"},
     ValueError, r"Tag 'S-PER' \(sequence 2, token 0\) is not a IOB2 tag"),
    (lambda X, y: (X, y), {"scheme": "BIOES2"}, ValueError, "'scheme' parameter"),
    (lambda X, y: (X, y), {"max_segment_length": 0}, ValueError,
     "'max_segment_length' parameter"),
])
def test_bad_input_is_named(toy, make_input, params, error, match):
    X, y = make_input(*toy)
    with pytest.raises(error, match=match):
        SemiMarkovCRF(max_iter=5, **params).fit(X, y)


def test_each_label_takes_its_longest_training_segment(toy):
    X, y = toy
    crf = SemiMarkovCRF(max_iter=5).fit(X, y)
    segments = [s for tags in y for s in tags_to_segments(list(tags))]
    for k, label in enumerate(crf.segment_classes_.tolist()):
        allowed = np.flatnonzero(np.isfinite(crf.length_coef_[k])) + 1
        if label == "O":
            assert allowed.tolist() == [1]
            continue
        longest = max(s.stop - s.start for s in segments if s.label == label)
        assert allowed.max() == longest
    assert crf.max_segment_length_ == max(s.stop - s.start for s in segments)


def test_a_failed_refit_keeps_the_previous_model(toy):
    """fit builds the new state aside and swaps it in only when it succeeds."""
    X, y = toy
    crf = SemiMarkovCRF(alpha=0.1, max_iter=10).fit(X, y)
    coef, before = crf.coef_, crf.predict(X[:3])
    crf.set_params(max_segment_length=1)
    with pytest.raises(ValueError, match="longer than max_segment_length=1"):
        crf.fit(X, y)
    assert crf.coef_ is coef
    for a, b in zip(crf.predict(X[:3]), before):
        np.testing.assert_array_equal(a, b)


def test_a_training_segment_breaking_the_allowed_pairs_is_named_by_its_labels():
    """The error named "label id 2" after "label id 0" (issue 32, item 18)."""
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}, {"w": "a"}]]
    y = [["B-PER", "B-LOC"], ["B-LOC", "O"]]
    with pytest.raises(ValueError, match=r"Sequence 0: the segment 'LOC' at token 1 follows a "
                                         r"segment 'PER', a transition allowed_transitions "
                                         r"forbids"):
        SemiMarkovCRF(allowed_transitions={("PER", "O"), ("LOC", "O")}, max_iter=5).fit(X, y)


def _model_with_a_flag():
    X = [[{"w": "Ada", "title": True}, {"w": "Lovelace", "title": True}, {"w": "wrote"}],
         [{"w": "in"}, {"w": "Paris", "title": True}]] * 8
    y = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]] * 8
    return SemiMarkovCRF(max_iter=30).fit(X, y)


def test_a_huge_score_shared_by_every_label_leaves_proper_probabilities():
    """A token's state scores may all be huge (a large value of a feature every label
    weighs alike): each token's are shifted before the passes, whose running sums
    would otherwise round the other tokens' scores away (marginals summed to 4)."""
    model = _model_with_a_flag()
    title = list(model.feature_names_).index("title")
    model.coef_[:, title] = 0.5
    for value in (1e12, 1e300):
        X = [[{"w": "in"}, {"w": "Paris", "title": True}],
             [{"w": "Ada", "title": value}, {"w": "Lovelace", "title": value}, {"w": "wrote"}]]
        y = model.predict(X)
        marginals = model.predict_marginals(X)
        for rows in marginals:
            np.testing.assert_allclose(rows.sum(axis=1), 1.0, rtol=1e-12)
        log_proba = model.sequence_log_proba(X, y)
        assert np.all(log_proba <= 1e-12) and np.all(np.isfinite(log_proba))
        nbest = model.predict_nbest(X, n=50)
        for labellings in nbest:
            probabilities = [p for _, p in labellings]
            assert sum(probabilities) <= 1.0 + 1e-9
            assert probabilities == sorted(probabilities, reverse=True)
        # the tokens without the huge value keep their marginals
        reference = model.predict_marginals(X[:1])
        np.testing.assert_allclose(marginals[0], reference[0], rtol=1e-12)


@pytest.mark.parametrize("value", [1e9, 1e300])
def test_scores_too_far_apart_for_the_passes_are_refused_by_token(value):
    """Not wrong marginals (they summed to 4 at 1e300): the token is named."""
    model = _model_with_a_flag()
    X = [[{"w": "Ada"}], [{"w": "in"}, {"w": "Ada", "title": value}]]
    for query in (model.predict, model.predict_marginals):
        with pytest.raises(ValueError, match="sequence 1, token 1 differ by more than 1e"):
            query(X)


def test_max_segment_length_has_a_documented_bound():
    # issue 43, item 17: memory and time grew with the parameter, not the data
    from skcrf._semimarkov import MAX_SEGMENT_LENGTH

    X = [[{"w": "a"}, {"w": "b"}]] * 3
    y = [["B-X", "I-X"]] * 3
    with pytest.raises(ValueError, match=r"max_segment_length.*range \[1, 1000\]"):
        SemiMarkovCRF(max_segment_length=10 ** 9).fit(X, y)
    assert "at most 1000" in SemiMarkovCRF.__doc__ and MAX_SEGMENT_LENGTH == 1000
    SemiMarkovCRF(max_segment_length=MAX_SEGMENT_LENGTH, max_iter=5).fit(X, y)


def test_an_int_max_segment_length_is_bounded_by_the_longest_training_sequence():
    # issue 43, item 17: with max_segment_length=1000, every token paid for 1000
    # lengths (memory and time) on sentences of 3 tokens
    X = [[{"w": "Ada"}, {"w": "Lovelace"}, {"w": "wrote"}], [{"w": "in"}, {"w": "Paris"}]] * 4
    y = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]] * 4
    capped = SemiMarkovCRF(max_segment_length=1000, max_iter=20).fit(X, y)
    longest = SemiMarkovCRF(max_segment_length=3, max_iter=20).fit(X, y)
    assert capped.max_segment_length_ == 3
    assert capped.length_coef_.shape == longest.length_coef_.shape
    for name in ("coef_", "length_coef_", "transition_coef_"):
        np.testing.assert_array_equal(getattr(capped, name), getattr(longest, name))
    # a longer sequence at predict: labelled with segments of at most 3 tokens
    x = [[{"w": "Ada"}, {"w": "Lovelace"}, {"w": "Ada"}, {"w": "Lovelace"}, {"w": "Ada"}]]
    assert all(s.stop - s.start <= 3 for s in capped.predict_segments(x)[0])
    # a stream keeps the int: its later batches may be longer than the first
    stream = SemiMarkovCRF(max_segment_length=8, solver="sgd", random_state=0)
    stream.partial_fit(X, y, classes=sorted({t for s in y for t in s}))
    assert stream.max_segment_length_ == 8
