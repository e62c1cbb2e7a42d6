"""Input checks shared by the estimator and the transformers.

Every error names what is wrong and where: the sequence index, the token
position within it, and the feature, so users never meet a numba traceback.
"""

import numbers
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

from ..features.sequence_matrix import SequenceMatrix

#: Exact types of a sequence that need no further check.
_PLAIN_SEQUENCES = (list, tuple)


def check_sequences(X, name="X", tokens="per-token feature dicts", matrix_ok=True):
    """Return ``X`` as an indexable collection of sequences, or raise.

    A ``SequenceMatrix`` passes through. A generator or other one-shot iterator
    is materialized into a list, since it could only be read once. ``tokens``
    says what the caller expects each sequence to hold and ``matrix_ok``
    whether it takes a SequenceMatrix, for the messages.
    """
    if isinstance(X, SequenceMatrix):
        return X
    if matrix_ok and _numeric_sequences(X):
        return SequenceMatrix.from_sequences(X)
    expected = f"a list of sequences of {tokens}" + (
        " or a SequenceMatrix" if matrix_ok else "")
    if isinstance(X, (str, bytes)):
        raise TypeError(f"{name} must be {expected}; got a {type(X).__name__}.")
    if isinstance(X, Mapping):
        raise TypeError(
            f"{name} must be {expected}; got a {type(X).__name__}. A single sequence "
            f"must be wrapped in a list: [sequence].")
    if sp.issparse(X) or (isinstance(X, np.ndarray) and X.dtype != object):
        hint = (" Wrap pre-vectorized token features as SequenceMatrix(matrix, offsets)."
                if matrix_ok else "")
        raise TypeError(
            f"{name} must be {expected}; got a {type(X).__name__} of shape "
            f"{X.shape}.{hint}")
    if not hasattr(X, "__len__") or not hasattr(X, "__getitem__"):
        try:
            X = list(X)
        except TypeError:
            raise TypeError(
                f"{name} must be {expected}; got a {type(X).__name__}.") from None
    for q, sequence in enumerate(X):
        # lists and tuples are the common case: skip the Mapping ABC check,
        # which costs ~2 us per sequence (14 ms of 40 ms on esp.train)
        if type(sequence) in _PLAIN_SEQUENCES:
            continue
        if isinstance(sequence, (str, bytes, Mapping)) or not hasattr(sequence, "__len__"):
            raise TypeError(
                f"Sequence {q} of {name} is a {type(sequence).__name__}; expected a "
                f"list of {tokens}.")
    return X


def _is_numeric_block(sequence):
    """Whether a sequence is a 2-D numeric block (numpy, scipy sparse, DataFrame)."""
    if sp.issparse(sequence):
        return True
    if isinstance(sequence, np.ndarray):
        # a 2-D object array is meant as numbers too: from_sequences names its dtype
        return sequence.dtype.kind in "biuf" or (sequence.ndim == 2 and sequence.dtype == object)
    return hasattr(sequence, "columns") and hasattr(sequence, "to_numpy")


def _numeric_sequences(X):
    """Whether ``X`` is a list of numeric 2-D blocks, one per sequence (its first says)."""
    if not isinstance(X, (list, tuple)) or not X:
        return False
    return _is_numeric_block(X[0])


def _label_kind(kind):
    """'str', 'bool', 'int', 'float' or the name of a label type."""
    if issubclass(kind, str):
        return "str"
    if issubclass(kind, (bool, np.bool_)):
        return "bool"
    if issubclass(kind, numbers.Integral):
        return "int"
    if issubclass(kind, numbers.Real):
        return "float"
    return kind.__name__


def check_labels(y, lengths):
    """Flatten label sequences after checking them against the token counts.

    Parameters
    ----------
    y : list of sequences of labels
    lengths : ndarray of shape (n_sequences,)
        Number of tokens of each sequence of ``X``.

    Returns
    -------
    labels : ndarray of shape (n_tokens,)
        All labels in order, as one array of a single type.
    """
    flat = _flat_labels(y, lengths)
    return _label_array(flat) if flat else np.asarray([], dtype=object)


def encode_labels(y, lengths):
    """The sorted distinct labels and each token's index among them.

    The same checks as :func:`check_labels`, but the labels are numbered with
    a dict of the few distinct ones instead of sorting an array of all of them
    (which needs several copies of it).

    Returns
    -------
    classes : ndarray of shape (n_classes,)
    label_ids : ndarray of int64 of shape (n_tokens,)
    """
    flat = _flat_labels(y, lengths)
    distinct = sorted(set(flat))
    index = {label: i for i, label in enumerate(distinct)}
    label_ids = np.fromiter(map(index.__getitem__, flat), dtype=np.int64, count=len(flat))
    return _label_array(distinct), label_ids


