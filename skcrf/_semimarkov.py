"""SemiMarkovCRF: the segment CRF estimator, with tags in and tags out."""

from __future__ import annotations

from numbers import Integral
from typing import Any, Literal

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ._estimators import defaults as _defaults
from ._estimators.spans import SpanQueries
from ._estimators.base import CRFEstimator
from ._estimators.doc_sections import SECTIONS
from ._estimators.compile_ahead import compile_ahead
from ._estimators.fitted_state import saved_as
from ._estimators.training import TrainingProblem, _same_values
from ._estimators.constraints import explicit_constraints
from ._estimators.segment_lengths import check_stream_lengths, longest_segments
from ._estimators.segment_partial import partial_segment_problem
from ._utils.parallel import kernel_threads
from ._utils.docstrings import fill_sections
from ._utils.validation import check_finite_scores, reject_positional_weights
from ._estimators.segment_tags import _SegmentTags
from ._estimators.semimarkov_state import _COEFFICIENT_NAMES, SEMI_MARKOV_STATE, _segment_attributes
from ._utils.type_aliases import (AllowedTransitions, FeatureSequences, LabelSequences,
                     SequenceWeights, Solver)
from .structures.patterns.chain import fitted_patterns
from .structures.semimarkov.structure import SemiMarkovStructure
from .structures.semimarkov.dense import DenseSemiMarkovStructure
from .structures.semimarkov.segment_scores import (SegmentScores, Segmentation, check_score_range,
                                        segment_decode, segment_nbest, segment_role_posteriors,
                                        segmentation_scores)
from .structures.semimarkov.patterns import (PatternSegmentScores, PatternSemiMarkovStructure,
                                             segment_automaton_of)
from .tags import SCHEMES, Segment


#: Schemes whose tag marginals need the probability that a segment repeats the
#: label of the one before (the ``REPEAT`` role), which order >= 2 does not compute.
_REPEAT_SCHEMES = ("IOB1", "IOE1")

_NO_SEGMENTS = (
    "This SemiMarkovCRF was fitted with features of segments (X.segments, from "
    "TokenFeaturizer(segment_features=...)), but X carries none: featurize X as for "
    "fit (a Pipeline does).")


#: The largest int ``max_segment_length`` takes (a documented bound: its cost per
#: token grows with it whatever the data).
MAX_SEGMENT_LENGTH = 1000


