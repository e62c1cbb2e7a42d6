"""SemiMarkovCRF: the segment CRF estimator, with tags in and tags out."""

from __future__ import annotations

from numbers import Integral
from typing import Literal

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from . import _defaults
from ._base import CRFEstimator
from ._parallel import kernel_threads
from ._typing import FeatureSequences, LabelSequences
from .inference.semimarkov import COVERED, FIRST, LAST, N_ROLES, REPEAT, SINGLE
from .learning.objective import NegativeLogLikelihood
from .structures.semimarkov import (Segmentation, SegmentPosteriors, SegmentScores,
                                    SemiMarkovStructure, segment_codes, segment_decode)
from .tags import SCHEMES, Segment, _spans, detect_scheme

_OUTSIDE = "O"
#: A role row derived from REPEAT: a segment of the same label starts at the next token.
_REPEAT_NEXT = N_ROLES

#: For each scheme, each prefix's tag probability as a signed sum of role marginals.
_PREFIX_ROLES = {
    "IOB2": {"B": ((1, FIRST),), "I": ((1, COVERED), (-1, FIRST))},
    "IOB1": {"B": ((1, REPEAT),), "I": ((1, COVERED), (-1, REPEAT))},
    "IOE2": {"E": ((1, LAST),), "I": ((1, COVERED), (-1, LAST))},
    "IOE1": {"E": ((1, _REPEAT_NEXT),), "I": ((1, COVERED), (-1, _REPEAT_NEXT))},
    "BIOES": {"S": ((1, SINGLE),), "B": ((1, FIRST), (-1, SINGLE)),
              "E": ((1, LAST), (-1, SINGLE)),
              "I": ((1, COVERED), (-1, FIRST), (-1, LAST), (1, SINGLE))},
}
_PREFIX_ROLES["BILOU"] = {{"S": "U", "E": "L"}.get(p, p): terms
                          for p, terms in _PREFIX_ROLES["BIOES"].items()}


class _SegmentTags:
    """Tags <-> segmentations for one scheme and set of segment labels.

    With a scheme of prefixes the segment labels are the span types, sorted,
    then ``"O"``, whose segments are single tokens; the tags are every tag the
    scheme writes for those types. With ``"plain"`` every maximal run of one
    label is a segment, so consecutive segments never share a label, and the
    tags are the labels.
    """

    def __init__(self, scheme, segment_classes):
        self.scheme = scheme
        self.segment_classes = segment_classes
        self.plain = scheme == "plain"
        terms = []  # (tag, role, segment label id, sign)
        if self.plain:
            terms = [(label, COVERED, y, 1) for y, label in enumerate(segment_classes)]
        else:
            for y, type_ in enumerate(segment_classes[:-1]):
                for prefix, signed in _PREFIX_ROLES[scheme].items():
                    tag = f"{prefix}-{type_}" if type_ else prefix
                    terms += [(tag, role, y, sign) for sign, role in signed]
            terms.append((_OUTSIDE, COVERED, len(segment_classes) - 1, 1))
        self.classes = np.asarray(sorted({tag for tag, *_ in terms}))
        column = {tag: k for k, tag in enumerate(self.classes.tolist())}
        self.terms = [(column[tag], role, y, sign) for tag, role, y, sign in terms]

    @classmethod
    def fit(cls, flat, offsets, scheme):
        """The codec of training tags and their :func:`segment_codes`."""
        lengths = np.diff(offsets)
        if scheme == "auto":
            if all(isinstance(tag, str) for tag in set(flat)):
                scheme = detect_scheme(np.split(np.asarray(flat, dtype=object), offsets[1:-1]))
            else:
                scheme = "plain"
        if scheme == "plain":
            segment_classes, label_ids = np.unique(np.asarray(flat), return_inverse=True)
            starts = np.ones(len(flat), dtype=bool)
            starts[1:] = label_ids[1:] != label_ids[:-1]
            codec = cls(scheme, segment_classes)
        else:
            _, span_starts, span_stops, types = _spans(list(flat), lengths, scheme)
            segment_classes = np.asarray(sorted(set(types.tolist())) + [_OUTSIDE], dtype=object)
            codec = cls(scheme, segment_classes)
            outside = len(segment_classes) - 1
            label_ids = np.full(len(flat), outside, dtype=np.int64)
            starts = np.ones(len(flat), dtype=bool)
            type_ids = np.searchsorted(segment_classes[:-1].astype(str), types.astype(str))
            inside = np.zeros(len(flat) + 1, dtype=np.int64)
            np.add.at(inside, span_starts, 1)
            np.add.at(inside, span_stops, -1)
            covered = np.cumsum(inside[:-1]) > 0
            span_of = np.cumsum(np.isin(np.arange(len(flat)), span_starts)) - 1
            label_ids[covered] = type_ids[span_of[covered]]
            starts[covered] = False
            starts[span_starts] = True
        starts[offsets[:-1][lengths > 0]] = True
        return codec, segment_codes(label_ids, starts, len(codec.segment_classes))

    @property
    def outside(self):
        """Id of the outside label, whose segments are single tokens, or None."""
        return None if self.plain else len(self.segment_classes) - 1

    def tag_marginals(self, roles, offsets):
        """(n_tokens, n_classes) tag probabilities from (n_tokens, N_ROLES, C) role marginals."""
        n_tokens = roles.shape[0]
        repeat_next = np.zeros((n_tokens, roles.shape[2]))
        repeat_next[:-1] = roles[1:, REPEAT]  # 0 on the first token of a sequence
        marginals = np.zeros((n_tokens, self.classes.shape[0]))
        for column, role, y, sign in self.terms:
            values = repeat_next[:, y] if role == _REPEAT_NEXT else roles[:, role, y]
            marginals[:, column] += sign * values
        # differences of probabilities may round a hair below 0
        return np.maximum(marginals, 0.0, out=marginals)

    def tag_ids(self, segmentation, offsets):
        """Index in ``classes`` of each token's tag in a segmentation."""
        roles = segmentation.role_indicators(offsets, len(self.segment_classes))
        return np.argmax(self.tag_marginals(roles, offsets), axis=1)

    def segments(self, segmentation, offsets):
        """Per sequence, the list of :class:`~skcrf.tags.Segment` but those outside."""
        first, stops, labels, sequence = segmentation.bounds(offsets)
        keep = labels != self.outside
        if self.plain:
            keep &= np.asarray([label != _OUTSIDE for label in self.segment_classes])[labels]
        names = self.segment_classes[labels].tolist()
        result = [[] for _ in range(offsets.shape[0] - 1)]
        for k in np.flatnonzero(keep).tolist():
            q = sequence[k]
            result[q].append(Segment(int(first[k] - offsets[q]), int(stops[k] - offsets[q]),
                                     names[k]))
        return result


