"""The estimators' queries: a structure's hooks, the checks and conversions behind them.

:class:`~skcrf._estimators.base.CRFEstimator` answers ``predict(fixed=..., decoding=...,
return_proba=...)``, ``predict_marginals(fixed=...)``, ``predict_nbest`` and
``sequence_log_proba`` with the hooks each structure implements
(:class:`StructureQueries`, which also holds the last two); the functions
here turn the user's arguments into class ids, and the hooks' arrays into
what the methods return, with errors that name the sequence and token.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._utils.parallel import effective_n_threads, kernel_threads
from ..features.arrays import FeatureArrays
from .._utils.type_aliases import FeatureSequences, FixedLabels, LabelSequences
from .._utils.validation import check_label_type, check_labels

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


def plain_dict_features(vectorizer, X):
    """``(FeatureArrays, offsets)`` of a few sequences of plain dicts, or None.

    The one-sentence path of every query: what ``vectorizer.transform`` and
    :meth:`~skcrf._estimators.base.CRFEstimator._features` make of ``X``,
    without the SequenceMatrix between them and the checks that only other
    inputs need (see ``SequenceVectorizer._plain_arrays``). None, for the
    general path, for any other input, and for non-finite values, whose
    error the general path words.
    """
    arrays = (None if vectorizer is None or type(X) is not list
              else getattr(vectorizer, "_plain_arrays", _no_arrays)(X))
    if arrays is None:
        return None
    data, indices, indptr, offsets = arrays
    if data is not None and not np.isfinite(data).all():
        return None
    return FeatureArrays(data, indices, indptr, len(vectorizer.feature_names_)), offsets


def _no_arrays(X):
    return None


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


class StructureQueries:
    """The hooks of a structure, and the queries answered through them alone.

    Mixed into :class:`~skcrf._estimators.base.CRFEstimator`, which gives
    ``_fitted_model`` and ``_features``. A subclass builds its structure in
    ``fit`` and answers the prediction methods through these hooks, all on
    class ids (indices into ``classes_``) and the ``features`` and
    ``offsets`` of ``_features``:

    - ``_potentials(features, offsets, fixed=None)``: the structure's log
      potentials (any object the other hooks take), with ``fixed`` (one class
      id per token, -1 for a free token) enforced by ``-inf`` scores;
    - ``_viterbi(potentials, offsets)``: the best labelling, (n_tokens,) ids;
    - ``_posteriors(potentials, offsets)``: ``(log_z, marginals)``, of shapes
      (n_sequences,) and (n_tokens, n_classes);
    - ``_nbest(potentials, offsets, n)``: ``(label_ids, scores, counts)``, of
      shapes (n_tokens, n), (n_sequences, n) and (n_sequences,): column k
      holds each sequence's k-th best labelling and its score, valid below
      ``counts``;
    - ``_labelling_scores(potentials, offsets, label_ids)``: the log score of
      the given labelling of each sequence, ``-inf`` where forbidden.

    ``predict`` and ``predict_marginals`` without options need only
    ``_decode(features, offsets)`` and ``_token_marginals(features,
    offsets)``, which by default go through the hooks; a structure may
    override those two instead. A query whose hook a structure lacks raises
    a NotImplementedError that names what it offers instead.
    """

    # --- the hooks of a structure (see the class docstring) ---------------------------

    def _potentials(self, features, offsets, fixed=None):
        raise NotImplementedError

    def _viterbi(self, potentials, offsets):
        raise NotImplementedError

    def _posteriors(self, potentials, offsets):
        raise NotImplementedError

    def _log_z(self, potentials, offsets):
        """(n_sequences,) log partition functions: what ``_posteriors`` gives first."""
        return self._posteriors(potentials, offsets)[0]

    def _nbest(self, potentials, offsets, n):
        raise NotImplementedError

    def _labelling_scores(self, potentials, offsets, label_ids):
        raise NotImplementedError

    def _nbest_states(self):
        """States per token whose sorted lists of partial paths ``_nbest`` keeps."""
        return len(self.classes_)

    def _decode(self, features, offsets):
        return self._viterbi(self._potentials(features, offsets), offsets)

    def _token_marginals(self, features, offsets):
        return self._posteriors(self._potentials(features, offsets), offsets)[1]

    def _require(self, hook, query, alternative):
        """Raise NotImplementedError, naming ``alternative``, if the structure lacks ``hook``."""
        if getattr(type(self), hook) is getattr(StructureQueries, hook):
            raise NotImplementedError(
                f"{type(self).__name__} does not offer {query}; {alternative}")

    def _query_potentials(self, features, offsets, fixed, query, alternative):
        """The potentials of ``features`` with the ``fixed`` labels; their class ids (or None)."""
        self._require("_potentials", query, alternative)
        fixed_ids = None
        if fixed is not None:
            fixed_ids = fixed_label_ids(fixed, offsets, self.classes_)
        return self._potentials(features, offsets, fixed_ids), fixed_ids

    def predict_nbest(self, X: FeatureSequences, n: int = 5, *, fixed: FixedLabels = None,
                      ) -> list[list[tuple[NDArray[Any], float]]]:
        """The ``n`` most likely label sequences of each sequence, with their probabilities.

        Exact (no beam): an n-best Viterbi keeps the ``n`` best partial paths
        per state. The first of each list is :meth:`predict`'s labelling.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
        n : int, default=5
            Labellings per sequence, at least 1. A sequence with fewer
            feasible labellings (a short one, or one with forbidden
            transitions) gets all of them; an empty sequence gets its one
            empty labelling, of probability 1. Memory grows with ``n``
            (up to the labellings the longest sequence has): past 1 GiB a
            ValueError says which ``n`` fits.
        fixed : list, default=None
            Labels known in advance, as for :meth:`predict`: the best
            completions, with their probabilities given the fixed labels.

        Returns
        -------
        nbest : list of list of (ndarray, float)
            Per sequence, ``(labels, probability)`` pairs in decreasing order
            of probability ``p(y | x)``; equal probabilities come in a fixed
            order (by label ids), whatever the thread count.
        """
        if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
            raise ValueError(f"n must be an integer >= 1; got {n!r}.")
        model = self._fitted_model()
        features, offsets = model._features(X)
        if getattr(type(model), "_potentials") is not StructureQueries._potentials:
            alternative = ("predict(X, return_proba=True) gives the best labelling with its "
                           "probability, predict_marginals each token's label probabilities.")
        else:
            alternative = ("predict gives the best labelling, predict_marginals each token's "
                           "label probabilities.")
        model._require("_nbest", "n-best decoding", alternative)
        # before any kernel: n past the labellings there are costs memory for nothing
        n = nbest_count(int(n), offsets, model.classes_, model._nbest_states(),
                        effective_n_threads(model.n_jobs))
        potentials, fixed_ids = model._query_potentials(features, offsets, fixed,
                                                        "n-best decoding", alternative)
        with kernel_threads(model.n_jobs, n_tokens=offsets[-1]):
            label_ids, scores, counts = model._nbest(potentials, offsets, n)
            log_z = model._log_z(potentials, offsets)
        if fixed_ids is not None:
            check_feasible(counts > 0, fixed_ids, offsets, model.classes_)
        return nbest_lists(model.classes_[label_ids], scores, counts, log_z, offsets)

    def sequence_log_proba(self, X: FeatureSequences,
                           y: LabelSequences) -> NDArray[np.float64]:
        """Log probability ``log p(y | x)`` of given label sequences.

        The score of each labelling minus the log partition function of its
        sequence: for ranking labellings, confidence thresholds or active
        learning. Over all labellings of a sequence, ``exp`` of it sums to 1.

        Parameters
        ----------
        X : list of sequences of dict, or SequenceMatrix
        y : list of sequences of labels
            One label of ``classes_`` per token.

        Returns
        -------
        log_proba : ndarray of shape (n_sequences,)
            ``-inf`` for a labelling the model forbids (a forbidden
            transition, first or last label); 0 for an empty sequence.
        """
        model = self._fitted_model()
        features, offsets = model._features(X)
        labels = check_labels(y, np.diff(offsets))
        check_label_type(labels, model.classes_)
        label_ids = given_label_ids(labels, offsets, model.classes_)
        potentials, _ = model._query_potentials(
            features, offsets, None, "probabilities of labellings",
            "predict_marginals gives each token's label probabilities.")
        with kernel_threads(model.n_jobs, n_tokens=offsets[-1]):
            scores = model._labelling_scores(potentials, offsets, label_ids)
            log_z = model._log_z(potentials, offsets)
        return log_probabilities(scores, log_z)
