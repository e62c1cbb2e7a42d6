"""Online solvers: SGD, the averaged perceptron, passive-aggressive and AROW.

Each takes one step per visited sequence, as CRFsuite's l2sgd, ap, pa and
arow trainers do, and keeps its state (weights, step count, penalties,
averages) in an :class:`OnlineState` that ``partial_fit`` carries from one
call to the next: :func:`online` runs epochs of visits on an
:class:`OnlineProblem` from a state, and nothing else. A structure offers
what a step needs through one interface (its statistics in token form, its
best labelling; see :class:`~skcrf.structures._parameters.TokenStatistics`)
and never knows which solver drives it; a plain order-1 chain also offers
its layout to :func:`~._online_kernels.sgd_chain_visits` (and
``margin_chain_visits``), which run an epoch's visits in one kernel call.

The steps are serial, in an order fixed by the data and ``random_state``, so
the weights are the same for any number of threads.

SGD minimises the objective of L-BFGS,
``sum_q s_q * -log p(y_q | x_q) + alpha * l1_ratio * ||w||_1 + alpha * (1 - l1_ratio) / 2 * ||w||^2``,
each visit of sequence q taking its share ``1 / n`` of the penalty (``n`` the
sum of the sample weights ``s``): the L2 part by decaying a scale that
multiplies every weight (Shalev-Shwartz et al., 2007; Bottou's crfsgd), the
L1 part by the cumulative penalty of Tsuruoka, Tsujii & Ananiadou (2009),
which clips weights at exactly zero.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ..features.arrays import sequence_view
from . import _online_kernels as kernels
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
        """The kernels' ``settings`` array for an epoch of ``total_weight`` summed sample weights."""
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

    def __init__(self, solver, w, counters, l1_applied, average_sum, covariance, eta0):
        self.solver = solver
        self.w = w
        self.counters = counters
        self.l1_applied = l1_applied
        self.average_sum = average_sum
        self.covariance = covariance
        self.eta0 = eta0

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
        """The state as plain values (str, floats, arrays): a fitted attribute a model file holds."""
        state = {"solver": self.solver, "eta0": self.eta0}
        state.update((name, getattr(self, name)) for name in self.ARRAYS)
        return state

    @classmethod
    def from_dict(cls, state):
        return cls(state["solver"], *(np.array(state[name], dtype=np.float64)
                                      for name in cls.ARRAYS), state["eta0"])