class SemiMarkovCRF(CRFEstimator):
    """Semi-Markov (segment) conditional random field trained by L-BFGS.

    The input is split into segments of up to ``max_segment_length`` tokens,
    each with one label, and a segmentation scores the sum of its segments'
    scores plus transition weights between consecutive segments' labels and
    start and end weights. A segment of label ``y`` over tokens ``a:b``
    scores the state weights of its tokens for ``y`` (as a chain's), plus a
    weight for its label and length, plus separate weights for the features
    of its first and of its last token. Training minimises the same objective
    as :class:`CRFClassifier`, exactly, over all segmentations.

    ``fit`` takes tag sequences, as :class:`CRFClassifier` does, and ``predict``
    returns tags in the same scheme. The tags are read as segments by the
    CoNLL ``conlleval`` rules (:func:`skcrf.tags.tags_to_segments`, malformed
    sequences included). With a scheme of prefixes (IOB2, BIOES, ...), the
    segment labels are the span types plus ``"O"``, and every ``"O"`` token
    is a segment of its own. With ``"plain"`` labels every maximal run of one
    label is a segment and consecutive segments have different labels.

    Parameters
    ----------
    max_segment_length : int, default=None
        Longest segment the model considers (``"O"`` segments are single
        tokens). None gives each label the longest segment it has in the
        training data; an int caps every label alike, and a training segment
        longer than it raises a ValueError. Inference costs
        ``O(sum of the labels' longest segments + n_labels ** 2)`` per token.
    scheme : {"auto", "IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain"}, \
            default="auto"
        Tagging scheme of ``y``; ``"auto"`` detects it with
        :func:`skcrf.tags.detect_scheme` (``"plain"`` for labels that are not
        str). IOB1 and IOB2 read alike but write differently: pass the
        scheme ``predict`` should write if detection may pick the other.
    alpha : float, default=0.3
        Regularization strength, as in :class:`CRFClassifier`.
    l1_ratio : float, default=1/3
        Elastic-net mixing: 0 is pure L2, 1 pure L1.
    max_iter : int, default=300
        Maximum number of L-BFGS iterations.
    tol : float, default=1e-3
        Stop once the objective improved by less than ``tol`` (relative) over
        the last 10 iterations.
    solver : {"lbfgs"}, default="lbfgs"
        L-BFGS; with ``l1_ratio > 0`` its orthant-wise variant OWL-QN.
    all_possible_states : bool, default=False
        Whether every (feature, label) pair gets a weight, for each of the
        state, first-token and last-token weights. By default only the pairs
        that occur in training do.
    n_jobs : int, default=None
        Threads for the inference and sparse-product kernels; results do not
        depend on it.
    verbose : int, default=0
        Print the objective, gradient norm and elapsed time every iteration.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The tags the model can write, sorted: every prefix of the scheme with
        every type, and ``"O"`` (the labels with ``"plain"``). Columns of
        ``predict_marginals`` follow this order.
    segment_classes_ : ndarray of shape (n_labels,)
        The segment labels: the types, sorted, then ``"O"`` (the labels with
        ``"plain"``).
    scheme_ : str
        The tagging scheme read from ``y`` and written by ``predict``.
    max_segment_length_ : int
        The longest segment of any label considered.
    coef_ : ndarray of shape (n_labels, n_features)
        State weights: each token of a segment adds its features' weights
        for the segment's label.
    first_coef_, last_coef_ : ndarray of shape (n_labels, n_features)
        Weights of the features of a segment's first and last token.
    length_coef_ : ndarray of shape (n_labels, n_lengths)
        ``length_coef_[y, d - 1]`` scores a segment of ``d`` tokens; ``-inf``
        where a label may not take that length (beyond its longest). ``n_lengths``
        is ``max_segment_length_``.
    transition_coef_ : ndarray of shape (n_labels, n_labels)
        Weights of consecutive segments' labels, [previous, next]; ``-inf``
        on the diagonal with ``"plain"`` labels.
    start_coef_, end_coef_ : ndarray of shape (n_labels,)
        Weights of the first and last segment's label.
    n_features_in_ : int
        Number of token features.
    feature_names_ : ndarray of str of shape (n_features,)
        Name of every feature (column of ``coef_``).
    vectorizer_ : SequenceVectorizer or None
        The vectorizer fitted on dict input; None when ``fit`` received a
        :class:`SequenceMatrix`.
    n_iter_ : int
        Number of solver iterations.
    loss_curve_ : list of float
        Objective value after each iteration.

    See Also
    --------
    CRFClassifier : The linear-chain CRF, one label per token.
    skcrf.tags.tags_to_segments : How tags are read as segments.

    Examples
    --------
    >>> from skcrf import SemiMarkovCRF
    >>> X = [[{"w": "Ada"}, {"w": "Lovelace"}, {"w": "wrote"}],
    ...      [{"w": "Alan"}, {"w": "Turing"}, {"w": "ran"}]]
    >>> y = [["B-PER", "I-PER", "O"], ["B-PER", "I-PER", "O"]]
    >>> crf = SemiMarkovCRF(alpha=0.1).fit(X, y)
    >>> [tags.tolist() for tags in crf.predict([[{"w": "Ada"}, {"w": "Turing"}, {"w": "ran"}]])]
    [['B-PER', 'I-PER', 'O']]
    >>> crf.predict_segments([[{"w": "Ada"}, {"w": "Turing"}, {"w": "ran"}]])
    [[Segment(start=0, stop=2, label='PER')]]
    """

    _parameter_constraints = {
        **CRFEstimator._parameter_constraints,
        "max_segment_length": [Interval(Integral, 1, None, closed="left"), None],
        "scheme": [StrOptions({"auto", *SCHEMES})],
    }

    def __init__(self, *, max_segment_length: int | None = None,
                 scheme: Literal["auto", "IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU",
                                 "plain"] = "auto",
                 alpha: float = _defaults.ALPHA, l1_ratio: float = _defaults.L1_RATIO,
                 max_iter: int = _defaults.MAX_ITER, tol: float = _defaults.TOL,
                 solver: Literal["lbfgs"] = "lbfgs", all_possible_states: bool = False,
                 n_jobs: int | None = None, verbose: int = 0) -> None:
        self.max_segment_length = max_segment_length
        self.scheme = scheme
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.all_possible_states = all_possible_states
        self.n_jobs = n_jobs
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    @CRFEstimator._atomic_fit
    def fit(self, X: FeatureSequences, y: LabelSequences) -> SemiMarkovCRF:
        """Learn the weights from tagged sequences.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
            Per-token feature dicts, as for :class:`CRFClassifier`, or the
            output of a vectorizer.
        y : list of sequences of str
            One tag per token, in the scheme of ``scheme``.

        Returns
        -------
        self : SemiMarkovCRF
            The fitted estimator.
        """
        data = self._training_data(X, y)
        offsets = data.offsets
        codec, codes = _SegmentTags.fit(data.classes[data.label_ids].tolist(), offsets,
                                        self.scheme)
        data.label_ids = None
        n_labels = len(codec.segment_classes)
        segmentation = Segmentation.of_codes(codes, offsets, n_labels)
        max_lengths = self._max_lengths(segmentation, offsets, codec)
        longest = int(max_lengths.max(initial=1))
        structure = SemiMarkovStructure.for_training(
            data.features, offsets, codes, max_lengths, allow_repeats=not codec.plain,
            all_possible_states=self.all_possible_states)
        objective = NegativeLogLikelihood(structure, data.features, offsets, codes,
                                          l2=float(self.alpha) * (1.0 - float(self.l1_ratio)))
        result = self._solve(objective, np.zeros(structure.n_parameters))
        self._check_training(result, data)

        named = structure.coefficients(result.w)
        # self is a shadow estimator here: _atomic_fit swaps its attributes in
        # at once, so a concurrent predict sees the old model or the new one
        self.classes_ = codec.classes
        self.segment_classes_ = codec.segment_classes
        self.scheme_ = codec.scheme
        self.max_segment_length_ = longest
        self.coef_ = named["coef"]
        self.first_coef_ = named["first_coef"]
        self.last_coef_ = named["last_coef"]
        self.length_coef_ = named["length"]
        self.transition_coef_ = named["transitions"]
        self.start_coef_ = named["start"]
        self.end_coef_ = named["end"]
        self.n_features_in_ = data.features.n_features
        self.feature_names_ = self._feature_names(data)
        self.vectorizer_ = data.vectorizer
        self.n_iter_ = result.n_iter
        self.loss_curve_ = result.loss_curve
        return self

    def _max_lengths(self, segmentation, offsets, codec):
        """Longest segment each label may take; raise if a training segment exceeds the cap.

        With ``max_segment_length=None`` each label takes its own longest
        training segment: a length no training segment of the label has would
        only have its weight pushed down, and every label pays inference for
        its own lengths alone. An int caps every label alike. ``"O"`` segments
        are single tokens.
        """
        first, stops, labels, sequence = segmentation.bounds(offsets)
        n_labels = len(codec.segment_classes)
        sizes = stops - first
        if codec.outside is not None:
            sizes = np.where(labels == codec.outside, 1, sizes)
        longest = np.ones(n_labels, dtype=np.int64)
        np.maximum.at(longest, labels, sizes)
        if self.max_segment_length is None:
            return longest
        too_long = np.flatnonzero(sizes > self.max_segment_length)
        if too_long.size:
            k = too_long[0]
            q = int(sequence[k])
            raise ValueError(
                f"Sequence {q} has a segment {codec.segment_classes[labels[k]]!r} of "
                f"{sizes[k]} tokens (tokens {first[k] - offsets[q]}:{stops[k] - offsets[q]}), "
                f"longer than max_segment_length={self.max_segment_length}. Increase "
                f"max_segment_length, or set it to None to take the longest training "
                f"segment of each label ({int(longest.max())} at most).")
        capped = np.full(n_labels, self.max_segment_length, dtype=np.int64)
        if codec.outside is not None:
            capped[codec.outside] = 1
        return capped

    def _codec(self):
        return _SegmentTags(self.scheme_, self.segment_classes_)

    def _scores(self, features):
        return SegmentScores.of_coefficients(
            features, self.coef_, self.first_coef_, self.last_coef_, self.length_coef_,
            self.transition_coef_, self.start_coef_, self.end_coef_)

    def _decode(self, features, offsets):
        return self._codec().tag_ids(segment_decode(self._scores(features), offsets), offsets)

    def _token_marginals(self, features, offsets):
        posteriors = SegmentPosteriors.of_scores(self._scores(features), offsets)
        return self._codec().tag_marginals(posteriors.roles, offsets)

    def predict_segments(self, X: FeatureSequences) -> list[list[Segment]]:
        """Most likely segments of each sequence, those labelled ``"O"`` left out.

        The segments of the tags :meth:`predict` returns:
        ``predict_segments(X)[q] == tags_to_segments(predict(X)[q], scheme_)``.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix

        Returns
        -------
        segments : list of list of Segment
            Per sequence, ``(start, stop, label)`` named tuples in order of
            position, ``stop`` exclusive (:class:`skcrf.tags.Segment`).
        """
        model = self._fitted_model()
        features, offsets = model._features(X)
        with kernel_threads(self.n_jobs):
            segmentation = segment_decode(model._scores(features), offsets)
        return model._codec().segments(segmentation, offsets)
