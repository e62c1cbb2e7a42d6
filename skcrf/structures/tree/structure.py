"""Tree structure: labels of the nodes of given trees, with pairwise factors along the links.

The weights of a tree CRF over ``C`` classes, in the flat vector ``w`` (see
:class:`TreeStructure.layout`):

- ``state`` : one weight per (feature, label) pair of :class:`StatePairs`;
- ``edge`` (with link features) : one weight per (feature, label pair) pair,
  the pair ``(a, b)`` of a link's parent and child labels numbered
  ``a * C + b``: the child's features weight its link, which then scores
  ``e[v, a, b] = T[a, b] + sum_f x[v, f] V[f, a, b]``;
- ``transitions`` : (C, C), the weight of a link whose parent has label ``a``
  and child label ``b`` at ``[a, b]``;
- ``root`` : (C,), the weight of each label at a root.

A sequence's tree comes with its features (``features.parents``: each token's
parent within its sequence, -1 for a root). Potentials are
:class:`TreeScores`; the gradient is the adjoint map from the node marginals
and expected link counts back to those blocks.
"""

from dataclasses import dataclass

import numpy as np

import scipy.sparse as sp

from ...features.arrays import csr_times_dense
from ...inference.tree.passes import tree_forward_backward, tree_viterbi
from ...inference.tree.edges import tree_edge_forward_backward, tree_edge_viterbi
from .._parameters import (ParameterLayout, StatePairs, TokenStatistics, same_shapes,
                          weights_of_blocks)
from ._edges_fused import tree_edge_nll_terms
from ..chain.order1 import _FusedEdgeExpectations, pin_labels
from ._fused import FusedTreeTerms


@dataclass
class TreeScores:
    """Log-space potentials of a batch of forests.

    Attributes
    ----------
    unary : ndarray of shape (n_tokens, n_classes)
    transitions : ndarray of shape (n_classes, n_classes)
        [parent label, child label].
    root : ndarray of shape (n_classes,)
    edges : ndarray of shape (n_tokens, n_classes, n_classes) or None
        With link features: each token's link score (transitions included),
        [token, parent label, token's label].
    """

    unary: np.ndarray
    transitions: np.ndarray
    root: np.ndarray
    edges: np.ndarray = None

    @classmethod
    def of_coefficients(cls, features, coef, transitions, root, edge_coef=None):
        """Potentials of a fitted tree CRF's dense state weights ``coef`` (n_classes, n_features).

        ``edge_coef`` is a CSR matrix (n_features, n_classes ** 2) of
        link-feature weights, or None.
        """
        edges = None
        if edge_coef is not None:
            n_classes = transitions.shape[0]
            pairs = StatePairs(edge_coef.indptr, edge_coef.indices, n_classes * n_classes)
            edges = link_scores(features, pairs, edge_coef.data, transitions)
        return cls(csr_times_dense(features, coef.T), transitions, root, edges)

    def fix_labels(self, fixed_ids):
        """Leave only the fixed label possible at each fixed token (-1: free), in place."""
        pin_labels(self.unary, fixed_ids)


@dataclass
class TreePosteriors:
    """What belief propagation returns for a batch of forests.

    Attributes
    ----------
    log_z : ndarray of shape (n_sequences,)
    marginals : ndarray of shape (n_tokens, n_classes)
    link_counts : ndarray of shape (n_classes, n_classes) or None
        Expected number of links of each (parent label, child label), summed.
    pair_marginals : ndarray of shape (n_tokens, n_classes, n_classes) or None
        Per link (with link features): the probability of each (parent label,
        child label), zero for a root.
    """

    log_z: np.ndarray
    marginals: np.ndarray
    link_counts: np.ndarray = None
    pair_marginals: np.ndarray = None


