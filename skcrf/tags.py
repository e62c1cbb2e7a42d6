"""Tagging schemes: decode tag sequences into labelled spans, and encode them back.

A span tagger labels each token with a tag such as ``"B-PER"``: a prefix that
says where the token sits in its span and the span's type, or ``"O"`` outside
any span. This module is the one place that knows the schemes, for the span
metrics (:mod:`skcrf.metrics`) and for models that predict spans (segments)
directly:

- :func:`get_spans` decodes many sequences at once, exactly as the CoNLL
  ``conlleval`` script reads them, malformed sequences included;
- :func:`tags_to_segments` decodes one sequence, the same way;
- :func:`segments_to_tags` encodes segments as the tags of a scheme, the
  inverse of :func:`tags_to_segments` on well-formed sequences;
- :func:`detect_scheme` guesses the scheme of a corpus from its tags.

The schemes (:data:`SCHEMES`):

``"IOB2"`` (also called BIO)
    ``B-`` begins every span, ``I-`` continues it.
``"IOB1"``
    As IOB2, but a span begins with ``I-`` unless it directly follows a span
    of the same type, where ``B-`` marks the boundary. Decoded as IOB2.
``"IOE2"``
    ``E-`` ends every span, ``I-`` is any other token of a span.
``"IOE1"``
    As IOE2, but a span ends with ``I-`` unless a span of the same type
    directly follows it. Decoded as IOE2.
``"BIOES"``
    ``S-`` is a one-token span; longer spans are ``B-``, ``I-``... ``E-``.
``"BILOU"``
    BIOES with ``L-`` for ``E-`` and ``U-`` for ``S-``.
``"plain"``
    No prefix: the tag is the type, and every maximal run of one tag other
    than ``"O"`` is a span.

Every scheme uses ``"O"`` outside spans. A tag splits at its first hyphen into
prefix and type, as in conlleval (``"B-ORG-X"`` has type ``"ORG-X"``); a bare
prefix such as ``"B"`` has the empty type (conlleval's untyped chunking).

Positions follow Python slices: a span or segment covers tokens
``start:stop``, ``stop`` exclusive.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Sequence

import numpy as np

from ._utils.span_decoding import (_I, _O, _OUTSIDE, _PREFIX_CODES, _SCHEME_PREFIXES,
                                   _encode_tags, _spans)
from ._utils.type_aliases import LabelSequences

__all__ = [
    "SCHEMES",
    "Segment",
    "Span",
    "check_scheme",
    "detect_scheme",
    "get_spans",
    "segments_to_tags",
    "tags_to_segments",
]


Span = namedtuple("Span", ["sequence", "type", "start", "stop"])
Span.__doc__ = """A labelled span: tokens ``start:stop`` of sequence ``sequence``.

``stop`` is exclusive, as in Python slices (conlleval and seqeval print
inclusive ends).
"""

Segment = namedtuple("Segment", ["start", "stop", "label"])
Segment.__doc__ = """A labelled segment of one sequence: tokens ``start:stop``.

``stop`` is exclusive, as in Python slices and :class:`Span`; ``label`` is the
span type, e.g. ``"PER"`` for the tags ``B-PER I-PER``.
"""

#: Names of the tagging schemes, for the ``scheme=`` parameters.
SCHEMES = (*_SCHEME_PREFIXES, "plain")

def check_scheme(scheme: str) -> str:
    """Return ``scheme`` if it names a tagging scheme, else raise ValueError.

    Parameters
    ----------
    scheme : str
        One of :data:`SCHEMES`. Names are case-sensitive.

    Returns
    -------
    scheme : str
        The same name.

    Examples
    --------
    >>> from skcrf.tags import check_scheme
    >>> check_scheme("BIOES")
    'BIOES'
    """
    if not isinstance(scheme, str) or scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(map(repr, SCHEMES))}; "
                         f"got {scheme!r}.")
    return scheme


# --------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------

def _is_sequence(obj):
    """A sequence of labels: sized and iterable, but not a string or a dict."""
    return (hasattr(obj, "__len__") and hasattr(obj, "__iter__")
            and not isinstance(obj, (str, bytes, dict)))


def _as_list(labels):
    # tolist() turns numpy scalars into Python ones, much faster than iterating.
    return labels.tolist() if isinstance(labels, np.ndarray) else labels


def _check_sequences(y, name="y"):
    """All tags of all sequences of ``y``, in order, and each sequence's length."""
    if not _is_sequence(y) or getattr(y, "ndim", 1) == 0:
        raise TypeError(
            f"{name} must be a list of label sequences; got a {type(y).__name__}.")
    lengths = np.empty(len(y), dtype=np.int64)
    flat = []
    for q, labels in enumerate(y):
        if not _is_sequence(labels):
            # The common mistake is a flat list of labels for one sequence.
            raise TypeError(
                f"Sequence {q} of {name} is a {type(labels).__name__}; expected a "
                f"sequence of labels. A single sequence must be wrapped in a list.")
        lengths[q] = len(labels)
        flat.extend(_as_list(labels))
    return flat, lengths


