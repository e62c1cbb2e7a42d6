"""Why a fitted model labels a token or a sequence as it does.

:func:`explain_token` breaks a token's score for each candidate label into
its terms: every active feature's value times its weight (the unary part of
every structure: ``coef_``), the transition weights from the previous and
into the next predicted label (a chain), and the start or end weight, next to
the token's marginal probabilities. :func:`explain_sequence` compares the best
labelling with the second best and ranks the terms that separate them.

Both take one sequence as the model takes it (feature dicts, raw tokens for a
Pipeline whose first steps featurize them, or a one-sequence SequenceMatrix)
and name features as the vectorizer does. The results show as tables:
``.to_frame()`` is a pandas DataFrame (when pandas is installed), ``.rows``
the same as named tuples, and a notebook renders them as HTML. For the
weights over the whole model (eli5's ``explain_weights``), see
:mod:`skcrf.inspection`.
"""

from __future__ import annotations

import html
from collections import namedtuple
from typing import Any

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from .features import SequenceMatrix

__all__ = ["SequenceExplanation", "TermDifference", "TokenExplanation", "TokenTerm",
           "explain_sequence", "explain_token"]

TokenTerm = namedtuple("TokenTerm", ["term", "value", "scores"])
TokenTerm.__doc__ = """One term of a token's score: its name (a feature, or a transition,
start or end weight), the feature's value (1.0 for the others) and the term's score for
each candidate label (``scores``, a dict of label to float)."""

TermDifference = namedtuple("TermDifference", ["position", "term", "best", "second",
                                               "difference"])
TermDifference.__doc__ = """A term where the best and the second best labelling differ:
at token ``position``, ``term`` (a feature or a transition) scores ``difference`` more
for the best labelling's label ``best`` than for the second's ``second``."""


def _final_and_matrix(model, x):
    """The CRF at the end of ``model`` and ``x`` as its one-sequence SequenceMatrix."""
    final = model.steps[-1][1] if isinstance(model, Pipeline) else model
    if not hasattr(final, "_fitted_model"):
        raise TypeError(f"explanations need a fitted CRF estimator of skcrf (or a Pipeline "
                        f"that ends in one); got a {type(final).__name__}.")
    check_is_fitted(final, "coef_")
    if isinstance(x, SequenceMatrix):
        if len(x) != 1:
            raise ValueError(f"Explain one sequence at a time: this SequenceMatrix holds "
                             f"{len(x)}.")
        matrix = x
    elif isinstance(model, Pipeline):
        matrix = model[:-1].transform([x])
    elif getattr(final, "vectorizer_", None) is not None:
        matrix = final.vectorizer_.transform([x])
    else:
        raise TypeError(f"This {type(final).__name__} was fitted on a SequenceMatrix: pass "
                        f"the sequence as a one-sequence SequenceMatrix.")
    if not isinstance(matrix, SequenceMatrix):
        raise TypeError(f"The featurizing steps made a {type(matrix).__name__}, not a "
                        f"SequenceMatrix.")
    return final, matrix


def _feature_names(final, matrix):
    if getattr(final, "feature_columns_", None) is not None:
        return list(map(str, final.feature_names_))  # the names of the kept columns only
    names = matrix.feature_names
    if names is None and getattr(final, "vectorizer_", None) is not None:
        names = final.vectorizer_.feature_names_
    if names is None:
        names = [f"x{j}" for j in range(matrix.n_features)]
    return list(map(str, names))


def _weight_labels(final):
    """The labels of the rows of ``coef_``, and the row of each class (tag) of the model."""
    if hasattr(final, "segment_classes_"):
        return final.segment_classes_, final._codec()._tag_labels
    return final.classes_, np.arange(final.classes_.shape[0])


def _html_table(header, rows, caption):
    cells = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(
        f"<td>{html.escape(f'{v:.4g}' if isinstance(v, float) else str(v))}</td>" for v in row)
        + "</tr>" for row in rows)
    return (f"<table><caption>{html.escape(caption)}</caption><thead><tr>{cells}</tr></thead>"
            f"<tbody>{body}</tbody></table>")


