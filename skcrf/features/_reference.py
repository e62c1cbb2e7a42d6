"""TokenFeaturizer's reference path: one dict per token, straight from the definitions.

:meth:`TokenFeaturizer.transform_dicts` builds these dicts; the fast path must
give the same features (the tests compare the two). Also the naming and
checking rules both paths share.
"""

from collections.abc import Mapping

from ._heads import head_dict
from ._parents import PARENT_KEY
from ._words import _word_value


def _offset_prefix(offset):
    """Name prefix of the features of the token at ``offset``: '', '-1:', '+2:'."""
    return f"{offset:+d}:" if offset else ""


def _check_custom(features, builtin_keys, sequence, position):
    """Raise for a custom result that is not a mapping or reuses a built-in key."""
    if not isinstance(features, Mapping):
        raise TypeError(
            f"Sequence {sequence}, token {position}: custom returned a "
            f"{type(features).__name__}; it must return a dict of features.")
    # a key stands for its str() (SequenceVectorizer's rule), so compare names
    clash = sorted(builtin_keys.intersection(map(str, features)))
    if clash:
        raise ValueError(
            f"Sequence {sequence}, token {position}: custom returned the built-in "
            f"feature key(s) {clash}; rename them.")


def _token_dict(plan, tokens, columns, sequence, start, stop, i, parents=None):
    """The features of token ``i`` of sequence ``sequence``, ``tokens[start:stop]``.

    With a head column, also the head features and the ``"__parent__"`` key
    that carries the tree to SequenceVectorizer.
    """
    n = stop - start
    features = {}
    if plan.bias:
        features["bias"] = 1.0
    if plan.boundary and i == 0:
        features["BOS"] = True
    if plan.boundary and i == n - 1:
        features["EOS"] = True
    # a marker on every token of the sequence tells none apart: left out
    for k in plan.marker_offsets:
        if i - k < 0 and k < n:
            features[f"{-k:+d}:BOS"] = True
        if i + k >= n and k < n:
            features[f"{k:+d}:EOS"] = True
    words = columns[plan.word_column]
    for offset, word_keys in [(0, plan.word_keys)] + [
            (k, plan.context_keys) for k in plan.context_offsets]:
        if 0 <= i + offset < n:
            prefix = _offset_prefix(offset)
            word = words[start + i + offset]
            for feature, length, key in word_keys:
                value = _word_value(feature, length, word)
                if value is not False:
                    features[prefix + key] = value
    for column, window, column_keys in plan.columns:
        for offset in range(-window, window + 1):
            if 0 <= i + offset < n:
                value = columns[column][start + i + offset]
                for length, key in column_keys:
                    features[_offset_prefix(offset) + key] = (
                        value if length is None else value[:length])
    if plan.custom is not None:
        extra = plan.custom(tokens[start + i])
        if not isinstance(extra, Mapping) or not plan.keys.isdisjoint(map(str, extra)):
            _check_custom(extra, plan.keys, sequence, i)
        features.update(extra)
    if plan.head_column is not None:
        parent = int(parents[start + i])
        features.update(head_dict(plan, columns, start, i, parent))
        features[PARENT_KEY] = parent
    return features
