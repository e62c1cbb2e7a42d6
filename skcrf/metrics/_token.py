"""Token-level metrics: scikit-learn's metrics on all tokens of all sequences."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from numpy.typing import NDArray
from sklearn import metrics as _skm

from .._utils.type_aliases import LabelSequences, SequenceWeights, ZeroDivision
from ._checks import _check_label_sequences, _token_weights


def flat_accuracy_score(y_true: LabelSequences, y_pred: LabelSequences, *,
                        normalize: bool = True,
                        sample_weight: SequenceWeights = None) -> float:
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


def flat_precision_score(y_true: LabelSequences, y_pred: LabelSequences, *,
                         labels: Sequence[Hashable] | None = None, pos_label: Hashable = 1,
                         average: str | None = "binary", sample_weight: SequenceWeights = None,
                         zero_division: ZeroDivision = "warn") -> float | NDArray[Any]:
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


def flat_recall_score(y_true: LabelSequences, y_pred: LabelSequences, *,
                      labels: Sequence[Hashable] | None = None, pos_label: Hashable = 1,
                      average: str | None = "binary", sample_weight: SequenceWeights = None,
                      zero_division: ZeroDivision = "warn") -> float | NDArray[Any]:
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


def flat_fbeta_score(y_true: LabelSequences, y_pred: LabelSequences, *, beta: float,
                     labels: Sequence[Hashable] | None = None, pos_label: Hashable = 1,
                     average: str | None = "binary", sample_weight: SequenceWeights = None,
                     zero_division: ZeroDivision = "warn") -> float | NDArray[Any]:
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


def flat_f1_score(y_true: LabelSequences, y_pred: LabelSequences, *,
                  labels: Sequence[Hashable] | None = None, pos_label: Hashable = 1,
                  average: str | None = "binary", sample_weight: SequenceWeights = None,
                  zero_division: ZeroDivision = "warn") -> float | NDArray[Any]:
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


def flat_classification_report(y_true: LabelSequences, y_pred: LabelSequences, *,
                               labels: Sequence[Hashable] | None = None,
                               target_names: Sequence[str] | None = None,
                               sample_weight: SequenceWeights = None, digits: int = 2,
                               output_dict: bool = False,
                               zero_division: ZeroDivision = "warn") -> str | dict:
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
