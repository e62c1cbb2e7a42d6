"""How each estimator's training problem is set up from partitions: the global parameter layout.

A local fit reads the whole training set to choose which weights exist
(``StatePairs.observed``: the (feature, label) pairs seen in training) and to
fix the labels' constraints. Here the same decisions come from small
per-partition summaries, reduced on the client so that the layout is the one
a local fit of all the data would choose: the union of sorted pair codes is
sorted as ``observed`` sorts, the classes are the sorted union of the labels.

A plan offers ``check()`` (what the estimator's ``fit`` checks before the data)
and ``problem(run, parts, classes, vectorizer)`` returning ``(TrainingProblem,
parts)``; ``run`` maps functions over partitions (:class:`~skcrf.dask._fit.Run`).
"""

import warnings

import numpy as np

from .._estimators.training import TrainingProblem, _user_stacklevel
from .._chain import CRFClassifier
from .._estimators.constraints import (describe_violation, explicit_constraints, repair_tags,
                            resolve_constraints, scheme_constraints)
from .._estimators.segment_tags import _SegmentTags
from .._semimarkov import SemiMarkovCRF
from .._estimators.semimarkov_state import _COEFFICIENT_NAMES
from .._tree import _NO_TREES, TreeCRF
from .._utils.validation import _label_array
from .._estimators.partial_labels import pairs_with_sets
from ..features.arrays import take_sequences
from ..structures._parameters import StatePairs
from ..structures.chain.order1 import ChainStructure, edge_label_ids
from ..structures.patterns.label_patterns import MIN_LENGTH, LabelPatterns, check_code_range, ngram_codes
from ..structures.patterns.chain import PatternChainStructure
from ..structures.semimarkov.patterns import (PatternSemiMarkovStructure,
                                             segment_label_sequences)
from ..structures.semimarkov.structure import SemiMarkovStructure, observed_token_pairs
from ..structures.semimarkov.segment_scores import TOKEN_ROLES, Segmentation
from ..structures.tree.structure import TreeStructure
from ..tags import _add_scheme_counts, _scheme_counts, _scheme_of_counts, _spans
from ._partitions import _in_partition, observed_pairs, pair_codes, relabelled, union_pairs
from ._segment_partial import partial_segment_layout


def plan_of(estimator):
    """The plan of ``estimator``'s class; TypeError naming the supported ones otherwise."""
    for kind, plan in ((CRFClassifier, ChainPlan), (TreeCRF, TreePlan),
                       (SemiMarkovCRF, SemiMarkovPlan)):
        if type(estimator) is kind:
            return plan(estimator)
    raise TypeError(
        f"skcrf.dask.fit trains CRFClassifier, SemiMarkovCRF and TreeCRF; got "
        f"{type(estimator).__name__}. Fit it locally, or search over it with joblib's "
        f"Dask backend.")


def _tags(part, classes):
    """The partition's tags (a list over its tokens) and its sequences' lengths.

    With partial labels, the tokens of one known label (as a local fit reads
    the scheme in them).
    """
    if part.partial is None:
        return classes[part.label_ids].tolist(), np.diff(part.offsets)
    known = part.label_ids >= 0
    owner = np.repeat(np.arange(part.offsets.shape[0] - 1), np.diff(part.offsets))
    return (classes[part.label_ids[known]].tolist(),
            np.bincount(owner[known], minlength=part.offsets.shape[0] - 1))


def _has_partial_labels(part):
    return getattr(part, "partial", None) is not None


def _partition_scheme_counts(part, classes):
    """The partition's :func:`~skcrf.tags._scheme_counts`: they add up over partitions."""
    return _scheme_counts(*_tags(part, classes))


def _detected_scheme(run, parts, classes):
    """What :func:`~skcrf.tags.detect_scheme` reads in all the partitions' tags."""
    counts = run.gather(run.map(_partition_scheme_counts, parts, classes))
    return _add_scheme_counts(counts)


