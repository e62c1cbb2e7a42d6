"""Every term of a labelling's score, by structure, for :mod:`skcrf.explain`.

A fitted model scores a labelling as a sum of terms: each active feature's
value times its state weight, the transition (or tree link) weights with the
transition (link) features that condition them, label patterns, start and
end weights, and for a SemiMarkovCRF the first, last, length and segment
terms of each segment. :func:`labelling_terms` lists them for one sequence
as a dict ``(position, term) -> score`` whose values add up to the model's
score of the labelling; two labellings' dicts, key by key, say where they
differ and by how much (:func:`skcrf.explain.explain_sequence`), and the
labellings that differ at one token only say what each candidate label of
that token costs (:func:`skcrf.explain.explain_token`).

Terms are read from the fitted coefficients, not from the kernels'
potentials (which are shifted per token), so each one is the weight a user
can find in ``coef_``, ``transition_coef_`` and the like.
"""

from collections import defaultdict

import numpy as np

from .features.arrays import all_feature_names
from .structures.patterns.chain import fitted_patterns
from .structures.patterns.label_patterns import row_lengths

#: Names of the terms that are not a feature's.
START, END, TRANSITION, TRIGRAM, PATTERN, ROOT, LINK, LENGTH = (
    "(start)", "(end)", "(transition)", "(trigram)", "(pattern)", "(root)", "(link)",
    "(length)")


def column_names(final, matrix):
    """The name of every column of ``coef_``: sparse columns, then dense ones."""
    if getattr(final, "feature_columns_", None) is not None:
        return [str(name) for name in final.feature_names_]  # the kept columns only
    names = all_feature_names(matrix)
    width = matrix.n_features + matrix.n_dense
    if names is None or len(names) != width:
        names = getattr(final, "feature_names_", None)
    if names is None or len(names) != width:
        names = [f"x{j}" for j in range(width)]
    return [str(name) for name in names]


def token_columns(matrix, final=None):
    """Per token of a one-sequence SequenceMatrix: (columns, values) of its nonzero features.

    Sparse columns first, then the dense block's (numbered after them, as in
    ``coef_``); dense values are taken as float64. A model that kept only the
    columns of its training data (``feature_columns_``, a wide hashed input)
    has no weight for the others: they are left out, the rest renumbered as in
    its ``coef_``.
    """
    kept = getattr(final, "feature_columns_", None)
    at = None if kept is None else {int(c): k for k, c in enumerate(kept.tolist())}
    n_tokens = int(matrix.offsets[-1])
    csr = matrix.matrix if matrix.n_features else None
    dense = None if matrix.dense is None else np.asarray(matrix.dense, dtype=np.float64)
    columns = []
    for t in range(n_tokens):
        if csr is not None:
            row = csr[t]
            indices, values = row.indices.astype(np.int64), row.data.astype(np.float64)
            if at is not None:
                hit = [k for k, j in enumerate(indices.tolist()) if j in at]
                indices = np.array([at[j] for j in indices[hit].tolist()], dtype=np.int64)
                values = values[hit]
        else:
            indices, values = np.zeros(0, dtype=np.int64), np.zeros(0)
        if dense is not None:
            hot = np.flatnonzero(dense[t])
            indices = np.concatenate([indices, matrix.n_features + hot])
            values = np.concatenate([values, dense[t, hot]])
        columns.append((indices, values))
    return columns


class TermReader:
    """What :func:`labelling_terms` reads of a model and one sequence, read once."""

    def __init__(self, final, matrix):
        self.final = final
        self.matrix = matrix
        self.names = column_names(final, matrix)
        self.columns = token_columns(matrix, final)
        self.n_tokens = len(self.columns)
        self.semi_markov = hasattr(final, "segment_classes_")
        self.tree = hasattr(final, "root_coef_")
        edge = getattr(final, "transition_feature_coef_", None)
        self.edge_rows = None
        if edge is not None:
            edge = edge.tocsr()
            # each token's active features' rows of V, as dense (k, C * C) blocks
            self.edge_rows = [edge[indices].toarray() for indices, _ in self.columns]
        self.patterns = None
        if "label_patterns_" in vars(final):
            n_labels = (final.segment_classes_ if self.semi_markov else final.classes_).shape[0]
            patterns, index = fitted_patterns(final.label_patterns_, n_labels, final.order)
            weights = np.zeros(patterns.n_patterns)
            weights[index] = final.pattern_coef_
            self.patterns = (patterns, weights)

    def feature_terms(self, terms, position, weights, suffix=""):
        """Add each active feature of ``position`` times its weight in ``weights`` (a row)."""
        indices, values = self.columns[position]
        for j, v, w in zip(indices.tolist(), values.tolist(), weights[indices].tolist()):
            terms[position, self.names[j] + suffix] += v * w

    def edge_terms(self, terms, position, pair, suffix):
        """Add the transition (link) features of ``position`` for the label pair ``pair``."""
        if self.edge_rows is None:
            return
        indices, values = self.columns[position]
        for j, v, w in zip(indices.tolist(), values.tolist(),
                           self.edge_rows[position][:, pair].tolist()):
            if w:
                terms[position, self.names[j] + suffix] += v * w