def tree_posteriors(scores, parents, offsets, with_counts=False):
    """Belief propagation over :class:`TreeScores` and the trees ``parents``."""
    if scores.edges is not None:
        log_z, marginals, pairs = tree_edge_forward_backward(
            scores.unary, scores.edges, scores.root, parents, offsets, with_counts)
        if not with_counts:
            return TreePosteriors(log_z, marginals)
        return TreePosteriors(log_z, marginals, pairs.sum(axis=0), pairs)
    log_z, marginals, counts = tree_forward_backward(
        scores.unary, scores.transitions, scores.root, parents, offsets, with_counts)
    return TreePosteriors(log_z, marginals, counts if with_counts else None)


def tree_decode(scores, parents, offsets):
    """Max-product label ids (n_tokens,) over :class:`TreeScores`."""
    if scores.edges is not None:
        return tree_edge_viterbi(scores.unary, scores.edges, scores.root, parents, offsets)
    return tree_viterbi(scores.unary, scores.transitions, scores.root, parents, offsets)


def tree_labelling_scores(scores, parents, offsets, label_ids):
    """The log score of one given labelling of each forest, ``-inf`` if it is forbidden.

    Parameters
    ----------
    scores : TreeScores
    parents : ndarray of int64 of shape (n_tokens,)
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    label_ids : ndarray of int64 of shape (n_tokens,)

    Returns
    -------
    ndarray of shape (n_sequences,)
        0 for an empty sequence.
    """
    n_sequences = offsets.shape[0] - 1
    n_tokens = label_ids.shape[0]
    owner = np.repeat(np.arange(n_sequences), np.diff(offsets))
    absolute = _absolute_parents(parents, offsets)
    child = absolute >= 0
    parent_labels = label_ids[np.where(child, absolute, 0)]
    if scores.edges is None:
        link_scores = scores.transitions[parent_labels, label_ids]
    else:
        link_scores = scores.edges[np.arange(n_tokens), parent_labels, label_ids]
    links = np.where(child, link_scores, scores.root[label_ids])
    total = np.zeros(n_sequences)  # bincount of no tokens would be int64
    total += np.bincount(owner, weights=scores.unary[np.arange(n_tokens), label_ids] + links,
                         minlength=n_sequences)
    return total


def link_scores(features, edge_pairs, edge_weights, transitions):
    """(n_tokens, C, C) each token's link scores: ``transitions`` plus its link features' weights."""
    n_classes = transitions.shape[0]
    edges = edge_pairs.scores(features, edge_weights).reshape(-1, n_classes, n_classes)
    edges += transitions
    return edges


def link_label_ids(parents, offsets, label_ids, n_classes):
    """The label pair ``a * C + b`` of each token's link (parent a, token b), -1 for a root
    or where either label is -1 (not known: partial labels)."""
    absolute = _absolute_parents(parents, offsets)
    child = absolute >= 0
    parent_ids = label_ids[np.where(child, absolute, 0)]
    return np.where(child & (parent_ids >= 0) & (label_ids >= 0),
                    parent_ids * n_classes + label_ids, -1)


def _absolute_parents(parents, offsets):
    """Each token's parent as a row index of the stacked tokens, -1 for a root."""
    starts = np.repeat(offsets[:-1], np.diff(offsets))
    return np.where(parents >= 0, parents + starts, -1)


