"""CRFClassifier(order=d, prune_threshold=...): higher orders trained on a pruned lattice."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

from skcrf import CRFClassifier, load_model, save_model
from skcrf._estimators.pruning import PRUNER_ATTRIBUTES, PrunedTrainingProblem
from skcrf.structures.chain.order1 import chain_decode
from skcrf.structures.patterns.chain import PatternScores
from tests._threads import results_per_thread_count
from tests.test_chain_orders import _history_corpus


def _noisy_corpus(n_sequences=60, n_labels=4, seed=0):
    """Words that hint at their label, most of the time, and labels that follow each other."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sequences):
        n = int(rng.integers(1, 9))
        label = int(rng.integers(n_labels))
        labels, tokens = [], []
        for _ in range(n):
            label = (label + int(rng.integers(0, 2))) % n_labels
            hint = label if rng.random() < 0.7 else int(rng.integers(n_labels))
            labels.append(f"L{label}")
            tokens.append({f"w{hint}": 1.0, f"r{int(rng.integers(3))}": 1.0})
        X.append(tokens)
        y.append(labels)
    return X, y


def _problem(model, X, y, sample_weight=None):
    """The fit's problem and objective, as ``fit`` builds them."""
    from skcrf._estimators.sample_weights import nonzero_weights

    X, y, weights = nonzero_weights(X, y, sample_weight)
    data = model._training_data(X, y)
    problem = model._training_problem(data)
    return problem, problem.objective(data, l2=model._l2, sequence_weights=weights), data


@pytest.mark.parametrize("order", [2, 3])
def test_keeping_every_label_is_the_exact_objective(order):
    X, y = _noisy_corpus()
    pruned = CRFClassifier(alpha=0.5, order=order, prune_threshold=0.0, max_iter=5)
    exact = CRFClassifier(alpha=0.5, order=order, max_iter=5)
    problem, objective, _ = _problem(pruned, X, y)
    exact_problem, exact_objective, _ = _problem(exact, X, y)
    assert isinstance(problem, PrunedTrainingProblem)
    assert problem.lattice.cand_ptr[-1] == 4 * problem.lattice.cand_ptr.shape[0] - 4
    rng = np.random.default_rng(1)
    for _ in range(3):
        w = rng.normal(scale=0.5, size=problem.n_parameters)
        loss, grad = objective(w)
        exact_loss, exact_grad = exact_objective(w)
        np.testing.assert_allclose(loss, exact_loss, rtol=1e-10)
        np.testing.assert_allclose(grad, exact_grad, rtol=1e-8, atol=1e-8)


def test_the_pruned_gradient_is_the_pruned_loss_derivative():
    X, y = _noisy_corpus(seed=3)
    model = CRFClassifier(alpha=0.5, order=3, prune_threshold=0.05, max_iter=5)
    problem, objective, _ = _problem(model, X, y)
    lattice = problem.lattice
    assert lattice.cand_ptr[-1] < 4 * (lattice.cand_ptr.shape[0] - 1)  # something was pruned
    rng = np.random.default_rng(2)
    w = rng.normal(scale=0.5, size=problem.n_parameters)
    _, grad = objective(w)
    for i in rng.choice(problem.n_parameters, 12, replace=False):
        step = np.zeros_like(w)
        step[i] = 1e-6
        numeric = (objective(w + step)[0] - objective(w - step)[0]) / 2e-6
        np.testing.assert_allclose(grad[i], numeric, rtol=1e-5, atol=1e-6)


