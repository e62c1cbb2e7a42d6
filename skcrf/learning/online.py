"""Online solvers: SGD, the averaged perceptron, passive-aggressive and AROW.

Each takes one step per visited sequence, as CRFsuite's l2sgd, ap, pa and
arow trainers do, and keeps its state (weights, step count, penalties,
averages) in an :class:`OnlineState` that ``partial_fit`` carries from one
call to the next: :func:`online` runs epochs of visits on an
:class:`OnlineProblem` from a state, and nothing else. A structure offers
what a step needs through one interface (its statistics in token form, its
best labelling; see :class:`~skcrf.structures._parameters.TokenStatistics`)
and never knows which solver drives it; a plain order-1 chain also offers
its layout to :mod:`._online_chain`, whose kernels run an epoch's visits in one call.

The steps are serial, in an order fixed by the data and ``random_state``, so
the weights are the same for any number of threads.

SGD minimises the objective of L-BFGS::

    sum_q s_q * -log p(y_q | x_q) + alpha * l1_ratio * ||w||_1
                                  + alpha * (1 - l1_ratio) / 2 * ||w||^2

each visit of sequence q taking its share ``1 / n`` of the penalty (``n`` the
sum of the sample weights ``s``): the L2 part by decaying a scale that
multiplies every weight (Shalev-Shwartz et al., 2007; Bottou's crfsgd), the
L1 part by the cumulative penalty of Tsuruoka, Tsujii & Ananiadou (2009),
which clips weights at exactly zero.
"""

import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from . import _online_kernels as kernels
from ._online_problem import OnlineProblem
from .lbfgs import SolverResult, Stop

#: Solver names, as the estimators' ``solver`` parameter spells them.
SOLVERS = {"sgd": kernels.SGD, "perceptron": kernels.PERCEPTRON,
           "passive_aggressive": kernels.PASSIVE_AGGRESSIVE, "arow": kernels.AROW}


@dataclass
class Calibration:
    """How SGD picks its initial learning rate on a sample, after CRFsuite's l2sgd.

    Each trial runs one epoch over the first ``samples`` visits of a shuffled
    order, from the starting weights, and scores the sample's objective (its
    losses during the epoch plus its share of the penalty at the end). The
    rates tried are CRFsuite's: ``eta`` multiplied by ``rate`` while they
    improve, then ``eta / rate`` divided by it while they improve, at most
    ``candidates`` in each direction and ``max_trials`` in all; a rate
    counts only if its objective ends below the sample's at the starting
    weights. CRFsuite goes on past the first rate that does not improve
    (about 20 trials); the objective is unimodal in the rate in practice, so
    stopping there picks the same rate in a quarter of the trials.
    """

    eta: float = 0.1
    rate: float = 2.0
    samples: int = 1000
    candidates: int = 10
    max_trials: int = 20


@dataclass
class OnlineOptions:
    """The settings of an online solver (the estimators' parameters, checked).

    Attributes
    ----------
    solver : {"sgd", "perceptron", "passive_aggressive", "arow"}
    alpha, l1_ratio : float
        SGD's penalty, as for L-BFGS.
    learning_rate : {"optimal", "constant"}
        SGD's schedule: ``eta0 / (1 + eta0 * lambda * t)`` at step ``t``,
        ``lambda = alpha / n``, or ``eta0`` throughout.
    eta0 : float or None
        SGD's initial rate; None calibrates it (:class:`Calibration`).
    average : int
        The first step (counted from 1) whose weights enter the average; 0
        for no averaging.
    C : float
        Passive-aggressive's aggressiveness; AROW's ``r`` is ``1 / C``.
    pa_type : {0, 1, 2}
        PA without slack, PA-I (the default) or PA-II.
    error_sensitive : bool
        Whether PA's margin grows with the square root of the wrong labels.
    variance : float
        AROW's initial confidence of every weight.
    max_iter, tol, n_iter_no_change : int, float, int
        At most ``max_iter`` epochs; stop once ``n_iter_no_change`` epochs in a
        row improve the best loss (or validation score) by less than ``tol``
        (relative). A margin solver also stops after an epoch without mistake.
    shuffle : bool
        Visit the sequences in a new random order every epoch.
    rng : numpy.random.RandomState
    verbose : int
    calibration : Calibration
    epsilon : float or None
        Also stop once an epoch's loss per visit falls below it (CRFsuite's
        rule for ap, pa and arow; None: no such rule).
    """

    solver: str
    alpha: float = 0.3
    l1_ratio: float = 0.0
    learning_rate: str = "optimal"
    eta0: float = None
    average: int = 0
    C: float = 1.0
    pa_type: int = 1
    error_sensitive: bool = True
    variance: float = 1.0
    max_iter: int = 10
    tol: float = 1e-3
    n_iter_no_change: int = 5
    shuffle: bool = True
    rng: np.random.RandomState = None
    verbose: int = 0
    calibration: Calibration = field(default_factory=Calibration)
    epsilon: float = None

    @property
    def l1(self):
        return self.alpha * self.l1_ratio

    @property
    def l2(self):
        return self.alpha * (1.0 - self.l1_ratio)

    def settings(self, total_weight, eta0):
        """The kernels' ``settings`` for an epoch whose sample weights sum to ``total_weight``."""
        n = max(float(total_weight), np.finfo(float).tiny)
        settings = np.zeros(kernels.N_SETTINGS)
        settings[kernels.SOLVER] = SOLVERS[self.solver]
        settings[kernels.L2] = self.l2 / n
        settings[kernels.L1] = self.l1 / n
        settings[kernels.ETA0] = 1.0 if eta0 is None else eta0
        settings[kernels.LAMBDA] = self.alpha / n
        settings[kernels.SCHEDULE] = 0.0 if self.learning_rate == "optimal" else 1.0
        settings[kernels.AGGRESSIVENESS] = self.C
        settings[kernels.PA_TYPE] = self.pa_type
        settings[kernels.ERROR_SENSITIVE] = float(self.error_sensitive)
        settings[kernels.GAMMA] = 1.0 / self.C
        # steps are counted from 0 in the kernels
        settings[kernels.AVERAGE_START] = self.average - 1 if self.average else np.inf
        return settings