def _label_array(labels):
    """A list of labels of one kind as an array; integers stay integers.

    numpy holds integers from -2**63 to 2**64 - 1, but not in one type: labels
    spanning both ends (or beyond) would become float64 (merging labels that
    round alike) or objects, so they are refused.
    """
    array = np.asarray(labels)
    if not labels or array.dtype.kind in "iu" or _label_kind(type(labels[0])) != "int":
        return array
    low, high = min(labels), max(labels)
    if low < 0 or high >= 2 ** 64:
        raise ValueError(
            f"Integer labels range from {low} to {high}: no single integer type "
            f"holds them all (int64 holds -2**63 to 2**63 - 1, uint64 0 to "
            f"2**64 - 1). Use labels within one of those ranges, or str labels.")
    # numpy makes non-negative integers past int64 float64 unless told uint64
    return np.asarray(labels, dtype=np.uint64)


def _label_group(array):
    """'str', 'bytes' or 'number': labels of different groups never compare equal."""
    kind = array.dtype.kind
    if kind == "O":
        if array.shape[0] == 0:
            return None
        kind = _label_kind(type(array[0]))
        return "number" if kind in ("int", "float") else kind
    return {"U": "str", "S": "bytes"}.get(kind, "number")


def check_label_type(labels, classes):
    """Raise if ``labels`` are of a type no class of ``classes`` could equal.

    Integers and floats compare by value (1 == 1.0), but a str never equals
    a number or a bytes: scoring such labels would count every token wrong.
    """
    got, expected = _label_group(labels), _label_group(classes)
    if got is not None and expected is not None and got != expected:
        preview = ", ".join(map(repr, classes[:3].tolist())) + (
            ", ..." if classes.shape[0] > 3 else "")
        raise TypeError(
            f"y holds {got} labels, but this model's classes_ are {expected} labels "
            f"({preview}): none could ever match. Pass labels of the type the model "
            f"was fitted on.")


_LABEL_KINDS = {"str", "bytes", "int", "float"}


def _flat_labels(y, lengths):
    """All labels of ``y`` in one list, after checking count, type and NaN."""
    if isinstance(y, (str, bytes, Mapping)) or y is None:
        raise TypeError(f"y must be a list of label sequences; got a {type(y).__name__}.")
    if not hasattr(y, "__len__"):
        # a generator can be read once: keep what it yields
        try:
            y = list(y)
        except TypeError:
            raise TypeError(
                f"y must be a list of label sequences; got a {type(y).__name__}.") from None
    if len(y) != len(lengths):
        raise ValueError(
            f"X has {len(lengths)} sequences but y has {len(y)}: they must match "
            f"one to one.")
    flat = []
    for q, (labels, n_tokens) in enumerate(zip(y, lengths)):
        if isinstance(labels, (str, bytes, Mapping)) or not hasattr(labels, "__len__"):
            raise TypeError(
                f"Labels of sequence {q} are a {type(labels).__name__}; expected a "
                f"list of labels, one per token.")
        if len(labels) != n_tokens:
            raise ValueError(
                f"Sequence {q} has {n_tokens} tokens but {len(labels)} labels.")
        flat.extend(labels)
    if not flat:
        return flat
    # one check per distinct type, not per label (265k labels on esp.train)
    kinds = set(map(_label_kind, set(map(type, flat))))
    if len(kinds) > 1 or not kinds <= _LABEL_KINDS:
        first_kind = _label_kind(type(flat[0]))
        seq, tok = _locate(lengths, next(
            i for i, label in enumerate(flat)
            if _label_kind(type(label)) != first_kind or first_kind not in _LABEL_KINDS))
        what = (f"y mixes {', '.join(sorted(kinds))}" if len(kinds) > 1
                else f"y holds {first_kind} labels")
        raise TypeError(
            f"Labels must all be str or all numbers; {what} (see sequence {seq}, "
            f"token {tok}).")
    if kinds == {"float"}:
        missing = [i for i, label in enumerate(flat) if label != label]
        if missing:
            seq, tok = _locate(lengths, missing[0])
            raise ValueError(
                f"Label of sequence {seq}, token {tok} is NaN; every token needs a "
                f"label ({len(missing)} NaN label(s) in all).")
    return flat


