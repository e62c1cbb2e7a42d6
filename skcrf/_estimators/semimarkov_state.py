"""What a fitted SemiMarkovCRF holds: its attributes, and the rules a model file must follow.

Declared once (see :mod:`skcrf._estimators.fitted_state`): a model is checked against
it when loaded, and ``fit`` names its weights' blocks after it.
"""

import numpy as np

from .base import CRFEstimator
from .estimator_state import forbidden_where_not_allowed
from .fitted_state import (Array, IfPresent, Integer, Labels, Names, OneOf, weights,
                            weights_or_neginf)
from .segment_tags import _SegmentTags
from ..structures.patterns.chain import fitted_patterns
from ..structures.semimarkov.patterns import segment_automaton_of
from ..tags import SCHEMES

#: Attribute name of each block of :meth:`SemiMarkovStructure.coefficients`.
_COEFFICIENT_NAMES = {"coef": "coef_", "first_coef": "first_coef_", "last_coef": "last_coef_",
                      "segment_coef": "segment_coef_", "length": "length_coef_",
                      "transitions": "transition_coef_", "start": "start_coef_",
                      "end": "end_coef_", "label_patterns": "label_patterns_",
                      "pattern_coef": "pattern_coef_"}


def _tags_are_the_segments(model):
    """``classes_`` are the tags the scheme writes for ``segment_classes_``, in order.

    Predictions index ``classes_`` with the tag ids the codec computes.
    """
    labels = model.segment_classes_.tolist()
    if model.scheme_ != "plain":
        if labels[-1:] != ["O"] or "O" in labels[:-1]:
            raise ValueError(f"segment_classes_ of scheme {model.scheme_} end with 'O', "
                             f"once; got {labels[-3:]!r}")
        labels = labels[:-1]
    codec = _SegmentTags.of_labels(model.scheme_, labels)
    if codec.segment_classes.tolist() != model.segment_classes_.tolist():
        raise ValueError("segment_classes_ are not sorted (the types, then 'O')")
    if codec.classes.tolist() != model.classes_.tolist():
        raise ValueError(f"classes_ are not the {len(codec.classes)} tags scheme_ "
                         f"{model.scheme_!r} writes for segment_classes_")


def _segment_attributes(data):
    """The fitted attributes of the segment features of ``data`` (none without them)."""
    segments = data.features.segments
    if segments is None:
        return {}
    names = data.segment_feature_names
    return {"n_segment_features_in_": segments.n_features,
            "segment_feature_names_": np.asarray(
                [f"x{j}" for j in range(segments.n_features)] if names is None else names,
                dtype=object)}


def _patterns_follow_the_order(model):
    """An order-d model holds its kept segment-label patterns, each an n-gram of its labels.

    ``label_patterns_`` and ``pattern_coef_`` come together, exactly when
    ``order >= 2``, with ``order + 1`` columns of segment label ids.
    """
    state = vars(model)
    patterns = "label_patterns_" in state
    if patterns != ("pattern_coef_" in state):
        raise ValueError("label_patterns_ and pattern_coef_ come together: a model has both "
                         "or neither")
    order = state.get("order", 1)
    if patterns != (order > 1):
        raise ValueError(f"order={order!r} " + ("needs label_patterns_" if order > 1
                                                 else "has no label_patterns_"))
    if patterns:
        rows = model.label_patterns_
        if rows.shape[1] != order + 1:
            raise ValueError(f"label_patterns_ must have order + 1 = {order + 1} columns; "
                             f"it has shape {rows.shape}")
        patterns, _ = fitted_patterns(rows, model.segment_classes_.shape[0], order)
        segment_automaton_of(patterns)  # refuses more automaton states than inference takes


def _segment_weights_come_together(model):
    """A model fitted on segment features has their count, names and weights, or none."""
    names = ("n_segment_features_in_", "segment_feature_names_", "segment_coef_")
    present = [name in vars(model) for name in names]
    if any(present) and not all(present):
        raise ValueError(f"{names[present.index(True)]} needs "
                         f"{names[present.index(False)]}: a model fitted on segment "
                         f"features has all of {', '.join(names)}")


#: The fitted attributes of a SemiMarkovCRF.
SEMI_MARKOV_STATE = CRFEstimator._fitted_state.extended(
    {"segment_classes_": Labels("n_labels", sorted=False),
     "scheme_": OneOf(*SCHEMES),
     "max_segment_length_": Integer(1, dim="n_lengths"),
     "allowed_transitions_": Array(("n_labels", "n_labels"), bool),
     "coef_": Array(("n_labels", "n_features"), values=weights),
     "first_coef_": Array(("n_labels", "n_features"), values=weights),
     "last_coef_": Array(("n_labels", "n_features"), values=weights),
     "length_coef_": Array(("n_labels", "n_lengths"), values=weights_or_neginf),
     "transition_coef_": Array(("n_labels", "n_labels"), values=weights_or_neginf),
     "start_coef_": Array(("n_labels",), values=weights_or_neginf),
     "end_coef_": Array(("n_labels",), values=weights_or_neginf),
     "n_segment_features_in_": IfPresent(Integer(dim="n_segment_features")),
     "segment_feature_names_": IfPresent(Names("n_segment_features")),
     "segment_coef_": IfPresent(Array(("n_labels", "n_segment_features"), values=weights)),
     "label_patterns_": IfPresent(Array(("n_patterns", "pattern_width"), np.int64)),
     "pattern_coef_": IfPresent(Array(("n_patterns",), values=weights))},
    rules=[_tags_are_the_segments, forbidden_where_not_allowed,
           _segment_weights_come_together, _patterns_follow_the_order])
