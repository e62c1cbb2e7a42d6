"""Tagging schemes: tags <-> segments, scheme detection, malformed sequences.

Decoding is checked against :func:`get_spans` (itself checked against a port of
conlleval.pl in test_metrics.py); encoding by round trips on random
segmentations drawn by hypothesis.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skcrf.tags import (
    SCHEMES,
    Segment,
    Span,
    check_scheme,
    detect_scheme,
    get_spans,
    segments_to_tags,
    tags_to_segments,
)

PREFIXED = [scheme for scheme in SCHEMES if scheme != "plain"]

# Types with a hyphen, and the empty type (bare prefixes "B", "I"...).
LABELS = ["PER", "LOC", "ORG-X", ""]
PLAIN_LABELS = ["PER", "LOC", "NN", "ORG-X"]

# Every tag of each scheme, for random (mostly malformed) sequences.
SCHEME_TAGS = {
    scheme: ["O"] + [f"{p}-{t}" for p in prefixes for t in ("PER", "LOC")] + list(prefixes)
    for scheme, prefixes in [("IOB1", "BI"), ("IOB2", "BI"), ("IOE1", "IE"),
                             ("IOE2", "IE"), ("BIOES", "BIES"), ("BILOU", "BILU")]
}
SCHEME_TAGS["plain"] = ["O", "PER", "LOC", "NN"]

FAST = settings(max_examples=150, deadline=None)


@st.composite
def segmentations(draw, labels=LABELS, max_segments=6):
    """(segments, length): sorted, non-overlapping, possibly touching segments."""
    segments, position = [], 0
    for _ in range(draw(st.integers(0, max_segments))):
        start = position + draw(st.integers(0, 2))
        stop = start + draw(st.integers(1, 4))
        segments.append(Segment(start, stop, draw(st.sampled_from(labels))))
        position = stop
    return segments, position + draw(st.integers(0, 2))


def merge_touching(segments):
    """Merge adjacent segments of one label: the segments plain tags can show."""
    merged = []
    for segment in segments:
        if merged and merged[-1].stop == segment.start and merged[-1].label == segment.label:
            merged[-1] = merged[-1]._replace(stop=segment.stop)
        else:
            merged.append(segment)
    return merged


def spans_as_segments(tags, scheme):
    return [(s.start, s.stop, s.type) for s in get_spans([tags], scheme=scheme)]


# --------------------------------------------------------------------------
# Encoding, by hand
# --------------------------------------------------------------------------

SEGMENTS = [(0, 2, "PER"), (2, 3, "PER"), (4, 7, "LOC"), (7, 8, "ORG")]


@pytest.mark.parametrize("scheme, expected", [
    ("IOB2", "B-PER I-PER B-PER O B-LOC I-LOC I-LOC B-ORG"),
    ("IOB1", "I-PER I-PER B-PER O I-LOC I-LOC I-LOC I-ORG"),
    ("IOE2", "I-PER E-PER E-PER O I-LOC I-LOC E-LOC E-ORG"),
    ("IOE1", "I-PER E-PER I-PER O I-LOC I-LOC I-LOC I-ORG"),
    ("BIOES", "B-PER E-PER S-PER O B-LOC I-LOC E-LOC S-ORG"),
    ("BILOU", "B-PER L-PER U-PER O B-LOC I-LOC L-LOC U-ORG"),
])
def test_segments_to_tags_by_hand(scheme, expected):
    tags = segments_to_tags(SEGMENTS, 8, scheme)
    assert tags == expected.split()
    assert tags_to_segments(tags, scheme) == SEGMENTS


def test_plain_tags_are_the_labels():
    segments = [(0, 2, "PER"), (2, 3, "LOC"), (4, 5, "PER")]
    assert segments_to_tags(segments, 6, "plain") == ["PER", "PER", "LOC", "O", "PER", "O"]


def test_segments_in_any_order_empty_label_and_empty_sequence():
    assert segments_to_tags([(3, 4, "LOC"), (0, 2, "PER")], 4) == [
        "B-PER", "I-PER", "O", "B-LOC"]
    assert segments_to_tags([(0, 2, ""), (2, 3, "")], 3, "BIOES") == ["B", "E", "S"]
    assert tags_to_segments(["B", "E", "S"], "BIOES") == [(0, 2, ""), (2, 3, "")]
    assert segments_to_tags([], 0) == []
    assert segments_to_tags([], 2, "IOE1") == ["O", "O"]
    assert tags_to_segments([]) == []


def test_segments_are_named_tuples_equal_to_plain_tuples():
    (segment,) = tags_to_segments(["O", "B-PER", "I-PER"])
    assert segment == (1, 3, "PER")
    assert (segment.start, segment.stop, segment.label) == (1, 3, "PER")
    assert type(segment.start) is int and type(segment.label) is str


def test_numpy_input():
    tags = np.array(["B-PER", "I-PER", "O"])
    assert tags_to_segments(tags) == [(0, 2, "PER")]
    assert segments_to_tags([(np.int64(0), np.int64(2), "PER")], np.int64(3)) == list(tags)


# --------------------------------------------------------------------------
# Round trips on random segmentations
# --------------------------------------------------------------------------


@FAST
@given(data=segmentations(), scheme=st.sampled_from(PREFIXED))
def test_segments_to_tags_to_segments_is_lossless(data, scheme):
    segments, length = data
    tags = segments_to_tags(segments, length, scheme)
    assert len(tags) == length
    assert tags_to_segments(tags, scheme) == segments
    assert spans_as_segments(tags, scheme) == segments


@FAST
@given(data=segmentations(labels=PLAIN_LABELS))
def test_plain_round_trip_without_touching_segments_of_one_label(data):
    segments, length = data
    segments = merge_touching(segments)
    tags = segments_to_tags(segments, length, "plain")
    assert tags_to_segments(tags, "plain") == segments


@FAST
@given(data=segmentations(), scheme=st.sampled_from(SCHEMES))
def test_well_formed_tags_to_segments_to_tags_is_lossless(data, scheme):
    segments, length = data
    if scheme == "plain":
        segments = merge_touching([s._replace(label=s.label or "X") for s in segments])
    tags = segments_to_tags(segments, length, scheme)
    assert segments_to_tags(tags_to_segments(tags, scheme), length, scheme) == tags


@FAST
@given(data=segmentations(), scheme=st.sampled_from(PREFIXED))
def test_decoding_as_the_sibling_scheme_gives_the_same_segments(data, scheme):
    # IOB1 and IOB2 decode alike, as do IOE1 and IOE2: only the encoding differs.
    sibling = {"IOB1": "IOB2", "IOB2": "IOB1", "IOE1": "IOE2", "IOE2": "IOE1"}.get(scheme)
    if sibling is None:
        return
    segments, length = data
    assert tags_to_segments(segments_to_tags(segments, length, scheme), sibling) == segments


# --------------------------------------------------------------------------
# Malformed sequences: conlleval's reading, as get_spans
# --------------------------------------------------------------------------


@pytest.mark.parametrize("scheme, tags, expected", [
    # I- after O or another type opens a span
    ("IOB2", "O I-PER I-PER B-PER I-LOC", [(1, 3, "PER"), (3, 4, "PER"), (4, 5, "LOC")]),
    ("IOB1", "B-PER I-LOC", [(0, 1, "PER"), (1, 2, "LOC")]),
    # E- closes; I- after E- or another type opens
    ("IOE2", "I-PER E-PER I-PER I-PER", [(0, 2, "PER"), (2, 4, "PER")]),
    ("IOE1", "E-PER E-PER I-LOC E-PER", [(0, 1, "PER"), (1, 2, "PER"), (2, 3, "LOC"),
                                         (3, 4, "PER")]),
    # E- and S- always close; B- always opens; a lone I- is a span
    ("BIOES", "B-PER O E-PER", [(0, 1, "PER"), (2, 3, "PER")]),
    ("BIOES", "I-PER S-PER", [(0, 1, "PER"), (1, 2, "PER")]),
    ("BIOES", "B-PER I-LOC E-LOC", [(0, 1, "PER"), (1, 3, "LOC")]),
    ("BIOES", "B-PER E-PER B-PER E-PER", [(0, 2, "PER"), (2, 4, "PER")]),
    ("BILOU", "B-PER O L-PER U-LOC", [(0, 1, "PER"), (2, 3, "PER"), (3, 4, "LOC")]),
    # types split at the first hyphen; bare prefixes have the empty type
    ("IOB2", "B-ORG-X I-ORG-X B I O I", [(0, 2, "ORG-X"), (2, 4, ""), (5, 6, "")]),
    ("plain", "PER PER LOC O PER", [(0, 2, "PER"), (2, 3, "LOC"), (4, 5, "PER")]),
])
def test_malformed_sequences_by_hand(scheme, tags, expected):
    tags = tags.split()
    assert tags_to_segments(tags, scheme) == expected
    assert spans_as_segments(tags, scheme) == expected


@FAST
@given(data=st.data(), scheme=st.sampled_from(SCHEMES))
def test_random_tags_decode_as_get_spans(data, scheme):
    tags = data.draw(st.lists(st.sampled_from(SCHEME_TAGS[scheme]), max_size=12))
    segments = tags_to_segments(tags, scheme)
    assert segments == spans_as_segments(tags, scheme)
    # Segments tile nothing twice and stay inside the sequence.
    for before, after in zip(segments, segments[1:]):
        assert 0 <= before.start < before.stop <= after.start < after.stop <= len(tags)
    # Encoding repairs a malformed sequence without changing its segments.
    repaired = segments_to_tags(segments, len(tags), scheme)
    assert tags_to_segments(repaired, scheme) == segments


@FAST
@given(data=st.data(), scheme=st.sampled_from(SCHEMES))
def test_get_spans_of_many_sequences_is_tags_to_segments_of_each(data, scheme):
    y = data.draw(st.lists(st.lists(st.sampled_from(SCHEME_TAGS[scheme]), max_size=6),
                           max_size=4))
    expected = [Span(q, label, start, stop) for q, tags in enumerate(y)
                for start, stop, label in tags_to_segments(tags, scheme)]
    assert get_spans(y, scheme=scheme) == expected


# --------------------------------------------------------------------------
# detect_scheme
# --------------------------------------------------------------------------


@pytest.mark.parametrize("y, expected", [
    ([["B-PER", "I-PER", "O"], ["B-LOC"]], "IOB2"),
    ([["B-PER", "B-PER"]], "IOB2"),
    ([["I-PER", "I-PER", "B-PER", "O"]], "IOB1"),
    ([["B-PER", "I-LOC"], ["I-ORG"]], "IOB1"),  # I- opens more spans than B- does
    ([["B-PER", "I-LOC"]], "IOB2"),  # as many: a tie goes to IOB2
    ([["I-PER", "O", "I-LOC"]], "IOB1"),  # only I-: IOB1 (IOE1 reads it alike)
    ([["I-PER", "E-PER", "O"], ["E-LOC"]], "IOE2"),
    ([["E-PER"]], "IOE2"),
    ([["I-PER", "E-PER", "I-PER", "O"]], "IOE1"),
    ([["E-PER", "I-LOC"], ["I-ORG"]], "IOE1"),
    ([["E-PER", "I-LOC"]], "IOE2"),
    ([["S-PER", "O", "B-LOC", "E-LOC"]], "BIOES"),
    ([["B-PER", "I-PER", "E-PER"]], "BIOES"),
    ([["S-PER"]], "BIOES"),
    ([["U-PER", "O", "B-LOC", "L-LOC"]], "BILOU"),
    ([["B-PER", "I-PER", "L-PER"]], "BILOU"),
    ([["B", "I", "O"]], "IOB2"),  # untyped chunks
    ([["NN", "VB", "O"]], "plain"),
    ([["B-PER", "PER"]], "plain"),  # a tag without prefix
    ([["b-PER", "i-PER"]], "plain"),  # prefixes are case-sensitive
    ([["BX-PER"]], "plain"),
    ([["O", "O"], []], "IOB2"),
    ([], "IOB2"),
])
def test_detect_scheme_by_hand(y, expected):
    assert detect_scheme(y) == expected


@pytest.mark.parametrize("y", [
    [["I-PER", "B-PER", "O"], ["O", "I-LOC"], ["B-ORG"], [], ["I-MISC", "I-MISC"]],
    [["B-PER", "I-PER", "O"], ["O", "I-LOC"], ["B-ORG", "O", "B-LOC"], ["O"]],
    [["I-PER", "E-PER", "O", "I-LOC"], ["E-ORG"], ["I-X", "E-X", "I-X"], ["E-Y"]],
    [["S-PER", "O"], ["B-LOC", "E-LOC"]],
    [["NN", "VB"], ["O"]],
])
def test_scheme_counts_of_parts_detect_as_the_whole(y):
    """What a distributed fit does: each part counts, the counts add, the scheme is the same."""
    from skcrf.tags import _add_scheme_counts, _scheme_counts, _scheme_of_counts

    def counts(sequences):
        return _scheme_counts([t for s in sequences for t in s], np.array(list(map(len, sequences))))

    distinct = {t for s in y for t in s}
    for cut in range(len(y) + 1):
        parts = [counts(y[:cut]), counts(y[cut:])]
        assert _scheme_of_counts(distinct, _add_scheme_counts(parts)) == detect_scheme(y)
    with pytest.raises(TypeError, match="must be str"):
        _scheme_of_counts(distinct | {0}, _add_scheme_counts([counts(y), {}]))


def test_detect_scheme_reads_arrays_and_tuples():
    assert detect_scheme((np.array(["I-PER", "E-PER"]), ("O",))) == "IOE2"


def test_detect_scheme_refuses_a_mix_of_schemes_and_non_string_tags():
    with pytest.raises(ValueError, match=r"E-, L-.*no scheme"):
        detect_scheme([["B-PER", "E-PER", "L-PER"]])
    with pytest.raises(ValueError, match="no scheme"):
        detect_scheme([["S-PER"], ["U-LOC"]])
    with pytest.raises(TypeError, match="must be str"):
        detect_scheme([[0, 1]])
    with pytest.raises(TypeError, match="must be str"):
        detect_scheme([["NN", "VB", 0]])  # not "plain", whatever the order of the tags
    with pytest.raises(TypeError, match="Sequence 0 of y is a str"):
        detect_scheme(["B-PER", "O"])


@FAST
@given(corpus=st.lists(segmentations(), max_size=4), scheme=st.sampled_from(SCHEMES))
def test_detected_scheme_reproduces_the_tags(corpus, scheme):
    # Whatever scheme wrote the tags, the detected one reads the same segments
    # and writes the same tags back (IOB1 and IOE1 tags with only I- coincide).
    if scheme == "plain":
        corpus = [(merge_touching([s._replace(label=s.label or "X") for s in segments]),
                   length) for segments, length in corpus]
    y = [segments_to_tags(segments, length, scheme) for segments, length in corpus]
    detected = detect_scheme(y)
    if any(segments for segments, _ in corpus):
        assert detected == scheme or (scheme, detected) == ("IOE1", "IOB1")
    else:
        assert detected == "IOB2"  # only "O": any scheme reads no span
    for (segments, length), tags in zip(corpus, y, strict=True):
        assert tags_to_segments(tags, detected) == segments
        assert segments_to_tags(segments, length, detected) == tags


# --------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------


def test_check_scheme():
    assert [check_scheme(scheme) for scheme in SCHEMES] == list(SCHEMES)
    for bad in ("BIO", "iob2", None, 2):
        with pytest.raises(ValueError, match="scheme must be one of"):
            check_scheme(bad)
    with pytest.raises(ValueError, match="scheme must be one of"):
        tags_to_segments(["O"], "BIO")
    with pytest.raises(ValueError, match="scheme must be one of"):
        segments_to_tags([], 1, "BIO")


def test_tags_to_segments_input_errors():
    with pytest.raises(TypeError, match="one sequence of tags"):
        tags_to_segments("B-PER")
    with pytest.raises(TypeError, match="one sequence of tags"):
        tags_to_segments(np.array([["B-PER"]]))
    with pytest.raises(TypeError, match="string tags"):
        tags_to_segments([0, 1])
    with pytest.raises(ValueError, match=r"'S-PER' \(token 2\) is not a IOB2 tag"):
        tags_to_segments(["B-PER", "O", "S-PER"])
    with pytest.raises(ValueError, match=r"'PER' \(token 0\) is not a BIOES tag"):
        tags_to_segments(["PER"], "BIOES")


@pytest.mark.parametrize("segments, length, error, match", [
    ([(0, 2, "PER"), (1, 3, "LOC")], 3, ValueError, "overlap"),
    ([(0, 4, "PER")], 3, ValueError, "0 <= start < stop <= length = 3"),
    ([(2, 2, "PER")], 3, ValueError, "0 <= start < stop"),
    ([(-1, 1, "PER")], 3, ValueError, "0 <= start < stop"),
    ([(0, 1)], 3, TypeError, r"\(start, stop, label\) tuple"),
    ([(0, 1, 5)], 3, TypeError, "labels must be str"),
    ([(0.0, 1, "PER")], 3, TypeError, "integer start and stop"),
    ([], -1, ValueError, "non-negative"),
    ([], 2.0, TypeError, "length must be an integer"),
    ("PER", 3, TypeError, "segments must be a list"),
])
def test_segments_to_tags_input_errors(segments, length, error, match):
    with pytest.raises(error, match=match):
        segments_to_tags(segments, length)


def test_plain_cannot_write_touching_segments_of_one_label_or_the_label_o():
    with pytest.raises(ValueError, match="cannot tell them apart"):
        segments_to_tags([(0, 1, "PER"), (1, 2, "PER")], 2, "plain")
    with pytest.raises(ValueError, match="outside any segment"):
        segments_to_tags([(0, 1, "O")], 2, "plain")
    # Touching segments of two labels are fine, as in any scheme.
    assert segments_to_tags([(0, 1, "PER"), (1, 2, "LOC")], 2, "plain") == ["PER", "LOC"]


def test_detect_scheme_reads_iob2_data_with_a_few_inside_starts_as_iob2():
    # CoNLL-2002 is IOB2 with a few spans opened by I- (annotation slips)
    y = [["B-PER", "I-PER", "O"], ["O", "I-LOC"], ["B-ORG", "O", "B-LOC"]]
    assert detect_scheme(y) == "IOB2"
    # IOB1 opens spans with I- and writes B- only between spans of one type
    assert detect_scheme([["I-PER", "B-PER", "O"], ["O", "I-LOC"]]) == "IOB1"
    assert detect_scheme([["I-PER", "E-PER", "O", "I-LOC"], ["E-ORG"]]) == "IOE2"