def _state_pairs(run, parts, n_features, n_classes, all_possible_states):
    if all_possible_states:
        return StatePairs.every(n_features, n_classes)
    codes = run.gather(run.map(_label_pair_codes, parts, n_classes))
    return union_pairs(codes, n_features, n_classes)


def _label_pair_codes(part, n_classes):
    if part.empty or part.partial is None:
        return observed_pairs(part, part.label_ids, n_classes)
    # a class a token's set offers gets its features' pairs, as in a local fit
    return pair_codes(pairs_with_sets(
        StatePairs.observed(part.features, part.label_ids, n_classes), part.features,
        part.partial))


def _partition_ngrams(part, n_classes, order):
    """The partition's label n-grams of 3 to ``order + 1`` labels: length -> (codes, counts)."""
    found = {}
    for length in range(MIN_LENGTH, order + 2):
        codes = ngram_codes(part.label_ids, part.offsets, n_classes, length)
        found[length] = np.unique(codes[codes >= 0], return_counts=True)
    return found


def _partition_segment_ngrams(part, n_labels, order):
    """:func:`_partition_ngrams` of the labels of the partition's segments (its targets
    are segment codes)."""
    labels, segment_offsets = segment_label_sequences(part.label_ids, part.offsets, n_labels)
    found = {}
    for length in range(MIN_LENGTH, order + 2):
        codes = ngram_codes(labels, segment_offsets, n_labels, length)
        found[length] = np.unique(codes[codes >= 0], return_counts=True)
    return found


def _seen_patterns(run, parts, n_classes, order, min_freq, ngrams=_partition_ngrams):
    """The patterns seen at least ``min_freq`` times over all the partitions.

    ``ngrams`` reads a partition's n-grams: of its tokens' labels, or of its
    segments' (:func:`_partition_segment_ngrams`).
    """
    check_code_range(n_classes, order)
    found = run.gather(run.map(ngrams, parts, n_classes, order))
    kept = {}
    for length in range(MIN_LENGTH, order + 2):
        codes = np.concatenate([np.zeros(0, np.int64)] + [f[length][0] for f in found])
        counts = np.concatenate([np.zeros(0, np.int64)] + [f[length][1] for f in found])
        unique, inverse = np.unique(codes, return_inverse=True)
        total = np.bincount(inverse, weights=counts, minlength=unique.shape[0])
        kept[length] = unique[total >= min_freq]
    return LabelPatterns(n_classes, order, kept)


