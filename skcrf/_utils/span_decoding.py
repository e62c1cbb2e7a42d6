"""Tags to spans, conlleval's way: prefix codes, type ids and the spans they make.

The machinery behind :mod:`skcrf.tags` (its public functions validate and
explain; these run over all tokens at once), also used by the span metrics,
the command line's scores and the distributed fit's scheme detection.
"""

import numpy as np

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

_OUTSIDE = "O"


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
