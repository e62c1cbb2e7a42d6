"""Span-level (CoNLL ``conlleval``) metrics: precision, recall, F-score, report.

The spans are decoded by :mod:`skcrf.tags`; this module counts them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray
from sklearn import metrics as _skm

from .._utils.docstrings import fill_sections
from .._utils.type_aliases import LabelSequences, SequenceWeights, ZeroDivision
from ..tags import _spans, check_scheme
from ._checks import _check_label_sequences, _check_sequence_weights


#: The parameters every span metric documents alike (``<<name>>`` lines of their docstrings)
_DOC_SECTIONS = {
    "tag_sequences": """\
    y_true : list of array-like of shape (n_tokens_i,)
        True tag sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted tag sequences.
""",
    "scheme_and_weight": """\
    scheme : {"IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain"}, \
            default="IOB2"
        Tagging scheme, see :func:`get_spans`.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its spans.
""",
}
_shared_docs = fill_sections(_DOC_SECTIONS)


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
    check_scheme(scheme)
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


def _average_of(average, type_ids):
    """The average to ask scikit-learn for.

    With no span type at all there is nothing to average over: every average
    is undefined, as the micro average already is. scikit-learn's mean over no
    type is NaN whatever ``zero_division`` says, so ask for the micro average,
    which applies ``zero_division`` (and its warning) to that case.
    """
    if average in ("macro", "weighted") and type_ids.shape[0] == 0:
        return "micro"
    return average


@_shared_docs
def span_precision_recall_fscore_support(
        y_true: LabelSequences, y_pred: LabelSequences, *, beta: float = 1.0,
        labels: Sequence[str] | None = None,
        average: Literal["micro", "macro", "weighted"] | None = None, scheme: str = "IOB2",
        sample_weight: SequenceWeights = None, zero_division: ZeroDivision = "warn",
) -> tuple[float | NDArray[Any], float | NDArray[Any], float | NDArray[Any],
           NDArray[Any] | None]:
    """Span precision, recall, F-beta and support, per type or averaged.

    A predicted span is correct when a true span has the same type, start and
    end: the CoNLL ``conlleval`` convention. ``average="micro"`` gives
    conlleval's overall precision, recall and FB1 (as fractions, not percent);
    ``average=None`` its per-type lines.

    Parameters
    ----------
    <<tag_sequences>>
    beta : float, default=1.0
        Weight of recall relative to precision.
    labels : array-like of str, default=None
        Span types to score, in this order. By default every type found in
        ``y_true`` or ``y_pred``, sorted (conlleval's list).
    average : {"micro", "macro", "weighted"} or None, default=None
        None returns one value per type; "micro" pools the counts of all types;
        "macro" is the unweighted mean over types; "weighted" the mean weighted
        by the number of true spans.
    <<scheme_and_weight>>
    zero_division : {"warn", 0.0, 1.0, np.nan}, default="warn"
        Value of a precision with no predicted span, of a recall with no true
        span, and of an F-score with neither. conlleval prints 0; "warn" also
        gives 0 but warns. With no span type at all (no span on either side
        and no ``labels``), every average, "macro" and "weighted" included, is
        this value rather than the NaN of a mean over nothing.

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
        item_true, item_pred, beta=beta, labels=type_ids,
        average=_average_of(average, type_ids),
        sample_weight=item_weight, zero_division=zero_division)
    if average is not None:
        return float(precision), float(recall), float(fbeta), None
    return precision, recall, fbeta, support


class _SpanScore(Protocol):
    """The signature of span_precision_score, span_recall_score and span_f1_score."""

    def __call__(self, y_true: LabelSequences, y_pred: LabelSequences, *,
                 labels: Sequence[str] | None = None,
                 average: Literal["micro", "macro", "weighted"] | None = "micro",
                 scheme: str = "IOB2", sample_weight: SequenceWeights = None,
                 zero_division: ZeroDivision = "warn") -> float | NDArray[Any]: ...


