"""Token, sequence and span (CoNLL) metrics for label sequences, and scorers.

Every metric takes ``y_true`` and ``y_pred`` as lists of label sequences: lists,
tuples or 1-D arrays in any mix (``CRFClassifier.predict`` returns a list of
arrays, corpora are usually lists of lists), of different lengths ("ragged").
Both must hold the same number of sequences and each pair of sequences the same
number of labels; anything else is a :class:`ValueError` naming the sequence,
never a silent truncation.

Three families:

- token level (``flat_*``): scikit-learn's metric, with its signature, on all
  tokens of all sequences;
- sequence level (:func:`sequence_accuracy_score`): a sequence counts only if
  every label is right;
- span level (``span_*``): entities or chunks decoded from the tags exactly as
  the CoNLL ``conlleval`` script decodes them, counted right only when type,
  start and end all match.

The scorers (:data:`span_f1_scorer`, :data:`flat_f1_scorer`,
:data:`sequence_accuracy_scorer`, :func:`make_sequence_scorer`) plug into
``GridSearchCV(scoring=...)`` and ``cross_validate``, where scikit-learn's string
scorers fail on ragged ``y``.
"""

from collections import namedtuple

import numpy as np
from sklearn import metrics as _skm

__all__ = [
    "Span",
    "flat_accuracy_score",
    "flat_classification_report",
    "flat_f1_score",
    "flat_fbeta_score",
    "flat_precision_score",
    "flat_recall_score",
    "flat_f1_scorer",
    "get_spans",
    "make_sequence_scorer",
    "sequence_accuracy_score",
    "sequence_accuracy_scorer",
    "span_classification_report",
    "span_f1_score",
    "span_f1_scorer",
    "span_precision_recall_fscore_support",
    "span_precision_score",
    "span_recall_score",
]


# --------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------

def _is_sequence(obj):
    """A sequence of labels: sized and iterable, but not a string or a dict."""
    return (hasattr(obj, "__len__") and hasattr(obj, "__iter__")
            and not isinstance(obj, (str, bytes, dict)))


def _check_label_sequences(y_true, y_pred):
    """Flatten both sides after checking they pair up sequence by sequence.

    Returns
    -------
    flat_true, flat_pred : list
        All labels of all sequences, in order.
    lengths : ndarray of shape (n_sequences,)
        Number of labels of each sequence.
    """
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        if not _is_sequence(y) or getattr(y, "ndim", 1) == 0:
            raise TypeError(
                f"{name} must be a list of label sequences; got a {type(y).__name__}.")
    if len(y_true) != len(y_pred):
        raise ValueError(
            f"y_true has {len(y_true)} sequences but y_pred has {len(y_pred)}: they "
            f"must match one to one.")
    lengths = np.empty(len(y_true), dtype=np.int64)
    flat_true, flat_pred = [], []
    for q, (labels_true, labels_pred) in enumerate(zip(y_true, y_pred)):
        for name, labels in (("y_true", labels_true), ("y_pred", labels_pred)):
            if not _is_sequence(labels):
                # The common mistake is a flat list of labels for one sequence.
                raise TypeError(
                    f"Sequence {q} of {name} is a {type(labels).__name__}; expected a "
                    f"sequence of labels. A single sequence must be wrapped in a list.")
        if len(labels_true) != len(labels_pred):
            raise ValueError(
                f"Sequence {q} has {len(labels_true)} labels in y_true but "
                f"{len(labels_pred)} in y_pred.")
        lengths[q] = len(labels_true)
        flat_true.extend(_as_list(labels_true))
        flat_pred.extend(_as_list(labels_pred))
    return flat_true, flat_pred, lengths


def _as_list(labels):
    # tolist() turns numpy scalars into Python ones, much faster than iterating.
    return labels.tolist() if isinstance(labels, np.ndarray) else labels


def _token_weights(sample_weight, lengths):
    """Per-sequence weights repeated over the tokens of each sequence."""
    if sample_weight is None:
        return None
    return np.repeat(_check_sequence_weights(sample_weight, lengths), lengths)


