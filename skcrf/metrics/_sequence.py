"""Sequence-level metrics: a sequence counts only if every label is right."""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn import metrics as _skm
from sklearn.exceptions import UndefinedMetricWarning

from .._utils.type_aliases import LabelSequences, SequenceWeights, ZeroDivision
from ._checks import _check_label_sequences, _check_sequence_weights
from ._token import _shared_params


@_shared_params
def sequence_accuracy_score(y_true: LabelSequences, y_pred: LabelSequences, *,
                            normalize: bool = True, sample_weight: SequenceWeights = None,
                            zero_division: ZeroDivision = "warn") -> float:
    """Fraction of sequences whose every label is right.

    An empty sequence (no tokens) is trivially right. The fraction of no
    sequence at all is undefined: it is ``zero_division``, following
    scikit-learn's convention for precision and recall (sklearn-crfsuite
    returned 0, as the default does, without the warning).

    Parameters
    ----------
    {sequences}
    normalize : bool, default=True
        Return the fraction of correct sequences; if False, their number.
    sample_weight : array-like of shape (n_sequences,), default=None
        One weight per sequence.
    zero_division : {{"warn", 0.0, 1.0, np.nan}}, default="warn"
        The score when there is no sequence and ``normalize`` is true;
        "warn" gives 0.0 and an :class:`~sklearn.exceptions.UndefinedMetricWarning`.

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
    zero_value = _zero_division_value(zero_division)
    flat_true, flat_pred, lengths = _check_label_sequences(y_true, y_pred)
    if lengths.shape[0] == 0:
        if not normalize:
            return 0.0
        if zero_division == "warn":
            warnings.warn("Sequence accuracy is ill-defined and being set to 0.0: there is "
                          "no sequence. Use `zero_division` to control this behavior.",
                          UndefinedMetricWarning, stacklevel=2)
        return zero_value
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


def _zero_division_value(zero_division):
    """The float ``zero_division`` stands for, after checking it as scikit-learn does."""
    if isinstance(zero_division, str) and zero_division == "warn":
        return 0.0
    if (isinstance(zero_division, numbers.Real) and not isinstance(zero_division, bool)
            and (zero_division in (0, 1) or np.isnan(zero_division))):
        return float(zero_division)
    raise ValueError(f'zero_division must be "warn", 0.0, 1.0 or np.nan; got '
                     f"{zero_division!r}.")