@dataclass(eq=False)
class OnlineState:
    """What an online solver carries from one call to the next (``partial_fit``).

    Attributes
    ----------
    solver : str
    w : ndarray of shape (n_parameters,)
        The weights, scaled: the model's are ``counters[SCALE] * w``.
    counters : ndarray of shape (N_COUNTERS,)
        Scale, steps taken, cumulative L1 penalty, averaging sums (see
        :mod:`._online_kernels`).
    l1_applied : ndarray of shape (n_parameters,) or (0,)
        SGD with L1: the penalty each weight has received.
    average_sum : ndarray of shape (n_parameters,) or (0,)
        With averaging: the averaged weights are
        ``(AVERAGE_SCALE * w + average_sum) / AVERAGE_WEIGHT``.
    covariance : ndarray of shape (n_parameters,) or (0,)
        AROW: each weight's variance.
    eta0 : float or None
        SGD's initial learning rate, once calibrated or given.
    """

    #: Names of the arrays the state holds, in the order :meth:`as_dict` keeps.
    ARRAYS = ("w", "counters", "l1_applied", "average_sum", "covariance")

    solver: str
    w: np.ndarray
    counters: np.ndarray
    l1_applied: np.ndarray
    average_sum: np.ndarray
    covariance: np.ndarray
    eta0: Optional[float]

    @classmethod
    def start(cls, options, w0):
        """A fresh state at the weights ``w0`` (model units)."""
        n = w0.shape[0]
        counters = np.zeros(kernels.N_COUNTERS)
        counters[kernels.SCALE] = 1.0
        sgd = options.solver == "sgd"
        return cls(options.solver, np.array(w0, dtype=np.float64), counters,
                   np.zeros(n if sgd and options.l1 > 0 else 0),
                   np.zeros(n if options.average else 0),
                   np.full(n if options.solver == "arow" else 0, float(options.variance)),
                   options.eta0 if sgd else 1.0)

    @property
    def n_parameters(self):
        return self.w.shape[0]

    @property
    def steps(self):
        return int(self.counters[kernels.STEPS])

    def model_weights(self):
        """The model's weights: averaged if averaging has begun, else the current ones.

        The current ones have paid every L1 penalty they owe (see
        :func:`~._online_kernels.settle_l1`); the state is not changed.
        """
        out = np.empty(self.n_parameters)
        if self.average_sum.shape[0] and self.counters[kernels.AVERAGE_WEIGHT] > 0:
            kernels.average_weights(self.w, self.average_sum,
                                    self.counters[kernels.AVERAGE_SCALE],
                                    self.counters[kernels.AVERAGE_WEIGHT], out)
        elif self.l1_applied.shape[0]:
            kernels.settle_l1(self.w, self.counters[kernels.SCALE],
                              self.counters[kernels.L1_TOTAL], self.l1_applied, out)
        else:
            np.multiply(self.w, self.counters[kernels.SCALE], out=out)
        return out

    def grown(self, positions, n_parameters, variance):
        """This state in a larger layout: weight ``i`` moves to ``positions[i]``.

        The new weights start as a fresh state's (0, AROW's ``variance``); for
        a model whose later training parts bring new (feature, label) pairs.
        """
        def moved(values, fill):
            if values.shape[0] == 0:
                return values
            out = np.full(n_parameters, fill)
            out[positions] = values
            return out

        return OnlineState(self.solver, moved(self.w, 0.0), self.counters.copy(),
                           moved(self.l1_applied, 0.0), moved(self.average_sum, 0.0),
                           moved(self.covariance, float(variance)), self.eta0)

    def copy(self):
        return OnlineState(self.solver, *(getattr(self, name).copy() for name in self.ARRAYS),
                           self.eta0)

    def as_dict(self):
        """The state as plain values (str, floats, arrays), for a model file to hold."""
        state = {"solver": self.solver, "eta0": self.eta0}
        state.update((name, getattr(self, name)) for name in self.ARRAYS)
        return state

    @classmethod
    def from_dict(cls, state):
        return cls(state["solver"], *(np.array(state[name], dtype=np.float64)
                                      for name in cls.ARRAYS), state["eta0"])