def _check_tags(tags):
    """One sequence of tags as a list."""
    if not _is_sequence(tags) or getattr(tags, "ndim", 1) != 1:
        raise TypeError(
            f"tags must be one sequence of tags (a list, tuple or 1-D array); got a "
            f"{type(tags).__name__}.")
    return list(_as_list(tags))


def get_spans(y: LabelSequences, *, scheme: str = "IOB2") -> list[Span]:
    """Decode label sequences into labelled spans (entities, chunks).

    Spans are read exactly as the CoNLL ``conlleval`` script reads them,
    malformed sequences included: with IOB tags an ``I-`` after ``O`` or after
    another type opens a span, ``B-`` always opens one; with IOE tags an ``E-``
    closes a span and an ``I-`` after ``E-`` or another type opens one; with
    BIOES, ``S-`` is a one-token span and ``E-`` or ``S-`` always closes the
    current span.

    Parameters
    ----------
    y : list of array-like of shape (n_tokens_i,)
        Label sequences, str tags such as ``"B-PER"``, ``"I-PER"`` and ``"O"``.
    scheme : {"IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain"}, \
            default="IOB2"
        Tagging scheme. IOB2 is also called BIO. Tags must split at their first
        hyphen into a prefix of the scheme and a type, or be ``"O"``. With
        ``"plain"``, every maximal run of one label other than ``"O"`` is a span
        whose type is the label: conlleval on the labels prefixed with ``I-``
        (conlleval's own ``-r`` option differs: it makes each token a span).

    Returns
    -------
    spans : list of Span
        ``(sequence, type, start, stop)`` named tuples, ``stop`` exclusive,
        ordered by sequence and position.

    Examples
    --------
    >>> from skcrf.tags import get_spans
    >>> get_spans([["B-PER", "I-PER", "O", "I-LOC"]])
    [Span(sequence=0, type='PER', start=0, stop=2), Span(sequence=0, type='LOC', start=3, stop=4)]
    >>> get_spans([["S-PER", "B-LOC", "E-LOC"]], scheme="BIOES")
    [Span(sequence=0, type='PER', start=0, stop=1), Span(sequence=0, type='LOC', start=1, stop=3)]
    """
    check_scheme(scheme)
    flat, lengths = _check_sequences(y)
    sequences, starts, stops, types = _spans(flat, lengths, scheme)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return [Span(int(q), str(t), int(start - offsets[q]), int(stop - offsets[q]))
            for q, t, start, stop in zip(sequences, types, starts, stops)]


def tags_to_segments(tags: Sequence[str], scheme: str = "IOB2") -> list[Segment]:
    """Decode one tag sequence into its labelled segments.

    The decoding of :func:`get_spans` (conlleval's, malformed tags included)
    for a single sequence.

    Parameters
    ----------
    tags : array-like of str of shape (n_tokens,)
        One sequence of tags, such as ``["B-PER", "I-PER", "O"]``.
    scheme : {"IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain"}, \
            default="IOB2"
        Tagging scheme, see :func:`get_spans`.

    Returns
    -------
    segments : list of Segment
        ``(start, stop, label)`` named tuples, ``stop`` exclusive (as ``Span``),
        in order of position.

    See Also
    --------
    segments_to_tags : The inverse.
    get_spans : The same decoding for many sequences.

    Examples
    --------
    >>> from skcrf.tags import tags_to_segments
    >>> tags_to_segments(["B-PER", "I-PER", "O", "B-LOC"])
    [Segment(start=0, stop=2, label='PER'), Segment(start=3, stop=4, label='LOC')]
    >>> tags_to_segments(["U-PER", "B-LOC", "L-LOC"], scheme="BILOU")
    [Segment(start=0, stop=1, label='PER'), Segment(start=1, stop=3, label='LOC')]
    """
    check_scheme(scheme)
    flat = _check_tags(tags)
    lengths = np.array([len(flat)], dtype=np.int64)
    _, starts, stops, types = _spans(flat, lengths, scheme, one_sequence=True)
    return [Segment(int(start), int(stop), str(t))
            for start, stop, t in zip(starts, stops, types)]


