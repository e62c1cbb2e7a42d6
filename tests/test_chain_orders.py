"""CRFClassifier of order 2 and more: what each order learns, the queries, files, and today's order 2."""

import itertools
import pickle

import numpy as np
import pytest
from sklearn.base import clone

from skcrf import CRFClassifier, CRFClassifierCV, load_model, save_model
from skcrf.inspection import LabelPattern, pattern_features, trigram_features
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures.patterns import chain as pattern_chain
from skcrf.structures.chain.order1 import ChainStructure
from tests._ties import assert_same_predictions
from tests._threads import assert_same_fits_for_one_and_two_jobs, needs_two_threads


def _history_corpus(order, n_sequences=80, seed=0):
    """Labels that need ``order`` labels of history.

    Each sequence repeats ``A`` ``order`` times then ``B``, from a random
    phase: after ``order`` A's comes B, else A. The first ``order`` words
    tell their labels, every other word is the same, so a chain of a lower
    order cannot tell the rest.
    """
    rng = np.random.default_rng(seed)
    period = ["A"] * order + ["B"]
    X, y = [], []
    for _ in range(n_sequences):
        n = int(rng.integers(order + 2, 4 * order + 4))
        phase = int(rng.integers(len(period)))
        labels = [period[(phase + t) % len(period)] for t in range(n)]
        X.append([{"w": label.lower()} if t < order else {"w": "x"}
                  for t, label in enumerate(labels)])
        y.append(labels)
    return X, y


@pytest.fixture(scope="module")
def third():
    X, y = _history_corpus(3)
    return CRFClassifier(alpha=0.01, l1_ratio=0, order=3, max_iter=200).fit(X, y), X, y


@pytest.mark.parametrize("order", [3, 4])
def test_order_d_learns_what_order_d_minus_1_cannot(order):
    X, y = _history_corpus(order)
    lower = CRFClassifier(alpha=0.01, order=order - 1, max_iter=200).fit(X, y)
    model = CRFClassifier(alpha=0.01, order=order, max_iter=200).fit(X, y)
    assert model.score(X, y) == 1.0
    assert lower.score(X, y) < 0.95
    assert model.label_patterns_.shape[1] == order + 1
    assert model.label_patterns_.shape[0] == model.pattern_coef_.shape[0] > 0
    assert model.label_patterns_.dtype == np.int64
    for marginals in model.predict_marginals(X):
        np.testing.assert_allclose(marginals.sum(axis=1), 1.0)


def test_queries_at_order_3(third):
    crf, X, y = third
    short = [[{"w": "a"}, {"w": "x"}, {"w": "x"}, {"w": "x"}, {"w": "x"}]]
    # every labelling of a 5-token sequence: their probabilities sum to 1
    labellings = [list(p) for p in itertools.product(["A", "B"], repeat=5)]
    log_p = crf.sequence_log_proba(short * len(labellings), labellings)
    np.testing.assert_allclose(np.exp(log_p).sum(), 1.0)
    nbest = crf.predict_nbest(short, n=4)[0]
    assert nbest[0][0].tolist() == crf.predict(short)[0].tolist()
    expected = sorted(np.exp(log_p), reverse=True)[:4]
    np.testing.assert_allclose([p for _, p in nbest], expected, rtol=1e-9)
    labels, proba = crf.predict(short, return_proba=True)
    np.testing.assert_allclose(proba, nbest[0][1], rtol=1e-9)
    # fixed labels are kept, and the marginals are conditional on them
    fixed = [[None, "B", None, None, None]]
    assert crf.predict(short, fixed=fixed)[0][1] == "B"
    marginals = crf.predict_marginals(short, fixed=fixed)[0]
    np.testing.assert_allclose(marginals[1], [0.0, 1.0])
    nbest_fixed = crf.predict_nbest(short, n=3, fixed=fixed)[0]
    assert all(labels[1] == "B" for labels, _ in nbest_fixed)
    # posterior decoding: each token's most probable label
    expected = [crf.classes_[np.argmax(m, axis=1)] for m in crf.predict_marginals(X[:5])]
    for a, b in zip(crf.predict(X[:5], decoding="marginal"), expected):
        assert a.tolist() == b.tolist()


def test_fixed_labels_no_labelling_allows_raise(third):
    crf, _, _ = third
    crf = clone(crf).set_params(allowed_transitions={"A": ["A", "B"], "B": ["A"]}).fit(
        *_history_corpus(3, n_sequences=30))
    with pytest.raises(ValueError, match="Sequence 0 has no labelling"):
        crf.predict([[{"w": "b"}, {"w": "x"}]], fixed=[["B", "B"]])


