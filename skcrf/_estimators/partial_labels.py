"""Training labels that say less than one label per token: unknown (None) and label sets.

In ``y``, a token's label may be ``None`` (unknown: any class) or a ``set``
/ ``frozenset`` of labels (one of these). A sequence is then trained on
the probability of all its labellings that agree with what is known
(:mod:`skcrf.learning.partial`). This module turns such ``y`` into what the
objective reads: one allowed-label mask per token, and each sequence's kind.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._utils.validation import _LABEL_KINDS, _label_array, _label_kind, _locate

#: Kinds of sequence: every token has one label / some token is constrained /
#: every token is unknown (it tells nothing and is dropped from the objective).
FULL, CONSTRAINED, FREE = 0, 1, 2

_SET_TYPES = (set, frozenset)


def is_partial_label(label):
    """Whether ``label`` is ``None`` or a set of labels rather than one label."""
    return label is None or type(label) in _SET_TYPES


def holds_partial_labels(y):
    """Whether some token of ``y`` (a list of label sequences) is ``None`` or a set.

    Anything that is not a list of label sequences answers False: the usual
    checks of ``y`` then say what is wrong with it. A one-shot iterator is
    not read (it answers False): the caller materializes it first.
    """
    if not hasattr(y, "__len__"):
        return False
    try:
        return any(is_partial_label(label) for labels in y
                   if not isinstance(labels, (str, bytes)) for label in labels)
    except TypeError:
        return False


@dataclass
class PartialLabels:
    """What is known of the labels of a training set.

    Attributes
    ----------
    classes : ndarray of shape (n_classes,)
        The sorted labels that occur alone or inside a set.
    label_ids : ndarray of int64 of shape (n_tokens,)
        The class id of a token with one label, -1 for an unknown token or
        one with a set of two or more labels.
    allowed : ndarray of bool of shape (n_tokens, n_classes)
        The classes each token may take (one for a labelled token, all for
        an unknown one).
    kinds : ndarray of int8 of shape (n_sequences,)
        :data:`FULL`, :data:`CONSTRAINED` or :data:`FREE` for each sequence.
    """

    classes: np.ndarray
    label_ids: np.ndarray
    allowed: np.ndarray
    kinds: np.ndarray


def encode_partial_labels(y, lengths):
    """:class:`PartialLabels` of ``y``, checked against the token counts ``lengths``.

    A set of one label is that label; an empty set, a set inside a set, or
    labels of mixed types (str and numbers) raise an error naming the
    sequence and token.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(y) != lengths.shape[0]:
        raise ValueError(f"X has {lengths.shape[0]} sequences but y has {len(y)}: they "
                         f"must match one to one.")
    flat = []
    for q, (labels, n_tokens) in enumerate(zip(y, lengths)):
        if isinstance(labels, (str, bytes, dict)) or not hasattr(labels, "__len__"):
            raise TypeError(f"Labels of sequence {q} are a {type(labels).__name__}; expected "
                            f"a list of labels, one per token.")
        if len(labels) != n_tokens:
            raise ValueError(f"Sequence {q} has {n_tokens} tokens but {len(labels)} labels.")
        for t, label in enumerate(labels):
            if type(label) in _SET_TYPES:
                if not label:
                    raise ValueError(f"Label of sequence {q}, token {t} is an empty set: a "
                                     f"token's set must hold at least one label (None for "
                                     f"an unknown token).")
                label = frozenset(label)
                if len(label) == 1:
                    (label,) = label
            flat.append(label)
    known = set()
    for i, label in enumerate(flat):
        members = label if type(label) is frozenset else () if label is None else (label,)
        for member in members:
            kind = _label_kind(type(member))
            if kind not in _LABEL_KINDS or (kind == "float" and member != member):
                seq, tok = _locate(lengths, i)
                raise TypeError(f"Label of sequence {seq}, token {tok} is {member!r}: labels "
                                f"are str or numbers, a token's label may also be None "
                                f"(unknown) or a set of labels.")
            known.add(member)
    kinds = {"number" if _label_kind(type(m)) in ("int", "float") else _label_kind(type(m))
             for m in known}
    if len(kinds) > 1:
        raise TypeError(f"Labels must all be str or all numbers; y mixes "
                        f"{', '.join(sorted(kinds))} (alone or inside sets).")
    if not known:
        raise ValueError("y holds no label at all (every token is None): there is nothing "
                         "to train on.")
    distinct = sorted(known)
    index = {label: i for i, label in enumerate(distinct)}
    n_tokens, n_classes = len(flat), len(distinct)
    label_ids = np.full(n_tokens, -1, dtype=np.int64)
    allowed = np.zeros((n_tokens, n_classes), dtype=bool)
    unknown = np.zeros(n_tokens, dtype=bool)
    for i, label in enumerate(flat):
        if label is None:
            unknown[i] = True
            allowed[i] = True
        elif type(label) is frozenset:
            allowed[i, [index[member] for member in label]] = True
        else:
            label_ids[i] = index[label]
            allowed[i, label_ids[i]] = True
    return PartialLabels(_label_array(distinct), label_ids, allowed,
                         sequence_kinds(label_ids, unknown, lengths))


def sequence_kinds(label_ids, unknown, lengths):
    """:data:`FULL`, :data:`CONSTRAINED` or :data:`FREE` for each sequence (int8).

    ``label_ids`` is -1 where a token is not labelled with one class,
    ``unknown`` True where it is not labelled at all. An empty sequence is FULL.
    """
    owner = np.repeat(np.arange(lengths.shape[0]), lengths)
    n_partial = np.bincount(owner, weights=label_ids < 0, minlength=lengths.shape[0])
    n_unknown = np.bincount(owner, weights=unknown, minlength=lengths.shape[0])
    kinds = np.full(lengths.shape[0], CONSTRAINED, dtype=np.int8)
    kinds[n_partial == 0] = FULL
    kinds[(n_unknown == lengths) & (lengths > 0)] = FREE
    return kinds