# --------------------------------------------------------------------------
# Encoding segments as tags
# --------------------------------------------------------------------------

def _check_segments(segments, length):
    """Segments as sorted (start, stop, label) tuples, checked against ``length``."""
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
        raise TypeError(f"length must be an integer; got {length!r}.")
    if length < 0:
        raise ValueError(f"length must be non-negative; got {length}.")
    if not _is_sequence(segments):
        raise TypeError(
            f"segments must be a list of (start, stop, label) tuples; got a "
            f"{type(segments).__name__}.")
    checked = []
    for k, segment in enumerate(segments):
        if not _is_sequence(segment) or len(segment) != 3:
            raise TypeError(f"Segment {k} must be a (start, stop, label) tuple; got "
                            f"{segment!r}.")
        start, stop, label = segment
        if not isinstance(label, str):
            raise TypeError(f"Segment {k} has label {label!r} of type "
                            f"{type(label).__name__}; labels must be str.")
        if not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool)
                   for i in (start, stop)):
            raise TypeError(f"Segment {k} must have integer start and stop; got "
                            f"{segment!r}.")
        if not 0 <= start < stop <= length:
            raise ValueError(
                f"Segment {k} {tuple(segment)!r} must satisfy 0 <= start < stop <= "
                f"length = {length} (stop is exclusive).")
        checked.append((int(start), int(stop), label))
    checked.sort()
    for before, after in zip(checked, checked[1:]):
        if after[0] < before[1]:
            raise ValueError(f"Segments {before!r} and {after!r} overlap.")
    return checked


def _tag(prefix, label):
    # The empty type is the bare prefix, as in conlleval's untyped chunking.
    return f"{prefix}-{label}" if label else prefix