def _check_sequence_weights(sample_weight, lengths):
    sample_weight = np.asarray(sample_weight, dtype=np.float64)
    if sample_weight.shape != lengths.shape:
        raise ValueError(
            f"sample_weight must hold one weight per sequence, shape "
            f"({lengths.shape[0]},); got shape {sample_weight.shape}.")
    return sample_weight


def _locate(lengths, token_index):
    """(sequence, position) of a token given its index over all tokens."""
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    q = int(np.searchsorted(offsets, token_index, side="right") - 1)
    return q, int(token_index - offsets[q])


# --------------------------------------------------------------------------
# Token level
# --------------------------------------------------------------------------

def flat_accuracy_score(y_true, y_pred, *, normalize=True, sample_weight=None):
    """Fraction of tokens labelled correctly, over all sequences.

    :func:`sklearn.metrics.accuracy_score` on the concatenated labels.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True label sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted label sequences, as returned by ``CRFClassifier.predict``.
    normalize : bool, default=True
        Return the fraction of correct tokens; if False, their number.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its tokens.

    Returns
    -------
    score : float
        Token accuracy (or weighted count of correct tokens).

    Examples
    --------
    >>> from skcrf.metrics import flat_accuracy_score
    >>> round(flat_accuracy_score([["B-PER", "I-PER"], ["O"]], [["B-PER", "O"], ["O"]]), 4)
    0.6667
    """
    flat_true, flat_pred, lengths = _check_label_sequences(y_true, y_pred)
    return float(_skm.accuracy_score(flat_true, flat_pred, normalize=normalize,
                                     sample_weight=_token_weights(sample_weight, lengths)))


def flat_precision_score(y_true, y_pred, *, labels=None, pos_label=1, average="binary",
                         sample_weight=None, zero_division="warn"):
    """Token-level precision: :func:`sklearn.metrics.precision_score` on all tokens.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True label sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted label sequences.
    labels : array-like, default=None
        Labels to include, e.g. every label but ``"O"``; see scikit-learn.
    pos_label : int, float, bool or str, default=1
        The positive class when ``average="binary"``.
    average : {"micro", "macro", "samples", "weighted", "binary"} or None, \
            default="binary"
        As in scikit-learn; sequence labelling usually has more than two labels,
        so pass ``"micro"``, ``"macro"`` or ``"weighted"``.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its tokens.
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        Value returned when a precision has no predicted token to divide by.

    Returns
    -------
    precision : float or ndarray of shape (n_labels,)
        Averaged precision, or one per label when ``average=None``.
    """
    flat_true, flat_pred, lengths = _check_label_sequences(y_true, y_pred)
    return _skm.precision_score(flat_true, flat_pred, labels=labels, pos_label=pos_label,
                                average=average,
                                sample_weight=_token_weights(sample_weight, lengths),
                                zero_division=zero_division)


def flat_recall_score(y_true, y_pred, *, labels=None, pos_label=1, average="binary",
                      sample_weight=None, zero_division="warn"):
    """Token-level recall: :func:`sklearn.metrics.recall_score` on all tokens.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True label sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted label sequences.
    labels : array-like, default=None
        Labels to include; see scikit-learn.
    pos_label : int, float, bool or str, default=1
        The positive class when ``average="binary"``.
    average : {"micro", "macro", "samples", "weighted", "binary"} or None, \
            default="binary"
        As in scikit-learn.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its tokens.
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        Value returned when a recall has no true token to divide by.

    Returns
    -------
    recall : float or ndarray of shape (n_labels,)
        Averaged recall, or one per label when ``average=None``.
    """
    flat_true, flat_pred, lengths = _check_label_sequences(y_true, y_pred)
    return _skm.recall_score(flat_true, flat_pred, labels=labels, pos_label=pos_label,
                             average=average,
                             sample_weight=_token_weights(sample_weight, lengths),
                             zero_division=zero_division)


