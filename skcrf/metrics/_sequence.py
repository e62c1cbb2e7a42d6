"""Sequence-level metrics: a sequence counts only if every label is right."""

import numpy as np
from sklearn import metrics as _skm

from ._checks import _check_label_sequences, _check_sequence_weights


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
