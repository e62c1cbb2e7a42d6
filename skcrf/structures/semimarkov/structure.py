"""The semi-Markov (segment) structure: parameters, potentials, gradient and gold statistics.

A segmentation of a sequence splits it into consecutive segments, each with
one of ``C`` segment labels. The weights, in the flat vector ``w`` (see
:attr:`SemiMarkovStructure.layout`):

- ``token`` : one weight per (feature, role label) pair of :class:`StatePairs`,
  the role label ``k * C + y`` for role ``k`` of :data:`TOKEN_ROLES`: ``state``
  weights score every token of a segment of label ``y``, ``first`` and
  ``last`` weights its first and last token only;
- ``segment`` (with segment features) : one weight per (segment feature,
  label) pair: the features of a candidate segment
  (``features.segments``, row ``t * L + d - 1`` for the ``d`` tokens from
  ``t``) score it for its label, as the span scores of the kernels;
- ``length`` : (C, max_length), ``length[y, d - 1]`` scores a segment of ``d``
  tokens;
- ``transitions`` : (C, C) between consecutive segments, [previous, next];
- ``start``, ``end`` : (C,) the first and last segment's label.

A gold segmentation is given as one code per token
(:func:`~.segment_scores.segment_codes`):
the label ``y`` of its segment, plus ``C`` on the token that starts it. Which
lengths a label may take is fixed (``max_lengths``), and so is whether two
consecutive segments may share a label (``allow_repeats``): both enter the
potentials as ``-inf``, never as weights.
"""

import numpy as np

from ...features._kernels import pair_expectations, pair_products
from ...inference.semimarkov.passes import COVERED, FIRST, LAST
from .._parameters import (ParameterLayout, StatePairs, TokenStatistics, same_shapes,
                          weights_of_blocks)
from ._fused import FusedSemiMarkovTerms
from .segment_scores import (TOKEN_ROLES, Segmentation, SegmentPosteriors, SegmentScores,
                             segment_codes, segment_decode, span_array)

#: Partial sums of pair_expectations kept per chunk of tokens (float64 values).
_EXPECTATION_BUDGET = 1 << 22


def observed_token_pairs(features, offsets, codes, n_labels):
    """The (feature, role label) pairs of a training set's gold segments: who gets a token weight.

    A feature gets a ``state`` weight for a label if a token inside a gold
    segment of that label has it, and ``first`` / ``last`` weights if the
    segment's first / last token has it (:class:`StatePairs` sorted by
    feature, then role label). The pairs of a training set split into parts
    are the sorted union of the parts' pairs.
    """
    n_role_labels = len(TOKEN_ROLES) * n_labels
    segmentation = Segmentation.of_codes(codes, offsets, n_labels)
    feature_ids, labels = [], []
    for role_labels in segmentation.token_role_labels(offsets, n_labels):
        pairs = StatePairs.observed(features, role_labels, n_role_labels)
        feature_ids.append(pairs.feature_of_pairs())
        labels.append(pairs.labels.astype(np.int64))
    order = np.lexsort((np.concatenate(labels), np.concatenate(feature_ids)))
    return StatePairs.from_coordinates(np.concatenate(feature_ids)[order],
                                       np.concatenate(labels)[order],
                                       features.n_features, n_role_labels)


def _without_single_token_boundaries(token_pairs, max_lengths):
    """``token_pairs`` without the first- and last-token pairs of labels of one-token segments.

    A segment of one token is its own first and last token: first and last
    weights of such a label would only add to its state weights, feature by
    feature (the ``"O"`` of a scheme, two thirds of whose token weights they
    would be), so such labels get state weights alone.
    """
    C = max_lengths.shape[0]
    role, label = np.divmod(token_pairs.labels.astype(np.int64), C)
    keep = (role == 0) | (max_lengths[label] > 1)
    if keep.all():
        return token_pairs
    return StatePairs.from_coordinates(token_pairs.feature_of_pairs()[keep],
                                       token_pairs.labels[keep], token_pairs.n_features,
                                       token_pairs.n_labels)


