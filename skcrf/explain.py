"""Why a fitted model labels a token or a sequence as it does.

:func:`explain_token` breaks a token's score for each candidate label into
its terms: every active feature's value times its weight (the unary part of
every structure: ``coef_``), the transition weights from the previous and
into the next predicted label (a chain), and the start or end weight, next to
the token's marginal probabilities; transition features, label patterns and
tree links the token's label changes too. :func:`explain_sequence` compares
the best labelling with the second best and ranks the terms that separate
them, for every structure (a SemiMarkovCRF's segment terms included): their
differences add up to the log-odds of the two labellings.

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

from ._explain_terms import (END, LINK, ROOT, START, TRANSITION, TRIGRAM, TermReader, column_names, depends_on,
                             labelling_terms, neighbourhood, token_columns)
from ._utils.docstrings import fill_sections
from ._utils.validation import check_sequences
from .features import SequenceMatrix

__all__ = ["SequenceExplanation", "TermDifference", "TokenExplanation", "TokenTerm",
           "explain_sequence", "explain_token"]

TokenTerm = namedtuple("TokenTerm", ["term", "value", "scores"])
TokenTerm.__doc__ = """One term of a token's score: its name (a feature, a transition, link,
pattern, start or end weight, or a transition feature with the pair it weights; ``at k``
for a term of token ``k`` that this token's label changes), the feature's value (1.0
for the others) and the term's score for each candidate label (``scores``, a dict of
label to float)."""

TermDifference = namedtuple("TermDifference", ["position", "term", "best", "second",
                                               "difference"])
TermDifference.__doc__ = """A term where the best and the second best labelling differ:
at token ``position``, ``term`` (a feature, a transition, a pattern...; see
:func:`explain_sequence`) scores ``difference`` more in the best labelling (whose label
there is ``best``) than in the second (label ``second``)."""


# The model both explanations' examples fit, on ten short sentences
_example_docs = fill_sections({"toy_model": """\
    >>> X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}]] * 5
    >>> y = [["DET", "N"], ["DET", "N"]] * 5
    >>> crf = CRFClassifier(max_iter=30).fit(X, y)
"""})


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
        matrix = check_sequences([x])  # numbers (a 2-D array) make a SequenceMatrix
        if not isinstance(matrix, SequenceMatrix):
            raise TypeError(f"This {type(final).__name__} was fitted on a SequenceMatrix: "
                            f"pass the sequence as a one-sequence SequenceMatrix (or a 2-D "
                            f"array of numbers).")
    if not isinstance(matrix, SequenceMatrix):
        raise TypeError(f"The featurizing steps made a {type(matrix).__name__}, not a "
                        f"SequenceMatrix.")
    final._features(matrix)  # the columns the model was fitted with, finite values
    return final, matrix


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
        Each active feature (largest effect first), then the other terms
        the token's label changes (see :func:`explain_token`).
    total : dict of label to float
        The sum of the rows: the token's part of each label's score. For a
        chain or a tree, two labels' totals differ by exactly the
        difference of the scores of the labellings that give the token
        these labels and the others their predicted ones.
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
    log_odds : float
        ``log(probabilities[0] / probabilities[1])`` (0.0 with one
        labelling): what the differences of all the rows add up to.
    rows : list of TermDifference
        The terms that score the two differently, largest difference first.
    """

    def __init__(self, best, second, probabilities, rows):
        self.best, self.second = best, second
        self.probabilities = probabilities
        self.log_odds = (float(np.log(probabilities[0]) - np.log(probabilities[1]))
                         if second is not None else 0.0)
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


def _label_ids(final, labels):
    index = {c: k for k, c in enumerate(final.classes_.tolist())}
    return np.array([index[v] for v in labels.tolist()], dtype=np.int64)


def _pruned_labels(final, matrix, position):
    """Which classes a pruned higher-order chain leaves out at ``position`` (or None)."""
    if "pruner_threshold_" not in vars(final):
        return None
    features, offsets = final._features(matrix)
    pruned = np.isneginf(final._potentials(features, offsets).unary[position])
    return pruned if pruned.any() else None


#: Where a token's terms other than its features come: the links to its neighbours
#: first, then the features that condition them, label n-grams, the end.
_TERM_RANK = {START: 0, TRANSITION: 0, LINK: 0, ROOT: 0, TRIGRAM: 2, END: 4}