def flat_fbeta_score(y_true, y_pred, *, beta, labels=None, pos_label=1, average="binary",
                     sample_weight=None, zero_division="warn"):
    """Token-level F-beta: :func:`sklearn.metrics.fbeta_score` on all tokens.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True label sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted label sequences.
    beta : float
        Weight of recall relative to precision.
    labels : array-like, default=None
        Labels to include; see scikit-learn.
    pos_label : int, float, bool or str, default=1
        The positive class when ``average="binary"``.
    average : {"micro", "macro", "samples", "weighted", "binary"} or None, \
            default="binary"
        As in scikit-learn.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its tokens.
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        Value returned when the score is undefined.

    Returns
    -------
    fbeta : float or ndarray of shape (n_labels,)
        Averaged F-beta, or one per label when ``average=None``.
    """
    flat_true, flat_pred, lengths = _check_label_sequences(y_true, y_pred)
    return _skm.fbeta_score(flat_true, flat_pred, beta=beta, labels=labels,
                            pos_label=pos_label, average=average,
                            sample_weight=_token_weights(sample_weight, lengths),
                            zero_division=zero_division)


def flat_f1_score(y_true, y_pred, *, labels=None, pos_label=1, average="binary",
                  sample_weight=None, zero_division="warn"):
    """Token-level F1: :func:`sklearn.metrics.f1_score` on all tokens.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True label sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted label sequences.
    labels : array-like, default=None
        Labels to include, e.g. every label but ``"O"``; see scikit-learn.
    pos_label : int, float, bool or str, default=1
        The positive class when ``average="binary"``.
    average : {"micro", "macro", "samples", "weighted", "binary"} or None, \
            default="binary"
        As in scikit-learn.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its tokens.
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        Value returned when the score is undefined.

    Returns
    -------
    f1 : float or ndarray of shape (n_labels,)
        Averaged F1, or one per label when ``average=None``.

    Examples
    --------
    >>> from skcrf.metrics import flat_f1_score
    >>> y_true = [["DET", "N"], ["DET", "N", "V"]]
    >>> y_pred = [["DET", "N"], ["DET", "V", "V"]]
    >>> round(flat_f1_score(y_true, y_pred, average="macro"), 4)
    0.7778
    """
    flat_true, flat_pred, lengths = _check_label_sequences(y_true, y_pred)
    return _skm.f1_score(flat_true, flat_pred, labels=labels, pos_label=pos_label,
                         average=average, sample_weight=_token_weights(sample_weight, lengths),
                         zero_division=zero_division)


def flat_classification_report(y_true, y_pred, *, labels=None, target_names=None,
                               sample_weight=None, digits=2, output_dict=False,
                               zero_division="warn"):
    """Per-label token-level report: :func:`sklearn.metrics.classification_report`.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True label sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted label sequences.
    labels : array-like of shape (n_labels,), default=None
        Labels to report.
    target_names : list of str of shape (n_labels,), default=None
        Display names of ``labels``.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its tokens.
    digits : int, default=2
        Digits of the formatted floats (ignored with ``output_dict=True``).
    output_dict : bool, default=False
        Return a dict instead of text.
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        Value used when a score is undefined.

    Returns
    -------
    report : str or dict
        As :func:`sklearn.metrics.classification_report`.
    """
    flat_true, flat_pred, lengths = _check_label_sequences(y_true, y_pred)
    return _skm.classification_report(
        flat_true, flat_pred, labels=labels, target_names=target_names,
        sample_weight=_token_weights(sample_weight, lengths), digits=digits,
        output_dict=output_dict, zero_division=zero_division)


# --------------------------------------------------------------------------
# Sequence level
# --------------------------------------------------------------------------

