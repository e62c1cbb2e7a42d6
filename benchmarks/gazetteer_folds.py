"""A gazetteer of the training set's own entities, without leaking them into training.

Built from the training spans, a gazetteer matches every training entity (they
are its entries) but only the test entities seen in training: a model trained
on such features learns that an entity is always in the gazetteer, and misses
the unseen ones at test time. So the training sentences are featurized as in
cross-fitting (scikit-learn's ``TargetEncoder`` does the same): fold ``k``
with the gazetteer of the other folds' entities; the test sentences with the
gazetteer of all the training entities.
"""

import numpy as np
import scipy.sparse as sp

from skcrf import SequenceMatrix, TokenFeaturizer
from skcrf.tags import tags_to_segments


def training_gazetteer(X, y, scheme="IOB2", word_column=0):
    """Phrase -> sorted types of the spans of ``y`` (tokens as the loaders return them)."""
    entries = {}
    for tokens, tags in zip(X, y):
        for span in tags_to_segments(list(tags), scheme):
            words = [t if isinstance(t, str) else t[word_column]
                     for t in tokens[span.start:span.stop]]
            entries.setdefault(" ".join(words), set()).add(span.label)
    return {phrase: sorted(types) for phrase, types in entries.items()}


def cross_fitted_features(params, X_train, y_train, X_test, n_folds=5, seed=0):
    """(train, test) SequenceMatrix of ``TokenFeaturizer(**params)`` with a cross-fitted gazetteer.

    ``params`` without a gazetteer: both are plainly featurized.
    """
    if not params.get("gazetteer"):
        featurizer = TokenFeaturizer(**params)
        return featurizer.fit_transform(X_train), featurizer.transform(X_test)
    params = {k: v for k, v in params.items() if k != "gazetteer"}
    fold = np.random.default_rng(seed).integers(n_folds, size=len(X_train))
    parts, order = [], []
    for k in range(n_folds):
        inside = np.flatnonzero(fold == k)
        outside = np.flatnonzero(fold != k)
        gazetteer = training_gazetteer([X_train[i] for i in outside],
                                       [y_train[i] for i in outside])
        parts.append(TokenFeaturizer(gazetteer=gazetteer, **params).transform(
            [X_train[i] for i in inside]))
        order.append(inside)
    train = merged(parts).take(np.argsort(np.concatenate(order), kind="stable"))
    test = TokenFeaturizer(gazetteer=training_gazetteer(X_train, y_train),
                           **params).transform(X_test)
    return train, test


def merged(parts):
    """One SequenceMatrix of the sequences of ``parts`` in order, columns united by name."""
    names, matrix = _united([part.feature_names for part in parts],
                            [part.matrix for part in parts])
    offsets = np.concatenate([[0]] + [part.offsets[1:] for part in parts])
    offsets[1:] += np.repeat(np.cumsum([0] + [part.n_tokens for part in parts[:-1]]),
                             [len(part) for part in parts])
    segments = None
    if parts[0].segments is not None:
        segment_names, segment_matrix = _united(
            [part.segments.feature_names for part in parts],
            [part.segments.matrix for part in parts])
        segments = SequenceMatrix(segment_matrix, offsets * parts[0].segment_length,
                                  segment_names)
    return SequenceMatrix(matrix, offsets, names, segments=segments)


def _united(name_lists, matrices):
    """(names, stacked matrix) with each matrix's columns moved to the union of the names."""
    vocabulary = {}
    for names in name_lists:
        for name in names.tolist():
            vocabulary.setdefault(name, len(vocabulary))
    moved = []
    for names, matrix in zip(name_lists, matrices):
        columns = np.fromiter(map(vocabulary.__getitem__, names.tolist()), dtype=np.int64,
                              count=len(names))
        matrix = sp.csr_matrix(matrix)
        moved.append(sp.csr_matrix((matrix.data, columns[matrix.indices], matrix.indptr),
                                   shape=(matrix.shape[0], len(vocabulary))))
    return list(vocabulary), sp.vstack(moved, format="csr")
