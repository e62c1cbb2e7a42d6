"""The online solvers on partial labels: SGD on log Z - log Z_allowed, margins toward the
best consistent labelling (constrained Viterbi), fully labelled sequences as before."""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings as hypothesis_settings
from hypothesis import strategies as st

from sklearn.exceptions import ConvergenceWarning

from skcrf import CRFClassifier
from skcrf.learning import _online_kernels as kernels
from skcrf.learning.online import OnlineOptions, OnlineProblem, OnlineState
from skcrf.learning.partial import masked_structure
from skcrf.structures.chain.order1 import ChainStructure
from skcrf.structures.patterns.chain import PatternChainStructure
from tests.learning.test_online import SOLVERS, _problem
from tests._online_checks import assert_step_along_gradient, one_sgd_step
from tests._toys import chain_corpus


def _masked(labels, offsets, n_classes, seed, p_hidden=0.5):
    """Allowed-label masks over some sequences (the others fully labelled), and targets."""
    rng = np.random.default_rng(seed)
    allowed = np.eye(n_classes, dtype=bool)[labels]
    hidden = rng.random(labels.shape[0]) < p_hidden
    allowed[hidden] |= rng.random((int(hidden.sum()), n_classes)) < 0.6
    targets = np.where(allowed.sum(axis=1) == 1, labels, -1)
    return allowed, targets


def _structure(order, features, offsets, labels, n_classes):
    if order == 1:
        return ChainStructure.for_training(features, offsets, labels, n_classes)
    return PatternChainStructure.for_training(features, offsets, labels, n_classes, order)


def _state(solver, structure, seed=0):
    options = OnlineOptions(solver=solver, alpha=0.3, eta0=0.05, average=0,
                            rng=np.random.RandomState(0))
    w0 = np.random.default_rng(seed).normal(scale=0.3, size=structure.n_parameters)
    return options, OnlineState.start(options, w0)


def _steps(problem, solver, structure, visits):
    options, state = _state(solver, structure)
    settings = options.settings(float(len(visits)), 0.05)
    problem.run(state, settings, np.asarray(visits), np.ones(len(visits)), problem.scratch())
    return state


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("order", [1, 2])
def test_fully_labelled_sequences_take_todays_steps_bitwise(solver, order):
    features, offsets, labels = _problem(seed=2, n_sequences=30)
    structure = _structure(order, features, offsets, labels, 3)
    allowed, targets = _masked(labels, offsets, 3, seed=0)
    with_masks = OnlineProblem(structure, features, offsets, targets, allowed)
    assert with_masks.constrained.any() and not with_masks.constrained.all()
    today = OnlineProblem(structure, features, offsets, labels)
    full = np.flatnonzero(~with_masks.constrained)
    visits = np.r_[full, full[::-1]]
    a = _steps(with_masks, solver, structure, visits)
    b = _steps(today, solver, structure, visits)
    np.testing.assert_array_equal(a.w, b.w)
    np.testing.assert_array_equal(a.counters, b.counters)


@pytest.mark.parametrize("solver", ["perceptron", "passive_aggressive", "arow"])
def test_a_constrained_sequence_of_single_labels_steps_as_its_labels(solver):
    # -1 targets with one allowed label each: the constrained Viterbi target is the gold
    features, offsets, labels = _problem(seed=3, n_sequences=20)
    structure = _structure(2, features, offsets, labels, 3)
    allowed = np.eye(3, dtype=bool)[labels]
    constrained = OnlineProblem(structure, features, offsets, np.full_like(labels, -1),
                                allowed)
    today = OnlineProblem(structure, features, offsets, labels)
    visits = np.flatnonzero(np.diff(offsets) > 0)
    a = _steps(constrained, solver, structure, visits)
    b = _steps(today, solver, structure, visits)
    np.testing.assert_array_equal(a.w, b.w)


@pytest.mark.parametrize("order", [1, 2])
def test_an_sgd_step_on_a_constrained_sequence_is_the_partial_gradient(order):
    from skcrf.features.arrays import sequence_view
    from skcrf.learning.partial import PartialLabelObjective
    from tests.learning.test_partial import _partial

    features, offsets, labels = _problem(seed=4, n_sequences=12)
    structure = _structure(order, features, offsets, labels, 3)
    allowed, targets = _masked(labels, offsets, 3, seed=1, p_hidden=0.8)
    problem = OnlineProblem(structure, features, offsets, targets, allowed)
    q = int(np.flatnonzero(problem.constrained & (np.diff(offsets) > 1))[0])
    w0 = np.random.default_rng(0).normal(scale=0.3, size=structure.n_parameters)
    state = one_sgd_step(problem, q, w0)
    lo, hi = offsets[q], offsets[q + 1]
    one = np.array([0, hi - lo], dtype=np.int64)
    part, _ = sequence_view(features, offsets, q)
    loss, grad = PartialLabelObjective(structure, part, one,
                                       _partial(labels[lo:hi], allowed[lo:hi], one),
                                       l2=0.0)(w0)
    assert_step_along_gradient(state, w0, loss, grad)


