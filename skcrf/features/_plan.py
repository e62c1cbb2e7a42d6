"""The plan of a TokenFeaturizer's parameters: which keys, offsets and names it emits.

Built once per distinct set of parameter values and remembered
(:func:`checked_plan`), shared by the fast path and
:meth:`~skcrf.features.TokenFeaturizer.transform_dicts`.
"""

import types
import weakref
from operator import attrgetter, is_

from ._heads import head_keys
from ._reference import _offset_prefix
from ._words import _WORD_FEATURES

#: A getter of the parameter values of each featurizer class, and the parameter
#: sets (by their repr) already checked and planned, most recent last, at most
#: _REMEMBERED.
_GETTERS = {}
_CHECKED = {}
_PLANS = {}
_REMEMBERED = 16


def _remember(cache, key, value):
    """Put ``value`` in ``cache`` under ``key``, dropping the oldest past _REMEMBERED."""
    if len(cache) >= _REMEMBERED:
        cache.pop(next(iter(cache)), None)
    cache[key] = value
    return value


#: Per featurizer, the parameter objects of its last checked call and their repr,
#: kept only when every parameter is immutable (see _immutable).
_LAST = weakref.WeakKeyDictionary()

#: Parameter values whose repr cannot change while the object stays the same.
_IMMUTABLE = (type(None), bool, int, float, str, types.FunctionType,
              types.BuiltinFunctionType)


def _immutable(value):
    """Whether ``value``'s repr is fixed for as long as the object lives."""
    if type(value) is tuple:
        return all(map(_immutable, value))
    return type(value) in _IMMUTABLE


def checked_plan(featurizer):
    """``n_columns -> _Plan`` of ``featurizer``'s current parameters, checked (raises if invalid).

    The parameters are checked, and the plan built, once per distinct set of
    parameter values (by their repr), not on every transform: tagging one
    sentence at a time would otherwise spend a third of its time there.
    Formatting that repr costs more than the rest of this check, so a
    featurizer whose parameters are the very objects of its previous call,
    all immutable (ints, str, tuples of them, functions), reuses that call's
    answer: the same objects have the same repr. Anything else (a new
    object, a list or dict that may have been changed in place) is formatted.
    """
    kind = type(featurizer)
    getter = _GETTERS.get(kind)
    if getter is None:
        names = kind._get_param_names()
        getter = _GETTERS[kind] = attrgetter(*names) if len(names) > 1 else (
            lambda estimator: (getattr(estimator, names[0]),) if names else ())
    objects = getter(featurizer)
    last = _LAST.get(featurizer)
    if last is not None and all(map(is_, last[0], objects)):
        values = last[1]
    else:
        values = repr(list(objects))
        if (kind, values) not in _CHECKED:
            featurizer._check_params()
            _remember(_CHECKED, (kind, values), True)
        if _immutable(objects):
            # the objects and their repr, not the featurizer: the entry must not keep
            # its own weak key alive
            _LAST[featurizer] = (objects, values)

    def plan(n_columns):
        key = (kind, values, n_columns)
        found = _PLANS.get(key)
        if found is None:
            found = _remember(_PLANS, key, _Plan(featurizer, n_columns))
        return found

    return plan


class _Plan:
    """What to emit for tokens of ``n_columns`` columns: keys, offsets, names.

    Shared by the fast path and :meth:`TokenFeaturizer.transform_dicts`, so both
    use the same feature keys.
    """

    def __init__(self, featurizer, n_columns):
        f = featurizer
        if f.word_column >= n_columns:
            raise ValueError(
                f"word_column={f.word_column}, but the tokens have {n_columns} "
                f"column(s).")
        if f.column_names is None:
            names = [f"col{c}" for c in range(n_columns)]
            names[f.word_column] = "word"
        elif len(f.column_names) != n_columns:
            raise ValueError(
                f"column_names has {len(f.column_names)} names, but the tokens have "
                f"{n_columns} column(s).")
        else:
            names = list(f.column_names)
        head = f.head_column
        if f.columns == "auto":
            columns = {c: f.window for c in range(n_columns)
                       if c != f.word_column and c != head}
        else:
            columns = dict(f.columns or {})
        for c in columns:
            if c >= n_columns:
                raise ValueError(
                    f"columns asks for column {c}, but the tokens have {n_columns} "
                    f"column(s).")
            if c == head:
                raise ValueError(
                    f"columns holds the head column {c}; its features are set by "
                    f"head_features.")
        self.word_column = f.word_column
        self.word_keys = _word_keys(names[f.word_column], f.word_features,
                                    f.prefixes, f.suffixes)
        self.context_keys = _word_keys(names[f.word_column], f.context_features,
                                       f.prefixes, f.suffixes)
        window = f.window if self.context_keys else 0
        self.context_offsets = [k for k in range(-window, window + 1) if k]
        # (column, window, [(prefix length or None, key)]) of the other columns
        self.columns = [(c, columns[c], _column_keys(names[c], f.column_prefixes))
                        for c in sorted(columns)]
        self.bias = f.bias
        self.boundary = f.boundary
        max_offset = max([window] + [w for _, w, _ in self.columns])
        self.marker_offsets = list(range(2, max_offset + 1)) if f.boundary else []
        self.custom = f.custom
        # features of each token's head (head_column): word features, the
        # values of the columns in use, and the link's direction and length
        self.head_column = head
        wanted = () if head is None else f.head_features
        self.head_word_keys = _word_keys(names[f.word_column],
                                         [h for h in wanted if h in _WORD_FEATURES],
                                         f.prefixes, f.suffixes)
        self.head_columns = ([(c, names[c]) for c in sorted(columns)]
                             if "columns" in wanted else [])
        self.head_link = "link" in wanted
        self.keys = self._builtin_keys()
        if head is not None:
            self.keys |= head_keys(self)

    def global_names(self):
        """Names of the bias and boundary-marker columns, in table order."""
        names = ["bias", "BOS", "EOS"]
        for k in self.marker_offsets:
            names += [f"{-k:+d}:BOS", f"{k:+d}:EOS"]
        return names

    def _builtin_keys(self):
        keys = (["bias"] if self.bias else []) + (
            self.global_names()[1:] if self.boundary else [])
        keys += [key for _, _, key in self.word_keys]
        for k in self.context_offsets:
            keys += [_offset_prefix(k) + key for _, _, key in self.context_keys]
        for _, window, column_keys in self.columns:
            for k in range(-window, window + 1):
                keys += [_offset_prefix(k) + key for _, key in column_keys]
        seen = set()
        for key in keys:
            if key in seen:
                raise ValueError(
                    f"Two built-in features share the key {key!r}; give the token "
                    f"columns distinct column_names.")
            seen.add(key)
        return seen


def _word_keys(name, features, prefixes, suffixes):
    """(feature, length, key) of each word feature, in parameter order."""
    keys = []
    for feature in features:
        if feature == "word":
            keys.append((feature, None, name))
        elif feature == "lower":
            keys.append((feature, None, f"{name}.lower"))
        elif feature == "prefix":
            keys += [(feature, k, f"{name}[:{k}]") for k in prefixes]
        elif feature == "suffix":
            keys += [(feature, k, f"{name}[-{k}:]") for k in suffixes]
        else:  # shape and the flags
            keys.append((feature, None, f"{name}.{feature}"))
    return keys


def _column_keys(name, prefixes):
    """(prefix length or None, key) of the features of another token column."""
    return [(None, name)] + [(k, f"{name}[:{k}]") for k in prefixes]
