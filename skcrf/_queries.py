"""Checks and conversions behind the estimators' queries: fixed labels, given labellings, n-best lists.

:class:`~skcrf._base.CRFEstimator` answers ``predict(fixed=..., decoding=...,
return_proba=...)``, ``predict_marginals(fixed=...)``, ``predict_nbest`` and
``sequence_log_proba`` with the hooks of each estimator (see its docstring);
this module turns the user's arguments into class ids, and the hooks' arrays
into what the methods return, with errors that name the sequence and token.
"""

import math
from collections.abc import Mapping

import numpy as np

#: The labels of ``fixed`` that leave a token free.
FREE = None

_SHOWN = 8


def _classes_preview(classes):
    shown = ", ".join(map(repr, classes[:_SHOWN].tolist()))
    return shown + (", ..." if classes.shape[0] > _SHOWN else "")


def _class_index(classes):
    return {label: k for k, label in enumerate(classes.tolist())}


def _key(label):
    return label.item() if isinstance(label, np.generic) else label


def fixed_label_ids(fixed, offsets, classes):
    """One class id per token from ``fixed``: the fixed label's, -1 for a free token.

    Parameters
    ----------
    fixed : list
        One entry per sequence: None (every token free) or a sequence of
        labels with one item per token, None for a free token.
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    classes : ndarray of shape (n_classes,)

    Returns
    -------
    ndarray of int64 of shape (n_tokens,)

    Raises
    ------
    TypeError, ValueError
        Naming the sequence (and token) of the first bad entry.
    """
    n_sequences = offsets.shape[0] - 1
    if isinstance(fixed, (str, bytes, Mapping)) or not hasattr(fixed, "__len__"):
        raise TypeError(
            f"fixed must be a list with one entry per sequence (a sequence of labels, None "
            f"for a free token, or None for a free sequence); got a {type(fixed).__name__}.")
    if len(fixed) != n_sequences:
        raise ValueError(f"fixed has {len(fixed)} entries but X has {n_sequences} sequences: "
                         f"give one per sequence (None for a sequence with no fixed label).")
    index = _class_index(classes)
    ids = np.full(int(offsets[-1]), -1, dtype=np.int64)
    for q, labels in enumerate(fixed):
        if labels is None:
            continue
        n_tokens = int(offsets[q + 1] - offsets[q])
        if isinstance(labels, (str, bytes, Mapping)) or not hasattr(labels, "__len__"):
            raise TypeError(f"fixed[{q}] must be a sequence of labels (None for a free token) "
                            f"or None; got a {type(labels).__name__}.")
        if len(labels) != n_tokens:
            raise ValueError(f"fixed[{q}] has {len(labels)} labels but sequence {q} has "
                             f"{n_tokens} tokens: give one per token, None for a free one.")
        lo = int(offsets[q])
        for t, label in enumerate(labels.tolist() if isinstance(labels, np.ndarray)
                                  else labels):
            if label is FREE:
                continue
            try:
                ids[lo + t] = index[_key(label)]
            except (KeyError, TypeError):
                raise ValueError(
                    f"fixed[{q}][{t}] (sequence {q}, token {t}) is {label!r}, which is not a "
                    f"label of the model: classes_ are {_classes_preview(classes)}.") from None
    return ids


def given_label_ids(labels, offsets, classes):
    """Class id of every given label (flat, as from ``check_labels``); unknown labels raise.

    Raises
    ------
    ValueError
        Naming the sequence and token of the first label that is not a class.
    """
    index = _class_index(classes)
    ids = np.fromiter((index.get(_key(label), -1) for label in labels.tolist()),
                      dtype=np.int64, count=labels.shape[0])
    unknown = np.flatnonzero(ids < 0)
    if unknown.size:
        t = int(unknown[0])
        q = int(np.searchsorted(offsets, t, side="right") - 1)
        raise ValueError(
            f"y[{q}][{t - offsets[q]}] (sequence {q}, token {t - offsets[q]}) is "
            f"{_key(labels[t])!r}, which is not a label of the model: classes_ are "
            f"{_classes_preview(classes)}.")
    return ids