class ChainPlan:
    """:class:`~skcrf.CRFClassifier`: any order, transition features, constraints."""

    coefficient_names = CRFClassifier._coefficient_names

    def __init__(self, estimator):
        self.estimator = estimator

    def check(self):
        est = self.estimator
        if est.order > 1 and est.transition_features is not None:
            raise ValueError(f"transition_features needs order=1; got order={est.order}.")
        if est.order > 1 and est.prune_threshold is not None:
            raise ValueError("skcrf.dask.fit trains on the exact objective; set "
                             "prune_threshold=None (or fit the pruned model locally).")

    def problem(self, run, parts, classes, vectorizer):
        est = self.estimator
        n_features = len(vectorizer.feature_names_)
        constraints, classes, parts = self._constraints(run, parts, classes)
        n_classes = classes.shape[0]
        if n_classes < 2:
            raise ValueError(f"y holds a single class ({classes[0]!r}) once its tags are "
                             f"well-formed; a CRF needs at least two.")
        state_pairs = _state_pairs(run, parts, n_features, n_classes, est.all_possible_states)
        columns = est._transition_columns(vectorizer._names_out, n_features)
        edge_pairs = None
        if columns is not None:
            n_pairs = n_classes * n_classes
            if est.all_possible_states:
                edge_pairs = StatePairs.every(n_features, n_pairs, np.flatnonzero(columns))
            else:
                codes = run.gather(run.map(_edge_pair_codes, parts, n_classes, columns))
                edge_pairs = union_pairs(codes, n_features, n_pairs)
        if est.order == 1:
            structure = ChainStructure(n_classes, state_pairs, edge_pairs=edge_pairs,
                                       constraints=constraints)
        else:
            patterns = (LabelPatterns.every(n_classes, est.order, constraints.allowed)
                        if est.all_possible_transitions else
                        _seen_patterns(run, parts, n_classes, est.order, est.min_pattern_freq))
            structure = PatternChainStructure(n_classes, state_pairs, patterns,
                                              constraints=constraints)
        return TrainingProblem(
            structure, None,
            {"classes_": classes, "allowed_transitions_": constraints.allowed.copy()},
            self.coefficient_names), parts

    def _constraints(self, run, parts, classes):
        """The constraints, and the classes and partitions once malformed tags are repaired.

        As :meth:`CRFEstimator._label_constraints`, a partition at a time: a
        sequence is repaired on its own, so repairing every partition is
        repairing the whole set; the classes are then those of the repaired tags.
        """
        est = self.estimator
        spec = est.allowed_transitions
        if isinstance(spec, str) and spec == "auto":
            # the scheme from the partitions' counts, as detect_scheme reads the whole
            scheme = _scheme_of_counts(set(classes.tolist()),
                                       _detected_scheme(run, parts, classes))
            constraints = scheme_constraints(classes, scheme, spec)
        else:
            constraints = resolve_constraints(spec, classes, None)
        if spec is None:
            return constraints, classes, parts
        name = type(est).__name__
        # with partial labels anywhere, tags are not repaired (as in a local fit): they raise
        partial = any(run.gather(run.map(_has_partial_labels, parts)))
        repairs = run.map(_repaired_tags, parts, constraints, classes, spec, partial)
        found = run.gather(run.map(_repair_summary, repairs))
        if not any(n_bad for n_bad, _, _ in found):
            return constraints, classes, parts
        n_bad = sum(n for n, _, _ in found)
        where = next(where for n, where, _ in found if n)
        warnings.warn(
            f"{name}: {n_bad} training sequence(s) have tags that are not well-formed "
            f"{constraints.scheme} (first: {where}); they were trained as conlleval reads "
            f"them, with the same spans in well-formed tags.", UserWarning,
            stacklevel=_user_stacklevel())
        # the labels of the sequences kept as they were, and of the repaired tags
        kept = run.gather(run.map(_kept_labels, parts, repairs, classes))
        labels = set().union(*(set(k) for k in kept), *(set(r) for _, _, r in found))
        new_classes = _label_array(sorted(labels))
        parts = run.map(_relabelled_partition, parts, repairs, classes, new_classes)
        return scheme_constraints(new_classes, constraints.scheme, spec), new_classes, parts


def _repaired_tags(part, constraints, classes, spec, partial=False):
    """``(n_bad, where, tags)``: the partition's tags repaired, or ``(0, None, None)``.

    Explicit constraints raise a ValueError naming the first forbidden label
    (global sequence numbers), as a local fit does; so does a malformed
    fully labelled sequence when ``partial`` (some partition holds unknown or
    set labels), whose constrained sequences are not checked here.
    """
    if part.empty:
        return 0, None, None
    label_ids, offsets, names = part.label_ids, part.offsets, None
    if part.partial is not None:
        from .._estimators.partial_labels import FULL

        names = np.flatnonzero(part.partial.kinds == FULL)
        _, offsets, rows = take_sequences(part.features, part.offsets, names)
        label_ids = part.label_ids[rows]
    violation = constraints.first_violation(label_ids, offsets)
    if violation is None:
        return 0, None, None
    q, t, what = violation
    where = describe_violation(violation, classes, label_ids, offsets, spec)
    where = where.replace(f"sequence {q}",
                          f"sequence {(q if names is None else names[q]) + part.first}", 1)
    if partial:
        raise ValueError(f"The fully labelled training sequences break the constraints: "
                         f"{where}; with unknown or set labels in y they are not repaired: "
                         f"correct them.")
    if constraints.scheme is None:
        raise ValueError(f"The training labels break the constraints: {where}. Allow that "
                         f"transition, or correct the labels.")
    sequences = constraints.bad_sequences(part.label_ids, part.offsets)
    tags = repair_tags(classes, part.label_ids, part.offsets, sequences, constraints.scheme)
    return len(sequences), where, tags