@saved_as("skcrf.SemiMarkovCRF")
@fill_sections(SECTIONS)
class SemiMarkovCRF(SpanQueries, CRFEstimator):
    """Semi-Markov (segment) conditional random field trained by L-BFGS.

    The input is split into segments of up to ``max_segment_length`` tokens,
    each with one label, and a segmentation scores the sum of its segments'
    scores plus transition weights between consecutive segments' labels and
    start and end weights. A segment of label ``y`` over tokens ``a:b``
    scores the state weights of its tokens for ``y`` (as a chain's), plus a
    weight for its label and length, plus separate weights for the features
    of its first and of its last token, plus, when ``X`` carries features of
    candidate segments (:attr:`SequenceMatrix.segments`, from
    ``TokenFeaturizer(segment_features=...)``), a weight per (segment
    feature, label) for each feature of the whole segment: its words, its
    shape, a gazetteer match... Training minimises the same objective as
    :class:`CRFClassifier`, exactly, over all segmentations. From raw tokens::

        make_pipeline(TokenFeaturizer(segment_features=True), SequenceVectorizer(),
                      SemiMarkovCRF())

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
        ``O(sum of the labels' longest segments + n_labels ** 2)`` per token,
        so that cost follows the data, not the parameter: an int is
        at most 1000, and ``fit`` takes the smaller of it and the longest
        training sequence (no segment of the training data is longer; the
        model's ``max_segment_length_``). ``partial_fit`` takes the int as given: a
        later batch may bring longer sequences than the first.
    scheme : {"auto", "IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain"}, \
            default="auto"
        Tagging scheme of ``y``; ``"auto"`` detects it with
        :func:`skcrf.tags.detect_scheme` (``"plain"`` for labels that are not
        str). IOB1 and IOB2 read alike but write differently: pass the
        scheme ``predict`` should write if detection may pick the other.
    allowed_transitions : None, set, list, dict or ndarray, default=None
        Which segment label may follow which between consecutive segments:
        a set or list of allowed ``(previous, next)`` pairs of segment
        labels (the span types and ``"O"``, e.g. ``("PER", "O")``), a dict
        from a label to those allowed after it (a label it lacks may be
        followed by any), or a boolean array over ``segment_classes_``.
        The others get the score ``-inf`` in training and prediction;
        a training segmentation that breaks them raises a ValueError.
        Predicted tags are always well-formed, so the tag schemes of
        :class:`CRFClassifier` (``"bio"``...) do not apply.
    order : int, default=1
        Markov order of the segment labels: ``d >= 2`` adds a weight for each
        kept n-gram of 3 to ``d + 1`` consecutive segment labels, *patterns*
        (``label_patterns_``, ``pattern_coef_``, as :class:`CRFClassifier`'s
        over token labels): those seen in the training segmentations (at
        least ``min_pattern_freq`` times), or all of them with
        ``all_possible_transitions``. Inference runs over the automaton
        whose states are the prefixes of the patterns, at a cost per token
        that grows with the square of its number of states (at most 1024).
        With ``"IOB1"`` and ``"IOE1"`` tags, ``predict_marginals`` and
        ``predict_proba`` (and fixing their tags in queries) need ``order=1``;
        ``partial_fit`` needs ``order=1``. See :ref:`semimarkov-order`.
    all_possible_transitions : bool, default=False
        With ``order >= 2``, whether every n-gram of 3 to ``order + 1``
        segment labels gets a weight (but those with a pair the model
        forbids: a repeat of ``"plain"`` labels, a pair
        ``allowed_transitions`` forbids), instead of those seen in training.
    min_pattern_freq : int, default=1
        With ``order >= 2``, the fewest times a segment-label n-gram must
        occur in the training segmentations to get a weight.
    <<solver_parameters>>
    all_possible_states : bool, default=False
        Whether every (feature, label) pair gets a weight, for each of the
        state, first-token and last-token weights. By default only the pairs
        that occur in training do.
    warm_start : bool, default=False
        When set, ``fit`` starts the solver from the weights of the previous
        fit instead of zero, provided that fit had the same parameter layout:
        the same classes, the same features (names, in the same order: the
        same vocabulary) and the same longest segment (``max_segment_length_``); at
        ``order >= 2``, the patterns of the previous fit that this one keeps start from their
        weights, the others from 0. Otherwise it starts from zero, as without
        ``warm_start``. Useful along a path of ``alpha`` values on the same
        data; the optimum reached is the same (to the solver's ``tol``), in
        fewer iterations.
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
    segment_coef_ : ndarray of shape (n_labels, n_segment_features)
        Weights of the features of a whole segment; only when ``fit``
        received features of segments.
    segment_feature_names_ : ndarray of str of shape (n_segment_features,)
        Name of every feature of segments (column of ``segment_coef_``);
        only with them.
    n_segment_features_in_ : int
        Number of features of segments; only with them.
    length_coef_ : ndarray of shape (n_labels, n_lengths)
        ``length_coef_[y, d - 1]`` scores a segment of ``d`` tokens; ``-inf``
        where a label may not take that length (beyond its longest). ``n_lengths``
        is ``max_segment_length_``.
    transition_coef_ : ndarray of shape (n_labels, n_labels)
        Weights of consecutive segments' labels, [previous, next]; ``-inf``
        on the diagonal with ``"plain"`` labels and where
        ``allowed_transitions`` forbids.
    allowed_transitions_ : ndarray of bool of shape (n_labels, n_labels)
        Which segment label may follow which, [previous, next].
    start_coef_, end_coef_ : ndarray of shape (n_labels,)
        Weights of the first and last segment's label.
    label_patterns_ : ndarray of int64 of shape (n_patterns, order + 1)
        With ``order >= 2``: the n-grams of 3 to ``order + 1`` consecutive
        segment labels (ids into ``segment_classes_``, oldest first,
        left-padded with -1) whose fitted weight is not 0.
    pattern_coef_ : ndarray of shape (n_patterns,)
        With ``order >= 2``: the weight of each row of ``label_patterns_``,
        added once per occurrence among a segmentation's labels.
    <<feature_attributes>>
    <<solver_attributes>>

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

    _fitted_state = SEMI_MARKOV_STATE

    _parameter_constraints = {
        **CRFEstimator._parameter_constraints,
        # memory and time per token grow with it, whatever the data: bounded
        "max_segment_length": [Interval(Integral, 1, MAX_SEGMENT_LENGTH, closed="both"), None],
        "scheme": [StrOptions({"auto", *SCHEMES})],
        "allowed_transitions": [None, str, set, frozenset, list, tuple, dict, np.ndarray],
        "order": [Interval(Integral, 1, None, closed="left")],
        "all_possible_transitions": ["boolean"],
        "min_pattern_freq": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, *, max_segment_length: int | None = None,
                 scheme: Literal["auto", "IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU",
                                 "plain"] = "auto",
                 allowed_transitions: AllowedTransitions = None, order: int = 1,
                 all_possible_transitions: bool = False, min_pattern_freq: int = 1,
                 alpha: float = _defaults.ALPHA, l1_ratio: float = _defaults.L1_RATIO,
                 max_iter: int = _defaults.MAX_ITER, tol: float = _defaults.TOL,
                 solver: Solver = "lbfgs", learning_rate: str = "optimal",
                 eta0: float | str = "auto", average: bool | int | str = "auto",
                 C: float = 1.0, shuffle: bool = True, random_state: Any = None,
                 n_iter_no_change: int = 5, early_stopping: bool = False,
                 validation_fraction: float = 0.1, all_possible_states: bool = False,
                 warm_start: bool = False, n_jobs: int | None = None,
                 verbose: int = 0) -> None:
        self.max_segment_length = max_segment_length
        self.scheme = scheme
        self.allowed_transitions = allowed_transitions
        self.order = order
        self.all_possible_transitions = all_possible_transitions
        self.min_pattern_freq = min_pattern_freq
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.average = average
        self.C = C
        self.shuffle = shuffle
        self.random_state = random_state
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.all_possible_states = all_possible_states
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose

    def __setstate__(self, state):
        # models pickled before allowed_transitions, warm_start and order existed had
        # none of them: order-1 models
        state.setdefault("allowed_transitions", None)
        state.setdefault("warm_start", False)
        state.setdefault("order", 1)
        state.setdefault("all_possible_transitions", False)
        state.setdefault("min_pattern_freq", 1)
        super().__setstate__(state)

    @_fit_context(prefer_skip_nested_validation=True)
    @CRFEstimator._atomic_fit
    def fit(self, X: FeatureSequences, y: LabelSequences,
            *positional: Any, sample_weight: SequenceWeights = None) -> SemiMarkovCRF:
        """Learn the weights from tagged sequences.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
            Per-token feature dicts, as for :class:`CRFClassifier`, or the
            output of a vectorizer.
        y : list of sequences of str
            One tag per token, in the scheme of ``scheme``; a tag may also
            be None (unknown) or a set of tags (one of them), at any order
            and with any solver. See :ref:`incomplete-annotation`.
        sample_weight : array-like of shape (n_sequences,), default=None
            Each sequence's weight, as for :meth:`CRFClassifier.fit`.

        Returns
        -------
        self : SemiMarkovCRF
            The fitted estimator.
        """
        if isinstance(self.allowed_transitions, str):
            raise ValueError(
                f"allowed_transitions={self.allowed_transitions!r}: SemiMarkovCRF always "
                f"writes well-formed tags, so tag schemes do not apply; give allowed pairs "
                f"of segment labels (the span types and 'O'), such as {{('PER', 'O')}}.")
        if self.order == 1:
            compile_ahead("semi-markov")  # on a fresh install: prediction's kernels, elsewhere
        reject_positional_weights(self, positional)
        return self._fit(X, y, sample_weight)

    def _training_problem(self, data):
        offsets = data.offsets
        if data.partial is not None:  # unknown or set labels
            structure, codes, codec, max_lengths = partial_segment_problem(self, data)
        else:
            codec, codes = _SegmentTags.fit(data.classes[data.label_ids].tolist(), offsets,
                                            self.scheme)
        allowed = None
        if self.allowed_transitions is not None:
            allowed = explicit_constraints(self.allowed_transitions,
                                           codec.segment_classes).allowed
        n_labels = len(codec.segment_classes)
        if data.partial is None:
            max_lengths = self._max_lengths(Segmentation.of_codes(codes, offsets, n_labels),
                                            offsets, codec)
        options = dict(allow_repeats=not codec.plain,
                       all_possible_states=self.all_possible_states,
                       allowed_transitions=allowed, label_names=codec.segment_classes.tolist())
        if data.partial is None and self.order == 1:
            structure = SemiMarkovStructure.for_training(data.features, offsets, codes,
                                                         max_lengths, **options)
        elif data.partial is None:
            structure = PatternSemiMarkovStructure.for_training(
                data.features, offsets, codes, max_lengths, order=self.order,
                all_possible_transitions=self.all_possible_transitions,
                min_pattern_freq=self.min_pattern_freq, **options)
        if data.features.dense is not None:  # L-BFGS: the block by BLAS, any order
            structure = DenseSemiMarkovStructure(structure, data.features.n_dense)
        attributes = {"classes_": codec.classes, "segment_classes_": codec.segment_classes,
                      "scheme_": codec.scheme,
                      "max_segment_length_": int(max_lengths.max(initial=1)),
                      "allowed_transitions_": structure.transition_mask == 0,
                      **_segment_attributes(data)}
        return TrainingProblem(structure, codes, attributes, _COEFFICIENT_NAMES)

    def _reads_dense_block(self, training):
        # L-BFGS training (any order, partial labels too) and prediction multiply a
        # dense block by BLAS (structures/semimarkov/dense.py, the unary scores of
        # SegmentScores.of_coefficients); the online solvers' epochs read CSR columns
        return not training or self.solver == "lbfgs"

    def _partial_labels_refusal(self):
        return None

    def _partial_training_problem(self, data, first):
        """A ``partial_fit`` batch's problem: the codec and longest segments of the first call.

        The first call reads the scheme from its batch (for ``"auto"``) and
        the segment labels from ``classes``; later calls keep them, and the
        longest segment of each label (an int ``max_segment_length``, or the
        first batch's longest), so the weights keep their layout.
        """
        if data.partial is not None:
            # the scheme and the longest segments are read from fully labelled sequences,
            # which a later batch may lack and whose lengths would change the layout
            raise ValueError(
                "y holds unknown (None) or ambiguous (set) labels, which SemiMarkovCRF's "
                "partial_fit cannot train on yet: fit takes them (with any solver), or give "
                "partial_fit fully labelled batches.")
        if self.order > 1:
            # the patterns a batch keeps depend on its segments: later batches would
            # change the layout of the weights
            raise ValueError(
                f"partial_fit needs order=1 for a SemiMarkovCRF; got order={self.order}. "
                f"Fit an order-{self.order} model with fit (any solver).")
        offsets = data.offsets
        flat = data.classes[data.label_ids].tolist()
        if first:
            codec, _ = _SegmentTags.fit(flat, offsets, self.scheme)
            if not codec.plain:
                types = {tag.partition("-")[2] for tag in map(str, data.classes.tolist())
                         if tag != "O"}
                codec = _SegmentTags.of_labels(codec.scheme,
                                               types | set(codec.segment_classes[:-1]))
            codes = codec.codes(flat, offsets)
            segmentation = Segmentation.of_codes(codes, offsets, len(codec.segment_classes))
            max_lengths = self._max_lengths(segmentation, offsets, codec, stream=True)
        else:
            codec = self._codec()
            codes = codec.codes(flat, offsets)
            max_lengths = np.isfinite(self.length_coef_).sum(axis=1)
            check_stream_lengths(codes, offsets, codec, max_lengths)
        allowed = None
        if self.allowed_transitions is not None:
            allowed = explicit_constraints(self.allowed_transitions,
                                           codec.segment_classes).allowed
        structure = SemiMarkovStructure.for_training(
            data.features, offsets, codes, max_lengths, allow_repeats=not codec.plain,
            all_possible_states=self.all_possible_states, allowed_transitions=allowed)
        attributes = {"classes_": codec.classes, "segment_classes_": codec.segment_classes,
                      "scheme_": codec.scheme,
                      "max_segment_length_": int(max_lengths.max(initial=1)),
                      "allowed_transitions_": structure.transition_mask == 0,
                      **_segment_attributes(data)}
        return TrainingProblem(structure, codes, attributes, _COEFFICIENT_NAMES)

    def _same_layout(self, problem, data, previous):
        # the features of segments must be the same too, with or without
        return super()._same_layout(problem, data, previous) and (
            getattr(previous, "segment_feature_names_", None) is None
            if "segment_feature_names_" not in problem.attributes else
            _same_values(getattr(previous, "segment_feature_names_", None),
                         problem.attributes["segment_feature_names_"]))

    def _max_lengths(self, segmentation, offsets, codec, first_sequence=0, stream=False):
        """:func:`~skcrf._estimators.segment_lengths.longest_segments` of this model."""
        return longest_segments(self.max_segment_length, segmentation, offsets, codec,
                                first_sequence, stream)

    def _codec(self):
        return _SegmentTags(self.scheme_, self.segment_classes_)

    def _scores(self, features):
        segment_coef = getattr(self, "segment_coef_", None)
        if segment_coef is not None:
            if features.segments is None:
                raise ValueError(_NO_SEGMENTS)
            if features.segments.n_features != self.n_segment_features_in_:
                raise ValueError(
                    f"X.segments has {features.segments.n_features} features, but "
                    f"SemiMarkovCRF was fitted with {self.n_segment_features_in_}.")
        scores = SegmentScores.of_coefficients(
            features, self.coef_, self.first_coef_, self.last_coef_, self.length_coef_,
            self.transition_coef_, self.start_coef_, self.end_coef_, segment_coef)
        if "label_patterns_" not in vars(self):
            return scores
        weights = np.asarray(self.pattern_coef_)
        if weights.shape != (len(self.label_patterns_),) or not np.isfinite(weights).all():
            raise ValueError(
                f"pattern_coef_ must hold one finite weight per row of label_patterns_ "
                f"({len(self.label_patterns_)}); it has shape {weights.shape}.")
        patterns, index = fitted_patterns(self.label_patterns_,
                                          self.segment_classes_.shape[0], self.order)
        pattern_weights = np.zeros(patterns.n_patterns)
        pattern_weights[index] = weights
        return PatternSegmentScores(scores, patterns, pattern_weights)

    def _potentials(self, features, offsets, fixed=None):
        scores = self._scores(features)
        patterns = isinstance(scores, PatternSegmentScores)
        labels = scores.labels if patterns else scores
        spans = () if labels.spans is None else (labels.spans,)
        for block in (labels.state, labels.first, labels.last, *spans):
            check_finite_scores(block, offsets)
        # log Z and the scores of segmentations come out less the same shift: the
        # queries report only their differences (probabilities), which keep every digit
        labels.shift_tokens(offsets)
        check_score_range(labels, offsets)
        if fixed is not None:
            self._codec().fix(labels, fixed, offsets)
            if patterns:
                scores.check_no_repeat_flags()
        return scores

    def _decode_segments(self, potentials, offsets):
        if isinstance(potentials, PatternSegmentScores):
            return potentials.decode(offsets)
        return segment_decode(potentials, offsets)

    def _viterbi(self, potentials, offsets):
        return self._codec().tag_ids(self._decode_segments(potentials, offsets), offsets)

    def _posteriors(self, potentials, offsets):
        if not isinstance(potentials, PatternSegmentScores):
            log_z, roles = segment_role_posteriors(potentials, offsets)
        elif self.scheme_ in _REPEAT_SCHEMES:
            raise ValueError(
                f"Tag marginals of scheme {self.scheme_} need the probability that a "
                f"segment repeats the label of the one before, which a SemiMarkovCRF of "
                f"order >= 2 does not compute; predict, predict_nbest and "
                f"predict_segments work. Fit with order=1, or tags of another scheme "
                f"(IOB2, BIOES...), for marginals and probabilities.")
        else:
            log_z, roles = potentials.role_posteriors(offsets)
        return log_z, self._codec().tag_marginals(roles, offsets)

    def _log_z(self, potentials, offsets):
        # no tag marginals: the schemes of _REPEAT_SCHEMES have a log Z at any order
        if isinstance(potentials, PatternSegmentScores):
            return potentials.role_posteriors(offsets)[0]
        return segment_role_posteriors(potentials, offsets)[0]

    def _nbest(self, potentials, offsets, n):
        # distinct segmentations write distinct tags: the n best tag sequences
        codec = self._codec()
        if isinstance(potentials, PatternSegmentScores):
            segmentations, scores, counts = potentials.nbest(offsets, n)
        else:
            segmentations, scores, counts = segment_nbest(potentials, offsets, n)
        tag_ids = np.empty((offsets[-1], n), dtype=np.int64)
        for k, segmentation in enumerate(segmentations):
            tag_ids[:, k] = codec.tag_ids(segmentation, offsets)
        return tag_ids, scores, counts

    def _nbest_states(self):
        # a list per segment label (automaton state at order >= 2) for each of "a
        # segment ends here" and "enters here"
        if "label_patterns_" in vars(self):
            patterns, _ = fitted_patterns(self.label_patterns_,
                                          self.segment_classes_.shape[0], self.order)
            return 2 * segment_automaton_of(patterns).n_states
        return 2 * len(self.segment_classes_)

    def _labelling_scores(self, potentials, offsets, label_ids):
        # tags this model never writes (malformed ones) have probability 0
        segmentation, written = self._codec().read(label_ids, offsets)
        if isinstance(potentials, PatternSegmentScores):
            scores = potentials.segmentation_scores(offsets, segmentation)
        else:
            scores = segmentation_scores(potentials, offsets, segmentation)
        scores[~written] = -np.inf
        return scores

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
        with kernel_threads(model.n_jobs, n_tokens=offsets[-1]):
            segmentation = model._decode_segments(model._scores(features), offsets)
        return model._codec().segments(segmentation, offsets)
