"""The online solvers through the estimators: fit, partial_fit, their state and their errors."""

import io
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skcrf import (CRFClassifier, SemiMarkovCRF, SequenceMatrix, SequenceVectorizer, TreeCRF,
                   load_model, save_model)
from tests._toys import chain_corpus, span_corpus, tree_corpus

SOLVERS = ("sgd", "perceptron", "passive_aggressive", "arow")

CASES = {
    "chain": (CRFClassifier, {}, chain_corpus),
    "chain-l1": (CRFClassifier, {"l1_ratio": 0.5}, chain_corpus),
    "order2": (CRFClassifier, {"order": 2}, chain_corpus),
    "transition-features": (CRFClassifier, {"transition_features": "all"}, chain_corpus),
    "constrained": (CRFClassifier, {"allowed_transitions": "bio"}, span_corpus),
    "semimarkov": (SemiMarkovCRF, {"max_segment_length": 3}, span_corpus),
    "tree": (TreeCRF, {}, tree_corpus),
}


def _classes(y):
    return sorted({label for labels in y for label in labels})


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_structure_learns_with_every_solver(case, solver):
    """fit learns the toy task, and partial_fit over batches too."""
    estimator, params, corpus = CASES[case]
    X, y = corpus()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = estimator(solver=solver, max_iter=30, random_state=0, **params).fit(X, y)
    assert model.score(X, y) >= 0.95
    assert model.solver_state_["solver"] == solver
    marginals = model.predict_marginals(X[:3])
    np.testing.assert_allclose([m.sum(axis=1) for m in marginals][0], 1.0)
    streamed = estimator(solver=solver, random_state=0, **params)
    for _ in range(5):
        for lo in range(0, len(X), 10):
            streamed.partial_fit(X[lo:lo + 10], y[lo:lo + 10], classes=_classes(y))
    assert streamed.score(X, y) >= 0.9
    assert streamed.n_iter_ == 1 and len(streamed.loss_curve_) == 20


def _matrix(X):
    return SequenceVectorizer().fit_transform(X)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("case", ["chain", "chain-l1", "semimarkov", "tree"])