def check_feasible(feasible, fixed_ids, offsets, classes):
    """Raise if some sequence's fixed labels leave it no labelling, naming it and them.

    ``feasible`` is a (n_sequences,) bool array.
    """
    infeasible = np.flatnonzero(~feasible)
    if not infeasible.size:
        return
    q = int(infeasible[0])
    lo, hi = int(offsets[q]), int(offsets[q + 1])
    tokens = np.flatnonzero(fixed_ids[lo:hi] >= 0)
    shown = ", ".join(f"token {t}: {_key(classes[fixed_ids[lo + t]])!r}"
                      for t in tokens[:_SHOWN].tolist())
    more = f" and {tokens.size - _SHOWN} more" if tokens.size > _SHOWN else ""
    others = (f" ({infeasible.size - 1} other sequence(s) too)" if infeasible.size > 1 else "")
    raise ValueError(
        f"Sequence {q} has no labelling with its fixed labels ({shown}{more}): the model "
        f"forbids every completion (forbidden transitions, first or last labels, or fixed "
        f"labels that cannot be neighbours){others}.")


def log_probabilities(scores, log_z):
    """log p = score - log Z, ``-inf`` where the score is (even when log Z is too), at most 0."""
    with np.errstate(invalid="ignore"):
        log_p = np.minimum(scores - log_z, 0.0)
    log_p[np.isneginf(scores)] = -np.inf
    return log_p


#: The most memory ``predict_nbest`` may take for one call, in bytes.
NBEST_MEMORY_BUDGET = 1 << 30

# What each labelling of each sequence costs as the list predict_nbest returns: a
# label array (its object and the row it copies), a tuple and a float.
_LIST_BYTES_PER_LABELLING = 256


def nbest_count(n, offsets, classes, states_per_token, n_threads):
    """``n`` bounded by the labellings the longest sequence has; raise past the budget.

    A sequence of ``L`` tokens has at most ``n_classes ** L`` labellings, so
    asking for more keeps empty lists, in memory proportional to ``n``. What
    is left must fit :data:`NBEST_MEMORY_BUDGET`: the labels of every path
    (ids, then the labels themselves), the lists returned, and the kernel's
    sorted lists of ``states_per_token`` states per token of the longest
    sequence, on each thread.

    Returns
    -------
    n : int
        What the kernel is asked for: each sequence still gets all its
        labellings if it has fewer.

    Raises
    ------
    ValueError
        If the ``n`` best labellings would take more than the budget; the
        message gives the largest ``n`` that fits.
    """
    lengths = np.diff(offsets)
    longest = int(lengths.max(initial=0))
    n_classes = classes.shape[0]
    if longest * math.log(n_classes) < math.log(n):
        n = n_classes ** longest
    per_labelling = (int(offsets[-1]) * (8 + 8 + classes.dtype.itemsize)
                     + lengths.shape[0] * _LIST_BYTES_PER_LABELLING
                     + n_threads * longest * states_per_token * 16)
    if n * per_labelling > NBEST_MEMORY_BUDGET:
        fits = max(1, NBEST_MEMORY_BUDGET // per_labelling)
        raise ValueError(
            f"predict_nbest(n={n}) would take about {n * per_labelling / 2**30:.1f} GiB for "
            f"these {lengths.shape[0]} sequences of {int(offsets[-1])} tokens (each "
            f"labelling costs {per_labelling} bytes; at most {NBEST_MEMORY_BUDGET / 2**30:g} "
            f"GiB): ask for n <= {fits}, or for fewer sequences at a time.")
    return n


def nbest_lists(labels, scores, counts, log_z, offsets):
    """Per sequence, the list of ``(labels, probability)`` of its paths, best first.

    Parameters
    ----------
    labels : ndarray of shape (n_tokens, n)
        Column k: every token's label in each sequence's k-th best path.
    scores : ndarray of shape (n_sequences, n)
    counts : ndarray of int of shape (n_sequences,)
        Paths each sequence has.
    log_z : ndarray of shape (n_sequences,)
    offsets : ndarray of int64 of shape (n_sequences + 1,)
    """
    log_p = log_probabilities(scores, log_z[:, np.newaxis])
    probabilities = np.exp(log_p).tolist()
    result = []
    for q in range(offsets.shape[0] - 1):
        lo, hi = int(offsets[q]), int(offsets[q + 1])
        result.append([(labels[lo:hi, k].copy(), probabilities[q][k])
                       for k in range(int(counts[q]))])
    return result
