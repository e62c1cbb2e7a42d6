"""Solvers: plain functions of an initial point and a ``loss_grad`` callable.

``loss_grad(w)`` returns the smooth part of the objective and its gradient (the
negative log-likelihood plus the L2 term). The L1 term, which is not smooth, is
the solver's business.
"""

import time
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from . import _steps as steps


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


class _Pairs:
    """The curvature pairs ``(s, y)``, oldest first, in rows reused once allocated.

    A new pair is written into a free row (:meth:`slot`) and kept by
    :meth:`keep`; past ``memory`` pairs the oldest row is freed for the next.
    Rows are allocated as the pairs come, as many as a short solve needs.
    """

    def __init__(self, memory, n):
        self.s = []
        self.y = []
        self.n = n
        self.memory = memory
        self.rows = []  # (row, s @ y, y @ y), oldest first
        self.free = []

    def __len__(self):
        return len(self.rows)

    def slot(self):
        """The ``(s, y)`` rows the next pair is written into."""
        if not self.free:
            self.free.append(len(self.s))
            self.s.append(np.empty(self.n))
            self.y.append(np.empty(self.n))
        row = self.free[-1]
        return self.s[row], self.y[row]

    def keep(self, sy, yy):
        """Keep the pair just written into :meth:`slot`'s rows, of curvature ``sy``."""
        self.rows.append((self.free.pop(), sy, yy))
        if len(self.rows) > self.memory:
            self.free.append(self.rows.pop(0)[0])

    def clear(self):
        self.free.extend(row for row, _, _ in self.rows)
        self.rows.clear()

    def direction(self, pseudo, direction, owlqn):
        """Write ``-H @ pseudo`` into ``direction``; return its slope ``pseudo @ direction``.

        The L-BFGS two-loop recursion, each update fused with the next
        product it needs; then OWL-QN's sign rule when ``owlqn``.
        """
        rows = self.rows
        s, y = self.s, self.y
        coefs = [0.0] * len(rows)
        # direction = -pseudo, with the product the first update needs
        product = steps.axpby_dot(direction, 0.0, -1.0, pseudo,
                                  s[rows[-1][0]] if rows else pseudo)
        if not rows:
            return steps.descent_slope(direction, pseudo, owlqn)
        for k in range(len(rows) - 1, -1, -1):
            row, sy, _ = rows[k]
            coefs[k] = a = product / sy
            following = s[rows[k - 1][0]] if k else pseudo  # (unused at the end)
            product = steps.axpby_dot(direction, 1.0, -a, y[row], following)
        _, sy, yy = rows[-1]
        product = steps.axpby_dot(direction, sy / yy, 0.0, pseudo, y[rows[0][0]])
        for k, (row, sy, _) in enumerate(rows):
            b = product / sy
            following = y[rows[k + 1][0]] if k + 1 < len(rows) else pseudo
            product = steps.axpby_dot(direction, 1.0, coefs[k] - b, s[row], following)
        return steps.descent_slope(direction, pseudo, owlqn)


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
    objective = loss + l1 * steps.l1_norm(w)
    if not np.isfinite(objective):
        return SolverResult(w=w, n_iter=0, stop=Stop.NOT_FINITE,
                            loss_curve=[float(objective)])
    l1 = float(l1)
    owlqn = l1 > 0
    n = w.shape[0]
    pairs = _Pairs(memory, n)
    pseudo = np.empty(n)
    direction = np.empty(n)
    w_new = np.empty(n)
    stop = Stop.MAX_ITER
    pseudo_sq, w_sq = steps.pseudo_gradient(w, grad, l1, pseudo)
    for _ in range(max_iter):
        if np.sqrt(pseudo_sq) <= epsilon * max(1.0, np.sqrt(w_sq)):
            stop = Stop.GRADIENT
            break
        slope = pairs.direction(pseudo, direction, owlqn)
        if not slope < 0:
            # the estimate lost its way (it can after many skipped pairs): restart
            pairs.clear()
            slope = pairs.direction(pseudo, direction, owlqn)
        # the first step is scaled to unit length; later ones trust the estimate
        step = 1.0 / np.sqrt(pseudo_sq) if not pairs else 1.0
        for _ in range(max_linesearch):
            norm_new, decrease = steps.trial_point(w, direction, step, pseudo, owlqn, w_new)
            loss_new, grad_new = loss_grad(w_new)
            objective_new = loss_new + l1 * norm_new
            if np.isfinite(objective_new) and (
                    objective_new <= objective + 1e-4 * decrease):
                break
            step *= 0.5
        else:
            stop = Stop.LINE_SEARCH
            break
        s, y = pairs.slot()
        sy, yy = steps.curvature_pair(w_new, w, grad_new, grad, s, y)
        if sy > 1e-10 * yy:
            pairs.keep(sy, yy)
        # the accepted point's buffer swaps with the old one, the next trial's
        w, w_new = w_new, w
        grad, objective = grad_new, objective_new
        # the report shows the gradient norm at the point it reports the objective of
        pseudo_sq, w_sq = steps.pseudo_gradient(w, grad, l1, pseudo)
        if progress.record(objective, np.sqrt(pseudo_sq)):
            stop = Stop.TOL
            break
    return SolverResult(w=w, n_iter=len(progress.loss_curve), stop=stop,
                        loss_curve=progress.loss_curve)
