"""TokenFeaturizer's path for a few tokens: plain Python lists, a handful of numpy calls.

The general path (``_featurize``) numbers the distinct values of each token
column with numpy, builds a table per feature group and gathers it with a
compiled kernel: dozens of numpy calls, a fixed cost that is most of the time
of featurizing one sentence. Here each distinct value gets the tuple of its
feature names once, the names of every feature group at every offset (a
"slot") are lists shifted within each sequence, and rows are read off slot by
slot. The output is the general path's: the same names, sorted, and the same
CSR arrays.

Inputs of up to a few thousand tokens (:data:`FUSED_TOKENS`) are returned
unbuilt (:class:`PendingFeatures`): a SequenceVectorizer reads their columns
straight from the tokens (``_small_columns``), and anything else that reads
them builds them, by this path or by the general one.
"""

from itertools import accumulate, chain, repeat
from operator import add, countOf, itemgetter, sub

import numpy as np

from ._reference import _offset_prefix
from ._words import _FLAGS, word_shape
from .sequence_matrix import SequenceMatrix

#: Inputs of at most this many tokens take this path: it costs about twice
#: the general path's per token, but a fraction of its fixed cost, and the two
#: break even near a hundred tokens.
SMALL_TOKENS = 96

#: Inputs of at most this many plain tokens (a server's batch of a few dozen
#: sentences) return their output unbuilt (:class:`PendingFeatures`), for a
#: SequenceVectorizer to read their columns without names; built, it is this
#: path's output up to ``SMALL_TOKENS`` and the general path's past it. Past
#: this, the general path's numbering of values costs less than looking each
#: token up, and the tables of values (see ``_small_columns``) would overflow.
FUSED_TOKENS = 1 << 12

#: Each distinct value's names are kept, per layout, for the next calls
#: (tagging sentence after sentence meets the same words again); at most
#: this many per token column (a few MiB), forgotten all at once past it.
_REMEMBERED_VALUES = 1 << 12

_MISSING = object()


class _Source:
    """One token column the slots read: the names each distinct value of it emits.

    A value's tuple of names holds its one-hot entries (the prefixed key,
    ``=`` and the feature of the value) and then its flag entries (the
    prefixed key if the flag is true, else None). Each feature is computed
    once per distinct value, whatever the number of entries (offsets) using it.
    """

    def __init__(self, column):
        self.column = column
        self._functions = {}  # what -> (index among its kind, function)
        self._one_hot = []  # (function index, prefixed key + "=")
        self._flags = []  # (flag index, prefixed key)
        self._flag_names = {}  # the flags' values -> the flag entries' names

    def entry(self, what, function, prefixed_key, flag):
        """Add an entry; ``what`` names ``function``, computed once for every entry of it.

        Returns the entry as (kind, index): a one-hot's index counts from the
        start of the tuple, a flag's from the end of the one-hot part; see
        :meth:`position`.
        """
        kind = "flag" if flag else "one_hot"
        if (kind, what) not in self._functions:
            index = sum(k == kind for k, _ in self._functions)
            self._functions[kind, what] = (index, function)
        index = self._functions[kind, what][0]
        if flag:
            self._flags.append((index, prefixed_key))
            return kind, len(self._flags) - 1
        self._one_hot.append((index, prefixed_key + "="))
        return kind, len(self._one_hot) - 1

    def position(self, entry):
        """Position of an entry of :meth:`entry` in the tuples of :meth:`names`."""
        kind, index = entry
        return index if kind == "one_hot" else len(self._one_hot) + index

    def freeze(self):
        """Lay out the functions and entries for :meth:`names`, once all are added."""
        functions = sorted(self._functions.items(), key=lambda item: item[1][0])
        self.one_hot_functions = [f for (kind, _), (_, f) in functions if kind == "one_hot"]
        self.flag_functions = [f for (kind, _), (_, f) in functions if kind == "flag"]
        self.one_hot_keys = [key for _, key in self._one_hot]
        self.one_hot_index = [i for i, _ in self._one_hot]
        self.n_entries = len(self._one_hot) + len(self._flags)

    def names(self, value):
        """The tuple of names ``value`` emits, one per entry (None: a false flag)."""
        features = [function(value) for function in self.one_hot_functions]
        names = tuple(map(add, self.one_hot_keys, map(features.__getitem__,
                                                      self.one_hot_index)))
        if not self.flag_functions:
            return names
        flags = tuple([bool(function(value)) for function in self.flag_functions])
        flag_names = self._flag_names.get(flags)
        if flag_names is None:
            # one tuple per combination of flag values: a few, shared by all values
            flag_names = self._flag_names[flags] = tuple(
                key if flags[i] else None for i, key in self._flags)
        return names + flag_names