def test_constraints_are_kept_at_order_3():
    X, y = _bio_corpus()
    crf = CRFClassifier(alpha=0.1, order=3, allowed_transitions="bio", max_iter=100).fit(X, y)
    classes = crf.classes_.tolist()
    o, i_per = classes.index("O"), classes.index("I-PER")
    assert crf.transition_coef_[o, i_per] == -np.inf
    scrambled = [[{"w": "zzz"}] * 6 for _ in range(20)]
    for labels in crf.predict(scrambled) + [labels for sequence in
                                            crf.predict_nbest(scrambled, n=3)
                                            for labels, _ in sequence]:
        for a, b in zip(["O"] + labels.tolist(), labels.tolist()):
            assert not (b.startswith("I-") and a[2:] != b[2:]), labels


def _bio_corpus(n_sequences=40, seed=2):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        words, tags = [], []
        for _ in range(int(rng.integers(3, 8))):
            if rng.random() < 0.3:
                words += ["ada", "lovelace"]
                tags += ["B-PER", "I-PER"]
            else:
                words.append("wrote")
                tags.append("O")
        X.append([{"w": w} for w in words])
        y.append(tags)
    return X, y


def test_model_files_and_pickles_keep_the_patterns(third, tmp_path):
    crf, X, _ = third
    save_model(crf, tmp_path / "order3.skcrf")
    for loaded in (load_model(tmp_path / "order3.skcrf"), pickle.loads(pickle.dumps(crf))):
        np.testing.assert_array_equal(loaded.label_patterns_, crf.label_patterns_)
        assert loaded.label_patterns_.dtype == np.int64
        np.testing.assert_array_equal(loaded.pattern_coef_, crf.pattern_coef_)
        for a, b in zip(loaded.predict(X), crf.predict(X)):
            assert a.tolist() == b.tolist()
        for a, b in zip(loaded.predict_marginals(X[:3]), crf.predict_marginals(X[:3])):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("edit, match", [
    (lambda m: m.label_patterns_.__setitem__((0, -1), 7), "label pattern 0 is"),  # no class 7
    (lambda m: m.label_patterns_.__setitem__((1, 0), 5), "label pattern 1 is"),
    (lambda m: setattr(m, "label_patterns_", m.label_patterns_[:, 1:]), "4 columns"),
    (lambda m: m.pattern_coef_.__setitem__(0, np.nan), "non-finite"),
    (lambda m: setattr(m, "pattern_coef_", m.pattern_coef_[1:]), "one finite weight per row"),
    (lambda m: setattr(m, "label_patterns_", np.vstack([m.label_patterns_[:1]] * 2)),
     "repeats pattern 0"),
])
def test_bad_fitted_patterns_are_refused_by_name(third, edit, match):
    crf, X, _ = third
    broken = pickle.loads(pickle.dumps(crf))
    broken.label_patterns_ = broken.label_patterns_.copy()
    broken.pattern_coef_ = broken.pattern_coef_.copy()
    if "repeats" in match:
        broken.pattern_coef_ = broken.pattern_coef_[:2]
    edit(broken)
    with pytest.raises(ValueError, match=match):
        broken.predict(X[:1])


def _dense_order2_coefficients(X, y, **params):
    """The fit of today's dense order 2 (every trigram a weight): its named coefficients."""
    est = CRFClassifier(order=2, all_possible_transitions=True, **params)
    data = est._training_data(X, y)
    structure = ChainStructure.for_training(
        data.features, data.offsets, data.label_ids, data.classes.shape[0], order=2,
        constraints=est._label_constraints(data))
    objective = NegativeLogLikelihood(structure, data.features, data.offsets, data.label_ids,
                                      l2=est._l2)
    result = est._solve(objective, np.zeros(structure.n_parameters))
    return structure.coefficients(result.w)


def _trigram_of(crf):
    C = crf.classes_.shape[0]
    trigram = np.zeros((C, C, C))
    rows = crf.label_patterns_
    trigram[rows[:, 0], rows[:, 1], rows[:, 2]] = crf.pattern_coef_
    return trigram