class OnlineProblem:
    """A training set as the online solvers visit it: sequences, targets, a structure.

    Parameters
    ----------
    structure : object
        With ``layout``, ``pair_blocks()``, ``statistics_rows``,
        ``expected_rows`` and ``decode_targets`` (the token-form interface), and
        optionally ``plain_layout()`` (a plain order-1 chain's kernel route).
    features : FeatureArrays
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    targets : ndarray of int64 of shape (n_tokens,)
        What the structure's statistics read: class ids or segment codes.
    """

    def __init__(self, structure, features, offsets, targets):
        self.structure = structure
        self.features = features
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.targets = np.ascontiguousarray(targets, dtype=np.int64)
        plain = getattr(structure, "plain_layout", None)
        self.plain = None if plain is None else plain()
        self.n_parameters = structure.layout.n_parameters
        self.longest = int(np.diff(self.offsets).max(initial=1))
        self._kernel_args = features.kernel_args()

    @property
    def n_sequences(self):
        return self.offsets.shape[0] - 1

    def scratch(self):
        """The sparse direction's buffers: ``(delta, mark, touched)``."""
        # a step touches each weight at most once
        return (np.zeros(self.n_parameters), np.zeros(self.n_parameters, dtype=np.bool_),
                np.zeros(self.n_parameters, dtype=np.int64))

    def run(self, state, settings, visit_sequences, visit_factors, scratch):
        """Take one step per visit, in order, updating ``state``."""
        visit_sequences = np.ascontiguousarray(visit_sequences, dtype=np.int64)
        visit_factors = np.ascontiguousarray(visit_factors, dtype=np.float64)
        if self.plain is not None:
            self._run_plain_chain(state, settings, visit_sequences, visit_factors, scratch)
            return
        for q, factor in zip(visit_sequences.tolist(), visit_factors.tolist()):
            self._visit(state, settings, q, factor, scratch)
            if state.counters[kernels.FAILED]:
                return

    def _run_plain_chain(self, state, settings, visit_sequences, visit_factors, scratch):
        """The visits by the plain order-1 chain's epoch kernels."""
        plain = self.plain
        pairs = plain.state_pairs
        layout = (*self._kernel_args, self.offsets, self.targets, pairs.feature_ptr,
                  pairs.labels, plain.transitions_at, plain.start_at, plain.end_at,
                  plain.transition_mask, plain.start_mask, plain.end_mask, self.longest)
        if state.solver != "sgd":
            kernels.margin_chain_visits(settings, state.counters, state.w, state.average_sum,
                                        state.covariance, *scratch, visit_sequences,
                                        visit_factors, *layout)
            return
        n_visits = visit_sequences.shape[0]
        done = 0
        while done < n_visits:
            done = kernels.sgd_chain_visits(
                settings, state.counters, state.w, state.l1_applied, state.average_sum,
                visit_sequences, visit_factors, done, *layout)
            if done < n_visits:
                # a sequence the scaled pass cannot take (extreme scores): exactly
                kernels.exact_chain_visit(settings, state.counters, state.w,
                                          state.l1_applied, state.average_sum,
                                          visit_sequences, visit_factors, done, *layout)
                if state.counters[kernels.FAILED]:
                    return
                done += 1

    def _visit(self, state, settings, q, factor, scratch):
        """One step on sequence ``q`` through the structure's token-form statistics."""
        delta, mark, touched = scratch
        counters = state.counters
        structure = self.structure
        lo, hi = int(self.offsets[q]), int(self.offsets[q + 1])
        eta = kernels.begin_step(settings, counters, factor)
        n_touched, cost, hamming = 0, 0.0, 0
        if hi > lo:
            features, offsets = sequence_view(self.features, self.offsets, q)
            gold_targets = self.targets[lo:hi]
            gold = structure.statistics_rows(features, offsets, gold_targets)
            if state.solver == "sgd":
                scale = counters[kernels.SCALE]
                log_z, expected = structure.expected_rows(features, offsets, state.w, scale)
                loss = float(log_z.sum()) - scale * self._score(state.w, gold, lo, hi)
                if not np.isfinite(loss):
                    counters[kernels.FAILED] = 1.0
                    return
                counters[kernels.LOSS] += factor * loss
                # the loss gradient, the visit's factor included
                n_touched = self._collect(expected, factor, True, scratch, lo, hi, n_touched)
                n_touched = self._collect(gold, -factor, True, scratch, lo, hi, n_touched)
            else:
                predicted = structure.decode_targets(features, offsets, state.w)
                hamming = int(np.count_nonzero(predicted != gold_targets))
                if hamming:
                    guess = structure.statistics_rows(features, offsets, predicted)
                    cost = self._score(state.w, guess, lo, hi) - self._score(
                        state.w, gold, lo, hi)
                    if not np.isfinite(cost):
                        counters[kernels.FAILED] = 1.0
                        return
                    counters[kernels.MISTAKES] += 1.0
                    counters[kernels.LOSS] += factor * kernels.margin_loss(
                        settings, cost, hamming, hi - lo)
                    n_touched = self._collect(gold, 1.0, False, scratch, lo, hi, n_touched)
                    n_touched = self._collect(guess, -1.0, False, scratch, lo, hi, n_touched)
        kernels.apply_direction(settings, counters, state.w, state.l1_applied,
                                state.average_sum, state.covariance, delta, mark, touched,
                                n_touched, eta, factor, cost, hamming)
        kernels.end_step(settings, counters, factor, state.w, state.average_sum)

    def _collect(self, statistics, factor, keep_zeros, scratch, lo, hi, n_touched):
        """Add ``factor`` times the token-form ``statistics`` to the direction."""
        delta, mark, touched = scratch
        slices = self.structure.layout.slices
        pair_blocks = self.structure.pair_blocks()
        for name, rows in statistics.rows.items():
            pairs = pair_blocks[name]
            n_touched = kernels.collect_rows(
                delta, mark, touched, n_touched, slices[name].start, pairs.feature_ptr,
                pairs.labels, *self._kernel_args, lo, hi, np.ascontiguousarray(rows), factor,
                keep_zeros)
        for name, values in statistics.dense.items():
            n_touched = kernels.collect_dense(
                delta, mark, touched, n_touched, slices[name].start,
                np.ascontiguousarray(values, dtype=np.float64).ravel(), factor, keep_zeros)
        return n_touched

    def _score(self, w, statistics, lo, hi):
        """``w . Phi`` for token-form statistics of tokens lo..hi-1 (scaled ``w``)."""
        slices = self.structure.layout.slices
        pair_blocks = self.structure.pair_blocks()
        total = 0.0
        for name, rows in statistics.rows.items():
            pairs = pair_blocks[name]
            total += kernels.rows_score(w, slices[name].start, pairs.feature_ptr, pairs.labels,
                                        *self._kernel_args, lo, hi,
                                        np.ascontiguousarray(rows))
        for name, values in statistics.dense.items():
            total += float(w[slices[name]] @ np.ravel(values))
        return total

    def accuracy(self, w):
        """Share of tokens whose target the best labelling under ``w`` gets right."""
        if self.offsets[-1] == 0:
            return 1.0
        predicted = self.structure.decode_targets(self.features, self.offsets, w)
        return float(np.mean(predicted == self.targets))


def visits_of_weights(sample_weight):
    """The visits an epoch makes of the sequences: ``(sequence ids, factors)``, in data order.

    An integer weight ``k`` is ``k`` visits of factor 1, one after the other,
    so that it trains exactly as the sequence repeated ``k`` times; a
    fractional part is one more visit whose step is scaled by it; a zero
    weight is no visit at all.
    """
    weights = np.asarray(sample_weight, dtype=np.float64)
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
