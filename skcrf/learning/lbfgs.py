"""Solvers: plain functions of an initial point and a ``loss_grad`` callable.

``loss_grad(w)`` returns the smooth part of the objective and its gradient (the
negative log-likelihood plus the L2 term). The L1 term, which is not smooth, is
the solver's business.
"""

import time
from dataclasses import dataclass, field
from enum import Enum

import numpy as np


class Stop(Enum):
    """Why a solver stopped; the estimator acts on this, not on the message."""

    TOL = "relative improvement below tol"
    GRADIENT = "gradient below epsilon"
    MAX_ITER = "reached max_iter"
    LINE_SEARCH = "the line search could not decrease the objective"
    NOT_FINITE = "the objective is not finite at the starting point"


@dataclass
class SolverResult:
    """What a solver hands back to the estimator."""

    w: np.ndarray
    n_iter: int
    stop: Stop
    loss_curve: list = field(default_factory=list)

    @property
    def converged(self):
        """Whether a stopping rule held (the line search giving up counts)."""
        return self.stop in (Stop.TOL, Stop.GRADIENT, Stop.LINE_SEARCH)

    @property
    def message(self):
        return self.stop.value


class _Progress:
    """Loss history, the stopping rule and the verbose report, shared by solvers.

    Stopping follows CRFsuite: after ``period`` iterations, stop once the
    objective improved by less than ``tol`` relative to its value ``period``
    iterations ago. That criterion does not depend on the scale of a summed loss,
    unlike a gradient-norm threshold.
    """

    period = 10

    def __init__(self, tol, verbose):
        self.tol = tol
        self.verbose = verbose
        self.loss_curve = []
        self._started = time.perf_counter()

    def record(self, loss, grad_norm):
        """Record one finished iteration; return True when the rule says stop."""
        self.loss_curve.append(float(loss))
        n = len(self.loss_curve)
        if self.verbose:
            self._report(n, loss, grad_norm)
        if n > self.period:
            before = self.loss_curve[-1 - self.period]
            improvement = (before - loss) / max(abs(loss), np.finfo(float).tiny)
            if improvement < self.tol:
                return True
        return False

    def _report(self, n, loss, grad_norm):
        # Plain aligned columns under a header, one flushed line per iteration:
        # they read the same in a terminal, a log file and a pipe (no "\r").
        if n == 1:
            print(f"{'iteration':>9}  {'objective':>15}  {'gradient norm':>13}  "
                  f"{'elapsed (s)':>11}", flush=True)
        elapsed = time.perf_counter() - self._started
        print(f"{n:>9d}  {loss:>15.8e}  {grad_norm:>13.3e}  {elapsed:>11.2f}", flush=True)


def _pseudo_gradient(w, grad, l1):
    """Minimum-norm subgradient of ``loss + l1 * ||w||_1`` (Andrew & Gao, 2007).

    Where ``w_i != 0`` it is ``grad_i + l1 * sign(w_i)``. Where ``w_i == 0`` it
    is the one-sided derivative that points downhill, or 0 when neither does
    (the weight stays at zero).
    """
    if l1 == 0:
        return grad
    pseudo = grad + l1 * np.sign(w)
    at_zero = w == 0
    g = grad[at_zero]
    pseudo[at_zero] = np.where(g + l1 < 0, g + l1, np.where(g - l1 > 0, g - l1, 0.0))
    return pseudo


def _two_loop(pseudo, pairs):
    """``-H @ pseudo`` with the L-BFGS inverse-Hessian estimate from ``pairs``."""
    direction = -pseudo
    coefs = []
    for s, y, rho in reversed(pairs):
        a = rho * (s @ direction)
        direction -= a * y
        coefs.append(a)
    if pairs:
        s, y, _ = pairs[-1]
        direction *= (s @ y) / (y @ y)
    for (s, y, rho), a in zip(pairs, reversed(coefs)):
        b = rho * (y @ direction)
        direction += (a - b) * s
    return direction


