"""Which features also condition the transitions (``transition_features``)."""

import numpy as np


def transition_columns(chosen, feature_names, n_features):
    """Boolean mask of the features ``transition_features`` names, or None for None.

    ``chosen`` is None, ``"all"`` or a list of feature-name prefixes; shared
    by the estimators whose transitions (or links) take features.
    """
    if chosen is None:
        return None
    if chosen == "all":
        return np.ones(n_features, dtype=bool)
    prefixes = tuple(chosen)
    if not all(isinstance(p, str) for p in prefixes):
        raise ValueError(
            f"transition_features must be None, 'all' or a list of feature-name "
            f"prefixes (str); got {chosen!r}.")
    if feature_names is None:
        raise ValueError(
            "transition_features names feature prefixes, but X has no feature names "
            "(a SequenceMatrix without feature_names); pass 'all' or named features.")
    mask = np.fromiter((str(name).startswith(prefixes) for name in feature_names),
                       dtype=bool, count=n_features)
    if not mask.any():
        raise ValueError(
            f"No feature name starts with any of transition_features={list(prefixes)!r}; "
            f"feature names look like {list(map(str, feature_names[:5]))!r}.")
    return mask
