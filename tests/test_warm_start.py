"""warm_start on the estimators, and the structures' weights(), the inverse of coefficients()."""

import pickle

import numpy as np
import pytest

from skcrf import CRFClassifier, SemiMarkovCRF, SequenceMatrix, TreeCRF
from tests._toys import chain_corpus, span_corpus, tree_corpus

CASES = {
    "chain": (CRFClassifier, {}, chain_corpus),
    "chain-l1": (CRFClassifier, {"l1_ratio": 0.5}, chain_corpus),
    "order2": (CRFClassifier, {"order": 2}, chain_corpus),
    "order3": (CRFClassifier, {"order": 3}, chain_corpus),
    "transition-features": (CRFClassifier, {"transition_features": "all"}, chain_corpus),
    "constrained": (CRFClassifier, {"allowed_transitions": "bio"}, span_corpus),
    "semimarkov": (SemiMarkovCRF, {}, span_corpus),
    "tree": (TreeCRF, {}, tree_corpus),
}

TIGHT = {"l1_ratio": 0.0, "tol": 1e-8, "max_iter": 1000}


@pytest.mark.parametrize("case", CASES)
def test_warm_start_reaches_the_cold_optimum_in_fewer_iterations(case):
    cls, params, corpus = CASES[case]
    X, y = corpus()
    params = {**TIGHT, **params}
    cold = cls(alpha=0.1, **params).fit(X, y)
    warm = cls(alpha=0.3, warm_start=True, **params).fit(X, y)
    warm.set_params(alpha=0.1).fit(X, y)
    assert warm.n_iter_ < cold.n_iter_
    # both stop where the objective no longer improves by 1e-8 (relative):
    # the same optimum, to a few 1e-4 in the weights
    for name in ("coef_", "transition_coef_"):
        np.testing.assert_allclose(getattr(warm, name), getattr(cold, name), atol=2e-3,
                                   err_msg=name)
    assert warm.loss_curve_[-1] == pytest.approx(cold.loss_curve_[-1], rel=1e-6)


@pytest.mark.parametrize("case", ["chain", "semimarkov", "tree"])
def test_warm_start_from_the_same_fit_stops_at_once(case):
    cls, params, corpus = CASES[case]
    X, y = corpus()
    model = cls(alpha=0.1, warm_start=True, **{**TIGHT, "tol": 1e-6}, **params).fit(X, y)
    first = model.n_iter_
    model.fit(X, y)
    # at the optimum already: the relative improvement rule stops after its period
    assert model.n_iter_ <= 11 < first


def _same_fit(a, b):
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.transition_coef_, b.transition_coef_)
    assert a.n_iter_ == b.n_iter_


def test_changed_classes_restart_from_zero():
    X, y = chain_corpus()
    renamed = [[label.lower() for label in labels] for labels in y]
    model = CRFClassifier(alpha=0.1, warm_start=True).fit(X, y)
    model.fit(X, renamed)
    _same_fit(model, CRFClassifier(alpha=0.1).fit(X, renamed))


def test_changed_features_restart_from_zero():
    X, y = chain_corpus()
    model = CRFClassifier(alpha=0.1, warm_start=True).fit(X, y)
    other = [[dict(token, extra=1.0) for token in seq] for seq in X]  # one more feature
    model.fit(other, y)
    _same_fit(model, CRFClassifier(alpha=0.1).fit(other, y))


def test_changed_structure_restarts_from_zero():
    X, y = chain_corpus()
    model = CRFClassifier(alpha=0.1, warm_start=True).fit(X, y)
    model.set_params(order=2).fit(X, y)
    _same_fit(model, CRFClassifier(alpha=0.1, order=2).fit(X, y))


def test_without_warm_start_a_refit_starts_from_zero():
    X, y = chain_corpus()
    model = CRFClassifier(alpha=0.3).fit(X, y)
    model.set_params(alpha=0.1).fit(X, y)
    _same_fit(model, CRFClassifier(alpha=0.1).fit(X, y))


def test_warm_start_on_a_sequence_matrix_matches_by_feature_count():
    X, y = chain_corpus()
    from skcrf import SequenceVectorizer

    matrix = SequenceVectorizer().fit_transform(X)
    unnamed = SequenceMatrix(matrix.matrix, matrix.offsets)
    cold = CRFClassifier(alpha=0.1, **TIGHT).fit(unnamed, y)
    warm = CRFClassifier(alpha=0.3, warm_start=True, **TIGHT).fit(unnamed, y)
    warm.set_params(alpha=0.1).fit(unnamed, y)
    assert warm.n_iter_ < cold.n_iter_


def test_old_pickles_without_warm_start_load():
    X, y = chain_corpus()
    for model in (CRFClassifier(max_iter=20).fit(X, y),
                  SemiMarkovCRF(max_iter=20).fit(*span_corpus()),
                  TreeCRF(max_iter=20).fit(*tree_corpus())):
        state = model.__getstate__()
        del state["warm_start"]
        old = object.__new__(type(model))
        old.__setstate__(state)
        restored = pickle.loads(pickle.dumps(old))
        assert restored.get_params()["warm_start"] is False


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_warm_start_must_be_a_bool(bad):
    X, y = chain_corpus()
    with pytest.raises(ValueError, match="warm_start"):
        CRFClassifier(warm_start=bad).fit(X, y)


# --- the structures: weights() inverts coefficients() ------------------------------

@pytest.mark.parametrize("case", CASES)
def test_weights_invert_coefficients(case):
    cls, params, corpus = CASES[case]
    X, y = corpus()
    model = cls(max_iter=3, **params)
    data = model._training_data(X, y)
    problem = model._training_problem(data)
    structure = problem.structure
    rng = np.random.default_rng(0)
    w = rng.normal(size=problem.n_parameters)
    # forbidden weights never leave zero in training: zero them as a fit would
    w = structure.weights(structure.coefficients(w))
    np.testing.assert_array_equal(structure.weights(structure.coefficients(w)), w)
    named = structure.coefficients(w)
    assert structure.weights({k: v for k, v in list(named.items())[1:]}) is None
    assert structure.weights({**named, "coef": named["coef"][:, 1:]}) is None


def test_a_warm_start_that_overflows_says_where_it_started():
    """A warm start from huge weights was reported as overflowing "at zero weights"
    (issue 32, item 18)."""
    X, y = chain_corpus()
    crf = CRFClassifier(warm_start=True, max_iter=20).fit(X, y)
    crf.coef_ = crf.coef_ * 1e306
    with pytest.raises(ValueError, match=r"overflows at its starting weights \(a previous "
                                         r"fit.s, up to [\d.e+]+ in magnitude\).*[Ff]it "
                                         r"without warm_start"):
        crf.fit(X, y)
    # from zero, "zero weights" (test_reliability.py has that case)
