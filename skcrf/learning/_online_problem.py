"""How an online solver steps through a structure: :class:`OnlineProblem`.

Two routes to the same steps: a plain order-1 chain's epoch in one kernel
call (:mod:`._online_chain`), and for every structure a step per visit
through its statistics in token form (``statistics_rows``, ``expected_rows``,
``decode_targets``), gathered into a sparse direction by
:mod:`._online_kernels`.
"""

import numpy as np

from ..features.arrays import sequence_view
from . import _online_chain as chain_kernels
from . import _online_kernels as kernels
from . import _online_partial as partial_kernels
from ._online_dense import online_structure
from .partial import masked_structure


class OnlineProblem:
    """A training set as the online solvers visit it: sequences, targets, a structure.

    Parameters
    ----------
    structure : object
        With ``layout``, ``pair_blocks()``, ``statistics_rows``,
        ``expected_rows`` and ``decode_targets`` (the token-form interface), and
        optionally ``plain_layout()`` (a plain order-1 chain's kernel route).
        A :class:`~skcrf.structures.chain.dense.DenseChainStructure` is read
        through :class:`~skcrf.learning._online_dense.DenseOnline`.
    features : FeatureArrays
        With a dense block where the structure has dense weights.
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    targets : ndarray of int64 of shape (n_tokens,)
        What the structure's statistics read: class ids or segment codes;
        -1 where ``allowed`` says more than one label of a token.
    allowed : ndarray of bool of shape (n_tokens, n_classes) or None, default=None
        With partial labels (:mod:`skcrf.learning.partial`): the labels each
        token may take. A sequence some token of which allows more than one
        (a *constrained* one) is stepped on toward its consistent
        labellings: SGD on ``log Z - log Z_allowed``, the margin solvers
        toward the best labelling the mask allows (constrained Viterbi as
        the target, as latent-variable perceptrons do). The other sequences
        step as without ``allowed``, bit for bit.
    """

    def __init__(self, structure, features, offsets, targets, allowed=None):
        structure = online_structure(structure)
        self.structure = structure
        self.features = features
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.targets = np.ascontiguousarray(targets, dtype=np.int64)
        plain = getattr(structure, "plain_layout", None)
        self.plain = None if plain is None else plain()
        self.n_parameters = structure.layout.n_parameters
        self.longest = int(np.diff(self.offsets).max(initial=1))
        self._kernel_args = features.kernel_args()
        # the epoch kernels' dense block; None without one, so that their sparse
        # specializations compile no dense code (_online_dense.py)
        dense_at = getattr(structure, "dense_at", None)
        self._dense = (None if dense_at is None
                       else np.ascontiguousarray(features.dense), dense_at or 0)
        self.allowed = self.constrained = self._log_mask = None
        if allowed is not None and (self.targets < 0).any():
            self.allowed = np.asarray(allowed, dtype=bool)
            owner = np.repeat(np.arange(self.n_sequences), np.diff(self.offsets))
            self.constrained = np.bincount(owner, weights=self.targets < 0,
                                           minlength=self.n_sequences) > 0

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
        if self.plain is not None and self.constrained is not None:
            # runs of fully labelled visits and runs of constrained ones, each by its kernels
            constrained = self.constrained[visit_sequences]
            cuts = np.flatnonzero(np.diff(constrained)) + 1
            for lo, hi in zip(np.r_[0, cuts].tolist(), np.r_[cuts, len(constrained)].tolist()):
                if hi == lo:
                    continue
                run = (self._run_constrained_chain if constrained[lo]
                       else self._run_plain_chain)
                run(state, settings, visit_sequences[lo:hi], visit_factors[lo:hi], scratch)
                if state.counters[kernels.FAILED]:
                    return
            return
        if self.plain is not None:
            self._run_plain_chain(state, settings, visit_sequences, visit_factors, scratch)
            return
        for q, factor in zip(visit_sequences.tolist(), visit_factors.tolist()):
            self._visit(state, settings, q, factor, scratch)
            if state.counters[kernels.FAILED]:
                return

    def _chain_layout(self, gold):
        """The plain chain kernels' arguments after the visits: ``gold`` is the
        targets (fully labelled visits) or the log mask (constrained ones)."""
        plain = self.plain
        pairs = plain.state_pairs
        return (*self._kernel_args, self.offsets, gold, pairs.feature_ptr, pairs.labels,
                plain.transitions_at, plain.start_at, plain.end_at, plain.transition_mask,
                plain.start_mask, plain.end_mask, self.longest, *self._dense)

    def _run_constrained_chain(self, state, settings, visit_sequences, visit_factors,
                               scratch):
        """Constrained visits by the plain order-1 chain's kernels of partial labels."""
        if self._log_mask is None:
            self._log_mask = np.where(self.allowed, 0.0, -np.inf)
        layout = self._chain_layout(self._log_mask)
        if state.solver != "sgd":
            partial_kernels.margin_constrained_visits(
                settings, state.counters, state.w, state.average_sum, state.covariance,
                *scratch, visit_sequences, visit_factors, *layout)
            return
        # a sequence the scaled passes cannot take: the token-form route finishes it
        _sgd_visits(state, settings, visit_sequences, visit_factors, layout,
                    partial_kernels.sgd_constrained_visits,
                    lambda done: self._visit(state, settings, int(visit_sequences[done]),
                                             float(visit_factors[done]), scratch, begun=True))

    def _run_plain_chain(self, state, settings, visit_sequences, visit_factors, scratch):
        """The visits by the plain order-1 chain's epoch kernels."""
        layout = self._chain_layout(self.targets)
        if state.solver != "sgd":
            chain_kernels.margin_chain_visits(settings, state.counters, state.w,
                                              state.average_sum, state.covariance, *scratch,
                                              visit_sequences, visit_factors, *layout)
            return
        # a sequence the scaled pass cannot take (extreme scores): exactly
        _sgd_visits(state, settings, visit_sequences, visit_factors, layout,
                    chain_kernels.sgd_chain_visits,
                    lambda done: chain_kernels.exact_chain_visit(
                        settings, state.counters, state.w, state.l1_applied,
                        state.average_sum, visit_sequences, visit_factors, done, *layout))

    def _visit(self, state, settings, q, factor, scratch, begun=False):
        """One step on sequence ``q`` through the structure's token-form statistics.

        ``begun``: a kernel has begun the step (its L2 decay applied) and left
        the rest to this route.
        """
        delta, mark, touched = scratch
        counters = state.counters
        structure = self.structure
        lo, hi = int(self.offsets[q]), int(self.offsets[q + 1])
        if begun:  # the step's rate, as begin_step computed it: the step is not counted yet
            eta = kernels.learning_rate(settings, counters[kernels.STEPS])
        else:
            eta = kernels.begin_step(settings, counters, factor)
        n_touched, cost, hamming = 0, 0.0, 0
        masked = None
        if self.constrained is not None and self.constrained[q]:
            masked = masked_structure(structure, np.where(self.allowed[lo:hi], 0.0, -np.inf))
        if hi > lo:
            features, offsets = sequence_view(self.features, self.offsets, q)
            if masked is not None and state.solver == "sgd":
                # log Z - log Z_allowed: the gradient is E_p[Phi] - E_p[Phi | allowed]
                scale = counters[kernels.SCALE]
                log_z, expected = structure.expected_rows(features, offsets, state.w, scale)
                log_z_allowed, expected_allowed = masked.expected_rows(features, offsets,
                                                                       state.w, scale)
                loss = float(log_z.sum()) - float(log_z_allowed.sum())
                if not np.isfinite(loss):
                    counters[kernels.FAILED] = 1.0
                    return
                counters[kernels.LOSS] += factor * loss
                n_touched = self._collect(expected, factor, True, scratch, lo, hi, n_touched)
                n_touched = self._collect(expected_allowed, -factor, True, scratch, lo, hi,
                                          n_touched)
                kernels.apply_direction(settings, counters, state.w, state.l1_applied,
                                        state.average_sum, state.covariance, delta, mark,
                                        touched, n_touched, eta, factor, cost, hamming)
                kernels.end_step(settings, counters, factor, state.w, state.average_sum)
                return
            if masked is not None:  # the best consistent labelling is the target
                gold_targets = masked.decode_targets(features, offsets, state.w)
            else:
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
        if self.allowed is not None:  # right: a label the token allows
            return float(np.mean(self.allowed[np.arange(predicted.shape[0]), predicted]))
        return float(np.mean(predicted == self.targets))


def _sgd_visits(state, settings, visit_sequences, visit_factors, layout, scaled_visits,
                visit_exactly):
    """SGD visits by the epoch kernel ``scaled_visits``, which stops at a sequence its
    scaled passes cannot take: ``visit_exactly(done)`` takes that one, then the kernel
    goes on after it (all stop once a visit failed)."""
    n_visits = visit_sequences.shape[0]
    done = 0
    while done < n_visits:
        done = scaled_visits(settings, state.counters, state.w, state.l1_applied,
                             state.average_sum, visit_sequences, visit_factors, done, *layout)
        if done < n_visits:
            visit_exactly(done)
            if state.counters[kernels.FAILED]:
                return
            done += 1
