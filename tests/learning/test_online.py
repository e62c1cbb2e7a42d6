"""The online solvers on structures directly: their updates, averages, optimum and routes."""

import numpy as np
import pytest
import scipy.sparse as sp

from skcrf.features.arrays import FeatureArrays
from skcrf.learning import _online_kernels as kernels
from skcrf.learning.lbfgs import lbfgs
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.learning.online import (OnlineOptions, OnlineProblem, OnlineState, online,
                                   visits_of_weights)
from skcrf.structures._parameters import StatePairs
from skcrf.structures.chain.order1 import ChainStructure
from skcrf.structures.patterns.chain import PatternChainStructure
from skcrf.structures.semimarkov.structure import SemiMarkovStructure
from skcrf.structures.semimarkov.segment_scores import Segmentation, segment_codes
from skcrf.structures.tree.structure import TreeStructure

SOLVERS = ("sgd", "perceptron", "passive_aggressive", "arow")


def _problem(seed=0, n_sequences=40, n_classes=3, n_features=15, learnable=True,
             values=False):
    """Random sequences of binary (or real) features; labels the features predict, mostly."""
    rng = np.random.RandomState(seed)
    lengths = rng.randint(0, 7, n_sequences)
    lengths[0] = 1  # at least one token; empty sequences stay among the others
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    X = sp.random(n_tokens, n_features, density=0.25, random_state=seed, format="csr")
    X.data[:] = rng.uniform(0.5, 2.0, X.nnz) if values else 1.0
    features = FeatureArrays.from_sparse(X)
    if not values:
        features.data = None
    scores = X @ rng.randn(n_features, n_classes) * (3.0 if learnable else 0.0)
    labels = np.argmax(scores + rng.gumbel(size=scores.shape), axis=1).astype(np.int64)
    return features, offsets, labels


def _run(structure, features, offsets, targets, options, epochs, generic=False, weights=None):
    problem = OnlineProblem(structure, features, offsets, targets)
    if generic:
        problem.plain = None  # the structures' token-form route
    state = OnlineState.start(options, np.zeros(structure.n_parameters))
    n = offsets.shape[0] - 1
    visits = visits_of_weights(np.ones(n) if weights is None else weights)
    result = online(problem, state, options, visits=visits, n_epochs=epochs)
    return result, state


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("l1_ratio, average, values", [(0.0, 0, False), (0.5, 3, True)])
def test_chain_kernel_takes_the_steps_of_the_token_form_route(solver, l1_ratio, average,
                                                               values):
    """chain_visits (one kernel per epoch) and the structures' token-form route agree.

    Fractional visits (weights 0.5 and 2.5) included; the sums run in other
    orders, so to rounding.
    """
    features, offsets, labels = _problem(values=values)
    structure = ChainStructure.for_training(features, offsets, labels, 3)
    weights = np.ones(offsets.shape[0] - 1)
    weights[[3, 7]] = [0.5, 2.5]
    results = []
    for generic in (False, True):
        options = OnlineOptions(solver=solver, alpha=0.5, l1_ratio=l1_ratio, eta0=0.05,
                                average=average, rng=np.random.RandomState(0))
        results.append(_run(structure, features, offsets, labels, options, 3, generic,
                            weights))
    (fast, fast_state), (generic, generic_state) = results
    np.testing.assert_allclose(fast.w, generic.w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fast.loss_curve, generic.loss_curve, rtol=1e-12)
    np.testing.assert_array_equal(fast_state.counters[kernels.STEPS],
                                  generic_state.counters[kernels.STEPS])