def lbfgs(loss_grad, w0, *, l1=0.0, max_iter=100, tol=1e-5, epsilon=1e-5, verbose=0,
          memory=6, max_linesearch=20):
    """Minimise ``loss_grad(w)[0] + l1 * ||w||_1`` by L-BFGS, or OWL-QN when ``l1 > 0``.

    OWL-QN (Andrew & Gao, 2007), the method CRFsuite uses for L1, keeps each
    step inside the orthant of the current point, so weights that cross zero
    land exactly on zero. With ``l1 == 0`` it is plain L-BFGS. The line search
    backtracks until the Armijo condition holds; curvature pairs with
    ``s @ y <= 0`` are skipped, which keeps the Hessian estimate positive.

    Parameters
    ----------
    loss_grad : callable
        ``loss_grad(w) -> (float, ndarray)``: the smooth part and its gradient.
    w0 : ndarray of shape (n_parameters,)
    l1 : float, default=0.0
    max_iter : int, default=100
    tol : float, default=1e-5
        Relative improvement of the objective over 10 iterations below which
        the solver stops (CRFsuite's ``delta``).
    epsilon : float, default=1e-5
        Stop when ``||pseudo-gradient|| <= epsilon * max(1, ||w||)`` (CRFsuite's
        ``epsilon``).
    verbose : int, default=0
        Print one line per iteration when > 0.
    memory : int, default=6
        Number of curvature pairs kept (CRFsuite's ``num_memories``).
    max_linesearch : int, default=20
        Halvings of the step before the line search gives up.

    Returns
    -------
    SolverResult
    """
    progress = _Progress(tol, verbose)
    w = np.array(w0, dtype=np.float64)
    loss, grad = loss_grad(w)
    objective = loss + l1 * np.abs(w).sum()
    if not np.isfinite(objective):
        return SolverResult(w=w, n_iter=0, stop=Stop.NOT_FINITE,
                            loss_curve=[float(objective)])
    pairs = []
    stop = Stop.MAX_ITER
    pseudo = _pseudo_gradient(w, grad, l1)
    pseudo_norm = np.linalg.norm(pseudo)
    for _ in range(max_iter):
        if pseudo_norm <= epsilon * max(1.0, np.linalg.norm(w)):
            stop = Stop.GRADIENT
            break
        direction = _two_loop(pseudo, pairs)
        if l1 > 0:
            # OWL-QN: drop the components that would move against the pseudo-gradient
            direction[direction * pseudo >= 0] = 0.0
        slope = pseudo @ direction
        if not slope < 0:
            # the estimate lost its way (it can after many skipped pairs): restart
            pairs.clear()
            direction = -pseudo
            slope = -pseudo_norm ** 2
        if l1 > 0:
            orthant = np.sign(w)
            orthant[w == 0] = -np.sign(pseudo[w == 0])
        # the first step is scaled to unit length; later ones trust the estimate
        step = 1.0 / pseudo_norm if not pairs else 1.0
        for _ in range(max_linesearch):
            w_new = w + step * direction
            if l1 > 0:
                w_new[np.sign(w_new) != orthant] = 0.0
            loss_new, grad_new = loss_grad(w_new)
            objective_new = loss_new + l1 * np.abs(w_new).sum()
            if np.isfinite(objective_new) and (
                    objective_new <= objective + 1e-4 * (pseudo @ (w_new - w))):
                break
            step *= 0.5
        else:
            stop = Stop.LINE_SEARCH
            break
        s = w_new - w
        y = grad_new - grad
        sy = s @ y
        if sy > 1e-10 * (y @ y):
            pairs.append((s, y, 1.0 / sy))
            if len(pairs) > memory:
                pairs.pop(0)
        w, grad, objective = w_new, grad_new, objective_new
        # the report shows the gradient norm at the point it reports the objective of
        pseudo = _pseudo_gradient(w, grad, l1)
        pseudo_norm = np.linalg.norm(pseudo)
        if progress.record(objective, pseudo_norm):
            stop = Stop.TOL
            break
    return SolverResult(w=w, n_iter=len(progress.loss_curve), stop=stop,
                        loss_curve=progress.loss_curve)
