"""TreeCRF: learning over given trees, persistence and bad input.

The estimator contract is checked for every estimator in test_estimator_contract.py.
"""

import io
import pickle
import warnings

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import cross_validate
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SequenceMatrix, SequenceVectorizer, TreeCRF
from skcrf._persistence import load_model, save_model
from tests._toys import toy_fixtures
from tests.naive_tree import labels_down_the_forest, random_forest


def _tree_corpus(n_sequences=40, seed=0, max_length=8):
    """Labels that follow the tree, not the token order.

    A root's word ("a" or "b") gives its label; every other token has the word
    "x" and the label opposite to its parent's. Trees are random forests whose
    parents come before or after their children, so neither the word nor the
    previous token tells a non-root's label: only the parent link does.
    """
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        n = int(rng.integers(2, max_length + 1))
        parents = random_forest(rng, n)
        labels = labels_down_the_forest(rng, parents, lambda child: False)
        words = [("a" if labels[v] == "A" else "b") if parents[v] < 0 else "x"
                 for v in range(n)]
        X.append([{"w": w, "__parent__": int(p)} for w, p in zip(words, parents)])
        y.append(labels)
    return X, y


def _without_trees(X):
    return [[{k: v for k, v in token.items() if k != "__parent__"} for token in sequence]
            for sequence in X]


task, fitted = toy_fixtures(_tree_corpus, lambda: TreeCRF(alpha=0.1, n_jobs=1), name="task")


# --- behaviour -------------------------------------------------------------------


def test_fit_returns_self_and_learns_the_tree_task(task):
    X, y = task
    crf = TreeCRF(alpha=0.1, n_jobs=1)
    assert crf.fit(X, y) is crf
    assert crf.score(X, y) == 1.0
    X_new, y_new = _tree_corpus(20, seed=1)
    assert crf.score(X_new, y_new) == 1.0
    assert crf.classes_.tolist() == ["A", "B"]
    assert crf.coef_.shape == (2, crf.n_features_in_) == (2, len(crf.feature_names_))
    assert crf.transition_coef_.shape == (2, 2) and crf.root_coef_.shape == (2,)
    assert crf.feature_names_.tolist() == ["w=a", "w=b", "w=x"]  # the key is no feature
    assert crf.n_iter_ == len(crf.loss_curve_) > 0
    # a child takes the label opposite to its parent's: [parent, child]
    T = crf.transition_coef_
    assert T[0, 1] > T[0, 0] and T[1, 0] > T[1, 1]


def test_the_links_carry_what_words_and_token_order_cannot(task):
    X, y = task
    X_new, y_new = _tree_corpus(30, seed=2)
    tree = TreeCRF(alpha=0.1, n_jobs=1).fit(X, y).score(X_new, y_new)
    # the same dicts in token order: the previous token is rarely the parent
    chain = CRFClassifier(alpha=0.1, n_jobs=1).fit(X, y).score(X_new, y_new)
    # a tree whose links carry nothing: every token a root
    rootless = [[dict(token, __parent__=-1) for token in sequence] for sequence in X]
    rootless_new = [[dict(token, __parent__=None) for token in sequence]
                    for sequence in X_new]
    alone = TreeCRF(alpha=0.1, n_jobs=1).fit(rootless, y).score(rootless_new, y_new)
    assert tree == 1.0
    assert chain < tree - 0.15 and alone < tree - 0.15


def test_models_without_trees_ignore_the_parent_key(task):
    # one feature pipeline serves both: a chain fitted on the same dicts is the
    # chain fitted on dicts without the key
    X, y = task
    with_key = CRFClassifier(alpha=0.1, n_jobs=1).fit(X, y)
    without = CRFClassifier(alpha=0.1, n_jobs=1).fit(_without_trees(X), y)
    assert with_key.feature_names_.tolist() == without.feature_names_.tolist()
    np.testing.assert_array_equal(with_key.coef_, without.coef_)
    np.testing.assert_array_equal(with_key.transition_coef_, without.transition_coef_)