class TokenExplanation:
    """The terms of one token's score for each candidate label, and its marginals.

    Attributes
    ----------
    position : int
    labels : list
        The candidate labels of the weights (``classes_``; a SemiMarkovCRF's
        ``segment_classes_``).
    rows : list of TokenTerm
        Each active feature (largest effect first), then the transition
        from the previous and into the next predicted label, or the start or
        end weight, that apply.
    total : dict of label to float
        The sum of the rows: the token's part of each label's score.
    marginals : dict of label to float
        ``p(y_position = label | x)`` for each class (tag) of the model.
    predicted : label
        The token's label in the best labelling.
    """

    def __init__(self, position, labels, rows, marginals, predicted):
        self.position = position
        self.labels = list(labels)
        self.rows = rows
        self.total = {label: float(sum(row.scores[label] for row in rows))
                      for label in self.labels}
        self.marginals = marginals
        self.predicted = predicted

    def to_frame(self):
        """A pandas DataFrame: a row per term, a column per label (plus the feature value)."""
        import pandas as pd

        frame = pd.DataFrame([{"term": r.term, "value": r.value, **r.scores}
                              for r in self.rows], columns=["term", "value", *self.labels])
        return frame.set_index("term")

    def _repr_html_(self):
        header = ["term", "value", *self.labels]
        rows = [[r.term, r.value, *[r.scores[label] for label in self.labels]]
                for r in self.rows]
        rows.append(["total", "", *[self.total[label] for label in self.labels]])
        marginals = ", ".join(f"{label}: {p:.3f}" for label, p in self.marginals.items())
        return _html_table(header, rows, f"token {self.position}, predicted "
                                         f"{self.predicted!r}; marginals {marginals}")

    def __repr__(self):
        return (f"TokenExplanation(position={self.position}, predicted={self.predicted!r}, "
                f"{len(self.rows)} terms)")