def test_the_fit_starts_from_the_order1_model():
    X, y = _noisy_corpus(seed=4)
    problem, _, data = _problem(CRFClassifier(alpha=0.5, order=2, prune_threshold=1e-3,
                                              max_iter=30), X, y)
    w0 = problem.starting_point(np.zeros(problem.n_parameters))
    order1 = CRFClassifier(alpha=0.5, max_iter=30).fit(X, y)
    named = problem.structure.coefficients(w0)
    assert named["pattern_coef"].shape == (0,)  # every pattern starts at 0
    np.testing.assert_allclose(named["coef"], order1.coef_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(named["transitions"], order1.transition_coef_, rtol=1e-12)
    # a warm start's weights are kept
    warm = np.ones(problem.n_parameters)
    assert problem.starting_point(warm) is warm
    # and with patterns at 0 the start decodes as the order-1 model
    scores = problem.structure.scores(data.features, w0)
    assert isinstance(scores, PatternScores)
    np.testing.assert_array_equal(
        scores.decode(data.offsets),
        chain_decode(order1._potentials(data.features, data.offsets), data.offsets))


@pytest.mark.parametrize("order", [2, 3])
def test_a_pruned_fit_learns_what_needs_the_order(order):
    X, y = _history_corpus(order)
    model = CRFClassifier(alpha=0.01, order=order, prune_threshold=1e-3, max_iter=200)
    model.fit(X, y)
    assert model.score(X, y) == 1.0
    assert model.label_patterns_.shape[1] == order + 1


def test_a_pruned_fit_is_close_to_the_exact_one_and_a_usual_model():
    X, y = _noisy_corpus(n_sequences=150, seed=5)
    common = dict(alpha=1.0, l1_ratio=0.0, order=2, max_iter=300, tol=1e-9)
    exact = CRFClassifier(**common).fit(X, y)
    pruned = CRFClassifier(prune_threshold=1e-4, **common).fit(X, y)
    # the same patterns, weights within what the pruned probability moves them
    np.testing.assert_array_equal(pruned.label_patterns_, exact.label_patterns_)
    np.testing.assert_allclose(pruned.pattern_coef_, exact.pattern_coef_, atol=0.05)
    np.testing.assert_allclose(pruned.coef_, exact.coef_, atol=0.05)
    assert np.mean([np.array_equal(a, b) for a, b in
                    zip(pruned.predict(X), exact.predict(X))]) > 0.95
    for marginals in pruned.predict_marginals(X[:10]):
        np.testing.assert_allclose(marginals.sum(axis=1), 1.0)
    assert pruned.predict_nbest(X[:2], n=3)[0][0][0].tolist() == pruned.predict(X[:1])[0].tolist()


def test_integer_sample_weights_are_repeated_sequences():
    X, y = _noisy_corpus(n_sequences=40, seed=6)
    weights = np.tile([1, 2, 0, 3], 10)
    common = dict(alpha=0.5, l1_ratio=0.0, order=2, prune_threshold=1e-2, max_iter=100,
                  tol=1e-10)
    weighted = CRFClassifier(**common).fit(X, y, sample_weight=weights)
    Xr = [x for x, k in zip(X, weights) for _ in range(k)]
    yr = [s for s, k in zip(y, weights) for _ in range(k)]
    repeated = CRFClassifier(**common).fit(Xr, yr)
    np.testing.assert_allclose(weighted.pattern_coef_, repeated.pattern_coef_, atol=1e-4)
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-4)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_one_and_two_threads_fit_the_same_bits():
    X, y = _noisy_corpus(n_sequences=80, seed=7)

    def fit():
        model = CRFClassifier(alpha=0.5, order=3, prune_threshold=1e-3, max_iter=30).fit(X, y)
        return model.coef_, model.pattern_coef_, model.transition_coef_

    first, second = results_per_thread_count(fit)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_prediction_prunes_as_training_did():
    X, y = _history_corpus(2)
    model = CRFClassifier(alpha=0.01, order=2, prune_threshold=1e-3, max_iter=200).fit(X, y)
    order1 = CRFClassifier(alpha=0.01, max_iter=200).fit(X, y)
    for block, attribute in PRUNER_ATTRIBUTES.items():
        assert getattr(model, attribute).shape == getattr(order1, attribute[7:]).shape
    np.testing.assert_allclose(model.pruner_coef_, order1.coef_, rtol=1e-12, atol=1e-12)
    pruned = [m < 1e-3 for m in order1.predict_marginals(X)]
    for marginals, out in zip(model.predict_marginals(X), pruned):
        out[np.arange(out.shape[0]), np.argmax(marginals, axis=1)] = False
        assert np.all(marginals[out] == 0.0)
        np.testing.assert_allclose(marginals.sum(axis=1), 1.0)
    # a fixed label the pruner would leave out is kept: the pruner is given it too
    first = X[0][:3]
    wrong = "A" if y[0][1] == "B" else "B"
    assert model.predict([first], fixed=[[None, wrong, None]])[0][1] == wrong
    # prediction prunes with the threshold of the fit, whatever the parameter says now
    assert model.pruner_threshold_ == 1e-3
    again = clone(model).set_params(prune_threshold=None)
    again.__dict__.update({k: v for k, v in vars(model).items() if k.endswith("_")})
    for a, b in zip(again.predict_marginals(X), model.predict_marginals(X)):
        np.testing.assert_array_equal(a, b)
    # without the pruner the same weights predict over every label
    for name in [k for k in vars(again) if k.startswith("pruner_")]:
        delattr(again, name)
    assert any((m > 0).all() for m in again.predict_marginals(X))