#: The most visits an epoch makes of one sequence: a larger weight scales the steps.
MAX_VISITS = 16


def visits_of_weights(sample_weight):
    """The visits an epoch makes of the sequences: ``(sequence ids, factors)``, in data order.

    An integer weight ``k`` up to :data:`MAX_VISITS` is ``k`` visits of factor
    1, one after the other, so that it trains exactly as the sequence
    repeated ``k`` times; a fractional part is one more visit whose step is
    scaled by it; a zero weight is no visit at all. A weight above
    ``MAX_VISITS`` is ``MAX_VISITS`` visits, each of factor
    ``weight / MAX_VISITS``: an epoch's cost stays bounded by the number of
    sequences, whatever the weights (a weight of 1e9 would otherwise be 1e9 steps).
    """
    weights = np.asarray(sample_weight, dtype=np.float64)
    large = weights > MAX_VISITS
    if large.any():
        sequences, factors = visits_of_weights(np.where(large, MAX_VISITS, weights))
        factors *= np.where(large, weights / MAX_VISITS, 1.0)[sequences]
        return sequences, factors
    whole = np.floor(weights)
    fraction = weights - whole
    counts = whole.astype(np.int64) + (fraction > 0)
    sequences = np.repeat(np.arange(weights.shape[0]), counts)
    factors = np.ones(sequences.shape[0])
    # the last visit of a sequence with a fractional part is that part
    ends = np.cumsum(counts) - 1
    partial = fraction > 0
    factors[ends[partial]] = fraction[partial]
    return sequences, factors


def _epoch_order(n_visits, options):
    if options.shuffle:
        return options.rng.permutation(n_visits)
    return np.arange(n_visits)


def _objective_penalty(options, w):
    """``alpha * l1_ratio * ||w||_1 + alpha * (1 - l1_ratio) / 2 * ||w||^2`` (SGD's, else 0)."""
    if options.solver != "sgd":
        return 0.0
    return options.l1 * float(np.abs(w).sum()) + 0.5 * options.l2 * float(w @ w)


def calibrate_eta0(problem, options, visit_sequences, visit_factors, w0):
    """SGD's initial learning rate, tried on a sample (:class:`Calibration`).

    ``visit_sequences`` and ``visit_factors`` are an epoch's visits in the
    order to sample them from.
    """
    calibration = options.calibration
    total = float(visit_factors.sum())
    n_sample = min(calibration.samples, visit_sequences.shape[0])
    sample_sequences = visit_sequences[:n_sample]
    sample_factors = visit_factors[:n_sample]
    share = float(sample_factors.sum()) / total
    scratch = problem.scratch()

    def trial(eta):
        state = OnlineState.start(options, w0)
        settings = options.settings(total, eta)
        problem.run(state, settings, sample_sequences, sample_factors, scratch)
        if state.counters[kernels.FAILED]:
            return np.inf
        loss = state.counters[kernels.LOSS]
        return loss + share * _objective_penalty(options, state.model_weights())

    initial = trial(0.0)
    best, best_eta = np.inf, calibration.eta
    trials = 0
    # up from eta while the rates improve; then down from eta / rate, past rates
    # too large to improve on the start, until one improves and the next does not
    for direction, eta, downward in ((calibration.rate, calibration.eta, False),
                                     (1.0 / calibration.rate,
                                      calibration.eta / calibration.rate, True)):
        for _ in range(calibration.candidates):
            if trials >= calibration.max_trials:
                break
            loss = trial(eta)
            trials += 1
            improves = np.isfinite(loss) and loss < initial and loss < best
            if options.verbose:
                print(f"calibration trial {trials}: eta0={eta:.6g} objective={loss:.6g}"
                      f"{'' if improves else ' (no better)'}", flush=True)
            if improves:
                best, best_eta = loss, eta
            elif np.isfinite(best) or not downward:
                break  # past the best rate in this direction
            eta *= direction
    return best_eta