def test_partial_fit_over_batches_is_fit_on_their_concatenation(case, solver):
    """Bit for bit, when nothing is shuffled and the layout does not depend on the data.

    Two batches of equal size with alpha / 2 each: the penalty counts once
    per call.
    """
    estimator, params, corpus = CASES[case]
    X, y = corpus(n_sequences=40)
    M = _matrix(X)
    common = dict(params, solver=solver, shuffle=False, eta0=0.05, all_possible_states=True,
                  average=True if solver != "arow" else False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter=1 by design
        whole = estimator(alpha=0.5, max_iter=1, **common).fit(M, y)
    parts = estimator(alpha=0.25, **common)
    for lo in (0, 20):
        parts.partial_fit(M[lo:lo + 20], y[lo:lo + 20], classes=_classes(y))
    for name in ("coef_", "transition_coef_"):
        np.testing.assert_array_equal(getattr(parts, name), getattr(whole, name))
    np.testing.assert_array_equal(parts.solver_state_["w"], whole.solver_state_["w"])


@pytest.mark.parametrize("solver", ("lbfgs",) + SOLVERS)
def test_zero_weights_are_removal(solver):
    X, y = span_corpus()
    weights = np.ones(len(X))
    weights[[1, 5, 6]] = 0.0
    kept = [q for q in range(len(X)) if weights[q]]
    params = dict(solver=solver, max_iter=5, random_state=0, eta0=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        weighted = CRFClassifier(**params).fit(X, y, sample_weight=weights)
        removed = CRFClassifier(**params).fit([X[q] for q in kept], [y[q] for q in kept])
    np.testing.assert_array_equal(weighted.coef_, removed.coef_)
    np.testing.assert_array_equal(weighted.feature_names_, removed.feature_names_)


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("solver", SOLVERS)
def test_integer_weights_are_repetition(solver, shuffle):
    """An online solver visits a sequence of weight k k times: bit for bit the repeated data."""
    X, y = chain_corpus(20)
    weights = np.tile([1.0, 2.0, 3.0, 1.0], 5)
    repeated = [q for q in range(len(X)) for _ in range(int(weights[q]))]
    params = dict(solver=solver, max_iter=3, random_state=0, shuffle=shuffle, eta0=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        weighted = CRFClassifier(**params).fit(X, y, sample_weight=weights)
        copies = CRFClassifier(**params).fit([X[q] for q in repeated],
                                             [y[q] for q in repeated])
    np.testing.assert_array_equal(weighted.coef_, copies.coef_)
    np.testing.assert_array_equal(weighted.transition_coef_, copies.transition_coef_)


@pytest.mark.parametrize("case", ["chain", "order2", "semimarkov", "tree"])
def test_integer_weights_are_repetition_for_lbfgs(case):
    """The weighted objective is the repeated data's; L-BFGS reaches the same optimum."""
    estimator, params, corpus = CASES[case]
    X, y = corpus(n_sequences=20)
    weights = np.tile([1.0, 2.0, 3.0, 1.0], 5)
    repeated = [q for q in range(len(X)) for _ in range(int(weights[q]))]
    weighted = estimator(tol=1e-10, **params).fit(X, y, sample_weight=weights)
    copies = estimator(tol=1e-10, **params).fit([X[q] for q in repeated],
                                                [y[q] for q in repeated])
    np.testing.assert_allclose(weighted.coef_, copies.coef_, atol=1e-6)
    np.testing.assert_allclose(weighted.loss_curve_[-1], copies.loss_curve_[-1], rtol=1e-9)


@pytest.mark.parametrize("solver", ("lbfgs",) + SOLVERS)
@pytest.mark.parametrize("case", ["chain", "tree"])
def test_same_weights_for_one_and_two_threads(case, solver):
    estimator, params, corpus = CASES[case]
    X, y = corpus()
    weights = np.linspace(0.5, 2.0, len(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one, two = (estimator(solver=solver, max_iter=5, random_state=0, n_jobs=n_jobs,
                              **params).fit(X, y, sample_weight=weights) for n_jobs in (1, 2))
    np.testing.assert_array_equal(one.coef_, two.coef_)


def test_partial_fit_needs_an_online_solver_and_the_classes():
    X, y = chain_corpus()
    with pytest.raises(ValueError, match="partial_fit needs an online solver"):
        CRFClassifier().partial_fit(X, y, classes=_classes(y))
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        CRFClassifier(solver="perceptron").partial_fit(X, y)
    model = CRFClassifier(solver="perceptron").partial_fit(X[:5], y[:5], classes=_classes(y))
    with pytest.raises(ValueError, match=r"y\[0\]\[1\].*'X', which is not a label"):
        model.partial_fit([X[0]], [[y[0][0], "X"] + y[0][2:]])
    with pytest.raises(ValueError, match="classes brings"):
        model.partial_fit(X[:2], y[:2], classes=_classes(y) + ["X"])
    model.set_params(solver="sgd")
    with pytest.raises(ValueError, match="trained with solver='perceptron'"):
        model.partial_fit(X[:2], y[:2])


def test_partial_fit_takes_new_feature_names_and_keeps_the_old_weights():
    X, y = chain_corpus()
    # SGD: every pair of a visited sequence's features moves (a perceptron right on
    # the second batch would not move at all)
    model = CRFClassifier(solver="sgd", shuffle=False)
    model.partial_fit(X[:20], y[:20], classes=_classes(y))
    before = dict(zip(model.feature_names_.tolist(), model.coef_.T))
    renamed = [[dict(token, extra=token["w"].upper()) for token in seq] for seq in X[20:]]
    model.partial_fit(renamed, y[20:])
    names = model.feature_names_.tolist()
    assert names[:len(before)] == list(before)  # appended, not reordered
    new = [k for k, name in enumerate(names) if name.startswith("extra=")]
    assert new and np.abs(model.coef_[:, new]).sum() > 0
    assert model.vectorizer_.transform([renamed[0]]).n_features == len(names)
    assert model.score(renamed, y[20:]) >= 0.9


def test_partial_fit_keeps_a_matrix_width_and_the_longest_segment():
    X, y = chain_corpus()
    M = _matrix(X)
    model = CRFClassifier(solver="arow").partial_fit(M, y, classes=_classes(y))
    with pytest.raises(ValueError, match="keeps its width"):
        model.partial_fit(_matrix(X[:3] + [[{"new": 1.0}]]), y[:3] + [["N"]])
    with pytest.raises(TypeError, match="fitted on a SequenceMatrix"):
        model.partial_fit(X, y)
    X, y = span_corpus()
    short = [q for q in range(len(y)) if "I-PER" not in y[q]]
    tagger = SemiMarkovCRF(solver="perceptron")
    tagger.partial_fit([X[q] for q in short], [y[q] for q in short], classes=_classes(y))
    with pytest.raises(ValueError, match="keeps the longest segment of each label"):
        tagger.partial_fit(X, y)


def test_a_damaged_solver_state_is_refused_before_the_kernels_read_it():
    X, y = chain_corpus()
    model = CRFClassifier(solver="sgd", l1_ratio=0.5).partial_fit(X, y, classes=_classes(y))
    state = model.solver_state_
    for damage, match in [
        (lambda s: s.update(w=s["w"][:-1]), "weights"),
        (lambda s: s.update(counters=s["counters"][:3]), "'counters'"),
        (lambda s: s["pairs"]["state"].update(labels=s["pairs"]["state"]["labels"] + 9),
         "labels outside"),
        (lambda s: s["pairs"]["state"].update(
            feature_ptr=s["pairs"]["state"]["feature_ptr"][::-1].copy()), "pattern"),
        (lambda s: s.update(solver="newton"), "online solver"),
    ]:
        damaged = {**state, "pairs": {"state": dict(state["pairs"]["state"])}}
        damage(damaged)
        model.solver_state_ = damaged
        with pytest.raises(ValueError, match=match):
            model.partial_fit(X[:3], y[:3])
    model.solver_state_ = state
    model.partial_fit(X[:3], y[:3])


@pytest.mark.parametrize("solver", SOLVERS)
def test_solver_state_round_trips_through_a_model_file(solver):
    X, y = span_corpus()
    model = CRFClassifier(solver=solver, l1_ratio=0.5, random_state=0, average=True)
    model.partial_fit(X[:20], y[:20], classes=_classes(y))
    buffer = io.BytesIO()
    save_model(model, buffer)
    buffer.seek(0)
    loaded = load_model(buffer)
    for m in (model, loaded):
        m.set_params(random_state=1)
        m.partial_fit(X[20:], y[20:])
    np.testing.assert_array_equal(model.coef_, loaded.coef_)
    for name in ("w", "counters", "average_sum", "l1_applied", "covariance"):
        np.testing.assert_array_equal(model.solver_state_[name], loaded.solver_state_[name])


def test_early_stopping_verbose_and_convergence_warning(capsys):
    X, y = chain_corpus(60)
    model = CRFClassifier(solver="sgd", early_stopping=True, validation_fraction=0.25,
                          n_iter_no_change=2, max_iter=40, random_state=0, verbose=1)
    model.fit(X, y)
    out = capsys.readouterr().out.splitlines()
    header = next(k for k, line in enumerate(out) if line.split()[:2] == ["epoch", "loss"])
    assert "validation" in out[header]
    epochs = out[header + 1:]
    assert len(epochs) == model.n_iter_ < 40
    assert all(float(line.split()[2]) <= 1.0 for line in epochs)  # token accuracy
    with pytest.warns(ConvergenceWarning, match="did not converge in max_iter=2"):
        CRFClassifier(solver="sgd", max_iter=2, random_state=0).fit(*span_corpus())


@pytest.mark.parametrize("params, match", [
    ({"solver": "sgd", "learning_rate": "optimal", "alpha": 0.0}, "needs alpha > 0"),
    ({"solver": "sgd", "learning_rate": "constant"}, "needs a given eta0"),
    ({"solver": "sgd", "eta0": 1e6, "l1_ratio": 0.0}, "eta0=1e\\+06 is too large"),
    ({"solver": "sgd", "early_stopping": True}, "early_stopping needs at least 2"),
    ({"solver": "perceptron", "average": 0}, "'average' parameter"),
    ({"solver": "arow", "C": 0.0}, "'C' parameter"),
])
def test_bad_online_settings_are_named(params, match):
    X, y = [[{"w": "a"}, {"w": "b"}]], [["A", "B"]]
    with pytest.raises(ValueError, match=match):
        CRFClassifier(**params).fit(X, y)


def test_dask_fit_refuses_an_online_solver():
    pytest.importorskip("distributed")
    import dask.bag as db

    from skcrf.dask import fit

    X, y = chain_corpus(4)
    with pytest.raises(ValueError, match="trains with L-BFGS"):
        fit(CRFClassifier(solver="sgd"), db.from_sequence(X), db.from_sequence(y),
            client=object())


def test_a_sequence_matrix_without_names_keeps_one_name_array_across_calls():
    X, y = chain_corpus()
    M = _matrix(X)
    M = SequenceMatrix(M.matrix, M.offsets)  # no feature names
    model = CRFClassifier(solver="perceptron").partial_fit(M, y, classes=_classes(y))
    names = model.feature_names_
    model.partial_fit(M, y)
    assert model.feature_names_ is names


def test_a_batch_the_model_already_labels_right_leaves_zero_weights_without_error():
    """A perceptron that makes no mistake on its first batch stays at zero: no error."""
    X = [[{"w": "a"}, {"w": "b"}]] * 3
    model = CRFClassifier(solver="perceptron").partial_fit(X, [["A", "A"]] * 3,
                                                           classes=["A", "B"])
    assert not model.coef_.any()
    assert model.predict(X)[0].tolist() == ["A", "A"]
