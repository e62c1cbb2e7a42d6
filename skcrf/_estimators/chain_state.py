"""What a fitted CRFClassifier holds, and the rules it must follow, checked at load.

Declared apart from the estimator (as :mod:`.semimarkov_state` is for the
semi-Markov CRF): the declaration is data, the estimator is behaviour.
"""

import numpy as np

from ..structures.patterns.chain import fitted_patterns
from .base import CRFEstimator
from .estimator_state import forbidden_where_not_allowed
from .fitted_state import Array, IfPresent, Sparse, weights, weights_or_neginf
from .fitted_state import Real as RealValue
from .pruning import PRUNER_ATTRIBUTES, PRUNER_THRESHOLD, pruner_comes_whole


def _blocks_follow_the_parameters(model):
    """The weight blocks ``order`` and ``transition_features`` add are there, and only then.

    A model of order 2 or more holds its kept label patterns (``label_patterns_``
    and ``pattern_coef_``); one of order 2 saved before patterns existed holds
    the dense ``transition2_coef_`` instead.
    """
    state = vars(model)
    patterns = "label_patterns_" in state
    if patterns != ("pattern_coef_" in state):
        raise ValueError("label_patterns_ and pattern_coef_ come together: a model has "
                         "both or neither")
    if patterns and "transition2_coef_" in state:
        raise ValueError("a model holds label_patterns_ or transition2_coef_, not both")
    high_order = patterns or "transition2_coef_" in state
    if high_order != (model.order > 1):
        raise ValueError(f"order={model.order!r} "
                         + ("needs label_patterns_" if model.order > 1
                            else "has no label_patterns_ or transition2_coef_"))
    if "transition2_coef_" in state and model.order != 2:
        raise ValueError(f"order={model.order!r} has no transition2_coef_ (order 2 only)")
    expected = model.transition_features is not None
    if ("transition_feature_coef_" in state) != expected:
        raise ValueError(f"transition_features={model.transition_features!r} "
                         + ("needs" if expected else "has no") + " transition_feature_coef_")


def _patterns_are_label_ngrams(model):
    """Each kept pattern is an (order + 1)-gram of class ids, left-padded with -1, once."""
    rows = vars(model).get("label_patterns_")
    if rows is None:
        return
    if rows.shape[1] != model.order + 1:
        raise ValueError(f"label_patterns_ must have order + 1 = {model.order + 1} columns; "
                         f"it has shape {rows.shape}")
    fitted_patterns(rows, model.classes_.shape[0], model.order)


#: The state of a chain of any order, with or without transition features.
CHAIN_STATE = CRFEstimator._fitted_state.extended(
    {"allowed_transitions_": Array(("n_classes", "n_classes"), bool),
     "coef_": Array(("n_classes", "n_features"), values=weights),
     "transition_coef_": Array(("n_classes", "n_classes"), values=weights_or_neginf),
     "transition2_coef_": IfPresent(Array(("n_classes",) * 3, values=weights_or_neginf)),
     "label_patterns_": IfPresent(Array(("n_patterns", "pattern_width"), np.int64)),
     "pattern_coef_": IfPresent(Array(("n_patterns",), values=weights)),
     "transition_feature_coef_": IfPresent(Sparse(("n_features", "n_class_pairs"))),
     "start_coef_": Array(("n_classes",), values=weights_or_neginf),
     "end_coef_": Array(("n_classes",), values=weights_or_neginf),
     PRUNER_ATTRIBUTES["coef"]: IfPresent(Array(("n_classes", "n_features"), values=weights)),
     PRUNER_ATTRIBUTES["transitions"]: IfPresent(Array(("n_classes", "n_classes"),
                                                       values=weights_or_neginf)),
     PRUNER_ATTRIBUTES["start"]: IfPresent(Array(("n_classes",), values=weights_or_neginf)),
     PRUNER_ATTRIBUTES["end"]: IfPresent(Array(("n_classes",), values=weights_or_neginf)),
     PRUNER_THRESHOLD: IfPresent(RealValue(low=0.0))},
    derived={"n_class_pairs": lambda dims: dims["n_classes"] ** 2},
    rules=[forbidden_where_not_allowed, _blocks_follow_the_parameters,
           _patterns_are_label_ngrams, pruner_comes_whole])
