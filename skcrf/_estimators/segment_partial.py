"""SemiMarkovCRF's training problem when ``y`` holds unknown (None) or set labels.

The scheme, the segment labels and the longest segment of each label are
read from the fully labelled sequences (and the segment labels also from
every tag a set offers); their segment codes are the targets of the usual
objective. The other sequences are trained on ``log Z - log Z_allowed``
over the segmentations whose segments cover only tokens that allow their
label (:mod:`skcrf.learning.partial_segments`, where the mapping of tag sets
to segment labels is described): the :class:`PartialLabels` handed to the
objective hold segment codes and the segment-label mask in place of tag ids
and the tag mask.
"""

import numpy as np

from ..features.arrays import take_sequences
from ..learning.partial_segments import segment_label_mask, tag_segment_label
from ..structures.semimarkov.segment_scores import Segmentation
from ..structures.semimarkov.patterns import PatternSemiMarkovStructure
from ..structures.semimarkov.structure import SemiMarkovStructure
from ..tags import _scheme_counts
from .constraints import explicit_constraints
from .partial_labels import FULL, PartialLabels
from .segment_tags import _SegmentTags


def partial_segment_problem(estimator, data):
    """``(structure, codes, codec, max_lengths)`` of partially labelled ``data``; swaps
    ``data.partial`` for its segment version (codes and segment-label mask).

    Raises a ValueError if no sequence is fully labelled (nothing then says
    how long segments are). Segment features and orders >= 2 take the token
    constraints as order 1 does: a disallowed (token, label) state score of
    ``-inf`` removes every segment of that label covering the token, whatever
    else scores it; the label patterns of order >= 2 are the n-grams of the
    fully labelled sequences' segment labels.
    """
    partial = data.partial
    full_ids = np.flatnonzero(partial.kinds == FULL)
    if full_ids.shape[0] == 0:
        raise ValueError("SemiMarkovCRF needs at least one fully labelled sequence in y "
                         "when others hold unknown (None) or set labels: the segment "
                         "lengths are read from them.")
    part, part_offsets, rows = take_sequences(data.features, data.offsets, full_ids)
    flat = data.classes[partial.label_ids[rows]].tolist()
    tags = data.classes.tolist()
    scheme = estimator.scheme
    if scheme == "auto":
        scheme = _SegmentTags.detected_scheme(set(tags),
                                              _scheme_counts(flat, np.diff(part_offsets)))
    if scheme == "plain":
        codec = _SegmentTags.of_labels(scheme, set(tags))
    else:
        codec = _SegmentTags.of_labels(
            scheme, {tag_segment_label(tag, scheme) for tag in tags} - {"O"})
    n_labels = len(codec.segment_classes)
    full_codes = codec.codes(flat, part_offsets)
    max_lengths = estimator._max_lengths(Segmentation.of_codes(full_codes, part_offsets,
                                                               n_labels), part_offsets, codec)
    allowed = None
    if estimator.allowed_transitions is not None:
        allowed = explicit_constraints(estimator.allowed_transitions,
                                       codec.segment_classes).allowed
    options = dict(allow_repeats=not codec.plain,
                   all_possible_states=estimator.all_possible_states,
                   allowed_transitions=allowed, label_names=codec.segment_classes.tolist())
    if estimator.order == 1:
        structure = SemiMarkovStructure.for_training(part, part_offsets, full_codes,
                                                     max_lengths, **options)
    else:
        # the label patterns are the n-grams of the fully labelled sequences' segments
        structure = PatternSemiMarkovStructure.for_training(
            part, part_offsets, full_codes, max_lengths, order=estimator.order,
            all_possible_transitions=estimator.all_possible_transitions,
            min_pattern_freq=estimator.min_pattern_freq, **options)
    # -1: the tokens of the other sequences, whose segments the mask constrains
    codes = np.full(data.offsets[-1], -1, dtype=full_codes.dtype)
    codes[rows] = full_codes
    mask = segment_label_mask(partial.allowed, tags, codec.segment_classes.tolist(),
                              None if codec.plain else scheme)
    data.partial = PartialLabels(partial.classes, codes, mask == 0, partial.kinds)
    return structure, codes, codec, max_lengths