def _kept_labels(part, repair, classes):
    """The labels of a partition left as it was (none if its tags were repaired)."""
    if repair[2] is not None:
        return []
    return classes[np.unique(part.label_ids)].tolist()


def _repair_summary(repair):
    n_bad, where, tags = repair
    return n_bad, where, sorted(set(tags)) if tags is not None else []


def _relabelled_partition(part, repair, old_classes, classes):
    """``part`` with its label ids in the repaired ``classes`` (its tags were in ``old_classes``)."""
    index = {label: k for k, label in enumerate(classes.tolist())}
    _, _, tags = repair
    if tags is None:
        remap = np.fromiter(map(index.__getitem__, old_classes.tolist()), dtype=np.int64,
                            count=old_classes.shape[0])
        return relabelled(part, remap[part.label_ids])
    return relabelled(part, np.fromiter(map(index.__getitem__, tags), dtype=np.int64,
                                        count=len(tags)))


def _edge_pair_codes(part, n_classes, columns):
    if part.empty:
        return np.empty(0, dtype=np.int64)
    pair_ids = edge_label_ids(part.label_ids, part.offsets, n_classes)
    return observed_pairs(part, pair_ids, n_classes * n_classes, columns=columns)


class TreePlan:
    """:class:`~skcrf.TreeCRF`: state pairs over the classes, parents from the features."""

    coefficient_names = {"coef": "coef_", "transitions": "transition_coef_",
                         "root": "root_coef_"}

    def __init__(self, estimator):
        self.estimator = estimator

    def check(self):
        pass

    def problem(self, run, parts, classes, vectorizer):
        est = self.estimator
        if not all(run.gather(run.map(_has_trees, parts))):
            raise ValueError(_NO_TREES.format(name=type(est).__name__))
        n_features = len(vectorizer.feature_names_)
        state_pairs = _state_pairs(run, parts, n_features, classes.shape[0],
                                   est.all_possible_states)
        structure = TreeStructure(classes.shape[0], state_pairs)
        return TrainingProblem(structure, None, {"classes_": classes},
                               self.coefficient_names), parts


def _has_trees(part):
    return part.empty or part.features.parents is not None



