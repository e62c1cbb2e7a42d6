"""CRFClassifier: training behaviour and bad input.

The estimator contract is checked for every estimator in test_estimator_contract.py.
"""

import pickle
import warnings

import numba
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, cross_val_score

from skcrf import CRFClassifier, SequenceMatrix, SequenceVectorizer
from skcrf.structures._parameters import StatePairs
from tests._chain_loss import chain_loss
from tests._toys import chain_corpus, toy_fixtures

# A tiny labelled corpus whose labels follow from the word and the previous
# label, so a CRF can learn it exactly.
toy, fitted = toy_fixtures(lambda: chain_corpus(first=True), lambda: CRFClassifier(alpha=0.1))


# --- behaviour -----------------------------------------------------------------

def test_fit_returns_self_and_learns_the_toy_task(toy):
    X, y = toy
    crf = CRFClassifier(alpha=0.1)
    assert crf.fit(X, y) is crf
    assert crf.score(X, y) == 1.0
    assert crf.classes_.tolist() == ["ADJ", "DET", "N", "V"]
    assert crf.coef_.shape == (4, crf.n_features_in_) == (4, len(crf.feature_names_))
    assert crf.transition_coef_.shape == (4, 4)
    assert crf.start_coef_.shape == crf.end_coef_.shape == (4,)
    assert crf.n_iter_ == len(crf.loss_curve_) > 0
    # stored feature-major, so predict's product reads coef_.T without a copy
    assert crf.coef_.T.flags.c_contiguous


def test_coef_changed_in_place_changes_predictions(toy):
    X, y = toy
    crf = CRFClassifier(alpha=0.1).fit(X, y)
    crf.coef_[:] = 0.0
    crf.transition_coef_[:] = 0.0
    crf.start_coef_[:] = crf.end_coef_[:] = 0.0
    marginals = crf.predict_marginals(X)
    assert all(np.allclose(m, 1 / len(crf.classes_)) for m in marginals)


def test_predict_and_marginals_shapes(fitted, toy):
    X, y = toy
    predicted = fitted.predict(X[:5])
    marginals = fitted.predict_marginals(X[:5])
    assert isinstance(predicted, list) and len(predicted) == 5
    for labels, probs, seq in zip(predicted, marginals, X[:5]):
        assert labels.shape == (len(seq),)
        assert probs.shape == (len(seq), 4)
        np.testing.assert_allclose(probs.sum(axis=1), 1.0)
        # the Viterbi label is the most probable one on this easy task
        assert fitted.classes_[probs.argmax(axis=1)].tolist() == labels.tolist()


def test_empty_sequences_at_predict_give_empty_arrays(fitted, toy):
    X, _ = toy
    predicted = fitted.predict([[], X[0], []])
    marginals = fitted.predict_marginals([[], X[0]])
    assert [len(p) for p in predicted] == [0, len(X[0]), 0]
    assert marginals[0].shape == (0, 4)


def test_unseen_features_are_ignored_at_predict(fitted):
    predicted = fitted.predict([[{"w": "the", "unknown": "zzz"}, {"w": "never-seen"}]])
    assert len(predicted[0]) == 2


def test_integer_labels(toy):
    X, y = toy
    mapping = {"ADJ": 3, "DET": 0, "N": 1, "V": 2}
    y_int = [[mapping[t] for t in seq] for seq in y]
    crf = CRFClassifier(alpha=0.1).fit(X, y_int)
    assert crf.classes_.tolist() == [0, 1, 2, 3]
    assert crf.predict(X[:1])[0].tolist() == y_int[0]


def test_sequence_matrix_input_equals_dict_input(toy):
    X, y = toy
    matrix = SequenceVectorizer().fit_transform(X)
    from_dicts = CRFClassifier(alpha=0.1).fit(X, y)
    from_matrix = CRFClassifier(alpha=0.1).fit(matrix, y)
    np.testing.assert_array_equal(from_dicts.coef_, from_matrix.coef_)
    assert from_matrix.vectorizer_ is None
    assert [p.tolist() for p in from_matrix.predict(matrix[:3])] == y[:3]
    with pytest.raises(TypeError, match="SequenceMatrix"):
        from_matrix.predict(X[:3])