@pytest.mark.parametrize("l1_ratio", [0.0, 1 / 3])
def test_every_pattern_at_order_2_is_todays_dense_order_2(l1_ratio, monkeypatch):
    X, y = _history_corpus(2, n_sequences=40)
    X, y = X + _bio_corpus()[0][:20], y + [["A" if t == "O" else "B" for t in tags]
                                           for tags in _bio_corpus()[1][:20]]
    params = dict(alpha=0.1, l1_ratio=l1_ratio, max_iter=60)
    dense = _dense_order2_coefficients(X, y, **params)
    crf = CRFClassifier(order=2, all_possible_transitions=True, **params).fit(X, y)
    np.testing.assert_allclose(_trigram_of(crf), dense["trigram"], rtol=1e-6, atol=1e-8)
    for name, attribute in (("coef", "coef_"), ("transitions", "transition_coef_"),
                            ("start", "start_coef_"), ("end", "end_coef_")):
        np.testing.assert_allclose(getattr(crf, attribute), dense[name], rtol=1e-6, atol=1e-8)
    # today's model, as a model file from before label patterns holds it
    legacy = pickle.loads(pickle.dumps(crf))
    del legacy.label_patterns_, legacy.pattern_coef_
    legacy.transition2_coef_ = dense["trigram"]
    assert_same_predictions(crf, legacy, X)
    # the same trigrams through the pattern automaton rather than the dense kernels
    monkeypatch.setattr(pattern_chain, "DENSE_TRIGRAM_FRACTION", 2.0)
    assert_same_predictions(crf, legacy, X)
    for a, b in zip(crf.predict_marginals(X), legacy.predict_marginals(X)):
        np.testing.assert_allclose(a, b, atol=1e-6)
    # inspection reads today's trigram weights too
    rows = trigram_features(legacy, top=None)
    assert len(rows) == np.count_nonzero(dense["trigram"])
    assert all(len(row) == 4 for row in rows)


def test_min_pattern_freq_and_l1_prune_patterns():
    X, y = _history_corpus(3, n_sequences=60)
    X, y = X + _history_corpus(2, n_sequences=3, seed=4)[0], y + _history_corpus(
        2, n_sequences=3, seed=4)[1]
    every = CRFClassifier(alpha=0.01, l1_ratio=0, order=3, max_iter=50).fit(X, y)
    frequent = CRFClassifier(alpha=0.01, l1_ratio=0, order=3, min_pattern_freq=10,
                             max_iter=50).fit(X, y)
    assert 0 < frequent.label_patterns_.shape[0] < every.label_patterns_.shape[0]
    # L1 leaves many weights at exactly 0: the model keeps the others only
    sparse = CRFClassifier(alpha=3.0, l1_ratio=1.0, order=3, max_iter=50).fit(X, y)
    assert (sparse.pattern_coef_ != 0).all()
    assert sparse.label_patterns_.shape[0] < every.label_patterns_.shape[0]


def test_pattern_and_trigram_features_list_weights(third):
    crf, _, _ = third
    rows = pattern_features(crf, top=None)
    assert all(isinstance(row, LabelPattern) and 3 <= len(row.labels) <= 4 for row in rows)
    assert len(rows) == crf.label_patterns_.shape[0]
    weights = [abs(row.weight) for row in rows]
    assert weights == sorted(weights, reverse=True)
    assert all(len(row.labels) == 4 for row in pattern_features(crf, top=None, length=4))
    assert all(len(row) == 4 for row in trigram_features(crf, top=None))
    with pytest.raises(ValueError, match="order=2 or more"):
        pattern_features(CRFClassifier(alpha=0.1, max_iter=50).fit(*_history_corpus(2, 5)))


@pytest.mark.parametrize("params, match", [
    ({"order": 0}, "'order' parameter"),
    ({"min_pattern_freq": 0}, "'min_pattern_freq' parameter"),
    ({"order": 3, "transition_features": "all"}, "needs order=1; got order=3"),
    ({"order": 70}, "beyond what skcrf can index"),
])
def test_bad_order_parameters_fail_at_fit(params, match):
    X, y = _history_corpus(2, n_sequences=5)
    with pytest.raises(ValueError, match=match):
        CRFClassifier(max_iter=5, **params).fit(X, y)


def test_too_many_possible_patterns_fail_with_advice():
    X = [[{"w": str(k)}] * 2 for k in range(60)]
    y = [[f"L{k}", f"L{k}"] for k in range(60)]
    with pytest.raises(ValueError, match="all_possible_transitions=False"):
        CRFClassifier(order=3, all_possible_transitions=True, max_iter=1).fit(X, y)


def test_warm_start_and_cv_carry_patterns():
    X, y = _history_corpus(3, n_sequences=40)
    crf = CRFClassifier(alpha=0.1, order=3, warm_start=True, max_iter=100).fit(X, y)
    first = crf.n_iter_
    crf.set_params(alpha=0.09).fit(X, y)
    assert crf.n_iter_ < first
    cv = CRFClassifierCV(alphas=[0.1, 1.0], cv=2, order=3, max_iter=50).fit(X, y)
    assert cv.label_patterns_.shape[1] == 4 and cv.score(X, y) > 0.9


@needs_two_threads
def test_order_3_fits_bitwise_identical_for_thread_counts():
    X, y = _history_corpus(3, n_sequences=60)
    assert_same_fits_for_one_and_two_jobs(
        lambda n_jobs: CRFClassifier(alpha=0.1, order=3, n_jobs=n_jobs, max_iter=20), X, y,
        ["pattern_coef_", "coef_"])