def test_predict_marginals_and_proba(fitted, task):
    X, y = task
    predicted = fitted.predict(X[:6])
    marginals = fitted.predict_marginals(X[:6])
    assert isinstance(predicted, list) and len(predicted) == len(marginals) == 6
    for labels, probs, sequence in zip(predicted, marginals, X[:6]):
        assert labels.shape == (len(sequence),) and probs.shape == (len(sequence), 2)
        np.testing.assert_allclose(probs.sum(axis=1), 1.0)
        # the max-product labelling is the marginals' argmax on this easy task
        assert fitted.classes_[probs.argmax(axis=1)].tolist() == labels.tolist()
    for a, b in zip(fitted.predict_proba(X[:6]), marginals, strict=True):
        np.testing.assert_array_equal(a, b)


def test_empty_sequences_at_predict_give_empty_arrays(fitted, task):
    X, _ = task
    predicted = fitted.predict([[], X[0], []])
    assert [len(p) for p in predicted] == [0, len(X[0]), 0]
    assert fitted.predict_marginals([[], X[0]])[0].shape == (0, 2)


def test_sequence_matrix_with_parents_equals_dict_input(task):
    X, y = task
    matrix = SequenceVectorizer().fit_transform(X)
    assert matrix.parents is not None
    from_dicts = TreeCRF(alpha=0.1, n_jobs=1).fit(X, y)
    from_matrix = TreeCRF(alpha=0.1, n_jobs=1).fit(matrix, y)
    for attribute in ("coef_", "transition_coef_", "root_coef_"):
        np.testing.assert_array_equal(getattr(from_dicts, attribute),
                                      getattr(from_matrix, attribute))
    assert from_matrix.vectorizer_ is None
    assert [p.tolist() for p in from_matrix.predict(matrix[:3])] == y[:3]


def test_integer_labels_and_l1(task):
    X, y = task
    y_int = [[{"A": 7, "B": 3}[label] for label in sequence] for sequence in y]
    crf = TreeCRF(alpha=0.1, l1_ratio=1.0, n_jobs=1).fit(X, y_int)
    assert crf.classes_.tolist() == [3, 7]
    assert crf.predict(X[:1])[0].tolist() == y_int[0]
    assert (crf.coef_ == 0).any()  # L1 zeroes the pairs it does not need


def test_fit_on_a_forest_of_single_nodes_and_deep_paths():
    # one sequence of 300 nodes in a path, others of single roots
    labels = ["A" if k % 2 else "B" for k in range(300)]
    X = [[{"w": "s" if k == 0 else "x", "__parent__": k - 1} for k in range(300)]]
    y = [labels]
    X += [[{"w": "a", "__parent__": None}], [{"w": "b", "__parent__": -1}]]
    y += [["A"], ["B"]]
    crf = TreeCRF(alpha=0.01, n_jobs=1).fit(X, y)
    assert crf.score(X, y) == 1.0
    assert np.isfinite(crf.predict_marginals(X)[0]).all()


# --- no trees, bad trees, atomic fit --------------------------------------------


def test_fit_without_trees_says_how_to_give_them(task):
    X, y = task
    for no_trees in (_without_trees(X), SequenceVectorizer().fit_transform(_without_trees(X))):
        with pytest.raises(ValueError, match=r"TreeCRF needs each sequence's tree.*'__parent__'"):
            TreeCRF().fit(no_trees, y)


@pytest.mark.parametrize("method", ["predict", "predict_marginals", "predict_proba", "score"])
def test_predict_without_trees_says_how_to_give_them(fitted, task, method):
    X, y = task
    args = (_without_trees(X[:3]),) + ((y[:3],) if method == "score" else ())
    with pytest.raises(ValueError, match=r"TreeCRF needs each sequence's tree"):
        getattr(fitted, method)(*args)
    matrix_model = TreeCRF(alpha=0.1, n_jobs=1).fit(SequenceVectorizer().fit_transform(X), y)
    plain = SequenceMatrix(sp.csr_matrix((2, matrix_model.n_features_in_)), [0, 2])
    args = (plain,) + (([["A", "B"]],) if method == "score" else ())
    with pytest.raises(ValueError, match=r"TreeCRF needs each sequence's tree"):
        getattr(matrix_model, method)(*args)