def sequence_accuracy_score(y_true, y_pred, *, normalize=True, sample_weight=None):
    """Fraction of sequences whose every label is right.

    An empty sequence (no tokens) is trivially right.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True label sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted label sequences.
    normalize : bool, default=True
        Return the fraction of correct sequences; if False, their number.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence.

    Returns
    -------
    score : float
        Sequence accuracy (or weighted count of correct sequences).

    Examples
    --------
    >>> from skcrf.metrics import sequence_accuracy_score
    >>> sequence_accuracy_score([["B-PER", "I-PER"], ["O"]], [["B-PER", "O"], ["O"]])
    0.5
    """
    flat_true, flat_pred, lengths = _check_label_sequences(y_true, y_pred)
    # Object arrays compare with Python's ==, so "a" == np.str_("a") and a str
    # never equals an int, whatever mix of containers came in.
    token_right = (np.asarray(flat_true, dtype=object)
                   == np.asarray(flat_pred, dtype=object)).astype(bool)
    sequence_of_token = np.repeat(np.arange(lengths.shape[0]), lengths)
    n_wrong = np.bincount(sequence_of_token[~token_right],
                          minlength=lengths.shape[0])
    sequence_right = n_wrong == 0
    if sample_weight is not None:
        sample_weight = _check_sequence_weights(sample_weight, lengths)
    return float(_skm.accuracy_score(np.ones_like(sequence_right), sequence_right,
                                     normalize=normalize, sample_weight=sample_weight))


# --------------------------------------------------------------------------
# Span level: decoding tags into spans, conlleval's way
# --------------------------------------------------------------------------

Span = namedtuple("Span", ["sequence", "type", "start", "stop"])
Span.__doc__ = """A labelled span: tokens ``start:stop`` of sequence ``sequence``.

``stop`` is exclusive, as in Python slices (conlleval and seqeval print
inclusive ends).
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
_SCHEMES = (*_SCHEME_PREFIXES, "plain")

_OUTSIDE = "O"


def _check_scheme(scheme):
    if scheme not in _SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(map(repr, _SCHEMES))}; "
                         f"got {scheme!r}.")


def _parse_tag(tag, scheme, types):
    """(prefix code, type id) of one distinct tag; None if the scheme lacks its prefix.

    A tag splits at its first hyphen into prefix and type, as conlleval does
    (``B-PER-X`` has type ``PER-X``); a bare prefix such as ``B`` has the empty
    type, as in conlleval's untyped chunking. With ``scheme="plain"`` the whole
    label is the type.
    """
    if not isinstance(tag, str):
        raise TypeError(
            f"Span metrics need string tags; got {tag!r} of type {type(tag).__name__}.")
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


def _encode_tags(flat, lengths, scheme):
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
        raise ValueError(
            f"Tag {flat[first]!r} (sequence {q}, token {position}) is not a {scheme} tag: "
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


def get_spans(y, *, scheme="IOB2"):
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
    >>> from skcrf.metrics import get_spans
    >>> get_spans([["B-PER", "I-PER", "O", "I-LOC"]])
    [Span(sequence=0, type='PER', start=0, stop=2), Span(sequence=0, type='LOC', start=3, stop=4)]
    >>> get_spans([["S-PER", "B-LOC", "E-LOC"]], scheme="BIOES")
    [Span(sequence=0, type='PER', start=0, stop=1), Span(sequence=0, type='LOC', start=1, stop=3)]
    """
    _check_scheme(scheme)
    flat, _, lengths = _check_label_sequences(y, y)
    sequences, starts, stops, types = _spans(flat, lengths, scheme)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return [Span(int(q), str(t), int(start - offsets[q]), int(stop - offsets[q]))
            for q, t, start, stop in zip(sequences, types, starts, stops)]


