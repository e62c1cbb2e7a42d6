"""Scorers for ``GridSearchCV`` and ``cross_validate`` that take ragged ``y``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sklearn import metrics as _skm

from ._sequence import sequence_accuracy_score
from ._span import span_f1_score
from ._token import flat_f1_score


def check_sequence_scoring(scoring: Any) -> Any:
    """``scoring``, unless it names one of scikit-learn's scorers, which cannot score sequences.

    Raises
    ------
    ValueError
        If ``scoring`` is a string: scikit-learn's string scorers compare one
        label per sample and fail on lists of label sequences; the message
        names skcrf's scorers instead.
    """
    if isinstance(scoring, str):
        raise ValueError(
            f"scoring={scoring!r} names one of scikit-learn's scorers, which compare one "
            f"label per sample and fail on lists of label sequences. Use a scorer of "
            f"skcrf.metrics: span_f1_scorer (entity or chunk F1), flat_f1_scorer (token F1), "
            f"sequence_accuracy_scorer, or make_sequence_scorer(metric) of any metric, "
            f"such as make_sequence_scorer(flat_accuracy_score).")
    return scoring


def make_sequence_scorer(score_func: Callable[..., Any], *, greater_is_better: bool = True,
                         **kwargs: Any) -> Callable[..., float]:
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
