"""SemiMarkovCRF's distributed layout when ``y`` holds unknown (None) or set labels.

As :func:`skcrf._estimators.segment_partial.partial_segment_problem` on all
the data: the scheme is read in the fully labelled sequences' tags (their
scheme counts add up over partitions), the segment labels from every class
(a tag seen only inside sets still names its type), each label's longest
segment and the token pairs from the fully labelled sequences (maxima and
unions over partitions). Each partition's targets become the segment codes
of its fully labelled sequences (-1 elsewhere), and its partial labels the
segment-label mask of :func:`~skcrf.learning.partial_segments.segment_label_mask`.
"""

import numpy as np

from .._estimators.partial_labels import FULL, PartialLabels
from .._estimators.segment_tags import _SegmentTags
from ..features.arrays import take_sequences
from ..learning.partial_segments import segment_label_mask, tag_segment_label
from ..structures._parameters import StatePairs
from ..structures.semimarkov.segment_scores import TOKEN_ROLES, Segmentation
from ..structures.semimarkov.structure import observed_token_pairs
from ..tags import _add_scheme_counts, _scheme_counts
from ._partitions import EncodedPartition, _in_partition, pair_codes, union_pairs

_NO_FULL_SEQUENCE = ("SemiMarkovCRF needs at least one fully labelled sequence in y when "
                     "others hold unknown (None) or set labels: the segment lengths are "
                     "read from them.")


def _full_ids(part):
    """The partition's fully labelled sequences (all of them without partial labels)."""
    if part.partial is None:
        return np.arange(part.offsets.shape[0] - 1)
    return np.flatnonzero(part.partial.kinds == FULL)


def _full_tags(part, classes):
    """``(tags, lengths)`` of the partition's fully labelled sequences."""
    if part.empty:
        return [], np.zeros(0, dtype=np.int64)
    ids = _full_ids(part)
    lengths = np.diff(part.offsets)[ids]
    rows = np.concatenate([np.arange(part.offsets[q], part.offsets[q + 1]) for q in ids]
                          + [np.zeros(0, dtype=np.int64)])
    return classes[part.label_ids[rows]].tolist(), lengths


def _full_scheme_counts(part, classes):
    return _scheme_counts(*_full_tags(part, classes))


def _coded(part, classes, codec, scheme):
    """``(part with segment codes and mask, longest segments, token pair codes, n_full)``."""
    n_labels = len(codec.segment_classes)
    if part.empty:
        return part, None, None, np.empty(0, np.int64), 0
    ids = _full_ids(part)
    features, offsets, rows = take_sequences(part.features, part.offsets, ids)
    flat, _ = _full_tags(part, classes)
    try:
        full_codes = codec.codes(flat, offsets)
    except ValueError as error:
        raise _in_partition(part.index, part.first, error) from error
    codes = np.full(part.offsets[-1], -1, dtype=np.int64)
    codes[rows] = full_codes
    partial = part.partial
    if partial is not None:
        mask = segment_label_mask(partial.allowed, classes.tolist(),
                                  codec.segment_classes.tolist(),
                                  None if codec.plain else scheme)
        partial = PartialLabels(partial.classes, codes, mask == 0, partial.kinds)
    coded = EncodedPartition(part.index, part.first, part.features, part.offsets, codes,
                             part.weights, partial)
    pairs = (pair_codes(observed_token_pairs(features, offsets, full_codes, n_labels))
             if ids.shape[0] else np.empty(0, np.int64))
    return coded, offsets, full_codes, pairs, ids.shape[0]


def _longest(coded, codec, estimator):
    _, offsets, full_codes, _, n_full = coded
    n_labels = len(codec.segment_classes)
    if not n_full:
        return np.zeros(n_labels, dtype=np.int64)
    return estimator._max_lengths(Segmentation.of_codes(full_codes, offsets, n_labels),
                                  offsets, codec)


def _item(coded, k):
    return coded[k]


def partial_segment_layout(run, parts, classes, estimator, n_features):
    """``(codec, parts, max_lengths, token_pairs)`` of partially labelled partitions."""
    scheme = estimator.scheme
    tags = classes.tolist()
    if scheme == "auto":
        counts = run.gather(run.map(_full_scheme_counts, parts, classes))
        scheme = _SegmentTags.detected_scheme(set(tags), _add_scheme_counts(counts))
    if scheme == "plain":
        codec = _SegmentTags.of_labels(scheme, set(tags))
    else:
        codec = _SegmentTags.of_labels(
            scheme, {tag_segment_label(tag, scheme) for tag in tags} - {"O"})
    shared_codec = run.put(codec)
    coded = run.map(_coded, parts, classes, shared_codec, scheme)
    if sum(run.gather(run.map(_item, coded, 4))) == 0:
        raise ValueError(_NO_FULL_SEQUENCE)
    max_lengths = np.maximum.reduce(run.gather(run.map(_longest, coded, shared_codec,
                                                       estimator)))
    n_role_labels = len(TOKEN_ROLES) * len(codec.segment_classes)
    if estimator.all_possible_states:
        token_pairs = StatePairs.every(n_features, n_role_labels)
    else:
        token_pairs = union_pairs(run.gather(run.map(_item, coded, 3)), n_features,
                                  n_role_labels)
    return codec, run.map(_item, coded, 0), max_lengths, token_pairs
