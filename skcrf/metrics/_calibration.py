"""Calibration of a model's confidences: reliability curves and expected calibration error.

A model is calibrated when, among the predictions it gives confidence about
``p``, a fraction ``p`` is right. Two kinds of prediction are scored here:

- tokens: the most probable label of each token (its marginal, from
  ``predict_marginals``), right when it is the gold label;
- spans: each predicted span with its probability (``predict_spans(X,
  return_proba=True)``), right when the gold tags hold the same span (same
  start, stop and label), as the span metrics count it.

:func:`token_confidences` and :func:`span_confidences` turn predictions into
``(correct, confidence)`` pairs; :func:`reliability_curve` and
:func:`expected_calibration_error` score any such pairs.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any
from numbers import Integral

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..tags import SCHEMES, get_spans
from .._utils.type_aliases import LabelSequences
from ._checks import _check_label_sequences

__all__ = ["ReliabilityCurve", "expected_calibration_error", "reliability_curve",
           "span_confidences", "token_confidences"]

ReliabilityCurve = namedtuple("ReliabilityCurve", ["confidence", "accuracy", "count"])
ReliabilityCurve.__doc__ = """Per confidence bin that holds predictions: their mean
confidence, the fraction of them that is right, and how many there are."""


def _check_pairs(correct, confidence):
    correct = np.asarray(correct)
    confidence = np.asarray(confidence, dtype=np.float64)
    if correct.ndim != 1 or correct.shape != confidence.shape:
        raise ValueError(f"correct and confidence must be 1-D arrays of one length; got "
                         f"shapes {correct.shape} and {confidence.shape}.")
    if not np.isin(correct, (0, 1)).all():
        raise ValueError("correct must hold booleans (or 0 and 1).")
    bad = np.flatnonzero(~((confidence >= 0) & (confidence <= 1)))
    if bad.size:
        raise ValueError(f"confidence[{bad[0]}] is {float(confidence[bad[0]])!r}: confidences are "
                         f"probabilities, in [0, 1].")
    return correct.astype(bool), confidence


def _bins(confidence, n_bins):
    if isinstance(n_bins, bool) or not isinstance(n_bins, Integral) or n_bins < 1:
        raise ValueError(f"n_bins must be an integer >= 1; got {n_bins!r}.")
    # equal-width bins over [0, 1], the last one closed (confidence 1 goes in it)
    return np.minimum((confidence * n_bins).astype(np.int64), n_bins - 1)


def reliability_curve(correct: ArrayLike, confidence: ArrayLike, *,
                      n_bins: int = 10) -> ReliabilityCurve:
    """Accuracy against confidence, in equal-width confidence bins.

    Parameters
    ----------
    correct : array-like of bool of shape (n_predictions,)
        Whether each prediction is right.
    confidence : array-like of float of shape (n_predictions,)
        The probability the model gives each prediction, in [0, 1].
    n_bins : int, default=10
        Bins of width ``1 / n_bins`` over [0, 1]; empty ones are left out.

    Returns
    -------
    curve : ReliabilityCurve
        Arrays ``confidence`` (mean confidence per bin), ``accuracy``
        (fraction right) and ``count``, one item per non-empty bin, in
        increasing confidence. A calibrated model has accuracy close to
        confidence in every bin.

    Examples
    --------
    >>> from skcrf.metrics import reliability_curve
    >>> curve = reliability_curve([True, False, True, True], [0.9, 0.2, 0.8, 0.95], n_bins=2)
    >>> curve.count.tolist(), curve.accuracy.tolist()
    ([1, 3], [0.0, 1.0])
    """
    correct, confidence = _check_pairs(correct, confidence)
    bins = _bins(confidence, n_bins)
    count = np.bincount(bins, minlength=n_bins)
    kept = count > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(bins, weights=confidence, minlength=n_bins) / count
        accuracy = np.bincount(bins, weights=correct, minlength=n_bins) / count
    return ReliabilityCurve(mean[kept], accuracy[kept], count[kept])


def expected_calibration_error(correct: ArrayLike, confidence: ArrayLike, *,
                               n_bins: int = 10) -> float:
    """Expected calibration error: the mean gap between confidence and accuracy.

    ``sum_b (n_b / n) * |accuracy_b - confidence_b|`` over the equal-width
    bins ``b`` of :func:`reliability_curve` (Naeini et al., 2015; Guo et
    al., 2017). 0 for a calibrated model; it depends on ``n_bins``, so
    compare values of one ``n_bins``.

    Parameters
    ----------
    correct : array-like of bool of shape (n_predictions,)
    confidence : array-like of float of shape (n_predictions,)
    n_bins : int, default=10

    Returns
    -------
    ece : float
        NaN when there are no predictions.

    Examples
    --------
    >>> from skcrf.metrics import expected_calibration_error
    >>> round(expected_calibration_error([True, False], [0.9, 0.3], n_bins=10), 3)
    0.2
    """
    curve = reliability_curve(correct, confidence, n_bins=n_bins)
    total = curve.count.sum()
    if total == 0:
        return float("nan")
    return float(np.sum(curve.count * np.abs(curve.accuracy - curve.confidence)) / total)


def token_confidences(y_true: LabelSequences, marginals: Sequence[ArrayLike],
                      classes: ArrayLike) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """``(correct, confidence)`` of each token's most probable label.

    Parameters
    ----------
    y_true : list of sequences of labels
    marginals : list of ndarray of shape (n_tokens_i, n_classes)
        As ``predict_marginals`` (or ``predict_proba``) returns them.
    classes : array-like of shape (n_classes,)
        The model's ``classes_``: the labels of the columns.

    Returns
    -------
    correct : ndarray of bool of shape (n_tokens,)
    confidence : ndarray of float of shape (n_tokens,)
    """
    classes = np.asarray(classes)
    if len(y_true) != len(marginals):
        raise ValueError(f"y_true has {len(y_true)} sequences but marginals has "
                         f"{len(marginals)}.")
    correct, confidence = [], []
    for q, (labels, proba) in enumerate(zip(y_true, marginals)):
        proba = np.asarray(proba, dtype=np.float64)
        if proba.ndim != 2 or proba.shape != (len(labels), classes.shape[0]):
            raise ValueError(
                f"marginals[{q}] has shape {proba.shape}; sequence {q} has {len(labels)} "
                f"labels and there are {classes.shape[0]} classes.")
        best = np.argmax(proba, axis=1) if len(labels) else np.zeros(0, dtype=np.int64)
        correct.append(classes[best] == np.asarray(labels, dtype=classes.dtype))
        confidence.append(proba[np.arange(len(labels)), best])
    if not correct:
        return np.zeros(0, dtype=bool), np.zeros(0)
    return np.concatenate(correct).astype(bool), np.concatenate(confidence)


def span_confidences(y_true: LabelSequences, spans: Sequence[Sequence[tuple[Any, ...]]], *,
                     scheme: str = "IOB2") -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """``(correct, confidence)`` of each predicted span.

    Parameters
    ----------
    y_true : list of sequences of labels
        Gold tags.
    spans : list of list of tuple
        Per sequence, ``(start, stop, label, probability)`` as
        ``predict_spans(X, return_proba=True)`` returns them.
    scheme : {"IOB2", "IOB1", "IOE1", "IOE2", "BIOES", "BILOU", "plain"}, default="IOB2"
        Tagging scheme of ``y_true`` (see :func:`skcrf.tags.get_spans`).

    Returns
    -------
    correct : ndarray of bool of shape (n_spans,)
        Whether the gold tags hold the span (same start, stop and label).
    confidence : ndarray of float of shape (n_spans,)
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(map(repr, SCHEMES))}; "
                         f"got {scheme!r}.")
    if len(y_true) != len(spans):
        raise ValueError(f"y_true has {len(y_true)} sequences but spans has {len(spans)}.")
    _check_label_sequences(y_true, y_true)
    gold = {(s.sequence, s.start, s.stop, s.type) for s in get_spans(y_true, scheme=scheme)}
    correct, confidence = [], []
    for q, found in enumerate(spans):
        for k, span in enumerate(found):
            if len(span) != 4:
                raise ValueError(f"spans[{q}][{k}] is {span!r}; expected (start, stop, label, "
                                 f"probability), as predict_spans(X, return_proba=True) "
                                 f"gives.")
            start, stop, label, probability = span
            correct.append((q, int(start), int(stop), label) in gold)
            confidence.append(float(probability))
    return np.asarray(correct, dtype=bool), np.asarray(confidence, dtype=np.float64)
