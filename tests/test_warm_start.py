"""warm_start on the estimators, and the structures' weights(), the inverse of coefficients()."""

import pickle

import numpy as np
import pytest

from skcrf import CRFClassifier, SemiMarkovCRF, SequenceMatrix, TreeCRF

# A small corpus whose labels follow from the word and its neighbours
WORDS = {"the": "DET", "a": "DET", "big": "ADJ", "cat": "N", "dog": "N", "runs": "V",
         "sleeps": "V"}


def _chain_corpus(n_sequences=40, seed=0):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        words = ([rng.choice(["the", "a"])] + (["big"] if rng.random() < 0.3 else [])
                 + [rng.choice(["cat", "dog"]), rng.choice(["runs", "sleeps"])])
        X.append([{"w": w, "len": len(w) / 5} for w in words])
        y.append([WORDS[w] for w in words])
    return X, y


def _span_corpus(n_sequences=40, seed=0):
    """Names (PER spans of one or two tokens) among other words, in IOB2."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        tokens, tags = [], []
        for _ in range(rng.integers(2, 5)):
            if rng.random() < 0.4:
                name = ["Ada", "Lovelace"] if rng.random() < 0.5 else ["Turing"]
                tokens += name
                tags += ["B-PER"] + ["I-PER"] * (len(name) - 1)
            else:
                tokens.append(str(rng.choice(["wrote", "ran", "and", "then"])))
                tags.append("O")
        X.append([{"w": t, "title": t.istitle()} for t in tokens])
        y.append(tags)
    return X, y


def _tree_corpus(n_sequences=40, seed=0):
    """Chains read as trees (each token's parent is the next one) with a root last."""
    X, y = _chain_corpus(n_sequences, seed)
    X = [[dict(token, __parent__=i + 1 if i + 1 < len(seq) else -1)
          for i, token in enumerate(seq)] for seq in X]
    return X, y


CASES = {
    "chain": (CRFClassifier, {}, _chain_corpus),
    "chain-l1": (CRFClassifier, {"l1_ratio": 0.5}, _chain_corpus),
    "order2": (CRFClassifier, {"order": 2}, _chain_corpus),
    "order3": (CRFClassifier, {"order": 3}, _chain_corpus),
    "transition-features": (CRFClassifier, {"transition_features": "all"}, _chain_corpus),
    "constrained": (CRFClassifier, {"allowed_transitions": "bio"}, _span_corpus),
    "semimarkov": (SemiMarkovCRF, {}, _span_corpus),
    "tree": (TreeCRF, {}, _tree_corpus),
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
    X, y = _chain_corpus()
    renamed = [[label.lower() for label in labels] for labels in y]
    model = CRFClassifier(alpha=0.1, warm_start=True).fit(X, y)
    model.fit(X, renamed)
    _same_fit(model, CRFClassifier(alpha=0.1).fit(X, renamed))


def test_changed_features_restart_from_zero():
    X, y = _chain_corpus()
    model = CRFClassifier(alpha=0.1, warm_start=True).fit(X, y)
    other = [[dict(token, extra=1.0) for token in seq] for seq in X]  # one more feature
    model.fit(other, y)
    _same_fit(model, CRFClassifier(alpha=0.1).fit(other, y))


def test_changed_structure_restarts_from_zero():
    X, y = _chain_corpus()
    model = CRFClassifier(alpha=0.1, warm_start=True).fit(X, y)
    model.set_params(order=2).fit(X, y)
    _same_fit(model, CRFClassifier(alpha=0.1, order=2).fit(X, y))


def test_without_warm_start_a_refit_starts_from_zero():
    X, y = _chain_corpus()
    model = CRFClassifier(alpha=0.3).fit(X, y)
    model.set_params(alpha=0.1).fit(X, y)
    _same_fit(model, CRFClassifier(alpha=0.1).fit(X, y))


def test_warm_start_on_a_sequence_matrix_matches_by_feature_count():
    X, y = _chain_corpus()
    from skcrf import SequenceVectorizer

    matrix = SequenceVectorizer().fit_transform(X)
    unnamed = SequenceMatrix(matrix.matrix, matrix.offsets)
    cold = CRFClassifier(alpha=0.1, **TIGHT).fit(unnamed, y)
    warm = CRFClassifier(alpha=0.3, warm_start=True, **TIGHT).fit(unnamed, y)
    warm.set_params(alpha=0.1).fit(unnamed, y)
    assert warm.n_iter_ < cold.n_iter_


def test_old_pickles_without_warm_start_load():
    X, y = _chain_corpus()
    for model in (CRFClassifier(max_iter=20).fit(X, y),
                  SemiMarkovCRF(max_iter=20).fit(*_span_corpus()),
                  TreeCRF(max_iter=20).fit(*_tree_corpus())):
        state = model.__getstate__()
        del state["warm_start"]
        old = object.__new__(type(model))
        old.__setstate__(state)
        restored = pickle.loads(pickle.dumps(old))
        assert restored.get_params()["warm_start"] is False


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_warm_start_must_be_a_bool(bad):
    X, y = _chain_corpus()
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