def test_bad_trees_are_named_at_fit_and_predict(fitted, task):
    X, y = task
    bad = [[dict(token) for token in sequence] for sequence in X[:4]]
    bad[2][1]["__parent__"] = 99
    with pytest.raises(ValueError, match=r"Sequence 2, token 1: parent 99 is neither"):
        TreeCRF().fit(bad, y[:4])
    with pytest.raises(ValueError, match=r"Sequence 2, token 1: parent 99 is neither"):
        fitted.predict(bad)


def test_a_failed_fit_keeps_the_previous_model(task):
    X, y = task
    crf = TreeCRF(alpha=0.1, n_jobs=1).fit(X, y)
    before = {name: value.copy() for name, value in vars(crf).items()
              if name.endswith("_") and isinstance(value, np.ndarray)}
    predictions = crf.predict(X)
    bad = [[dict(token) for token in sequence] for sequence in X]
    bad[0][0]["__parent__"] = 0  # its own parent
    for failing in (_without_trees(X), bad):
        with pytest.raises(ValueError):
            crf.fit(failing, y)
        for name, value in before.items():
            np.testing.assert_array_equal(getattr(crf, name), value)
        for a, b in zip(crf.predict(X), predictions, strict=True):
            np.testing.assert_array_equal(a, b)


# --- scikit-learn contract ---------------------------------------------------
# The estimator contract, for every estimator: tests/test_estimator_contract.py.


def test_cross_validation_over_a_sequence_matrix_keeps_the_trees(task):
    X, y = task
    matrix = SequenceVectorizer().fit_transform(X)
    result = cross_validate(TreeCRF(max_iter=30, n_jobs=1), matrix, y, cv=3)
    assert np.all(result["test_score"] > 0.9)


# --- persistence, threads ----------------------------------------------------


def _same_outputs(a, b, X):
    for left, right in zip(a.predict(X), b.predict(X), strict=True):
        np.testing.assert_array_equal(left, right)
    for left, right in zip(a.predict_proba(X), b.predict_proba(X), strict=True):
        np.testing.assert_array_equal(left, right)


def test_save_model_and_load_model_round_trip(fitted, task):
    X, y = task
    buffer = io.BytesIO()
    save_model(fitted, buffer)
    buffer.seek(0)
    loaded = load_model(buffer)
    assert type(loaded) is TreeCRF and loaded.get_params() == fitted.get_params()
    for attribute in ("coef_", "transition_coef_", "root_coef_", "classes_"):
        np.testing.assert_array_equal(getattr(loaded, attribute), getattr(fitted, attribute))
    _same_outputs(fitted, loaded, X)
    pipe = make_pipeline(SequenceVectorizer(), TreeCRF(alpha=0.1, max_iter=30, n_jobs=1)).fit(X, y)
    buffer = io.BytesIO()
    save_model(pipe, buffer)
    buffer.seek(0)
    _same_outputs(pipe, load_model(buffer), X)


def test_pickle_round_trip(fitted, task):
    X, _ = task
    _same_outputs(fitted, pickle.loads(pickle.dumps(fitted)), X)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 threads")
def test_same_model_and_predictions_for_one_and_two_threads(task):
    X, y = task
    # a few iterations suffice to compare: every one is bitwise the same or not
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one = TreeCRF(alpha=0.1, n_jobs=1, max_iter=10).fit(X, y)
        two = TreeCRF(alpha=0.1, n_jobs=2, max_iter=10).fit(X, y)
    assert one.n_iter_ == two.n_iter_ and one.loss_curve_ == two.loss_curve_
    for attribute in ("coef_", "transition_coef_", "root_coef_"):
        assert np.array_equal(getattr(one, attribute), getattr(two, attribute))
    _same_outputs(one, two, X)