def test_order1_ignores_it_and_files_keep_it(tmp_path):
    X, y = _noisy_corpus(seed=8)
    plain = CRFClassifier(alpha=0.5, max_iter=30).fit(X, y)
    ignored = CRFClassifier(alpha=0.5, max_iter=30, prune_threshold=0.5).fit(X, y)
    np.testing.assert_array_equal(plain.coef_, ignored.coef_)
    model = CRFClassifier(alpha=0.5, order=2, prune_threshold=1e-3, max_iter=30).fit(X, y)
    assert clone(model).get_params()["prune_threshold"] == 1e-3
    save_model(model, tmp_path / "pruned.skcrf")
    loaded = load_model(tmp_path / "pruned.skcrf")
    assert loaded.prune_threshold == 1e-3
    np.testing.assert_array_equal(loaded.pruner_coef_, model.pruner_coef_)
    for a, b in zip(loaded.predict(X), model.predict(X)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("value", [-0.1, 1.5, "high"])
def test_a_bad_threshold_is_refused(value):
    X, y = _noisy_corpus()
    with pytest.raises(InvalidParameterError, match="prune_threshold"):
        CRFClassifier(order=2, prune_threshold=value).fit(X, y)


def test_online_solvers_are_refused_with_advice():
    X, y = _noisy_corpus()
    model = CRFClassifier(order=2, prune_threshold=1e-3, solver="sgd", max_iter=2)
    with pytest.raises(ValueError, match="prune_threshold needs solver='lbfgs'"):
        model.fit(X, y)
    with pytest.raises(ValueError, match="prune_threshold needs solver='lbfgs'"):
        model.partial_fit(X, y, classes=["L0", "L1", "L2", "L3"])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_model_with_part_of_a_pruner_is_refused():
    X, y = _noisy_corpus(seed=9)
    model = CRFClassifier(alpha=0.5, order=2, prune_threshold=1e-3, max_iter=10).fit(X, y)
    CRFClassifier._fitted_state.check(model)
    del model.pruner_end_coef_
    with pytest.raises(ValueError, match="pruner_end_coef_"):
        CRFClassifier._fitted_state.check(model)


@pytest.mark.parametrize("fixed", [False, True])
def test_prediction_runs_over_the_pruners_lattice_as_the_automaton_would(fixed):
    X, y = _noisy_corpus(n_sequences=50, seed=10)
    model = CRFClassifier(alpha=0.5, order=3, prune_threshold=1e-2, max_iter=40).fit(X, y)
    features, offsets = model._features(X)
    pins = None
    if fixed:
        pins = np.full(offsets[-1], -1, dtype=np.int64)
        pins[::3] = 2
    scores = model._potentials(features, offsets, pins)
    assert scores.lattice is not None
    assert np.isneginf(scores.unary).any()
    over_lattice = scores.posteriors(offsets, with_counts=True)
    scores.lattice = None
    over_automaton = scores.posteriors(offsets, with_counts=True)
    for got, want in zip(over_lattice, over_automaton):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


def test_the_fused_kernel_is_the_unfused_route():
    """Features x weights, lattice pass and scatter in one kernel: as pair_products,
    :meth:`CandidateLattice.posteriors` and the pairs' expectations, with weights."""
    from skcrf.features._kernels import pair_products

    X, y = _noisy_corpus(n_sequences=70, seed=11)
    model = CRFClassifier(alpha=0.5, order=3, prune_threshold=0.05, max_iter=5)
    weights = np.tile([1.0, 2.5, 0.5], 24)[:70]
    problem, objective, data = _problem(model, X, y, sample_weight=weights)
    structure, lattice = problem.structure, problem.lattice
    w = np.random.default_rng(3).normal(scale=0.5, size=problem.n_parameters)
    log_z, expected = objective.terms(w)
    blocks = structure.layout.views(w)
    pairs = structure.state_pairs
    unary = pair_products(*data.features.kernel_args(), pairs.feature_ptr, pairs.labels,
                          np.ascontiguousarray(blocks["state"]), structure.n_classes)
    transitions, start, end = structure.masked_transitions(blocks)
    want = lattice.posteriors(unary, transitions, blocks["patterns"], start, end, weights)
    np.testing.assert_allclose(log_z, want[0], rtol=1e-12)
    got = structure.layout.views(expected)
    np.testing.assert_allclose(got["state"], pairs.expectations(data.features, want[1]),
                               rtol=1e-10, atol=1e-12)
    for name, value in zip(("transitions", "patterns", "start", "end"), want[2:]):
        np.testing.assert_allclose(got[name], value, rtol=1e-10, atol=1e-12)


def test_pruned_prediction_keeps_a_labelling_the_constraints_allow():
    """Labels kept token by token need not join up under IOB2; the pruner's best path does.

    The pruner's labellings of two tokens: (B, I) 0.4, (O, O) 0.3, (O, B) 0.3.
    At 0.5, token 0 keeps O (0.6) and token 1 no label but its most probable,
    I (0.4): O then I is forbidden. Keeping the best path (B, I) keeps a way.
    """
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}, {"w": "d"}, {"w": "e"}]] * 5
    y = [["B-PER", "I-PER"], ["O", "B-PER", "O"]] * 5
    model = CRFClassifier(alpha=1.0, order=2, prune_threshold=1e-3, max_iter=5,
                          allowed_transitions="bio").fit(X, y)
    assert model.classes_.tolist() == ["B-PER", "I-PER", "O"]
    B, I, O = 0, 1, 2
    transitions = np.full((3, 3), -50.0)
    transitions[~model.allowed_transitions_] = -np.inf
    transitions[B, I], transitions[O, O], transitions[O, B] = np.log([0.4, 0.3, 0.3])
    start = np.array([0.0, -np.inf, 0.0])
    model.pruner_coef_ = np.zeros_like(model.pruner_coef_)
    model.pruner_transition_coef_ = transitions
    model.pruner_start_coef_ = start
    model.pruner_end_coef_ = np.zeros(3)
    model.pruner_threshold_ = 0.5
    CRFClassifier._fitted_state.check(model)
    new = [[{"w": "unseen"}, {"w": "unseen"}]]
    marginals = model.predict_marginals(new)[0]
    np.testing.assert_allclose(marginals.sum(axis=1), 1.0)
    assert model.predict(new)[0].tolist() == ["B-PER", "I-PER"]


def test_a_pruner_allowing_what_the_model_forbids_is_refused():
    from tests._toys import span_corpus

    X, y = span_corpus(n_sequences=30, seed=3)
    model = CRFClassifier(alpha=1.0, order=2, prune_threshold=1e-3, max_iter=5,
                          allowed_transitions="bio").fit(X, y)
    CRFClassifier._fitted_state.check(model)
    a, b = np.argwhere(~model.allowed_transitions_)[0]
    model.pruner_transition_coef_ = model.pruner_transition_coef_.copy()
    model.pruner_transition_coef_[a, b] = 0.0
    with pytest.raises(ValueError, match=r"pruner_transition_coef_\[\d+, \d+\] is 0.0"):
        CRFClassifier._fitted_state.check(model)


def test_a_threshold_of_one_is_refused_by_name():
    # issue 43, item 21: 1.0 kept the gold label alone, and fit failed about feature values
    X, y = [[{"w": "a"}, {"w": "b"}]] * 3, [["A", "B"]] * 3
    with pytest.raises(ValueError, match=r"prune_threshold.*\[0(\.0)?, 1(\.0)?\)"):
        CRFClassifier(order=2, prune_threshold=1.0).fit(X, y)
