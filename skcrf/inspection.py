"""Readable tables of the weights of a fitted CRFClassifier or SemiMarkovCRF.

:func:`state_features` lists the strongest (feature, label) weights,
:func:`transition_features` the (label, next label) weights,
:func:`trigram_features` the label-trigram weights of an order-2 chain,
:func:`pattern_features` the label-pattern weights of a chain of any order,
:func:`edge_features` the strongest transition-feature weights, and for a
:class:`~skcrf.SemiMarkovCRF` :func:`boundary_features` the weights of a
segment's first and last token and :func:`length_weights` those of its
length, all as lists of named tuples: ``print(format_table(rows))`` shows
them as text and ``pandas.DataFrame(rows)`` turns them into a data frame with
named columns. The labels of a SemiMarkovCRF's weights are its segment labels
(``segment_classes_``), not its tags.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Hashable, Iterable, Sequence

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ._utils.docstrings import fill_sections

__all__ = ["BoundaryFeature", "EdgeFeature", "LabelPattern", "SegmentLength", "StateFeature",
           "Transition", "Trigram", "boundary_features", "edge_features", "format_table",
           "length_weights", "pattern_features", "state_features", "transition_features",
           "trigram_features"]

StateFeature = namedtuple("StateFeature", ["feature", "label", "weight"])
StateFeature.__doc__ = """Weight of one feature for one label (a cell of ``coef_``)."""

Transition = namedtuple("Transition", ["from_label", "to_label", "weight"])
Transition.__doc__ = """Weight of label ``to_label`` following ``from_label``
(a cell of ``transition_coef_``)."""

Trigram = namedtuple("Trigram", ["first_label", "second_label", "third_label", "weight"])
Trigram.__doc__ = """Weight of the label trigram (first, second, third) on consecutive
tokens (a cell of ``transition2_coef_``)."""

LabelPattern = namedtuple("LabelPattern", ["labels", "weight"])
LabelPattern.__doc__ = """Weight of a label n-gram (``labels``, oldest first) each time it
occurs on consecutive tokens: a row of ``label_patterns_`` and its ``pattern_coef_``."""

EdgeFeature = namedtuple("EdgeFeature", ["feature", "from_label", "to_label", "weight"])
EdgeFeature.__doc__ = """Weight a token's feature adds to the transition from
``from_label`` (previous token) to ``to_label`` (this token): an entry of
``transition_feature_coef_``."""

BoundaryFeature = namedtuple("BoundaryFeature", ["feature", "label", "position", "weight"])
BoundaryFeature.__doc__ = """Weight of a feature of the ``"first"`` or ``"last"`` token
of a segment labelled ``label`` (a cell of a SemiMarkovCRF's ``first_coef_`` or
``last_coef_``)."""

SegmentLength = namedtuple("SegmentLength", ["label", "length", "weight"])
SegmentLength.__doc__ = """Weight of a segment of ``length`` tokens labelled ``label``
(a cell of a SemiMarkovCRF's ``length_coef_``)."""


# What the docstrings of the segment model's tables share (their ``<<name>>`` lines)
_segment_docs = fill_sections({
    "segment_model": """\
    crf : SemiMarkovCRF
        A fitted model.
""",
    "segment_classes": """\
    classes : list of labels, default=None
        Segment labels to list, in this order; by default all of
        ``crf.segment_classes_``.
""",
})


# The two sentences the chain tables' examples fit a model on
_example_docs = fill_sections({"toy_corpus": """\
    >>> X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}]]
    >>> y = [["DET", "N"], ["DET", "N"]]
"""})


def _check_top(top):
    if top is not None and (isinstance(top, bool) or not isinstance(top, (int, np.integer))
                            or top < 1):
        raise ValueError(f"top must be a positive integer or None; got {top!r}.")


def _weight_labels(crf):
    """The labels of the rows of ``coef_``: the segment labels of a segment model, else classes_."""
    labels = getattr(crf, "segment_classes_", None)
    return (crf.classes_ if labels is None else labels).tolist()


def _class_indices(crf, classes):
    """Row indices in ``coef_`` of the requested labels, in the order given."""
    # tolist() gives Python str / int, so a plain "PER" finds np.str_("PER").
    labels = _weight_labels(crf)
    index = {label: k for k, label in enumerate(labels)}
    if classes is None:
        return list(range(len(index)))
    if isinstance(classes, (str, bytes)) or not hasattr(classes, "__iter__"):
        raise TypeError(f"classes must be a list of labels; got {classes!r}. "
                        f"Wrap a single label in a list.")
    missing = [label for label in classes if label not in index]
    if missing:
        raise ValueError(f"Unknown label(s) {missing!r}; the model's labels are "
                         f"{labels!r}.")
    return [index[label] for label in classes]


def _strongest(weights, top):
    """Indices of the nonzero entries by decreasing absolute value.

    The sort is stable, so equal weights keep their column order and the
    result does not depend on the platform's sort.
    """
    nonzero = np.flatnonzero(weights)
    order = nonzero[np.argsort(-np.abs(weights[nonzero]), kind="stable")]
    return order if top is None else order[:top]


@_example_docs
def state_features(crf: BaseEstimator, *, top: int | None = 20,
                   classes: Sequence[Hashable] | None = None) -> list[StateFeature]:
    """The strongest state weights of each label: (feature, label, weight) rows.

    Parameters
    ----------
    crf : CRFClassifier or SemiMarkovCRF
        A fitted model.
    top : int or None, default=20
        Number of features listed per label, those with the largest absolute
        weight. None lists every nonzero weight.
    classes : list of labels, default=None
        Labels to list, in this order; by default all of ``crf.classes_``
        (``segment_classes_`` for a SemiMarkovCRF).

    Returns
    -------
    rows : list of StateFeature
        Named tuples ``(feature, label, weight)``, grouped by label and, within
        a label, by decreasing absolute weight. Zero weights (common with L1
        regularization) are left out.

    Examples
    --------
    >>> from skcrf import CRFClassifier
    >>> from skcrf.inspection import state_features, format_table
    <<toy_corpus>>
    >>> crf = CRFClassifier(alpha=0.1).fit(X, y)
    >>> rows = state_features(crf, top=2, classes=["N"])
    >>> [(row.feature, row.label) for row in rows]
    [('w=cat', 'N'), ('w=dog', 'N')]
    >>> rows[0].weight > 0
    True
    """
    check_is_fitted(crf, ["coef_", "classes_", "feature_names_"])
    _check_top(top)
    labels = _weight_labels(crf)
    names = crf.feature_names_
    rows = []
    for k in _class_indices(crf, classes):
        for j in _strongest(crf.coef_[k], top):
            rows.append(StateFeature(str(names[j]), labels[k], float(crf.coef_[k, j])))
    return rows


@_segment_docs
def boundary_features(crf: BaseEstimator, *, top: int | None = 20,
                      classes: Sequence[Hashable] | None = None) -> list[BoundaryFeature]:
    """The strongest weights of the features of a segment's first and last token.

    Parameters
    ----------
    <<segment_model>>
    top : int or None, default=20
        Number of features listed per label and position, by decreasing
        absolute weight. None lists every nonzero weight.
    <<segment_classes>>

    Returns
    -------
    rows : list of BoundaryFeature
        Named tuples ``(feature, label, position, weight)``, position
        ``"first"`` or ``"last"``, grouped by label then position.

    Examples
    --------
    >>> from skcrf import SemiMarkovCRF
    >>> from skcrf.inspection import boundary_features
    >>> X = [[{"w": "Ada"}, {"w": "Lovelace"}, {"w": "wrote"}],
    ...      [{"w": "Alan"}, {"w": "Turing"}, {"w": "ran"}]]
    >>> y = [["B-PER", "I-PER", "O"], ["B-PER", "I-PER", "O"]]
    >>> crf = SemiMarkovCRF(alpha=0.1).fit(X, y)
    >>> sorted((row.feature, row.position) for row in
    ...        boundary_features(crf, top=2, classes=["PER"]))
    [('w=Ada', 'first'), ('w=Alan', 'first'), ('w=Lovelace', 'last'), ('w=Turing', 'last')]
    """
    check_is_fitted(crf, ["first_coef_", "last_coef_", "segment_classes_", "feature_names_"])
    _check_top(top)
    labels = _weight_labels(crf)
    names = crf.feature_names_
    rows = []
    for k in _class_indices(crf, classes):
        for position, weights in (("first", crf.first_coef_[k]), ("last", crf.last_coef_[k])):
            for j in _strongest(weights, top):
                rows.append(BoundaryFeature(str(names[j]), labels[k], position,
                                            float(weights[j])))
    return rows


@_segment_docs
def length_weights(crf: BaseEstimator, *,
                   classes: Sequence[Hashable] | None = None) -> list[SegmentLength]:
    """The weight of every segment length each label may take.

    Parameters
    ----------
    <<segment_model>>
    <<segment_classes>>

    Returns
    -------
    rows : list of SegmentLength
        Named tuples ``(label, length, weight)`` by label then length; the
        lengths a label may not take (weight ``-inf``) are left out.
    """
    check_is_fitted(crf, ["length_coef_", "segment_classes_"])
    labels = _weight_labels(crf)
    rows = []
    for k in _class_indices(crf, classes):
        for d in np.flatnonzero(np.isfinite(crf.length_coef_[k])).tolist():
            rows.append(SegmentLength(labels[k], d + 1, float(crf.length_coef_[k, d])))
    return rows


@_example_docs
def transition_features(crf: BaseEstimator, *, top: int | None = None) -> list[Transition]:
    """Transition weights as (from_label, to_label, weight) rows.

    Parameters
    ----------
    crf : CRFClassifier, SemiMarkovCRF or TreeCRF
        A fitted model; a SemiMarkovCRF's are between consecutive segments,
        a TreeCRF's from a parent's label to its child's.
    top : int or None, default=None
        Number of transitions listed, those with the largest absolute weight;
        None lists all of them.

    Returns
    -------
    rows : list of Transition
        Named tuples ``(from_label, to_label, weight)`` by decreasing absolute
        weight; a forbidden transition (weight ``-inf``) comes first. Zero
        weights are listed too when ``top`` is None, so that the table is the
        whole matrix.

    Examples
    --------
    >>> from skcrf import CRFClassifier
    >>> from skcrf.inspection import transition_features
    <<toy_corpus>>
    >>> crf = CRFClassifier(alpha=0.1).fit(X, y)
    >>> strongest = transition_features(crf, top=1)[0]
    >>> strongest.from_label, strongest.to_label, strongest.weight > 0
    ('DET', 'N', True)
    """
    check_is_fitted(crf, ["transition_coef_", "classes_"])
    _check_top(top)
    labels = _weight_labels(crf)
    weights = crf.transition_coef_
    n_classes = weights.shape[0]
    flat = weights.ravel()
    order = np.argsort(-np.abs(flat), kind="stable")
    if top is not None:
        order = order[:top]
    return [Transition(labels[i // n_classes], labels[i % n_classes], float(flat[i]))
            for i in order.tolist()]


def _pattern_weights(crf):
    """(rows of class ids, left-padded with -1; weights) of a model's label patterns."""
    if "label_patterns_" in vars(crf):
        return np.asarray(crf.label_patterns_), np.asarray(crf.pattern_coef_)
    if hasattr(crf, "transition2_coef_"):  # a model fitted before label patterns
        trigram = np.asarray(crf.transition2_coef_)
        codes = np.flatnonzero(trigram)
        rows = np.stack(np.unravel_index(codes, trigram.shape), axis=1)
        return rows, trigram.ravel()[codes]
    raise ValueError("This model has no label-pattern weights: fit it with order=2 or more.")


def pattern_features(crf: BaseEstimator, *, top: int | None = 20,
                     length: int | None = None) -> list[LabelPattern]:
    """The strongest label-pattern weights of a chain (or segment model) of order 2 or more.

    Parameters
    ----------
    crf : CRFClassifier or SemiMarkovCRF
        A model fitted with ``order >= 2``; a SemiMarkovCRF's patterns are
        n-grams of consecutive segments' labels (``segment_classes_``).
    top : int or None, default=20
        Number of patterns listed, by decreasing absolute weight; None lists
        every pattern the model keeps (those of weight 0 are not kept).
    length : int or None, default=None
        List only the n-grams of this many labels (3 to ``order + 1``).

    Returns
    -------
    rows : list of LabelPattern
        Named tuples ``(labels, weight)``, ``labels`` a tuple of labels from
        ``classes_`` (``segment_classes_``), oldest first; equal weights in the
        model's order.

    Examples
    --------
    >>> from skcrf import CRFClassifier
    >>> from skcrf.inspection import pattern_features
    >>> X = [[{"w": "a"}, {"w": "b"}, {"w": "c"}]] * 3
    >>> y = [["x", "y", "x"]] * 3
    >>> crf = CRFClassifier(alpha=0.1, l1_ratio=0, order=2).fit(X, y)
    >>> [row.labels for row in pattern_features(crf)]
    [('x', 'y', 'x')]
    """
    check_is_fitted(crf, ["classes_"])
    _check_top(top)
    rows, weights = _pattern_weights(crf)
    lengths = rows.shape[1] - (rows < 0).sum(axis=1)
    chosen = np.ones(rows.shape[0], dtype=bool) if length is None else lengths == length
    labels = _weight_labels(crf)  # segment labels of a SemiMarkovCRF, not its tags
    order = np.flatnonzero(chosen)
    order = order[np.argsort(-np.abs(weights[order]), kind="stable")]
    if top is not None:
        order = order[:top]
    return [LabelPattern(tuple(labels[k] for k in rows[i] if k >= 0), float(weights[i]))
            for i in order.tolist()]


def trigram_features(crf: BaseEstimator, *, top: int | None = 20) -> list[Trigram]:
    """The strongest label-trigram weights of a chain of order 2 or more.

    Parameters
    ----------
    crf : CRFClassifier
        A model fitted with ``order >= 2``.
    top : int or None, default=20
        Number of trigrams listed, by decreasing absolute weight; None lists
        every nonzero one.

    Returns
    -------
    rows : list of Trigram
        Named tuples ``(first_label, second_label, third_label, weight)``.
        See :func:`pattern_features` for the longer patterns of higher orders.
    """
    check_is_fitted(crf, ["classes_"])
    _check_top(top)
    try:
        patterns = pattern_features(crf, top=None, length=3)
    except ValueError:
        raise ValueError("This model has no trigram weights: fit it with order=2 or "
                         "more.") from None
    rows = [Trigram(*row.labels, row.weight) for row in patterns if row.weight != 0.0]
    return rows if top is None else rows[:top]


@_example_docs
def edge_features(crf: BaseEstimator, *, top: int | None = 20) -> list[EdgeFeature]:
    """The strongest transition-feature weights: (feature, from_label, to_label, weight) rows.

    With ``transition_features``, a token's feature ``f`` adds
    ``V[f, a, b]`` to the score of the transition from label ``a`` (previous
    token) to label ``b`` (this token).

    Parameters
    ----------
    crf : CRFClassifier
        A model fitted with ``transition_features``.
    top : int or None, default=20
        Number of rows listed, by decreasing absolute weight; None lists every
        nonzero weight.

    Returns
    -------
    rows : list of EdgeFeature

    Examples
    --------
    >>> from skcrf import CRFClassifier
    >>> from skcrf.inspection import edge_features
    <<toy_corpus>>
    >>> crf = CRFClassifier(alpha=0.1, transition_features=["w="]).fit(X, y)
    >>> [(row.feature, row.from_label, row.to_label) for row in edge_features(crf, top=2)]
    [('w=cat', 'DET', 'N'), ('w=dog', 'DET', 'N')]
    """
    check_is_fitted(crf, ["classes_", "feature_names_"])
    _check_top(top)
    if not hasattr(crf, "transition_feature_coef_"):
        raise ValueError(
            "This model has no transition-feature weights: fit it with transition_features.")
    labels = crf.classes_.tolist()
    n_classes = len(labels)
    weights = crf.transition_feature_coef_.tocoo()
    rows = []
    for k in _strongest(weights.data, top).tolist():
        a, b = divmod(int(weights.col[k]), n_classes)
        rows.append(EdgeFeature(str(crf.feature_names_[weights.row[k]]), labels[a], labels[b],
                                float(weights.data[k])))
    return rows


def format_table(rows: Iterable[tuple], *, digits: int = 4) -> str:
    """Align the rows of :func:`state_features` or :func:`transition_features` as text.

    Parameters
    ----------
    rows : list of namedtuple
        Rows of one kind; their field names become the header.
    digits : int, default=4
        Digits after the decimal point of float columns.

    Returns
    -------
    text : str
        One header line and one line per row; text columns left-aligned,
        numbers right-aligned. An empty ``rows`` gives an empty string.

    Examples
    --------
    >>> from skcrf.inspection import StateFeature, format_table
    >>> print(format_table([StateFeature("w=cat", "N", 1.25),
    ...                     StateFeature("suffix=s", "N", -0.5)], digits=2))
    feature   label  weight
    w=cat     N       +1.25
    suffix=s  N       -0.50
    """
    if not rows:
        return ""
    header = list(rows[0]._fields)
    cells = [[_format_cell(value, digits) for value in row] for row in rows]
    numeric = [isinstance(value, (float, np.floating)) for value in rows[0]]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
    lines = []
    for line in [header, *cells]:
        padded = [cell.rjust(width) if is_number else cell.ljust(width)
                  for cell, width, is_number in zip(line, widths, numeric)]
        lines.append("  ".join(padded).rstrip())
    return "\n".join(lines)


def _format_cell(value, digits):
    if isinstance(value, (float, np.floating)):
        return f"{value:+.{digits}f}"
    return str(value)
