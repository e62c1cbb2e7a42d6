"""Chain structures with forbidden transitions: loss, gradient and fused kernels.

The loss sums over the allowed labellings only; the forbidden weights get a
gradient of exactly 0 (at weight 0, with L2), so training never moves them.
"""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import approx_fprime
from scipy.special import logsumexp

from skcrf._estimators.constraints import TransitionConstraints
from skcrf.features.arrays import as_feature_arrays
from skcrf.learning.objective import NegativeLogLikelihood
from skcrf.structures.chain.order1 import ChainStructure
from tests._structure_checks import assert_fused_equals_unfused

VARIANTS = {"order1": dict(), "order2": dict(order=2),
            "edges": dict(transition_columns=np.array([True, False, True, True]))}


def _problem(seed, n_classes=3, n_features=4):
    """Random features and gold labels, and constraints the gold keeps to."""
    rng = np.random.default_rng(seed)
    lengths = np.array([1, 4, 3, 0, 2])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tokens = int(offsets[-1])
    X = sp.csr_matrix((rng.random((n_tokens, n_features)) < 0.6)
                      * rng.normal(size=(n_tokens, n_features)))
    label_ids = rng.integers(0, n_classes, size=n_tokens)
    constraints = TransitionConstraints.none(n_classes)
    used = {(label_ids[t - 1], label_ids[t]) for lo, hi in zip(offsets[:-1], offsets[1:])
            for t in range(lo + 1, hi)}
    for a, b in itertools.product(range(n_classes), repeat=2):
        if (a, b) not in used and rng.random() < 0.6:
            constraints.allowed[a, b] = False
    firsts = set(label_ids[offsets[:-1][lengths > 0]].tolist())
    constraints.start[[k for k in range(n_classes) if k not in firsts][:1]] = False
    assert constraints.any
    return X, offsets, label_ids, n_classes, constraints


def _structure(problem, **variant):
    X, offsets, label_ids, n_classes, constraints = problem
    return ChainStructure.for_training(as_feature_arrays(X), offsets, label_ids, n_classes,
                                       constraints=constraints, **variant)


def _loss(structure, problem, fused=True, l2=0.2):
    X, offsets, label_ids, _, _ = problem
    return NegativeLogLikelihood(structure, as_feature_arrays(X), offsets, label_ids, l2,
                                 fused=fused)


def _brute_force_nll(structure, problem, w):
    """sum_q log Z_q - score(gold_q), Z over the labellings the constraints allow."""
    from skcrf.structures.chain.order1 import chain_labelling_scores

    X, offsets, label_ids, n_classes, constraints = problem
    scores = structure.scores(as_feature_arrays(X), w)
    total = 0.0
    for q, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
        if hi == lo:
            continue
        one = np.array([0, hi - lo], dtype=np.int64)
        sub = type(scores)(scores.unary[lo:hi], scores.transitions, scores.start, scores.end,
                           scores.trigram, None if scores.edges is None else scores.edges[lo:hi])
        every = [np.array(p) for p in itertools.product(range(n_classes), repeat=hi - lo)]
        allowed = [p for p in every
                   if constraints.start[p[0]] and constraints.end[p[-1]]
                   and all(constraints.allowed[a, b] for a, b in zip(p[:-1], p[1:]))]
        path_scores = [chain_labelling_scores(sub, one, p)[0] for p in allowed]
        assert np.isfinite(path_scores).all()
        assert len(allowed) < len(every) or hi - lo == 1
        total += logsumexp(path_scores) - chain_labelling_scores(sub, one, label_ids[lo:hi])[0]
    return total


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_loss_sums_over_the_allowed_labellings(variant):
    problem = _problem(0)
    structure = _structure(problem, **VARIANTS[variant])
    w = np.random.default_rng(1).normal(size=structure.n_parameters)
    loss = _loss(structure, problem, l2=0.0)
    np.testing.assert_allclose(loss(w)[0], _brute_force_nll(structure, problem, w), rtol=1e-10)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_gradient_is_finite_differences_and_zero_on_forbidden_weights(variant):
    problem = _problem(2)
    structure = _structure(problem, **VARIANTS[variant])
    loss = _loss(structure, problem)
    layout = structure.layout
    w = np.random.default_rng(3).normal(scale=0.5, size=structure.n_parameters)
    forbidden = np.zeros(structure.n_parameters, dtype=bool)
    layout.view(forbidden, "transitions")[:] = ~problem[4].allowed
    layout.view(forbidden, "start")[:] = ~problem[4].start
    w[forbidden] = 0.0  # where training starts and stays
    value, grad = loss(w)
    assert np.isfinite(value)
    assert np.all(grad[forbidden] == 0.0)
    numeric = approx_fprime(w, lambda v: loss(v)[0], 1e-6)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("variant", ["order1", "edges"])
def test_fused_kernels_equal_the_unfused_path_with_constraints(variant):
    problem = _problem(4)
    structure = _structure(problem, **VARIANTS[variant])
    fused, unfused = _loss(structure, problem), _loss(structure, problem, fused=False)
    assert_fused_equals_unfused(fused, unfused, scales=(0.5, 40.0), seed=5)


def test_coefficients_show_the_forbidden_weights_as_minus_inf():
    problem = _problem(6)
    structure = _structure(problem)
    named = structure.coefficients(np.zeros(structure.n_parameters))
    np.testing.assert_array_equal(np.isfinite(named["transitions"]), problem[4].allowed)
    np.testing.assert_array_equal(np.isfinite(named["start"]), problem[4].start)
    assert np.isfinite(named["end"]).all()