class SequenceExplanation:
    """What separates the best labelling of a sequence from the second best.

    Attributes
    ----------
    best, second : ndarray
        The two most likely labellings (``second`` is None for a sequence
        with one labelling).
    probabilities : tuple of float
        Their probabilities.
    rows : list of TermDifference
        The terms that score the two differently, largest difference first.
    """

    def __init__(self, best, second, probabilities, rows):
        self.best, self.second = best, second
        self.probabilities = probabilities
        self.rows = rows

    def to_frame(self):
        """A pandas DataFrame of :attr:`rows`."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=TermDifference._fields)

    def _repr_html_(self):
        caption = (f"best labelling (p={self.probabilities[0]:.3f}) against the second "
                   f"(p={self.probabilities[1]:.3f})" if self.second is not None
                   else "the sequence has one labelling")
        return _html_table(TermDifference._fields, self.rows, caption)

    def __repr__(self):
        return f"SequenceExplanation({len(self.rows)} differing terms)"


def _active(final, matrix, position):
    """The model's columns active at ``position`` and their values.

    A model that kept only the columns of its training data
    (``feature_columns_``, a wide hashed input) has no weight for the others.
    """
    row = matrix.matrix[position]
    columns = getattr(final, "feature_columns_", None)
    if columns is None:
        return row.indices, row.data
    at = {int(c): k for k, c in enumerate(columns.tolist())}
    kept = [(at[j], v) for j, v in zip(row.indices.tolist(), row.data.tolist()) if j in at]
    return (np.array([k for k, _ in kept], dtype=np.intp),
            np.array([v for _, v in kept], dtype=np.float64))


def _transition_rows(final, label_ids, position, labels):
    """Transition, start and end terms of the token at ``position`` of a chain."""
    if not hasattr(final, "start_coef_") or hasattr(final, "segment_classes_"):
        return []  # a tree's links and a segment model's transitions join segments
    rows = []
    n = label_ids.shape[0]
    if position == 0:
        rows.append(TokenTerm("(start)", 1.0, dict(zip(labels, final.start_coef_.tolist()))))
    else:
        previous = final.classes_[label_ids[position - 1]]
        rows.append(TokenTerm(f"(from {previous})", 1.0, dict(zip(
            labels, final.transition_coef_[label_ids[position - 1]].tolist()))))
    if position == n - 1:
        rows.append(TokenTerm("(end)", 1.0, dict(zip(labels, final.end_coef_.tolist()))))
    else:
        following = final.classes_[label_ids[position + 1]]
        rows.append(TokenTerm(f"(to {following})", 1.0, dict(zip(
            labels, final.transition_coef_[:, label_ids[position + 1]].tolist()))))
    return rows


def explain_token(model: Any, x: Any, position: int) -> TokenExplanation:
    """The terms of one token's score for each candidate label, with its marginals.

    Parameters
    ----------
    model : estimator
        A fitted :class:`~skcrf.CRFClassifier`, :class:`~skcrf.SemiMarkovCRF`
        or :class:`~skcrf.TreeCRF`, or a fitted Pipeline that ends in one.
    x : sequence
        One sequence as ``model`` takes it, or a one-sequence SequenceMatrix.
    position : int
        The token, from 0.

    Returns
    -------
    explanation : TokenExplanation
        Only the unary part (``coef_``) and, for a chain, the first-order
        transition, start and end weights around the predicted neighbours;
        the terms of transition features, label patterns, segments and tree
        links are not broken down.

    Examples
    --------
    >>> from skcrf import CRFClassifier
    >>> from skcrf.explain import explain_token
    >>> X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}]] * 5
    >>> y = [["DET", "N"], ["DET", "N"]] * 5
    >>> crf = CRFClassifier(max_iter=30).fit(X, y)
    >>> explanation = explain_token(crf, [{"w": "the"}, {"w": "dog"}], 1)
    >>> explanation.predicted, [row.term for row in explanation.rows]
    ('N', ['w=dog', '(from DET)', '(end)'])
    """
    final, matrix = _final_and_matrix(model, x)
    n_tokens = int(matrix.offsets[-1])
    if not 0 <= position < n_tokens:
        raise ValueError(f"position {position!r} is not a token of this sequence of "
                         f"{n_tokens} tokens.")
    names = _feature_names(final, matrix)
    labels, _ = _weight_labels(final)
    labels = labels.tolist()
    coef = final.coef_
    indices, values = _active(final, matrix, position)
    contributions = values[:, np.newaxis] * coef[:, indices].T
    order = np.argsort(-np.abs(contributions).max(axis=1, initial=0), kind="stable")
    rows = [TokenTerm(names[indices[k]], float(values[k]),
                      dict(zip(labels, contributions[k].tolist()))) for k in order]
    predicted = final.predict(matrix)[0]
    index = {c: k for k, c in enumerate(final.classes_.tolist())}
    label_ids = np.array([index[v] for v in predicted.tolist()], dtype=np.int64)
    rows += _transition_rows(final, label_ids, position, labels)
    marginals = final.predict_marginals(matrix)[0][position]
    return TokenExplanation(position, labels, rows,
                            dict(zip(final.classes_.tolist(), marginals.tolist())),
                            predicted.tolist()[position])


def explain_sequence(model: Any, x: Any, *, top: int | None = 10) -> SequenceExplanation:
    """The tokens and features that most separate the best labelling from the second.

    Parameters
    ----------
    model : estimator
        As for :func:`explain_token`.
    x : sequence
        One sequence as ``model`` takes it, or a one-sequence SequenceMatrix.
    top : int or None, default=10
        The number of terms to keep (None: all), largest difference first.

    Returns
    -------
    explanation : SequenceExplanation
        The terms compared are those :func:`explain_token` shows: each
        token's features (through the labels of the weights: a
        SemiMarkovCRF's segment labels) and, for a chain, the first-order
        transitions, start and end.
    """
    final, matrix = _final_and_matrix(model, x)
    nbest = final.predict_nbest(matrix, n=2)[0]
    best = nbest[0][0]
    if len(nbest) < 2:
        return SequenceExplanation(best, None, (nbest[0][1], 0.0), [])
    second = nbest[1][0]
    names = _feature_names(final, matrix)
    weight_labels, row_of_class = _weight_labels(final)
    index = {c: k for k, c in enumerate(final.classes_.tolist())}
    best_ids = np.array([index[v] for v in best.tolist()], dtype=np.int64)
    second_ids = np.array([index[v] for v in second.tolist()], dtype=np.int64)
    rows = []
    coef = final.coef_
    for t in np.flatnonzero(row_of_class[best_ids] != row_of_class[second_ids]).tolist():
        a, b = row_of_class[best_ids[t]], row_of_class[second_ids[t]]
        indices, values = _active(final, matrix, t)
        for j, v, d in zip(indices.tolist(), values.tolist(),
                           (values * (coef[a, indices] - coef[b, indices])).tolist()):
            if d:
                rows.append(TermDifference(t, names[j], weight_labels.tolist()[a],
                                           weight_labels.tolist()[b], d))
    if hasattr(final, "start_coef_") and not hasattr(final, "segment_classes_"):
        n = best_ids.shape[0]
        for t in range(n + 1):
            term = ("(start)" if t == 0 else "(end)" if t == n else "(transition)")
            pick = (lambda ids: final.start_coef_[ids[0]]) if t == 0 else (
                (lambda ids: final.end_coef_[ids[-1]]) if t == n else
                (lambda ids, t=t: final.transition_coef_[ids[t - 1], ids[t]]))
            d = float(pick(best_ids) - pick(second_ids))
            if d:
                where = min(t, n - 1)
                rows.append(TermDifference(where, term, best.tolist()[where],
                                           second.tolist()[where], d))
    rows.sort(key=lambda row: -abs(row.difference))
    return SequenceExplanation(best, second, (nbest[0][1], nbest[1][1]),
                               rows if top is None else rows[:top])