@dataclass
class _Stopping:
    """The rule of ``tol`` and ``n_iter_no_change`` over the epochs' losses or scores."""

    tol: float
    patience: int
    best: float = np.inf
    stalled: int = 0

    def stalls(self, value):
        """Record an epoch's loss (lower is better); True when training should stop."""
        if value < self.best - self.tol * abs(self.best) or not np.isfinite(self.best):
            self.stalled = 0
        else:
            self.stalled += 1
        self.best = min(self.best, value)
        return self.stalled >= self.patience


def online(problem, state, options, *, visits, n_epochs=None, validation=None):
    """Run epochs of an online solver from ``state`` (updated in place).

    Parameters
    ----------
    problem : OnlineProblem
    state : OnlineState
    options : OnlineOptions
    visits : tuple of (ndarray, ndarray)
        An epoch's visits in data order (:func:`visits_of_weights`).
    n_epochs : int, default=None
        Exactly this many epochs (``partial_fit``: 1), with no stopping rule;
        None runs up to ``options.max_iter`` with the rules.
    validation : OnlineProblem, default=None
        Held-out sequences: the stopping rule then reads their token accuracy
        under the model's weights, not the training loss (early stopping).

    Returns
    -------
    SolverResult
        ``w`` the model's weights (averaged, L1 settled); ``loss_curve`` each
        epoch's loss (SGD: the sum of the visits' losses during the epoch plus
        the penalty at its end; the margin solvers: CRFsuite's loss of theirs).
    """
    visit_sequences, visit_factors = visits
    total = float(visit_factors.sum())
    if state.solver == "sgd" and state.eta0 is None:
        order = _epoch_order(visit_sequences.shape[0], options)
        state.eta0 = calibrate_eta0(problem, options, visit_sequences[order],
                                    visit_factors[order], state.model_weights())
    settings = options.settings(total, state.eta0)
    scratch = problem.scratch()
    rule = _Stopping(options.tol, options.n_iter_no_change)
    loss_curve, scores = [], []
    stop = Stop.MAX_ITER
    started = time.perf_counter()
    epochs = options.max_iter if n_epochs is None else n_epochs
    for epoch in range(1, epochs + 1):
        order = _epoch_order(visit_sequences.shape[0], options)
        state.counters[kernels.LOSS] = 0.0
        state.counters[kernels.MISTAKES] = 0.0
        problem.run(state, settings, visit_sequences[order], visit_factors[order], scratch)
        if state.counters[kernels.FAILED]:
            loss_curve.append(np.inf)
            stop = Stop.NOT_FINITE if epoch == 1 and state.steps <= 1 else Stop.MAX_ITER
            break
        weights = state.model_weights()
        loss = float(state.counters[kernels.LOSS]) + _objective_penalty(options, weights)
        loss_curve.append(loss)
        score = None if validation is None else validation.accuracy(weights)
        if score is not None:
            scores.append(score)
        if options.verbose:
            _report(epoch, loss, score, state, time.perf_counter() - started)
        if n_epochs is not None:
            continue
        mistakes = state.counters[kernels.MISTAKES]
        if state.solver != "sgd" and mistakes == 0:
            stop = Stop.TOL
            break
        if options.epsilon is not None and loss / visit_sequences.shape[0] < options.epsilon:
            stop = Stop.TOL
            break
        if rule.stalls(loss if score is None else -score):
            stop = Stop.TOL
            break
    if n_epochs is not None and stop is Stop.MAX_ITER:
        stop = Stop.TOL  # partial_fit's one epoch is all it was asked for
    result = SolverResult(w=state.model_weights(), n_iter=len(loss_curve), stop=stop,
                          loss_curve=loss_curve)
    result.validation_scores = scores
    return result


def _report(epoch, loss, score, state, elapsed):
    """One line per epoch, under a header, flushed (as the L-BFGS report).

    The validation column (token accuracy of the held-out sequences) only
    with early stopping.
    """
    validation = "" if score is None else f"  {'validation':>10}"
    if epoch == 1:
        print(f"{'epoch':>6}  {'loss':>15}{validation}  {'steps':>10}  {'elapsed (s)':>11}",
              flush=True)
    shown = "" if score is None else f"  {score:>10.4f}"
    print(f"{epoch:>6d}  {loss:>15.8e}{shown}  {state.steps:>10d}  {elapsed:>11.2f}",
          flush=True)