def segments_to_tags(segments: Iterable[Segment | tuple[int, int, str]], length: int,
                     scheme: str = "IOB2") -> list[str]:
    """Encode labelled segments as one tag sequence of a scheme.

    The inverse of :func:`tags_to_segments`:
    ``tags_to_segments(segments_to_tags(segments, n, scheme), scheme)`` gives
    back the segments, sorted, in every scheme. The tags are the well-formed
    ones of the scheme, so ``segments_to_tags(tags_to_segments(tags, scheme),
    len(tags), scheme)`` gives back ``tags`` when they are well formed (a
    malformed sequence comes back repaired, with the same segments).

    Parameters
    ----------
    segments : list of (int, int, str)
        ``(start, stop, label)`` of each segment, ``stop`` exclusive (as
        returned by :func:`tags_to_segments`), in any order; segments may
        not overlap. An empty label gives bare prefixes (``"B"``, ``"I"``).
    length : int
        Number of tokens of the sequence.
    scheme : {"IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain"}, \
            default="IOB2"
        Tagging scheme. IOB1 writes ``B-`` only on a segment directly after
        one of the same label, IOE1 writes ``E-`` only on a segment directly
        before one of the same label. With ``"plain"`` two adjacent segments of
        one label would read as one, and a segment labelled ``"O"`` as none:
        both raise a ValueError.

    Returns
    -------
    tags : list of str of length ``length``
        ``"O"`` outside the segments.

    See Also
    --------
    tags_to_segments : The inverse.

    Examples
    --------
    >>> from skcrf.tags import segments_to_tags
    >>> segments = [(0, 2, "PER"), (2, 3, "PER"), (4, 5, "LOC")]
    >>> segments_to_tags(segments, 5)
    ['B-PER', 'I-PER', 'B-PER', 'O', 'B-LOC']
    >>> segments_to_tags(segments, 5, scheme="IOB1")
    ['I-PER', 'I-PER', 'B-PER', 'O', 'I-LOC']
    >>> segments_to_tags(segments, 5, scheme="BIOES")
    ['B-PER', 'E-PER', 'S-PER', 'O', 'S-LOC']
    """
    check_scheme(scheme)
    segments = _check_segments(segments, length)
    tags = [_OUTSIDE] * int(length)
    if scheme == "plain":
        for k, (start, stop, label) in enumerate(segments):
            if label == _OUTSIDE:
                raise ValueError(f"Segment {(start, stop, label)!r}: with scheme='plain', "
                                 f"the label 'O' means outside any segment.")
            if k and segments[k - 1][1] == start and segments[k - 1][2] == label:
                raise ValueError(
                    f"Segments {segments[k - 1]!r} and {(start, stop, label)!r} are "
                    f"adjacent with one label: scheme='plain' cannot tell them apart. "
                    f"Use a scheme with prefixes, such as 'IOB2'.")
            tags[start:stop] = [label] * (stop - start)
        return tags

    begin, inside, end, single = {
        "IOB1": "BIII", "IOB2": "BIIB", "IOE1": "IIEE", "IOE2": "IIEE",
        "BIOES": "BIES", "BILOU": "BILU"}[scheme]
    for k, (start, stop, label) in enumerate(segments):
        tags[start:stop] = [_tag(inside, label)] * (stop - start)
        if stop - start == 1:
            tags[start] = _tag(single, label)
        else:
            tags[start], tags[stop - 1] = _tag(begin, label), _tag(end, label)
        # IOB1 and IOE1 mark a boundary only between adjacent segments of one label.
        touches_previous = (k > 0 and segments[k - 1][1] == start
                            and segments[k - 1][2] == label)
        touches_next = (k + 1 < len(segments) and segments[k + 1][0] == stop
                        and segments[k + 1][2] == label)
        if scheme == "IOB1":
            tags[start] = _tag("B" if touches_previous else "I", label)
        elif scheme == "IOE1":
            tags[stop - 1] = _tag("E" if touches_next else "I", label)
    return tags


# --------------------------------------------------------------------------
# Guessing the scheme
# --------------------------------------------------------------------------

def detect_scheme(y: LabelSequences) -> str:
    """Guess the tagging scheme of label sequences from their tags.

    The rule, in order:

    1. ``"plain"`` if some tag other than ``"O"`` has no prefix: it is not one
       of the letters B, I, E, S, L, U, alone or followed by a hyphen
       (``"PER"``, ``"NN"``, ``"b-PER"``);
    2. ``"IOB2"`` if there is no tag but ``"O"`` (or no tag at all), since every
       scheme then reads no span;
    3. from the set of prefixes used:

       - only B and I: ``"IOB1"`` if more spans begin with ``I-`` than with
         ``B-`` at a boundary (first in the sequence, or after ``O`` or another
         type), else ``"IOB2"``. IOB1 writes ``B-`` only between two spans of
         one type, so in IOB1 no span begins with ``B-`` at a boundary; a few
         ``I-`` starts in otherwise IOB2 data (annotation slips, as in
         CoNLL-2002) do not make it IOB1;
       - only I and E, with some E: the same with the ends of spans,
         ``"IOE1"`` or ``"IOE2"``;
       - within B, I, E, S: ``"BIOES"``;
       - within B, I, L, U: ``"BILOU"``;
       - any other mix (say E and L) fits no scheme: ValueError.

    Tags with only ``I-`` are read as IOB1 (as CoNLL-2003's original files):
    IOB1 and IOE1 decode them alike. IOB1 and IOB2 always decode alike, as do
    IOE1 and IOE2; the difference matters when writing tags with
    :func:`segments_to_tags`.

    Parameters
    ----------
    y : list of array-like of shape (n_tokens_i,)
        Tag sequences, str tags such as ``"B-PER"`` and ``"O"``.

    Returns
    -------
    scheme : str
        One of :data:`SCHEMES`.

    Examples
    --------
    >>> from skcrf.tags import detect_scheme
    >>> detect_scheme([["B-PER", "I-PER", "O"], ["B-LOC"]])
    'IOB2'
    >>> detect_scheme([["I-PER", "I-PER", "B-PER", "O"]])
    'IOB1'
    >>> detect_scheme([["S-PER", "O", "B-LOC", "E-LOC"]])
    'BIOES'
    >>> detect_scheme([["NN", "VB", "O"]])
    'plain'
    """
    flat, lengths = _check_sequences(y)
    return _scheme_of_counts(set(flat), _scheme_counts(flat, lengths))