def _row_name(term, where, position, tags, parents):
    """The name of term ``term`` of token ``where`` in the explanation of token ``position``."""
    if where == position:
        if term == TRANSITION:
            return f"(from {tags[position - 1]})"
        if term == LINK:
            return f"(link from {tags[parents[position]]})"
        return term
    if term == TRANSITION and where == position + 1:
        return f"(to {tags[where]})"
    if term == LINK:
        return f"(link to {tags[where]} at {where})"
    return f"{term} at {where}"


def _structure_rows(final, matrix, position, predicted_ids, labels):
    """The rows of a chain's or tree's token: each term its label changes, per label.

    Each candidate label is scored with the other tokens' predicted labels,
    so the differences of the rows' sums between two labels are the
    differences of those two labellings' scores.
    """
    reader = TermReader(final, matrix)
    near = neighbourhood(reader, position)
    per_label = []
    for c in range(len(labels)):
        ids = predicted_ids.copy()
        ids[position] = c
        per_label.append({key: v for key, v in labelling_terms(reader, ids).items()
                          if key[0] in near and depends_on(key, position)})
    keys = sorted({key for terms in per_label for key in terms},
                  key=lambda key: (key[1].startswith("(") or key[0] != position, key[0],
                                   _TERM_RANK.get(key[1], 3 if key[1].startswith("(") else 1),
                                   key[1]))
    values = {(p, reader.names[j]): float(v) for p in near
              for j, v in zip(*(a.tolist() for a in reader.columns[p]))}
    tags = final.classes_[predicted_ids].tolist()
    parents = reader.matrix.parents
    rows = []
    for key in keys:
        where, term = key
        name = term
        for suffix in (" (transition)", " (link)"):
            if term.endswith(suffix):
                name = term[:-len(suffix)]
        scores = [terms.get(key, 0.0) for terms in per_label]
        label = _row_name(term, where, position, tags, parents)
        if name != term:  # a transition (link) feature: say which pair it weights
            label = f"{name} {_row_name(term[len(name) + 1:], where, position, tags, parents)}"
        rows.append(TokenTerm(label, values.get((where, name), 1.0),
                              dict(zip(labels, scores))))
    unary = [row for key, row in zip(keys, rows)
             if key[0] == position and not key[1].startswith("(")]
    unary.sort(key=lambda row: -max((abs(v) for v in row.scores.values()), default=0.0))
    rows = unary + rows[len(unary):]
    pruned = _pruned_labels(final, matrix, position)
    if pruned is not None:
        rows.append(TokenTerm("(pruned)", 1.0, dict(zip(labels, np.where(
            pruned, -np.inf, 0.0).tolist()))))
    return rows


def _unary_rows(final, matrix, position, labels):
    """A segment model's token: its features' state weights for each segment label."""
    names = column_names(final, matrix)
    indices, values = token_columns(matrix, final)[position]
    contributions = values[:, np.newaxis] * final.coef_[:, indices].T
    order = np.argsort(-np.abs(contributions).max(axis=1, initial=0), kind="stable")
    return [TokenTerm(names[indices[k]], float(values[k]),
                      dict(zip(labels, contributions[k].tolist()))) for k in order]


@_example_docs
def explain_token(model: Any, x: Any, position: int) -> TokenExplanation:
    """The terms of one token's score for each candidate label, with its marginals.

    Parameters
    ----------
    model : estimator
        A fitted :class:`~skcrf.CRFClassifier`, :class:`~skcrf.SemiMarkovCRF`
        or :class:`~skcrf.TreeCRF`, or a fitted Pipeline that ends in one.
    x : sequence
        One sequence as ``model`` takes it (feature dicts, raw tokens for a
        Pipeline, a 2-D array of numbers), or a one-sequence SequenceMatrix.
    position : int
        The token, from 0.

    Returns
    -------
    explanation : TokenExplanation
        For a chain or a tree: every term the token's label changes, with
        the other tokens at their predicted labels: its active features
        (sparse and dense columns, by name), the transition from the
        previous and into the next label with the transition features that
        condition them, start and end weights, the label patterns of orders
        2 and more that include the token, a tree's links to the parent and
        the children; a pruned model adds a ``(pruned)`` row, ``-inf`` for
        the labels its pruner leaves out. Two labels' totals differ by the
        difference of the scores of those two labellings. For a
        SemiMarkovCRF, whose labels belong to segments: the token's state
        weights for each segment label.

    Examples
    --------
    >>> from skcrf import CRFClassifier
    >>> from skcrf.explain import explain_token
    <<toy_model>>
    >>> explanation = explain_token(crf, [{"w": "the"}, {"w": "dog"}], 1)
    >>> explanation.predicted, [row.term for row in explanation.rows]
    ('N', ['w=dog', '(from DET)', '(end)'])
    """
    final, matrix = _final_and_matrix(model, x)
    n_tokens = int(matrix.offsets[-1])
    if not isinstance(position, (int, np.integer)) or not 0 <= position < n_tokens:
        raise ValueError(f"position {position!r} is not a token of this sequence of "
                         f"{n_tokens} tokens.")
    position = int(position)
    labels, _ = _weight_labels(final)
    labels = labels.tolist()
    predicted = final.predict(matrix)[0]
    if hasattr(final, "segment_classes_"):
        rows = _unary_rows(final, matrix, position, labels)
    else:
        rows = _structure_rows(final, matrix, position, _label_ids(final, predicted), labels)
    marginals = final.predict_marginals(matrix)[0][position]
    return TokenExplanation(position, labels, rows,
                            dict(zip(final.classes_.tolist(), marginals.tolist())),
                            predicted.tolist()[position])