def _best_consistent(unary, transitions, start, end, allowed):
    best, best_path = -np.inf, None
    for path in itertools.product(range(unary.shape[1]), repeat=unary.shape[0]):
        if not allowed[np.arange(len(path)), path].all():
            continue
        score = (start[path[0]] + end[path[-1]] + unary[np.arange(len(path)), path].sum()
                 + sum(transitions[a, b] for a, b in zip(path[:-1], path[1:])))
        if score > best:
            best, best_path = score, path
    return best, best_path


@hypothesis_settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), p_hidden=st.floats(0.0, 1.0))
def test_the_margin_target_is_the_best_consistent_labelling(seed, p_hidden):
    features, offsets, labels = _problem(seed=seed % 50, n_sequences=6)
    structure = ChainStructure.for_training(features, offsets, labels, 3)
    structure.transition_mask[0, 1] = -np.inf  # -inf potentials too
    rng = np.random.default_rng(seed)
    allowed = np.eye(3, dtype=bool)[labels]
    allowed |= rng.random(allowed.shape) < p_hidden
    w = rng.normal(size=structure.n_parameters)
    mask = np.where(allowed, 0.0, -np.inf)
    target = masked_structure(structure, mask).decode_targets(features, offsets, w)
    scores = structure.scores(features, w)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if hi == lo:
            continue
        best, path = _best_consistent(scores.unary[lo:hi], scores.transitions, scores.start,
                                      scores.end, allowed[lo:hi])
        if path is None:
            continue  # the mask and the -inf transitions admit nothing
        assert allowed[np.arange(lo, hi), target[lo:hi]].all()
        got = (scores.start[target[lo]] + scores.end[target[hi - 1]]
               + scores.unary[np.arange(lo, hi), target[lo:hi]].sum()
               + scores.transitions[target[lo:hi - 1], target[lo + 1:hi]].sum())
        assert got == pytest.approx(best, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("order", [1, 2])
def test_online_fits_learn_from_partial_labels(solver, order):
    X, y = chain_corpus(60, seed=1)
    rng = np.random.default_rng(0)
    hidden = [[None if rng.random() < 0.3 else label for label in labels] for labels in y]
    hidden[0] = [{label, "ADJ"} for label in y[0]]
    hidden[1] = [None] * len(y[1])
    crf = CRFClassifier(alpha=0.01, order=order, solver=solver, max_iter=10, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 10 epochs are enough here
        crf.fit(X, hidden)
    X_test, y_test = chain_corpus(30, seed=2)
    assert crf.score(X_test, y_test) > 0.95


def test_partial_fit_takes_partial_labels_in_the_first_calls_classes():
    X, y = chain_corpus(60, seed=1)
    rng = np.random.default_rng(1)
    hidden = [[None if rng.random() < 0.3 else label for label in labels] for labels in y]
    hidden[3] = [{"N", "V"}] * len(y[3])
    crf = CRFClassifier(solver="sgd", random_state=0)
    crf.partial_fit(X[:30], hidden[:30], classes=["ADJ", "DET", "N", "V", "X"])
    crf.partial_fit(X[30:], hidden[30:], sample_weight=np.full(30, 2.0))
    assert crf.classes_.tolist() == ["ADJ", "DET", "N", "V", "X"]
    X_test, y_test = chain_corpus(30, seed=2)
    assert crf.score(X_test, y_test) > 0.9
    with pytest.raises(ValueError, match="'Y' .*not a label of the model"):
        crf.partial_fit(X[:2], [[{"N", "Y"}] * len(y[0]), y[1]])


def test_online_labels_that_admit_no_labelling_name_the_sequence():
    from tests._toys import span_corpus

    X, y = span_corpus(20, seed=0)
    q = next(i for i, tags in enumerate(y) if len(tags) >= 2 and tags[0] == "O")
    y[q] = ["O", "I-PER"] + [None] * (len(y[q]) - 2)
    with pytest.raises(ValueError, match=f"sequence {q} admit no labelling"):
        CRFClassifier(allowed_transitions="bio", solver="perceptron").fit(X, y)


def test_warm_start_continues_online_on_partial_labels():
    X, y = chain_corpus(40, seed=5)
    rng = np.random.default_rng(2)
    y = [[None if rng.random() < 0.3 else label for label in labels] for labels in y]
    crf = CRFClassifier(solver="sgd", alpha=0.1, max_iter=3, warm_start=True,
                        random_state=0)
    with pytest.warns(ConvergenceWarning):
        crf.fit(X, y)
    first_curve = list(crf.loss_curve_)
    with pytest.warns(ConvergenceWarning):
        crf.fit(X, y)
    # the second fit starts where the first ended, not from zero
    assert crf.loss_curve_[0] < first_curve[0]


@pytest.mark.parametrize("solver", ["sgd", "perceptron"])
def test_online_sample_weight_is_repetition_on_partial_labels(solver):
    X, y = chain_corpus(20, seed=6)
    rng = np.random.default_rng(3)
    y = [[None if rng.random() < 0.3 else label for label in labels] for labels in y]
    weights = np.ones(len(X))
    weights[[2, 5]] = 2.0
    repeated = [q for q in range(len(X)) for _ in range(int(weights[q]))]
    params = dict(solver=solver, max_iter=3, shuffle=False, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = CRFClassifier(**params).fit(X, y, sample_weight=weights)
        b = CRFClassifier(**params).fit([X[q] for q in repeated], [y[q] for q in repeated])
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12, atol=1e-12)


def _token_form(problem):
    """The same problem stepped through the structures' token-form route only."""
    import copy

    reference = copy.copy(problem)
    reference.plain = None
    return reference


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("l1, average", [(0.0, 0), (0.2, 3)])
def test_constrained_visits_batched_step_as_the_token_form_route(solver, l1, average):
    features, offsets, labels = _problem(seed=7, n_sequences=40)
    structure = _structure(1, features, offsets, labels, 3)
    structure.transition_mask[2, 0] = -np.inf  # -inf potentials too
    allowed, targets = _masked(labels, offsets, 3, seed=3, p_hidden=0.4)
    allowed[:, 0] |= allowed[:, 2]  # keep every sequence feasible under the -inf transition
    targets = np.where(allowed.sum(axis=1) == 1, labels, -1)
    problem = OnlineProblem(structure, features, offsets, targets, allowed)
    assert problem.constrained.any() and not problem.constrained.all()
    rng = np.random.default_rng(0)
    visits = np.r_[rng.permutation(40), rng.permutation(40)]
    factors = np.where(rng.random(visits.shape[0]) < 0.2, 0.5, 1.0)
    results = []
    for route in (problem, _token_form(problem)):
        options = OnlineOptions(solver=solver, alpha=0.3, l1_ratio=l1 and 0.5, eta0=0.05,
                                average=average, rng=np.random.RandomState(0))
        w0 = np.random.default_rng(1).normal(scale=0.3, size=structure.n_parameters)
        state = OnlineState.start(options, w0)
        route.run(state, options.settings(float(visits.shape[0]), 0.05), visits, factors,
                  route.scratch())
        assert not state.counters[kernels.FAILED]
        results.append(state)
    a, b = results
    assert a.counters[kernels.MISTAKES] == b.counters[kernels.MISTAKES]
    np.testing.assert_allclose(a.counters, b.counters, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.w, b.w, rtol=1e-8, atol=1e-10)
    if average:
        np.testing.assert_allclose(a.average_sum, b.average_sum, rtol=1e-8, atol=1e-10)


def test_a_constrained_visit_the_scaled_passes_cannot_take_is_finished_exactly():
    # scores of thousands: the scaled pass overflows, the token-form route takes the visit
    features, offsets, labels = _problem(seed=8, n_sequences=12)
    structure = _structure(1, features, offsets, labels, 3)
    allowed, targets = _masked(labels, offsets, 3, seed=4, p_hidden=0.6)
    problem = OnlineProblem(structure, features, offsets, targets, allowed)
    visits = np.flatnonzero(problem.constrained)
    results = []
    for route in (problem, _token_form(problem)):
        options = OnlineOptions(solver="sgd", alpha=0.1, eta0=1e-6, average=0,
                                rng=np.random.RandomState(0))
        w0 = np.random.default_rng(2).normal(scale=2000.0, size=structure.n_parameters)
        state = OnlineState.start(options, w0)
        route.run(state, options.settings(float(visits.shape[0]), 0.05), visits,
                  np.ones(visits.shape[0]), route.scratch())
        assert not state.counters[kernels.FAILED]
        results.append(state)
    np.testing.assert_allclose(results[0].counters, results[1].counters, rtol=1e-9)
    np.testing.assert_allclose(results[0].w, results[1].w, rtol=1e-9, atol=1e-9)