def _word_function(feature, length):
    """The function of a word that ``feature`` reads (its value, or whether the flag holds)."""
    if feature in _FLAGS:
        return _FLAGS[feature]
    if feature == "word":
        return str
    if feature == "lower":
        return str.lower
    if feature == "prefix":
        return itemgetter(slice(None, length))
    if feature == "suffix":
        return itemgetter(slice(-length, None))
    return word_shape


class SmallLayout:
    """The slots of a plan in name order, for :func:`featurize_small`.

    Slots are sorted by the part of the name they fix (the whole name of a
    flag or marker, ``prefix + key + "="`` of a one-hot group). When no
    built-in key holds ``=``, no such part is a prefix of another's names, so
    the slots' names fall in disjoint ranges in that order: the names of each
    token, read slot by slot, come out sorted, as the general path's do.
    """

    def __init__(self, plan):
        words = _Source(plan.word_column)
        sources = [words]
        # (sort key, kind, a, b): a marker ("always", "before" or "after", its
        # name, its distance from the edge) or a read (source index, offset, entry)
        slots = []
        if plan.bias:
            slots.append(("bias", "always", "bias", 0))
        if plan.boundary:
            for k in [1] + plan.marker_offsets:
                bos = f"{-k:+d}:BOS" if k > 1 else "BOS"
                eos = f"{k:+d}:EOS" if k > 1 else "EOS"
                slots += [(bos, "before", bos, k), (eos, "after", eos, k)]
        for offset, keys in [(0, plan.word_keys)] + [
                (k, plan.context_keys) for k in plan.context_offsets]:
            prefix = _offset_prefix(offset)
            for feature, length, key in keys:
                flag = feature in _FLAGS
                entry = words.entry((feature, length), _word_function(feature, length),
                                    prefix + key, flag)
                slots.append((prefix + key if flag else prefix + key + "=", 0, offset, entry))
        for column, window, column_keys in plan.columns:
            source = _Source(column)
            sources.append(source)
            for length, key in column_keys:
                for k in range(-window, window + 1):
                    # a column value is cut to a prefix, or kept whole
                    entry = source.entry(length, str if length is None else itemgetter(
                        slice(None, length)), _offset_prefix(k) + key, False)
                    slots.append((_offset_prefix(k) + key + "=", len(sources) - 1, k, entry))
        slots.sort(key=itemgetter(0))
        for source in sources:
            source.freeze()
        self.sources = sources
        # per source: value -> its tuple of names (see _REMEMBERED_VALUES)
        self.tables = [{} for _ in sources]
        self.slots = [(kind, a, b if isinstance(kind, str) else sources[kind].position(b))
                      for _, kind, a, b in slots]


def small_layout(plan):
    """The :class:`SmallLayout` of ``plan``, or None if its features need the general path.

    Built once per plan (plans are remembered per parameter values). Custom
    and head features, and built-in keys holding ``=`` (whose names may
    interleave with another group's), go the general way.
    """
    layout = getattr(plan, "_small_layout", _MISSING)
    if layout is _MISSING:
        eligible = (plan.custom is None and plan.head_column is None
                    and not any("=" in key for key in plan.keys))
        layout = plan._small_layout = SmallLayout(plan) if eligible else None
    return layout


def plain_width(tokens):
    """Number of columns of ``tokens`` if all are exactly str or tuples of str of one width.

    None otherwise (lists, subclasses, malformed tokens): the general path
    takes those, and names any culprit.
    """
    kinds = set(map(type, tokens))
    if kinds == {str}:
        return 1
    if kinds != {tuple}:
        return None
    widths = set(map(len, tokens))
    if len(widths) != 1 or 0 in widths:
        return None
    if set(map(type, chain.from_iterable(tokens))) != {str}:
        return None
    return widths.pop()


