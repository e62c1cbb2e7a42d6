"""Linear-chain structures: order 1, order 2 (label trigrams) and observation-conditioned transitions.

The weights of a chain over ``C`` classes, in the flat vector ``w`` (see
:class:`ChainStructure.layout`):

- ``state`` : one weight per (feature, label) pair of :class:`StatePairs`;
- ``edge`` (with transition features) : one weight per (feature, label pair)
  pair, the label pair ``(a, b)`` numbered ``a * C + b``;
- ``transitions`` : (C, C) [from, to];
- ``trigram`` (order 2) : (C, C, C) [y_{i-2}, y_{i-1}, y_i];
- ``start``, ``end`` : (C,).

Potentials are :class:`ChainScores`: unary scores ``X @ W`` per token, the
transition scores (per token ``e[i, a, b] = T[a, b] + sum_f x[i, f] V[f, a, b]``
with transition features), the trigram block, start and end. The gradient is
the adjoint map from marginals back to those blocks.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...features._kernels import pair_expectations, pair_products
from ._edges_fused import edge_chunk_count, edge_nll_terms
from ._fused import FusedChainTerms
from .._parameters import (ParameterLayout, StatePairs, TokenStatistics, same_shapes,
                          weights_of_blocks)

from .scores import (ChainScores, pin_labels, ChainPosteriors, chain_posteriors, chain_decode, chain_nbest, chain_labelling_scores, _edge_scores, edge_label_ids)

#: Partial sums of :func:`~skcrf.features._kernels.pair_expectations` kept per
#: chunk of tokens, in float64 values; the chunk count is fixed by the data.
_EXPECTATION_BUDGET = 1 << 22


class ChainStructure:
    """Parameter layout, potentials and gradient of a linear-chain CRF.

    Parameters
    ----------
    n_classes : int
    state_pairs : StatePairs
        The (feature, class) pairs that carry a state weight.
    order : {1, 2}, default=1
        2 adds a weight for every label trigram.
    edge_pairs : StatePairs or None, default=None
        The (feature, label pair) pairs that weight the transitions, labels
        numbered ``a * n_classes + b``; None for plain transitions.
    constraints : TransitionConstraints or None, default=None
        Forbidden transitions, first and last labels
        (:class:`skcrf._estimators.constraints.TransitionConstraints`). Their weights
        stay in ``w`` but every potential adds ``-inf`` to them, so that they
        get no probability, hence a zero gradient: from zero, the solver
        never moves them.
    boundary_weights : bool, default=True
        Whether the first and last labels of a sequence have weights of their
        own. False (CRFsuite's chain, which :class:`skcrf.compat.CRF` trains)
        keeps the ``start`` and ``end`` blocks in ``w`` at zero for every
        solver: their statistics are zero and the online kernels skip them.
    """

    def __init__(self, n_classes, state_pairs, *, order=1, edge_pairs=None, constraints=None,
                 boundary_weights=True):
        if order not in (1, 2):
            raise ValueError(f"order must be 1 or 2, got {order!r}.")
        if order == 2 and edge_pairs is not None:
            raise NotImplementedError(
                "transition features with order=2 are not supported; use order=1.")
        self.n_classes = n_classes
        self.order = order
        self.state_pairs = state_pairs
        self.edge_pairs = edge_pairs
        # CRFsuite's chains have no start and end weights (skcrf.compat trains without
        # them, for its files to be CRFsuite's): their statistics are zero, every
        # solver's step leaves them at 0, and the blocks stay in w as zeros
        self.boundary_weights = bool(boundary_weights)
        C = n_classes
        blocks = [("state", (state_pairs.n_pairs,))]
        if edge_pairs is not None:
            blocks.append(("edge", (edge_pairs.n_pairs,)))
        blocks.append(("transitions", (C, C)))
        if order == 2:
            blocks.append(("trigram", (C, C, C)))
        blocks += [("start", (C,)), ("end", (C,))]
        self.layout = ParameterLayout(blocks)
        if constraints is None:
            self.transition_mask, self.start_mask, self.end_mask = (
                np.zeros((C, C)), np.zeros(C), np.zeros(C))
        else:
            self.transition_mask, self.start_mask, self.end_mask = constraints.masks()

    def masked_transitions(self, blocks):
        """The transition, start and end blocks with the forbidden ones at ``-inf`` (copies)."""
        return (blocks["transitions"] + self.transition_mask,
                blocks["start"] + self.start_mask, blocks["end"] + self.end_mask)

    @classmethod
    def for_training(cls, features, offsets, label_ids, n_classes, *, order=1,
                     all_possible_states=False, transition_columns=None, constraints=None,
                     boundary_weights=True):
        """The structure of a training set: which pairs get weights.

        ``transition_columns`` is a boolean mask of the features that also
        weight the transitions, or None; ``constraints`` and
        ``boundary_weights`` as for the class.
        """
        state_pairs = (StatePairs.every(features.n_features, n_classes) if all_possible_states
                       else StatePairs.observed(features, label_ids, n_classes))
        edge_pairs = None
        if transition_columns is not None:
            n_pairs = n_classes * n_classes
            if all_possible_states:
                edge_pairs = StatePairs.every(features.n_features, n_pairs,
                                              np.flatnonzero(transition_columns))
            else:
                edge_pairs = StatePairs.observed(
                    features, edge_label_ids(label_ids, offsets, n_classes), n_pairs,
                    columns=transition_columns)
        return cls(n_classes, state_pairs, order=order, edge_pairs=edge_pairs,
                   constraints=constraints, boundary_weights=boundary_weights)

    @property
    def n_parameters(self):
        return self.layout.n_parameters

    def gold_statistics(self, features, offsets, label_ids):
        """Phi(gold) summed over the training sequences, in the layout of ``w``."""
        counts = self.layout.zeros()
        blocks = self.layout.views(counts)
        blocks["state"][:] = self.state_pairs.empirical_counts(features, label_ids)
        pair_ids = edge_label_ids(label_ids, offsets, self.n_classes)
        if self.edge_pairs is not None:
            blocks["edge"][:] = self.edge_pairs.empirical_counts(features, pair_ids)
        to = np.flatnonzero(pair_ids >= 0)
        np.add.at(blocks["transitions"], (label_ids[to - 1], label_ids[to]), 1.0)
        if self.order == 2:
            # tokens with two predecessors in their sequence
            third = to[pair_ids[to - 1] >= 0]
            np.add.at(blocks["trigram"],
                      (label_ids[third - 2], label_ids[third - 1], label_ids[third]), 1.0)
        nonempty = np.diff(offsets) > 0
        first, last = offsets[:-1][nonempty], offsets[1:][nonempty] - 1
        blocks["start"][:] = np.bincount(label_ids[first], minlength=self.n_classes)
        blocks["end"][:] = np.bincount(label_ids[last], minlength=self.n_classes)
        return self._without_fixed_blocks(counts)

    def _without_fixed_blocks(self, statistics):
        """``statistics`` with the blocks the solver must not move at zero (in place)."""
        if not self.boundary_weights:
            blocks = self.layout.views(statistics)
            blocks["start"][:] = 0.0
            blocks["end"][:] = 0.0
        return statistics

    def scores(self, features, w):
        """:class:`ChainScores` of the features under the weights ``w``."""
        blocks = self.layout.views(w)
        unary = pair_products(*features.kernel_args(), self.state_pairs.feature_ptr,
                              self.state_pairs.labels, np.ascontiguousarray(blocks["state"]),
                              self.n_classes)
        transitions, start, end = self.masked_transitions(blocks)
        edges = None
        if self.edge_pairs is not None:
            edges = _edge_scores(features, self.edge_pairs, blocks["edge"], transitions)
        trigram = np.ascontiguousarray(blocks["trigram"]) if self.order == 2 else None
        return ChainScores(unary, transitions, start, end, trigram, edges)

    def expected_statistics(self, features, offsets, posteriors):
        """E_p[Phi] in the layout of ``w``: the adjoint of :meth:`scores` applied to marginals.

        Tokens of a sequence with no feasible labelling (log Z = -inf) have
        all-zero marginals and add nothing.
        """
        expected = self.layout.zeros()
        blocks = self.layout.views(expected)
        blocks["state"][:] = self._pair_expectations(features, self.state_pairs,
                                                     posteriors.marginals)
        if self.edge_pairs is not None:
            blocks["edge"][:] = self._pair_expectations(
                features, self.edge_pairs,
                posteriors.pair_marginals.reshape(-1, self.n_classes ** 2))
        blocks["transitions"][:] = posteriors.transition_counts
        if self.order == 2:
            blocks["trigram"][:] = posteriors.trigram_counts
        nonempty = np.diff(offsets) > 0
        blocks["start"][:] = posteriors.marginals[offsets[:-1][nonempty]].sum(axis=0)
        blocks["end"][:] = posteriors.marginals[offsets[1:][nonempty] - 1].sum(axis=0)
        return expected

    @staticmethod
    def _pair_expectations(features, pairs, marginals):
        n_chunks = max(2, min(16, _EXPECTATION_BUDGET // max(pairs.n_pairs, 1)))
        return pair_expectations(*features.kernel_args(), pairs.feature_ptr, pairs.labels,
                                 np.ascontiguousarray(marginals), n_chunks)

    def expectation_terms(self, features, offsets, fused=True):
        """A function ``w -> (log_z, expected statistics)`` over one training set.

        An order-1 chain takes a fused kernel, which keeps no per-token
        arrays of scores or marginals; ``fused=False`` (and order 2) goes
        through :meth:`scores`, the inference kernels and
        :meth:`expected_statistics`.
        """
        if fused and self.order == 1:
            terms = (_FusedExpectations(self, features, offsets) if self.edge_pairs is None
                     else _FusedEdgeExpectations(self, features, offsets))
        else:
            def terms(w):
                posteriors = chain_posteriors(self.scores(features, w), offsets, True)
                return posteriors.log_z, self.expected_statistics(features, offsets,
                                                                  posteriors)
        if self.boundary_weights:
            return terms

        def with_fixed_blocks(w):
            log_z, expected = terms(w)
            return log_z, self._without_fixed_blocks(expected)

        return with_fixed_blocks

    def coefficients(self, w):
        """Named fitted weights: dense state weights and the other blocks, copied.

        Returns a dict with ``coef`` (n_classes, n_features), ``transitions``,
        ``start``, ``end`` (``-inf`` where the constraints forbid), and
        ``trigram`` or ``edge_coef`` (a CSR matrix (n_features, n_classes ** 2))
        where the structure has them.
        """
        blocks = self.layout.views(w)
        transitions, start, end = self.masked_transitions(blocks)
        named = {"coef": self.state_pairs.to_dense(blocks["state"]),
                 "transitions": transitions, "start": start, "end": end}
        if self.order == 2:
            named["trigram"] = blocks["trigram"].copy()
        if self.edge_pairs is not None:
            pairs = self.edge_pairs
            named["edge_coef"] = sp.csr_matrix(
                (blocks["edge"].copy(), pairs.labels.copy(), pairs.feature_ptr.copy()),
                shape=(pairs.n_features, pairs.n_labels))
        return named

    def weights(self, named):
        """The weight vector of named coefficients: the inverse of :meth:`coefficients`.

        ``named`` maps the names :meth:`coefficients` returns to arrays of the
        same shapes; ``-inf`` (forbidden) entries become 0. Returns None if a
        block is missing or has another shape (coefficients of another
        layout).
        """
        C = self.n_classes
        shapes = {"coef": (C, self.state_pairs.n_features), "transitions": (C, C),
                  "start": (C,), "end": (C,)}
        if self.order == 2:
            shapes["trigram"] = (C, C, C)
        if self.edge_pairs is not None:
            shapes["edge_coef"] = (self.edge_pairs.n_features, self.edge_pairs.n_labels)
        if not same_shapes(named, shapes):
            return None
        blocks = {"state": self.state_pairs.from_dense(named["coef"]),
                  "transitions": named["transitions"], "start": named["start"],
                  "end": named["end"]}
        if self.order == 2:
            blocks["trigram"] = named["trigram"]
        if self.edge_pairs is not None:
            blocks["edge"] = self.edge_pairs.from_sparse(sp.csr_matrix(named["edge_coef"]))
        return weights_of_blocks(self.layout, blocks, {
            "transitions": self.transition_mask, "start": self.start_mask,
            "end": self.end_mask})


    # --- online learning: one sequence's statistics in token form ---------------------

    def pair_blocks(self):
        """The blocks of ``w`` laid out by :class:`StatePairs`, by name."""
        blocks = {"state": self.state_pairs}
        if self.edge_pairs is not None:
            blocks["edge"] = self.edge_pairs
        return blocks

    def with_pairs(self, pairs):
        """The same chain with other pairs for the blocks of :meth:`pair_blocks`.

        For a model trained in parts (``partial_fit``), whose later parts bring
        (feature, label) pairs the first did not.
        """
        structure = ChainStructure(self.n_classes, pairs["state"], order=self.order,
                                   edge_pairs=pairs.get("edge"))
        structure.transition_mask, structure.start_mask, structure.end_mask = (
            self.transition_mask, self.start_mask, self.end_mask)
        return structure

    def plain_layout(self):
        """Where a plain order-1 chain keeps its weights, or None for another chain.

        For kernels that read ``w`` itself: the online solvers' epoch over an
        order-1 chain without transition features runs in one such kernel.
        """
        if self.order != 1 or self.edge_pairs is not None:
            return None
        slices = self.layout.slices
        # -1: no start and end weights, the kernels neither read nor move them
        boundary = self.boundary_weights
        return PlainChainLayout(self.state_pairs, slices["transitions"].start,
                                slices["start"].start if boundary else -1,
                                slices["end"].start if boundary else -1,
                                np.ascontiguousarray(self.transition_mask),
                                np.ascontiguousarray(self.start_mask),
                                np.ascontiguousarray(self.end_mask))

    def statistics_rows(self, features, offsets, label_ids):
        """``Phi(x, y)`` of the labellings ``label_ids`` as :class:`TokenStatistics`.

        Flattened, the same as :meth:`gold_statistics` of those labels.
        """
        C = self.n_classes
        n_tokens = label_ids.shape[0]
        tokens = np.arange(n_tokens)
        state = np.zeros((n_tokens, C))
        state[tokens, label_ids] = 1.0
        rows = {"state": state}
        pair_ids = edge_label_ids(label_ids, offsets, C)
        to = np.flatnonzero(pair_ids >= 0)
        if self.edge_pairs is not None:
            edge = np.zeros((n_tokens, C * C))
            edge[to, pair_ids[to]] = 1.0
            rows["edge"] = edge
        transitions = np.zeros((C, C))
        np.add.at(transitions, (label_ids[to - 1], label_ids[to]), 1.0)
        dense = {"transitions": transitions}
        if self.order == 2:
            third = to[pair_ids[to - 1] >= 0]
            trigram = np.zeros((C, C, C))
            np.add.at(trigram,
                      (label_ids[third - 2], label_ids[third - 1], label_ids[third]), 1.0)
            dense["trigram"] = trigram
        if self.boundary_weights:
            nonempty = np.diff(offsets) > 0
            first, last = offsets[:-1][nonempty], offsets[1:][nonempty] - 1
            dense["start"] = np.bincount(label_ids[first], minlength=C).astype(np.float64)
            dense["end"] = np.bincount(label_ids[last], minlength=C).astype(np.float64)
        return TokenStatistics(rows, dense)

    def expected_rows(self, features, offsets, w, scale=1.0):
        """``(log_z, E_p[Phi])`` under the weights ``scale * w``, in token form.

        Flattened, the expected statistics are :meth:`expected_statistics`.
        """
        scores = self.scores(features, w)
        if scale != 1.0:
            scores = ChainScores(*(None if block is None else block * scale for block in (
                scores.unary, scores.transitions, scores.start, scores.end, scores.trigram,
                scores.edges)))
        posteriors = chain_posteriors(scores, offsets, True)
        rows = {"state": posteriors.marginals}
        if self.edge_pairs is not None:
            rows["edge"] = posteriors.pair_marginals.reshape(-1, self.n_classes ** 2)
        dense = {"transitions": posteriors.transition_counts}
        if self.order == 2:
            dense["trigram"] = posteriors.trigram_counts
        if self.boundary_weights:
            nonempty = np.diff(offsets) > 0
            dense["start"] = posteriors.marginals[offsets[:-1][nonempty]].sum(axis=0)
            dense["end"] = posteriors.marginals[offsets[1:][nonempty] - 1].sum(axis=0)
        return posteriors.log_z, TokenStatistics(rows, dense)

    def decode_targets(self, features, offsets, w):
        """The best labelling under the weights ``w``: label ids (n_tokens,)."""
        return chain_decode(self.scores(features, w), offsets)


@dataclass
class PlainChainLayout:
    """The blocks of a plain order-1 chain's ``w``, as a kernel reads them.

    Attributes
    ----------
    state_pairs : StatePairs
        The state weights, from position 0 of ``w``.
    transitions_at, start_at, end_at : int
        Where the (C, C) transition weights (row-major, [from, to]) and the
        start and end weights begin in ``w``; ``start_at`` and ``end_at`` are
        -1 for a chain without them (CRFsuite's).
    transition_mask, start_mask, end_mask : ndarray
        0 or ``-inf`` (forbidden), added to the weights' scores.
    """

    state_pairs: StatePairs
    transitions_at: int
    start_at: int
    end_at: int
    transition_mask: np.ndarray
    start_mask: np.ndarray
    end_mask: np.ndarray


class _FusedExpectations:
    """The fused order-1 kernel behind the ``w -> (log_z, expected)`` interface."""

    def __init__(self, structure, features, offsets):
        self.structure = structure
        self.fused = FusedChainTerms(features, offsets, structure.state_pairs,
                                     structure.n_classes)

    def __call__(self, w):
        blocks = self.structure.layout.views(w)
        log_z, expected_pairs, transition_counts, start_counts, end_counts = self.fused(
            blocks["state"], *self.structure.masked_transitions(blocks))
        return log_z, np.concatenate([expected_pairs, transition_counts.ravel(),
                                      start_counts, end_counts])


class _FusedEdgeExpectations:
    """The fused kernel of transition features behind the ``w -> (log_z, expected)`` interface."""

    def __init__(self, structure, features, offsets):
        self.structure = structure
        self.features = features
        self.offsets = offsets
        # per chunk: partial sums of every state and edge pair and of the
        # (C, C) transition counts
        self.n_chunks = edge_chunk_count(
            offsets, structure.state_pairs.n_pairs + structure.edge_pairs.n_pairs
            + structure.n_classes ** 2)

    def __call__(self, w):
        structure = self.structure
        blocks = structure.layout.views(w)
        state, edge = structure.state_pairs, structure.edge_pairs
        log_z, *counts = self._terms(
            blocks, *self.features.kernel_args(), state.feature_ptr, state.labels,
            np.ascontiguousarray(blocks["state"]), edge.feature_ptr, edge.labels,
            np.ascontiguousarray(blocks["edge"]))
        # the kernel returns the blocks in the layout's order
        return log_z, np.concatenate([block.ravel() for block in counts])

    def _terms(self, blocks, *pair_args):
        """The kernel's ``(log_z, *counts)``, given the features' and the pairs' arguments.

        The chain's: then the transitions, start and end scores. The tree's
        link features (:class:`~skcrf.structures.tree.structure.TreeStructure`)
        take their own kernel here.
        """
        return edge_nll_terms(*pair_args, *self.structure.masked_transitions(blocks),
                              self.offsets, self.n_chunks)