def test_l1_gives_exact_zeros_and_more_than_l2(toy):
    X, y = toy
    l2 = CRFClassifier(alpha=1.0, l1_ratio=0.0).fit(X, y)
    l1 = CRFClassifier(alpha=1.0, l1_ratio=1.0).fit(X, y)
    assert (l1.coef_ == 0).sum() > (l2.coef_ == 0).sum()


def test_all_possible_states_uses_every_pair(toy):
    X, y = toy
    # pure L2: every weight that exists is non-zero (L1 would zero some)
    observed = CRFClassifier(alpha=0.1, l1_ratio=0.0).fit(X, y)
    every = CRFClassifier(alpha=0.1, l1_ratio=0.0, all_possible_states=True).fit(X, y)
    # "the" is never a noun: only the dense model may give (N, w=the) a weight
    col = list(observed.feature_names_).index("w=the")
    noun = list(observed.classes_).index("N")
    assert observed.coef_[noun, col] == 0.0
    assert every.coef_[noun, col] != 0.0
    assert every.score(X, y) == 1.0


def test_converged_l2_fit_has_zero_gradient(toy):
    X, y = toy
    crf = CRFClassifier(alpha=1.0, l1_ratio=0.0, max_iter=500, tol=0.0).fit(X, y)
    matrix = crf.vectorizer_.transform(X)
    labels = np.searchsorted(crf.classes_, np.concatenate(y))
    pairs = StatePairs.observed(matrix.matrix, labels, 4)
    loss = chain_loss(matrix.matrix, matrix.offsets, labels, pairs, l2=1.0)
    dense_to_pairs = crf.coef_[pairs.labels, pairs.feature_of_pairs()]
    w = np.concatenate([dense_to_pairs, crf.transition_coef_.ravel(), crf.start_coef_,
                        crf.end_coef_])
    value, grad = loss(w)
    assert np.linalg.norm(grad) < 1e-3 * np.linalg.norm(w)
    np.testing.assert_allclose(crf.loss_curve_[-1], value, rtol=1e-10)


def test_max_iter_reached_warns(toy):
    X, y = toy
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        CRFClassifier(max_iter=2, tol=0.0).fit(X, y)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 threads")
def test_fit_bitwise_identical_across_runs_and_thread_counts(toy):
    X, y = toy
    one = CRFClassifier(alpha=0.1, l1_ratio=0.5, n_jobs=1).fit(X, y)
    two = CRFClassifier(alpha=0.1, l1_ratio=0.5, n_jobs=2).fit(X, y)
    again = CRFClassifier(alpha=0.1, l1_ratio=0.5, n_jobs=2).fit(X, y)
    for a in ("coef_", "transition_coef_", "start_coef_", "end_coef_"):
        assert np.array_equal(getattr(one, a), getattr(two, a))
        assert np.array_equal(getattr(two, a), getattr(again, a))