class SemiMarkovPlan:
    """:class:`~skcrf.SemiMarkovCRF`: segment labels, longest segments and token pairs.

    As :meth:`SemiMarkovCRF._training_problem` on all the data: the scheme is
    detected from the partitions' counts, the segment labels are the union of
    the partitions' span types (or the classes, for plain labels), each
    label's longest segment the maximum of the partitions', the token pairs
    the union of theirs. The partitions' targets become their segment codes.
    """

    coefficient_names = _COEFFICIENT_NAMES

    def __init__(self, estimator):
        self.estimator = estimator

    def check(self):
        spec = self.estimator.allowed_transitions
        if isinstance(spec, str):
            raise ValueError(
                f"allowed_transitions={spec!r}: SemiMarkovCRF always writes well-formed "
                f"tags, so tag schemes do not apply; give allowed pairs of segment labels "
                f"(the span types and 'O'), such as {{('PER', 'O')}}.")

    def problem(self, run, parts, classes, vectorizer):
        est = self.estimator
        if any(run.gather(run.map(_has_partial_labels, parts))):
            if est.order > 1:
                raise ValueError(
                    f"y holds unknown (None) or ambiguous (set) labels, which skcrf.dask.fit "
                    f"trains SemiMarkovCRF on at order=1 only; got order={est.order}. Fit "
                    f"it locally (SemiMarkovCRF.fit takes them at any order).")
            codec, parts, max_lengths, token_pairs = partial_segment_layout(
                run, parts, classes, est, len(vectorizer.feature_names_))
            return self._problem(codec, max_lengths, token_pairs), parts
        scheme = est.scheme
        if scheme == "auto":
            scheme = _SegmentTags.detected_scheme(set(classes.tolist()),
                                                  _detected_scheme(run, parts, classes))
        if scheme == "plain":
            codec = _SegmentTags.of_labels(scheme, classes.tolist())
        else:
            types = run.gather(run.map(_span_types, parts, classes, scheme))
            codec = _SegmentTags.of_labels(scheme, set().union(*types))
        n_labels = len(codec.segment_classes)
        shared_codec = run.put(codec)
        parts = run.map(_segment_coded, parts, classes, shared_codec)
        max_lengths = np.maximum.reduce(
            run.gather(run.map(_longest_segments, parts, shared_codec, est)))
        n_features = len(vectorizer.feature_names_)
        n_role_labels = len(TOKEN_ROLES) * n_labels
        if est.all_possible_states:
            token_pairs = StatePairs.every(n_features, n_role_labels)
        else:
            codes = run.gather(run.map(_token_pair_codes, parts, n_labels))
            token_pairs = union_pairs(codes, n_features, n_role_labels)
        return self._problem(codec, max_lengths, token_pairs, run, parts), parts

    def _problem(self, codec, max_lengths, token_pairs, run=None, parts=None):
        est = self.estimator
        allowed = None
        if est.allowed_transitions is not None:
            allowed = explicit_constraints(est.allowed_transitions,
                                           codec.segment_classes).allowed
        structure = SemiMarkovStructure(token_pairs, max_lengths,
                                        allow_repeats=not codec.plain,
                                        allowed_transitions=allowed)
        if est.order > 1:
            # as PatternSemiMarkovStructure.for_training: the n-grams of the segments'
            # labels seen often enough, or every one the structure allows
            n_labels = len(codec.segment_classes)
            patterns = (LabelPatterns.every(n_labels, est.order, structure.transition_mask == 0)
                        if est.all_possible_transitions else
                        _seen_patterns(run, parts, n_labels, est.order, est.min_pattern_freq,
                                       _partition_segment_ngrams))
            structure = PatternSemiMarkovStructure(token_pairs, max_lengths, patterns,
                                                   allow_repeats=not codec.plain,
                                                   allowed_transitions=allowed)
        return TrainingProblem(
            structure, None,
            {"classes_": codec.classes, "segment_classes_": codec.segment_classes,
             "scheme_": codec.scheme, "max_segment_length_": int(max_lengths.max(initial=1)),
             "allowed_transitions_": structure.transition_mask == 0},
            self.coefficient_names)


def _span_types(part, classes, scheme):
    """The types of the partition's spans (tags read as ``conlleval`` reads them)."""
    flat, lengths = _tags(part, classes)
    try:
        return set(_spans(flat, lengths, scheme)[3].tolist())
    except ValueError as error:
        raise _in_partition(part.index, part.first, error) from error


def _segment_coded(part, classes, codec):
    """``part`` with its segment codes (:meth:`_SegmentTags.codes`) as targets."""
    if part.empty:
        return part
    flat, _ = _tags(part, classes)
    return relabelled(part, codec.codes(flat, part.offsets))


def _longest_segments(part, codec, estimator):
    """Longest segment per label in the partition (capped, or raising, as a local fit)."""
    segmentation = Segmentation.of_codes(part.label_ids, part.offsets,
                                         len(codec.segment_classes))
    return estimator._max_lengths(segmentation, part.offsets, codec, part.first)


def _token_pair_codes(part, n_labels):
    if part.empty:
        return np.empty(0, dtype=np.int64)
    return pair_codes(observed_token_pairs(part.features, part.offsets, part.label_ids,
                                           n_labels))