def labelling_terms(reader, label_ids):
    """Every term of the score of one labelling (class ids) of the reader's sequence.

    Returns
    -------
    terms : dict of (position, term) to float
        Their sum is the model's log score of the labelling (its
        ``predict_nbest`` score before normalization).
    """
    terms = defaultdict(float)
    if reader.semi_markov:
        _segment_terms(reader, terms, label_ids)
    elif reader.tree:
        _tree_terms(reader, terms, label_ids)
    else:
        _chain_terms(reader, terms, label_ids)
    return dict(terms)


def pattern_term(length):
    """The name of the patterns of ``length`` labels."""
    return f"{PATTERN[:-1]} of {length} labels)"


def _pattern_terms(reader, terms, label_ids, positions):
    """Add the label patterns ending at each label, at ``positions[label index]``."""
    if reader.patterns is None or label_ids.shape[0] == 0:
        return
    patterns, weights = reader.patterns
    ends, found = patterns.occurrences(label_ids, np.array([0, label_ids.shape[0]]))
    lengths = row_lengths(patterns.rows[found])
    for end, k, length in zip(ends.tolist(), found.tolist(), lengths.tolist()):
        terms[int(positions[end]), pattern_term(length)] += float(weights[k])


def _chain_terms(reader, terms, y):
    final = reader.final
    n_classes = final.classes_.shape[0]
    trigram = getattr(final, "transition2_coef_", None)
    n = y.shape[0]
    for t in range(n):
        reader.feature_terms(terms, t, final.coef_[y[t]])
        if t == 0:
            terms[t, START] += float(final.start_coef_[y[t]])
        else:
            terms[t, TRANSITION] += float(final.transition_coef_[y[t - 1], y[t]])
            reader.edge_terms(terms, t, y[t - 1] * n_classes + y[t], " (transition)")
        if trigram is not None and t >= 2:
            terms[t, TRIGRAM] += float(trigram[y[t - 2], y[t - 1], y[t]])
    if n:
        terms[n - 1, END] += float(final.end_coef_[y[n - 1]])
    _pattern_terms(reader, terms, y, np.arange(n))


def _tree_terms(reader, terms, y):
    final = reader.final
    n_classes = final.classes_.shape[0]
    parents = reader.matrix.parents
    for t in range(y.shape[0]):
        reader.feature_terms(terms, t, final.coef_[y[t]])
        parent = int(parents[t])
        if parent < 0:
            terms[t, ROOT] += float(final.root_coef_[y[t]])
        else:
            terms[t, LINK] += float(final.transition_coef_[y[parent], y[t]])
            reader.edge_terms(terms, t, y[parent] * n_classes + y[t], " (link)")


def _segment_terms(reader, terms, tag_ids):
    """A SemiMarkovCRF's terms: per token, and per segment at its first token."""
    final = reader.final
    offsets = np.array([0, tag_ids.shape[0]], dtype=np.int64)
    segmentation, _ = final._codec().read(tag_ids, offsets)
    first, stops, labels, _ = segmentation.bounds(offsets)
    segments = reader.matrix.segments
    length_rows = reader.matrix.segment_length  # L rows of segments per token
    segment_coef = getattr(final, "segment_coef_", None)
    if segment_coef is not None:
        segment_csr = segments.matrix
        segment_names = (segments.feature_names if segments.feature_names is not None
                         else getattr(final, "segment_feature_names_", None))
        if segment_names is None:
            segment_names = [f"x{j}" for j in range(segment_csr.shape[1])]
    for k, (a, b, label) in enumerate(zip(first.tolist(), stops.tolist(), labels.tolist())):
        for t in range(a, b):
            reader.feature_terms(terms, t, final.coef_[label])
        reader.feature_terms(terms, a, final.first_coef_[label], " (first)")
        reader.feature_terms(terms, b - 1, final.last_coef_[label], " (last)")
        size = b - a
        terms[a, LENGTH] += float(final.length_coef_[label, size - 1])
        if segment_coef is not None and size <= length_rows:
            row = segment_csr[a * length_rows + size - 1]
            for j, v in zip(row.indices.tolist(), row.data.tolist()):
                terms[a, f"{segment_names[j]} (segment)"] += v * float(segment_coef[label, j])
        if k == 0:
            terms[a, START] += float(final.start_coef_[label])
        else:
            terms[a, TRANSITION] += float(final.transition_coef_[labels[k - 1], label])
    if first.shape[0]:
        terms[int(first[-1]), END] += float(final.end_coef_[labels[-1]])
    _pattern_terms(reader, terms, labels, first)


def depends_on(key, position):
    """Whether term ``key`` = (its token, its name) of a chain or tree changes with ``position``'s label.

    The terms of ``position`` itself do; of another token, those that join
    its label to that of ``position``: a transition into the next token (and
    its transition features), a trigram or pattern reaching back to
    ``position``, a child's link (and its link features).
    """
    where, term = key
    if where == position:
        return True
    if term in (TRANSITION, TRIGRAM, LINK) or term.endswith((" (transition)", " (link)")):
        return True
    prefix = PATTERN[:-1] + " of "
    return term.startswith(prefix) and int(term[len(prefix):].split()[0]) > where - position


def neighbourhood(reader, position):
    """The positions whose terms change with the label of ``position`` (a chain or tree)."""
    if reader.tree:
        parents = reader.matrix.parents
        return {position, *np.flatnonzero(parents == position).tolist()}
    order = getattr(reader.final, "order", 1)
    if reader.patterns is None and getattr(reader.final, "transition2_coef_", None) is None:
        order = 1
    return set(range(position, min(position + order + 1, reader.n_tokens)))
