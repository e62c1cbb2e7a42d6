"""Token-level metrics: scikit-learn's metrics on all tokens of all sequences.

Every function here is one scikit-learn metric called on the concatenated
labels, with each sequence's weight repeated over its tokens
(:func:`_on_tokens`); their docstrings share one template.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol

from numpy.typing import NDArray
from sklearn import metrics as _skm

from .._utils.type_aliases import LabelSequences, SequenceWeights, ZeroDivision
from ._checks import _check_label_sequences, _token_weights

# The parameters every token metric shares, at a docstring's indentation.
_SEQUENCES_DOC = """y_true : list of array-like of shape (n_tokens_i,)
        True label sequences.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted label sequences, as returned by ``CRFClassifier.predict``."""
_WEIGHT_DOC = """sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence, applied to each of its tokens."""

_SCORE_DOC = """Token-level {title}: :func:`sklearn.metrics.{function}` on all tokens.

    Parameters
    ----------
    {sequences}{beta}
    labels : array-like, default=None
        Labels to include, e.g. every label but ``"O"``; see scikit-learn.
    pos_label : int, float, bool or str, default=1
        The positive class when ``average="binary"``.
    average : {{"micro", "macro", "samples", "weighted", "binary"}} or None, \
            default="binary"
        As in scikit-learn; sequence labelling usually has more than two labels,
        so pass ``"micro"``, ``"macro"`` or ``"weighted"``.
    {weight}
    zero_division : {{"warn", 0.0, 1.0, np.nan}}, default="warn"
        Value returned when {undefined}.

    Returns
    -------
    {name} : float or ndarray of shape (n_labels,)
        Averaged {title}, or one per label when ``average=None``.
{examples}"""

_F1_EXAMPLES = """
    Examples
    --------
    >>> from skcrf.metrics import flat_f1_score
    >>> y_true = [["DET", "N"], ["DET", "N", "V"]]
    >>> y_pred = [["DET", "N"], ["DET", "V", "V"]]
    >>> round(flat_f1_score(y_true, y_pred, average="macro"), 4)
    0.7778
"""


def _score_doc(name: str, title: str, undefined: str, beta: str = "",
               examples: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a precision/recall/F score its docstring from the shared template."""
    def document(function):
        function.__doc__ = _SCORE_DOC.format(
            title=title, function=function.__name__.removeprefix("flat_"), name=name,
            sequences=_SEQUENCES_DOC, weight=_WEIGHT_DOC, undefined=undefined,
            beta=beta, examples=examples)
        return function
    return document


def _shared_params(function: Callable[..., Any]) -> Callable[..., Any]:
    """Fill the shared parameters into a docstring that names them."""
    if function.__doc__ is not None:  # None under python -OO
        function.__doc__ = function.__doc__.format(sequences=_SEQUENCES_DOC,
                                                   weight=_WEIGHT_DOC)
    return function


def _on_tokens(metric: Callable[..., Any], y_true: LabelSequences, y_pred: LabelSequences,
               sample_weight: SequenceWeights, **kwargs: Any) -> Any:
    """``metric`` on all tokens, each weighted by its sequence's weight."""
    flat_true, flat_pred, lengths = _check_label_sequences(y_true, y_pred)
    return metric(flat_true, flat_pred, sample_weight=_token_weights(sample_weight, lengths),
                  **kwargs)


@_shared_params
def flat_accuracy_score(y_true: LabelSequences, y_pred: LabelSequences, *,
                        normalize: bool = True,
                        sample_weight: SequenceWeights = None) -> float:
    """Fraction of tokens labelled correctly, over all sequences.

    :func:`sklearn.metrics.accuracy_score` on the concatenated labels.

    Parameters
    ----------
    {sequences}
    normalize : bool, default=True
        Return the fraction of correct tokens; if False, their number.
    {weight}

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
    return float(_on_tokens(_skm.accuracy_score, y_true, y_pred, sample_weight,
                            normalize=normalize))


class _TokenScore(Protocol):
    """The signature of flat_precision_score, flat_recall_score and flat_f1_score."""

    def __call__(self, y_true: LabelSequences, y_pred: LabelSequences, *,
                 labels: Sequence[Hashable] | None = None, pos_label: Hashable = 1,
                 average: str | None = "binary", sample_weight: SequenceWeights = None,
                 zero_division: ZeroDivision = "warn") -> float | NDArray[Any]: ...


def _token_score(metric: Callable[..., Any], name: str, title: str, undefined: str,
                 examples: str = "") -> _TokenScore:
    """flat_{name}_score: scikit-learn's ``metric`` with its signature, on all tokens."""
    def score(y_true, y_pred, *, labels=None, pos_label=1, average="binary",
              sample_weight=None, zero_division="warn"):
        return _on_tokens(metric, y_true, y_pred, sample_weight, labels=labels,
                          pos_label=pos_label, average=average, zero_division=zero_division)

    score.__name__ = score.__qualname__ = f"flat_{name}_score"
    score.__annotations__ = dict(_TokenScore.__call__.__annotations__)
    return _score_doc(name, title, undefined, examples=examples)(score)


flat_precision_score: _TokenScore = _token_score(
    _skm.precision_score, "precision", "precision",
    "a precision has no predicted token to divide by")
flat_recall_score: _TokenScore = _token_score(
    _skm.recall_score, "recall", "recall", "a recall has no true token to divide by")
flat_f1_score: _TokenScore = _token_score(
    _skm.f1_score, "f1", "F1", "the score is undefined", examples=_F1_EXAMPLES)


@_score_doc("fbeta", "F-beta", "the score is undefined", beta="""
    beta : float
        Weight of recall relative to precision.""")
def flat_fbeta_score(y_true: LabelSequences, y_pred: LabelSequences, *, beta: float,
                     labels: Sequence[Hashable] | None = None, pos_label: Hashable = 1,
                     average: str | None = "binary", sample_weight: SequenceWeights = None,
                     zero_division: ZeroDivision = "warn") -> float | NDArray[Any]:
    return _on_tokens(_skm.fbeta_score, y_true, y_pred, sample_weight, beta=beta,
                      labels=labels, pos_label=pos_label, average=average,
                      zero_division=zero_division)


@_shared_params
def flat_classification_report(y_true: LabelSequences, y_pred: LabelSequences, *,
                               labels: Sequence[Hashable] | None = None,
                               target_names: Sequence[str] | None = None,
                               sample_weight: SequenceWeights = None, digits: int = 2,
                               output_dict: bool = False,
                               zero_division: ZeroDivision = "warn") -> str | dict:
    """Per-label token-level report: :func:`sklearn.metrics.classification_report`.

    Parameters
    ----------
    {sequences}
    labels : array-like of shape (n_labels,), default=None
        Labels to report.
    target_names : list of str of shape (n_labels,), default=None
        Display names of ``labels``.
    {weight}
    digits : int, default=2
        Digits of the formatted floats (ignored with ``output_dict=True``).
    output_dict : bool, default=False
        Return a dict instead of text.
    zero_division : {{"warn", 0.0, 1.0, np.nan}}, default="warn"
        Value used when a score is undefined.

    Returns
    -------
    report : str or dict
        As :func:`sklearn.metrics.classification_report`.
    """
    return _on_tokens(_skm.classification_report, y_true, y_pred, sample_weight,
                      labels=labels, target_names=target_names, digits=digits,
                      output_dict=output_dict, zero_division=zero_division)