def known_labels(partial, offsets):
    """Each sequence's class ids where they are known alone (for reading a tag scheme)."""
    return [partial.label_ids[start:stop][partial.label_ids[start:stop] >= 0]
            for start, stop in zip(offsets[:-1], offsets[1:])]


def pairs_with_sets(state_pairs, features, partial):
    """``state_pairs`` plus the (feature, class) pairs of tokens whose label is a set.

    A token given a set of labels brings a pair for each of them, as a
    labelled token does for its label; an unknown token brings none (it
    would bring every class: as ``all_possible_states`` on its features).
    """
    from ..structures._parameters import StatePairs

    in_set = (partial.label_ids < 0) & ~partial.allowed.all(axis=1)
    if not in_set.any():
        return state_pairs
    n_classes = partial.allowed.shape[1]
    n_features = state_pairs.feature_ptr.shape[0] - 1
    codes = [np.repeat(np.arange(n_features, dtype=np.int64), np.diff(state_pairs.feature_ptr))
             * n_classes + state_pairs.labels]
    for k in range(n_classes):
        ids = np.where(in_set & partial.allowed[:, k], k, -1)
        if (ids >= 0).any():
            pairs = StatePairs.observed(features, ids, n_classes)
            codes.append(np.repeat(np.arange(n_features, dtype=np.int64),
                                   np.diff(pairs.feature_ptr)) * n_classes + pairs.labels)
    features_of, labels = np.divmod(np.unique(np.concatenate(codes)), n_classes)
    return StatePairs.from_coordinates(features_of, labels, n_features, n_classes)


def link_pairs_with_sets(edge_pairs, features, offsets, partial, columns):
    """``edge_pairs`` (a tree's link features) plus the pairs of links a set labels.

    A link from a parent to a child whose labels are known or sets brings,
    for each of the child's link features (``columns``), a pair for every
    (parent label, child label) its two labels allow, as a link of two known
    labels brings its own; a link with an unknown end brings none.
    """
    from ..structures._parameters import StatePairs

    n_classes = partial.allowed.shape[1]
    informative = ~((partial.label_ids < 0) & partial.allowed.all(axis=1))
    starts = np.repeat(offsets[:-1], np.diff(offsets))
    parents = np.where(features.parents >= 0, features.parents + starts, -1)
    child = np.flatnonzero(parents >= 0)
    child = child[informative[child] & informative[parents[child]]]
    child = child[(partial.label_ids[child] < 0) | (partial.label_ids[parents[child]] < 0)]
    if child.shape[0] == 0:
        return edge_pairs
    # (link, label pair) allowed: parent's allowed labels x child's
    allowed_pairs = sp.csr_matrix((partial.allowed[parents[child], :, np.newaxis]
                                   & partial.allowed[child, np.newaxis, :]).reshape(
                                       child.shape[0], n_classes * n_classes), dtype=np.float64)
    # the child's link features, an explicitly stored zero counting as an occurrence
    indptr = np.asarray(features.indptr, dtype=np.int64)
    rows = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    keep = np.asarray(columns, dtype=bool)[features.indices]
    pattern = sp.csr_matrix((np.ones(int(keep.sum())), (rows[keep], features.indices[keep])),
                            shape=(indptr.shape[0] - 1, features.n_features))[child]
    seen = (pattern.T @ allowed_pairs).tocsr()
    seen.sort_indices()
    n_features = features.n_features
    codes = [np.repeat(np.arange(n_features, dtype=np.int64), np.diff(seen.indptr))
             * n_classes ** 2 + seen.indices]
    if edge_pairs is not None:
        codes.append(np.repeat(np.arange(n_features, dtype=np.int64),
                               np.diff(edge_pairs.feature_ptr)) * n_classes ** 2
                     + edge_pairs.labels)
    features_of, labels = np.divmod(np.unique(np.concatenate(codes)), n_classes ** 2)
    return StatePairs.from_coordinates(features_of, labels, n_features, n_classes ** 2)


def partial_label_constraints(spec, data, estimator):
    """The transition constraints of ``allowed_transitions`` for partially labelled ``data``.

    ``"auto"`` reads the scheme in the known labels. The fully labelled
    sequences must keep to the constraints: a tagging scheme's repair
    (conlleval's reading) is not made with unknown labels about, so a
    malformed sequence raises, naming it. Whether the constrained sequences
    admit a labelling is checked by the objective
    (:class:`~skcrf.learning.partial.ConstrainedTerms`).
    """
    from .constraints import check_training_labels, resolve_constraints

    partial = data.partial
    constraints = resolve_constraints(
        spec, data.classes,
        lambda: [data.classes[ids] for ids in known_labels(partial, data.offsets)])
    full = np.flatnonzero(partial.kinds == FULL)
    starts, lengths = data.offsets[full], np.diff(data.offsets)[full]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    rows = np.arange(offsets[-1]) - np.repeat(offsets[:-1] - starts, lengths)
    try:
        repaired = check_training_labels(constraints, data.classes, partial.label_ids[rows],
                                         offsets, spec, estimator)
    except ValueError as error:
        raise ValueError(f"{error} (sequences counted among the fully labelled ones)") from None
    if repaired is not None:
        bad = constraints.bad_sequences(partial.label_ids[rows], offsets)
        raise ValueError(
            f"{estimator}: {len(bad)} fully labelled training sequence(s) have tags that "
            f"are not well-formed {constraints.scheme} (first: sequence {full[bad[0]]}); "
            f"with unknown or set labels in y they are not repaired: correct them.")
    return constraints
