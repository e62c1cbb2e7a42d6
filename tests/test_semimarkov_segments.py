"""SemiMarkovCRF with features of whole segments, from raw tokens in a Pipeline."""

import numba
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline

from skcrf import (CRFClassifier, SemiMarkovCRF, SequenceVectorizer, TokenFeaturizer,
                   load_model, save_model)
from skcrf.metrics import span_f1_score, span_f1_scorer
from tests._threads import results_per_thread_count

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _dictionary_task(n_sequences, seed, dictionary_seed=0, n_words=6):
    """Labels that depend on a whole two-word span being in a dictionary.

    Words are "f0".."f5" (first words) and "s0".."s5" (second words); a
    dictionary holds half of the (first, second) pairs, at random. A first word
    followed by a second word is an ``X`` span when the pair is in the
    dictionary, else two ``O`` tokens. Each word is as often in a dictionary
    pair as not, whatever its neighbour alone: a score that adds up the
    words' weights (a chain's) cannot tell, a score of the whole span can.
    """
    dictionary_rng = np.random.default_rng(dictionary_seed)
    pairs = [(f"f{a}", f"s{b}") for a in range(n_words) for b in range(n_words)]
    chosen = dictionary_rng.permutation(len(pairs))[:len(pairs) // 2]
    dictionary = {pairs[k] for k in chosen}
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        words, tags = [], []
        for _ in range(int(rng.integers(1, 5))):
            first, second = pairs[int(rng.integers(len(pairs)))]
            words += [first, second]
            tags += ["B-X", "I-X"] if (first, second) in dictionary else ["O", "O"]
            if rng.random() < 0.5:
                words.append("x")
                tags.append("O")
        X.append(words)
        y.append(tags)
    return X, y


def _pipeline(model, **featurizer):
    return make_pipeline(TokenFeaturizer(**featurizer), SequenceVectorizer(), model)


def test_the_documented_pipeline_works():
    X, y = _dictionary_task(40, seed=1)
    pipe = make_pipeline(TokenFeaturizer(segment_features=True), SequenceVectorizer(),
                         SemiMarkovCRF())
    pipe.fit(X, y)
    assert [len(tags) for tags in pipe.predict(X)] == [len(tags) for tags in y]
    crf = pipe[-1]
    assert crf.segment_coef_.shape == (len(crf.segment_classes_), crf.n_segment_features_in_)
    assert crf.segment_feature_names_.shape == (crf.n_segment_features_in_,)


def test_only_segment_features_solve_a_dictionary_task():
    X_train, y_train = _dictionary_task(300, seed=2)
    X_test, y_test = _dictionary_task(200, seed=3)
    scores = {}
    for name, pipe in {
        "chain": _pipeline(CRFClassifier(alpha=0.01)),
        "semi": _pipeline(SemiMarkovCRF(alpha=0.01)),
        "semi, segments": _pipeline(SemiMarkovCRF(alpha=0.01),
                                    segment_features=["words"], max_segment_length=2),
    }.items():
        pipe.fit(X_train, y_train)
        scores[name] = span_f1_score(y_test, [list(p) for p in pipe.predict(X_test)])
    assert scores["semi, segments"] > 0.99
    assert scores["chain"] < 0.9
    assert scores["semi"] < 0.9


def test_segment_features_are_split_with_x_by_cross_validation():
    X, y = _dictionary_task(60, seed=4)
    pipe = _pipeline(SemiMarkovCRF(max_iter=30), segment_features=["words", "shape"],
                     max_segment_length=2)
    search = GridSearchCV(pipe, {"semimarkovcrf__alpha": [0.01, 1000.0]},
                          cv=KFold(3), scoring=span_f1_scorer).fit(X, y)
    assert search.best_params_["semimarkovcrf__alpha"] == 0.01
    # each fold's model saw the segment features of its training sequences only
    Xt = pipe[:-1].fit_transform(X)
    fold = Xt[np.arange(20)]
    assert fold.segments.n_tokens == fold.n_tokens * 2
    assert len(search.predict(X[:3])) == 3


def test_save_load_and_clone_keep_segment_features(tmp_path):
    X, y = _dictionary_task(40, seed=5)
    pipe = _pipeline(SemiMarkovCRF(max_iter=20), segment_features=True,
                     gazetteer={"f0 s0": "X", "f1 s1": ["X", "Y"]})
    pipe.fit(X, y)
    save_model(pipe, tmp_path / "model.skcrf")
    loaded = load_model(tmp_path / "model.skcrf")
    for a, b in zip(pipe.predict(X), loaded.predict(X)):
        np.testing.assert_array_equal(a, b)
    crf, again = pipe[-1], loaded[-1]
    np.testing.assert_array_equal(crf.segment_coef_, again.segment_coef_)
    assert again.segment_feature_names_.tolist() == crf.segment_feature_names_.tolist()
    assert again.n_segment_features_in_ == crf.n_segment_features_in_
    assert loaded[1].segment_vectorizer_.feature_names_ == pipe[1].segment_vectorizer_.feature_names_
    assert clone(pipe).get_params()["tokenfeaturizer__gazetteer"] == pipe[0].gazetteer


def test_predicting_without_the_segment_features_it_was_fitted_with_is_an_error():
    X, y = _dictionary_task(20, seed=6)
    featurizer = TokenFeaturizer(segment_features=["words"], max_segment_length=2)
    vectorizer = SequenceVectorizer()
    crf = SemiMarkovCRF(max_iter=5).fit(vectorizer.fit_transform(featurizer.fit_transform(X)),
                                        y)
    plain = vectorizer.transform(TokenFeaturizer().fit_transform(X))
    with pytest.raises(ValueError, match="fitted with features of segments"):
        crf.predict(plain)
    # a model without segment features ignores them
    crf_plain = SemiMarkovCRF(max_iter=5).fit(plain, y)
    with_segments = vectorizer.transform(featurizer.transform(X))
    for a, b in zip(crf_plain.predict(plain), crf_plain.predict(with_segments)):
        np.testing.assert_array_equal(a, b)


def test_warm_start_needs_the_same_segment_features():
    X, y = _dictionary_task(30, seed=7)
    Xt = _pipeline(SemiMarkovCRF(), segment_features=["words"],
                   max_segment_length=2)[:-1].fit_transform(X)
    crf = SemiMarkovCRF(max_iter=100, warm_start=True, alpha=0.1).fit(Xt, y)
    first = crf.n_iter_
    crf.fit(Xt, y)
    assert crf.n_iter_ < first


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 threads")
def test_fit_bitwise_identical_for_one_and_two_threads():
    X, y = _dictionary_task(120, seed=8)
    Xt = _pipeline(SemiMarkovCRF(), segment_features=True,
                   max_segment_length=3)[:-1].fit_transform(X)
    one, two = results_per_thread_count(lambda: SemiMarkovCRF(max_iter=15).fit(Xt, y))
    np.testing.assert_array_equal(one.segment_coef_, two.segment_coef_)
    np.testing.assert_array_equal(one.coef_, two.coef_)


@pytest.mark.parametrize("value", [1e9, 1e12, 1e300])
def test_a_huge_segment_feature_value_is_refused_naming_the_token(value):
    """Not marginals summing to 2 or 3 (issue 43, item 7): a segment's score counts only
    in the segmentations holding it, so no shift removes it; the token is named."""
    X, y = _dictionary_task(30, seed=1)
    pipe = _pipeline(SemiMarkovCRF(max_iter=30), segment_features=True)
    pipe.fit(X, y)
    crf = pipe[-1]
    sentences = [["f0", "s0", "x"], ["x", "f1", "s1"]]
    features = pipe[:-1].transform(sentences)
    # plain values first: proper marginals
    for rows in crf.predict_marginals(features):
        np.testing.assert_allclose(rows.sum(axis=1), 1.0, rtol=1e-9)
    segments = features.segments.matrix.tocsr(copy=True)
    L = features.segment_length
    row = (features.offsets[1] + 1) * L + 1  # sequence 1, token 1: its two-token segment
    assert segments[row].nnz
    segments.data[segments.indptr[row]:segments.indptr[row + 1]] *= value
    features.segments.matrix = segments
    for query in (crf.predict, crf.predict_marginals):
        with pytest.raises(ValueError, match=r"segment scores of sequence 1, token 1 "):
            query(features)
