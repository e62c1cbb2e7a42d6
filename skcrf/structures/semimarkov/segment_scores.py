"""Segmentations and segment potentials of a batch, and the queries over them.

What the semi-Markov structure (:mod:`.semimarkov`) and the estimator
exchange: a :class:`Segmentation` (flat arrays over all tokens), the
log-space potentials the kernels take (:class:`SegmentScores`), what the
forward-backward returns (:class:`SegmentPosteriors`), and Viterbi, n-best,
role marginals and the scores of given segmentations over them.
"""

from dataclasses import dataclass

import numpy as np

from ...features.arrays import csr_times_dense
from ...inference.semimarkov.passes import (COVERED, FIRST, LAST, N_ROLES, REPEAT, SINGLE,
                                    segment_posteriors, segment_viterbi)
from ...inference.semimarkov.queries import (CUT, NO_REPEAT, fixed_segment_posteriors,
                                            nbest_segmentations)

#: The token weights' roles, in the order of their label blocks.
TOKEN_ROLES = ("state", "first", "last")


def segment_codes(label_ids, starts, n_labels):
    """One code per token: its segment's label, plus ``n_labels`` where a segment starts."""
    return np.asarray(label_ids, dtype=np.int64) + n_labels * np.asarray(starts, dtype=np.int64)


@dataclass
class Segmentation:
    """Segments of a batch of sequences, as flat arrays over all tokens.

    Attributes
    ----------
    label_ids : ndarray of int64 of shape (n_tokens,)
        The label of the segment each token lies in.
    starts : ndarray of bool of shape (n_tokens,)
        Whether a segment starts at the token (always at a sequence's first).
    """

    label_ids: np.ndarray
    starts: np.ndarray

    @classmethod
    def of_codes(cls, codes, offsets, n_labels):
        codes = np.asarray(codes, dtype=np.int64)
        starts = codes >= n_labels
        starts[offsets[:-1][np.diff(offsets) > 0]] = True
        return cls(codes % n_labels, starts)

    def bounds(self, offsets):
        """(first token, stop, label, sequence) arrays of every segment, over all tokens."""
        first = np.flatnonzero(self.starts)
        ends = np.zeros(self.starts.shape[0] + 1, dtype=bool)
        ends[first] = True
        ends[offsets] = True
        stops = np.flatnonzero(ends[1:]) + 1
        sequence = np.searchsorted(offsets, first, side="right") - 1
        return first, stops, self.label_ids[first], sequence

    def token_role_labels(self, offsets, n_labels):
        """The role label of each token for each weighted role of :data:`TOKEN_ROLES`.

        Returns a list of three (n_tokens,) int64 arrays: the label ``y`` of
        the token's segment (``state``), ``C + y`` on the first token of a
        segment and -1 elsewhere (``first``), ``2 * C + y`` on its last token
        (``last``): the labels of the token weights' pairs, with no
        (n_tokens, N_ROLES, n_labels) array of indicators.
        """
        first, stops, labels, _ = self.bounds(offsets)
        n_tokens = self.label_ids.shape[0]
        role_labels = [self.label_ids.astype(np.int64)]
        for k, tokens in ((1, first), (2, stops - 1)):
            row = np.full(n_tokens, -1, dtype=np.int64)
            row[tokens] = labels + k * n_labels
            role_labels.append(row)
        return role_labels

    def role_indicators(self, offsets, n_labels):
        """(n_tokens, N_ROLES, n_labels) 0/1 roles of this segmentation (see the kernels)."""
        first, stops, labels, sequence = self.bounds(offsets)
        n_tokens = self.label_ids.shape[0]
        roles = np.zeros((n_tokens, N_ROLES, n_labels))
        roles[np.arange(n_tokens), COVERED, self.label_ids] = 1.0
        roles[first, FIRST, labels] = 1.0
        roles[stops - 1, LAST, labels] = 1.0
        single = stops - first == 1
        roles[first[single], SINGLE, labels[single]] = 1.0
        repeat = np.zeros(first.shape[0], dtype=bool)
        repeat[1:] = (sequence[1:] == sequence[:-1]) & (labels[1:] == labels[:-1])
        roles[first[repeat], REPEAT, labels[repeat]] = 1.0
        return roles


