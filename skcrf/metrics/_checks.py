"""Input checks shared by the metrics: pairing ``y_true`` with ``y_pred``, weights."""

import numpy as np

from ..tags import _as_list, _is_sequence


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
    _refuse_partial_labels(flat_true, lengths)
    return flat_true, flat_pred, lengths


def _refuse_partial_labels(flat_true, lengths):
    """Raise, naming the token, if ``y_true`` holds an unknown (None) or set label.

    Such labels train a model (see the user guide's page on incomplete
    annotation) but cannot be scored against: evaluation data needs one
    label per token.
    """
    for i, label in enumerate(flat_true):
        if label is None or isinstance(label, (set, frozenset)):
            q = int(np.searchsorted(np.cumsum(lengths), i, side="right"))
            t = i - int(np.sum(lengths[:q]))
            what = "None (unknown)" if label is None else f"the set {sorted(label)!r}"
            raise ValueError(
                f"y_true's label of sequence {q}, token {t} is {what}: unknown and "
                f"ambiguous labels can train a model but not score one; evaluate on "
                f"data with one label per token.")


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