_SPAN_SCORE_DOC = """{summary}

    Parameters
    ----------
    <<tag_sequences>>
    labels : array-like of str, default=None
        Span types to score; by default all types found on either side.
    average : {{"micro", "macro", "weighted"}} or None, default="micro"
        "micro" is conlleval's overall {conlleval}; None gives one per type.
    <<scheme_and_weight>>
    zero_division : {{"warn", 0.0, 1.0, np.nan}}, default="warn"
        Value when {undefined} (conlleval prints 0), for every average.

    Returns
    -------
    {name} : float or ndarray of shape (n_types,)

    Examples
    --------
    >>> from skcrf.metrics import span_{name}_score
    {example}
    """


def _span_score_function(which, name, *, summary, conlleval, undefined, example):
    """One of span_precision_score (0), span_recall_score (1), span_f1_score (2).

    The three differ only in which score of scikit-learn's
    precision_recall_fscore_support they return, and warn about.
    """
    warn_for = (("precision",), ("recall",), ("f-score",))[which]

    def span_score(y_true, y_pred, *, labels=None, average="micro", scheme="IOB2",
                   sample_weight=None, zero_division="warn"):
        _check_average(average)
        item_true, item_pred, type_ids, _, item_weight = _span_targets(
            y_true, y_pred, scheme, labels, sample_weight)
        score = _skm.precision_recall_fscore_support(
            item_true, item_pred, labels=type_ids, average=_average_of(average, type_ids),
            sample_weight=item_weight, warn_for=warn_for, zero_division=zero_division)[which]
        return float(score) if average is not None else score

    span_score.__name__ = span_score.__qualname__ = f"span_{name}_score"
    span_score.__annotations__ = dict(_SpanScore.__call__.__annotations__)
    span_score.__doc__ = _SPAN_SCORE_DOC.format(
        summary=summary, conlleval=conlleval, undefined=undefined, name=name,
        example=example.strip().replace("\n", "\n    "))
    return _shared_docs(span_score)


span_precision_score: _SpanScore = _span_score_function(
    0, "precision", summary="Fraction of predicted spans that are right (type, start and end).",
    conlleval="precision", undefined="no span is predicted", example="""
>>> span_precision_score([["B-PER", "I-PER", "O"]], [["B-PER", "O", "B-PER"]])
0.0
""")

span_recall_score: _SpanScore = _span_score_function(
    1, "recall",
    summary="Fraction of true spans that are predicted exactly (type, start and end).",
    conlleval="recall", undefined="there is no true span", example="""
>>> span_recall_score([["B-PER", "O", "B-LOC"]], [["B-PER", "O", "O"]])
0.5
""")

span_f1_score: _SpanScore = _span_score_function(
    2, "f1", summary="F1 of span precision and recall; the default is the CoNLL score.",
    conlleval="FB1 (as a fraction)", undefined="there is neither a true nor a predicted span",
    example="""
>>> y_true = [["B-PER", "I-PER", "O"], ["B-LOC", "O"]]
>>> y_pred = [["B-PER", "I-PER", "O"], ["B-ORG", "O"]]
>>> span_f1_score(y_true, y_pred)
0.5
""")


@_shared_docs
def span_classification_report(y_true: LabelSequences, y_pred: LabelSequences, *,
                               labels: Sequence[str] | None = None, scheme: str = "IOB2",
                               sample_weight: SequenceWeights = None, digits: int = 2,
                               output_dict: bool = False,
                               zero_division: ZeroDivision = "warn") -> str | dict:
    """Per-type span precision, recall, F1 and support, as a table.

    The "micro avg" row is conlleval's overall line; the per-type rows its
    per-type lines (as fractions, with the true count as support where
    conlleval shows the predicted count).

    Parameters
    ----------
    <<tag_sequences>>
    labels : array-like of str, default=None
        Span types to report, in this order; by default all types found on
        either side, sorted.
    <<scheme_and_weight>>
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