@dataclass
class SegmentScores:
    """Log-space potentials of a batch of sequences, as the semi-Markov kernels take them.

    ``boundaries`` (n_tokens,) int8, or None for none, holds the flags
    :data:`~skcrf.inference.semimarkov.queries.CUT` and
    :data:`~skcrf.inference.semimarkov.queries.NO_REPEAT` of fixed tags.
    """

    state: np.ndarray
    first: np.ndarray
    last: np.ndarray
    length: np.ndarray
    transitions: np.ndarray
    start: np.ndarray
    end: np.ndarray
    boundaries: np.ndarray = None
    spans: np.ndarray = None

    def kernel_args(self):
        return (self.state, self.first, self.last, self.length, self.transitions, self.start,
                self.end)

    @classmethod
    def of_coefficients(cls, features, coef, first_coef, last_coef, length, transitions, start,
                        end, segment_coef=None):
        """Potentials of a fitted model's dense weights.

        The weights as :meth:`SemiMarkovStructure.coefficients` names them;
        ``segment_coef`` (n_labels, n_segment_features) weights
        ``features.segments``.
        """
        token = csr_times_dense(features, np.vstack([coef, first_coef, last_coef]).T)
        scores = cls.of_token_scores(token, coef.shape[0], length, transitions, start, end)
        if segment_coef is not None:
            scores.spans = span_array(csr_times_dense(features.segments, segment_coef.T),
                                      features)
        return scores

    def shift_tokens(self, offsets):
        """Take each token's largest finite state score from its state scores.

        Every segmentation covers each token once, with its state score, so
        this takes the same amount from every segmentation of a sequence:
        marginals, the best segmentations and probabilities are unchanged; log
        Z and the scores of segmentations lose the sum of their tokens' shifts,
        returned per sequence. Without it, one huge feature
        value (a state score of 1e12) rounds away the other tokens' scores in
        the passes' running sums, as the chain's exact pass avoids by
        shifting its scores alike (:func:`~skcrf.inference._logspace.shifted_rows`).
        The first and last scores count only where a segment starts or ends:
        they cannot be shifted so (see :func:`check_score_range`).

        Returns
        -------
        shift : ndarray of shape (n_sequences,)
        """
        top = np.where(np.isfinite(self.state), self.state, -np.inf).max(
            axis=1, initial=-np.inf)
        top[~np.isfinite(top)] = 0.0
        self.state -= top[:, np.newaxis]
        lengths = np.diff(offsets)
        sequence = np.repeat(np.arange(lengths.shape[0]), lengths)
        return np.bincount(sequence, weights=top, minlength=lengths.shape[0])

    @classmethod
    def of_token_scores(cls, token, n_labels, length, transitions, start, end):
        """Split (n_tokens, 3 * C) token scores into the state, first and last blocks."""
        state, first, last = (np.ascontiguousarray(token[:, k * n_labels:(k + 1) * n_labels])
                              for k in range(len(TOKEN_ROLES)))
        return cls(state, first, last, length, transitions, start, end)


@dataclass
class SegmentPosteriors:
    """What the segment forward-backward returns for a batch (see ``segment_posteriors``)."""

    log_z: np.ndarray
    roles: np.ndarray
    length_counts: np.ndarray
    transition_counts: np.ndarray
    start_counts: np.ndarray
    end_counts: np.ndarray
    span_marginals: np.ndarray = None

    @classmethod
    def of_scores(cls, scores, offsets):
        return cls(*segment_posteriors(*scores.kernel_args(), offsets, spans=scores.spans))


def _fixes_boundaries(scores):
    return scores.boundaries is not None and scores.boundaries.any()


def segment_decode(scores, offsets):
    """The most likely :class:`Segmentation` of each sequence under ``scores``.

    A sequence with no feasible segmentation gets one arbitrary segmentation.
    """
    if not _fixes_boundaries(scores):
        return Segmentation(*segment_viterbi(*scores.kernel_args(), offsets,
                                             spans=scores.spans))
    return segment_nbest(scores, offsets, 1)[0][0]


def segment_nbest(scores, offsets, n):
    """The ``n`` best segmentations: (list of n :class:`Segmentation`, scores, counts).

    Segmentation ``k`` holds every sequence's k-th best; a sequence with
    fewer than ``k + 1`` feasible ones has arbitrary (single-token)
    segments there, and a score of ``-inf`` (see
    :func:`~skcrf.inference.semimarkov.queries.nbest_segmentations`).
    """
    boundaries = scores.boundaries
    if boundaries is None:
        boundaries = np.zeros(scores.state.shape[0], dtype=np.int8)
    label_ids, starts, path_scores, counts = nbest_segmentations(
        *scores.kernel_args(), offsets, boundaries, n, spans=scores.spans)
    segmentations = []
    for k in range(n):
        missing = np.repeat(counts <= k, np.diff(offsets))
        column_starts = starts[:, k] | missing
        segmentations.append(Segmentation(label_ids[:, k], column_starts))
    return segmentations, path_scores, counts


