"""TreeCRF with link features: fit, predict, persistence, and the plain tree they extend."""

import warnings

import numba
import numpy as np
import pytest
from sklearn.base import clone

from skcrf import TreeCRF
from skcrf._persistence import load_model, save_model
from tests._threads import results_per_thread_count
from tests._ties import assert_same_predictions
from tests.naive_tree import labels_down_the_forest, random_forest

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _link_corpus(n_sequences=80, seed=0, max_length=8):
    """Labels that the link's features decide.

    Every token has a word ("u" or "v") and a "kind" ("p" or "q"); a
    non-root's label is its parent's when its kind is "p" and the other one
    when it is "q", the root's label is given by its word. The child's kind
    alone says nothing about its label, nor its parent's label alone: only
    the pair's weights conditioned on the kind (a link feature) do.
    """
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        n = int(rng.integers(2, max_length + 1))
        parents = random_forest(rng, n)
        kinds = rng.choice(["p", "q"], size=n)
        labels = labels_down_the_forest(rng, parents, lambda child: kinds[child] == "p")
        X.append([{"w": ("u" if labels[v] == "A" else "v") if parents[v] < 0 else "x",
                   "kind": str(kinds[v]), "__parent__": int(parents[v])} for v in range(n)])
        y.append(labels)
    return X, y


def _accuracy(model, X, y):
    return np.mean(np.concatenate(model.predict(X)) == np.concatenate(y))


def test_link_features_learn_what_the_link_says():
    X, y = _link_corpus()
    X_test, y_test = _link_corpus(seed=1)
    plain = TreeCRF(alpha=0.01).fit(X, y)
    links = TreeCRF(alpha=0.01, transition_features=["kind="]).fit(X, y)
    assert _accuracy(links, X_test, y_test) > 0.99
    assert _accuracy(plain, X_test, y_test) < 0.9
    assert links.transition_feature_coef_.shape == (links.n_features_in_, 4)
    marginals = links.predict_marginals(X_test[:3])
    for m in marginals:
        np.testing.assert_allclose(m.sum(axis=1), 1.0)


def test_zero_link_feature_weights_predict_as_the_plain_tree():
    X, y = _link_corpus(seed=2)
    plain = TreeCRF(alpha=0.3).fit(X, y)
    links = TreeCRF(alpha=0.3, transition_features="all").fit(X, y)
    links.coef_, links.transition_coef_, links.root_coef_ = (
        plain.coef_, plain.transition_coef_, plain.root_coef_)
    links.transition_feature_coef_ = links.transition_feature_coef_ * 0.0
    assert_same_predictions(links, plain, X)
    for a, b in zip(links.predict_marginals(X), plain.predict_marginals(X)):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_prediction_in_batches_equals_one_batch(monkeypatch):
    import skcrf._tree as tree_module

    X, y = _link_corpus(seed=3, n_sequences=60)
    model = TreeCRF(alpha=0.1, transition_features="all", max_iter=30).fit(X, y)
    whole = model.predict(X), model.predict_marginals(X)
    monkeypatch.setattr(tree_module, "_PREDICT_LINK_BUDGET", 16)  # a few sequences each
    batched = model.predict(X), model.predict_marginals(X)
    for a, b in zip(whole[0], batched[0]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(whole[1], batched[1]):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_save_load_and_clone(tmp_path):
    X, y = _link_corpus(seed=4, n_sequences=30)
    model = TreeCRF(alpha=0.1, transition_features=["kind="], max_iter=30).fit(X, y)
    save_model(model, tmp_path / "tree.skcrf")
    again = load_model(tmp_path / "tree.skcrf")
    assert (again.transition_feature_coef_ != model.transition_feature_coef_).nnz == 0
    for a, b in zip(model.predict(X), again.predict(X)):
        np.testing.assert_array_equal(a, b)
    assert clone(model).get_params()["transition_features"] == ["kind="]


def test_bad_transition_features_are_named():
    X, y = _link_corpus(seed=5, n_sequences=10)
    with pytest.raises(ValueError, match="No feature name starts with"):
        TreeCRF(transition_features=["nothing="]).fit(X, y)
    with pytest.raises(ValueError, match="transition_features"):
        TreeCRF(transition_features="some").fit(X, y)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 threads")
def test_fit_bitwise_identical_for_one_and_two_threads():
    X, y = _link_corpus(seed=6, n_sequences=150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one, two = results_per_thread_count(
            lambda: TreeCRF(transition_features="all", max_iter=15).fit(X, y))
    assert (one.transition_feature_coef_ != two.transition_feature_coef_).nnz == 0
    np.testing.assert_array_equal(one.coef_, two.coef_)