def featurize_small(layout, X, is_str):
    """The general path's SequenceMatrix of the sequences ``X``, built with lists.

    Parameters
    ----------
    layout : SmallLayout
    X : list of sequences of tokens, checked by :func:`plain_width`, with
        at least one token
    is_str : bool
        Whether the tokens are str (else tuples of str).
    """
    sources = layout.sources
    tables = layout.tables
    pads = [(None,) * source.n_entries for source in sources]
    flat = []
    counts = []
    lengths = []
    for sequence in X:
        n = len(sequence)
        lengths.append(n)
        if not n:
            continue
        per_source = []
        for i, source in enumerate(sources):
            table = tables[i]
            values = sequence if is_str else list(map(itemgetter(source.column), sequence))
            new = set(values).difference(table)
            if new:
                if len(table) + len(new) > _REMEMBERED_VALUES:
                    # a new dict, not clear(): a concurrent call keeps reading its own;
                    # every value of this call then goes in, not only the unseen ones
                    table = tables[i] = {}
                    new = set(values)
                for value in new:
                    table[value] = source.names(value)
            per_source.append(list(map(table.__getitem__, values)))
        shifted = {}
        columns = []
        for kind, a, b in layout.slots:
            if kind == "always":
                columns.append(repeat(a, n))
                continue
            if kind in ("before", "after"):
                # a marker on every token of the sequence tells none apart
                m = 0 if 1 < b >= n else min(b, n)
                columns.append([a] * m + [None] * (n - m) if kind == "before"
                               else [None] * (n - m) + [a] * m)
                continue
            rows = shifted.get((kind, a))
            if rows is None:
                rows = shifted[kind, a] = _shift(per_source[kind], a, pads[kind])
            columns.append(list(map(itemgetter(b), rows)))
        rows = list(zip(*columns)) if columns else [()] * n  # no slots: empty rows
        counts += map(countOf, rows, repeat(None))
        flat += filter(None, chain.from_iterable(rows))
    names = sorted(set(flat))
    index = dict(zip(names, range(len(names))))
    indices = np.fromiter(map(index.__getitem__, flat), dtype=np.int32, count=len(flat))
    indptr = np.fromiter(accumulate(map(sub, repeat(len(layout.slots)), counts), initial=0),
                         dtype=np.int64, count=len(counts) + 1)
    offsets = np.fromiter(accumulate(lengths, initial=0), dtype=np.int64,
                          count=len(lengths) + 1)
    return SequenceMatrix._from_arrays(None, indices, indptr, len(names), offsets, names)


def _shift(rows, offset, pad):
    """``rows[t + offset]`` for each t, ``pad`` past either end."""
    n = len(rows)
    if offset >= n or -offset >= n:
        return [pad] * n
    if offset > 0:
        return rows[offset:] + [pad] * offset
    if offset < 0:
        return [pad] * -offset + rows[:offset]
    return rows


def transform_small(plan, X):
    """The :class:`PendingFeatures` of ``X`` if it is small and plain, else None.

    ``X`` is a checked list of sequences (never a one-shot iterator: the
    general path reads it again when this returns None).
    """
    tokens = list(chain.from_iterable(X))
    if not 0 < len(tokens) <= FUSED_TOKENS:
        return None
    width = plain_width(tokens)
    if width is None:
        return None
    plan = plan(width)
    layout = small_layout(plan)
    if layout is None:
        return None
    # copies of the sequences: a caller may change its lists before the output is read
    return PendingFeatures(plan, layout, [list(sequence) for sequence in X],
                           width == 1 and type(tokens[0]) is str)


class PendingFeatures(SequenceMatrix):
    """TokenFeaturizer's output for at most ``FUSED_TOKENS`` plain tokens, built when first read.

    A :class:`SequenceVectorizer` given it unread takes the layout and the
    tokens instead (:mod:`._small_columns`), so a pipeline tagging one
    sentence never builds the feature names. Anything else that reads it
    (an attribute, a method, a pickle) builds the SequenceMatrix, which this
    object then becomes: its class is SequenceMatrix from then on.
    """

    def __init__(self, plan, layout, X, is_str):
        self._pending = (plan, layout, X, is_str)

    def __getattr__(self, name):
        # only attributes not set yet: those of the matrix being built
        if name.startswith("__") or name == "_pending":
            raise AttributeError(name)
        self._build()
        return getattr(self, name)

    def _read_into(self, vectorizer):
        """``(indices, indptr, offsets)`` of ``vectorizer.transform(self)``, or None if built."""
        pending = self.__dict__.get("_pending")
        if pending is None:
            return None
        from ._small_columns import small_columns  # it imports this module
        _, layout, X, is_str = pending
        return small_columns(vectorizer, layout).arrays(X, is_str)

    def _build(self):
        pending = self.__dict__.get("_pending")
        if pending is None:  # built meanwhile by another thread
            return
        plan, layout, X, is_str = pending
        if sum(map(len, X)) <= SMALL_TOKENS:
            built = featurize_small(layout, X, is_str)
        else:
            # modules that import this one (through the vectorizer)
            from .._utils.parallel import kernel_exceptions
            from ._slot_matrix import _featurize
            from ._tokens import _Tokens
            with kernel_exceptions():  # a Ctrl-C in the kernel as KeyboardInterrupt
                built = _featurize(plan, _Tokens(X, None))
        vars(self).update(vars(built))
        self.__class__ = SequenceMatrix
        vars(self).pop("_pending", None)

    def __reduce_ex__(self, protocol):
        # pickle and copy: built first, then reduced as the SequenceMatrix it became
        self._build()
        return SequenceMatrix.__reduce_ex__(self, protocol)