def _two_best(final, matrix):
    """The two most likely labellings with their probabilities (one if there is one).

    A model without n-best decoding (a TreeCRF) gives its second best as
    the most likely labelling that differs from the best at some token: the
    best of those with one token fixed to another label, all decoded in one
    call.
    """
    try:
        return final.predict_nbest(matrix, n=2)[0]
    except NotImplementedError:
        pass
    best, proba = final.predict(matrix, return_proba=True)
    best = best[0]
    classes = final.classes_.tolist()
    fixed = [[None] * t + [c] + [None] * (best.shape[0] - t - 1)
             for t, label in enumerate(best.tolist()) for c in classes if c != label]
    if not fixed:
        return [(best, float(proba[0]))]
    repeated = matrix.take(np.zeros(len(fixed), dtype=np.int64))
    others = final.predict(repeated, fixed=fixed)
    # predict's probabilities would be given the fixed label: score the joint ones
    log_p = final.sequence_log_proba(repeated, [labels.tolist() for labels in others])
    k = int(np.argmax(log_p))
    if not np.isfinite(log_p[k]):
        return [(best, float(proba[0]))]
    return [(best, float(proba[0])), (others[k], float(np.exp(log_p[k])))]


@_example_docs
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
        Every term of the model's score that the two labellings score
        differently, at the token it belongs to: each active feature's state
        weight (sparse and dense columns), transitions and the transition
        features that condition them (named ``"<feature> (transition)"``),
        start and end weights, label patterns of orders 2 and more
        (``(pattern of k labels)``, at the token a pattern ends), a tree's links, link
        features and roots, and a SemiMarkovCRF's first-token, last-token,
        length and segment-feature terms (at the token its segment starts).
        With ``top=None`` the differences add up to
        :attr:`SequenceExplanation.log_odds`.

    Examples
    --------
    >>> from skcrf import CRFClassifier
    >>> from skcrf.explain import explain_sequence
    <<toy_model>>
    >>> explanation = explain_sequence(crf, [{"w": "the"}, {"w": "dog"}], top=None)
    >>> total = sum(row.difference for row in explanation.rows)
    >>> bool(abs(total - explanation.log_odds) < 1e-9)
    True
    """
    final, matrix = _final_and_matrix(model, x)
    nbest = _two_best(final, matrix)
    best = nbest[0][0]
    if len(nbest) < 2:
        return SequenceExplanation(best, None, (nbest[0][1], 0.0), [])
    second = nbest[1][0]
    reader = TermReader(final, matrix)
    best_terms = labelling_terms(reader, _label_ids(final, best))
    second_terms = labelling_terms(reader, _label_ids(final, second))
    best_tags, second_tags = best.tolist(), second.tolist()
    rows = []
    for key in sorted(best_terms.keys() | second_terms.keys()):
        d = best_terms.get(key, 0.0) - second_terms.get(key, 0.0)
        if d:
            rows.append(TermDifference(key[0], key[1], best_tags[key[0]], second_tags[key[0]],
                                       d))
    rows.sort(key=lambda row: -abs(row.difference))
    return SequenceExplanation(best, second, (nbest[0][1], nbest[1][1]),
                               rows if top is None else rows[:top])
