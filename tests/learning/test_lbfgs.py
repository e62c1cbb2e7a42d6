"""L-BFGS / OWL-QN on problems with known solutions."""

import numpy as np
import pytest
from sklearn.linear_model import Lasso

from skcrf.learning import _steps
from skcrf.learning.lbfgs import Stop, lbfgs


def _least_squares(seed, n_samples=60, n_features=12):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n_samples, n_features))
    w_true = rng.normal(size=n_features) * (rng.random(n_features) < 0.5)
    b = A @ w_true + 0.1 * rng.normal(size=n_samples)

    def loss_grad(w):
        residual = A @ w - b
        return 0.5 * residual @ residual, A.T @ residual

    return A, b, loss_grad


def test_lbfgs_finds_the_least_squares_solution():
    A, b, loss_grad = _least_squares(0)
    result = lbfgs(loss_grad, np.zeros(A.shape[1]), max_iter=200, tol=0.0, epsilon=1e-10)
    assert result.converged
    np.testing.assert_allclose(result.w, np.linalg.lstsq(A, b, rcond=None)[0], atol=1e-6)


def test_owlqn_matches_lasso_with_exact_zeros():
    A, b, loss_grad = _least_squares(1)
    n_samples = A.shape[0]
    l1 = 5.0
    result = lbfgs(loss_grad, np.zeros(A.shape[1]), l1=l1, max_iter=500, tol=0.0,
                   epsilon=1e-10)
    # sklearn's Lasso minimises ||Aw - b||^2 / (2 n) + alpha ||w||_1: alpha = l1 / n
    lasso = Lasso(alpha=l1 / n_samples, fit_intercept=False, tol=1e-12, max_iter=100_000)
    reference = lasso.fit(A, b).coef_
    np.testing.assert_allclose(result.w, reference, atol=1e-5)
    assert np.array_equal(result.w == 0, reference == 0)
    assert (result.w == 0).sum() > 0


def test_loss_curve_decreases_and_counts_iterations():
    A, _, loss_grad = _least_squares(2)
    result = lbfgs(loss_grad, np.zeros(A.shape[1]), l1=1.0, max_iter=7, tol=0.0)
    assert result.n_iter == len(result.loss_curve) == 7
    assert not result.converged and result.stop is Stop.MAX_ITER
    assert np.all(np.diff(result.loss_curve) <= 0)


def test_relative_improvement_rule_stops_early():
    A, _, loss_grad = _least_squares(3)
    result = lbfgs(loss_grad, np.zeros(A.shape[1]), max_iter=1000, tol=1e-3, epsilon=0.0)
    assert result.stop is Stop.TOL and result.converged and result.n_iter < 1000


def test_non_finite_start_is_reported_not_iterated():
    result = lbfgs(lambda w: (np.nan, np.zeros_like(w)), np.zeros(3))
    assert result.stop is Stop.NOT_FINITE and not result.converged and result.n_iter == 0
    assert "not finite" in result.message


def test_line_search_failure_is_its_own_stop():
    # a gradient that points uphill: no step along it decreases the objective
    result = lbfgs(lambda w: (float(w @ w), -2 * w - 1.0), np.zeros(2), max_linesearch=5)
    assert result.stop is Stop.LINE_SEARCH and result.converged and result.n_iter == 0
    assert not result.w.any()


def test_strong_l1_stops_at_zero_weights_at_once():
    # zero is optimal when every |gradient| at zero is below l1: no iteration runs
    A, _, loss_grad = _least_squares(4)
    l1 = 2 * np.abs(loss_grad(np.zeros(A.shape[1]))[1]).max()
    result = lbfgs(loss_grad, np.zeros(A.shape[1]), l1=l1)
    assert result.stop is Stop.GRADIENT and result.n_iter == 0 and not result.w.any()


@pytest.mark.parametrize("w, grad, expected", [
    # away from zero: gradient plus l1 * sign(w)
    ([2.0, -1.0], [0.5, 0.5], [1.5, -0.5]),
    # at zero: the downhill one-sided derivative, or 0 inside [-l1, l1]
    ([0.0, 0.0, 0.0], [-3.0, 3.0, 0.4], [-2.0, 2.0, 0.0]),
])
def test_pseudo_gradient(w, grad, expected):
    pseudo = np.empty(len(grad))
    _steps.pseudo_gradient(np.array(w), np.array(grad), 1.0, pseudo)
    np.testing.assert_allclose(pseudo, expected)
