"""Sample weights of sequences: their checks, and the sequences of weight 0 left out of a fit."""

import numpy as np
from sklearn.utils import _safe_indexing

from .._utils.validation import check_sequences


def check_sample_weight(sample_weight, n_sequences):
    """``sample_weight`` as a float array of one finite weight >= 0 per sequence, or raise."""
    try:
        weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"sample_weight must be numbers, one per sequence; got "
                         f"{sample_weight!r:.80}.") from None
    if weights.shape != (n_sequences,):
        raise ValueError(f"sample_weight must hold one weight per sequence: "
                         f"sample_weight.shape == {weights.shape}, X has {n_sequences} "
                         f"sequences.")
    bad = np.flatnonzero(~np.isfinite(weights) | (weights < 0))
    if bad.size:
        raise ValueError(f"sample_weight must be finite and >= 0; sample_weight[{bad[0]}] "
                         f"(sequence {bad[0]}) is {float(weights[bad[0]])!r}.")
    return weights


def nonzero_weights(X, y, sample_weight, groups=None, allow_empty=False):
    """``(X, y, weights)`` without the sequences of weight 0; weights None if all are 1.

    A sequence of weight 0 trains exactly as if it were not there: it
    brings no feature name, no label and no (feature, label) pair. With
    ``groups`` (one per sequence), returns ``(X, y, weights, groups)``, the
    groups of the kept sequences.
    """
    if sample_weight is None:
        return (X, y, None) if groups is None else (X, y, None, groups)
    X = check_sequences(X)
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} sequences but y has {len(y)}.")
    weights = check_sample_weight(sample_weight, len(X))
    kept = np.flatnonzero(weights > 0)
    if kept.shape[0] == 0 and not allow_empty:
        raise ValueError("sample_weight is 0 for every sequence: there is nothing to train on.")
    if kept.shape[0] < len(X):
        X, y, weights = _safe_indexing(X, kept), _safe_indexing(y, kept), weights[kept]
        if groups is not None:
            groups = _safe_indexing(groups, kept)
    if np.all(weights == 1.0):
        weights = None
    return (X, y, weights) if groups is None else (X, y, weights, groups)