def test_real_corpus_learns_entities(tagged_small):
    X_train, y_train, X_test, y_test = tagged_small

    def features(sentence):
        return [{"w": w.lower(), "title": w.istitle(), "pos": p,
                 "prev": sentence[i - 1][0].lower() if i else "<s>"}
                for i, (w, p) in enumerate(sentence)]

    crf = CRFClassifier(alpha=0.5, max_iter=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit([features(s) for s in X_train], y_train)
    accuracy = crf.score([features(s) for s in X_test], y_test)
    majority = np.mean(np.concatenate(y_test) == "O")
    assert accuracy > majority + 0.02


# --- scikit-learn ----------------------------------------------------------------
# The estimator contract, for every estimator: tests/test_estimator_contract.py.

def test_cross_validation_and_grid_search_in_joblib_workers(toy):
    X, y = toy
    crf = CRFClassifier(max_iter=30)
    scores = cross_val_score(crf, X, y, n_jobs=2)
    assert scores.shape == (5,) and np.all(scores > 0.5)
    search = GridSearchCV(crf, {"alpha": [0.01, 1.0, 1000.0]}, n_jobs=2).fit(X, y)
    assert search.best_params_["alpha"] != 1000.0
    assert len(search.predict(X[:2])) == 2


# --- bad input -------------------------------------------------------------------

@pytest.mark.parametrize("make_input, error, match", [
    (lambda X, y: (X, y[:-1]), ValueError, r"40 sequences but y has 39"),
    (lambda X, y: (X, y[:3] + [y[3][:-1]] + y[4:]), ValueError,
     r"Sequence 3 has \d tokens but \d labels"),
    (lambda X, y: ([], []), ValueError, "X is empty"),
    (lambda X, y: ([[]] * 2, [[]] * 2), ValueError, "no tokens"),
    (lambda X, y: (X, [["N"] * len(s) for s in y]), ValueError, "single class"),
    (lambda X, y: (X[:2] + [[{"w": "x", "v": float("nan")}]], y[:2] + [["N"]]), ValueError,
     r"Sequence 2, token 0, feature 'v' has the value nan"),
    (lambda X, y: ([[{"w": "x"}, {"v": float("inf")}]] + X[1:], [["N", "V"]] + y[1:]),
     ValueError, r"Sequence 0, token 1, feature 'v' has the value inf"),
    (lambda X, y: ("not a list", y), TypeError, "list of sequences"),
    (lambda X, y: (X, y[:5] + [[1] * len(y[5])] + y[6:]), TypeError, "mixes"),
])
def test_bad_input_is_named(toy, make_input, error, match):
    X, y = make_input(*toy)
    with pytest.raises(error, match=match):
        CRFClassifier(max_iter=5).fit(X, y)


@pytest.mark.parametrize("params, match", [
    ({"alpha": -1.0}, "'alpha' parameter"),
    ({"l1_ratio": 1.5}, "'l1_ratio' parameter"),
    ({"l1_ratio": -0.1}, "'l1_ratio' parameter"),
    ({"max_iter": 0}, "'max_iter' parameter"),
    ({"solver": "newton"}, "'solver' parameter"),
])
def test_bad_parameters_fail_at_fit(toy, params, match):
    X, y = toy
    crf = CRFClassifier(**params)  # __init__ stores, never validates
    with pytest.raises(ValueError, match=match):
        crf.fit(X, y)


def test_score_checks_lengths(fitted, toy):
    X, y = toy
    with pytest.raises(ValueError, match="Sequence 0 has"):
        fitted.score(X, [y[0][:-1]] + y[1:])


def test_sequence_matrix_of_wrong_width_is_refused(fitted):
    import scipy.sparse as sp

    wrong = SequenceMatrix(sp.csr_matrix((2, fitted.n_features_in_ + 1)), [0, 2])
    with pytest.raises(ValueError, match="features"):
        fitted.predict(wrong)


# --- order 2 and transition features -------------------------------------------

def _trigram_corpus(n_sequences=60, seed=1):
    """Labels that need two labels of history: after (A, A) comes B, else A.

    The first word tells the first label and every other word is the same, so
    neither the word nor the previous label alone tells the label; an order-2
    chain can learn it exactly.
    """
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        n = int(rng.integers(3, 9))
        labels = ["A" if rng.random() < 0.5 else "B", "A"]
        while len(labels) < n:
            labels.append("B" if labels[-2:] == ["A", "A"] else "A")
        X.append([{"w": labels[0].lower()}] + [{"w": "x"} for _ in labels[1:]])
        y.append(labels)
    return X, y


def test_order_2_learns_what_order_1_cannot():
    X, y = _trigram_corpus()
    first = CRFClassifier(alpha=0.01, max_iter=300).fit(X, y)
    second = CRFClassifier(alpha=0.01, order=2, max_iter=300).fit(X, y)
    assert second.label_patterns_.shape[1] == 3
    assert not hasattr(first, "label_patterns_")
    assert second.score(X, y) == 1.0
    assert first.score(X, y) < 0.95
    for marginals in second.predict_marginals(X):
        np.testing.assert_allclose(marginals.sum(axis=1), 1.0)


def test_order_2_pickles_clones_and_searches(toy):
    X, y = toy
    crf = CRFClassifier(alpha=0.1, order=2).fit(X, y)
    loaded = pickle.loads(pickle.dumps(crf))
    for a, b in zip(crf.predict(X), loaded.predict(X)):
        assert a.tolist() == b.tolist()
    assert clone(crf).get_params()["order"] == 2
    search = GridSearchCV(CRFClassifier(alpha=0.1, max_iter=30), {"order": [1, 2]},
                          cv=2).fit(X, y)
    assert search.best_params_["order"] in (1, 2)
    # refitting with order 1 drops the patterns
    crf.set_params(order=1).fit(X, y)
    assert not hasattr(crf, "label_patterns_") and not hasattr(crf, "pattern_coef_")


def test_transition_features_by_prefix(toy):
    X, y = toy
    crf = CRFClassifier(alpha=0.1, transition_features=["w="]).fit(X, y)
    assert crf.score(X, y) == 1.0
    V = crf.transition_feature_coef_
    assert V.shape == (crf.n_features_in_, 16)
    names = crf.feature_names_[V.tocoo().row]
    assert all(name.startswith("w=") for name in names)
    # only (feature, label pair) combinations seen in training have a weight:
    # "cat" is always preceded by DET or ADJ and is always N
    cat = list(crf.feature_names_).index("w=cat")
    classes = crf.classes_.tolist()
    seen = {(classes[c // 4], classes[c % 4]) for c in V[cat].indices}
    assert seen <= {("DET", "N"), ("ADJ", "N")}
    for a, b in zip(crf.predict(X), pickle.loads(pickle.dumps(crf)).predict(X)):
        assert a.tolist() == b.tolist()


def test_transition_features_all_and_every_pair(toy):
    X, y = toy
    observed = CRFClassifier(alpha=0.1, transition_features="all").fit(X, y)
    every = CRFClassifier(alpha=0.1, transition_features="all",
                          all_possible_states=True).fit(X, y)
    assert every.transition_feature_coef_.nnz > observed.transition_feature_coef_.nnz
    assert every.transition_feature_coef_.nnz == every.n_features_in_ * 16
    assert observed.score(X, y) == every.score(X, y) == 1.0


def test_transition_features_equal_plain_chain_when_their_weights_are_zero(toy):
    X, y = toy
    plain = CRFClassifier(alpha=0.1).fit(X, y)
    edged = CRFClassifier(alpha=0.1, transition_features=["w="]).fit(X, y)
    edged.transition_feature_coef_.data[:] = 0.0
    for attribute in ("coef_", "transition_coef_", "start_coef_", "end_coef_"):
        setattr(edged, attribute, getattr(plain, attribute))
    for a, b in zip(plain.predict_marginals(X), edged.predict_marginals(X)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("params, error, match", [
    ({"order": 0}, ValueError, "'order' parameter"),
    ({"transition_features": "some"}, ValueError, "'transition_features' parameter"),
    ({"transition_features": ["zzz="]}, ValueError, "No feature name starts with"),
    ({"transition_features": [1]}, ValueError, "prefixes"),
    ({"transition_features": ["w="], "order": 2}, ValueError, "needs order=1"),
])
def test_bad_structure_parameters_fail_at_fit(toy, params, error, match):
    X, y = toy
    with pytest.raises(error, match=match):
        CRFClassifier(max_iter=5, **params).fit(X, y)


def test_transition_feature_prefixes_need_feature_names(toy):
    import scipy.sparse as sp

    matrix = SequenceMatrix(sp.eye(4, format="csr"), [0, 2, 4])
    with pytest.raises(ValueError, match="no feature names"):
        CRFClassifier(transition_features=["w="]).fit(matrix, [["a", "b"], ["b", "a"]])
    fitted = CRFClassifier(transition_features="all", max_iter=5).fit(
        matrix, [["a", "b"], ["b", "a"]])
    assert fitted.transition_feature_coef_.shape == (4, 4)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 threads")
@pytest.mark.parametrize("params", [{"order": 2}, {"order": 3},
                                    {"transition_features": "all"}])
def test_structures_fit_bitwise_identical_for_thread_counts(toy, params):
    X, y = toy
    one = CRFClassifier(alpha=0.1, n_jobs=1, max_iter=20, **params).fit(X, y)
    two = CRFClassifier(alpha=0.1, n_jobs=2, max_iter=20, **params).fit(X, y)
    assert np.array_equal(one.coef_, two.coef_)
    assert np.array_equal(one.transition_coef_, two.transition_coef_)
    for a, b in zip(one.predict_marginals(X), two.predict_marginals(X)):
        assert np.array_equal(a, b)
