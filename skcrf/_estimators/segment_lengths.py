"""The longest segment each label of a semi-Markov CRF may take, from its training data."""

import numpy as np

from ..structures.semimarkov.segment_scores import Segmentation


def check_stream_lengths(codes, offsets, codec, max_lengths):
    """Raise if a later batch of ``partial_fit`` has a segment longer than the model takes."""
    segmentation = Segmentation.of_codes(codes, offsets, len(codec.segment_classes))
    first, stops, labels, sequence = segmentation.bounds(offsets)
    too_long = np.flatnonzero(stops - first > max_lengths[labels])
    if too_long.size:
        k = too_long[0]
        raise ValueError(
            f"{_segment_at(k, first, stops, labels, sequence, offsets, codec)}, longer than "
            f"the {max_lengths[labels[k]]} this model takes: partial_fit keeps the longest "
            f"segment of each label from its first call (with max_segment_length=None, the "
            f"first batch's longest). Set max_segment_length to the longest segment the "
            f"stream may bring.")


def _segment_at(k, first, stops, labels, sequence, offsets, codec, first_sequence=0):
    """Where segment ``k`` is, for a message: its sequence, label, length and tokens."""
    q = int(sequence[k])
    return (f"Sequence {q + first_sequence} has a segment "
            f"{codec.segment_classes[labels[k]]!r} of {stops[k] - first[k]} tokens "
            f"(tokens {first[k] - offsets[q]}:{stops[k] - offsets[q]})")


def longest_segments(max_segment_length, segmentation, offsets, codec, first_sequence=0,
                     stream=False):
    """Longest segment each label may take; raise if a training segment exceeds the cap.

    With ``max_segment_length=None`` each label takes its own longest
    training segment: a length no training segment of the label has would
    only have its weight pushed down, and every label pays inference for
    its own lengths alone. An int caps every label alike. ``"O"`` segments
    are single tokens. The cap is at most the longest sequence of the
    data, unless ``stream`` (the first batch of ``partial_fit``, whose
    later batches may be longer). The longest of a training set split
    into parts is the elementwise maximum of the parts'; ``first_sequence``
    is the index of a part's first sequence in the whole, for the message.
    """
    first, stops, labels, sequence = segmentation.bounds(offsets)
    n_labels = len(codec.segment_classes)
    sizes = stops - first
    if codec.outside is not None:
        sizes = np.where(labels == codec.outside, 1, sizes)
    longest = np.ones(n_labels, dtype=np.int64)
    np.maximum.at(longest, labels, sizes)
    if max_segment_length is None:
        return longest
    too_long = np.flatnonzero(sizes > max_segment_length)
    if too_long.size:
        where = _segment_at(too_long[0], first, stops, labels, sequence, offsets, codec,
                            first_sequence)
        raise ValueError(
            f"{where}, longer than max_segment_length={max_segment_length}. Increase "
            f"max_segment_length, or set it to None to take the longest training "
            f"segment of each label ({int(longest.max())} at most).")
    cap = max_segment_length
    if not stream:
        # a segment fits in its sequence: lengths beyond the longest one would
        # cost every token inference time and memory for weights never trained
        cap = min(cap, int(np.diff(offsets).max(initial=1)))
    capped = np.full(n_labels, cap, dtype=np.int64)
    if codec.outside is not None:
        capped[codec.outside] = 1
    return capped