def _tag_prefixes(distinct):
    """The prefixes of str tags (their text before ``-``), ``"O"`` left out."""
    return {tag.partition("-")[0] for tag in distinct if tag != _OUTSIDE}


def _scheme_counts(flat, lengths):
    """What :func:`detect_scheme` counts in tag sequences, beyond their set of tags.

    For each family of schemes told apart by counting (``"IOB1"`` for tags of
    prefixes B and I, ``"IOE1"`` for I and E) whose prefixes the tags keep to,
    the numbers of ``I-`` tags and of ``B-`` (``E-``) tags that open (close) a
    span at a boundary. The counts of parts of a set of sequences add up to
    those of the whole (:func:`_add_scheme_counts`), so the scheme of data
    split over machines is detected from the parts' counts and tags.
    """
    distinct = set(flat)
    if not all(isinstance(tag, str) for tag in distinct):
        return {}
    prefixes = _tag_prefixes(distinct)
    return {family: (_spans_opened_at_a_boundary(flat, lengths, family) if flat else (0, 0))
            for family, allowed in (("IOB1", "BI"), ("IOE1", "IE"))
            if prefixes <= set(allowed)}


def _add_scheme_counts(parts):
    """The :func:`_scheme_counts` of sequences split into parts, from the parts' counts.

    A family some part's tags leave is left out: the whole's tags leave it too.
    """
    families = set.intersection(*(set(counts) for counts in parts)) if parts else set()
    return {family: tuple(int(sum(values)) for values in zip(*(p[family] for p in parts)))
            for family in sorted(families)}


def _scheme_of_counts(distinct, counts):
    """:func:`detect_scheme` of tag sequences with tags ``distinct`` and :func:`_scheme_counts`."""
    for tag in distinct:
        if not isinstance(tag, str):
            raise TypeError(
                f"Tags must be str to detect a scheme; got {tag!r} of type "
                f"{type(tag).__name__}.")
    prefixes = _tag_prefixes(distinct)
    if not prefixes <= _PREFIX_CODES.keys():
        return "plain"
    if not prefixes:
        return "IOB2"
    if prefixes <= set("BI"):
        inside, marked = counts["IOB1"]
        return "IOB1" if inside > marked else "IOB2"
    if prefixes <= set("IE"):
        inside, marked = counts["IOE1"]
        return "IOE1" if inside > marked else "IOE2"
    for scheme in ("BIOES", "BILOU"):
        if prefixes <= set(_SCHEME_PREFIXES[scheme]):
            return scheme
    raise ValueError(
        f"The tags use the prefixes {', '.join(p + '-' for p in sorted(prefixes))} "
        f"together, which no scheme does; schemes: {', '.join(SCHEMES)}.")


def _spans_opened_at_a_boundary(flat, lengths, scheme):
    """How many I- tags and how many B- (E- for IOE1) tags begin (end) a span at a boundary.

    A boundary is the start (end) of a sequence, or ``O`` or another type before
    (after) the tag.
    """
    prefix, type_id, _ = _encode_tags(flat, lengths, scheme)
    if scheme == "IOE1":
        # Reversed, the end of a span is its beginning.
        prefix, type_id, lengths = prefix[::-1], type_id[::-1], lengths[::-1]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    prev_prefix = np.roll(prefix, 1)
    prev_prefix[offsets[:-1][lengths > 0]] = _O
    boundary = (prev_prefix == _O) | (np.roll(type_id, 1) != type_id)
    inside = int(np.count_nonzero((prefix == _I) & boundary))
    marked = int(np.count_nonzero((prefix != _I) & (prefix != _O) & boundary))
    return inside, marked