def segment_role_posteriors(scores, offsets):
    """(log_z, role marginals) under ``scores``, fixed boundaries included."""
    if not _fixes_boundaries(scores):
        posteriors = SegmentPosteriors.of_scores(scores, offsets)
        return posteriors.log_z, posteriors.roles
    return fixed_segment_posteriors(*scores.kernel_args(), offsets, scores.boundaries,
                                    spans=scores.spans)


def segmentation_scores(scores, offsets, segmentation):
    """The log score of one given segmentation of each sequence, ``-inf`` if forbidden.

    Forbidden: a ``-inf`` potential, a segment longer than the length
    block, or a segment against the fixed ``boundaries``.

    Returns
    -------
    ndarray of shape (n_sequences,)
        0 for an empty sequence.
    """
    n_sequences = offsets.shape[0] - 1
    n_tokens = segmentation.label_ids.shape[0]
    labels_of = segmentation.label_ids
    owner = np.repeat(np.arange(n_sequences), np.diff(offsets))
    # bincount of no tokens would be int64: add into floats
    total = np.zeros(n_sequences)
    total += np.bincount(owner, weights=scores.state[np.arange(n_tokens), labels_of],
                         minlength=n_sequences)
    first, stops, labels, sequence = segmentation.bounds(offsets)
    sizes = stops - first
    max_length = scores.length.shape[1]
    length = np.full(first.shape[0], -np.inf)
    fits = sizes <= max_length
    length[fits] = scores.length[labels[fits], sizes[fits] - 1]
    segment = scores.first[first, labels] + scores.last[stops - 1, labels] + length
    if scores.spans is not None:
        scored = sizes <= scores.spans.shape[1]
        segment[scored] += scores.spans[first[scored], sizes[scored] - 1, labels[scored]]
    follows = np.zeros(first.shape[0], dtype=bool)
    follows[1:] = sequence[1:] == sequence[:-1]
    moves = np.zeros(first.shape[0])
    moves[follows] = scores.transitions[labels[:-1][follows[1:]], labels[follows]]
    opens = ~follows
    closes = np.ones(first.shape[0], dtype=bool)
    closes[:-1] = ~follows[1:]
    moves[opens] += scores.start[labels[opens]]
    moves[closes] += scores.end[labels[closes]]
    total += np.bincount(sequence, weights=segment + moves, minlength=n_sequences)
    if scores.boundaries is not None:
        codes = scores.boundaries
        heads = np.ones(n_tokens, dtype=bool)
        heads[offsets[:-1][np.diff(offsets) > 0]] = False
        starts = segmentation.starts
        repeats = np.zeros(n_tokens, dtype=bool)
        repeats[1:] = labels_of[1:] == labels_of[:-1]
        broken = heads & (((codes & CUT) > 0) & ~starts
                          | ((codes & NO_REPEAT) > 0) & starts & repeats)
        total[np.unique(owner[broken])] = -np.inf
    return total


def span_array(rows, features):
    """(n_tokens, L, n_labels) span scores of (n_tokens * L, n_labels) segment-row scores."""
    L = features.segment_length
    return np.ascontiguousarray(rows).reshape(features.n_tokens, L, rows.shape[1])


#: Largest score magnitude the segment passes take, once each token's state
#: scores are shifted to a maximum of 0 (:meth:`SegmentScores.shift_tokens`):
#: they sum scores over spans as differences of running sums, which keep about
#: 16 - log10(score) digits of the smaller scores.
MAX_SCORE = 1e8


def check_score_range(scores, offsets):
    """Raise if a token's shifted scores are too large for the passes, naming the token.

    A huge feature value makes the state scores of a token's labels differ
    by more than :data:`MAX_SCORE` (or its first or last scores exceed it):
    the running sums would then round away the other tokens' scores. So do
    the scores of segment features (``spans``, by a segment's first token):
    a segment's score counts only in the segmentations that hold it, so no
    shift common to them all removes it, and the marginals summed to 2 or 3.
    """
    blocks = [("state", scores.state), ("first-token", scores.first),
              ("last-token", scores.last)]
    if scores.spans is not None:
        blocks.append(("segment", scores.spans))
    for role, block in blocks:
        if block.size == 0:  # no tokens, or no candidate segments: nothing to check
            continue
        block = block.reshape(block.shape[0], -1)
        large = (np.abs(np.where(np.isfinite(block), block, 0.0)) > MAX_SCORE).any(axis=1)
        if large.any():
            token = int(np.argmax(large))
            sequence = int(np.searchsorted(offsets, token, side="right")) - 1
            raise ValueError(
                f"The model's {role} scores of sequence {sequence}, token "
                f"{token - int(offsets[sequence])} differ by more than {MAX_SCORE:g}: its "
                f"feature values are too large for the fitted weights, and the segment "
                f"passes would round away the other tokens' scores. Scale the feature "
                f"values to a moderate range, as for training.")