def _locate(lengths, token_index):
    """(sequence, position) of a token given its index over all tokens."""
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    seq = int(np.searchsorted(offsets, token_index, side="right") - 1)
    return seq, int(token_index - offsets[seq])


def check_finite_features(X):
    """Raise if a ``SequenceMatrix`` holds complex, NaN or infinite feature values."""
    if X._indicator_pattern() is not None:
        return  # every value is 1
    matrix = X.matrix
    if np.iscomplexobj(matrix.data):
        bad = np.flatnonzero(matrix.data.imag != 0)
        where = (_describe_entry(matrix.data, matrix.indices, matrix.indptr, X.lengths,
                                 X.feature_names, bad[0]) + ": " if bad.size else "")
        raise TypeError(
            f"{where}X holds complex feature values (dtype {matrix.data.dtype}); "
            f"feature values must be real numbers.")
    check_feature_values(matrix.data, matrix.indices, matrix.indptr, X.lengths,
                         X.feature_names)


def check_feature_values(data, indices, indptr, lengths, feature_names):
    """Raise if CSR ``data`` holds NaN or infinite values, naming the first one.

    ``data`` may be None (every value 1), which is always fine.
    """
    if data is None:
        return
    bad = np.flatnonzero(~np.isfinite(data))
    if bad.size == 0:
        return
    raise ValueError(
        f"{_describe_entry(data, indices, indptr, lengths, feature_names, bad[0])} has "
        f"the value {data[bad[0]]}; feature values must be finite ({bad.size} such "
        f"value(s) in all).")


def check_finite_scores(scores, offsets, allowed=None):
    """Raise if some token's model scores overflow float64, naming the first such token.

    Parameters
    ----------
    scores : ndarray of shape (n_tokens, ...)
        Per-token scores (unary or edge blocks) of a fitted model.
    offsets : ndarray of shape (n_sequences + 1,)
    allowed : ndarray of bool of the shape of ``scores[0]``, default=None
        Where a score of ``-inf`` is the model's own (a forbidden transition
        in every token's edge block), not an overflow.
    """
    if scores.size == 0:
        return
    finite = np.isfinite(scores)
    if allowed is None and finite.all():  # the usual case, in one reduction
        return
    if allowed is not None:
        finite |= allowed & np.isneginf(scores)
    finite = finite.reshape(scores.shape[0], -1).all(axis=1)
    if finite.all():
        return
    seq, tok = _locate(np.diff(offsets), int(np.argmin(finite)))
    raise ValueError(
        f"The model's scores of sequence {seq}, token {tok} overflow float64: its "
        f"feature values are too large for the fitted weights. Scale the feature "
        f"values to a moderate range, as for training.")


def describe_largest_value(data, indices, indptr, lengths, feature_names):
    """Text naming the largest feature value in magnitude and where it is."""
    if data is None or data.shape[0] == 0:
        return "every feature value is 1"
    k = int(np.argmax(np.abs(data)))
    where = _describe_entry(data, indices, indptr, lengths, feature_names, k)
    return f"the largest feature value is {data[k]:.3g}, at {where[0].lower()}{where[1:]}"


def _describe_entry(data, indices, indptr, lengths, feature_names, k):
    """'Sequence q, token t, feature name' of entry ``k`` of CSR arrays."""
    row = int(np.searchsorted(indptr, k, side="right") - 1)
    seq, tok = _locate(lengths, row)
    col = int(indices[k])
    feature = feature_names[col] if feature_names is not None else f"column {col}"
    return f"Sequence {seq}, token {tok}, feature {feature!r}"


def reject_positional_weights(estimator, positional):
    """Raise if ``fit`` got a third positional argument.

    ``sample_weight`` is keyword-only: seqlearn and hmmlearn take
    ``fit(X, y, lengths)`` and ``fit(X, lengths)``, and a ``lengths`` array
    read as sequence weights would silently change the model. A check of its
    length or sum could not tell the two apart when every sequence has the
    same length, so no positional argument is taken at all.
    """
    if positional:
        raise TypeError(
            f"{type(estimator).__name__}.fit takes X and y positionally and sample_weight "
            f"by keyword only (sample_weight=...); got {len(positional)} more positional "
            f"argument(s). For a stacked array and the lengths of its sequences (the "
            f"hmmlearn/seqlearn convention), pass skcrf.features.from_lengths(X, lengths) "
            f"as X.")