class TreeStructure:
    """Parameter layout, potentials and gradient of a tree-structured CRF.

    Parameters
    ----------
    n_classes : int
    state_pairs : StatePairs
        The (feature, class) pairs that carry a state weight.
    edge_pairs : StatePairs or None, default=None
        The (feature, label pair) pairs of link features (labels ``a * C +
        b``), or None for links scored by ``transitions`` alone.
    """

    def __init__(self, n_classes, state_pairs, edge_pairs=None):
        self.n_classes = n_classes
        self.state_pairs = state_pairs
        self.edge_pairs = edge_pairs
        C = n_classes
        edge = [] if edge_pairs is None else [("edge", (edge_pairs.n_pairs,))]
        self.layout = ParameterLayout([("state", (state_pairs.n_pairs,)), *edge,
                                       ("transitions", (C, C)), ("root", (C,))])

    @classmethod
    def for_training(cls, features, label_ids, n_classes, *, all_possible_states=False,
                     transition_columns=None, offsets=None):
        """The structure of a training set: which pairs get weights.

        ``transition_columns`` is a boolean mask of the features that also
        weight their token's link (link features), or None; they get the
        (feature, label pair) pairs of the training links (every pair with
        ``all_possible_states``), which need the sequences' ``offsets``.
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
                    features, link_label_ids(features.parents, offsets, label_ids, n_classes),
                    n_pairs, columns=transition_columns)
        return cls(n_classes, state_pairs, edge_pairs)

    @property
    def n_parameters(self):
        return self.layout.n_parameters

    def gold_statistics(self, features, offsets, label_ids):
        """Phi(gold) summed over the training trees, in the layout of ``w``."""
        counts = self.layout.zeros()
        blocks = self.layout.views(counts)
        blocks["state"][:] = self.state_pairs.empirical_counts(features, label_ids)
        if self.edge_pairs is not None:
            blocks["edge"][:] = self.edge_pairs.empirical_counts(
                features, link_label_ids(features.parents, offsets, label_ids,
                                         self.n_classes))
        parents = _absolute_parents(features.parents, offsets)
        child = np.flatnonzero(parents >= 0)
        np.add.at(blocks["transitions"], (label_ids[parents[child]], label_ids[child]), 1.0)
        blocks["root"][:] = np.bincount(label_ids[parents < 0], minlength=self.n_classes)
        return counts

    def scores(self, features, w):
        """:class:`TreeScores` of the features under the weights ``w``."""
        blocks = self.layout.views(w)
        transitions = np.ascontiguousarray(blocks["transitions"])
        edges = None
        if self.edge_pairs is not None:
            edges = link_scores(features, self.edge_pairs, blocks["edge"], transitions)
        return TreeScores(self.state_pairs.scores(features, blocks["state"]), transitions,
                          np.ascontiguousarray(blocks["root"]), edges)

    def expected_statistics(self, features, posteriors):
        """E_p[Phi] in the layout of ``w``: the adjoint of :meth:`scores` applied to marginals.

        Tokens of a sequence with no feasible labelling (log Z = -inf) have
        all-zero marginals and add nothing.
        """
        expected = self.layout.zeros()
        blocks = self.layout.views(expected)
        blocks["state"][:] = self.state_pairs.expectations(features, posteriors.marginals)
        if self.edge_pairs is not None:
            blocks["edge"][:] = self.edge_pairs.expectations(
                features, posteriors.pair_marginals.reshape(-1, self.n_classes ** 2))
        blocks["transitions"][:] = posteriors.link_counts
        blocks["root"][:] = posteriors.marginals[features.parents < 0].sum(axis=0)
        return expected

    def expectation_terms(self, features, offsets, fused=True):
        """A function ``w -> (log_z, expected statistics)`` over one training set.

        The fused kernel keeps no per-token arrays of scores or marginals;
        ``fused=False`` goes through :meth:`scores`, the inference kernel and
        :meth:`expected_statistics`.
        """
        parents = features.parents
        if fused and self.edge_pairs is not None:
            return _FusedEdgeTerms(self, features, offsets)
        if fused:
            kernel = FusedTreeTerms(features, offsets, self.state_pairs, self.n_classes)
            layout = self.layout

            def fused_terms(w):
                blocks = layout.views(w)
                log_z, *counts = kernel(blocks["state"], blocks["transitions"],
                                        blocks["root"])
                # the kernel returns the blocks in the layout's order
                return log_z, np.concatenate([block.ravel() for block in counts])

            return fused_terms

        def terms(w):
            posteriors = tree_posteriors(self.scores(features, w), parents, offsets, True)
            return posteriors.log_z, self.expected_statistics(features, posteriors)

        return terms

    def coefficients(self, w):
        """Named fitted weights: ``coef`` (n_classes, n_features), ``transitions``, ``root``.

        With link features also ``edge_coef``, a CSR matrix (n_features,
        n_classes ** 2).
        """
        blocks = self.layout.views(w)
        named = {"coef": self.state_pairs.to_dense(blocks["state"]),
                 "transitions": blocks["transitions"].copy(),
                 "root": blocks["root"].copy()}
        if self.edge_pairs is not None:
            pairs = self.edge_pairs
            named["edge_coef"] = sp.csr_matrix(
                (blocks["edge"].copy(), pairs.labels.copy(), pairs.feature_ptr.copy()),
                shape=(pairs.n_features, pairs.n_labels))
        return named

    def weights(self, named):
        """The weight vector of named coefficients: the inverse of :meth:`coefficients`.

        Returns None if a block is missing or has another shape.
        """
        C = self.n_classes
        shapes = {"coef": (C, self.state_pairs.n_features), "transitions": (C, C),
                  "root": (C,)}
        if self.edge_pairs is not None:
            shapes["edge_coef"] = (self.edge_pairs.n_features, self.edge_pairs.n_labels)
        if not same_shapes(named, shapes):
            return None
        blocks = {"state": self.state_pairs.from_dense(named["coef"]),
                  "transitions": named["transitions"], "root": named["root"]}
        if self.edge_pairs is not None:
            blocks["edge"] = self.edge_pairs.from_sparse(sp.csr_matrix(named["edge_coef"]))
        return weights_of_blocks(self.layout, blocks)


    # --- online learning: one sequence's statistics in token form ---------------------

    def pair_blocks(self):
        """The blocks of ``w`` laid out by :class:`StatePairs`, by name."""
        if self.edge_pairs is not None:
            # the token-form statistics the online solvers step through have no
            # link-feature block yet
            raise ValueError(
                "The online solvers do not take link features yet: fit this TreeCRF "
                "with solver='lbfgs', or with transition_features=None.")
        return {"state": self.state_pairs}

    def with_pairs(self, pairs):
        """The same structure with other state pairs (see :meth:`pair_blocks`)."""
        return TreeStructure(self.n_classes, pairs["state"])

    def statistics_rows(self, features, offsets, label_ids):
        """``Phi(x, y)`` of the labellings ``label_ids`` as :class:`TokenStatistics`.

        Flattened, the same as :meth:`gold_statistics` of those labels.
        """
        C = self.n_classes
        n_tokens = label_ids.shape[0]
        state = np.zeros((n_tokens, C))
        state[np.arange(n_tokens), label_ids] = 1.0
        parents = _absolute_parents(features.parents, offsets)
        child = np.flatnonzero(parents >= 0)
        transitions = np.zeros((C, C))
        np.add.at(transitions, (label_ids[parents[child]], label_ids[child]), 1.0)
        root = np.bincount(label_ids[parents < 0], minlength=C).astype(np.float64)
        return TokenStatistics({"state": state}, {"transitions": transitions, "root": root})

    def expected_rows(self, features, offsets, w, scale=1.0):
        """``(log_z, E_p[Phi])`` under the weights ``scale * w``, in token form.

        Flattened, the expected statistics are :meth:`expected_statistics`.
        """
        scores = self.scores(features, w)
        if scale != 1.0:
            scores = TreeScores(scores.unary * scale, scores.transitions * scale,
                                scores.root * scale)
        posteriors = tree_posteriors(scores, features.parents, offsets, True)
        return posteriors.log_z, TokenStatistics(
            {"state": posteriors.marginals},
            {"transitions": posteriors.link_counts,
             "root": posteriors.marginals[features.parents < 0].sum(axis=0)})

    def decode_targets(self, features, offsets, w):
        """The best labelling under the weights ``w``: label ids (n_tokens,)."""
        return tree_decode(self.scores(features, w), features.parents, offsets)


class _FusedEdgeTerms(_FusedEdgeExpectations):
    """The fused kernel of link features behind the ``w -> (log_z, expected)`` interface.

    The chain's transition features' (same chunks, same arguments), with the
    tree's kernel, which takes the link and root scores and the parents.
    """

    def _terms(self, blocks, *pair_args):
        return tree_edge_nll_terms(*pair_args, np.ascontiguousarray(blocks["transitions"]),
                                   np.ascontiguousarray(blocks["root"]), self.features.parents,
                                   self.offsets, self.n_chunks)