def gold_segment_rows(features, offsets, codes, n_labels):
    """The label of every row of ``features.segments`` that is a gold segment, -1 elsewhere.

    Gold segments longer than the segment features' length have no row.
    """
    L = features.segment_length
    row_labels = np.full(features.n_tokens * L, -1, dtype=np.int64)
    first, stops, labels, _ = Segmentation.of_codes(codes, offsets, n_labels).bounds(offsets)
    sizes = stops - first
    scored = sizes <= L
    row_labels[first[scored] * L + sizes[scored] - 1] = labels[scored]
    return row_labels


class SemiMarkovStructure:
    """Parameter layout, potentials and gradient of a semi-Markov CRF.

    Parameters
    ----------
    token_pairs : StatePairs
        The (feature, role label) pairs that carry a token weight, labels in
        ``[0, 3 * n_labels)`` (see the module docstring).
    max_lengths : array-like of int of shape (n_labels,)
        Longest segment of each label; the length block has
        ``max(max_lengths)`` columns.
    allow_repeats : bool, default=True
        Whether two consecutive segments may have the same label. False
        makes every segment a maximal run of one label.
    allowed_transitions : ndarray of bool of shape (n_labels, n_labels), default=None
        Which label may follow which between consecutive segments, [previous,
        next]; None allows every pair (but repeats if not ``allow_repeats``).
        A forbidden pair's weight stays in ``w``, and the potentials add
        ``-inf`` to it, so it gets no probability and a zero gradient.
    label_names : sequence, default=None
        The segment labels, to name them in errors (else by id).
    segment_pairs : StatePairs, default=None
        The (segment feature, label) pairs that carry a segment weight
        (labels in ``[0, n_labels)``), or None for no segment features: the
        features then have no ``segments`` to read.
    """

    def __init__(self, token_pairs, max_lengths, *, allow_repeats=True,
                 allowed_transitions=None, label_names=None, segment_pairs=None):
        self.label_names = None if label_names is None else list(label_names)
        self.max_lengths = np.asarray(max_lengths, dtype=np.int64)
        if self.max_lengths.min(initial=1) < 1:
            raise ValueError("every label needs a maximum segment length of at least 1.")
        self.n_labels = C = self.max_lengths.shape[0]
        if token_pairs.n_labels != len(TOKEN_ROLES) * C:
            raise ValueError(f"token_pairs must have {len(TOKEN_ROLES) * C} labels, "
                             f"got {token_pairs.n_labels}.")
        if segment_pairs is not None and segment_pairs.n_labels != C:
            raise ValueError(f"segment_pairs must have {C} labels, got "
                             f"{segment_pairs.n_labels}.")
        self.token_pairs = _without_single_token_boundaries(token_pairs, self.max_lengths)
        self.segment_pairs = segment_pairs
        self.allow_repeats = allow_repeats
        self.max_length = int(self.max_lengths.max(initial=1))
        segment = [] if segment_pairs is None else [("segment", (segment_pairs.n_pairs,))]
        self.layout = ParameterLayout([
            ("token", (self.token_pairs.n_pairs,)), *segment, ("length", (C, self.max_length)),
            ("transitions", (C, C)), ("start", (C,)), ("end", (C,))])
        # fixed -inf: lengths a label may not take, and repeats if forbidden
        self.length_mask = np.where(
            np.arange(1, self.max_length + 1) <= self.max_lengths[:, None], 0.0, -np.inf)
        self.transition_mask = np.zeros((C, C))
        if not allow_repeats:
            np.fill_diagonal(self.transition_mask, -np.inf)
        if allowed_transitions is not None:
            self.transition_mask[~np.asarray(allowed_transitions, dtype=bool)] = -np.inf

    @classmethod
    def for_training(cls, features, offsets, codes, max_lengths, *, allow_repeats=True,
                     all_possible_states=False, allowed_transitions=None, label_names=None):
        """The structure of a training set: which (feature, role label) pairs get weights.

        With ``features.segments``, segment features get weights too: the
        (segment feature, label) pairs of the gold segments (every pair with
        ``all_possible_states``).
        """
        n_labels = len(max_lengths)
        n_role_labels = len(TOKEN_ROLES) * n_labels
        segments = features.segments
        if all_possible_states:
            token_pairs = StatePairs.every(features.n_features, n_role_labels)
            segment_pairs = (None if segments is None
                             else StatePairs.every(segments.n_features, n_labels))
        else:
            token_pairs = observed_token_pairs(features, offsets, codes, n_labels)
            segment_pairs = (None if segments is None else StatePairs.observed(
                segments, gold_segment_rows(features, offsets, codes, n_labels), n_labels))
        return cls(token_pairs, max_lengths, allow_repeats=allow_repeats,
                   allowed_transitions=allowed_transitions, label_names=label_names,
                   segment_pairs=segment_pairs)

    def _label(self, y):
        """Segment label ``y`` as messages name it."""
        return f"label id {y}" if self.label_names is None else repr(self.label_names[y])

    @property
    def n_parameters(self):
        return self.layout.n_parameters

    def _token_expectations(self, features, token_marginals):
        pairs = self.token_pairs
        n_chunks = max(2, min(16, _EXPECTATION_BUDGET // max(pairs.n_pairs, 1)))
        return pair_expectations(*features.kernel_args(), pairs.feature_ptr, pairs.labels,
                                 np.ascontiguousarray(token_marginals), n_chunks)

    @staticmethod
    def _token_marginals(roles):
        """(n_tokens, 3 * C) marginals of the token weights' role labels."""
        # the explicit width: a batch of no token reshapes too (-1 cannot)
        return roles[:, [COVERED, FIRST, LAST], :].reshape(roles.shape[0], 3 * roles.shape[2])

    def gold_statistics(self, features, offsets, codes):
        """Phi(gold) summed over the training sequences, in the layout of ``w``.

        ``codes`` are :func:`segment_codes`. Raises ValueError if a gold
        segment is longer than its label allows, or follows one whose label
        may not precede its own (a repeat where repeats are forbidden, or a
        pair ``allowed_transitions`` forbids), naming the sequence and tokens.
        """
        C = self.n_labels
        segmentation = Segmentation.of_codes(codes, offsets, C)
        first, stops, labels, sequence = segmentation.bounds(offsets)
        self._check_gold(first, stops, labels, sequence, offsets)
        counts = self.layout.zeros()
        blocks = self.layout.views(counts)
        # the gold marginals are 0/1: each role's labels counted without a dense array
        for role_labels in segmentation.token_role_labels(offsets, C):
            blocks["token"] += self.token_pairs.empirical_counts(features, role_labels)
        if self.segment_pairs is not None:
            blocks["segment"][:] = self.segment_pairs.empirical_counts(
                features.segments, gold_segment_rows(features, offsets, codes, C))
        np.add.at(blocks["length"], (labels, stops - first - 1), 1.0)
        follows = sequence[1:] == sequence[:-1]
        np.add.at(blocks["transitions"], (labels[:-1][follows], labels[1:][follows]), 1.0)
        opens = np.ones(first.shape[0], dtype=bool)
        opens[1:] = ~follows
        closes = np.ones(first.shape[0], dtype=bool)
        closes[:-1] = ~follows
        blocks["start"][:] = np.bincount(labels[opens], minlength=C)
        blocks["end"][:] = np.bincount(labels[closes], minlength=C)
        return counts

    def _check_gold(self, first, stops, labels, sequence, offsets):
        too_long = np.flatnonzero(stops - first > self.max_lengths[labels])
        if too_long.size:
            k = too_long[0]
            q, lo = sequence[k], offsets[sequence[k]]
            raise ValueError(
                f"Sequence {q} has a segment of {stops[k] - first[k]} tokens (tokens "
                f"{first[k] - lo}:{stops[k] - lo}, {self._label(labels[k])}), longer than "
                f"the {self.max_lengths[labels[k]]} its label allows.")
        forbidden = np.flatnonzero(
            (sequence[1:] == sequence[:-1])
            & np.isneginf(self.transition_mask[labels[:-1], labels[1:]]))
        if forbidden.size:
            k = forbidden[0] + 1
            what = ("repeats the previous segment's label, which this structure forbids"
                    if labels[k] == labels[k - 1] else
                    f"follows a segment {self._label(labels[k - 1])}, a transition "
                    f"allowed_transitions forbids")
            raise ValueError(f"Sequence {sequence[k]}: the segment {self._label(labels[k])} "
                             f"at token {first[k] - offsets[sequence[k]]} {what}.")

    def scores(self, features, w):
        """:class:`SegmentScores` of the features under the weights ``w``."""
        blocks = self.layout.views(w)
        pairs = self.token_pairs
        token = pair_products(*features.kernel_args(), pairs.feature_ptr, pairs.labels,
                              np.ascontiguousarray(blocks["token"]), pairs.n_labels)
        scores = SegmentScores.of_token_scores(
            token, self.n_labels, blocks["length"] + self.length_mask,
            blocks["transitions"] + self.transition_mask,
            np.ascontiguousarray(blocks["start"]), np.ascontiguousarray(blocks["end"]))
        if self.segment_pairs is not None:
            scores.spans = span_array(
                self.segment_pairs.scores(features.segments, blocks["segment"]), features)
        return scores

    def expected_statistics(self, features, offsets, posteriors):
        """E_p[Phi] in the layout of ``w``: the adjoint of :meth:`scores` on the marginals.

        Sequences with no feasible segmentation have zero marginals and add
        nothing.
        """
        expected = self.layout.zeros()
        blocks = self.layout.views(expected)
        blocks["token"][:] = self._token_expectations(
            features, self._token_marginals(posteriors.roles))
        if self.segment_pairs is not None:
            marginals = posteriors.span_marginals
            blocks["segment"][:] = self.segment_pairs.expectations(
                features.segments, marginals.reshape(-1, marginals.shape[2]))
        blocks["length"][:] = posteriors.length_counts
        blocks["transitions"][:] = posteriors.transition_counts
        blocks["start"][:] = posteriors.start_counts
        blocks["end"][:] = posteriors.end_counts
        return expected

    def expectation_terms(self, features, offsets, fused=True):
        """A function ``w -> (log_z, expected statistics)`` over one training set.

        The fused kernel (:mod:`._semimarkov_fused`) keeps no per-token arrays
        of scores or marginals; ``fused=False`` goes through :meth:`scores`,
        the inference kernels and :meth:`expected_statistics`.
        """
        if fused:
            kernel = FusedSemiMarkovTerms(features, offsets, self.token_pairs,
                                          self.segment_pairs, self.n_labels)
            layout = self.layout

            def fused_terms(w):
                blocks = layout.views(w)
                log_z, *counts = kernel(
                    blocks["token"], blocks.get("segment"), blocks["length"] + self.length_mask,
                    blocks["transitions"] + self.transition_mask, blocks["start"],
                    blocks["end"])
                # the kernel returns the blocks in the layout's order (an empty
                # segment block without segment features)
                return log_z, np.concatenate([block.ravel() for block in counts])

            return fused_terms

        def terms(w):
            posteriors = SegmentPosteriors.of_scores(self.scores(features, w), offsets)
            return posteriors.log_z, self.expected_statistics(features, offsets, posteriors)

        return terms

    def coefficients(self, w):
        """Named fitted weights, copied, with the structure's fixed ``-inf`` in place.

        Returns a dict with dense ``coef``, ``first_coef``, ``last_coef`` (each
        (n_labels, n_features)), ``length`` (``-inf`` at the lengths a label
        may not take), ``transitions`` (``-inf`` on the diagonal if repeats are
        forbidden), ``start`` and ``end``, and with segment features
        ``segment_coef`` (n_labels, n_segment_features): what
        :meth:`SegmentScores.of_coefficients` takes.
        """
        blocks = self.layout.views(w)
        dense = self.token_pairs.to_dense(blocks["token"])
        C = self.n_labels
        named = {("coef" if role == "state" else f"{role}_coef"): dense[k * C:(k + 1) * C]
                 for k, role in enumerate(TOKEN_ROLES)}
        if self.segment_pairs is not None:
            named["segment_coef"] = self.segment_pairs.to_dense(blocks["segment"])
        named.update(length=blocks["length"] + self.length_mask,
                     transitions=blocks["transitions"] + self.transition_mask,
                     start=blocks["start"].copy(), end=blocks["end"].copy())
        return named

    def weights(self, named):
        """The weight vector of named coefficients: the inverse of :meth:`coefficients`.

        ``-inf`` entries (lengths and transitions the structure forbids)
        become 0. Returns None if a block is missing or has another shape.
        """
        C, n_features = self.n_labels, self.token_pairs.n_features
        roles = [("coef" if role == "state" else f"{role}_coef") for role in TOKEN_ROLES]
        shapes = {name: (C, n_features) for name in roles}
        shapes.update(length=(C, self.max_length), transitions=(C, C), start=(C,), end=(C,))
        if self.segment_pairs is not None:
            shapes["segment_coef"] = (C, self.segment_pairs.n_features)
        if not same_shapes(named, shapes):
            return None
        dense = np.concatenate([named[name] for name in roles])
        blocks = {"token": self.token_pairs.from_dense(dense), "length": named["length"],
                  "transitions": named["transitions"], "start": named["start"],
                  "end": named["end"]}
        if self.segment_pairs is not None:
            blocks["segment"] = self.segment_pairs.from_dense(named["segment_coef"])
        return weights_of_blocks(self.layout, blocks,
                                 {"length": self.length_mask,
                                  "transitions": self.transition_mask})

    # --- online learning: one sequence's statistics in token form ---------------------

    def pair_blocks(self):
        """The blocks of ``w`` laid out by :class:`StatePairs`, by name."""
        if self.segment_pairs is not None:
            # the token-form statistics the online solvers step through have no
            # segment block yet
            raise ValueError(
                "The online solvers do not take segment features yet: fit this "
                "SemiMarkovCRF with solver='lbfgs', or featurize without "
                "segment_features.")
        return {"token": self.token_pairs}

    def with_pairs(self, pairs):
        """The same structure with other token pairs (see :meth:`pair_blocks`).

        For a model trained in parts (``partial_fit``), whose later parts bring
        (feature, role label) pairs the first did not.
        """
        structure = SemiMarkovStructure(pairs["token"], self.max_lengths,
                                        allow_repeats=self.allow_repeats)
        structure.transition_mask = self.transition_mask
        return structure

    def statistics_rows(self, features, offsets, codes):
        """``Phi(x, y)`` of the segmentations ``codes`` as :class:`TokenStatistics`.

        Flattened, the same as :meth:`gold_statistics` of those codes (which
        also checks them).
        """
        C = self.n_labels
        segmentation = Segmentation.of_codes(codes, offsets, C)
        first, stops, labels, sequence = segmentation.bounds(offsets)
        roles = segmentation.role_indicators(offsets, C)
        length = np.zeros((C, self.max_length))
        np.add.at(length, (labels, stops - first - 1), 1.0)
        follows = sequence[1:] == sequence[:-1]
        transitions = np.zeros((C, C))
        np.add.at(transitions, (labels[:-1][follows], labels[1:][follows]), 1.0)
        opens = np.ones(first.shape[0], dtype=bool)
        opens[1:] = ~follows
        closes = np.ones(first.shape[0], dtype=bool)
        closes[:-1] = ~follows
        return TokenStatistics(
            {"token": self._token_marginals(roles)},
            {"length": length, "transitions": transitions,
             "start": np.bincount(labels[opens], minlength=C).astype(np.float64),
             "end": np.bincount(labels[closes], minlength=C).astype(np.float64)})

    def expected_rows(self, features, offsets, w, scale=1.0):
        """``(log_z, E_p[Phi])`` under the weights ``scale * w``, in token form.

        Flattened, the expected statistics are :meth:`expected_statistics`.
        """
        scores = self.scores(features, w)
        if scale != 1.0:
            scores = SegmentScores(*(block * scale for block in scores.kernel_args()))
        posteriors = SegmentPosteriors.of_scores(scores, offsets)
        return posteriors.log_z, TokenStatistics(
            {"token": self._token_marginals(posteriors.roles)},
            {"length": posteriors.length_counts, "transitions": posteriors.transition_counts,
             "start": posteriors.start_counts, "end": posteriors.end_counts})

    def decode_targets(self, features, offsets, w):
        """The best segmentation under the weights ``w``, as :func:`segment_codes`."""
        segmentation = segment_decode(self.scores(features, w), offsets)
        return segment_codes(segmentation.label_ids, segmentation.starts, self.n_labels)
