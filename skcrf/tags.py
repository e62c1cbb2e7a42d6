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

# Chunk prefixes after normalisation: BILOU's L and U are BIOES's E and S.
_O, _B, _I, _E, _S = 0, 1, 2, 3, 4
_PREFIX_CODES = {"B": _B, "I": _I, "E": _E, "S": _S, "L": _E, "U": _S}

# Prefixes each scheme may use (besides the outside tag "O"). IOB1 and IOB2 use
# the same tags and conlleval decodes them identically (B always opens a chunk,
# I opens one after O or after another type); likewise IOE1 and IOE2. The
# scheme name tells which tags are legal, so that, say, BIOES data scored as
# IOB2 is an error rather than a silently wrong number.
_SCHEME_PREFIXES = {
    "IOB1": "BI",
    "IOB2": "BI",
    "IOE1": "IE",
    "IOE2": "IE",
    "BIOES": "BIES",
    "BILOU": "BILU",
}

#: Names of the tagging schemes, for the ``scheme=`` parameters.
SCHEMES = (*_SCHEME_PREFIXES, "plain")

_OUTSIDE = "O"


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


def _locate(lengths, token_index):
    """(sequence, position) of a token given its index over all tokens."""
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    q = int(np.searchsorted(offsets, token_index, side="right") - 1)
    return q, int(token_index - offsets[q])


# --------------------------------------------------------------------------
# Decoding tags into spans, conlleval's way
# --------------------------------------------------------------------------

def _parse_tag(tag, scheme, types):
    """(prefix code, type id) of one distinct tag; None if the scheme lacks its prefix.

    A tag splits at its first hyphen into prefix and type, as conlleval does
    (``B-PER-X`` has type ``PER-X``); a bare prefix such as ``B`` has the empty
    type, as in conlleval's untyped chunking. With ``scheme="plain"`` the whole
    label is the type.
    """
    if not isinstance(tag, str):
        raise TypeError(
            f"Decoding spans needs string tags; got {tag!r} of type "
            f"{type(tag).__name__}.")
    if tag == _OUTSIDE:
        return _O, -1
    if scheme == "plain":
        # conlleval on the labels prefixed with "I-": a run of the same label
        # continues, any change of label starts a new span.
        return _I, types.setdefault(tag, len(types))
    prefix, _, type_ = tag.partition("-")
    if prefix not in _SCHEME_PREFIXES[scheme]:
        return None
    return _PREFIX_CODES[prefix], types.setdefault(type_, len(types))


def _encode_tags(flat, lengths, scheme, one_sequence=False):
    """Prefix codes and type ids of all tokens, and the type names by id."""
    # Parse each distinct tag once; map the tokens through a dict at C speed.
    tag_index = {tag: k for k, tag in enumerate(set(flat))}
    ids = np.fromiter(map(tag_index.__getitem__, flat), dtype=np.int64, count=len(flat))
    types = {}
    prefix_of_tag = np.empty(len(tag_index), dtype=np.int8)
    type_of_tag = np.empty(len(tag_index), dtype=np.int64)
    invalid = []
    for tag, k in tag_index.items():
        parsed = _parse_tag(tag, scheme, types)
        if parsed is None:
            invalid.append(k)
        else:
            prefix_of_tag[k], type_of_tag[k] = parsed
    if invalid:
        first = int(np.flatnonzero(np.isin(ids, invalid))[0])
        q, position = _locate(lengths, first)
        where = f"token {position}" if one_sequence else f"sequence {q}, token {position}"
        raise ValueError(
            f"Tag {flat[first]!r} ({where}) is not a {scheme} tag: "
            f"expected 'O' or a tag starting with one of "
            f"{', '.join(p + '-' for p in _SCHEME_PREFIXES[scheme])}. Pass the scheme "
            f"of your data, or scheme='plain' for labels without prefixes.")
    type_names = np.empty(len(types), dtype=object)
    for name, t in types.items():
        type_names[t] = name
    return prefix_of_tag[ids], type_of_tag[ids], type_names


def _decode_spans(prefix, type_id, lengths):
    """Spans as (start, stop, type id) arrays over the concatenated tokens.

    This is conlleval's ``startOfChunk`` / ``endOfChunk`` pair, evaluated for
    all tokens at once. Each token is compared with the previous one of the same
    sequence (an "O" before the first token and after the last: chunks never
    cross sequences). With S (BIOES) and L/U (BILOU) mapped to S and E, the
    rules are the widely used BIOES extension of conlleval (as in seqeval's
    default mode); on IOB and IOE tags they reduce to conlleval's own rules.
    """
    n_tokens = prefix.shape[0]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    first = np.zeros(n_tokens, dtype=bool)
    first[offsets[:-1][lengths > 0]] = True
    prev_prefix = np.roll(prefix, 1)
    prev_type = np.roll(type_id, 1)
    prev_prefix[first] = _O
    type_changes = prev_type != type_id

    # A chunk starts at this token if it is B or S, or if it is I or E and the
    # previous tag closed its chunk (O, E, S) or had another type.
    starts_here = (prefix != _O) & (np.isin(prefix, (_B, _S))
                                    | np.isin(prev_prefix, (_O, _E, _S)) | type_changes)
    # A chunk ends before this token if the previous tag was E or S, or if this
    # token is B, S or O, or if it has another type.
    ends_before = (prev_prefix != _O) & (np.isin(prev_prefix, (_E, _S))
                                         | np.isin(prefix, (_B, _S, _O)) | type_changes)
    # The end of a sequence closes the chunk its last token is in.
    last = offsets[1:][lengths > 0] - 1
    stops = np.sort(np.concatenate([np.flatnonzero(ends_before), last[prefix[last] != _O] + 1]))
    starts = np.flatnonzero(starts_here)
    # Every chunk that starts also ends, and a start inside an open chunk always
    # coincides with its end, so the i-th start pairs with the i-th stop.
    return starts, stops, type_id[starts]


def _spans(flat, lengths, scheme, one_sequence=False):
    """Sequence index, start, stop (over all tokens) and type name of each span."""
    prefix, type_id, type_names = _encode_tags(flat, lengths, scheme, one_sequence)
    starts, stops, span_types = _decode_spans(prefix, type_id, lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    sequences = np.searchsorted(offsets, starts, side="right") - 1
    return sequences, starts, stops, type_names[span_types]


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