@pytest.mark.parametrize("generic", [False, True])
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
def test_the_average_is_that_of_every_iterate_since_the_start(generic, l1_ratio):
    """(A * w + U) / W is the mean of the model weights after each averaged step."""
    features, offsets, labels = _problem(seed=1, n_sequences=20)
    structure = ChainStructure.for_training(features, offsets, labels, 3)
    problem = OnlineProblem(structure, features, offsets, labels)
    if generic:
        problem.plain = None
    options = OnlineOptions(solver="sgd", alpha=1.0, l1_ratio=l1_ratio, eta0=0.3, average=5,
                            rng=np.random.RandomState(0))
    state = OnlineState.start(options, np.zeros(structure.n_parameters))
    settings = options.settings(20.0, 0.3)
    scratch = problem.scratch()
    iterates = []
    for q in list(range(20)) * 2:
        problem.run(state, settings, np.array([q]), np.array([1.0]), scratch)
        iterates.append(state.counters[kernels.SCALE] * state.w)
    np.testing.assert_allclose(state.model_weights(), np.mean(iterates[4:], axis=0),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("l1_ratio", [0.0, 0.5, 1.0])
def test_sgd_reaches_the_lbfgs_optimum(l1_ratio):
    """SGD minimises L-BFGS's objective: within 1e-3 of its optimum, exact zeros with L1."""
    features, offsets, labels = _problem(seed=2, n_sequences=60)
    structure = ChainStructure.for_training(features, offsets, labels, 3)
    alpha = 1.0
    objective = NegativeLogLikelihood(structure, features, offsets, labels,
                                      l2=alpha * (1 - l1_ratio))

    def total(w):
        return objective(w)[0] + alpha * l1_ratio * np.abs(w).sum()

    optimum = lbfgs(objective, np.zeros(structure.n_parameters), l1=alpha * l1_ratio,
                    max_iter=3000, tol=1e-12, epsilon=1e-10)
    options = OnlineOptions(solver="sgd", alpha=alpha, l1_ratio=l1_ratio, max_iter=400,
                            tol=1e-7, n_iter_no_change=40, rng=np.random.RandomState(0))
    result, state = _run(structure, features, offsets, labels, options, None)
    assert state.eta0 is not None  # calibrated
    assert (total(result.w) - total(optimum.w)) / total(optimum.w) < 1e-3
    if l1_ratio > 0:
        zeros, optimum_zeros = result.w == 0, optimum.w == 0
        assert zeros.any()
        # the weights L1 clips are the optimum's zeros, but for a few at the edge
        assert np.count_nonzero(zeros != optimum_zeros) <= 0.1 * zeros.shape[0]
    else:
        assert not (result.w == 0).any()


def test_the_perceptron_separates_separable_data():
    """A labelling the features decide is learnt exactly, and training stops then."""
    rng = np.random.RandomState(3)
    offsets = np.concatenate([[0], np.cumsum(rng.randint(1, 6, 50))]).astype(np.int64)
    words = rng.randint(0, 6, offsets[-1])
    X = sp.csr_matrix((np.ones(words.shape[0]), (np.arange(words.shape[0]), words)),
                      shape=(words.shape[0], 6))
    features = FeatureArrays.from_sparse(X)
    features.data = None
    labels = (words % 3).astype(np.int64)
    structure = ChainStructure.for_training(features, offsets, labels, 3)
    for solver in ("perceptron", "passive_aggressive", "arow"):
        options = OnlineOptions(solver=solver, max_iter=50, average=0,
                                rng=np.random.RandomState(0))
        result, state = _run(structure, features, offsets, labels, options, None)
        assert result.n_iter < 50
        assert state.counters[kernels.MISTAKES] == 0
        predicted = structure.decode_targets(features, offsets, result.w)
        np.testing.assert_array_equal(predicted, labels)


def test_visits_of_weights():
    sequences, factors = visits_of_weights([1.0, 0.0, 2.0, 0.5, 1.25])
    np.testing.assert_array_equal(sequences, [0, 2, 2, 3, 4, 4])
    np.testing.assert_array_equal(factors, [1.0, 1.0, 1.0, 0.5, 1.0, 0.25])


def test_a_given_eta0_is_not_calibrated_and_calibration_picks_a_rate_of_the_grid():
    features, offsets, labels = _problem(seed=4)
    structure = ChainStructure.for_training(features, offsets, labels, 3)
    given = OnlineOptions(solver="sgd", eta0=0.0123, rng=np.random.RandomState(0))
    assert _run(structure, features, offsets, labels, given, 1)[1].eta0 == 0.0123
    calibrated = OnlineOptions(solver="sgd", rng=np.random.RandomState(0))
    eta0 = _run(structure, features, offsets, labels, calibrated, 1)[1].eta0
    exponent = np.log2(eta0 / calibrated.calibration.eta)
    assert exponent == round(exponent) and -10 <= exponent <= 10


def test_partial_epochs_continue_where_the_last_stopped():
    """Two runs of one epoch from a carried state are the run of two epochs."""
    features, offsets, labels = _problem(seed=5)
    structure = ChainStructure.for_training(features, offsets, labels, 3)
    options = OnlineOptions(solver="sgd", l1_ratio=0.5, eta0=0.1, average=1, shuffle=False)
    whole = _run(structure, features, offsets, labels, options, 2)[0]
    problem = OnlineProblem(structure, features, offsets, labels)
    state = OnlineState.start(options, np.zeros(structure.n_parameters))
    visits = visits_of_weights(np.ones(offsets.shape[0] - 1))
    for _ in range(2):
        state = OnlineState.from_dict(state.as_dict())  # through the fitted attribute
        parts = online(problem, state, options, visits=visits, n_epochs=1)
    np.testing.assert_array_equal(parts.w, whole.w)


# --- the structures' statistics in token form -------------------------------------


def _chain_cases():
    features, offsets, labels = _problem(seed=6, values=True)
    yield "order1", ChainStructure.for_training(features, offsets, labels, 3), features, \
        offsets, labels
    yield "order2", ChainStructure.for_training(features, offsets, labels, 3, order=2), \
        features, offsets, labels
    for order in (2, 3):
        # CRFClassifier's order >= 2: the kept label patterns' automaton
        yield f"patterns{order}", PatternChainStructure.for_training(
            features, offsets, labels, 3, order), features, offsets, labels
    columns = np.zeros(features.n_features, dtype=bool)
    columns[::2] = True
    yield "edges", ChainStructure.for_training(features, offsets, labels, 3,
                                               transition_columns=columns), \
        features, offsets, labels


def _tree_case():
    features, offsets, labels = _problem(seed=7)
    rng = np.random.RandomState(0)
    parents = np.empty(labels.shape[0], dtype=np.int64)
    for q in range(offsets.shape[0] - 1):
        n = offsets[q + 1] - offsets[q]
        parents[offsets[q]:offsets[q + 1]] = [rng.randint(-1, i) if i else -1
                                              for i in range(n)]
    parents.flags.writeable = False
    features.parents = parents
    return "tree", TreeStructure.for_training(features, labels, 3), features, offsets, labels


def _semimarkov_case():
    features, offsets, labels = _problem(seed=8)
    rng = np.random.RandomState(0)
    starts = rng.rand(labels.shape[0]) < 0.5
    starts[offsets[:-1][np.diff(offsets) > 0]] = True
    run_labels = labels.copy()
    for t in range(1, labels.shape[0]):  # a segment keeps its first token's label
        if not starts[t]:
            run_labels[t] = run_labels[t - 1]
    codes = segment_codes(run_labels, starts, 3)
    segmentation = Segmentation.of_codes(codes, offsets, 3)
    first, stops, seg_labels, _ = segmentation.bounds(offsets)
    max_lengths = np.ones(3, dtype=np.int64)
    np.maximum.at(max_lengths, seg_labels, stops - first)
    structure = SemiMarkovStructure.for_training(features, offsets, codes, max_lengths)
    return "semimarkov", structure, features, offsets, codes


CASES = [*_chain_cases(), _tree_case(), _semimarkov_case()]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_token_form_statistics_flatten_to_the_structures_sums(case):
    """statistics_rows and expected_rows, summed into w, are gold_statistics and
    expected_statistics' values; the score of rows is w . Phi."""
    _, structure, features, offsets, targets = case
    rng = np.random.RandomState(0)
    w = rng.randn(structure.n_parameters) * 0.5
    pairs = structure.pair_blocks()
    gold = structure.statistics_rows(features, offsets, targets)
    np.testing.assert_allclose(gold.flatten(structure.layout, pairs, features),
                               structure.gold_statistics(features, offsets, targets),
                               atol=1e-12)
    log_z, expected = structure.expected_rows(features, offsets, w, scale=0.5)
    reference_log_z, reference = structure.expectation_terms(
        features, offsets, fused=False)(0.5 * w)
    np.testing.assert_allclose(log_z, reference_log_z, rtol=1e-12)
    np.testing.assert_allclose(expected.flatten(structure.layout, pairs, features), reference,
                               atol=1e-10)
    best = structure.decode_targets(features, offsets, w)
    assert best.shape == targets.shape


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_every_solver_trains_every_structure(case, solver):
    """A few epochs lower the training loss (or the mistakes) of every structure."""
    _, structure, features, offsets, targets = case
    options = OnlineOptions(solver=solver, alpha=0.1, eta0=0.05, max_iter=6,
                            rng=np.random.RandomState(0))
    result, _ = _run(structure, features, offsets, targets, options, 6)
    assert np.isfinite(result.w).all() and result.w.any()
    assert result.loss_curve[-1] < result.loss_curve[0]


def test_union_of_pairs_keeps_each_pair_and_its_place():
    a = StatePairs.from_coordinates(np.array([0, 0, 2]), np.array([1, 2, 0]), 3, 3)
    b = StatePairs.from_coordinates(np.array([0, 1, 3]), np.array([2, 0, 1]), 4, 3)
    union, in_a, in_b = a.union(b)
    assert union.n_features == 4
    np.testing.assert_array_equal(union.codes(), [1, 2, 3, 6, 10])
    np.testing.assert_array_equal(union.codes()[in_a], a.codes())
    np.testing.assert_array_equal(union.codes()[in_b], b.codes())


def test_sequences_the_scaled_pass_cannot_take_go_through_the_exact_pass():
    """Weights whose scores differ by thousands within a token: exact_chain_visit steps."""
    features, offsets, labels = _problem(seed=9, values=True)
    structure = ChainStructure.for_training(features, offsets, labels, 3)
    w0 = np.zeros(structure.n_parameters)
    w0[: structure.state_pairs.n_pairs:2] = 900.0
    results = []
    for generic in (False, True):
        problem = OnlineProblem(structure, features, offsets, labels)
        if generic:
            problem.plain = None
        options = OnlineOptions(solver="sgd", alpha=0.5, l1_ratio=0.5, eta0=0.01, average=1,
                                shuffle=False)
        state = OnlineState.start(options, w0)
        results.append(online(problem, state, options, n_epochs=2,
                              visits=visits_of_weights(np.ones(offsets.shape[0] - 1))))
    assert all(np.isfinite(result.loss_curve).all() for result in results)
    np.testing.assert_allclose(results[0].w, results[1].w, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(results[0].loss_curve, results[1].loss_curve, rtol=1e-9)