def _spans(flat, lengths, scheme):
    """Sequence index, start, stop (over all tokens) and type name of each span."""
    prefix, type_id, type_names = _encode_tags(flat, lengths, scheme)
    starts, stops, span_types = _decode_spans(prefix, type_id, lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    sequences = np.searchsorted(offsets, starts, side="right") - 1
    return sequences, starts, stops, type_names[span_types]


# --------------------------------------------------------------------------
# Span level: scores
# --------------------------------------------------------------------------

def _span_targets(y_true, y_pred, scheme, labels, sample_weight):
    """Recast span matching as a multiclass problem scikit-learn can score.

    Every span found in ``y_true`` or ``y_pred`` becomes one item whose true
    class is its type if the span is in ``y_true`` (else -1, "no span") and
    whose predicted class is its type if it is in ``y_pred`` (else -1). A span
    is identified by (sequence, start, stop, type), so per type the
    true positives are the spans found on both sides, exactly conlleval's
    ``correctChunk``, and scikit-learn's averaging, ``zero_division`` and
    weights apply unchanged.

    Returns
    -------
    item_true, item_pred : ndarray of int
        Type ids (or -1) of every item.
    type_ids : ndarray of int
        Ids of the types to score, for ``labels=``.
    type_names : list of str
        Their names.
    item_weight : ndarray of float or None
        Weight of each item: that of its sequence.
    """
    _check_scheme(scheme)
    flat_true, flat_pred, lengths = _check_label_sequences(y_true, y_pred)
    if sample_weight is not None:
        sample_weight = _check_sequence_weights(sample_weight, lengths)
    found_true = _spans(flat_true, lengths, scheme)
    found_pred = _spans(flat_pred, lengths, scheme)

    all_types = sorted(set(found_true[3]) | set(found_pred[3]))
    if labels is None:
        type_names = all_types
    else:
        type_names = [str(label) for label in labels]
    # Types outside `labels` still need an id: scikit-learn's labels= leaves
    # them out of the scores.
    type_index = {name: k for k, name in enumerate(dict.fromkeys(type_names + all_types))}

    keys = [_span_keys(found, type_index) for found in (found_true, found_pred)]
    items, item_of_span = np.unique(np.concatenate(keys), axis=0, return_inverse=True)
    item_of_span = item_of_span.ravel()
    item_true = np.full(items.shape[0], -1, dtype=np.int64)
    item_pred = np.full(items.shape[0], -1, dtype=np.int64)
    item_true[item_of_span[:len(keys[0])]] = keys[0][:, 2]
    item_pred[item_of_span[len(keys[0]):]] = keys[1][:, 2]
    item_weight = None
    if sample_weight is not None:
        item_weight = sample_weight[np.searchsorted(np.cumsum(lengths), items[:, 0],
                                                    side="right")]
    if items.shape[0] == 0:
        # scikit-learn refuses empty input; one "no span on either side" item
        # changes no count, since -1 is never among the labels scored.
        item_true = item_pred = np.array([-1])
        item_weight = None
    type_ids = np.array([type_index[name] for name in type_names], dtype=np.int64)
    return item_true, item_pred, type_ids, type_names, item_weight


def _span_keys(found, type_index):
    """(start, stop, type id) rows identifying spans.

    ``start`` counts tokens over all sequences, so it also tells the sequence.
    """
    _, starts, stops, types = found
    type_ids = np.fromiter(map(type_index.__getitem__, types), dtype=np.int64,
                           count=len(types))
    return np.column_stack([starts, stops, type_ids]).astype(np.int64).reshape(-1, 3)


_SPAN_AVERAGES = ("micro", "macro", "weighted", None)


def _check_average(average):
    if average not in _SPAN_AVERAGES:
        raise ValueError(f"average must be one of 'micro', 'macro', 'weighted' or None; "
                         f"got {average!r}.")


def span_precision_recall_fscore_support(y_true, y_pred, *, beta=1.0, labels=None,
                                         average=None, scheme="IOB2", sample_weight=None,
                                         zero_division="warn"):
    """Span precision, recall, F-beta and support, per type or averaged.

    A predicted span is correct when a true span has the same type, start and
    end: the CoNLL ``conlleval`` convention. ``average="micro"`` gives
    conlleval's overall precision, recall and FB1 (as fractions, not percent);
    ``average=None`` its per-type lines.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True tag sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted tag sequences.
    beta : float, default=1.0
        Weight of recall relative to precision.
    labels : array-like of str, default=None
        Span types to score, in this order. By default every type found in
        ``y_true`` or ``y_pred``, sorted (conlleval's list).
    average : {"micro", "macro", "weighted"} or None, default=None
        None returns one value per type; "micro" pools the counts of all types;
        "macro" is the unweighted mean over types; "weighted" the mean weighted
        by the number of true spans.
    scheme : {"IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain"}, \
            default="IOB2"
        Tagging scheme, see :func:`get_spans`.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its spans.
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        Value of a precision with no predicted span, of a recall with no true
        span, and of an F-score with neither. conlleval prints 0; "warn" also
        gives 0 but warns.

    Returns
    -------
    precision : float or ndarray of shape (n_types,)
    recall : float or ndarray of shape (n_types,)
    fbeta : float or ndarray of shape (n_types,)
    support : None or ndarray of shape (n_types,)
        Number of true spans per type (None when averaged, as in scikit-learn).

    See Also
    --------
    get_spans : How tags are decoded into spans.
    span_classification_report : The same numbers as a table.

    Notes
    -----
    seqeval's default mode decodes IOB and IOE tags as conlleval does, but it
    reads the prefix as the first character of the tag (``BX-PER`` is a ``B-``),
    names the empty type ``_``, fails on or mis-reads sequences given as arrays
    or tuples rather than lists, and does not know BILOU's L and U. Its strict mode
    (``mode="strict"``) departs from conlleval: it drops an ``I-`` span that has
    no ``B-`` (conlleval counts it) and drops the ``I-LOC`` in
    ``B-PER I-LOC`` (conlleval: two spans). The original ``conlleval`` knows no
    ``S-``; for BIOES this module follows the common extension of conlleval
    (seqeval's default mode), in which ``E-`` and ``S-`` always close a span,
    whereas conlleval itself would merge ``E-X B-X``.

    Examples
    --------
    >>> from skcrf.metrics import span_precision_recall_fscore_support
    >>> y_true = [["B-PER", "I-PER", "O", "B-LOC"]]
    >>> y_pred = [["B-PER", "I-PER", "O", "B-ORG"]]
    >>> p, r, f, support = span_precision_recall_fscore_support(y_true, y_pred, zero_division=0)
    >>> p.tolist(), r.tolist(), support.tolist()  # types LOC, ORG, PER
    ([0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1, 0, 1])
    >>> span_precision_recall_fscore_support(y_true, y_pred, average="micro")
    (0.5, 0.5, 0.5, None)
    """
    _check_average(average)
    item_true, item_pred, type_ids, _, item_weight = _span_targets(
        y_true, y_pred, scheme, labels, sample_weight)
    precision, recall, fbeta, support = _skm.precision_recall_fscore_support(
        item_true, item_pred, beta=beta, labels=type_ids, average=average,
        sample_weight=item_weight, zero_division=zero_division)
    if average is not None:
        return float(precision), float(recall), float(fbeta), None
    return precision, recall, fbeta, support


def _span_score(y_true, y_pred, which, *, labels, average, scheme, sample_weight,
                zero_division):
    """One of precision (0), recall (1) or F1 (2), warning only about that one."""
    _check_average(average)
    item_true, item_pred, type_ids, _, item_weight = _span_targets(
        y_true, y_pred, scheme, labels, sample_weight)
    warn_for = (("precision",), ("recall",), ("f-score",))[which]
    score = _skm.precision_recall_fscore_support(
        item_true, item_pred, labels=type_ids, average=average, sample_weight=item_weight,
        warn_for=warn_for, zero_division=zero_division)[which]
    return float(score) if average is not None else score


def span_precision_score(y_true, y_pred, *, labels=None, average="micro", scheme="IOB2",
                         sample_weight=None, zero_division="warn"):
    """Fraction of predicted spans that are right (type, start and end).

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True tag sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted tag sequences.
    labels : array-like of str, default=None
        Span types to score; by default all types found on either side.
    average : {"micro", "macro", "weighted"} or None, default="micro"
        "micro" is conlleval's overall precision; None gives one per type.
    scheme : {"IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain"}, \
            default="IOB2"
        Tagging scheme, see :func:`get_spans`.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its spans.
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        Value when no span is predicted (conlleval prints 0).

    Returns
    -------
    precision : float or ndarray of shape (n_types,)

    Examples
    --------
    >>> from skcrf.metrics import span_precision_score
    >>> span_precision_score([["B-PER", "I-PER", "O"]], [["B-PER", "O", "B-PER"]])
    0.0
    """
    return _span_score(y_true, y_pred, 0, labels=labels, average=average,
                       scheme=scheme, sample_weight=sample_weight,
                       zero_division=zero_division)


def span_recall_score(y_true, y_pred, *, labels=None, average="micro", scheme="IOB2",
                      sample_weight=None, zero_division="warn"):
    """Fraction of true spans that are predicted exactly (type, start and end).

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True tag sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted tag sequences.
    labels : array-like of str, default=None
        Span types to score; by default all types found on either side.
    average : {"micro", "macro", "weighted"} or None, default="micro"
        "micro" is conlleval's overall recall; None gives one per type.
    scheme : {"IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain"}, \
            default="IOB2"
        Tagging scheme, see :func:`get_spans`.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its spans.
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        Value when there is no true span (conlleval prints 0).

    Returns
    -------
    recall : float or ndarray of shape (n_types,)

    Examples
    --------
    >>> from skcrf.metrics import span_recall_score
    >>> span_recall_score([["B-PER", "O", "B-LOC"]], [["B-PER", "O", "O"]])
    0.5
    """
    return _span_score(y_true, y_pred, 1, labels=labels, average=average,
                       scheme=scheme, sample_weight=sample_weight,
                       zero_division=zero_division)


def span_f1_score(y_true, y_pred, *, labels=None, average="micro", scheme="IOB2",
                  sample_weight=None, zero_division="warn"):
    """F1 of span precision and recall; the default is the CoNLL score.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True tag sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted tag sequences.
    labels : array-like of str, default=None
        Span types to score; by default all types found on either side.
    average : {"micro", "macro", "weighted"} or None, default="micro"
        "micro" is conlleval's overall FB1 (as a fraction); None gives one per
        type.
    scheme : {"IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain"}, \
            default="IOB2"
        Tagging scheme, see :func:`get_spans`.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its spans.
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        Value when there is neither a true nor a predicted span (conlleval
        prints 0).

    Returns
    -------
    f1 : float or ndarray of shape (n_types,)

    Examples
    --------
    >>> from skcrf.metrics import span_f1_score
    >>> y_true = [["B-PER", "I-PER", "O"], ["B-LOC", "O"]]
    >>> y_pred = [["B-PER", "I-PER", "O"], ["B-ORG", "O"]]
    >>> span_f1_score(y_true, y_pred)
    0.5
    """
    return _span_score(y_true, y_pred, 2, labels=labels, average=average,
                       scheme=scheme, sample_weight=sample_weight,
                       zero_division=zero_division)


def span_classification_report(y_true, y_pred, *, labels=None, scheme="IOB2",
                               sample_weight=None, digits=2, output_dict=False,
                               zero_division="warn"):
    """Per-type span precision, recall, F1 and support, as a table.

    The "micro avg" row is conlleval's overall line; the per-type rows its
    per-type lines (as fractions, with the true count as support where
    conlleval shows the predicted count).

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True tag sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted tag sequences.
    labels : array-like of str, default=None
        Span types to report, in this order; by default all types found on
        either side, sorted.
    scheme : {"IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain"}, \
            default="IOB2"
        Tagging scheme, see :func:`get_spans`.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its spans.
    digits : int, default=2
        Digits of the formatted floats (ignored with ``output_dict=True``).
    output_dict : bool, default=False
        Return a dict ``{type: {"precision": ..., "recall": ..., "f1-score": ...,
        "support": ...}, "micro avg": ..., "macro avg": ..., "weighted avg":
        ...}`` instead of text.
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        Value used when a score is undefined.

    Returns
    -------
    report : str or dict
        As :func:`sklearn.metrics.classification_report`, one row per span type.

    Examples
    --------
    >>> from skcrf.metrics import span_classification_report
    >>> y_true = [["B-PER", "I-PER", "O"], ["B-LOC", "O"]]
    >>> y_pred = [["B-PER", "I-PER", "O"], ["B-LOC", "B-LOC"]]
    >>> print(span_classification_report(y_true, y_pred))
                  precision    recall  f1-score   support
    <BLANKLINE>
             LOC       0.50      1.00      0.67         1
             PER       1.00      1.00      1.00         1
    <BLANKLINE>
       micro avg       0.67      1.00      0.80         2
       macro avg       0.75      1.00      0.83         2
    weighted avg       0.75      1.00      0.83         2
    <BLANKLINE>
    """
    item_true, item_pred, type_ids, type_names, item_weight = _span_targets(
        y_true, y_pred, scheme, labels, sample_weight)
    if not type_names:
        raise ValueError("There is no span in y_true or y_pred and no labels were given: "
                         "nothing to report.")
    # One "no span" item on both sides scores nothing, but makes scikit-learn
    # print the micro average even when every span is right: otherwise it
    # shows an "accuracy" row instead, and output_dict would lack "micro avg".
    item_true, item_pred = np.append(item_true, -1), np.append(item_pred, -1)
    if item_weight is not None:
        item_weight = np.append(item_weight, 0.0)
    return _skm.classification_report(
        item_true, item_pred, labels=type_ids, target_names=type_names,
        sample_weight=item_weight, digits=digits, output_dict=output_dict,
        zero_division=zero_division)


# --------------------------------------------------------------------------
# Scorers
# --------------------------------------------------------------------------

def make_sequence_scorer(score_func, *, greater_is_better=True, **kwargs):
    """Make a scorer for ``GridSearchCV`` or ``cross_validate`` from a sequence metric.

    The scorer calls ``estimator.predict(X)`` and passes the predicted label
    sequences to ``score_func(y, y_pred, **kwargs)``. It works with ragged
    ``y``, which scikit-learn's string scorers (``"f1_macro"``, ...) do not, and
    it pickles, so ``n_jobs`` works.

    Parameters
    ----------
    score_func : callable
        A metric of this module, or any ``score_func(y_true, y_pred, **kwargs)``
        that accepts lists of label sequences.
    greater_is_better : bool, default=True
        False for a loss; the scorer then returns its negation, as scikit-learn
        maximizes scores.
    **kwargs
        Passed on to ``score_func``, e.g. ``scheme="BIOES"`` or
        ``average="macro"``.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y)``, a scikit-learn scorer object.

    Examples
    --------
    >>> from skcrf.metrics import make_sequence_scorer, span_f1_score
    >>> bioes_f1 = make_sequence_scorer(span_f1_score, scheme="BIOES")
    >>> bioes_f1
    make_scorer(span_f1_score, response_method='predict', scheme=BIOES)
    """
    if not callable(score_func):
        raise TypeError(f"score_func must be callable; got {type(score_func).__name__}.")
    return _skm.make_scorer(score_func, response_method="predict",
                            greater_is_better=greater_is_better, **kwargs)


#: Scorer of :func:`span_f1_score` with its defaults: micro-averaged span F1,
#: IOB2 tags (the CoNLL score). For another scheme use
#: ``make_sequence_scorer(span_f1_score, scheme=...)``.
span_f1_scorer = make_sequence_scorer(span_f1_score)

#: Scorer of :func:`flat_f1_score` with ``average="macro"``: each label,
#: frequent or rare, counts the same (micro-averaged token F1 is plain token
#: accuracy).
flat_f1_scorer = make_sequence_scorer(flat_f1_score, average="macro")

#: Scorer of :func:`sequence_accuracy_score`.
sequence_accuracy_scorer = make_sequence_scorer(sequence_accuracy_score)
